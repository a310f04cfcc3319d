"""isa's table decodes exactly what its semantics compute: every combination decode accepts (each family's
required modifiers plus any one more, over all its types) evaluates on sample operands without an exception, and
what it refuses is a DecodeError naming the problem."""
import warnings

import numpy as np
import pytest

from isa.table import CATEGORIES, FAMILIES, DecodeError, decode, expand, semantics
from isa.types import TYPES

#: setp on half pairs writes p|q (the lowering insists on the pair), which the machine computes itself
PAIR_ONLY = {("setp", "f16x2"), ("setp", "bf16x2")}


def _sample(type_name: str, rng: np.random.Generator, lanes: int = 4) -> np.ndarray:
    t = TYPES[type_name]
    if t.kind == "pred":
        return rng.integers(0, 2, lanes).astype(bool)
    return rng.integers(0, 256, (lanes, t.dtype.itemsize), dtype=np.uint8).view(t.dtype).reshape(lanes)


def _modifier_sets(family):
    """The family's required modifiers (the first of each category), then that set with any one modifier of its
    categories added or swapped in."""
    base = {category: sorted(CATEGORIES[category])[0] for category in family.required}
    yield list(base.values())
    for category in family.mods:
        for modifier in sorted(CATEGORIES[category]):
            yield [value for name, value in base.items() if name != category] + [modifier]


def _decodable(family):
    for types in expand(family):
        for modifiers in _modifier_sets(family):
            try:
                yield decode(family.mnemonic, tuple(modifiers) + tuple(types))
            except DecodeError:
                continue


COMPUTING = [family for family in FAMILIES if family.op_class in ("alu", "mov")]


@pytest.mark.parametrize("family", COMPUTING, ids=lambda family: family.mnemonic)
def test_every_combination_decode_accepts_computes(family):
    rng = np.random.default_rng(15)
    failures = []
    tried = 0
    for decoded in _decodable(family):
        if (family.mnemonic, decoded.type) in PAIR_ONLY:
            continue
        signature = decoded.signature
        for count in range(len(signature.sources) - signature.optional, len(signature.sources) + 1):
            operands = [_sample(t, rng) for t in signature.sources[:count]]
            if family.carry_in:
                operands.append(rng.integers(0, 2, 4).astype(bool))
            tried += 1
            try:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    result = semantics(decoded)(*operands)
                    if family.carry_in or (family.carry_out and decoded.has("cc")):
                        value, carry = result
            except Exception as error:
                failures.append(f"{family.mnemonic}.{'.'.join(v for _, v in decoded.mods)}."
                                f"{'.'.join(decoded.types)} with {count} sources: {type(error).__name__}: {error}")
    assert tried and not failures, "\n".join(failures[:20])


@pytest.mark.parametrize("mnemonic, modifiers, words", [
    ("cvt", ("b64", "u64"), ".b64 is not one"),
    ("cvt", ("f16x2", "u32"), "cvt.f16x2.u32 is not defined"),
    ("cvt", ("s32", "f32"), "needs an integer rounding"),
    ("cvt", ("rni", "f32", "f64"), "changes type"),
    ("cvt", ("pack", "sat", "u16", "u32"), "cvt.pack converts .s32"),
    ("bmsk", ("b32",), "needs one of .clamp .wrap"),
    ("shf", ("clamp", "b32"), "needs one of .l .r"),
    ("setp", ("b32",), "'setp' needs one of .eq"),
    ("setp", ("lo", "f32"), "'.lo' compares integers"),
    ("vote", ("sync", "b32"), "'vote' needs one of .all .any .ballot .uni"),
    ("atom", ("global", "u32"), "'atom' needs one of .add"),
    ("add", ("cc", "u16"), "'.cc' needs a 32- or 64-bit integer type"),
    ("add", ("ftz", "f64"), "'.ftz' is not defined for .f64"),
    ("mul", ("wide", "u64"), "'.wide' needs a 16- or 32-bit type"),
    ("add", ("rna", "f32"), "'.rna' rounds only cvt's tf32 results"),
    ("min", ("xorsign", "f32"), "'.xorsign' needs '.abs'"),
    ("sqrt", ("approx", "f64"), "sqrt.approx is defined for .f32 only"),
])
def test_what_decode_refuses_it_names(mnemonic, modifiers, words):
    with pytest.raises(DecodeError) as caught:
        decode(mnemonic, modifiers)
    assert words in str(caught.value)
