"""The drop-in libraries gpuemu builds: what each implements in Python, what in C, and what its real one exports."""
from __future__ import annotations

import os
from dataclasses import replace

from .builder import Library

#: nvcc's launch sequence pushes <<<grid, block, shared, stream>>> and pops it in the kernel's host stub: kept in
#: C, per thread, as it is on every launch's path
CUDART_C = r"""
typedef struct { dim3 grid; dim3 block; size_t shared; void *stream; } gpuemu_launch_configuration;
static __thread gpuemu_launch_configuration gpuemu_configurations[64];
static __thread int gpuemu_configuration_depth = 0;

__attribute__((visibility("default")))
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, void *stream)
{
    if (gpuemu_configuration_depth == 64)
        return 1;
    gpuemu_launch_configuration *c = &gpuemu_configurations[gpuemu_configuration_depth++];
    c->grid = gridDim;
    c->block = blockDim;
    c->shared = sharedMem;
    c->stream = stream;
    return 0;
}

__attribute__((visibility("default")))
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem, void *stream)
{
    if (gpuemu_configuration_depth == 0)
        return 52;
    gpuemu_launch_configuration *c = &gpuemu_configurations[--gpuemu_configuration_depth];
    *gridDim = c->grid;
    *blockDim = c->block;
    *sharedMem = c->shared;
    *(void **)stream = c->stream;
    return 0;
}

__attribute__((visibility("default")))
struct cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w, int f)
{
    struct cudaChannelFormatDesc desc;
    desc.x = x; desc.y = y; desc.z = z; desc.w = w; desc.f = f;
    return desc;
}
"""

CUDART = Library(
    filename="libcudart.so.13",
    links=("libcudart.so",),
    module_name="_gpuemu_cudart13",
    prototypes="runtime.h",
    implementation="emulator.cudart.runtime",
    exports=("libcudart.so.13.txt", "libcudart.so.12.txt"),
    c_source=CUDART_C,
    c_defines=("__cudaPushCallConfiguration", "__cudaPopCallConfiguration", "cudaCreateChannelDesc"),
)

#: the same runtime for programs built with CUDA 12, whose symbols carry the version libcudart.so.12
CUDART12 = replace(CUDART, filename="libcudart.so.12", links=(), module_name="_gpuemu_cudart12")



def _versioned_names() -> str:
    """C rows {plain name, the name CUDA 13's header maps it to}: cuMemAlloc → cuMemAlloc_v2."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exports", "libcuda.so.1.versions.txt")
    with open(path, encoding="utf-8") as handle:
        pairs = [line.split() for line in handle if line.strip()]
    return ",\n".join(f'    {{"{plain}", "{versioned}"}}' for plain, versioned in pairs)


#: cuGetProcAddress: a symbol name (as cuda.h spells it before its macros) and the CUDA version the caller was built
#: for → the entry point; CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (2) picks the _ptds/_ptsz variant
CUDA_C = r"""
#include <stdint.h>
static void *gpuemu_lookup(const char *name);
static const struct { const char *plain; const char *versioned; } gpuemu_versions[] = {
VERSIONS
};

static void *gpuemu_entry_point(const char *symbol, int cuda_version, unsigned long long flags)
{
    char name[256];
    void *found;
    size_t i;
    if (strlen(symbol) > 200)
        return NULL;
    strcpy(name, symbol);
    for (i = 0; i < sizeof gpuemu_versions / sizeof gpuemu_versions[0]; i++)
        if (strcmp(symbol, gpuemu_versions[i].plain) == 0) {
            strcpy(name, gpuemu_versions[i].versioned);
            break;
        }
    if (strcmp(symbol, "cuCtxCreate") == 0)
        strcpy(name, cuda_version >= 12050 ? "cuCtxCreate_v4" : cuda_version >= 11040 ? "cuCtxCreate_v3" : "cuCtxCreate_v2");
    if (flags & 2) {
        size_t length = strlen(name);
        strcpy(name + length, "_ptds");
        if ((found = gpuemu_lookup(name)) != NULL)
            return found;
        strcpy(name + length, "_ptsz");
        if ((found = gpuemu_lookup(name)) != NULL)
            return found;
        name[length] = 0;
    }
    return gpuemu_lookup(name);
}

__attribute__((visibility("default")))
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, unsigned long long flags, int *symbolStatus)
{
    void *found;
    if (symbol == NULL || pfn == NULL)
        return 1;
    found = gpuemu_entry_point(symbol, cudaVersion, flags);
    *pfn = found;
    if (symbolStatus != NULL) {  /* the H100's driver: success, the status saying whether the symbol was found */
        *symbolStatus = found ? 0 : 1;
        return 0;
    }
    return found ? 0 : 500;
}

__attribute__((visibility("default")))
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, unsigned long long flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
"""

CUDA = Library(
    filename="libcuda.so.1",
    links=("libcuda.so",),
    module_name="_gpuemu_cuda",
    prototypes="driver.h",
    implementation="emulator.cudart.driver",
    exports=("libcuda.so.1.txt",),
    c_source=CUDA_C.replace("VERSIONS", _versioned_names()),
    c_defines=("cuGetProcAddress", "cuGetProcAddress_v2"),
    proc_table=True,
)

#: GPUOcelot's ptx_run, which tinygrad's mock CUDA and NV devices load (c.DLL("ocelot", "gpuocelot"))
OCELOT = Library(
    filename="libgpuocelot.so",
    module_name="_gpuemu_ocelot",
    prototypes="ocelot.h",
    implementation="emulator.cudart.ocelot",
)

LIBRARIES = [CUDART, CUDART12, CUDA, OCELOT]
