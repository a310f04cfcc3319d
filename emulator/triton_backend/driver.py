"""gpuemu's Triton driver: an emulated H100 on the CPU, taking torch CPU tensors as device memory.

Each launch copies the storage behind every pointer argument into gpuemu's device memory (storages that
several arguments share become one buffer), runs the PTX with Triton's launch conventions
(emulator.triton.launch) and copies the storages back. GPUEMU_TRITON_ARCH (default 90) picks the
compute capability Triton compiles for; GPUEMU_TRITON_BENCH=run lets triton.testing.do_bench time the
emulator instead of stopping the program.
"""
from __future__ import annotations

import ctypes
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from triton.backends.compiler import GPUTarget
from triton.backends.driver import DriverBase, decompose_descriptor, expand_signature, wrap_handle_tensordesc_impl

from ..errors import UsageError
from . import compiler as gpuemu_compiler

#: the entry-point name this backend is registered under (TRITON_DEFAULT_BACKEND=gpuemu picks it)
BACKEND_NAME = "gpuemu"
DEFAULT_ARCH = 90
#: registers per thread reported when ptxas cannot tell: the sm_90 maximum, so occupancy estimates stay safe
MAX_REGISTERS = 255

#: what cudaGetDeviceProperties says of an H100 SXM5 (the machine gpuemu emulates)
H100_PROPERTIES = {
    "max_shared_mem": 227 * 1024,
    "max_num_regs": 65536,
    "multiprocessor_count": 132,
    "warpSize": 32,
    "sm_clock_rate": 1980000,
    "mem_clock_rate": 2619000,
    "mem_bus_width": 5120,
    "max_threads_per_sm": 2048,
}

BENCH_STOP = ("gpuemu: triton.testing.do_bench would time gpuemu's emulation on the CPU, which says nothing "
              "about a GPU's speed, so the program stops here (GPUEMU_TRITON_BENCH=run times the emulator anyway)")
BENCH_RUN = "gpuemu: note: triton.testing.do_bench is timing gpuemu's emulation on the CPU, not a GPU"
AUTOTUNE_NOTE = ("gpuemu: note: the autotuner runs each config once and ranks them by emulation time on the CPU, "
                 "which says nothing about which is fastest on a GPU")

_said = set()


def _say_once(text: str) -> None:
    if text not in _said:
        _said.add(text)
        print(text, file=sys.stderr, flush=True)


def emulated_arch() -> int:
    """The compute capability to emulate: GPUEMU_TRITON_ARCH as 90, sm_90 or 9.0; 90 when unset."""
    text = os.environ.get("GPUEMU_TRITON_ARCH", "").strip()
    if not text:
        return DEFAULT_ARCH
    match = re.fullmatch(r"(?:sm_?)?(\d)\.?(\d)a?", text)
    if not match:
        raise ValueError(f"GPUEMU_TRITON_ARCH={text!r} is not a compute capability such as 90, sm_90 or 8.0")
    return int(match.group(1) + match.group(2))


class WallClockEvent:
    """torch.cuda.Event's timing interface, on the host clock."""

    def __init__(self, enable_timing: bool = True, **_):
        self.when = None

    def record(self, stream=None) -> None:
        self.when = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: "WallClockEvent") -> float:
        return (end.when - self.when) * 1000.0


class EmulatedDeviceInterface:
    """The parts of torch.cuda that Triton's benchmarking helpers use; launches are synchronous."""

    Event = WallClockEvent

    def synchronize(self, device=None) -> None:
        pass

    def current_device(self) -> int:
        return 0

    def device_count(self) -> int:
        return 1

    def get_device_capability(self, device=None):
        arch = emulated_arch()
        return arch // 10, arch % 10

    def __getattr__(self, name):
        import torch
        return getattr(torch.cpu, name)


@functools.lru_cache(maxsize=256)
def register_usage(ptx: str, arch: int):
    """(registers per thread, spilled bytes) that ptxas gives the kernel, or (MAX_REGISTERS, 0) without ptxas."""
    try:
        ptxas = nvidia_ptxas(arch)
    except Exception:
        ptxas = shutil.which("ptxas")
    if not ptxas:
        return MAX_REGISTERS, 0
    suffix = "a" if arch >= 90 else ""
    with tempfile.TemporaryDirectory(prefix="gpuemu-triton-") as folder:
        source = os.path.join(folder, "kernel.ptx")
        with open(source, "w") as handle:
            handle.write(ptx)
        try:
            result = subprocess.run([ptxas, "-v", f"--gpu-name=sm_{arch}{suffix}", source, "-o", os.devnull],
                                    capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.SubprocessError):
            return MAX_REGISTERS, 0
    registers = re.search(r"Used (\d+) registers", result.stderr)
    spills = re.search(r"(\d+) bytes spill stores", result.stderr)
    if result.returncode != 0 or registers is None:
        return MAX_REGISTERS, 0
    return int(registers.group(1)), int(spills.group(1)) if spills else 0


