"""`gpuemu run --check ... --schedule ... --repeat N [--jobs N | --cluster ADDRESS]`: compute-sanitizer style checkers
and schedule sweeps."""
from __future__ import annotations

import sys
from typing import Dict, List, Optional

from emulator.base.errors import UsageError
from emulator.base.sources import read_program
from emulator.cli.common import Progress, RunFeature, positive_int
from emulator.frontend import cuda
from emulator.launching import cuda_compile_options, parse_dims
from emulator.machine.policies import SCHEDULES, make_policy
from emulator.observers.checks import DEFAULT_MAX_ERRORS, CheckFailed, CheckSession, compare_outputs
from emulator.observers.checks.common import chosen_checks
from emulator.runtime.launch import DEFAULT_ARCH, DEFAULT_MAX_STEPS, DEFAULT_SPIN_LIMIT
from emulator.runtime.names import arch_number, plain_name
from emulator.runtime.spec import default_arguments, parse_arg


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
        group.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                           help="worker processes for --repeat's schedules (default: every core this process may use, "
                                "when the schedules take long enough to pay for starting them; 1: in this process); "
                                "the report is the same whatever N")
        group.add_argument("--cluster", default=None, metavar="ADDRESS",
                           help="run --repeat's schedules on the Dask distributed scheduler at ADDRESS "
                                "(tcp://host:8786; needs pip install 'gpuemu[cluster]' here and gpuemu on the "
                                "cluster's workers)")
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
        if options.repeat:
            options.repeat_job = launch_job(options, kernel)
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
            outcome = repeat_outputs(options, options.repeat_job, jobs=repeat_jobs(options, stats))
            report["repeat"] = outcome
            sys.stderr.write(outcome["message"] + "\n")
            if not outcome["identical"]:
                problems.append("outputs depend on the schedule (--repeat)")
        if problems and options.error_exitcode:
            raise CheckFailed("; ".join(problems) + " (the report above says where)", options.error_exitcode)


FEATURE = ChecksFeature()


def selected_checks(options) -> List[str]:
    return chosen_checks(options.check, "--check")


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
    if (options.jobs is not None or options.cluster is not None) and not options.repeat:
        raise UsageError(f"{'--jobs' if options.jobs is not None else '--cluster'} runs --repeat's schedules: "
                         f"add --schedule random --repeat N")
    if options.jobs is not None and options.cluster is not None:
        raise UsageError("--jobs and --cluster: choose one (--cluster runs the schedules on the cluster's workers)")
    if options.cluster is not None:
        from emulator.cli.parallel import CLUSTER_EXTRA, cluster_available
        if not cluster_available():
            raise UsageError(f"--cluster needs Dask distributed, which is not installed: {CLUSTER_EXTRA}")
    return arch


def launch_job(options, kernel):
    """The launch --repeat runs again, as data read now, before the command's own launch changes its buffers."""
    from emulator.cli.parallel import LaunchJob
    if cuda.is_cuda_path(options.file):
        text = cuda.compile_file(options.file, options=cuda_compile_options(options), arch=options.arch)
        source_name = cuda.ptx_name(options.file)
    else:
        text, source_name = read_program(options.file), options.file
    constants = tuple((name, parse_arg(spec)) for name, _, spec in (item.partition("=") for item in options.const))
    grid, block = parse_dims(options.grid, "--grid"), parse_dims(options.block, "--block")
    if options.arg or not kernel.params:
        args = [parse_arg(spec, lazy=True, max_memory=options.max_memory) for spec in options.arg]
    else:
        args, _ = default_arguments(kernel.params, grid, block)
    return LaunchJob(text=text, source_name=source_name, kernel=options.kernel, constants=constants, args=tuple(args),
                     grid=grid, block=block, shared=options.shared, max_dynamic_shared=options.max_dynamic_shared,
                     max_steps=options.max_steps or DEFAULT_MAX_STEPS, arch=arch_number(options.arch),
                     spin_limit=options.spin_limit, backend=options.backend, max_memory=options.max_memory,
                     contract=not options.no_contract)


def repeat_jobs(options, stats) -> int:
    """--jobs, else every core when the schedules would take longer (judged by the command's own launch) than
    starting worker processes does, else 1."""
    if options.jobs is not None:
        return options.jobs
    from emulator.cli.parallel import WORKER_START_SECONDS, available_cores
    return available_cores() if stats.wall_seconds * options.repeat >= WORKER_START_SECONDS else 1


def repeat_outputs(options, job, *, jobs: int = 1) -> Dict[str, object]:
    """Run the launch under --repeat random schedules (in this process, over jobs worker processes, or on
    --cluster); which buffer arguments differ between them."""
    from emulator.cli.parallel import run_schedules
    seeds = list(range(options.seed, options.seed + options.repeat))
    with Progress("--repeat", "schedule", total=len(seeds), quiet=getattr(options, "quiet", False)) as progress:
        results = run_schedules(job, seeds, jobs=jobs, cluster=options.cluster, advance=progress.advance)
    return compare_outputs(results)
