"""The PTX instruction table: one entry per opcode family, expanded over its types and validated at import."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Callable, Dict, Optional, Tuple, Union

import numpy as np

from isa import atomic, fp, intops, memory, tensor, warp
from isa.types import FLOATS, HALVES, INT_TYPES, TYPES, widened

# ---- modifier vocabulary -------------------------------------------------------------------------
# Each family lists the categories it accepts; the decoder files every dotted modifier under the
# family's category that contains it, so modifiers may come in any order.

CATEGORIES: Dict[str, frozenset] = {name: frozenset(values.split()) for name, values in {
    "rnd": "rn rz rm rp rna",
    "irnd": "rni rzi rmi rpi",
    "ftz": "ftz",
    "sat": "sat",
    "relu": "relu",
    "satfinite": "satfinite",
    "pack": "pack",
    "approx": "approx full",
    "nan": "NaN",
    "xorsign": "xorsign",
    "absmod": "abs",
    "noftz": "noftz",
    "oob": "oob",
    "mulmode": "lo hi wide",
    "halfmode": "lo hi",
    "cc": "cc",
    "cmp": "eq ne lt le gt ge lo ls hi hs equ neu ltu leu gtu geu num nan",
    "boolop": "and or xor",
    "space": "global shared local const param",
    "cache": "ca cg cs lu cv wb wt nc volatile unified",
    "sem": "relaxed acquire release acq_rel sc weak mmio",
    "scope": "cta cluster gpu sys",
    "vec": "v2 v4 v8",
    "atomop": "add exch cas min max inc dec and or xor",
    "redop": "add min max inc dec and or xor",
    "uni": "uni",
    "shfldir": "l r",
    "shfmode": "clamp wrap",
    "prmtmode": "f4e b4e rc8 ecl ecr rc16",
    "shiftamt": "shiftamt",
    "testprop": "finite infinite number notanumber normal subnormal",
    "cvtadir": "to",
    "barmode": "sync arrive red",
    "aligned": "aligned",
    "barredop": "popc and or",
    "sync": "sync",
    "shflmode": "up down bfly idx",
    "votemode": "all any uni ballot",
    "matchmode": "any all",
    "reduxop": "add min max and or xor",
    "membarlevel": "cta gl sys",
    "fenceproxy": "proxy async alias tensormap",
    "prefetchlevel": "L1 L2",
    "barwarp": "warp",
    "asyncmode": "async",
    "cpop": "commit_group wait_group wait_all mbarrier",
    "cparrive": "arrive",
    "noinc": "noinc",
    "cpobject": "b64",
    "cpspace": "shared global",
    "mmashape": "m8n8k4 m16n8k4 m16n8k8 m16n8k16 m16n8k32 m16n8k64 m8n8k16 m8n8k32 m8n8k128 m16n8k128 m16n8k256",
    "mmalayout": "row col",
    "matrixshape": "m8n8 m16n16 m8n16 m16n8",
    "matrixnum": "x1 x2 x4",
    "trans": "trans",
    "wmmaop": "load store mma",
    "wmmarole": "a b c d",
    "wmmashape": "m16n16k16 m32n8k16 m8n32k16 m16n16k8 m8n8k4 m8n8k32 m8n8k128",
    "mbarop": "init arrive arrive_drop expect_tx complete_tx test_wait try_wait pending_count inval",
    "parity": "parity",
    "expecttx": "expect_tx",
    "nocomplete": "noComplete",
    "wgmmaop": "mma_async fence commit_group wait_group",
    "wgmmashape": " ".join(f"m64n{n}k{k}" for n in range(8, 257, 8) for k in (8, 16, 32, 256)),
    # bar / barrier write "bar.cta.sync"; the scope word belongs to its own category there
    "cta": "cta",
}.items()}

#: modifiers with a `::` qualifier keep only the part before it (shared::cta → shared) except hints.
HINT_PREFIXES = ("L1::", "L2::", "L2", "ld_cg", "level::")

ARITH_INT = ("u16", "u32", "u64", "s16", "s32", "s64")
ALL_DATA = INT_TYPES + FLOATS + HALVES
BITWISE = ("pred", "b16", "b32", "b64")


class ModifierLookup:
    """get/has over `mods`, an instruction's (category, modifier) pairs."""
    mods: Tuple[Tuple[str, str], ...]

    def get(self, category: str, default=None):
        for name, value in self.mods:
            if name == category:
                return value
        return default

    def has(self, category: str) -> bool:
        return any(name == category for name, _ in self.mods)


@dataclass(frozen=True)
class Decoded(ModifierLookup):
    """An instruction's family with its modifiers sorted into categories and its types in order."""
    family: "Family"
    types: Tuple[str, ...]
    mods: Tuple[Tuple[str, str], ...]
    hints: Tuple[str, ...] = ()

    @property
    def type(self) -> str:
        return self.types[0]

    @property
    def signature(self) -> "Signature":
        sig = self.family.sig
        return parse_signature(sig(self) if callable(sig) else sig, self.types)


@dataclass(frozen=True)
class Signature:
    """Destination type (None if none) and source types, concrete for one decoded instruction."""
    dest: Optional[str]
    sources: Tuple[str, ...]
    optional: int  # how many trailing sources may be omitted


@dataclass(frozen=True)
class Family:
    """One opcode family: its operand signature, the types and modifier categories it takes, the op class that
    tells the machine how to run it, and its semantics: given a decoded instruction, the pure numpy function
    it computes (None only for what the scheduler itself does and for instructions without an effect)."""
    mnemonic: str
    sig: Union[str, Callable[[Decoded], str]]
    types: Tuple[Tuple[str, ...], ...] = ()
    mods: Tuple[str, ...] = ()
    op_class: str = "alu"
    semantics: Optional[Callable[[Decoded], Callable]] = None
    doc: str = ""
    carry_in: bool = False
    carry_out: bool = False
    type_optional: bool = False
    optional_slots: int = 0
    #: modifier categories an instruction of the family must name (setp's comparison, shf's mode, ...)
    required: Tuple[str, ...] = ()
    #: the rules its types and modifiers must satisfy together: decoded → what is wrong, or None
    check: Optional[Callable[["Decoded"], Optional[str]]] = None


_SLOT_TOKENS = {f"T{i}": i for i in range(4)}
_OPERAND_WORDS = ("addr", "label", "call")


