"""The compiled engine: straight-line stretches of a program run as generated C (emit.py, build.py) in the batch's fast
path, in place of the per-instruction numpy executors; everything else stays with the interpreter.

A batch keeps its scheduling (lowest pc first, divergence, reconvergence), its counters and its faults exactly: a
compiled stretch runs the same instructions for the same lanes in the same order, and an instruction that faults
has changed nothing when the generated code returns, so the interpreter runs it again and reports the fault itself.
"""
from __future__ import annotations

import os
from typing import List, Optional

import numpy as np

from emulator import ir
from emulator.base.errors import UsageError
from emulator.machine.codegen.build import CompileError, build_module, compiler
from emulator.machine.codegen.emit import Generated, generate, partial_source
from emulator.machine.lanes import ALL
from emulator.machine.specials import special_value
from emulator.machine.states import INF

ENGINES = ("auto", "compiled", "interpreter")
#: under "auto", how much interpreted work a program does before it is compiled, in thread-instructions (about a
#: nanosecond each to the interpreter) with a scheduler step (about 10 microseconds) weighing STEP_WEIGHT: about what
#: compiling it costs (0.15 s and 5 ms an instruction), so that a kernel never pays much more than twice the better
#: engine's time
STEP_WEIGHT = 10_000
AUTO_THRESHOLD = 150_000_000
AUTO_THRESHOLD_PER_INSTRUCTION = 5_000_000
#: what a unit returns for a pc it has no code for (never, unless the generator is wrong)
NOT_COMPILED = -(1 << 63)


def resolve_engine(engine: Optional[str]) -> str:
    """The engine asked for, GPUEMU_ENGINE when None, "auto" when neither says."""
    chosen = engine if engine is not None else (os.environ.get("GPUEMU_ENGINE") or "auto")
    if chosen not in ENGINES:
        source = "engine" if engine is not None else "GPUEMU_ENGINE"
        raise UsageError(f"{source}={chosen!r}: choose one of {', '.join(ENGINES)}")
    return chosen


