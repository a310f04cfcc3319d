"""The one table of executor builders: an op class (isa's Family.op_class) → the function that binds an
instruction of that class to a batch. Builders register themselves with @builds where they are defined;
emulator.machine imports every module that defines one and checks that no op class is left without."""
from __future__ import annotations

from typing import Callable, Dict, Iterable, NamedTuple


class Builder(NamedTuple):
    build: Callable
    #: True when the builder applies the instruction's guard predicate itself (memory and warp-wide
    #: instructions, which must know the guarded-off lanes); else the machine wraps the executor
    guards_itself: bool


class RegistryError(Exception):
    """The builder table is inconsistent: an op class with two builders or none."""


BUILDERS: Dict[str, Builder] = {}


def builds(*op_classes: str, guards_itself: bool = False):
    """Register the decorated function as the builder of these op classes."""
    def register(function: Callable) -> Callable:
        for op_class in op_classes:
            if op_class in BUILDERS:
                raise RegistryError(f"op class '{op_class}' has two builders: {BUILDERS[op_class].build.__qualname__} "
                                    f"and {function.__qualname__}")
            BUILDERS[op_class] = Builder(function, guards_itself)
        return function
    return register


def check_complete(op_classes: Iterable[str]) -> None:
    """Every op class the instruction tables use has a builder."""
    missing = sorted(set(op_classes) - set(BUILDERS))
    if missing:
        raise RegistryError(f"no executor builder for op class{'es' if len(missing) > 1 else ''} "
                            f"{', '.join(missing)}")
