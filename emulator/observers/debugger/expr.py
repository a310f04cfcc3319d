"""Debugger expressions over the lanes of a warp (C precedence, with C's [] . -> * & on source variables) and gdb's
value formats (/x /d /u /t /o /c /f /a)."""
from __future__ import annotations

import re
from typing import List, Optional, Sequence, Tuple

import numpy as np


class DebugError(Exception):
    """A command that cannot be carried out; str() is the one line the user sees."""


_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<number>0[fF][0-9a-fA-F]{8}(?![\w.])|0[dD][0-9a-fA-F]{16}(?![\w.])|0[xX][0-9a-fA-F]+
               |(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+)
  | (?P<register>%[A-Za-z_][\w$]*(?:\.[xyz])?)
  | (?P<convenience>\$\$\d*|\$\d+|\$[A-Za-z_]\w*(?:\.[xyz])?|\$)
  | (?P<name>[A-Za-z_][\w$]*)
  | (?P<op>\|\||&&|==|!=|<=|>=|<<|>>|->|[-+*/%<>!~&|^()\[\].])
""", re.VERBOSE)

_BINARY = {"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7, "<=": 7, ">": 7, ">=": 7,
           "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10}


def tokenize(text: str) -> List[Tuple[str, str]]:
    tokens, position = [], 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise DebugError(f"Invalid character '{text[position]}' in expression.")
        position = match.end()
        if match.lastgroup != "space":
            tokens.append((match.lastgroup, match.group()))
    return tokens


def parse_expression(text: str):
    """The expression's tree: ('num', value) ('reg', name) ('conv', name) ('name', name) ('un', op, a) ('bin', op, a, b)."""
    tokens = tokenize(text)
    if not tokens:
        raise DebugError("Argument required (expression to compute).")
    position = 0

    def peek():
        return tokens[position] if position < len(tokens) else (None, None)

    def primary():
        nonlocal position
        kind, value = peek()
        if kind is None:
            raise DebugError("A syntax error in expression, near `'.")
        position += 1
        if kind == "number":
            return ("num", _number(value))
        if kind == "register":
            return ("reg", value)
        if kind == "convenience":
            return ("conv", value)
        if kind == "name":
            return ("name", value)
        if value in ("-", "+", "!", "~", "*", "&"):
            return ("un", value, unary())
        if value == "(":
            inner = binary(0)
            if peek()[1] != ")":
                raise DebugError(f"A syntax error in expression, near `{_rest(tokens, position)}'.")
            position += 1
            return inner
        raise DebugError(f"A syntax error in expression, near `{_rest(tokens, position - 1)}'.")

    def unary():
        nonlocal position
        tree = primary()
        while True:
            kind, value = peek()
            if value == "[" and kind == "op":
                position += 1
                index = binary(0)
                if peek()[1] != "]":
                    raise DebugError(f"A syntax error in expression, near `{_rest(tokens, position)}'.")
                position += 1
                tree = ("index", tree, index)
            elif value in (".", "->") and kind == "op":
                position += 1
                field_kind, field = peek()
                if field_kind != "name":
                    raise DebugError(f"A syntax error in expression, near `{_rest(tokens, position)}'.")
                position += 1
                tree = ("member" if value == "." else "arrow", tree, field)
            else:
                return tree

    def binary(floor):
        nonlocal position
        left = unary()
        while True:
            kind, op = peek()
            precedence = _BINARY.get(op) if kind == "op" else None
            if precedence is None or precedence <= floor:
                return left
            position += 1
            left = ("bin", op, left, binary(precedence))

    tree = binary(0)
    if position != len(tokens):
        raise DebugError(f"A syntax error in expression, near `{_rest(tokens, position)}'.")
    return tree


def _rest(tokens, position) -> str:
    return " ".join(value for _, value in tokens[position:])


def _number(text: str):
    lower = text.lower()
    if lower.startswith("0f") and len(text) == 10:
        return np.array(int(text[2:], 16), dtype=np.uint32).view(np.float32)[()]
    if lower.startswith("0d") and len(text) == 18:
        return np.array(int(text[2:], 16), dtype=np.uint64).view(np.float64)[()]
    if lower.startswith("0x"):
        return _integer(int(text, 16))
    if any(c in lower for c in ".e"):
        return np.float64(float(text))
    if len(text) > 1 and text.startswith("0"):
        return _integer(int(text, 8))
    return _integer(int(text))


