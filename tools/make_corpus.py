#!/usr/bin/env python3
"""Regenerate examples/corpus/: both PTX builds of each .cu, seeded inputs, launches.json; --check compares results with numpy."""

# The corpus: real-world-style kernels (LLM training, NVIDIA-sample-style, cooperative groups) in
# examples/corpus/{llm,samples,cg}.cu. Each is built twice, `nvcc -ptx -arch=sm_90 -O3` (NAME.ptx) and with
# --use_fast_math added (NAME.fast.ptx); every kernel gets a launch on the first build and, where the fast build's
# code for it differs, a `_fast` launch on the second. tools/gpu_truth.py takes the H100's results
# (expected/<launch>/); `--check` compares those (or, with --emulator, gpuemu's own) with float64 numpy references
# within a tolerance, which shows that each kernel computes what it should. Bit-exactness against the H100 is
# tests/test_examples.py's job.

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional

import numpy as np

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "examples" / "corpus"
SOURCES = ("llm", "samples", "cg")
BUILDS = {"": ("-ptx", "-arch=sm_90", "-O3"), "fast": ("-ptx", "-arch=sm_90", "-O3", "--use_fast_math")}
F32, F64, I32, U32, U8, F16 = np.float32, np.float64, np.int32, np.uint32, np.uint8, np.float16


@dataclass
class In:
    """An input buffer, saved as inputs/<launch>_<name>.npy (or shared by several launches under `file`)."""
    name: str
    array: np.ndarray
    file: Optional[str] = None


@dataclass
class Out:
    """A zero-filled output buffer."""
    dtype: type
    count: int


@dataclass
class Scalar:
    kind: str
    value: object


@dataclass
class Launch:
    name: str
    source: str
    kernel: str
    grid: tuple
    block: tuple
    args: list
    shared: int = 0
    const: Dict[str, np.ndarray] = field(default_factory=dict)
    #: reference(values) -> {argument index: (expected, rtol, atol)}; values are the arguments as numpy values
    reference: Optional[Callable] = None


def rng(name: str) -> np.random.Generator:
    return np.random.default_rng(sum(name.encode()) * 7919 + 13)


def normal(r, *shape, scale=1.0):
    return (r.standard_normal(shape) * scale).astype(F32)


def uniform(r, low, high, *shape):
    return r.uniform(low, high, shape).astype(F32)


def f64(a):
    return np.asarray(a, dtype=F64)


# --- numpy references ---------------------------------------------------------------------------------------

def gelu(x):
    x = f64(x)
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def gelu_grad(x):
    x = f64(x)
    inner = np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)
    return 0.5 * (1 + np.tanh(inner)) + 0.5 * x / np.cosh(inner) ** 2 * np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * x * x)


def softmax(x, axis=-1):
    x = f64(x)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layernorm_stats(x):
    x = f64(x)
    mean = x.mean(axis=1)
    rstd = 1 / np.sqrt(((x - mean[:, None]) ** 2).mean(axis=1) + 1e-5)
    return mean, rstd


def causal_attention(qkv, B, T, C, H):
    hs = C // H
    q, k, v = (f64(qkv).reshape(B, T, 3, H, hs)[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hs)
    scores[:, :, np.triu_indices(T, 1)[0], np.triu_indices(T, 1)[1]] = -np.inf
    att = softmax(scores)
    out = (att @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
    return out, att


def normal_cdf_poly(d):
    k = 1 / (1 + 0.2316419 * np.abs(d))
    poly = k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429))))
    cnd = 0.3989422804014327 * np.exp(-0.5 * d * d) * poly
    return np.where(d > 0, 1 - cnd, cnd)


