"""Modules, kernels and launches: loading PTX into device memory, CUDA's launch checks, batching CTAs, errors."""
from __future__ import annotations

import os
import re
import reprlib
import sys
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple, Union

import numpy as np

from isa import fp
from isa.types import TYPES

from . import ir
from . import syntax as S
from . import accel
from . import tensor_ops, wgmma  # noqa: F401  (register the cp.async, ldmatrix, mma and wgmma executors)
from .errors import DeviceError, LaunchError, PTXSemanticError, UsageError
from .lower import SHARED_RESERVED_BYTES, lower_kernel, variable_align, variable_size
from .machine import Batch, BatchLayout
from .memory import DeviceFault, Memory
from .syntax_cache import parse_cached
from .uniform import uniform_registers

if accel.fma_f32 is not None:
    fp.use_native_fma("f32", accel.fma_f32)
    fp.use_native_fma("f64", accel.fma_f64)

MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2 ** 31 - 1, 65535, 65535)
SHARED_DEFAULT_LIMIT = 48 * 1024
SHARED_OPTIN_LIMIT = 227 * 1024
PARAM_LIMIT = 32764
CONST_BANK_LIMIT = 64 * 1024
GLOBAL_VARIABLE_LIMIT = 1 << 30
DEFAULT_MAX_STEPS = 20_000_000
DEFAULT_BATCH_BYTES = 32 * 1024 * 1024
DEFAULT_ARCH = "sm_90"
#: loop iterations (backward branches) between two looks for a batch that no longer changes at all
DEFAULT_SPIN_LIMIT = 10_000
#: bytes past the shared and local windows where continue-after-fault sends the lanes it skips
FAULT_SINK_BYTES = 16


def plain_name(mangled: str) -> str:
    """`_Z6vecaddPKfS0_Pfi` → `vecadd`; names that are not Itanium-mangled come back unchanged."""
    match = re.match(r"_Z(?:N(?:\d+\w+?)*)?(\d+)", mangled)
    if not match:
        return mangled
    length = int(match.group(1))
    start = match.end()
    return mangled[start:start + length]


def arch_number(arch: Union[str, int]) -> int:
    """`sm_60` → 60, `sm_90a` → 90, 90 → 90; anything outside 10..999 is refused."""
    if is_integer(arch):
        number = int(arch)
    else:
        match = re.fullmatch(r"(?:sm_|compute_)?(\d+)[af]?", str(arch).strip())
        number = int(match.group(1)) if match else 0
    if not 10 <= number < 1000:
        raise UsageError(f"architecture '{arch}' is not sm_NN (for example sm_60 or sm_90)")
    return number


def is_integer(value) -> bool:
    """A Python or numpy integer, not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def describe_value(value) -> str:
    """A short `type value` text for error messages: `str '64'`, `float 4.9`, `None`."""
    if value is None:
        return "None"
    return f"{type(value).__name__} {_SHORT_REPR.repr(value)}"


_SHORT_REPR = reprlib.Repr()
_SHORT_REPR.maxstring = _SHORT_REPR.maxother = 40


def dim3(value, what: str = "dimensions") -> Tuple[int, int, int]:
    """An integer or 1 to 3 integers as (x, y, z); what names the value (grid, block) in the error."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if is_integer(value):
        return (int(value), 1, 1)
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)):
        raise LaunchError("CUDA_ERROR_INVALID_VALUE",
                          f"{what} {describe_value(value)} must be an integer or a tuple of 1 to 3 integers")
    if not 1 <= len(value) <= 3:
        raise LaunchError("CUDA_ERROR_INVALID_VALUE", f"{what} {value} must have 1 to 3 components")
    for item in value:
        if not is_integer(item):
            raise LaunchError("CUDA_ERROR_INVALID_VALUE",
                              f"{what} {value} must be 1 to 3 integers, not {describe_value(item)}")
    return tuple([int(v) for v in value] + [1] * (3 - len(value)))


def native_dtype(dtype: np.dtype) -> np.dtype:
    """dtype in the host's byte order: how the device holds the elements of a big-endian array."""
    return dtype if dtype.isnative else dtype.newbyteorder("=")


def symbol_bytes(name: str, data) -> np.ndarray:
    """The bytes a cudaMemcpyToSymbol of data (an array, a number or a list of numbers) would copy."""
    try:
        array = np.asarray(data)
    except ValueError:
        array = None
    if array is None or array.dtype.hasobject or array.dtype.kind == "U":
        raise UsageError(f"symbol '{name}' takes a numpy array or numbers, not {describe_value(data)}")
    return np.ascontiguousarray(array, dtype=native_dtype(array.dtype)).reshape(-1).view(np.uint8)


@dataclass
class LaunchStats:
    kernel: str
    grid: Tuple[int, int, int]
    block: Tuple[int, int, int]
    warp_instructions: int = 0
    thread_instructions: int = 0
    steps: int = 0
    batches: int = 0
    wall_seconds: float = 0.0
    memory_backend: str = ""
    extra: Dict[str, object] = field(default_factory=dict)

    def as_dict(self) -> Dict[str, object]:
        data = {
            "kernel": self.kernel, "grid": list(self.grid), "block": list(self.block),
            "warp_instructions": self.warp_instructions, "thread_instructions": self.thread_instructions,
            "scheduler_steps": self.steps, "batches": self.batches, "wall_seconds": self.wall_seconds,
            "thread_instructions_per_second": (self.thread_instructions / self.wall_seconds
                                               if self.wall_seconds > 0 else None),
            "memory_backend": self.memory_backend,
        }
        data.update(self.extra)
        return data


