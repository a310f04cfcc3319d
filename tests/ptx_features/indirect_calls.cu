// Calls through function pointers (a table in global memory, a pointer chosen per thread) and virtual functions;
// nvcc writes these as `call (ret), %rd, (args), prototype;` with a .callprototype.

typedef float (*unary)(float);

__device__ __noinline__ float twice(float x) { return 2.0f * x; }
__device__ __noinline__ float square(float x) { return x * x; }
__device__ __noinline__ float shifted(float x) { return 1.0f - x; }

__device__ unary table[3] = {twice, square, shifted};

__global__ void call_through_table(float* out, const float* x, const int* choice) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = table[choice[i]](x[i]);
}

__device__ __noinline__ int apply_twice(int (*f)(int, int), int a, int b) { return f(f(a, b), b); }
__device__ __noinline__ int add_ints(int a, int b) { return a + b; }
__device__ __noinline__ int mul_ints(int a, int b) { return a * b; }

__global__ void call_pointer_argument(int* out, const int* a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = apply_twice(i % 2 ? add_ints : mul_ints, a[i], i % 5);
}

struct Shape {
    __device__ virtual float area() const = 0;
    __device__ virtual int sides() const { return 0; }
};
struct Square : Shape {
    float side;
    __device__ Square(float s) : side(s) {}
    __device__ float area() const override { return side * side; }
    __device__ int sides() const override { return 4; }
};
struct Circle : Shape {
    float radius;
    __device__ Circle(float r) : radius(r) {}
    __device__ float area() const override { return 3.14159265f * radius * radius; }
};

__global__ void call_virtual(float* areas, int* sides, const float* sizes) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    Square square(sizes[i]);
    Circle circle(sizes[i]);
    const Shape* shape = i % 3 == 0 ? static_cast<const Shape*>(&circle) : static_cast<const Shape*>(&square);
    areas[i] = shape->area();
    sides[i] = shape->sides();
}
