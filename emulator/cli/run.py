"""`gpuemu run`: launch a kernel with arguments from specs and write its buffers, statistics and findings."""
from __future__ import annotations

import os
import sys

import numpy as np

from emulator.base.errors import DeviceError, GpuemuError
from emulator.cli import checks, stats, trace
from emulator.cli.common import Progress, add_launch_arguments, check_output_directory, check_output_path
from emulator.cli.outputs import RunOutputs, deliver_deferred_signals, interrupted, write_report_now
from emulator.launching import prepare_launch

#: what `gpuemu run` can attach to a launch, in the order their reports print
FEATURES = (stats.FEATURE, checks.FEATURE, trace.FEATURE)


def add_command(commands) -> None:
    run = commands.add_parser("run", help="run a kernel and write its buffers")
    add_launch_arguments(run)
    run.add_argument("--out", help="directory for argK.npy (every buffer argument after the launch); argK.npy of an "
                                   "earlier run there that this run does not write are removed")
    run.add_argument("--json", help="write the run's statistics as JSON")
    run.add_argument("-q", "--quiet", action="store_true",
                     help="no progress bar and no summary line on stderr")
    run.add_argument("--engine", choices=("auto", "compiled", "interpreter"), default=None,
                     help="compiled: straight-line code runs as generated C; interpreter: numpy only; auto (default, "
                          "or $GPUEMU_ENGINE): compiled once a kernel has done enough work or is in the cache. "
                          "--stats, --check, --trace and --schedule run in the interpreter")
    for feature in FEATURES:
        feature.add_arguments(run)
    run.set_defaults(handler=command_run, delivers_signals=True)


def command_run(options) -> int:
    from emulator.runtime.names import plain_name
    if options.out:
        check_output_directory(options.out, "--out")
    if options.json:
        check_output_path(options.json, "--json")
    outputs = options.outputs = RunOutputs(options.out)
    try:
        deliver_deferred_signals()
        module, kernel, args, grid, block = prepare_launch(options)
        return _run(options, module, kernel, args, grid, block, outputs, plain_name(kernel.name))
    except DeviceError as error:
        trace = (options.trace,) if getattr(options, "trace", None) else ()
        outputs.abort(keep=trace)
        if options.json:
            write_report_now(options.json, {"status": "error", "error": error.cuda_error, "message": error.summary})
        raise
    except BaseException as error:
        if not outputs.committed:
            outputs.abort()
            if options.json:
                status = "interrupted" if interrupted(error) else "error"
                write_report_now(options.json, {"status": status, "message": str(error) or type(error).__name__})
        raise


def _run(options, module, kernel, args, grid, block, outputs: RunOutputs, name: str) -> int:
    """Launch with the features' observers, then stage the buffers and the report and commit them together."""
    from emulator.machine.observe import combine
    from emulator.runtime.launch import DEFAULT_MAX_STEPS
    attached = []
    policy = None
    for feature in FEATURES:
        observer = feature.observer_for(options, module, kernel)
        if observer is not None:
            attached.append((feature, observer))
        policy = policy or feature.policy_for(options)
    with Progress(name, "CTA", quiet=options.quiet) as progress:
        stats = kernel.launch(grid, block, args, options.shared, max_steps=options.max_steps or DEFAULT_MAX_STEPS,
                              max_dynamic_shared=options.max_dynamic_shared,
                              observer=combine(*(observer for _, observer in attached)), policy=policy,
                              progress=progress, move_arguments=True, engine=options.engine)
    report = stats.as_dict()
    report["status"] = "ok"
    finding = None
    for feature, observer in attached:
        try:
            feature.after_run(options, observer, stats, report)
        except GpuemuError as error:
            finding = finding or error
            report["status"] = "check failed"
    buffers = [(index, arg) for index, arg in enumerate(args) if isinstance(arg, np.ndarray)]
    if options.out:
        for index, arg in buffers:
            outputs.write(os.path.join(options.out, f"arg{index}.npy"),
                          lambda stream, arg=arg: np.save(stream, arg, allow_pickle=False), binary=True)
    if options.json:
        outputs.write_json(options.json, report)
    outputs.commit()
    if not options.quiet:
        print(summary_line(name, stats, options, buffers), file=sys.stderr)
    if finding is not None:
        raise finding
    return 0


def summary_line(name: str, stats, options, buffers) -> str:
    """`gpuemu: NAME: grid G x block B, N warp instructions (M thread instructions) in T s; where the outputs went`."""
    dims = lambda values: "x".join(str(v) for v in values)
    plural = "s" if len(buffers) != 1 else ""
    line = (f"gpuemu: {name}: grid {dims(stats.grid)} x block {dims(stats.block)}, {stats.warp_instructions:,} warp "
            f"instructions ({stats.thread_instructions:,} thread instructions) in {stats.wall_seconds:.2f} s")
    places = []
    if options.out:
        places.append(f"{len(buffers)} buffer{plural} written to {options.out}")
    elif buffers:
        places.append(f"no --out given: the {len(buffers)} buffer{plural} after the launch "
                      f"{'were' if plural else 'was'} not saved (add --out DIR)")
    if options.json:
        places.append(f"report {options.json}")
    if getattr(options, "trace", None):
        places.append(f"trace {options.trace}")
    return "; ".join([line] + places)