@lru_cache(maxsize=8192)
def parse_signature(text: str, types: Tuple[str, ...]) -> Signature:
    """'T <- T, u32, pred?' → concrete types; T/T0 is the first type slot, T1 the second, W is T widened."""
    dest_text, _, src_text = text.partition("<-")

    def resolve(token: str) -> str:
        token = token.strip().rstrip("?")
        if token == "T":
            return types[0]
        if token in _SLOT_TOKENS:
            return types[_SLOT_TOKENS[token]]
        if token == "W":
            return widened(types[0])
        return token

    dest = resolve(dest_text) if dest_text.strip() else None
    tokens = [tok.strip() for tok in src_text.split(",") if tok.strip()]
    optional = sum(1 for tok in tokens if tok.endswith("?"))
    return Signature(dest, tuple(resolve(tok) for tok in tokens), optional)


# ---- semantics builders: decoded instruction → pure function over numpy arrays --------------------

def _float_kw(d: Decoded, *, rnd: bool = True, sat: bool = True) -> dict:
    kw = {"ty": d.type, "ftz": d.has("ftz")}
    if rnd:
        kw["rnd"] = d.get("rnd", "rn")
    if sat:
        kw["sat"] = d.has("sat")
    return kw


def _is_float(d: Decoded) -> bool:
    return TYPES[d.type].is_float


def _additive(float_fn, halves_fn, cc_fn, sat_fn, integer_fn):
    """add/sub: the float, packed-halves, carry, saturating or plain integer form the modifiers ask for."""
    def build(d):
        if _is_float(d):
            return partial(float_fn, **_float_kw(d))
        if halves_fn is not None and d.type in PACKED_HALVES:
            return partial(halves_fn, ty=d.type)
        if d.has("cc"):
            return cc_fn
        if d.has("sat"):
            return sat_fn
        return integer_fn
    return build


_add = _additive(fp.fadd, intops.add_halves, intops.add_cc, intops.add_sat_s32, np.add)
_sub = _additive(fp.fsub, None, intops.sub_cc, intops.sub_sat_s32, np.subtract)


def _addc(d):
    return intops.addc


def _subc(d):
    return intops.subc


def _by_mulmode(d, float_function, *, hi, wide, lo):
    """mul/mad: the float function with the rounding modifiers, else the integer function .hi, .wide or .lo names."""
    if _is_float(d):
        return partial(float_function, **_float_kw(d))
    return {"hi": hi, "wide": wide}.get(d.get("mulmode", "lo"), lo)


def _mul(d):
    return _by_mulmode(d, fp.fmul, hi=partial(intops.mul_hi, ty=d.type), wide=partial(intops.mul_wide, ty=d.type),
                       lo=np.multiply)


def _mul_sig(d):
    return "W <- T, T" if d.get("mulmode") == "wide" else "T <- T, T"


def _mad(d):
    if not _is_float(d) and d.has("cc"):
        return partial(intops.mad_cc, hi=d.get("mulmode", "lo") == "hi", ty=d.type)
    hi = intops.mad_hi_sat_s32 if d.has("sat") else partial(intops.mad_hi, ty=d.type)
    return _by_mulmode(d, fp.ffma, hi=hi, wide=partial(intops.mad_wide, ty=d.type), lo=intops.mad_lo)


def _mad_sig(d):
    return "W <- T, T, W" if d.get("mulmode") == "wide" else "T <- T, T, T"


def _madc(d):
    return partial(intops.madc, hi=d.get("mulmode", "lo") == "hi", ty=d.type)


def _mul24(d):
    return partial(intops.mul24, ty=d.type, hi=d.get("halfmode", "lo") == "hi")


def _mad24(d):
    return partial(intops.mad24, ty=d.type, hi=d.get("halfmode", "lo") == "hi", sat=d.has("sat"))


def _fma(d):
    return partial(fp.ffma, relu=d.has("relu"), **_float_kw(d))


def _div(d):
    if _is_float(d):
        mode = d.get("approx") or d.get("rnd", "rn")
        return partial(fp.fdiv, ty=d.type, mode=mode, ftz=d.has("ftz"))
    return partial(intops.div, ty=d.type)


def _rem(d):
    return partial(intops.rem, ty=d.type)


def _abs(d):
    if _is_float(d):
        return partial(fp.fabs, ty=d.type, ftz=d.has("ftz"))
    return intops.iabs


def _neg(d):
    if _is_float(d):
        return partial(fp.fneg, ty=d.type, ftz=d.has("ftz"))
    return intops.ineg


def _minmax(float_fn, int_fn):
    def build(d):
        if _is_float(d):
            return partial(float_fn, ty=d.type, ftz=d.has("ftz"), nan=d.has("nan"), absolute=d.has("absmod"),
                           xorsign=d.has("xorsign"))
        return partial(int_fn, relu=d.has("relu"), ty=d.type)
    return build


def _unary_float(fn, *, with_mode=False):
    def build(d):
        kw = {"ty": d.type, "ftz": d.has("ftz")}
        if with_mode:
            kw["mode"] = d.get("approx") or d.get("rnd", "rn")
        return partial(fn, **kw)
    return build


def _typed(fn, **fixed):
    return lambda d: partial(fn, ty=d.type, **fixed)


def _plain(fn):
    return lambda d: fn


def _bfind(d):
    return partial(intops.bfind, ty=d.type, shiftamt=d.has("shiftamt"))


def _prmt(d):
    return partial(intops.prmt, mode=d.get("prmtmode"))


def _shf(d):
    return partial(intops.shf, direction=d.get("shfldir"), mode=d.get("shfmode"))


def _shl(d):
    return partial(intops.shl, bits=TYPES[d.type].bits)


def _shr(d):
    return partial(intops.shr, ty=d.type)


def _logic(fn):
    return lambda d: fn


def _lop3(d):
    op = d.get("boolop")

    def lop3(a, b, c, lut, q=None):
        result = intops.lop3(a, b, c, lut=int(np.asarray(lut).reshape(-1)[0]) & 0xFF)
        if op is None:
            return result
        return result, intops.combine_pred(np.asarray(result) != 0, q, op=op)
    return lop3


def compare_function(d: Decoded, type_name: str):
    """The bare comparison of setp/set (before any .and/.or/.xor), for operands of type_name."""
    if TYPES[type_name].is_float:
        return partial(fp.fcompare, ty=type_name, cmp=d.get("cmp"), ftz=d.has("ftz"))
    return partial(intops.icompare, cmp=d.get("cmp"))


def _compare(d):
    return compare_function(d, d.type)


def _setp_sig(d):
    return "pred <- T, T, pred" if d.has("boolop") else "pred <- T, T"


def _set_sig(d):
    return "T0 <- T1, T1, pred" if d.has("boolop") else "T0 <- T1, T1"


def _lop3_sig(d):
    return "b32 <- b32, b32, b32, b32, pred" if d.has("boolop") else "b32 <- b32, b32, b32, b32"


