"""gpuemu's checkers, counters and traces for every launch of a whole program, turned on by environment variables:
GPUEMU_CHECK=race,sync,init,mem, GPUEMU_STATS=1, GPUEMU_TRACE=directory. The only module of emulator.cudart that
reaches into gpuemu's internals (emulator.checks, .stats, .trace, .observe)."""
from __future__ import annotations

import os
from typing import List, Optional

from ..errors import UsageError


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
        from ..checks import CHECKS
        names = [name.strip() for name in text.split(",") if name.strip()]
        if "all" in names:
            return list(CHECKS)
        unknown = [name for name in names if name not in CHECKS]
        if unknown:
            raise UsageError(f"GPUEMU_CHECK: unknown checker '{unknown[0]}' (choose from {', '.join(CHECKS)}, all)")
        return names

    def launch(self, kernel, grid, block, args, shared: int, max_dynamic_shared: Optional[int], options: dict,
               source: str = ""):
        """kernel.launch with this session's observers; reports (stats tables, checker findings) follow it. source:
        the module's PTX (a trace's header records its hash)."""
        from ..launch import DEFAULT_MAX_STEPS
        from ..observe import combine
        stderr = _Stream(self.context.write_stderr)
        checker = stats = trace = None
        if self.checks:
            from ..checks import CheckSession
            checker = CheckSession(self.checks, stream=stderr)
        if self.stats:
            from ..stats import MemoryStats
            stats = MemoryStats(4)
        if self.trace_directory:
            trace = self._trace(kernel, source)
        try:
            result = kernel.launch(grid, block, args, shared, max_dynamic_shared=max_dynamic_shared,
                                   observer=combine(checker, stats, trace),
                                   max_steps=self.max_steps or DEFAULT_MAX_STEPS, **options)
        finally:
            if trace is not None:
                trace.stream.close()
        if stats is not None:
            from ..launch import plain_name
            from ..stats import format_table, launch_title
            self.context.write_stderr(format_table(stats.kernel_counters(), launch_title(
                plain_name(kernel.name), result.grid, result.block, stats.bank_bytes)) + "\n")
        return result

    def _trace(self, kernel, source: str):
        from ..launch import plain_name
        from ..trace import TraceFilter, TraceWriter, trace_header
        number = self.context.launches
        path = os.path.join(self.trace_directory, f"{number:04d}-{plain_name(kernel.name)}.jsonl")
        header = trace_header(kernel.module.source_name, source)
        return TraceWriter(open(path, "w", encoding="utf-8"), header, TraceFilter([]), close=True)
