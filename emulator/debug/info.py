"""The REPL's info commands (breakpoints, registers, args, locals, line, record, cuda …), focus and backtrace."""
from __future__ import annotations

import os
import re
from typing import Tuple

import numpy as np

from emulator.machine.states import AT_BARRIER, EXITED, NUM_BARRIERS
from emulator.observers.debugger.control import Breakpoint, Watchpoint
from emulator.observers.debugger.expr import DebugError, format_scalar, raw_bits
from emulator.observers.debugger.session import dims
from emulator.observers.debugger.state import typed_values, warp_masks
from emulator.observers.debugger.symbols import chain_source_text
from emulator.runtime.faults import ranges
from emulator.runtime.names import plain_name
from emulator.debug.running import exception_of, one_line


def place(row: str, text: str, end: int) -> str:
    """row with text right-aligned to end at column `end` (at least one space before it)."""
    return row + " " * max(1, end - len(row) - len(text)) + text


def _register_order(reg):
    match = re.fullmatch(r"(\D*)(\d*)", reg.name)
    prefix, digits = (match.group(1), match.group(2)) if match else (reg.name, "")
    return prefix, int(digits) if digits else -1, reg.index


_SASS_REGISTER_FILES = ("R", "UR", "P", "UP")


def _sass_register_order(reg):
    """R, UR, P, UP, each by number (as cuda-gdb lists a SASS function's registers)."""
    prefix, number = _register_order(reg)[:2]
    files = _SASS_REGISTER_FILES
    return files.index(prefix) if prefix in files else len(files), prefix, number