def _setp(d):
    compare = _compare(d)
    op = d.get("boolop")
    if op is None:
        return compare
    return lambda a, b, c: intops.combine_pred(compare(a, b), c, op=op)


_ONE_BITS = {"f16": 0x3C00, "bf16": 0x3F80, "f16x2": 0x3C00, "bf16x2": 0x3F80}


def _set(d):
    """set: 0xFFFFFFFF or 1.0f per result; with f16x2/bf16x2 sources each half of d is set on its own
    (0xFFFF or 1.0 of the destination's half format)."""
    dest, source = d.types[0], d.types[1]
    op = d.get("boolop")
    combine = (lambda t, c: t) if op is None else (lambda t, c: intops.combine_pred(t, c, op=op))
    half = {"f16x2": "f16", "bf16x2": "bf16"}.get(source)
    if half is None and dest not in _ONE_BITS:
        compare = compare_function(d, source)
        dtype = TYPES[dest].dtype
        return lambda a, b, c=None: intops.set_result(combine(compare(a, b), c), dtype=dtype)
    true_bits = _ONE_BITS.get(dest, 0xFFFF)
    if half is None:
        compare = compare_function(d, source)
        return lambda a, b, c=None: np.where(combine(compare(a, b), c), true_bits, 0).astype(TYPES[dest].dtype)
    compare = compare_function(d, half)

    def set_halves(a, b, c=None):
        a, b = np.asarray(a, dtype=np.uint32), np.asarray(b, dtype=np.uint32)
        low = combine(compare((a & 0xFFFF).astype(np.uint16), (b & 0xFFFF).astype(np.uint16)), c)
        high = combine(compare((a >> 16).astype(np.uint16), (b >> 16).astype(np.uint16)), c)
        return (np.where(high, true_bits, 0).astype(np.uint32) << np.uint32(16)) | \
            np.where(low, true_bits, 0).astype(np.uint32)
    return set_halves


def _selp(d):
    return lambda a, b, c: np.where(c, a, b)


def _slct(d):
    if TYPES[d.types[1]].is_float:
        ftz = d.has("ftz")
        zero = np.float32(0)

        def choose(a, b, c):
            c = fp.cvt(c, dst="f32", src="f32", ftz=True) if ftz else c
            return np.where(c >= zero, a, b)
        return choose
    return lambda a, b, c: np.where(c >= 0, a, b)


def _testp(d):
    return partial(fp.testp, ty=d.type, prop=d.get("testprop"))


def _copysign(d):
    return partial(fp.copysign, ty=d.type)


_PAIRED = ("f16x2", "bf16x2", "e4m3x2", "e5m2x2")


def _cvt(d):
    dst, src = d.types[:2]
    if d.has("pack"):
        return partial(intops.cvt_pack_sat, dst=dst)
    rnd = d.get("rnd") or d.get("irnd")
    if dst in _PAIRED and src == "f32":
        return partial(fp.cvt_pack, dst=dst, rnd=rnd or "rn", relu=d.has("relu"),
                       satfinite=d.has("satfinite") or d.has("sat"))
    kw = {"satfinite": True} if d.has("satfinite") else {}
    return partial(fp.cvt, dst=dst, src=src, rnd=rnd, ftz=d.has("ftz"), sat=d.has("sat"), relu=d.has("relu"),
                   **kw)


def _cvt_sig(d):
    dst, src = d.types[:2]
    if d.has("pack"):
        return "b32 <- T1, T1, b32?" if len(d.types) == 3 else "b32 <- T1, T1"
    if dst in _PAIRED and src == "f32":
        return "T0 <- T1, T1"
    return "T0 <- T1"


def _dp_sig(d):
    acc = "s32" if "s32" in d.types else "u32"
    return f"{acc} <- b32, b32, {acc}"


def _dp4a(d):
    return partial(intops.dp4a, atype=d.types[0], btype=d.types[1])


def _dp2a(d):
    return partial(intops.dp2a, atype=d.types[0], btype=d.types[1], hi=d.get("halfmode", "lo") == "hi")


def _bmsk(d):
    return partial(intops.bmsk, mode=d.get("shfmode"))


def _szext(d):
    return partial(intops.szext, mode=d.get("shfmode"), signed=d.type == "s32")


CVT_TYPES = INT_TYPES + FLOATS + ("f16", "bf16", "tf32", "f16x2", "bf16x2", "e4m3x2", "e5m2x2", "u4", "s4", "u2", "s2")
PACKED_HALVES = ("u16x2", "s16x2")
MMA_TYPES = ("f16", "bf16", "tf32", "f32", "f64", "s8", "u8", "s32", "e4m3", "e5m2")
WMMA_TYPES = ("f16", "bf16", "tf32", "f32", "f64", "u8", "s8", "s32")
WGMMA_INPUTS = ("f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8")
FLOAT_ALL = FLOATS + HALVES
MEM_TYPES = INT_TYPES + FLOATS + ("f16", "f16x2", "bf16", "bf16x2")
ATOM_TYPES = ("b16", "b32", "b64", "u32", "u64", "s32", "s64", "f32", "f64", "f16", "f16x2", "bf16", "bf16x2")

# ---- semantics of the memory, atomic, warp-wide and tensor families --------------------------------

def vector_count(d: Decoded) -> int:
    """Elements a .v2/.v4/.v8 access moves per thread (1 without a vector modifier)."""
    vec = d.get("vec")
    return int(vec[1:]) if vec else 1


def _load(d):
    return partial(memory.unpack_elements, dtype=TYPES[d.type].dtype, count=vector_count(d))


def _store(d):
    return partial(memory.pack_elements, dtype=TYPES[d.type].dtype)


def _atomic(d):
    return partial(atomic.combine, d.get("atomop") or d.get("redop"), d.type)


def _cvta(d):
    return memory.from_generic if d.has("cvtadir") else memory.to_generic


def _moded(fn, category):
    return lambda d: partial(fn, d.get(category))


def _mma(d):
    """f64: the chain of fused multiply-adds (b as (k, n)); integers: the exact 32-bit sum; the rest: the tensor
    cores' aligned sum (b as (n, k))."""
    if d.types[1] == "f64":
        return tensor.fma_chain
    if d.types[1] in ("s8", "u8"):
        return partial(tensor.integer_mma, satfinite=d.has("satfinite"))
    return partial(tensor.tensor_core_sum, kind=d.types[1], accumulator=d.types[0])


def _matrix_move(d):
    return tensor.fragments_matrix if d.family.mnemonic == "stmatrix" else tensor.matrix_fragments


# ---- the combinations each family defines (decode raises DecodeError for the rest) -----------------

