"""`gpuemu run --trace FILE` and `gpuemu trace diff A B`: deterministic per-warp traces and where two part ways."""
from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Optional

from emulator.base.errors import UsageError
from emulator.base.sources import read_program
from emulator.cli.common import RunFeature

if TYPE_CHECKING:
    from emulator.observers.trace import TraceWriter


class TraceFeature(RunFeature):
    def add_arguments(self, parser) -> None:
        group = parser.add_argument_group("traces")
        group.add_argument("--trace", metavar="FILE", help="write a deterministic JSON-lines trace of every warp instruction")
        group.add_argument("--trace-filter", action="append", default=[], metavar="SPEC",
                           help="keep only some records: block=0-3 warp=0,2 pc=10-40 op=ld,st,branch")


    def observer_for(self, options, module, kernel) -> Optional[TraceWriter]:
        if not options.trace:
            if options.trace_filter:
                raise UsageError("--trace-filter needs --trace FILE")
            return None
        from emulator.observers.trace import TraceFilter, TraceWriter, trace_header
        trace_filter = TraceFilter(options.trace_filter)
        text = read_program(options.file)
        header = trace_header(options.file, text, args=options.arg, schedule=getattr(options, "schedule", "lockstep"),
                              seed=getattr(options, "seed", None))
        directory = os.path.dirname(os.path.abspath(options.trace))
        if not os.path.isdir(directory):
            raise UsageError(f"--trace {options.trace}: no directory {directory}")
        return TraceWriter(options.outputs.open(options.trace), header, trace_filter, close=True)


    def after_run(self, options, observer: TraceWriter, stats, report) -> None:
        report["trace"] = {"file": options.trace, "records": observer.records}


FEATURE = TraceFeature()


def add_command(commands) -> None:
    trace = commands.add_parser("trace", help="work with gpuemu traces")
    actions = trace.add_subparsers(dest="trace_command", metavar="ACTION", parser_class=type(trace))
    diff = actions.add_parser("diff", help="show where two traces part ways")
    diff.add_argument("a", help="first trace")
    diff.add_argument("b", help="second trace")
    diff.add_argument("--context", type=int, default=5, metavar="N", help="common records shown before (default 5)")
    diff.set_defaults(handler=command_diff)
    trace.set_defaults(handler=lambda options: _missing_action(trace))


def _missing_action(parser) -> int:
    parser.print_help(sys.stderr)
    return 2


def command_diff(options) -> int:
    from emulator.observers.trace import diff_traces
    if options.context < 0:
        raise UsageError("--context must not be negative")
    for path in (options.a, options.b):
        if not os.path.exists(path):
            raise UsageError(f"{path}: no such file")
    with open(options.a, encoding="utf-8", errors="replace") as a, open(options.b, encoding="utf-8",
                                                                          errors="replace") as b:
        identical, report = diff_traces(a, b, context=options.context, name_a=options.a, name_b=options.b)
    print(report)
    return 0 if identical else 1
