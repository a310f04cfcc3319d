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



def _error_texts() -> str:
    """C rows {code, driver name, meaning} of every error gpuemu returns (cuGetErrorName/String without Python)."""
    from . import codes
    return ",\n".join(f'    {{{code}, "{name}", "{codes.meaning(code)}"}}' for code, name in sorted(codes.DRIVER_NAMES.items()))


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

static const struct { int code; const char *name; const char *meaning; } gpuemu_error_texts[] = {
ERROR_TEXTS
};

/* cuGetErrorName/String once the host's Python has finalised: CuPy words the error of a module unloaded at exit */
static CUresult gpuemu_error_text(CUresult error, const char **text, int name)
{
    size_t i;
    for (i = 0; i < sizeof gpuemu_error_texts / sizeof gpuemu_error_texts[0]; i++)
        if (gpuemu_error_texts[i].code == error) {
            *text = name ? gpuemu_error_texts[i].name : gpuemu_error_texts[i].meaning;
            return 0;
        }
    *text = NULL;
    return 1;
}

/* NVIDIA's private driver tables, asked for by a statically linked CUDA runtime (nvcc's default, CuPy's wheels from
   13.0): gpuemu serves none of them. The runtime's first request is for its CUDART_INTERFACE table; NVRTC asks for
   another and goes on without it, so only the runtime's request is worth a line. */
static const unsigned char gpuemu_cudart_interface_id[16] = {
    0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9};
static int gpuemu_static_runtime_reported = 0;

__attribute__((visibility("default")))
CUresult cuGetExportTable(const void **table, const void *id)
{
    if (table == NULL || id == NULL)
        return 1;
    *table = NULL;
    if (memcmp(id, gpuemu_cudart_interface_id, 16) == 0 && !gpuemu_static_runtime_reported) {
        gpuemu_static_runtime_reported = 1;
        fflush(stdout);
        fprintf(stderr, "gpuemu: this program links NVIDIA's CUDA runtime statically (nvcc's default; CuPy's wheels "
                        "from 13.0), which needs the driver's private tables (cuGetExportTable) that gpuemu does not "
                        "provide: build it with nvcc -cudart shared (CuPy: cupy-cuda12x 12.3.0), see "
                        "docs/cuda-programs.md\n");
    }
    return 801;
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
    c_source=CUDA_C.replace("VERSIONS", _versioned_names()).replace("ERROR_TEXTS", _error_texts()),
    c_defines=("cuGetProcAddress", "cuGetProcAddress_v2", "cuGetExportTable"),
    proc_table=True,
    fallbacks=(("cuGetErrorName", "if (pStr == NULL) return 1; return gpuemu_error_text(error, pStr, 1);"),
               ("cuGetErrorString", "if (pStr == NULL) return 1; return gpuemu_error_text(error, pStr, 0);")),
)

#: GPUOcelot's ptx_run, which tinygrad's mock CUDA and NV devices load (c.DLL("ocelot", "gpuocelot"))
OCELOT = Library(
    filename="libgpuocelot.so",
    module_name="_gpuemu_ocelot",
    prototypes="ocelot.h",
    implementation="emulator.cudart.ocelot",
)

#: cuSPARSE's two functions that return a string rather than a status (CuPy calls them to word a failure)
CUSPARSE_C = r"""
__attribute__((visibility("default")))
const char *cusparseGetErrorName(int status)
{
    return status == 10 ? "CUSPARSE_STATUS_NOT_SUPPORTED" : "CUSPARSE_STATUS_UNKNOWN";
}

__attribute__((visibility("default")))
const char *cusparseGetErrorString(int status)
{
    return status == 10 ? "operation not supported (gpuemu runs kernels, not cuSPARSE)" : "unknown status";
}
"""


def _math_library(filename: str, module_name: str, **extra) -> Library:
    """A stand-in for one of NVIDIA's math libraries: its exports, each returning the library's 'not supported'."""
    return Library(filename=filename, module_name=module_name, prototypes="unsupported.h",
                   implementation="emulator.cudart.unsupported", exports=(filename + ".txt",), **extra)


MATH_LIBRARIES = [
    _math_library("libcublas.so.12", "_gpuemu_cublas12"),
    _math_library("libcusolver.so.11", "_gpuemu_cusolver11"),
    _math_library("libcusparse.so.12", "_gpuemu_cusparse12", c_source=CUSPARSE_C,
                  c_defines=("cusparseGetErrorName", "cusparseGetErrorString")),
    _math_library("libcufft.so.11", "_gpuemu_cufft11"),
    _math_library("libcurand.so.10", "_gpuemu_curand10"),
]

LIBRARIES = [CUDART, CUDART12, CUDA, OCELOT, *MATH_LIBRARIES]
