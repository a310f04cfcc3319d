"""The instruction table: modifiers in any order, clear decode errors, validation at import, generated coverage."""
import pytest

from isa.table import (CATEGORIES, FAMILIES, DecodeError, Family, TableError, coverage, decode, expand, semantics,
                       validate)


def test_modifiers_decode_the_same_in_any_order():
    a = decode("ld", ("global", "nc", "v4", "f32"))
    b = decode("ld", ("f32", "v4", "global", "nc"))
    assert a.types == b.types == ("f32",) and sorted(a.mods) == sorted(b.mods)


def test_two_type_slots_keep_their_order():
    assert decode("cvt", ("rn", "f32", "s32")).types == ("f32", "s32")
    assert decode("cvt", ("rzi", "s32", "f32")).types == ("s32", "f32")


@pytest.mark.parametrize("mnemonic, modifiers, fragment", [
    ("frobnicate", ("u32",), "unsupported instruction 'frobnicate'"),
    ("add", ("u32", "wide"), "unknown modifier '.wide'"),
    ("add", (), "needs a type"),
    ("add", ("rn", "rz", "f32"), "two modifiers of one kind"),
    ("popc", ("f32",), "not defined for type .f32"),
])
def test_decode_errors_say_what_is_wrong(mnemonic, modifiers, fragment):
    with pytest.raises(DecodeError) as info:
        decode(mnemonic, modifiers)
    assert fragment in str(info.value)


def test_signature_resolves_widened_and_slot_types():
    assert decode("mul", ("wide", "u32")).signature.dest == "u64"
    signature = decode("mad", ("wide", "s32")).signature
    assert signature.dest == "s64" and signature.sources == ("s32", "s32", "s64")
    combined = decode("setp", ("lt", "and", "f32")).signature
    assert combined.sources == ("f32", "f32", "pred") and combined.optional == 0
    assert decode("setp", ("lt", "f32")).signature.sources == ("f32", "f32")


def test_validation_rejects_unknown_categories_types_and_missing_semantics():
    with pytest.raises(TableError, match="unknown modifier category"):
        validate((Family("x", "T <- T", (("u32",),), ("nosuchcategory",), semantics=lambda d: None, doc="x"),))
    with pytest.raises(TableError, match="unknown type"):
        validate((Family("x", "T <- T", (("u99",),), semantics=lambda d: None, doc="x"),))
    with pytest.raises(TableError, match="needs a semantics function"):
        validate((Family("x", "T <- T", (("u32",),), doc="x"),))
    with pytest.raises(TableError, match="bad signature token"):
        validate((Family("x", "T <- T5", (("u32",),), semantics=lambda d: None, doc="x"),))


def test_validation_survives_python_optimisation_and_rejects_a_missing_doc(tmp_path):
    import subprocess
    import sys
    script = ("from isa.table import Family, TableError, validate\n"
              "try:\n    validate((Family('x', 'T <- T', (('u32',),), semantics=lambda d: None),))\n"
              "except TableError as error:\n    print(error)\n")
    result = subprocess.run([sys.executable, "-O", "-c", script], capture_output=True, text=True, check=True)
    assert "needs a doc line" in result.stdout


def test_scheduler_run_families_take_no_semantics():
    with pytest.raises(TableError, match="takes no semantics"):
        validate((Family("x", "<- label", (), op_class="bra", semantics=lambda d: None, doc="x"),))


def test_every_family_that_computes_has_semantics_for_its_first_form():
    for family in FAMILIES:
        if family.semantics is None:
            continue
        for types in expand(family)[:1]:
            try:
                decoded = decode(family.mnemonic, tuple(types) + _first_modifiers(family))
            except DecodeError:
                continue
            assert callable(semantics(decoded)), family.mnemonic


def test_every_alu_family_builds_semantics_for_every_type():
    for family in FAMILIES:
        if family.op_class != "alu":
            continue
        for allowed in family.types[0]:
            types = (allowed,) + tuple(slot[0] for slot in family.types[1:len(family.types) - family.optional_slots])
            try:
                decoded = decode(family.mnemonic, tuple(types))
            except DecodeError:
                continue
            assert callable(semantics(decoded)), family.mnemonic


def test_coverage_lists_every_family_from_the_table():
    text = coverage()
    assert all(f"`{family.mnemonic}`" in text for family in FAMILIES)


def _first_modifiers(family):
    """One modifier of each category that names a mode the semantics need (shfl.idx, vote.all, ...)."""
    needed = ("shflmode", "votemode", "matchmode", "reduxop", "atomop", "redop")
    return tuple(sorted(CATEGORIES[category])[0] for category in family.mods if category in needed)
