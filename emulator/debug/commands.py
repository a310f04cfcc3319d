"""The debugger's commands as cuda-gdb users type them, over one launch at a time."""
from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from isa.types import TYPES

from .. import ir
from ..cli import prepare_launch, write_npy_atomically
from ..base.sources import SourceFiles
from ..base.text import printable
from ..base.errors import DeviceError, GpuemuError
from ..launch import DEFAULT_MAX_STEPS, Launch, dim3, plain_name
from ..lower import SPECIAL_REGISTERS
from ..machine import AT_BARRIER, EXITED, NUM_BARRIERS, RUNNING
from .control import Breakpoint, Engine, Plan, Stop, Watchpoint, contains
from .expr import (Context, DebugError, evaluate, format_lanes, format_scalar, parse_expression,
                   parse_format, raw_bits)
from .record import DEFAULT_HISTORY
from .state import (SASS_REGISTER, SPACES, CodeAddresses, Registers, ThreadStates, VECTOR_SPECIALS, read_space,
                    resolve_generic, special_names, special_values, symbol_at, typed_values, warp_masks)

PROMPT = "(gpuemu) "
_MISALIGNED = ("CUDA_EXCEPTION_6", "Warp Misaligned Address")
_OUT_OF_RANGE = ("CUDA_EXCEPTION_5", "Warp Out-of-range Address")
_ILLEGAL = ("CUDA_EXCEPTION_14", "Warp Illegal Address")
_UNITS = {"b": 1, "h": 2, "w": 4, "g": 8}
_PER_LINE = {1: 8, 2: 8, 4: 4, 8: 2}
_EXAMINE_LIMIT = 1 << 20


def dims(values: Sequence[int]) -> str:
    return "(" + ",".join(str(int(v)) for v in values) + ")"


def place(row: str, text: str, end: int) -> str:
    """row with text right-aligned to end at column `end` (at least one space before it)."""
    return row + " " * max(1, end - len(row) - len(text)) + text


def one_line(text: str) -> str:
    return " ".join(text.split())


def _exception_of(error: DeviceError) -> Tuple[str, str]:
    """cuda-gdb's exception (signal, name) for a memory fault."""
    if error.cuda_error == "CUDA_ERROR_MISALIGNED_ADDRESS":
        return _MISALIGNED
    return _ILLEGAL if "__global__" in error.report else _OUT_OF_RANGE


class LaneContext(Context):
    """Registers, special registers, convenience variables and symbols, on some lanes of the batch."""

    def __init__(self, session: "Session", lanes: np.ndarray, function: str, pc: int):
        self.session = session
        self.lanes = lanes
        self.function = function
        self.pc = pc

    def _batch(self):
        batch = self.session.batch
        if batch is None:
            raise DebugError("The program has no registers now.")
        return batch

    def register(self, name: str):
        base = name[1:].split(".")[0]
        if f"%{base}" in SPECIAL_REGISTERS:
            if base in VECTOR_SPECIALS and "." not in name:
                raise DebugError(f"{name} is a vector: name a component ({name}.x, {name}.y, {name}.z).")
            return special_values(self._batch(), name[1:], self.lanes)
        batch = self._batch()
        reg = self.session.registers.lookup(name, self.function, self.pc)
        return typed_values(batch.regs[reg.index], reg.type, self.lanes)

    def convenience(self, name: str):
        session = self.session
        if name == "$pc":
            self._batch()
            pcs, _ = session.states.of(self.lanes)
            if np.all(pcs < 0):
                raise DebugError("$pc has no value: " + ("the lane has exited." if len(pcs) == 1 else
                                                         "every lane has exited."))
            return np.array([session.addresses.of(int(pc)) if pc >= 0 else 0 for pc in pcs], dtype=np.uint64)
        if session.registers.listing and SASS_REGISTER.fullmatch(name[1:]):
            return self.register(name[1:])
        history = re.fullmatch(r"\$(\$?)(\d*)", name)
        if history:
            return self._history(bool(history.group(1)), history.group(2))
        special = name[1:]
        if f"%{special.split('.')[0]}" in SPECIAL_REGISTERS:
            return self.register("%" + special)
        raise DebugError(f"Convenience variable {name} has no value.")

    def _history(self, back: bool, digits: str):
        values = self.session.values
        if not values:
            raise DebugError("History is empty.")
        if back:
            index = len(values) - 2 - (int(digits) - 1 if digits else 0)
        else:
            index = int(digits) - 1 if digits else len(values) - 1
        if not 0 <= index < len(values):
            raise DebugError(f"History has not yet reached ${index + 1}.")
        value = values[index]
        if value.shape[0] == 1:
            return value[0]
        if value.shape[0] != len(self.lanes):
            raise DebugError(f"${index + 1} holds one value per lane of a warp; use it with @all.")
        return value

    def symbol(self, name: str):
        session = self.session
        self._batch()
        program = session.program
        for param in program.params:
            short = re.search(r"param_\d+$", param.name)
            if name == param.name or short is not None and name == short.group():
                return session.param_value(param)
        symbol = program.symbols.get(name)
        if symbol is not None:
            return np.uint64(symbol.address)
        raise DebugError(f'No symbol "{name}" in current context.')


@dataclass
class Command:
    name: str
    handler: Callable
    summary: str
    usage: str
    repeat: bool


