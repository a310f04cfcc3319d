"""The REPL's commands that show data: print, output, display, x (memory and code), list, ptype, whatis."""
from __future__ import annotations

import os
import re
from typing import Optional, Tuple

import numpy as np

from emulator.observers.debugger.cvalues import CValue
from emulator.observers.debugger.expr import DebugError, format_scalar, parse_expression, parse_format
from emulator.observers.debugger.state import read_space, symbol_at
from emulator.observers.debugger.variables import CType

_UNITS = {"b": 1, "h": 2, "w": 4, "g": 8}
_PER_LINE = {1: 8, 2: 8, 4: 4, 8: 2}
_EXAMINE_LIMIT = 1 << 20
_C_NAMES = {"float32": "float", "float64": "double", "float16": "half", "int32": "int", "uint32": "unsigned int",
            "int64": "long", "uint64": "unsigned long", "int16": "short", "uint16": "unsigned short",
            "int8": "char", "uint8": "unsigned char", "bool": "bool"}
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
            "\t": "\\t", "\v": "\\v"}


def one_line(text: str) -> str:
    return " ".join(text.split())


def _kept(value):
    """What the value history keeps: a scalar's numbers as they are now; aggregates as places."""
    if isinstance(value, CValue):
        if value.ctype.is_scalar() and not value.optimized_out:
            return value.rvalue()
        return value
    return np.asarray(value)


def spelled_expanded(ctype: CType) -> str:
    """ptype's form: a struct's members spelled out."""
    base = ctype
    suffix = ""
    while base.kind in ("pointer", "array"):
        suffix = (" *" + suffix if base.kind == "pointer" else suffix + "".join(f"[{dim}]" for dim in base.dims))
        base = base.target or CType("void", "void")
    if base.kind not in ("struct", "union"):
        return ctype.spelled()
    qualifiers = f"{base.qualifiers} " if base.qualifiers else ""
    body = "".join(f"    {member_type.spelled(name)};\n" for name, _, member_type in base.members)
    if suffix.startswith("["):
        suffix = " " + suffix
    return f"{qualifiers}{base.kind} {base.name} {{\n{body}}}{suffix}"


def c_string(data: bytes) -> str:
    """Bytes as gdb quotes a string: UTF-8 text as is, C escapes, other bytes as octal escapes."""
    parts = []
    for char in data.decode("utf-8", errors="surrogateescape"):
        if char in _ESCAPES:
            parts.append(_ESCAPES[char])
        elif "\udc80" <= char <= "\udcff":
            parts.append(f"\\{ord(char) - 0xdc00:03o}")
        elif char.isprintable():
            parts.append(char)
        else:
            parts.extend(f"\\{byte:03o}" for byte in char.encode("utf-8"))
    return '"' + "".join(parts) + '"'


