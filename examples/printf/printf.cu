// Device-side printf: one line per thread with the common C conversions (no %p: addresses
// differ between runs and machines). Every printed value is derived from the thread's index.

__global__ void printValues(float scale)
{
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    int signedValue = (gid - 3) * 1000;
    unsigned int unsignedValue = 4000000000u + gid;
    unsigned int hexValue = 0xdeadbeefu ^ (gid * 0x01010101u);
    float f = scale * (gid + 1) / 3.0f;
    long long wide = (gid - 4) * 123456789012LL;
    double e = 1.0 / (gid + 1);
    double g = (gid & 1) ? 1.0e10 * (gid + 1) : 0.0001 * (gid + 1);
    printf("block %d thread %u: d=%d u=%u x=%x f=%f .2f=%.2f s=%s lld=%lld e=%e g=%g\n",
           blockIdx.x, threadIdx.x, signedValue, unsignedValue, hexValue, f, f,
           (gid & 1) ? "odd" : "even", wide, e, g);
}
