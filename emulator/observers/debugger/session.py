"""One debugging session's state and control, shared by the REPL and the DAP server: the launch, focus,
breakpoints and watchpoints, stepping forward and back, and expressions. It says nothing itself: its methods
return what happened and the front ends tell the user."""
from __future__ import annotations

import os
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from isa.types import TYPES

from emulator import ir
from emulator.base.sources import SourceFiles
from emulator.machine.states import RUNNING
from emulator.runtime.arguments import Parameters, dim3
from emulator.runtime.launch import DEFAULT_MAX_STEPS, Launch
from emulator.runtime.names import plain_name
from emulator.observers.debugger.control import Breakpoint, Engine, Plan, Watchpoint, contains
from emulator.observers.debugger.cvalues import CValue
from emulator.observers.debugger.expr import (DebugError, evaluate, format_lanes, format_scalar, parse_expression,
                                              rvalue)
from emulator.observers.debugger.record import DEFAULT_HISTORY
from emulator.observers.debugger.state import CodeAddresses, Registers, ThreadStates, VECTOR_SPECIALS, resolve_generic
from emulator.observers.debugger.symbols import Frame, LaneContext, exited, inline_calls, thread_frames, thread_state
from emulator.observers.debugger.variables import SourceVariables


#: the most instructions a step by CUDA line runs before it stops on the line it is still on
LINE_STEP_LIMIT = 100_000


def dims(values: Sequence[int]) -> str:
    return "(" + ",".join(str(int(v)) for v in values) + ")"


def ptx_symbols(program: ir.Program) -> Dict[str, ir.SymbolInfo]:
    """Module-scope symbols and every symbol the code names (function-scope __shared__ arrays included)."""
    table = dict(program.symbols)
    for instr in program.instrs:
        for operand in instr.operands:
            symbol = getattr(operand, "symbol", None)
            if isinstance(symbol, ir.SymbolInfo) and symbol.space in ("shared", "global", "const", "local"):
                table.setdefault(symbol.name, symbol)
    return table


