"""Unmodified CUDA programs on gpuemu: drop-in libcudart/libcuda built with cffi's embedding mode (see
docs/cuda-programs.md); `gpuemu libdir` prints their directory."""
