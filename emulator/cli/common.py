"""What the commands share: the launch flags, output paths checked, JSON written whole, progress."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Optional

from emulator.base.errors import UsageError
from emulator.base.files import write_atomically


class RunFeature:
    """Something `gpuemu run` can attach to a launch: its flags, an observer, a scheduling policy, and what it
    reports afterwards (after_run may raise a GpuemuError for findings: outputs and the report are still
    written, then the command exits with that error's status)."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add this feature's flags to `gpuemu run`."""

    def observer_for(self, options, module, kernel):
        """The observer to attach to the launch, or None when the flags do not ask for this feature."""
        return None

    def policy_for(self, options):
        """A scheduling policy replacing lockstep, or None."""
        return None

    def after_run(self, options, observer, stats, report: dict) -> None:
        """Print and record (in report, the --json data) what the observer found."""


class UsageParser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')")


def positive_int(text: str) -> int:
    """argparse type: a whole number of at least 1."""
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number")
    return value


def memory_size(text: str) -> int:
    """argparse type: a size such as 4G, 512M or 1000000 (bytes)."""
    from emulator.runtime.budget import parse_size
    try:
        return parse_size(text)
    except UsageError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def check_output_path(path: str, flag: str) -> None:
    """Fail before the run, not after it, when an output file could not be written there."""
    if os.path.isdir(path):
        raise UsageError(f"{flag} {path}: is a directory")
    directory = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as error:
        raise UsageError(f"{flag} {path}: cannot create {directory} ({error.strerror})") from None
    if not os.access(directory, os.W_OK):
        raise UsageError(f"{flag} {path}: the directory is not writable")


def check_output_directory(path: str, flag: str) -> None:
    """Create an output directory up front, or fail before the run when it cannot be written."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        raise UsageError(f"{flag} {path}: {error.strerror or error}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: the directory is not writable")


def write_json_atomically(path: str, data: dict) -> None:
    def write(stream) -> None:
        json.dump(data, stream, indent=2, sort_keys=True, default=str)
        stream.write("\n")
    write_atomically(path, ".json.tmp", write, binary=False)


def add_launch_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags every command that launches a kernel shares (run, profile, debug)."""
    parser.add_argument("file", help="PTX file (as nvcc -ptx, Triton or clang emit it), or a CUDA C++ .cu file")
    parser.add_argument("--kernel", help="entry name, mangled or plain (default: the only kernel)")
    parser.add_argument("--grid", required=True, help="grid dimensions X[,Y[,Z]]")
    parser.add_argument("--block", required=True, help="block dimensions X[,Y[,Z]]")
    parser.add_argument("--shared", type=lambda s: int(s, 0), default=0, help="dynamic shared memory bytes")
    parser.add_argument("--max-dynamic-shared", type=lambda s: int(s, 0), default=None,
                        help="opt in to more than 48 KB of dynamic shared memory (cudaFuncSetAttribute)")
    parser.add_argument("--arg", action="append", default=[], metavar="SPEC",
                        help="kernel argument in parameter order: @file.npy, zeros:DTYPE:COUNT, DTYPE:VALUE or "
                             "bytes:HEX (a struct by value)")
    parser.add_argument("--const", action="append", default=[], metavar="NAME=@file.npy",
                        help="set a __constant__ (or __device__) symbol before the launch")
    parser.add_argument("--max-steps", type=positive_int, default=None,
                        help="stop after this many scheduler steps (default 20,000,000)")
    parser.add_argument("--source-dir", action="append", default=[], metavar="DIR",
                        help="where to look for the CUDA sources the PTX's .file names (default: only beside the PTX)")
    parser.add_argument("--backend", choices=("auto", "c", "numpy"), default="auto",
                        help="memory core: the C library or the pure-numpy fallback")
    parser.add_argument("--max-memory", type=memory_size, default=None, metavar="SIZE",
                        help="refuse a module or launch whose host memory would exceed SIZE (e.g. 4G, 512M; "
                             "default: 75%% of the memory available, within a control group's limit)")
    parser.add_argument("--no-contract", action="store_true",
                        help="run the PTX literally, without the two things ptxas does to it: fusing a mul and the "
                             "add that reads it into one rounding, and folding .approx instructions of constants "
                             "(docs/fidelity.md)")


def is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class Progress:
    """A progress bar (tqdm) on a terminal's stderr for work that runs longer than `delay` seconds: a launch's CTAs,
    --repeat's schedules. Nothing is drawn when the stream is not a terminal or `quiet` is set; the bar is erased
    when the work ends."""

    #: seconds of work before a bar appears
    DELAY = 2.0

    def __init__(self, description: str, unit: str, *, total: Optional[int] = None, stream=None,
                 quiet: bool = False, delay: Optional[float] = None):
        stream = stream if stream is not None else sys.stderr
        self.delay = self.DELAY if delay is None else delay
        self.started = time.monotonic()
        self.bar = None
        if not quiet and is_terminal(stream):
            from tqdm import tqdm
            self.bar = tqdm(total=total, desc=description, unit=unit, file=stream, leave=False, dynamic_ncols=True,
                            delay=self.delay, unit_scale=False, mininterval=0.2)

    def __call__(self, done: int, total: int) -> None:
        """Launch.run's progress callback: done of total."""
        if self.bar is None:
            return
        changed = self.bar.total != total
        self.bar.total = total
        self.bar.update(done - self.bar.n)
        if changed and time.monotonic() - self.started >= self.delay:
            self.bar.refresh()

    def advance(self, count: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(count)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

