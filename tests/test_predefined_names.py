"""Every special register and predefined identifier ptxas accepts for sm_90 runs (with the H100's value where it
is known) and a name ptxas refuses is a file:line:col error naming it (PTX ISA section 10, Table 3)."""
import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from emulator.api import load
from emulator.errors import PTXSemanticError

#: every name ptxas 13.0 accepts in `mov` for sm_90, its width, and how ptxas compiles it (cuobjdump -sass):
#: a constant, a special register (S2R/CS2R) or a word of the driver's constant bank 0
PTXAS_ACCEPTS = {
    "WARP_SZ": (32, "immediate 32"),
    "%tid.x": (32, "S2R SR_TID.X"), "%ntid.x": (32, "c[0x0][0x0]"), "%laneid": (32, "S2R SR_LANEID"),
    "%warpid": (32, "S2R SR_VIRTID >> 8 & 0x7f"), "%nwarpid": (32, "S2R SR_VIRTCFG >> 8 & 0xff"),
    "%ctaid.x": (32, "S2R SR_CTAID.X"), "%nctaid.x": (32, "c[0x0][0xc]"), "%smid": (32, "S2R SR_VIRTUALSMID"),
    "%nsmid": (32, "c[0x0][0x10c]"), "%gridid": (64, "c[0x0][0x30]"),
    "%is_explicit_cluster": (1, "c[0x0][0x140] == 1"), "%clusterid.x": (32, "SR_CTAID.X * c[0x0][0x150]"),
    "%nclusterid.x": (32, "c[0x0][0x15c]"), "%cluster_ctaid.x": (32, "SR_CTAID.X - clusterid * c[0x0][0x144]"),
    "%cluster_nctaid.x": (32, "c[0x0][0x144]"), "%cluster_ctarank": (32, "S2R SR_CgaCtaId"),
    "%cluster_nctarank": (32, "c[0x0][0x188]"),
    "%lanemask_eq": (32, "S2R SR_EQMASK"), "%lanemask_le": (32, "S2R SR_LEMASK"),
    "%lanemask_lt": (32, "S2R SR_LTMASK"), "%lanemask_ge": (32, "S2R SR_GEMASK"),
    "%lanemask_gt": (32, "S2R SR_GTMASK"),
    "%clock": (32, "CS2R.32 SR_CLOCKLO"), "%clock_hi": (32, "CS2R.32 SR_CLOCKHI"), "%clock64": (64, "CS2R SR_CLOCKLO"),
    "%globaltimer": (64, "CS2R SR_GLOBALTIMERLO"), "%globaltimer_lo": (32, "CS2R.32 SR_GLOBALTIMERLO"),
    "%globaltimer_hi": (32, "CS2R.32 SR_GLOBALTIMERHI"),
    **{f"%pm{i}": (32, f"CS2R.32 SR_PM{i}") for i in range(8)},
    **{f"%pm{i}_64": (64, f"CS2R SR_PM{i}") for i in range(8)},
    **{f"%envreg{i}": (32, f"c[0x0][{0x40 + 4 * i:#x}]") for i in range(32)},
    "%total_smem_size": (32, "S2UR SR_SMEMSZ - c[0x0][0x114]"),
    "%aggr_smem_size": (32, "min(S2R SR_SMEMSZ, c[0x0][0x13c])"), "%dynamic_smem_size": (32, "c[0x0][0x2c]"),
    "%reserved_smem_offset_begin": (32, "immediate 0"), "%reserved_smem_offset_end": (32, "c[0x0][0x68]"),
    "%reserved_smem_offset_cap": (32, "immediate 0x400"), "%reserved_smem_offset_0": (32, "immediate 0"),
    "%reserved_smem_offset_1": (32, "c[0x0][0x6c]"), "%current_graph_exec": (64, "c[0x0][0x190]"),
}
#: names ptxas 13.0 refuses for sm_90 (`Unknown symbol`, `Arguments mismatch`)
PTXAS_REFUSES = ["%reserved_smem_offset_2", "%warpsize", "WARP_SIZE", "%nlaneid", "%envreg32", "%pm8"]


