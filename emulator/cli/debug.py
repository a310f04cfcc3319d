"""`gpuemu debug`: a cuda-gdb style step debugger over one kernel launch, at a prompt or from scripts."""
from __future__ import annotations

import argparse
import os
import sys

from emulator.base.errors import GpuemuError, UsageError
from emulator.cli.common import add_launch_arguments
from emulator.debug.commands import Session
from emulator.debug.repl import converse
from emulator.observers.debugger.record import DEFAULT_HISTORY


def add_command(commands) -> None:
    debug = commands.add_parser(
        "debug", help="step through a kernel: breakpoints, watchpoints, focus, reverse execution",
        description="Debug a kernel launch with cuda-gdb's commands (type 'help' at the prompt).")
    add_launch_arguments(debug)
    debug.add_argument("-x", "--command", dest="scripts", action="append", default=[], metavar="FILE",
                       help="run the debugger commands in FILE first (then prompt, unless --batch)")
    debug.add_argument("--batch", action="store_true",
                       help="quit after the -x files (or after stdin when there are none); exit status 1 if a "
                            "command failed")
    debug.add_argument("--history", type=_history_length, default=DEFAULT_HISTORY, metavar="N",
                       help=f"warp instructions recorded for reverse execution (default {DEFAULT_HISTORY:,}; 0: off)")
    debug.add_argument("--out", help="directory for argK.npy after each launch that completes")
    debug.set_defaults(handler=command_debug)


def _history_length(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of warp instructions") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative (0 turns recording off)")
    return value


def _check_out_directory(path: str) -> None:
    """Refuse an --out that the results could not be written to up front, rather than after a launch."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        raise UsageError(f"--out {path}: {error.strerror or error}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"--out {path}: the directory is not writable")


def command_debug(options, stdin=None, stdout=None, stderr=None) -> int:
    stdin = stdin if stdin is not None else sys.stdin
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    scripts = []
    for path in options.scripts:
        try:
            with open(path, encoding="utf-8") as handle:
                scripts.append(handle.read().splitlines())
        except OSError as error:
            raise UsageError(f"{path}: cannot read the command file ({error.strerror})") from None
    try:
        session = Session(options, stdout, stderr)
    except (GpuemuError, MemoryError, OSError):
        raise
    except Exception as error:  # a gpuemu bug: one line, as the command loop reports them
        raise GpuemuError(f"{INTERNAL_ERROR} {type(error).__name__}: {error}") from None
    if options.out:
        _check_out_directory(options.out)
    internal_errors = _count_internal_errors(session)
    try:
        failed = converse(session, scripts, stdin, stdout, batch=options.batch)
    finally:
        session._kill()
    return 1 if (options.batch and failed) or internal_errors else 0


class _InternalErrors:
    """Counts the session's `internal error:` lines (a gpuemu bug, reported and survived), which make the exit
    status 1 whether or not --batch was given."""

    def __init__(self, complain):
        self.complain = complain
        self.count = 0

    def __call__(self, text: str) -> None:
        if text.startswith(INTERNAL_ERROR):
            self.count += 1
        self.complain(text)

    def __bool__(self) -> bool:
        return self.count > 0


INTERNAL_ERROR = "internal error:"


def _count_internal_errors(session) -> _InternalErrors:
    counter = _InternalErrors(session.complain)
    session.complain = counter
    return counter