class Device:
    """A device context: one global memory and the stream printf writes to."""

    def __init__(self, *, backend: str = "auto", stdout=None, arch: Union[str, int] = DEFAULT_ARCH,
                 spin_limit: int = DEFAULT_SPIN_LIMIT):
        """arch: sm_70 and newer count barrier arrivals per thread, older ones per warp; spin_limit:
        loop iterations after which a batch whose state stopped changing is reported (0: never)."""
        self.memory = Memory(backend=backend)
        self.stdout = stdout
        self.launches = 0
        self.arch = arch_number(arch)
        self.spin_limit = int(spin_limit)

    def write_stdout(self, text: str) -> None:
        stream = self.stdout if self.stdout is not None else sys.stdout
        stream.write(text)


class Module:
    """A PTX module loaded into a device: globals allocated, constants initialised, kernels on demand."""

    #: make ptxas's FMA contractions when lowering (emulator.contract); False runs the PTX literally
    contract = True

    def __new__(cls, text: str = "", source_name: str = "<ptx>", device: Optional[Device] = None):
        """Module(text) of a SASS listing (a .sass file, cuobjdump -sass output) is a SassModule."""
        from .sass import looks_like_sass
        if cls is Module and looks_like_sass(text, source_name):
            from .sass.module import SassModule
            return super().__new__(SassModule)
        return super().__new__(cls)

    def __init__(self, text: str, source_name: str = "<ptx>", device: Optional[Device] = None):
        self.source_name = source_name
        self.syntax = parse_cached(text, source_name)
        self.device = device or Device()
        self.symbols: Dict[str, ir.SymbolInfo] = {}
        self.const_base = 0
        self.const_size = 0
        self._programs: Dict[str, ir.Program] = {}
        self._load_variables()

    # ---- variables ----
    def _load_variables(self) -> None:
        memory = self.device.memory
        const_decls = [d for d in self.syntax.variables if d.space == "const"]
        offset = 0
        for decl in const_decls:
            align = variable_align(decl)
            offset = (offset + align - 1) // align * align
            self.symbols[decl.name] = ir.SymbolInfo(decl.name, "const", offset, variable_size(decl), align)
            offset += variable_size(decl)
        self.const_size = max(offset, 4)
        if offset > CONST_BANK_LIMIT:
            decl = const_decls[-1]
            raise PTXSemanticError(self.source_name, decl.pos.line, decl.pos.col,
                                   f"{offset} bytes of __constant__ data exceed the {CONST_BANK_LIMIT}-byte bank")
        self.const_base = memory.alloc(self.const_size, kind="const", name="__constant__")
        memory.write(self.const_base, np.zeros(self.const_size, dtype=np.uint8))
        for decl in self.syntax.variables:
            if decl.space == "global":
                size = max(variable_size(decl), 1)
                if size > GLOBAL_VARIABLE_LIMIT:
                    raise PTXSemanticError(self.source_name, decl.pos.line, decl.pos.col,
                                           f"global variable '{decl.name}' of {size} bytes is too large")
                address = memory.alloc(size, align=max(variable_align(decl), 16), name=decl.name)
                memory.write(address, np.zeros(size, dtype=np.uint8))
                self.symbols[decl.name] = ir.SymbolInfo(decl.name, "global", address, size, variable_align(decl))
        for decl in self.syntax.variables:
            if decl.init is not None and decl.space in ("global", "const"):
                symbol = self.symbols[decl.name]
                base = symbol.address + (self.const_base if decl.space == "const" else 0)
                memory.write(base, self._initializer_bytes(decl))
            elif decl.space not in ("global", "const", "shared"):
                raise PTXSemanticError(self.source_name, decl.pos.line, decl.pos.col,
                                       f"module-scope .{decl.space} variables are not supported")

    def _initializer_bytes(self, decl: S.VarDecl) -> np.ndarray:
        element = TYPES.get(decl.type)
        size = variable_size(decl)
        out = np.zeros(size, dtype=np.uint8)
        values = []

        def flatten(value):
            if isinstance(value, list):
                for item in value:
                    flatten(item)
            else:
                values.append(value)

        flatten(decl.init)
        width = element.bytes if element else 1
        for i, value in enumerate(values):
            if (i + 1) * width > size:
                raise PTXSemanticError(self.source_name, decl.pos.line, decl.pos.col,
                                       f"too many initialisers for '{decl.name}'")
            if isinstance(value, tuple):
                _, name, extra = value
                target = self.symbols.get(name)
                if target is None:
                    raise PTXSemanticError(self.source_name, decl.pos.line, decl.pos.col,
                                           f"initialiser names unknown symbol '{name}'")
                address = target.address + (self.const_base if target.space == "const" else 0) + extra
                raw = np.array([address], dtype=np.uint64).view(np.uint8)[:width]
            else:
                from .executors import immediate
                ref = ir.ImmRef(value.kind, value.value)
                scalar = immediate(ref, decl.type if element else "b8")
                raw = np.array([scalar]).view(np.uint8)
            out[i * width:(i + 1) * width] = raw
        return out

    def global_address(self, name: str) -> Tuple[int, int]:
        """(device address, size) of a __device__ or __constant__ symbol."""
        symbol = self.symbols.get(name)
        if symbol is None:
            for candidate in self.symbols.values():
                if plain_name(candidate.name) == name:
                    symbol = candidate
                    break
        if symbol is None:
            raise UsageError(f"no __constant__ or __device__ symbol named '{name}' in {self.source_name}")
        base = self.const_base if symbol.space == "const" else 0
        return base + symbol.address, symbol.size

    def set_symbol(self, name: str, data: np.ndarray) -> None:
        address, size = self.global_address(name)
        raw = symbol_bytes(name, data)
        if raw.size > size:
            raise UsageError(f"{raw.size} bytes do not fit symbol '{name}' of {size} bytes")
        self.device.memory.write(address, raw)

    # ---- kernels ----
    @property
    def kernel_names(self) -> List[str]:
        return [fn.name for fn in self.syntax.functions if fn.kind == "entry" and fn.body is not None]

    def resolve_kernel(self, name: Optional[str]) -> str:
        names = self.kernel_names
        if name is None:
            if len(names) == 1:
                return names[0]
            if not names:
                raise UsageError(f"{self.source_name} defines no kernel (no .entry with a body)")
            listing = ", ".join(plain_name(n) for n in names)
            raise UsageError(f"{self.source_name} has {len(names)} kernels ({listing}): choose one by name "
                             f"(--kernel NAME, or kernel(NAME) from Python)")
        if name in names:
            return name
        matches = [n for n in names if plain_name(n) == name]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise UsageError(f"'{name}' is ambiguous: {', '.join(matches)}")
        listing = ", ".join(plain_name(n) for n in names) or "none"
        raise UsageError(f"no kernel named '{name}' in {self.source_name} (kernels: {listing})")

    def program(self, name: str) -> ir.Program:
        if name not in self._programs:
            try:
                self._programs[name] = lower_kernel(self.syntax, name, self.symbols, contract=self.contract)
            except RecursionError:
                raise PTXSemanticError(self.source_name, 1, 1, f"kernel '{name}' nests blocks too deeply") from None
        return self._programs[name]

    def kernel(self, name: Optional[str] = None) -> "Kernel":
        return Kernel(self, self.resolve_kernel(name))

    def __getitem__(self, name: str) -> "Kernel":
        return self.kernel(name)


