"""PTX text → syntax tree (emulator.syntax), with file:line:col errors that say what was expected."""
from __future__ import annotations

import io
from functools import lru_cache
from typing import Dict, List, Optional, Tuple

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError

from emulator.base.cache import Cache, digest
from emulator.base.errors import PTXSyntaxError
from emulator.frontend.ptx import syntax as S
from grammars import grammar_text

_TERMINAL_WORDS = {
    "OPCODE": "an instruction",
    "REGISTER": "a register",
    "NAME": "a name",
    "LABEL": "a label",
    "INT": "an integer",
    "NEG_INT": "an integer",
    "HEX_F32": "a float literal",
    "HEX_F64": "a double literal",
    "DEC_FLOAT": "a float literal",
    "TYPE": "a type such as .u32",
    "SPACE": "a state space such as .global",
    "PARAM_SPACE": ".param or .reg",
    "STRING": "a string",
    "VERSION_NUMBER": "a version number",
    "VECTOR": ".v2 or .v4",
    "LINKAGE": ".visible/.extern/.weak",
    "FUNC_KIND": ".entry or .func",
    "PERF_DIRECTIVE": "a performance directive",
    "SECTION_NAME": "a section name",
    "SECTION_WORD": "section data",
    "$END": "end of file",
}


def build_parser(grammar: str, **options) -> Lark:
    """An LALR parser for grammars/<grammar>.lark, its tables kept in gpuemu's signed cache ("grammar")."""
    text = grammar_text(grammar)
    cache = Cache("grammar")
    key = digest(text, repr(sorted(options.items())), Lark.__module__, _lark_version())
    stored = cache.load(key)
    if stored is not None:
        try:
            return Lark.load(io.BytesIO(stored))
        except Exception:  # a signed entry from another lark release that no longer loads: build it anew
            pass
    parser = Lark(text, parser="lalr", **options)
    saved = io.BytesIO()
    parser.save(saved)
    cache.store(key, saved.getvalue())
    return parser


def _lark_version() -> str:
    import lark
    return lark.__version__


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return build_parser("ptx", lexer="contextual", maybe_placeholders=True)


def _pos(token: Token) -> S.Pos:
    return S.Pos(token.line, token.column)


def integer_literal(text: str) -> int:
    """A PTX integer literal's value: decimal, 0x hex, 0b binary, 0 octal, U suffix (ValueError if it is none, or
    has more digits than Python converts)."""
    text = text.rstrip("U")
    negative = text.startswith("-")
    body = text[1:] if negative or text.startswith("+") else text
    if body[:2] in ("0x", "0X"):
        value = int(body[2:], 16)
    elif body[:2] in ("0b", "0B"):
        value = int(body[2:], 2)
    elif len(body) > 1 and body.startswith("0"):
        value = int(body, 8)
    else:
        value = int(body)
    return -value if negative else value


def _int(token) -> int:
    """An integer literal (decimal, 0x hex, 0b binary, 0 octal, U suffix); a token with more digits than Python
    converts is an error at the token."""
    try:
        return integer_literal(str(token))
    except ValueError:
        if isinstance(token, Token):
            raise TokenError(token, f"number {_shown(str(token).rstrip('U'))} has too many digits") from None
        raise


def _offset(token) -> int:
    """An address or offset: an integer that fits in 64 bits (signed or unsigned)."""
    value = _int(token)
    if not -(1 << 63) <= value < 1 << 64:
        raise TokenError(token, f"offset {_shown(str(token))} does not fit in 64 bits")
    return value


def _shown(text: str) -> str:
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"


#: the largest .align ptxas takes
MAX_ALIGN = 1 << 31


def _hex_float(text: str, kind: str) -> S.Imm:
    negative = text.startswith("-")
    body = text.lstrip("+-")
    bits = int(body[2:], 16)
    if negative:
        bits ^= 1 << (31 if kind == "f32" else 63)
    return S.Imm(kind, bits)


