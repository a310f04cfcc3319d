// A per-thread array indexed by data-dependent values, which nvcc places in local memory
// (ld.local / st.local): each thread insertion-sorts its VALUES_PER_THREAD inputs and writes a
// polynomial hash of the sorted sequence.

#define VALUES_PER_THREAD 16

__global__ void sortLocal(const unsigned short *in, unsigned int *out)
{
    unsigned int values[VALUES_PER_THREAD];
    int gid = blockIdx.x * blockDim.x + threadIdx.x;

    for (int k = 0; k < VALUES_PER_THREAD; ++k)
        values[k] = in[gid * VALUES_PER_THREAD + k];

    for (int i = 1; i < VALUES_PER_THREAD; ++i) {
        unsigned int key = values[i];
        int j = i - 1;
        while (j >= 0 && values[j] > key) {
            values[j + 1] = values[j];
            --j;
        }
        values[j + 1] = key;
    }

    unsigned int hash = 0;
    for (int k = 0; k < VALUES_PER_THREAD; ++k)
        hash = hash * 31u + values[k];
    out[gid] = hash;
}
