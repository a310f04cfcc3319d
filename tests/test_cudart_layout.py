"""gpuemu's libcudart lays out CUDA's structs as the installed CUDA headers do: every field's offset, every size."""
import shutil
import subprocess

import pytest

NVCC = shutil.which("nvcc")
STRUCTS = ("cudaDeviceProp", "cudaPointerAttributes", "cudaFuncAttributes", "cudaPitchedPtr", "cudaExtent",
           "cudaPos", "cudaMemcpy3DParms", "cudaChannelFormatDesc", "cudaLaunchAttribute_st", "cudaLaunchConfig_st")


def gpuemu_ffi():
    import cffi
    from emulator.cudart import builder
    ffi = cffi.FFI()
    ffi.cdef(builder._types())
    return ffi


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_struct_offsets_match_the_installed_cuda_headers(tmp_path):
    ffi = gpuemu_ffi()
    lines = ["#include <cstdio>", "#include <cstddef>", "#include <cuda_runtime_api.h>", "int main() {"]
    for struct in STRUCTS:
        lines.append(f'printf("{struct} sizeof %zu\\n", sizeof(struct {struct}));')
        for name, _ in ffi.typeof(f"struct {struct}").fields:
            lines.append(f'printf("{struct} {name} %zu\\n", offsetof(struct {struct}, {name}));')
    lines.append("return 0; }")
    source = tmp_path / "layout.cpp"
    source.write_text("\n".join(lines))
    subprocess.run([NVCC, str(source), "-o", str(tmp_path / "layout")], check=True)
    printed = subprocess.run([str(tmp_path / "layout")], capture_output=True, text=True, check=True).stdout
    headers = {tuple(line.split()[:2]): int(line.split()[2]) for line in printed.splitlines()}
    ours = {}
    for struct in STRUCTS:
        ours[(struct, "sizeof")] = ffi.sizeof(f"struct {struct}")
        for name, _ in ffi.typeof(f"struct {struct}").fields:
            ours[(struct, name)] = ffi.offsetof(f"struct {struct}", name)
    assert ours == headers
    assert len(headers) > 130


def test_every_field_of_cudaDeviceProp_is_declared():
    ffi = gpuemu_ffi()
    fields = [name for name, _ in ffi.typeof("struct cudaDeviceProp").fields]
    assert fields[:3] == ["name", "uuid", "luid"] and fields[-1] == "reserved"
    assert ffi.sizeof("struct cudaDeviceProp") == ffi.offsetof("struct cudaDeviceProp", "reserved") + 56 * 4