def _integer(value: int):
    if value < 2 ** 63:
        return np.int64(value)
    if value < 2 ** 64:
        return np.uint64(value)
    raise DebugError("Numeric constant too large.")


class Context:
    """What an expression can name; the session fills these in for a set of lanes."""

    def register(self, name: str) -> np.ndarray:
        raise DebugError(f"No register {name}.")

    def convenience(self, name: str):
        raise DebugError(f"No convenience variable {name}.")

    def symbol(self, name: str):
        raise DebugError(f'No symbol "{name}" in current context.')

    def access(self, op: str, value, operand=None):
        """C's `[]` (operand: the index), `.` and `->` (operand: the member), unary `*` and `&` on a source value."""
        raise DebugError("Attempt to take contents of a non-pointer value." if op == "*" else
                         "Attempt to take address of value not located in memory." if op == "&" else
                         f"No source variables here: `{op}` needs a C variable (a -G build).")


class SourceValue:
    """A value with a C type (a variable, an element, a member): `rvalue()` gives its numbers per lane."""

    def rvalue(self) -> np.ndarray:
        raise NotImplementedError


def rvalue(value) -> np.ndarray:
    """The numbers of an evaluated expression (a source value loaded)."""
    return value.rvalue() if isinstance(value, SourceValue) else np.asarray(value)


def evaluate(tree, context: Context):
    """The value of a tree: numbers per lane, or a SourceValue for C variables and what [] . -> * & make of them."""
    kind = tree[0]
    if kind == "num":
        return np.asarray(tree[1])
    if kind == "reg":
        return np.asarray(context.register(tree[1]))
    if kind == "conv":
        return np.asarray(context.convenience(tree[1]))
    if kind == "name":
        value = context.symbol(tree[1])
        return value if isinstance(value, SourceValue) else np.asarray(value)
    if kind == "index":
        return context.access("[]", evaluate(tree[1], context), rvalue(evaluate(tree[2], context)))
    if kind in ("member", "arrow"):
        return context.access("." if kind == "member" else "->", evaluate(tree[1], context), tree[2])
    if kind == "un" and tree[1] in ("*", "&"):
        return context.access(tree[1], evaluate(tree[2], context))
    if kind == "un":
        value = _numeric(rvalue(evaluate(tree[2], context)))
        op = tree[1]
        if op == "!":
            return value == 0
        if op == "~":
            if value.dtype.kind == "f":
                raise DebugError("Argument to complement operation not an integer, boolean.")
            return ~_widen(value)
        if op == "-":
            return -_widen(value)
        return value
    op, left, right = tree[1], rvalue(evaluate(tree[2], context)), rvalue(evaluate(tree[3], context))
    return binary(op, left, right)


