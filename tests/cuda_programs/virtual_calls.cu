// Function pointers and virtual functions: a table of __device__ function pointers read on the host with
// cudaMemcpyFromSymbol and passed back to a kernel (as NVIDIA's FunctionPointers sample does), and objects with
// virtual functions built in device memory by one kernel and called by another.
#include <new>
#include "check.h"

typedef int (*operation)(int, int);
__device__ int add(int a, int b) { return a + b; }
__device__ int subtract(int a, int b) { return a - b; }
__device__ int multiply(int a, int b) { return a * b; }
__device__ operation operations[3] = {add, subtract, multiply};

__global__ void apply(const operation *chosen, const int *a, const int *b, int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = chosen[i](a[i], b[i]);
}

struct Shape {
    __device__ virtual float area() const = 0;
    __device__ virtual int corners() const { return 0; }
};
struct Rectangle : Shape {
    float w, h;
    __device__ Rectangle(float w, float h) : w(w), h(h) {}
    __device__ float area() const override { return w * h; }
    __device__ int corners() const override { return 4; }
};
struct Disc : Shape {
    float r;
    __device__ Disc(float r) : r(r) {}
    __device__ float area() const override { return 3.0f * r * r; }
};

union Slot { char rectangle[sizeof(Rectangle)]; char disc[sizeof(Disc)]; double align; };

__global__ void build(Slot *slots, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (i % 2) new (&slots[i]) Rectangle(i, 2.0f);
    else new (&slots[i]) Disc(i);
}

__global__ void measure(const Slot *slots, float *areas, int *corners, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const Shape *shape = reinterpret_cast<const Shape *>(&slots[i]);
    areas[i] = shape->area();
    corners[i] = shape->corners();
}

int main()
{
    const int n = 96;
    operation table[3], chosen[n];
    CHECK(cudaMemcpyFromSymbol(table, operations, sizeof(table)));
    int h_a[n], h_b[n], h_out[n];
    for (int i = 0; i < n; i++) { h_a[i] = i * 3 - 40; h_b[i] = 7 - i; chosen[i] = table[2 * i % 3]; }
    operation *d_chosen;
    int *d_a, *d_b, *d_out;
    CHECK(cudaMalloc(&d_chosen, sizeof(chosen)));
    CHECK(cudaMalloc(&d_a, sizeof(h_a)));
    CHECK(cudaMalloc(&d_b, sizeof(h_b)));
    CHECK(cudaMalloc(&d_out, sizeof(h_out)));
    CHECK(cudaMemcpy(d_chosen, chosen, sizeof(chosen), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_a, h_a, sizeof(h_a), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_b, h_b, sizeof(h_b), cudaMemcpyHostToDevice));
    apply<<<3, 32>>>(d_chosen, d_a, d_b, d_out, n);
    CHECK(cudaMemcpy(h_out, d_out, sizeof(h_out), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < n; i++) {
        int k = 2 * i % 3;
        wrong += h_out[i] != (k == 0 ? h_a[i] + h_b[i] : k == 1 ? h_a[i] - h_b[i] : h_a[i] * h_b[i]);
    }
    Slot *d_slots;
    float areas[n], *d_areas;
    int corners[n], *d_corners;
    CHECK(cudaMalloc(&d_slots, n * sizeof(Slot)));
    CHECK(cudaMalloc(&d_areas, sizeof(areas)));
    CHECK(cudaMalloc(&d_corners, sizeof(corners)));
    build<<<3, 32>>>(d_slots, n);
    measure<<<3, 32>>>(d_slots, d_areas, d_corners, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(areas, d_areas, sizeof(areas), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(corners, d_corners, sizeof(corners), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        float want = i % 2 ? i * 2.0f : 3.0f * i * i;
        wrong += areas[i] != want || corners[i] != (i % 2 ? 4 : 0);
    }
    printf("out[5] = %d, area[7] = %g, area[8] = %g, corners[7] = %d\n", h_out[5], areas[7], areas[8], corners[7]);
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}
