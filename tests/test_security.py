"""What gpuemu reads from disk never runs code, and what it prints never carries a file's control characters."""
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from emulator.base import cache as cache_module
from emulator.base.cache import MAGIC, Cache, digest
from emulator.base.errors import PTXSyntaxError
from emulator.base.sources import SourceFiles
from emulator.frontend.ptx.parse import parse
from emulator.frontend.ptx.cache import parse_cached

ROOT = Path(__file__).resolve().parents[1]
PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{
.reg .b64 %rd<2>;
ld.param.u64 %rd1, [out];
st.global.u32 [%rd1], 7;
ret;
}
"""


class _Planted:
    """Unpickling this creates the marker file: proof that a planted payload ran."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv("GPUEMU_CACHE_DIR", str(directory))
    monkeypatch.delenv("GPUEMU_NO_CACHE", raising=False)
    monkeypatch.setattr(cache_module, "_warned", set())
    return directory


def _plant_every_entry(directory: Path, payload: bytes, signature: bytes = b"\0" * 32) -> int:
    planted = 0
    for entry in (directory / "ptx").glob("*.bin"):
        entry.write_bytes(MAGIC + signature + payload)
        planted += 1
    return planted


def test_planted_parse_cache_entry_is_never_unpickled(cache_dir, tmp_path):
    parse_cached(PTX, "k.ptx")
    marker = tmp_path / "ran"
    assert _plant_every_entry(cache_dir, pickle.dumps(_Planted(marker))) == 1
    assert parse_cached(PTX, "k.ptx") == parse(PTX, "k.ptx")
    assert not marker.exists()


def test_entry_signed_with_another_users_key_is_ignored(cache_dir, tmp_path):
    parse_cached(PTX, "k.ptx")
    (entry,) = (cache_dir / "ptx").glob("*.bin")
    marker = tmp_path / "ran"
    payload = pickle.dumps(_Planted(marker))
    other = Cache("ptx")
    forged = other._signature(os.urandom(32), entry.stem, payload)
    entry.write_bytes(MAGIC + forged + payload)
    assert parse_cached(PTX, "k.ptx") == parse(PTX, "k.ptx")
    assert not marker.exists()


def test_cache_directory_and_key_are_private(cache_dir):
    parse_cached(PTX, "k.ptx")
    assert (cache_dir.stat().st_mode & 0o777) == 0o700
    assert ((cache_dir / "key").stat().st_mode & 0o777) == 0o600


def test_cache_open_to_others_is_refused_with_one_warning(cache_dir, capsys):
    cache_dir.mkdir(mode=0o700)
    os.chmod(cache_dir, 0o777)
    assert parse_cached(PTX, "k.ptx") == parse(PTX, "k.ptx")
    parse_cached(PTX, "k.ptx")
    warnings = [line for line in capsys.readouterr().err.splitlines() if "cache off" in line]
    assert len(warnings) == 1 and "open to group or others" in warnings[0]
    assert list(cache_dir.iterdir()) == []


def test_cache_only_others_can_read_is_made_private_and_used(cache_dir, capsys):
    cache_dir.mkdir(mode=0o700)
    os.chmod(cache_dir, 0o755)
    parse_cached(PTX, "k.ptx")
    assert (cache_dir.stat().st_mode & 0o777) == 0o700
    assert "cache off" not in capsys.readouterr().err
    assert any(cache_dir.iterdir())


def test_cache_below_a_directory_others_can_change_is_refused(tmp_path, monkeypatch, capsys):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv("GPUEMU_CACHE_DIR", str(shared / "gpuemu"))
    monkeypatch.delenv("GPUEMU_NO_CACHE", raising=False)
    monkeypatch.setattr(cache_module, "_warned", set())
    parse_cached(PTX, "k.ptx")
    assert "which other users can change" in capsys.readouterr().err
    assert not (shared / "gpuemu" / "key").exists()


