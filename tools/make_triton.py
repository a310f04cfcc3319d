"""Compile the Triton example kernels to PTX (no GPU needed) and write examples/triton: PTX, launches.json, inputs.

Run with a Python that has Triton: `python tools/make_triton.py` (e.g. from a venv with
`pip install triton numpy`). Launches follow Triton's convention: a grid of programs, num_warps × 32
threads, the metadata's dynamic shared size, and the trailing global/profile scratch pointers.
"""
import json
from pathlib import Path

import numpy as np
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget

OUT = Path(__file__).resolve().parents[1] / "examples" / "triton"


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, PRECISION: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(tl.load(a), tl.load(b), input_precision=PRECISION)
        a += BK * stride_ak
        b += BK * stride_bk
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc)


@triton.jit
def histogram_kernel(data_ptr, hist_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    values = tl.load(data_ptr + offs, mask=mask, other=0)
    tl.atomic_add(hist_ptr + values, 1, mask=mask)


@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, L, D: tl.constexpr, BL: tl.constexpr):
    pid = tl.program_id(0)
    rq = pid * BL + tl.arange(0, BL)
    rd = tl.arange(0, D)
    rl = tl.arange(0, BL)
    q = tl.load(q_ptr + rq[:, None] * D + rd[None, :])
    m_i = tl.full((BL,), -float("inf"), tl.float32)
    l_i = tl.zeros((BL,), tl.float32)
    acc = tl.zeros((BL, D), tl.float32)
    for start in range(0, L, BL):
        keys = tl.load(k_ptr + (start + rl)[:, None] * D + rd[None, :])
        values = tl.load(v_ptr + (start + rl)[:, None] * D + rd[None, :])
        scores = tl.dot(q, tl.trans(keys))
        m_new = tl.maximum(m_i, tl.max(scores, 1))
        p = tl.exp(scores - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), values)
        m_i = m_new
    tl.store(o_ptr + rq[:, None] * D + rd[None, :], acc / l_i[:, None])


def _bf16_bits(values):
    """bf16 codes (round to nearest even) of float values, as uint16."""
    bits = values.astype(np.float32).reshape(-1).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def _fp8_codes(rng, shape):
    """Random e4m3 codes without the NaN code, as uint8."""
    codes = rng.integers(0, 256, int(np.prod(shape)), dtype=np.uint8)
    return np.where((codes & 0x7F) == 0x7F, codes ^ 1, codes).astype(np.uint8)


