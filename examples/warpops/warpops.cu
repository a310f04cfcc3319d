// Warp-level intrinsics and integer operations whose exact results the emulator must match:
// __activemask under divergence, votes, shuffles, warp reductions, bit-manipulation intrinsics,
// and integer division / remainder including division by zero and INT_MIN / -1 (undefined in C;
// the expected files record what the GPU gives).

#define FULL_MASK 0xffffffffu
#define SHUFFLE_COLUMNS 12
#define BIT_COLUMNS 16
#define DIV_COLUMNS 4

__global__ void activemaskIf(const int *v, unsigned int *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (v[i] % 3 == 0)
        out[i] = __activemask();
}

// out holds SHUFFLE_COLUMNS ints per thread.
__global__ void voteShuffle(const int *in, int *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int x = in[i];

    int sum = x;
    for (int offset = 16; offset > 0; offset /= 2)
        sum += __shfl_down_sync(FULL_MASK, sum, offset);
    int maximum = x;
    for (int mask = 1; mask < 32; mask *= 2)
        maximum = max(maximum, __shfl_xor_sync(FULL_MASK, maximum, mask));

    int *row = out + i * SHUFFLE_COLUMNS;
    row[0] = __ballot_sync(FULL_MASK, x > 0);
    row[1] = __all_sync(FULL_MASK, x > -90);
    row[2] = __any_sync(FULL_MASK, x > 90);
    row[3] = __shfl_sync(FULL_MASK, x, (lane * 7 + 3) & 31);
    row[4] = __shfl_up_sync(FULL_MASK, x, 3);
    row[5] = __shfl_down_sync(FULL_MASK, x, 5);
    row[6] = __shfl_xor_sync(FULL_MASK, x, 6);
    row[7] = __shfl_sync(FULL_MASK, x, lane + 3, 8);
    row[8] = sum;
    row[9] = maximum;
    row[10] = __reduce_add_sync(FULL_MASK, x);
    row[11] = __reduce_max_sync(FULL_MASK, (unsigned int) x);
}

// out holds BIT_COLUMNS unsigned ints per thread.
__global__ void bitIntrinsics(const unsigned int *a, const unsigned int *b, unsigned int *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int x = a[i];
    unsigned int y = b[i];
    unsigned int *row = out + i * BIT_COLUMNS;
    row[0] = __popc(x);
    row[1] = __clz(x);
    row[2] = __brev(x);
    row[3] = __byte_perm(x, y, y);
    row[4] = __funnelshift_l(x, y, y);
    row[5] = __funnelshift_lc(x, y, y);
    row[6] = __funnelshift_r(x, y, y);
    row[7] = __funnelshift_rc(x, y, y);
    row[8] = __mul24(x, y);
    row[9] = __umul24(x, y);
    row[10] = __umulhi(x, y);
    row[11] = __mulhi(x, y);
    row[12] = __sad(x, y, x >> 28);
    row[13] = __usad(x, y, y >> 28);
    row[14] = __ffs(x);
    row[15] = __popcll(((unsigned long long) x << 32) | y) + (__clzll((unsigned long long) y) << 8);
}

// out holds DIV_COLUMNS ints per thread: a / b, a % b, and both again as unsigned.
__global__ void divRem32(const int *a, const int *b, int *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int x = a[i];
    int y = b[i];
    int *row = out + i * DIV_COLUMNS;
    row[0] = x / y;
    row[1] = x % y;
    row[2] = (unsigned int) x / (unsigned int) y;
    row[3] = (unsigned int) x % (unsigned int) y;
}

// out holds DIV_COLUMNS long longs per thread.
__global__ void divRem64(const long long *a, const long long *b, long long *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    long long x = a[i];
    long long y = b[i];
    long long *row = out + i * DIV_COLUMNS;
    row[0] = x / y;
    row[1] = x % y;
    row[2] = (unsigned long long) x / (unsigned long long) y;
    row[3] = (unsigned long long) x % (unsigned long long) y;
}
