"""Parsed PTX kept on disk, so a kernel run again skips lark: keyed by the text, its name and the parser's own code."""
from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Optional

from grammars import GRAMMAR_DIR

from . import syntax as S

_PARSER_CODE = (GRAMMAR_DIR / "ptx.lark", Path(__file__).with_name("parse.py"), Path(S.__file__))


def cache_directory() -> Optional[Path]:
    """Where parsed modules live: $GPUEMU_CACHE_DIR, else $XDG_CACHE_HOME/gpuemu or ~/.cache/gpuemu; None when
    GPUEMU_NO_CACHE is set."""
    if os.environ.get("GPUEMU_NO_CACHE"):
        return None
    explicit = os.environ.get("GPUEMU_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpuemu"


def _key(text: str, source: str) -> str:
    digest = hashlib.sha256()
    for path in _PARSER_CODE:
        digest.update(path.read_bytes())
    digest.update(source.encode("utf-8", "surrogateescape") + b"\0")
    digest.update(text.encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def parse_cached(text: str, source: str = "<ptx>") -> S.Module:
    """The syntax tree of `text`, from the cache when this exact text was parsed before under this name."""
    directory = cache_directory()
    path = directory / "ptx" / f"{_key(text, source)}.pickle" if directory is not None else None
    if path is not None:
        try:
            with open(path, "rb") as stream:
                module = pickle.load(stream)
            if isinstance(module, S.Module):
                return module
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError):
            pass
    from .parse import parse
    module = parse(text, source)
    if path is not None:
        _store(path, module)
    return module


def _store(path: Path, module: S.Module) -> None:
    """Write atomically; a cache that cannot be written (read-only home, full disk) is simply not used."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as stream:
                pickle.dump(module, stream, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temp, path)
        finally:
            if os.path.exists(temp):
                os.unlink(temp)
    except (OSError, pickle.PicklingError, RecursionError):
        pass