def walsh(x):
    x = f64(x).copy()
    n = x.shape[-1]
    h = 1
    while h < n:
        y = x.reshape(*x.shape[:-1], n // (2 * h), 2, h)
        a, b = y[..., 0, :].copy(), y[..., 1, :].copy()
        y[..., 0, :], y[..., 1, :] = a + b, a - b
        x = y.reshape(*x.shape[:-1], n)
        h *= 2
    return x


def close(expected, rtol=2e-3, atol=1e-5):
    return (np.asarray(expected), rtol, atol)


def exact(expected):
    return (np.asarray(expected), 0.0, 0.0)


# --- the launches ---------------------------------------------------------------------------------------------

def llm_launches() -> List[Launch]:
    L = []
    r = rng("gelu")
    x = normal(r, 1000, scale=2.0)
    dout = normal(r, 1000)
    L.append(Launch("gelu_forward", "llm", "gelu_forward", (4,), (256,), [Out(F32, 1000), In("x", x), Scalar("i32", 1000)],
                    reference=lambda v: {0: close(gelu(v[1]))}))
    L.append(Launch("gelu_backward", "llm", "gelu_backward", (4,), (256,),
                    [Out(F32, 1000), In("x", x, "gelu_forward_x"), In("dout", dout), Scalar("i32", 1000)],
                    reference=lambda v: {0: close(gelu_grad(v[1]) * v[2], 3e-3, 1e-4)}))

    r = rng("softmax")
    rows_a, cols_a = 64, 40
    xa = normal(r, rows_a * cols_a, scale=3.0)
    rows_b, cols_b = 16, 100
    xb = normal(r, rows_b * cols_b, scale=4.0)
    rows_s, cols_s = 8, 200
    xs = normal(r, rows_s * cols_s, scale=2.0)

    def ref_softmax(rows, cols):
        return lambda v: {0: close(softmax(v[1].reshape(rows, cols)).reshape(-1), 2e-3, 1e-6)}
    L.append(Launch("softmax_naive", "llm", "softmax_naive", (1,), (64,),
                    [Out(F32, rows_a * cols_a), In("x", xa), Scalar("i32", rows_a), Scalar("i32", cols_a)],
                    reference=ref_softmax(rows_a, cols_a)))
    L.append(Launch("softmax_shared", "llm", "softmax_shared", (rows_s,), (64,),
                    [Out(F32, rows_s * cols_s), In("x", xs), Scalar("i32", cols_s)], shared=64 * 4,
                    reference=lambda v: {0: close(softmax(v[1].reshape(rows_s, cols_s)).reshape(-1), 2e-3, 1e-6)}))
    L.append(Launch("softmax_warp", "llm", "softmax_warp", (4,), (128,),
                    [Out(F32, rows_b * cols_b), In("x", xb), Scalar("i32", rows_b), Scalar("i32", cols_b)],
                    reference=ref_softmax(rows_b, cols_b)))
    L.append(Launch("softmax_online", "llm", "softmax_online", (1,), (64,),
                    [Out(F32, rows_a * cols_a), In("x", xa, "softmax_naive_x"), Scalar("i32", rows_a),
                     Scalar("i32", cols_a)], reference=ref_softmax(rows_a, cols_a)))
    L.append(Launch("softmax_online_warp", "llm", "softmax_online_warp", (4,), (128,),
                    [Out(F32, rows_b * cols_b), In("x", xb, "softmax_warp_x"), Scalar("i32", rows_b),
                     Scalar("i32", cols_b)], reference=ref_softmax(rows_b, cols_b)))
    TS = 64
    scores = normal(r, TS * TS, scale=6.0)

    def ref_causal(v):
        s = f64(v[1]).reshape(TS, TS) * 0.125
        s[np.triu_indices(TS, 1)] = -np.inf
        return {0: close(softmax(s).reshape(-1), 2e-3, 1e-6)}
    L.append(Launch("softmax_causal_vec4", "llm", "softmax_causal_vec4", (16,), (128,),
                    [Out(F32, TS * TS), In("scores", scores), Scalar("i32", TS), Scalar("i32", TS), Scalar("f32", 0.125)],
                    reference=ref_causal))

    r = rng("layernorm")
    rl, cl = 16, 96
    x = normal(r, rl * cl, scale=2.0) + F32(0.5)
    w = normal(r, cl) * F32(0.5) + F32(1)
    b = normal(r, cl, scale=0.1)
    dout = normal(r, rl * cl)
    mean, rstd = (a.astype(F32) for a in layernorm_stats(x.reshape(rl, cl)))
    dinp0 = normal(r, rl * cl, scale=0.01)
    dw0, db0 = normal(r, cl, scale=0.01), normal(r, cl, scale=0.01)

    def ref_ln(v):
        m, s = layernorm_stats(v[3].reshape(rl, cl))
        y = (f64(v[3]).reshape(rl, cl) - m[:, None]) * s[:, None] * f64(v[4]) + f64(v[5])
        return {0: close(y.reshape(-1), 1e-3, 1e-4), 1: close(m, 1e-4, 1e-5), 2: close(s, 1e-4)}
    L.append(Launch("layernorm_forward", "llm", "layernorm_forward", (4,), (128,),
                    [Out(F32, rl * cl), Out(F32, rl), Out(F32, rl), In("x", x), In("weight", w),
                     In("bias", b), Scalar("i32", rl), Scalar("i32", cl)], reference=ref_ln))

    def ref_welford(v):
        m, s = layernorm_stats(v[1].reshape(32, 48))
        y = (f64(v[1]).reshape(32, 48) - m[:, None]) * s[:, None] * f64(v[2]) + f64(v[3])
        return {0: close(y.reshape(-1), 1e-3, 1e-4)}
    xw = normal(r, 32 * 48, scale=3.0) + F32(1)
    L.append(Launch("layernorm_welford", "llm", "layernorm_welford", (1,), (32,),
                    [Out(F32, 32 * 48), In("x", xw), In("weight", w[:48].copy()), In("bias", b[:48].copy()),
                     Scalar("i32", 32), Scalar("i32", 48)], reference=ref_welford))

    def ref_ln_back(v):
        xx = f64(v[2]).reshape(rl, cl)
        norm = (xx - f64(v[4])[:, None]) * f64(v[5])[:, None]
        dnorm = f64(v[3]) * f64(v[1]).reshape(rl, cl)
        d = (dnorm - dnorm.mean(1, keepdims=True) - norm * (dnorm * norm).mean(1, keepdims=True)) * f64(v[5])[:, None]
        return {0: close(f64(v[0]) + d.reshape(-1), 2e-3, 1e-4)}
    L.append(Launch("layernorm_backward", "llm", "layernorm_backward", (4,), (128,),
                    [In("dinp", dinp0), In("dout", dout), In("x", x, "layernorm_forward_x"),
                     In("weight", w, "layernorm_forward_weight"), In("mean", mean), In("rstd", rstd),
                     Scalar("i32", rl), Scalar("i32", cl)], reference=ref_ln_back))

    def ref_ln_params(v):
        norm = (f64(v[3]).reshape(rl, cl) - f64(v[4])[:, None]) * f64(v[5])[:, None]
        dy = f64(v[2]).reshape(rl, cl)
        return {0: close(f64(v[0]) + (norm * dy).sum(0), 2e-3, 1e-4), 1: close(f64(v[1]) + dy.sum(0), 2e-3, 1e-4)}
    L.append(Launch("layernorm_backward_params", "llm", "layernorm_backward_params", (1,), (128,),
                    [In("dweight", dw0), In("dbias", db0), In("dout", dout, "layernorm_backward_dout"),
                     In("x", x, "layernorm_forward_x"), In("mean", mean, "layernorm_backward_mean"),
                     In("rstd", rstd, "layernorm_backward_rstd"), Scalar("i32", rl), Scalar("i32", cl)],
                    reference=ref_ln_params))

    r = rng("attention")
    B, T, C, H = 2, 16, 32, 2
    qkv = normal(r, B * T * 3 * C)

    def ref_attention(v):
        out, att = causal_attention(v[2], B, T, C, H)
        return {0: close(out.reshape(-1), 2e-3, 1e-5), 1: close(att.reshape(-1), 2e-3, 1e-6)}
    L.append(Launch("attention_forward", "llm", "attention_forward", (1,), (64,),
                    [Out(F32, B * T * C), Out(F32, B * H * T * T), In("qkv", qkv), Scalar("i32", B), Scalar("i32", T),
                     Scalar("i32", C), Scalar("i32", H)], reference=ref_attention))
    C2 = 64
    qkv2 = normal(r, 1 * T * 3 * C2)
    L.append(Launch("attention_online", "llm", "attention_online", (8,), (128,),
                    [Out(F32, T * C2), In("qkv", qkv2), Scalar("i32", 1), Scalar("i32", T), Scalar("i32", C2),
                     Scalar("i32", 2)],
                    reference=lambda v: {0: close(causal_attention(v[1], 1, T, C2, 2)[0].reshape(-1), 2e-3, 1e-5)}))

    r = rng("crossentropy")
    rc, vocab = 64, 50
    probs = softmax(normal(r, rc, vocab, scale=2.0)).astype(F32).reshape(-1)
    targets = r.integers(0, vocab, rc).astype(I32)
    dlosses = uniform(r, 0.5, 1.5, rc) / F32(rc)
    dlogits0 = normal(r, rc * vocab, scale=0.01)
    L.append(Launch("crossentropy_forward", "llm", "crossentropy_forward", (1,), (64,),
                    [Out(F32, rc), In("probs", probs), In("targets", targets), Scalar("i32", rc),
                     Scalar("i32", vocab)],
                    reference=lambda v: {0: close(-np.log(f64(v[1]).reshape(rc, vocab)[np.arange(rc), v[2]]))}))

    def ref_ce_back(v):
        onehot = np.zeros((rc, vocab))
        onehot[np.arange(rc), v[3]] = 1
        return {0: close(f64(v[0]) + ((f64(v[2]).reshape(rc, vocab) - onehot) * f64(v[1])[:, None]).reshape(-1),
                         1e-4, 1e-7)}
    L.append(Launch("crossentropy_softmax_backward", "llm", "crossentropy_softmax_backward", (13,), (256,),
                    [In("dlogits", dlogits0), In("dlosses", dlosses), In("probs", probs, "crossentropy_forward_probs"),
                     In("targets", targets, "crossentropy_forward_targets"), Scalar("i32", rc), Scalar("i32", vocab)],
                    reference=ref_ce_back))
    crow, cvocab = 8, 300
    logits = normal(r, crow * cvocab, scale=3.0)
    ctargets = r.integers(0, cvocab, crow).astype(I32)
    cdl = uniform(r, 0.5, 1.5, crow)

    def ref_fused(v):
        z = f64(v[0]).reshape(crow, cvocab)
        p = softmax(z)
        onehot = np.zeros_like(p)
        onehot[np.arange(crow), v[3]] = 1
        return {0: close(((p - onehot) * f64(v[2])[:, None]).reshape(-1), 2e-3, 1e-6),
                1: close(-np.log(p[np.arange(crow), v[3]]), 1e-3, 1e-5)}
    L.append(Launch("fused_classifier", "llm", "fused_classifier", (crow,), (128,),
                    [In("logits", logits), Out(F32, crow), In("dlosses", cdl), In("targets", ctargets),
                     Scalar("i32", cvocab)], reference=ref_fused))

    r = rng("adam")
    n = 1000
    params, grads = normal(r, n), normal(r, n, scale=0.1)
    m0, v0 = normal(r, n, scale=0.01), np.abs(normal(r, n, scale=0.001))
    lr, b1, b2, eps, wd, step = 1e-3, 0.9, 0.999, 1e-8, 0.01, 3

    def ref_adamw(v):
        g = f64(v[3])
        m = b1 * f64(v[1]) + (1 - b1) * g
        vv = b2 * f64(v[2]) + (1 - b2) * g * g
        mh, vh = m / (1 - b1 ** step), vv / (1 - b2 ** step)
        p = f64(v[0]) - lr * (mh / (np.sqrt(vh) + eps) + wd * f64(v[0]))
        return {0: close(p, 1e-5, 1e-6), 1: close(m, 1e-5, 1e-8), 2: close(vv, 1e-5, 1e-10)}
    L.append(Launch("adamw_update", "llm", "adamw_update", (4,), (256,),
                    [In("params", params), In("m", m0), In("v", v0), In("grads", grads), Scalar("i32", n),
                     Scalar("f32", lr), Scalar("f32", b1), Scalar("f32", b2), Scalar("f32", eps), Scalar("f32", wd),
                     Scalar("i32", step)], reference=ref_adamw))
    clip = np.array([0.75], F32)
    c1, c2 = 1 - b1 ** 5, 1 - b2 ** 5

    def ref_adam(v):
        g = f64(v[3]) * 0.75
        m = b1 * f64(v[1]) + (1 - b1) * g
        vv = b2 * f64(v[2]) + (1 - b2) * g * g
        p = f64(v[0]) - lr * (m / c1) / np.sqrt(vv / c2 + eps * eps)
        return {0: close(p, 1e-5, 1e-6), 1: close(m, 1e-5, 1e-8), 2: close(vv, 1e-4, 1e-10)}
    L.append(Launch("adam_update", "llm", "adam_update", (4,), (256,),
                    [In("params", params, "adamw_update_params"), In("m", m0, "adamw_update_m"),
                     In("v", v0, "adamw_update_v"), In("grads", grads, "adamw_update_grads"), In("clip", clip),
                     Scalar("i32", n), Scalar("f32", lr), Scalar("f32", b1), Scalar("f32", b2), Scalar("f32", c1),
                     Scalar("f32", c2), Scalar("f32", eps)], reference=ref_adam))

    r = rng("global_norm")
    g = normal(r, 4000, scale=0.05)

    def ref_partial(v):
        sq = f64(v[1]) ** 2
        index = np.arange(4000)
        return {0: close(np.bincount((index % 1024) // 128, weights=sq, minlength=8), 1e-4)}
    L.append(Launch("global_norm_partial", "llm", "global_norm_partial", (8,), (128,),
                    [Out(F32, 8), In("grads", g), Scalar("i32", 4000)], reference=ref_partial))
    partial = uniform(r, 0.5, 2.0, 8)

    def ref_clip(v):
        total = np.sqrt(f64(v[2]).sum())
        return {0: close([1.0 / (total + 1e-6) if total > 1.0 else 1.0], 1e-5), 1: close([total], 1e-5)}
    L.append(Launch("global_norm_clip", "llm", "global_norm_clip", (1,), (64,),
                    [Out(F32, 1), Out(F32, 1), In("partial", partial), Scalar("i32", 8), Scalar("f32", 1.0)],
                    reference=ref_clip))

    r = rng("matmul")
    rm, ic, oc = 32, 48, 32
    inp, wt, bias = normal(r, rm * ic), normal(r, oc * ic, scale=0.2), normal(r, oc)
    L.append(Launch("matmul_bias_forward", "llm", "matmul_bias_forward", (2, 2), (16, 16),
                    [Out(F32, rm * oc), In("inp", inp), In("weight", wt), In("bias", bias), Scalar("i32", rm),
                     Scalar("i32", ic), Scalar("i32", oc)],
                    reference=lambda v: {0: close((f64(v[1]).reshape(rm, ic) @ f64(v[2]).reshape(oc, ic).T
                                                   + f64(v[3])).reshape(-1), 1e-4, 1e-5)}))

    r = rng("encoder")
    BE, TE, CE, V = 2, 8, 32, 50
    tokens = r.integers(0, V, BE * TE).astype(I32)
    wte, wpe = normal(r, V * CE), normal(r, TE * CE)

    def ref_encoder(v):
        out = f64(v[2]).reshape(V, CE)[v[1]] + np.tile(f64(v[3]).reshape(TE, CE), (BE, 1))
        return {0: close(out.reshape(-1), 1e-7, 0)}
    L.append(Launch("encoder_forward", "llm", "encoder_forward", (2,), (256,),
                    [Out(F32, BE * TE * CE), In("tokens", tokens), In("wte", wte), In("wpe", wpe), Scalar("i32", TE),
                     Scalar("i32", CE), Scalar("i32", BE * TE * CE)], reference=ref_encoder))

    r = rng("residual_gelu")
    a16, b16 = normal(r, 1024).astype(F16), normal(r, 1024).astype(F16)
    L.append(Launch("residual_gelu_half", "llm", "residual_gelu_half", (2,), (256,),
                    [Out(F16, 1024), In("a", a16), In("b", b16), Scalar("i32", 512)],
                    reference=lambda v: {0: close(gelu((v[1] + v[2]).astype(F16)), 4e-3, 2e-3)}))
    return L


def block_sums(x, per_block, blocks):
    x = f64(x)
    padded = np.zeros(per_block * blocks)
    padded[:len(x)] = x[:per_block * blocks]
    return padded.reshape(blocks, per_block).sum(1)


def samples_launches() -> List[Launch]:
    L = []
    r = rng("reduce")
    ints = r.integers(-1000, 1000, 3000).astype(I32)
    floats = normal(r, 4096)
    doubles = r.standard_normal(2000)

    def ref_sum(per_block, blocks, n, exact_ints=False):
        def reference(v):
            s = block_sums(v[0][:n], per_block, blocks)
            return {1: exact(s.astype(v[1].dtype)) if exact_ints else close(s, 1e-4, 1e-4)}
        return reference
    L.append(Launch("reduce_interleaved_int", "samples", "_Z18reduce_interleavedIiEvPKT_PS0_j", (4,), (256,),
                    [In("in", ints[:1000].copy()), Out(I32, 4), Scalar("u32", 1000)], shared=1024,
                    reference=ref_sum(256, 4, 1000, True)))
    for kernel, name in (("_Z18reduce_interleavedIfEvPKT_PS0_j", "reduce_interleaved_float"),
                         ("_Z14reduce_stridedIfEvPKT_PS0_j", "reduce_strided")):
        L.append(Launch(name, "samples", kernel, (4,), (256,),
                        [In("in", floats[:1000].copy(), "reduce_floats_1000"), Out(F32, 4), Scalar("u32", 1000)],
                        shared=1024, reference=ref_sum(256, 4, 1000)))
    L.append(Launch("reduce_first_add", "samples", "_Z16reduce_first_addIfEvPKT_PS0_j", (4,), (256,),
                    [In("in", floats[:2000].copy(), "reduce_floats_2000"), Out(F32, 4), Scalar("u32", 2000)],
                    shared=1024, reference=ref_sum(512, 4, 2000)))
    L.append(Launch("reduce_warp_unrolled", "samples", "_Z20reduce_warp_unrolledIfEvPKT_PS0_j", (4,), (256,),
                    [In("in", floats[:2000].copy(), "reduce_floats_2000"), Out(F32, 4), Scalar("u32", 2000)],
                    shared=1024, reference=ref_sum(512, 4, 2000)))
    L.append(Launch("reduce_warp_unrolled_double", "samples", "_Z20reduce_warp_unrolledIdEvPKT_PS0_j", (4,), (256,),
                    [In("in", doubles), Out(F64, 4), Scalar("u32", 2000)], shared=2048,
                    reference=ref_sum(512, 4, 2000)))

    def ref_complete(v):
        index = np.arange(4096)
        return {1: close(np.bincount((index % 1024) // 256, weights=f64(v[0]), minlength=4), 1e-4, 1e-4)}
    L.append(Launch("reduce_complete_float", "samples", "_Z15reduce_completeIfLj128ELb1EEvPKT_PS0_j", (4,), (128,),
                    [In("in", floats), Out(F32, 4), Scalar("u32", 4096)], reference=ref_complete))

    def ref_complete_int(v):
        index = np.arange(3000)
        return {1: exact(np.bincount((index % 1024) // 512, weights=v[0], minlength=2).astype(I32))}
    L.append(Launch("reduce_complete_int", "samples", "_Z15reduce_completeIiLj256ELb0EEvPKT_PS0_j", (2,), (256,),
                    [In("in", ints), Out(I32, 2), Scalar("u32", 3000)], reference=ref_complete_int))
    tf = normal(r, 5000)

    def ref_threadfence(v):
        index = np.arange(5000)
        parts = np.bincount((index % 1024) // 128, weights=f64(v[0]), minlength=8)
        return {1: close(parts, 1e-4, 1e-4), 2: close([parts.sum()], 1e-4, 1e-4)}
    L.append(Launch("reduce_threadfence", "samples", "reduce_threadfence", (8,), (128,),
                    [In("in", tf), Out(F32, 8), Out(F32, 1), Scalar("u32", 5000)], reference=ref_threadfence))

    r = rng("transpose")
    square = normal(r, 64 * 64)
    wide = normal(r, 64 * 96)
    L.append(Launch("transpose_naive", "samples", "transpose_naive", (2, 2), (32, 8),
                    [Out(F32, 64 * 64), In("in", square), Scalar("i32", 64), Scalar("i32", 64)],
                    reference=lambda v: {0: exact(v[1].reshape(64, 64).T.reshape(-1))}))
    L.append(Launch("transpose_coalesced", "samples", "transpose_coalesced", (3, 2), (32, 8),
                    [Out(F32, 64 * 96), In("in", wide), Scalar("i32", 96), Scalar("i32", 64)],
                    reference=lambda v: {0: exact(v[1].reshape(64, 96).T.reshape(-1))}))
    L.append(Launch("transpose_padded_diagonal", "samples", "transpose_padded_diagonal", (3, 2), (32, 8),
                    [Out(F32, 64 * 96), In("in", wide, "transpose_coalesced_in"), Scalar("i32", 96), Scalar("i32", 64)],
                    reference=lambda v: {0: exact(v[1].reshape(64, 96).T.reshape(-1))}))

    r = rng("matrix_mul")
    A, Bm = normal(r, 32 * 48), normal(r, 48 * 32)
    L.append(Launch("matrix_mul", "samples", "_Z10matrix_mulILi16EEvPfPKfS2_ii", (2, 2), (16, 16),
                    [Out(F32, 32 * 32), In("A", A), In("B", Bm), Scalar("i32", 48), Scalar("i32", 32)],
                    reference=lambda v: {0: close((f64(v[1]).reshape(32, 48) @ f64(v[2]).reshape(48, 32)).reshape(-1),
                                                  1e-4, 1e-5)}))

    r = rng("histogram")
    data = (r.standard_normal(8192) * 40 + 128).clip(0, 255).astype(U8)
    L.append(Launch("histogram", "samples", "histogram", (4,), (256,),
                    [In("data", data), Scalar("i32", 8192), Out(U32, 256)],
                    reference=lambda v: {2: exact(np.bincount(v[0], minlength=256).astype(U32))}))
    words = r.integers(0, 2 ** 32, 2048, dtype=np.uint64).astype(U32)
    words[::3] &= 0x0f0f0f0f

    def ref_h256(v):
        index = np.arange(2048)
        block = (index % 512) // 128
        out = np.zeros((4, 256), np.int64)
        for shift in (0, 8, 16, 24):
            np.add.at(out, (block, (v[1] >> shift) & 0xff), 1)
        return {0: exact(out.reshape(-1).astype(U32))}
    L.append(Launch("histogram256_per_warp", "samples", "histogram256_per_warp", (4,), (128,),
                    [Out(U32, 1024), In("data", words), Scalar("i32", 2048)], reference=ref_h256))
    bytes64 = r.integers(0, 256, 4096).astype(U8)

    def ref_h64(v):
        index = np.arange(4096)
        out = np.zeros((2, 64), np.int64)
        np.add.at(out, ((index % 128) // 64, v[1] >> 2), 1)
        return {0: exact(out.reshape(-1).astype(U32))}
    L.append(Launch("histogram64_byte_counters", "samples", "histogram64_byte_counters", (2,), (64,),
                    [Out(U32, 128), In("data", bytes64), Scalar("i32", 4096)], shared=64 * 64, reference=ref_h64))

    r = rng("scan")
    sx = uniform(r, 0, 1, 512)

    def ref_blelloch(v):
        blocks = f64(v[2]).reshape(2, 256)
        return {0: close((np.cumsum(blocks, 1) - blocks).reshape(-1), 1e-5, 1e-5), 1: close(blocks.sum(1), 1e-5)}
    L.append(Launch("scan_blelloch", "samples", "scan_blelloch", (2,), (128,),
                    [Out(F32, 512), Out(F32, 2), In("in", sx)], shared=(256 + 8) * 4, reference=ref_blelloch))
    si = r.integers(-50, 100, 1000).astype(I32)
    sf = uniform(r, -1, 1, 1000)

    def ref_scan(v):
        x = v[1]
        padded = np.zeros(1024, f64(x).dtype if x.dtype.kind == "f" else np.int64)
        padded[:1000] = x
        out = np.cumsum(padded.reshape(4, 256), 1).reshape(-1)[:1000]
        return {0: exact(out.astype(I32)) if x.dtype == I32 else close(out, 1e-4, 1e-4)}
    L.append(Launch("scan_warp_shuffle_int", "samples", "_Z17scan_warp_shuffleIiEvPT_PKS0_i", (4,), (256,),
                    [Out(I32, 1000), In("in", si), Scalar("i32", 1000)], reference=ref_scan))
    L.append(Launch("scan_warp_shuffle_float", "samples", "_Z17scan_warp_shuffleIfEvPT_PKS0_i", (4,), (256,),
                    [Out(F32, 1000), In("in", sf), Scalar("i32", 1000)], reference=ref_scan))

    r = rng("sort")
    keys = r.integers(0, 2 ** 32, 512, dtype=np.uint64).astype(U32)
    vals = np.arange(512, dtype=U32)

    def ref_bitonic(v):
        k = v[2].reshape(2, 256)
        order = np.argsort(k, axis=1, kind="stable")
        return {0: exact(np.take_along_axis(k, order, 1).reshape(-1)),
                1: exact(np.take_along_axis(v[3].reshape(2, 256), order, 1).reshape(-1))}
    L.append(Launch("bitonic_sort", "samples", "bitonic_sort", (2,), (128,),
                    [Out(U32, 512), Out(U32, 512), In("keys", keys), In("vals", vals), Scalar("i32", 1)],
                    shared=2 * 256 * 4, reference=ref_bitonic))
    few = r.integers(0, 100, 512).astype(U32)
    L.append(Launch("odd_even_merge_sort", "samples", "odd_even_merge_sort", (2,), (128,),
                    [Out(U32, 512), In("keys", few)], shared=256 * 4,
                    reference=lambda v: {0: exact(np.sort(v[1].reshape(2, 256), 1).reshape(-1))}))

    def ref_merge_block(v):
        k = v[2].reshape(2, 256)
        order = np.argsort(k, axis=1, kind="stable")
        return {0: exact(np.take_along_axis(k, order, 1).reshape(-1)),
                1: exact((order + np.arange(2)[:, None] * 256).astype(U32).reshape(-1))}
    L.append(Launch("merge_sort_block", "samples", "merge_sort_block", (2,), (256,),
                    [Out(U32, 512), Out(U32, 512), In("keys", few, "odd_even_merge_sort_keys")], shared=4 * 256 * 4,
                    reference=ref_merge_block))
    runs = r.integers(0, 500, 1000).astype(U32)
    for start in range(0, 1000, 100):
        runs[start:start + 100] = np.sort(runs[start:start + 100])

    def ref_merge_pass(v):
        out = np.concatenate([np.sort(v[1][s:s + 200], kind="stable") for s in range(0, 1000, 200)])
        return {0: exact(out)}
    L.append(Launch("merge_pass", "samples", "merge_pass", (4,), (256,),
                    [Out(U32, 1000), In("in", runs), Scalar("i32", 100), Scalar("i32", 1000)],
                    reference=ref_merge_pass))

    r = rng("convolution")
    image = uniform(r, 0, 1, 64 * 64)
    taps = np.exp(-np.arange(-8, 9) ** 2 / 18.0)
    taps = (taps / taps.sum()).astype(F32)

    def convolve(img, axis):
        img = f64(img).reshape(64, 64)
        padded = np.pad(img, [(8, 8) if a == axis else (0, 0) for a in range(2)])
        out = np.zeros_like(img)
        for j in range(-8, 9):
            shifted = np.take(padded, np.arange(64) + 8 + j, axis=axis)
            out += f64(taps[8 - j]) * shifted
        return out.reshape(-1)
    L.append(Launch("convolution_rows", "samples", "convolution_rows", (4, 16), (16, 4),
                    [Out(F32, 64 * 64), In("image", image), Scalar("i32", 64), Scalar("i32", 64)],
                    const={"c_kernel": taps}, reference=lambda v: {0: close(convolve(v[1], 1), 1e-5, 1e-6)}))
    L.append(Launch("convolution_columns", "samples", "convolution_columns", (4, 4), (16, 16),
                    [Out(F32, 64 * 64), In("image", image, "convolution_rows_image"), Scalar("i32", 64),
                     Scalar("i32", 64)], const={"c_kernel": taps},
                    reference=lambda v: {0: close(convolve(v[1], 0), 1e-5, 1e-6)}))

    r = rng("walsh")
    signal = normal(r, 1024)
    L.append(Launch("fwt_shared", "samples", "fwt_shared", (2,), (128,), [In("data", signal), Scalar("i32", 9)],
                    shared=512 * 4, reference=lambda v: {0: close(walsh(v[0].reshape(2, 512)).reshape(-1), 1e-5, 1e-4)}))

    def radix4(x):
        d0, d1, d2, d3 = x[:, 0], x[:, 1], x[:, 2], x[:, 3]
        a0, a2 = d0 + d2, d0 - d2
        a1, a3 = d1 + d3, d1 - d3
        return np.stack([a0 + a1, a0 - a1, a2 + a3, a2 - a3], 1).reshape(-1)
    L.append(Launch("fwt_radix4_step", "samples", "fwt_radix4_step", (1,), (256,),
                    [In("data", signal, "fwt_shared_data"), Scalar("i32", 64)],
                    reference=lambda v: {0: close(radix4(f64(v[0]).reshape(4, 4, 64)), 1e-6, 1e-6)}))

    r = rng("black_scholes")
    n = 1000
    price, strike, years = uniform(r, 5, 30, n), uniform(r, 1, 100, n), uniform(r, 0.25, 10, n)

    def ref_bs(v):
        s, x, t = f64(v[2]), f64(v[3]), f64(v[4])
        rf, vol = 0.02, 0.30
        d1 = (np.log(s / x) + (rf + 0.5 * vol * vol) * t) / (vol * np.sqrt(t))
        d2 = d1 - vol * np.sqrt(t)
        c1, c2 = normal_cdf_poly(d1), normal_cdf_poly(d2)
        disc = np.exp(-rf * t)
        return {0: close(s * c1 - x * disc * c2, 1e-3, 2e-4), 1: close(x * disc * (1 - c2) - s * (1 - c1), 1e-3, 2e-4)}
    L.append(Launch("black_scholes", "samples", "black_scholes", (2,), (256,),
                    [Out(F32, n), Out(F32, n), In("price", price), In("strike", strike), In("years", years),
                     Scalar("f32", 0.02), Scalar("f32", 0.30), Scalar("i32", n)], reference=ref_bs))

    r = rng("nbody")
    bodies = normal(r, 256, 4)
    bodies[:, 3] = uniform(r, 0.5, 1.5, 256)
    bodies = bodies.reshape(-1)

    def ref_nbody(v):
        b = f64(v[1]).reshape(256, 4)
        d = b[None, :, :3] - b[:, None, :3]
        inv = 1 / np.sqrt((d ** 2).sum(-1) + 0.01)
        a = (d * (b[None, :, 3] * inv ** 3)[..., None]).sum(1)
        out = np.zeros((256, 4))
        out[:, :3] = a
        return {0: close(out.reshape(-1), 1e-3, 1e-3)}
    L.append(Launch("nbody_forces", "samples", "nbody_forces", (4,), (64,),
                    [Out(F32, 1024), In("bodies", bodies), Scalar("i32", 256), Scalar("f32", 0.01)],
                    reference=ref_nbody))
    return L


def cg_launches() -> List[Launch]:
    L = []
    r = rng("cg")
    x = normal(r, 3000)

    def ref_reduce(v):
        index = np.arange(3000)
        return {0: close(np.bincount((index % 1024) // 256, weights=f64(v[1]), minlength=4), 1e-4, 1e-4)}
    L.append(Launch("cg_reduce_tiles", "cg", "cg_reduce_tiles", (4,), (256,),
                    [Out(F32, 4), In("in", x), Scalar("i32", 3000)], reference=ref_reduce))
    ints = r.integers(0, 1000, 256).astype(I32)

    def ref_tile_scan(v):
        t = v[3].reshape(16, 16).astype(np.int64)
        xor = np.bitwise_xor.accumulate(t, axis=1)
        exclusive_xor = np.concatenate([np.zeros((16, 1), np.int64), xor[:, :-1]], 1)
        return {0: exact(np.cumsum(t, 1).reshape(-1).astype(I32)), 1: exact(exclusive_xor.reshape(-1).astype(I32)),
                2: exact(t.max(1).astype(I32))}
    L.append(Launch("cg_tile_scan", "cg", "cg_tile_scan", (2,), (128,),
                    [Out(I32, 256), Out(I32, 256), Out(I32, 16), In("in", ints)], reference=ref_tile_scan))
    vals = uniform(r, -1, 1, 256)

    def ref_compact(v):
        out = np.zeros(256)
        counts = np.zeros(8, I32)
        for warp in range(8):
            chunk = f64(v[2][warp * 32:(warp + 1) * 32])
            keep = chunk[chunk > 0.3]
            out[warp * 32:warp * 32 + len(keep)] = keep * 2
            counts[warp] = len(keep)
            if len(keep):
                out[warp * 32 + 31] += keep.sum()
        return {0: close(out, 1e-5, 1e-6), 1: exact(counts)}
    L.append(Launch("cg_coalesced_compact", "cg", "cg_coalesced_compact", (2,), (128,),
                    [Out(F32, 256), Out(I32, 8), In("in", vals), Scalar("f32", 0.3)], reference=ref_compact))
    u = r.integers(0, 2 ** 20, 512).astype(U32)

    def ref_tile64(v):
        t = v[1].reshape(8, 64).astype(np.uint64)
        total = (t.sum(1) & np.uint64(0xffffffff))[:, None]
        first = t[:, :1] << np.uint64(3)
        voted = ((t & 1).any(1, keepdims=True).astype(np.uint64)
                 + np.uint64(2) * ((t & 2) != 0).all(1, keepdims=True).astype(np.uint64))
        rank = (np.arange(8) % 4).astype(np.uint64)[:, None] << np.uint64(28)
        out = (total ^ first ^ voted ^ rank) & np.uint64(0xffffffff)
        return {0: exact(np.broadcast_to(out, (8, 64)).reshape(-1).astype(U32))}
    L.append(Launch("cg_tile64", "cg", "cg_tile64", (2,), (256,), [Out(U32, 512), In("in", u)], reference=ref_tile64))
    keys = r.integers(0, 4, 128).astype(I32)
    values = r.integers(-100, 100, 128).astype(I32)

    def ref_labeled(v):
        sums, sizes = np.zeros(128, I32), np.zeros(128, I32)
        for warp in range(4):
            k, x = v[2][warp * 32:(warp + 1) * 32], v[3][warp * 32:(warp + 1) * 32]
            for lane in range(32):
                same = k == k[lane]
                sums[warp * 32 + lane] = x[same].sum()
                sizes[warp * 32 + lane] = same.sum() * 100 + same[:lane].sum()
        return {0: exact(sums), 1: exact(sizes)}
    L.append(Launch("cg_labeled", "cg", "cg_labeled", (1,), (128,),
                    [Out(I32, 128), Out(I32, 128), In("keys", keys), In("values", values)], reference=ref_labeled))
    signal = normal(r, 502)
    L.append(Launch("cg_memcpy_stencil", "cg", "cg_memcpy_stencil", (4,), (128,),
                    [Out(F32, 500), In("in", signal), Scalar("i32", 500)], shared=(128 + 2) * 4,
                    reference=lambda v: {0: close(0.25 * f64(v[1][:-2]) + 0.5 * f64(v[1][1:-1]) + 0.25 * f64(v[1][2:]),
                                                  1e-6, 1e-6)}))
    return L


def all_launches() -> List[Launch]:
    return llm_launches() + samples_launches() + cg_launches()


# --- building -------------------------------------------------------------------------------------------------

ENTRY = re.compile(r"^\.visible \.entry (\w+)\(", re.M)


def entry_bodies(ptx: str) -> Dict[str, str]:
    """Each .entry's text (name → from its line to the next .entry or the end), for comparing the two builds."""
    starts = [(m.group(1), m.start()) for m in ENTRY.finditer(ptx)]
    return {name: ptx[start:(starts[i + 1][1] if i + 1 < len(starts) else len(ptx))]
            for i, (name, start) in enumerate(starts)}


def build(source: str) -> Dict[str, str]:
    """Compile examples/corpus/SOURCE.cu both ways into SOURCE.ptx and SOURCE.fast.ptx; check each with ptxas."""
    texts = {}
    with tempfile.TemporaryDirectory() as scratch:
        staged = Path(scratch) / f"{source}.cu"
        shutil.copy(CORPUS / f"{source}.cu", staged)
        for build_name, flags in BUILDS.items():
            target = CORPUS / (f"{source}.{build_name}.ptx" if build_name else f"{source}.ptx")
            subprocess.run(["nvcc", *flags, staged.name, "-o", str(target)], cwd=scratch, check=True)
            subprocess.run(["ptxas", "-arch=sm_90", str(target), "-o", str(Path(scratch) / "check.cubin")], check=True)
            texts[build_name] = target.read_text()
    return texts


def resolve(kernel: str, entries) -> str:
    if kernel in entries:
        return kernel
    matches = [name for name in entries if name.startswith(f"_Z{len(kernel)}{kernel}")]
    if len(matches) != 1:
        raise SystemExit(f"kernel {kernel}: {len(matches)} entries match")
    return matches[0]


def argument_text(launch: Launch, arg, saved: Dict[str, np.ndarray]) -> str:
    if isinstance(arg, Out):
        return f"zeros:{short_dtype(arg.dtype)}:{arg.count}"
    if isinstance(arg, Scalar):
        value = repr(float(np.dtype(short_to_numpy(arg.kind)).type(arg.value))) if arg.kind.startswith("f") else arg.value
        return f"{arg.kind}:{value}"
    file = arg.file or f"{launch.name}_{arg.name}"
    if file in saved and not np.array_equal(saved[file], arg.array):
        raise SystemExit(f"input {file} given two different arrays")
    saved[file] = arg.array
    return f"@inputs/{file}.npy"


def short_to_numpy(kind: str):
    return {"f32": F32, "f64": F64}[kind]


def short_dtype(dtype) -> str:
    dtype = np.dtype(dtype)
    return {"f": "f", "i": "i", "u": "u"}[dtype.kind] + str(8 * dtype.itemsize)


def spec_entry(launch: Launch, ptx_name: str, name: str, kernel: str, saved) -> dict:
    dims = lambda d: list(d) + [1] * (3 - len(d))
    entry = {"name": name, "kernel": kernel, "ptx": ptx_name, "grid": dims(launch.grid), "block": dims(launch.block),
             "shared": launch.shared, "args": [argument_text(launch, arg, saved) for arg in launch.args]}
    if launch.const:
        for const_name, array in launch.const.items():
            saved[f"{launch.name}_{const_name}"] = array
        entry["const"] = {n: f"@inputs/{launch.name}_{n}.npy" for n in launch.const}
    entry["stdout"] = False
    entry["tolerance"] = None
    return entry


def generate(compile_ptx: bool) -> int:
    launches = all_launches()
    texts = {}
    for source in SOURCES:
        if compile_ptx:
            texts[source] = build(source)
        else:
            texts[source] = {b: (CORPUS / (f"{source}.{b}.ptx" if b else f"{source}.ptx")).read_text() for b in BUILDS}
    saved: Dict[str, np.ndarray] = {}
    entries = []
    used = {source: set() for source in SOURCES}
    for launch in launches:
        plain = entry_bodies(texts[launch.source][""])
        fast = entry_bodies(texts[launch.source]["fast"])
        kernel = resolve(launch.kernel, plain)
        used[launch.source].add(kernel)
        entries.append(spec_entry(launch, f"{launch.source}.ptx", launch.name, launch.kernel, saved))
        if fast[kernel] != plain[kernel]:
            entries.append(spec_entry(launch, f"{launch.source}.fast.ptx", f"{launch.name}_fast", launch.kernel, saved))
    for source in SOURCES:
        missing = set(entry_bodies(texts[source][""])) - used[source]
        if missing:
            raise SystemExit(f"{source}.cu: kernels without a launch: {', '.join(sorted(missing))}")
    inputs = CORPUS / "inputs"
    inputs.mkdir(exist_ok=True)
    for stale in inputs.glob("*.npy"):
        if stale.stem not in saved:
            stale.unlink()
    for file, array in saved.items():
        np.save(inputs / f"{file}.npy", np.ascontiguousarray(array))
    note = ("NAME.ptx: nvcc -ptx -arch=sm_90 -O3 NAME.cu; NAME.fast.ptx: the same with --use_fast_math. A kernel "
            "gets a _fast launch where its fast-math code differs. tools/make_corpus.py writes this file.")
    (CORPUS / "launches.json").write_text(json.dumps({"note": note, "launches": entries}, indent=1) + "\n")
    kernels = sum(len(entry_bodies(texts[s][""])) for s in SOURCES)
    print(f"{kernels} kernels, {len(entries)} launches, {len(saved)} input files")
    return 0


# --- checking -------------------------------------------------------------------------------------------------

def argument_values(launch: Launch) -> list:
    values = []
    for arg in launch.args:
        if isinstance(arg, Out):
            values.append(np.zeros(arg.count, arg.dtype))
        elif isinstance(arg, Scalar):
            values.append(short_to_numpy(arg.kind)(arg.value) if arg.kind.startswith("f") else arg.value)
        else:
            values.append(arg.array.copy())
    return values


def emulator_results(name: str, kernel: str, ptx: Path, launch: Launch) -> Dict[int, np.ndarray]:
    sys.path.insert(0, str(REPO))
    from emulator.api import load
    from emulator.runtime.spec import parse_arg
    module = load(ptx)
    for const_name, array in launch.const.items():
        module.set_symbol(const_name, array)
    spec = json.loads((CORPUS / "launches.json").read_text())
    entry = next(e for e in spec["launches"] if e["name"] == name)
    args = [parse_arg(text, str(CORPUS)) for text in entry["args"]]
    module.kernel(kernel).launch(tuple(entry["grid"]), tuple(entry["block"]), args, entry["shared"])
    return {i: a for i, a in enumerate(args) if isinstance(a, np.ndarray)}


def gpu_results(name: str, launch: Launch) -> Optional[Dict[int, np.ndarray]]:
    directory = CORPUS / "expected" / name
    if not directory.is_dir():
        return None
    values = argument_values(launch)
    results = {i: v for i, v in enumerate(values) if isinstance(v, np.ndarray)}
    for path in directory.glob("arg*.npy"):
        results[int(path.stem[3:])] = np.load(path)
    return results


def check(emulated: bool, only: List[str]) -> int:
    spec = json.loads((CORPUS / "launches.json").read_text())
    launches = {launch.name: launch for launch in all_launches()}
    bad = missing = 0
    for entry in spec["launches"]:
        if only and entry["name"] not in only:
            continue
        launch = launches[entry["name"].removesuffix("_fast")]
        values = argument_values(launch)
        expected = launch.reference(values)
        if emulated:
            results = emulator_results(entry["name"], entry["kernel"], CORPUS / entry["ptx"], launch)
        else:
            results = gpu_results(entry["name"], launch)
        if results is None:
            missing += 1
            print(f"{'NO-DATA':8} {entry['name']}")
            continue
        problems = []
        for index, (want, rtol, atol) in expected.items():
            got = results[index]
            if got.shape != np.shape(want) and got.size == np.size(want):
                want = np.reshape(want, got.shape)
            if got.dtype.kind == "f":
                ok = np.isclose(f64(got), f64(want), rtol=rtol, atol=atol)
            else:
                ok = got == want
            if not np.all(ok):
                first = int(np.flatnonzero(~np.asarray(ok).reshape(-1))[0])
                problems.append(f"arg{index}: {int((~ok).sum())} of {ok.size} off; first at {first}: "
                                f"{got.reshape(-1)[first]!r} vs {np.reshape(want, -1)[first]!r}")
        bad += bool(problems)
        print(f"{'MISMATCH' if problems else 'ok':8} {entry['name']}" + (f": {'; '.join(problems)}" if problems else ""))
    print(f"{len(spec['launches'])} launches, {bad} off the numpy reference, {missing} without results")
    return 1 if bad else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare expected/ results with numpy references")
    parser.add_argument("--emulator", action="store_true", help="with --check: run each launch on gpuemu instead")
    parser.add_argument("--only", action="append", default=[], help="launch name (repeatable)")
    parser.add_argument("--no-compile", action="store_true", help="keep the checked-in PTX (no nvcc)")
    options = parser.parse_args(argv)
    if options.check:
        return check(options.emulator, options.only)
    if not options.no_compile and not shutil.which("nvcc"):
        parser.error("nvcc not found (use --no-compile to regenerate inputs only)")
    return generate(not options.no_compile)


if __name__ == "__main__":
    sys.exit(main())