INT_ONLY = ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64")
DIRECTED = ("rn", "rz", "rm", "rp")
INT_COMPARISONS = frozenset("eq ne lt le gt ge lo ls hi hs".split())
FLOAT_COMPARISONS = frozenset("eq ne lt le gt ge equ neu ltu leu gtu geu num nan".split())
_CARRY_TYPES = ("u32", "s32", "u64", "s64")
_PACK_DESTINATIONS = ("u16", "s16", "u8", "s8", "u4", "s4", "u2", "s2")
_FP8_PAIRS = ("e4m3x2", "e5m2x2")
_HALF_PAIRS = ("f16x2", "bf16x2")


def _mods_text(d: Decoded, *categories: str) -> str:
    return ".".join(value for name, value in d.mods if name in categories)


def _rounding_rule(d: Decoded) -> Optional[str]:
    """Arithmetic rounds rn rz rm rp; rna and the integer roundings belong to cvt."""
    if d.has("irnd"):
        return f"'.{d.get('irnd')}' rounds to an integer and is only for cvt"
    if d.get("rnd") == "rna":
        return "'.rna' rounds only cvt's tf32 results; arithmetic rounds .rn .rz .rm .rp"
    return None


def _float_modifier_rule(d: Decoded) -> Optional[str]:
    """.ftz and .sat belong to f32 and the half types, never f64 or integers (add.sat.s32 excepted)."""
    if d.type == "f64":
        for category in ("ftz", "sat"):
            if d.has(category):
                return f"'.{category}' is not defined for .f64"
    return None


def _arith_check(d: Decoded) -> Optional[str]:
    """add/sub/mul/mad: .cc on 32- and 64-bit integers, .wide/.hi/.lo on integers (.wide on 16 and 32 bits),
    float roundings, .ftz/.sat not on f64."""
    problem = _rounding_rule(d) or _float_modifier_rule(d)
    if problem:
        return problem
    t = TYPES[d.type]
    if d.has("cc") and d.type not in _CARRY_TYPES:
        return f"'.cc' needs a 32- or 64-bit integer type, not .{d.type}"
    mode = d.get("mulmode")
    if mode is not None:
        if not t.is_int or d.type in PACKED_HALVES:
            return f"'.{mode}' is for integer types, not .{d.type}"
        if mode == "wide" and t.bits not in (16, 32):
            return f"'.wide' needs a 16- or 32-bit type (its result is twice as wide), not .{d.type}"
    if d.has("cc") and d.family.mnemonic == "mad" and mode == "wide":
        return "mad.cc takes .lo or .hi, not .wide"
    if d.has("sat") and t.is_int and not (d.type == "s32" and (d.family.mnemonic in ("add", "sub") or
                                                                 (d.family.mnemonic == "mad" and mode == "hi"))):
        return f"'.sat' is not defined for .{d.type} here (add.sat.s32, sub.sat.s32, mad.hi.sat.s32)"
    return None


def _fma_check(d: Decoded) -> Optional[str]:
    return _rounding_rule(d) or _float_modifier_rule(d)


def _mad24_check(d: Decoded) -> Optional[str]:
    if d.has("sat") and not (d.type == "s32" and d.get("halfmode") == "hi"):
        return "mad24 takes .sat only as mad24.hi.sat.s32"
    return None


def _div_check(d: Decoded) -> Optional[str]:
    problem = _rounding_rule(d)
    if problem:
        return problem
    t = TYPES[d.type]
    if t.is_int:
        return None
    if d.has("approx") and d.type != "f32":
        return f"div.{d.get('approx')} is defined for .f32 only"
    if d.has("approx") and d.has("rnd"):
        return f"div.{d.get('approx')} takes no rounding modifier"
    if d.type == "f64" and d.has("ftz"):
        return "'.ftz' is not defined for .f64"
    return None


def _rcp_sqrt_check(d: Decoded) -> Optional[str]:
    problem = _rounding_rule(d)
    if problem:
        return problem
    name = d.family.mnemonic
    if d.get("approx") == "full":
        return f"{name} has no '.full' form (use .approx or a rounding)"
    if d.has("approx") and d.has("rnd"):
        return f"{name}.approx takes no rounding modifier"
    if d.type == "f64":
        if d.has("approx"):
            if name == "sqrt":
                return "sqrt.approx is defined for .f32 only"
            if not d.has("ftz"):
                return "rcp.approx.f64 needs .ftz (rcp.approx.ftz.f64)"
        elif d.has("ftz"):
            return "'.ftz' is not defined for .f64"
    return None


def _minmax_check(d: Decoded) -> Optional[str]:
    t = TYPES[d.type]
    if d.has("relu") and d.type not in ("s32", "s16x2"):
        return f"'.relu' is defined for .s32 and .s16x2 only, not .{d.type}"
    for category in ("nan", "xorsign", "absmod"):
        if d.has(category) and (t.is_int or d.type in PACKED_HALVES or d.type == "f64"):
            return f"'.{d.get(category)}' is not defined for .{d.type}"
    if d.has("xorsign") and not d.has("absmod"):
        return "'.xorsign' needs '.abs'"
    if d.has("ftz") and (t.is_int or d.type in PACKED_HALVES):
        return f"'.ftz' is not defined for .{d.type}"
    return None


def _compare_check(d: Decoded) -> Optional[str]:
    """setp/set: integer comparisons for integer operands, float ones for floats; .ftz only for floats."""
    source = d.types[0] if d.family.mnemonic == "setp" else d.types[1]
    cmp = d.get("cmp")
    if TYPES[source].is_float:
        if cmp not in FLOAT_COMPARISONS:
            return f"'.{cmp}' compares integers, not .{source}"
    else:
        if cmp not in INT_COMPARISONS:
            return f"'.{cmp}' compares floating-point values, not .{source}"
        if d.has("ftz"):
            return f"'.ftz' is not defined for .{source}"
    return None


