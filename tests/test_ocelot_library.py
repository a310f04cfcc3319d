"""libgpuocelot.so (`gpuemu ocelot-lib`): GPUOcelot's C ptx_run, called through ctypes as tinygrad's mock GPUs call
it, on raw addresses of numpy buffers; results checked against numpy. Each case runs in a child process (the
library starts gpuemu inside the process that loads it)."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

SCALE = (Path(__file__).parent / "kernels" / "scale.ptx").read_text()

PRELUDE = textwrap.dedent("""
    import ctypes, json, mmap, sys
    import numpy as np
    library = ctypes.CDLL(sys.argv[1])
    library.ptx_run.restype = None
    library.ptx_run.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)] + [ctypes.c_int] * 7
    source = sys.argv[2].encode()

    def run(*args, block=32):
        values = (ctypes.c_void_p * len(args))(*[ctypes.cast(a, ctypes.c_void_p) if a else None for a in args])
        library.ptx_run(source, len(args), values, block, 1, 1, 1, 1, 1, 0)
""")


@pytest.fixture(scope="module")
def library():
    from emulator.cudart.libdir import library_directory
    from emulator.cudart.libraries import OCELOT
    directory, failed = library_directory()
    if OCELOT.filename in failed:
        pytest.skip(f"{OCELOT.filename} could not be built: {failed[OCELOT.filename]}")
    return os.path.join(directory, OCELOT.filename)


def run_child(library, body: str):
    script = PRELUDE + textwrap.dedent(body)
    result = subprocess.run([sys.executable, "-c", script, library, SCALE], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1]), result.stderr


def test_ptx_run_reads_and_writes_numpy_buffers_in_place(library):
    got, stderr = run_child(library, """
        x = np.linspace(-3, 5, 8, dtype=np.float32)
        out = np.full(8, 7, dtype=np.float32)
        run(out.ctypes.data, x.ctypes.data, 8)
        print(json.dumps({"out": out.tolist(), "x": x.tolist()}))
    """)
    x = np.linspace(-3, 5, 8, dtype=np.float32)
    assert got["out"] == (x + x).tolist() and stderr == ""


def test_ptx_run_takes_pointers_into_the_middle_of_a_buffer(library):
    got, _ = run_child(library, """
        x = np.arange(16, dtype=np.float32)
        out = np.full(16, -1, dtype=np.float32)
        run(out.ctypes.data + 20, x.ctypes.data + 8, 4)
        print(json.dumps(out.tolist()))
    """)
    assert got == [-1] * 5 + [4.0, 6.0, 8.0, 10.0] + [-1] * 7


def test_a_zero_scalar_arrives_as_null_and_runs_no_thread_past_it(library):
    got, _ = run_child(library, """
        x = np.ones(4, dtype=np.float32)
        out = np.zeros(4, dtype=np.float32)
        run(out.ctypes.data, x.ctypes.data, 0)
        print(json.dumps(out.tolist()))
    """)
    assert got == [0, 0, 0, 0]


def test_a_stray_pointer_is_a_fault_report_and_the_process_goes_on(library):
    got, stderr = run_child(library, """
        maps = open("/proc/self/maps").read().split()
        stray = int(maps[0].split("-")[0], 16) - (1 << 20)
        x = np.arange(4, dtype=np.float32)
        run(stray, x.ctypes.data, 4)
        out = np.zeros(4, dtype=np.float32)
        run(out.ctypes.data, x.ctypes.data, 4)
        print(json.dumps({"stray": stray, "out": out.tolist()}))
    """)
    assert f"{got['stray']:#x}" in stderr and "kernel fault" in stderr
    assert got["out"] == [0.0, 2.0, 4.0, 6.0]


def test_a_write_to_read_only_memory_is_a_fault_report(library):
    got, stderr = run_child(library, """
        page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ)
        read_only = np.frombuffer(page, dtype=np.float32)
        x = np.arange(4, dtype=np.float32)
        run(read_only.ctypes.data, x.ctypes.data, 4)
        print(json.dumps(read_only[:4].tolist()))
    """)
    assert got == [0, 0, 0, 0] and "read-only" in stderr


def test_the_library_starts_in_a_process_whose_capsule_type_is_in_the_type_cache(library):
    # Python < 3.12: cffi's start-up lock is PyCapsule_Type.tp_version_tag, which a capsule attribute lookup sets
    # (torch does one on import); the first ptx_run used to abort the process there
    got, _ = run_child(library, """
        import datetime
        getattr(datetime.datetime_CAPI, "anything", None)
        x = np.arange(4, dtype=np.float32)
        out = np.zeros(4, dtype=np.float32)
        run(out.ctypes.data, x.ctypes.data, 4)
        print(json.dumps(out.tolist()))
    """)
    assert got == [0.0, 2.0, 4.0, 6.0]
