"""Read the special registers and the shared-memory layout on a GPU and on gpuemu, and compare them.

    python tools/probes_names/run_probes.py --gpu out_h100.json       # on the H100 machine (needs cupy)
    python tools/probes_names/run_probes.py --emulator out_gpuemu.json
    python tools/probes_names/run_probes.py --compare out_h100.json out_gpuemu.json

The probes: names.ptx (nvcc -ptx -arch=sm_90 -O3 names.cu): every special register and WARP_SZ per thread, the
issue's 1-byte static + extern layout with the size registers, and cooperative groups' 64-thread tiles, which
keep their scratch at %reserved_smem_offset_1; layout/NAME.ptx (written by --write-layout from the
configurations in tests/test_shared_layout.py): the shared address of every variable, by `mov.u32 %r, var`
and by cvta.to.shared of its generic address; contraction.ptx and contraction_debug.ptx (nvcc -O3 and -G of
contraction.cu): whether the driver's JIT fuses an inline-PTX mul into the add and sub that read it, as ptxas
-O3 does, and leaves the `.target sm_90, debug` PTX unfused. --compare lists each value as agreeing or not; values that change
from run to run (clocks, timers, SM and warp slots, grid ids) are compared only for their kind.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
NAMES_PTX = HERE / "names.ptx"
LAYOUT_DIR = HERE / "layout"
#: slot → name, as names.cu's special_registers writes them
SPECIAL_REGISTER_SLOTS = (
    ["WARP_SZ", "%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid", "%gridid", "%lanemask_eq", "%lanemask_le",
     "%lanemask_lt", "%lanemask_ge", "%lanemask_gt", "%clock", "%clock_hi", "%clock64", "%globaltimer",
     "%globaltimer_lo", "%globaltimer_hi"] + [f"%pm{i}" for i in range(8)] + [f"%pm{i}_64" for i in range(8)] +
    [f"%envreg{i}" for i in range(32)] +
    ["%total_smem_size", "%aggr_smem_size", "%dynamic_smem_size", "%reserved_smem_offset_begin",
     "%reserved_smem_offset_end", "%reserved_smem_offset_cap", "%reserved_smem_offset_0", "%reserved_smem_offset_1",
     "%current_graph_exec", "%is_explicit_cluster"] +
    [f"%{name}.{axis}" for name in ("clusterid", "nclusterid", "cluster_ctaid", "cluster_nctaid") for axis in "xyz"] +
    ["%cluster_ctarank", "%cluster_nctarank", "%tid.x", "%ctaid.x", "%ntid.x", "%nctaid.x", "warpSize", "marker"])
#: values that differ between runs: compared as "some value was read", not bit for bit
VARYING = {"%warpid", "%smid", "%gridid", "%clock", "%clock_hi", "%clock64", "%globaltimer", "%globaltimer_lo",
           "%globaltimer_hi"}
CONTRACTION_PTX = HERE / "contraction.ptx"
CONTRACTION_DEBUG_PTX = HERE / "contraction_debug.ptx"
CONTRACTION_N = 1024
GRID, BLOCK = 2, 64
SHARED_SIZES_BLOCK, SHARED_SIZES_DYNAMIC = 128, 100
CG_BLOCK = 256


def layout_configs():
    spec = importlib.util.spec_from_file_location("test_shared_layout", ROOT / "tests" / "test_shared_layout.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_layout_ptx() -> None:
    """layout/NAME.ptx for each configuration of tests/test_shared_layout.py: its kernel also stores, after the
    `mov.u32` address of each variable the kernel names, cvta.to.shared of that variable's generic address."""
    layout = layout_configs()
    LAYOUT_DIR.mkdir(exist_ok=True)
    for name in sorted(layout.CONFIGS):
        ptx, names = layout.layout_ptx(name)
        kernel_names = layout.CONFIGS[name][3]
        extra = [f"\t{{ .reg .b64 %g, %s; cvta.shared.u64 %g, {var}; cvta.to.shared.u64 %s, %g; "
                 f"cvt.u32.u64 %r39, %s; st.global.u32 [%rd1+{4 * (len(names) + names.index(var))}], %r39; }}"
                 for var in kernel_names]
        ptx = ptx[:ptx.rindex("ret;\n}")] + "\n".join(extra) + "\nret;\n}\n"
        comment = f"// {name}: {', '.join(names)} (shared addresses, then cvta.to.shared of the generic ones)\n"
        (LAYOUT_DIR / f"{name}.ptx").write_text(comment + ptx)


