"""The REPL's commands that run the kernel (run, step, next, finish, reverse-*) and its reports of stops."""
from __future__ import annotations

import os
from typing import Optional, Tuple

import numpy as np

from isa.types import TYPES

from emulator import ir
from emulator.base.errors import DeviceError
from emulator.launching import write_npy_atomically
from emulator.machine.states import EXITED
from emulator.observers.debugger.control import Plan, Stop
from emulator.observers.debugger.expr import DebugError, format_scalar
from emulator.observers.debugger.session import dims
from emulator.observers.debugger.symbols import inline_chain
from emulator.runtime.names import plain_name

_MISALIGNED = ("CUDA_EXCEPTION_6", "Warp Misaligned Address")
_OUT_OF_RANGE = ("CUDA_EXCEPTION_5", "Warp Out-of-range Address")
_ILLEGAL = ("CUDA_EXCEPTION_14", "Warp Illegal Address")


def one_line(text: str) -> str:
    return " ".join(text.split())


def exception_of(error: DeviceError) -> Tuple[str, str]:
    """cuda-gdb's exception (signal, name) for a memory fault."""
    if error.cuda_error == "CUDA_ERROR_MISALIGNED_ADDRESS":
        return _MISALIGNED
    return _ILLEGAL if "__global__" in error.report else _OUT_OF_RANGE


