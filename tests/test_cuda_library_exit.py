"""A call into gpuemu's libcuda.so.1 after the host process's Python has finalised (C++ thread-local destructors and
library destructors at exit: cuda.core releases its primary context there, CuPy unloads its modules during module
teardown) never crashes: a release succeeds, as the real driver's does at exit, and any other call fails with
CUDA_ERROR_DEINITIALIZED."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

AT_EXIT = """
#include <stdio.h>
extern int cuDevicePrimaryCtxRelease_v2(int device);
extern int cuMemAlloc_v2(unsigned long long *pointer, size_t size);
__attribute__((destructor)) static void release_at_exit(void)
{
    unsigned long long pointer = 0;
    fprintf(stderr, "after finalisation: release %d allocate %d\\n", cuDevicePrimaryCtxRelease_v2(0),
            cuMemAlloc_v2(&pointer, 16));
}
"""

CHILD = textwrap.dedent("""
    import ctypes, sys
    cuda = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
    print("init", cuda.cuInit(0), flush=True)
    ctypes.CDLL(sys.argv[2])
""")


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_after_python_finalised_a_release_succeeds_other_calls_fail_and_the_process_exits_cleanly(tmp_path):
    from emulator.cudart.libdir import library_directory
    directory, failed = library_directory()
    if "libcuda.so.1" in failed:
        pytest.skip(f"libcuda.so.1 could not be built: {failed['libcuda.so.1']}")
    source = tmp_path / "at_exit.c"
    source.write_text(AT_EXIT)
    helper = tmp_path / "libat_exit.so"
    subprocess.run(["gcc", "-shared", "-fPIC", str(source), "-o", str(helper)], check=True)
    result = subprocess.run([sys.executable, "-c", CHILD, os.path.join(directory, "libcuda.so.1"), str(helper)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["init", "0"]
    assert result.stderr.strip().splitlines()[-1] == "after finalisation: release 0 allocate 4"
