// A call gpuemu does not emulate (CUDA graphs) returns cudaErrorNotSupported instead of crashing the program.
#include <cstdio>

int main()
{
    cudaGraph_t graph;
    cudaError_t status = cudaGraphCreate(&graph, 0);
    printf("cudaGraphCreate: %s\n", cudaGetErrorName(status));
    printf("last error: %s\n", cudaGetErrorName(cudaGetLastError()));
    int *d;
    printf("cudaMalloc after it: %s\n", cudaGetErrorName(cudaMalloc(&d, 16)));
    return status == cudaErrorNotSupported ? 0 : 1;
}
