"""`gpuemu libdir`: the directory of gpuemu's libcudart/libcuda, built at install time or on first use into a
directory only this user can write, keyed by everything baked into the libraries."""
from __future__ import annotations

import argparse
import hashlib
import os
import stat
import sys
import tempfile
from typing import Dict, Optional, Tuple

from ..base import cache
from ..errors import GpuemuError, UsageError
from . import builder
from .libraries import LIBRARIES

PACKAGE_LIBS = os.path.join(builder.HERE, "lib")
INPUTS = ("builder.py", "libraries.py", "cuda_types.h", "runtime.h", "driver.h", "ocelot.h", "unsupported.h")


def build_key() -> str:
    """A hash of what the built libraries depend on: their C sources and the Python they start."""
    digest = hashlib.sha256()
    digest.update(sys.executable.encode())
    digest.update(builder.HERE.encode())
    exports = os.listdir(os.path.join(builder.HERE, "exports"))
    names = list(INPUTS) + sorted(os.path.join("exports", name) for name in exports)
    for name in names:
        path = os.path.join(builder.HERE, name)
        if os.path.exists(path):
            with open(path, "rb") as handle:
                digest.update(name.encode() + b"\0" + handle.read())
    return digest.hexdigest()[:16]


def build_all(directory: str, *, verbose: bool = False) -> Dict[str, str]:
    """Build every library into directory; name → path, or name → the reason it could not be built."""
    results = {}
    for library in LIBRARIES:
        try:
            results[library.filename] = builder.build(library, directory, verbose=verbose)
        except Exception as error:  # a missing compiler or header: the other libraries may still build
            first_line = str(error).splitlines()[0] if str(error) else ""
            results[library.filename] = f"not built: {type(error).__name__}: {first_line}"
    return results


def cache_root() -> str:
    """libs/ in gpuemu's cache ($GPUEMU_CACHE_DIR, else $XDG_CACHE_HOME/gpuemu or ~/.cache/gpuemu); with
    GPUEMU_NO_CACHE, a new private directory of this process's own, which nothing reads again."""
    global _private_root
    root = cache.cache_root()
    if root is not None:
        os.makedirs(root, mode=0o700, exist_ok=True)
        return os.path.join(str(root), "libs")
    if _private_root is None:
        _private_root = tempfile.mkdtemp(prefix="gpuemu-libs-")
    return _private_root


_private_root: Optional[str] = None


def unsafe_reason(path: str) -> Optional[str]:
    """Why another user could change what the loader finds at path (None when nobody else can)."""
    me = os.getuid()
    current = os.path.abspath(path)
    while True:
        try:
            info = os.lstat(current)
        except OSError as error:
            return f"{current}: {error.strerror}"
        if stat.S_ISLNK(info.st_mode):
            return f"{current} is a symbolic link"
        if info.st_uid not in (me, 0):
            return f"{current} belongs to another user (uid {info.st_uid})"
        sticky = info.st_mode & stat.S_ISVTX
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not (sticky and current != os.path.abspath(path)):
            return f"{current} is writable by other users"
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _complete(directory: str) -> bool:
    return all(os.path.exists(os.path.join(directory, library.filename)) for library in LIBRARIES)


def _failures(directory: str) -> Dict[str, str]:
    path = os.path.join(directory, "NOT-BUILT")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as handle:
        return dict(line.rstrip("\n").split("\t", 1) for line in handle if "\t" in line)


def build_into(directory: str, *, verbose: bool = False) -> Dict[str, str]:
    os.makedirs(directory, mode=0o700, exist_ok=True)
    results = build_all(directory, verbose=verbose)
    failed = {name: reason for name, reason in results.items() if not os.path.isabs(reason)}
    with open(os.path.join(directory, "NOT-BUILT"), "w", encoding="utf-8") as handle:
        for name, reason in failed.items():
            handle.write(f"{name}\t{reason}\n")
    return failed


def library_directory(*, build: bool = True) -> Tuple[str, Dict[str, str]]:
    """(directory, {library: why it is missing}); builds into the user's cache when no safe build exists."""
    key = build_key()
    for directory in (os.path.join(PACKAGE_LIBS, key), os.path.join(cache_root(), key)):
        if (_complete(directory) or _failures(directory)) and unsafe_reason(directory) is None:
            return directory, _failures(directory)
    if not build:
        raise UsageError("gpuemu's CUDA libraries are not built yet: run `gpuemu libdir` once")
    root = cache_root()
    os.makedirs(root, mode=0o700, exist_ok=True)
    problem = unsafe_reason(root)
    if problem:
        raise UsageError(f"will not build the CUDA libraries in {root}: {problem}")
    directory = os.path.join(root, key)
    return directory, build_into(directory)


def add_command(commands) -> None:
    parser = commands.add_parser("libdir", help="print the directory of gpuemu's libcudart.so.13 and libcuda.so.1 "
                                   "(LD_LIBRARY_PATH=$(gpuemu libdir) ./app runs a CUDA program on gpuemu)")
    parser.add_argument("--rebuild", action="store_true", help="build the libraries again")
    parser.set_defaults(handler=command_libdir)


def command_libdir(options: argparse.Namespace) -> int:
    if options.rebuild:
        directory = os.path.join(cache_root(), build_key())
        os.makedirs(cache_root(), mode=0o700, exist_ok=True)
        problem = unsafe_reason(cache_root())
        if problem:
            raise UsageError(f"will not build the CUDA libraries in {cache_root()}: {problem}")
        failed = build_into(directory)
    else:
        directory, failed = library_directory()
    for name, reason in failed.items():
        print(f"gpuemu: {name} {reason}", file=sys.stderr)
    if len(failed) == len(LIBRARIES):
        raise GpuemuError("no CUDA library could be built (the lines above say why)")
    print(directory)
    return 0
