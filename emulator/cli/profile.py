"""`gpuemu profile`: the kernel's PTX annotated line by line with memory counters; --html writes one page."""
from __future__ import annotations

import sys

from emulator.base.errors import DeviceError, UsageError
from emulator.cli.common import Progress, add_launch_arguments, check_output_path
from emulator.cli.outputs import RunOutputs, deliver_deferred_signals, interrupted, write_report_now
from emulator.launching import prepare_launch
from emulator.observers.profile import Profile, render_html, render_text
from emulator.observers.stats import MemoryStats, launch_title
from emulator.runtime.launch import DEFAULT_MAX_STEPS
from emulator.runtime.names import plain_name


def _print_replacing_unencodable(text: str) -> None:
    """Print text; characters the terminal's encoding lacks (CUDA comments in any language) become '?'."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    sys.stdout.write(text.encode(encoding, errors="replace").decode(encoding) + "\n")
    sys.stdout.flush()


def add_command(commands) -> None:
    parser = commands.add_parser("profile", help="run a kernel and list its PTX annotated with memory counters")
    add_launch_arguments(parser)
    parser.add_argument("--bank-mode", type=int, choices=(4, 8), default=4,
                        help="shared-memory bank width in bytes: 4 (sm_5x and newer) or 8 (Kepler)")
    parser.add_argument("--top", type=int, default=5, help="how many worst lines to flag (default 5)")
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    parser.add_argument("--json", metavar="FILE", help="write the counters (kernel and per line) as JSON")
    parser.set_defaults(handler=command_profile, delivers_signals=True)


def command_profile(options) -> int:
    if options.top < 0:
        raise UsageError("--top must not be negative")
    for path, flag in ((options.json, "--json"), (options.html, "--html")):
        if path:
            check_output_path(path, flag)
    stats = MemoryStats(options.bank_mode, capture_shared=True)
    outputs = RunOutputs()
    try:
        deliver_deferred_signals()
        module, kernel, args, grid, block = prepare_launch(options)
        name = plain_name(kernel.program.name)
        with Progress(name, "CTA") as progress:
            launch_stats = kernel.launch(grid, block, args, options.shared,
                                         max_steps=options.max_steps or DEFAULT_MAX_STEPS,
                                         max_dynamic_shared=options.max_dynamic_shared, observer=stats,
                                         progress=progress, move_arguments=True)
        profile = Profile(stats, options.file, options.top, options.source_dir)
        title = launch_title(name, launch_stats.grid, launch_stats.block, stats.bank_bytes).replace(
            "gpuemu stats:", "gpuemu profile:") + f"  {options.file}"
        if options.json:
            report = launch_stats.as_dict()
            report.update(profile.kernel_counters)
            report["status"] = "ok"
            report["lines"] = {str(line): entry for line, entry in stats.line_counters().items()}
            outputs.write_json(options.json, report)
        if options.html:
            page = render_html(profile, title, name)
            outputs.write(options.html, lambda stream: stream.write(page))
        outputs.commit()
    except BaseException as error:
        outputs.abort()
        if options.json:
            status = "interrupted" if interrupted(error) else "error"
            report = {"status": status, "message": getattr(error, "summary", None) or str(error)}
            if isinstance(error, DeviceError):
                report["error"] = error.cuda_error
            write_report_now(options.json, report)
        raise
    _print_replacing_unencodable(render_text(profile, title))
    return 0
