"""SASS listings: the seed's Fermi LDSLK/STSUL listing, cuobjdump sm_90/sm_75 dumps, the SASS ALU table."""
import collections
import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import emulator
from emulator.errors import DeviceError, GpuemuError, PTXSyntaxError, UsageError
from emulator.machine.lanes import lanes_of
from emulator.runtime.module import Device, Module
from emulator.machine.observe import Observer
from emulator.frontend.sass import looks_like_sass
from isa import sass as T
from emulator.frontend.sass.mangle import parameter_types
from emulator.runtime.module import SassModule
from emulator.runtime.spec import check_launch, read_launches
from emulator.observers.stats import MemoryStats

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "examples" / "sass"
PIN = np.load(SEED / "inputs" / "pIn.npy")
U32 = np.uint32


class LockRounds(Observer):
    """Per warp, how many times it executed an LDSLK (instr.info['lock'] == 'acquire')."""

    def __init__(self):
        self.rounds = collections.Counter()

    def step(self, batch, instr, sel, warps, lanes):
        if instr.info.get("lock") == "acquire":
            for warp in np.unique(lanes_of(sel, batch.n) >> 5):
                self.rounds[int(warp)] += 1


def run_seed(listing: str, kernel: str, block: int = 64):
    module = emulator.load(SEED / listing)
    out = np.zeros(block, np.int32)
    pin = np.resize(PIN, block).astype(np.int32)
    rounds = LockRounds()
    module.kernel(kernel).launch(1, block, [np.zeros(1, np.int32), out, pin], block * 4, observer=rounds)
    return out, pin, dict(rounds.rounds)


# ---- the seed's listing 8-2 (SM 2.0) ------------------------------------------------------------------

def test_seed_listing_adds_the_first_input_to_every_element():
    out, pin, rounds = run_seed("return32.sm_20.sass", "Return32")
    assert np.array_equal(out, pin + pin[0])
    assert np.array_equal(out, np.load(SEED / "expected" / "Return32" / "arg1.npy"))
    assert rounds == {0: 1, 1: 1}


def test_all_threads_on_one_word_serialise_32_rounds_per_warp():
    out, pin, rounds = run_seed("return32one.sm_20.sass", "Return32One")
    expected = pin.copy()
    expected[0] += 64 * pin[0]
    assert np.array_equal(out, expected)
    assert np.array_equal(out, np.load(SEED / "expected" / "Return32One" / "arg1.npy"))
    assert rounds == {0: 32, 1: 32}


def test_one_warp_on_one_word_takes_32_rounds():
    out, pin, rounds = run_seed("return32one.sm_20.sass", "Return32One", block=32)
    assert out[0] == pin[0] + 32 * pin[0]
    assert rounds == {0: 32}


def test_lock_instructions_are_marked_for_observers():
    program = emulator.load(SEED / "return32.sm_20.sass").kernel("Return32").program
    locks = [(instr.opcode, instr.info["lock"]) for instr in program.instrs if "lock" in instr.info]
    assert locks == [("LDSLK", "acquire"), ("STSUL", "release")]
    assert all(instr.info["address"] == 0x58 for instr in program.instrs
               if instr.info.get("synthetic", "").startswith("lock_arbitrate"))


def test_seed_text_with_the_ocr_spacing_parses():
    text = (SEED / "return32.sm_20.sass").read_text()
    assert "c [0x0] [0x28]" in text and looks_like_sass(text)
    module = Module(text, "<text>")
    assert isinstance(module, SassModule)
    assert module.kernel_names == ["_Z8Return32PiS_PKi"]