def read_ptx(name, width):
    if width == 1:
        body = f"mov.pred %p1, {name};\n\tselp.u64 %rd2, 1, 0, %p1;"
    elif width == 64:
        body = f"mov.u64 %rd2, {name};"
    else:
        body = f"mov.u32 %r1, {name};\n\tcvt.u64.u32 %rd2, %r1;"
    return f""".version 8.8
.target sm_90
.address_size 64
.visible .entry read_name(.param .u64 out)
{{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<6>;
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r2, %tid.x;
	mul.wide.u32 %rd3, %r2, 8;
	add.s64 %rd1, %rd1, %rd3;
	{body}
	st.global.u64 [%rd1], %rd2;
	ret;
}}
"""


def read_name(name, width, block=1):
    out = np.zeros(block, np.uint64)
    load(read_ptx(name, width)).kernel().launch(1, block, [out])
    return out


@pytest.mark.parametrize("name", sorted(PTXAS_ACCEPTS))
def test_every_name_ptxas_accepts_runs(name):
    width, _ = PTXAS_ACCEPTS[name]
    value = int(read_name(name, width)[0])
    assert value < 2 ** width


@pytest.mark.parametrize("name", PTXAS_REFUSES)
def test_a_name_ptxas_refuses_is_an_error_at_its_line_and_column(name):
    with pytest.raises(PTXSemanticError) as info:
        load(read_ptx(name, 32)).kernel()
    assert re.search(rf"<ptx>:14:\d+: .*'{re.escape(name)}'", str(info.value))


def test_warp_sz_is_32_wherever_an_immediate_may_stand():
    """How nvcc writes warpSize; ptxas compiles it to the immediate 32 (HFMA2.MMA R5, -RZ, RZ, 0, 1.907e-06)."""
    ptx = """.version 8.8
.target sm_90
.address_size 64
.visible .entry warps(.param .u64 out)
{
	.reg .pred %p<2>;
	.reg .b32 %r<6>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r1, WARP_SZ;
	add.s32 %r2, %r1, WARP_SZ;
	mov.u32 %r3, %ntid.x;
	div.u32 %r4, %r3, WARP_SZ;
	setp.lt.u32 %p1, %r3, WARP_SZ;
	selp.u32 %r5, 1, 0, %p1;
	st.global.v4.u32 [%rd1], {%r1, %r2, %r4, %r5};
	ret;
}
"""
    out = np.zeros(4, np.uint32)
    load(ptx).kernel().launch(1, 96, [out])
    assert out.tolist() == [32, 64, 3, 0]


def test_a_declared_name_wins_over_warp_sz():
    ptx = read_ptx("WARP_SZ", 64).replace(".reg .pred %p<2>;", ".reg .pred %p<2>;\n\t.reg .b64 WARP_SZ;") \
        .replace("mov.u64 %rd2, WARP_SZ;", "mov.u64 WARP_SZ, 7;\n\tmov.u64 %rd2, WARP_SZ;")
    out = np.zeros(1, np.uint64)
    load(ptx).kernel().launch(1, 1, [out])
    assert out.tolist() == [7]


def test_reserved_region_registers_are_the_constants_ptxas_compiles_in():
    """begin, cap and offset_0 are immediates in sm_90 SASS (MOV 0x0 / 0x400): the region is the window's first KB."""
    values = {name: int(read_name(name, 32)[0]) for name in ("%reserved_smem_offset_begin", "%reserved_smem_offset_cap",
                                                             "%reserved_smem_offset_0")}
    assert values == {"%reserved_smem_offset_begin": 0, "%reserved_smem_offset_cap": 0x400,
                      "%reserved_smem_offset_0": 0}