class ProgramCode:
    """One program's generated code, compiled when first needed (at once for "compiled", after AUTO_THRESHOLD of
    interpreted work, or at once when the compiled module is already in the cache, for "auto")."""

    def __init__(self, program: ir.Program, uniform, eager: bool):
        self.program = program
        self.uniform = frozenset(uniform)
        self.generated: Optional[Generated] = None
        self.units_at: Optional[List] = None
        self.ffi = self.lib = None
        self.loops = {}
        #: every pc of a compiled loop's body -> the loop's head
        self.loop_of = {}
        self.compile_seconds = 0.0
        self.failed: Optional[str] = None
        self.work = 0
        self.probed = False
        self.generated_source: Optional[Generated] = None
        self._scratch = None
        self.eager = eager
        #: the partial module (partial_source), its ffi and its functions by region start, once compiled
        self.partials = self.partial_ffi = None
        self.partial_functions = {}
        self.partial_pointers = {}
        self.partial_work = 0
        self.partial_state = "unprobed"
        if eager:
            self.compile()

    @property
    def ready(self) -> bool:
        return self.lib is not None

    def compile(self, cached_only: bool = False) -> None:
        """Generate and compile (cached_only: only load an already compiled module, from this process or the cache)."""
        if self.ready or self.failed:
            return
        generated = self.generated_source or generate(self.program, self.uniform)
        self.generated_source = generated
        try:
            built = build_module(generated.source, [unit.name for unit in generated.units],
                                 [f"gx_loop_{head}" for head in generated.loops], cached_only=cached_only)
            if built is None:
                return
            self.ffi, self.lib, self.compile_seconds = built
        except CompileError as error:
            if self.eager:
                raise UsageError(f"the compiled engine cannot run {self.program.name}: {error}") from None
            self.failed = str(error)
            return
        units_at = [None] * len(self.program.instrs)
        for unit in generated.units:
            entry = (unit, getattr(self.lib, unit.name))
            for pc in range(unit.start, unit.end):
                units_at[pc] = entry
        self.loops = {head: (self.program.instrs[branch], getattr(self.lib, f"gx_loop_{head}"))
                      for head, branch in generated.loops.items()}
        self.loop_of = {pc: head for head, branch in generated.loops.items() for pc in range(head, branch)}
        self.generated, self.units_at = generated, units_at

    def partial(self, first: int, steps: int, thread_instructions: int):
        """The gx_part function of the region that starts at first, or None while the partial module is not compiled:
        at once for "compiled" (also after "auto" launches of the program); under "auto" when the cache has it, or once
        the interpreter has done about a compile's worth of the partial runs it would take (counted here, as
        interpreted() counts)."""
        if self.partials is not None:
            return self.partial_functions[first]
        if self.partial_state == "failed":
            return None
        if self.partial_state == "unprobed" or (self.eager and self.partial_state == "counting"):
            self.partial_state = "counting"
            self._compile_partials(cached_only=not self.eager)
        elif not self.eager:
            self.partial_work += steps * STEP_WEIGHT + thread_instructions
            if self.partial_work >= AUTO_THRESHOLD:
                self._compile_partials(cached_only=False)
        return None if self.partials is None else self.partial_functions[first]

    def _compile_partials(self, cached_only: bool) -> None:
        source, names = partial_source(self.generated)
        try:
            built = build_module(source, names, cached_only=cached_only)
        except CompileError:
            self.partial_state = "failed"
            return
        if built is not None:
            self.partial_ffi, self.partials = built[0], built[1]
            self.partial_functions = {items[0].pc: getattr(self.partials, f"gx_part_{items[0].pc}")
                                      for items, _, _ in self.generated.regions}
            ffi = self.partial_ffi
            #: the same functions as pointers of the main module, for loop runs that start or end inside a region
            self.partial_pointers = {
                first: self.ffi.cast("void *", int(ffi.cast("uintptr_t",
                                                            ffi.addressof(self.partials, f"gx_part_{first}"))))
                for first in self.partial_functions}
            self.compile_seconds += built[2]

    def scratch(self, n: int):
        """Buffers for n lanes (addresses, threads, bytes for the memory core), kept for the next batch: fresh pages
        for every batch would cost more than the work."""
        if self._scratch is None or self._scratch[0].size < n:
            self._scratch = (np.empty(n, dtype=np.uint64), np.empty(n, dtype=np.int64),
                             np.empty(n * 32, dtype=np.uint8))
        return self._scratch

    def interpreted(self, steps: int, thread_instructions: int) -> bool:
        """Count interpreted work under "auto"; whether the code is (now) compiled. The first call looks for the
        compiled module in the cache (a kernel an earlier run compiled runs compiled at once)."""
        if not self.probed:
            self.probed = True
            self.compile(cached_only=True)
            if self.ready:
                return True
        self.work += steps * STEP_WEIGHT + thread_instructions
        if self.work >= max(AUTO_THRESHOLD, AUTO_THRESHOLD_PER_INSTRUCTION * len(self.program.instrs)):
            self.compile()
        return self.ready


def program_code(program: ir.Program, uniform, engine: str, memory, observer, policy) -> Optional[ProgramCode]:
    """The program's code for a launch, or None when it runs in the interpreter: engine "interpreter"; under an
    observer (its hooks see each instruction and access) or a scheduling policy whose turns are not runs of
    instructions (one without compiled_turns); on the numpy memory core; for SASS; without a C compiler under
    "auto" (under "compiled" that is an error)."""
    if engine == "interpreter" or observer is not None or (policy is not None
                                                           and not getattr(policy, "compiled_turns", False)):
        return None
    if memory.backend != "c" or getattr(program, "arch", None) is not None:
        if engine == "compiled" and memory.backend != "c":
            raise UsageError("the compiled engine needs gpuemu's C memory core, which is not built")
        return None
    if compiler() is None:
        if engine == "compiled":
            raise UsageError("the compiled engine needs a C compiler and Python's headers; none was found")
        return None
    cached = program.__dict__.get("_gpuemu_code")
    if cached is not None and cached.uniform == frozenset(uniform):
        if engine == "compiled":
            cached.eager = True
            cached.compile()
        return cached
    code = ProgramCode(program, uniform, eager=engine == "compiled")
    program.__dict__["_gpuemu_code"] = code
    return code


