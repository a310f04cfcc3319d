"""C source for a program's straight-line stretches: one function per maximal run of instructions it can compile.

Inside a run, stores and atomics run one instruction over every lane (every lane checked before any changes
memory, lanes in order); everything between them is a region that runs each lane through all of its instructions,
lane after lane, with the region's temporaries in C variables. A region changes no memory, so that order computes
what the interpreter's instruction-at-a-time order computes. An access the inline checks refuse hands the rest of
the work back: the interpreter runs it again and reports any fault exactly as it always does.
An instruction whose semantics are not written here exactly (rounding modes, .sat floats, half types, SFU functions,
warp-wide and tensor instructions, ...) ends a run; the interpreter executes it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

from emulator import ir
from emulator.machine.operands import ADDRESS_MASK, immediate
from emulator.memory import LOCAL_WINDOW, SHARED_WINDOW
from emulator.memory.spaces import ATOMIC_OPS, ATOMIC_TYPES, SPACE_CODES
from isa.table import FAMILIES, vector_count
from isa.types import TYPES

#: special registers every batch holds as one uint32 per thread, and those that are one value for a batch
ARRAY_SPECIALS = ("tid", "ctaid", "laneid", "warpid", "smid", "clusterid", "lanemask_eq", "lanemask_lt",
                  "lanemask_le", "lanemask_gt", "lanemask_ge")
SCALAR_SPECIALS = {"ntid": 32, "nctaid": 32, "nwarpid": 32, "nsmid": 32, "dynamic_smem_size": 32,
                   "total_smem_size": 32, "aggr_smem_size": 32, "cluster_nctaid": 32, "cluster_nctarank": 32,
                   "nclusterid": 32, "gridid": 64}
_PTX_FAMILIES = frozenset(id(family) for family in FAMILIES)

_CORE_HEADER = "".join((Path(__file__).resolve().parents[2] / "memory" / name).read_text(encoding="utf-8")
                       for name in ("_core.h", "_integer_atomics.h"))

#: what a unit's function reaches beside the registers (the cffi declarations of build.py name it too)
CONTEXT = """typedef struct {
    const void *memory;
    void *load;
    void *store;
    void *atomic;
    uint64_t *addresses;
    int64_t *threads;
    uint8_t *data;
    const uint64_t *statics;
    const uint64_t *scalars;
    int64_t resume;
    uint64_t const_base;
    uint64_t param_base;
} gx_context;
"""

PRELUDE = _CORE_HEADER + r"""
#include <stdint.h>
#include <string.h>
#include <math.h>

typedef struct { int64_t lane; int32_t kind; int32_t space; } gx_fault;
typedef int (*gx_load_fn)(const void *, int, const uint64_t *, const int64_t *, int64_t, int, uint8_t *, uint64_t,
                          gx_fault *);
typedef int (*gx_atomic_fn)(const void *, int, int, int, const uint64_t *, const int64_t *, int64_t, const uint8_t *,
                            const uint8_t *, uint64_t, uint8_t *, uint64_t, gx_fault *);
typedef int (*gx_store_fn)(const void *, int, const uint64_t *, const int64_t *, int64_t, int, const uint8_t *,
                           uint64_t, gx_fault *);
""" + CONTEXT + r"""
#define LANES(...) \
    if (sel) { for (int64_t i_ = 0; i_ < n; i_++) { const int64_t t = sel[i_]; __VA_ARGS__ } } \
    else { for (int64_t t = 0; t < n; t++) { __VA_ARGS__ } }

static inline float gx_f32(uint32_t bits) { float x; memcpy(&x, &bits, 4); return x; }
static inline double gx_f64(uint64_t bits) { double x; memcpy(&x, &bits, 8); return x; }
static inline uint32_t gx_b32(float x) { uint32_t bits; memcpy(&bits, &x, 4); return bits; }
static inline uint64_t gx_b64(double x) { uint64_t bits; memcpy(&bits, &x, 8); return bits; }
static inline int gx_nan32(uint32_t b) { return (b & 0x7fffffffu) > 0x7f800000u; }
static inline int gx_nan64(uint64_t b) { return (b & 0x7fffffffffffffffull) > 0x7ff0000000000000ull; }
/* f32 results: any NaN becomes the canonical 0x7fffffff. A branch to a cold function, not a select, keeps a chain of
   float results in floating-point registers. */
__attribute__((noinline, cold)) static float gx_canonical32(void) { return gx_f32(0x7fffffffu); }
static inline uint32_t gx_r32(float x) { if (__builtin_expect(x != x, 0)) x = gx_canonical32(); return gx_b32(x); }
/* f64 results: a NaN result is the first NaN operand in the ISA's order, quieted, else the default NaN */
static inline uint64_t gx_n64_2(uint64_t first, uint64_t second) {
    if (gx_nan64(first)) return first | 0x0008000000000000ull;
    if (gx_nan64(second)) return second | 0x0008000000000000ull;
    return 0xfff8000000000000ull;
}
__attribute__((noinline, cold)) static double gx_nan64_2(uint64_t first, uint64_t second) {
    return gx_f64(gx_n64_2(first, second));
}
__attribute__((noinline, cold)) static double gx_nan64_3(uint64_t first, uint64_t second, uint64_t third) {
    return gx_f64(gx_nan64(first) ? first | 0x0008000000000000ull : gx_n64_2(second, third));
}
static inline uint64_t gx_r64_2(double x, uint64_t first, uint64_t second) {
    if (__builtin_expect(x != x, 0)) x = gx_nan64_2(first, second);
    return gx_b64(x);
}
static inline uint64_t gx_r64_3(double x, uint64_t first, uint64_t second, uint64_t third) {
    if (__builtin_expect(x != x, 0)) x = gx_nan64_3(first, second, third);
    return gx_b64(x);
}
/* The memory core's checks for one lane, inline: where its bytes are, or NULL when the lane needs the core itself
   (a fault to report, or anything unusual); the caller then hands the whole instruction to gm_load or gm_store. */
/* one access's memo: the last allocation it hit (global: the bytes an aligned access may touch there without
   another check, g_len 0 when none) and the last CTA's shared memory */
typedef struct { int64_t hit, first, end; uint8_t *base; uint64_t g_start, g_len; uint8_t *g_base; } gx_memo;
#define GX_MEMO_INIT {-1, 0, 0, NULL, 0, 0, NULL}
static inline uint8_t *gx_window(const gm_memory *mem, int shared, uint64_t offset, int64_t t, uint64_t width,
                                 gx_memo *memo) {
    uint64_t limit = shared ? mem->shared_limit : mem->local_limit;
    if (t < 0 || t >= mem->n_threads || (offset & (width - 1)) || offset >= limit || width > limit - offset)
        return NULL;
    if (!shared)
        return mem->local_bytes + (uint64_t)t * mem->local_stride + offset;
    if (t < memo->first || t >= memo->end) {
        int64_t cta = t / mem->threads_per_cta;
        memo->first = cta * mem->threads_per_cta;
        memo->end = memo->first + mem->threads_per_cta;
        memo->base = mem->shared_bytes + (uint64_t)cta * mem->shared_stride;
    }
    return memo->base + offset;
}
__attribute__((noinline)) static uint8_t *gx_global(const gm_memory *mem, uint64_t addr, uint64_t width, int writes,
                                                   gx_memo *memo) {
    uint64_t inside;
    if ((addr & (width - 1)) || addr < mem->null_limit)
        return NULL;
    int64_t i = memo->hit;
    if (!(i >= 0 && addr >= mem->alloc_start[i] && addr - mem->alloc_start[i] < mem->alloc_size[i])) {
        int64_t lo = 0, hi = mem->n_allocs;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (mem->alloc_start[mid] <= addr) lo = mid + 1; else hi = mid;
        }
        i = lo - 1;
        if (i < 0 || addr - mem->alloc_start[i] >= mem->alloc_size[i])
            return NULL;
        memo->hit = i;
    }
    uint8_t flags = mem->alloc_flags[i];
    uint64_t start = mem->alloc_start[i], size = mem->alloc_size[i], offset = mem->alloc_offset[i];
    inside = addr - start;
    if ((flags & GM_ALLOC_FREED) || (writes && (flags & GM_ALLOC_READ_ONLY)) || width > size - inside)
        return NULL;
    uint8_t *base;
    if (flags & GM_ALLOC_HOST)
        base = (uint8_t *)(uintptr_t)offset;
    else if (mem->global_bytes == NULL || offset > mem->global_len || size > mem->global_len - offset)
        return NULL;
    else
        base = mem->global_bytes + offset;
    if (start >= mem->null_limit) {
        memo->g_start = start;
        memo->g_len = size;
        memo->g_base = base;
    }
    return base + inside;
}
/* memo: this access's allocation memo (global); cta: the CTA memo every access of the lane shares (shared) */
static inline uint8_t *gx_resolve(const gm_memory *mem, int space, uint64_t addr, int64_t t, uint64_t width, int writes,
                                  gx_memo *memo, gx_memo *cta) {
    if (space == GM_SPACE_SHARED) return gx_window(mem, 1, addr, t, width, cta);
    if (space == GM_SPACE_LOCAL) return gx_window(mem, 0, addr, t, width, cta);
    if (space == GM_SPACE_GENERIC) {
        if (addr - mem->shared_window_base < mem->window_size)
            return gx_window(mem, 1, addr - mem->shared_window_base, t, width, cta);
        if (addr - mem->local_window_base < mem->window_size)
            return gx_window(mem, 0, addr - mem->local_window_base, t, width, cta);
    }
    uint64_t inside = addr - memo->g_start;
    if (__builtin_expect(inside < memo->g_len && width <= memo->g_len - inside && !(addr & (width - 1)), 1))
        return memo->g_base + inside;
    return gx_global(mem, addr, width, writes, memo);
}
/* .ftz: a subnormal f32 operand is a zero of its sign */
static inline uint32_t gx_ftz32(uint32_t b) { return (b & 0x7f800000u) ? b : (b & 0x80000000u); }
/* .ftz results: r is the correctly rounded f32 result of the exact value v (v exact in double for add, sub, mul of
   f32 operands); it becomes a zero of its sign when tiny after rounding with an unbounded exponent */
