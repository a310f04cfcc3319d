"""The launch under the debugger now lives in the debugger's core (emulator.observers.debugger.control)."""
from emulator.observers.debugger.control import (Abandon, Breakpoint, Engine, Plan, Stop, Watchpoint,  # noqa: F401
                                                 WatchHit, contains, watch_mask)