def test_reserved_offset_1_leaves_cooperative_groups_its_288_bytes_inside_the_region():
    """cooperative_groups/details/memory.h: multi-warp tiles keep 288 bytes of scratch at %reserved_smem_offset_1.
    The H100 gives offset_1 = 0 and end = 288 (tools/probes_names/h100.json)."""
    offset_1 = int(read_name("%reserved_smem_offset_1", 32)[0])
    end = int(read_name("%reserved_smem_offset_end", 32)[0])
    assert 0 <= offset_1 and offset_1 + 288 <= end <= 0x400


def test_scratch_at_reserved_offset_1_is_usable_memory_of_the_block():
    """What block_tile_memory's code does: cvta.shared of %reserved_smem_offset_1, then stores and loads there,
    beside the kernel's own shared variable, which keeps its value."""
    ptx = """.version 8.8
.target sm_90
.address_size 64
.visible .entry scratch(.param .u64 out)
{
	.reg .b32 %r<6>;
	.reg .b64 %rd<6>;
	.shared .align 4 .b32 mine[1];
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd1, %rd1;
	st.shared.u32 [mine], 1234;
	mov.u32 %r1, %reserved_smem_offset_1;
	cvt.u64.u32 %rd2, %r1;
	cvta.shared.u64 %rd3, %rd2;
	mov.u32 %r2, %tid.x;
	mul.wide.u32 %rd4, %r2, 8;
	add.s64 %rd5, %rd3, %rd4;
	cvt.u64.u32 %rd4, %r2;
	st.u64 [%rd5], %rd4;
	bar.sync 0;
	ld.u64 %rd4, [%rd3+8];
	ld.shared.u32 %r3, [mine];
	cvt.u64.u32 %rd2, %r3;
	add.s64 %rd4, %rd4, %rd2;
	mul.wide.u32 %rd2, %r2, 8;
	add.s64 %rd1, %rd1, %rd2;
	st.global.u64 [%rd1], %rd4;
	ret;
}
"""
    out = np.zeros(32, np.uint64)
    load(ptx).kernel().launch(1, 32, [out])
    assert out.tolist() == [1235] * 32


def test_lane_masks_follow_the_lane_id():
    lanes = np.arange(32, dtype=np.uint64)
    below = (np.uint64(1) << lanes) - np.uint64(1)
    want = {"%lanemask_eq": below + 1, "%lanemask_lt": below, "%lanemask_le": below * 2 + 1,
            "%lanemask_gt": np.uint64(0xFFFFFFFF) ^ (below * 2 + 1), "%lanemask_ge": np.uint64(0xFFFFFFFF) ^ below}
    assert read_name("%laneid", 32, block=32).tolist() == lanes.tolist()
    for name, values in want.items():
        assert read_name(name, 32, block=32).tolist() == values.tolist(), name


def test_outside_a_cluster_each_block_is_its_own_cluster_of_one():
    """ptxas reads the cluster shape from the driver (c[0x0][0x144], 0x188): 1x1x1 for a launch without clusters;
    %current_graph_exec is 0 outside a CUDA graph (PTX ISA 10.33)."""
    values = {name: int(read_name(name, width)[0]) for name, width in
              (("%cluster_ctaid.x", 32), ("%cluster_nctaid.x", 32), ("%cluster_ctarank", 32),
               ("%cluster_nctarank", 32), ("%is_explicit_cluster", 1), ("%current_graph_exec", 64))}
    assert values == {"%cluster_ctaid.x": 0, "%cluster_nctaid.x": 1, "%cluster_ctarank": 0, "%cluster_nctarank": 1,
                      "%is_explicit_cluster": 0, "%current_graph_exec": 0}


def test_clusterid_and_nclusterid_equal_ctaid_and_nctaid_without_clusters():
    ptx = """.version 8.8
.target sm_90
.address_size 64
.visible .entry ids(.param .u64 out)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r1, %ctaid.x;
	mul.wide.u32 %rd2, %r1, 8;
	add.s64 %rd1, %rd1, %rd2;
	mov.u32 %r2, %clusterid.x;
	mov.u32 %r3, %nclusterid.x;
	st.global.v2.u32 [%rd1], {%r2, %r3};
	ret;
}
"""
    out = np.zeros((5, 2), np.uint32)
    load(ptx).kernel().launch(5, 1, [out])
    assert out.tolist() == [[block, 5] for block in range(5)]