def run(backend: str) -> dict:
    if backend == "gpu":
        import cupy

        def launch(path, kernel, grid, block, args, shared=0):
            module = cupy.RawModule(path=str(path))
            function = module.get_function(kernel)
            buffers = [cupy.asarray(arg) if isinstance(arg, np.ndarray) else arg for arg in args]
            function((grid,), (block,), tuple(buffers), shared_mem=shared)
            cupy.cuda.runtime.deviceSynchronize()
            return [cupy.asnumpy(b) if isinstance(b, cupy.ndarray) else b for b in buffers]
    else:
        sys.path.insert(0, str(ROOT))
        from emulator.api import load

        def launch(path, kernel, grid, block, args, shared=0):
            module = load(path)
            arrays = [arg.copy() if isinstance(arg, np.ndarray) else arg for arg in args]
            module.kernel(kernel).launch(grid, block, arrays, shared)
            return arrays

    results: dict = {}
    rows = launch(NAMES_PTX, "_Z17special_registersPy", GRID, BLOCK,
                  [np.zeros(GRID * BLOCK * 96, np.uint64)])[0].reshape(GRID * BLOCK, 96)
    results["special_registers"] = {name: [int(v) for v in rows[:, slot]]
                                    for slot, name in enumerate(SPECIAL_REGISTER_SLOTS)}
    out = launch(NAMES_PTX, "_Z12shared_sizesPjj", 1, SHARED_SIZES_BLOCK,
                 [np.zeros(16 + SHARED_SIZES_BLOCK, np.uint32), np.uint32(SHARED_SIZES_DYNAMIC)],
                 SHARED_SIZES_DYNAMIC)[0]
    labels = ["&flag", "&dynamic_bytes", "%total_smem_size", "%aggr_smem_size", "%dynamic_smem_size",
              "%reserved_smem_offset_begin", "%reserved_smem_offset_end", "%reserved_smem_offset_cap",
              "%reserved_smem_offset_0", "%reserved_smem_offset_1", "flag"]
    results["shared_sizes"] = {label: int(out[i]) for i, label in enumerate(labels)}
    results["shared_sizes"]["dynamic bytes read back"] = [int(v) for v in out[16:16 + SHARED_SIZES_DYNAMIC]]
    results["cg_tiles"] = [int(v) for v in launch(NAMES_PTX, "_Z8cg_tilesPj", 1, CG_BLOCK,
                                                  [np.zeros(CG_BLOCK, np.uint32)])[0]]
    rng = np.random.default_rng(2024)
    a, b, c = (rng.standard_normal(CONTRACTION_N).astype(np.float32) for _ in range(3))
    for label, path in (("contraction_O3", CONTRACTION_PTX), ("contraction_debug", CONTRACTION_DEBUG_PTX)):
        out = launch(path, "_Z12mul_then_addPfPKfS1_S1_i", CONTRACTION_N // 256, 256,
                     [np.zeros(2 * CONTRACTION_N, np.float32), a, b, c, np.int32(CONTRACTION_N)])[0]
        results[label] = [int(v) for v in out.view(np.uint32)]
    layout = layout_configs()
    results["layout"] = {}
    for name in sorted(layout.CONFIGS):
        _, names = layout.layout_ptx(name)
        out = launch(LAYOUT_DIR / f"{name}.ptx", "_Z6layoutPj", 1, 1, [np.zeros(2 * len(names), np.uint32)], 64)[0]
        results["layout"][name] = {var: [int(out[i]), int(out[len(names) + i])] for i, var in enumerate(names)}
    return results


def compare(first: dict, second: dict) -> int:
    differ = 0

    def report(label, a, b, varying=False):
        nonlocal differ
        same = (a is not None and b is not None) if varying else a == b
        differ += not same
        shown = lambda v: v if not isinstance(v, list) or len(v) <= 4 else f"{v[:4]}... ({len(v)} values)"
        print(f"{'agree ' if same else 'DIFFER'} {label}: {shown(a)} | {shown(b)}{' (varies by run)' if varying else ''}")

    for name in SPECIAL_REGISTER_SLOTS:
        report(name, first["special_registers"].get(name), second["special_registers"].get(name), name in VARYING)
    for label in first["shared_sizes"]:
        report(f"shared_sizes {label}", first["shared_sizes"][label], second["shared_sizes"].get(label))
    report("cg_tiles", first["cg_tiles"], second["cg_tiles"])
    report("contraction_O3 (fused)", first["contraction_O3"], second["contraction_O3"])
    report("contraction_debug (not fused)", first["contraction_debug"], second["contraction_debug"])
    for name, values in first["layout"].items():
        report(f"layout {name}", values, second["layout"].get(name))
    print(f"{differ} value(s) differ")
    return 1 if differ else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--gpu", metavar="OUT.json", help="run the probes on the GPU (cupy)")
    group.add_argument("--emulator", metavar="OUT.json", help="run the probes on gpuemu")
    group.add_argument("--compare", nargs=2, metavar=("A.json", "B.json"), help="compare two result files")
    group.add_argument("--write-layout", action="store_true", help="regenerate layout.ptx from the test's configs")
    options = parser.parse_args(argv)
    if options.write_layout:
        write_layout_ptx()
        return 0
    if options.compare:
        first, second = (json.loads(Path(path).read_text()) for path in options.compare)
        return compare(first, second)
    backend, path = ("gpu", options.gpu) if options.gpu else ("emulator", options.emulator)
    Path(path).write_text(json.dumps(run(backend), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
