// sm_90 instructions ML compilers emit, run on an H100 (outputs in expected/): fp8 e4m3/e5m2 conversions
// with and without satfinite, bf16x2 fma, f16x2 mul.sat, lop3, elect.sync, fence.proxy.async,
// mbarrier arrive.expect_tx/complete_tx/test_wait, match.any, redux.add, and two mma.sync shapes.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
extern "C" __global__ void fp8(const float* x, unsigned* o, float* f, int n){
  int i = blockIdx.x*blockDim.x+threadIdx.x; if (i>=n) return;
  float2 v = make_float2(x[i], x[(i+1)%n]*37.f);
  __nv_fp8x2_storage_t a = __nv_cvt_float2_to_fp8x2(v, __NV_SATFINITE, __NV_E4M3);
  __nv_fp8x2_storage_t b = __nv_cvt_float2_to_fp8x2(v, __NV_NOSAT, __NV_E5M2);
  __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(a, __NV_E4M3); __half2_raw g = __nv_cvt_fp8x2_to_halfraw2(b, __NV_E5M2);
  o[3*i]=a|(b<<16); o[3*i+1]=h.x|(h.y<<16); o[3*i+2]=g.x|(g.y<<16);
  __nv_bfloat162 p = __floats2bfloat162_rn(x[i], v.y), q = __floats2bfloat162_rn(v.y, 1.5f);
  __nv_bfloat162 r = __hfma2(p, q, p); __half2 s = __hmul2_sat(__floats2half2_rn(x[i], v.y), __floats2half2_rn(0.3f, x[i]));
  f[4*i]=__low2float(r); f[4*i+1]=__high2float(r); f[4*i+2]=__low2float(s); f[4*i+3]=__high2float(s);
}
extern "C" __global__ void misc(const unsigned* x, unsigned* o){
  __shared__ unsigned long long bar; unsigned t=threadIdx.x, a=x[t], b=x[(t+5)&63], c=x[(t+9)&63], r, e, st=0;
  asm volatile("lop3.b32 %0,%1,%2,%3,0xB4;" : "=r"(r) : "r"(a),"r"(b),"r"(c));
  asm volatile("{.reg .pred p; elect.sync %0|p, 0xffffffff; selp.u32 %1,1,0,p;}" : "=r"(e),"=r"(st));
  asm volatile("fence.proxy.async.shared::cta;");
  if (t==0) asm volatile("mbarrier.init.shared.b64 [%0], 64;" :: "r"((unsigned)__cvta_generic_to_shared(&bar)));
  __syncthreads();
  unsigned long long tok;
  if (t==0) asm volatile("mbarrier.arrive.expect_tx.shared.b64 %0, [%1], 16;" : "=l"(tok) : "r"((unsigned)__cvta_generic_to_shared(&bar)));
  else asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(tok) : "r"((unsigned)__cvta_generic_to_shared(&bar)));
  unsigned done; asm volatile("{.reg .pred p; mbarrier.test_wait.shared.b64 p, [%1], %2; selp.u32 %0,1,0,p;}" : "=r"(done) : "r"((unsigned)__cvta_generic_to_shared(&bar)), "l"(tok));
  __syncthreads();
  if (t==1) asm volatile("mbarrier.complete_tx.shared::cta.b64 [%0], 16;" :: "r"((unsigned)__cvta_generic_to_shared(&bar)));
  __syncthreads();
  unsigned done2; asm volatile("{.reg .pred p; mbarrier.test_wait.shared.b64 p, [%1], %2; selp.u32 %0,1,0,p;}" : "=r"(done2) : "r"((unsigned)__cvta_generic_to_shared(&bar)), "l"(tok));
  o[6*t]=r; o[6*t+1]=e; o[6*t+2]=st; o[6*t+3]=done; o[6*t+4]=done2; o[6*t+5]=__match_any_sync(0xffffffff, a&3) ^ __reduce_add_sync(0xffffffff, a);
}
extern "C" __global__ void mma(const unsigned* A, const unsigned* B, const float* C, float* D){
  unsigned l = threadIdx.x; float d[4], e[4];
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3},{%4,%5},{%6},{%7,%8,%9,%10};"
    : "=f"(d[0]),"=f"(d[1]),"=f"(d[2]),"=f"(d[3]) : "r"(A[2*l]),"r"(A[2*l+1]),"r"(B[l]),"f"(C[4*l]),"f"(C[4*l+1]),"f"(C[4*l+2]),"f"(C[4*l+3]));
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3},{%4,%5,%6,%7},{%8,%9},{%10,%11,%12,%13};"
    : "=f"(e[0]),"=f"(e[1]),"=f"(e[2]),"=f"(e[3]) : "r"(A[2*l]),"r"(A[2*l+1]),"r"(A[64+2*l]),"r"(A[64+2*l+1]),"r"(B[l]),"r"(B[32+l]),"f"(C[4*l]),"f"(C[4*l+1]),"f"(C[4*l+2]),"f"(C[4*l+3]));
  for (int k=0;k<4;k++){ D[8*l+k]=d[k]; D[8*l+4+k]=e[k]; }
}