class TokenError(Exception):
    """A transformer's complaint about one token, reported at the token's line and column."""

    def __init__(self, token: Token, message: str):
        super().__init__(message)
        self.line, self.col = token.line, token.column


class _ToSyntax(Transformer):
    """Builds frozen dataclasses bottom-up; positions come from the tokens."""

    # ---- numbers and operands ----
    def int_imm(self, items):
        token = str(items[0])
        shown = _shown(token)
        try:
            value = _int(token)
        except ValueError:  # more digits than Python converts
            value = 1 << 64
        if not -(1 << 63) <= value < 1 << 64:
            raise TokenError(items[0], f"constant {shown} does not fit in 64 bits")
        return S.Imm("int", value)

    def f32_imm(self, items):
        return _hex_float(str(items[0]), "f32")

    def f64_imm(self, items):
        return _hex_float(str(items[0]), "f64")

    def dec_float_imm(self, items):
        return S.Imm("float", float(items[0]))

    def signed_int(self, items):
        return _offset(items[0])

    def reg(self, items):
        return S.Reg(str(items[0]))

    def not_reg(self, items):
        return S.NotReg(str(items[0]))

    def pred_pair(self, items):
        return S.PredPair(str(items[0]), str(items[1]))

    def sym(self, items):
        name = str(items[0])
        return S.Sink() if name == "_" else S.Sym(name)

    def sym_offset(self, items):
        return S.Sym(str(items[0]), _offset(items[1]))

    def sym_index(self, items):
        return S.SymIndex(str(items[0]), items[1])

    def vector(self, items):
        return S.Vec(tuple(item for item in items if item is not None))

    def call_list(self, items):
        return S.CallList(tuple(item for item in items if item is not None))

    def abs_addr(self, items):
        return None if not items else ("abs", items[0])

    def address(self, items):
        offset = items[1] if len(items) > 1 else 0
        return self._make_addr(items[0], offset)

    def mem_operand(self, items):
        return items[0]

    def address_minus(self, items):
        base, offset = items
        return self._make_addr(base, -_offset(offset))

    def _make_addr(self, base, offset):
        if isinstance(base, tuple) and base[0] == "abs":
            return S.Addr(None, base[1] + offset)
        if isinstance(base, S.Sym):
            return S.Addr(S.Sym(base.name), base.offset + offset)
        return S.Addr(base, offset)

    # ---- instructions and statements ----
    @v_args(inline=False)
    def instruction(self, items):
        guard = None
        negated = False
        if isinstance(items[0], tuple):
            guard, negated = items[0]
            items = items[1:]
        opcode_token = items[0]
        parts = str(opcode_token).split(".")
        operands = tuple(item for item in items[1:] if item is not None)
        return S.Instruction(parts[0], tuple(parts[1:]), guard, negated, operands, _pos(opcode_token))

    def guard(self, items):
        return (str(items[0]), False)

    def guard_not(self, items):
        return (str(items[0]), True)

    def label(self, items):
        token = items[0]
        return S.Label(str(token)[:-1], _pos(token))

    def empty(self, items):
        return None

    def loc(self, items):
        attributes = dict(item for item in items[3:] if item is not None)
        return S.SourceLoc(_int(items[0]), _int(items[1]), _int(items[2]), attributes.get("function"),
                           attributes.get("inlined_at"))

    def loc_function(self, items):
        name = str(items[1])
        return ("function", f"{name}+{_int(items[2])}" if len(items) > 2 else name)

    def loc_inlined_at(self, items):
        return ("inlined_at", (_int(items[1]), _int(items[2]), _int(items[3])))

    def reg_item(self, items):
        name = items[0]
        count = _int(items[1]) if len(items) > 1 and items[1] is not None else None
        return (str(name), count, name)

    def reg_decl(self, items):
        vector = 1
        if isinstance(items[0], tuple) and items[0][0] == "vector":
            vector = items[0][1]
            items = items[1:]
        type_token = items[0]
        names = tuple((name, count) for name, count, _ in items[1:])
        return S.RegDecl(str(type_token)[1:], vector, names, _pos(type_token))

    def vector_type(self, items):
        return ("vector", int(str(items[0])[2:]))

    def state_space(self, items):
        return ("space", str(items[0])[1:].split("::")[0], items[0])

    def align(self, items):
        value = _int(items[0])
        if not 0 < value <= MAX_ALIGN or value & (value - 1):
            raise TokenError(items[0], f"alignment {_shown(str(items[0]))} is not a power of two from 1 to "
                                        f"{MAX_ALIGN}")
        return ("align", value)

    def ptr_attr(self, items):
        return ("ptr", None)

    def var_attribute(self, items):
        return ("attribute", str(items[0])[1:])

    def callprototype(self, items):
        return None

    def proto_list(self, items):
        return None

    def ptr_space(self, items):
        return ("ptr_space", str(items[0])[1:])

    def linkage(self, items):
        return ("linkage", str(items[0])[1:])

    def array_dim(self, items):
        return ("dim", _int(items[0]) if items and items[0] is not None else None)

    def initializer(self, items):
        return ("init", items[0])

    def init_list(self, items):
        return [item for item in items if item is not None]

    def init_symbol(self, items):
        return ("symbol", str(items[0]), 0)

    def init_symbol_offset(self, items):
        return ("symbol", str(items[0]), _int(items[1]))

    def init_generic(self, items):
        return ("generic", str(items[0]), 0)

    def init_generic_offset(self, items):
        return ("generic", str(items[0]), _int(items[1]))

    def var_item(self, items):
        name_token = items[0]
        dims = tuple(item[1] for item in items[1:] if isinstance(item, tuple) and item[0] == "dim")
        init = next((item[1] for item in items[1:] if isinstance(item, tuple) and item[0] == "init"), None)
        return ("item", str(name_token), dims, init, _pos(name_token))

    def var_decl(self, items):
        space_item = items[0]
        align = None
        vector = 1
        type_name = None
        decls = []
        attributes = []
        for item in items[1:]:
            if isinstance(item, Token) and item.type == "TYPE":
                type_name = str(item)[1:]
            elif isinstance(item, tuple) and item[0] == "attribute":
                attributes.append(item[1])
            elif isinstance(item, tuple) and item[0] == "align":
                align = item[1]
            elif isinstance(item, tuple) and item[0] == "vector":
                vector = item[1]
            elif isinstance(item, tuple) and item[0] == "item":
                decls.append(item)
        return [S.VarDecl(space_item[1], name, type_name, vector, align, dims, init, (), pos, tuple(attributes))
                for _, name, dims, init, pos in decls]

    def module_var(self, items):
        linkage = tuple(item[1] for item in items if isinstance(item, tuple) and item[0] == "linkage")
        decls = items[-1]
        return [S.VarDecl(d.space, d.name, d.type, d.vector, d.align, d.dims, d.init, linkage, d.pos, d.attributes)
                for d in decls]

    def param_decl(self, items):
        space_token = items[0]
        align = None
        vector = 1
        type_name = None
        name = None
        dims = []
        for item in items[1:]:
            if isinstance(item, Token) and item.type == "TYPE":
                type_name = str(item)[1:]
            elif isinstance(item, Token) and item.type == "NAME":
                name = str(item)
            elif isinstance(item, tuple) and item[0] == "align":
                align = item[1]
            elif isinstance(item, tuple) and item[0] == "vector":
                vector = item[1]
            elif isinstance(item, tuple) and item[0] == "dim":
                dims.append(item[1])
        return S.ParamDecl(str(space_token)[1:], name, type_name, vector, align, tuple(dims), _pos(space_token))

    def return_params(self, items):
        return ("returns", tuple(item for item in items if item is not None))

    def param_list(self, items):
        return ("params", tuple(item for item in items if item is not None))

    def perf_directive(self, items):
        return ("directive", (str(items[0])[1:], tuple(_int(i) for i in items[1:] if i is not None)))

    def perf_pragma(self, items):
        return None

    def func_attr(self, items):
        return None

    def function_tail(self, items):
        return ("body", items[0] if items and isinstance(items[0], S.Block) else None)

    def body(self, items):
        return self._block(items)

    def block(self, items):
        return self._block(items)

    def _block(self, items):
        statements: List[S.Statement] = []
        first_pos: Optional[S.Pos] = None
        for item in items:
            if item is None:
                continue
            if isinstance(item, list):
                statements.extend(item)
            else:
                statements.append(item)
        for statement in statements:
            pos = getattr(statement, "pos", None)
            if pos is not None:
                first_pos = pos
                break
        return S.Block(tuple(statements), first_pos or S.Pos(0, 0))

    def function(self, items):
        linkage = tuple(item[1] for item in items if isinstance(item, tuple) and item[0] == "linkage")
        kind_token = next(item for item in items if isinstance(item, Token) and item.type == "FUNC_KIND")
        name = next(str(item) for item in items if isinstance(item, Token) and item.type == "NAME")
        params: tuple = ()
        returns: tuple = ()
        directives = []
        body = None
        for item in items:
            if isinstance(item, tuple):
                if item[0] == "params":
                    params = item[1]
                elif item[0] == "returns":
                    returns = item[1]
                elif item[0] == "directive":
                    directives.append(item[1])
                elif item[0] == "body":
                    body = item[1]
        return S.Function(name, str(kind_token)[1:], linkage, params, returns, tuple(directives), body,
                          _pos(kind_token))

    # ---- module level ----
    def version(self, items):
        return ("version", str(items[0]))

    def target_name(self, items):
        return str(items[0])

    def target(self, items):
        return ("target", tuple(items))

    def address_size(self, items):
        return ("address_size", _int(items[0]))

    def file_decl(self, items):
        return ("file", (_int(items[0]), str(items[1])[1:-1]))

    def section(self, items):
        if str(items[0]) != ".debug_str":
            return None
        return ("strings", _debug_strings(items[1:]))

    def pragma(self, items):
        return None