static inline uint32_t gx_ftz_result(float r, double v) {
    uint32_t b = gx_b32(r);
    if (gx_nan32(b)) return 0x7fffffffu;
    if (v != 0 && fabs(v) < 0x1p-126 && fabsf((float)(v * 0x1p64)) < 0x1p-62f)
        return v < 0 ? 0x80000000u : 0u;
    return (b & 0x7f800000u) ? b : (b & 0x80000000u);
}
/* the memory core's integer atomics, for the lanes whose checks pass inline */
static inline uint64_t gx_atomic_int(int op, int is_signed, uint64_t old, uint64_t a, uint64_t b, uint64_t mask) {
    return op == GM_OP_CAS ? (old == a ? b : old) : gm_integer_apply(op, is_signed, old, a, mask);
}
static inline uint32_t gx_minmax32(uint32_t xb, uint32_t yb, int larger) {
    int xn = gx_nan32(xb), yn = gx_nan32(yb);
    if (xn && yn) return 0x7fffffffu;
    if (xn) return yb;
    if (yn) return xb;
    float x = gx_f32(xb), y = gx_f32(yb);
    int x_first = larger ? x > y : x < y;
    if (x == y && ((xb ^ yb) >> 31)) x_first = larger ? (int)(yb >> 31) : (int)(xb >> 31);
    return x_first ? xb : yb;
}
static inline uint64_t gx_minmax64(uint64_t xb, uint64_t yb, int larger) {
    int xn = gx_nan64(xb), yn = gx_nan64(yb);
    if (xn && yn) return gx_n64_2(yb, xb);
    if (xn) return yb;
    if (yn) return xb;
    double x = gx_f64(xb), y = gx_f64(yb);
    int x_first = larger ? x > y : x < y;
    if (x == y && ((xb ^ yb) >> 63)) x_first = larger ? (int)(yb >> 63) : (int)(xb >> 63);
    return x_first ? xb : yb;
}
"""


class Unsupported(Exception):
    """This instruction is left to the interpreter."""


_C_UNSIGNED = {8: "uint8_t", 16: "uint16_t", 32: "uint32_t", 64: "uint64_t"}
_C_SIGNED = {8: "int8_t", 16: "int16_t", 32: "int32_t", 64: "int64_t"}


def _bits_of(type_name: str) -> int:
    t = TYPES[type_name]
    return 8 if t.kind == "pred" else t.bits


def _storage_bits(dtype: np.dtype) -> int:
    return dtype.itemsize * 8


def _uint(bits: int) -> str:
    return _C_UNSIGNED[bits]


def _int(bits: int) -> str:
    return _C_SIGNED[bits]


def _literal(value: int, bits: int) -> str:
    value &= (1 << bits) - 1
    return f"(({_uint(bits)}){value}ull)" if bits == 64 else f"(({_uint(bits)}){value}u)"


@dataclass
class UnitPlan:
    """What one generated function needs bound from a batch: the registers, specials and static addresses it names."""
    start: int
    end: int
    name: str
    registers: Dict[int, np.dtype] = field(default_factory=dict)
    array_specials: Dict[str, int] = field(default_factory=dict)
    scalar_specials: Dict[str, int] = field(default_factory=dict)
    has_memory: bool = False
    #: for each pc of a region, where that region starts and where it ends
    region_start: Dict[int, int] = field(default_factory=dict)
    region_end: Dict[int, int] = field(default_factory=dict)


class MemoryEmitter:
    """C text of cvta and the memory instructions (ld, st, atom, red) over the memory core."""

    def __init__(self, emitter):
        self.emitter = emitter

    def cvta(self, instr: ir.Instr) -> str:
        decoded = instr.decoded
        space = decoded.get("space")
        dest, source = instr.operands
        type_name = decoded.type
        bits = TYPES[type_name].bits
        source_type = "u64" if isinstance(source, ir.SymRef) else type_name
        value = self.emitter.read_bits(source, source_type)
        if source_type != type_name:
            value = f"(({_uint(bits)}){value})"
        window = {"shared": str(SHARED_WINDOW) + "ull", "local": str(LOCAL_WINDOW) + "ull",
                  "const": "ctx->const_base", "param": "ctx->param_base"}.get(space)
        if window is None:
            return self.emitter.write_bits(dest, type_name, value)
        sign = "-" if decoded.has("cvtadir") else "+"
        return self.emitter.write_bits(dest, type_name, f"({_uint(bits)})((uint64_t){value} {sign} {window})")

    def _access(self, instr: ir.Instr, load: bool):
        decoded = instr.decoded
        if decoded.family.mnemonic not in ("ld", "st"):
            raise Unsupported("ldu")
        t = TYPES[decoded.type]
        if t.kind == "packed":
            raise Unsupported("packed")
        count = vector_count(decoded)
        width = t.bytes * count
        if width > 16:
            raise Unsupported("wide access")
        data = instr.operands[0 if load else 1]
        registers = data.items if isinstance(data, ir.VecRef) else (data,)
        if len(registers) != count:
            raise Unsupported("operand count")
        address = instr.operands[1 if load else 0]
        if not isinstance(address, ir.AddrRef):
            raise Unsupported("address")
        space_code, address_expr = self._address(address, decoded.get("space", "generic"))
        self.emitter.plan.has_memory = True
        return t, width, registers, space_code, address_expr

    def load(self, instr: ir.Instr) -> str:
        t, width, registers, space_code, address_expr = self._access(instr, load=True)
        size = t.bytes
        element = _uint(size * 8)
        write = self.emitter.write_bits
        writes = [f"{{ {element} e; memcpy(&e, p + {index * size}, {size}); {write(ref, t.name, 'e')} }}"
                  for index, ref in enumerate(registers)]
        return (f"const uint8_t *p = gx_resolve(mem, {space_code}, {address_expr}, t, {width}, 0, &hit_{instr.pc}, "
                f"&cta); "
                f"if (__builtin_expect(!p, 0)) goto ROLLBACK; {' '.join(writes)}")

    def store(self, instr: ir.Instr) -> str:
        t, width, registers, space_code, address_expr = self._access(instr, load=False)
        guard = self.emitter.guard(instr)
        size = t.bytes
        element = _uint(size * 8)
        pc = instr.pc
        gather = f"ctx->addresses[m] = {address_expr}; ctx->threads[m] = t;"
        resolve = f"gx_resolve(mem, {space_code}, {address_expr}, t, {width}, 1, &hit, &hit)"
        packs = [f"{{ {element} e = {self.emitter.read_bits(ref, t.name)}; memcpy(p + {index * size}, &e, {size}); }}"
                 for index, ref in enumerate(registers)]
        check = (f"int fast = 1; int64_t k = 0; uint8_t **where = (uint8_t **)ctx->data; "
                 f"LANES({guard} if (!(where[k++] = {resolve})) {{ fast = 0; break; }})")
        direct = f"k = 0; LANES({guard} {{ uint8_t *p = where[k++]; {' '.join(packs)} }})"
        general = (f"int64_t m = 0; gx_fault f; LANES({guard} {gather} "
                   f"{{ uint8_t *p = ctx->data + (uint64_t)m * {width}; {' '.join(packs)} }} m++;)\n"
                   f"  if (m && ((gx_store_fn)ctx->store)(ctx->memory, {space_code}, ctx->addresses, ctx->threads, "
                   f"m, {width}, ctx->data, (uint64_t)m * {width}, &f) != 0) return {pc};")
        return f"{{ {check}\n  if (fast) {{ {direct} }} else {{ {general} }} }}"

    def atomic(self, instr: ir.Instr) -> str:
        """atom/red through the memory core's gm_atomic (every lane checked before any changes, lanes in order), the
        old values then written to the destination."""
        emitter = self.emitter
        decoded = instr.decoded
        type_name = decoded.type
        op = decoded.get("atomop") or decoded.get("redop")
        if vector_count(decoded) > 1 or type_name not in ATOMIC_TYPES or op not in ATOMIC_OPS:
            raise Unsupported("atomic form")
        operands = instr.operands
        has_dest = decoded.family.op_class == "atom"
        dest, address, rest = (operands[0], operands[1], operands[2:]) if has_dest else (None, operands[0], operands[1:])
        if len(rest) != (2 if op == "cas" else 1) or not isinstance(address, ir.AddrRef):
            raise Unsupported("atomic operands")
        space_code, address_expr = self._address(address, decoded.get("space", "generic"))
        emitter.plan.has_memory = True
        width = TYPES[type_name].bytes
        element = _uint(width * 8)
        guard = emitter.guard(instr)
        packs = [f"{{ {element} e = {emitter.read_bits(ref, type_name)}; "
                 f"memcpy(ctx->data + {index} * (uint64_t)n * 8 + (uint64_t)m * {width}, &e, {width}); }}"
                 for index, ref in enumerate(rest)]
        write = emitter.write_bits(dest, type_name, "e") if dest is not None else ""
        old = "ctx->data + (uint64_t)n * 16"
        lines = [f"int64_t m = 0; gx_fault f; LANES({guard} ctx->addresses[m] = {address_expr}; ctx->threads[m] = t; "
                 f"{' '.join(packs)} m++;)",
                 f"  if (m && ((gx_atomic_fn)ctx->atomic)(ctx->memory, {space_code}, {ATOMIC_OPS[op]}, "
                 f"{ATOMIC_TYPES[type_name]}, ctx->addresses, ctx->threads, m, ctx->data, ctx->data + (uint64_t)n * 8, "
                 f"(uint64_t)m * {width}, {old}, (uint64_t)m * {width}, &f) != 0) return {instr.pc};"]
        if write:
            lines.append(f"  m = 0; LANES({guard} {{ {element} e; memcpy(&e, {old} + (uint64_t)m * {width}, {width}); "
                         f"{write} }} m++;)")
        general = "\n".join(lines)
        if type_name not in ("b32", "u32", "s32", "b64", "u64", "s64"):
            return f"{{ {general} }}"
        resolve = f"gx_resolve(mem, {space_code}, {address_expr}, t, {width}, 1, &hit, &hit)"
        values = [f"{element} v{index} = {emitter.read_bits(ref, type_name)};" for index, ref in enumerate(rest)]
        second = "v1" if op == "cas" else "0"
        apply = (f"{{ uint8_t *p = where[k++]; {element} old; memcpy(&old, p, {width}); {' '.join(values)} "
                 f"{element} e = ({element})gx_atomic_int({ATOMIC_OPS[op]}, {int(type_name[0] == 's')}, old, v0, "
                 f"{second}, {(1 << (8 * width)) - 1}ull); memcpy(p, &e, {width}); e = old; {write} }}")
        return (f"{{ int fast = 1; int64_t k = 0; uint8_t **where = (uint8_t **)ctx->data; "
                f"LANES({guard} if (!(where[k++] = {resolve})) {{ fast = 0; break; }})\n"
                f"  if (fast) {{ k = 0; LANES({guard} {apply}) }} else {{ {general} }} }}")

    def _address(self, ref: ir.AddrRef, space: str) -> Tuple[int, str]:
        """(memory core space code, C expression of the lane's uint64 address) as AddressPlan resolves them."""
        offset = ref.offset & ADDRESS_MASK
        if ref.symbol is not None or ref.base is None:
            resolved = _static_space(ref.symbol.space if ref.symbol is not None else None, space)
            slot = len(self.emitter.statics)
            self.emitter.statics.append((ref.symbol, space, ref.offset))
            return SPACE_CODES[resolved], f"ctx->statics[{slot}]"
        base = f"((uint64_t){self.emitter.register(ref.base.reg)}[t] + {offset}ull)"
        if space == "const":
            return SPACE_CODES["global"], f"({base} + ctx->const_base)"
        if space == "param":
            raise Unsupported("register-addressed .param")
        if space not in SPACE_CODES:
            raise Unsupported(f"space {space}")
        return SPACE_CODES[space], base


class AluEmitter:
    """C text of the ALU instructions: integer and float arithmetic, bitwise, shifts, comparisons, cvt."""

    def __init__(self, emitter):
        self.emitter = emitter

    def instruction(self, instr: ir.Instr) -> str:
        decoded = instr.decoded
        family = decoded.family
        if family.carry_in or (family.carry_out and decoded.has("cc")):
            raise Unsupported("carry")
        mnemonic = family.mnemonic
        signature = decoded.signature
        dest, sources = instr.operands[0], instr.operands[1:]
        if len(sources) != len(signature.sources):
            raise Unsupported("optional operands")
        if mnemonic == "setp":
            return self._setp(instr)
        builder = getattr(self, f"_op_{mnemonic}", None)
        if builder is None:
            raise Unsupported(mnemonic)
        if isinstance(dest, ir.PredPairRef):
            raise Unsupported("predicate pair")
        return builder(decoded, dest, sources, signature)

    def _result(self, dest, type_name: str, value: str) -> str:
        """Store a value of type_name's computing type (see read) into dest."""
        t = TYPES[type_name]
        if type_name == "f32":
            raw = f"gx_b32({value})"
        elif type_name == "f64":
            raw = f"gx_b64({value})"
        elif t.kind == "pred":
            raw = f"(({value}) != 0)"
        else:
            raw = f"(({_uint(t.bits)})({value}))"
        return self.emitter.write_bits(dest, type_name, raw)

    def _float_plain(self, decoded) -> bool:
        """Round to nearest, no .ftz, .sat, .relu: what C's IEEE arithmetic computes exactly."""
        return (decoded.get("rnd", "rn") == "rn" and not decoded.has("ftz") and not decoded.has("sat")
                and not decoded.has("relu") and not decoded.get("approx"))

    def _integer(self, type_name: str) -> bool:
        return TYPES[type_name].kind in ("bits", "unsigned", "signed") and TYPES[type_name].bits >= 16

    def _binary_float(self, decoded, dest, sources, op: str) -> str:
        emitter = self.emitter
        ty = decoded.type
        a, b = sources
        if (ty == "f32" and op in "+-*" and decoded.has("ftz") and decoded.get("rnd", "rn") == "rn"
            and not decoded.has("sat")):
            return (f"float x = gx_f32(gx_ftz32({emitter.read_bits(a, ty)})), "
                    f"y = gx_f32(gx_ftz32({emitter.read_bits(b, ty)})); "
                    + emitter.write_bits(dest, ty, f"gx_ftz_result(x {op} y, (double)x {op} (double)y)"))
        if not self._float_plain(decoded):
            raise Unsupported("float modifiers")
        if ty == "f32":
            return emitter.write_bits(dest, ty, f"gx_r32({emitter.read(a, ty)} {op} {emitter.read(b, ty)})")
        if ty == "f64":
            nan_order = "xa, xb" if op == "/" else "xb, xa"
            return (f"uint64_t xa = {emitter.read_bits(a, ty)}, xb = {emitter.read_bits(b, ty)}; "
                    + emitter.write_bits(dest, ty, f"gx_r64_2(gx_f64(xa) {op} gx_f64(xb), {nan_order})"))
        raise Unsupported(f"float type {ty}")

    def _op_add(self, decoded, dest, sources, signature):
        return self._additive(decoded, dest, sources, "+")

    def _op_sub(self, decoded, dest, sources, signature):
        return self._additive(decoded, dest, sources, "-")

    def _additive(self, decoded, dest, sources, op):
        ty = decoded.type
        if ty in ("f32", "f64"):
            return self._binary_float(decoded, dest, sources, op)
        if not self._integer(ty) or decoded.has("sat") or decoded.has("cc"):
            raise Unsupported("add form")
        bits = TYPES[ty].bits
        a, b = (self.emitter.read_bits(s, ty) for s in sources)
        wide = _uint(max(bits, 32))
        return self.emitter.write_bits(dest, ty, f"(({_uint(bits)})(({wide}){a} {op} ({wide}){b}))")

    def _op_mul(self, decoded, dest, sources, signature):
        ty = decoded.type
        if ty in ("f32", "f64"):
            return self._binary_float(decoded, dest, sources, "*")
        if not self._integer(ty):
            raise Unsupported("mul form")
        product = self._product(decoded, sources)
        return self.emitter.write_bits(dest, signature.dest, product)

    def _product(self, decoded, sources) -> str:
        """Raw bits of the integer product mul.{lo,hi,wide} computes."""
        ty = decoded.type
        t = TYPES[ty]
        bits = t.bits
        mode = decoded.get("mulmode", "lo")
        a, b = (self.emitter.read_bits(s, ty) for s in sources[:2])
        if mode == "lo":
            wide = _uint(max(bits, 32))
            return f"({_uint(bits)})(({wide}){a} * ({wide}){b})"
        signed = t.kind == "signed"
        if mode == "wide":
            if bits not in (16, 32):
                raise Unsupported("mul.wide width")
            wbits = bits * 2
            cast = _int(wbits) if signed else _uint(wbits)
            narrow = _int(bits) if signed else _uint(bits)
            return f"({_uint(wbits)})(({cast})({narrow}){a} * ({cast})({narrow}){b})"
        if bits == 64:
            cast = "__int128" if signed else "unsigned __int128"
            narrow = "int64_t" if signed else "uint64_t"
            return f"(uint64_t)(((({cast})({narrow}){a}) * (({cast})({narrow}){b})) >> 64)"
        wbits = bits * 2
        cast = _int(wbits) if signed else _uint(wbits)
        narrow = _int(bits) if signed else _uint(bits)
        return f"({_uint(bits)})((({_uint(wbits)})(({cast})({narrow}){a} * ({cast})({narrow}){b})) >> {bits})"

    def _op_mad(self, decoded, dest, sources, signature):
        ty = decoded.type
        if ty in ("f32", "f64"):
            return self._op_fma(decoded, dest, sources, signature)
        if not self._integer(ty) or decoded.has("sat") or decoded.has("cc"):
            raise Unsupported("mad form")
        out = signature.dest
        obits = TYPES[out].bits
        product = self._product(decoded, sources)
        c = self.emitter.read_bits(sources[2], signature.sources[2])
        wide = _uint(max(obits, 32))
        return self.emitter.write_bits(dest, out, f"({_uint(obits)})(({wide}){product} + ({wide}){c})")

    def _op_fma(self, decoded, dest, sources, signature):
        emitter = self.emitter
        ty = decoded.type
        if not self._float_plain(decoded):
            raise Unsupported("fma modifiers")
        a, b, c = sources
        if ty == "f32":
            return emitter.write_bits(dest, ty, f"gx_r32(fmaf({emitter.read(a, ty)}, {emitter.read(b, ty)}, "
                                      f"{emitter.read(c, ty)}))")
        if ty == "f64":
            return (f"uint64_t xa = {emitter.read_bits(a, ty)}, xb = {emitter.read_bits(b, ty)}, "
                    f"xc = {emitter.read_bits(c, ty)}; "
                    + emitter.write_bits(dest, ty, "gx_r64_3(fma(gx_f64(xa), gx_f64(xb), gx_f64(xc)), xb, xc, xa)"))
        raise Unsupported("fma type")

    def _op_div(self, decoded, dest, sources, signature):
        ty = decoded.type
        if ty in ("f32", "f64"):
            if decoded.get("approx") or decoded.get("rnd") != "rn":
                raise Unsupported("div mode")
            return self._binary_float(decoded, dest, sources, "/")
        return self._division(decoded, dest, sources, quotient=True)

    def _op_rem(self, decoded, dest, sources, signature):
        return self._division(decoded, dest, sources, quotient=False)

    def _division(self, decoded, dest, sources, quotient: bool) -> str:
        ty = decoded.type
        if not self._integer(ty):
            raise Unsupported("division type")
        t = TYPES[ty]
        bits = t.bits
        u = _uint(bits)
        a, b = (self.emitter.read_bits(s, ty) for s in sources)
        lines = [f"{u} ua = {a}, ub = {b}, q, r;"]
        if t.kind == "signed":
            lines.append(f"int an = ({_int(bits)})ua < 0, bn = ({_int(bits)})ub < 0;")
            lines.append(f"if (an) ua = ({u})(0 - ua); if (bn) ub = ({u})(0 - ub);")
        lines.append(f"if (ub == 0) {{ q = ({u})~({u})0; r = q; }} else {{ q = ua / ub; r = ua % ub;")
        if t.kind == "signed":
            lines.append(f"if (an ^ bn) q = ({u})(0 - q); if (an) r = ({u})(0 - r);")
        lines.append("}")
        lines.append(self.emitter.write_bits(dest, ty, "q" if quotient else "r"))
        return " ".join(lines)

    def _bitwise(self, decoded, dest, sources, op):
        ty = decoded.type
        a, b = (self.emitter.read_bits(s, ty) for s in sources)
        if TYPES[ty].kind == "pred":
            return self.emitter.write_bits(dest, ty, f"(({a}) {op} ({b}))")
        return self.emitter.write_bits(dest, ty, f"({_uint(TYPES[ty].bits)})({a} {op} {b})")

    def _op_and(self, decoded, dest, sources, signature):
        return self._bitwise(decoded, dest, sources, "&")

    def _op_or(self, decoded, dest, sources, signature):
        return self._bitwise(decoded, dest, sources, "|")

    def _op_xor(self, decoded, dest, sources, signature):
        return self._bitwise(decoded, dest, sources, "^")

    def _op_not(self, decoded, dest, sources, signature):
        ty = decoded.type
        a = self.emitter.read_bits(sources[0], ty)
        if TYPES[ty].kind == "pred":
            return self.emitter.write_bits(dest, ty, f"(!{a})")
        return self.emitter.write_bits(dest, ty, f"({_uint(TYPES[ty].bits)})~{a}")

    def _op_cnot(self, decoded, dest, sources, signature):
        emitter = self.emitter
        ty = decoded.type
        return emitter.write_bits(dest, ty, f"({_uint(TYPES[ty].bits)})({emitter.read_bits(sources[0], ty)} == 0)")

    def _op_shl(self, decoded, dest, sources, signature):
        emitter = self.emitter
        ty = decoded.type
        bits = TYPES[ty].bits
        a = emitter.read_bits(sources[0], ty)
        amount = emitter.read_bits(sources[1], "u32")
        wide = _uint(max(bits, 32))
        return (f"uint32_t k = {amount}; "
                + emitter.write_bits(dest, ty, f"(k >= {bits} ? ({_uint(bits)})0 : ({_uint(bits)})(({wide}){a} << k))"))

    def _op_shr(self, decoded, dest, sources, signature):
        ty = decoded.type
        t = TYPES[ty]
        bits = t.bits
        a = self.emitter.read_bits(sources[0], ty)
        amount = self.emitter.read_bits(sources[1], "u32")
        if t.kind == "signed":
            value = f"({_uint(bits)})(({_int(bits)}){a} >> (k >= {bits} ? {bits - 1} : k))"
        else:
            value = f"(k >= {bits} ? ({_uint(bits)})0 : ({_uint(bits)})({a} >> k))"
        return f"uint32_t k = {amount}; " + self.emitter.write_bits(dest, ty, value)

    def _minmax(self, decoded, dest, sources, larger: bool):
        ty = decoded.type
        if ty in ("f32", "f64"):
            if decoded.has("nan") or decoded.has("absmod") or decoded.has("xorsign") or (decoded.has("ftz")
                                                                                         and ty != "f32"):
                raise Unsupported("min/max modifiers")
            a, b = (self.emitter.read_bits(s, ty) for s in sources)
            if decoded.has("ftz"):
                a, b = f"gx_ftz32({a})", f"gx_ftz32({b})"
            return self.emitter.write_bits(dest, ty, f"gx_minmax{TYPES[ty].bits}({a}, {b}, {int(larger)})")
        if not self._integer(ty) or decoded.has("relu"):
            raise Unsupported("min/max form")
        a, b = (self.emitter.read(s, ty) for s in sources)
        op = ">" if larger else "<"
        return f"{{ __typeof__({a}) x = {a}, y = {b}; {self._result(dest, ty, f'(x {op} y ? x : y)')} }}"

    def _op_min(self, decoded, dest, sources, signature):
        return self._minmax(decoded, dest, sources, larger=False)

    def _op_max(self, decoded, dest, sources, signature):
        return self._minmax(decoded, dest, sources, larger=True)

    def _sign_op(self, decoded, dest, sources, negate: bool):
        ty = decoded.type
        t = TYPES[ty]
        if ty in ("f32", "f64"):
            if decoded.has("ftz"):
                raise Unsupported("ftz")
            bits = t.bits
            u = _uint(bits)
            sign = f"(({u})1 << {bits - 1})"
            nan = "0x7fffffffu" if bits == 32 else "(x | 0x0008000000000000ull)"
            result = f"(x ^ {sign})" if negate else f"(x & ~{sign})"
            return (f"{u} x = {self.emitter.read_bits(sources[0], ty)}; "
                    + self.emitter.write_bits(dest, ty, f"(gx_nan{bits}(x) ? ({u}){nan} : ({u}){result})"))
        if t.kind != "signed":
            raise Unsupported("sign op type")
        u = _uint(t.bits)
        a = self.emitter.read_bits(sources[0], ty)
        if negate:
            return self.emitter.write_bits(dest, ty, f"({u})(0 - {a})")
        return f"{u} x = {a}; " + self.emitter.write_bits(dest, ty, f"(({_int(t.bits)})x < 0 ? ({u})(0 - x) : x)")

    def _op_neg(self, decoded, dest, sources, signature):
        return self._sign_op(decoded, dest, sources, negate=True)

    def _op_abs(self, decoded, dest, sources, signature):
        return self._sign_op(decoded, dest, sources, negate=False)

    def _op_selp(self, decoded, dest, sources, signature):
        ty = decoded.type
        if TYPES[ty].kind == "packed":
            raise Unsupported("packed selp")
        a, b = (self.emitter.read_bits(s, ty) for s in sources[:2])
        c = self.emitter.read_bits(sources[2], "pred")
        return self.emitter.write_bits(dest, ty, f"({c} ? {a} : {b})")

    def _op_popc(self, decoded, dest, sources, signature):
        ty = decoded.type
        a = self.emitter.read_bits(sources[0], ty)
        builtin = "__builtin_popcountll" if TYPES[ty].bits == 64 else "__builtin_popcount"
        return self.emitter.write_bits(dest, "u32", f"(uint32_t){builtin}({a})")

    def _op_clz(self, decoded, dest, sources, signature):
        ty = decoded.type
        bits = TYPES[ty].bits
        builtin = "__builtin_clzll" if bits == 64 else "__builtin_clz"
        return (f"{_uint(bits)} x = {self.emitter.read_bits(sources[0], ty)}; "
                + self.emitter.write_bits(dest, "u32", f"(x == 0 ? {bits}u : (uint32_t){builtin}(x))"))

    def _compare(self, decoded, a_ref, b_ref) -> str:
        """C expression of setp's bare comparison t (0/1)."""
        ty = decoded.type
        t = TYPES[ty]
        cmp = decoded.get("cmp")
        ops = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
        if ty in ("f32", "f64"):
            if decoded.has("ftz") and ty != "f32":
                raise Unsupported("ftz compare")
            if decoded.has("ftz"):
                a, b = (f"gx_f32(gx_ftz32({self.emitter.read_bits(ref, ty)}))" for ref in (a_ref, b_ref))
            else:
                a, b = self.emitter.read(a_ref, ty), self.emitter.read(b_ref, ty)
            unordered = "(x != x || y != y)"
            if cmp == "num":
                expr = f"!{unordered}"
            elif cmp == "nan":
                expr = unordered
            elif cmp in ops:
                expr = f"(!{unordered} && (x {ops[cmp]} y))"
            elif cmp.endswith("u") and cmp[:-1] in ops:
                expr = f"({unordered} || (x {ops[cmp[:-1]]} y))"
            else:
                raise Unsupported("comparison")
            ctype = "float" if ty == "f32" else "double"
            return f"({{ {ctype} x = {a}, y = {b}; {expr}; }})"
        if not (t.kind in ("bits", "unsigned", "signed")) or t.bits < 16:
            raise Unsupported("comparison type")
        unsigned_ops = {"lo": "<", "ls": "<=", "hi": ">", "hs": ">="}
        if cmp in unsigned_ops:
            a, b = self.emitter.read_bits(a_ref, ty), self.emitter.read_bits(b_ref, ty)
            return f"({a} {unsigned_ops[cmp]} {b})"
        if cmp not in ops:
            raise Unsupported("comparison")
        a, b = self.emitter.read(a_ref, ty), self.emitter.read(b_ref, ty)
        return f"({a} {ops[cmp]} {b})"

    def _setp(self, instr: ir.Instr) -> str:
        decoded = instr.decoded
        if TYPES[decoded.type].kind in ("half", "packed", "pred"):
            raise Unsupported("setp type")
        dest = instr.operands[0]
        a_ref, b_ref = instr.operands[1], instr.operands[2]
        op = decoded.get("boolop")
        combine = {"and": "&", "or": "|", "xor": "^"}
        lines = [f"int p = {self._compare(decoded, a_ref, b_ref)} != 0;", "int q = !p;"]
        if op is not None:
            c = self.emitter.read_bits(instr.operands[3], "pred")
            lines.append(f"int c = {c}; p = p {combine[op]} c; q = q {combine[op]} c;")
        if isinstance(dest, ir.PredPairRef):
            lines.append(self.emitter.write_bits(dest.first, "pred", "p"))
            if dest.second is not None:
                lines.append(self.emitter.write_bits(dest.second, "pred", "q"))
        else:
            lines.append(self.emitter.write_bits(dest, "pred", "p"))
        return " ".join(lines)

    def _op_cvt(self, decoded, dest, sources, signature):
        dst, src = decoded.types[:2]
        if decoded.has("pack") or decoded.has("relu") or decoded.has("satfinite") or decoded.has("ftz"):
            raise Unsupported("cvt modifiers")
        dt, st = TYPES[dst], TYPES[src]
        ints = ("bits", "unsigned", "signed")
        a = self.emitter.read(sources[0], src)
        rnd = decoded.get("rnd") or decoded.get("irnd")
        if dt.kind in ints and st.kind in ints:
            if rnd is not None:
                raise Unsupported("cvt rounding")
            if not decoded.has("sat"):
                return self._result(dest, dst, f"(({_int(dt.bits) if dt.kind == 'signed' else _uint(dt.bits)})({a}))")
            low, high = _int_range(dst)
            if st.kind == "signed":
                low, high = max(low, -2 ** 63), min(high, 2 ** 63 - 1)
                return (f"int64_t v = (int64_t)({a}); v = v < {low}ll ? {low}ll : v > {high}ll ? {high}ll : v; "
                        + self._result(dest, dst, "v"))
            return (f"uint64_t v = (uint64_t)({a}); v = v > {min(high, 2 ** 64 - 1)}ull ? "
                    f"{min(high, 2 ** 64 - 1)}ull : v; " + self._result(dest, dst, "v"))
        if decoded.has("sat"):
            raise Unsupported("cvt.sat with floats")
        if st.kind in ints and dst in ("f32", "f64"):
            if rnd not in (None, "rn"):
                raise Unsupported("cvt rounding")
            ctype = "float" if dst == "f32" else "double"
            return self._result(dest, dst, f"({ctype})({a})")
        if src in ("f32", "f64") and dt.kind in ("unsigned", "signed") and dt.bits >= 16:
            rounding = {"rzi": "trunc", "rni": "nearbyint", "rmi": "floor", "rpi": "ceil"}.get(rnd)
            if rounding is None:
                raise Unsupported("cvt rounding")
            low, high = _int_range(dst)
            if src == "f64" or dst in ("s64", "u64"):
                nan = (1 << (dt.bits - 1)) if dt.kind == "unsigned" else low
            else:
                nan = 0
            wide = "int64_t" if dt.kind == "signed" else "uint64_t"
            return (f"double x = {rounding}((double)({a})); {wide} v; "
                    f"if (x != x) v = ({wide}){_c_int(nan)}; else if (x < {float(low)!r}) v = ({wide}){_c_int(low)}; "
                    f"else if (x >= {float(high) + 1.0!r}) v = ({wide}){_c_int(high)}; else v = ({wide})x; "
                    + self._result(dest, dst, "v"))
        if src == "f32" and dst == "f64" and rnd is None:
            return self._result(dest, dst, f"(double)({a})")
        raise Unsupported("cvt form")


class Emitter:
    """C text of one instruction (guard included) inside a unit's function: operands and dispatch here, memory
    instructions in its MemoryEmitter, ALU instructions in its AluEmitter."""

    def __init__(self, program: ir.Program, uniform, plan: UnitPlan, specials: Dict[str, int],
                 scalar_slots: Dict[str, int], statics: List):
        self.program = program
        self.uniform = uniform
        self.plan = plan
        self.specials = specials
        self.scalar_slots = scalar_slots
        self.statics = statics
        self.reads: set = set()
        self.writes: set = set()
        self.memory = MemoryEmitter(self)
        self.alu = AluEmitter(self)

    # ---- operands ----
    def register(self, reg: ir.RegInfo, written: bool = False) -> str:
        self.plan.registers[reg.index] = reg.storage
        (self.writes if written else self.reads).add(reg.index)
        return f"r{reg.index}"

    def read_bits(self, ref, type_name: str) -> str:
        """An expression of the operand's raw bits as the unsigned type of type_name's width (0/1 for pred)."""
        t = TYPES[type_name]
        bits = _bits_of(type_name)
        if isinstance(ref, ir.RegRef):
            name = self.register(ref.reg)
            storage = ref.reg.storage
            value = f"{name}[t]"
            if t.kind == "pred":
                return f"(({value}) != 0)"
            sbits = _storage_bits(storage)
            if storage == np.bool_:
                sbits = 8
            if sbits == bits:
                return value
            if sbits > bits:
                return f"(({_uint(bits)}){value})"
            if t.kind == "signed" and storage != np.bool_:
                return f"(({_uint(bits)})({_int(bits)})({_int(sbits)}){value})"
            return f"(({_uint(bits)}){value})"
        if isinstance(ref, ir.ImmRef):
            value = immediate(ref, type_name)
            if t.kind == "pred":
                return "1" if bool(value) else "0"
            raw = np.asarray(value).reshape(1).view(np.dtype(f"u{t.dtype.itemsize}"))[0]
            if t.dtype.itemsize * 8 != bits:
                raise Unsupported("immediate width")
            return _literal(int(raw), bits)
        if isinstance(ref, ir.SymRef):
            if t.kind not in ("bits", "unsigned", "signed"):
                raise Unsupported("symbol as a float")
            address = (ref.symbol.address + ref.offset) & ADDRESS_MASK
            return _literal(address, bits)
        if isinstance(ref, ir.NotRef):
            if t.kind != "pred":
                raise Unsupported("negated operand")
            return f"(!{self.read_bits(ref.reg, 'pred')})"
        if isinstance(ref, ir.SpecialRef):
            return self._special(ref.name, type_name)
        raise Unsupported(f"operand {type(ref).__name__}")

    def _special(self, name: str, type_name: str) -> str:
        base, _, component = name.partition(".")
        t = TYPES[type_name]
        if t.kind not in ("bits", "unsigned", "signed") or component == "w":
            raise Unsupported("special register")
        bits = t.bits
        if base in ARRAY_SPECIALS:
            slot = self.specials.setdefault(name, len(self.specials))
            self.plan.array_specials[name] = slot
            value, source_bits = f"s{slot}[t]", 32
        elif base in SCALAR_SPECIALS or base.startswith("envreg") or base.startswith("reserved_smem"):
            slot = self.scalar_slots.setdefault(name, len(self.scalar_slots))
            self.plan.scalar_specials[name] = slot
            source_bits = SCALAR_SPECIALS.get(base, 32)
            value = f"(({_uint(source_bits)})ctx->scalars[{slot}])"
        else:
            raise Unsupported("special register")
        return value if source_bits == bits else f"(({_uint(bits)}){value})"

    def read(self, ref, type_name: str) -> str:
        """The operand as its C computing type: unsigned or signed integers, float, double, or 0/1."""
        t = TYPES[type_name]
        raw = self.read_bits(ref, type_name)
        if t.kind == "signed":
            return f"(({_int(t.bits)}){raw})"
        if type_name == "f32":
            return f"gx_f32({raw})"
        if type_name == "f64":
            return f"gx_f64({raw})"
        if t.kind in ("bits", "unsigned", "pred"):
            return raw
        raise Unsupported(f"type {type_name}")

    def write_bits(self, ref, type_name: str, raw: str) -> str:
        """A statement storing raw bits of type_name (an unsigned of its width, 0/1 for pred) into the operand."""
        if ref is None or isinstance(ref, ir.SinkRef):
            return ""
        if not isinstance(ref, ir.RegRef):
            raise Unsupported("destination")
        if ref.reg.index in self.uniform:
            raise Unsupported("a launch-uniform register's write")
        t = TYPES[type_name]
        name = self.register(ref.reg, written=True)
        storage = ref.reg.storage
        if storage == np.bool_:
            return f"{name}[t] = (({raw}) != 0);"
        if t.kind == "pred":
            raise Unsupported("predicate into a data register")
        bits, sbits = _bits_of(type_name), _storage_bits(storage)
        if sbits == bits:
            return f"{name}[t] = {raw};"
        if sbits < bits:
            return f"{name}[t] = ({_uint(sbits)})({raw});"
        if t.kind == "signed":
            return f"{name}[t] = ({_uint(sbits)})({_int(sbits)})({_int(bits)})({raw});"
        return f"{name}[t] = ({_uint(sbits)})({raw});"

    # ---- instructions ----
    def guard(self, instr: ir.Instr) -> str:
        if instr.guard is None:
            return ""
        reg, negated = instr.guard
        name = self.register(reg)
        return f"if ({'' if negated else '!'}{name}[t]) continue;"

    def instruction(self, instr: ir.Instr) -> Tuple[str, str]:
        """(kind, C): kind "store" is a whole instruction over every lane (LANES); "lane" is the per-lane
        statements (guard included) of an instruction of a region, where a load that needs the memory core jumps
        to ROLLBACK."""
        if instr.control != ir.STRAIGHT or instr.decoded is None or id(instr.decoded.family) not in _PTX_FAMILIES:
            raise Unsupported("not a PTX straight-line instruction")
        self.reads, self.writes = set(), set()
        op_class = instr.op_class
        if op_class == "st":
            return "store", self.memory.store(instr)
        if op_class in ("atom", "red"):
            return "store", self.memory.atomic(instr)
        if op_class == "ld":
            body = self.memory.load(instr)
        elif op_class == "nop":
            return "lane", ""
        elif op_class == "cvta":
            body = self.memory.cvta(instr)
        elif op_class == "mov":
            body = self._mov(instr)
        elif op_class == "alu":
            body = self.alu.instruction(instr)
        else:
            raise Unsupported(op_class)
        return "lane", f"{self.guard(instr)} {{ {body} }}"

    def _mov(self, instr: ir.Instr) -> str:
        dest, source = instr.operands
        if isinstance(dest, ir.VecRef) or isinstance(source, ir.VecRef):
            raise Unsupported("vector mov")
        type_name = instr.decoded.type
        if TYPES[type_name].kind == "packed":
            raise Unsupported("packed mov")
        return self.write_bits(dest, type_name, self.read_bits(source, type_name))


def _c_int(value: int) -> str:
    if value < 0:
        return f"(-{-value - 1}ll - 1)" if value == -2 ** 63 else f"{value}ll"
    return f"{value}ull"


def _int_range(type_name: str) -> Tuple[int, int]:
    t = TYPES[type_name]
    if t.kind == "signed":
        return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1
    return 0, (1 << t.bits) - 1


def _static_space(symbol_space: Optional[str], space: str) -> str:
    """The memory core's space for a [symbol+offset] or [address] operand (Addressing.symbol_access's rule)."""
    if symbol_space is None:
        return "global" if space in ("const", "param") else space
    if symbol_space in ("const", "param"):
        return "global"
    if symbol_space == "fparam":
        return "local"
    if symbol_space in ("shared", "local", "global"):
        return symbol_space
    return space


@dataclass
class Generated:
    """A program's generated C: the source, the units (by start pc) and what each needs from a batch."""
    source: str
    units: List[UnitPlan]
    specials: Dict[str, int]
    scalar_specials: Dict[str, int]
    statics: List
    #: compiled loops: head pc -> the pc of the branch back to it (gx_loop_<head>)
    loops: Dict[int, int] = field(default_factory=dict)
    #: the registers some path from the program's start reads before writing (None: not worked out), the only ones
    #: whose initial zeros a thread can see
    entry_live: Optional[frozenset] = None
    #: every region of lane instructions with its unit's register storage, for partial_source
    regions: List[Tuple[List["_Compiled"], Dict[int, np.dtype], Optional[set]]] = field(default_factory=list)
    uniform: frozenset = frozenset()


#: instructions of one region function at most (the C compiler's time grows faster than a function's length)
REGION_LIMIT = 48
@dataclass
class _Compiled:
    pc: int
    kind: str
    body: str
    reads: frozenset
    writes: frozenset
    guarded: bool


def _needs_saving(instrs: List[_Compiled]) -> List[int]:
    """Registers a region writes that it also reads before writing them unconditionally (for the lanes in question):
    the values to put back before the interpreter runs the region again."""
    defined, live_in, written = set(), set(), set()
    for item in instrs:
        live_in |= item.reads - defined
        written |= item.writes
        if not item.guarded:
            defined |= item.writes
    return sorted(live_in & written)


def _local_registers(items: List[_Compiled], live_after: set) -> set:
    """Registers a region can keep in C variables: each is first written unconditionally (never read before), and no
    instruction after the region reads the value it leaves."""
    seen, local = set(), set()
    for item in items:
        for reg in item.reads:
            seen.add(reg)
        for reg in item.writes:
            if reg not in seen and not item.guarded:
                local.add(reg)
            seen.add(reg)
    return local - live_after


_WRITE = re.compile(r"\br(\d+)\[t\] = (.*?);")
_READ = re.compile(r"\br(\d+)\[t\]")
_LOAD_MEMO = re.compile(r"&hit_(\d+), &cta\)")


def _localized(body: str, local: set) -> str:
    """body with the local registers' reads and writes in the lane's C variables."""
    if not local:
        return body

    def reads(text: str) -> str:
        return _READ.sub(lambda m: f"l{m.group(1)}" if int(m.group(1)) in local else m.group(0), text)
    out, position = [], 0
    for match in _WRITE.finditer(body):
        out.append(reads(body[position:match.start()]))
        reg, value = int(match.group(1)), reads(match.group(2))
        out.append(f"{'l' if reg in local else 'r'}{reg}{'' if reg in local else '[t]'} = {value};")
        position = match.end()
    out.append(reads(body[position:]))
    return "".join(out)


def _region(items: List[_Compiled], storage: Dict[int, np.dtype], specials: Dict[str, int],
            live_after: Optional[set] = None, uniform: frozenset = frozenset()) -> str:
    """A region of lane instructions as a function that runs each lane through all of them, lane after lane: exact,
    because a region changes no memory (loads only) and each lane's registers are its own. Registers no later
    instruction reads (live_after: those it may; None: all) live in C variables. A load the inline checks refuse
    puts back what its lane changed that the lane read first (of the registers written before the last load: nothing
    faults after it) and returns -2 - lo with ctx->resume the lanes before it, which have run the region; the
    interpreter then runs the region for the other lanes, reporting any fault itself. A run that does not cover the
    whole region returns -2 - lo with ctx->resume -1, for gx_part (partial_source) or the interpreter to run.
    Launch-uniform registers (uniform: every thread
    wrote the same value in the prologue, and the generated code never writes them) are read once, from the first
    lane."""
    first, last = items[0].pc, items[-1].pc + 1
    local = _local_registers(items, live_after) if live_after is not None else set()
    used = set().union(*(item.reads | item.writes for item in items))
    has_load = any("ROLLBACK" in item.body for item in items)
    lines = [f"static int64_t gx_region_{first}(int64_t lo, int64_t hi, const int64_t *sel, int64_t n, void **R, "
             "void **S, gx_context *ctx)", "{",
             f"    if (lo != {first} || hi != {last}) {{ ctx->resume = -1; return -2 - lo; }}"]
    lines += _prologue(items, used - local, storage, specials)
    last_load = max((index for index, item in enumerate(items) if "ROLLBACK" in item.body), default=-1)
    written_before = set().union(*(item.writes for item in items[:last_load]))
    saved = [reg for reg in _needs_saving(items) if reg in written_before]
    lines += [f"    {_register_type(storage[reg])} k{reg} = 0;" for reg in saved]
    lines.append("    int64_t done = 0, t = 0;")
    constant = _uniform_reads(items, used, uniform, lines, storage)
    keep = " ".join(f"k{reg} = r{reg}[t];" for reg in saved)
    declarations = " ".join(f"{_register_type(storage[index])} l{index};" for index in sorted(local))
    body = _constants(" ".join(f"do {{ {_localized(item.body, local).replace('ROLLBACK', 'rollback')} }} while (0);"
                               for item in items), constant)
    lines.append(f"#define LANE_{first} {{ {keep} {declarations} {body} }}")
    lines.append(f"    if (sel) {{ for (; done < n; done++) {{ t = sel[done]; LANE_{first} }} }}")
    lines.append(f"    else {{ for (; done < n; done++) {{ t = done; LANE_{first} }} }}")
    lines.append(f"#undef LANE_{first}")
    lines.append("    return -1;")
    if has_load:
        lines.append("rollback:")
        lines.append("    " + " ".join(f"r{reg}[t] = k{reg};" for reg in saved) + " ctx->resume = done;")
        lines.append("    return -2 - lo;")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _prologue(items: List[_Compiled], arrays: set, storage: Dict[int, np.dtype], specials: Dict[str, int]) -> List[str]:
    """The declarations a region's function starts with: its register arrays, the specials, the memory and one
    allocation memo per load (and the lane's CTA memo)."""
    lines = [f"    {_register_type(storage[index])} *r{index} = R[{index}];" for index in sorted(arrays)]
    lines += [f"    const uint32_t *s{slot} = S[{slot}];" for slot in sorted(specials.values())]
    lines += ["    const gm_memory *mem = ctx->memory;", "    (void)S; (void)mem;"]
    memos = sorted({int(pc) for item in items for pc in _LOAD_MEMO.findall(item.body)})
    lines += [f"    gx_memo hit_{pc} = GX_MEMO_INIT;" for pc in memos]
    if memos:
        lines.append("    gx_memo cta = GX_MEMO_INIT;")
    return lines


def _uniform_reads(items: List[_Compiled], used: set, uniform: frozenset, lines: List[str],
                   storage: Dict[int, np.dtype]) -> set:
    """The launch-uniform registers a region reads and never writes, each declared in lines as a C constant read
    from the first lane."""
    constant = (used & set(uniform)) - set().union(*(item.writes for item in items))
    lines += [f"    const {_register_type(storage[reg])} u{reg} = n ? r{reg}[sel ? sel[0] : 0] : 0;"
              for reg in sorted(constant)]
    return constant


def _constants(body: str, constant: set) -> str:
    """body reading the launch-uniform registers of constant from their C constants."""
    if not constant:
        return body
    return re.sub(r"\br(\d+)\[t\]", lambda m: f"u{m.group(1)}" if int(m.group(1)) in constant else m.group(0), body)


def _partial_region(items: List[_Compiled], storage: Dict[int, np.dtype], specials: Dict[str, int],
                    uniform: frozenset, live_after: Optional[set]) -> str:
    """gx_part_<first>: a region run from any of its instructions (lo) up to any later one (hi), lane after lane, for a
    scheduling turn that starts or ends inside it. A lane's registers are C variables: an entry for each lo reads those
    live there from their arrays, an exit before each instruction writes back those the region writes that are live
    there when it is hi, and nothing else touches the arrays (nor keeps a variable alive past its last use), so a load
    the inline checks refuse leaves its lane as it was at lo; it returns -2 - lo with ctx->resume the lanes before it,
    as a whole region's run does. live_after: the registers an instruction after the region may read (None: all)."""
    first, last = items[0].pc, items[-1].pc + 1
    used = set().union(*(item.reads | item.writes for item in items))
    written = set().union(*(item.writes for item in items))
    has_load = any("ROLLBACK" in item.body for item in items)
    lines = [f"int64_t gx_part_{first}(int64_t lo, int64_t hi, const int64_t *sel, int64_t n, void **R, void **S, "
             "gx_context *ctx)", "{", f"    if (lo < {first} || hi > {last} || lo >= hi) return INT64_MIN;"]
    lines += _prologue(items, used, storage, specials)
    lines.append("    int64_t done = 0, t = 0;")
    constant = _uniform_reads(items, used, uniform, lines, storage)
    local = used - constant
    live = [set(used if live_after is None else live_after & used)]
    for item in reversed(items):
        live.append(set(item.reads) | (live[-1] - (set() if item.guarded else set(item.writes))))
    live.reverse()

    def write_back(index: int) -> str:
        return " ".join(f"r{reg}[t] = l{reg};" for reg in sorted(live[index] & written))
    entries = " ".join(f"case {item.pc}: " + " ".join(f"l{reg} = r{reg}[t];" for reg in sorted(live[index] & local))
                       + f" goto at_{item.pc};" for index, item in enumerate(items))
    body = " ".join((f"at_{item.pc}: if (hi == {item.pc}) {{ {write_back(index)} goto next; }} " if index else
                     f"at_{item.pc}: ")
                    + f"do {{ {_localized(_constants(item.body, constant), local).replace('ROLLBACK', 'rollback')} }}"
                    " while (0);" for index, item in enumerate(items))
    declarations = " ".join(f"{_register_type(storage[index])} l{index};" for index in sorted(local))
    lines.append("    for (; done < n; done++) {")
    lines.append("        t = sel ? sel[done] : done;")
    lines.append(f"        {{ {declarations} switch (lo) {{ {entries} default: goto next; }} {body} "
                 f"{write_back(len(items))} }}")
    lines.append("    next: ;")
    lines.append("    }")
    lines.append("    return -1;")
    if has_load:
        lines += ["rollback:", "    ctx->resume = done;", "    return -2 - lo;"]
    lines.append("}")
    return "\n".join(lines) + "\n"


def partial_source(generated: Generated) -> Tuple[str, List[str]]:
    """The C of every region's gx_part function (a module of its own, compiled only for programs whose runs start or
    end inside regions often), and the functions' names."""
    parts = [_partial_region(items, storage, generated.specials, generated.uniform, live_after)
             for items, storage, live_after in generated.regions]
    return PRELUDE + "\n" + "\n".join(parts), [f"gx_part_{items[0].pc}" for items, _, _ in generated.regions]


def _store_function(item: _Compiled, storage: Dict[int, np.dtype]) -> str:
    lines = [f"static int64_t gx_store_{item.pc}(const int64_t *sel, int64_t n, void **R, void **S, gx_context *ctx)",
             "{"]
    lines += [f"    {_register_type(storage[index])} *r{index} = R[{index}];"
              for index in sorted(item.reads | item.writes)]
    lines += ["    const gm_memory *mem = ctx->memory;", "    gx_memo hit = GX_MEMO_INIT;", "    (void)S;",
              f"    {item.body}", "    return -1;", "}"]
    return "\n".join(lines) + "\n"


def _register_type(dtype: np.dtype) -> str:
    return _uint(8 if dtype == np.bool_ else dtype.itemsize * 8)


#: op classes whose register reads and writes are all in their operands (programs with others keep every register in
#: its array)
_EXPLICIT_CLASSES = frozenset({"alu", "mov", "cvta", "isspacep", "ld", "st", "atom", "red", "nop", "bra", "exit", "ret",
                               "bar", "call", "trap", "shfl", "vote", "match", "redux", "activemask", "elect"})


def _operand_registers(ref, found: set) -> None:
    if isinstance(ref, ir.RegRef):
        found.add(ref.reg.index)
    elif isinstance(ref, ir.NotRef):
        found.add(ref.reg.reg.index)
    elif isinstance(ref, ir.AddrRef):
        if ref.base is not None:
            found.add(ref.base.reg.index)
    elif isinstance(ref, ir.VecRef):
        for item in ref.items:
            _operand_registers(item, found)
    elif isinstance(ref, ir.PredPairRef):
        found.add(ref.first.reg.index)
        if ref.second is not None:
            found.add(ref.second.reg.index)


def _live_in(program: ir.Program, compiled: Dict[int, "_Compiled"]) -> Optional[List[int]]:
    """For each pc, the registers (a bit set) some path from it reads before writing; None when the program has an
    instruction whose register use is not all in its operands. Instructions the interpreter runs count as reading
    every register they name and writing none; calls and returns as reading every register."""
    instrs = program.instrs
    if any(instr.op_class not in _EXPLICIT_CLASSES for instr in instrs if instr.decoded is not None) or \
            any(instr.decoded is None and instr.control == ir.STRAIGHT for instr in instrs):
        return None
    everything = (1 << len(program.registers)) - 1
    uses, kills, successors = [], [], []
    for pc, instr in enumerate(instrs):
        item = compiled.get(pc)
        if item is not None:
            use = sum(1 << reg for reg in item.reads)
            kill = 0 if item.guarded else sum(1 << reg for reg in item.writes)
        else:
            named: set = set()
            for ref in instr.operands:
                _operand_registers(ref, named)
            if instr.guard is not None:
                named.add(instr.guard[0].index)
            use, kill = sum(1 << reg for reg in named), 0
        following = [pc + 1] if pc + 1 < len(instrs) else []
        if instr.control in (ir.CALL, ir.RETURN, ir.TRAP):
            use, following = everything, []
        elif instr.control == ir.BRANCH:
            following = ([pc + 1] if instr.guard is not None and pc + 1 < len(instrs) else []) + \
                ([instr.target] if instr.target is not None else [])
        elif instr.control == ir.EXIT and instr.guard is None:
            following = []
        uses.append(use)
        kills.append(kill)
        successors.append(following)
    live = [0] * (len(instrs) + 1)
    changed = True
    while changed:
        changed = False
        for pc in range(len(instrs) - 1, -1, -1):
            out = 0
            for following in successors[pc]:
                out |= live[following]
            value = uses[pc] | (out & ~kills[pc])
            if value != live[pc]:
                live[pc] = value
                changed = True
    return live


def generate(program: ir.Program, uniform) -> Generated:
    """One C function per maximal run of consecutive compilable straight-line instructions of one function; inside
    it, regions split at branch targets and stores."""
    instrs = program.instrs
    targets = set(program.labels.values()) | {instr.target for instr in instrs if instr.target is not None}
    specials: Dict[str, int] = {}
    scalar_slots: Dict[str, int] = {}
    statics: List = []
    units: List[UnitPlan] = []
    bodies: List[str] = []
    pending: List[Tuple[UnitPlan, List[_Compiled]]] = []
    pc = 0
    while pc < len(instrs):
        plan = UnitPlan(pc, pc, f"gx_unit_{pc}")
        emitter = Emitter(program, uniform, plan, specials, scalar_slots, statics)
        compiled: List[_Compiled] = []
        end = pc
        while end < len(instrs) and instrs[end].function == instrs[pc].function:
            saved = (dict(plan.registers), dict(plan.array_specials), dict(plan.scalar_specials),
                     plan.has_memory, dict(specials), dict(scalar_slots), len(statics))
            try:
                kind, body = emitter.instruction(instrs[end])
            except (Unsupported, ValueError, KeyError, IndexError, TypeError, AttributeError, OverflowError):
                # the executors accepted this instruction; what the generator cannot express, the interpreter runs
                (plan.registers, plan.array_specials, plan.scalar_specials, plan.has_memory,
                 kept_specials, kept_scalars, kept_statics) = saved
                specials.clear()
                specials.update(kept_specials)
                scalar_slots.clear()
                scalar_slots.update(kept_scalars)
                del statics[kept_statics:]
                break
            compiled.append(_Compiled(end, kind, body, frozenset(emitter.reads), frozenset(emitter.writes),
                                      instrs[end].guard is not None))
            end += 1
        if end == pc:
            pc += 1
            continue
        plan.end = end
        units.append(plan)
        pending.append((plan, compiled))
        pc = end
    all_compiled = {item.pc: item for _, compiled in pending for item in compiled}
    try:
        live = _live_in(program, all_compiled)
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        live = None
    region_list: List[Tuple[List[_Compiled], Dict[int, np.dtype], Optional[set]]] = []
    for plan, compiled in pending:
        regions: List[List[_Compiled]] = []
        for item in compiled:
            if (item.kind == "store" or not regions or regions[-1][-1].kind == "store" or item.pc in targets
                or len(regions[-1]) >= REGION_LIMIT):
                regions.append([item])
            else:
                regions[-1].append(item)
        parts, cases = [], []
        for region in regions:
            if region[0].kind == "store":
                item = region[0]
                parts.append(_store_function(item, plan.registers))
                cases.append(f"        case {item.pc}: result = gx_store_{item.pc}(sel, n, R, S, ctx); "
                             f"if (result != -1) return result; pc++; break;")
                continue
            first, last = region[0].pc, region[-1].pc + 1
            live_after = None
            if live is not None:
                live_after = {reg for reg in range(len(program.registers)) if live[last] >> reg & 1} | set(uniform)
            parts.append(_region(region, plan.registers, specials, live_after, frozenset(uniform)))
            cases.append(f"        case {first} ... {last - 1}: result = gx_region_{first}(pc, to < {last} ? to : "
                         f"{last}, sel, n, R, S, ctx); if (result != -1) return result; pc = to < {last} ? to : "
                         f"{last}; break;")
            for item in region:
                plan.region_start[item.pc] = first
                plan.region_end[item.pc] = last
            region_list.append((region, plan.registers, live_after))
        bodies.append("".join(parts))
        bodies.append(
            f"int64_t {plan.name}(int64_t from, int64_t to, const int64_t *sel, int64_t n, void **R, void **S, "
            f"gx_context *ctx)\n{{\n    int64_t pc = from, result;\n    while (pc < to) {{\n        switch (pc) {{\n"
            + "\n".join(cases) + "\n        default: return INT64_MIN;\n        }\n    }\n    return -1;\n}\n")
    loops = _loops(program, units)
    if loops:
        bodies.append("typedef int64_t (*gx_part_fn)(int64_t, int64_t, const int64_t *, int64_t, void **, void **, "
                      "gx_context *);")
    bodies += [_loop_function(head, branch, unit) for head, (branch, unit) in sorted(loops.items())]
    entry_live = None if live is None or not instrs else \
        frozenset(reg for reg in range(len(program.registers)) if live[0] >> reg & 1)
    return Generated(PRELUDE + "\n" + "\n".join(bodies), units, specials, scalar_slots, statics,
                     {head: branch.pc for head, (branch, _) in loops.items()}, entry_live, region_list,
                     frozenset(uniform))


def _loops(program: ir.Program, units: List[UnitPlan]) -> Dict[int, Tuple[ir.Instr, UnitPlan]]:
    """Loops whose body is one compiled stretch closed by a guarded branch back to its first instruction:
    head pc -> (the branch, the unit that runs the body)."""
    loops = {}
    for unit in units:
        branch_pc = unit.end
        if branch_pc >= len(program.instrs):
            continue
        branch = program.instrs[branch_pc]
        if (branch.control != ir.BRANCH or branch.guard is None or branch.target is None
            or not unit.start <= branch.target < branch_pc or branch.function != program.instrs[unit.start].function):
            continue
        loops[branch.target] = (branch, unit)
    return loops


def _loop_function(head: int, branch: ir.Instr, unit: UnitPlan) -> str:
    """A loop run for as long as any lane goes round, each round as the scheduler runs it: the body for the group's
    lanes, then the branch; lanes that fall through wait at the branch's next pc (parked), the rest go round.
    Stops after max_rounds rounds, when every lane falls through, or when the body needs the interpreter.
    The first round may start inside the body, at start: first_part (a gx_part function of the partial module) runs
    start up to first_end, the end of its region, and the unit the rest (all of it when first_part is NULL and
    first_end is start: a region's first instruction or a store). After max_rounds rounds, a turn that ends
    inside the body runs on to last_end: the unit up to last_start, last_part (when not NULL) the rest. info: rounds
    run (the first counted whole), warps and lanes summed over them, the result of the run that stopped them (-1:
    none), the lanes that go on, how many parked, whether every lane left, rotations; then, of the run that stopped
    them, the pc it started at, whether it was a gx_part function's, and the pc it was to end at; the warps of the
    first round, the pc the body was to be run to (the branch, or last_end), whether the run to last_end was done,
    and the warps that went on."""
    reg, negated = branch.guard
    taken = "(p[t] == 0)" if negated else "(p[t] != 0)"
    return f"""
int64_t gx_loop_{head}(int64_t *sel, int64_t n, int64_t max_rounds, int64_t rotate_left, int64_t others_finite,
                       void **R, void **S, gx_context *ctx, int64_t *park, int64_t *info, int64_t start,
                       void *first_part, int64_t first_end, int64_t last_end, void *last_part, int64_t last_start)
{{
    const uint8_t *p = R[{reg.index}];
    int64_t rounds = 0, warp_sum = 0, lane_sum = 0, parked = 0, result = -1, left_loop = 0, rotated = 0;
    int64_t warps = 0, entered = {head}, in_part = 0, stop = {branch.pc}, run_end = {branch.pc}, exhausted = 0;
    int64_t last_done = 0;
    for (int64_t i = 0; i < n; i++) warps += i == 0 || (sel[i] >> 5) != (sel[i - 1] >> 5);
    const int64_t first_warps = warps;
    int64_t dense = 1;
    for (int64_t i = 0; i < n && dense; i++) dense = sel[i] == i;
    for (;;) {{
        if (rounds >= max_rounds) {{ exhausted = 1; break; }}
        if (start != {head}) {{
            if (first_part) {{
                entered = start;
                stop = first_end;
                result = ((gx_part_fn)first_part)(start, first_end, dense ? NULL : sel, n, R, S, ctx);
                if (result != -1) {{ in_part = 1; break; }}
            }}
            start = {head};
            if (first_end < {branch.pc}) {{
                entered = first_end;
                stop = {branch.pc};
                result = {unit.name}(first_end, {branch.pc}, dense ? NULL : sel, n, R, S, ctx);
            }}
        }} else {{
            entered = {head};
            stop = {branch.pc};
            result = {unit.name}({head}, {branch.pc}, dense ? NULL : sel, n, R, S, ctx);
        }}
        if (result != -1) break;
        warp_sum += warps;
        lane_sum += n;
        rounds++;
        int64_t stay = 1;
        for (int64_t i = 0; i < n && stay; i++) {{ const int64_t t = sel[i]; stay = {taken}; }}
        if (stay) {{
            if (others_finite && ++rotated >= rotate_left) break;
            continue;
        }}
        int64_t kept = 0, first_parked = parked, kept_warps = 0;
        for (int64_t i = 0; i < n; i++) {{
            const int64_t t = sel[i];
            if {taken} {{
                kept_warps += kept == 0 || (t >> 5) != (sel[kept - 1] >> 5);
                sel[kept++] = t;
            }} else park[parked++] = t;
        }}
        if (kept == 0) {{
            memcpy(sel, park + first_parked, (size_t)n * sizeof(int64_t));
            parked = first_parked;
            left_loop = 1;
            break;
        }}
        warps = kept_warps;
        n = kept;
        dense = 0;
        if (parked) others_finite = 1;
        if (others_finite && ++rotated >= rotate_left) break;
    }}
    if (exhausted && last_end != {head}) {{
        run_end = last_end;
        if (last_start > {head}) {{
            entered = {head};
            stop = last_start;
            result = {unit.name}({head}, last_start, dense ? NULL : sel, n, R, S, ctx);
        }}
        if (result == -1 && last_part) {{
            entered = last_start;
            stop = last_end;
            result = ((gx_part_fn)last_part)(last_start, last_end, dense ? NULL : sel, n, R, S, ctx);
            in_part = result != -1;
        }}
        last_done = result == -1;
    }}
    info[0] = rounds; info[1] = warp_sum; info[2] = lane_sum; info[3] = result; info[4] = n; info[5] = parked;
    info[6] = left_loop; info[7] = rotated; info[8] = entered; info[9] = in_part; info[10] = stop;
    info[11] = first_warps; info[12] = run_end; info[13] = last_done; info[14] = warps;
    return 0;
}}
"""
