"""Running under the debugger: the launch in a worker thread that pauses inside the observer, and replay.

The machine calls the observer before every instruction; when a breakpoint, a step, a watchpoint or a
fault says stop, the observer hands a Stop to the session and blocks until told to go on, with the whole
batch intact. Meanwhile the session may walk the history back and forth in place (record.History); it
replays the history forward before it lets the worker run again.
"""
from __future__ import annotations

import queue
import signal
import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple

import numpy as np

from emulator import ir
from emulator.base.errors import GpuemuError
from emulator.machine.lanes import ALL, count_of, lanes_of, subselect
from emulator.machine.printf import format_printf
from emulator.machine.states import EXITED
from emulator.memory import DeviceFault, LOCAL_WINDOW, SHARED_WINDOW, WINDOW_SIZE
from emulator.machine.observe import Observer, combine
from emulator.runtime.faults import render
from emulator.observers.debugger.expr import DebugError
from emulator.observers.debugger.record import History, add_store, capture, destinations
from emulator.observers.debugger.state import read_space


class Abandon(BaseException):
    """Unwinds a launch that the user killed or restarted (not an Exception: nothing may swallow it)."""


@dataclass
class Breakpoint:
    number: int
    spec: str
    pcs: Tuple[int, ...]
    temporary: bool = False
    enabled: bool = True
    condition_text: Optional[str] = None
    condition: Any = None
    hits: int = 0
    hit_condition: Any = None      # a function of the hit count: stop only where it says True (DAP's hitCondition)


@dataclass
class Watchpoint:
    number: int
    spec: str
    space: str
    address: int
    length: int
    cta: int = 0
    local: int = 0
    enabled: bool = True
    hits: int = 0
    value_type: Optional[str] = None   # how hits show the watched bytes, fixed at the first hit ("" for hex)


@dataclass
class WatchHit:
    watch: Watchpoint
    instr: ir.Instr
    thread: int
    writers: int
    old: np.ndarray
    new: Optional[np.ndarray] = None


@dataclass
class Stop:
    """Why and where execution stopped; thread is the thread to focus on (None: keep the focus)."""
    reason: str
    pc: int
    sel: Any
    thread: Optional[int] = None
    breakpoint: Optional[Breakpoint] = None
    watch: Optional[WatchHit] = None
    error: Any = None
    message: Optional[str] = None


@dataclass
class Plan:
    """What the user asked for: continue, step/next N focused-warp instructions, finish; and which warp."""
    mode: str
    focus: Tuple[int, int] = (0, 32)
    count: int = 1
    skip: bool = False
    base_depth: int = 0
    #: finish out of an inlined call: the calls around the start, outermost first (symbols.inline_calls)
    inline_calls: Tuple = ()
    #: step by source line: called with each pc the step would stop at, True where the line has changed
    line_changed: Optional[Callable[[int], bool]] = None
    #: the most instructions a step by source line takes before it stops anyway
    line_limit: int = 0


def contains(sel, first: int, stop: int) -> bool:
    if sel is ALL:
        return True
    return int(np.searchsorted(sel, first)) < int(np.searchsorted(sel, stop))


def threads_in(sel, first: int, stop: int) -> np.ndarray:
    if sel is ALL:
        return np.arange(first, stop, dtype=np.int64)
    return sel[np.searchsorted(sel, first):np.searchsorted(sel, stop)]


def first_thread(sel) -> int:
    return 0 if sel is ALL else int(sel[0])


class _Observer(Observer):
    def __init__(self, engine: "Engine"):
        self.engine = engine

    def begin_launch(self, launch):
        self.engine.launch = launch

    def begin_batch(self, batch):
        self.engine.begin_batch(batch)

    def end_batch(self, batch):
        self.engine.settle()

    def step(self, batch, instr, sel, warps, lanes):
        self.engine.on_step(batch, instr, sel, warps)

    def memory(self, batch, instr, op, space, addresses, threads, width):
        self.engine.on_memory(batch, instr, op, space, addresses, threads, width)

    def retire(self, batch, instr, sel):
        if self.engine.pending_watch is not None:
            self.engine.on_watch_retired(batch, instr, sel)


