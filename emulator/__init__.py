"""gpuemu: run CUDA PTX and SASS kernels on a CPU and show what the memory system does.

This package root is where the pieces are wired together, once: the compiled arithmetic helpers
(emulator.accel) are handed to isa's semantics here, whichever part of gpuemu is imported first."""
from emulator import accel as _accel

_accel.install()


def load(source, *, device=None):
    """Load PTX (a path or the text itself) into a device; returns a module whose kernels can be launched."""
    from emulator.runtime.module import load as _load
    return _load(source, device=device)
