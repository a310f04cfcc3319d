"""gpuemu as a Triton backend: `kernel[grid](...)` on torch CPU tensors runs the kernel's PTX in gpuemu.

Triton finds this package through the `triton.backends` entry point gpuemu's installation registers and
imports its `compiler` and `driver` modules. The driver is active when no GPU driver is (or when
TRITON_DEFAULT_BACKEND=gpuemu); it then compiles for `cuda` targets with Triton's own NVIDIA pipeline up
to PTX and launches that PTX through emulator.triton.launch.
"""
