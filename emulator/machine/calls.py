"""Calls: .func calls (direct, through a register, recursive) and returns with parameters in local memory, and the
built-ins (printf, assert, malloc)."""
from __future__ import annotations

import numpy as np

from emulator import ir
from emulator.machine.lanes import count_of, lanes_of, subselect
from emulator.machine.operands import reader
from emulator.machine.printf import format_printf, read_c_string
from emulator.machine.stops import AssertFailure, IllegalInstruction, MemoryFault
from emulator.memory import DeviceFault


def _piece(remaining: int, address: int) -> int:
    """The widest of 8, 4 or 1 bytes that fits the rest of a parameter and its address's alignment."""
    for width in (8, 4):
        if remaining >= width and address % width == 0:
            return width
    return 1


#: CUDA's default per-thread stack (cudaLimitStackSize); a launch may set another (LaunchConfig.stack_bytes)
DEFAULT_STACK_BYTES = 1024
#: the least a call of a recursive function takes from the stack (return address and saved registers)
CALL_OVERHEAD_BYTES = 16


def stack_window_bytes(program: ir.Program, stack_bytes: int) -> int:
    """Local memory per thread beyond the program's fixed variables for the frames of its recursive functions:
    as many of the largest frame as the stack limit allows calls."""
    frames = [info for info in program.functions.values() if info.frame_bytes is not None]
    if not frames:
        return 0
    largest = max(info.frame_bytes for info in frames)
    cheapest = min(info.stack_cost for info in frames)
    return (stack_bytes // max(cheapest, 1) + 1) * largest + 16


#: the arguments a built-in reads: vprintf(format, argument buffer); __assertfail(message, file, line, ...)
BUILTIN_ARGUMENTS = {"vprintf": 2, "__assertfail": 3}


class Calls:
    """call/ret between .func functions (a per-thread return stack, parameters copied through local memory)
    and the built-in functions PTX calls: vprintf, __assertfail, malloc and free.

    A call through a register (`call (r), %rd, (args), prototype;`) finds its function by address, lane by lane.
    The variables of a recursive function (FunctionInfo.frame_bytes) live in a frame per call: above the fixed
    variables, at the address in the hidden frame register, and each call takes its stack_cost from the
    thread's stack limit; a call that would exceed it stops the launch as the H100 does, with an illegal
    address."""

    def __init__(self, batch):
        self.batch = batch
        program = batch.program
        #: call sites by id, for the return path to copy results back, and the function each site is in
        self.sites = {}
        self.site_callers = {}
        self.functions_by_address = {symbol.address: name for name, symbol in program.symbols.items()
                                     if symbol.space == "func" and name in program.functions}
        self.frame_register = next((reg for reg in program.registers if reg.name == ir.FRAME_REGISTER), None)
        self.stack_limit = getattr(batch.config, "stack_bytes", DEFAULT_STACK_BYTES)
        self.stack_base = (program.local_bytes + 15) // 16 * 16
        self.most_registers = max((len(info.registers) for info in program.functions.values()), default=0)

    def bind(self, instr: ir.Instr):
        batch = self.batch
        site: ir.CallSite = instr.operands[0]
        guard = batch.guard_reader(instr)
        if site.callee in ("vprintf", "__assertfail", "malloc", "free"):
            least = BUILTIN_ARGUMENTS.get(site.callee, 0)
            if len(site.arguments) < least:
                raise batch.lowering_error(instr, f"{site.callee} takes {least} arguments, not {len(site.arguments)}")
            builtin = {"vprintf": self._vprintf, "__assertfail": self._assertfail,
                       "malloc": self._malloc, "free": self._free}[site.callee]

            def call_builtin(pc, sel):
                active = sel if guard is None else subselect(sel, guard(sel))
                if count_of(active, batch.n):
                    builtin(instr, site, active)
                return pc + 1
            return call_builtin
        site_id = id(site)
        self.sites[site_id] = site
        self.site_callers[site_id] = instr.function
        read_target = reader(batch, site.target, "u64") if site.target is not None else None

        def call_function(pc, sel):
            calling = batch.guarded(guard, pc, sel)
            if calling is None:
                return None
            lanes = lanes_of(calling, batch.n)
            if read_target is None:
                groups = [(site.callee, lanes)]
            else:
                groups = self._targets(instr, lanes, np.broadcast_to(read_target(calling), lanes.shape))
            entries = []
            for callee, group in groups:
                self._push(instr, site, site_id, self.batch.program.functions[callee], pc, group)
                entries.append((self.batch.program.functions[callee].entry_pc, group))
            if len(entries) == 1 and calling is sel:
                return entries[0][0]
            for entry, group in entries:
                batch.rpc[group] = entry
            return None
        return call_function

    def _targets(self, instr: ir.Instr, lanes, addresses):
        """(function, lanes) for each function the lanes' addresses name; an address that names none stops the
        launch (the H100 stops too: the call jumps into no code)."""
        groups = []
        for address in np.unique(addresses):
            name = self.functions_by_address.get(int(address))
            group = lanes[addresses == address]
            if name is None:
                raise IllegalInstruction(instr, f"calls address 0x{int(address):x}, which is no function",
                                         self.batch.place(int(group[0])))
            groups.append((name, group))
        return groups

    def _ensure_stack(self, depth_needed: int) -> None:
        batch = self.batch
        if batch.depth is None:
            capacity = max(len(batch.program.functions) + 1, 8)
            batch.depth = np.zeros(batch.n, dtype=np.int32)
            batch.stack_pc = np.zeros((capacity, batch.n), dtype=np.int32)
            batch.stack_site = np.zeros((capacity, batch.n), dtype=np.int64)
            if self.frame_register is not None:
                self.top = np.full(batch.n, self.stack_base, dtype=np.uint64)
                self.used = np.zeros(batch.n, dtype=np.int64)
                self.saved = np.zeros((capacity, 3, batch.n), dtype=np.uint64)
                self.saved_registers = np.zeros((capacity, self.most_registers, batch.n), dtype=np.uint64)
        capacity = batch.stack_pc.shape[0]
        if depth_needed >= capacity:
            grown = max(depth_needed + 1, 2 * capacity)
            batch.stack_pc = np.concatenate([batch.stack_pc, np.zeros((grown - capacity, batch.n), np.int32)])
            batch.stack_site = np.concatenate([batch.stack_site, np.zeros((grown - capacity, batch.n), np.int64)])
            if self.frame_register is not None:
                self.saved = np.concatenate([self.saved, np.zeros((grown - capacity, 3, batch.n), np.uint64)])
                self.saved_registers = np.concatenate(
                    [self.saved_registers, np.zeros((grown - capacity, self.most_registers, batch.n), np.uint64)])

    def _frames(self, function: str, lanes):
        """Each lane's frame address for the variables of `function` (0 for a function without a frame)."""
        info = self.batch.program.functions.get(function)
        if info is None or info.frame_bytes is None:
            return np.zeros(len(lanes), dtype=np.uint64)
        return self.batch.regs[self.frame_register.index][lanes].astype(np.uint64)

    def _push(self, instr: ir.Instr, site: ir.CallSite, site_id: int, callee: ir.FunctionInfo, pc: int, lanes) -> None:
        batch = self.batch
        self._ensure_stack(0)
        self._ensure_stack(int(batch.depth[lanes].max()) if len(lanes) else 0)
        depth = batch.depth[lanes]
        batch.stack_pc[depth, lanes] = pc + 1
        batch.stack_site[depth, lanes] = site_id
        batch.depth[lanes] = depth + 1
        values = [self._read(symbol, self._frames(instr.function, lanes), lanes) for symbol in site.arguments]
        if self.frame_register is not None:
            frames = batch.regs[self.frame_register.index]
            self.saved[depth, 0, lanes] = frames[lanes]
            self.saved[depth, 1, lanes] = self.top[lanes]
            self.saved[depth, 2, lanes] = self.used[lanes].astype(np.uint64)
            if callee.frame_bytes is not None:
                used = self.used[lanes] + callee.stack_cost
                over = np.flatnonzero(used > self.stack_limit)
                if over.size:
                    self._overflow(instr, callee, int(lanes[over[0]]), int(used[over[0]]))
                start = (self.top[lanes] + np.uint64(15)) // np.uint64(16) * np.uint64(16)
                frames[lanes] = start
                self.top[lanes] = start + np.uint64(callee.frame_bytes)
                self.used[lanes] = used
                for slot, index in enumerate(callee.registers):
                    self.saved_registers[depth, slot, lanes] = batch.regs[index][lanes].astype(np.uint64)
        callee_frames = self._frames(callee.name, lanes)
        for value, target in zip(values, callee.params):
            self._write(target, callee_frames, lanes, value)

    def _overflow(self, instr: ir.Instr, callee: ir.FunctionInfo, thread: int, needed: int) -> None:
        detail = (f"Stack overflow: calling {callee.name} needs {needed} bytes of stack, more than the "
                  f"{self.stack_limit}-byte limit per thread (cudaLimitStackSize)")
        address = int(self.top[thread]) + callee.frame_bytes
        fault = DeviceFault("stack_overflow", "local", "store", callee.stack_cost, address, 0, detail)
        raise MemoryFault(instr, fault, self.batch.place(thread))

    def _read(self, symbol: ir.SymbolInfo, frames, lanes) -> list:
        """A .param variable's bytes for each lane, in the widest aligned pieces."""
        pieces = []
        offset = 0
        base = np.uint64(symbol.address - ir.FUNC_PARAM_BASE) + frames
        while offset < symbol.size:
            width = _piece(symbol.size - offset, symbol.address + offset)
            pieces.append((offset, width, self.batch.memory.load("local", base + np.uint64(offset), lanes, width)))
            offset += width
        return pieces

    def _write(self, symbol: ir.SymbolInfo, frames, lanes, pieces: list) -> None:
        base = np.uint64(symbol.address - ir.FUNC_PARAM_BASE) + frames
        for offset, width, data in pieces:
            if offset + width <= symbol.size:
                self.batch.memory.store("local", base + np.uint64(offset), lanes, width, data)

    def return_from(self, pc: int, sel, guard):
        batch = self.batch
        if guard is not None:
            leaving = guard(sel)
            if not np.all(leaving):
                batch.rpc[lanes_of(subselect(sel, ~leaving), batch.n)] = pc + 1
                sel = subselect(sel, leaving)
                if count_of(sel, batch.n) == 0:
                    return None
                result = self.return_from(pc, sel, None)
                if result is not None:
                    batch.rpc[lanes_of(result[1], batch.n)] = result[0]
                return None
        if batch.depth is None or np.any(batch.depth[sel] == 0):
            batch.exit_threads(sel, None)
            return None
        lanes = lanes_of(sel, batch.n)
        depth = batch.depth[sel] - 1
        batch.depth[sel] = depth
        targets = batch.stack_pc[depth, lanes]
        sites = batch.stack_site[depth, lanes]
        callee = batch.program.functions[batch.program.instrs[pc].function]
        returned = [self._read(symbol, self._frames(callee.name, lanes), lanes) for symbol in callee.returns]
        if self.frame_register is not None:
            for slot, index in enumerate(callee.registers):
                storage = batch.regs[index]
                storage[lanes] = self.saved_registers[depth, slot, lanes].astype(storage.dtype)
            batch.regs[self.frame_register.index][lanes] = self.saved[depth, 0, lanes]
            self.top[lanes] = self.saved[depth, 1, lanes]
            self.used[lanes] = self.saved[depth, 2, lanes].astype(np.int64)
        for site_id in np.unique(sites):
            site = self.sites[int(site_id)]
            chosen = sites == site_id
            group = lanes[chosen]
            caller_frames = self._frames(self.site_callers[int(site_id)], group)
            for pieces, target in zip(returned, site.returns):
                self._write(target, caller_frames, group, [(o, w, data[chosen]) for o, w, data in pieces])
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
