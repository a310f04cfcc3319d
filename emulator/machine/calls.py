"""Calls: .func calls and returns with parameters in local memory, and the built-ins (printf, assert, malloc)."""
from __future__ import annotations

import numpy as np

from emulator import ir
from emulator.machine.lanes import count_of, lanes_of, subselect, threads_of
from emulator.machine.printf import format_printf, read_c_string
from emulator.machine.stops import AssertFailure, MemoryFault
from emulator.memory import DeviceFault


class Calls:
    """call/ret between .func functions (a per-thread return stack, parameters copied through local memory)
    and the built-in functions PTX calls: vprintf, __assertfail, malloc and free."""

    def __init__(self, batch):
        self.batch = batch
        #: call sites by id, for the return path to copy results back
        self.sites = {}

    def bind(self, instr: ir.Instr):
        batch = self.batch
        site: ir.CallSite = instr.operands[0]
        guard = batch.guard_reader(instr)
        if site.callee in ("vprintf", "__assertfail", "malloc", "free"):
            builtin = {"vprintf": self._vprintf, "__assertfail": self._assertfail,
                       "malloc": self._malloc, "free": self._free}[site.callee]

            def call_builtin(pc, sel):
                active = sel if guard is None else subselect(sel, guard(sel))
                if count_of(active, batch.n):
                    builtin(instr, site, active)
                return pc + 1
            return call_builtin
        callee = batch.program.functions[site.callee]
        max_depth = len(batch.program.functions) + 1
        site_id = id(site)
        self.sites[site_id] = site

        def call_function(pc, sel):
            if guard is not None and not np.all(guard(sel)):
                raise batch.lowering_error(instr, "predicated calls are not supported")
            if batch.depth is None:
                batch.depth = np.zeros(batch.n, dtype=np.int32)
                batch.stack_pc = np.zeros((max_depth, batch.n), dtype=np.int32)
                batch.stack_site = np.zeros((max_depth, batch.n), dtype=np.int64)
            depth = batch.depth[sel]
            if np.any(depth >= max_depth):
                raise batch.lowering_error(instr, "call stack overflow")
            lanes = lanes_of(sel, batch.n)
            batch.stack_pc[depth, lanes] = pc + 1
            batch.stack_site[depth, lanes] = site_id
            batch.depth[sel] = depth + 1
            for source, target in zip(site.arguments, callee.params):
                self._copy_param(source, target, sel)
            return callee.entry_pc
        return call_function

    def _copy_param(self, source: ir.SymbolInfo, target: ir.SymbolInfo, sel) -> None:
        batch = self.batch
        size = min(source.size, target.size)
        threads = threads_of(sel)
        n = count_of(sel, batch.n)
        offset = 0
        while offset < size:
            width = 8 if size - offset >= 8 and (source.address + offset) % 8 == 0 and (target.address + offset) % 8 == 0 \
                else 4 if size - offset >= 4 and (source.address + offset) % 4 == 0 and (target.address + offset) % 4 == 0 \
                else 1
            src = np.full(n, source.address - ir.FUNC_PARAM_BASE + offset, dtype=np.uint64)
            dst = np.full(n, target.address - ir.FUNC_PARAM_BASE + offset, dtype=np.uint64)
            data = batch.memory.load("local", src, threads, width)
            batch.memory.store("local", dst, threads, width, data)
            offset += width

    def return_from(self, pc: int, sel, guard):
        batch = self.batch
        if guard is not None:
            leaving = guard(sel)
            if not np.all(leaving):
                raise batch.lowering_error(batch.program.instrs[pc], "predicated ret is not supported")
        if batch.depth is None or np.any(batch.depth[sel] == 0):
            batch.exit_threads(sel, None)
            return None
        lanes = lanes_of(sel, batch.n)
        depth = batch.depth[sel] - 1
        batch.depth[sel] = depth
        targets = batch.stack_pc[depth, lanes]
        sites = batch.stack_site[depth, lanes]
        callee = batch.program.functions[batch.program.instrs[pc].function]
        for site_id in np.unique(sites):
            site = self.sites[int(site_id)]
            group = lanes[sites == site_id]
            for source, target in zip(callee.returns, site.returns):
                self._copy_param(source, target, group)
        if np.all(targets == targets[0]):
            return int(targets[0]), sel
        batch.rpc[lanes] = targets
        return None

    def _vprintf(self, instr: ir.Instr, site: ir.CallSite, sel) -> None:
        batch = self.batch
        lanes = lanes_of(sel, batch.n)
        n = len(lanes)
        args = []
        for symbol in site.arguments[:2]:
            raw = batch.memory.load("local", np.full(n, symbol.address - ir.FUNC_PARAM_BASE, dtype=np.uint64),
                                   lanes, 8)
            args.append(raw.view(np.uint64).reshape(n))
        for i, thread in enumerate(lanes):
            try:
                text = format_printf(batch.memory, int(args[0][i]), int(args[1][i]), int(thread))
            except DeviceFault as fault:
                raise MemoryFault(instr, fault, batch.place(thread)) from None
            batch.config.write_stdout(text)
        for symbol in site.returns[:1]:
            batch.memory.store("local", np.full(n, symbol.address - ir.FUNC_PARAM_BASE, dtype=np.uint64), lanes, 4,
                              np.zeros(n, dtype=np.int32))

    def _assertfail(self, instr: ir.Instr, site: ir.CallSite, sel) -> None:
        """__assertfail(message, file, line, function, char size): stop with the first failing thread's texts."""
        batch = self.batch
        thread = int(lanes_of(sel, batch.n)[0])
        threads = np.array([thread], dtype=np.int64)
        values = []
        for symbol in site.arguments[:3]:
            width = 8 if symbol.size >= 8 else 4
            raw = batch.memory.load("local", np.array([symbol.address - ir.FUNC_PARAM_BASE], dtype=np.uint64),
                                   threads, width)
            values.append(int(raw.view(np.uint64 if width == 8 else np.uint32)[0, 0]))
        try:
            texts = [read_c_string(batch.memory, address, thread).decode(errors="replace") if address else "?"
                     for address in values[:2]]
        except DeviceFault as fault:
            raise MemoryFault(instr, fault, batch.place(thread)) from None
        texts += ["?"] * (2 - len(texts))
        raise AssertFailure(texts[0], texts[1], values[2] if len(values) > 2 else 0, batch.place(thread))

    def _malloc(self, instr, site, sel) -> None:
        batch = self.batch
        raise batch.lowering_error(instr, "device-side malloc is not supported")

    def _free(self, instr, site, sel) -> None:
        batch = self.batch
        raise batch.lowering_error(instr, "device-side free is not supported")