class InfoCommands:
    """What the session knows: breakpoints, displays, registers, arguments and locals, lines, the record, the
    CUDA kernels, blocks, warps, lanes and barriers; and the focus and frames."""

    def __init__(self, session):
        self.session = session

    def cmd_info(self, arg: str, repeat: bool) -> None:
        word, _, rest = arg.partition(" ")
        subcommands = {"breakpoints": self.info_breakpoints, "watchpoints": self.info_watchpoints,
                       "registers": self.info_registers, "display": self.info_display, "cuda": self.info_cuda,
                       "record": self.info_record, "args": self.info_args, "line": self.info_line,
                       "frame": self.info_frame, "locals": self.info_locals}
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
        session = self.session
        items = [item for item in session.breakpoints + session.watchpoints
                 if not watch_only or isinstance(item, Watchpoint)]
        items.sort(key=lambda item: item.number)
        if not items:
            session.say("No watchpoints." if watch_only else "No breakpoints or watchpoints.")
            return
        session.say("Num     Type           Disp Enb Address            What")
        for item in items:
            enabled = "y" if item.enabled else "n"
            if isinstance(item, Watchpoint):
                session.say(f"{item.number:<8}{'hw watchpoint':<15}keep {enabled}   {'':<19}{item.spec}")
                hits = item.hits
            else:
                disp = "del " if item.temporary else "keep"
                if len(item.pcs) == 1:
                    instr = session.program.instrs[item.pcs[0]]
                    session.say(f"{item.number:<8}{'breakpoint':<15}{disp} {enabled}   "
                                f"{session.addresses.of(instr.pc):#018x} in {plain_name(instr.function)} at "
                                f"{session.running._where(instr)}")
                else:
                    session.say(f"{item.number:<8}{'breakpoint':<15}{disp} {enabled}   <MULTIPLE>")
                if item.condition_text:
                    session.say(f"\tstop only if {item.condition_text}")
                hits = item.hits
            if hits:
                session.say(f"\tbreakpoint already hit {hits} time{'s' if hits != 1 else ''}")
            if isinstance(item, Breakpoint) and len(item.pcs) > 1:
                for index, pc in enumerate(item.pcs, 1):
                    instr = session.program.instrs[pc]
                    session.say(f"{f'{item.number}.{index}':<28}{enabled}   {session.addresses.of(pc):#018x} in "
                                f"{plain_name(instr.function)} at {session.running._where(instr)}")

    def info_watchpoints(self, arg: str) -> None:
        self.info_breakpoints(arg, watch_only=True)

    def info_display(self, arg: str) -> None:
        if not self.session.displays:
            self.session.say("There are no auto-display expressions now.")
            return
        self.session.say("Auto-display expressions now in effect:\nNum Enb Expression")
        for number, fmt, text in self.session.displays:
            self.session.say(f"{number}:   y  " + (f"/{fmt} " if fmt else "") + text)

    def info_registers(self, arg: str) -> None:
        batch = self.session._require_running()
        focus = self.session._focus()
        pc, _ = self.session._thread_pc(focus)
        function = self.session.program.instrs[max(pc, 0)].function
        if arg:
            regs = [self.session.registers.lookup(name, function, pc) for name in arg.split()]
        else:
            regs = sorted(self.session.registers.of_function(function),
                          key=_sass_register_order if self.session.registers.listing else _register_order)
        lanes = np.array([focus], dtype=np.int64)
        for reg in regs:
            raw = batch.regs[reg.index][focus]
            bits, width = raw_bits(raw)
            natural = format_scalar(typed_values(batch.regs[reg.index], reg.type, lanes)[0])
            self.session.say(f"{reg.name:<15}{'0x' + format(bits, 'x'):<19}{natural}")

    def info_args(self, arg: str) -> None:
        self.session._require_running()
        if self.session.variables:
            self._show_variables(arguments=True)
            return
        for param in self.session.program.params:
            value = self.session.param_value(param)
            shown = format_scalar(value, "x") if param.size == 8 and param.type in ("u64", "b64") else \
                format_scalar(value)
            self.session.say(f"{param.name} = {shown}")

    def info_locals(self, arg: str) -> None:
        self.session._require_running()
        if not self.session.variables:
            self.session.say("No symbol table info available.")    # gdb's words for a program without debug information
            return
        self._show_variables(arguments=False)

    def _show_variables(self, arguments: bool) -> None:
        """The selected frame's C arguments or locals at its pc, its own function's only (an inlined call's
        frame shows that call's, not its caller's), innermost scope first (as gdb lists them)."""
        self.session._focus_pc()
        context = self.session._context(self.session._lanes(None))
        depth = self.session.frames()[self.session.frame_number()].inline_depth
        shown = set()
        for variable in self.session.variables.visible(context.function, context.pc, depth):
            if variable.is_argument != arguments or variable.name in shown:
                continue
            if (arguments or depth) and variable.inline_depth != depth:
                continue
            shown.add(variable.name)
            try:
                text = context.variable(variable).show()
            except DebugError as error:
                text = f"<error: {error}>"
            self.session.say(f"{variable.name} = {text}")
        if not shown:
            self.session.say("No arguments." if arguments else "No locals.")

    def info_line(self, arg: str) -> None:
        session = self.session
        if arg:
            pcs, _ = session.stops.locate(arg)
            pc = pcs[0]
        else:
            pc = session._focus_pc()
        instr = session.program.instrs[pc]
        source = chain_source_text(session, instr, os.path.basename)
        shown = f" ({source})" if source else ""
        session.say(f'Line {instr.line} of "{session.ptx_name}"{shown} is at address {session.addresses.of(pc):#x} '
                    f"<{session._function_offset(pc)}>: {one_line(instr.text)}")

    def info_frame(self, arg: str) -> None:
        session = self.session
        session._require_running()
        session._focus()
        session.say(session.stack.describe(session.frame_number()))

    def info_record(self, arg: str) -> None:
        engine = self.session.engine
        if engine is None or self.session.history_limit <= 0:
            self.session.say("No record target is currently active." if engine is None else
                             "Recording is off (--history 0).")
            return
        history = engine.history
        records = len(history.records)
        per = history.nbytes / history.warps if history.warps else 0
        self.session.say("Active record target: record-full")
        self.session.say(f"Record mode: {'Replay' if not history.at_present else 'Normal'}")
        self.session.say(f"Log contains {history.warps:,} warp instructions ({records:,} scheduler steps) in "
                         f"{history.nbytes:,} bytes, {per:.0f} bytes per warp instruction.")
        if not history.at_present:
            self.session.say(f"Replay position: step {history.cursor:,} of {records:,}.")
        self.session.say(f"Max logged warp instructions: {history.limit:,} (--history).")


    def info_cuda(self, arg: str) -> None:
        word = arg.split()[0] if arg.split() else ""
        subcommands = {"kernels": self.cuda_kernels, "blocks": self.cuda_blocks, "warps": self.cuda_warps,
                       "lanes": self.cuda_lanes, "barriers": self.cuda_barriers}
        matches = [key for key in subcommands if key.startswith(word)] if word else []
        if len(matches) != 1:
            raise DebugError('"info cuda" takes one of: ' + ", ".join(subcommands) + ".")
        self.session._require_running()
        subcommands[matches[0]]()

    def _block_range(self, cta: int) -> np.ndarray:
        batch = self.session.batch
        start = cta * batch.tpc_pad
        return np.arange(start, start + batch.tpc_pad, dtype=np.int64)

    def cuda_kernels(self) -> None:
        batch = self.session.batch
        gx, gy, gz = self.session.grid
        total = gx * gy * gz
        mask = 0
        for cta in range(min(total, 132)):
            mask |= 1 << (cta % 132)
        arguments = []
        for param in self.session.program.params:
            value = self.session.param_value(param)
            arguments.append(format_scalar(value, "x") if param.size == 8 and param.type in ("u64", "b64")
                             else format_scalar(value))
        self.session.say("  Kernel Parent Dev Grid Status   SMs Mask   GridDim  BlockDim Invocation")
        row = place("*", str(self.session.kernels), 8)
        row = place(row, "-", 15)
        row = place(row, "0", 19)
        row = place(row, str(batch.config.grid_id), 24)
        row = place(row, "Active", 31)
        row = place(row, f"{mask:#010x}", 42)
        row = place(row, dims(self.session.grid), 52)
        row = place(row, dims(self.session.block), 62)
        self.session.say(f"{row} {self.session.kernel_name}({', '.join(arguments)})")

    def cuda_blocks(self) -> None:
        batch = self.session.batch
        focus_cta = self.session.focus_thread // batch.tpc_pad if self.session.focus_thread is not None else -1
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
        self.session.say("  BlockIdx To BlockIdx Count   State")
        self.session.say(f"Kernel {self.session.kernels}")
        for first, last, state in rows:
            start_block, _ = batch.thread_coordinates(first * batch.tpc_pad)
            end_block, _ = batch.thread_coordinates(last * batch.tpc_pad)
            mark = "*" if first <= focus_cta <= last else " "
            row = place(mark, dims(start_block), 10)
            row = place(row, dims(end_block), 22)
            row = place(row, str(last - first + 1), 28)
            self.session.say(f"{row} {state}")

    def cuda_warps(self) -> None:
        batch = self.session.batch
        focus = self.session._focus()
        cta = focus // batch.tpc_pad
        block, _ = self.session._coordinates(focus)
        threads = self._block_range(cta)
        pcs, states = self.session.states.of(threads)
        valid = threads % batch.tpc_pad < batch.tpc
        self.session.say("  Wp Active Lanes Mask Divergent Lanes Mask          Active PC Kernel BlockIdx "
                         "First Active ThreadIdx State")
        self.session.say(f"Device 0 SM {(batch.cta_start + cta) % 132}")
        bx, by, _ = self.session.block
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
                row = place(row, f"{self.session.addresses.of(pc):#018x}", 62)
                lane = (active & -active).bit_length() - 1
                local = warp * 32 + lane
                first_active = dims((local % bx, (local // bx) % by, local // (bx * by)))
            row = place(row, str(self.session.kernels), 69)
            row = place(row, dims(block), 78)
            row = place(row, first_active, 101)
            self.session.say(f"{row} {state}")

    def cuda_lanes(self) -> None:
        batch = self.session.batch
        focus = self.session._focus()
        first = focus - focus % 32
        threads = np.arange(first, first + 32, dtype=np.int64)
        pcs, states = self.session.states.of(threads)
        valid = threads % batch.tpc_pad < batch.tpc
        active_pc, active, _, _ = warp_masks(pcs, states, valid)
        engine = self.session.engine
        fault = engine.fault_stop if engine.paused_kind == "fault" and engine.history.at_present else None
        block, _ = self.session._coordinates(focus)
        self.session.say("  Ln   State           PC         ThreadIdx Exception")
        self.session.say(f"Device 0 SM {(batch.cta_start + focus // batch.tpc_pad) % 132} Warp "
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
            _, xyz = self.session._coordinates(thread)
            mark = "*" if thread == focus else " "
            row = place(mark, str(lane), 4)
            row = place(row, word, 12)
            row = place(row, f"{self.session.addresses.of(int(pcs[lane])):#018x}" if pcs[lane] >= 0 else "-", 31)
            row = place(row, dims(xyz), 43)
            exception = exception_of(fault.error)[1] if fault is not None and fault.thread == thread else "None"
            self.session.say(f"{row} {exception}")

    def cuda_barriers(self) -> None:
        batch = self.session.batch
        focus_cta = self.session.focus_thread // batch.tpc_pad if self.session.focus_thread is not None else -1
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
            self.session.say("No thread waits at a barrier.")
            return
        self.session.say("  BlockIdx Barrier Arrived Expected Waiting Warps")
        for cta, bar, arrived, expected, warps in rows:
            block, _ = batch.thread_coordinates(cta * batch.tpc_pad)
            mark = "*" if cta == focus_cta else " "
            row = place(mark, dims(block), 10)
            row = place(row, str(bar), 18)
            row = place(row, str(arrived), 26)
            row = place(row, str(expected), 35)
            self.session.say(f"{row} {ranges(warps) or '-'}")


    def cmd_cuda(self, arg: str, repeat: bool) -> None:
        batch = self.session._require_running()
        if self.session.focus_thread is None:
            raise DebugError("Focus not set on any active CUDA kernel.")
        pairs = re.findall(r"(kernel|grid|device|sm|block|thread|warp|lane)\s*(\([^)]*\)|[\d,]+)?", arg)
        leftover = re.sub(r"(kernel|grid|device|sm|block|thread|warp|lane)\s*(\([^)]*\)|[\d,]+)?", "", arg).strip()
        if leftover or not pairs:
            raise DebugError("Usage: cuda [kernel K] [block (X,Y,Z)] [thread (X,Y,Z)] [warp W] [lane L]")
        focus = self.session.focus_thread
        block, xyz = self.session._coordinates(focus)
        local = focus % batch.tpc_pad
        if all(not value for _, value in pairs):
            current = {"kernel": str(self.session.kernels), "grid": str(batch.config.grid_id), "device": "0",
                       "sm": str((batch.cta_start + focus // batch.tpc_pad) % 132), "block": dims(block),
                       "thread": dims(xyz), "warp": str(local // 32), "lane": str(local % 32)}
            self.session.say(", ".join(f"{name} {current[name]}" for name, _ in pairs))
            return
        values = {name: self._coordinate_values(value) for name, value in pairs if value}
        for name in ("kernel", "grid", "device", "sm"):
            if name in values:
                wanted = {"kernel": self.session.kernels, "grid": batch.config.grid_id, "device": 0,
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
            bx, by, _ = self.session.block
            new_thread = (local_new % bx, (local_new // bx) % by, local_new // (bx * by))
        else:
            new_thread = tuple(values["thread"]) if "thread" in values else xyz
        thread = self.session._thread_of(new_block, new_thread)
        self.session.focus_thread = thread
        self.session.say(self.session.running._focus_message())
        self.session.running._location(True)

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
