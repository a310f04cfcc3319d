"""Linking PTX modules into one (emulator.cudart.ptxlink), what cuLinkComplete and numba's link step hand gpuemu.

link_main.ptx and link_twice.ptx are nvcc 13.0 -arch=sm_90 -rdc=true -ptx of
    link_main.cu:  extern __device__ float twice(float);  static __noinline__ __device__ float helper(float x)
                   { return x + 1; }  extern "C" __global__ void kern(float *out, const float *in, int n)
                   { ... out[i] = twice(helper(in[i])); }
    link_twice.cu: static __noinline__ __device__ float helper(float x) { return x * 3; }
                   __device__ float twice(float x) { return helper(x) - x; }
so the kernel calls an extern function defined in the other module, and both modules have their own `helper`.
"""
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import emulator
from emulator.cudart.ptxlink import link, split_statements
from emulator.errors import UsageError

KERNELS = Path(__file__).parent / "kernels"
MAIN = (KERNELS / "link_main.ptx").read_text()
TWICE = (KERNELS / "link_twice.ptx").read_text()


@pytest.mark.parametrize("order", ["caller first", "definition first"])
def test_linked_modules_resolve_the_extern_and_keep_each_internal_helper(order):
    """With the defining module first, the caller's prototype follows the definition (numba links a .cu file
    before the one that declares its function): the prototype must not hide the body."""
    x = np.linspace(-2, 2, 37).astype(np.float32)
    out = np.zeros_like(x)
    modules = [MAIN, TWICE] if order == "caller first" else [TWICE, MAIN]
    emulator.load(link(modules)).kernel("kern").launch(2, 32, [out, x, 37])
    y = x + np.float32(1)
    assert np.array_equal(out, y * np.float32(3) - y)


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not installed")
@pytest.mark.parametrize("modules", [[MAIN, TWICE], [TWICE, MAIN]])
def test_ptxas_accepts_the_linked_module(tmp_path, modules):
    path = tmp_path / "linked.ptx"
    path.write_text(link(modules))
    result = subprocess.run(["ptxas", "-arch=sm_90", str(path), "-o", str(tmp_path / "linked.cubin")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_a_name_defined_visibly_twice_is_refused():
    with pytest.raises(UsageError, match="_Z5twicef"):
        link([MAIN, TWICE, TWICE])


def test_statements_split_at_semicolons_bodies_and_header_lines():
    text = ".version 8.0\n.target sm_90\n.address_size 64\n.global .align 4 .b8 g[4] = {1, 2, 3, 4};\n" \
           ".visible .func f() { ret; } // a } in a comment\n.extern .func (.param .b32 r) h(.param .b32 a);\n"
    assert split_statements(text) == [".version 8.0", ".target sm_90", ".address_size 64",
                                      ".global .align 4 .b8 g[4] = {1, 2, 3, 4};", ".visible .func f() { ret; }",
                                      "// a } in a comment\n.extern .func (.param .b32 r) h(.param .b32 a);"]
