"""NVIDIA's math libraries (cuBLAS, cuSOLVER, cuSPARSE, cuFFT, cuRAND) as gpuemu's stand-ins: programs linked
against them load, and each call says in one line that gpuemu does not run it and returns the library's status for
an unsupported operation (CuPy links all five, so `import cupy` needs them even where no call is made)."""
from __future__ import annotations

from .binding import Implementations

IMPLEMENTATIONS = Implementations()
NOT_SUPPORTED_NAME = "not supported"
#: library → (its status for an unsupported operation, that status's name); cuRAND has none, so the generator's
#: set-up fails as it does where CUDA cannot start
STATUSES = {
    "libcublas.so.12": (15, "CUBLAS_STATUS_NOT_SUPPORTED"),
    "libcusolver.so.11": (9, "CUSOLVER_STATUS_NOT_SUPPORTED"),
    "libcusparse.so.12": (10, "CUSPARSE_STATUS_NOT_SUPPORTED"),
    "libcufft.so.11": (16, "CUFFT_NOT_SUPPORTED"),
    "libcurand.so.10": (203, "CURAND_STATUS_INITIALIZATION_FAILED"),
}
ffi = lib = None


def not_supported(library_name: str):
    status, name = STATUSES[library_name]
    return status, name, " (gpuemu runs kernels, not NVIDIA's math libraries)"