def nvidia_ptxas(arch: int) -> str:
    """The ptxas that ships with Triton's NVIDIA backend."""
    from triton.backends.nvidia.compiler import get_ptxas
    return get_ptxas(arch).path


class EmulatedFunction:
    """What load_binary hands Triton as the CUfunction: the kernel's PTX and name."""

    def __init__(self, name: str, ptx: str):
        self.name = name
        self.ptx = ptx


class EmulatorUtils:
    """The `driver.active.utils` object: device properties, module loading."""

    def get_device_properties(self, device=None) -> dict:
        return dict(H100_PROPERTIES)

    def load_binary(self, name, kernel, shared, device):
        ptx = kernel.decode("utf-8") if isinstance(kernel, (bytes, bytearray)) else str(kernel)
        registers, spills = register_usage(ptx, emulated_arch())
        return None, EmulatedFunction(name, ptx), registers, spills, 1024

    def unload_module(self, module) -> None:
        pass

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device) -> None:
        pass

    def get_default_stream(self, device=None) -> int:
        return 0

    def is_stream_capturing(self, stream) -> bool:
        return False

    def get_device_capability(self, device=None):
        arch = emulated_arch()
        return arch // 10, arch % 10

    def set_printf_fifo_size(self, size) -> None:
        pass


class CompiledPTX:
    """The face of a triton.compile() result that emulator.triton.launch reads."""

    def __init__(self, ptx: str, metadata):
        self.asm = {"ptx": ptx}
        self.metadata = metadata


class PointerArgumentError(UsageError):
    """A pointer argument gpuemu cannot map into its device memory."""


def host_bytes(value, index: int):
    """A writable uint8 numpy view from the first byte of a pointer argument to the end of its storage."""
    import numpy as np
    tensor = value
    if not hasattr(tensor, "untyped_storage") and hasattr(getattr(tensor, "base", None), "untyped_storage"):
        tensor = tensor.base  # triton.reinterpret's TensorWrapper
    if hasattr(tensor, "untyped_storage"):
        if tensor.device.type != "cpu":
            raise PointerArgumentError(f"argument {index} is a tensor on {tensor.device}; gpuemu's Triton driver "
                                       f"runs on CPU tensors (device='cpu')")
        storage = tensor.untyped_storage()
        start, size = storage.data_ptr(), storage.nbytes()
        offset = value.data_ptr() - start
        if size == 0:
            return np.zeros(0, dtype=np.uint8)
        whole = np.ctypeslib.as_array((ctypes.c_ubyte * size).from_address(start))
        return whole[offset:]
    if isinstance(value, np.ndarray):
        return value
    raise PointerArgumentError(f"argument {index} ({type(value).__name__}) is a pointer Triton takes through "
                               f"data_ptr(), but gpuemu needs to know the memory behind it: pass a torch CPU "
                               f"tensor")


def make_tensordesc_argument(argument, metadata, _):
    if metadata is None:
        return decompose_descriptor(argument)
    raise PointerArgumentError("a host TensorDescriptor argument needs a TMA descriptor on sm_90, which gpuemu's "
                               "Triton driver does not build; set GPUEMU_TRITON_ARCH=80 to pass it as pointers")


class EmulatorLauncher:
    """driver.active.launcher_cls: turns Triton's launch call into an emulator.triton.launch."""

    def __init__(self, src, metadata):
        signature = dict(src.signature)
        tensordesc_meta = getattr(metadata, "tensordesc_meta", None)
        self.metadata = metadata
        self.signature = expand_signature(signature.values(), tensordesc_meta, "nvTmaDesc")
        self.launch = wrap_handle_tensordesc_impl(self._launch, signature, tensordesc_meta,
                                                  make_tensordesc_argument)

    def __call__(self, grid_x, grid_y, grid_z, stream, function, packed_metadata, launch_metadata,
                 launch_enter_hook, launch_exit_hook, *args):
        self.launch(grid_x, grid_y, grid_z, function, launch_metadata, launch_enter_hook, launch_exit_hook, args)

    def _launch(self, grid_x, grid_y, grid_z, function, launch_metadata, launch_enter_hook, launch_exit_hook,
                args):
        from .. import triton as gpuemu_triton
        if launch_enter_hook is not None:
            launch_enter_hook(launch_metadata)
        flat = []
        flatten_arguments(self.signature, args, flat)
        converted = [convert_argument(kind, value, index) for index, (kind, value) in enumerate(flat)]
        if grid_x * grid_y * grid_z > 0:
            gpuemu_triton.launch(CompiledPTX(function.ptx, self.metadata), (grid_x, grid_y, grid_z), converted,
                                 device=emulated_device())
        if launch_exit_hook is not None:
            launch_exit_hook(launch_metadata)


