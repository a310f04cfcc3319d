"""What a newcomer meets first: --version, the summary line after a run, the progress bar, a warning for an argument
of the wrong kind, float registers decoded in trace diff, and the HTML report's axes."""
import io
import json
import re
import struct
import subprocess
import sys
import warnings
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest

import emulator
from emulator.cli import main
from emulator.observers.profile import LineReport, _bar_chart, _grid_svg, nice_ticks, tick_label
from emulator.runtime.arguments import ArgumentTypeWarning

ROOT = Path(__file__).resolve().parents[1]
VECADD = ROOT / "examples" / "vecadd"
SCALE = ROOT / "tests" / "kernels" / "scale.ptx"
VECADD_ARGS = ["run", str(VECADD / "vecadd.ptx"), "--kernel", "vecadd", "--grid", "4", "--block", "256",
               "--arg", f"@{VECADD}/inputs/a_small.npy", "--arg", f"@{VECADD}/inputs/b_small.npy",
               "--arg", "zeros:f32:1000"]


def gpuemu(*args):
    return subprocess.run([sys.executable, "-m", "emulator", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_version_is_the_installed_one():
    result = gpuemu("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"gpuemu {version('gpuemu')}"


def test_a_plain_ptx_run_imports_no_sass_parser_progress_bar_package_metadata_or_unused_observer(tmp_path):
    # each costs a short run milliseconds before the launch; a run that does not ask for them does not import them
    # (lark itself may load: PTX that is not in the parse cache yet is parsed with it)
    script = ("import sys; from emulator.cli import main; status = main(sys.argv[1:]); "
              "print(sorted(m for m in ('tqdm', 'importlib.metadata', 'emulator.observers.trace', "
              "'emulator.observers.stats', 'emulator.frontend.sass.parse') if m in sys.modules)); sys.exit(status)")
    result = subprocess.run([sys.executable, "-c", script, *VECADD_ARGS, "--arg", "i32:1000", "--out", tmp_path,
                             "--quiet"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
    assert np.array_equal(np.load(tmp_path / "arg2.npy"), np.load(VECADD / "expected" / "vecadd_small" / "arg2.npy"))


def test_a_run_ends_with_a_summary_of_the_launch_and_where_its_outputs_went(tmp_path):
    out, report = tmp_path / "out", tmp_path / "stats.json"
    result = gpuemu(*VECADD_ARGS, "--arg", "i32:1000", "--out", out, "--json", report)
    assert result.returncode == 0, result.stderr
    stats = json.loads(report.read_text())
    line = result.stderr.strip().splitlines()[-1]
    match = re.match(r"gpuemu: vecadd: grid 4x1x1 x block 256x1x1, ([\d,]+) warp instructions \(([\d,]+) thread "
                     r"instructions\) in [\d.]+ s; 3 buffers written to (.+); report (.+)$", line)
    assert match, line
    assert int(match.group(1).replace(",", "")) == stats["warp_instructions"]
    assert int(match.group(2).replace(",", "")) == stats["thread_instructions"]
    assert (match.group(3), match.group(4)) == (str(out), str(report))


def test_without_out_the_summary_says_the_buffers_were_not_saved_and_quiet_says_nothing():
    result = gpuemu(*VECADD_ARGS, "--arg", "i32:1000")
    assert result.returncode == 0, result.stderr
    assert "no --out given: the 3 buffers after the launch were not saved (add --out DIR)" in result.stderr
    quiet = gpuemu(*VECADD_ARGS, "--arg", "i32:1000", "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == ""


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_long_launch_draws_a_progress_bar_on_a_terminal(monkeypatch):
    from emulator.cli.common import Progress
    monkeypatch.setattr(Progress, "DELAY", 0.0)
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["run", str(VECADD / "vecadd.ptx"), "--grid", "64", "--block", "256", "--arg", "zeros:f32:16384",
                 "--arg", "zeros:f32:16384", "--arg", "zeros:f32:16384", "--arg", "i32:16384"]) == 0
    drawn = terminal.getvalue()
    assert re.search(r"vecadd: +\d+%\|.*\| \d+/64 \[", drawn), drawn
    assert "gpuemu: vecadd: grid 64x1x1" in drawn


def test_a_float_for_an_integer_parameter_warns_with_the_bits_it_passes():
    result = gpuemu(*VECADD_ARGS, "--arg", "f32:1000", "--quiet")
    read_as = struct.unpack("<I", struct.pack("<f", 1000.0))[0]
    warning = [line for line in result.stderr.splitlines() if line.startswith("gpuemu: warning:")]
    assert warning == [f"gpuemu: warning: argument 3 (_Z6vecaddPKfS0_Pfi_param_3, .u32) of vecadd is given float32 "
                       f"1000.0: its bits 0x447a0000 are passed unchanged and read as {read_as} (pass u32:1000 for "
                       f"the value)"]


def test_an_integer_for_a_float_parameter_warns_through_the_api_and_a_match_does_not():
    module = emulator.load(str(ROOT / "examples" / "vectypes" / "vectypes.ptx"))
    kernel = module.kernel("_Z13vectorSwizzlePK4int2PK6float4PS_PS2_f")
    args = [np.zeros(128, np.int32), np.zeros(256, np.float32), np.zeros(128, np.int32), np.zeros(256, np.float32)]
    with pytest.warns(ArgumentTypeWarning, match=r"is given int32 3: its bits 0x00000003 are passed unchanged and "
                                                 r"read as 4e-45 \(pass f32:3 for the value\)"):
        kernel.launch(1, 64, args + [np.int32(3)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kernel.launch(1, 64, args + [np.float32(3)])
        kernel.launch(1, 64, args + [3.0])


def _trace(tmp_path, name, value):
    np.save(tmp_path / f"{name}.npy", np.full(32, value, np.float32))
    result = gpuemu("run", SCALE, "--grid", "1", "--block", "32", "--arg", "zeros:f32:32", "--arg",
                    f"@{tmp_path / name}.npy", "--arg", "u32:32", "--trace", tmp_path / f"{name}.trace", "--quiet")
    assert result.returncode == 0, result.stderr
    return tmp_path / f"{name}.trace"


def test_trace_diff_shows_float_registers_decoded_beside_their_bits(tmp_path):
    one, two = _trace(tmp_path, "one", 1.5), _trace(tmp_path, "two", -0.1)
    result = gpuemu("trace", "diff", one, two)
    assert result.returncode == 1
    bits = lambda value: f"0x{struct.unpack('<I', struct.pack('<f', value))[0]:08x}"
    assert (f"%f1 differs in 32 lanes: lane 0: A {bits(1.5)} (1.5) B {bits(-0.1)} (-0.1)" in result.stdout), \
        result.stdout


def test_trace_diff_reports_a_trace_without_its_end_record_as_incomplete(tmp_path):
    whole = _trace(tmp_path, "one", 1.5)
    lines = whole.read_text().splitlines()
    assert json.loads(lines[-1])["end"] == "ok"
    cut = tmp_path / "cut.trace"
    cut.write_text("\n".join(lines[:-1]) + "\n")
    result = gpuemu("trace", "diff", cut, cut)
    assert result.returncode == 1 and "identical" not in result.stdout
    assert f"{cut} is incomplete: it has no end record" in result.stdout
    shorter = tmp_path / "shorter.trace"
    shorter.write_text("\n".join(lines[:len(lines) // 2]) + "\n")
    result = gpuemu("trace", "diff", whole, shorter)
    assert result.returncode == 1 and f"{shorter} is incomplete" in result.stdout and f"{whole} is" not in \
        result.stdout
    assert gpuemu("trace", "diff", whole, whole).returncode == 0


@pytest.mark.parametrize("peak, labels", [(1.0, ["0", "0.25", "0.5", "0.75", "1"]), (4 / 3, ["0", "0.5", "1", "1.5"]),
                                          (33.0, ["0", "10", "20", "30", "40"]), (0.3, ["0", "0.1", "0.2", "0.3"])])
def test_axis_ticks_are_round_and_reach_the_peak(peak, labels):
    ticks, top = nice_ticks(peak)
    assert [tick_label(tick) for tick in ticks] == labels and top >= peak


class _Row(LineReport):
    def __init__(self, line, per_request, label):
        super().__init__(line, "ld.global.f32 %f1, [%rd1];", kinds=["global_load"])
        self._memory = {"label": label, "requests": 10, "transactions": 10 * per_request,
                        "per_request": per_request, "ideal_per_request": 1.0, "unit": "sectors"}

    @property
    def memory(self):
        return self._memory


def _text_extents(svg: str):
    """(left, right, width) of every <text> of an svg, at the chart's character width."""
    width = float(re.search(r'<svg width="([\d.]+)"', svg).group(1))
    for match in re.finditer(r'<text x="([-\d.]+)"[^>]*?(?:text-anchor="(\w+)")?[^>]*>([^<]*)</text>', svg):
        x, anchor, text = float(match.group(1)), match.group(2) or "start", match.group(3)
        size = 6.0 * len(text)
        left = {"start": x, "middle": x - size / 2, "end": x - size}[anchor]
        yield left, left + size, width, text


def test_bar_chart_labels_are_rounded_and_inside_the_picture():
    class Fake:
        rows = [_Row(12, 4 / 3, "global load"), _Row(1234567, 2.0 / 3, "global store 16-byte")]
    svg = _bar_chart(Fake())
    ticks = re.findall(r'text-anchor="end">([^<]*)</text>', svg)
    assert ticks == ["0", "0.5", "1", "1.5"]
    for left, right, width, text in _text_extents(svg):
        assert 0 <= left and right <= width, (text, left, right, width)


def test_heat_map_row_labels_fit_however_long():
    matrix = np.ones((3, 32), dtype=np.int64)
    svg = _grid_svg(matrix, ["warp 1", "warp 1023", "warp 100000"], "bank", 1, ["32 wavefronts"] * 3)
    for left, right, width, text in _text_extents(svg):
        assert 0 <= left and right <= width, (text, left, right, width)
