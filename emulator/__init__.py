"""gpuemu: run CUDA PTX and SASS kernels on a CPU and show what the memory system does.

This package root is where the pieces are wired together, once: the compiled arithmetic helpers
(emulator.accel) are handed to isa's semantics here, whichever part of gpuemu is imported first."""
from emulator import accel as _accel

_accel.install()


def load(source, *, device=None, language=None, options=(), contract=True):
    """Load PTX, a SASS listing or CUDA C++ (a path or the text itself) into a device; returns a module whose
    kernels can be launched. language="cuda" compiles text as CUDA C++ with the compiler options given;
    contract=False runs PTX literally, without the FMA contractions ptxas makes."""
    from emulator.runtime.module import load as _load
    return _load(source, device=device, language=language, options=options, contract=contract)
