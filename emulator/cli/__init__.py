"""The `gpuemu` command line: run a kernel with arguments from .npy files and write the results back.

Each subcommand is a module of this package with `add_command(commands)`; COMMANDS names them all, and
only the one the user typed is imported. `gpuemu run`'s optional parts (statistics, checkers, traces)
are RunFeature objects listed in emulator.cli.run.FEATURES.
"""
from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
import warnings
from typing import Optional, Sequence

from emulator.base.errors import GpuemuError
from emulator.base.text import printable
from emulator.cli.common import UsageParser
from emulator.cli.hostmalloc import keep_freed_memory
from emulator.cli import outputs
from emulator.cli.outputs import DEFERRED_SIGNALS, Terminated, abandon_outputs, deliver_deferred_signals

#: every subcommand and the module that defines it, in the order --help lists them
COMMANDS = {"run": "emulator.cli.run", "isa": "emulator.cli.isa", "profile": "emulator.cli.profile",
            "debug": "emulator.cli.debug", "dap": "emulator.cli.dap", "trace": "emulator.cli.trace",
            "libdir": "emulator.cudart.libdir", "ocelot-lib": "emulator.cudart.ocelot_lib"}


def build_parser(command: Optional[str] = None) -> UsageParser:
    """The parser; given the command the user typed, only that subcommand's module is imported."""
    parser = UsageParser(prog="gpuemu", description="Run CUDA PTX kernels on the CPU, instruction by instruction.")
    parser.add_argument("--version", action=VersionAction)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=UsageParser)
    chosen = [command] if command in COMMANDS else list(COMMANDS)
    for name in chosen:
        importlib.import_module(COMMANDS[name]).add_command(commands)
    return parser


class ReaderGoneStream:
    """stdout that drops further output, instead of raising, once its reader has gone (`gpuemu run … | head`),
    so the run still writes its output files and exits with its own status."""

    def __init__(self, stream):
        self._stream = stream
        self._gone = False

    def write(self, text: str) -> int:
        if not self._gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._reader_gone()
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._reader_gone()

    def _reader_gone(self) -> None:
        self._gone = True
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())
        except (OSError, ValueError):
            pass

    def __getattr__(self, name):
        return getattr(self._stream, name)


def entry() -> None:
    """The `gpuemu` command: main(), then exit without the interpreter's teardown, which only frees what the
    operating system reclaims anyway (about 30 ms of a short run). Ctrl-C and SIGTERM wait until the command has
    parsed its options (run and profile: until they can clean up their outputs); one that lands after main() has
    handled the command's own (while it restores the handlers or prints) still ends in a one-line message and 143 or
    130."""
    signal.pthread_sigmask(signal.SIG_BLOCK, DEFERRED_SIGNALS)
    try:
        signal.signal(signal.SIGTERM, _terminate)
        status = main()
    except (Terminated, KeyboardInterrupt) as error:
        signal.pthread_sigmask(signal.SIG_BLOCK, DEFERRED_SIGNALS)
        status, what = (143, "terminated") if isinstance(error, Terminated) else (130, "interrupted")
        _abandon_outputs(sys.argv[1:], what)
        print(f"gpuemu: {what}", file=sys.stderr)
    signal.pthread_sigmask(signal.SIG_BLOCK, DEFERRED_SIGNALS)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


def _abandon_outputs(arguments: Sequence[str], what: str) -> None:
    """Clean up after an interrupt that came before the command took charge of its outputs."""
    try:
        options = build_parser(arguments[0] if arguments else None).parse_args(arguments)
    except (SystemExit, Exception):
        return
    try:
        abandon_outputs(options, what)
    except OSError:
        pass


def main(argv: Optional[Sequence[str]] = None) -> int:
    stdout = sys.stdout
    sys.stdout = stdout if isinstance(stdout, ReaderGoneStream) else ReaderGoneStream(stdout)
    try:
        return _main(argv)
    finally:
        sys.stdout = stdout


class VersionAction(argparse.Action):
    """--version: print `gpuemu VERSION` and exit, looking the version up only then (importlib.metadata costs a
    run that does not ask about 10 ms)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="show gpuemu's version and exit"):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"gpuemu {version()}")
        parser.exit()


def version() -> str:
    """The installed gpuemu's version."""
    try:
        from importlib.metadata import version as installed_version
        return installed_version("gpuemu")
    except Exception:  # not installed (run from a source tree)
        return "unknown"


def _terminate(signum, frame):
    raise Terminated()


def _warn_in_one_line(message, category, filename, lineno, file=None, line=None) -> None:
    print(printable(f"gpuemu: warning: {message}"), file=sys.stderr)


def _main(argv: Optional[Sequence[str]]) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    outputs.taken_charge = False
    keep_freed_memory()
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous_term = signal.signal(signal.SIGTERM, _terminate) if in_main_thread else None
    previous_warning = warnings.showwarning
    warnings.showwarning = _warn_in_one_line
    try:
        parser = build_parser(arguments[0] if arguments else None)
        options = parser.parse_args(arguments)
        if not getattr(options, "delivers_signals", False):
            deliver_deferred_signals()
        if options.command is None:
            parser.print_help()
            return 2
        return options.handler(options)
    except GpuemuError as error:
        sys.stdout.flush()
        print(f"gpuemu: error: {error}", file=sys.stderr)
        return error.exit_status
    except (Terminated, KeyboardInterrupt) as error:
        status, what = (143, "terminated") if isinstance(error, Terminated) else (130, "interrupted")
        _abandon_outputs(arguments, what)
        print(f"gpuemu: {what}", file=sys.stderr)
        return status
    except MemoryError:
        print("gpuemu: error: out of host memory (try a smaller launch)", file=sys.stderr)
        return 5
    except OSError as error:
        sys.stdout.flush()
        where = f"{error.filename}: " if error.filename else ""
        print(printable(f"gpuemu: error: {where}{error.strerror or error}"), file=sys.stderr)
        return 2
    finally:
        warnings.showwarning = previous_warning
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous_term)


if __name__ == "__main__":
    sys.exit(main())