def test_h100_sxm_counts():
    """132 SMs on the H100 SXM; 64 warp slots per SM on sm_90 (2048 threads); read from the driver's constant
    bank and SR_VIRTCFG; the H100 gives both (tools/probes_names/h100.json)."""
    assert int(read_name("%nsmid", 32)[0]) == 132
    assert int(read_name("%nwarpid", 32)[0]) == 64


def test_counters_do_not_go_backwards():
    ptx = """.version 8.8
.target sm_90
.address_size 64
.visible .entry clocks(.param .u64 out)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<6>;
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u64 %rd2, %clock64;
	mov.u64 %rd3, %globaltimer;
	add.s64 %rd4, %rd2, %rd3;
	mov.u64 %rd4, %clock64;
	mov.u64 %rd5, %globaltimer;
	st.global.v2.u64 [%rd1], {%rd2, %rd3};
	st.global.v2.u64 [%rd1+16], {%rd4, %rd5};
	ret;
}
"""
    out = np.zeros(4, np.uint64)
    load(ptx).kernel().launch(1, 1, [out])
    assert out[2] > out[0] and out[3] > out[1]


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas")
def test_ptxas_accepts_and_refuses_the_names_listed_here(tmp_path):
    verdicts = {}
    for name in list(PTXAS_ACCEPTS) + PTXAS_REFUSES:
        (tmp_path / "k.ptx").write_text(read_ptx(name, PTXAS_ACCEPTS.get(name, (32, ""))[0]))
        result = subprocess.run(["ptxas", "-arch=sm_90", tmp_path / "k.ptx", "-o", tmp_path / "k.cubin"],
                                capture_output=True, text=True)
        verdicts[name] = result.returncode == 0
    assert verdicts == {**{name: True for name in PTXAS_ACCEPTS}, **{name: False for name in PTXAS_REFUSES}}


NAMES_PTX = Path(__file__).resolve().parents[1] / "tools" / "probes_names" / "names.ptx"


