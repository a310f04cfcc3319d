"""gpuemu: run CUDA PTX and SASS kernels on a CPU and show what the memory system does."""
