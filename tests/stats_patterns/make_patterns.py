#!/usr/bin/env python3
"""Writes patterns.ptx (one kernel per kind of memory access) and launches.json (the access patterns
tests/test_stats.py pins by hand) so that an H100 can count the same launches with Nsight Compute."""
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

# kernel name: (setup lines, the access, made where bit (tid % 32) of mask is set, and whether its
# result %r11..%r14 is stored to out[tid]); thread t's byte offset t * stride + offset is in %r8 / %rd3.
SHARED = ["mov.u32 %r9, smem;", "add.u32 %r10, %r9, %r8;"]
GLOBAL = ["ld.param.u64 %rd1, [{name}_data];", "cvta.to.global.u64 %rd2, %rd1;", "add.s64 %rd4, %rd2, %rd3;"]
LOCAL = ["mov.u64 %rd7, depot;", "add.s64 %rd8, %rd7, %rd3;", "st.local.u32 [%rd7], %r1;"]
CONST = ["mov.u64 %rd5, cmem;", "add.s64 %rd6, %rd5, %rd3;"]
GENERIC = ["mov.u64 %rd9, smem;", "cvta.shared.u64 %rd10, %rd9;", "add.s64 %rd11, %rd10, %rd3;"]
KERNELS = {
    "shared_ld_u32": (SHARED, "ld.shared.u32 %r11, [%r10];", True),
    "shared_ld_v2": (SHARED, "ld.shared.v2.u32 {%r11, %r12}, [%r10];", True),
    "shared_ld_v4": (SHARED, "ld.shared.v4.u32 {%r11, %r12, %r13, %r14}, [%r10];", True),
    "shared_st_u32": (SHARED, "st.shared.u32 [%r10], %r1;", False),
    "shared_atom": (SHARED, "atom.shared.add.u32 %r11, [%r10], 1;", True),
    "global_ld_u32": (GLOBAL, "ld.global.u32 %r11, [%rd4];", True),
    "global_ld_u8": (GLOBAL, "ld.global.u8 %r11, [%rd4];", True),
    "global_ld_u64": (GLOBAL, "ld.global.v2.u32 {%r11, %r12}, [%rd4];", True),
    "global_ld_v4": (GLOBAL, "ld.global.v4.u32 {%r11, %r12, %r13, %r14}, [%rd4];", True),
    "global_st_u32": (GLOBAL, "st.global.u32 [%rd4], %r1;", False),
    "global_atom": (GLOBAL, "atom.global.add.u32 %r11, [%rd4], 1;", True),
    "global_red": (GLOBAL, "red.global.add.u32 [%rd4], 1;", False),
    "local_ld_u32": (LOCAL, "ld.local.u32 %r11, [%rd8];", True),
    "local_ld_u64": (LOCAL, "ld.local.v2.u32 {%r11, %r12}, [%rd8];", True),
    "local_st_u32": (LOCAL, "st.local.u32 [%rd8], %r1;", False),
    "const_ld_u32": (CONST, "ld.const.u32 %r11, [%rd6];", True),
    "generic_ld_u32": (GENERIC, "ld.u32 %r11, [%rd11];", True),
}

