"""gpuemu: run CUDA PTX and SASS kernels on a CPU and show what the memory system does."""


def load(source, *, device=None):
    """Load PTX (a path or the text itself) into a device; returns a module whose kernels can be launched."""
    from emulator.runtime.launch import load as _load
    return _load(source, device=device)
