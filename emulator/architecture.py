"""gpuemu's layers, bottom up: which packages each holds and what it may import (tests/test_layers.py enforces it).

A module may import from layers of a lower rank and from its own layer's folder; front doors, at the
top, may import anything. `python tools/architecture.py` draws the import graph of the code from this."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple


@dataclass(frozen=True)
class Layer:
    name: str
    rank: int
    packages: Tuple[str, ...]
    role: str
    is_front_door: bool = False


#: every front door by name: a module at the package root that is not listed here belongs to no layer
FRONT_DOORS = ("emulator.__main__", "emulator.api", "emulator.architecture", "emulator.cli", "emulator.cudart",
               "emulator.debug", "emulator.errors", "emulator.launching", "emulator.numba", "emulator.ocelot",
               "emulator.pytest_plugin", "emulator.raw", "emulator.triton", "emulator.triton_backend")
#: the package itself (emulator/__init__.py), a front door by its exact name only
ROOT_PACKAGE = "emulator"

LAYERS: Tuple[Layer, ...] = (
    Layer("data", 0, ("grammars", "isa"),
          "grammar text; the instruction tables and every instruction's semantics as pure numpy functions"),
    Layer("base", 1, ("emulator.base",),
          "errors, text safe to print, the private signed cache, source files, files written whole"),
    Layer("ir", 2, ("emulator.ir",), "the lowered program every front end produces and the machine runs"),
    Layer("memory", 2, ("emulator.memory",), "address spaces, allocations, the C memory core and its numpy twin"),
    Layer("accel", 2, ("emulator.accel",),
          "compiled helpers: arithmetic isa's functions may use, lane scans and random turns for schedulers"),
    Layer("frontend", 3, ("emulator.frontend",), "readers of programs: PTX and SASS text to IR"),
    Layer("machine", 3, ("emulator.machine",),
          "warps, scheduling, barriers, calls; executors binding IR instructions to a batch's registers"),
    Layer("runtime", 4, ("emulator.runtime",), "devices, modules, kernels, launches, arguments"),
    Layer("observers", 5, ("emulator.observers",), "statistics, checkers, traces, profiles, the debugger's core"),
    Layer("front doors", 6, FRONT_DOORS, "command line, Python API, REPL debugger, pytest plugin, client adapters",
          is_front_door=True),
)


def layer_of(module: str) -> Optional[Layer]:
    """The layer a dotted module name belongs to (the longest package prefix wins); None outside gpuemu."""
    if module == ROOT_PACKAGE:
        return LAYERS[-1]
    best: Optional[Layer] = None
    best_length = -1
    for layer in LAYERS:
        for package in layer.packages:
            if (module == package or module.startswith(package + ".")) and len(package) > best_length:
                best, best_length = layer, len(package)
    return best
