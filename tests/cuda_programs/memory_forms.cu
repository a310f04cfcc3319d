// Less common memory calls: registered host memory, 3D pitched memory, 2D memset, cudaMemcpyDefault, peer copies.
#include "check.h"

__global__ void count_up(int *out, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] += i; }

__global__ void mark_volume(cudaPitchedPtr volume, int width, int height, int depth)
{
    int x = threadIdx.x, y = blockIdx.x, z = blockIdx.y;
    if (x < width && y < height && z < depth) {
        char *slice = (char *)volume.ptr + z * volume.pitch * height;
        ((short *)(slice + y * volume.pitch))[x] += (short)(100 * z + 10 * y + x);
    }
}

int main()
{
    const int n = 300;
    int *registered = (int *)malloc(n * sizeof(int)), *device_view;
    for (int i = 0; i < n; i++) registered[i] = 1000;
    CHECK(cudaHostRegister(registered, n * sizeof(int), cudaHostRegisterMapped));
    CHECK(cudaHostGetDevicePointer((void **)&device_view, registered, 0));
    count_up<<<(n + 127) / 128, 128>>>(device_view, n);
    CHECK(cudaDeviceSynchronize());
    int wrong = 0;
    for (int i = 0; i < n; i++) wrong += registered[i] != 1000 + i;
    CHECK(cudaHostUnregister(registered));

    const int width = 7, height = 5, depth = 3;
    cudaExtent extent = make_cudaExtent(width * sizeof(short), height, depth);
    cudaPitchedPtr volume;
    CHECK(cudaMalloc3D(&volume, extent));
    CHECK(cudaMemset3D(volume, 0, extent));
    mark_volume<<<dim3(height, depth), 32>>>(volume, width, height, depth);
    static short host[depth][height][width];
    cudaMemcpy3DParms copy = {0};
    copy.srcPtr = volume;
    copy.dstPtr = make_cudaPitchedPtr(host, width * sizeof(short), width, height);
    copy.extent = extent;
    copy.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3D(&copy));
    for (int z = 0; z < depth; z++)
        for (int y = 0; y < height; y++)
            for (int x = 0; x < width; x++) wrong += host[z][y][x] != 100 * z + 10 * y + x;

    unsigned char *plane, row[16];
    size_t pitch;
    CHECK(cudaMallocPitch((void **)&plane, &pitch, 16, 4));
    CHECK(cudaMemset2D(plane, pitch, 0xAB, 16, 4));
    CHECK(cudaMemcpy(row, plane + 3 * pitch, 16, cudaMemcpyDefault));
    for (int i = 0; i < 16; i++) wrong += row[i] != 0xAB;
    int *a, *b, value = 77, back = 0;
    CHECK(cudaMalloc(&a, sizeof(int))); CHECK(cudaMalloc(&b, sizeof(int)));
    CHECK(cudaMemcpy(a, &value, sizeof value, cudaMemcpyDefault));
    CHECK(cudaMemcpyPeer(b, 0, a, 0, sizeof(int)));
    CHECK(cudaMemcpy(&back, b, sizeof back, cudaMemcpyDefault));
    wrong += back != 77;
    printf("registered[299] = %d, volume[2][4][6] = %d, row[15] = 0x%X, peer copy %d\n", registered[n - 1],
           host[2][4][6], row[15], back);
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}
