"""`gpuemu run --check ... --schedule ... --repeat N`: compute-sanitizer style checkers and schedule sweeps."""
from __future__ import annotations

import io
import sys
from typing import Dict, List, Optional

import numpy as np

from emulator.base.errors import DeviceError, UsageError
from emulator.cli.common import Progress, RunFeature, prepare_launch
from emulator.machine.policies import SCHEDULES, RandomSchedule, make_policy
from emulator.observers.checks import CHECKS, DEFAULT_MAX_ERRORS, CheckFailed, CheckSession, compare_outputs
from emulator.runtime.launch import DEFAULT_ARCH, DEFAULT_MAX_STEPS, DEFAULT_SPIN_LIMIT
from emulator.runtime.names import arch_number, plain_name


class ChecksFeature(RunFeature):
    def add_arguments(self, parser) -> None:
        group = parser.add_argument_group("checks and schedules")
        group.add_argument("--check", metavar="LIST", default="",
                           help="checkers to run: race,sync,init,mem or all (mem: report every invalid access "
                                "instead of stopping at the first)")
        group.add_argument("--schedule", choices=SCHEDULES, default="lockstep",
                           help="which ready warp and divergent group runs next (default lockstep: every warp at the "
                                "lowest pc together)")
        group.add_argument("--seed", type=int, default=0, help="seed of --schedule random (same seed, same run)")
        group.add_argument("--repeat", type=int, default=0, metavar="N",
                           help="also run the launch under N random schedules (seeds SEED..SEED+N-1) and report "
                                "whether the outputs differ")
        group.add_argument("--arch", default=None,
                           help="architecture to emulate: sm_70 and newer count barrier arrivals per thread, sm_60 "
                                f"per warp (default {DEFAULT_ARCH}; a SASS listing runs as the architecture it was "
                                "compiled for)")
        group.add_argument("--spin-limit", type=int, default=DEFAULT_SPIN_LIMIT, metavar="N",
                           help="report a livelock when nothing changes over N loop iterations (0: never; default "
                                f"{DEFAULT_SPIN_LIMIT:,})")
        group.add_argument("--max-errors", type=int, default=DEFAULT_MAX_ERRORS, metavar="N",
                           help=f"invalid accesses listed in full with --check mem (default {DEFAULT_MAX_ERRORS})")
        group.add_argument("--error-exitcode", type=int, default=1, metavar="N",
                           help="exit status when a checker or --repeat finds a problem (default 1; 0 keeps going "
                                "and writes --out as usual)")
        group.add_argument("--uninitialized-arg", type=int, action="append", default=[], metavar="K",
                           help="treat buffer argument K as cudaMalloc'd and never written (for --check init)")

    def observer_for(self, options, module, kernel) -> Optional[CheckSession]:
        arch = _validate(options, kernel)
        options.arch = f"sm_{arch}"
        module.device.arch = arch
        module.device.spin_limit = options.spin_limit
        checks = selected_checks(options)
        if not checks and not options.repeat:
            return None
        for index in options.uninitialized_arg:
            if not 0 <= index < len(kernel.params):
                raise UsageError(f"--uninitialized-arg {index}: {plain_name(kernel.name)} has {len(kernel.params)} "
                                 f"parameters")
        return CheckSession(checks, max_errors=options.max_errors, uninitialized_params=options.uninitialized_arg,
                            stream=sys.stderr)

    def policy_for(self, options):
        return make_policy(options.schedule, options.seed, arch=arch_number(options.arch))

    def after_run(self, options, observer: Optional[CheckSession], stats, report) -> None:
        problems = []
        if observer is not None:
            report["checks"] = observer.summary()
            if observer.errors():
                problems.append(f"{observer.errors()} error{'s' if observer.errors() != 1 else ''} found by --check")
        if options.repeat:
            outcome = repeat_outputs(options)
            report["repeat"] = outcome
            sys.stderr.write(outcome["message"] + "\n")
            if not outcome["identical"]:
                problems.append("outputs depend on the schedule (--repeat)")
        if problems and options.error_exitcode:
            raise CheckFailed("; ".join(problems) + " (the report above says where)", options.error_exitcode)


FEATURE = ChecksFeature()


def selected_checks(options) -> List[str]:
    names = [name.strip() for name in options.check.split(",") if name.strip()]
    if "all" in names:
        return list(CHECKS)
    unknown = [name for name in names if name not in CHECKS]
    if unknown:
        raise UsageError(f"--check: unknown checker '{unknown[0]}' (choose from {', '.join(CHECKS)}, all)")
    return names


def launch_arch(options, kernel) -> int:
    """The architecture the launch runs as: --arch, else a SASS listing's own, else the default; a listing's is the
    only one it can have."""
    listing = getattr(kernel.program, "arch", None)
    own = arch_number(listing.name) if listing is not None else None
    if options.arch is None:
        return own if own is not None else arch_number(DEFAULT_ARCH)
    arch = arch_number(options.arch)
    if own is not None and arch != own:
        raise UsageError(f"--arch {options.arch}: this SASS listing is sm_{own} code, which runs only as sm_{own}")
    return arch


def _validate(options, kernel) -> int:
    arch = launch_arch(options, kernel)
    if options.spin_limit < 0:
        raise UsageError("--spin-limit must not be negative")
    if options.max_errors < 1:
        raise UsageError("--max-errors must be at least 1")
    if options.repeat < 0:
        raise UsageError("--repeat must not be negative")
    if options.repeat and options.schedule != "random":
        raise UsageError("--repeat runs random schedules: add --schedule random")
    if options.uninitialized_arg and "init" not in selected_checks(options):
        raise UsageError("--uninitialized-arg is for --check init")
    return arch


def repeat_outputs(options) -> Dict[str, object]:
    """Run the launch under --repeat random schedules; which buffer arguments differ between them."""
    seeds = list(range(options.seed, options.seed + options.repeat))
    results = []
    arch = arch_number(options.arch)
    with Progress("--repeat", "schedule", total=len(seeds), quiet=getattr(options, "quiet", False)) as progress:
        for seed in seeds:
            # the main run has printed the kernel's printf output; the schedules compared here keep theirs
            module, kernel, args, grid, block = prepare_launch(options, stdout=io.StringIO())
            try:
                kernel.launch(grid, block, args, options.shared, max_steps=options.max_steps or DEFAULT_MAX_STEPS,
                              max_dynamic_shared=options.max_dynamic_shared, arch=arch, spin_limit=options.spin_limit,
                              policy=RandomSchedule(seed, independent_groups=arch >= 70), move_arguments=True)
                results.append((seed, [(i, a) for i, a in enumerate(args) if isinstance(a, np.ndarray)], None))
            except DeviceError as error:
                results.append((seed, [], error.cuda_error))
            progress.advance()
    return compare_outputs(results)
