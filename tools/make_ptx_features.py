#!/usr/bin/env python3
"""Regenerate tests/ptx_features/: the PTX of each .cu, seeded inputs and launches.json (H100 results: gpu_truth.py)."""

# The kernels exercise PTX that whole CUDA programs need: recursion (and a stack overflow), indirect calls and
# virtual functions, the predicate output of shfl.sync in inline PTX, integer wmma, __managed__ variables, and
# warp instructions whose member mask is narrower than the warp. Built with `nvcc -ptx -arch=sm_90 -O3`.
# tests/test_ptx_features.py runs every launch and compares it with the H100's expected/<launch>/.

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_corpus import F32, I32, U32, U8, In, Launch, Out, Scalar, argument_text, rng  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
FEATURES = REPO / "tests" / "ptx_features"
SOURCES = ("warp_masks", "recursion", "indirect_calls", "inline_pred", "wmma_int", "managed")
NVCC_FLAGS = ("-ptx", "-arch=sm_90", "-O3")
I8 = np.int8


def launches():
    L = []
    for members in (8, 20):
        L.append(Launch(f"shfl_down_outside_mask_{members}", "warp_masks", "shfl_down_outside_mask", (1,), (64,),
                        [Out(I32, 320), Out(I32, 320), Scalar("i32", members)]))
    L.append(Launch("shfl_down_exited_lanes", "warp_masks", "shfl_down_exited_lanes", (1,), (32,),
                    [Out(I32, 160), Scalar("i32", 8)]))
    L.append(Launch("shfl_down_partial_warp", "warp_masks", "shfl_down_exited_lanes", (1,), (8,),
                    [Out(I32, 160), Scalar("i32", 8)]))
    L.append(Launch("shfl_modes_outside_mask", "warp_masks", "shfl_modes_outside_mask", (1,), (32,),
                    [Out(I32, 128), Scalar("i32", 8)]))
    r = rng("reduce_final_warp")
    x = r.standard_normal(2000).astype(F32)
    for block in (256, 96):
        L.append(Launch(f"reduce_final_warp_ballot_{block}", "warp_masks", "reduce_final_warp_ballot", (2,), (block,),
                        [Out(F32, 2), In("x", x, "reduce_final_warp_x"), Scalar("u32", 2000)]))
    keys = r.integers(0, 64, 64).astype(U32)
    L.append(Launch("partial_mask_collectives", "warp_masks", "partial_mask_collectives", (1,), (64,),
                    [Out(U32, 512), In("keys", keys)]))

    r = rng("recursion")
    L.append(Launch("recursion_fib", "recursion", "recursion_fib", (1,), (64,),
                    [Out(I32, 64), In("n", r.integers(0, 16, 64).astype(I32))]))
    L.append(Launch("recursion_mutual", "recursion", "recursion_mutual", (1,), (64,),
                    [Out(I32, 64), In("n", r.integers(0, 40, 64).astype(U32))]))
    L.append(Launch("recursion_local_frames", "recursion", "recursion_local_frames", (1,), (64,),
                    [Out(I32, 64), In("seeds", r.integers(-100, 100, 64).astype(I32))]))
    L.append(Launch("recursion_tree", "recursion", "recursion_tree", (1,), (64,),
                    [Out(U32, 64), In("limits", r.integers(1, 60, 64).astype(U32))]))
    for depth in (20, 30, 40, 100, 1000, 100000):
        L.append(Launch(f"recursion_deep_{depth}", "recursion", "recursion_deep", (1,), (32,),
                        [Out(np.uint64, 32), Scalar("u64", depth)]))

    r = rng("indirect")
    L.append(Launch("call_through_table", "indirect_calls", "call_through_table", (1,), (64,),
                    [Out(F32, 64), In("x", r.standard_normal(64).astype(F32)),
                     In("choice", r.integers(0, 3, 64).astype(I32))]))
    L.append(Launch("call_pointer_argument", "indirect_calls", "call_pointer_argument", (1,), (64,),
                    [Out(I32, 64), In("a", r.integers(-20, 20, 64).astype(I32))]))
    L.append(Launch("call_virtual", "indirect_calls", "call_virtual", (1,), (64,),
                    [Out(F32, 64), Out(I32, 64), In("sizes", r.uniform(0.5, 3.0, 64).astype(F32))]))

    r = rng("inline_pred")
    L.append(Launch("inline_scan", "inline_pred", "inline_scan", (1,), (64,),
                    [Out(U32, 64), In("in", r.integers(0, 1000, 64).astype(U32))]))
    L.append(Launch("shfl_predicate_only", "inline_pred", "shfl_predicate_only", (1,), (64,),
                    [Out(U32, 128), In("in", r.integers(0, 1000, 64).astype(U32))]))

    r = rng("wmma_int")
    u8a, u8b = r.integers(0, 256, 256).astype(U8), r.integers(0, 256, 256).astype(U8)
    s8a, s8b = r.integers(-128, 128, 512).astype(I8), r.integers(-128, 128, 512).astype(I8)
    c = r.integers(-100000, 100000, 256).astype(I32)
    L.append(Launch("wmma_u8_16x16x16", "wmma_int", "wmma_u8_16x16x16", (1,), (32,),
                    [Out(I32, 256), In("a", u8a), In("b", u8b), In("c", c)]))
    L.append(Launch("wmma_s8_16x16x16", "wmma_int", "wmma_s8_16x16x16", (1,), (32,),
                    [Out(I32, 256), In("a", s8a[:256].copy()), In("b", s8b[:256].copy()), In("c", c, "wmma_u8_16x16x16_c")]))
    L.append(Launch("wmma_s8_32x8x16", "wmma_int", "wmma_s8_32x8x16", (1,), (32,),
                    [Out(I32, 256), In("a", s8a), In("b", s8b[:128].copy()), In("c", c, "wmma_u8_16x16x16_c")]))
    L.append(Launch("wmma_u8_8x32x16", "wmma_int", "wmma_u8_8x32x16", (1,), (32,),
                    [Out(I32, 256), In("a", u8a[:128].copy()), In("b", np.concatenate([u8b, u8a]))]))
    big = np.full(256, 2 ** 31 - 5000, I32)
    big[::2] = -2 ** 31 + 5000
    L.append(Launch("wmma_s8_saturate", "wmma_int", "wmma_s8_saturate", (1,), (32,),
                    [Out(I32, 256), In("a", s8a[:256].copy(), "wmma_s8_16x16x16_a"),
                     In("b", s8b[:256].copy(), "wmma_s8_16x16x16_b"), In("c", big)]))

    r = rng("managed")
    L.append(Launch("use_managed", "managed", "use_managed", (1,), (64,),
                    [Out(F32, 64), In("x", r.standard_normal(64).astype(F32))]))
    return L


