/* GPUOcelot's entry point as tinygrad's mock GPUs call it: run the PTX kernel in src, each args[i] the value of a
   parameter (a pointer's address, a scalar's bits), on gx*gy*gz blocks of bx*by*bz threads. */
void ptx_run(char *src, int n, void **args, int bx, int by, int bz, int gx, int gy, int gz, int shared);
