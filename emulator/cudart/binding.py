"""Binds a library's Python implementations to its cffi extern "Python" slots, with CUDA's error conventions."""
from __future__ import annotations

import importlib
import os
import sys
import threading
from typing import Callable, Dict

from ..errors import GpuemuError
from . import codes
from .codes import CudaError

_LIBRARIES: Dict[str, object] = {}
#: one API call at a time, whatever host thread makes it (re-entrant: a stream callback may call the API)
API_LOCK = threading.RLock()


class Implementations(dict):
    """name → (function, kind); kind 'error' (returns a CUDA error code), 'value' (returns its own result),
    'query' (an error code, but answered even while a sticky error stands)."""

    def error(self, function: Callable) -> Callable:
        self[function.__name__] = (function, "error")
        return function

    def query(self, function: Callable) -> Callable:
        self[function.__name__] = (function, "query")
        return function

    def value(self, function: Callable) -> Callable:
        self[function.__name__] = (function, "value")
        return function


def bind(ffi, lib, implementation: str, library_name: str) -> None:
    """Define every py_NAME of the library from the module's IMPLEMENTATIONS; called by the library's init code. The
    module gets ffi and lib through its attach, else as its globals ffi and lib."""
    from . import context
    module = importlib.import_module(implementation)
    _LIBRARIES[library_name] = lib
    if hasattr(module, "attach"):
        module.attach(ffi, lib)
    else:
        module.ffi, module.lib = ffi, lib

    @ffi.def_extern(name="py_gpuemu_start")
    def start(owns_python):
        if owns_python:
            context.use_c_streams(lambda to_stderr, text: _c_write(ffi, lib, to_stderr, text),
                                  lambda: lib.gpuemu_flush())
        try:
            context.get()
        except GpuemuError as error:  # a bad GPUEMU_CHECK or GPUEMU_DEVICE: stop, as gpuemu's command line does
            sys.stderr.write(f"gpuemu: error: {error}\n")
            lib.gpuemu_flush()
            os._exit(error.exit_status)
        return 1

    status, status_name, reason = (module.not_supported(library_name) if hasattr(module, "not_supported")
                                   else (codes.NOT_SUPPORTED, module.NOT_SUPPORTED_NAME, ""))

    @ffi.def_extern(name="py_gpuemu_missing")
    def missing(name):
        text = ffi.string(name).decode()
        state = context.get()
        if text not in state.reported_missing:
            state.reported_missing.add(text)
            state.say(f"{text} is not implemented by gpuemu's {library_name}: it returns {status_name} "
                      f"({status}){reason}")
        if status == codes.NOT_SUPPORTED:
            state.last_error = codes.NOT_SUPPORTED
        return status

    overrides = module.implementations_for(library_name) if hasattr(module, "implementations_for") else {}
    for name, (function, kind) in {**module.IMPLEMENTATIONS, **overrides}.items():
        ffi.def_extern(name="py_" + name)(_guarded(name, function, kind, module))


def _no_value(name: str) -> None:
    """What a failing function that returns a value (not a status) gives back, unless its module says otherwise."""
    return None


def _c_write(ffi, lib, to_stderr: int, text: str) -> None:
    data = text.encode("utf-8", "replace")
    lib.gpuemu_write(to_stderr, data, len(data))


def _guarded(name: str, function: Callable, kind: str, module) -> Callable:
    from . import context
    translate = getattr(module, "TRANSLATE", {})
    failure_value = getattr(module, "failure_value", _no_value)

    def call(*args):
        with API_LOCK:
            result = guarded(*args)
        return translate.get(result, result) if kind != "value" else result

    def guarded(*args):
        state = context.get()
        try:
            if kind == "error" and state.sticky:
                state.fault_seen = True
                return state.sticky
            result = function(*args)
        except CudaError as error:
            if error.message:
                state.say(f"{name}: {error.message}")
            state.last_error = error.code
            return error.code if kind != "value" else failure_value(name)
        except GpuemuError as error:
            state.say(f"{name}: {error}")
            state.last_error = codes.UNKNOWN
            return codes.UNKNOWN if kind != "value" else failure_value(name)
        except Exception as error:  # a gpuemu bug: one line, never a crash of the program
            state.say(f"internal error in {name}: {type(error).__name__}: {error}")
            state.last_error = codes.UNKNOWN
            return codes.UNKNOWN if kind != "value" else failure_value(name)
        if kind == "value":
            return result
        code = result or 0
        if code and kind == "error":
            state.last_error = code
        return code
    call.__name__ = name
    return call