class Session:
    """One debugging session: breakpoints, displays and focus, and the launch they apply to."""

    def __init__(self, options, out, err):
        self.options = options
        self.out = out
        self.err = err
        module, kernel, args, grid, block = prepare_launch(options)
        # the launch's own checks, so that bad arguments stop the command line rather than the first `run`
        Launch(kernel, dim3(grid), dim3(block), options.shared,
               max_dynamic_shared=options.max_dynamic_shared)._parameter_buffer(list(args))
        self.program: ir.Program = kernel.program
        self.kernel_name = plain_name(self.program.name)
        self.grid = tuple(grid) + (1,) * (3 - len(grid))
        self.block = tuple(block) + (1,) * (3 - len(block))
        self.registers = Registers(self.program)
        self.addresses = CodeAddresses(self.program)
        self.ptx_name = os.path.basename(module.source_name)
        self.sources = SourceFiles(options.file, getattr(options, "source_dir", None) or ())
        self.history_limit = getattr(options, "history", DEFAULT_HISTORY)
        self.engine: Optional[Engine] = None
        self.args = None
        self.kernels = 0
        self.breakpoints: List[object] = []
        self.breakpoints_at: Dict[int, List[Breakpoint]] = {}
        self.watchpoints: List[Watchpoint] = []
        self.next_number = 1
        self.displays: List[Tuple[int, Optional[str], str]] = []
        self.next_display = 1
        self.values: List[np.ndarray] = []
        self.focus_thread: Optional[int] = None
        self.states = None
        self.last_function: Optional[str] = None
        self.last_source = None
        self.list_state = None
        self.x_state = None
        self.last_line = ""
        self.last_repeatable = False
        self.last_failed = False
        self.quitting = False
        self.commands: Dict[str, Command] = {}
        self.aliases: Dict[str, str] = {}
        self._define_commands()

    # ---- output ----
    def say(self, text: str = "") -> None:
        self.out.write(printable(text, keep_newlines=True) + "\n")
        self.out.flush()

    def complain(self, text: str) -> None:
        self.out.flush()
        self.err.write(printable(text, keep_newlines=True) + "\n")
        self.err.flush()

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

    def _start(self, plan: Plan) -> None:
        self._kill()
        module, kernel, args, grid, block = prepare_launch(self.options)
        module.device.stdout = self.out
        self.args = args
        self.kernels += 1
        self.focus_thread = None
        self.last_function = self.last_source = None
        self.list_state = self.x_state = None
        options = self.options
        self.engine = Engine(self, kernel, args, grid, block, shared=options.shared,
                             max_steps=options.max_steps or DEFAULT_MAX_STEPS,
                             max_dynamic_shared=options.max_dynamic_shared, history_limit=self.history_limit)
        self.states = ThreadStates(self.engine)
        self.say(f"[Launch of CUDA Kernel {self.kernels} ({self._kernel_title()}) on Device 0]")
        self._handle(self.engine.start(plan))

    def _kill(self) -> None:
        if self.engine is not None:
            self.engine.kill()
            self.engine = None

    def _handle(self, event) -> None:
        kind, payload = event
        if kind == "stop":
            self._report_stop(payload)
            return
        engine, self.engine = self.engine, None
        if kind == "finished":
            self.say(f"[Termination of CUDA Kernel {self.kernels} ({self._kernel_title()}) on Device 0]")
            if getattr(self.options, "out", None):
                os.makedirs(self.options.out, exist_ok=True)
                for index, arg in enumerate(self.args):
                    if isinstance(arg, np.ndarray):
                        write_npy_atomically(os.path.join(self.options.out, f"arg{index}.npy"), arg)
        elif kind == "error":
            error = payload
            if isinstance(error, DeviceError):
                if not (engine.fault_stop is not None and engine.fault_stop.error.cuda_error == error.cuda_error):
                    self.say(error.report)
                self.say(f"[Termination of CUDA Kernel {self.kernels} ({self._kernel_title()}) on Device 0 "
                         f"with {error.cuda_error}]")
            else:
                raise DebugError(str(error))

    def _plan(self, mode: str, count: int = 1) -> Plan:
        batch = self._require_running()
        focus = self._focus()
        first = focus - focus % 32
        _, sel = self.engine.current()
        _, states = self.states.of(np.arange(first, first + 32, dtype=np.int64))
        running = bool(np.any(states == RUNNING))
        skip = running and (sel is None or not contains(sel, first, first + 32))
        return Plan(mode, (first, first + 32), count=count, skip=skip,
                    base_depth=Engine.depth_of(batch, focus))

    def _go(self, plan: Plan) -> None:
        self._handle(self.engine.resume(plan))

    # ---- focus ----
    def _focus(self) -> int:
        self._require_running()
        if self.focus_thread is None:
            raise DebugError("Focus not set on any active CUDA kernel.")
        return self.focus_thread

    def _coordinates(self, thread: int):
        return self.batch.thread_coordinates(int(thread))

    def _set_focus(self, thread: int, announce: bool = True) -> None:
        changed = thread != self.focus_thread
        self.focus_thread = int(thread)
        if changed and announce:
            self.say(self._focus_message())

    def _focus_message(self) -> str:
        batch = self.batch
        thread = self.focus_thread
        block, xyz = self._coordinates(thread)
        local = thread % batch.tpc_pad
        cta = batch.cta_start + thread // batch.tpc_pad
        return (f"[Switching focus to CUDA kernel {self.kernels}, grid {batch.launch.grid_id}, block {dims(block)}, "
                f"thread {dims(xyz)}, device 0, sm {cta % 132}, warp {local // 32}, lane {local % 32}]")

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

    # ---- locations and reports ----
    def _frame_name(self, function: str) -> str:
        if function == self.program.name:
            return self._kernel_title()
        return plain_name(function)

    def _where(self, instr: ir.Instr) -> str:
        return f"{self.ptx_name}:{instr.line}"

    def _thread_pc(self, thread: int) -> Tuple[int, int]:
        pcs, states = self.states.of(np.array([thread]))
        return int(pcs[0]), int(states[0])

    def _focus_pc(self) -> int:
        """The focused thread's pc; an error once it has exited."""
        pc, state = self._thread_pc(self._focus())
        if state == EXITED or pc < 0:
            raise DebugError("The focused thread has exited.")
        return pc

    def _location(self, full: bool, prefix: str = "") -> None:
        """Where the focused thread is: its frame (when full or the function changed), PTX line, CUDA line."""
        thread = self.focus_thread
        pc, state = self._thread_pc(thread)
        if state == EXITED or pc < 0:
            block, xyz = self._coordinates(thread)
            self.say(f"[thread {dims(xyz)} of block {dims(block)} has exited]")
            return
        instr = self.program.instrs[pc]
        text = one_line(instr.text)
        if full or instr.function != self.last_function:
            self.say(f"{prefix}{self._frame_name(instr.function)} at {self._where(instr)}   {text}")
        else:
            self.say(f"{self._where(instr)}   {text}")
        self.last_function = instr.function
        if instr.source is not None and instr.source[1] > 0 and (full or instr.source != self.last_source):
            path, line = instr.source
            source = self.sources.line(path, line)
            self.say(f"{os.path.basename(path)}:{line}" + (f"   {source}" if source else ""))
        self.last_source = instr.source
        self.list_state = None

    def _report_stop(self, stop: Stop) -> None:
        if stop.thread is not None:
            self._set_focus(stop.thread)
        elif self.focus_thread is None:
            self._set_focus(self._first_of(stop.sel))
        full, prefix = False, ""
        if stop.reason == "breakpoint":
            breakpoint = stop.breakpoint
            if stop.message:
                self.say(stop.message)
            self.say()
            full = True
            prefix = f"{'Temporary breakpoint' if breakpoint.temporary else 'Breakpoint'} {breakpoint.number}, "
            if breakpoint.temporary:
                self._remove(breakpoint)
        elif stop.reason == "watch":
            self._report_watch(stop)
            full = True
        elif stop.reason == "interrupt":
            self.say("\nProgram received signal SIGINT, Interrupt.")
            full = True
        elif stop.reason == "fault":
            self._report_fault(stop)
            full = True
        elif stop.reason == "focus-exited":
            full = True
        elif stop.reason == "history-start":
            self.say("\nNo more reverse-execution history.")
            full = True
        self._location(full, prefix)
        self._show_displays()

    @staticmethod
    def _first_of(sel) -> int:
        return 0 if sel is None or isinstance(sel, slice) else int(sel[0])

    def _report_watch(self, stop: Stop) -> None:
        hit = stop.watch
        watch = hit.watch
        self.say(f"\nHardware watchpoint {watch.number}: {watch.spec}")
        self.say()
        if watch.value_type is None:
            watch.value_type = self._writer_type(hit.instr, watch.length)
        self.say(f"Old value = {self._watch_value(hit.old, watch.value_type)}")
        self.say(f"New value = {self._watch_value(hit.new, watch.value_type)}")
        block, xyz = self._coordinates(hit.thread)
        more = f" (last of {hit.writers} writing threads)" if hit.writers > 1 else ""
        self.say(f"Written by block {dims(block)} thread {dims(xyz)}{more} at {self._where(hit.instr)}"
                 f"   {one_line(hit.instr.text)}")

    @staticmethod
    def _writer_type(instr: ir.Instr, length: int) -> str:
        """The writing instruction's type when it covers the watched bytes exactly, else "" (hex)."""
        type_name = instr.decoded.type if instr.decoded is not None and instr.decoded.types else None
        t = TYPES.get(type_name) if type_name else None
        if t is not None and t.bytes == length and t.kind in ("float", "signed", "unsigned", "bits"):
            return type_name
        return ""

    @staticmethod
    def _watch_value(data: np.ndarray, type_name: str) -> str:
        """The watched bytes as the watchpoint's type (.b as signed), or in hex."""
        t = TYPES.get(type_name) if type_name else None
        if t is not None:
            value = data.view(t.dtype)[0]
            if t.kind == "bits":
                value = data.view(np.dtype(f"i{t.bytes}"))[0]
            return format_scalar(value)
        if len(data) in (1, 2, 4, 8):
            return format_scalar(data.view(np.dtype(f"u{len(data)}"))[0], "x")
        return "{" + ", ".join(f"0x{b:02x}" for b in data) + "}"

    def _report_fault(self, stop: Stop) -> None:
        error = stop.error
        code, name = _exception_of(error)
        instr = self.program.instrs[stop.pc]
        self.say(f"\nCUDA Exception: {name}")
        self.say(f"The exception was triggered at pc {self.addresses.of(stop.pc):#x} ({self._where(instr)})")
        self.say(error.report)
        self.say(f"\nKernel {self.kernel_name} received signal {code}, {name}.")

    def _show_displays(self) -> None:
        for number, fmt, text in self.displays:
            self._display_one(number, fmt, text)

    def _display_one(self, number: int, fmt: Optional[str], text: str) -> None:
        label = f"{number}: " + (f"/{fmt} " if fmt else "") + text
        try:
            self.say(f"{label} = {self._print_value(text, fmt, None)[1]}")
        except DebugError as error:
            self.say(f"{label} = <error: {error}>")

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

    def _context(self, lanes: np.ndarray) -> LaneContext:
        """Names resolve in the focused thread's function, nearest its pc."""
        function, pc = self.program.name, 0
        if self.engine is not None and self.batch is not None and self.focus_thread is not None:
            focus_pc, _ = self._thread_pc(self.focus_thread)
            if focus_pc >= 0:
                function, pc = self.program.instrs[focus_pc].function, focus_pc
        return LaneContext(self, lanes, function, pc)

    def value_of(self, text: str, lanes: np.ndarray) -> np.ndarray:
        tree = parse_expression(text)
        vector = self._vector_special(tree)
        if vector is not None:
            raise DebugError(f"{text} is a vector: name a component ({text}.x).")
        value = evaluate(tree, self._context(lanes))
        return np.array(np.broadcast_to(value, (len(lanes),)))

    @staticmethod
    def _vector_special(tree) -> Optional[str]:
        if tree[0] in ("reg", "conv") and tree[1][1:] in VECTOR_SPECIALS:
            return tree[1][1:]
        return None

    def condition_mask(self, breakpoint: Breakpoint, batch, pc: int, lanes: np.ndarray) -> np.ndarray:
        context = LaneContext(self, lanes, self.program.instrs[pc].function, pc)
        return np.asarray(evaluate(breakpoint.condition, context))

    def param_value(self, param: ir.KernelParam):
        launch = self.engine.launch
        raw = self.batch.memory.read(launch.param_base + param.offset, param.size)
        t = TYPES.get(param.type)
        if t is not None and t.bytes == param.size and t.kind != "pred":
            value = raw.view(t.dtype)[0]
            return value.view(np.int64) if t.kind == "bits" and t.bytes == 8 else value
        return raw.view(np.dtype(f"u{param.size}"))[0] if param.size in (1, 2, 4, 8) else raw

    def _print_value(self, text: str, fmt: Optional[str], lanes_spec: Optional[str]) -> Tuple[np.ndarray, str]:
        lanes = self._lanes(lanes_spec)
        tree = parse_expression(text)
        vector = self._vector_special(tree)
        if vector is not None:
            parts = []
            for axis in "xyz":
                values = evaluate(("reg", f"%{vector}.{axis}"), self._context(lanes))
                parts.append(np.array(np.broadcast_to(values, (len(lanes),))))
            if len(lanes) == 1:
                shown = "{" + ", ".join(f"{axis} = {format_scalar(part[0], fmt)}"
                                        for axis, part in zip("xyz", parts)) + "}"
            else:
                shown = format_lanes(["{" + ", ".join(f"{axis} = {format_scalar(part[i], fmt)}"
                                                      for axis, part in zip("xyz", parts)) + "}"
                                      for i in range(len(lanes))])
            return parts[0], shown
        values = np.array(np.broadcast_to(evaluate(tree, self._context(lanes)), (len(lanes),)))
        if tree == ("conv", "$pc") and fmt is None:
            pcs, _ = self.states.of(lanes)
            shown = [self._code_label(int(value)) if pc >= 0 else "<exited>" for value, pc in zip(values, pcs)]
            return values, format_lanes(shown) if lanes_spec == "all" else shown[0]
        if lanes_spec == "all":
            return values, format_lanes([format_scalar(v, fmt) for v in values])
        return values, format_scalar(values[0], fmt)

    # ---- the command table ----
    def _define_commands(self) -> None:
        table = [
            ("run", self.cmd_run, "Launch the kernel (again, from the beginning).", "run", False),
            ("start", self.cmd_start, "Launch the kernel and stop at its first instruction.", "start", False),
            ("continue", self.cmd_continue, "Resume until a breakpoint, a watchpoint or the kernel's end.",
             "continue", True),
            ("step", self.cmd_step, "One instruction of the focused warp, into calls.", "step [N]", True),
            ("stepi", self.cmd_step, "One instruction of the focused warp, into calls.", "stepi [N]", True),
            ("next", self.cmd_next, "One instruction of the focused warp, over calls.", "next [N]", True),
            ("nexti", self.cmd_next, "One instruction of the focused warp, over calls.", "nexti [N]", True),
            ("finish", self.cmd_finish,
             "Run the focused warp out of its .func, or to its next barrier or exit.", "finish", True),
            ("reverse-step", self.cmd_reverse_step, "Go back one instruction of the focused warp.",
             "reverse-step [N]", True),
            ("reverse-stepi", self.cmd_reverse_step, "Go back one instruction of the focused warp.",
             "reverse-stepi [N]", True),
            ("reverse-next", self.cmd_reverse_next, "Go back one instruction of the focused warp, over calls.",
             "reverse-next [N]", True),
            ("reverse-nexti", self.cmd_reverse_next, "Go back one instruction of the focused warp, over calls.",
             "reverse-nexti [N]", True),
            ("reverse-continue", self.cmd_reverse_continue,
             "Go back to the last breakpoint or watchpoint hit, or the start of the history.",
             "reverse-continue", True),
            ("break", self.cmd_break, "Set a breakpoint.",
             "break [LINE | FILE:LINE | LABEL | FUNCTION | *ADDRESS] [if CONDITION]", False),
            ("tbreak", self.cmd_tbreak, "Set a breakpoint that is deleted when hit.", "tbreak LOCATION [if COND]",
             False),
            ("condition", self.cmd_condition, "Set or clear a breakpoint's condition.", "condition N [EXPRESSION]",
             False),
            ("delete", self.cmd_delete, "Delete breakpoints and watchpoints (all without numbers).",
             "delete [N...] | delete display [N...]", False),
            ("disable", self.cmd_disable, "Disable breakpoints and watchpoints.", "disable [N...]", False),
            ("enable", self.cmd_enable, "Enable breakpoints and watchpoints.", "enable [N...]", False),
            ("watch", self.cmd_watch, "Stop when any thread writes memory (cuda-gdb has no device watchpoints).",
             "watch[/SIZE] [@SPACE] ADDRESS   (SIZE 1 2 4 8 or b h w g; default 4 bytes)", False),
            ("print", self.cmd_print, "Print an expression for the focused lane, one lane or all lanes.",
             "print[/x|d|u|t|o|c|f|a] EXPRESSION [@all | @lane N]", True),
            ("output", self.cmd_output, "Print an expression without recording it in the value history.",
             "output[/FMT] EXPRESSION", True),
            ("x", self.cmd_x, "Examine memory: x/NFU [@global|@shared|@local|@const|@param] ADDRESS.",
             "x/NFU [@SPACE] ADDRESS   (F: x d u o t a c f s i; U: b h w g)", True),
            ("list", self.cmd_list, "List PTX around the focus (with CUDA lines from .loc), or a location.",
             "list [LINE | FILE:LINE | LABEL | FUNCTION | *ADDRESS]", True),
            ("display", self.cmd_display, "Print an expression at every stop.", "display[/FMT] EXPRESSION", False),
            ("undisplay", self.cmd_undisplay, "Stop displaying expressions.", "undisplay [N...]", False),
            ("info", self.cmd_info, "Show breakpoints, registers, displays, CUDA state, the record.",
             "info breakpoints|watchpoints|registers|display|args|record|line|"
             "cuda kernels|blocks|warps|lanes|barriers", True),
            ("cuda", self.cmd_cuda, "Show or switch the focus: cuda block (1,0,0) thread (3,0,0), cuda warp 2 lane 5.",
             "cuda [kernel K] [block B] [thread T] [warp W] [lane L]", False),
            ("backtrace", self.cmd_backtrace, "Show the focused thread's frames (through .func calls).",
             "backtrace", True),
            ("kill", self.cmd_kill, "Stop the kernel being debugged.", "kill", False),
            ("echo", self.cmd_echo, "Print text (\\n for a newline).", "echo TEXT", False),
            ("help", self.cmd_help, "List the commands, or describe one.", "help [COMMAND]", False),
            ("quit", self.cmd_quit, "Leave the debugger.", "quit", False),
        ]
        for name, handler, summary, usage, repeat in table:
            self.commands[name] = Command(name, handler, summary, usage, repeat)
        self.aliases = {"b": "break", "br": "break", "c": "continue", "cont": "continue", "s": "step",
                        "si": "stepi", "n": "next", "ni": "nexti", "p": "print", "bt": "backtrace",
                        "where": "backtrace", "i": "info", "l": "list", "q": "quit", "r": "run",
                        "rs": "reverse-step", "rsi": "reverse-stepi", "rn": "reverse-next", "rni": "reverse-nexti",
                        "rc": "reverse-continue", "d": "delete", "tb": "tbreak", "k": "kill", "h": "help",
                        "fin": "finish", "disp": "display", "u": "undisplay", "exit": "quit"}

    def resolve(self, word: str) -> Command:
        if word in self.commands:
            return self.commands[word]
        if word in self.aliases:
            return self.commands[self.aliases[word]]
        matches = sorted(name for name in self.commands if name.startswith(word))
        if len(matches) == 1:
            return self.commands[matches[0]]
        if matches:
            raise DebugError(f'Ambiguous command "{word}": {", ".join(matches)}.')
        close = difflib.get_close_matches(word, list(self.commands) + list(self.aliases), n=3, cutoff=0.6)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise DebugError(f'Undefined command: "{word}".{hint} Try "help".')

    def execute(self, line: str) -> bool:
        """Run one command line; an empty line repeats the last repeatable one. False when it failed."""
        stripped = line.strip()
        repeat = False
        if not stripped:
            if not self.last_repeatable:
                return True
            stripped, repeat = self.last_line, True
        if stripped.startswith("#"):
            return True
        match = re.match(r"([A-Za-z][\w-]*|\S)(.*)", stripped)
        word, rest = match.group(1), match.group(2)
        argument = rest if rest.startswith("/") else rest.strip()
        try:
            command = self.resolve(word)
            self.last_line, self.last_repeatable = stripped, command.repeat
            command.handler(argument, repeat)
            self.last_failed = False
            return True
        except DebugError as error:
            self.complain(str(error))
        except GpuemuError as error:
            self.complain(str(error))
        except MemoryError:
            self.complain("out of host memory")
        except Exception as error:  # a gpuemu bug: one line, and the session goes on
            self.complain(f"internal error: {type(error).__name__}: {error}")
        self.last_failed = True
        return False

    # ---- running ----
    def cmd_run(self, arg: str, repeat: bool) -> None:
        if self.engine is not None:
            self.say("The kernel being debugged has been started already: starting it from the beginning.")
        self._start(Plan("continue"))

    def cmd_start(self, arg: str, repeat: bool) -> None:
        entry = self.program.functions[self.program.name].entry_pc
        self._announce(self._add_breakpoint(f"*{self.addresses.of(entry):#x}", (entry,), temporary=True,
                                            condition=None))
        self._start(Plan("continue"))

    def cmd_continue(self, arg: str, repeat: bool) -> None:
        self._require_running()
        self._go(Plan("continue"))

    @staticmethod
    def _count(arg: str) -> int:
        if not arg:
            return 1
        try:
            count = int(arg, 0)
        except ValueError:
            raise DebugError(f'No symbol "{arg}" in current context.') from None
        if count < 1:
            raise DebugError("Count must be at least 1.")
        return count

    def cmd_step(self, arg: str, repeat: bool) -> None:
        self._go(self._plan("step", self._count(arg)))

    def cmd_next(self, arg: str, repeat: bool) -> None:
        self._go(self._plan("next", self._count(arg)))

    def cmd_finish(self, arg: str, repeat: bool) -> None:
        plan = self._plan("finish")
        batch = self.batch
        focus = self.focus_thread
        block, _ = self._coordinates(focus)
        warp = (focus % batch.tpc_pad) // 32
        if plan.base_depth > 0:
            pc, _ = self._thread_pc(focus)
            self.say(f"Run till exit from #0  {self._frame_name(self.program.instrs[pc].function)} () at "
                     f"{self._where(self.program.instrs[pc])}")
        else:
            self.say(f"Run till the next barrier or exit of warp {warp} of block {dims(block)}")
        self._go(plan)

    def _reverse(self, mode: str, count: int = 1) -> None:
        batch = self._require_running()
        if self.history_limit <= 0:
            raise DebugError("Target does not support reverse execution: recording is off (--history 0).")
        focus = self._focus()
        first = focus - focus % 32
        stop = self.engine.reverse(mode, (first, first + 32), count, Engine.depth_of(batch, focus))
        self._report_stop(stop)

    def cmd_reverse_step(self, arg: str, repeat: bool) -> None:
        self._reverse("reverse-step", self._count(arg))

    def cmd_reverse_next(self, arg: str, repeat: bool) -> None:
        self._reverse("reverse-next", self._count(arg))

    def cmd_reverse_continue(self, arg: str, repeat: bool) -> None:
        self._reverse("reverse-continue")

    def cmd_kill(self, arg: str, repeat: bool) -> None:
        self._require_running()
        self._kill()
        self.say(f"[Kernel {self._kernel_title()} killed]")

    def cmd_quit(self, arg: str, repeat: bool) -> None:
        self._kill()
        self.quitting = True

    def cmd_echo(self, arg: str, repeat: bool) -> None:
        self.out.write(arg.replace("\\n", "\n"))
        self.out.flush()

    # ---- breakpoints ----
    def _locate(self, spec: str) -> Tuple[Tuple[int, ...], str]:
        """pcs of a location: PTX LINE, FILE:LINE (PTX or CUDA via .loc), label, function, *ADDRESS."""
        program = self.program
        if spec.startswith("*"):
            address = int(self.value_of(spec[1:], self._lanes(None))[0])
            pc = self.addresses.pc_at(address)
            if pc is None:
                raise DebugError(f"No instruction at address {address:#x} (instructions are "
                                 f"{self.addresses.spacing} bytes apart, 0x0 to {self.addresses.last():#x}).")
            return (pc,), spec
        file_part, sep, line_part = spec.rpartition(":")
        if sep and line_part.isdigit():
            line = int(line_part)
            if os.path.basename(file_part) in (self.ptx_name, os.path.basename(program.source_name)):
                return self._ptx_line(line), spec
            return self._cuda_line(file_part, line), spec
        if spec.isdigit():
            return self._ptx_line(int(spec)), spec
        for name in (spec, f"${spec}" if not spec.startswith("$") else spec):
            if name in program.labels:
                return (program.labels[name],), spec
        for function in program.functions.values():
            if spec in (function.name, plain_name(function.name)):
                return (function.entry_pc,), spec
        raise DebugError(f'Function "{spec}" not defined (no such label, function or line).')

    def _ptx_line(self, line: int) -> Tuple[int, ...]:
        for instr in self.program.instrs:
            if instr.line >= line and not instr.text.startswith("ret; (end") and \
                    self.addresses.starts_instruction(instr.pc):
                return (instr.pc,)
        raise DebugError(f'Line {line} is out of range for "{self.ptx_name}".')

    def _cuda_line(self, path: str, line: int) -> Tuple[int, ...]:
        name = os.path.basename(path)
        in_file = [instr for instr in self.program.instrs
                   if instr.source is not None and os.path.basename(instr.source[0]) == name]
        if not in_file:
            raise DebugError(f'No source file named {path}.')
        later = sorted({instr.source[1] for instr in in_file if instr.source[1] >= line})
        if not later:
            raise DebugError(f'Line {line} is out of range for "{name}".')
        target = later[0]
        pcs = []
        previous = None
        for instr in self.program.instrs:
            here = instr.source is not None and os.path.basename(instr.source[0]) == name \
                and instr.source[1] == target
            if here and not previous:
                pcs.append(instr.pc)
            previous = here
        return tuple(pcs)

    def _parse_break(self, arg: str) -> Tuple[str, Tuple[int, ...], Optional[str]]:
        location, condition = arg, None
        match = re.match(r"(.*?)(?:^|\s)if(?:\s+(.*)|$)", arg)
        if match:
            location, condition = match.group(1).strip(), (match.group(2) or "").strip()
            if not condition:
                raise DebugError("Argument required (boolean expression).")
        if not location:
            self._require_running()
            pc = self.addresses.start_of(self._focus_pc())
            return f"*{self.addresses.of(pc):#x}", (pc,), condition
        pcs, spec = self._locate(location)
        return spec, pcs, condition

    def _add_breakpoint(self, spec: str, pcs: Tuple[int, ...], temporary: bool, condition: Optional[str]) -> Breakpoint:
        tree = parse_expression(condition) if condition else None
        breakpoint = Breakpoint(self.next_number, spec, tuple(pcs), temporary=temporary,
                                condition_text=condition, condition=tree)
        self.next_number += 1
        self.breakpoints.append(breakpoint)
        self._rebuild()
        return breakpoint

    def _announce(self, breakpoint: Breakpoint) -> None:
        kind = "Temporary breakpoint" if breakpoint.temporary else "Breakpoint"
        first = self.program.instrs[breakpoint.pcs[0]]
        text = (f"{kind} {breakpoint.number} at {self.addresses.of(first.pc):#x}: file {self.ptx_name}, "
                f"line {first.line}.")
        if len(breakpoint.pcs) > 1:
            text += f" ({len(breakpoint.pcs)} locations)"
        self.say(text)

    def cmd_break(self, arg: str, repeat: bool, temporary: bool = False) -> None:
        spec, pcs, condition = self._parse_break(arg)
        self._announce(self._add_breakpoint(spec, pcs, temporary, condition))

    def cmd_tbreak(self, arg: str, repeat: bool) -> None:
        self.cmd_break(arg, repeat, temporary=True)

    def cmd_condition(self, arg: str, repeat: bool) -> None:
        number, _, text = arg.partition(" ")
        breakpoint = self._numbered(number)
        if not isinstance(breakpoint, Breakpoint):
            raise DebugError(f"Watchpoint {number} cannot have a condition here.")
        text = text.strip()
        breakpoint.condition = parse_expression(text) if text else None
        breakpoint.condition_text = text or None
        if not text:
            self.say(f"Breakpoint {breakpoint.number} now unconditional.")

    def _numbered(self, text: str):
        try:
            number = int(text)
        except ValueError:
            raise DebugError(f'Args must be breakpoint numbers, not "{text}".') from None
        for item in self.breakpoints + self.watchpoints:
            if item.number == number:
                return item
        raise DebugError(f"No breakpoint number {number}.")

    def _selected(self, arg: str) -> List[object]:
        if not arg:
            return list(self.breakpoints) + list(self.watchpoints)
        return [self._numbered(word) for word in arg.replace(",", " ").split()]

    def _remove(self, item) -> None:
        if item in self.breakpoints:
            self.breakpoints.remove(item)
        if item in self.watchpoints:
            self.watchpoints.remove(item)
        self._rebuild()

    def _rebuild(self) -> None:
        table: Dict[int, List[Breakpoint]] = {}
        for breakpoint in self.breakpoints:
            if breakpoint.enabled:
                for pc in breakpoint.pcs:
                    table.setdefault(pc, []).append(breakpoint)
        self.breakpoints_at = table

    def cmd_delete(self, arg: str, repeat: bool) -> None:
        if arg.startswith("display"):
            self.cmd_undisplay(arg[len("display"):].strip(), repeat)
            return
        if arg.startswith("breakpoints"):
            arg = arg[len("breakpoints"):].strip()
        for item in self._selected(arg):
            self._remove(item)

    def cmd_disable(self, arg: str, repeat: bool) -> None:
        for item in self._selected(arg):
            item.enabled = False
        self._rebuild()

    def cmd_enable(self, arg: str, repeat: bool) -> None:
        for item in self._selected(arg):
            item.enabled = True
        self._rebuild()

    def cmd_watch(self, arg: str, repeat: bool) -> None:
        length = 4
        if arg.startswith("/"):
            size, _, arg = arg[1:].partition(" ")
            length = _UNITS.get(size) or (int(size) if size.isdigit() else 0)
            if length not in (1, 2, 4, 8, 16):
                raise DebugError(f"Watch size must be 1, 2, 4, 8 or 16 bytes (or b h w g), not '{size}'.")
            arg = arg.strip()
        space, expression = self._space_and_expression(arg, "generic")
        if not expression:
            raise DebugError("Argument required (expression to compute).")
        address = int(self.value_of(expression, self._lanes(None))[0])
        if space == "generic":
            space, address = resolve_generic(address)
        if space in ("const", "param"):
            raise DebugError(f"Kernels cannot write @{space} memory: a watchpoint there would never trigger.")
        cta = local = 0
        label = f"@{space} {address:#x}"
        if space in ("shared", "local"):
            if self.engine is not None and self.batch is not None and self.focus_thread is not None:
                batch = self.batch
                cta = batch.cta_start + self.focus_thread // batch.tpc_pad
                local = self.focus_thread % batch.tpc_pad
            gx, gy, _ = self.grid
            block = (cta % gx, (cta // gx) % gy, cta // (gx * gy))
            if space == "shared":
                label += f" of block {dims(block)}"
            else:
                bx, by, _ = self.block
                label += f" of block {dims(block)} thread {dims((local % bx, (local // bx) % by, local // (bx * by)))}"
        if length != 4:
            label += f" ({length} bytes)"
        watch = Watchpoint(self.next_number, label, space, address, length, cta=cta, local=local)
        if self.engine is not None and self.batch is not None:
            self.engine.read_watch(watch)
        self.next_number += 1
        self.watchpoints.append(watch)
        self.say(f"Hardware watchpoint {watch.number}: {label}")

    def _space_and_expression(self, arg: str, default: str) -> Tuple[str, str]:
        match = re.match(r"@(\w+)\s*(.*)", arg)
        if not match:
            return default, arg.strip()
        space = match.group(1)
        if space not in SPACES:
            raise DebugError(f"Unknown memory space @{space} (use @global @shared @local @const @param).")
        return space, match.group(2).strip()

    # ---- data ----
    @staticmethod
    def _lanes_suffix(text: str) -> Tuple[str, Optional[str]]:
        match = re.match(r"(.*?)\s*@(all|lane\s+\d+)\s*$", text)
        if match:
            return match.group(1), " ".join(match.group(2).split())
        return text, None

    def cmd_print(self, arg: str, repeat: bool) -> None:
        fmt, rest = parse_format(arg.strip())
        expression, lanes = self._lanes_suffix(rest)
        if not expression:
            raise DebugError("Argument required (expression to compute).")
        values, shown = self._print_value(expression, fmt, lanes)
        self.values.append(np.asarray(values))
        self.say(f"${len(self.values)} = {shown}")

    def cmd_output(self, arg: str, repeat: bool) -> None:
        fmt, rest = parse_format(arg.strip())
        expression, lanes = self._lanes_suffix(rest)
        self.say(self._print_value(expression, fmt, lanes)[1])

    def cmd_display(self, arg: str, repeat: bool) -> None:
        if not arg:
            if self.engine is not None and self.focus_thread is not None:
                self._show_displays()
            return
        fmt, expression = parse_format(arg)
        parse_expression(expression)
        number = self.next_display
        self.next_display += 1
        self.displays.append((number, fmt, expression))
        if self.engine is not None and self.focus_thread is not None:
            self._display_one(number, fmt, expression)

    def cmd_undisplay(self, arg: str, repeat: bool) -> None:
        if not arg:
            self.displays = []
            return
        wanted = set()
        for word in arg.replace(",", " ").split():
            if not word.isdigit() or all(number != int(word) for number, _, _ in self.displays):
                raise DebugError(f"No display number {word}.")
            wanted.add(int(word))
        self.displays = [entry for entry in self.displays if entry[0] not in wanted]

    def cmd_x(self, arg: str, repeat: bool) -> None:
        batch = self._require_running()
        if (repeat or not arg) and self.x_state is not None:
            space, address, count, fmt, unit = self.x_state
        else:
            count, fmt, unit = 1, (self.x_state[3] if self.x_state else "x"), None
            if arg.startswith("/"):
                spec, _, arg = arg[1:].partition(" ")
                match = re.fullmatch(r"(\d*)([a-z]*)", spec)
                if not match:
                    raise DebugError(f"Invalid number \"{spec}\".")
                count = int(match.group(1) or 1)
                for letter in match.group(2):
                    if letter in _UNITS:
                        unit = _UNITS[letter]
                    elif letter in "xduotacfsi":
                        fmt = letter
                    else:
                        raise DebugError(f'Undefined output format "{letter}".')
            space, expression = self._space_and_expression(arg.strip(), "generic")
            if not expression:
                raise DebugError("Argument required (starting display address).")
            address = int(np.asarray(self.value_of(expression, self._lanes(None))[0]).astype(np.uint64))
            if unit is None:
                last = self.x_state[4] if self.x_state else 4
                unit = 8 if fmt == "a" else 1 if fmt == "c" else (last if last in (4, 8) else 4) if fmt == "f" \
                    else last
        if count * unit > _EXAMINE_LIMIT:
            raise DebugError(f"x shows at most {_EXAMINE_LIMIT:,} bytes at a time.")
        focus = self._focus()
        cta, thread = focus // batch.tpc_pad, focus
        if fmt == "i":
            self._examine_code(address, count)
            self.x_state = (space, address + count * self.addresses.spacing, count, fmt, unit)
            return
        if fmt == "s":
            self._examine_strings(space, address, count, cta, thread)
            return
        data = read_space(batch, space, address, count * unit, cta, thread)
        per_line = 2 if fmt == "a" else _PER_LINE[unit]
        dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[unit]
        values = data.view(dtype)
        prefix = "" if space in ("global", "generic") else f"@{space} "
        for start in range(0, count, per_line):
            here = address + start * unit
            label = symbol_at(batch, space, here)
            head = f"{prefix}{here:#x}" + (f" <{label}>" if label else "") + ":"
            cells = [self._examine_cell(values[i], fmt, unit) for i in range(start, min(count, start + per_line))]
            self.say(head + "\t" + "\t".join(cells))
        self.x_state = (space, address + count * unit, count, fmt, unit)

    @staticmethod
    def _examine_cell(value, fmt: str, unit: int) -> str:
        if fmt == "f" and unit in (2, 4, 8):
            return format_scalar(np.asarray(value).view({2: np.float16, 4: np.float32, 8: np.float64}[unit])[()])
        if fmt == "f":
            fmt = "d"
        if fmt == "d":
            return format_scalar(value, "d")
        if fmt == "a":
            return format_scalar(value, "x")
        return format_scalar(value, fmt, pad=fmt in ("x", "t", "o"))

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

    def _examine_code(self, address: int, count: int) -> None:
        """x/i: listing instructions from the one holding address (a SASS one once, however lowered)."""
        instrs = self.program.instrs
        focus_pc, _ = self._thread_pc(self._focus())
        focus_start = self.addresses.start_of(focus_pc) if focus_pc >= 0 else None
        for pc in self.addresses.from_address(address, count):
            mark = "=> " if pc == focus_start else "   "
            self.say(f"{mark}{self._code_label(self.addresses.of(pc))}:\t{one_line(instrs[pc].text)}")

    def _examine_strings(self, space: str, address: int, count: int, cta: int, thread: int) -> None:
        batch = self.batch
        for _ in range(count):
            chars = []
            while len(chars) < 200:
                byte = int(read_space(batch, space, address + len(chars), 1, cta, thread)[0])
                if byte == 0:
                    break
                chars.append(byte)
            self.say(f"{address:#x}:\t{_c_string(bytes(chars))}")
            address += len(chars) + 1

    # ---- list ----
    def cmd_list(self, arg: str, repeat: bool) -> None:
        lines_of_ptx = self.program.lines
        if not arg and self.list_state is not None:
            kind, path, start = self.list_state
        else:
            kind, path = "ptx", None
            if arg:
                file_part, sep, line_part = arg.rpartition(":")
                if sep and line_part.isdigit() and os.path.basename(file_part) != self.ptx_name:
                    lines = self.sources.lines(file_part)
                    if lines is None:
                        self._cuda_line(file_part, int(line_part))
                        raise DebugError(f"Cannot find the source file {file_part} next to {self.ptx_name}.")
                    kind, path, center = "cuda", file_part, int(line_part)
                else:
                    pcs, _ = self._locate(arg)
                    center = self.program.instrs[pcs[0]].line
            elif self.engine is not None and self.batch is not None and self.focus_thread is not None:
                pc, _ = self._thread_pc(self.focus_thread)
                center = self.program.instrs[max(pc, 0)].line
            else:
                center = self.program.instrs[self.program.functions[self.program.name].entry_pc].line
            start = max(1, center - 5)
        lines = lines_of_ptx if kind == "ptx" else self.sources.lines(path)
        if start > len(lines):
            name = self.ptx_name if kind == "ptx" else os.path.basename(path)
            raise DebugError(f'Line number {start} out of range; "{name}" has {len(lines)} lines.')
        for number in range(start, min(len(lines), start + 9) + 1):
            text = lines[number - 1]
            note = self._loc_note(text) if kind == "ptx" else ""
            self.say(f"{number}\t{text}{note}")
        self.list_state = (kind, path, start + 10)

    def _loc_note(self, text: str) -> str:
        match = re.match(r"\s*\.loc\s+(\d+)\s+(\d+)", text)
        if not match:
            return ""
        path = self.program.files.get(int(match.group(1)))
        if path is None:
            return ""
        line = int(match.group(2))
        source = self.sources.line(path, line)
        return f"\t// {os.path.basename(path)}:{line}" + (f"  {source}" if source else "")

    # ---- info ----
    def cmd_info(self, arg: str, repeat: bool) -> None:
        word, _, rest = arg.partition(" ")
        subcommands = {"breakpoints": self.info_breakpoints, "watchpoints": self.info_watchpoints,
                       "registers": self.info_registers, "display": self.info_display, "cuda": self.info_cuda,
                       "record": self.info_record, "args": self.info_args, "line": self.info_line,
                       "frame": self.info_frame}
        aliases = {"b": "breakpoints", "br": "breakpoints", "break": "breakpoints", "r": "registers",
                   "reg": "registers"}
        if not word:
            raise DebugError('"info" must be followed by the name of an info command: '
                             + ", ".join(sorted(subcommands)) + ".")
        name = aliases.get(word) or word
        matches = [key for key in subcommands if key.startswith(name)]
        if name in subcommands:
            matches = [name]
        if len(matches) != 1:
            raise DebugError(f'Ambiguous info command "{word}": {", ".join(sorted(matches))}.' if matches
                             else f'Undefined info command: "{word}".  Try "help info".')
        subcommands[matches[0]](rest.strip())

    def info_breakpoints(self, arg: str, watch_only: bool = False) -> None:
        items = [item for item in self.breakpoints + self.watchpoints
                 if not watch_only or isinstance(item, Watchpoint)]
        items.sort(key=lambda item: item.number)
        if not items:
            self.say("No watchpoints." if watch_only else "No breakpoints or watchpoints.")
            return
        self.say("Num     Type           Disp Enb Address            What")
        for item in items:
            enabled = "y" if item.enabled else "n"
            if isinstance(item, Watchpoint):
                self.say(f"{item.number:<8}{'hw watchpoint':<15}keep {enabled}   {'':<19}{item.spec}")
                hits = item.hits
            else:
                disp = "del " if item.temporary else "keep"
                if len(item.pcs) == 1:
                    instr = self.program.instrs[item.pcs[0]]
                    self.say(f"{item.number:<8}{'breakpoint':<15}{disp} {enabled}   "
                             f"{self.addresses.of(instr.pc):#018x} in {plain_name(instr.function)} at "
                             f"{self._where(instr)}")
                else:
                    self.say(f"{item.number:<8}{'breakpoint':<15}{disp} {enabled}   <MULTIPLE>")
                if item.condition_text:
                    self.say(f"\tstop only if {item.condition_text}")
                hits = item.hits
            if hits:
                self.say(f"\tbreakpoint already hit {hits} time{'s' if hits != 1 else ''}")
            if isinstance(item, Breakpoint) and len(item.pcs) > 1:
                for index, pc in enumerate(item.pcs, 1):
                    instr = self.program.instrs[pc]
                    self.say(f"{f'{item.number}.{index}':<28}{enabled}   {self.addresses.of(pc):#018x} in "
                             f"{plain_name(instr.function)} at {self._where(instr)}")

    def info_watchpoints(self, arg: str) -> None:
        self.info_breakpoints(arg, watch_only=True)

    def info_display(self, arg: str) -> None:
        if not self.displays:
            self.say("There are no auto-display expressions now.")
            return
        self.say("Auto-display expressions now in effect:\nNum Enb Expression")
        for number, fmt, text in self.displays:
            self.say(f"{number}:   y  " + (f"/{fmt} " if fmt else "") + text)

    def info_registers(self, arg: str) -> None:
        batch = self._require_running()
        focus = self._focus()
        pc, _ = self._thread_pc(focus)
        function = self.program.instrs[max(pc, 0)].function
        if arg:
            regs = [self.registers.lookup(name, function, pc) for name in arg.split()]
        else:
            regs = sorted(self.registers.of_function(function),
                          key=_sass_register_order if self.registers.listing else _register_order)
        lanes = np.array([focus], dtype=np.int64)
        for reg in regs:
            raw = batch.regs[reg.index][focus]
            bits, width = raw_bits(raw)
            natural = format_scalar(typed_values(batch.regs[reg.index], reg.type, lanes)[0])
            self.say(f"{reg.name:<15}{'0x' + format(bits, 'x'):<19}{natural}")

    def info_args(self, arg: str) -> None:
        self._require_running()
        for param in self.program.params:
            value = self.param_value(param)
            shown = format_scalar(value, "x") if param.size == 8 and param.type in ("u64", "b64") else \
                format_scalar(value)
            self.say(f"{param.name} = {shown}")

    def info_line(self, arg: str) -> None:
        if arg:
            pcs, _ = self._locate(arg)
            pc = pcs[0]
        else:
            pc = self._focus_pc()
        instr = self.program.instrs[pc]
        source = f" ({os.path.basename(instr.source[0])}:{instr.source[1]})" if instr.source else ""
        self.say(f'Line {instr.line} of "{self.ptx_name}"{source} is at address {self.addresses.of(pc):#x} '
                 f"<{self._function_offset(pc)}>: {one_line(instr.text)}")

    def info_frame(self, arg: str) -> None:
        self.cmd_backtrace("1", False)

    def info_record(self, arg: str) -> None:
        engine = self.engine
        if engine is None or self.history_limit <= 0:
            self.say("No record target is currently active." if engine is None else
                     "Recording is off (--history 0).")
            return
        history = engine.history
        records = len(history.records)
        per = history.nbytes / history.warps if history.warps else 0
        self.say("Active record target: record-full")
        self.say(f"Record mode: {'Replay' if not history.at_present else 'Normal'}")
        self.say(f"Log contains {history.warps:,} warp instructions ({records:,} scheduler steps) in "
                 f"{history.nbytes:,} bytes, {per:.0f} bytes per warp instruction.")
        if not history.at_present:
            self.say(f"Replay position: step {history.cursor:,} of {records:,}.")
        self.say(f"Max logged warp instructions: {history.limit:,} (--history).")

    # ---- info cuda ----
    def info_cuda(self, arg: str) -> None:
        word = arg.split()[0] if arg.split() else ""
        subcommands = {"kernels": self.cuda_kernels, "blocks": self.cuda_blocks, "warps": self.cuda_warps,
                       "lanes": self.cuda_lanes, "barriers": self.cuda_barriers}
        matches = [key for key in subcommands if key.startswith(word)] if word else []
        if len(matches) != 1:
            raise DebugError('"info cuda" takes one of: ' + ", ".join(subcommands) + ".")
        self._require_running()
        subcommands[matches[0]]()

    def _block_range(self, cta: int) -> np.ndarray:
        batch = self.batch
        start = cta * batch.tpc_pad
        return np.arange(start, start + batch.tpc_pad, dtype=np.int64)

    def cuda_kernels(self) -> None:
        batch = self.batch
        gx, gy, gz = self.grid
        total = gx * gy * gz
        mask = 0
        for cta in range(min(total, 132)):
            mask |= 1 << (cta % 132)
        arguments = []
        for param in self.program.params:
            value = self.param_value(param)
            arguments.append(format_scalar(value, "x") if param.size == 8 and param.type in ("u64", "b64")
                             else format_scalar(value))
        self.say("  Kernel Parent Dev Grid Status   SMs Mask   GridDim  BlockDim Invocation")
        row = place("*", str(self.kernels), 8)
        row = place(row, "-", 15)
        row = place(row, "0", 19)
        row = place(row, str(batch.launch.grid_id), 24)
        row = place(row, "Active", 31)
        row = place(row, f"{mask:#010x}", 42)
        row = place(row, dims(self.grid), 52)
        row = place(row, dims(self.block), 62)
        self.say(f"{row} {self.kernel_name}({', '.join(arguments)})")

    def cuda_blocks(self) -> None:
        batch = self.batch
        focus_cta = self.focus_thread // batch.tpc_pad if self.focus_thread is not None else -1
        status = batch.status.reshape(batch.n_ctas, batch.tpc_pad)[:, :batch.tpc]
        exited = np.all(status == EXITED, axis=1)
        waiting = np.all((status == AT_BARRIER) | (status == EXITED), axis=1) & ~exited
        rows = []
        for cta in range(batch.n_ctas):
            state = "exited" if exited[cta] else "at barrier" if waiting[cta] else "running"
            if rows and rows[-1][2] == state:
                rows[-1][1] = cta
            else:
                rows.append([cta, cta, state])
        self.say("  BlockIdx To BlockIdx Count   State")
        self.say(f"Kernel {self.kernels}")
        for first, last, state in rows:
            start_block, _ = batch.thread_coordinates(first * batch.tpc_pad)
            end_block, _ = batch.thread_coordinates(last * batch.tpc_pad)
            mark = "*" if first <= focus_cta <= last else " "
            row = place(mark, dims(start_block), 10)
            row = place(row, dims(end_block), 22)
            row = place(row, str(last - first + 1), 28)
            self.say(f"{row} {state}")

    def cuda_warps(self) -> None:
        batch = self.batch
        focus = self._focus()
        cta = focus // batch.tpc_pad
        block, _ = self._coordinates(focus)
        threads = self._block_range(cta)
        pcs, states = self.states.of(threads)
        valid = threads % batch.tpc_pad < batch.tpc
        self.say("  Wp Active Lanes Mask Divergent Lanes Mask          Active PC Kernel BlockIdx "
                 "First Active ThreadIdx State")
        self.say(f"Device 0 SM {(batch.cta_start + cta) % 132}")
        bx, by, _ = self.block
        for warp in range(batch.tpc_pad // 32):
            lanes = slice(warp * 32, warp * 32 + 32)
            pc, active, divergent, state = warp_masks(pcs[lanes], states[lanes], valid[lanes])
            mark = "*" if warp == (focus % batch.tpc_pad) // 32 else " "
            row = place(mark, str(warp), 4)
            row = place(row, f"{active:#010x}", 22)
            row = place(row, f"{divergent:#010x}", 43)
            if pc is None:
                row = place(row, "-", 62)
                first_active = "-"
            else:
                row = place(row, f"{self.addresses.of(pc):#018x}", 62)
                lane = (active & -active).bit_length() - 1
                local = warp * 32 + lane
                first_active = dims((local % bx, (local // bx) % by, local // (bx * by)))
            row = place(row, str(self.kernels), 69)
            row = place(row, dims(block), 78)
            row = place(row, first_active, 101)
            self.say(f"{row} {state}")

    def cuda_lanes(self) -> None:
        batch = self.batch
        focus = self._focus()
        first = focus - focus % 32
        threads = np.arange(first, first + 32, dtype=np.int64)
        pcs, states = self.states.of(threads)
        valid = threads % batch.tpc_pad < batch.tpc
        active_pc, active, _, _ = warp_masks(pcs, states, valid)
        engine = self.engine
        fault = engine.fault_stop if engine.paused_kind == "fault" and engine.history.at_present else None
        block, _ = self._coordinates(focus)
        self.say("  Ln   State           PC         ThreadIdx Exception")
        self.say(f"Device 0 SM {(batch.cta_start + focus // batch.tpc_pad) % 132} Warp "
                 f"{(focus % batch.tpc_pad) // 32}")
        for lane in range(32):
            if not valid[lane]:
                continue
            thread = first + lane
            state = int(states[lane])
            if state == EXITED:
                word = "exited"
            elif state == AT_BARRIER:
                word = "at barrier"
            else:
                word = "active" if active >> lane & 1 else "divergent"
            _, xyz = self._coordinates(thread)
            mark = "*" if thread == focus else " "
            row = place(mark, str(lane), 4)
            row = place(row, word, 12)
            row = place(row, f"{self.addresses.of(int(pcs[lane])):#018x}" if pcs[lane] >= 0 else "-", 31)
            row = place(row, dims(xyz), 43)
            exception = _exception_of(fault.error)[1] if fault is not None and fault.thread == thread else "None"
            self.say(f"{row} {exception}")

    def cuda_barriers(self) -> None:
        batch = self.batch
        focus_cta = self.focus_thread // batch.tpc_pad if self.focus_thread is not None else -1
        rows = []
        for cta in range(batch.n_ctas):
            threads = self._block_range(cta)
            waiting_threads = threads[(batch.status[threads] == AT_BARRIER)]
            for bar in range(NUM_BARRIERS):
                arrived = int(batch.bar_arrived[bar][cta])
                waiting = waiting_threads[batch.bar_wait[waiting_threads] == bar]
                if not arrived and not len(waiting):
                    continue
                expected = int(batch.bar_expected[bar][cta]) or int(batch.live[cta])
                warps = sorted({int(t % batch.tpc_pad) // 32 for t in waiting})
                rows.append((cta, bar, arrived, expected, warps))
        if not rows:
            self.say("No thread waits at a barrier.")
            return
        self.say("  BlockIdx Barrier Arrived Expected Waiting Warps")
        for cta, bar, arrived, expected, warps in rows:
            block, _ = batch.thread_coordinates(cta * batch.tpc_pad)
            mark = "*" if cta == focus_cta else " "
            row = place(mark, dims(block), 10)
            row = place(row, str(bar), 18)
            row = place(row, str(arrived), 26)
            row = place(row, str(expected), 35)
            self.say(f"{row} {_ranges(warps)}")

    # ---- focus command ----
    def cmd_cuda(self, arg: str, repeat: bool) -> None:
        batch = self._require_running()
        if self.focus_thread is None:
            raise DebugError("Focus not set on any active CUDA kernel.")
        pairs = re.findall(r"(kernel|grid|device|sm|block|thread|warp|lane)\s*(\([^)]*\)|[\d,]+)?", arg)
        leftover = re.sub(r"(kernel|grid|device|sm|block|thread|warp|lane)\s*(\([^)]*\)|[\d,]+)?", "", arg).strip()
        if leftover or not pairs:
            raise DebugError("Usage: cuda [kernel K] [block (X,Y,Z)] [thread (X,Y,Z)] [warp W] [lane L]")
        focus = self.focus_thread
        block, xyz = self._coordinates(focus)
        local = focus % batch.tpc_pad
        if all(not value for _, value in pairs):
            current = {"kernel": str(self.kernels), "grid": str(batch.launch.grid_id), "device": "0",
                       "sm": str((batch.cta_start + focus // batch.tpc_pad) % 132), "block": dims(block),
                       "thread": dims(xyz), "warp": str(local // 32), "lane": str(local % 32)}
            self.say(", ".join(f"{name} {current[name]}" for name, _ in pairs))
            return
        values = {name: self._coordinate_values(value) for name, value in pairs if value}
        for name in ("kernel", "grid", "device", "sm"):
            if name in values:
                wanted = {"kernel": self.kernels, "grid": batch.launch.grid_id, "device": 0,
                          "sm": (batch.cta_start + focus // batch.tpc_pad) % 132}[name]
                if values[name][0] != wanted:
                    raise DebugError("Request cannot be satisfied. CUDA focus unchanged.")
        new_block = tuple(values["block"]) if "block" in values else block
        if "warp" in values or "lane" in values:
            if "thread" in values:
                raise DebugError("Give either thread or warp/lane coordinates. CUDA focus unchanged.")
            warp = values["warp"][0] if "warp" in values else local // 32
            lane = values["lane"][0] if "lane" in values else local % 32
            if not 0 <= lane < 32 or warp * 32 + lane >= batch.tpc:
                raise DebugError("Request cannot be satisfied. CUDA focus unchanged.")
            local_new = warp * 32 + lane
            bx, by, _ = self.block
            new_thread = (local_new % bx, (local_new // bx) % by, local_new // (bx * by))
        else:
            new_thread = tuple(values["thread"]) if "thread" in values else xyz
        thread = self._thread_of(new_block, new_thread)
        self.focus_thread = thread
        self.say(self._focus_message())
        self._location(True)

    @staticmethod
    def _coordinate_values(text: str) -> Tuple[int, int, int]:
        parts = [part for part in text.strip("()").split(",") if part.strip()]
        try:
            numbers = [int(part, 0) for part in parts]
        except ValueError:
            raise DebugError(f"Invalid coordinates {text}. CUDA focus unchanged.") from None
        if not 1 <= len(numbers) <= 3:
            raise DebugError(f"Invalid coordinates {text}. CUDA focus unchanged.")
        return tuple(numbers + [0] * (3 - len(numbers)))

    # ---- frames ----
    def cmd_backtrace(self, arg: str, repeat: bool) -> None:
        batch = self._require_running()
        focus = self._focus()
        pc, state = self._thread_pc(focus)
        if state == EXITED or pc < 0:
            raise DebugError("The focused thread has exited: it has no frames.")
        limit = int(arg) if arg.isdigit() else None
        depth = Engine.depth_of(batch, focus)
        frames = [(pc, False)]
        for level in range(depth - 1, -1, -1):
            frames.append((int(batch.stack_pc[level, focus]) - 1, True))
        for number, (frame_pc, caller) in enumerate(frames[:limit]):
            instr = self.program.instrs[frame_pc]
            source = f" ({os.path.basename(instr.source[0])}:{instr.source[1]})" if instr.source else ""
            address = f"{self.addresses.of(frame_pc):#018x} in " if caller else ""
            self.say(f"#{number:<2} {address}{self._frame_name(instr.function)} () at {self._where(instr)}{source}")

    # ---- help ----
    def cmd_help(self, arg: str, repeat: bool) -> None:
        if arg:
            command = self.resolve(arg.split()[0])
            aliases = sorted(alias for alias, name in self.aliases.items() if name == command.name)
            self.say(f"{command.summary}\nUsage: {command.usage}" +
                     (f"\nAliases: {', '.join(aliases)}" if aliases else ""))
            return
        self.say("List of commands:\n")
        for name in sorted(self.commands):
            command = self.commands[name]
            aliases = sorted(alias for alias, target in self.aliases.items() if target == name)
            shown = f"{name} ({', '.join(aliases)})" if aliases else name
            self.say(f"{shown} -- {command.summary}")
        self.say('\nType "help" followed by a command name for its usage. An empty line repeats the last command;'
                 " unambiguous prefixes work.")

    # ---- completion ----
    def completions(self, line: str) -> List[str]:
        """Candidates for the last word of a partly typed line."""
        words = line.split()
        ending = line.endswith(" ") or not words
        current = "" if ending else words[-1]
        previous = words if ending else words[:-1]
        if not previous:
            names = sorted(set(self.commands) | set(self.aliases))
            return [name + " " for name in names if name.startswith(current)]
        try:
            command = self.resolve(previous[0]).name
        except DebugError:
            return []
        pool: List[str]
        if command == "info":
            if len(previous) == 1:
                pool = ["args", "breakpoints", "cuda", "display", "frame", "line", "record", "registers",
                        "watchpoints"]
            elif previous[1] == "cuda" and len(previous) == 2:
                pool = ["barriers", "blocks", "kernels", "lanes", "warps"]
            elif previous[1].startswith("reg"):
                return [name for name in self.registers.names() if name.startswith(current)]
            else:
                pool = []
        elif command == "cuda":
            pool = ["block", "thread", "warp", "lane", "kernel"]
        elif command == "help":
            pool = sorted(self.commands)
        if command in ("info", "cuda", "help"):
            return [item + " " for item in pool if item.startswith(current)]
        elif command in ("break", "tbreak", "list") and "if" not in previous:
            pool = sorted(self.program.labels) + sorted({plain_name(f) for f in self.program.functions})
            pool += [f"{self.ptx_name}:"] + sorted({os.path.basename(path) + ":" for path in self.program.files.values()})
        else:
            registers = self.registers.names()
            if self.registers.listing:
                registers = ["$" + name for name in registers]
            pool = registers + special_names() + ["$pc", "$laneid", "$warpid"]
            if command in ("print", "output", "display"):
                pool += ["@all", "@lane"]
            if command in ("x", "watch"):
                pool += [f"@{space}" for space in SPACES]
        return [item for item in pool if item.startswith(current)]


def _register_order(reg: ir.RegInfo):
    match = re.fullmatch(r"(\D*)(\d*)", reg.name)
    prefix, digits = (match.group(1), match.group(2)) if match else (reg.name, "")
    return prefix, int(digits) if digits else -1, reg.index


_SASS_REGISTER_FILES = ("R", "UR", "P", "UP")


def _sass_register_order(reg: ir.RegInfo):
    """R, UR, P, UP, each by number (as cuda-gdb lists a SASS function's registers)."""
    prefix, number = _register_order(reg)[:2]
    files = _SASS_REGISTER_FILES
    return files.index(prefix) if prefix in files else len(files), prefix, number


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
            "\t": "\\t", "\v": "\\v"}


def _c_string(data: bytes) -> str:
    """Bytes as gdb quotes a string: UTF-8 text as is, C escapes, other bytes as octal escapes."""
    parts = []
    for char in data.decode("utf-8", errors="surrogateescape"):
        if char in _ESCAPES:
            parts.append(_ESCAPES[char])
        elif "\udc80" <= char <= "\udcff":
            parts.append(f"\\{ord(char) - 0xdc00:03o}")
        elif char.isprintable():
            parts.append(char)
        else:
            parts.extend(f"\\{byte:03o}" for byte in char.encode("utf-8"))
    return '"' + "".join(parts) + '"'


def _ranges(numbers: List[int]) -> str:
    if not numbers:
        return "-"
    parts, start = [], numbers[0]
    for previous, number in zip(numbers, numbers[1:] + [None]):
        if number != previous + 1 if number is not None else True:
            parts.append(str(start) if start == previous else f"{start}-{previous}")
            start = number
    return ",".join(parts)
