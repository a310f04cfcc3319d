"""wgmma: Hopper's warpgroup matrix multiply-accumulate, reading its operands through shared-memory matrix descriptors.

A warpgroup is four consecutive warps of a CTA; warp r of it (r = warp index in the CTA mod 4) owns rows
16r..16r+15 of the 64-row product, so each warp computes its own slice from the shared operands and its
own registers. The multiply runs when wgmma.mma_async issues: the hardware may finish any time before
wgmma.wait_group, and finishing at once is one of the behaviours it allows. The sums are the H100's
(tensor_ops.tensor_core_sum).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from emulator import ir
from emulator.machine import executors
from emulator.machine.lanes import lanes_of
from emulator.machine.operands import access, reader, writer
from emulator.machine.registry import builds
from isa.tensor import (ELEMENT_BYTES, FORMS, INTEGER_N, TRANSPOSABLE, decode_elements, operand_addresses,
                        register_a_layout, register_elements, tensor_core_sum)


@dataclass(frozen=True)
class Shape:
    n: int
    k: int

    @classmethod
    def parse(cls, text: str) -> "Shape":
        n_text, _, k_text = text[len("m64n"):].partition("k")
        return cls(int(n_text), int(k_text))


def _immediate(batch, instr, ref, what: str) -> int:
    if not isinstance(ref, ir.ImmRef) or ref.kind != "int":
        raise batch.lowering_error(instr, f"wgmma {what} must be an integer constant")
    return int(ref.value)


def _check_form(batch, instr, shape: Shape, dtype: str, atype: str, btype: str) -> None:
    """The type, shape and modifier combinations ptxas accepts; anything else is a one-line error."""
    if (dtype, atype, btype) not in FORMS:
        raise batch.lowering_error(instr, f"wgmma is not defined for .{dtype}.{atype}.{btype}")
    if shape.k != FORMS[(dtype, atype, btype)]:
        raise batch.lowering_error(instr, f"wgmma with .{atype} inputs needs .k{FORMS[(dtype, atype, btype)]}, "
                                          f"not .k{shape.k}")
    if dtype == "s32" and shape.n not in INTEGER_N:
        raise batch.lowering_error(instr, f"integer wgmma is not defined for .n{shape.n}")
    if instr.decoded.has("satfinite") and dtype != "s32":
        raise batch.lowering_error(instr, "wgmma .satfinite needs an .s32 accumulator")


def _check_register(batch, instr, ref, kinds: tuple, what: str) -> None:
    if not isinstance(ref, ir.RegRef) or ref.reg.type not in kinds:
        raise batch.lowering_error(instr, f"wgmma {what} must be a .{kinds[0]} register")


@builds("wgmma")
def build_wgmma(batch, instr: ir.Instr):
    decoded = instr.decoded
    op = decoded.get("wgmmaop")
    if op == "wait_group":
        if len(instr.operands) != 1 or not isinstance(instr.operands[0], ir.ImmRef):
            raise batch.lowering_error(instr, "wgmma.wait_group takes one integer constant")
    if op is None:
        raise batch.lowering_error(instr, "wgmma needs one of .mma_async, .fence, .commit_group, .wait_group")
    if op != "mma_async":
        return executors.build_nop(batch, instr)
    if decoded.get("wgmmashape") is None:
        raise batch.lowering_error(instr, "wgmma.mma_async needs a shape such as .m64n64k16")
    shape = Shape.parse(decoded.get("wgmmashape"))
    if len(decoded.types) != 3:
        raise batch.lowering_error(instr, "wgmma.mma_async needs the accumulator and both input types")
    dtype, atype, btype = decoded.types
    _check_form(batch, instr, shape, dtype, atype, btype)
    operands = instr.operands
    if len(operands) < 4:
        raise batch.lowering_error(instr, f"'{instr.opcode}' takes at least 4 operands, got {len(operands)}")
    d_ref, a_ref, b_ref, scale_d_ref = operands[:4]
    immediates = [_immediate(batch, instr, ref, "scale and transpose operands") for ref in operands[4:]]
    a_in_registers = isinstance(a_ref, ir.VecRef)
    transposable = atype in TRANSPOSABLE
    names = (["imm-scale-a", "imm-scale-b"] if dtype != "s32" else []) + \
        (["imm-trans-a"] if transposable and not a_in_registers else []) + (["imm-trans-b"] if transposable else [])
    if len(immediates) != len(names):
        raise batch.lowering_error(instr, f"'{instr.opcode}' takes {4 + len(names)} operands, got {len(operands)}")
    given = dict(zip(names, immediates))
    scale_a, scale_b = given.get("imm-scale-a", 1), given.get("imm-scale-b", 1)
    if scale_a not in (1, -1) or scale_b not in (1, -1):
        raise batch.lowering_error(instr, "wgmma imm-scale-a and imm-scale-b must be 1 or -1")
    trans_a, trans_b = given.get("imm-trans-a", 0), given.get("imm-trans-b", 0)
    if trans_a not in (0, 1) or trans_b not in (0, 1):
        raise batch.lowering_error(instr, "wgmma imm-trans-a and imm-trans-b must be 0 or 1")
    if isinstance(scale_d_ref, ir.ImmRef):
        if scale_d_ref.kind != "int" or scale_d_ref.value not in (0, 1):
            raise batch.lowering_error(instr, "wgmma scale-d must be a predicate or the constant 0 or 1")
    else:
        _check_register(batch, instr, scale_d_ref, ("pred",), "scale-d")
    if not a_in_registers:
        _check_register(batch, instr, a_ref, ("b64", "u64", "s64"), "A descriptor")
    _check_register(batch, instr, b_ref, ("b64", "u64", "s64"), "B descriptor")

    registers = d_ref.items if isinstance(d_ref, ir.VecRef) else (d_ref,)
    per_register = 2 if dtype == "f16" else 1
    if len(registers) * per_register * 2 != shape.n:
        raise batch.lowering_error(instr, f"wgmma .m64n{shape.n} needs {shape.n // 2 // per_register} "
                                          f"accumulator registers, got {len(registers)}")
    d_read = [reader(batch, ref, "b32") for ref in registers]
    d_write = [writer(batch, ref, "b32") for ref in registers]
    b_read = reader(batch, b_ref, "u64")
    scale_d_read = reader(batch, scale_d_ref, "pred") if not isinstance(scale_d_ref, ir.ImmRef) else None
    scale_d_constant = bool(scale_d_ref.value) if scale_d_read is None else None
    if a_in_registers:
        if len(a_ref.items) != 4:
            raise batch.lowering_error(instr, "wgmma with A in registers needs four registers")
        a_read = [reader(batch, ref, "b32") for ref in a_ref.items]
        a_rows, a_cols = register_a_layout(atype)
    else:
        a_read = reader(batch, a_ref, "u64")

    lane = np.arange(32)
    group, pair = lane >> 2, lane & 3
    slot = np.arange(shape.n // 2)[None, :]
    d_rows = group[:, None] + 8 * (slot % 4 >= 2)
    d_cols = 8 * (slot // 4) + 2 * pair[:, None] + slot % 2

    def load_operand(words, rows, kind, owners, mn_major):
        addresses = operand_addresses(words, rows, shape.k, ELEMENT_BYTES[kind], mn_major)
        flat_owners = np.repeat(owners, addresses.shape[1] * addresses.shape[2])
        raw = access(batch, instr, "load", "shared", addresses.reshape(-1).astype(np.uint64), flat_owners,
                               ELEMENT_BYTES[kind], tell=False)
        return decode_elements(raw, kind).reshape(addresses.shape)

    def execute(sel):
        lanes = lanes_of(sel, batch.n)
        if batch.tpc % 128:
            raise batch.illegal_instruction(
                instr, f"needs every warp of its warpgroup (4 warps, 128 threads), but the block has "
                              f"{batch.tpc} threads,", int(lanes[0]))
        warps = np.unique(lanes >> 5)
        threads = (warps[:, None] * 32 + lane[None, :]).reshape(-1)
        leaders = warps * 32
        rank = (leaders % batch.tpc_pad) // 32 % 4
        if a_in_registers:
            words = np.stack([np.broadcast_to(np.asarray(r(threads)), threads.shape) for r in a_read], axis=1)
            a = np.zeros((len(warps), 16, shape.k))
            a[:, a_rows, a_cols] = register_elements(words, atype).reshape(len(warps), 32, -1)
        else:
            a_words = np.broadcast_to(np.asarray(a_read(leaders)), leaders.shape)
            a = load_operand(a_words, 16 * rank[:, None] + np.arange(16)[None, :], atype, leaders, trans_a == 1)
        b_words = np.broadcast_to(np.asarray(b_read(leaders)), leaders.shape)
        b = load_operand(b_words, np.broadcast_to(np.arange(shape.n), (len(warps), shape.n)), btype, leaders,
                         trans_b == 1)
        if scale_a < 0:
            a = -a
        if scale_b < 0:
            b = -b
        keep = np.broadcast_to(np.asarray(scale_d_read(leaders)), leaders.shape) if scale_d_read is not None \
            else np.full(len(warps), scale_d_constant)
        words = np.stack([np.broadcast_to(np.asarray(r(threads)), threads.shape) for r in d_read], axis=1)
        words = words.reshape(len(warps), 32, -1)
        if dtype == "s32":
            accumulator = words.view(np.int32).astype(np.int64)
        elif dtype == "f16":
            halves = np.stack([words & np.uint32(0xFFFF), words >> np.uint32(16)], axis=-1).astype(np.uint16)
            accumulator = halves.reshape(len(warps), 32, -1).view(np.float16).astype(np.float64)
        else:
            accumulator = words.view(np.float32).astype(np.float64)
        accumulator = np.where(keep[:, None, None], accumulator, 0)
        c = np.zeros((len(warps), 16, shape.n), dtype=accumulator.dtype)
        c[:, d_rows, d_cols] = accumulator
        if dtype == "s32":
            values = (np.einsum("wmk,wnk->wmn", a, b) + c)[:, d_rows, d_cols]
            if decoded.has("satfinite"):
                values = np.clip(values, -2**31, 2**31 - 1)
            out = values.astype(np.int64).astype(np.uint32)
        elif dtype == "f16":
            halves = tensor_core_sum(a, b, c, atype, "f16")[:, d_rows, d_cols].view(np.uint16).astype(np.uint32)
            halves = halves.reshape(len(warps), 32, -1, 2)
            out = halves[..., 0] | (halves[..., 1] << np.uint32(16))
        else:
            out = tensor_core_sum(a, b, c, atype)[:, d_rows, d_cols].view(np.uint32)
        out = out.reshape(len(warps) * 32, -1)
        active = np.zeros(batch.n, dtype=bool)
        active[lanes] = True
        take = active[threads]
        for index, write in enumerate(d_write):
            write(threads[take], out[take, index])
    return execute
