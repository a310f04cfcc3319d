"""A SASS listing loaded as a module: its `Function :` entries as kernels, parameters from the mangled names,
__constant__ banks settable by number, launches with the listing's architecture and constant-bank layout."""
from __future__ import annotations

import re
from typing import Dict, List, Optional

import numpy as np

from emulator.base.errors import UsageError
from emulator.runtime.launch import (DEFAULT_BATCH_BYTES, DEFAULT_MAX_STEPS, SHARED_DEFAULT_LIMIT, Device, Kernel,
    Launch, LaunchStats, Module, dim3)
from emulator.machine.sass import BANK_BYTES  # importing executors registers the 'sass' op class with the machine
from emulator.frontend.sass.lower import SassProgram, lower_function
from emulator.frontend.sass.parse import parse_listing

#: constant banks c[0x0] .. c[0x11], as cuobjdump numbers them (sm_70 on; Fermi's 16 fit inside)
CONSTANT_BANKS = 18

_BANK_NAME = re.compile(r"^c\[?\s*(0x[0-9a-fA-F]+|\d+)\s*\]?(?:\[\s*(0x[0-9a-fA-F]+|\d+)\s*\])?$")


class SassLaunch(Launch):
    """A launch of SASS code. A listing does not say how much static shared memory its kernel declares,
    so a kernel that touches shared memory gets the 48 KB a CTA may use without opting in (or its dynamic
    size, if larger)."""

    def _check_configuration(self, max_dynamic_shared: Optional[int]) -> None:
        super()._check_configuration(max_dynamic_shared)
        if self.program.uses_shared:
            self.shared_bytes = max(self.shared_bytes, SHARED_DEFAULT_LIMIT)


class SassKernel(Kernel):
    """One `Function :` of a listing; launches run with the listing's architecture unless told otherwise."""

    def launch(self, grid, block, args, shared: int = 0, *, max_steps: int = DEFAULT_MAX_STEPS,
               batch_bytes: int = DEFAULT_BATCH_BYTES, arch=None, progress=None, **options) -> LaunchStats:
        program: SassProgram = self.program
        launch = SassLaunch(self, dim3(grid), dim3(block), shared,
                            arch=arch if arch is not None else program.arch.name, **options)
        return launch.run(list(args), max_steps=max_steps, batch_bytes=batch_bytes, progress=progress)


class SassModule(Module):
    """A cuobjdump -sass listing (one or more `Function :` sections) loaded into a device."""

    def __init__(self, text: str, source_name: str = "<sass>", device: Optional[Device] = None):
        self.source_name = "<sass>" if source_name == "<ptx>" else source_name
        self.listing = parse_listing(text, self.source_name)
        self.syntax = None
        self.device = device or Device()
        self.symbols = {}
        self.const_base = 0
        self.const_size = 0
        self.banks: Dict[int, np.ndarray] = {}
        self._programs: Dict[str, SassProgram] = {}

    @property
    def kernel_names(self) -> List[str]:
        return [function.name for function in self.listing.functions]

    def program(self, name: str) -> SassProgram:
        if name not in self._programs:
            function = next(f for f in self.listing.functions if f.name == name)
            self._programs[name] = lower_function(self.listing, function, self.source_name)
        return self._programs[name]

    def kernel(self, name: Optional[str] = None) -> SassKernel:
        return SassKernel(self, self.resolve_kernel(name))

    def global_address(self, name: str):
        raise UsageError(f"a SASS listing names no symbols: set constant bank 3 with c[0x3]=@file.npy, not '{name}'")

    def set_symbol(self, name: str, data: np.ndarray) -> None:
        """Fill constant bank N (name `c[0xN]`, `cN` or `c[0xN][offset]`) with data's bytes."""
        match = _BANK_NAME.match(name.strip())
        if match is None:
            self.global_address(name)
        bank = int(match.group(1), 0)
        offset = int(match.group(2), 0) if match.group(2) else 0
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        if not 0 < bank < CONSTANT_BANKS or offset + raw.size > BANK_BYTES:
            raise UsageError(f"{raw.size} bytes at {offset:#x} do not fit constant bank {bank} (banks 1 to "
                             f"{CONSTANT_BANKS - 1} hold {BANK_BYTES} bytes each; bank 0 belongs to the launch)")
        self.banks.setdefault(bank, np.zeros(BANK_BYTES, dtype=np.uint8))[offset:offset + raw.size] = raw