def compile_kernel(fn, signature, constexprs, arch, num_warps=4, num_stages=3):
    source = triton.compiler.ASTSource(fn=fn, signature=signature, constexprs=constexprs)
    return triton.compile(source, target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": num_warps, "num_stages": num_stages})


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "inputs").mkdir(exist_ok=True)
    rng = np.random.default_rng(2026)
    launches = []

    def emit(name, compiled, grid, args):
        ptx = f"{name}.ptx"
        (OUT / ptx).write_text(compiled.asm["ptx"])
        scratch = ["u64:0", "u64:0"]
        launches.append({"name": name, "ptx": ptx, "kernel": compiled.metadata.name, "grid": list(grid),
                         "block": [compiled.metadata.num_warps * 32, 1, 1], "shared": compiled.metadata.shared,
                         "args": args + scratch, "stdout": False, "tolerance": None})
        return launches[-1]

    def save(name, array):
        np.save(OUT / "inputs" / name, array)
        return f"@inputs/{name}"

    n = 5000
    x = save("add_x.npy", rng.standard_normal(n).astype(np.float32))
    y = save("add_y.npy", rng.standard_normal(n).astype(np.float32))
    emit("vector_add", compile_kernel(add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                                      {"BLOCK": 1024}, 90), ((n + 1023) // 1024, 1, 1),
         [x, y, f"zeros:f32:{n}", f"i32:{n}"])

    rows, cols = 64, 781
    data = save("softmax_in.npy", (4 * rng.standard_normal((rows, cols))).astype(np.float32).reshape(-1))
    emit("softmax", compile_kernel(softmax_kernel, {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32",
                                                             "out_stride": "i32", "n_cols": "i32"}, {"BLOCK": 1024}, 90),
                  (rows, 1, 1), [f"zeros:f32:{rows * cols}", data, f"i32:{cols}", f"i32:{cols}", f"i32:{cols}"])

    m = nn = k = 128
    signature = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
                 "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32",
                 "stride_cm": "i32", "stride_cn": "i32"}
    strides = [f"i32:{v}" for v in (m, nn, k, k, 1, nn, 1, nn, 1)]
    a32 = save("matmul_a_f32.npy", rng.uniform(-1, 1, (m, k)).astype(np.float32).reshape(-1))
    b32 = save("matmul_b_f32.npy", rng.uniform(-1, 1, (k, nn)).astype(np.float32).reshape(-1))
    emit("matmul_f32_ieee", compile_kernel(matmul_kernel, signature, {"BM": 64, "BN": 64, "BK": 32, "PRECISION": "ieee"},
                                           80, num_stages=3), (m // 64, nn // 64, 1),
         [a32, b32, f"zeros:f32:{m * nn}"] + strides)
    emit("matmul_tf32_mma", compile_kernel(matmul_kernel, signature,
                                           {"BM": 64, "BN": 64, "BK": 32, "PRECISION": "tf32"}, 80, num_stages=3),
         (m // 64, nn // 64, 1), [a32, b32, f"zeros:f32:{m * nn}"] + strides)
    signature16 = dict(signature, a_ptr="*fp16", b_ptr="*fp16")
    a16 = save("matmul_a_f16.npy", rng.uniform(-1, 1, (m, k)).astype(np.float16).reshape(-1))
    b16 = save("matmul_b_f16.npy", rng.uniform(-1, 1, (k, nn)).astype(np.float16).reshape(-1))
    emit("matmul_f16_mma", compile_kernel(matmul_kernel, signature16,
                                          {"BM": 64, "BN": 64, "BK": 32, "PRECISION": "ieee"}, 80, num_stages=3),
         (m // 64, nn // 64, 1), [a16, b16, f"zeros:f32:{m * nn}"] + strides)

    count = 100000
    values = save("hist_data.npy", rng.integers(0, 256, count).astype(np.int32))
    emit("histogram", compile_kernel(histogram_kernel, {"data_ptr": "*i32", "hist_ptr": "*i32", "n": "i32"},
                                     {"BLOCK": 1024}, 90), ((count + 1023) // 1024, 1, 1),
         [values, "zeros:i32:256", f"i32:{count}"])

    # The same matmul for sm_90: Triton's default Hopper path, wgmma.mma_async on shared-memory descriptors.
    for name, dtype, a, b, precision in (
            ("f16", "*fp16", a16, b16, "ieee"),
            ("bf16", "*bf16", save("matmul_a_bf16.npy", _bf16_bits(rng.uniform(-1, 1, (m, k)))),
             save("matmul_b_bf16.npy", _bf16_bits(rng.uniform(-1, 1, (k, nn)))), "ieee"),
            ("tf32", "*fp32", a32, b32, "tf32"),
            ("fp8e4m3", "*fp8e4nv", save("matmul_a_e4m3.npy", _fp8_codes(rng, (m, k))),
             save("matmul_b_e4m3.npy", _fp8_codes(rng, (k, nn))), "ieee")):
        emit(f"matmul_{name}_wgmma", compile_kernel(matmul_kernel, dict(signature, a_ptr=dtype, b_ptr=dtype),
                                                    {"BM": 64, "BN": 64, "BK": 32, "PRECISION": precision},
                                                    90, num_stages=3),
             (m // 64, nn // 64, 1), [a, b, f"zeros:f32:{m * nn}"] + strides)

    # Two warpgroups per program (num_warps 8), and a flash-attention step whose second dot takes A from registers.
    emit("matmul_f16_wgmma_w8", compile_kernel(matmul_kernel, signature16,
                                               {"BM": 128, "BN": 128, "BK": 64, "PRECISION": "ieee"}, 90,
                                               num_warps=8, num_stages=3),
         (m // 128, nn // 128, 1), [a16, b16, f"zeros:f32:{m * nn}"] + strides)
    length, head = 256, 64
    qkv = [save(f"attention_{name}.npy", rng.uniform(-1, 1, length * head).astype(np.float16)) for name in "qkv"]
    emit("attention", compile_kernel(attention_kernel, {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16",
                                                                 "o_ptr": "*fp32", "L": "i32"}, {"D": 64, "BL": 64}, 90,
                                              num_stages=2),
                  (length // 64, 1, 1), qkv + [f"zeros:f32:{length * head}", f"i32:{length}"])

    (OUT / "launches.json").write_text(json.dumps({"launches": launches}, indent=2) + "\n")
    print(f"wrote {len(launches)} launches to {OUT}")


if __name__ == "__main__":
    main()
