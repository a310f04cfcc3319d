"""`gpuemu run`: launch a kernel with arguments from specs and write its buffers, statistics and findings."""
from __future__ import annotations

import os
import sys

import numpy as np

from emulator.base.errors import DeviceError, GpuemuError
from emulator.cli import checks, stats, trace
from emulator.cli.common import (ProgressLine, add_launch_arguments, check_output_path, prepare_launch,
                                 write_json_atomically, write_npy_atomically)

#: what `gpuemu run` can attach to a launch, in the order their reports print
FEATURES = (stats.FEATURE, checks.FEATURE, trace.FEATURE)


def add_command(commands) -> None:
    run = commands.add_parser("run", help="run a kernel and write its buffers")
    add_launch_arguments(run)
    run.add_argument("--out", help="directory for argK.npy (every buffer argument after the launch)")
    run.add_argument("--json", help="write the run's statistics as JSON")
    for feature in FEATURES:
        feature.add_arguments(run)
    run.set_defaults(handler=command_run)


def command_run(options) -> int:
    from emulator.runtime.launch import DEFAULT_MAX_STEPS
    from emulator.runtime.names import plain_name
    from emulator.machine.observe import combine
    module, kernel, args, grid, block = prepare_launch(options)
    if options.out:
        os.makedirs(options.out, exist_ok=True)
    if options.json:
        check_output_path(options.json, "--json")
    attached = []
    policy = None
    for feature in FEATURES:
        observer = feature.observer_for(options, module, kernel)
        if observer is not None:
            attached.append((feature, observer))
        policy = policy or feature.policy_for(options)
    progress = ProgressLine(sys.stderr, plain_name(kernel.name)) if sys.stderr.isatty() else None
    try:
        stats = kernel.launch(grid, block, args, options.shared,
                              max_steps=options.max_steps or DEFAULT_MAX_STEPS,
                              max_dynamic_shared=options.max_dynamic_shared,
                              observer=combine(*(observer for _, observer in attached)), policy=policy,
                              progress=progress, move_arguments=True)
    except DeviceError as error:
        if options.json:
            write_json_atomically(options.json, {"status": "error", "error": error.cuda_error,
                                                 "message": error.summary})
        raise
    finally:
        if progress is not None:
            progress.close()
    report = stats.as_dict()
    report["status"] = "ok"
    finding = None
    for feature, observer in attached:
        try:
            feature.after_run(options, observer, stats, report)
        except GpuemuError as error:
            finding = finding or error
            report["status"] = "check failed"
    if options.out:
        for index, arg in enumerate(args):
            if isinstance(arg, np.ndarray):
                write_npy_atomically(os.path.join(options.out, f"arg{index}.npy"), arg)
    if options.json:
        write_json_atomically(options.json, report)
    if finding is not None:
        raise finding
    return 0