#: launches the H100 may refuse (a stack overflow): gpu_truth runs each in a process of its own
MAY_FAULT = {"recursion_deep_40", "recursion_deep_100", "recursion_deep_1000", "recursion_deep_100000",
             "recursion_deep_30"}


def main() -> int:
    if not shutil.which("nvcc"):
        print("nvcc not found", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        for source in SOURCES:
            shutil.copy(FEATURES / f"{source}.cu", scratch)
            subprocess.run(["nvcc", *NVCC_FLAGS, f"{source}.cu", "-o", str(FEATURES / f"{source}.ptx")], cwd=scratch,
                           check=True)
    saved = {}
    entries = []
    dims = lambda d: list(d) + [1] * (3 - len(d))
    for launch in launches():
        entry = {"name": launch.name, "kernel": launch.kernel, "ptx": f"{launch.source}.ptx", "grid": dims(launch.grid),
                 "block": dims(launch.block), "shared": launch.shared,
                 "args": [argument_text(launch, arg, saved) for arg in launch.args], "stdout": False, "tolerance": None}
        if launch.name in MAY_FAULT:
            entry["expect_error"] = "CUDA_ERROR_ILLEGAL_ADDRESS"
        entries.append(entry)
    inputs = FEATURES / "inputs"
    inputs.mkdir(exist_ok=True)
    for stale in inputs.glob("*.npy"):
        if stale.stem not in saved:
            stale.unlink()
    for file, array in saved.items():
        np.save(inputs / f"{file}.npy", np.ascontiguousarray(array))
    note = "NAME.ptx: nvcc -ptx -arch=sm_90 -O3 NAME.cu. tools/make_ptx_features.py writes this file."
    (FEATURES / "launches.json").write_text(json.dumps({"note": note, "launches": entries}, indent=1) + "\n")
    print(f"{len(entries)} launches, {len(saved)} input files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
