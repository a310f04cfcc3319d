"""`gpuemu debug`: a cuda-gdb style step debugger over one kernel launch, at a prompt or from scripts."""
from __future__ import annotations

import argparse
import os
import sys

from .debug.commands import PROMPT, Session
from .debug.record import DEFAULT_HISTORY
from .base.errors import GpuemuError, UsageError


def add_command(subparsers, add_launch_arguments) -> None:
    debug = subparsers.add_parser(
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
        raise GpuemuError(f"internal error: {type(error).__name__}: {error}") from None
    if options.out:
        _check_out_directory(options.out)
    failed = False
    try:
        for lines in scripts:
            failed |= _run_lines(session, lines)
            if session.quitting:
                break
        if not session.quitting and not (options.batch and scripts):
            if _is_terminal(stdin) and _is_terminal(stdout):
                _prompt_loop(session)
            else:
                failed |= _run_lines(session, (line.rstrip("\n") for line in stdin))
    finally:
        session._kill()
    return 1 if options.batch and failed else 0


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _run_lines(session: Session, lines) -> bool:
    """Run scripted lines, each echoed after the prompt; True when one of them failed."""
    failed = False
    for line in lines:
        if line.strip().startswith("#"):
            continue
        session.say(PROMPT + line.strip())
        failed |= not session.execute(line)
        if session.quitting:
            break
    return failed


def _prompt_loop(session: Session) -> None:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import Completer, Completion
    from prompt_toolkit.history import InMemoryHistory

    class CommandCompleter(Completer):
        def get_completions(self, document, complete_event):
            text = document.text_before_cursor
            word = "" if not text or text[-1].isspace() else text.split()[-1]
            for candidate in session.completions(text):
                yield Completion(candidate, start_position=-len(word))

    prompt = PromptSession(history=InMemoryHistory(), completer=CommandCompleter(),
                           complete_while_typing=False)
    while not session.quitting:
        try:
            line = prompt.prompt(PROMPT)
        except KeyboardInterrupt:
            continue
        except EOFError:
            session.say("quit")
            break
        session.execute(line)
