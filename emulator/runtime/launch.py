"""Launches: CUDA's launch checks, the parameter buffer in device memory, CTAs run in batches, and the errors a
launch ends in (the machine's stops, rendered by emulator.runtime.faults)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Dict, Optional, Set, Tuple, Union

import numpy as np

from emulator import ir
from emulator.base.errors import DeviceError, LaunchError, UsageError
from emulator.frontend.sass.program import SassProgram
from emulator.ir.uniform import uniform_registers
from emulator.machine.batch import Batch, BatchLayout
from emulator.machine.calls import stack_window_bytes
from emulator.machine.codegen import program_code, resolve_engine
from emulator.machine.config import LaunchConfig, padded_threads
from emulator.machine.stops import MachineStop, StepLimit
from emulator.runtime import budget
from emulator.runtime.arguments import Parameters, describe_value, is_integer
from emulator.runtime.faults import render, where
from emulator.runtime.names import arch_number, plain_name
from emulator.runtime.sass import constant_banks

MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2 ** 31 - 1, 65535, 65535)
SHARED_DEFAULT_LIMIT = 48 * 1024
SHARED_OPTIN_LIMIT = 227 * 1024
PARAM_LIMIT = 32764
CONST_BANK_LIMIT = 64 * 1024
GLOBAL_VARIABLE_LIMIT = 1 << 30
DEFAULT_MAX_STEPS = 20_000_000
DEFAULT_BATCH_BYTES = 16 * 1024 * 1024
DEFAULT_ARCH = "sm_90"
#: loop iterations (backward branches) between two looks for a batch that no longer changes at all
DEFAULT_SPIN_LIMIT = 10_000
#: bytes past the shared and local windows where continue-after-fault sends the lanes it skips
FAULT_SINK_BYTES = 16


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


#: batch layouts kept between launches (the most recently used last)
RECENT_LAYOUTS = 4
_RECENT_LAYOUTS: Dict[tuple, BatchLayout] = {}


class Launch:
    """One kernel launch: configuration checks, parameter buffer, CTA batches, and the errors it can end in."""

    def __init__(self, kernel, grid, block, dynamic_shared: int, *, observer=None, policy=None,
                 max_dynamic_shared: Optional[int] = None, arch: Union[str, int, None] = None,
                 spin_limit: Optional[int] = None, engine: Optional[str] = None):
        self.kernel = kernel
        self.engine = resolve_engine(engine)
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
        if arch is not None:
            self.arch = arch_number(arch)
        elif isinstance(self.program, SassProgram):
            self.arch = arch_number(self.program.arch.name)
        else:
            self.arch = self.device.arch
        self.spin_limit = int(spin_limit) if spin_limit is not None else self.device.spin_limit
        #: set by a checker in begin_launch: give the shared and local windows a sink past their end
        self.fault_sink = False
        self.environment: Dict[int, int] = {}
        self.const_base = kernel.module.const_base
        self.const_size = kernel.module.const_size
        self.module_banks = kernel.module.launch_banks() if hasattr(kernel.module, "launch_banks") else {}
        #: the CTA's shared window: the driver's reserved kilobyte, then the static and dynamic bytes
        self.shared_bytes = ir.SHARED_RESERVED_BYTES + self.program.static_shared + self.dynamic_shared
        self.param_base = 0
        self.device.launches += 1
        self.grid_id = self.device.launches
        self._layouts: Dict[int, BatchLayout] = {}
        self._uniform: Optional[Set[int]] = None
        self._check_configuration(max_dynamic_shared)

    def uniform_registers(self) -> Set[int]:
        """The program's launch-uniform registers (emulator.uniform), worked out once per program."""
        if self._uniform is None:
            self._uniform = self.program.__dict__.get("_gpuemu_uniform")
            if self._uniform is None:
                self._uniform = self.program.__dict__["_gpuemu_uniform"] = frozenset(uniform_registers(self.program))
        return self._uniform

    def batch_layout(self, n_ctas: int) -> BatchLayout:
        """The thread indices of a batch of n_ctas CTAs, built once per size (and kept for the next launches of
        the same block shape: they are read-only)."""
        layout = self._layouts.get(n_ctas)
        if layout is None:
            config = self.config
            key = (config.block, config.threads_per_cta, config.padded_threads_per_cta, n_ctas)
            layout = _RECENT_LAYOUTS.pop(key, None) or BatchLayout(config, n_ctas)
            _RECENT_LAYOUTS[key] = layout
            while len(_RECENT_LAYOUTS) > RECENT_LAYOUTS:
                del _RECENT_LAYOUTS[next(iter(_RECENT_LAYOUTS))]
            self._layouts[n_ctas] = layout
        return layout

    def _check_configuration(self, max_dynamic_shared: Optional[int]) -> None:
        name = plain_name(self.program.name)
        for value, limit, what in zip(self.block, MAX_BLOCK, "xyz"):
            if value < 1 or value > limit:
                raise LaunchError("CUDA_ERROR_INVALID_VALUE",
                                  f"block dimension {what}={value} of {name} is outside 1..{limit}", configuration=True)
        threads = self.block[0] * self.block[1] * self.block[2]
        if threads > MAX_THREADS_PER_BLOCK:
            raise LaunchError("CUDA_ERROR_INVALID_VALUE",
                              f"{threads} threads per block for {name}; the limit is {MAX_THREADS_PER_BLOCK}", configuration=True)
        for value, limit, what in zip(self.grid, MAX_GRID, "xyz"):
            if value < 1 or value > limit:
                raise LaunchError("CUDA_ERROR_INVALID_VALUE",
                                  f"grid dimension {what}={value} of {name} is outside 1..{limit}", configuration=True)
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
        if isinstance(self.program, SassProgram) and self.program.uses_shared and not self.program.shared_size_known:
            # a listing does not say how much static shared memory its kernel declares: it gets the 48 KB a CTA
            # may use without opting in (or its dynamic size, if larger)
            self.shared_bytes = max(self.shared_bytes, SHARED_DEFAULT_LIMIT)

    # ---- running ----
    def run(self, args: list, *, max_steps: int, batch_bytes: int, progress=None,
            move_arguments: bool = False) -> LaunchStats:
        """move_arguments: the host arrays' pages may be given back while their copies are on the device (they
        are written back whole when the launch completes; their contents are undefined if it fails)."""
        if not is_integer(max_steps) or max_steps < 1:
            raise UsageError(f"max_steps must be a positive integer, not {describe_value(max_steps)}")
        if not is_integer(batch_bytes) or batch_bytes < 1:
            raise UsageError(f"batch_bytes must be a positive integer, not {describe_value(batch_bytes)}")
        start = time.perf_counter()
        parameters = Parameters(self.program)
        buffer, regions = parameters.encode(args)
        self._check_memory(regions, buffer.size, batch_bytes)
        buffer, copies = parameters.place(buffer, regions, self.memory, move=move_arguments)
        self.param_base = self.memory.alloc(buffer.size, kind="param", name="__params__")
        self.memory.write(self.param_base, buffer)
        self.config = self._configuration(buffer)
        stats = LaunchStats(self.program.name, self.grid, self.block, memory_backend=self.memory.backend)
        if self.observer is not None:
            self.observer.begin_launch(self)
        try:
            self._run_batches(stats, max_steps, batch_bytes, progress)
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

    def _configuration(self, parameters: np.ndarray) -> LaunchConfig:
        banks = {}
        if isinstance(self.program, SassProgram):
            banks = constant_banks(self.program, self.grid, self.block, self.dynamic_shared, parameters,
                                   self.module_banks, self.environment)
        return LaunchConfig(self.grid, self.block, self.dynamic_shared, self.shared_bytes, self.arch,
                            self.spin_limit, self.const_base, self.const_size, self.param_base,
                            self.program.param_bytes, self.grid_id, self.device.write_stdout, banks,
                            dict(self.environment), stack_bytes=self.device.stack_bytes)

    def _run_batches(self, stats: LaunchStats, max_steps: int, batch_bytes: int, progress) -> None:
        config = self.config
        total_ctas = config.ctas
        ctas_per_batch = max(1, min(total_ctas, batch_bytes // max(self._bytes_per_cta(), 1)))
        sink = FAULT_SINK_BYTES if self.fault_sink else 0
        self.shared_sink = _align16(self.shared_bytes)
        local_bytes = self.program.local_bytes + stack_window_bytes(self.program, config.stack_bytes)
        self.local_sink = _align16(local_bytes)
        cta = 0
        remaining = max_steps
        code = program_code(self.program, self.uniform_registers(), self.engine, self.memory, self.observer,
                            self.policy)
        #: archs for which every instruction of the program has been bound once (a later launch binds lazily)
        bound = self.program.__dict__.setdefault("_gpuemu_bound_archs", set())
        while cta < total_ctas:
            count = min(ctas_per_batch, total_ctas - cta)
            self.memory.set_windows(n_ctas=count, threads_per_cta=config.padded_threads_per_cta,
                                    shared_bytes=self.shared_sink + sink if sink else self.shared_bytes,
                                    local_bytes=self.local_sink + sink if sink else local_bytes)
            batch = Batch(config, self.program, self.memory, cta, count, layout=self.batch_layout(count),
                          uniform=self.uniform_registers(), observer=self.observer, policy=self.policy,
                          code=code, bind_all=cta == 0 and config.arch not in bound)
            bound.add(config.arch)
            if self.observer is not None:
                self.observer.begin_batch(batch)
            try:
                batch.run(remaining)
            except MachineStop as stop:
                if isinstance(stop, StepLimit):
                    stop = StepLimit(stop.instr, max_steps)
                error = render(stop, self.program, self.arch)
                self._notify_failure(error)
                raise error from None
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

    def _notify_failure(self, error: DeviceError) -> None:
        """Tell the subscribers that the launch stops here."""
        if self.observer is not None:
            self.observer.launch_failed(self, error)

    def _bytes_per_cta(self) -> int:
        return _bytes_per_cta(self.program, padded_threads(self.block), self.shared_bytes)

    def _check_memory(self, regions, param_bytes: int, batch_bytes: int) -> None:
        """Refuse the launch (CUDA_ERROR_OUT_OF_MEMORY) before anything is allocated when the device copies of the
        arguments, the arena's growth for them and the state of a batch of CTAs exceed the device's limit."""
        copies = sum(region.nbytes for region in regions) + param_bytes + 256 * (len(regions) + 1)
        total_ctas = int(np.prod(self.grid))
        per_cta = self._bytes_per_cta()
        ctas = max(1, min(total_ctas, batch_bytes // max(per_cta, 1)))
        batch = BATCH_STATE_FACTOR * ctas * per_cta
        growing = self.memory.bytes_in_use if self.memory.growth_for(copies) else 0
        budget.check({"argument copies": copies, "moving the device's memory to grow it": growing,
                      "state of a batch of CTAs": batch},
                     self.device.max_memory, self.memory.bytes_in_use,
                     f"launching {plain_name(self.program.name)} on grid {_dims(self.grid)} x block "
                     f"{_dims(self.block)}")


    def where(self, instr: ir.Instr) -> str:
        """`file.ptx:LINE (file.cu:LINE)` of one of the launch's instructions."""
        return where(self.program, instr)


#: numpy's "cannot tell within max_work" error (np.exceptions from numpy 1.25, np before)


def _align16(value: int) -> int:
    return (value + 15) // 16 * 16


#: a batch's temporaries (operands gathered per instruction, masks, observers' copies) next to its registers
BATCH_STATE_FACTOR = 2


def _bytes_per_cta(program, padded_threads: int, shared_bytes: int) -> int:
    register_bytes = sum(reg.storage.itemsize for reg in program.registers)
    return padded_threads * (register_bytes + program.local_bytes + 48) + shared_bytes


def _dims(values) -> str:
    return "x".join(str(value) for value in values)


#: file name endings that make a one-line string a path rather than PTX text
