"""The process's one emulated GPU behind libcudart and libcuda: memory, host-visible regions, modules, launches and
errors."""
from __future__ import annotations

import ctypes
import os
import sys
import warnings
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from ..api import Device, Module
from ..errors import DeviceError, GpuemuError, LaunchError
from ..frontend.sass.cubin import CubinError, LinkedCodeError
from ..runtime.arguments import ArgumentTypeWarning
from ..runtime.module import CubinModule
from . import codes, fatbin, observers
from .codes import CudaError
from .properties import DeviceProperties

PAGE = 4096
#: mmap flags: private anonymous memory at exactly the address asked for, never over an existing mapping
PROT_READ_WRITE = 0x3
MAP_PRIVATE_ANONYMOUS = 0x22
MAP_FIXED_NOREPLACE = 0x100000
MAP_FAILED = ctypes.c_void_p(-1).value
MIRROR_TRIES = 64
#: beyond this many changed runs a mirror is written back as one span from the first change to the last
MAX_WRITE_BACK_RUNS = 256

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


def read_host(address: int, nbytes: int) -> np.ndarray:
    """nbytes of process memory at address, copied."""
    if nbytes == 0:
        return np.zeros(0, dtype=np.uint8)
    return np.frombuffer(ctypes.string_at(address, nbytes), dtype=np.uint8)


def write_host(address: int, data: np.ndarray) -> None:
    raw = np.ascontiguousarray(data, dtype=np.uint8)
    if raw.size:
        ctypes.memmove(address, raw.ctypes.data, raw.size)


def plain(name: str) -> str:
    return observers.plain_name(name)


@dataclass
class Mirror:
    """Memory both sides use: managed and mapped host memory (host == device address) or registered host memory."""
    host: int
    device: int
    size: int
    kind: str  # managed, host, registered
    flags: int = 0
    mapped_bytes: int = 0
    #: the host buffer of a __managed__ variable, kept alive with the mirror
    storage: object = None


@dataclass
class FatBinary:
    """One __cudaRegisterFatBinary (or cuModuleLoadData image): its PTX, loaded into the device on first use."""
    name: str
    entries: List[fatbin.Entry]
    ptx: Optional[str] = None
    module: Optional[Module] = None


@dataclass
class Function:
    binary: FatBinary
    name: str
    max_dynamic_shared: int = 0
    cache_config: int = 0

    @property
    def plain_name(self) -> str:
        return plain(self.name)


@dataclass
class Variable:
    binary: FatBinary
    name: str
    size: int
    managed_pointer: int = 0  # the host's void* cell of a __managed__ variable


@dataclass
class Event:
    flags: int = 0
    time: Optional[float] = None


@dataclass
class Stream:
    flags: int = 0
    priority: int = 0