def flatten_arguments(signature, args, out: list) -> None:
    """The (type, value) pairs of the kernel's parameters: tuples flattened, constexprs left out."""
    for kind, value in zip(signature, args):
        if isinstance(kind, tuple):
            flatten_arguments(kind, value, out)
        elif kind != "constexpr":
            out.append((kind, value))


def convert_argument(kind: str, value, index: int):
    """A Triton argument as emulator.triton.launch takes it: host bytes for pointers, exact-width scalars."""
    import numpy as np
    from ..api import DevicePointer
    if kind.startswith("*"):
        if value is None:
            return DevicePointer(0)
        return host_bytes(value, index)
    if kind == "nvTmaDesc":
        raise PointerArgumentError(f"argument {index} is a TMA descriptor, which gpuemu's Triton driver does not "
                                   f"build")
    if kind in ("fp16", "bf16"):
        import torch
        dtype = torch.float16 if kind == "fp16" else torch.bfloat16
        return np.uint16(torch.tensor(float(value), dtype=dtype).view(torch.int16).item() & 0xFFFF)
    if kind in ("fp32", "f32"):
        return np.float32(float(value))
    if kind == "fp64":
        return np.float64(float(value))
    return int(value)


def give_torch_cpu_set_stream() -> None:
    """Device-generic code selects streams through getattr(torch, device.type).set_stream, which torch.cpu lacks
    (it has Stream, current_stream and stream()); CPU work needs no stream, so setting one does nothing."""
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "cpu") and not hasattr(torch.cpu, "set_stream"):
        torch.cpu.set_stream = lambda stream: None


@functools.lru_cache(maxsize=None)
def _device_for(arch: int):
    from ..api import Device
    return Device(arch=f"sm_{arch}")


def emulated_device():
    """The one gpuemu device all Triton launches of this process share."""
    return _device_for(emulated_arch())


def run_once_benchmarker(kernel_call, quantiles=None, **_):
    """The autotuner's benchmarker: one run of the config, timed on the host clock."""
    _say_once(AUTOTUNE_NOTE)
    start = time.perf_counter()
    kernel_call()
    elapsed = (time.perf_counter() - start) * 1000.0
    return [elapsed] * len(quantiles) if quantiles else elapsed


class GpuemuDriver(DriverBase):
    """Triton's driver for gpuemu: device 0 is an emulated H100 whose memory is the host's."""

    @staticmethod
    def is_active() -> bool:
        chosen = os.environ.get("TRITON_DEFAULT_BACKEND")
        if chosen:
            return chosen == BACKEND_NAME
        from triton.backends import backends
        for backend in backends.values():
            if backend.driver is GpuemuDriver:
                continue
            try:
                if backend.driver.is_active():
                    return False
            except Exception:
                continue
        return True

    def __init__(self):
        super().__init__()
        from triton.backends import backends
        # Triton lets exactly one compiler claim a target: gpuemu's takes `cuda` from NVIDIA's, whose driver
        # is not the active one
        backends.pop("nvidia", None)
        gpuemu_compiler.take_cuda_targets()
        self.utils = EmulatorUtils()
        self.launcher_cls = EmulatorLauncher
        give_torch_cpu_set_stream()

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device) -> None:
        pass

    def get_current_stream(self, device=None) -> int:
        return 0

    def get_device_capability(self, device=None):
        return self.utils.get_device_capability(device)

    def get_current_target(self) -> GPUTarget:
        return GPUTarget("cuda", emulated_arch(), 32)

    def get_active_torch_device(self):
        import torch
        return torch.device("cpu")

    def get_device_interface(self):
        return EmulatedDeviceInterface()

    def map_python_to_cpp_type(self, ty: str) -> str:
        from triton.backends.nvidia.driver import ty_to_cpp
        return ty_to_cpp(ty)

    def get_benchmarker(self):
        return run_once_benchmarker

    def get_empty_cache_for_benchmark(self):
        if os.environ.get("GPUEMU_TRITON_BENCH", "").strip().lower() != "run":
            print(BENCH_STOP, file=sys.stderr, flush=True)
            raise SystemExit(0)
        _say_once(BENCH_RUN)
        import torch
        return torch.empty(0, dtype=torch.int8)

    def clear_cache(self, cache) -> None:
        cache.zero_()

    def allocate_default_profile_scratch(self, size: int, alignment: int, stream):
        return None
