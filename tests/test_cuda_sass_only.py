"""Whole CUDA programs whose fat binary holds only SASS (nvcc -gencode arch=compute_90,code=sm_90, no PTX) run on
gpuemu's libcudart from their cubin: cuobjdump's listing of the code, and the cubin's own ELF tables for variables,
constant banks 3 and 4 and kernel parameters. cuobjdump comes with the test extra (nvidia-cuda-cuobjdump)."""
import os
import re
import subprocess

import pytest

from emulator.frontend.sass.cubin import R_CUDA_64, Cubin, CubinError, find_disassembler
from test_cuda_programs import (COURSE_PROGRAMS, NVCC, PROGRAMS, build_programs, check_fault, check_passes,
                                check_printf_assert, run)

RECORDED = os.path.join(PROGRAMS, "sass_only")
SASS_ONLY = ["-gencode", "arch=compute_90,code=sm_90"]
#: what a SASS-only build of these programs uses that gpuemu's SASS path does not run: the error names it
NOT_RUN_AS_SASS = {
    "virtual_calls": "indirect branch 'CALL.REL.NOINC'",
    "wmma_int": "IMMA.16816.S8.S8",
    "wmma_double": "DMMA.8x8x4",
    "async_copy": "SYNCS.EXCH.64",
    "shfl_partial_mask": "ENDCOLLECTIVE",
}
#: programs that report what the runtime tells them about their kernels' PTX, which a SASS-only build has none of
PTX_FACTS = {"occupancy"}

pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")


def _cubins(path):
    """The cubins of a built program that hold code (the fat binary's kernel images)."""
    from emulator.cudart import fatbin
    data = open(path, "rb").read()
    magic = fatbin.CONTAINER_MAGIC.to_bytes(4, "little")
    found, start = [], data.find(magic)
    while start >= 0:
        for entry in fatbin.parse_container(data[start:]):
            if entry.kind == fatbin.KIND_CUBIN and b"\0.text." in entry.data():
                found.append(entry.data())
        start = data.find(magic, start + 4)
    return found


@pytest.fixture(scope="session")
def sass_only_programs(tmp_path_factory):
    """(library directory, programs): the course programs built without PTX."""
    if find_disassembler() is None:
        pytest.skip("needs NVIDIA's cuobjdump (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
    names = sorted(name for name, _ in _course()) + ["fault.cu", "printf_assert.cu"] + \
        [f"{name}.cu" for name in NOT_RUN_AS_SASS]
    return build_programs(tmp_path_factory, sorted(set(names)), SASS_ONLY)


def _course():
    return [(f"{name}.cu", expected) for name, expected in
            (getattr(param, "values", param) for param in COURSE_PROGRAMS)
            if name not in NOT_RUN_AS_SASS and name not in PTX_FACTS and name != "thrust_sort"]


@pytest.mark.parametrize("name, expected", [(name[:-3], expected) for name, expected in _course()])
def test_sass_only_program_passes_its_own_check(sass_only_programs, name, expected):
    check_passes(run(sass_only_programs, name), expected)


def test_sass_only_fault_is_sticky_with_a_report_at_the_listing_line(sass_only_programs):
    result = run(sass_only_programs, "fault")
    check_fault(result)
    assert re.search(r"at overrun\+0x[0-9a-f]+ in fault \(sm_90 cubin\):\d+", result.stderr), result.stderr


def test_sass_only_printf_and_assert_reach_gpuemus_vprintf_and_assertfail(sass_only_programs):
    check_printf_assert(run(sass_only_programs, "printf_assert"))


@pytest.mark.parametrize("name, instruction", sorted(NOT_RUN_AS_SASS.items()))
def test_sass_only_program_with_unsupported_sass_names_the_instruction(sass_only_programs, name, instruction):
    result = run(sass_only_programs, name)
    assert result.returncode != 0
    assert instruction in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_without_cuobjdump_the_error_says_what_to_install_or_how_to_rebuild(sass_only_programs):
    result = run(sass_only_programs, "vector_add", GPUEMU_CUOBJDUMP="")
    assert result.returncode == 1
    assert "cudaErrorNoKernelImageForDevice" in result.stdout
    assert "running SASS from a cubin takes NVIDIA's cuobjdump" in result.stderr
    assert "pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm" in result.stderr
    assert "-gencode arch=compute_90,code=[sm_90,compute_90]" in result.stderr


# ---- the cubin reader against cuobjdump -elf's own decoding (recorded on the GPU machine) ----

def _recorded_elf(name):
    """The kernel image's part of `cuobjdump -elf` for a program: symbols (name, size, section index), parameters
    per kernel and constant-bank-4 relocations."""
    text = open(os.path.join(RECORDED, f"{name}.elf.txt")).read()
    image = [part for part in text.split("64-bit ELF") if ".text." in part][-1]
    number = r"(0x[0-9a-f]+|0)\s+"
    symbols = {(m.group(7), int(m.group(3), 16)) for m in re.finditer(rf"^\s*{number * 6}(\S+)$", image, re.M)}
    parameters = {}
    for kernel, body in re.findall(r"^\.nv\.info\.(\S+)\n(.*?)(?=^\S)", image, re.M | re.S):
        found = re.findall(r"Ordinal : (0x[0-9a-f]+)\tOffset  : (0x[0-9a-f]+)\tSize    : (0x[0-9a-f]+)", body)
        parameters[kernel] = sorted((int(o, 16), int(off, 16), int(size, 16)) for o, off, size in found)
    relocations = re.findall(r"^(0x[0-9a-f]+)\s+(\S+)\s+R_CUDA_64\s+0x0$",
                             image.split(".section .rela.nv.constant4")[1].split(".section")[0]
                             if ".rela.nv.constant4" in image else "", re.M)
    return symbols, parameters, {(int(offset, 16), symbol) for offset, symbol in relocations}


@pytest.mark.parametrize("name", ["constant_symbol", "pitch_2d", "managed"])
def test_cubin_tables_read_as_cuobjdump_reads_them(sass_only_programs, name):
    _, out = sass_only_programs
    (image,) = _cubins(out / name)
    cubin = Cubin(image, name)
    symbols, parameters, relocations = _recorded_elf(name)
    assert {(symbol.name, symbol.size) for symbol in cubin.symbols if symbol.name} == \
        {(symbol, size) for symbol, size in symbols if symbol != "(null)"}
    for kernel, expected in parameters.items():
        assert [(ordinal, offset, size) for ordinal, (offset, size) in enumerate(cubin.kernel_parameters(kernel))] \
            == expected
    assert {(r.offset, r.symbol.name) for r in cubin.relocations if r.section == ".nv.constant4"} == relocations
    assert all(r.kind == R_CUDA_64 for r in cubin.relocations if r.section == ".nv.constant4")
    assert cubin.arch == 90


@pytest.mark.parametrize("damage", [b"\x7fELF\x01", b"\x7fELF\x02\x01\x01" + bytes(57), b"not an elf at all" * 8])
def test_a_damaged_cubin_is_one_clear_error(damage):
    with pytest.raises(CubinError):
        Cubin(damage, "damaged.cubin")


@pytest.mark.skipif(find_disassembler() is None, reason="needs NVIDIA's cuobjdump")
@pytest.mark.parametrize("flags", [["-rdc=true"], ["-rdc=true", *SASS_ONLY]])
def test_relocatable_device_code_runs_from_its_device_linked_cubin(tmp_path, flags):
    from emulator.cudart.libdir import library_directory
    directory, _ = library_directory()
    program = tmp_path / "reduction"
    subprocess.run([NVCC, "-cudart", "shared", *flags, "-o", str(program), os.path.join(PROGRAMS, "reduction.cu")],
                   check=True, capture_output=True)
    result = subprocess.run([str(program)], capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, LD_LIBRARY_PATH=directory))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.endswith("sum -47 (host -47) over 196 blocks\nPASS\n")


