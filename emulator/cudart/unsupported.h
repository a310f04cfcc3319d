/* NVIDIA's math libraries implement nothing in gpuemu: every function their real ones export (exports/) is a stub
   that says so in one line and returns the library's own "not supported" status (emulator/cudart/unsupported.py). */
