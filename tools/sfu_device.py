"""The H100 side of the SFU tools: every probed PTX instruction as a CUDA kernel (inline PTX), run through
CuPy, and a CPU stand-in (isa.fp) with the same interface so the tools can be tested without a GPU."""
from __future__ import annotations

import numpy as np

INV_TWO_PI_BITS = 0x3E22F983
U32 = np.uint32

UNARY_F32 = {
    "rcp": "rcp.approx.f32", "rcp_ftz": "rcp.approx.ftz.f32",
    "rsqrt": "rsqrt.approx.f32", "rsqrt_ftz": "rsqrt.approx.ftz.f32",
    "sqrt": "sqrt.approx.f32", "sqrt_ftz": "sqrt.approx.ftz.f32",
    "ex2": "ex2.approx.f32", "ex2_ftz": "ex2.approx.ftz.f32",
    "lg2": "lg2.approx.f32", "lg2_ftz": "lg2.approx.ftz.f32",
    "sin": "sin.approx.f32", "sin_ftz": "sin.approx.ftz.f32",
    "cos": "cos.approx.f32", "cos_ftz": "cos.approx.ftz.f32",
    "tanh": "tanh.approx.f32",
}
HIGH_WORD_F64 = {"rcp64h": "rcp.approx.ftz.f64", "rsq64h": "rsqrt.approx.ftz.f64"}
FULL_F64 = {"rsqrt_f64": "rsqrt.approx.f64", "rcp_ftz_f64": "rcp.approx.ftz.f64",
            "rsqrt_ftz_f64": "rsqrt.approx.ftz.f64"}
HALF = {"ex2_f16": "ex2.approx.f16", "ex2_bf16": "ex2.approx.ftz.bf16",
        "tanh_f16": "tanh.approx.f16", "tanh_bf16": "tanh.approx.bf16"}
HALF_X2 = {"ex2_f16x2": "ex2.approx.f16x2", "ex2_bf16x2": "ex2.approx.ftz.bf16x2",
           "tanh_f16x2": "tanh.approx.f16x2", "tanh_bf16x2": "tanh.approx.bf16x2"}
DIVIDE = {"div_approx": "div.approx.f32", "div_approx_ftz": "div.approx.ftz.f32",
          "div_full": "div.full.f32", "div_full_ftz": "div.full.ftz.f32"}


def kernel_source() -> str:
    """CUDA C for every probed PTX instruction, one kernel each, the instruction as inline PTX."""
    head = ('extern "C" __global__ void {name}({params}, unsigned long long n) {{\n'
            '  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n'
            '  if (i >= n) return;\n')
    parts = []
    for name, instruction in UNARY_F32.items():
        parts.append(head.format(name="f32_" + name, params="const unsigned* x, unsigned* y") +
                     '  float a = __uint_as_float(x[i]), r;\n'
                     f'  asm volatile("{instruction} %0, %1;" : "=f"(r) : "f"(a));\n'
                     '  y[i] = __float_as_uint(r);\n}\n')
    parts.append(head.format(name="f32_turns", params="const unsigned* x, unsigned* y") +
                 '  float a = __uint_as_float(x[i]), r;\n'
                 f'  asm volatile("mul.rz.f32 %0, %1, 0f{INV_TWO_PI_BITS:08X};" : "=f"(r) : "f"(a));\n'
                 '  y[i] = __float_as_uint(r);\n}\n')
    for name, instruction in {**HIGH_WORD_F64, **FULL_F64}.items():
        parts.append(head.format(name="f64_" + name,
                                 params="const unsigned long long* x, unsigned long long* y") +
                     '  double a = __longlong_as_double((long long)x[i]), r;\n'
                     f'  asm volatile("{instruction} %0, %1;" : "=d"(r) : "d"(a));\n'
                     '  y[i] = (unsigned long long)__double_as_longlong(r);\n}\n')
    for name, instruction in HALF.items():
        parts.append(head.format(name="h_" + name, params="const unsigned short* x, unsigned short* y") +
                     '  unsigned short a = x[i], r;\n'
                     f'  asm volatile("{instruction} %0, %1;" : "=h"(r) : "h"(a));\n'
                     '  y[i] = r;\n}\n')
    for name, instruction in HALF_X2.items():
        parts.append(head.format(name="h_" + name, params="const unsigned* x, unsigned* y") +
                     '  unsigned a = x[i], r;\n'
                     f'  asm volatile("{instruction} %0, %1;" : "=r"(r) : "r"(a));\n'
                     '  y[i] = r;\n}\n')
    for name, instruction in DIVIDE.items():
        parts.append(head.format(name="d_" + name, params="const unsigned* x, const unsigned* z, unsigned* y") +
                     '  float a = __uint_as_float(x[i]), b = __uint_as_float(z[i]), r;\n'
                     f'  asm volatile("{instruction} %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));\n'
                     '  y[i] = __float_as_uint(r);\n}\n')
    parts.append(head.format(name="scatter_interval",
                             params="const unsigned* index, const long long* lo, const long long* hi, "
                                    "long long* table_lo, long long* table_hi") +
                 '  atomicMax(&table_lo[index[i]], lo[i]);\n'
                 '  atomicMin(&table_hi[index[i]], hi[i]);\n}\n')
    return "\n".join(parts)


# ---- backends -------------------------------------------------------------------------------------