def describe_expected(parser: Lark, terminal_words: Dict[str, str], expected) -> str:
    """'; expected one of …' in words a reader knows (at most six), or '' when lark names nothing."""
    words = []
    for name in sorted(expected):
        word = terminal_words.get(name)
        if word is None:
            try:
                pattern = parser.get_terminal(name).pattern
                word = f"'{pattern.value}'" if pattern.type == "str" else name.lower()
            except KeyError:
                word = name.lower()
        if word not in words:
            words.append(word)
    if not words:
        return ""
    if len(words) > 6:
        words = words[:6] + ["..."]
    return "; expected " + (words[0] if len(words) == 1 else "one of " + ", ".join(words))


def syntax_error(parser: Lark, terminal_words: Dict[str, str], source: str, text: str,
                 error: UnexpectedInput) -> PTXSyntaxError:
    """The error to raise for lark's `error` while parsing `text` (named `source`)."""
    lines = text.splitlines()
    line = getattr(error, "line", None) or (len(lines) if lines else 1)
    col = getattr(error, "column", None) or 1
    if line == -1:
        line, col = len(lines) or 1, 1
    source_line = _excerpt(lines[line - 1], col) if 0 < line <= len(lines) else ""
    if isinstance(error, UnexpectedToken):
        token = error.token
        what = "end of file" if token.type == "$END" else f"'{_shown(str(token))}'"
        expected = error.accepts or error.expected
    elif isinstance(error, UnexpectedCharacters):
        what = f"character '{text[error.pos_in_stream]}'" if error.pos_in_stream < len(text) else "end of file"
        expected = error.allowed or ()
    else:
        what = "end of file"
        expected = getattr(error, "expected", ()) or ()
    context = f' in "{source_line}"' if source_line else ""
    return PTXSyntaxError(source, line, col,
                          f"unexpected {what}{context}{describe_expected(parser, terminal_words, expected)}")