# launch name: (kernel, threads per block, stride, offset, mask)
FULL = 0xFFFFFFFF
LAUNCHES = {
    "shared_stride1": ("shared_ld_u32", 32, 4, 0, FULL),
    "shared_stride2": ("shared_ld_u32", 32, 8, 0, FULL),
    "shared_stride16": ("shared_ld_u32", 32, 64, 0, FULL),
    "shared_stride32": ("shared_ld_u32", 32, 128, 0, FULL),
    "shared_stride33": ("shared_ld_u32", 32, 132, 0, FULL),
    "shared_broadcast": ("shared_ld_u32", 32, 0, 0, FULL),
    "shared_partial_warp": ("shared_ld_u32", 48, 4, 0, FULL),
    "shared_even_lanes_stride2": ("shared_ld_u32", 32, 8, 0, 0x55555555),
    "shared_four_lanes_stride32": ("shared_ld_u32", 32, 128, 0, 0x0000000F),
    "shared_no_lane": ("shared_ld_u32", 32, 4, 0, 0),
    "shared_v2_contiguous": ("shared_ld_v2", 32, 8, 0, FULL),
    "shared_v2_stride16": ("shared_ld_v2", 32, 16, 0, FULL),
    "shared_v2_first_half": ("shared_ld_v2", 32, 8, 0, 0x0000FFFF),
    "shared_v2_broadcast": ("shared_ld_v2", 32, 0, 0, FULL),
    "shared_v4_contiguous": ("shared_ld_v4", 32, 16, 0, FULL),
    "shared_v4_stride32": ("shared_ld_v4", 32, 32, 0, FULL),
    "shared_v4_broadcast": ("shared_ld_v4", 32, 0, 0, FULL),
    "shared_store_stride32": ("shared_st_u32", 32, 128, 0, FULL),
    "shared_store_stride33": ("shared_st_u32", 32, 132, 0, FULL),
    "shared_atom_one_word": ("shared_atom", 32, 0, 0, FULL),
    "shared_atom_stride1": ("shared_atom", 32, 4, 0, FULL),
    "shared_atom_stride32": ("shared_atom", 32, 128, 0, FULL),
    "global_stride1": ("global_ld_u32", 32, 4, 0, FULL),
    "global_offset4": ("global_ld_u32", 32, 4, 4, FULL),
    "global_stride32_64threads": ("global_ld_u32", 64, 128, 0, FULL),
    "global_broadcast": ("global_ld_u32", 32, 0, 0, FULL),
    "global_eight_lanes": ("global_ld_u32", 32, 4, 0, 0x000000FF),
    "global_partial_warp": ("global_ld_u32", 48, 4, 0, FULL),
    "global_bytes": ("global_ld_u8", 32, 1, 0, FULL),
    "global_bytes_offset16": ("global_ld_u8", 32, 1, 16, FULL),
    "global_v2": ("global_ld_u64", 32, 8, 0, FULL),
    "global_v4": ("global_ld_v4", 32, 16, 0, FULL),
    "global_store_stride1": ("global_st_u32", 32, 4, 0, FULL),
    "global_store_stride32": ("global_st_u32", 32, 128, 0, FULL),
    "global_atom_one_word": ("global_atom", 32, 0, 0, FULL),
    "global_atom_stride1": ("global_atom", 32, 4, 0, FULL),
    "global_red_stride1": ("global_red", 32, 4, 0, FULL),
    "local_same_offset": ("local_ld_u32", 32, 0, 0, FULL),
    "local_lane_offsets": ("local_ld_u32", 32, 4, 0, FULL),
    "local_v2_same_offset": ("local_ld_u64", 32, 0, 0, FULL),
    "local_store_half_warp": ("local_st_u32", 32, 0, 0, 0x0000FFFF),
    "constant_same_address": ("const_ld_u32", 32, 0, 0, FULL),
    "constant_distinct": ("const_ld_u32", 32, 4, 0, FULL),
    "generic_shared_stride32": ("generic_ld_u32", 32, 128, 0, FULL),
}

HEADER = """//
// Generated by make_patterns.py: one kernel per kind of memory access. Thread t computes the byte
// offset t * stride + offset and makes the access only where bit (t % 32) of mask is set.
//
.version 8.0
.target sm_90
.address_size 64

.shared .align 16 .b8 smem[20480];
.const .align 16 .b8 cmem[8192];
"""


def kernel(name: str, setup, access: str, stores_result: bool) -> str:
    lines = [f".visible .entry {name}(",
             f"\t.param .u64 {name}_out, .param .u64 {name}_data,",
             f"\t.param .u32 {name}_stride, .param .u32 {name}_offset, .param .u32 {name}_mask",
             ")", "{",
             "\t.reg .pred %p<2>;", "\t.reg .b32 %r<16>;", "\t.reg .b64 %rd<16>;"]
    if setup is LOCAL:
        lines.append("\t.local .align 16 .b8 depot[512];")
    body = ["mov.u32 %r1, %tid.x;",
            f"ld.param.u32 %r2, [{name}_stride];",
            f"ld.param.u32 %r3, [{name}_offset];",
            f"ld.param.u32 %r4, [{name}_mask];",
            "and.b32 %r5, %r1, 31;",
            "shr.u32 %r6, %r4, %r5;",
            "and.b32 %r7, %r6, 1;",
            "setp.eq.u32 %p1, %r7, 0;",
            "mad.lo.s32 %r8, %r1, %r2, %r3;",
            "cvt.u64.u32 %rd3, %r8;",
            "mov.u32 %r11, 0;", "mov.u32 %r12, 0;", "mov.u32 %r13, 0;", "mov.u32 %r14, 0;"]
    body += [line.format(name=name) for line in setup]
    body.append(f"@!%p1 {access}")
    if stores_result:
        body += ["add.u32 %r15, %r11, %r12;", "add.u32 %r15, %r15, %r13;", "add.u32 %r15, %r15, %r14;",
                 f"ld.param.u64 %rd12, [{name}_out];", "cvta.to.global.u64 %rd13, %rd12;",
                 "mul.wide.u32 %rd14, %r1, 4;", "add.s64 %rd15, %rd13, %rd14;", "st.global.u32 [%rd15], %r15;"]
    body.append("ret;")
    lines += ["\t" + line for line in body]
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> None:
    text = HEADER + "".join("\n" + kernel(name, *parts) for name, parts in KERNELS.items())
    (HERE / "patterns.ptx").write_text(text)
    launches = []
    for name, (kernel_name, block, stride, offset, mask) in LAUNCHES.items():
        launches.append({"name": name, "kernel": kernel_name, "grid": [1, 1, 1], "block": [block, 1, 1],
                         "shared": 0, "args": ["zeros:u32:64", "zeros:u8:16384", f"u32:{stride}", f"u32:{offset}",
                                               f"u32:{mask:#010x}"], "stdout": False, "tolerance": None})
    (HERE / "launches.json").write_text(json.dumps({"ptx": "patterns.ptx", "launches": launches}, indent=2) + "\n")


if __name__ == "__main__":
    main()