def test_cache_directory_that_is_a_link_is_refused(tmp_path, monkeypatch, capsys):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    monkeypatch.setenv("GPUEMU_CACHE_DIR", str(tmp_path / "link"))
    monkeypatch.delenv("GPUEMU_NO_CACHE", raising=False)
    monkeypatch.setattr(cache_module, "_warned", set())
    parse_cached(PTX, "k.ptx")
    assert "not a plain directory" in capsys.readouterr().err
    assert list(real.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to give the directory away")
def test_cache_owned_by_another_user_is_refused(cache_dir, capsys):
    cache_dir.mkdir(mode=0o700)
    os.chown(cache_dir, 65534, 65534)
    parse_cached(PTX, "k.ptx")
    assert "owned by another user" in capsys.readouterr().err
    assert list(cache_dir.iterdir()) == []


def _opened_files(tmp_path, environment):
    """Every file a fresh process opens while it parses PTX and a SASS listing (an audit hook records them)."""
    script = textwrap.dedent(f"""
        import sys
        opened = []
        sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == "open" else None)
        from emulator.frontend.ptx.parse import parse
        from emulator.frontend.sass.parse import _parser as sass_parser
        parse({PTX!r}, "k.ptx")
        sass_parser()
        print("\\n".join(opened))
    """)
    env = dict(os.environ, **environment)
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                            check=True)
    return result.stdout.splitlines()


def test_grammar_tables_are_cached_in_the_private_directory_not_in_tmp(tmp_path):
    cache = tmp_path / "cache"
    environment = {"GPUEMU_CACHE_DIR": str(cache), "TMPDIR": str(tmp_path)}
    _opened_files(tmp_path, environment)
    second = _opened_files(tmp_path, environment)
    assert not [path for path in second if "lark_cache" in path]
    assert [path for path in second if path.startswith(str(cache / "grammar"))]
    assert not list(tmp_path.glob(".lark_cache*"))


def test_no_cache_setting_turns_every_cache_off(tmp_path):
    cache = tmp_path / "cache"
    opened = _opened_files(tmp_path, {"GPUEMU_CACHE_DIR": str(cache), "GPUEMU_NO_CACHE": "1",
                                      "TMPDIR": str(tmp_path)})
    assert not cache.exists()
    assert not [path for path in opened if "lark_cache" in path or path.startswith(str(tmp_path))]


def test_digest_separates_its_parts():
    assert digest("ab", "c") != digest("a", "bc")


# ---- source files named by .file ----

def test_source_file_outside_the_ptx_directory_is_not_read(tmp_path):
    secret = tmp_path / "elsewhere" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("password=hunter2\n")
    ptx = tmp_path / "build" / "k.ptx"
    ptx.parent.mkdir()
    ptx.write_text(PTX)
    sources = SourceFiles(str(ptx))
    assert sources.line(str(secret), 1) is None
    assert sources.line("../elsewhere/secret.txt", 1) is None


def test_source_file_beside_the_ptx_or_under_a_source_dir_is_read(tmp_path):
    kernel = tmp_path / "src" / "k.cu"
    kernel.parent.mkdir()
    kernel.write_text("int x;\n__global__ void k() {}\n")
    ptx = tmp_path / "build" / "k.ptx"
    ptx.parent.mkdir()
    ptx.write_text(PTX)
    assert SourceFiles(str(ptx)).line(str(kernel), 2) is None
    assert SourceFiles(str(ptx), [str(tmp_path / "src")]).line(str(kernel), 2) == "__global__ void k() {}"
    beside = tmp_path / "build" / "k.cu"
    beside.write_text("one\ntwo\n")
    assert SourceFiles(str(ptx)).line("/somewhere/else/k.cu", 2) == "two"


def test_source_lines_are_shown_with_control_characters_escaped(tmp_path):
    ptx = tmp_path / "k.ptx"
    ptx.write_text(PTX)
    (tmp_path / "k.cu").write_text("a\x1b[31mred\x1b[0m\n")
    assert SourceFiles(str(ptx)).line("k.cu", 1) == "a\\x1b[31mred\\x1b[0m"