class GpuBackend:
    """Runs the probes on the GPU through CuPy."""

    fake = False

    def __init__(self):
        import cupy
        self.xp = cupy
        self.module = cupy.RawModule(code=kernel_source(), options=("-std=c++17",))
        self.functions = {}

    def _launch(self, name, *arrays):
        function = self.functions.get(name)
        if function is None:
            function = self.functions[name] = self.module.get_function(name)
        n = arrays[0].size
        function(((n + 255) // 256,), (256,), (*arrays, np.uint64(n)))

    def unary(self, name, x):
        x = self.xp.ascontiguousarray(x, dtype=self.xp.uint32)
        y = self.xp.empty_like(x)
        self._launch("f32_" + name, x, y)
        return y

    def turns(self, x):
        x = self.xp.ascontiguousarray(x, dtype=self.xp.uint32)
        y = self.xp.empty_like(x)
        self._launch("f32_turns", x, y)
        return y

    def f64(self, name, x):
        x = self.xp.ascontiguousarray(x, dtype=self.xp.uint64)
        y = self.xp.empty_like(x)
        self._launch("f64_" + name, x, y)
        return y

    def half(self, name, x):
        dtype = self.xp.uint32 if name in HALF_X2 else self.xp.uint16
        x = self.xp.ascontiguousarray(x, dtype=dtype)
        y = self.xp.empty_like(x)
        self._launch("h_" + name, x, y)
        return y

    def divide(self, name, a, b):
        a = self.xp.ascontiguousarray(a, dtype=self.xp.uint32)
        b = self.xp.ascontiguousarray(b, dtype=self.xp.uint32)
        y = self.xp.empty_like(a)
        self._launch("d_" + name, a, b, y)
        return y

    def scatter_interval(self, index, lo, hi, table_lo, table_hi):
        xp = self.xp
        self._launch("scatter_interval", xp.ascontiguousarray(index, dtype=xp.uint32),
                     xp.ascontiguousarray(lo, dtype=xp.int64), xp.ascontiguousarray(hi, dtype=xp.int64),
                     table_lo, table_hi)

    def host(self, a):
        return self.xp.asnumpy(a)

    def device(self, a):
        return self.xp.asarray(a)

    def sync(self):
        self.xp.cuda.Device().synchronize()


class FakeBackend:
    """isa.fp's functions in place of the GPU (to test this script on a machine without one)."""

    fake = True

    def __init__(self):
        from isa import fp
        self.fp = fp
        self.xp = np

    def unary(self, name, x):
        fp = self.fp
        base, _, ftz = name.partition("_")
        ftz = ftz == "ftz"
        f = np.asarray(x, dtype=U32).view(np.float32)
        table = {
            "rcp": lambda: fp.frcp(f, ty="f32", mode="approx", ftz=ftz),
            "rsqrt": lambda: fp.frsqrt(f, ty="f32", ftz=ftz),
            "sqrt": lambda: fp.fsqrt(f, ty="f32", mode="approx", ftz=ftz),
            "ex2": lambda: fp.fex2(f, ty="f32", ftz=ftz),
            "lg2": lambda: fp.flg2(f, ty="f32", ftz=ftz),
            "sin": lambda: fp.fsin(f, ty="f32", ftz=ftz),
            "cos": lambda: fp.fcos(f, ty="f32", ftz=ftz),
            "tanh": lambda: fp.ftanh(f, ty="f32"),
        }
        return np.asarray(table[base](), dtype=np.float32).view(U32)

    def turns(self, x):
        value = np.asarray(x, dtype=U32).view(np.float32).astype(np.float64) * float(
            np.array(INV_TWO_PI_BITS, U32).view(np.float32))
        rounded = value.astype(np.float32)
        too_big = np.abs(rounded.astype(np.float64)) > np.abs(value)
        bits = rounded.view(U32)
        return np.where(too_big, bits - U32(1), bits).astype(U32)

    def f64(self, name, x):
        fp = self.fp
        d = np.asarray(x, dtype=np.uint64).view(np.float64)
        if name in ("rcp64h", "rcp_ftz_f64"):
            return np.asarray(fp.frcp(d, ty="f64", mode="approx", ftz=True)).view(np.uint64)
        return np.asarray(fp.frsqrt(d, ty="f64", ftz=name != "rsqrt_f64")).view(np.uint64)

    def half(self, name, x):
        fp = self.fp
        base, _, ty = name.partition("_")
        function = fp.fex2 if base == "ex2" else fp.ftanh
        return np.asarray(function(x, ty=ty, ftz=base == "ex2" and ty.startswith("bf16")))

    def divide(self, name, a, b):
        mode = "approx" if "approx" in name else "full"
        fa = np.asarray(a, dtype=U32).view(np.float32)
        fb = np.asarray(b, dtype=U32).view(np.float32)
        return np.asarray(self.fp.fdiv(fa, fb, ty="f32", mode=mode, ftz=name.endswith("ftz"))).view(U32)

    def scatter_interval(self, index, lo, hi, table_lo, table_hi):
        np.maximum.at(table_lo, index, lo)
        np.minimum.at(table_hi, index, hi)

    def host(self, a):
        return np.asarray(a)

    def device(self, a):
        return np.asarray(a)

    def sync(self):
        pass


def describe(backend) -> dict:
    """The card, driver and library versions the results come from."""
    if backend.fake:
        return {"card": "none (--fake: isa.fp on the CPU)"}
    import subprocess
    import cupy
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,vbios_version", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=60).stdout.strip()
    return {"card": name.decode() if isinstance(name, bytes) else name, "nvidia_smi": smi,
            "cuda_driver_api": cupy.cuda.runtime.driverGetVersion(), "cupy": cupy.__version__,
            "numpy": np.__version__}
