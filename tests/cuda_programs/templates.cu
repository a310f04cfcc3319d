// In the manner of NVIDIA's simpleTemplates: one templated kernel with a typed view of extern shared memory
// (specialised per type, since extern __shared__ arrays of different types cannot share a name), run for int,
// float and double and checked against the host's computation.
#include "check.h"

template <class T> struct SharedMemory {
    __device__ T *get() { extern __shared__ int shared_int[]; return (T *)shared_int; }
};
template <> struct SharedMemory<double> {
    __device__ double *get() { extern __shared__ double shared_double[]; return shared_double; }
};

template <class T>
__global__ void scale_and_reverse(const T *in, T *out, T factor)
{
    T *data = SharedMemory<T>().get();
    int t = threadIdx.x;
    data[t] = in[blockIdx.x * blockDim.x + t] * factor;
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = data[blockDim.x - 1 - t] + (T)t;
}

template <class T>
static int run(const char *name, T factor)
{
    const int blocks = 3, threads = 64, n = blocks * threads;
    T h_in[n], h_out[n], *d_in, *d_out;
    for (int i = 0; i < n; i++) h_in[i] = (T)(i % 50) - (T)7 / (T)2;
    CHECK(cudaMalloc(&d_in, sizeof(h_in)));
    CHECK(cudaMalloc(&d_out, sizeof(h_out)));
    CHECK(cudaMemcpy(d_in, h_in, sizeof(h_in), cudaMemcpyHostToDevice));
    scale_and_reverse<T><<<blocks, threads, threads * sizeof(T)>>>(d_in, d_out, factor);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(h_out, d_out, sizeof(h_out), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int b = 0; b < blocks; b++)
        for (int t = 0; t < threads; t++)
            wrong += h_out[b * threads + t] != h_in[b * threads + threads - 1 - t] * factor + (T)t;
    printf("%s: %s\n", name, wrong ? "wrong" : "correct");
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    return wrong;
}

int main()
{
    int wrong = run<int>("int", 3) + run<float>("float", 1.5f) + run<double>("double", -0.25);
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}
