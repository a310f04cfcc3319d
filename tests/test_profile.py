"""`gpuemu profile`: the annotated PTX/CUDA listing, its worst lines, the JSON, and the self-contained HTML report
(heat maps and bar chart), rendered once in headless Chromium when it is installed."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import emulator
from emulator.ir import KernelParam
from emulator.observers.profile import Profile, bank_picture, render_html
from emulator.runtime.spec import default_arguments
from emulator.observers.stats import MemoryStats

ROOT = Path(__file__).resolve().parents[1]
TRANSPOSE = ROOT / "examples" / "transpose" / "transpose.ptx"


def gpuemu(*args):
    return subprocess.run([sys.executable, "-m", "emulator", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def profile_of(kernel: str, shared: int = 0) -> Profile:
    stats = MemoryStats(capture_shared=True)
    emulator.load(TRANSPOSE).kernel(kernel).launch(1, (32, 32), [np.zeros(1024, np.int32)], shared,
                                                   observer=stats)
    return Profile(stats, str(TRANSPOSE))


def test_listing_interleaves_cuda_lines_and_flags_the_column_read():
    result = gpuemu("profile", TRANSPOSE, "--kernel", "setRowReadCol", "--grid", "1", "--block", "32,32")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    load = next(index for index, line in enumerate(lines) if "ld.shared.u32" in line)
    assert lines[load].split()[1:7] == ["32", "32.0", "sh.ld", "32", "32.00", "992"]
    assert "<<< worst #1" in lines[load]
    cuda_above = next(line for line in reversed(lines[:load]) if line.strip().startswith("//"))
    assert cuda_above.strip() == "// transpose.cu:33  out[idx] = tile[threadIdx.x][threadIdx.y];"
    store = next(line for line in lines if "st.shared.u32" in line)
    assert store.split()[3:7] == ["sh.st", "32", "1.00", "0"] and "worst" not in store
    summary = result.stdout[result.stdout.index("worst lines"):]
    assert "transpose.ptx:123 (transpose.cu:33)" in summary and "992 bank conflicts" in summary


def test_profile_without_arguments_says_what_it_passed():
    result = gpuemu("profile", TRANSPOSE, "--kernel", "setRowReadRow", "--grid", "1", "--block", "32,32")
    assert result.returncode == 0
    assert result.stderr.count("\n") == 1 and "zeroed buffer of 16,384 bytes" in result.stderr
    assert "no line moved more than it needed" in result.stdout


def test_default_arguments_are_buffers_for_pointers_and_the_thread_count_for_integers():
    params = [KernelParam("p", "u64", 0, 8, 8), KernelParam("n", "s32", 8, 4, 4), KernelParam("x", "f32", 12, 4, 4)]
    args, _ = default_arguments(params, (2, 1, 1), (64, 1, 1))
    assert args[0].nbytes == 128 * 16 and not args[0].any()
    assert args[1] == np.int32(128) and args[1].dtype == np.int32
    assert args[2] == np.float32(1.0)


def test_profile_json_holds_kernel_and_line_counters(tmp_path):
    report = tmp_path / "profile.json"
    result = gpuemu("profile", TRANSPOSE, "--kernel", "setColReadCol", "--grid", "1", "--block", "32,32",
                    "--arg", "zeros:i32:1024", "--json", report)
    assert result.returncode == 0, result.stderr
    data = json.loads(report.read_text())
    assert (data["shared_load_bank_conflicts"], data["shared_store_bank_conflicts"]) == (992, 992)
    conflicted = {line for line, entry in data["lines"].items() if entry.get("shared_store_bank_conflicts")}
    assert len(conflicted) == 1 and data["lines"][conflicted.pop()]["source"] == "transpose.cu:22"


@pytest.mark.parametrize("args, fragment", [
    (["missing.ptx", "--grid", "1", "--block", "32"], "no such file"),
    ([TRANSPOSE, "--kernel", "setRowReadCol", "--grid", "1", "--block", "32,32", "--top", "-1"], "--top"),
    ([TRANSPOSE, "--kernel", "setRowReadCol", "--grid", "1", "--block", "32,32", "--bank-mode", "2"],
     "--bank-mode"),
])
def test_bad_input_is_one_line_with_status_2(args, fragment):
    result = gpuemu("profile", *args)
    assert result.returncode == 2 and fragment in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


# ---- the pictures' numbers ----

def test_bank_picture_of_a_column_read_puts_32_words_in_one_bank():
    lanes = np.arange(32)
    cells, wavefronts, lane_cells = bank_picture(lanes, lanes.astype(np.uint64) * 128 + 8, 4, 4)
    assert wavefronts == 32 and cells[2] == 32 and cells.sum() == 32
    assert (lane_cells[:, 2] == 32).all() and lane_cells.sum() == 32 * 32


def test_bank_picture_of_a_padded_read_and_of_an_8_byte_warp_in_one_phase():
    lanes = np.arange(32)
    cells, wavefronts, _ = bank_picture(lanes, lanes.astype(np.uint64) * 132, 4, 4)
    assert wavefronts == 1 and (cells == 1).all()
    cells, wavefronts, _ = bank_picture(lanes, lanes.astype(np.uint64) * 16, 8, 4)
    # one phase for the whole warp (as on the H100): 16 banks hold four of the 128 words each
    assert wavefronts == 4 and cells.max() == 4 and np.count_nonzero(cells) == 16
    _, wavefronts, _ = bank_picture(lanes, np.zeros(32, np.uint64), 4, 4)
    assert wavefronts == 1                              # broadcast


def test_heat_maps_show_each_warp_of_the_first_block():
    profile = profile_of("setRowReadCol")
    pc = profile.worst_shared_pc()
    assert "ld.shared" in profile.program.instrs[pc].text
    warps, worst_row, lane_cells, per_warp, wavefronts = profile.bank_matrix(pc)
    assert warps == list(range(32)) and (wavefronts == 32).all()
    # warp w reads tile[lane][w]: word 32 * lane + w, bank w
    assert (np.diag(per_warp) == 32).all() and per_warp.sum() == 32 * 32
    assert (lane_cells[:, warps[worst_row]] == 32).all()


# ---- the HTML page ----

def test_html_report_is_one_self_contained_page(tmp_path):
    page_path = tmp_path / "report.html"
    result = gpuemu("profile", TRANSPOSE, "--kernel", "setRowReadColDyn", "--grid", "1", "--block", "32,32",
                    "--shared", "4096", "--arg", "zeros:i32:1024", "--html", page_path)
    assert result.returncode == 0, result.stderr
    page = page_path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") == 3
    assert not re.search(r"https?:|src=|url\(|@import|<link|<script", page)
    assert "32 wavefronts" in page and "worst #1" in page and "992 bank conflicts" in page
    assert "tile[row_idx] = row_idx;" in page


def test_html_escapes_ptx_text():
    page = render_html(profile_of("setRowReadColIpad"), "a <title> & more", "k<1>")
    assert "a &lt;title&gt; &amp; more" in page and "k&lt;1&gt;" in page and "<title>a" not in page


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed")
def test_html_report_renders_in_headless_chromium(tmp_path):
    page_path, shot = tmp_path / "report.html", tmp_path / "report.png"
    result = gpuemu("profile", TRANSPOSE, "--kernel", "setRowReadCol", "--grid", "1", "--block", "32,32",
                    "--arg", "zeros:i32:1024", "--html", page_path)
    assert result.returncode == 0, result.stderr
    subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--screenshot={shot}", "--window-size=1200,1600", page_path.as_uri()],
                   capture_output=True, timeout=120, cwd=tmp_path)
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (1200, 1600) and len(png) > 30_000
