"""Debugger expressions now live in the debugger's core (emulator.observers.debugger.expr)."""
from emulator.observers.debugger.expr import (Context, DebugError, evaluate, format_lanes,  # noqa: F401
                                              format_scalar, parse_expression, parse_format, raw_bits)