class Kernel:
    """One entry function of a module; launch it with numpy arrays and scalars."""

    def __init__(self, module: Module, name: str):
        self.module = module
        self.name = name
        self.program = module.program(name)

    @property
    def params(self) -> List[ir.KernelParam]:
        return self.program.params

    def __call__(self, grid, block, args, shared_mem: int = 0, **options) -> LaunchStats:
        return self.launch(grid, block, args, shared=shared_mem, **options)

    def launch(self, grid, block, args: Sequence, shared: int = 0, *, max_steps: int = DEFAULT_MAX_STEPS,
               observer=None, policy=None, max_dynamic_shared: Optional[int] = None,
               batch_bytes: int = DEFAULT_BATCH_BYTES, arch: Union[str, int, None] = None,
               spin_limit: Optional[int] = None, progress=None) -> LaunchStats:
        """Run the kernel; numpy array arguments are copied to the device and written back in place.

        observer: an emulator.observe.Observer (statistics, traces, checkers, debugger); policy: a
        scheduling policy object with select(batch) (and optionally turn_limit) replacing the default
        lowest-pc-first choice of the next group of threads. arch and spin_limit default to the device's.
        progress: called with (CTAs done, CTAs in all) after each batch of CTAs."""
        launch = Launch(self, dim3(grid, "grid"), dim3(block, "block"), shared, observer=observer, policy=policy,
                        max_dynamic_shared=max_dynamic_shared, arch=arch, spin_limit=spin_limit)
        return launch.run(list(args), max_steps=max_steps, batch_bytes=batch_bytes, progress=progress)


class DevicePointer(int):
    """A raw device address passed as a pointer argument (no copy in or out)."""