@dataclass
class Context:
    """All state of the emulated device; `get()` gives the process's one instance."""
    properties: DeviceProperties = field(default_factory=DeviceProperties.from_environment)
    device: Device = None
    allocations: Dict[int, int] = field(default_factory=dict)
    pitches: Dict[int, int] = field(default_factory=dict)
    mirrors: Dict[int, Mirror] = field(default_factory=dict)
    binaries: Dict[int, FatBinary] = field(default_factory=dict)
    functions: Dict[int, Function] = field(default_factory=dict)
    variables: Dict[int, Variable] = field(default_factory=dict)
    streams: Dict[int, Stream] = field(default_factory=dict)
    events: Dict[int, Event] = field(default_factory=dict)
    sticky: int = 0
    #: whether a call after the faulting launch has reported the sticky error (until then, as on a GPU whose
    #: kernel is still running, cudaGetLastError right after the launch says cudaSuccess)
    fault_seen: bool = True
    last_error: int = 0
    next_handle: int = 0x10000
    launches: int = 0
    write_stdout: Callable[[str], None] = None
    write_stderr: Callable[[str], None] = None
    program: str = ""
    reported_missing: set = field(default_factory=set)
    stream_attributes: Dict[Tuple[int, int], bytes] = field(default_factory=dict)
    #: the cells __cudaRegisterFatBinary hands out as handles, kept alive
    handle_cells: list = field(default_factory=list)
    grid_sync_workspace: int = 0
    snapshots: Dict[int, np.ndarray] = field(default_factory=dict)

    def __post_init__(self):
        self.program = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else _program_name()
        if _C_STREAMS:
            write = _C_STREAMS["write"]
            self.write_stdout = self.write_stdout or (lambda text: write(0, text))
            self.write_stderr = self.write_stderr or (lambda text: write(1, text))
        self.write_stdout = self.write_stdout or _python_stream(sys, "stdout")
        self.write_stderr = self.write_stderr or _python_stream(sys, "stderr")
        self.reset_device()
        self.observers = observers.Session(self)

    def reset_device(self) -> None:
        self.device = Device(stdout=_Writer(lambda: self.write_stdout), arch=self.properties.arch)
        self.allocations.clear()
        self.pitches.clear()
        for mirror in list(self.mirrors.values()):
            if mirror.mapped_bytes:
                _libc.munmap(mirror.host, mirror.mapped_bytes)
        self.mirrors.clear()
        for binary in self.binaries.values():
            binary.module = None
        self.sticky = 0
        self.last_error = 0
        self.grid_sync_workspace = 0

    # ---- messages ----
    def say(self, text: str) -> None:
        """One line on stderr from gpuemu, after what the program has printed so far."""
        self.write_stderr(f"gpuemu: {text}\n")

    # ---- handles ----
    def new_handle(self) -> int:
        self.next_handle += 16
        return self.next_handle

    # ---- errors ----
    def check_sticky(self) -> None:
        if self.sticky:
            raise CudaError(self.sticky)

    # ---- memory ----
    @property
    def memory(self):
        return self.device.memory

    def malloc(self, size: int, align: int = 256) -> int:
        if size < 0:
            raise CudaError(codes.INVALID_VALUE)
        if size > self.free_bytes():
            raise CudaError(codes.MEMORY_ALLOCATION, f"cudaMalloc of {size:,} bytes exceeds the "
                            f"{self.free_bytes():,} bytes left of the emulated device's memory")
        address = self.memory.alloc(max(size, 1), align=align)
        self.memory.write(address, np.zeros(max(size, 1), dtype=np.uint8))
        self.allocations[address] = size
        return address

    def free(self, address: int) -> None:
        if address == 0:
            return
        if address in self.mirrors and self.mirrors[address].kind == "managed":
            self.free_mirror(address)
            return
        if address not in self.allocations:
            raise CudaError(codes.INVALID_VALUE, f"cudaFree(0x{address:x}): not an address cudaMalloc returned "
                            f"(or freed already)")
        del self.allocations[address]
        self.pitches.pop(address, None)
        self.memory.free(address)

    def free_bytes(self) -> int:
        used = sum(self.allocations.values()) + sum(m.size for m in self.mirrors.values())
        return max(self.properties.total_global_mem - used, 0)

    def mirror(self, size: int, kind: str, flags: int = 0) -> int:
        """Memory the host reads and writes at the same address kernels use (managed, cudaHostAlloc)."""
        if size > self.free_bytes():
            raise CudaError(codes.MEMORY_ALLOCATION)
        length = max((size + PAGE - 1) // PAGE * PAGE, PAGE)
        for _ in range(MIRROR_TRIES):
            address = self.memory.alloc(length, align=PAGE)
            mapped = _libc.mmap(address, length, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0)
            if mapped == address:
                self.memory.write(address, np.zeros(length, dtype=np.uint8))
                self.mirrors[address] = Mirror(address, address, size, kind, flags, length)
                return address
            if mapped not in (None, MAP_FAILED):
                _libc.munmap(mapped, length)
            self.memory.free(address)
            self.memory.alloc(max(length, 1 << 24), align=PAGE)  # step past the host mapping in the way
        raise CudaError(codes.MEMORY_ALLOCATION, f"no room for {size:,} bytes of {kind} memory at a device address "
                        f"the host can map too")

    def free_mirror(self, address: int) -> None:
        mirror = self.mirrors.pop(address, None)
        if mirror is None:
            raise CudaError(codes.INVALID_VALUE, f"0x{address:x} is not memory cudaMallocHost/cudaHostAlloc/"
                            f"cudaMallocManaged returned")
        if mirror.mapped_bytes:
            _libc.munmap(mirror.host, mirror.mapped_bytes)
        self.memory.free(mirror.device)

    def register_host(self, host: int, size: int, flags: int) -> None:
        if host in self.mirrors:
            raise CudaError(codes.HOST_MEMORY_ALREADY_REGISTERED)
        device = self.memory.alloc(max(size, 1), align=256)
        self.mirrors[host] = Mirror(host, device, size, "registered", flags)

    def unregister_host(self, host: int) -> None:
        mirror = self.mirrors.get(host)
        if mirror is None or mirror.kind != "registered":
            raise CudaError(codes.HOST_MEMORY_NOT_REGISTERED)
        self.free_mirror(host)

    def allocation_end(self, address: int) -> Optional[int]:
        """The end of the cudaMalloc or mapped allocation holding address (None: none holds it)."""
        for start, size in self.allocations.items():
            if start <= address < start + max(size, 1):
                return start + size
        mirror = self.find_mirror(address, "device")
        return mirror.device + mirror.size if mirror is not None else None

    def flush(self) -> None:
        """Everything written to the C library's streams so far, out."""
        if _C_STREAMS:
            _C_STREAMS["flush"]()

    def find_mirror(self, address: int, by: str = "host") -> Optional[Mirror]:
        for mirror in self.mirrors.values():
            start = getattr(mirror, by)
            if start <= address < start + max(mirror.size, 1):
                return mirror
        return None

    def is_device(self, address: int) -> bool:
        """Whether address lies in a live device allocation (managed and mapped host memory count as host)."""
        if self.find_mirror(address, "host"):
            return False
        if self.find_mirror(address, "device"):
            return True
        try:
            self.memory.read(address, 0)
        except ValueError:
            return False
        return True

    def read(self, address: int, nbytes: int, kind: str) -> np.ndarray:
        """Bytes from a device ('device'), host ('host') or either ('default') address."""
        if kind == "default":
            kind = "device" if self.is_device(address) else "host"
        if kind == "host" or self.find_mirror(address, "host"):
            return read_host(address, nbytes)
        registered = self.find_mirror(address, "device")
        if registered is not None and registered.kind == "registered":
            return read_host(registered.host + address - registered.device, nbytes)
        try:
            return self.memory.read(address, nbytes)
        except ValueError as error:
            raise CudaError(codes.INVALID_VALUE, f"device read of {nbytes:,} bytes: {_first_line(error)}") from None

    def write(self, address: int, data: np.ndarray, kind: str) -> None:
        if kind == "default":
            kind = "device" if self.is_device(address) else "host"
        if kind == "host" or self.find_mirror(address, "host"):
            write_host(address, data)
            return
        registered = self.find_mirror(address, "device")
        if registered is not None and registered.kind == "registered":
            write_host(registered.host + address - registered.device, data)
            return
        try:
            self.memory.write(address, data)
        except ValueError as error:
            raise CudaError(codes.INVALID_VALUE, f"device write of {data.size:,} bytes: {_first_line(error)}") from None

    def copy(self, dst: int, src: int, count: int, kind: int) -> None:
        """cudaMemcpy: kind 0 host→host, 1 host→device, 2 device→host, 3 device→device, 4 inferred."""
        if kind not in (0, 1, 2, 3, 4):
            raise CudaError(codes.INVALID_MEMCPY_DIRECTION)
        if count == 0:
            return
        if not dst or not src:
            raise CudaError(codes.INVALID_VALUE, "cudaMemcpy with a NULL pointer")
        src_kind = {0: "host", 1: "host", 2: "device", 3: "device", 4: "default"}[kind]
        dst_kind = {0: "host", 1: "device", 2: "host", 3: "device", 4: "default"}[kind]
        self.write(dst, self.read(src, count, src_kind), dst_kind)

    def fill(self, address: int, value: int, count: int) -> None:
        if count:
            self.write(address, np.full(count, value & 0xFF, dtype=np.uint8), "default")

    # ---- modules ----
    def register_binary(self, handle: int, containers: List[bytes], name: str) -> FatBinary:
        entries = [entry for container in containers for entry in fatbin.parse_container(container)]
        binary = FatBinary(name, entries)
        self.binaries[handle] = binary
        return binary

    def module_of(self, binary: FatBinary) -> Module:
        if binary.module is None:
            cubin = None
            if binary.ptx is None:
                try:
                    entry = fatbin.choose_image(binary.entries, self.properties.arch_number, binary.name)
                except fatbin.FatbinError as error:
                    raise CudaError(codes.NO_KERNEL_IMAGE, str(error)) from None
                if entry.kind == fatbin.KIND_PTX:
                    binary.ptx = entry.text()
                else:
                    cubin = entry
            if cubin is not None:
                binary.module = self.cubin_module(binary, cubin.data(), cubin.arch)
            else:
                try:
                    binary.module = Module(binary.ptx, binary.name, self.device)
                except GpuemuError as error:
                    raise CudaError(codes.INVALID_PTX, f"cannot load the PTX of {binary.name}: {error}") from None
            for variable in self.variables.values():
                if variable.binary is binary and variable.managed_pointer:
                    self._place_managed_variable(variable)
        return binary.module

    def cubin_module(self, binary: FatBinary, image: bytes, arch: int) -> Module:
        """A module from a cubin's SASS (a fat binary without PTX, or cuModuleLoadData of a cubin)."""
        try:
            program = binary.name[:-len(".ptx")] if binary.name.endswith(".ptx") else binary.name
            return CubinModule(image, f"{program} (sm_{arch} cubin)", self.device)
        except LinkedCodeError as error:
            raise CudaError(codes.NO_KERNEL_IMAGE, str(error)) from None
        except CubinError as error:
            raise CudaError(codes.NO_KERNEL_IMAGE, f"{error}; or {fatbin.rebuild_hint(arch)}") from None
        except GpuemuError as error:
            raise CudaError(codes.NO_KERNEL_IMAGE, f"cannot run the SASS of {binary.name}: {error}") from None

    def _place_managed_variable(self, variable: Variable) -> None:
        address, size = binary_symbol(self.module_of(variable.binary), variable.name)
        host = ctypes.create_string_buffer(max(size, 1))
        self.mirrors[address] = Mirror(ctypes.addressof(host), address, size, "registered", storage=host)
        ctypes.c_void_p.from_address(variable.managed_pointer).value = ctypes.addressof(host)

    def symbol(self, host_symbol: int) -> Tuple[int, int]:
        """(device address, size) of the __device__/__constant__ variable whose host shadow is at host_symbol."""
        variable = self.variables.get(host_symbol)
        if variable is None:
            raise CudaError(codes.INVALID_SYMBOL, f"0x{host_symbol:x} is not a registered __device__ or __constant__ "
                            f"variable")
        address, size = binary_symbol(self.module_of(variable.binary), variable.name)
        mirror = self.mirrors.get(address)
        if mirror is not None and mirror.kind == "registered" and variable.managed_pointer:
            return mirror.host, size
        return address, size

    def function(self, host_function: int) -> Function:
        function = self.functions.get(host_function)
        if function is None:
            raise CudaError(codes.INVALID_DEVICE_FUNCTION, f"0x{host_function:x} is not a registered __global__ "
                            f"function")
        return function

    def kernel_of(self, function: Function):
        module = self.module_of(function.binary)
        try:
            return module.kernel(function.name)
        except GpuemuError as error:
            raise CudaError(codes.INVALID_DEVICE_FUNCTION, str(error)) from None

    # ---- launches ----
    def launch(self, function: Function, grid, block, argument_pointers: List[int], shared: int,
               cooperative: bool = False) -> None:
        """Run a kernel now; faults become the sticky error (and a report on stderr), bad configurations raise."""
        self.check_sticky()
        kernel = self.kernel_of(function)
        args = []
        for index, param in enumerate(kernel.params):
            raw = read_host(argument_pointers[index], param.size)
            args.append(raw.view(np.dtype((np.void, param.size)))[0] if param.size not in (1, 2, 4, 8)
                        else raw.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[param.size])[0])
        options = {}
        if cooperative:
            options.update(self._cooperative_options(kernel, grid, block, shared))
        self._mirrors_to_device()
        self.launches += 1
        try:
            with warnings.catch_warnings():
                # the program's argument bytes are the parameters' bits, as CUDA passes them
                warnings.simplefilter("ignore", ArgumentTypeWarning)
                self.observers.launch(kernel, grid, block, args, shared, function.max_dynamic_shared or None,
                                      options, function.binary.ptx or "")
        except LaunchError as error:
            code = codes.FROM_GPUEMU.get(error.cuda_error, codes.LAUNCH_FAILURE)
            if error.configuration:
                code = codes.INVALID_CONFIGURATION
            raise CudaError(code, f"launch of {function.plain_name}<<<{_dims(grid)}, {_dims(block)}, {shared}>>> "
                            f"refused: {error}") from None
        except DeviceError as error:
            self.sticky = codes.FROM_GPUEMU.get(error.cuda_error, codes.LAUNCH_FAILURE)
            self.fault_seen = False
            report = error.report if error.report != error.summary and not self.observers.reports_faults else ""
            self.write_stderr((report + "\n" if report else "") + f"gpuemu: kernel fault: {error.summary}\n")
        finally:
            self._mirrors_to_host()

    def _cooperative_options(self, kernel, grid, block, shared) -> dict:
        blocks = grid[0] * grid[1] * grid[2]
        per_sm = self.occupancy(kernel, block[0] * block[1] * block[2], shared)
        if blocks > per_sm * self.properties.multiprocessor_count:
            raise CudaError(codes.COOPERATIVE_LAUNCH_TOO_LARGE, f"cooperative launch of {blocks} blocks: at most "
                            f"{per_sm * self.properties.multiprocessor_count} fit on the device at once")
        if not self.grid_sync_workspace:
            self.grid_sync_workspace = self.memory.alloc(16, align=16, name="grid sync workspace")
        workspace = self.grid_sync_workspace
        self.memory.write(workspace, np.array([8, 0], dtype=np.uint32).view(np.uint8))
        return {"environment": {1: workspace >> 32, 2: workspace & 0xFFFFFFFF}, "batch_bytes": 1 << 62}

    def occupancy(self, kernel, threads: int, dynamic_shared: int) -> int:
        """Blocks of `threads` threads that fit on one SM, from warps, registers and shared memory (32 registers a
        thread assumed: PTX does not say how many the real compiler would use)."""
        props = self.properties
        if threads < 1:
            return 0
        warps = (threads + 31) // 32
        by_threads = props.max_threads_per_sm // (warps * 32)
        by_registers = props.registers_per_sm // (warps * 32 * props.registers_per_thread)
        shared = observers.kernel_resources(kernel).static_shared + dynamic_shared
        by_shared = props.shared_per_sm // (shared + props.reserved_shared_per_block) if shared \
            else props.max_blocks_per_sm
        return max(0, min(props.max_blocks_per_sm, by_threads, by_registers, by_shared))

    def _mirrors_to_device(self) -> None:
        self.snapshots = {}
        for key, mirror in self.mirrors.items():
            if mirror.size:
                data = read_host(mirror.host, mirror.size)
                self.memory.write(mirror.device, data)
                self.snapshots[key] = data

    def _mirrors_to_host(self) -> None:
        """Write back the bytes the kernel changed, and only those: another host thread may be writing the rest."""
        for key, before in self.snapshots.items():
            mirror = self.mirrors.get(key)
            if mirror is None:
                continue
            after = self.memory.read(mirror.device, mirror.size)
            changed = np.flatnonzero(after != before)
            if not changed.size:
                continue
            breaks = np.flatnonzero(np.diff(changed) > 1)
            starts = np.concatenate(([changed[0]], changed[breaks + 1]))
            ends = np.concatenate((changed[breaks], [changed[-1]])) + 1
            if len(starts) > MAX_WRITE_BACK_RUNS:
                starts, ends = starts[:1], ends[-1:]
            for start, end in zip(starts.tolist(), ends.tolist()):
                write_host(mirror.host + start, after[start:end])
        self.snapshots = {}