class BatchCode:
    """A program's compiled units bound to one batch: its register arrays, specials and static addresses."""

    def __init__(self, code: ProgramCode, batch):
        self.code = code
        self.batch = batch
        self.bound = False
        self.park = None

    def _bind(self) -> None:
        code, batch = self.code, self.batch
        ffi = code.ffi
        generated = code.generated
        registers = set()
        for unit in generated.units:
            registers.update(unit.registers)
        self.regs = ffi.new("void *[]", max(1, len(batch.regs)))
        for index in registers:
            self.regs[index] = ffi.cast("void *", batch.regs[index].ctypes.data)
        keep = []
        self.specials = ffi.new("void *[]", max(1, len(generated.specials)))
        for name, slot in generated.specials.items():
            value = np.ascontiguousarray(special_value(batch, name), dtype=np.uint32)
            if value.shape != (batch.n,):
                raise RuntimeError(f"special register %{name} is not one value per thread")
            keep.append(value)
            self.specials[slot] = ffi.cast("void *", value.ctypes.data)
        scalars = np.zeros(max(1, len(generated.scalar_specials)), dtype=np.uint64)
        for name, slot in generated.scalar_specials.items():
            value = special_value(batch, name)
            if callable(value) or np.ndim(value) != 0:
                raise RuntimeError(f"special register %{name} is not one value per batch")
            scalars[slot] = int(value)
        statics = np.zeros(max(1, len(generated.statics)), dtype=np.uint64)
        for slot, (symbol, space, offset) in enumerate(generated.statics):
            if symbol is not None:
                address, _ = batch.addressing.symbol_access(symbol, space, offset)
            else:
                address, _ = batch.addressing.absolute_access(offset, space)
            statics[slot] = address & ((1 << 64) - 1)
        context = ffi.new("gx_context *")
        context.statics = ffi.cast("uint64_t *", statics.ctypes.data)
        context.scalars = ffi.cast("uint64_t *", scalars.ctypes.data)
        context.const_base = batch.config.const_base
        context.param_base = batch.config.param_base
        if any(unit.has_memory for unit in generated.units):
            addresses, threads, data = code.scratch(batch.n)
            context.addresses = ffi.cast("uint64_t *", addresses.ctypes.data)
            context.threads = ffi.cast("int64_t *", threads.ctypes.data)
            context.data = ffi.cast("uint8_t *", data.ctypes.data)
        self.context = context
        self._keep = (keep, scalars, statics)
        self._memory_state = None
        self._partial_args = None
        self.bound = True

    def _refresh_memory(self) -> None:
        state = self.batch.memory.core_state()
        if state is not self._memory_state:
            ffi = self.code.ffi
            self._memory_state = state
            self.context.memory = ffi.cast("void *", state[0])
            self.context.load = ffi.cast("void *", state[1])
            self.context.store = ffi.cast("void *", state[2])
            self.context.atomic = ffi.cast("void *", state[3])

    def run(self, pc: int, end: int, sel) -> None:
        """Instructions pc up to end (straight-line, of one function) for the lanes of sel, as the interpreter's fast
        path runs them: batch.steps counts each, and a faulting instruction is reported by its executor."""
        batch = self.batch
        execs = batch.executors
        code = self.code
        if not code.ready:
            if not code.failed:
                code.interpreted(end - pc, (end - pc) * (batch.n if sel is ALL else len(sel)))
            if not code.ready:
                for index in range(pc, end):
                    batch.steps += 1
                    execs[index](sel)
                return
        if not self.bound:
            self._bind()
        pointer = None
        units_at = code.units_at
        while pc < end:
            entry = units_at[pc]
            if entry is None:
                batch.steps += 1
                execs[pc](sel)
                pc += 1
                continue
            unit, function = entry
            stop = min(end, unit.end)
            if unit.has_memory:
                self._refresh_memory()
            first = unit.region_start.get(pc)
            if first is not None and (pc != first or stop < unit.region_end[pc]):
                pc = self._part(unit, pc, min(stop, unit.region_end[pc]), sel)
                continue
            if pointer is None:
                pointer = code.ffi.NULL if sel is ALL else code.ffi.from_buffer("int64_t[]", sel)
            result = function(pc, stop, pointer, batch.n if sel is ALL else len(sel), self.regs, self.specials,
                              self.context)
            pc = self._after(result, unit, pc, stop, sel)

    def _after(self, result: int, unit, pc: int, stop: int, sel) -> int:
        """Where a unit's run from pc (to stop) left off, the interpreter finishing what the unit handed back: the
        instruction that needs its fault report, or a region to run again."""
        batch = self.batch
        execs = batch.executors
        if result >= 0:
            batch.steps += result - pc + 1
            execs[result](sel)
            return result + 1
        if result == -1:
            batch.steps += stop - pc
            return stop
        if result == NOT_COMPILED:
            raise RuntimeError(f"compiled unit {unit.name} has no code for pc {pc}")
        redo = -2 - result
        batch.steps += redo - pc
        end = min(stop, unit.region_end[redo])
        done = self.context.resume
        if done < 0:
            return self._part(unit, redo, end, sel)
        self._interpret(redo, end, sel, done)
        return end

    def _part(self, unit, pc: int, end: int, sel) -> int:
        """Instructions pc up to end of one region, a part of it: its gx_part code when the partial module is
        compiled, the interpreter for the lanes that code hands back or without it. Returns end."""
        batch = self.batch
        code = self.code
        lanes = batch.n if sel is ALL else len(sel)
        function = code.partial(unit.region_start[pc], end - pc, (end - pc) * lanes)
        done = 0
        if function is not None:
            ffi = code.partial_ffi
            if self._partial_args is None:
                self._partial_args = tuple(ffi.cast(kind, code.ffi.cast("uintptr_t", pointer)) for kind, pointer
                                           in (("void **", self.regs), ("void **", self.specials),
                                               ("gx_context *", self.context)))
            result = function(pc, end, ffi.NULL if sel is ALL else ffi.from_buffer("int64_t[]", sel), lanes,
                              *self._partial_args)
            if result == -1:
                batch.steps += end - pc
                return end
            if result == NOT_COMPILED:
                raise RuntimeError(f"gx_part_{unit.region_start[pc]} has no code for pcs {pc} to {end}")
            done = self.context.resume
        self._interpret(pc, end, sel, done)
        return end

    def _interpret(self, pc: int, end: int, sel, done: int) -> None:
        """The interpreter runs instructions pc up to end for the lanes of sel from the done-th on."""
        batch = self.batch
        execs = batch.executors
        rest = sel if done == 0 else (np.arange(done, batch.n, dtype=np.int64) if sel is ALL else sel[done:])
        for index in range(pc, end):
            batch.steps += 1
            execs[index](rest)

    def loop(self, pc: int, sel, others: int, backward: int, rotate_limit: int, turn_left: Optional[int] = None):
        """Rounds of the compiled loop whose body holds pc (the first from pc), for as long as the scheduler would
        keep the group in it and no check is due (the step limit, the spin watch, the rotation after rotate_limit
        backward branches while other groups wait, the end of a scheduling policy's turn after turn_left
        instructions; such a turn's last instructions, when it ends inside the body, run too). Returns None when no
        round ran (or pc is inside a region and the partial module is not compiled), else (pc, sel, others, backward,
        the warps of sel): pc is the head again, the branch (the body handed an instruction to the interpreter), the
        pc after the branch (every lane left the loop) or where the turn ended."""
        code = self.code
        batch = self.batch
        head = code.loop_of.get(pc) if code.ready else None
        if head is None:
            return None
        branch, function = code.loops[head]
        if others <= branch.pc:
            return None
        skip = pc - head
        per_round = branch.pc - head + 1
        rounds = (batch.max_steps - batch.steps + skip) // per_round
        if turn_left is not None:
            rounds = min(rounds, (turn_left + skip) // per_round)
        if batch.spin_limit:
            rounds = min(rounds, batch.spin.next_check - batch.backward_branches - 1)
        rotate_left = rotate_limit - backward - 1
        if rounds <= 0 or rotate_left <= 0:
            return None
        unit = code.units_at[pc][0]
        first_part, first_end = code.ffi.NULL, head
        if skip:
            first = unit.region_start.get(pc, pc)
            if first == pc:
                first_end = pc
            elif code.partials is None:
                return None
            else:
                first_part, first_end = code.partial_pointers[first], unit.region_end[pc]
        last_end, last_part, last_start = (head, code.ffi.NULL, head) if turn_left is None else \
            self._turn_end(unit, head, skip, per_round, rounds, turn_left)
        if not self.bound:
            self._bind()
        if unit.has_memory:
            self._refresh_memory()
        ffi = code.ffi
        lanes = np.arange(batch.n, dtype=np.int64) if sel is ALL else sel.copy()
        if self.park is None:
            self.park = np.empty(batch.n, dtype=np.int64)
            self.info = np.zeros(15, dtype=np.int64)
            self.park_and_info = (ffi.from_buffer("int64_t[]", self.park), ffi.from_buffer("int64_t[]", self.info))
        info = self.info
        function(ffi.from_buffer("int64_t[]", lanes), len(lanes), rounds, rotate_left, int(others != INF),
                 self.regs, self.specials, self.context, *self.park_and_info, pc, first_part, first_end, last_end,
                 last_part, last_start)
        (done, warp_sum, lane_sum, result, remaining, parked, left, rotated, entered, in_part, stop, first_warps,
         run_end, last_done, last_warps) = info.tolist()
        if done:
            batch.steps += done * per_round - skip
            batch.warp_instructions += warp_sum * per_round - first_warps * skip
            batch.thread_instructions += lane_sum * per_round - len(lanes) * skip
        continued = done - left
        if batch.spin_limit:
            batch.backward_branches += continued
        backward += rotated
        if parked:
            batch.rpc[self.park[:parked]] = branch.pc + 1
            others = min(others, branch.pc + 1)
        sel = lanes[:remaining].copy() if remaining < batch.n else ALL
        if result != -1:
            started = head if done else pc
            batch.steps += entered - started
            if in_part:
                if result == NOT_COMPILED:
                    raise RuntimeError(f"gx_part_{unit.region_start[entered]} has no code for pcs {entered} to {stop}")
                self._interpret(entered, stop, sel, self.context.resume)
                next_pc = stop
            else:
                next_pc = self._after(result, unit, entered, stop, sel)
            if next_pc != run_end:
                self.run(next_pc, run_end, sel)
            count = run_end - started
            warps = batch._warps_in(sel)
            batch.warp_instructions += warps * count
            batch.thread_instructions += (batch.n if sel is ALL else len(sel)) * count
            return run_end, sel, others, backward, warps
        if done == 0:
            return None
        if last_done:
            leftover = last_end - head
            batch.steps += leftover
            batch.warp_instructions += last_warps * leftover
            batch.thread_instructions += remaining * leftover
            return last_end, sel, others, backward, last_warps
        return (branch.pc + 1 if left else head), sel, others, backward, last_warps

    def _turn_end(self, unit, head: int, skip: int, per_round: int, rounds: int, turn_left: int):
        """(last_end, last_part, last_start) for a loop's run: where the turn ends inside the body after its rounds,
        the gx_part pointer that runs its region from last_start up to it (NULL when the unit can: last_end ends a
        region or follows a store); last_end is the head when the turn does not end inside the body, or when its
        region's part is not compiled."""
        null = self.code.ffi.NULL
        turn_rounds, leftover = divmod(turn_left + skip, per_round)
        batch = self.batch
        if leftover == 0 or rounds != turn_rounds or batch.steps + turn_left > batch.max_steps:
            return head, null, head
        last_end = head + leftover
        first = unit.region_start.get(last_end - 1)
        if first is None or unit.region_end[last_end - 1] == last_end:
            return last_end, null, last_end
        if self.code.partials is None:
            return head, null, head
        return last_end, self.code.partial_pointers[first], first