def test_cooperative_groups_64_thread_tiles_shuffle_through_the_reserved_region():
    """nvcc's block_tile_memory code (mov.u32 start, %reserved_smem_offset_1; cvta.shared.u64): each 64-thread
    tile reads its lane 5's value, the tile's index and the thread's rank."""
    out = np.zeros(256, np.uint32)
    load(NAMES_PTX).kernel("cg_tiles").launch(1, 256, [out])
    thread = np.arange(256)
    want = ((thread // 64) * 64 + 5) * 3 + 1 + 1000 * (thread // 64) + 100000 * (thread % 64)
    assert out.tolist() == want.tolist()


def test_nvcc_one_byte_static_and_extern_array_runs_every_dynamic_byte():
    """The issue's kernel as nvcc writes it: `__shared__ unsigned char flag; extern __shared__ unsigned char d[];`."""
    out = np.zeros(16 + 128, np.uint32)
    load(NAMES_PTX).kernel("shared_sizes").launch(1, 128, [out, np.uint32(100)], 100)
    assert out[16:116].tolist() == list(range(1, 101))
    assert out[:2].tolist() == [0x400, 0x410] and out[10] == 7
    assert out[4] == 100


def _probe_runner():
    spec = importlib.util.spec_from_file_location("run_probes", NAMES_PTX.parent / "run_probes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: driver-set words gpuemu does not model: the H100 read %envreg0 = 58995400, a value that depends on the driver
#: (no kernel nvcc writes reads it); %envreg6 = 1 and %envreg10 = 288 (= %reserved_smem_offset_end) are modelled
UNMODELLED = {"%envreg0"}


def test_special_registers_shared_layout_and_contraction_match_the_h100_probes():
    """tools/probes_names/h100.json, read on an H100 80GB HBM3 (driver 580.159.04, nvcc 13.0) by run_probes.py
    --gpu: every special register's value per thread (those that vary by run only for being read), the 1-byte
    static + extern kernel's addresses and size registers, cooperative groups' tiles, the JIT's contraction and
    the shared addresses of every layout configuration of tests/test_shared_layout.py."""
    probes = _probe_runner()
    h100 = json.loads((NAMES_PTX.parent / "h100.json").read_text())
    ours = probes.run("emulator")
    for name in probes.SPECIAL_REGISTER_SLOTS:
        if name in UNMODELLED:
            continue
        if name in probes.VARYING:
            assert len(ours["special_registers"][name]) == len(h100["special_registers"][name]), name
        else:
            assert ours["special_registers"][name] == h100["special_registers"][name], name
    assert ours["shared_sizes"] == h100["shared_sizes"]
    assert h100["shared_sizes"]["%aggr_smem_size"] == 1140 and h100["shared_sizes"]["%total_smem_size"] == 128
    assert h100["special_registers"]["%envreg6"] == [1] * 128
    assert h100["special_registers"]["%envreg10"] == h100["special_registers"]["%reserved_smem_offset_end"] == [288] * 128
    for key in ("cg_tiles", "contraction_O3", "contraction_debug", "layout"):
        assert ours[key] == h100[key], key


ENVREGS_PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry envregs(.param .u64 out)
{
    .reg .b32 %r<5>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %envreg0;
    mov.u32 %r2, %envreg1;
    mov.u32 %r3, %envreg6;
    mov.u32 %r4, %envreg10;
    st.global.v4.u32 [%rd1], {%r1, %r2, %r3, %r4};
    ret;
}
"""


@pytest.mark.parametrize("engine", ["interpreter", "compiled"])
def test_envreg6_and_envreg10_read_what_the_h100_driver_set_unless_the_launch_sets_them(engine):
    # tools/probes_names/h100.json: every thread read %envreg6 = 1 and %envreg10 = 288 (= %reserved_smem_offset_end);
    # %envreg0 (58995400 there) depends on the driver and reads 0, as do the words the driver left 0
    out = np.zeros(4, np.uint32)
    load(ENVREGS_PTX).kernel("envregs").launch(1, 1, [out], engine=engine)
    assert out.tolist() == [0, 0, 1, 288]
    load(ENVREGS_PTX).kernel("envregs").launch(1, 1, [out], engine=engine, environment={1: 7, 10: 9})
    assert out.tolist() == [0, 7, 1, 9]


#: sm_90 code reads %envreg<i> from constant bank 0 at 0x40 + 4i (ptxas compiles `mov %r, %envreg6` to
#: `LDC R, c[0x0][0x58]`)
ENVREGS_SASS = """
	code for sm_90
		Function : _Z7envregsPj
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   LDC.64 R2, c[0x0][0x210] ;
        /*0020*/                   ULDC.64 UR4, c[0x0][0x208] ;
        /*0030*/                   LDC R5, c[0x0][0x58] ;
        /*0040*/                   LDC R6, c[0x0][0x68] ;
        /*0050*/                   LDC R7, c[0x0][0x44] ;
        /*0060*/                   STG.E desc[UR4][R2.64], R5 ;
        /*0070*/                   STG.E desc[UR4][R2.64+0x4], R6 ;
        /*0080*/                   STG.E desc[UR4][R2.64+0x8], R7 ;
        /*0090*/                   EXIT ;
"""


def test_sass_reads_the_environment_registers_from_constant_bank_0():
    out = np.zeros(3, np.uint32)
    load(ENVREGS_SASS).kernel("_Z7envregsPj").launch(1, 1, [out])
    assert out.tolist() == [1, 288, 0]
    load(ENVREGS_SASS).kernel("_Z7envregsPj").launch(1, 1, [out], environment={1: 7})
    assert out.tolist() == [1, 288, 7]
