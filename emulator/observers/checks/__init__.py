"""`gpuemu run --check race,sync,init,mem`: compute-sanitizer-style checkers, seeded schedules and repeated runs.

race: shared-memory (and, within a CTA, global) hazards between threads with no barrier between them;
sync: barriers reached by part of a warp or CTA, bad thread counts, warp-sync masks; init: reads of
memory nothing wrote; mem: every faulting access, up to --max-errors, instead of stopping at the first.
Each checker is an Observer in a module of its own (race.py, sync.py, init.py, mem.py); CheckSession bundles them and writes the report.
"""
from __future__ import annotations

from typing import Dict, Sequence

import numpy as np

from emulator.base.errors import UsageError
from emulator.machine.observe import Observer, Observers
from emulator.observers.checks.common import CHECKS, DEFAULT_MAX_ERRORS, PREFIX, CheckFailed
from emulator.observers.checks.init import InitChecker
from emulator.observers.checks.mem import MemChecker
from emulator.observers.checks.race import RaceChecker
from emulator.observers.checks.sync import SyncChecker


class CheckSession(Observer):
    """The checkers of one run: `CheckSession({"race", "sync"})` as the launch's observer.

    After the launch (or when it fails) the report is written to `stream` (None: kept for report());
    with "mem", a launch with invalid accesses runs to the end and then raises the first fault's error."""

    def __init__(self, checks, *, max_errors: int = DEFAULT_MAX_ERRORS, uninitialized: Sequence[int] = (),
                 uninitialized_params: Sequence[int] = (), stream=None):
        self.checks = set(checks)
        unknown = self.checks - set(CHECKS)
        if unknown:
            raise UsageError(f"unknown check {', '.join(sorted(unknown))} (choose from {', '.join(CHECKS)})")
        self.stream = stream
        self.init = InitChecker(uninitialized, uninitialized_params) if "init" in self.checks else None
        self.race = RaceChecker() if "race" in self.checks else None
        self.sync = SyncChecker() if "sync" in self.checks else None
        self.mem = MemChecker(max_errors) if "mem" in self.checks else None
        self.fan = Observers([self.init, self.race, self.sync, self.mem])
        for name in ("begin_batch", "end_batch", "step", "retire", "memory", "branch", "barrier", "exited"):
            setattr(self, name, getattr(self.fan, name))
        self.reported = False

    def begin_launch(self, launch) -> None:
        self.reported = False
        if self.mem is not None:
            self.mem.begin_launch(launch)
        if self.race is not None and self.mem is not None:
            self.race.skip_allocations = (self.mem.sink,)
        for checker in (self.init, self.race, self.sync):
            if checker is not None:
                checker.begin_launch(launch)

    def end_launch(self, launch, stats) -> None:
        self.fan.end_launch(launch, stats)
        self._write_report()
        error = self.mem.device_error() if self.mem is not None else None
        if error is not None:
            raise error

    def launch_failed(self, launch, error) -> None:
        for checker in self.fan.observers:
            failed = getattr(checker, "launch_failed", None)
            if failed is not None:
                failed(launch, error)
        self._write_report()

    def errors(self) -> int:
        """Errors found: race hazards, sync and init findings, invalid accesses."""
        count = 0
        for checker in (self.race, self.sync, self.init):
            if checker is not None:
                count += checker.findings.errors()
        if self.mem is not None:
            count += self.mem.total
        return count

    def warnings(self) -> int:
        return sum(c.findings.warnings() for c in (self.race, self.sync, self.init) if c is not None)

    def report(self) -> str:
        lines = []
        for checker in (self.mem, self.race, self.sync, self.init):
            if checker is not None:
                lines += checker.report_lines()
        errors = self.errors()
        lines.append(f"{PREFIX}ERROR SUMMARY: {errors} error{'s' if errors != 1 else ''}"
                     + (f", {self.warnings()} warning{'s' if self.warnings() != 1 else ''}" if self.warnings() else ""))
        hidden = self.mem.not_printed() if self.mem is not None else 0
        if hidden:
            lines.append(f"{PREFIX}ERROR SUMMARY: {hidden} error{'s were' if hidden != 1 else ' was'} not printed. "
                         f"Use --max-errors option to adjust the number of printed errors")
        return "\n".join(lines)

    def summary(self) -> Dict[str, object]:
        data = {"checks": sorted(self.checks), "errors": self.errors(), "warnings": self.warnings()}
        if self.race is not None:
            data["race_hazards"] = self.race.hazards
        if self.mem is not None:
            data["invalid_accesses"] = self.mem.total
        return data

    def _write_report(self) -> None:
        if self.reported:
            return
        self.reported = True
        if self.stream is not None and self.checks:
            self.stream.write(self.report() + "\n")
            self.stream.flush()


def compare_outputs(results) -> Dict[str, object]:
    """results: (seed, [(argument index, array)], error or None) per run."""
    seeds = [seed for seed, _, _ in results]
    span = f"seeds {seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else f"seed {seeds[0]}"
    base_seed, base_arrays, base_error = results[0]
    differences = []
    distinct = {(_fingerprint(arrays), error) for _, arrays, error in results}
    for seed, arrays, error in results[1:]:
        if error != base_error:
            differences.append(f"seed {seed} ended with {error or 'success'}, seed {base_seed} with "
                               f"{base_error or 'success'}")
            continue
        for (index, want), (_, got) in zip(base_arrays, arrays):
            if want.tobytes() != got.tobytes():
                flat_want, flat_got = want.reshape(-1), got.reshape(-1)
                bits_want = flat_want.view(np.uint8).reshape(flat_want.size, -1)
                bits_got = flat_got.view(np.uint8).reshape(flat_got.size, -1)
                differ = np.flatnonzero(np.any(bits_want != bits_got, axis=1))
                first = int(differ[0])
                differences.append(f"arg{index} differs between seed {base_seed} and seed {seed} in {len(differ)} of "
                                   f"{flat_want.size} elements, first [{first}]: {flat_want[first].item()!r} vs "
                                   f"{flat_got[first].item()!r}")
    identical = not differences
    if identical:
        message = f"gpuemu: --repeat {len(seeds)}: outputs identical under {len(seeds)} random schedules ({span})"
    else:
        message = (f"gpuemu: --repeat {len(seeds)}: outputs differ between schedules ({len(distinct)} distinct "
                   f"results over {span}): " + "; ".join(differences[:3])
                   + (f"; +{len(differences) - 3} more" if len(differences) > 3 else ""))
    return {"runs": len(seeds), "identical": identical, "distinct_results": len(distinct), "message": message}


def _fingerprint(arrays) -> bytes:
    return b"".join(a.tobytes() for _, a in arrays)


__all__ = ["CHECKS", "DEFAULT_MAX_ERRORS", "CheckFailed", "CheckSession", "InitChecker", "MemChecker", "RaceChecker",
           "SyncChecker", "compare_outputs"]
