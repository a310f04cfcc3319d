"""The REPL's breakpoint and watchpoint commands: break, tbreak, condition, delete, disable, enable, watch."""
from __future__ import annotations

import re
from typing import Optional, Tuple

from emulator.observers.debugger.control import Breakpoint
from emulator.observers.debugger.expr import DebugError, parse_expression
from emulator.observers.debugger.state import SPACES

_UNITS = {"b": 1, "h": 2, "w": 4, "g": 8}


class BreakCommands:
    """Where to stop: breakpoints (PTX or CUDA lines, labels, functions, addresses; conditions) and watchpoints."""

    def __init__(self, session):
        self.session = session

    def _parse_break(self, arg: str) -> Tuple[str, Tuple[int, ...], Optional[str]]:
        location, condition = arg, None
        match = re.match(r"(.*?)(?:^|\s)if(?:\s+(.*)|$)", arg)
        if match:
            location, condition = match.group(1).strip(), (match.group(2) or "").strip()
            if not condition:
                raise DebugError("Argument required (boolean expression).")
        if not location:
            self.session._require_running()
            pc = self.session.addresses.start_of(self.session._focus_pc())
            return f"*{self.session.addresses.of(pc):#x}", (pc,), condition
        pcs, spec = self.session.stops.locate(location)
        return spec, pcs, condition

    def _announce(self, breakpoint: Breakpoint) -> None:
        session = self.session
        kind = "Temporary breakpoint" if breakpoint.temporary else "Breakpoint"
        first = session.program.instrs[breakpoint.pcs[0]]
        text = (f"{kind} {breakpoint.number} at {session.addresses.of(first.pc):#x}: file {session.ptx_name}, "
                f"line {first.line}.")
        if len(breakpoint.pcs) > 1:
            text += f" ({len(breakpoint.pcs)} locations)"
        session.say(text)

    def cmd_break(self, arg: str, repeat: bool, temporary: bool = False) -> None:
        spec, pcs, condition = self._parse_break(arg)
        self._announce(self.session.stops.add_breakpoint(spec, pcs, temporary, condition))

    def cmd_tbreak(self, arg: str, repeat: bool) -> None:
        self.cmd_break(arg, repeat, temporary=True)

    def cmd_condition(self, arg: str, repeat: bool) -> None:
        number, _, text = arg.partition(" ")
        breakpoint = self.session.stops.numbered(number)
        if not isinstance(breakpoint, Breakpoint):
            raise DebugError(f"Watchpoint {number} cannot have a condition here.")
        text = text.strip()
        breakpoint.condition = parse_expression(text) if text else None
        breakpoint.condition_text = text or None
        if not text:
            self.session.say(f"Breakpoint {breakpoint.number} now unconditional.")

    def cmd_delete(self, arg: str, repeat: bool) -> None:
        if arg.startswith("display"):
            self.session.data.cmd_undisplay(arg[len("display"):].strip(), repeat)
            return
        if arg.startswith("breakpoints"):
            arg = arg[len("breakpoints"):].strip()
        for item in self.session.stops.selected(arg):
            self.session.stops.remove(item)

    def cmd_disable(self, arg: str, repeat: bool) -> None:
        for item in self.session.stops.selected(arg):
            item.enabled = False
        self.session.stops.rebuild()

    def cmd_enable(self, arg: str, repeat: bool) -> None:
        for item in self.session.stops.selected(arg):
            item.enabled = True
        self.session.stops.rebuild()

    def cmd_watch(self, arg: str, repeat: bool) -> None:
        session = self.session
        length = None
        if arg.startswith("/"):
            size, _, arg = arg[1:].partition(" ")
            length = _UNITS.get(size) or (int(size) if size.isdigit() else 0)
            if length not in (1, 2, 4, 8, 16):
                raise DebugError(f"Watch size must be 1, 2, 4, 8 or 16 bytes (or b h w g), not '{size}'.")
            arg = arg.strip()
        space, expression = self._space_and_expression(arg, "generic")
        if not expression:
            raise DebugError("Argument required (expression to compute).")
        space, address, length, value_type = session.stops.watch_target(expression, space, length)
        watch = session.stops.add_watch(space, address, length, label=expression if value_type is not None else None)
        if value_type is not None:
            watch.value_type = value_type
        session.say(f"Hardware watchpoint {watch.number}: {watch.spec}")

    def _space_and_expression(self, arg: str, default: str) -> Tuple[str, str]:
        match = re.match(r"@(\w+)\s*(.*)", arg)
        if not match:
            return default, arg.strip()
        space = match.group(1)
        if space not in SPACES:
            raise DebugError(f"Unknown memory space @{space} (use @global @shared @local @const @param).")
        return space, match.group(2).strip()