class Launch:
    """One kernel launch: configuration checks, parameter buffer, CTA batches, and the errors it can end in."""

    def __init__(self, kernel: Kernel, grid, block, dynamic_shared: int, *, observer=None, policy=None,
                 max_dynamic_shared: Optional[int] = None, arch: Union[str, int, None] = None,
                 spin_limit: Optional[int] = None):
        self.kernel = kernel
        self.program = kernel.program
        self.device = kernel.module.device
        self.memory = self.device.memory
        self.grid, self.block = grid, block
        if not is_integer(dynamic_shared):
            raise LaunchError("CUDA_ERROR_INVALID_VALUE", f"dynamic shared memory size "
                              f"{describe_value(dynamic_shared)} must be an integer number of bytes")
        self.dynamic_shared = int(dynamic_shared)
        self.observer = observer
        self.policy = policy
        self.arch = arch_number(arch) if arch is not None else self.device.arch
        self.spin_limit = int(spin_limit) if spin_limit is not None else self.device.spin_limit
        #: set by a checker in begin_launch: give the shared and local windows a sink past their end
        self.fault_sink = False
        self.const_base = kernel.module.const_base
        self.const_size = kernel.module.const_size
        #: the CTA's shared window: the driver's reserved kilobyte, then the static and dynamic bytes
        self.shared_bytes = SHARED_RESERVED_BYTES + self.program.static_shared + self.dynamic_shared
        self.device.launches += 1
        self.grid_id = self.device.launches
        self._layouts: Dict[int, BatchLayout] = {}
        self._uniform: Optional[Set[int]] = None
        self._check_configuration(max_dynamic_shared)

    def uniform_registers(self) -> Set[int]:
        """The program's launch-uniform registers (emulator.uniform), worked out once per launch."""
        if self._uniform is None:
            self._uniform = uniform_registers(self.program)
        return self._uniform

    def batch_layout(self, n_ctas: int) -> BatchLayout:
        """The thread indices of a batch of n_ctas CTAs, built once per size."""
        layout = self._layouts.get(n_ctas)
        if layout is None:
            layout = self._layouts[n_ctas] = BatchLayout(self.block, n_ctas)
        return layout

    def _check_configuration(self, max_dynamic_shared: Optional[int]) -> None:
        name = plain_name(self.program.name)
        for value, limit, what in zip(self.block, MAX_BLOCK, "xyz"):
            if value < 1 or value > limit:
                raise LaunchError("CUDA_ERROR_INVALID_VALUE",
                                  f"block dimension {what}={value} of {name} is outside 1..{limit}")
        threads = self.block[0] * self.block[1] * self.block[2]
        if threads > MAX_THREADS_PER_BLOCK:
            raise LaunchError("CUDA_ERROR_INVALID_VALUE",
                              f"{threads} threads per block for {name}; the limit is {MAX_THREADS_PER_BLOCK}")
        for value, limit, what in zip(self.grid, MAX_GRID, "xyz"):
            if value < 1 or value > limit:
                raise LaunchError("CUDA_ERROR_INVALID_VALUE",
                                  f"grid dimension {what}={value} of {name} is outside 1..{limit}")
        directives = self.program.directives
        if "maxntid" in directives:
            limit = int(np.prod(directives["maxntid"]))
            if threads > limit:
                raise LaunchError("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
                                  f"{threads} threads per block exceed .maxntid {limit} of {name}")
        if "reqntid" in directives:
            wanted = tuple(directives["reqntid"]) + (1,) * (3 - len(directives["reqntid"]))
            if tuple(self.block) != wanted:
                raise LaunchError("CUDA_ERROR_INVALID_VALUE", f"{name} requires a block of {wanted} (.reqntid)")
        if self.dynamic_shared < 0:
            raise LaunchError("CUDA_ERROR_INVALID_VALUE", "negative dynamic shared memory size")
        optin = max_dynamic_shared if max_dynamic_shared is not None else 0
        limit = SHARED_DEFAULT_LIMIT
        if optin:
            if optin > SHARED_OPTIN_LIMIT - self.program.static_shared:
                raise LaunchError("CUDA_ERROR_INVALID_VALUE",
                                  f"max dynamic shared size {optin} exceeds the sm_90 limit of {SHARED_OPTIN_LIMIT} bytes")
            limit = max(limit, self.program.static_shared + optin)
        user_bytes = self.program.static_shared + self.dynamic_shared
        if user_bytes > limit:
            advice = " without opting in (cudaFuncAttributeMaxDynamicSharedMemorySize)" \
                if user_bytes <= SHARED_OPTIN_LIMIT else f"; the sm_90 maximum is {SHARED_OPTIN_LIMIT}"
            raise LaunchError("CUDA_ERROR_INVALID_VALUE",
                              f"{name} needs {user_bytes} bytes of shared memory "
                              f"({self.program.static_shared} static + {self.dynamic_shared} dynamic), more than "
                              f"{limit}{advice}")
        if self.program.param_bytes > PARAM_LIMIT:
            raise LaunchError("CUDA_ERROR_INVALID_VALUE", f"{self.program.param_bytes} bytes of parameters")

    # ---- parameters ----
    def _parameter_buffer(self, args: list) -> Tuple[np.ndarray, List["HostRegion"]]:
        """The parameter bytes, and the host arrays copied into device memory for them (not yet freed)."""
        params = self.program.params
        name = plain_name(self.program.name)
        if len(args) != len(params):
            raise UsageError(f"{name} takes {len(params)} arguments, {len(args)} given")
        buffer = np.zeros(max(self.program.param_bytes, 1), dtype=np.uint8)
        arrays: Dict[int, np.ndarray] = {}
        for index, (param, arg) in enumerate(zip(params, args)):
            if isinstance(arg, np.ndarray):
                self._check_buffer(index, param, arg)
                arrays[index] = arg
            else:
                raw = self._scalar_bytes(index, param, arg)
                buffer[param.offset:param.offset + raw.size] = raw
        regions = host_regions(arrays, lambda index: self._argument_name(index, params[index]))
        self.memory.reserve(sum(region.nbytes + 256 for region in regions))
        for region in regions:
            region.copy_in(self.memory)
            for index, offset in region.pointers.items():
                raw = np.array([region.address + offset], dtype=np.uint64).view(np.uint8)
                buffer[params[index].offset:params[index].offset + 8] = raw
        return buffer, regions

    def _argument_name(self, index: int, param: ir.KernelParam) -> str:
        return f"argument {index} ({param.name}, .{param.type}) of {plain_name(self.program.name)}"

    def _check_buffer(self, index: int, param: ir.KernelParam, array: np.ndarray) -> None:
        if param.size != 8:
            raise UsageError(f"argument {index} is a buffer but parameter {param.name} is "
                             f".{param.type} ({param.size} bytes), not a 64-bit pointer")
        if array.dtype.hasobject:
            raise UsageError(f"{self._argument_name(index, param)} is an array of Python objects ({array.dtype}); "
                             f"pass an array of numbers")

    def _scalar_bytes(self, index: int, param: ir.KernelParam, value) -> np.ndarray:
        """The bytes of a scalar argument: a DevicePointer, a numpy scalar (its own bytes) or a Python number."""
        if isinstance(value, DevicePointer):
            if param.size != 8:
                raise UsageError(f"{self._argument_name(index, param)} is not a 64-bit pointer but is given "
                                 f"a DevicePointer")
            return np.array([int(value)], dtype=np.uint64).view(np.uint8)
        if isinstance(value, np.generic):
            if value.dtype.kind in "OSU":
                raise UsageError(f"{self._argument_name(index, param)} expects a number, "
                                 f"not {describe_value(value)}")
            raw = np.array([value]).view(np.uint8)
            if raw.size != param.size:
                raise UsageError(f"argument {index} is {value.dtype.name} ({raw.size} bytes) but parameter "
                                 f"{param.name} is .{param.type} ({param.size} bytes)")
            return raw
        return np.array([self._python_scalar(value, param, self._argument_name(index, param))]).view(np.uint8)

    @staticmethod
    def _python_scalar(value, param: ir.KernelParam, where: str):
        """A Python number as the parameter's type: integers for integer and raw-bit parameters (floats such
        as 8.0 are refused, never truncated), integers or floats for .f32/.f64."""
        t = TYPES.get(param.type)
        if t is None or t.kind == "pred":
            raise UsageError(f"cannot pass a Python scalar for parameter {param.name} (.{param.type})")
        if isinstance(value, (list, tuple)) and t.bits == 64:
            raise UsageError(f"{where} is given {describe_value(value)}: pass buffers as numpy arrays "
                             f"(np.asarray(values, dtype=...))")
        if t.kind == "float" or (t.kind == "half" and param.type in ("f16", "bf16")):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                try:
                    if t.kind == "half":  # the parameter holds the code of the value rounded once to nearest
                        return fp.cvt(np.array([float(value)]), dst=param.type, src="f64")[0]
                    return t.dtype.type(float(value))
                except OverflowError:
                    pass
            raise UsageError(f"{where} expects a number, not {describe_value(value)}")
        if not isinstance(value, int):
            wanted = "a numpy array (for a pointer) or an integer" if t.bits == 64 else "an integer"
            raise UsageError(f"{where} expects {wanted} (a Python int or numpy integer; floats are refused, "
                             f"not truncated), not {describe_value(value)}")
        mask = (1 << t.bits) - 1
        return np.array(int(value) & mask, dtype=np.dtype(f"u{t.bytes}")).view(t.dtype)[()]

    # ---- running ----
    def run(self, args: list, *, max_steps: int, batch_bytes: int, progress=None) -> LaunchStats:
        if not is_integer(max_steps) or max_steps < 1:
            raise UsageError(f"max_steps must be a positive integer, not {describe_value(max_steps)}")
        start = time.perf_counter()
        buffer, copies = self._parameter_buffer(args)
        self.param_base = self.memory.alloc(buffer.size, kind="param", name="__params__")
        self.memory.write(self.param_base, buffer)
        stats = LaunchStats(self.program.name, self.grid, self.block, memory_backend=self.memory.backend)
        if self.observer is not None:
            self.observer.begin_launch(self)
        try:
            total_ctas = self.grid[0] * self.grid[1] * self.grid[2]
            per_cta = self._bytes_per_cta()
            ctas_per_batch = max(1, min(total_ctas, batch_bytes // max(per_cta, 1)))
            cta = 0
            remaining = max_steps
            sink = FAULT_SINK_BYTES if self.fault_sink else 0
            self.shared_sink = _align16(self.shared_bytes)
            self.local_sink = _align16(self.program.local_bytes)
            while cta < total_ctas:
                count = min(ctas_per_batch, total_ctas - cta)
                tpc_pad = (self.block[0] * self.block[1] * self.block[2] + 31) // 32 * 32
                self.memory.set_windows(n_ctas=count, threads_per_cta=tpc_pad,
                                        shared_bytes=self.shared_sink + sink if sink else self.shared_bytes,
                                        local_bytes=self.local_sink + sink if sink else self.program.local_bytes)
                batch = Batch(self, self.program, cta, count)
                if self.observer is not None:
                    self.observer.begin_batch(batch)
                try:
                    batch.run(remaining)
                except DeviceError as error:
                    self._notify_failure(error)
                    raise
                if self.observer is not None:
                    self.observer.end_batch(batch)
                batch.release()
                remaining -= batch.steps
                stats.warp_instructions += batch.warp_instructions
                stats.thread_instructions += batch.thread_instructions
                stats.steps += batch.steps
                stats.batches += 1
                cta += count
                if progress is not None:
                    progress(cta, total_ctas)
            for region in copies:
                region.copy_back(self.memory)
        finally:
            for region in copies:
                self.memory.free(region.address)
            self.memory.free(self.param_base)
        stats.wall_seconds = time.perf_counter() - start
        if self.observer is not None:
            self.observer.end_launch(self, stats)
        return stats

    def _notify_failure(self, error: DeviceError) -> None:
        """Tell the subscribers that the launch stops here."""
        if self.observer is not None:
            self.observer.launch_failed(self, error)

    def _bytes_per_cta(self) -> int:
        tpc_pad = (self.block[0] * self.block[1] * self.block[2] + 31) // 32 * 32
        register_bytes = sum(reg.storage.itemsize for reg in self.program.registers)
        return tpc_pad * (register_bytes + self.program.local_bytes + 48) + self.shared_bytes

    def write_stdout(self, text: str) -> None:
        self.device.write_stdout(text)

    # ---- errors ----
    def where(self, instr: ir.Instr) -> str:
        text = f"{self.program.source_name}:{instr.line}"
        if instr.source is not None:
            text += f" ({instr.source[0]}:{instr.source[1]})"
        return text

    def _who(self, batch: Batch, thread: Optional[int]) -> str:
        if thread is None:
            return ""
        block, thread_xyz = batch.thread_coordinates(thread)
        return f"block ({block[0]},{block[1]},{block[2]}), thread ({thread_xyz[0]},{thread_xyz[1]},{thread_xyz[2]})"

    def fault_error(self, batch: Batch, instr: ir.Instr, fault: DeviceFault, thread: Optional[int]) -> DeviceError:
        name = plain_name(self.program.name)
        cuda_error = "CUDA_ERROR_MISALIGNED_ADDRESS" if fault.kind == "misaligned" else "CUDA_ERROR_ILLEGAL_ADDRESS"
        access = {"load": "read", "store": "write", "atomic": "atomic"}.get(fault.op, fault.op)
        detail_lines = [line.strip() for line in fault.detail.splitlines() if line.strip()]
        who = self._who(batch, thread)
        report = "\n".join(
            [f"========= Invalid __{fault.space}__ {access} of size {fault.width} bytes",
             f"=========     at {name}+0x{instr.pc * 16:x} in {self.where(instr)}",
             f"=========     by thread {who.split(', thread ')[-1] if who else '?'} in "
             f"{who.split(', thread ')[0] if who else '?'}"] +
            [f"=========     {line}" for line in detail_lines])
        summary = (f"{cuda_error}: invalid __{fault.space}__ {access} of {fault.width} bytes at "
                   f"0x{fault.address:x} ({'; '.join(detail_lines) or fault.kind}) in kernel {name}, pc {instr.pc}, "
                   f"{self.where(instr)} `{instr.text}`, {who}")
        return DeviceError(cuda_error, report, summary)

    def deadlock_error(self, batch: Batch) -> DeviceError:
        name = plain_name(self.program.name)
        counting = "warps" if batch.per_warp_barriers else "threads"
        summary = (f"GPUEMU_DEADLOCK: kernel {name} can never finish: {counting} wait at a barrier that the rest "
                   f"of their block will not reach (sm_{self.arch}): " + self.describe_warps(batch))
        return DeviceError("GPUEMU_DEADLOCK", summary, summary)

    def livelock_error(self, batch: Batch, registers_change: bool = False) -> DeviceError:
        name = plain_name(self.program.name)
        if registers_change:
            what = (f"over {batch.backward_branches:,} loop iterations every thread stayed in its loop and no memory "
                    f"byte changed (--spin-limit {batch.spin_limit:,})")
        else:
            what = f"over {batch.spin_limit:,} loop iterations no pc, register or memory byte changed (--spin-limit)"
        summary = f"GPUEMU_LIVELOCK: kernel {name} can never finish: {what}: " + self.describe_warps(batch)
        return DeviceError("GPUEMU_LIVELOCK", summary, summary)

    def describe_warps(self, batch: Batch) -> str:
        """Every warp's state and pc, warps with the same story merged: `block (0,0,0) warps 0-3 wait at ...`."""
        def where(pc: int) -> str:
            instr = self.program.instrs[pc]
            return f"pc {pc} {self.where(instr)} `{' '.join(instr.text.split())}`"

        def story(state: str, pc: int, plural: bool) -> str:
            if state == "exited":
                return "exited"
            if state == "barrier":
                return f"wait{'' if plural else 's'} at the barrier at {where(pc)}"
            return f"{'are' if plural else 'is'} at {where(pc)}"

        per_block: Dict[int, List[Tuple[int, tuple]]] = {}
        for cta, warp, parts in batch.warp_states():
            per_block.setdefault(cta, []).append((warp, tuple((state, pc, tuple(lanes)) for state, pc, lanes in parts)))
        blocks: Dict[str, List[int]] = {}
        for cta, warps in per_block.items():
            merged: Dict[tuple, List[int]] = {}
            for warp, parts in warps:
                merged.setdefault(parts, []).append(warp)
            texts = []
            for parts, ws in merged.items():
                subject = f"warp{'s' if len(ws) > 1 else ''} {_ranges(ws)}"
                if len(parts) == 1:
                    texts.append(f"{subject} {story(parts[0][0], parts[0][1], len(ws) > 1)}")
                else:
                    texts.append(f"{subject}: " + ", ".join(
                        f"lane{'s' if len(lanes) > 1 else ''} {_ranges(lanes)} {story(state, pc, len(lanes) > 1)}"
                        for state, pc, lanes in parts))
            text = "; ".join(texts)
            blocks.setdefault(text, []).append(cta)
        lines = []
        for text, ctas in blocks.items():
            first, _ = batch.thread_coordinates(ctas[0] * batch.tpc_pad)
            label = f"block ({first[0]},{first[1]},{first[2]})"
            if len(ctas) > 1:
                label += f" and {len(ctas) - 1} more block{'s' if len(ctas) > 2 else ''} like it"
            lines.append(f"{label}: {text}")
        return " | ".join(lines)

    def step_limit_error(self, batch: Batch, instr: ir.Instr) -> DeviceError:
        name = plain_name(self.program.name)
        summary = (f"GPUEMU_STEP_LIMIT: kernel {name} ran more than {batch.max_steps} scheduler steps "
                   f"(--max-steps); last at pc {instr.pc}, {self.where(instr)} `{instr.text}`")
        return DeviceError("GPUEMU_STEP_LIMIT", summary, summary)

    def illegal_instruction_error(self, batch: Batch, instr: ir.Instr, problem: str, thread: int) -> DeviceError:
        """CUDA_ERROR_ILLEGAL_INSTRUCTION for an instruction the H100 refuses at run time; problem says why."""
        summary = (f"CUDA_ERROR_ILLEGAL_INSTRUCTION: `{instr.text}` {problem} in kernel {plain_name(self.program.name)}, "
                   f"pc {instr.pc}, {self.where(instr)}, {self._who(batch, int(thread))}")
        return DeviceError("CUDA_ERROR_ILLEGAL_INSTRUCTION", summary, summary)

    def trap_error(self, batch: Batch, instr: ir.Instr, thread: int) -> DeviceError:
        name = plain_name(self.program.name)
        summary = (f"CUDA_ERROR_LAUNCH_FAILED: trap in kernel {name}, pc {instr.pc}, {self.where(instr)}, "
                   f"{self._who(batch, int(thread))}")
        return DeviceError("CUDA_ERROR_LAUNCH_FAILED", summary, summary)

    def assert_error(self, batch: Batch, instr: ir.Instr, site, thread: int) -> DeviceError:
        from .lower import FUNC_PARAM_BASE
        from .printf import read_c_string
        texts = []
        threads = np.array([thread], dtype=np.int64)
        for symbol in site.arguments[:4]:
            raw = self.memory.load("local", np.array([symbol.address - FUNC_PARAM_BASE], dtype=np.uint64),
                                   threads, 8 if symbol.size >= 8 else 4)
            texts.append(int(raw.view(np.uint64 if symbol.size >= 8 else np.uint32)[0, 0]))
        message = read_c_string(self.memory, texts[0], thread).decode(errors="replace") if texts else "?"
        source = read_c_string(self.memory, texts[1], thread).decode(errors="replace") if len(texts) > 1 else "?"
        line = texts[2] if len(texts) > 2 else 0
        summary = (f"CUDA_ERROR_ASSERT: {source}:{line}: Assertion `{message}` failed in kernel "
                   f"{plain_name(self.program.name)}, {self._who(batch, thread)}")
        return DeviceError("CUDA_ERROR_ASSERT", summary, summary)


class HostRegion:
    """Host arrays that share memory, held in one device allocation as CUDA would see one buffer.

    The device holds each array's elements in C order and native byte order (what a cudaMemcpy of
    np.ascontiguousarray(array) would copy); pointers maps argument index → byte offset in the allocation.
    Different views of one memory can share an allocation only if they are C-contiguous and native."""

    def __init__(self, views: List[Tuple[np.ndarray, int]], pointers: Dict[int, int], nbytes: int):
        self.views = views
        self.pointers = pointers
        self.nbytes = nbytes
        self.address = 0

    def copy_in(self, memory: Memory) -> None:
        self.address = memory.alloc(max(self.nbytes, 1), name=f"arg{min(self.pointers)}")
        if len(self.views) > 1:
            memory.write(self.address, np.zeros(self.nbytes, dtype=np.uint8))
        for array, offset in self.views:
            data = np.ascontiguousarray(array, dtype=native_dtype(array.dtype))
            memory.write(self.address + offset, data.reshape(-1).view(np.uint8))

    def copy_back(self, memory: Memory) -> None:
        """Write the device bytes back into each writable array, in its own layout and byte order."""
        for array, offset in self.views:
            if array.nbytes and array.flags.writeable:
                device = memory.read(self.address + offset, array.nbytes).view(native_dtype(array.dtype))
                array[...] = device.reshape(array.shape)


def host_regions(arrays: Dict[int, np.ndarray], argument_name) -> List[HostRegion]:
    """Group the array arguments (index → array) by shared memory, one HostRegion per group;
    argument_name(index) names an argument in the error for overlapping views that cannot share."""
    groups: List[List[int]] = []
    for index, array in arrays.items():
        touching = [group for group in groups if any(_overlap(array, arrays[other]) for other in group)]
        groups = [group for group in groups if group not in touching]
        groups.append(sorted([index] + [other for group in touching for other in group]))
    regions = []
    for group in sorted(groups):
        views: Dict[tuple, Tuple[np.ndarray, List[int]]] = {}
        for index in group:
            array = arrays[index]
            key = (_data_address(array), array.shape, array.strides, array.dtype)
            kept, indices = views.get(key, (array, []))
            views[key] = (kept if kept.flags.writeable else array, indices + [index])
        if len(views) == 1:
            (array, indices), = views.values()
            regions.append(HostRegion([(array, 0)], {index: 0 for index in indices}, array.nbytes))
            continue
        for array, indices in views.values():
            if not (array.flags.c_contiguous and array.dtype.isnative):
                others = [i for i in group if i not in indices]
                raise UsageError(f"{argument_name(indices[0])} overlaps {argument_name(others[0])} in memory "
                                 f"as a different view that is not C-contiguous and native-order, so writes could "
                                 f"not be kept; pass the same array, C-contiguous slices of one array, or a copy "
                                 f"(np.ascontiguousarray)")
        low = min(_data_address(array) for array, _ in views.values())
        high = max(_data_address(array) + array.nbytes for array, _ in views.values())
        regions.append(HostRegion([(array, _data_address(array) - low) for array, _ in views.values()],
                                  {index: _data_address(array) - low
                                   for array, indices in views.values() for index in indices},
                                  high - low))
    return regions


def _data_address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


#: numpy's "cannot tell within max_work" error (np.exceptions from numpy 1.25, np before)
_TOO_HARD = getattr(np, "exceptions", np).TooHardError


def _overlap(first: np.ndarray, second: np.ndarray) -> bool:
    """Whether two arrays share a byte of memory (assumed when numpy cannot tell cheaply)."""
    if not np.may_share_memory(first, second):
        return False
    try:
        return bool(np.shares_memory(first, second, max_work=100_000))
    except _TOO_HARD:
        return True


def _align16(value: int) -> int:
    return (value + 15) // 16 * 16


def _ranges(values: Sequence[int]) -> str:
    """[0, 1, 2, 5] → `0-2,5`."""
    values = sorted(values)
    parts, start = [], None
    for index, value in enumerate(values):
        if start is None:
            start = value
        if index + 1 == len(values) or values[index + 1] != value + 1:
            parts.append(str(start) if start == value else f"{start}-{value}")
            start = None
    return ",".join(parts)


#: file name endings that make a one-line string a path rather than PTX text
SOURCE_SUFFIXES = (".ptx", ".sass", ".cubin", ".fatbin", ".cuobjdump", ".s", ".txt")


def looks_like_path(text: str) -> bool:
    """A one-line string that names a file: it ends like a kernel source or holds a directory separator."""
    if "\n" in text or "{" in text or ";" in text:
        return False
    return text.strip().lower().endswith(SOURCE_SUFFIXES) or "/" in text or os.sep in text


def load(source: Union[str, bytes, os.PathLike], *, device: Optional[Device] = None, contract: bool = True) -> Module:
    """Load PTX (or a SASS listing) from a path or from its text; bytes are taken as UTF-8 text.
    contract=False runs the PTX literally, without the FMA contractions ptxas makes (docs/fidelity.md)."""
    module = _load(source, device)
    module.contract = bool(contract)
    return module


def _load(source, device: Optional[Device]) -> Module:
    if isinstance(source, (bytes, bytearray)):
        try:
            source = bytes(source).decode("utf-8")
        except UnicodeDecodeError as error:
            raise UsageError(f"load() was given bytes that are not UTF-8 text "
                             f"(byte 0x{error.object[error.start]:02x} at offset {error.start})") from None
    if isinstance(source, os.PathLike) or (isinstance(source, str) and
                                           (looks_like_path(source) or ("\n" not in source and
                                                                        os.path.exists(source)))):
        path = os.fsdecode(os.fspath(source))
        if not os.path.exists(path):
            raise UsageError(f"{path}: no such file")
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError as error:
            raise UsageError(f"{path}: cannot read it ({error.strerror or error})") from None
        return Module(text, path, device)
    if not isinstance(source, str):
        raise UsageError(f"load() takes a path, PTX text or UTF-8 bytes, not {describe_value(source)}")
    return Module(source, "<ptx>", device)