class Engine:
    """One launch under the debugger: the worker thread, its pauses, and the history it records."""

    def __init__(self, session, kernel, args, grid, block, *, shared: int, max_steps: int,
                 max_dynamic_shared: Optional[int], history_limit: int, checks=None):
        self.session = session
        self.kernel = kernel
        self.args = args
        self.grid, self.block = grid, block
        self.shared = shared
        self.max_steps = max_steps
        self.max_dynamic_shared = max_dynamic_shared
        self.history = History(history_limit)
        self.recording = history_limit > 0
        self.launch = None
        self.batch = None
        self.batches = 0
        self.pending = None
        self.pending_watch: Optional[WatchHit] = None
        self.paused_sel = None
        self.paused_pc: Optional[int] = None
        self.paused_kind: Optional[str] = None
        self.fault_stop: Optional[Stop] = None
        self.plan: Optional[Plan] = None
        self.interrupt = False
        self._plans = {}
        self._events: "queue.Queue" = queue.Queue()
        self._commands: "queue.Queue" = queue.Queue()
        self._thread = threading.Thread(target=self._work, name="gpuemu-launch", daemon=True)
        self.observer = _Observer(self)
        self.checks = checks          # a CheckSession whose new findings stop the launch (reason "check")
        self.findings_seen = 0

    # ---- the worker thread ----
    def _work(self) -> None:
        try:
            stats = self.kernel.launch(self.grid, self.block, self.args, self.shared, max_steps=self.max_steps,
                                       max_dynamic_shared=self.max_dynamic_shared,
                                       observer=combine(self.observer, self.checks))
            self._events.put(("finished", stats))
        except Abandon:
            self._events.put(("abandoned", None))
        except GpuemuError as error:
            self._events.put(("error", error))
        except MemoryError:
            self._events.put(("error", GpuemuError("out of host memory (try a smaller launch)")))
        except Exception as error:  # a bug in gpuemu: say so in one line rather than hang the session
            self._events.put(("error", GpuemuError(f"internal error: {type(error).__name__}: {error}")))

    def begin_batch(self, batch) -> None:
        self.batch = batch
        self.batches += 1
        if self.batches > 1:
            self.session.focus_thread = None
        self.history.clear()
        self.pending = None
        self._plans = {}

    def settle(self) -> None:
        if self.pending is not None:
            self.history.push(self.pending)
            self.pending = None

    def on_step(self, batch, instr, sel, warps: int) -> None:
        self.settle()
        if self.recording:
            plan = self._plans.get(instr.pc)
            if plan is None:
                plan = self._plans[instr.pc] = destinations(instr)
            self.pending = capture(batch, instr, sel, warps, plan)
        stepping_over = self.paused_kind == "retire" and instr.pc == self.paused_pc
        self.paused_sel, self.paused_pc, self.paused_kind = sel, instr.pc, "step"
        stop = self.new_finding(instr.pc, sel) or self.check(batch, instr.pc, sel, breakpoints=not stepping_over)
        if stop is not None:
            self._pause(stop)
        if instr.operands and isinstance(instr.operands[0], ir.CallSite) and instr.operands[0].callee == "vprintf":
            self.probe_printf(batch, instr, sel)

    def probe_printf(self, batch, instr, sel) -> None:
        """Stop before a vprintf whose format string or arguments a lane cannot read, as before a faulting load:
        the machine reads them outside the memory events that the other faults stop at."""
        site = instr.operands[0]
        guard = batch.guard_reader(instr)
        active = sel if guard is None else subselect(sel, guard(sel))
        if not count_of(active, batch.n) or len(site.arguments) < 2:
            return
        lanes = lanes_of(active, batch.n)
        pointers = [batch.memory.load("local", np.full(len(lanes), symbol.address - ir.FUNC_PARAM_BASE, np.uint64),
                                      lanes, 8).view(np.uint64).reshape(len(lanes)) for symbol in site.arguments[:2]]
        for index, thread in enumerate(lanes):
            try:
                format_printf(batch.memory, int(pointers[0][index]), int(pointers[1][index]), int(thread))
            except DeviceFault as fault:
                stop = Stop("fault", instr.pc, self.paused_sel, thread=int(thread),
                            error=render(batch.memory_fault(instr, fault, int(thread)), batch.program,
                                         batch.config.arch))
                self.paused_kind, self.fault_stop = "fault", stop
                self._pause(stop)
                return
            except Exception:  # any other problem is the call's own to report when it runs
                return

    def new_finding(self, pc: int, sel) -> Optional[Stop]:
        """A stop before pc when the checkers found something new since the last step (message: its report)."""
        if self.checks is None:
            return None
        checkers = [c for c in (self.checks.init, self.checks.race, self.checks.sync) if c is not None]
        findings = [finding for checker in checkers for finding in checker.findings.items.values()]
        if len(findings) <= self.findings_seen:
            return None
        self.findings_seen = len(findings)
        return Stop("check", pc, sel, thread=self._focus_thread_in(sel), message="\n".join(findings[-1].render()))

    def on_memory(self, batch, instr, op, space, addresses, threads, width) -> None:
        if space == "constant":
            return
        memory = batch.memory
        try:
            before = memory.load(space, addresses, threads, width)
        except DeviceFault as probe:
            fault = DeviceFault(probe.kind, probe.space, op, width, probe.address, probe.lane, probe.detail)
            lane = fault.lane if fault.lane is not None else 0
            thread = int(threads[lane]) if threads is not None else int(lane)
            stop = Stop("fault", instr.pc, self.paused_sel, thread=thread,
                        error=render(batch.memory_fault(instr, fault, thread), batch.program, batch.config.arch))
            self.paused_kind, self.fault_stop = "fault", stop
            self._pause(stop)
            return
        if op == "load":
            return
        if self.pending is not None:
            add_store(self.pending, space, addresses, threads, width, before)
        hit = self.watch_hit(batch, instr, space, addresses, threads, width)
        if hit is not None:
            self.pending_watch = hit

    def on_watch_retired(self, batch, instr, sel) -> None:
        hit, self.pending_watch = self.pending_watch, None
        hit.new = self.read_watch(hit.watch)
        self.settle()
        self.paused_sel, self.paused_pc, self.paused_kind = sel, instr.pc + 1, "retire"
        self._pause(Stop("watch", instr.pc + 1, sel, thread=hit.thread, watch=hit))

    def _pause(self, stop: Stop) -> None:
        self._events.put(("stop", stop))
        if self._commands.get() == "abandon":
            raise Abandon()

    # ---- stop conditions (live and replayed) ----
    def check(self, batch, pc: int, sel, breakpoints: bool = True) -> Optional[Stop]:
        """Whether to stop before the step at pc runs for sel (breakpoints=False: as gdb resuming from a
        stop at a breakpoint's address, which it steps over)."""
        if self.interrupt:
            self.interrupt = False
            return Stop("interrupt", pc, sel, thread=self._focus_thread_in(sel))
        breakpoints = self.session.breakpoints_at.get(pc) if breakpoints else None
        if breakpoints:
            stop = self._breakpoint_stop(batch, pc, sel, breakpoints)
            if stop is not None:
                return stop
        plan = self.plan
        if plan is None or plan.mode == "continue":
            return None
        first, end = plan.focus
        if np.all(batch.status[first:end] == EXITED):
            return Stop("focus-exited", pc, sel, thread=first_thread(sel))
        if not contains(sel, first, end):
            return None
        if plan.skip:
            plan.skip = False
            return None
        depth = self.depth_of(batch, threads_in(sel, first, end)[0])
        if plan.mode == "finish":
            if plan.inline_calls and depth == plan.base_depth:
                outer = self.session.inline_calls_at(pc)
                done = outer[:len(plan.inline_calls)] != plan.inline_calls
            elif plan.inline_calls or plan.base_depth > 0:
                done = depth < plan.base_depth
            else:
                done = batch.program.instrs[pc].control in (ir.BARRIER, ir.EXIT)
            return Stop("finish", pc, sel, thread=self._focus_thread_in(sel)) if done else None
        if not self.session.addresses.starts_instruction(pc):
            return None  # the rest of a SASS instruction that lowering expanded: one step in the listing
        if plan.mode == "next" and depth > plan.base_depth:
            return None
        plan.count -= 1
        if plan.count > 0:
            return None
        if plan.line_changed is not None and not plan.line_changed(pc):
            plan.line_limit -= 1
            if plan.line_limit > 0:
                plan.count = 1
                return None
        return Stop("step", pc, sel, thread=self._focus_thread_in(sel))

    def _focus_thread_in(self, sel) -> Optional[int]:
        """None when the focused thread runs in sel; else the first thread of the focused warp there."""
        focus = self.session.focus_thread
        if focus is None:
            return first_thread(sel)
        warp_first = focus - focus % 32
        if contains(sel, focus, focus + 1):
            return None
        lanes = threads_in(sel, warp_first, warp_first + 32)
        return int(lanes[0]) if len(lanes) else None

    @staticmethod
    def depth_of(batch, thread: int) -> int:
        return 0 if batch.depth is None else int(batch.depth[thread])

    def _breakpoint_stop(self, batch, pc: int, sel, breakpoints) -> Optional[Stop]:
        lanes = np.arange(batch.n, dtype=np.int64) if sel is ALL else sel
        for breakpoint in breakpoints:
            if breakpoint.condition is None:
                hitting = lanes
            else:
                try:
                    mask = np.broadcast_to(self.session.condition_mask(breakpoint, batch, pc, lanes), lanes.shape)
                except DebugError as error:
                    return Stop("breakpoint", pc, sel, thread=self._preferred(lanes), breakpoint=breakpoint,
                                message=f"Error in testing condition for breakpoint {breakpoint.number}:\n{error}")
                hitting = lanes[mask != 0]
                if len(hitting) == 0:
                    continue
            breakpoint.hits += 1
            if breakpoint.hit_condition is not None and not breakpoint.hit_condition(breakpoint.hits):
                continue
            return Stop("breakpoint", pc, sel, thread=self._preferred(hitting), breakpoint=breakpoint)
        return None

    def _preferred(self, lanes: np.ndarray) -> int:
        focus = self.session.focus_thread
        if focus is not None:
            if np.any(lanes == focus):
                return focus
            warp_first = focus - focus % 32
            mine = lanes[(lanes >= warp_first) & (lanes < warp_first + 32)]
            if len(mine):
                return int(mine[0])
        return int(lanes[0])

    # ---- watchpoints ----
    def watch_hit(self, batch, instr, space, addresses, threads, width) -> Optional[WatchHit]:
        for watch in self.session.watchpoints:
            if not watch.enabled:
                continue
            mask = watch_mask(watch, batch, space, addresses, threads, width)
            if mask.any():
                lanes = np.flatnonzero(mask)
                writer = int(threads[lanes[-1]]) if threads is not None else int(lanes[-1])
                watch.hits += 1
                return WatchHit(watch, instr, writer, len(lanes), self.read_watch(watch))
        return None

    def read_watch(self, watch: Watchpoint) -> np.ndarray:
        batch = self.batch
        cta = watch.cta - batch.cta_start
        return read_space(batch, watch.space, watch.address, watch.length, cta, cta * batch.tpc_pad + watch.local)

    def _record_watch_hit(self, record) -> Optional[WatchHit]:
        instr = self.batch.program.instrs[record.pc]
        for entry in record.stores or ():
            space, addresses, threads, width, _ = entry
            hit = self.watch_hit(self.batch, instr, space, addresses, threads, width)
            if hit is not None:
                return hit
        return None

    # ---- the session's side ----
    def _wait(self):
        while True:
            try:
                return self._events.get(timeout=0.1)
            except queue.Empty:
                continue
            except KeyboardInterrupt:
                self.interrupt = True

    def start(self, plan: Plan):
        self.plan = plan
        with _interrupts_as_flag(self):
            self._thread.start()
            return self._wait()

    def current(self) -> Tuple[Optional[int], Any]:
        """(pc, threads) of the step the batch sits before: a recorded one while replaying, else the paused one."""
        history = self.history
        if not history.at_present:
            record = history.records[history.cursor]
            return record.pc, record.sel
        if self.paused_kind == "retire":
            return None, None
        return self.paused_pc, self.paused_sel

    def resume(self, plan: Plan):
        """Go forward: replay the history up to the present, then let the worker run."""
        self.plan = plan
        if not self.history.at_present:
            stop = self._replay_forward()
            if stop is not None:
                return ("stop", stop)
            if self.paused_kind == "fault":
                return ("stop", self.fault_stop)
            if self.paused_kind == "step":
                stop = self.check(self.batch, self.paused_pc, self.paused_sel)
                if stop is not None:
                    return ("stop", stop)
        with _interrupts_as_flag(self):
            self._commands.put("resume")
            return self._wait()

    def kill(self) -> None:
        if self._thread.is_alive():
            self._commands.put("abandon")
            self._thread.join(timeout=30)

    def _replay_forward(self) -> Optional[Stop]:
        history = self.history
        with _interrupts_as_flag(self):
            first = True
            while not history.at_present:
                record = history.records[history.cursor]
                if not first:
                    stop = self.check(self.batch, record.pc, record.sel)
                    if stop is not None:
                        return stop
                first = False
                hit = self._record_watch_hit(record) if record.stores else None
                history.redo(self.batch)
                if hit is not None:
                    hit.new = self.read_watch(hit.watch)
                    return Stop("watch", record.pc + 1, record.sel, thread=hit.thread, watch=hit)
        return None

    def reverse(self, mode: str, focus: Tuple[int, int], count: int = 1, base_depth: int = 0,
                line_changed: Optional[Callable[[int], bool]] = None) -> Stop:
        """Go back: undo records until the focused warp has gone `count` instructions back (reverse-step,
        reverse-next; with line_changed, instructions at which it says the line changed) or a breakpoint or
        watchpoint is met (reverse-continue)."""
        history = self.history
        first, end = focus
        with _interrupts_as_flag(self):
            while history.cursor > 0:
                record = history.records[history.cursor - 1]
                hit = self._record_watch_hit(record) if record.stores and mode == "reverse-continue" else None
                history.undo(self.batch)
                if self.interrupt:
                    self.interrupt = False
                    return Stop("interrupt", record.pc, record.sel)
                if mode == "reverse-continue":
                    if hit is not None:
                        hit.new = self.read_watch(hit.watch)
                        return Stop("watch", record.pc, record.sel, thread=hit.thread, watch=hit)
                    breakpoints = self.session.breakpoints_at.get(record.pc)
                    if breakpoints:
                        stop = self._breakpoint_stop(self.batch, record.pc, record.sel, breakpoints)
                        if stop is not None:
                            return stop
                    continue
                if not record.contains(first, end) or not self.session.addresses.starts_instruction(record.pc):
                    continue
                if mode == "reverse-next" and self.depth_of(self.batch, int(record.threads_in(first, end)[0])) > base_depth:
                    continue
                if line_changed is not None and not line_changed(record.pc):
                    continue
                count -= 1
                if count == 0:
                    return Stop("step", record.pc, record.sel, thread=self._focus_thread_in(record.sel))
        pc, sel = self.current()
        return Stop("history-start", pc, sel)