#: characters of the offending line an error message quotes
EXCERPT = 100


def _excerpt(line: str, col: int) -> str:
    """The line, stripped; a long one cut to EXCERPT characters around column col."""
    if len(line.strip()) <= EXCERPT:
        return line.strip()
    start = max(0, min(col - 1 - EXCERPT // 2, len(line) - EXCERPT))
    piece = line[start:start + EXCERPT].strip()
    return ("..." if start > 0 else "") + piece + ("..." if start + EXCERPT < len(line) else "")


def parse_items(parser: Lark, transformer: Transformer, terminal_words: Dict[str, str], source: str, text: str,
                language: str) -> list:
    """The transformed top-level items of text; every lark error becomes a PTXSyntaxError at its line and column."""
    try:
        return transformer.transform(parser.parse(text)).children
    except UnexpectedInput as error:
        raise syntax_error(parser, terminal_words, source, text, error) from None
    except VisitError as error:
        if isinstance(error.orig_exc, TokenError):
            raise PTXSyntaxError(source, error.orig_exc.line, error.orig_exc.col, str(error.orig_exc)) from None
        raise PTXSyntaxError(source, 1, 1, f"cannot read {language}: {error.orig_exc}") from None
    except RecursionError:
        raise PTXSyntaxError(source, 1, 1, f"{language} nests too deeply") from None


def parse(text: str, source: str = "<ptx>") -> S.Module:
    """Parse PTX text into a syntax tree; raise PTXSyntaxError (file:line:col) on bad input."""
    if text.startswith("\ufeff"):  # a byte-order mark some editors write first
        text = text[1:]
    items = parse_items(_parser(), _ToSyntax(), _TERMINAL_WORDS, source, text, "PTX")
    version = None
    target: tuple = ()
    address_size = 64
    variables: List[S.VarDecl] = []
    functions: List[S.Function] = []
    files = []
    strings = []
    for item in items:
        if item is None:
            continue
        if isinstance(item, list):
            variables.extend(item)
        elif isinstance(item, S.Function):
            functions.append(item)
        elif item[0] == "version":
            version = item[1]
        elif item[0] == "target":
            target = item[1]
        elif item[0] == "address_size":
            address_size = item[1]
        elif item[0] == "file":
            files.append(item[1])
        elif item[0] == "strings":
            strings.extend(item[1])
    if address_size != 64:
        line, col = next(((number, text_line.index(".address_size") + 1)
                          for number, text_line in enumerate(text.splitlines(), 1) if ".address_size" in text_line),
                         (1, 1))
        raise PTXSyntaxError(source, line, col, f".address_size {address_size}: gpuemu runs 64-bit PTX only")
    defined = set()
    for function in functions:
        if function.body is not None:
            if function.name in defined:
                raise PTXSyntaxError(source, function.pos.line, function.pos.col,
                                     f"duplicate definition of function '{function.name}'")
            defined.add(function.name)
    return S.Module(source, version, target, address_size, tuple(variables), tuple(functions),
                    tuple(files), tuple(text.splitlines()), tuple(strings))


def _debug_strings(tokens) -> List[Tuple[str, str]]:
    """(label, string) of each labelled NUL-terminated string of a .debug_str section's .b8 bytes."""
    strings: List[Tuple[str, str]] = []
    label, data = None, bytearray()
    for token in tokens:
        if token.type == "LABEL":
            label, data = str(token)[:-1], bytearray()
        elif token.type == "INT" and label is not None:
            value = _int(token)
            if value == 0:
                strings.append((label, data.decode("utf-8", errors="replace")))
                label = None
            elif 0 < value < 256:
                data.append(value)
    return strings