def _cvt_check(d: Decoded) -> Optional[str]:
    """The conversions cvt defines: integers and floats (no .bN), tf32 from f32, packed pairs from f32, fp8
    pairs from and to half pairs, .pack.sat to narrow integers from s32; float-to-integer needs an integer
    rounding, and an integer rounding otherwise only rounds a float in its own type."""
    dst, src = d.types[:2]
    rnd, irnd = d.get("rnd"), d.get("irnd")
    name = f"cvt.{dst}.{src}"
    if d.has("pack"):
        if dst not in _PACK_DESTINATIONS or src != "s32":
            return f"cvt.pack converts .s32 to {' '.join('.' + t for t in _PACK_DESTINATIONS)}, not {name}"
        if rnd or irnd:
            return "cvt.pack takes no rounding modifier"
        if len(d.types) == 3 and dst in ("u16", "s16"):
            return f"cvt.pack.{dst} takes no third operand type"
        return None
    if len(d.types) == 3:
        return f"{name} takes two types (a third, .b32, belongs to cvt.pack)"
    if dst in ("u4", "s4", "u2", "s2") or src in ("u4", "s4", "u2", "s2"):
        return f"{name}: 4- and 2-bit integers are cvt.pack destinations only"
    for t in (dst, src):
        if TYPES[t].kind == "bits":
            return f"cvt converts typed values; .{t} is not one (use .u{t[1:]} or .s{t[1:]})"
    if dst in _FP8_PAIRS or src in _FP8_PAIRS or dst in _HALF_PAIRS or src in _HALF_PAIRS:
        pair_ok = ((dst in _FP8_PAIRS + _HALF_PAIRS and src == "f32") or
                   (dst in _FP8_PAIRS and src in _HALF_PAIRS) or (dst == "f16x2" and src in _FP8_PAIRS))
        if not pair_ok:
            return f"{name} is not defined (packed pairs convert from .f32, and fp8 pairs to and from half pairs)"
        if irnd or (rnd not in (None, "rn", "rz") if dst in _HALF_PAIRS else rnd not in (None, "rn")):
            return f"{name} does not take '.{irnd or rnd}'"
        return None
    if src == "tf32" or (dst == "tf32" and src != "f32"):
        return f"{name} is not defined (tf32 is a destination, from .f32)"
    dst_int, src_int = dst in INT_ONLY, src in INT_ONLY
    if dst == "tf32" and (irnd or rnd not in (None, "rn", "rz", "rna")):
        return f"cvt.tf32.f32 rounds .rna, .rn or .rz, not '.{irnd or rnd}'"
    if rnd == "rna" and dst != "tf32":
        return "'.rna' rounds only cvt's tf32 results"
    if dst_int and src_int:
        if rnd or irnd:
            return f"{name} converts integers and takes no rounding modifier"
        return None
    if src_int:
        if irnd:
            return f"'.{irnd}' rounds a floating-point source; {name} has an integer source"
        return None
    if dst_int:
        if irnd is None:
            return f"{name} needs an integer rounding: .rni .rzi .rmi or .rpi"
        return None
    if irnd and dst != src:
        return f"'.{irnd}' rounds to an integer in the source's own type; {name} changes type"
    return None


def _mma_check(d: Decoded) -> Optional[str]:
    """mma.sync: a and b of one floating-point type (8-bit integers and fp8 may mix), accumulators of the width the
    inputs give (f64 → f64, f16 → f16 or f32, bf16/tf32/fp8 → f32, integers → s32)."""
    dtype, atype, btype, ctype = d.types
    integers, fp8 = ("s8", "u8"), ("e4m3", "e5m2")
    if atype != btype and not ({atype, btype} <= set(integers) or {atype, btype} <= set(fp8)):
        return f"mma multiplies .{atype} by .{btype}: a and b must have one type"
    wanted = {"f64": ("f64",), "f16": ("f16", "f32"), "s8": ("s32",), "u8": ("s32",)}.get(atype, ("f32",))
    for role, t in (("d", dtype), ("c", ctype)):
        if t not in wanted:
            return f"mma with .{atype} inputs accumulates in {' or '.join('.' + w for w in wanted)}, not .{t} ({role})"
    return None