def test_profile_does_not_show_a_file_outside_the_allowed_places(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET\n")
    folder = tmp_path / "ptx"
    folder.mkdir()
    ptx = folder / "k.ptx"
    ptx.write_text(PTX.replace(".address_size 64\n", f'.address_size 64\n.file 1 "{secret}"\n')
                   .replace("st.global.u32", ".loc 1 1 0\nst.global.u32"))
    command = [sys.executable, "-m", "emulator", "profile", str(ptx), "--grid", "1", "--block", "1",
               "--arg", "zeros:u32:1"]
    shown = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert "TOPSECRET" not in shown.stdout
    allowed = subprocess.run(command + ["--source-dir", str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert "TOPSECRET" in allowed.stdout


# ---- control characters in messages ----

def test_escape_sequences_in_ptx_are_escaped_in_the_error():
    with pytest.raises(PTXSyntaxError) as caught:
        parse(PTX.replace("st.global.u32", "st.global.u32\x1b[2J"), "k\x1b]0;title\x07.ptx")
    message = str(caught.value)
    assert "\x1b" not in message and "\x07" not in message
    assert "\\x1b" in message


def test_cli_error_carries_no_raw_control_characters(tmp_path):
    ptx = tmp_path / "k.ptx"
    ptx.write_text(PTX.replace("st.global.u32", "\x1b[31mst.global.u32"))
    result = subprocess.run([sys.executable, "-m", "emulator", "run", str(ptx), "--grid", "1", "--block", "1",
                             "--arg", "zeros:u32:1"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 2
    assert "\x1b" not in result.stderr and "\\x1b" in result.stderr


def test_profile_escapes_control_characters_in_a_file_name_in_text_and_html(tmp_path):
    ptx = tmp_path / "k.ptx"
    name = "x\x1b]0;PWN\x07\x1b[2J\u202e.cu"
    ptx.write_text(PTX.replace(".address_size 64\n", f'.address_size 64\n.file 1 "{name}"\n')
                   .replace("st.global.u32", ".loc 1 3 0\nst.global.u32"))
    page = tmp_path / "p.html"
    result = subprocess.run([sys.executable, "-m", "emulator", "profile", str(ptx), "--grid", "1", "--block", "1",
                             "--arg", "zeros:u32:1", "--html", str(page)], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "x\\x1b]0;PWN\\x07\\x1b[2J\\u202e.cu:3" in result.stdout
    for text in (result.stdout, result.stderr, page.read_text()):
        assert not set("\x1b\x07\u202e") & set(text)


def test_bidirectional_overrides_are_escaped():
    from emulator.base.text import printable
    assert printable("a\u202eb\u2066c\u2069") == "a\\u202eb\\u2066c\\u2069"


def test_an_address_space_limit_refuses_a_launch_with_its_figures(tmp_path):
    import resource
    limit = 6 << 30

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    result = subprocess.run([sys.executable, "-m", "emulator", "run", str(ROOT / "examples" / "vecadd" / "vecadd.ptx"),
                             "--kernel", "vecadd", "--grid", "1", "--block", "32", "--arg", "zeros:f32:2000000000",
                             "--arg", "zeros:f32:32", "--arg", "zeros:f32:32", "--arg", "i32:32", "-q"],
                            cwd=ROOT, capture_output=True, text=True, preexec_fn=cap)
    assert result.returncode == 3, result.stderr
    assert "CUDA_ERROR_OUT_OF_MEMORY" in result.stderr and "needs about 7.5 GiB" in result.stderr
    assert result.stderr.count("\n") == 1


def test_cuda_libraries_follow_the_cache_settings(monkeypatch, tmp_path):
    from emulator.cudart import libdir
    monkeypatch.setenv("GPUEMU_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.delenv("GPUEMU_NO_CACHE", raising=False)
    assert libdir.cache_root() == str(tmp_path / "mine" / "libs")
    assert (os.stat(tmp_path / "mine").st_mode & 0o777) == 0o700
    monkeypatch.setenv("GPUEMU_CACHE_DIR", str(tmp_path / "never"))
    monkeypatch.setenv("GPUEMU_NO_CACHE", "1")
    monkeypatch.setattr(libdir, "_private_root", None)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    private = libdir.cache_root()
    assert os.path.dirname(private) == str(tmp_path) and (os.stat(private).st_mode & 0o777) == 0o700
    assert libdir.cache_root() == private and not (tmp_path / "never").exists()
