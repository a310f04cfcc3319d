"""The drop-in libraries gpuemu builds: what each implements in Python, what in C, and what its real one exports."""
from __future__ import annotations

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

LIBRARIES = [CUDART, CUDART12]