class StopPoints:
    """Breakpoints and watchpoints: the pcs a location names, adding, finding by number and removing them (the lists
    and the next number stay the session's, where the engine and the front ends read them)."""

    def __init__(self, session):
        self.session = session

    def locate(self, spec: str) -> Tuple[Tuple[int, ...], str]:
        """pcs of a location: PTX LINE, FILE:LINE (PTX or CUDA via .loc), label, function, *ADDRESS."""
        session = self.session
        program = session.program
        if spec.startswith("*"):
            address = int(session.value_of(spec[1:], session._lanes(None))[0])
            pc = session.addresses.pc_at(address)
            if pc is None:
                raise DebugError(f"No instruction at address {address:#x} (instructions are "
                                 f"{session.addresses.spacing} bytes apart, 0x0 to {session.addresses.last():#x}).")
            return (pc,), spec
        file_part, sep, line_part = spec.rpartition(":")
        if sep and line_part.isdigit():
            line = int(line_part)
            if os.path.basename(file_part) in (session.ptx_name, os.path.basename(program.source_name)):
                return self.ptx_line(line), spec
            return self.cuda_line(file_part, line), spec
        if spec.isdigit():
            return self.ptx_line(int(spec)), spec
        for name in (spec, f"${spec}" if not spec.startswith("$") else spec):
            if name in program.labels:
                return (program.labels[name],), spec
        for function in program.functions.values():
            if spec in (function.name, plain_name(function.name)):
                return (function.entry_pc,), spec
        raise DebugError(f'Function "{spec}" not defined (no such label, function or line).')

    def ptx_line(self, line: int) -> Tuple[int, ...]:
        for instr in self.session.program.instrs:
            if instr.line >= line and not instr.text.startswith("ret; (end") and \
                    self.session.addresses.starts_instruction(instr.pc):
                return (instr.pc,)
        raise DebugError(f'Line {line} is out of range for "{self.session.ptx_name}".')

    def cuda_line(self, path: str, line: int) -> Tuple[int, ...]:
        """First pcs of each run of instructions at a CUDA line: their own .loc line, or an inlined call's."""
        name = os.path.basename(path)

        def lines_of(instr):
            return [place[1] for _, place in instr.source_frames()
                    if place is not None and os.path.basename(place[0]) == name]

        in_file = [line_number for instr in self.session.program.instrs for line_number in lines_of(instr)]
        if not in_file:
            raise DebugError(f'No source file named {path}.')
        later = sorted({number for number in in_file if number >= line})
        if not later:
            raise DebugError(f'Line {line} is out of range for "{name}".')
        target = later[0]
        pcs = []
        previous = False
        for instr in self.session.program.instrs:
            here = target in lines_of(instr)
            if here and not previous:
                pcs.append(instr.pc)
            previous = here
        return tuple(pcs)

    def add_breakpoint(self, spec: str, pcs: Tuple[int, ...], temporary: bool, condition: Optional[str]) -> Breakpoint:
        tree = parse_expression(condition) if condition else None
        breakpoint = Breakpoint(self.session.next_number, spec, tuple(pcs), temporary=temporary,
                                condition_text=condition, condition=tree)
        self.session.next_number += 1
        self.session.breakpoints.append(breakpoint)
        self.rebuild()
        return breakpoint

    def numbered(self, text: str):
        try:
            number = int(text)
        except ValueError:
            raise DebugError(f'Args must be breakpoint numbers, not "{text}".') from None
        for item in self.session.breakpoints + self.session.watchpoints:
            if item.number == number:
                return item
        raise DebugError(f"No breakpoint number {number}.")

    def selected(self, arg: str) -> List[object]:
        if not arg:
            return list(self.session.breakpoints) + list(self.session.watchpoints)
        return [self.numbered(word) for word in arg.replace(",", " ").split()]

    def remove(self, item) -> None:
        if item in self.session.breakpoints:
            self.session.breakpoints.remove(item)
        if item in self.session.watchpoints:
            self.session.watchpoints.remove(item)
        self.rebuild()

    def rebuild(self) -> None:
        table: Dict[int, List[Breakpoint]] = {}
        for breakpoint in self.session.breakpoints:
            if breakpoint.enabled:
                for pc in breakpoint.pcs:
                    table.setdefault(pc, []).append(breakpoint)
        self.session.breakpoints_at = table

    def watch_target(self, expression: str, space: str, length: Optional[int]) -> Tuple[str, int, int, str]:
        """(space, address, length, PTX type) that a watchpoint on an expression covers: a C lvalue's own bytes
        and type (watch s[3]; "" for hex), or the bytes at an address (type None: decided at the first hit)."""
        session = self.session
        lanes = session._lanes(None)
        value = session.source_value(expression, lanes) if session.engine is not None and session.batch is not None \
            else None
        if isinstance(value, CValue) and value.addresses is None and space == "generic":
            held = "has been optimized out" if value.optimized_out else "is held in a register, not in memory"
            raise DebugError(f"Cannot watch '{expression}': at this pc it {held}, and gpuemu's watchpoints watch "
                             f"memory (display {expression} and step instead).")
        if isinstance(value, CValue) and value.addresses is not None and space == "generic":
            where = value.space or "generic"
            address = int(value.addresses[0])
            if where == "generic":
                where, address = resolve_generic(address)
            return where, address, length or value.ctype.size, ptx_type(value.ctype)
        address = int(session.value_of(expression, lanes)[0])
        if space == "generic":
            space, address = resolve_generic(address)
        return space, address, length or 4, None

    def examine_target(self, expression: str, lanes: np.ndarray) -> Tuple[str, int]:
        """(space, address) where `x EXPR` starts: the space a C pointer points into or a C array lies in
        (x/4f &s[0], x/4f s), a PTX symbol's own space (x/2f _ZZ3dotPfS_S_iE5cache), else a generic address."""
        value = self.session.source_value(expression, lanes)
        if isinstance(value, CValue) and not value.optimized_out:
            if value.ctype.kind == "pointer":
                return value.ctype.space or "generic", int(np.asarray(value.rvalue()).astype(np.uint64)[0])
            if value.ctype.kind == "array" and value.addresses is not None:
                return value.space or "generic", int(value.addresses[0])
        symbol = self.session.ptx_symbols.get(expression.strip())
        if symbol is not None and not isinstance(value, CValue) and symbol.space in ("shared", "global", "const",
                                                                                     "local"):
            return symbol.space, int(symbol.address)
        return "generic", int(np.asarray(self.session.value_of(expression, lanes)[0]).astype(np.uint64))

    def add_watch(self, space: str, address: int, length: int, label: Optional[str] = None) -> Watchpoint:
        session = self.session
        if space in ("const", "param"):
            raise DebugError(f"Kernels cannot write @{space} memory: a watchpoint there would never trigger.")
        cta = local = 0
        where = f"@{space} {address:#x}"
        if space in ("shared", "local"):
            if session.engine is not None and session.batch is not None and session.focus_thread is not None:
                batch = session.batch
                cta = batch.cta_start + session.focus_thread // batch.tpc_pad
                local = session.focus_thread % batch.tpc_pad
            gx, gy, _ = session.grid
            block = (cta % gx, (cta // gx) % gy, cta // (gx * gy))
            if space == "shared":
                where += f" of block {dims(block)}"
            else:
                bx, by, _ = session.block
                where += f" of block {dims(block)} thread {dims((local % bx, (local // bx) % by, local // (bx * by)))}"
        if length != 4 and label is None:
            where += f" ({length} bytes)"
        watch = Watchpoint(session.next_number, label or where, space, address, length, cta=cta, local=local)
        if session.engine is not None and session.batch is not None:
            session.engine.read_watch(watch)
        session.next_number += 1
        session.watchpoints.append(watch)
        return watch


class DebugSession:
    """One launch at a time under the debugger. `prepare()` gives (module, kernel, args, grid, block) afresh;
    `registers` builds the register table (the REPL passes its own, which tests replace)."""

    def __init__(self, options, prepare: Callable, registers: Callable = Registers):
        self.options = options
        self.prepare = prepare
        module, kernel, args, grid, block = prepare()
        # the launch's own checks, so that bad arguments stop the command line rather than the first `run`
        Launch(kernel, dim3(grid), dim3(block), options.shared, max_dynamic_shared=options.max_dynamic_shared)
        Parameters(kernel.program).encode(list(args))
        self.program: ir.Program = kernel.program
        self.kernel_name = plain_name(self.program.name)
        self.grid = tuple(grid) + (1,) * (3 - len(grid))
        self.block = tuple(block) + (1,) * (3 - len(block))
        self.registers = registers(self.program)
        self.addresses = CodeAddresses(self.program)
        self.ptx_name = os.path.basename(module.source_name)
        self.sources = SourceFiles(options.file, getattr(options, "source_dir", None) or ())
        self.history_limit = getattr(options, "history", DEFAULT_HISTORY)
        self.ptx_symbols = ptx_symbols(self.program)
        self.variables = SourceVariables.of_program(self.program) if not self.registers.listing else None
        self.engine: Optional[Engine] = None
        self.device = module.device
        self.args = None
        self.kernels = 0
        self.breakpoints: List[Breakpoint] = []
        self.breakpoints_at: Dict[int, List[Breakpoint]] = {}
        self.watchpoints: List[Watchpoint] = []
        self.next_number = 1
        self.stops = StopPoints(self)
        self.values: List[object] = []
        self.focus_thread: Optional[int] = None
        #: (thread, frame number) of the frame that names resolve in; a frame of another thread means frame 0
        self.selected: Tuple[Optional[int], int] = (None, 0)
        self._inline_calls: Dict[int, tuple] = {}
        self.states = None

    # ---- the launch ----
    @property
    def batch(self):
        return self.engine.batch if self.engine is not None else None

    def _require_running(self):
        if self.engine is None or self.engine.batch is None:
            raise DebugError("The program is not being run.")
        return self.engine.batch

    def _kernel_title(self) -> str:
        return f"{self.kernel_name}<<<{dims(self.grid)},{dims(self.block)}>>>"

    def launch(self, stdout=None) -> None:
        """A fresh launch, paused before it starts (`engine.start(plan)` runs it)."""
        self._kill()
        module, kernel, args, grid, block = self.prepare()
        if stdout is not None:
            module.device.stdout = stdout
        self.args = args
        self.kernels += 1
        self.focus_thread = None
        options = self.options
        self.engine = Engine(self, kernel, args, grid, block, shared=options.shared,
                             max_steps=options.max_steps or DEFAULT_MAX_STEPS,
                             max_dynamic_shared=options.max_dynamic_shared, history_limit=self.history_limit,
                             checks=self.checks())
        self.states = ThreadStates(self.engine)

    def checks(self):
        """The checkers whose findings stop the launch (options.check: race, sync, init, mem), or None."""
        wanted = getattr(self.options, "check", None)
        if not wanted:
            return None
        import io

        from emulator.observers.checks import CheckSession
        return CheckSession(wanted, stream=io.StringIO())

    def _kill(self) -> None:
        if self.engine is not None:
            self.engine.kill()
            self.engine = None

    def settle(self, event):
        """Take in what the launch did: a stop focuses its thread; an end drops the launch (the engine is
        returned with an error so that a front end can tell a reported fault from a new one)."""
        kind, payload = event
        self.selected = (None, 0)
        if kind == "stop":
            if payload.thread is not None:
                self.focus_thread = int(payload.thread)
            elif self.focus_thread is None:
                self.focus_thread = self._first_of(payload.sel)
            if payload.reason == "breakpoint" and payload.breakpoint.temporary:
                self.stops.remove(payload.breakpoint)
            return kind, payload, None
        engine, self.engine = self.engine, None
        return kind, payload, engine

    @staticmethod
    def _first_of(sel) -> int:
        return 0 if sel is None or isinstance(sel, slice) else int(sel[0])

    def _plan(self, mode: str, count: int = 1, by_line: bool = False) -> Plan:
        """What to run for continue, step, next or finish of the focused warp; a finish inside an inlined call
        runs out of that call; by_line: a step or next goes on until the CUDA line or the inlined calls change."""
        batch = self._require_running()
        focus = self._focus()
        first = focus - focus % 32
        _, sel = self.engine.current()
        _, states = self.states.of(np.arange(first, first + 32, dtype=np.int64))
        running = bool(np.any(states == RUNNING))
        skip = running and (sel is None or not contains(sel, first, first + 32))
        plan = Plan(mode, (first, first + 32), count=count, skip=skip, base_depth=Engine.depth_of(batch, focus))
        pc, state = self._thread_pc(focus)
        if exited(state, pc):
            return plan
        if mode == "finish":
            frame = self.frames()[self.frame_number()]
            plan.inline_calls = () if frame.caller else self.inline_calls_at(pc)[:frame.inline_depth]
        elif by_line and mode in ("step", "next"):
            plan.line_changed = self._line_change_test(pc, over_inlined=mode == "next")
            plan.line_limit = LINE_STEP_LIMIT
        return plan

    def inline_calls_at(self, pc: int) -> tuple:
        calls = self._inline_calls.get(pc)
        if calls is None:
            calls = self._inline_calls[pc] = inline_calls(self, self.program.instrs[pc])
        return calls

    def _line_change_test(self, start_pc: int, over_inlined: bool) -> Callable[[int], bool]:
        """Whether a pc is on another CUDA line than start_pc, or in other inlined calls; code without a line
        (line 0) is not; over_inlined: neither are calls inlined at the starting line (as gdb's next)."""
        start_calls = self.inline_calls_at(start_pc)
        start_place = self.program.instrs[start_pc].source

        def changed(pc: int) -> bool:
            place = self.program.instrs[pc].source
            if place is None or place[1] <= 0:
                return False
            calls = self.inline_calls_at(pc)
            if over_inlined and len(calls) > len(start_calls) and calls[:len(start_calls)] == start_calls:
                return False
            return calls != start_calls or place != start_place
        return changed

    def reverse(self, mode: str, count: int = 1, by_line: bool = False):
        """Go back (reverse-step, reverse-next, reverse-continue); by_line: a reverse step or next goes back to
        the last instruction of another CUDA line (or other inlined calls)."""
        batch = self._require_running()
        if self.history_limit <= 0:
            raise DebugError("Target does not support reverse execution: recording is off (--history 0).")
        focus = self._focus()
        first = focus - focus % 32
        line_changed = None
        if by_line and mode in ("reverse-step", "reverse-next"):
            line_changed = self._line_change_test(self._thread_pc(focus)[0], over_inlined=mode == "reverse-next")
        return self.engine.reverse(mode, (first, first + 32), count, Engine.depth_of(batch, focus), line_changed)

    # ---- focus ----
    def _focus(self) -> int:
        self._require_running()
        if self.focus_thread is None:
            raise DebugError("Focus not set on any active CUDA kernel.")
        return self.focus_thread

    def _coordinates(self, thread: int):
        return self.batch.thread_coordinates(int(thread))

    def _thread_of(self, block: Sequence[int], xyz: Sequence[int]) -> int:
        batch = self.batch
        gx, gy, gz = self.grid
        bx, by, bz = self.block
        if not all(0 <= v < limit for v, limit in zip(block, (gx, gy, gz))) or \
                not all(0 <= v < limit for v, limit in zip(xyz, (bx, by, bz))):
            raise DebugError("Request cannot be satisfied. CUDA focus unchanged.")
        cta = block[0] + block[1] * gx + block[2] * gx * gy - batch.cta_start
        if not 0 <= cta < batch.n_ctas:
            raise DebugError(f"Block {dims(block)} is not resident (it runs in another batch). CUDA focus unchanged.")
        return cta * batch.tpc_pad + xyz[0] + xyz[1] * bx + xyz[2] * bx * by

    def _thread_pc(self, thread: int) -> Tuple[int, int]:
        return thread_state(self, thread)

    def _focus_pc(self) -> int:
        """The focused thread's pc; an error once it has exited."""
        pc, state = self._thread_pc(self._focus())
        if exited(state, pc):
            raise DebugError("The focused thread has exited.")
        return pc

    def frame_name(self, function: str) -> str:
        if function == self.program.name:
            return self._kernel_title()
        return plain_name(function)

    def frames(self, thread: Optional[int] = None):
        """The frames of a thread (the focused one by default), innermost first, inlined calls included."""
        thread = self._focus() if thread is None else thread
        pc, state = self._thread_pc(thread)
        if exited(state, pc):
            raise DebugError("The focused thread has exited: it has no frames.")
        return thread_frames(self, self.batch, thread, pc)

    # ---- expressions ----
    def _lanes(self, spec: Optional[str]) -> np.ndarray:
        if self.engine is None or self.batch is None:
            return np.zeros(1, dtype=np.int64)
        focus = self._focus()
        batch = self.batch
        first = focus - focus % 32
        if spec is None:
            return np.array([focus], dtype=np.int64)
        valid = [t for t in range(first, first + 32) if t % batch.tpc_pad < batch.tpc]
        if spec == "all":
            return np.array(valid, dtype=np.int64)
        lane = int(spec.split()[1])
        if not 0 <= lane < 32 or first + lane not in valid:
            raise DebugError(f"Lane {lane} does not exist in warp {(focus % batch.tpc_pad) // 32}.")
        return np.array([first + lane], dtype=np.int64)

    def frame_number(self) -> int:
        """The selected frame of the focused thread (0, the innermost, unless `frame N` or a DAP frameId chose)."""
        thread, number = self.selected
        return number if thread is not None and thread == self.focus_thread else 0

    def select_frame(self, number: int) -> Frame:
        frames = self.frames()
        if not 0 <= number < len(frames):
            raise DebugError(f"No frame at level {number}." if number >= 0 else "Frame numbers start at 0.")
        self.selected = (self.focus_thread, number)
        return frames[number]

    def _context(self, lanes: np.ndarray) -> LaneContext:
        """Names resolve in the selected frame of the focused thread: its function, nearest its pc, and for the
        caller of an inlined call without the variables of the calls inlined deeper."""
        function, pc, depth = self.program.name, 0, None
        if self.engine is not None and self.batch is not None and self.focus_thread is not None:
            focus_pc, state = self._thread_pc(self.focus_thread)
            if focus_pc >= 0 and self.frame_number() and not exited(state, focus_pc):
                frame = self.frames()[self.frame_number()]
                function, pc, depth = frame.function, frame.pc, frame.inline_depth
            elif focus_pc >= 0:
                function, pc = self.program.instrs[focus_pc].function, focus_pc
        return LaneContext(self, lanes, function, pc, depth)

    def value_of(self, text: str, lanes: np.ndarray) -> np.ndarray:
        tree = parse_expression(text)
        if self._vector_special(tree) is not None:
            raise DebugError(f"{text} is a vector: name a component ({text}.x).")
        value = rvalue(evaluate(tree, self._context(lanes)))
        return np.array(np.broadcast_to(value, (len(lanes),)))

    def source_value(self, text: str, lanes: np.ndarray):
        """An expression's value as evaluated: a CValue for C variables, else numbers per lane."""
        return evaluate(parse_expression(text), self._context(lanes))

    @staticmethod
    def _vector_special(tree) -> Optional[str]:
        if tree[0] in ("reg", "conv") and tree[1][1:] in VECTOR_SPECIALS:
            return tree[1][1:]
        return None

    def condition_mask(self, breakpoint: Breakpoint, batch, pc: int, lanes: np.ndarray) -> np.ndarray:
        context = LaneContext(self, lanes, self.program.instrs[pc].function, pc)
        return np.asarray(rvalue(evaluate(breakpoint.condition, context)))

    def param_value(self, param: ir.KernelParam):
        launch = self.engine.launch
        raw = self.batch.memory.read(launch.param_base + param.offset, param.size)
        t = TYPES.get(param.type)
        if t is not None and t.bytes == param.size and t.kind != "pred":
            value = raw.view(t.dtype)[0]
            return value.view(np.int64) if t.kind == "bits" and t.bytes == 8 else value
        return raw.view(np.dtype(f"u{param.size}"))[0] if param.size in (1, 2, 4, 8) else raw

    def _print_value(self, text: str, fmt: Optional[str], lanes_spec: Optional[str]) -> Tuple[object, str]:
        """(value, how it shows) of an expression on the focused lane, one lane or all lanes of its warp."""
        lanes = self._lanes(lanes_spec)
        tree = parse_expression(text)
        vector = self._vector_special(tree)
        context = self._context(lanes)
        if vector is not None:
            parts = []
            for axis in "xyz":
                values = evaluate(("reg", f"%{vector}.{axis}"), context)
                parts.append(np.array(np.broadcast_to(values, (len(lanes),))))
            shown = ["{" + ", ".join(f"{axis} = {format_scalar(part[i], fmt)}" for axis, part in zip("xyz", parts))
                     + "}" for i in range(len(lanes))]
            return parts[0], shown[0] if len(lanes) == 1 else format_lanes(shown)
        value = evaluate(tree, context)
        if isinstance(value, CValue):
            shown = [value.show(fmt, lane) for lane in range(len(lanes))]
            return value, format_lanes(shown) if lanes_spec == "all" else shown[0]
        values = np.array(np.broadcast_to(value, (len(lanes),)))
        if tree == ("conv", "$pc") and fmt is None:
            pcs, _ = self.states.of(lanes)
            shown = [self._code_label(int(value)) if pc >= 0 else "<exited>" for value, pc in zip(values, pcs)]
            return values, format_lanes(shown) if lanes_spec == "all" else shown[0]
        if lanes_spec == "all":
            return values, format_lanes([format_scalar(v, fmt) for v in values])
        return values, format_scalar(values[0], fmt)

    def _code_label(self, address: int) -> str:
        pc = self.addresses.pc_at(address)
        if pc is None:
            return f"{address:#x}"
        return f"{address:#x} <{self._function_offset(pc)}>"

    def _function_offset(self, pc: int) -> str:
        """`function+offset` of an instruction, the offset in bytes of code from the function's entry."""
        function = self.program.instrs[pc].function
        entry = self.program.functions[function].entry_pc
        return f"{plain_name(function)}+{self.addresses.of(pc) - self.addresses.of(entry)}"

    # ---- locations ----
def ptx_type(ctype) -> str:
    """The PTX type that shows a C scalar's bytes ("" for hex)."""
    if ctype.kind == "pointer":
        return "u64"
    if ctype.kind not in ("base", "enum") or ctype.size not in (1, 2, 4, 8):
        return ""
    if ctype.encoding == 4:
        return {2: "f16", 4: "f32", 8: "f64"}[ctype.size]
    signed = ctype.encoding in (5, 6) or ctype.kind == "enum"
    return f"{'s' if signed else 'u'}{8 * ctype.size}"