FAMILIES: Tuple[Family, ...] = (
    # integer and float arithmetic
    Family("add", "T <- T, T", (ARITH_INT + FLOAT_ALL + PACKED_HALVES,), ("rnd", "ftz", "sat", "cc"), semantics=_add,
           carry_out=True, doc="a + b: integers wrap (.sat clamps s32, .cc sets the carry), floats round",
           check=_arith_check),
    Family("addc", "T <- T, T", (("u32", "s32", "u64", "s64"),), ("cc",), semantics=_addc, carry_in=True,
           carry_out=True, doc="a + b + carry in"),
    Family("sub", "T <- T, T", (ARITH_INT + FLOAT_ALL,), ("rnd", "ftz", "sat", "cc"), semantics=_sub,
           carry_out=True, doc="a - b", check=_arith_check),
    Family("subc", "T <- T, T", (("u32", "s32", "u64", "s64"),), ("cc",), semantics=_subc, carry_in=True,
           carry_out=True, doc="a - b - borrow in"),
    Family("mul", _mul_sig, (ARITH_INT + FLOAT_ALL,), ("mulmode", "rnd", "ftz", "sat"), semantics=_mul,
           doc="a * b: .lo/.hi half or .wide product of integers, a rounded product of floats", check=_arith_check),
    Family("mad", _mad_sig, (ARITH_INT + FLOAT_ALL,), ("mulmode", "rnd", "ftz", "sat", "cc"), semantics=_mad,
           carry_out=True, doc="a * b + c (mad.f32/f64 with a rounding modifier is a fused fma)", check=_arith_check),
    Family("madc", "T <- T, T, T", (("u32", "s32", "u64", "s64"),), ("mulmode", "cc"), semantics=_madc,
           carry_in=True, carry_out=True, doc="a * b + c + carry in"),
    Family("mul24", "T <- T, T", (("u32", "s32"),), ("halfmode",), semantics=_mul24,
           doc="product of the low 24 bits of a and b, its low or high 32 bits"),
    Family("mad24", "T <- T, T, T", (("u32", "s32"),), ("halfmode", "sat"), semantics=_mad24,
           doc="mul24 then + c", check=_mad24_check),
    Family("sad", "T <- T, T, T", (ARITH_INT,), semantics=_typed(intops.sad), doc="|a - b| + c"),
    Family("fma", "T <- T, T, T", (FLOAT_ALL,), ("rnd", "ftz", "sat", "oob", "relu"), semantics=_fma,
           doc="a * b + c rounded once", check=_fma_check),
    Family("div", "T <- T, T", (ARITH_INT + FLOATS,), ("rnd", "approx", "ftz"), semantics=_div,
           doc="a / b: integers truncate (by zero: all ones), floats round, .approx/.full as the H100",
           check=_div_check),
    Family("rem", "T <- T, T", (ARITH_INT,), semantics=_rem, doc="the remainder of a / b, the sign of a"),
    Family("abs", "T <- T", (("s16", "s32", "s64") + FLOAT_ALL,), ("ftz",), semantics=_abs, doc="|a|"),
    Family("neg", "T <- T", (("s16", "s32", "s64") + FLOAT_ALL,), ("ftz",), semantics=_neg, doc="-a"),
    Family("min", "T <- T, T", (ARITH_INT + FLOAT_ALL + PACKED_HALVES,), ("ftz", "nan", "relu", "xorsign", "absmod"),
           semantics=_minmax(fp.fmin, intops.imin), doc="the smaller of a and b (floats: the non-NaN one)",
           check=_minmax_check),
    Family("max", "T <- T, T", (ARITH_INT + FLOAT_ALL + PACKED_HALVES,), ("ftz", "nan", "relu", "xorsign", "absmod"),
           semantics=_minmax(fp.fmax, intops.imax), doc="the larger of a and b (floats: the non-NaN one)",
           check=_minmax_check),
    Family("copysign", "T <- T, T", (FLOATS,), semantics=_copysign, doc="b with the sign of a"),
    Family("testp", "pred <- T", (FLOATS,), ("testprop",), semantics=_testp,
           doc="whether a is finite, infinite, a number, NaN, normal or subnormal", required=("testprop",)),
    Family("rcp", "T <- T", (FLOATS,), ("rnd", "approx", "ftz"), semantics=_unary_float(fp.frcp, with_mode=True),
           doc="1 / a", check=_rcp_sqrt_check),
    Family("sqrt", "T <- T", (FLOATS,), ("rnd", "approx", "ftz"), semantics=_unary_float(fp.fsqrt, with_mode=True),
           doc="the square root of a", check=_rcp_sqrt_check),
    Family("rsqrt", "T <- T", (FLOATS,), ("approx", "ftz"), semantics=_unary_float(fp.frsqrt),
           doc="1 / sqrt(a), approximated as the H100's special-function unit does"),
    Family("sin", "T <- T", (("f32",),), ("approx", "ftz"), semantics=_unary_float(fp.fsin),
           doc="sin(a), approximated as the H100's special-function unit does"),
    Family("cos", "T <- T", (("f32",),), ("approx", "ftz"), semantics=_unary_float(fp.fcos),
           doc="cos(a), approximated as the H100's special-function unit does"),
    Family("lg2", "T <- T", (("f32",),), ("approx", "ftz"), semantics=_unary_float(fp.flg2),
           doc="log2(a), approximated as the H100's special-function unit does"),
    Family("ex2", "T <- T", (("f32", "f16", "f16x2", "bf16", "bf16x2"),), ("approx", "ftz"),
           semantics=_unary_float(fp.fex2), doc="2 ** a, approximated as the H100's special-function unit does"),
    Family("tanh", "T <- T", (("f32", "f16", "f16x2", "bf16", "bf16x2"),), ("approx",),
           semantics=_unary_float(fp.ftanh), doc="tanh(a), approximated as the H100's special-function unit does"),
    # bit manipulation
    Family("popc", "u32 <- T", (("b32", "b64"),), semantics=_plain(intops.popc), doc="the number of set bits"),
    Family("clz", "u32 <- T", (("b32", "b64"),), semantics=_plain(intops.clz), doc="the number of leading zeros"),
    Family("bfind", "u32 <- T", (("u32", "s32", "u64", "s64"),), ("shiftamt",), semantics=_bfind,
           doc="the position of the most significant non-sign bit (all ones: none)"),
    Family("brev", "T <- T", (("b32", "b64"),), semantics=_plain(intops.brev), doc="the bits in reverse order"),
    Family("bfe", "T <- T, u32, u32", (("u32", "s32", "u64", "s64"),), semantics=_typed(intops.bfe),
           doc="bit field extract: len bits of a from pos, zero- or sign-extended"),
    Family("bfi", "T <- T, T, u32, u32", (("b32", "b64"),), semantics=_typed(intops.bfi),
           doc="bit field insert: len bits of a into b at pos"),
    Family("prmt", "b32 <- b32, b32, b32", (("b32",),), ("prmtmode",), semantics=_prmt,
           doc="byte permute of the eight bytes of a and b"),
    Family("shf", "b32 <- b32, b32, u32", (("b32",),), ("shfldir", "shfmode"), semantics=_shf,
           doc="funnel shift of the 64-bit b:a, clamped or wrapped amount", required=("shfldir", "shfmode")),
    Family("shl", "T <- T, u32", (("b16", "b32", "b64"),), semantics=_shl, doc="a << b (amounts past the width: 0)"),
    Family("shr", "T <- T, u32", (("b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64"),),
           semantics=_shr, doc="a >> b, arithmetic for signed types"),
    Family("and", "T <- T, T", (BITWISE,), semantics=_logic(intops.land), doc="a & b"),
    Family("or", "T <- T, T", (BITWISE,), semantics=_logic(intops.lor), doc="a | b"),
    Family("xor", "T <- T, T", (BITWISE,), semantics=_logic(intops.lxor), doc="a ^ b"),
    Family("not", "T <- T", (BITWISE,), semantics=_logic(intops.lnot), doc="~a"),
    Family("cnot", "T <- T", (("b16", "b32", "b64"),), semantics=_logic(intops.cnot), doc="a == 0 ? 1 : 0"),
    Family("lop3", _lop3_sig, (("b32",),), ("boolop",), semantics=_lop3,
           doc="any function of three bit vectors given as its truth table"),
    Family("fns", "b32 <- b32, u32, s32", (("b32",),), semantics=_plain(intops.fns),
           doc="the position of the n-th set bit from base"),
    Family("bmsk", "b32 <- b32, b32", (("b32",),), ("shfmode",), semantics=_bmsk,
           doc="a mask of b ones from bit a", required=("shfmode",)),
    Family("szext", "T <- T, u32", (("u32", "s32"),), ("shfmode",), semantics=_szext,
           doc="sign- or zero-extend a from bit b", required=("shfmode",)),
    Family("dp4a", _dp_sig, (("u32", "s32"), ("u32", "s32")), semantics=_dp4a,
           doc="four-way byte dot product plus c"),
    Family("dp2a", _dp_sig, (("u32", "s32"), ("u32", "s32")), ("halfmode",), semantics=_dp2a,
           doc="two-way 16-bit by 8-bit dot product plus c"),
    # comparison and selection
    Family("setp", _setp_sig, (ALL_DATA,), ("cmp", "boolop", "ftz"), semantics=_setp,
           doc="compare a and b (optionally combined with c) into a predicate (and its negation)",
           required=("cmp",), check=_compare_check),
    Family("set", _set_sig, (("u32", "s32", "f32") + HALVES, ALL_DATA), ("cmp", "boolop", "ftz"),
           semantics=_set, doc="compare into all ones / 1.0 or zero", required=("cmp",), check=_compare_check),
    Family("selp", "T <- T, T, pred", (ALL_DATA,), semantics=_selp, doc="c ? a : b"),
    Family("slct", "T0 <- T0, T0, T1", (INT_TYPES + FLOATS, ("s32", "f32")), ("ftz",), semantics=_slct,
           doc="c >= 0 ? a : b"),
    # conversion and data movement
    Family("cvt", _cvt_sig, (CVT_TYPES, CVT_TYPES, ("b32",)), ("rnd", "irnd", "ftz", "sat", "relu", "satfinite", "pack"),
           semantics=_cvt, optional_slots=1, doc="convert between types: rounding, saturation, NaN to 0",
           check=_cvt_check),
    Family("mov", "T <- T", (ALL_DATA + ("pred",),), op_class="mov", semantics=_plain(intops.move),
           doc="copy a value (and pack or unpack vector registers)"),
    Family("cvta", "T <- T", (("u32", "u64"),), ("cvtadir", "space"), op_class="cvta", semantics=_cvta,
           doc="a state-space address to a generic one, or back with .to"),
    Family("isspacep", "pred <- u64", (), ("space",), op_class="isspacep", semantics=_plain(memory.in_window),
           doc="whether a generic address lies in a state space"),
    Family("ld", "T <- addr", (MEM_TYPES,), ("space", "cache", "sem", "scope", "vec"), op_class="ld",
           semantics=_load, doc="load one element or a vector of them per thread"),
    Family("ldu", "T <- addr", (MEM_TYPES,), ("space", "vec"), op_class="ld", semantics=_load,
           doc="load a value uniform across the warp (as ld)"),
    Family("st", "<- addr, T", (MEM_TYPES,), ("space", "cache", "sem", "scope", "vec"), op_class="st",
           semantics=_store, doc="store one element or a vector of them per thread"),
    Family("atom", "T <- addr, T, T?", (ATOM_TYPES,), ("space", "sem", "scope", "atomop", "noftz", "vec"),
           op_class="atom", semantics=_atomic, doc="read-modify-write memory, lanes in order; returns the old value",
           required=("atomop",)),
    Family("red", "<- addr, T", (ATOM_TYPES,), ("space", "sem", "scope", "redop", "noftz", "vec"),
           op_class="red", semantics=_atomic, doc="atom without the result", required=("redop",)),
    Family("prefetch", "<- addr", (), ("space", "prefetchlevel"), op_class="nop", doc="a cache hint: no effect here"),
    Family("prefetchu", "<- addr", (), ("prefetchlevel",), op_class="nop", doc="a cache hint: no effect here"),
    # control flow: run by the scheduler (emulator.machine.batch)
    Family("bra", "<- label", (), ("uni",), op_class="bra", doc="branch (divergent lanes split and reconverge)"),
    Family("call", "<- call", (), ("uni",), op_class="call", doc="call a .func, parameters by value"),
    Family("ret", "<-", (), ("uni",), op_class="ret", doc="return from a .func (from a kernel: exit)"),
    Family("exit", "<-", (), op_class="exit", doc="end the thread"),
    Family("trap", "<-", (), op_class="trap", doc="abort the kernel (CUDA_ERROR_LAUNCH_FAILED)"),
    Family("brkpt", "<-", (), op_class="trap", doc="a breakpoint: aborts as trap does without a debugger"),
    Family("nanosleep", "<- u32", (("u32",),), op_class="nop", doc="a scheduling hint: no effect here"),
    Family("pmevent", "<- u32", (), op_class="nop", doc="a profiler event: no effect here"),
    # synchronisation: run by the scheduler
    Family("bar", "<- u32, u32?", (("u32", "pred"),), ("barmode", "aligned", "barredop", "cta", "barwarp"),
           op_class="bar", type_optional=True, doc="CTA barrier (sync, arrive, red.popc/and/or); bar.warp.sync"),
    Family("barrier", "<- u32, u32?", (("u32", "pred"),), ("barmode", "aligned", "barredop", "cta"), op_class="bar",
           type_optional=True, doc="barrier.sync without .aligned (as bar)"),
    Family("membar", "<-", (), ("membarlevel",), op_class="nop",
           doc="a memory fence: every access is already visible in program order here"),
    Family("fence", "<-", (), ("sem", "scope", "fenceproxy", "space"), op_class="nop",
           doc="a memory fence: every access is already visible in program order here"),
    # warp-level
    Family("vote", "T <- pred, b32?", (("pred", "b32"),), ("sync", "votemode"), op_class="vote",
           semantics=_moded(warp.vote, "votemode"), doc="all/any/uni/ballot of a predicate over the warp",
           required=("votemode",)),
    Family("shfl", "b32 <- b32, b32, b32, b32?", (("b32",),), ("sync", "shflmode"), op_class="shfl",
           semantics=_moded(warp.shfl_source, "shflmode"), doc="read another lane's register", required=("shflmode",)),
    Family("activemask", "b32 <-", (("b32",),), op_class="activemask", semantics=_plain(warp.activemask),
           doc="the mask of the warp's executing lanes"),
    Family("match", "b32 <- T, b32", (("b32", "b64"),), ("sync", "matchmode"), op_class="match",
           semantics=_moded(warp.match, "matchmode"), doc="the lanes holding the same value", required=("matchmode",)),
    Family("redux", "T <- T, b32", (("u32", "s32", "b32"),), ("sync", "reduxop"), op_class="redux",
           semantics=_moded(warp.redux, "reduxop"), doc="an integer reduction over the warp", required=("reduxop",)),
    Family("elect", "pred <- b32", (), ("sync",), op_class="elect", semantics=_plain(warp.elect),
           doc="one leader lane of the warp"),
    # asynchronous copies and tensor cores (what Triton and cuBLAS-style PTX use)
    Family("cp", "<- addr, addr, u32, u32?", (), ("asyncmode", "cpop", "cache", "cpspace", "cparrive", "noinc",
                                                  "cpobject"), op_class="cp_async",
           semantics=_plain(memory.copied_bytes), doc="cp.async: copy to shared memory, visible after wait_group"),
    Family("ldmatrix", "b32 <- addr", (("b16", "b8"),), ("sync", "aligned", "matrixshape", "matrixnum", "trans", "space"),
           op_class="ldmatrix", semantics=_matrix_move, doc="load 8x8 matrices into the warp's fragments"),
    Family("stmatrix", "<- addr, b32", (("b16", "b8"),), ("sync", "aligned", "matrixshape", "matrixnum", "trans", "space"),
           op_class="stmatrix", semantics=_matrix_move, doc="store the warp's fragments as 8x8 matrices"),
    Family("wmma", "<-", (WMMA_TYPES, WMMA_TYPES, WMMA_TYPES, WMMA_TYPES),
           ("wmmaop", "wmmarole", "sync", "aligned", "mmalayout", "wmmashape", "space", "satfinite", "rnd"),
           op_class="wmma", optional_slots=3, semantics=_plain(tensor.tensor_core_sum),
           doc="warp matrix load, store and multiply-accumulate"),
    Family("mbarrier", "<-", (("b64",),), ("mbarop", "sem", "scope", "space", "parity", "expecttx", "nocomplete"),
           op_class="mbarrier", type_optional=True, semantics=_plain(tensor.mbarrier_apply),
           doc="asynchronous barrier objects in shared memory"),
    Family("mma", "T0 <- T1, T2, T3", (MMA_TYPES, MMA_TYPES, MMA_TYPES, MMA_TYPES),
           ("sync", "aligned", "mmashape", "mmalayout", "satfinite"), op_class="mma", semantics=_mma, check=_mma_check,
           doc="warp-wide tensor-core multiply-accumulate"),
    Family("wgmma", "<-", (("f16", "f32", "s32"), WGMMA_INPUTS, WGMMA_INPUTS),
           ("wgmmaop", "sync", "aligned", "wgmmashape", "satfinite"), op_class="wgmma", optional_slots=3,
           semantics=_plain(tensor.tensor_core_sum), doc="Hopper warpgroup multiply-accumulate from shared memory"),
)

