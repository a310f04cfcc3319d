"""Parsed PTX kept on disk, so a kernel run again skips lark: keyed by the text, its name and the parser's own code.

Entries live in gpuemu's private, signed cache (emulator.base.cache): a file that this user's gpuemu did
not write is never unpickled."""
from __future__ import annotations

import pickle
from pathlib import Path

from emulator.base.cache import Cache, digest
from emulator.frontend.ptx import syntax as S
from grammars import GRAMMAR_DIR

_PARSER_CODE = (GRAMMAR_DIR / "ptx.lark", Path(__file__).with_name("parse.py"), Path(S.__file__))
_CACHE = Cache("ptx")


def parse_cached(text: str, source: str = "<ptx>") -> S.Module:
    """The syntax tree of `text`, from the cache when this exact text was parsed before under this name."""
    key = digest(*_PARSER_CODE, source, text)
    stored = _CACHE.load(key)
    if stored is not None:
        try:
            module = pickle.loads(stored)
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
            module = None
        if isinstance(module, S.Module):
            return module
    from emulator.frontend.ptx.parse import parse
    module = parse(text, source)
    try:
        _CACHE.store(key, pickle.dumps(module, protocol=pickle.HIGHEST_PROTOCOL))
    except (pickle.PicklingError, RecursionError):
        pass
    return module
