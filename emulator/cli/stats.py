"""`gpuemu run --stats`: exact memory counters of the launch, printed as a table and put into --json."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Optional

from emulator.cli.common import RunFeature
from emulator.runtime.names import plain_name

if TYPE_CHECKING:
    from emulator.observers.stats import MemoryStats


class StatsFeature(RunFeature):
    def add_arguments(self, parser) -> None:
        parser.add_argument("--stats", action="store_true",
                            help="count requests, wavefronts, sectors, atomics and divergence exactly and print "
                                 "a table (and put the counters into --json)")
        parser.add_argument("--bank-mode", type=int, choices=(4, 8), default=None,
                            help="shared-memory bank width in bytes: 4 (sm_5x and newer, default) or 8 "
                                 "(Kepler's 8-byte mode); implies --stats")


    def observer_for(self, options, module, kernel) -> Optional[MemoryStats]:
        if not (getattr(options, "stats", False) or getattr(options, "bank_mode", None)):
            return None
        from emulator.observers.stats import MemoryStats
        return MemoryStats(options.bank_mode or 4)


    def after_run(self, options, observer: MemoryStats, stats, report) -> None:
        from emulator.observers.stats import format_table, launch_title
        counters = observer.kernel_counters()
        report.update(counters)
        if options.json:
            report["lines"] = {str(line): entry for line, entry in observer.line_counters().items()}
        sys.stdout.flush()
        print(format_table(counters, launch_title(plain_name(stats.kernel), stats.grid, stats.block,
                                                  observer.bank_bytes)))


FEATURE = StatsFeature()