def _elf(sections):
    """A 64-bit CUDA ELF image of the named sections ((name, type, data or NOBITS size)), for the reader's refusals."""
    import struct
    names = b"\0" + b"".join(name.encode() + b"\0" for name, _, _ in sections) + b".shstrtab\0"
    body, headers, offset, name_at = b"", [bytes(64)], 64, 1
    for name, kind, content in sections:
        size = content if isinstance(content, int) else len(content)
        headers.append(struct.pack("<IIQQQQIIQQ", name_at, kind, 0, 0, offset, size, 0, 0, 1, 0))
        if not isinstance(content, int):
            body += content
            offset += len(content)
        name_at += len(name) + 1
    headers.append(struct.pack("<IIQQQQIIQQ", name_at, 3, 0, 0, offset, len(names), 0, 0, 1, 0))
    body += names
    table = 64 + len(body)
    header = struct.pack("<16sHHIQQQIHHHHHH", b"\x7fELF\x02\x01\x01" + bytes(9), 2, 190, 1, 0, 0, table, 0x5a00, 64,
                         0, 0, 64, len(headers), len(headers) - 1)
    return header + body + b"".join(headers)


@pytest.mark.parametrize("sections, problem", [
    ([(".nv.info._Z1kv", 0, b"\x04\x17")], "is truncated"),
    ([(".nv.info._Z1kv", 0, b"\x04\x17\x20\x00abc")], "is truncated"),
    ([(".nv.global", 8, 1 << 62)], "does not fit the cubin"),
])
def test_a_cubin_whose_tables_lie_is_one_clear_error(sections, problem):
    with pytest.raises(CubinError, match=problem):
        Cubin(_elf(sections), "lying.cubin").kernel_parameters("_Z1kv")


def test_relocatable_device_code_that_needs_linking_is_refused_in_one_line(tmp_path):
    from emulator.cudart.libdir import library_directory
    directory, _ = library_directory()
    program = tmp_path / "constant_symbol"
    subprocess.run([NVCC, "-cudart", "shared", "-rdc=true", "-o", str(program),
                    os.path.join(PROGRAMS, "constant_symbol.cu")], check=True, capture_output=True)
    result = subprocess.run([str(program)], capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, LD_LIBRARY_PATH=directory))
    assert result.returncode == 1
    assert "cudaErrorNoKernelImageForDevice" in result.stdout
    lines = [line for line in result.stderr.splitlines() if "relocatable device code" in line]
    assert len(lines) == 1 and "'evaluated'" in lines[0] and "build without -rdc=true" in lines[0], result.stderr
