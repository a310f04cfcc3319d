// Pitched 2D memory: cudaMallocPitch, cudaMemset2D, cudaMemcpy2D host->device, device->device and device->host,
// a kernel that walks rows by the pitch, and a 3D pitched volume through cudaMalloc3D/cudaMemcpy3D.
#include "check.h"

__global__ void blur_rows(float *out, size_t out_pitch, const float *in, size_t in_pitch, int width, int height)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    const float *row = (const float *)((const char *)in + y * in_pitch);
    float left = x > 0 ? row[x - 1] : row[x], right = x + 1 < width ? row[x + 1] : row[x];
    ((float *)((char *)out + y * out_pitch))[x] = (left + 2 * row[x] + right) / 4;
}

__global__ void fill_volume(cudaPitchedPtr volume, int w, int h, int d)
{
    int x = threadIdx.x, y = blockIdx.x, z = blockIdx.y;
    if (x < w && y < h && z < d) {
        char *slice = (char *)volume.ptr + z * volume.pitch * volume.ysize;
        ((int *)(slice + y * volume.pitch))[x] = x + 10 * y + 100 * z;
    }
}

int main()
{
    const int width = 37, height = 11;
    float host[height][width], result[height][width];
    for (int y = 0; y < height; y++)
        for (int x = 0; x < width; x++) host[y][x] = (float)(x * 4 + y);
    float *d_in, *d_out, *d_copy;
    size_t pitch_in, pitch_out, pitch_copy;
    CHECK(cudaMallocPitch((void **)&d_in, &pitch_in, width * sizeof(float), height));
    CHECK(cudaMallocPitch((void **)&d_out, &pitch_out, width * sizeof(float), height));
    CHECK(cudaMallocPitch((void **)&d_copy, &pitch_copy, width * sizeof(float), height));
    CHECK(cudaMemset2D(d_out, pitch_out, 0, width * sizeof(float), height));
    CHECK(cudaMemcpy2D(d_in, pitch_in, host, width * sizeof(float), width * sizeof(float), height,
                       cudaMemcpyHostToDevice));
    dim3 block(16, 4), grid((width + 15) / 16, (height + 3) / 4);
    blur_rows<<<grid, block>>>(d_out, pitch_out, d_in, pitch_in, width, height);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy2D(d_copy, pitch_copy, d_out, pitch_out, width * sizeof(float), height,
                       cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy2D(result, width * sizeof(float), d_copy, pitch_copy, width * sizeof(float), height,
                       cudaMemcpyDeviceToHost));
    int wrong = pitch_in < width * sizeof(float) || pitch_in % 128 != 0;
    for (int y = 0; y < height; y++)
        for (int x = 0; x < width; x++) {
            float left = host[y][x > 0 ? x - 1 : x], right = host[y][x + 1 < width ? x + 1 : x];
            wrong += result[y][x] != (left + 2 * host[y][x] + right) / 4;
        }
    const int w = 5, h = 4, d = 3;
    cudaExtent extent = make_cudaExtent(w * sizeof(int), h, d);
    cudaPitchedPtr volume;
    CHECK(cudaMalloc3D(&volume, extent));
    fill_volume<<<dim3(h, d), 32>>>(volume, w, h, d);
    int back[d][h][w];
    cudaMemcpy3DParms copy = {0};
    copy.srcPtr = volume;
    copy.dstPtr = make_cudaPitchedPtr(back, w * sizeof(int), w, h);
    copy.extent = extent;
    copy.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3D(&copy));
    for (int z = 0; z < d; z++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) wrong += back[z][y][x] != x + 10 * y + 100 * z;
    printf("pitch %zu for rows of %zu bytes, result[5][20] = %g, volume[2][3][4] = %d\n", pitch_in,
           width * sizeof(float), result[5][20], back[2][3][4]);
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}