def binary(op: str, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    if op in ("&&", "||"):
        a, b = _numeric(left) != 0, _numeric(right) != 0
        return (a & b) if op == "&&" else (a | b)
    a, b = _common(_numeric(left), _numeric(right))
    with np.errstate(all="ignore"):
        if op == "==":
            return a == b
        if op == "!=":
            return a != b
        if op == "<":
            return a < b
        if op == "<=":
            return a <= b
        if op == ">":
            return a > b
        if op == ">=":
            return a >= b
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op in ("/", "%"):
            if a.dtype.kind == "f":
                return a / b if op == "/" else np.fmod(a, b)
            if np.any(b == 0):
                raise DebugError("Division by zero")
            quotient = np.abs(a) // np.abs(b) if a.dtype.kind == "i" else a // b
            if a.dtype.kind == "i":
                quotient = np.where((a < 0) != (b < 0), -quotient, quotient)
            return quotient if op == "/" else a - quotient * b
        if a.dtype.kind == "f":
            raise DebugError(f"Integer only operation {op}.")
        if op == "&":
            return a & b
        if op == "|":
            return a | b
        if op == "^":
            return a ^ b
        shift = b.astype(np.uint64) & np.uint64(63)
        return (a << shift.astype(a.dtype)) if op == "<<" else (a >> shift.astype(a.dtype))


def _numeric(value: np.ndarray) -> np.ndarray:
    if value.dtype == np.float16:
        return value.astype(np.float32)
    return value


def _widen(value: np.ndarray) -> np.ndarray:
    if value.dtype == np.bool_:
        return value.astype(np.int64)
    if value.dtype.kind == "f":
        return value
    return value.astype(np.uint64 if value.dtype == np.uint64 else np.int64)


def _common(a: np.ndarray, b: np.ndarray):
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        wide = np.float64 if np.float64 in (a.dtype, b.dtype) else np.float32
        return a.astype(wide), b.astype(wide)
    a, b = _widen(a), _widen(b)
    if np.uint64 in (a.dtype, b.dtype):
        return a.astype(np.uint64), b.astype(np.uint64)
    return a, b


# ---- formats --------------------------------------------------------------------------------------

FORMATS = "xduotcfaz"


def raw_bits(value) -> Tuple[int, int]:
    """(unsigned integer of the value's bits, width in bits)."""
    array = np.asarray(value)
    if array.dtype == np.bool_:
        return int(bool(array)), 8
    width = array.dtype.itemsize
    return int(array.reshape(1).view(np.dtype(f"u{width}"))[0]), width * 8


def format_float(value, digits: int) -> str:
    number = float(value)
    if number != number:
        bits, width = raw_bits(value)
        mantissa = bits & ((1 << {16: 10, 32: 23, 64: 52}[width]) - 1)
        return f"{'-' if bits >> (width - 1) else ''}nan(0x{mantissa:x})"
    if number in (float("inf"), float("-inf")):
        return "inf" if number > 0 else "-inf"
    return f"{number:.{digits}g}"


_DIGITS = {2: 5, 4: 9, 8: 17}
_FLOAT_OF_WIDTH = {16: np.float16, 32: np.float32, 64: np.float64}


def format_scalar(value, fmt: Optional[str] = None, *, pad: bool = False) -> str:
    """One value as gdb prints it (`pad`: zero-padded to its width, as `x` examines memory)."""
    array = np.asarray(value)
    if fmt in (None, "f") and array.dtype == np.bool_:
        return "true" if bool(array) else "false"
    if fmt is None or (fmt == "f" and array.dtype.kind == "f"):
        if array.dtype.kind == "f":
            return format_float(array, _DIGITS[array.dtype.itemsize])
        return str(int(array))
    bits, width = raw_bits(array)
    if fmt == "f":
        if width in _FLOAT_OF_WIDTH:
            number = np.array(bits, dtype=np.dtype(f"u{width // 8}")).view(_FLOAT_OF_WIDTH[width])[()]
            return format_float(number, _DIGITS[width // 8])
        return str(int(array))
    if fmt in ("x", "z", "a"):
        digits = width // 4
        return f"0x{bits:0{digits}x}" if pad or fmt == "z" else f"0x{bits:x}"
    if fmt == "d":
        return str(bits - (1 << width) if bits >> (width - 1) else bits)
    if fmt == "u":
        return str(bits)
    if fmt == "o":
        return f"0{bits:0{(width + 2) // 3}o}" if pad else ("0" if bits == 0 else f"0{bits:o}")
    if fmt == "t":
        return f"{bits:0{width}b}" if pad else f"{bits:b}"
    if fmt == "c":
        code = bits & 0xFF
        signed = code - 256 if code > 127 else code
        shown = chr(code) if 32 <= code < 127 else f"\\{code:03o}"
        return f"{signed} '{shown}'"
    raise DebugError(f"Undefined output format \"{fmt}\".")


def format_lanes(values: Sequence[str]) -> str:
    """gdb's array form, runs of 10 or more equal elements shown as `<repeats N times>`."""
    parts, index = [], 0
    while index < len(values):
        end = index
        while end < len(values) and values[end] == values[index]:
            end += 1
        run = end - index
        if run >= 10:
            parts.append(f"{values[index]} <repeats {run} times>")
            index = end
        else:
            parts.append(values[index])
            index += 1
    return "{" + ", ".join(parts) + "}"


def parse_format(text: str) -> Tuple[Optional[str], str]:
    """`/x rest` → ('x', rest); no format → (None, text)."""
    if not text.startswith("/"):
        return None, text
    letters, _, rest = text[1:].partition(" ")
    if len(letters) != 1 or letters not in FORMATS:
        raise DebugError(f"Undefined output format \"{letters}\".")
    return letters, rest.strip()