def binary_symbol(module: Module, name: str) -> Tuple[int, int]:
    try:
        return module.global_address(name)
    except GpuemuError as error:
        raise CudaError(codes.INVALID_SYMBOL, str(error)) from None


def _dims(value) -> str:
    return "(" + ",".join(str(v) for v in value) + ")"


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0]


def _program_name() -> str:
    try:
        with open("/proc/self/comm", encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return "program"


def _python_stream(module, name: str) -> Callable[[str], None]:
    def write(text: str) -> None:
        stream = getattr(module, name)
        stream.write(text)
        stream.flush()
    return write


class _Writer:
    """A file-like object for Device(stdout=...) that forwards to the context's current stdout writer."""

    def __init__(self, target: Callable[[], Callable[[str], None]]):
        self._target = target

    def write(self, text: str) -> int:
        self._target()(text)
        return len(text)

    def flush(self) -> None:
        pass


_CONTEXT: Optional[Context] = None
_C_STREAMS: Dict[str, Callable] = {}


def use_c_streams(write: Callable[[int, str], None], flush: Callable[[], None]) -> None:
    """Send device printf and gpuemu's messages through the C library's stdout and stderr (a C program's own
    streams, so that their order is kept), and Python's sys.stdout/sys.stderr there too."""
    _C_STREAMS["write"] = write
    _C_STREAMS["flush"] = flush
    sys.stdout = _Writer(lambda: (lambda text: write(0, text)))
    sys.stderr = _Writer(lambda: (lambda text: write(1, text)))


def get() -> Context:
    global _CONTEXT
    if _CONTEXT is None:
        _CONTEXT = Context()
    return _CONTEXT