BY_MNEMONIC: Dict[str, Family] = {family.mnemonic: family for family in FAMILIES}


REPEATABLE = ("cache", "fenceproxy", "cpspace", "mmalayout")


class DecodeError(ValueError):
    pass


def _category_of(family: Family, modifier: str, seen=()) -> Optional[str]:
    """The family's category holding modifier, preferring one not used yet (mbarrier.arrive.expect_tx)."""
    matches = [category for category in family.mods if modifier in CATEGORIES[category]]
    fresh = [category for category in matches if category not in seen]
    return (fresh or matches or [None])[0]


def decode(mnemonic: str, modifiers: Tuple[str, ...]) -> Decoded:
    """Sort an instruction's dotted modifiers into types and categories; DecodeError says what is wrong."""
    family = BY_MNEMONIC.get(mnemonic)
    if family is None:
        raise DecodeError(f"unsupported instruction '{mnemonic}'")
    types = []
    mods = []
    hints = []
    seen = set()
    for raw in modifiers:
        if raw.startswith(HINT_PREFIXES):
            hints.append(raw)
            continue
        modifier = raw.split("::")[0] if "::" in raw else raw
        if modifier in TYPES and len(types) < len(family.types):
            types.append(modifier)
            continue
        category = _category_of(family, modifier, seen)
        if category is None:
            raise DecodeError(f"unknown modifier '.{raw}' for '{mnemonic}'")
        if category in seen and category not in REPEATABLE:
            raise DecodeError(f"two modifiers of one kind ('.{raw}') in '{mnemonic}'")
        seen.add(category)
        mods.append((category, modifier))
    if not len(family.types) - family.optional_slots <= len(types) <= len(family.types) and \
            not (family.type_optional and not types):
        wanted = " and ".join("a type" for _ in family.types)
        raise DecodeError(f"'{mnemonic}' needs {wanted} (e.g. '.u32')" if family.types else
                          f"unexpected type in '{mnemonic}'")
    for slot, (name, allowed) in enumerate(zip(types, family.types)):
        if name not in allowed:
            raise DecodeError(f"'{mnemonic}' is not defined for type .{name}")
    for category in family.required:
        if category not in seen:
            choices = " ".join(f".{value}" for value in sorted(CATEGORIES[category]))
            raise DecodeError(f"'{mnemonic}' needs one of {choices}")
    decoded = Decoded(family, tuple(types), tuple(mods), tuple(hints))
    problem = family.check(decoded) if family.check is not None else None
    if problem:
        raise DecodeError(problem)
    return decoded


