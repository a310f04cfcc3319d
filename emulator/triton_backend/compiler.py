"""gpuemu's Triton compiler: Triton's NVIDIA pipeline up to PTX, and the PTX itself as the binary."""
from __future__ import annotations

import functools

from triton.backends.nvidia import compiler as nvidia_compiler

#: the name of the last stage and the binary's extension in Triton's cache
BINARY_STAGE = "gpuemu"

_state = {"emulating": False}


def take_cuda_targets() -> None:
    """From now on this backend compiles `cuda` targets (called when gpuemu's driver becomes Triton's driver)."""
    _state["emulating"] = True


class GpuemuCudaBackend(nvidia_compiler.CUDABackend):
    """CUDABackend without the ptxas stage: gpuemu runs the PTX."""

    @staticmethod
    def supports_target(target) -> bool:
        return target.backend == "cuda" and _state["emulating"]

    def __init__(self, target) -> None:
        super().__init__(target)
        self.binary_ext = BINARY_STAGE

    def add_stages(self, stages, options, language) -> None:
        super().add_stages(stages, options, language)
        stages.pop("cubin", None)
        stages[BINARY_STAGE] = lambda src, metadata: src.encode("utf-8")

    @functools.lru_cache()
    def hash(self) -> str:
        return f"gpuemu-{super().hash()}"