class DataCommands:
    """Values of expressions, memory, code and source, as gdb shows them."""

    def __init__(self, session):
        self.session = session

    @staticmethod
    def _lanes_suffix(text: str) -> Tuple[str, Optional[str]]:
        match = re.match(r"(.*?)\s*@(all|lane\s+\d+)\s*$", text)
        if match:
            return match.group(1), " ".join(match.group(2).split())
        return text, None

    def cmd_print(self, arg: str, repeat: bool) -> None:
        fmt, rest = parse_format(arg.strip())
        expression, lanes = self._lanes_suffix(rest)
        if not expression:
            raise DebugError("Argument required (expression to compute).")
        values, shown = self.session._print_value(expression, fmt, lanes)
        self.session.values.append(_kept(values))
        self.session.say(f"${len(self.session.values)} = {shown}")

    def cmd_output(self, arg: str, repeat: bool) -> None:
        fmt, rest = parse_format(arg.strip())
        expression, lanes = self._lanes_suffix(rest)
        self.session.say(self.session._print_value(expression, fmt, lanes)[1])

    def cmd_display(self, arg: str, repeat: bool) -> None:
        if not arg:
            if self.session.engine is not None and self.session.focus_thread is not None:
                self.session.running._show_displays()
            return
        fmt, expression = parse_format(arg)
        parse_expression(expression)
        number = self.session.next_display
        self.session.next_display += 1
        self.session.displays.append((number, fmt, expression))
        if self.session.engine is not None and self.session.focus_thread is not None:
            self.session.running._display_one(number, fmt, expression)

    def cmd_undisplay(self, arg: str, repeat: bool) -> None:
        if not arg:
            self.session.displays = []
            return
        wanted = set()
        for word in arg.replace(",", " ").split():
            if not word.isdigit() or all(number != int(word) for number, _, _ in self.session.displays):
                raise DebugError(f"No display number {word}.")
            wanted.add(int(word))
        self.session.displays = [entry for entry in self.session.displays if entry[0] not in wanted]

    def cmd_x(self, arg: str, repeat: bool) -> None:
        session = self.session
        batch = session._require_running()
        if (repeat or not arg) and session.x_state is not None:
            space, address, count, fmt, unit = session.x_state
        else:
            count, fmt, unit = 1, (session.x_state[3] if session.x_state else "x"), None
            if arg.startswith("/"):
                spec, _, arg = arg[1:].partition(" ")
                match = re.fullmatch(r"(\d*)([a-z]*)", spec)
                if not match:
                    raise DebugError(f"Invalid number \"{spec}\".")
                count = int(match.group(1) or 1)
                for letter in match.group(2):
                    if letter in _UNITS:
                        unit = _UNITS[letter]
                    elif letter in "xduotacfsi":
                        fmt = letter
                    else:
                        raise DebugError(f'Undefined output format "{letter}".')
            space, expression = session.breaks._space_and_expression(arg.strip(), None)
            if not expression:
                raise DebugError("Argument required (starting display address).")
            if space is None:
                space, address = session.stops.examine_target(expression, session._lanes(None))
            else:
                address = int(np.asarray(session.value_of(expression, session._lanes(None))[0]).astype(np.uint64))
            if unit is None:
                last = session.x_state[4] if session.x_state else 4
                unit = 8 if fmt == "a" else 1 if fmt == "c" else (last if last in (4, 8) else 4) if fmt == "f" \
                    else last
        if count * unit > _EXAMINE_LIMIT:
            raise DebugError(f"x shows at most {_EXAMINE_LIMIT:,} bytes at a time.")
        focus = session._focus()
        cta, thread = focus // batch.tpc_pad, focus
        if fmt == "i":
            self._examine_code(address, count)
            session.x_state = (space, address + count * session.addresses.spacing, count, fmt, unit)
            return
        if fmt == "s":
            self._examine_strings(space, address, count, cta, thread)
            return
        data = read_space(batch, space, address, count * unit, cta, thread)
        per_line = 2 if fmt == "a" else _PER_LINE[unit]
        dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[unit]
        values = data.view(dtype)
        prefix = "" if space in ("global", "generic") else f"@{space} "
        for start in range(0, count, per_line):
            here = address + start * unit
            label = symbol_at(batch, space, here)
            head = f"{prefix}{here:#x}" + (f" <{label}>" if label else "") + ":"
            cells = [self._examine_cell(values[i], fmt, unit) for i in range(start, min(count, start + per_line))]
            session.say(head + "\t" + "\t".join(cells))
        session.x_state = (space, address + count * unit, count, fmt, unit)

    @staticmethod
    def _examine_cell(value, fmt: str, unit: int) -> str:
        if fmt == "f" and unit in (2, 4, 8):
            return format_scalar(np.asarray(value).view({2: np.float16, 4: np.float32, 8: np.float64}[unit])[()])
        if fmt == "f":
            fmt = "d"
        if fmt == "d":
            return format_scalar(value, "d")
        if fmt == "a":
            return format_scalar(value, "x")
        return format_scalar(value, fmt, pad=fmt in ("x", "t", "o"))

    def _examine_code(self, address: int, count: int) -> None:
        """x/i: listing instructions from the one holding address (a SASS one once, however lowered)."""
        session = self.session
        instrs = session.program.instrs
        focus_pc, _ = session._thread_pc(session._focus())
        focus_start = session.addresses.start_of(focus_pc) if focus_pc >= 0 else None
        for pc in session.addresses.from_address(address, count):
            mark = "=> " if pc == focus_start else "   "
            session.say(f"{mark}{session._code_label(session.addresses.of(pc))}:\t{one_line(instrs[pc].text)}")

    def _examine_strings(self, space: str, address: int, count: int, cta: int, thread: int) -> None:
        batch = self.session.batch
        for _ in range(count):
            chars = []
            while len(chars) < 200:
                byte = int(read_space(batch, space, address + len(chars), 1, cta, thread)[0])
                if byte == 0:
                    break
                chars.append(byte)
            self.session.say(f"{address:#x}:\t{c_string(bytes(chars))}")
            address += len(chars) + 1


    def cmd_list(self, arg: str, repeat: bool) -> None:
        session = self.session
        lines_of_ptx = session.program.lines
        if not arg and session.list_state is not None:
            kind, path, start = session.list_state
        else:
            kind, path = "ptx", None
            if arg:
                file_part, sep, line_part = arg.rpartition(":")
                if sep and line_part.isdigit() and os.path.basename(file_part) != session.ptx_name:
                    lines = session.sources.lines(file_part)
                    if lines is None:
                        session.stops.cuda_line(file_part, int(line_part))
                        raise DebugError(f"Cannot find the source file {file_part} next to {session.ptx_name}.")
                    kind, path, center = "cuda", file_part, int(line_part)
                else:
                    pcs, _ = session.stops.locate(arg)
                    center = session.program.instrs[pcs[0]].line
            elif session.engine is not None and session.batch is not None and session.focus_thread is not None:
                pc, _ = session._thread_pc(session.focus_thread)
                center = session.program.instrs[max(pc, 0)].line
            else:
                center = session.program.instrs[session.program.functions[session.program.name].entry_pc].line
            start = max(1, center - 5)
        lines = lines_of_ptx if kind == "ptx" else session.sources.lines(path)
        if start > len(lines):
            name = session.ptx_name if kind == "ptx" else os.path.basename(path)
            raise DebugError(f'Line number {start} out of range; "{name}" has {len(lines)} lines.')
        for number in range(start, min(len(lines), start + 9) + 1):
            text = lines[number - 1]
            note = self._loc_note(text) if kind == "ptx" else ""
            session.say(f"{number}\t{text}{note}")
        session.list_state = (kind, path, start + 10)

    def _loc_note(self, text: str) -> str:
        match = re.match(r"\s*\.loc\s+(\d+)\s+(\d+)", text)
        if not match:
            return ""
        path = self.session.program.files.get(int(match.group(1)))
        if path is None:
            return ""
        line = int(match.group(2))
        source = self.session.sources.line(path, line)
        return f"\t// {os.path.basename(path)}:{line}" + (f"  {source}" if source else "")


    def cmd_ptype(self, arg: str, repeat: bool, expand: bool = True) -> None:
        if not arg.strip():
            raise DebugError("Argument required (one or more choice items).")
        self.session.say("type = " + self._type_of(arg.strip(), expand))

    def cmd_whatis(self, arg: str, repeat: bool) -> None:
        self.cmd_ptype(arg, repeat, expand=False)

    def _type_of(self, text: str, expand: bool) -> str:
        lanes = self.session._lanes(None)
        value = self.session.source_value(text, lanes) if self.session.batch is not None else None
        if value is None:
            value = self.session.value_of(text, lanes)
        if isinstance(value, CValue):
            space = value.space or ("register" if value.bits is not None else "")
            qualifier = f"@{space} " if space and value.ctype.kind != "pointer" else ""
            return qualifier + (spelled_expanded(value.ctype) if expand else value.ctype.spelled())
        return _C_NAMES.get(np.asarray(value).dtype.name, np.asarray(value).dtype.name)
