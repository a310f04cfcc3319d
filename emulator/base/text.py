"""Text from untrusted input made safe to print: control characters and lone surrogates shown escaped."""
from __future__ import annotations

import re

#: control characters, line separators, lone surrogates and the bidirectional overrides and isolates (which can make
#: a terminal show text in another order than it is)
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_CONTROL_BUT_NEWLINE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {0x0A: "\\n", 0x0D: "\\r"}


def _escape(match: "re.Match[str]") -> str:
    code = ord(match.group(0))
    if code in _NAMED:
        return _NAMED[code]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """text with every control character (ESC sequences, NUL, carriage returns, lone surrogates)
    written as an escape; tabs stay, and newlines too when keep_newlines (multi-line reports)."""
    return (_CONTROL_BUT_NEWLINE if keep_newlines else _CONTROL).sub(_escape, str(text))
