"""Where a launch's state spaces sit for the memory core: [symbol+offset], [address] and [register+offset]
operands resolved to (space, address), the generic-space bases cvta adds, and isspacep's ranges."""
from __future__ import annotations

from typing import Optional

import numpy as np

from emulator import ir
from emulator.machine.config import LaunchConfig
from emulator.machine.lanes import threads_of
from emulator.memory import LOCAL_WINDOW, SHARED_WINDOW


class Addressing:
    """The address arithmetic of one launch's spaces (constant bank and parameter buffer addresses from its
    configuration; shared and local windows of the generic space; .func parameters in local memory)."""

    def __init__(self, config: LaunchConfig):
        self.config = config

    def symbol_address(self, symbol: ir.SymbolInfo) -> int:
        return symbol.address

    def space_base(self, space: Optional[str]) -> int:
        return {"shared": SHARED_WINDOW, "local": LOCAL_WINDOW, "const": self.config.const_base,
                "param": self.config.param_base}.get(space, 0)

    def symbol_access(self, symbol: ir.SymbolInfo, space: str, offset: int):
        """(address, space for the memory core) of [symbol+offset]."""
        address = symbol.address + offset
        if symbol.space == "const":
            return self.config.const_base + address, "global"
        if symbol.space == "param":
            return self.config.param_base + address, "global"
        if symbol.space == "fparam":
            return address - ir.FUNC_PARAM_BASE, "local"
        if symbol.space in ("shared", "local", "global"):
            return address, symbol.space
        return address, space

    def absolute_access(self, address: int, space: str):
        if space == "const":
            return self.config.const_base + address, "global"
        if space == "param":
            return self.config.param_base + address, "global"
        return address, space

    def register_access(self, space: str):
        """(space, translate) for [reg+offset] addresses in a state space."""
        if space == "const":
            base = np.uint64(self.config.const_base)
            return "global", lambda addresses, sel: ("global", addresses + base, threads_of(sel))
        if space == "param":
            base = np.uint64(self.config.param_base)
            func_base = np.uint64(ir.FUNC_PARAM_BASE)

            def translate(addresses, sel):
                if np.all(addresses >= func_base):
                    return "local", addresses - func_base, threads_of(sel)
                return "global", addresses + base, threads_of(sel)
            return "param", translate
        return space, None

    def in_const(self, addresses):
        start, size = self.config.const_base, self.config.const_size
        return (addresses >= np.uint64(start)) & (addresses < np.uint64(start + size))

    def in_param(self, addresses):
        start, size = self.config.param_base, max(self.config.param_bytes, 1)
        return (addresses >= np.uint64(start)) & (addresses < np.uint64(start + size))
