"""SASS listing text (cuobjdump -sass, nvdisasm, hand-copied) → emulator.sass.syntax; file:line:col errors."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import List, Optional

from lark import Lark, Token, Transformer

from emulator.base.errors import PTXSyntaxError
from emulator.frontend.ptx.parse import TokenError, build_parser, parse_items
from emulator.frontend.ptx.syntax import Pos
from emulator.frontend.sass import syntax as S

#: instruction addresses a listing may give: a kernel's code is far smaller than 4 GiB
ADDRESS_LIMIT = 1 << 32

_TERMINAL_WORDS = {
    "OPCODE": "an instruction", "NAME": "a register or name", "NUMBER": "a number",
    "ADDRESS": "an address such as /*0010*/", "FUNCTION": "'Function : name'", "SEMICOLON": "';'",
    "COMMA": "','", "LSQB": "'['", "RSQB": "']'", "$END": "end of file",
}


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return build_parser("sass", lexer="contextual")


def _pos(token: Token) -> Pos:
    return Pos(token.line, token.column)


def _sm(text: str) -> str:
    return re.search(r"sm_\w+", text).group(0)


_INTEGER = re.compile(r"^(?:0[xX][0-9a-fA-F]+|\d+)$")


def _number(token: Token, *, integer: bool = False) -> str:
    """The text of a NUMBER token: integers (hex or decimal) fit in 64 bits, address terms are integers."""
    text = str(token)
    shown = text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"
    if _INTEGER.match(text):
        digits = text[2:] if text[:2] in ("0x", "0X") else text
        base = 16 if digits is not text else 10
        if len(digits.lstrip("0")) > (16 if base == 16 else 20) or int(digits, base) >= 1 << 64:
            raise TokenError(token, f"constant {shown} does not fit in 64 bits")
    elif integer:
        raise TokenError(token, f"'{shown}' is not an integer: an address or bank takes whole numbers")
    return text


class _ToSyntax(Transformer):
    """Bottom-up construction of the frozen syntax tree; positions come from the tokens."""

    def name(self, items):
        return S.Name(str(items[0]))

    def number(self, items):
        return S.Number(_number(items[0]))

    def bare_number(self, items):
        return S.Number(_number(items[0]))

    def bare_negative(self, items):
        return S.Modified("-", S.Number(_number(items[0])))

    def negate(self, items):
        return S.Modified("-", items[0])

    def plus(self, items):
        return items[0]

    def logical_not(self, items):
        return S.Modified("!", items[-1])

    def invert(self, items):
        return S.Modified("~", items[0])

    def absolute(self, items):
        inner = items[0]
        if len(items) > 1 and isinstance(inner, S.Name):
            inner = S.Name(inner.text + str(items[1]))
        return S.Modified("|", inner)

    def label_ref(self, items):
        return S.LabelRef(str(items[0]))

    def addr_name(self, items):
        return S.AddrTerm("name", str(items[0]))

    def addr_number(self, items):
        return S.AddrTerm("number", _number(items[0], integer=True))

    def addr_negative(self, items):
        return S.AddrTerm("number", _number(items[0], integer=True), negative=True)

    def bracket(self, items):
        return tuple(items)

    def bracketed(self, items):
        prefix = None
        if isinstance(items[0], Token):
            prefix, items = str(items[0]), items[1:]
        return S.Bracketed(prefix, tuple(items))

    def guard(self, items):
        return ("guard", str(items[-1]), len(items) == 2)

    def instruction(self, items):
        address = None
        guard = None
        opcode = None
        operands = []
        for item in items:
            if isinstance(item, Token) and item.type == "ADDRESS":
                address = int(str(item)[2:-2], 16)
                if address >= ADDRESS_LIMIT:
                    raise TokenError(item, f"address {str(item)} is past the {ADDRESS_LIMIT:#x} bytes a kernel's "
                                           f"code can span")
            elif isinstance(item, Token) and item.type == "OPCODE":
                opcode = item
            elif isinstance(item, tuple) and item and item[0] == "guard":
                guard = (item[1], item[2])
            else:
                operands.append(item)
        return S.Instruction(address, guard, str(opcode), tuple(operands), _pos(opcode))

    def label(self, items):
        token = items[0]
        return S.Label(str(token)[:-1], _pos(token))

    def code_for(self, items):
        return ("arch", _sm(str(items[0])), items[0])

    def target(self, items):
        return ("arch", _sm(str(items[0])), items[0])

    def arch(self, items):
        return ("arch", _sm(str(items[0])), items[0])

    def compile_size(self, items):
        return ("compile_size", int(re.search(r"\d+", str(items[0])).group(0)), items[0])

    def function(self, items):
        token = items[0]
        return ("function", str(token).split(":", 1)[1].strip(), token)


def parse_listing(text: str, source: str = "<sass>") -> S.Listing:
    """Parse a SASS listing into its functions; raise PTXSyntaxError (file:line:col) on bad input."""
    items = parse_items(_parser(), _ToSyntax(), _TERMINAL_WORDS, source, text, "SASS")
    arch: Optional[str] = None
    compile_size: Optional[int] = None
    functions: List[S.Function] = []
    header = None
    body: list = []

    def close():
        if header is not None:
            functions.append(S.Function(header[0], header[1], header[2], header[3], tuple(body)))

    for item in items:
        if isinstance(item, tuple) and item[0] == "arch":
            arch = item[1]
        elif isinstance(item, tuple) and item[0] == "compile_size":
            compile_size = item[1]
        elif isinstance(item, tuple) and item[0] == "function":
            close()
            header = (item[1], _pos(item[2]), arch, compile_size)
            body = []
        else:
            if header is None:
                raise PTXSyntaxError(source, item.pos.line, item.pos.col,
                                     "instruction before any 'Function : name' header")
            body.append(item)
    close()
    if not functions:
        raise PTXSyntaxError(source, 1, 1, "no 'Function : name' header: not a SASS listing")
    return S.Listing(tuple(functions), tuple(text.splitlines()))
