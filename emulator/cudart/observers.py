"""gpuemu's checkers, counters, traces and debugger for the launches of a whole program, turned on by environment
variables: GPUEMU_CHECK=race,sync,init,mem, GPUEMU_STATS=1, GPUEMU_TRACE=directory, GPUEMU_DEBUG=kernel. The only
module of emulator.cudart that reaches into gpuemu's internals (emulator.observers, emulator.machine.observe,
emulator.runtime, emulator.cli)."""
from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from typing import List, Optional

import numpy as np

from ..errors import LaunchError, UsageError


class _Stream:
    """A text stream over one of the context's writers."""

    def __init__(self, write):
        self._write = write

    def write(self, text: str) -> int:
        self._write(text)
        return len(text)

    def flush(self) -> None:
        pass


class Session:
    """Reads the environment once; builds each launch's observer and reports after it."""

    def __init__(self, context, environ=None):
        environ = os.environ if environ is None else environ
        self.context = context
        self.checks = self._checks(environ.get("GPUEMU_CHECK", ""))
        self.stats = environ.get("GPUEMU_STATS", "") not in ("", "0")
        self.trace_directory = environ.get("GPUEMU_TRACE", "") or None
        if self.trace_directory:
            os.makedirs(self.trace_directory, exist_ok=True)
        self.max_steps = self._positive(environ.get("GPUEMU_MAX_STEPS", ""), "GPUEMU_MAX_STEPS")
        #: with the mem checker on, a faulting launch's accesses are in the checker's report already
        self.reports_faults = "mem" in self.checks
        self.debug_kernel = environ.get("GPUEMU_DEBUG", "").strip() or None

    @staticmethod
    def _positive(text: str, name: str) -> Optional[int]:
        if not text.strip():
            return None
        try:
            value = int(text, 0)
        except ValueError:
            value = 0
        if value < 1:
            raise UsageError(f"{name}={text} is not a positive whole number")
        return value

    @staticmethod
    def _checks(text: str) -> List[str]:
        from emulator.observers.checks.common import chosen_checks
        return chosen_checks(text, "GPUEMU_CHECK")

    def launch(self, kernel, grid, block, args, shared: int, max_dynamic_shared: Optional[int], options: dict,
               source: str = ""):
        """kernel.launch with this session's observers; reports (stats tables, checker findings) follow it. source:
        the module's PTX (a trace's header records its hash)."""
        from emulator.runtime.launch import DEFAULT_MAX_STEPS
        from emulator.machine.observe import combine
        if self.debug_kernel is not None and self.debug_kernel in (kernel.name, _plain(kernel.name)):
            self.debug_kernel = None
            self._debug(kernel, grid, block, args, shared, max_dynamic_shared, source)
        stderr = _Stream(self.context.write_stderr)
        checker = stats = trace = None
        if self.checks:
            from emulator.observers.checks import CheckSession
            checker = CheckSession(self.checks, stream=stderr)
        if self.stats:
            from emulator.observers.stats import MemoryStats
            stats = MemoryStats(4)
        if self.trace_directory:
            trace = self._trace(kernel, source)
        try:
            result = kernel.launch(grid, block, args, shared, max_dynamic_shared=max_dynamic_shared,
                                   observer=combine(checker, stats, trace),
                                   max_steps=self.max_steps or DEFAULT_MAX_STEPS, **options)
        except LaunchError:
            if trace is not None:
                trace.stream.close()
                os.unlink(trace.stream.name)        # a launch refused before it ran leaves no trace
                trace = None
            raise
        finally:
            if trace is not None:
                trace.stream.close()
        if stats is not None:
            from emulator.runtime.names import plain_name
            from emulator.observers.stats import format_table, launch_title
            self.context.write_stderr(format_table(stats.kernel_counters(), launch_title(
                plain_name(kernel.name), result.grid, result.block, stats.bank_bytes)) + "\n")
        return result

    def _trace(self, kernel, source: str):
        from emulator.runtime.names import plain_name
        from emulator.observers.trace import TraceFilter, TraceWriter, trace_header
        number = self.context.launches
        path = os.path.join(self.trace_directory, f"{number:04d}-{plain_name(kernel.name)}.jsonl")
        header = trace_header(kernel.module.source_name, source)
        return TraceWriter(open(path, "w", encoding="utf-8"), header, TraceFilter([]), close=True)


    def _debug(self, kernel, grid, block, args, shared: int, max_dynamic_shared: Optional[int], source: str) -> None:
        """gpuemu's debugger on a copy of this launch, on the program's terminal; the program then goes on with the
        real launch. A pointer argument becomes a copy of the allocation it points into (from that byte to the
        allocation's end), __device__ and __constant__ variables their current bytes."""
        from emulator.cli import build_parser
        from emulator.cli.debug import command_debug
        context = self.context
        directory = tempfile.mkdtemp(prefix="gpuemu-debug-")
        ptx = os.path.join(directory, f"{_plain(kernel.name)}.ptx")
        with open(ptx, "w", encoding="utf-8") as handle:
            handle.write(source)
        argv = ["debug", ptx, "--kernel", kernel.name, "--grid", ",".join(map(str, grid)),
                "--block", ",".join(map(str, block)), "--shared", str(shared)]
        if max_dynamic_shared:
            argv += ["--max-dynamic-shared", str(max_dynamic_shared)]
        for index, (param, value) in enumerate(zip(kernel.params, args)):
            raw = np.asarray(value).reshape(1).view(np.uint8)
            pointer = int(raw.view(np.uint64)[0]) if param.size == 8 else 0
            end = context.allocation_end(pointer) if pointer else None
            if end is not None:
                path = os.path.join(directory, f"arg{index}.npy")
                np.save(path, context.read(pointer, end - pointer, "device"), allow_pickle=False)
                argv += ["--arg", "@" + path]
            else:
                argv += ["--arg", "bytes:" + raw.tobytes().hex()]
        for name, symbol in kernel.module.symbols.items():
            if symbol.space in ("global", "const") and not name.startswith("$"):
                address, size = kernel.module.global_address(name)
                path = os.path.join(directory, f"symbol-{len(argv)}.npy")
                np.save(path, context.memory.read(address, size), allow_pickle=False)
                argv += ["--const", f"{name}=@{path}"]
        context.flush()
        sys.__stderr__.write(f"gpuemu: GPUEMU_DEBUG: the first launch of {_plain(kernel.name)}; the program goes on "
                             f"when the debugger quits\n")
        command_debug(build_parser("debug").parse_args(argv), stdin=sys.__stdin__, stdout=sys.__stdout__,
                      stderr=sys.__stderr__)
        sys.__stdout__.flush()
        sys.__stderr__.flush()


def _plain(name: str) -> str:
    from emulator.runtime.names import plain_name
    return plain_name(name)


plain_name = _plain


@dataclass
class KernelResources:
    """What cudaFuncGetAttributes and occupancy need from a kernel's lowered program."""
    static_shared: int
    local_bytes: int
    const_bytes: int
    max_threads: Optional[int]


def kernel_resources(kernel) -> KernelResources:
    program = kernel.program
    limit = program.directives.get("maxntid")
    return KernelResources(program.static_shared, program.local_bytes, kernel.module.const_size,
                           int(np.prod(limit)) if limit else None)
