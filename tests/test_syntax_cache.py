"""The on-disk parse cache: a hit gives the same syntax tree, any change to the text misses, damage is ignored."""
import pytest

from emulator.frontend.ptx import cache as syntax_cache
from emulator.errors import PTXSyntaxError
from emulator.frontend.ptx.parse import parse

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


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUEMU_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GPUEMU_NO_CACHE", raising=False)
    return tmp_path / "ptx"


def test_second_parse_of_the_same_text_comes_from_the_cache(cache, monkeypatch):
    first = syntax_cache.parse_cached(PTX, "k.ptx")
    assert len(list(cache.iterdir())) == 1
    monkeypatch.setattr("emulator.frontend.ptx.parse.parse", lambda *a: pytest.fail("parsed again"))
    assert syntax_cache.parse_cached(PTX, "k.ptx") == first == parse(PTX, "k.ptx")


def test_changed_text_or_name_misses_the_cache(cache):
    syntax_cache.parse_cached(PTX, "k.ptx")
    changed = syntax_cache.parse_cached(PTX.replace("7;", "8;"), "k.ptx")
    syntax_cache.parse_cached(PTX, "other.ptx")
    assert len(list(cache.iterdir())) == 3
    assert changed == parse(PTX.replace("7;", "8;"), "k.ptx")


def test_damaged_cache_file_is_parsed_again(cache):
    syntax_cache.parse_cached(PTX, "k.ptx")
    (entry,) = cache.iterdir()
    entry.write_bytes(b"not a pickle")
    assert syntax_cache.parse_cached(PTX, "k.ptx") == parse(PTX, "k.ptx")


def test_syntax_errors_are_not_cached_and_still_name_the_line(cache):
    with pytest.raises(PTXSyntaxError, match=r"^bad.ptx:8:"):
        syntax_cache.parse_cached(PTX.replace("st.global.u32", "st.global.u32 %"), "bad.ptx")
    assert not cache.exists() or not list(cache.iterdir())


def test_no_cache_setting_writes_nothing(cache, monkeypatch):
    monkeypatch.setenv("GPUEMU_NO_CACHE", "1")
    assert syntax_cache.parse_cached(PTX, "k.ptx") == parse(PTX, "k.ptx")
    assert not cache.exists()
