// The driver API as numba-cuda or a JIT uses it: a PTX module loaded from text, launched with kernelParams and with
// a packed `extra` buffer, linked with cuLink*, a __device__ global, and entry points from cuGetProcAddress.
#include <cuda.h>
#include <cstdio>
#include <cstring>

#define CHECK(call)                                                                      \
    do {                                                                                 \
        CUresult status_ = (call);                                                       \
        if (status_ != CUDA_SUCCESS) {                                                   \
            const char *name_ = 0;                                                       \
            cuGetErrorName(status_, &name_);                                             \
            printf("driver error %s at line %d\n", name_ ? name_ : "?", __LINE__);     \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

static const char *ptx =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .global .align 4 .u32 calls;\n"
    ".visible .entry saxpy(.param .u64 x, .param .u64 y, .param .f32 a, .param .u32 n)\n{\n"
    "  .reg .pred %p; .reg .b32 %r<6>; .reg .f32 %f<5>; .reg .b64 %rd<6>;\n"
    "  mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x;\n"
    "  mad.lo.s32 %r4, %r1, %r2, %r3;\n"
    "  ld.param.u32 %r5, [n];\n"
    "  setp.ge.u32 %p, %r4, %r5;\n"
    "  @%p bra DONE;\n"
    "  atom.global.add.u32 %r1, [calls], 1;\n"
    "  ld.param.u64 %rd1, [x]; ld.param.u64 %rd2, [y]; ld.param.f32 %f1, [a];\n"
    "  cvta.to.global.u64 %rd1, %rd1; cvta.to.global.u64 %rd2, %rd2;\n"
    "  mul.wide.u32 %rd3, %r4, 4;\n"
    "  add.s64 %rd4, %rd1, %rd3; add.s64 %rd5, %rd2, %rd3;\n"
    "  ld.global.f32 %f2, [%rd4]; ld.global.f32 %f3, [%rd5];\n"
    "  fma.rn.f32 %f4, %f1, %f2, %f3;\n"
    "  st.global.f32 [%rd5], %f4;\n"
    "DONE:\n  ret;\n}\n";

int main()
{
    const unsigned n = 1000;
    float x[n], y[n];
    for (unsigned i = 0; i < n; i++) { x[i] = i; y[i] = 1.0f; }
    CHECK(cuInit(0));
    CUdevice device;
    CUcontext context;
    CHECK(cuDeviceGet(&device, 0));
    CHECK(cuDevicePrimaryCtxRetain(&context, device));
    CHECK(cuCtxSetCurrent(context));
    CUmodule module;
    CUfunction saxpy;
    CHECK(cuModuleLoadData(&module, ptx));
    CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));
    CUdeviceptr dx, dy, calls;
    size_t calls_size;
    CHECK(cuMemAlloc(&dx, sizeof x));
    CHECK(cuMemAlloc(&dy, sizeof y));
    CHECK(cuMemcpyHtoD(dx, x, sizeof x));
    CHECK(cuMemcpyHtoD(dy, y, sizeof y));
    float a = 2.0f;
    unsigned count = n;
    void *params[] = {&dx, &dy, &a, &count};
    CHECK(cuLaunchKernel(saxpy, (n + 127) / 128, 1, 1, 128, 1, 1, 0, 0, params, 0));
    struct { CUdeviceptr x, y; float a; unsigned n; } packed = {dx, dy, 0.5f, n};
    size_t packed_size = sizeof packed;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &packed_size,
                     CU_LAUNCH_PARAM_END};
    CHECK(cuLaunchKernel(saxpy, (n + 127) / 128, 1, 1, 128, 1, 1, 0, 0, 0, extra));
    CHECK(cuCtxSynchronize());
    CHECK(cuMemcpyDtoH(y, dy, sizeof y));
    unsigned launched = 0;
    CHECK(cuModuleGetGlobal(&calls, &calls_size, module, "calls"));
    CHECK(cuMemcpyDtoH(&launched, calls, sizeof launched));
    int wrong = 0;
    for (unsigned i = 0; i < n; i++) wrong += y[i] != 1.0f + 2.5f * i;
    printf("y[999] = %.1f, calls = %u (%zu-byte global)\n", y[n - 1], launched, calls_size);

    CUlinkState link;
    void *image;
    size_t image_size;
    CUmodule linked;
    CUfunction linked_saxpy;
    CHECK(cuLinkCreate(0, 0, 0, &link));
    CHECK(cuLinkAddData(link, CU_JIT_INPUT_PTX, (void *)ptx, strlen(ptx) + 1, "saxpy.ptx", 0, 0, 0));
    CHECK(cuLinkComplete(link, &image, &image_size));
    CHECK(cuModuleLoadData(&linked, image));
    CHECK(cuLinkDestroy(link));
    CHECK(cuModuleGetFunction(&linked_saxpy, linked, "saxpy"));
    a = -1.0f;
    CHECK(cuLaunchKernel(linked_saxpy, (n + 127) / 128, 1, 1, 128, 1, 1, 0, 0, params, 0));
    CHECK(cuMemcpyDtoH(y, dy, sizeof y));
    for (unsigned i = 0; i < n; i++) wrong += y[i] != 1.0f + 1.5f * i;
    printf("after the linked module: y[999] = %.1f\n", y[n - 1]);

    void *entry = 0;
    CUdriverProcAddressQueryResult found;
    CHECK(cuGetProcAddress("cuMemAlloc", &entry, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &found));
    printf("cuGetProcAddress(cuMemAlloc) is cuMemAlloc_v2: %s\n", entry == (void *)&cuMemAlloc_v2 ? "yes" : "no");
    wrong += entry != (void *)&cuMemAlloc_v2;
    CUresult missing = cuGetProcAddress("cuNoSuchFunction", &entry, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &found);
    printf("unknown symbol: %d, status %d\n", (int)missing, (int)found);
    const char elf[] = "\x7f" "ELF\2\1\1";
    CUmodule refused;
    CUresult status = cuModuleLoadData(&refused, elf);
    const char *name = 0;
    cuGetErrorName(status, &name);
    printf("cubin image: %s\n", name);
    CHECK(cuMemFree(dx));
    CHECK(cuMemFree(dy));
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}
