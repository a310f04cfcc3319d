"""The pieces of gpuemu's CUDA libraries: fat binaries and their compression, the exported names, the library
directory's safety, the emulated device's settings."""
import ctypes
import ctypes.util
import os
import shutil
import subprocess

import pytest

from emulator.cudart import fatbin
from emulator.cudart.properties import DeviceProperties
from emulator.errors import UsageError

NVCC = shutil.which("nvcc")
KERNEL = "__global__ void scale(float *x, float a) { x[threadIdx.x] *= a; }\n"


def fat_binary(tmp_path, *flags):
    source = tmp_path / "scale.cu"
    source.write_text(KERNEL)
    target = tmp_path / f"scale{len(list(tmp_path.iterdir()))}.fatbin"
    subprocess.run([NVCC, "-fatbin", *flags, str(source), "-o", str(target)], check=True)
    return fatbin.parse_container(target.read_bytes())


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize("mode", ["speed", "size", "balance"])
def test_compressed_entries_decompress_to_the_uncompressed_ptx_and_cubin(tmp_path, mode):
    plain = fat_binary(tmp_path, "-compress-mode=none")
    packed = fat_binary(tmp_path, f"-compress-mode={mode}")
    assert [(e.kind, e.arch) for e in packed] == [(e.kind, e.arch) for e in plain]
    assert any(e.flags & (fatbin.FLAG_COMPRESSED_LZ4 | fatbin.FLAG_COMPRESSED_ZSTD) for e in packed)
    for mine, reference in zip(packed, plain):
        assert mine.data().rstrip(b"\0") == reference.data().rstrip(b"\0")
    ptx = fatbin.choose_ptx(packed, 90, "scale").text()
    assert ".entry _Z5scalePff" in ptx


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_sass_only_fat_binary_says_how_to_rebuild(tmp_path):
    entries = fat_binary(tmp_path, "-gencode", "arch=compute_90,code=sm_90")
    with pytest.raises(fatbin.FatbinError, match=r"only SASS \(sm_90\).*-gencode arch=compute_90,code=\[sm_90,compute_90\]"):
        fatbin.choose_ptx(entries, 90, "app")


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_newest_ptx_not_above_the_device_is_chosen(tmp_path):
    entries = fat_binary(tmp_path, "-gencode", "arch=compute_75,code=compute_75", "-gencode",
                         "arch=compute_90,code=compute_90", "-gencode", "arch=compute_100,code=compute_100")
    assert fatbin.choose_ptx(entries, 90, "app").arch == 90
    assert fatbin.choose_ptx(entries, 80, "app").arch == 75
    assert fatbin.choose_ptx(entries, 70, "app").arch == 75


def test_lz4_overlapping_match_repeats_the_last_byte():
    # token: 1 literal, match of 3 + 4 bytes at offset 1 → eight 'a', then a last literal run of 'bc'
    block = bytes([0x13]) + b"a" + bytes([1, 0]) + bytes([0x20]) + b"bc"
    assert fatbin.lz4_block_decompress(block, 10) == b"aaaaaaaabc"


@pytest.mark.skipif(not ctypes.util.find_library("lz4"), reason="liblz4 is not installed")
def test_lz4_blocks_from_liblz4_decompress_to_their_input():
    lz4 = ctypes.CDLL(ctypes.util.find_library("lz4"))
    text = (b".visible .entry k(.param .u64 p)\n{\n  ret;\n}\n" * 40 + bytes(range(256)) * 3)
    out = ctypes.create_string_buffer(len(text) * 2)
    size = lz4.LZ4_compress_default(text, out, len(text), len(out))
    assert 0 < size < len(text)
    assert fatbin.lz4_block_decompress(out.raw[:size], len(text)) == text


def test_not_a_fat_binary_is_refused_in_one_line():
    with pytest.raises(fatbin.FatbinError, match="not a fat binary"):
        fatbin.parse_container(b"\x7fELF" + bytes(60))


def test_device_settings_change_fields_and_refuse_unknown_ones():
    properties = DeviceProperties.from_environment("multiProcessorCount=8, maxGridSize=100 200 300, name=Tiny GPU")
    assert properties["multiProcessorCount"] == 8
    assert properties["maxGridSize"] == [100, 200, 300]
    assert properties.attribute(5) == 100 and properties.attribute(16) == 8
    with pytest.raises(UsageError, match="'warpsize=16' is not FIELD=VALUE"):
        DeviceProperties.from_environment("warpsize=16")
    with pytest.raises(UsageError, match="takes 3 numbers"):
        DeviceProperties.from_environment("maxGridSize=1 2")


def test_library_directory_must_not_be_writable_by_others(tmp_path):
    from emulator.cudart.libdir import unsafe_reason
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    assert unsafe_reason(str(private)) is None
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    assert "writable by other users" in unsafe_reason(str(shared))
    inner = shared / "inner"
    inner.mkdir(mode=0o700)
    assert "writable by other users" in unsafe_reason(str(inner))


@pytest.fixture(scope="module")
def libraries():
    from emulator.cudart.libdir import library_directory
    directory, failed = library_directory()
    if failed:
        pytest.skip(f"not built: {failed}")
    return directory


@pytest.mark.parametrize("library, exports", [("libcudart.so.13", ["libcudart.so.13.txt", "libcudart.so.12.txt"]),
                                              ("libcuda.so.1", ["libcuda.so.1.txt"])])
def test_every_function_the_real_library_exports_exists(libraries, library, exports):
    from emulator.cudart import builder
    wanted = set()
    for name in exports:
        with open(os.path.join(builder.HERE, "exports", name)) as handle:
            wanted |= {line.strip() for line in handle if line.strip()}
    listing = subprocess.run(["objdump", "-T", os.path.join(libraries, library)], capture_output=True, text=True,
                             check=True).stdout
    defined = {line.split()[-1] for line in listing.splitlines() if " DF .text" in line}
    assert wanted - defined == set()


@pytest.mark.parametrize("library, version", [("libcudart.so.13", "libcudart.so.13"),
                                              ("libcudart.so.12", "libcudart.so.12"), ("libcuda.so.1", "libcuda.so.1")])
def test_symbols_carry_the_version_programs_ask_for(libraries, library, version):
    listing = subprocess.run(["objdump", "-T", os.path.join(libraries, library)], capture_output=True, text=True,
                             check=True).stdout
    line = next(line for line in listing.splitlines() if line.endswith((" cudaMalloc", " cuMemAlloc_v2")))
    assert version in line.split()
