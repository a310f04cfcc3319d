"""The SIMT machine: a batch of CTAs with one numpy array per register, per-thread pcs, lowest-pc-first
grouping of a warp's lanes, barriers, calls, and executors that bind each IR instruction to the batch.

It runs what the IR says and calls isa's semantics functions and the memory core; it never reaches up to
the runtime that started it: a launch hands it its configuration (config.py), and it reports the end of
a launch (a fault, a deadlock, the step limit) by raising a stop with a snapshot (stops.py) that the
runtime renders. Every module that defines executor builders is imported here, once, and the builder
table (registry.py) is checked against the instruction tables."""
from emulator.ir.sass import SASS_OP_CLASS as _SASS_OP_CLASS
from emulator.machine import executors, sass, tensor, wgmma  # each defines builders with @builds
from emulator.machine.registry import check_complete
from isa.table import FAMILIES as _FAMILIES
from isa.table import SCHEDULER_CLASSES

check_complete({family.op_class for family in _FAMILIES} - SCHEDULER_CLASSES | {_SASS_OP_CLASS})

__all__ = ["executors", "sass", "tensor", "wgmma"]
