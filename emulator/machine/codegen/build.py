"""Compiling generated C into a Python extension through cffi, and keeping it: in this process by source hash, and on
disk in the user's private signed cache (emulator.base.cache).

Nothing is loaded from a place another user could write: a cached module's bytes are read only when their HMAC
verifies under the user's key, then written into a fresh private directory (mkdtemp, 0700) and loaded from there.
With GPUEMU_NO_CACHE=1, or when the cache directory is not private, the module is compiled in such a private
temporary directory and loaded from it, and nothing is stored.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.machinery
import importlib.util
import io
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from typing import Dict, Optional

from cffi import FFI

from emulator.base.cache import Cache, digest
from emulator.machine.codegen.emit import CONTEXT

#: exact IEEE arithmetic: no fast-math, no contraction of a*b+c into an fma, wrapping signed integers; -O1 because -O2
#: ran matmul's generated code about 5 % faster at twice the compile time
COMPILE_ARGS = ("-O1", "-fPIC", "-fno-fast-math", "-ffp-contract=off", "-fno-strict-aliasing", "-fwrapv",
                "-fno-math-errno")
UNIT_SIGNATURE = "int64_t {name}(int64_t, int64_t, const int64_t *, int64_t, void **, void **, gx_context *);"
LOOP_SIGNATURE = ("int64_t {name}(int64_t *, int64_t, int64_t, int64_t, int64_t, void **, void **, gx_context *, "
                  "int64_t *, int64_t *, int64_t, void *, int64_t, int64_t, void *, int64_t);")

_LOADED: Dict[str, object] = {}
_CACHE = Cache("codegen")


class CompileError(RuntimeError):
    """The C compiler refused generated code or is missing."""


@functools.lru_cache(maxsize=None)
def compiler() -> Optional[str]:
    """The C compiler to use, or None when there is none (or no Python headers to build an extension with); looked
    up once per process (CC or PATH changed later are not seen)."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    program = shutil.which(cc.split()[0]) or shutil.which("gcc") or shutil.which("cc")
    include = sysconfig.get_paths().get("include")
    if program is None or not include or not os.path.exists(os.path.join(include, "Python.h")):
        return None
    return program


def _machine_args() -> tuple:
    """-mavx2 -mfma where this CPU has them (gcc then fuses fmaf into one instruction, bit-identical to libm's)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return ()
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            for line in info:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return ("-mavx2", "-mfma") if {"avx2", "fma"} <= flags else ()
    except OSError:
        return ()
    return ()


def build_module(source: str, unit_names, loop_names=(), *, cached_only: bool = False) -> Optional[tuple]:
    """(ffi, lib, seconds spent compiling — 0.0 when it came from a cache) of the generated source; with cached_only,
    None unless this process or the disk cache already has it."""
    args = COMPILE_ARGS + _machine_args()
    import cffi
    key = digest(source, " ".join(args), cffi.__version__, sys.version, sysconfig.get_config_var("EXT_SUFFIX") or "")
    module_name = f"_gpuemu_gen_{key[:32]}"
    if key in _LOADED:
        ffi, lib = _LOADED[key]
        return ffi, lib, 0.0
    ffi = FFI()
    ffi.cdef(CONTEXT + "\n".join(UNIT_SIGNATURE.format(name=name) for name in unit_names) + "\n"
             + "\n".join(LOOP_SIGNATURE.format(name=name) for name in loop_names))
    ffi.set_source(module_name, source)
    started = time.perf_counter()
    seconds = 0.0
    with tempfile.TemporaryDirectory(prefix="gpuemu-gen-") as private:
        path = os.path.join(private, module_name + (importlib.machinery.EXTENSION_SUFFIXES[0]))
        payload = _CACHE.load(key)
        if payload is None and cached_only:
            return None
        if payload is not None:
            with open(path, "wb") as stream:
                stream.write(payload)
        else:
            _compile(ffi, private, path, args)
            seconds = time.perf_counter() - started
            with open(path, "rb") as stream:
                _CACHE.store(key, stream.read())
        module = _load(module_name, path)
    _LOADED[key] = (module.ffi, module.lib)
    return module.ffi, module.lib, seconds


def _compile(ffi: FFI, directory: str, target: str, args) -> None:
    program = compiler()
    if program is None:
        raise CompileError("no C compiler (or no Python headers) to build the compiled engine with")
    c_file = os.path.join(directory, "generated.c")
    with contextlib.redirect_stdout(io.StringIO()):
        ffi.emit_c_code(c_file)
    include = sysconfig.get_paths()["include"]
    command = [program, *args, "-shared", "-I", include, c_file, "-o", target, "-lm"]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        errors = [line for line in result.stderr.splitlines() if "error" in line] or result.stderr.splitlines()
        first = (errors or ["(no message)"])[0]
        raise CompileError(f"the C compiler refused the generated code: {first}")


def _load(module_name: str, path: str):
    loader = importlib.machinery.ExtensionFileLoader(module_name, path)
    spec = importlib.util.spec_from_file_location(module_name, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module