class RunCommands:
    """run, start, continue, step/next/finish, the reverse commands, kill; stops and displays as they show."""

    def __init__(self, session):
        self.session = session

    def _start(self, plan: Plan) -> None:
        self.session.launch(stdout=self.session.out)
        self.session.last_function = self.session.last_source = None
        self.session.list_state = self.session.x_state = None
        self.session.say(f"[Launch of CUDA Kernel {self.session.kernels} ({self.session._kernel_title()}) on Device 0]")
        self._handle(self.session.engine.start(plan))

    def _handle(self, event) -> None:
        session = self.session
        focus = session.focus_thread
        kind, payload, engine = session.settle(event)
        if kind == "stop":
            if session.focus_thread != focus:
                session.say(self._focus_message())
            self._report_stop(payload)
            return
        if kind == "finished":
            session.say(f"[Termination of CUDA Kernel {session.kernels} ({session._kernel_title()}) on Device 0]")
            if getattr(session.options, "out", None):
                os.makedirs(session.options.out, exist_ok=True)
                for index, arg in enumerate(session.args):
                    if isinstance(arg, np.ndarray):
                        write_npy_atomically(os.path.join(session.options.out, f"arg{index}.npy"), arg)
        elif kind == "error":
            error = payload
            if isinstance(error, DeviceError):
                if not (engine.fault_stop is not None and engine.fault_stop.error.cuda_error == error.cuda_error):
                    session.say(error.report)
                session.say(f"[Termination of CUDA Kernel {session.kernels} ({session._kernel_title()}) on Device 0 "
                            f"with {error.cuda_error}]")
            else:
                raise DebugError(str(error))

    def _go(self, plan: Plan) -> None:
        self._handle(self.session.engine.resume(plan))


    def _focus_message(self) -> str:
        session = self.session
        batch = session.batch
        thread = session.focus_thread
        block, xyz = session._coordinates(thread)
        local = thread % batch.tpc_pad
        cta = batch.cta_start + thread // batch.tpc_pad
        return (f"[Switching focus to CUDA kernel {session.kernels}, grid {batch.config.grid_id}, block {dims(block)}, "
                f"thread {dims(xyz)}, device 0, sm {cta % 132}, warp {local // 32}, lane {local % 32}]")

    def _where(self, instr: ir.Instr) -> str:
        return f"{self.session.ptx_name}:{instr.line}"

    def _location(self, full: bool, prefix: str = "") -> None:
        """Where the focused thread is: its frame (when full or the function changed), PTX line, CUDA line."""
        thread = self.session.focus_thread
        pc, state = self.session._thread_pc(thread)
        if state == EXITED or pc < 0:
            block, xyz = self.session._coordinates(thread)
            self.session.say(f"[thread {dims(xyz)} of block {dims(block)} has exited]")
            return
        instr = self.session.program.instrs[pc]
        text = one_line(instr.text)
        if full or instr.function != self.session.last_function:
            self.session.say(f"{prefix}{self.session.frame_name(instr.function)} at {self._where(instr)}   {text}")
        else:
            self.session.say(f"{self._where(instr)}   {text}")
        self.session.last_function = instr.function
        chain = tuple(inline_chain(self.session, instr))
        if instr.source is not None and instr.source[1] > 0 and (full or chain != self.session.last_source):
            for function, (path, line) in reversed(chain):
                source = self.session.sources.line(path, line)
                head = f"{os.path.basename(path)}:{line}"
                if function is not None:
                    head = f"  inlined: {plain_name(function)} at {head}"
                self.session.say(head + (f"   {source}" if source else ""))
        self.session.last_source = chain
        self.session.list_state = None

    def _report_stop(self, stop: Stop) -> None:
        full, prefix = False, ""
        if stop.reason == "breakpoint":
            breakpoint = stop.breakpoint
            if stop.message:
                self.session.say(stop.message)
            self.session.say()
            full = True
            prefix = f"{'Temporary breakpoint' if breakpoint.temporary else 'Breakpoint'} {breakpoint.number}, "
        elif stop.reason == "watch":
            self._report_watch(stop)
            full = True
        elif stop.reason == "interrupt":
            self.session.say("\nProgram received signal SIGINT, Interrupt.")
            full = True
        elif stop.reason == "fault":
            self._report_fault(stop)
            full = True
        elif stop.reason == "check":
            self.session.say("\n" + stop.message)
            full = True
        elif stop.reason == "focus-exited":
            full = True
        elif stop.reason == "history-start":
            self.session.say("\nNo more reverse-execution history.")
            full = True
        self._location(full, prefix)
        self._show_displays()

    def _report_watch(self, stop: Stop) -> None:
        hit = stop.watch
        watch = hit.watch
        self.session.say(f"\nHardware watchpoint {watch.number}: {watch.spec}")
        self.session.say()
        if watch.value_type is None:
            watch.value_type = self._writer_type(hit.instr, watch.length)
        self.session.say(f"Old value = {self._watch_value(hit.old, watch.value_type)}")
        self.session.say(f"New value = {self._watch_value(hit.new, watch.value_type)}")
        block, xyz = self.session._coordinates(hit.thread)
        more = f" (last of {hit.writers} writing threads)" if hit.writers > 1 else ""
        self.session.say(f"Written by block {dims(block)} thread {dims(xyz)}{more} at {self._where(hit.instr)}"
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
        session = self.session
        error = stop.error
        code, name = exception_of(error)
        instr = session.program.instrs[stop.pc]
        session.say(f"\nCUDA Exception: {name}")
        session.say(f"The exception was triggered at pc {session.addresses.of(stop.pc):#x} ({self._where(instr)})")
        session.say(error.report)
        session.say(f"\nKernel {session.kernel_name} received signal {code}, {name}.")

    def _show_displays(self) -> None:
        for number, fmt, text in self.session.displays:
            self._display_one(number, fmt, text)

    def _display_one(self, number: int, fmt: Optional[str], text: str) -> None:
        label = f"{number}: " + (f"/{fmt} " if fmt else "") + text
        try:
            self.session.say(f"{label} = {self.session._print_value(text, fmt, None)[1]}")
        except DebugError as error:
            self.session.say(f"{label} = <error: {error}>")


    def cmd_run(self, arg: str, repeat: bool) -> None:
        if self.session.engine is not None:
            self.session.say("The kernel being debugged has been started already: starting it from the beginning.")
        self._start(Plan("continue"))

    def cmd_start(self, arg: str, repeat: bool) -> None:
        session = self.session
        entry = session.program.functions[session.program.name].entry_pc
        breakpoint = session.stops.add_breakpoint(f"*{session.addresses.of(entry):#x}", (entry,), temporary=True,
                                                  condition=None)
        session.breaks._announce(breakpoint)
        self._start(Plan("continue"))

    def cmd_continue(self, arg: str, repeat: bool) -> None:
        self.session._require_running()
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
        self._go(self.session._plan("step", self._count(arg)))

    def cmd_next(self, arg: str, repeat: bool) -> None:
        self._go(self.session._plan("next", self._count(arg)))

    def cmd_finish(self, arg: str, repeat: bool) -> None:
        session = self.session
        plan = session._plan("finish")
        batch = session.batch
        focus = session.focus_thread
        block, _ = session._coordinates(focus)
        warp = (focus % batch.tpc_pad) // 32
        if plan.inline_calls:
            session.say(f"Run till exit from {session.stack.describe(session.frame_number())}")
        elif plan.base_depth > 0:
            pc, _ = session._thread_pc(focus)
            session.say(f"Run till exit from #0  {session.frame_name(session.program.instrs[pc].function)} () at "
                        f"{self._where(session.program.instrs[pc])}")
        else:
            session.say(f"Run till the next barrier or exit of warp {warp} of block {dims(block)}")
        self._go(plan)

    def _reverse(self, mode: str, count: int = 1) -> None:
        self._handle(("stop", self.session.reverse(mode, count)))

    def cmd_reverse_step(self, arg: str, repeat: bool) -> None:
        self._reverse("reverse-step", self._count(arg))

    def cmd_reverse_next(self, arg: str, repeat: bool) -> None:
        self._reverse("reverse-next", self._count(arg))

    def cmd_reverse_continue(self, arg: str, repeat: bool) -> None:
        self._reverse("reverse-continue")

    def cmd_kill(self, arg: str, repeat: bool) -> None:
        self.session._require_running()
        self.session._kill()
        self.session.say(f"[Kernel {self.session._kernel_title()} killed]")

    def cmd_quit(self, arg: str, repeat: bool) -> None:
        self.session._kill()
        self.session.quitting = True

    def cmd_echo(self, arg: str, repeat: bool) -> None:
        self.session.out.write(arg.replace("\\n", "\n"))
        self.session.out.flush()