def test_cli_runs_a_sass_file_like_a_ptx_file(tmp_path):
    out_dir = tmp_path / "out"
    command = [sys.executable, "-m", "emulator", "run", str(SEED / "return32.sm_20.sass"), "--kernel", "Return32",
               "--grid", "1", "--block", "64", "--shared", "256", "--arg", "zeros:i32:1", "--arg", "zeros:i32:64",
               "--arg", f"@{SEED / 'inputs' / 'pIn.npy'}", "--out", str(out_dir)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert np.array_equal(np.load(out_dir / "arg1.npy"), PIN + PIN[0])


# ---- cuobjdump listings of the examples against the H100 ---------------------------------------------

def _listing_launches(arch):
    cases = []
    for path in sorted((ROOT / "examples").glob("*/launches.json")):
        listing = path.parent / f"{path.parent.name}.{arch}.sass"
        if listing.exists() and path.parent.name != "printf":
            cases += [(listing, spec) for spec in read_launches(path) if spec.expected_dir.exists()]
    return cases


@pytest.mark.parametrize("listing,spec", _listing_launches("sm_90") + _listing_launches("sm_75"),
                         ids=lambda item: item.name if isinstance(item, Path) else item.name)
def test_cuobjdump_listing_matches_h100(listing, spec):
    module = Module(listing.read_text(), str(listing), Device())
    for value in spec.constants().values():
        module.set_symbol("c[0x3]", value)
    args = spec.arguments()
    error_file = spec.expected_dir / "error.txt"
    if error_file.exists():
        with pytest.raises(emulator.errors.DeviceError) as info:
            module.kernel(spec.kernel).launch(spec.grid, spec.block, args, spec.shared)
        assert info.value.cuda_error == (spec.sanitizer_error or error_file.read_text().strip())
        return
    module.kernel(spec.kernel).launch(spec.grid, spec.block, args, spec.shared)
    assert check_launch(spec, args, "") == []


def test_a_listing_calling_vprintf_without_its_cubins_relocations_names_the_address_it_calls():
    listing = ROOT / "examples" / "printf" / "printf.sm_90.sass"
    kernel = Module(listing.read_text(), str(listing)).kernel()
    with pytest.raises(DeviceError, match=r"calls address 0x0, which is no function gpuemu provides.*printf\.sm_90"
                                          r"\.sass:\d+"):
        kernel.launch(1, 4, [np.float32(1.5)])


# ---- errors ---------------------------------------------------------------------------------------------

LISTING = """
	code for sm_90
		Function : _Z1kPi
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   {line}
        /*0020*/                   EXIT ;
"""


def test_unknown_opcode_is_one_line_naming_it_and_its_line():
    with pytest.raises(PTXSyntaxError) as info:
        Module(LISTING.format(line="FROB.X R0, R1 ;"), "k.sass").kernel()
    assert str(info.value) == "k.sass:5:36: error: unknown SASS opcode 'FROB.X'"


def test_cli_reports_an_unknown_opcode_in_one_line(tmp_path):
    path = tmp_path / "k.sass"
    path.write_text(LISTING.format(line="FROB R0, R1 ;"))
    result = subprocess.run([sys.executable, "-m", "emulator", "run", str(path), "--grid", "1", "--block", "32",
                             "--arg", "zeros:i32:32"], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"gpuemu: error: {path}:5:36: error: unknown SASS opcode 'FROB'"]


def test_bad_syntax_gives_file_line_column():
    with pytest.raises(PTXSyntaxError, match=r"^k\.sass:5:\d+: error: unexpected"):
        Module(LISTING.format(line="IADD3 R0, , R1 ;"), "k.sass")


def test_an_address_past_what_code_can_span_is_an_error_at_its_line():
    listing = LISTING.format(line="NOP ;").replace("/*0010*/", "/*0d7FEFFFFFFFFFFFFF*/")
    with pytest.raises(PTXSyntaxError, match=r"^k\.sass:5:9: error: address /\*0d7FEFFFFFFFFFFFFF\*/ is past"):
        Module(listing, "k.sass")


def test_branch_into_the_middle_of_nowhere_is_refused():
    with pytest.raises(PTXSyntaxError, match="branch target 0x18 is not the address of an instruction"):
        Module(LISTING.format(line="BRA 0x18 ;"), "k.sass").kernel()


def test_constant_banks_are_set_by_number_and_symbols_are_refused():
    module = Module(LISTING.format(line="NOP ;"), "k.sass")
    module.set_symbol("c[0x3]", np.arange(4, dtype=np.float32))
    assert module.banks[3][:16].view(np.float32).tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(UsageError, match="names no symbols"):
        module.set_symbol("coef", np.zeros(1))


# ---- a listing written here: uniform datapath, LDG/STG, loops, 64-bit compare -----------------------------

SUM_LISTING = """
	code for sm_90
		Function : _Z3sumPKjPyi
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   S2R R0, SR_TID.X ;
        /*0020*/                   ULDC.64 UR4, c[0x0][0x208] ;
        /*0030*/                   LDC.64 R2, c[0x0][0x210] ;
        /*0040*/                   IMAD.MOV.U32 R6, RZ, RZ, RZ ;
        /*0050*/                   IMAD.MOV.U32 R7, RZ, RZ, RZ ;
        /*0060*/                   MOV R8, RZ ;
        /*0070*/                   IMAD.WIDE.U32 R4, R0, 0x4, R2 ;
        /*0080*/                   LDG.E R9, desc[UR4][R4.64] ;
        /*0090*/                   IADD3 R6, P0, R6, R9, RZ ;
        /*00a0*/                   IADD3.X R7, RZ, R7, RZ, P0, !PT ;
        /*00b0*/                   VIADD R8, R8, 0x1 ;
        /*00c0*/                   ISETP.GE.AND P1, PT, R8, c[0x0][0x220], PT ;
        /*00d0*/              @!P1 BRA 0x90 ;
        /*00e0*/                   LDC.64 R2, c[0x0][0x218] ;
        /*00f0*/                   IMAD.WIDE.U32 R2, R0, 0x8, R2 ;
        /*0100*/                   STG.E.64 desc[UR4][R2.64], R6 ;
        /*0110*/                   EXIT ;
        /*0120*/                   BRA 0x120;
"""


def test_hand_written_sm90_listing_accumulates_64_bit_sums():
    module = Module(SUM_LISTING, "sum.sass")
    assert [p.type for p in module.kernel("sum").params] == ["u64", "u64", "s32"]
    values = np.array([0xFFFFFFFF, 7, 0x80000000, 0], dtype=U32).repeat(8)
    out = np.zeros(32, np.uint64)
    module.kernel("sum").launch(1, 32, [values, out, np.int32(5)])
    assert out.tolist() == [5 * int(v) for v in values]


# ---- parameters from mangled names ---------------------------------------------------------------------

def test_parameter_types_come_from_the_mangled_name():
    assert parameter_types("_Z6vecaddPKfS0_Pfi") == [("ptr", 0)] * 3 + [("s32", 4)]
    assert parameter_types("_Z7collatzPjy") == [("ptr", 0), ("u64", 8)]
    assert parameter_types("_Z13vectorSwizzlePK4int2PK6float4PS_PS2_f") == [("ptr", 0)] * 4 + [("f32", 4)]
    assert parameter_types("_Z3foov") == []
    assert parameter_types("kernel") is None
    assert parameter_types("_Z3bar4int2") is None
    # from the fuzzer (seed 3262584139): a name that ends inside a pointer type recursed for ever
    assert parameter_types("_Z13setRowReadRowP") is None
    assert parameter_types("_Z3fooPK") is None


def test_fermi_pointers_are_32_bit_words_at_0x20():
    program = emulator.load(SEED / "return32.sm_20.sass").kernel("Return32").program
    assert [bank[2:] for bank in program.bank_params] == [(0x20, 4), (0x24, 4), (0x28, 4)]
    assert program.arch.stack == (1, 0x100)


# ---- the ALU table, against hand-derived results -----------------------------------------------------------

def alu(mnemonic, *sources, mods=(), neg=None):
    op = T.lookup(mnemonic)
    values = [None if s is None else (np.asarray(s, dtype=bool) if isinstance(s, bool) else np.asarray(s))
              for s in sources]
    return op.semantics(*values, mods=tuple(mods), neg=tuple(neg or (False,) * len(sources)))


def test_iadd3_negated_operand_carries_like_two_s_complement_subtraction():
    # 5 - 3: ~3 + 1 + 5 = 2 with carry out (no borrow); 0 - 0 also carries; 3 - 5 borrows
    low, carry, _ = alu("IADD3", U32(5), U32(3), U32(0), None, None, neg=(False, True, False))
    assert (int(low), bool(carry)) == (2, True)
    low, carry, _ = alu("IADD3", U32(0), U32(0), U32(0), None, None, neg=(False, True, False))
    assert (int(low), bool(carry)) == (0, True)
    low, carry, _ = alu("IADD3", U32(3), U32(5), U32(0), None, None, neg=(False, True, False))
    assert (int(low), bool(carry)) == (0xFFFFFFFE, False)
    low, carry1, carry2 = alu("IADD3", U32(0xFFFFFFFF), U32(0xFFFFFFFF), U32(0xFFFFFFFF), None, None)
    assert (int(low), bool(carry1), bool(carry2)) == (0xFFFFFFFD, False, True)


def test_imad_wide_hi_and_x():
    wide, _ = alu("IMAD", U32(0xFFFFFFFF), U32(4), np.uint64(0x100), None, mods=("WIDE",))
    assert int(wide) == (-4 + 0x100) & (2 ** 64 - 1)
    wide, _ = alu("IMAD", U32(0xFFFFFFFF), U32(4), np.uint64(0x100), None, mods=("WIDE", "U32"))
    assert int(wide) == 0xFFFFFFFF * 4 + 0x100
    # IMAD.HI.U32 d, a, b, {R6=0, R7=a}: umulhi(a, b) + a
    high, _ = alu("IMAD", U32(0x80000000), U32(6), np.uint64(0x80000000 << 32), None, mods=("HI", "U32"))
    assert int(high) == 3 + 0x80000000
    low, _ = alu("IMAD", U32(0), U32(0), U32(0xFFFFFFFF), True, mods=("X",), neg=(False, False, False))
    assert int(low) == 0


def test_lea_hi_x_sx32_adds_the_sign_word():
    # {R3:R2} = base + sext(i): low word from IADD3, high word = UR + sign word + carry
    low, carry = alu("LEA", U32(0xFFFFFFFE), U32(0x1000), U32(2), None)
    assert (int(low), bool(carry)) == (0xFF8, True)
    high, _ = alu("LEA", U32(0xFFFFFFFE), U32(7), U32(1), False, mods=("HI", "X", "SX32"))
    assert int(high) == 6
    high, _ = alu("LEA", U32(5), U32(7), U32(0), U32(1), None, mods=("HI",))
    assert int(high) == 7
    high, _ = alu("LEA", U32(0x80000001), U32(1), U32(0), U32(1), None, mods=("HI",))
    assert int(high) == 2


def test_shf_funnel_shifts():
    assert int(alu("SHF", U32(0x12345678), U32(4), U32(0), mods=("L", "U32"))[0]) == 0x23456780
    assert int(alu("SHF", U32(0x12345678), U32(4), U32(0xABCD), mods=("L", "U64", "HI"))[0]) == 0xABCD1
    assert int(alu("SHF", U32(0), U32(0x1F), U32(0x80000000), mods=("R", "S32", "HI"))[0]) == 0xFFFFFFFF
    assert int(alu("SHF", U32(0x10), U32(1), U32(3), mods=("R", "U64"))[0]) == 0x80000008
    assert int(alu("SHF", U32(0), U32(40), U32(0x80000000), mods=("R", "U32", "HI"))[0]) == 0


def test_isetp_ex_finishes_a_64_bit_comparison():
    # (hi, lo) = (1, 0) >= (0, 5) unsigned: low-word GE is false, high word decides
    low_ge, _ = alu("ISETP", U32(0), U32(5), True, None, mods=("GE", "U32", "AND"))
    high, _ = alu("ISETP", U32(1), U32(0), True, bool(low_ge), mods=("GE", "U32", "AND", "EX"))
    assert (bool(low_ge), bool(high)) == (False, True)
    ne_low, _ = alu("ISETP", U32(1), U32(1), True, None, mods=("NE", "U32", "AND"))
    ne, _ = alu("ISETP", U32(2), U32(2), True, bool(ne_low), mods=("NE", "AND", "EX"))
    assert not bool(ne)
    lt, not_lt = alu("ISETP", U32(0xFFFFFFFF), U32(0), True, None, mods=("LT", "AND"))
    assert (bool(lt), bool(not_lt)) == (True, False)


def test_lop3_truth_table_and_predicate():
    pred, value = alu("LOP3", U32(0xF0F0), U32(0xFF00), U32(0), U32(0xC0), None)
    assert (int(value), bool(pred)) == (0xF000, True)
    pred, value = alu("LOP3", U32(1), U32(1), U32(0), U32(0x3C), None)
    assert (int(value), bool(pred)) == (0, False)


def test_half_immediates_pack_high_first():
    module = Module(LISTING.format(line="HFMA2.MMA R3, -RZ, RZ, 1.875, 2.98023223876953125e-07 ;"), "k.sass")
    plan = next(i for i in module.kernel().program.instrs if i.opcode.startswith("HFMA2")).info["sass"]
    assert plan.sources[2].bits == 0x3F800005
    (result,) = alu("HFMA2", U32(0x80008000), U32(0), U32(0x3F800005), mods=("MMA",))
    assert int(result) == 0x3F800005


def test_conversions_read_destination_then_source_types():
    assert int(alu("I2F", U32(0xFFFFFFFF), mods=("U32", "RP"))[0]) == 0x4F800000
    assert int(alu("I2F", U32(0xFFFFFFFF), mods=())[0]) == 0xBF800000
    assert int(alu("F2I", U32(0x3FC00000), mods=("FTZ", "U32", "TRUNC", "NTZ"))[0]) == 1
    assert int(alu("F2I", U32(0xC0200000), mods=("FLOOR",))[0]) == 0xFFFFFFFD
    assert int(alu("F2F", U32(0x3F800000), mods=("F64", "F32"))[0]) == 0x3FF0000000000000


def test_bit_counts_and_permutes():
    assert int(alu("FLO", U32(0x00010000), mods=("U32",))[0]) == 16
    assert int(alu("FLO", U32(0x00010000), mods=("U32", "SH"))[0]) == 15
    assert int(alu("FLO", U32(0), mods=("U32",))[0]) == 0xFFFFFFFF
    assert int(alu("POPC", U32(0xF0F0))[0]) == 8
    assert int(alu("PRMT", U32(0x44332211), U32(0x0123), U32(0x88776655))[0]) == 0x11223344
    assert int(alu("IMNMX", U32(0xFFFFFFFF), U32(1), True)[0]) == 0xFFFFFFFF
    assert int(alu("IMNMX", U32(0xFFFFFFFF), U32(1), True, mods=("U32",))[0]) == 1
    assert int(alu("VABSDIFF", U32(3), U32(10), U32(100), mods=("U32",))[0]) == 107


def test_uniform_mnemonics_share_the_vector_semantics():
    assert T.lookup("UIADD3") is T.lookup("IADD3") and T.lookup("ULEA") is T.lookup("LEA")
    assert T.lookup("UFROB") is None


# ---- barrier counts, predicate files, half conversions, shared CAS loops ------------------------------------

MISC_LISTING = """
	code for sm_90
		Function : _Z4miscPKfPj
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   S2R R0, SR_TID.X ;
        /*0020*/                   ULDC.64 UR4, c[0x0][0x208] ;
        /*0030*/                   LDC.64 R2, c[0x0][0x210] ;
        /*0040*/                   IMAD.WIDE.U32 R2, R0, 0x4, R2 ;
        /*0050*/                   LDG.E R4, desc[UR4][R2.64] ;
        /*0060*/                   LOP3.LUT R5, R0, 0x1, RZ, 0xc0, !PT ;
        /*0070*/                   ISETP.NE.U32.AND P0, PT, R5, RZ, PT ;
        /*0080*/                   BAR.RED.POPC.DEFER_BLOCKING 0x0, P0 ;
        /*0090*/                   B2R.RESULT R6 ;
        /*00a0*/                   FRND.FLOOR R7, R4 ;
        /*00b0*/                   F2FP.F16.F32.PACK_AB R8, RZ, R4 ;
        /*00c0*/                   HADD2.F32 R9, -RZ, R8.H0_H0 ;
        /*00d0*/                   SGXT R10, R0, 0x3 ;
        /*00e0*/                   ISETP.GT.U32.AND P1, PT, R0, 0x3, PT ;
        /*00f0*/                   P2R R11, PR, RZ, 0x3 ;
        /*0100*/                   R2P PR, R11, 0x2 ;
        /*0110*/                   SEL R12, RZ, 0x1, !P1 ;
        /*0120*/                   S2UR UR6, SR_CgaCtaId ;
        /*0130*/                   UMOV UR7, 0x400 ;
        /*0140*/                   ULEA UR6, UR6, UR7, 0x18 ;
        /*0150*/                   LDS R13, [UR6] ;
        /*0160*/                   FADD R14, R13, R4 ;
        /*0170*/                   ATOMS.CAST.SPIN R16, [UR6], R13, R14 ;
        /*0178*/                   ISETP.EQ.U32.AND P2, PT, R16, 0x1, PT ;
        /*0180*/              @!P2 BRA 0x150 ;
        /*0190*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*01a0*/                   LDS R15, [UR6] ;
        /*01b0*/                   LDC.64 R2, c[0x0][0x218] ;
        /*01c0*/                   IMAD R5, R0, 0x8, RZ ;
        /*01d0*/                   IMAD.WIDE.U32 R2, R5, 0x4, R2 ;
        /*01e0*/                   STG.E desc[UR4][R2.64], R6 ;
        /*01f0*/                   STG.E desc[UR4][R2.64+0x4], R7 ;
        /*0200*/                   STG.E desc[UR4][R2.64+0x8], R8 ;
        /*0210*/                   STG.E desc[UR4][R2.64+0xc], R9 ;
        /*0220*/                   STG.E desc[UR4][R2.64+0x10], R10 ;
        /*0230*/                   STG.E desc[UR4][R2.64+0x14], R11 ;
        /*0240*/                   STG.E desc[UR4][R2.64+0x18], R12 ;
        /*0250*/                   STG.E desc[UR4][R2.64+0x1c], R15 ;
        /*0260*/                   EXIT ;
        /*0270*/                   BRA 0x270;
"""


def test_barrier_count_predicate_file_half_conversions_and_shared_cas_loop():
    n = 40
    x = (np.arange(n, dtype=np.float32) - 7.3) * np.float32(0.75)
    out = np.zeros((n, 8), np.uint32)
    Module(MISC_LISTING, "misc.sass").kernel().launch(1, n, [x, out])
    tid = np.arange(n)
    assert (out[:, 0] == n // 2).all()
    assert np.array_equal(out[:, 1].view(np.float32), np.floor(x))
    assert np.array_equal(out[:, 2], x.astype(np.float16).view(np.uint16))
    assert np.array_equal(out[:, 3].view(np.float32), x.astype(np.float16).astype(np.float32))
    assert np.array_equal(out[:, 4].view(np.int32), np.where(tid & 4, (tid & 7) - 8, tid & 7))
    assert np.array_equal(out[:, 5], (tid & 1) | ((tid > 3) << 1))
    assert np.array_equal(out[:, 6], (tid > 3).astype(np.uint32))
    total = np.float32(0)
    for value in x:
        total = np.float32(total + value)
    assert out[0, 7].view(np.float32) == total


# ---- float and double division through cuobjdump's slow-path subroutines ------------------------------------

DIVIDE_STORES = """        /*0360*/                   LDC.64 R2, c[0x0][0x218] ;
        /*0370*/                   ULDC.64 UR4, c[0x0][0x208] ;
        /*0380*/                   IMAD.WIDE R2, R15, 0x4, R2 ;
        /*0390*/                   STG.E desc[UR4][R2.64], R10 ;
        /*03a0*/                   LDC.64 R6, c[0x0][0x220] ;
        /*03b0*/                   IMAD.WIDE R6, R15, 0x8, R6 ;
        /*03c0*/                   STG.E.64 desc[UR4][R6.64], R4 ;
        /*03d0*/                   EXIT ;"""


def divide_listing() -> str:
    """printf.sm_90.sass with its vprintf call (0x360-0x57f) replaced by stores of f = scale*(gid+1)/3.0f and
    e = 1.0/(gid+1); the division subroutines at 0x580 (double) and 0x800 (float) are kept as dumped."""
    lines = []
    for line in (ROOT / "examples" / "printf" / "printf.sm_90.sass").read_text().splitlines():
        stripped = line.strip()
        address = int(stripped[2:6], 16) if stripped.startswith("/*") and stripped[6:8] == "*/" else None
        if address is not None and 0x360 <= address < 0x580:
            if address == 0x360:
                lines.append(DIVIDE_STORES)
            continue
        lines.append(line.replace("_Z11printValuesf", "_Z7divtestfPfPd"))
    return "\n".join(lines)


@pytest.mark.parametrize("scale", [1.5, -7.25, 1e-38, 1e-44, 3e38, 0.0, np.inf, np.nan])
def test_division_slow_paths_are_correctly_rounded(scale):
    module = Module(divide_listing(), "divide.sass")
    f, e = np.zeros(256, np.float32), np.zeros(256, np.float64)
    calls = collections.Counter()

    class Calls(Observer):
        def step(self, batch, instr, sel, warps, lanes):
            calls[instr.info.get("address")] += lanes

    module.kernel().launch(2, 128, [np.float32(scale), f, e], observer=Calls())
    count = np.arange(1, 257)
    with np.errstate(all="ignore"):
        want = (np.float32(scale) * count.astype(np.float32)) / np.float32(3)
    assert np.array_equal(f, want, equal_nan=True)
    assert np.array_equal(e, 1.0 / count)
    if scale in (1e-44, 3e38, np.inf):
        assert calls[0x800] > 0


# ---- Fermi and Maxwell listings: SSY with .S, PBK/BRK, SYNC, ISCADD, condition-code carries ------------------

FERMI_LISTING = """
	code for sm_20
		Function : _Z6legacyPKfPfPii
	/*0000*/     /*0x00005de428004404*/ 	MOV R1, c [0x1] [0x100];
	/*0008*/     /*0x94001c042c000000*/ 	S2R R0, SR_CTAid_X;
	/*0010*/     /*0x84009c042c000000*/ 	S2R R2, SR_Tid_X;
	/*0018*/     /*0x20001ca320044000*/ 	IMAD R0, R0, c [0x0] [0x8], R2;
	/*0020*/     /*0x2c01dc23188e4000*/ 	ISETP.GE.AND P0, PT, R0, c [0x0] [0x2c], PT;
	/*0028*/     /*0x00001de780000000*/ 	@P0 EXIT;
	/*0030*/     /*0x80009c034800c000*/ 	ISCADD R2, R0, c [0x0] [0x20], 0x2;
	/*0038*/     /*0x0020dc8580000000*/ 	LD R3, [R2];
	/*0040*/     /*0x04011c0368000000*/ 	LOP.AND R4, R0, 0x1;
	/*0048*/     /*0xfc43dc23190e0000*/ 	ISETP.NE.AND P1, PT, R4, RZ, PT;
	/*0050*/     /*0x00000007600001c0*/ 	SSY 0x70;
	/*0058*/     /*0x200001e740000000*/ 	@P1 BRA 0x68;
	/*0060*/     /*0x0030dc1050000000*/ 	FMUL.S R3, R3, 2;
	/*0068*/     /*0x0030dc1050000000*/ 	FADD.S R3, R3, -1;
	/*0070*/     /*0x0c315c0414000000*/ 	F2I.S32.F32.TRUNC R5, R3;
	/*0078*/     /*0x14319c0418000000*/ 	I2F.F32.S32 R6, R5;
	/*0080*/     /*0x80021c034800c000*/ 	ISCADD R8, R0, c [0x0] [0x24], 0x2;
	/*0088*/     /*0x00819c8590000000*/ 	ST [R8], R6;
	/*0090*/     /*0xa0025de428004000*/ 	MOV R9, c [0x0] [0x28];
	/*0098*/     /*0x0091dc0558000000*/ 	RED.ADD [R9], R5;
	/*00a0*/     /*0x1092dc0554000000*/ 	ATOM.ADD R10, [R9+0x4], R4;
	/*00a8*/     /*0x00001de780000000*/ 	EXIT;
		..........
"""


def test_fermi_listing_with_ssy_dot_s_iscadd_ld_st_red_atom():
    n = 100
    a = (np.arange(n, dtype=np.float32) - 40.5) * np.float32(1.7)
    out, counter = np.zeros(n, np.float32), np.zeros(2, np.int32)
    Module(FERMI_LISTING, "fermi.sass").kernel().launch(2, 64, [a, out, counter, np.int32(n)])
    gid = np.arange(n)
    y = np.where(gid % 2 == 0, a * np.float32(2), a - np.float32(1)).astype(np.float32)
    truncated = np.trunc(y).astype(np.int32)
    assert np.array_equal(out, truncated.astype(np.float32))
    assert counter.tolist() == [truncated.sum(), n // 2]


def test_tesla_mnemonics_read_and_write_their_spaces():
    text = (FERMI_LISTING.replace("LD R3, [R2]", "GLD.U32 R3, global14 [R2]")
            .replace("ST [R8], R6", "GST.U32 global14 [R8], R6"))
    n = 64
    a = np.arange(n, dtype=np.float32)
    out, counter = np.zeros(n, np.float32), np.zeros(2, np.int32)
    Module(text, "tesla.sass").kernel().launch(1, 64, [a, out, counter, np.int32(n)])
    gid = np.arange(n)
    assert np.array_equal(out, np.trunc(np.where(gid % 2 == 0, a * 2, a - 1)))


MAXWELL_LISTING = """
	code for sm_50
		Function : _Z7maxwellPi
        /*0008*/                   MOV R1, c[0x0][0x20] ;                 /* 0x4c98078000870001 */
        /*0010*/                   S2R R0, SR_TID.X ;                     /* 0xf0c8000002170000 */
        /*0018*/                   MOV R2, RZ ;                           /* 0x5c9807800ff70002 */
                                                                          /* 0x001fc400fe2007f6 */
        /*0028*/                   MOV R3, RZ ;
        /*0030*/                   PBK 0x70 ;
        /*0038*/                   ISETP.GE.AND P0, PT, R3, R0, PT ;
                                                                          /* 0x001fc400fe2007f6 */
        /*0048*/               @P0 BRK ;
        /*0050*/                   IADD R2, R2, R3 ;
        /*0058*/                   IADD32I R3, R3, 0x1 ;
                                                                          /* 0x001fc400fe2007f6 */
        /*0068*/                   BRA 0x38 ;
        /*0070*/                   LOP.AND R4, R0, 0x1 ;
        /*0078*/                   ISETP.NE.AND P1, PT, R4, RZ, PT ;
                                                                          /* 0x001fc400fe2007f6 */
        /*0088*/                   SSY 0xc8 ;
        /*0090*/               @P1 BRA 0xb0 ;
        /*0098*/                   IADD R2, R2, 0x3e8 ;
                                                                          /* 0x001fc400fe2007f6 */
        /*00a8*/                   SYNC ;
        /*00b0*/                   IADD R2, R2, -0x7d0 ;
        /*00b8*/                   SYNC ;
                                                                          /* 0x001fc400fe2007f6 */
        /*00c8*/                   ISCADD R5.CC, R0, c[0x0][0x140], 0x2 ;
        /*00d0*/                   IMAD.HI.X R6, R0, 0x4, c[0x0][0x144] ;
        /*00d8*/                   STG.E [R5], R2 ;
                                                                          /* 0x001fc400fe2007f6 */
        /*00e8*/                   EXIT ;
"""


def test_maxwell_listing_with_pbk_brk_ssy_sync_and_carry_flag():
    out = np.zeros(64, np.int32)
    Module(MAXWELL_LISTING, "maxwell.sass").kernel().launch(1, 64, [out])
    tid = np.arange(64)
    assert np.array_equal(out, tid * (tid - 1) // 2 + np.where(tid % 2 == 0, 1000, -2000))


def test_condition_code_carries_between_iadd_cc_and_iadd_x():
    listing = MAXWELL_LISTING.replace("ISCADD R5.CC, R0, c[0x0][0x140], 0x2", "IADD R5.CC, R0, c[0x0][0x140]")
    program = Module(listing, "k.sass").kernel().program
    plans = [i.info["sass"] for i in program.instrs if i.opcode in ("IADD", "IMAD.HI.X") and "sass" in i.info]
    carry_out = [p.dests[1] for p in plans if p.op.mnemonic == "IADD" and p.dests[1] is not None]
    carry_in = [p.sources[3] for p in plans if p.op.mnemonic == "IMAD"]
    assert carry_out and carry_in and carry_out[0].reg is carry_in[0].reg
    total, carry = alu("IADD", U32(0xFFFFFFF0), U32(0x20), None)
    assert (int(total), bool(carry)) == (0x10, True)
    high, _ = alu("IMAD", U32(0xFFFFFFFF), U32(4), U32(7), True, mods=("HI", "X"))
    assert int(high) == 0xFFFFFFFF + 7 + 1 - 2 ** 32


# ---- cuobjdump listings of kernels that exist nowhere else (examples/sass/kernels.cu) -------------------------
# Expected values are numpy/Fraction evaluations of the CUDA source, IEEE round-to-nearest where C says so.

KERNEL_ARCHS = ("sm_90", "sm_75")
M64 = 2 ** 64


def kernels(arch) -> Module:
    path = SEED / f"kernels.{arch}.sass"
    return Module(path.read_text(), str(path), Device())


def as_i32(values):
    return np.array(values, dtype=np.int64).astype(np.uint64).astype(U32).view(np.int32)


def s64(value: int) -> int:
    value %= M64
    return value - M64 if value >= 2 ** 63 else value


def round_f32(exact: Fraction) -> np.float32:
    """The float32 nearest to an exact value (ties to even), without double rounding."""
    guess = np.float32(float(exact))
    candidates = [np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf))]
    return min(candidates, key=lambda c: (abs(Fraction(float(c)) - exact), int(np.array(c).view(U32)) & 1))


def c_division(x: int, y: int):
    quotient = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
    return quotient, x - quotient * y


@pytest.mark.parametrize("arch", KERNEL_ARCHS)
def test_saxpy_grid_stride_loop_fuses_multiply_add(arch):
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((2, 1000)).astype(np.float32)
    before = y.copy()
    kernels(arch).kernel("saxpy").launch(3, 128, [np.float32(1.75), x, y, np.int32(1000)])
    assert np.array_equal(y, (1.75 * x.astype(np.float64) + before).astype(np.float32))


@pytest.mark.parametrize("arch", KERNEL_ARCHS)
def test_shuffle_reduction_with_shared_and_global_atomics(arch):
    values = np.random.default_rng(2).integers(-1000, 1000, 1000).astype(np.int32)
    out = np.zeros(1, np.int32)
    kernels(arch).kernel("reduceShfl").launch(4, 256, [values, out, np.int32(1000)])
    assert out[0] == values.sum()


@pytest.mark.parametrize("arch", KERNEL_ARCHS)
def test_padded_tile_transpose_of_a_ragged_matrix(arch):
    width, height = 70, 45
    source = np.random.default_rng(3).standard_normal((height, width)).astype(np.float32)
    target = np.zeros((width, height), np.float32)
    kernels(arch).kernel("transposeCoalesced").launch((3, 2), (32, 8), [target, source, np.int32(width),
                                                                        np.int32(height)])
    assert np.array_equal(target, source.T)


@pytest.mark.parametrize("arch", KERNEL_ARCHS)
def test_double_buffered_block_scan(arch):
    values = np.random.default_rng(4).integers(-50, 50, 512).astype(np.int32)
    out = np.zeros(512, np.int32)
    kernels(arch).kernel("scanBlock").launch(2, 256, [values, out])
    assert np.array_equal(out, np.concatenate([np.cumsum(values[:256]), np.cumsum(values[256:])]))


@pytest.mark.parametrize("arch", KERNEL_ARCHS)
def test_histogram_of_shorts_with_shared_then_global_atomics(arch):
    samples = np.random.default_rng(5).integers(0, 65536, 5000).astype(np.uint16)
    bins = np.zeros(64, np.uint32)
    kernels(arch).kernel("histogram64").launch(5, 128, [samples, bins, np.int32(5000)])
    assert np.array_equal(bins, np.bincount(samples.astype(np.uint32) * 7 % 64, minlength=64))


@pytest.mark.parametrize("arch", KERNEL_ARCHS)
def test_stencil_with_shared_halo(arch):
    n = 300
    values = np.random.default_rng(6).integers(-100, 100, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    kernels(arch).kernel("stencil1d").launch(3, 128, [values, out, np.int32(n)])
    padded = np.concatenate([np.zeros(3, np.int64), values, np.zeros(3, np.int64)])
    assert np.array_equal(out, sum((k + 4) * padded[3 + k:3 + k + n] for k in range(-3, 4)))


@pytest.mark.parametrize("arch", KERNEL_ARCHS)
def test_integer_division_remainders_and_bit_intrinsics(arch):
    rng = np.random.default_rng(7)
    n = 300
    a = rng.integers(-2 ** 31, 2 ** 31, n)
    b = rng.integers(-2 ** 31, 2 ** 31, n)
    a[:20], b[:20] = rng.integers(-100, 100, 20), rng.integers(-9, 9, 20)
    b[5], a[6], b[6] = 0, -2 ** 31, 7
    out = np.zeros((n, 12), np.int32)
    kernels(arch).kernel("intMath").launch(3, 128, [a.astype(np.int32), b.astype(np.int32), out, np.int32(n)])
    want = []
    for x, y in zip(map(int, a), map(int, b)):
        ux, uy = x % 2 ** 32, (y % 2 ** 32) | 1
        quotient, remainder = c_division(x, y) if y else (-1, -1)
        want.append([quotient, remainder, ux // uy, ux % uy, min(x, y) + 3 * max(x, y), abs(x) ^ (x >> 3),
                     (ux >> (y & 31)) + (x << (y & 15)), bin(ux).count("1") + 100 * (32 - ux.bit_length()),
                     int(f"{ux:032b}"[::-1], 2), (ux & -ux).bit_length(), (x * y) >> 32, (ux * uy) >> 32])
    assert np.array_equal(out, as_i32(want))


@pytest.mark.parametrize("arch", KERNEL_ARCHS)
def test_ieee_float_division_sqrt_rounding_and_conversions(arch):
    rng = np.random.default_rng(8)
    n = 200
    x, y = (rng.standard_normal((2, n)) * 10).astype(np.float32)
    x[:4], y[:4] = [2.5, -2.5, 0.5, 1e-30], [3.5, -0.5, 1e-38, 2.5]
    out, ints = np.zeros((n, 8), np.float32), np.zeros((n, 2), np.int32)
    kernels(arch).kernel("floatMath").launch(2, 128, [x, y, out, ints, np.int32(n)])
    fused = np.array([round_f32(Fraction(float(p)) * Fraction(float(q)) - Fraction(float(p))) for p, q in zip(x, y)])
    positive = np.where(x > 0, x, np.float32(0))
    want = np.stack([x / y, np.sqrt(np.abs(x)), np.minimum(x, y) - np.maximum(x, y), fused,
                     np.floor(x) + np.ceil(y) * np.float32(0.5), np.trunc(x) - np.rint(y), np.copysign(x * x, y),
                     np.trunc(y).astype(np.int32).astype(np.float32) + np.trunc(positive).astype(np.float32)], axis=1)
    assert np.array_equal(out.view(U32), want.astype(np.float32).view(U32))
    assert np.array_equal(ints, np.stack([np.rint(x * np.float32(3)), np.trunc(x * np.float32(1000))], axis=1))


@pytest.mark.parametrize("arch", KERNEL_ARCHS)
def test_double_reciprocal_square_root_and_fma(arch):
    values = np.random.default_rng(9).standard_normal(100) * 100
    values[:2] = [3.0, -1e-3]
    out = np.zeros((100, 3))
    kernels(arch).kernel("doubleMath").launch(1, 128, [values, out, np.int32(100)])
    assert np.array_equal(out[:, 0], [float(Fraction(v) ** 2 + Fraction(1.0 / v)) for v in values])
    assert np.array_equal(out[:, 1], np.sqrt(np.abs(values)))
    assert np.array_equal(out[:, 2], np.array([float(3 * Fraction(v) - Fraction(1.5)) for v in values])
                          + values.astype(np.float32))


@pytest.mark.parametrize("arch", KERNEL_ARCHS)
def test_ballots_votes_and_barrier_reductions(arch):
    values = np.random.default_rng(10).integers(-20, 20, 128).astype(np.int32)
    values[70], values[3] = 150, 7
    out = np.zeros((128, 4), np.uint32)
    kernels(arch).kernel("votes").launch(2, 64, [values, out])
    warps, blocks = values.reshape(4, 32), values.reshape(2, 64)
    ballots = np.repeat([sum(1 << lane for lane in range(32) if warp[lane] > 0) for warp in warps], 32)
    counts = np.repeat((blocks > 0).sum(axis=1), 64)
    any_all = np.repeat((warps > 100).any(axis=1) * 2 + (warps > -1000).all(axis=1), 32)
    or_and = np.repeat((blocks == 7).any(axis=1) + 2 * (blocks != 0).all(axis=1), 64)
    popcounts = np.array([bin(int(ballot)).count("1") for ballot in ballots])
    assert np.array_equal(out, np.stack([ballots, popcounts + 1000 * counts, any_all, or_and], axis=1))


@pytest.mark.parametrize("arch", KERNEL_ARCHS)
def test_global_atomics_and_a_cas_loop(arch):
    values = np.random.default_rng(11).integers(-5000, 5000, 200).astype(np.int32)
    cells, counter = np.array([-100000, 100000, -1, 0, 0, 1], np.int32), np.zeros(1, np.uint32)
    kernels(arch).kernel("atomicsMix").launch(2, 100, [values, cells, counter])
    bits = xor = 0
    for value in map(int, values):
        bits |= 1 << (value & 31)
        xor ^= value
    assert cells.tolist() == [values.max(), values.min(), 0, int(as_i32([bits])[0]), xor, 1 + int((values & 7).sum())]
    assert counter[0] == 200


@pytest.mark.parametrize("arch", KERNEL_ARCHS)
def test_64_bit_integer_arithmetic_and_division(arch):
    rng = np.random.default_rng(12)
    a, b = rng.integers(-2 ** 62, 2 ** 62, (2, 100))
    b[:10], a[10:20], b[3] = rng.integers(-50, 50, 10), rng.integers(-1000, 1000, 10), 0
    out = np.zeros((100, 6), np.int64)
    kernels(arch).kernel("wideMath").launch(1, 128, [a, b, out, np.int32(100)])
    want = []
    for x, y in zip(map(int, a), map(int, b)):
        quotient, remainder = c_division(x, y) if y else (0, 0)
        want.append([s64(x * y + (x >> 5)), quotient, remainder, s64(((x % M64) >> (y & 63)) ^ (x << 7)), min(x, y),
                     s64(x % M64 * 0x9E3779B97F4A7C15)])
    assert np.array_equal(out, np.array(want, dtype=np.int64))


@pytest.mark.parametrize("arch", KERNEL_ARCHS)
def test_float4_loads_on_a_2d_grid(arch):
    source = np.random.default_rng(13).standard_normal((8, 16, 4)).astype(np.float32)
    target = np.zeros_like(source)
    kernels(arch).kernel("scale2d").launch((2, 2), (8, 4), [source, target, np.int32(16), np.float32(0.75)])
    s = np.float32(0.75)
    assert np.array_equal(target, np.stack([source[..., 0] * s, source[..., 1] + s, source[..., 2] - s,
                                            source[..., 3] * source[..., 0]], axis=-1))


@pytest.mark.parametrize("arch", KERNEL_ARCHS)
def test_half_conversions_and_addition(arch):
    values = (np.random.default_rng(14).standard_normal(100) * 50).astype(np.float32)
    out, bits = np.zeros(100, np.float32), np.zeros(100, np.uint16)
    kernels(arch).kernel("halves").launch(1, 128, [values, out, bits, np.int32(100)])
    halves = values.astype(np.float16)
    assert np.array_equal(bits, (halves + np.float16(1.5)).view(np.uint16))
    assert np.array_equal(out, halves.astype(np.float32) * 2)


@pytest.mark.parametrize("arch", KERNEL_ARCHS)
def test_dynamic_shared_bytes_and_shorts(arch):
    raw = np.random.default_rng(15).integers(0, 256, 512).astype(np.uint8)
    out = np.zeros(512, np.uint16)
    kernels(arch).kernel("bytesAndShorts").launch(2, 256, [raw, out, np.int32(37)], 768)
    want = []
    for block in raw.reshape(2, 256):
        sums = []
        for t in range(256):
            total = 0
            for r in range(37):
                total = (total * 31 + int(block[(t + r) & 255])) & 0xFFFF
            sums.append(total)
        want += sums[::-1]
    assert np.array_equal(out, want)


@pytest.mark.parametrize("arch", KERNEL_ARCHS)
def test_switch_early_exit_and_divergent_loop(arch):
    values = np.random.default_rng(16).integers(-100, 3000, 256).astype(np.int32)
    out = np.full(256, 12345, np.int32)
    kernels(arch).kernel("branches").launch(2, 128, [values, out])
    want = []
    for v in map(int, values):
        r = [v * 2, v - 7, v ^ 0x55, -v][v & 3]
        while r > 1000:
            r -= 999
        want.append(12345 if v < -50 else r)
    assert np.array_equal(out, want)


@pytest.mark.parametrize("listing, kernel, rounds", [("return32.sm_20.sass", "Return32", 1),
                                                      ("return32one.sm_20.sass", "Return32One", 32)])
def test_stats_report_each_warps_trips_round_the_ldslk_loop(listing, kernel, rounds):
    # the seed: one trip when every lane has its own word, 32 when a whole warp hits one word
    stats = MemoryStats()
    module = emulator.load(SEED / listing)
    module.kernel(kernel).launch(1, 64, [np.zeros(1, np.int32), np.zeros(64, np.int32), PIN.astype(np.int32)],
                                 256, observer=stats)
    counters = stats.kernel_counters()
    assert counters["ldslk_rounds_per_warp"] == {"0,0": rounds, "0,1": rounds}
    assert counters["ldslk_rounds_max"] == rounds
    synthetic = sum(1 for instr in module.kernel(kernel).program.instrs if instr.info.get("synthetic"))
    assert synthetic > 0
    assert counters["warp_instructions"] < sum(stats.warp_count)


def test_ctas_on_one_sm_share_its_256_ldslk_locks():
    # the seed: 256 locks per SM, indexed by bits 2-9 of the shared address; %smid is the CTA modulo 132
    from types import SimpleNamespace
    from emulator.machine.lanes import ALL
    from emulator.machine.sass import _lock_keys
    batch = SimpleNamespace(n=4 * 32, cta_of=np.repeat(np.arange(4), 32), cta_start=131)
    addresses = np.full(4 * 32, 0x404, dtype=np.uint64)
    keys = _lock_keys(batch, ALL, addresses).reshape(4, 32)
    sm_of_cta = [131, 0, 1, 2]
    assert keys[:, 0].tolist() == [sm * 256 + 1 for sm in sm_of_cta]
    assert (keys == keys[:, :1]).all()



# ---- --stats of constant-bank reads -----------------------------------------------------------------------

COEFFICIENT_LISTING = """
	code for sm_90
		Function : _Z5pickyPj
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   S2R R0, SR_TID.X ;
        /*0020*/                   ULDC.64 UR4, c[0x0][0x208] ;
        /*0030*/                   LOP3.LUT R4, R0, 0x7, RZ, 0xc0, !PT ;
        /*0040*/                   IMAD.SHL.U32 R4, R4, 0x4, RZ ;
        /*0050*/                   LDC R5, c[0x3][R4] ;
        /*0060*/                   LDC.64 R2, c[0x0][0x210] ;
        /*0070*/                   IMAD.WIDE.U32 R2, R0, 0x4, R2 ;
        /*0080*/                   STG.E desc[UR4][R2.64], R5 ;
        /*0090*/                   EXIT ;
        /*00a0*/                   BRA 0xa0;
"""


def test_constant_bank_reads_count_as_constant_loads_with_one_transaction_per_distinct_address():
    # each warp: LDC R1, ULDC.64 and LDC.64 read one address (one transaction each); LDC R5, c[0x3][R4] reads
    # 8 distinct words (lane % 8), which the constant cache serves one after another
    module = Module(COEFFICIENT_LISTING, "picky.sass")
    coefficients = np.arange(100, 108, dtype=np.uint32)
    module.set_symbol("c[0x3]", coefficients)
    out = np.zeros(96, np.uint32)
    stats = MemoryStats()
    module.kernel("picky").launch(1, 96, [out], observer=stats)
    assert out.tolist() == [100 + lane % 8 for lane in range(96)]
    counters = stats.kernel_counters()
    assert (counters["constant_load_requests"], counters["constant_load_transactions"]) == (3 * 4, 3 * (1 + 1 + 8 + 1))
    assert counters["global_load_requests"] == 0 and counters["global_store_requests"] == 3


def test_constant_bank_reads_pass_the_checkers_the_trace_and_the_debugger(tmp_path):
    listing = tmp_path / "picky.sass"
    listing.write_text(COEFFICIENT_LISTING)
    report, trace = tmp_path / "report.json", tmp_path / "picky.trace"
    result = subprocess.run([sys.executable, "-m", "emulator", "run", str(listing), "--grid", "1", "--block", "64",
                             "--arg", "zeros:u32:64", "--out", str(tmp_path / "out"), "--check", "all", "--stats",
                             "--json", str(report), "--trace", str(trace)], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert json.loads(report.read_text())["checks"]["errors"] == 0
    assert '"space":"constant","width":4,"addr":["0x30000","0x30004"' in trace.read_text()


def test_debugger_steps_a_sass_listing_and_undoes_its_register_writes(tmp_path):
    listing = tmp_path / "picky.sass"
    listing.write_text(COEFFICIENT_LISTING)
    commands = "start\nnext 5\nprint %R4 @all\nreverse-next\nprint %R4 @all\nreverse-next\nprint %R4 @all\n" \
               "continue\nquit\n"
    session = subprocess.run([sys.executable, "-m", "emulator", "debug", str(listing), "--grid", "1", "--block", "64",
                              "--arg", "zeros:u32:64"], input=commands, capture_output=True, text=True, cwd=ROOT,
                             timeout=60)
    output = session.stdout
    assert session.returncode == 0 and "internal error" not in output, output
    assert "picky.sass:4   LDC R1, c[0x0][0x28] ;" in output
    # after the shift, (tid & 7) * 4; undoing it leaves tid & 7; undoing the LOP3 leaves the register's zero
    assert "$1 = {" + ", ".join(str(lane % 8 * 4) for lane in range(32)) + "}" in output
    assert "$2 = {" + ", ".join(str(lane % 8) for lane in range(32)) + "}" in output
    assert "$3 = {0 <repeats 32 times>}" in output
    assert "Termination of CUDA Kernel" in output


# ---- Fermi lock loops under the warp schedules --------------------------------------------------------------

@pytest.mark.parametrize("block", [64, 256])
def test_fermi_lock_loop_reconverges_before_the_barrier_under_every_schedule(block):
    # lanes parked at the LDSLK (another warp holds the word's lock) rejoin their warp at the SSY target,
    # below the BAR.RED.POPC after the loop: the lanes that took the lock wait there for them, so the
    # barrier, which pre-Volta counts a warp once, sees every warp whole (parked lanes that resumed
    # above it, or a rotation of a spinning warp, let part of a warp through and the rest deadlocked)
    from emulator.machine.policies import make_policy
    module = emulator.load(SEED / "return32one.sm_20.sass")
    pin = np.resize(PIN, block).astype(np.int32)
    expected = pin.copy()
    expected[0] += block * pin[0]
    schedules = [("lockstep", 0), ("round-robin", 0)] + [("random", seed) for seed in range(8)]
    for schedule, seed in schedules:
        out = np.zeros(block, np.int32)
        module.kernel("Return32One").launch(1, block, [np.zeros(1, np.int32), out, pin], block * 4,
                                            policy=make_policy(schedule, seed, arch=20))
        assert np.array_equal(out, expected), (schedule, seed)
    out = np.zeros(64, np.int32)
    module.kernel("Return32One").launch(1, 64, [np.zeros(1, np.int32), out, PIN], 256,
                                        policy=make_policy("random", 0, arch=20))
    assert np.array_equal(out, np.load(SEED / "expected" / "Return32One" / "arg1.npy"))


def test_fermi_lock_stub_sits_at_the_reconvergence_point_below_the_barrier():
    program = emulator.load(SEED / "return32one.sm_20.sass").kernel("Return32One").program
    stub = next(instr for instr in program.instrs if instr.info.get("synthetic") == "lock_stub")
    park = next(instr for instr in program.instrs if instr.info.get("synthetic") == "lock_stall")
    barrier = next(instr for instr in program.instrs if instr.info["address"] == 0x80)
    assert park.target == stub.pc and stub.pc == barrier.pc - 1 and stub.guard == park.guard
    assert program.instrs[stub.target].info.get("synthetic") == "lock_arbitrate"


@pytest.mark.parametrize("bank", ["c[0x0]", "c[0x12]", "c[0x99]"])
def test_constant_banks_outside_1_to_17_are_refused(bank):
    module = Module(COEFFICIENT_LISTING, "picky.sass")
    with pytest.raises(UsageError, match=r"banks 1 to 17 hold 65536 bytes each"):
        module.set_symbol(bank, np.zeros(4, np.uint32))


def test_a_random_schedule_with_independent_groups_runs_a_fermi_listing_as_warps():
    # the batch knows it is pre-Volta: a policy built for sm_70's independent groups still runs its warps whole
    from emulator.machine.policies import RandomSchedule
    pin = np.arange(64, dtype=np.int32) + 5
    for seed in range(4):
        out = np.zeros(64, np.int32)
        emulator.load(SEED / "return32one.sm_20.sass").kernel("Return32One").launch(
            1, 64, [np.zeros(1, np.int32), out, pin], 256, policy=RandomSchedule(seed, independent_groups=True))
        assert out[0] == pin[0] * 65 and (out[1:] == pin[1:]).all()


def test_unmangled_kernel_parameters_skip_the_padding_before_an_aligned_pointer():
    # histogram(const unsigned char*, int, unsigned*) built extern "C" for sm_90 (ptxas 13.0): it reads c[0x0][0x210]
    # (8 bytes), [0x218] (4) and [0x220] (8); the 4 bytes at 0x21c are the pointer's alignment, not a parameter
    listing = ROOT / "tests" / "kernels" / "histogram_extern_c.sm_90.sass"
    kernel = emulator.load(listing).kernel("histogram")
    assert [(p.type, p.offset) for p in kernel.params] == [("u64", 0), ("u32", 8), ("u64", 16)]
    data = (np.arange(5000) * 37 % 251).astype(np.uint8)
    histo = np.zeros(256, np.uint32)
    kernel.launch(3, 256, [data, np.int32(len(data)), histo])
    assert np.array_equal(histo, np.bincount(data, minlength=256))


def test_a_constant_word_far_past_the_parameter_space_names_no_parameter():
    # from the fuzzer (seed 4195235497): c[0x0][2^64-1] made the inference fill the gap up to it with parameters
    listing = (ROOT / "tests" / "kernels" / "histogram_extern_c.sm_90.sass").read_text()
    far = listing.replace("c[0x0][0x218]", "c[0x0][0xffffffffffffffff]", 1)
    assert far != listing
    kernel = emulator.load(far).kernel("histogram")
    assert [(p.type, p.offset) for p in kernel.params] == [("u64", 0), ("u64", 8), ("u64", 16)]


def test_an_indexed_constant_read_far_outside_the_bank_reads_zero():
    # from the fuzzer (seed 1838240258): c[0x0][R2+2^64-1] overflowed int64 while adding the index; the pointer it
    # loads is 0, so vecadd's store faults at 0x0 like any other null pointer
    lines = (ROOT / "examples" / "debugbuild" / "debugbuild.sm_90.sass").read_text().split("\n")
    out_pointer = [n for n, line in enumerate(lines) if "c[0x0][R2+0x210]" in line][2]
    lines[out_pointer] = lines[out_pointer].replace("R2+0x210", "R2+18446744073709551615")
    kernel = emulator.load("\n".join(lines)).kernel("_Z6vecaddPKfS0_Pfi")
    ones = np.ones(64, np.float32)
    with pytest.raises(DeviceError, match=r"invalid __global__ write of 4 bytes at 0x0 "):
        kernel.launch(1, 64, [ones, ones, np.zeros(64, np.float32), np.int32(64)])


@pytest.mark.parametrize("listing, old, new, message", [
    ("sass/return32one.sm_20.sass", "/*0080*/ BAR.RED.POPC RZ, RZ", "/*0080*/ BAR.RED.POPC SR_LANEID, RZ",
     "BAR.RED writes its count to a register"),
    ("histogram/histogram.sm_75.sass", "VOTE.ANY R0, PT, PT", "VOTE.ANY R0, c[0x0][0x160]",
     "VOTE votes on a predicate"),
])
def test_fuzzer_found_sass_operand_forms_are_errors_at_their_line(listing, old, new, message):
    # seed 3175726686: a special register as BAR.RED's count, a VOTE without a predicate
    text = (ROOT / "examples" / listing).read_text()
    assert old in text
    line = text[:text.index(old)].count("\n") + 1
    with pytest.raises(GpuemuError) as caught:
        module = emulator.load(text.replace(old, new))
        for name in module.kernel_names:
            module.kernel(name)
    assert f":{line}:" in str(caught.value) and message in str(caught.value)


def test_mufu_gives_the_h100_bits_of_the_ptx_approx_instructions_it_compiles_from():
    # tests/kernels/mufu.sm_90.sass is ptxas 13.0's code for rcp/rsqrt/sqrt/ex2/lg2 .approx.ftz, tanh.approx and
    # sin.approx.ftz: one MUFU each (FMUL.RZ before SIN), so its results are the H100's for those instructions
    # (tests/sfu_h100/held_out.npz, inputs never used to build isa/sfu_data)
    h100 = np.load(ROOT / "tests" / "sfu_h100" / "held_out.npz")
    kernel = emulator.load(ROOT / "tests" / "kernels" / "mufu.sm_90.sass").kernel("mufu")
    columns = ["rcp_ftz", "rsqrt_ftz", "sqrt_ftz", "ex2_ftz", "lg2_ftz", "tanh", "sin_ftz"]
    for column, op in enumerate(columns, start=1):
        inputs, want = h100[f"{op}_in"][:1024], h100[f"{op}_out"][:1024]
        rows = np.zeros((len(inputs), 8), np.uint32)
        rows[:, 0] = inputs
        kernel.launch(len(inputs) // 128, 128, [rows])
        bad = np.flatnonzero(rows[:, column] != want)
        assert bad.size == 0, (op, [(hex(inputs[i]), hex(want[i]), hex(rows[i, column])) for i in bad[:5]])
