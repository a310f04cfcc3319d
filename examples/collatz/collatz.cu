// Collatz step counts of start + global thread index: loop trip counts differ from lane to
// lane, so warps diverge heavily.

__global__ void collatz(unsigned int *steps, unsigned long long start)
{
    unsigned int gid = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long x = start + gid;
    unsigned int count = 0;
    while (x != 1) {
        x = (x & 1) ? 3 * x + 1 : x >> 1;
        ++count;
    }
    steps[gid] = count;
}
