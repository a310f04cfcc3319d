"""The `gpuemu` command line: run a kernel with arguments from .npy files and write the results back.

Features add themselves without touching this file's logic: a module listed in RUN_FEATURES may
define `add_run_arguments(parser)`, `observer_for(options, module, kernel)`, `policy_for(options)`
and `after_run(options, observer, stats, report)` (which may raise a GpuemuError for findings: the
outputs and the report are still written, then the command exits with that error's status); a module listed in COMMANDS defines
`add_command(subparsers, add_launch_arguments)` and registers its handler with set_defaults(handler=…).
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
import tempfile
import time
from typing import List, Optional, Sequence

import numpy as np

from .errors import DeviceError, GpuemuError, UsageError
from .hostmalloc import keep_freed_memory
from .spec import default_arguments, parse_arg

#: modules that extend `gpuemu run` (statistics, checkers, traces, ...), imported when present
RUN_FEATURES = ("emulator.stats", "emulator.checks", "emulator.trace")
#: subcommands other modules add (profile, debug, trace diff, ...): imported only when used or for --help
COMMANDS = {"profile": "emulator.profile", "debug": "emulator.debugger", "trace": "emulator.trace"}


def _present(names: Sequence[str]) -> List[object]:
    modules = []
    for name in names:
        if importlib.util.find_spec(name) is not None:
            modules.append(importlib.import_module(name))
    return modules


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')")


def parse_dims(text: str, what: str):
    try:
        values = [int(part, 0) for part in text.replace("x", ",").split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"{what} '{text}' is not X[,Y[,Z]] of integers") from None
    if not 1 <= len(values) <= 3:
        raise UsageError(f"{what} '{text}' must have 1 to 3 components")
    return tuple(values)


def _write_atomically(path: str, suffix: str, write, binary: bool) -> None:
    """Write through a temporary file in the same directory, then rename it over path, so a reader never sees half
    a file; the file gets the permissions the umask gives a new file, not mkstemp's private 0600."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=directory, suffix=suffix)
    try:
        with os.fdopen(handle, "wb" if binary else "w") as stream:
            write(stream)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


def write_npy_atomically(path: str, array: np.ndarray) -> None:
    _write_atomically(path, ".npy.tmp", lambda stream: np.save(stream, array, allow_pickle=False), binary=True)


def positive_int(text: str) -> int:
    """argparse type: a whole number of at least 1."""
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number")
    return value


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


def write_json_atomically(path: str, data: dict) -> None:
    def write(stream) -> None:
        json.dump(data, stream, indent=2, sort_keys=True, default=str)
        stream.write("\n")
    _write_atomically(path, ".json.tmp", write, binary=False)


