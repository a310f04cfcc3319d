// Vector types and register reinterpretation, The CUDA Handbook section 8.1.1
// (cuda-handbook-8.1-memory.zh.txt): int2 / float4 move as single 64- / 128-bit loads and stores,
// and the __*_as_* / __double2*int / __hiloint2double intrinsics change a register's type in
// place, so NaN payloads and signed zeros must survive bit for bit.

__global__ void vectorSwizzle(const int2 *pairs, const float4 *quads, int2 *pairsOut,
                              float4 *quadsOut, float scale)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int2 p = pairs[i];
    float4 q = quads[i];
    pairsOut[i] = make_int2(p.y, p.x ^ p.y);
    quadsOut[i] = make_float4(q.w * scale, q.z, q.y, q.x);
}

__global__ void reinterpretFloat(const float *values, int *bits, float *negated)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int b = __float_as_int(values[i]);
    bits[i] = b;
    negated[i] = __int_as_float(b ^ 0x80000000);
}

__global__ void reinterpretDouble(const double *values, long long *bits, int *hi, int *lo,
                                  double *negated, double *next)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double d = values[i];
    long long b = __double_as_longlong(d);
    bits[i] = b;
    int h = __double2hiint(d);
    int l = __double2loint(d);
    hi[i] = h;
    lo[i] = l;
    negated[i] = __hiloint2double(h ^ 0x80000000, l);
    next[i] = __longlong_as_double(b + 1);
}
