"""The REPL's commands about the focused thread's frames: backtrace, and frame/up/down, which select the frame that
print, info locals, info args and finish work in (as gdb's and cuda-gdb's do)."""
from __future__ import annotations

import os

from emulator.observers.debugger.expr import DebugError
from emulator.observers.debugger.symbols import Frame, source_label


class FrameCommands:
    """backtrace, frame, up, down."""

    def __init__(self, session):
        self.session = session

    def describe(self, number: int, frame: Frame = None) -> str:
        """A frame as backtrace lists it: `#1  blocksum<<<…>>> () at k.ptx:161 (k.cu:25)`."""
        session = self.session
        frame = frame or session.frames()[number]
        instr = session.program.instrs[frame.pc]
        source = f" ({source_label(frame.source)})" if frame.source else ""
        address = f"{session.addresses.of(frame.pc):#018x} in " if frame.caller and frame.first else ""
        inlined = " [inlined]" if frame.inlined else ""
        return f"#{number:<2} {address}{frame.name} () at {session.running._where(instr)}{source}{inlined}"

    def cmd_backtrace(self, arg: str, repeat: bool) -> None:
        session = self.session
        session._require_running()
        session._focus()
        limit = int(arg) if arg.isdigit() else None
        for number, frame in enumerate(session.frames()[:limit]):
            session.say(self.describe(number, frame))

    def cmd_frame(self, arg: str, repeat: bool) -> None:
        session = self.session
        session._require_running()
        session._focus()
        if arg.strip():
            try:
                number = int(arg.strip(), 0)
            except ValueError:
                raise DebugError(f'Invalid frame number "{arg.strip()}".') from None
        else:
            number = session.frame_number()
        self._select(number)

    def cmd_up(self, arg: str, repeat: bool) -> None:
        self._move(self._count(arg))

    def cmd_down(self, arg: str, repeat: bool) -> None:
        self._move(-self._count(arg))

    @staticmethod
    def _count(arg: str) -> int:
        try:
            return int(arg, 0) if arg.strip() else 1
        except ValueError:
            raise DebugError(f'Invalid frame count "{arg.strip()}".') from None

    def _move(self, by: int) -> None:
        session = self.session
        session._require_running()
        session._focus()
        frames = session.frames()
        number = session.frame_number() + by
        if number >= len(frames):
            raise DebugError("Initial frame selected; you cannot go up.")
        if number < 0:
            raise DebugError("Bottom (innermost) frame selected; you cannot go down.")
        self._select(number)

    def _select(self, number: int) -> None:
        """Select a frame and show it and its CUDA line, as gdb does."""
        session = self.session
        frame = session.select_frame(number)
        session.say(self.describe(number, frame))
        if frame.source is not None and frame.source[1] > 0:
            path, line = frame.source
            text = session.sources.line(path, line)
            session.say(f"{os.path.basename(path)}:{line}" + (f"   {text}" if text else ""))
        session.list_state = None