def add_launch_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags every command that launches a kernel shares (run, profile, debug)."""
    parser.add_argument("file", help="PTX file (as nvcc -ptx, Triton or clang emit it)")
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
    parser.add_argument("--backend", choices=("auto", "c", "numpy"), default="auto",
                        help="memory core: the C library or the pure-numpy fallback")
    parser.add_argument("--no-contract", action="store_true",
                        help="run the PTX literally: no mul+add fused into one rounding as ptxas does "
                             "(docs/fidelity.md)")


def build_parser(command: Optional[str] = None) -> argparse.ArgumentParser:
    """The parser; given the command the user typed, only that subcommand's modules are imported."""
    parser = _Parser(prog="gpuemu", description="Run CUDA PTX kernels on the CPU, instruction by instruction.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    everything = command not in ("run", "isa", *COMMANDS)
    if everything or command == "run":
        run = commands.add_parser("run", help="run a kernel and write its buffers")
        add_launch_arguments(run)
        run.add_argument("--out", help="directory for argK.npy (every buffer argument after the launch)")
        run.add_argument("--json", help="write the run's statistics as JSON")
        for feature in _present(RUN_FEATURES):
            if hasattr(feature, "add_run_arguments"):
                feature.add_run_arguments(run)
        run.set_defaults(handler=command_run)
    if everything or command == "isa":
        isa = commands.add_parser("isa", help="list the instructions gpuemu implements")
        isa.add_argument("--markdown", action="store_true", help="as a markdown table")
        isa.set_defaults(handler=command_isa)
    for name, module_name in COMMANDS.items():
        if everything or command == name:
            for module in _present((module_name,)):
                module.add_command(commands, add_launch_arguments)
    return parser


class ProgressLine:
    """A CTA counter on one terminal line, shown once a launch has run for `delay` seconds."""

    def __init__(self, stream, kernel_name: str, delay: float = 2.0):
        self.stream, self.kernel_name, self.delay = stream, kernel_name, delay
        self.started = time.monotonic()
        self.width = 0

    def __call__(self, done: int, total: int) -> None:
        elapsed = time.monotonic() - self.started
        if elapsed < self.delay or done >= total:
            return
        text = f"gpuemu: {self.kernel_name}: {done:,} of {total:,} CTAs ({100 * done // total}%), {elapsed:.0f} s"
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()
        self.width = len(text)

    def close(self) -> None:
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()


def prepare_launch(options, stdout=None):
    """Load the module, resolve the kernel, set constants and parse the arguments; device printf writes to stdout
    (default: sys.stdout)."""
    from .launch import Device, Module
    if not os.path.exists(options.file):
        raise UsageError(f"{options.file}: no such file")
    with open(options.file, encoding="utf-8", errors="replace") as handle:
        text = handle.read()
    device = Device(backend=options.backend, stdout=stdout)
    module = Module(text, options.file, device)
    module.contract = not getattr(options, "no_contract", False)
    kernel = module.kernel(options.kernel)
    for item in options.const:
        name, sep, spec = item.partition("=")
        if not sep or not spec.startswith("@"):
            raise UsageError(f"--const '{item}' should be NAME=@file.npy")
        module.set_symbol(name, parse_arg(spec))
    grid = parse_dims(options.grid, "--grid")
    block = parse_dims(options.block, "--block")
    if options.arg or not kernel.params:
        args = [parse_arg(spec) for spec in options.arg]
    else:
        args, note = default_arguments(kernel.params, grid, block)
        print(f"gpuemu: {note}", file=sys.stderr)
    return module, kernel, args, grid, block


def command_run(options) -> int:
    from .launch import DEFAULT_MAX_STEPS, plain_name
    from .observe import combine
    module, kernel, args, grid, block = prepare_launch(options)
    if options.out:
        os.makedirs(options.out, exist_ok=True)
    if options.json:
        check_output_path(options.json, "--json")
    features = _present(RUN_FEATURES)
    attached = []
    policy = None
    for feature in features:
        observer = feature.observer_for(options, module, kernel) if hasattr(feature, "observer_for") else None
        if observer is not None:
            attached.append((feature, observer))
        if policy is None and hasattr(feature, "policy_for"):
            policy = feature.policy_for(options)
    progress = ProgressLine(sys.stderr, plain_name(kernel.name)) if sys.stderr.isatty() else None
    try:
        stats = kernel.launch(grid, block, args, options.shared,
                              max_steps=options.max_steps or DEFAULT_MAX_STEPS,
                              max_dynamic_shared=options.max_dynamic_shared,
                              observer=combine(*(observer for _, observer in attached)), policy=policy,
                              progress=progress)
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
        if hasattr(feature, "after_run"):
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


def command_isa(options) -> int:
    from isa.table import FAMILIES, coverage
    if options.markdown:
        print(coverage())
    else:
        for family in FAMILIES:
            print(f"{family.mnemonic:12s} {family.op_class}")
    return 0


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
    operating system reclaims anyway (about 30 ms of a short run)."""
    status = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


def main(argv: Optional[Sequence[str]] = None) -> int:
    stdout = sys.stdout
    sys.stdout = stdout if isinstance(stdout, ReaderGoneStream) else ReaderGoneStream(stdout)
    try:
        return _main(argv)
    finally:
        sys.stdout = stdout


def _main(argv: Optional[Sequence[str]]) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    keep_freed_memory()
    try:
        parser = build_parser(arguments[0] if arguments else None)
        options = parser.parse_args(arguments)
        if options.command is None:
            parser.print_help()
            return 2
        return options.handler(options)
    except GpuemuError as error:
        sys.stdout.flush()
        print(f"gpuemu: error: {error}", file=sys.stderr)
        return error.exit_status
    except KeyboardInterrupt:
        print("gpuemu: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print("gpuemu: error: out of host memory (try a smaller launch)", file=sys.stderr)
        return 5
    except OSError as error:
        sys.stdout.flush()
        where = f"{error.filename}: " if error.filename else ""
        print(f"gpuemu: error: {where}{error.strerror or error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