def watch_mask(watch: Watchpoint, batch, space: str, addresses, threads, width: int) -> np.ndarray:
    """Lanes of a store whose bytes overlap the watched ones."""
    addresses = np.asarray(addresses, dtype=np.uint64)
    if watch.space in ("shared", "local"):
        if space == "generic":
            base = np.uint64(SHARED_WINDOW if watch.space == "shared" else LOCAL_WINDOW)
            offsets = addresses - base
            inside = offsets < np.uint64(WINDOW_SIZE)
        elif space == watch.space:
            offsets, inside = addresses, np.ones(len(addresses), dtype=bool)
        else:
            return np.zeros(len(addresses), dtype=bool)
        thread_ids = np.arange(len(addresses), dtype=np.int64) if threads is None else np.asarray(threads)
        cta = watch.cta - batch.cta_start
        if watch.space == "shared":
            inside &= batch.cta_of[thread_ids] == cta
        else:
            inside &= thread_ids == cta * batch.tpc_pad + watch.local
    elif watch.space == "global" and space in ("global", "generic"):
        offsets, inside = addresses, np.ones(len(addresses), dtype=bool)
    else:
        return np.zeros(len(addresses), dtype=bool)
    start, end = np.uint64(watch.address), np.uint64(watch.address + watch.length)
    return inside & (offsets < end) & (offsets + np.uint64(width) > start)


class _interrupts_as_flag:
    """While the kernel runs or is replayed, Ctrl-C in the main thread sets the engine's interrupt flag instead of
    raising (a KeyboardInterrupt between starting the worker and waiting for it would lose the stop)."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.previous = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            def flag(signum, frame):
                self.engine.interrupt = True
            self.previous = signal.signal(signal.SIGINT, flag)
        return self

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
        return False
