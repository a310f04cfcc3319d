"""The debugger's REPL: cuda-gdb's commands over the session core (emulator.observers.debugger), one launch at a
time. The commands live in groups by theme, objects that hold the session: running.py, breaks.py, data.py, info.py,
frames.py."""
from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

from emulator.base.errors import GpuemuError
from emulator.base.text import printable
from emulator.launching import prepare_launch
from emulator.debug.breaks import BreakCommands
from emulator.debug.data import DataCommands
from emulator.debug.frames import FrameCommands
from emulator.debug.info import InfoCommands
from emulator.debug.running import RunCommands
from emulator.observers.debugger.expr import DebugError
from emulator.observers.debugger.session import DebugSession
from emulator.observers.debugger.state import SPACES, Registers, special_names
from emulator.runtime.names import plain_name

PROMPT = "(gpuemu) "


@dataclass
class Command:
    name: str
    handler: Callable
    summary: str
    usage: str
    repeat: bool


class Session(DebugSession):
    """One debugging session at the prompt: the core's state, what the prompt remembers, the command table; the
    commands themselves live in groups that hold this session (running, breaks, data, info, stack)."""

    def __init__(self, options, out, err):
        DebugSession.__init__(self, options, lambda: prepare_launch(options), Registers)
        self.out = out
        self.err = err
        self.displays: List[Tuple[int, Optional[str], str]] = []
        self.next_display = 1
        self.last_function: Optional[str] = None
        self.last_source = None
        self.list_state = None
        self.x_state = None
        self.last_line = ""
        self.last_repeatable = False
        self.last_failed = False
        self.quitting = False
        self.commands: Dict[str, Command] = {}
        self.aliases: Dict[str, str] = {}
        self.running = RunCommands(self)
        self.breaks = BreakCommands(self)
        self.data = DataCommands(self)
        self.info = InfoCommands(self)
        self.stack = FrameCommands(self)
        self._define_commands()

    # ---- output ----
    def say(self, text: str = "") -> None:
        self.out.write(printable(text, keep_newlines=True) + "\n")
        self.out.flush()

    def complain(self, text: str) -> None:
        self.out.flush()
        self.err.write(printable(text, keep_newlines=True) + "\n")
        self.err.flush()


    def _define_commands(self) -> None:
        table = [
            ("run", self.cmd_run, "Launch the kernel (again, from the beginning).", "run", False),
            ("start", self.running.cmd_start, "Launch the kernel and stop at its first instruction.", "start", False),
            ("continue", self.running.cmd_continue, "Resume until a breakpoint, a watchpoint or the kernel's end.",
             "continue", True),
            ("step", self.running.cmd_step, "One instruction of the focused warp, into calls.", "step [N]", True),
            ("stepi", self.running.cmd_step, "One instruction of the focused warp, into calls.", "stepi [N]", True),
            ("next", self.running.cmd_next, "One instruction of the focused warp, over calls.", "next [N]", True),
            ("nexti", self.running.cmd_next, "One instruction of the focused warp, over calls.", "nexti [N]", True),
            ("finish", self.running.cmd_finish,
             "Run the focused warp out of its .func, or to its next barrier or exit.", "finish", True),
            ("reverse-step", self.running.cmd_reverse_step, "Go back one instruction of the focused warp.",
             "reverse-step [N]", True),
            ("reverse-stepi", self.running.cmd_reverse_step, "Go back one instruction of the focused warp.",
             "reverse-stepi [N]", True),
            ("reverse-next", self.running.cmd_reverse_next, "Go back one instruction of the focused warp, over calls.",
             "reverse-next [N]", True),
            ("reverse-nexti", self.running.cmd_reverse_next, "Go back one instruction of the focused warp, over calls.",
             "reverse-nexti [N]", True),
            ("reverse-continue", self.running.cmd_reverse_continue,
             "Go back to the last breakpoint or watchpoint hit, or the start of the history.",
             "reverse-continue", True),
            ("break", self.breaks.cmd_break, "Set a breakpoint.",
             "break [LINE | FILE:LINE | LABEL | FUNCTION | *ADDRESS] [if CONDITION]", False),
            ("tbreak", self.breaks.cmd_tbreak, "Set a breakpoint that is deleted when hit.",
             "tbreak LOCATION [if COND]", False),
            ("condition", self.breaks.cmd_condition, "Set or clear a breakpoint's condition.",
             "condition N [EXPRESSION]", False),
            ("delete", self.breaks.cmd_delete, "Delete breakpoints and watchpoints (all without numbers).",
             "delete [N...] | delete display [N...]", False),
            ("disable", self.breaks.cmd_disable, "Disable breakpoints and watchpoints.", "disable [N...]", False),
            ("enable", self.breaks.cmd_enable, "Enable breakpoints and watchpoints.", "enable [N...]", False),
            ("watch", self.breaks.cmd_watch, "Stop when any thread writes memory (cuda-gdb has no device watchpoints).",
             "watch[/SIZE] [@SPACE] ADDRESS   (SIZE 1 2 4 8 or b h w g; default 4 bytes)", False),
            ("print", self.data.cmd_print, "Print an expression for the focused lane, one lane or all lanes.",
             "print[/x|d|u|t|o|c|f|a] EXPRESSION [@all | @lane N]", True),
            ("output", self.data.cmd_output, "Print an expression without recording it in the value history.",
             "output[/FMT] EXPRESSION", True),
            ("x", self.data.cmd_x, "Examine memory: x/NFU [@global|@shared|@local|@const|@param] ADDRESS.",
             "x/NFU [@SPACE] ADDRESS   (F: x d u o t a c f s i; U: b h w g)", True),
            ("list", self.data.cmd_list, "List PTX around the focus (with CUDA lines from .loc), or a location.",
             "list [LINE | FILE:LINE | LABEL | FUNCTION | *ADDRESS]", True),
            ("display", self.data.cmd_display, "Print an expression at every stop.", "display[/FMT] EXPRESSION", False),
            ("undisplay", self.data.cmd_undisplay, "Stop displaying expressions.", "undisplay [N...]", False),
            ("info", self.info.cmd_info, "Show breakpoints, registers, displays, CUDA state, the record.",
             "info breakpoints|watchpoints|registers|display|args|locals|record|line|"
             "cuda kernels|blocks|warps|lanes|barriers", True),
            ("ptype", self.data.cmd_ptype, "Show an expression's type, structures spelled out.", "ptype EXPRESSION",
             False),
            ("whatis", self.data.cmd_whatis, "Show an expression's type.", "whatis EXPRESSION", False),
            ("cuda", self.info.cmd_cuda,
             "Show or switch the focus: cuda block (1,0,0) thread (3,0,0), cuda warp 2 lane 5.",
             "cuda [kernel K] [block B] [thread T] [warp W] [lane L]", False),
            ("backtrace", self.stack.cmd_backtrace, "Show the focused thread's frames (through .func calls).",
             "backtrace", True),
            ("frame", self.stack.cmd_frame, "Select a frame of the focused thread for print, info and finish.",
             "frame [N]", False),
            ("up", self.stack.cmd_up, "Select the frame N calls out (the caller's).", "up [N]", False),
            ("down", self.stack.cmd_down, "Select the frame N calls in.", "down [N]", False),
            ("kill", self.running.cmd_kill, "Stop the kernel being debugged.", "kill", False),
            ("echo", self.running.cmd_echo, "Print text (\\n for a newline).", "echo TEXT", False),
            ("help", self.cmd_help, "List the commands, or describe one.", "help [COMMAND]", False),
            ("quit", self.running.cmd_quit, "Leave the debugger.", "quit", False),
        ]
        for name, handler, summary, usage, repeat in table:
            self.commands[name] = Command(name, handler, summary, usage, repeat)
        self.aliases = {"b": "break", "br": "break", "c": "continue", "cont": "continue", "s": "step",
                        "si": "stepi", "n": "next", "ni": "nexti", "p": "print", "bt": "backtrace",
                        "where": "backtrace", "i": "info", "l": "list", "q": "quit", "r": "run",
                        "rs": "reverse-step", "rsi": "reverse-stepi", "rn": "reverse-next", "rni": "reverse-nexti",
                        "rc": "reverse-continue", "d": "delete", "tb": "tbreak", "k": "kill", "h": "help",
                        "fin": "finish", "disp": "display", "u": "undisplay", "exit": "quit"}

    def cmd_run(self, arg: str, repeat: bool) -> None:
        """`run`, the command every session starts a launch with: the session's own entry to it."""
        self.running.cmd_run(arg, repeat)

    def resolve(self, word: str) -> Command:
        if word in self.commands:
            return self.commands[word]
        if word in self.aliases:
            return self.commands[self.aliases[word]]
        matches = sorted(name for name in self.commands if name.startswith(word))
        if len(matches) == 1:
            return self.commands[matches[0]]
        if matches:
            raise DebugError(f'Ambiguous command "{word}": {", ".join(matches)}.')
        close = difflib.get_close_matches(word, list(self.commands) + list(self.aliases), n=3, cutoff=0.6)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise DebugError(f'Undefined command: "{word}".{hint} Try "help".')

    def execute(self, line: str) -> bool:
        """Run one command line; an empty line repeats the last repeatable one. False when it failed."""
        stripped = line.strip()
        repeat = False
        if not stripped:
            if not self.last_repeatable:
                return True
            stripped, repeat = self.last_line, True
        if stripped.startswith("#"):
            return True
        match = re.match(r"([A-Za-z][\w-]*|\S)(.*)", stripped)
        word, rest = match.group(1), match.group(2)
        argument = rest if rest.startswith("/") else rest.strip()
        try:
            command = self.resolve(word)
            self.last_line, self.last_repeatable = stripped, command.repeat
            command.handler(argument, repeat)
            self.last_failed = False
            return True
        except DebugError as error:
            self.complain(str(error))
        except GpuemuError as error:
            self.complain(str(error))
        except MemoryError:
            self.complain("out of host memory")
        except Exception as error:  # a gpuemu bug: one line, and the session goes on
            self.complain(f"internal error: {type(error).__name__}: {error}")
        self.last_failed = True
        return False


    def cmd_help(self, arg: str, repeat: bool) -> None:
        if arg:
            command = self.resolve(arg.split()[0])
            aliases = sorted(alias for alias, name in self.aliases.items() if name == command.name)
            self.say(f"{command.summary}\nUsage: {command.usage}" +
                     (f"\nAliases: {', '.join(aliases)}" if aliases else ""))
            return
        self.say("List of commands:\n")
        for name in sorted(self.commands):
            command = self.commands[name]
            aliases = sorted(alias for alias, target in self.aliases.items() if target == name)
            shown = f"{name} ({', '.join(aliases)})" if aliases else name
            self.say(f"{shown} -- {command.summary}")
        self.say('\nType "help" followed by a command name for its usage. An empty line repeats the last command;'
                 " unambiguous prefixes work.")


    def completions(self, line: str) -> List[str]:
        """Candidates for the last word of a partly typed line."""
        words = line.split()
        ending = line.endswith(" ") or not words
        current = "" if ending else words[-1]
        previous = words if ending else words[:-1]
        if not previous:
            names = sorted(set(self.commands) | set(self.aliases))
            return [name + " " for name in names if name.startswith(current)]
        try:
            command = self.resolve(previous[0]).name
        except DebugError:
            return []
        pool: List[str]
        if command == "info":
            if len(previous) == 1:
                pool = ["args", "breakpoints", "cuda", "display", "frame", "line", "locals", "record", "registers",
                        "watchpoints"]
            elif previous[1] == "cuda" and len(previous) == 2:
                pool = ["barriers", "blocks", "kernels", "lanes", "warps"]
            elif previous[1].startswith("reg"):
                return [name for name in self.registers.names() if name.startswith(current)]
            else:
                pool = []
        elif command == "cuda":
            pool = ["block", "thread", "warp", "lane", "kernel"]
        elif command == "help":
            pool = sorted(self.commands)
        if command in ("info", "cuda", "help"):
            return [item + " " for item in pool if item.startswith(current)]
        elif command in ("break", "tbreak", "list") and "if" not in previous:
            pool = sorted(self.program.labels) + sorted({plain_name(f) for f in self.program.functions})
            pool += [f"{self.ptx_name}:"] + sorted({os.path.basename(path) + ":" for path in self.program.files.values()})
        else:
            registers = self.registers.names()
            if self.registers.listing:
                registers = ["$" + name for name in registers]
            pool = registers + special_names() + ["$pc", "$laneid", "$warpid"]
            if self.variables:
                pool += sorted({variable.name for variable in self.variables.variables})
            if command in ("print", "output", "display"):
                pool += ["@all", "@lane"]
            if command in ("x", "watch"):
                pool += [f"@{space}" for space in SPACES]
        return [item for item in pool if item.startswith(current)]