def semantics(decoded: Decoded) -> Callable:
    """The pure function a decoded instruction computes (its family's semantics for its types and modifiers)."""
    return decoded.family.semantics(decoded)


# ---- expansion and validation at import ---------------------------------------------------------

def expand(family: Family):
    """Every concrete type combination a family is defined for."""
    combos = [()]
    for allowed in family.types[:len(family.types) - family.optional_slots]:
        combos = [combo + (name,) for combo in combos for name in allowed]
    return combos


#: op classes the scheduler runs itself, and those of instructions with no architectural effect
SCHEDULER_CLASSES = frozenset({"bra", "call", "ret", "exit", "trap", "bar"})
NO_EFFECT_CLASS = "nop"


class TableError(Exception):
    """The instruction table is malformed (a family naming an unknown type or category, lacking semantics, ...)."""


def validate(families: Tuple[Family, ...]) -> None:
    """Every family is unique, names known categories and types, has a well-formed signature and a doc line, and
    has semantics exactly when it computes something (not scheduler-run, not without effect)."""
    mnemonics = set()

    def require(condition: bool, family: Family, problem: str) -> None:
        if not condition:
            raise TableError(f"isa table: {family.mnemonic}: {problem}")

    for family in families:
        require(family.mnemonic not in mnemonics, family, "defined twice")
        mnemonics.add(family.mnemonic)
        for category in family.mods:
            require(category in CATEGORIES, family, f"unknown modifier category {category}")
        for category in family.required:
            require(category in family.mods, family, f"requires category {category}, which it does not take")
        for allowed in family.types:
            for name in allowed:
                require(name in TYPES, family, f"unknown type {name}")
        computes = family.op_class not in SCHEDULER_CLASSES and family.op_class != NO_EFFECT_CLASS
        require((family.semantics is not None) == computes, family,
                "needs a semantics function" if computes else "is run by the scheduler or has no effect, "
                                                              "so it takes no semantics function")
        require(bool(family.doc), family, "needs a doc line")
        if not callable(family.sig):
            for token in family.sig.replace("<-", ",").split(","):
                token = token.strip().rstrip("?")
                slot = 0 if token in ("T", "W") else _SLOT_TOKENS.get(token)
                require(not token or token in TYPES or token in _OPERAND_WORDS or
                        (slot is not None and slot < len(family.types)), family, f"bad signature token {token}")


validate(FAMILIES)


def coverage() -> str:
    """Markdown list of every family: what it does, its types, modifiers and how many type combinations it
    is defined for (its expansion); generated from the table itself."""
    lines = ["| instruction | what it does | class | types | modifiers | forms |", "|---|---|---|---|---|---|"]
    for family in FAMILIES:
        types = " × ".join("/".join(allowed) for allowed in family.types) or "—"
        mods = ", ".join(" ".join(f".{m}" for m in sorted(CATEGORIES[c])) for c in family.mods) or "—"
        lines.append(f"| `{family.mnemonic}` | {family.doc} | {family.op_class} | {types} | {mods} | "
                     f"{len(expand(family))} |")
    return "\n".join(lines)
