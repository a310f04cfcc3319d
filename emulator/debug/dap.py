"""`gpuemu dap`: the debugger as a Debug Adapter Protocol server over stdio, for VS Code, nvim-dap, dap-mode.

Messages are `Content-Length: N\\r\\n\\r\\n` + JSON. A reader thread takes requests off stdin so that `pause`
can interrupt a running kernel; the main thread answers them in order over the shared session core."""
from __future__ import annotations

import argparse
import json
import os
import queue
import re
import sys
import threading
from typing import Optional

import numpy as np

from emulator.base.errors import DeviceError, GpuemuError, UsageError
from emulator.base.text import printable
from emulator.launching import prepare_launch
from emulator.debug.dap_values import FRAMES_PER_THREAD, References, scopes, stack_frames, threads, variable
from emulator.frontend.cuda import arch_name, is_cuda_path
from emulator.observers.checks import CHECKS
from emulator.observers.debugger.control import Plan
from emulator.observers.debugger.cvalues import CValue
from emulator.observers.debugger.expr import DebugError
from emulator.observers.debugger.record import DEFAULT_HISTORY
from emulator.observers.debugger.session import DebugSession
from emulator.observers.debugger.symbols import chain_source_text, exited

FILTERS = [{"filter": "fault", "label": "Device faults", "default": True,
            "description": "Stop where a thread faults (illegal or misaligned address)."},
           {"filter": "check", "label": "--check findings", "default": True,
            "description": "Stop where a checker (launch configuration 'check') finds a race, sync or init error."}]
CAPABILITIES = {"supportsConfigurationDoneRequest": True, "supportsConditionalBreakpoints": True,
                "supportsHitConditionalBreakpoints": True, "supportsEvaluateForHovers": True,
                "supportsStepBack": True, "supportsDataBreakpoints": True, "supportsTerminateRequest": True,
                "supportsSetVariable": False, "supportsSteppingGranularity": True,
                "supportsExceptionInfoRequest": True, "exceptionBreakpointFilters": FILTERS}
_REASONS = {"breakpoint": "breakpoint", "watch": "data breakpoint", "fault": "exception", "check": "exception",
            "interrupt": "pause", "step": "step", "finish": "step", "focus-exited": "step", "history-start": "step"}

#: the longest header line and message body taken; past them the stream is not a DAP client's
_HEADER_LIMIT = 64 * 1024
_BODY_LIMIT = 64 * 1024 * 1024


class BadMessage(Exception):
    """A message that is not DAP; `fatal` when the framing is lost, so the next message cannot be found."""

    def __init__(self, text: str, fatal: bool = False):
        super().__init__(text)
        self.fatal = fatal


def read_message(stream) -> Optional[dict]:
    """One message from a binary stream; None at its end. BadMessage for one that is not a JSON object."""
    length = None
    while True:
        line = stream.readline(_HEADER_LIMIT + 1)
        if not line:
            if length is not None:
                raise BadMessage("the input ended inside a message's header", fatal=True)
            return None
        if len(line) > _HEADER_LIMIT:
            raise BadMessage(f"a header line is longer than {_HEADER_LIMIT} bytes", fatal=True)
        line = line.strip()
        if not line:
            if length is not None:
                break
            continue
        name, _, value = line.decode("ascii", "replace").partition(":")
        if name.strip().lower() == "content-length":
            text = value.strip()
            if not text.isdigit() or not text.isascii():
                raise BadMessage(f"Content-Length '{printable(text)}' is not a number of bytes", fatal=True)
            length = int(text)
            if length > _BODY_LIMIT:
                raise BadMessage(f"Content-Length {length} is over the {_BODY_LIMIT}-byte limit", fatal=True)
    data = stream.read(length)
    if len(data) < length:
        raise BadMessage(f"the input ended {len(data)} bytes into a {length}-byte message", fatal=True)
    try:
        message = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadMessage("a message body is not UTF-8; skipped") from None
    except ValueError as error:
        raise BadMessage(f"a message body is not JSON ({printable(str(error))}); skipped") from None
    if not isinstance(message, dict):
        kind = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}.get(type(message),
                                                                                                 "null")
        raise BadMessage(f"a message body is a JSON {kind}, not an object; skipped")
    return message


def _shown(value) -> str:
    text = json.dumps(value)
    return printable(text if len(text) <= 40 else text[:37] + "...")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _dims(value) -> bool:
    return (_is_int(value) or isinstance(value, str) and re.fullmatch(r"\s*\d+(\s*,\s*\d+){0,2}\s*", value) or
            (isinstance(value, list) and 1 <= len(value) <= 3 and all(_is_int(item) for item in value)))


def _is_arch(value) -> bool:
    try:
        arch_name(value)
    except UsageError:
        return False
    return True


#: the launch configuration's fields: a test of the value's type and what the usage message says it should be
_LAUNCH_FIELDS = {
    "program": (lambda v: isinstance(v, str) and v != "", 'a path to a .ptx or .cu file'),
    "cwd": (lambda v: isinstance(v, str), "a folder's path"),
    "kernel": (lambda v: isinstance(v, str), "a kernel's name"),
    "grid": (_dims, "[x, y, z] (integers)"),
    "block": (_dims, "[x, y, z] (integers)"),
    "args": (lambda v: isinstance(v, list) and all(isinstance(item, (str, int, float)) and not isinstance(item, bool)
                                                   for item in v), 'a list of argument specs ("@in.npy", "i32:5")'),
    "shared": (lambda v: _is_int(v) and v >= 0, "a number of bytes"),
    "const": (_strings, 'a list of "NAME=@file.npy"'),
    "maxSteps": (lambda v: _is_int(v) and v > 0, "a positive integer"),
    "sourceDirs": (_strings, "a list of folders"),
    "history": (lambda v: _is_int(v) and v >= 0, "a number of warp instructions (0: off)"),
    "check": (lambda v: _strings(v) and set(v) <= set(CHECKS), f"a list of checkers ({', '.join(CHECKS)})"),
    "arch": (lambda v: (isinstance(v, str) or _is_int(v)) and _is_arch(v), 'an architecture ("sm_90")'),
    "stopOnEntry": (lambda v: isinstance(v, bool), "true or false"),
    "debugInfo": (lambda v: isinstance(v, bool), "true or false"),
    "compilerOptions": (_strings, 'a list of compiler options (["-DN=4"])'),
}


def launch_options(arguments: dict) -> argparse.Namespace:
    """The `gpuemu debug` options a launch configuration stands for (paths relative to its cwd); a field of the
    wrong type is a usage message naming it."""
    for name, (accepts, what) in _LAUNCH_FIELDS.items():
        if arguments.get(name) is not None and not accepts(arguments[name]):
            raise DebugError(f'The launch configuration\'s "{name}" should be {what}, not {_shown(arguments[name])}.')
    base = arguments.get("cwd") or os.getcwd()
    program = arguments.get("program")
    if not program:
        raise DebugError('The launch configuration needs "program" (a .ptx or .cu file).')
    if "grid" not in arguments or "block" not in arguments:
        raise DebugError('The launch configuration needs "grid" and "block".')
    if arguments.get("compilerOptions") and not is_cuda_path(program):
        raise DebugError(f'The launch configuration\'s "compilerOptions" apply to a .cu program, '
                         f'not {_shown(program)}.')
    for item in arguments.get("const") or []:
        if "=@" not in item:
            raise DebugError(f'The launch configuration\'s "const" item {_shown(item)} should be NAME=@file.npy.')

    def resolve(path: str) -> str:
        return path if os.path.isabs(path) else os.path.join(base, path)

    def dims(value) -> str:
        return ",".join(str(v) for v in value) if isinstance(value, list) else str(value)

    args = [f"@{resolve(spec[1:])}" if isinstance(spec, str) and spec.startswith("@") else str(spec)
            for spec in arguments.get("args") or []]
    return argparse.Namespace(
        file=resolve(program), kernel=arguments.get("kernel"), grid=dims(arguments["grid"]),
        block=dims(arguments["block"]), shared=arguments.get("shared") or 0, max_dynamic_shared=None, arg=args,
        const=[f"{item.partition('=')[0]}=@{resolve(item.partition('=@')[2])}"
               for item in arguments.get("const") or []],
        max_steps=arguments.get("maxSteps"), source_dir=[resolve(d) for d in arguments.get("sourceDirs") or []],
        backend="auto", history=DEFAULT_HISTORY if arguments.get("history") is None else arguments["history"],
        check=arguments.get("check") or [], out=None, arch=arguments.get("arch"),
        debug_info=arguments.get("debugInfo") is not False, compiler_options=arguments.get("compilerOptions") or [])


def integer_argument(arguments: dict, name: str, command: Optional[str], default: Optional[int] = None) -> int:
    """arguments[name] as an integer; its absence (with no default) or another type is a usage message."""
    value = arguments.get(name)
    request = f"The '{command}' request" if command else "The request"
    if value is None:
        if default is None:
            raise DebugError(f'{request} needs "{name}" (an integer).')
        return default
    if not _is_int(value):
        raise DebugError(f'{request}\'s "{name}" should be an integer, not {_shown(value)}.')
    return value


def hit_condition(text: Optional[str]):
    """DAP's hitCondition: `N` or `== N` (the Nth hit), `>= N`, `> N`, `% N` (every Nth)."""
    if not text:
        return None
    match = re.fullmatch(r"\s*(==|>=|>|%)?\s*(\d+)\s*", text)
    if not match:
        raise DebugError(f"Hit condition '{text}' is not N, == N, >= N, > N or % N.")
    op, number = match.group(1) or "==", int(match.group(2))
    return {"==": lambda hits: hits == number, ">=": lambda hits: hits >= number, ">": lambda hits: hits > number,
            "%": lambda hits: number > 0 and hits % number == 0}[op]


class _Output:
    """Device printf as DAP output events."""

    def __init__(self, server: "DapServer"):
        self.server = server

    def write(self, text: str) -> int:
        self.server.event("output", {"category": "stdout", "output": text})
        return len(text)

    def flush(self) -> None:
        pass


class DapServer:
    """One DAP conversation: requests in, responses and events out, one kernel launch at a time."""

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.seq = 0
        self.lock = threading.Lock()
        self.requests: "queue.Queue" = queue.Queue()
        self.session: Optional[DebugSession] = None
        self.arguments: dict = {}
        self.references = References()
        self.source_breakpoints = {}
        self.data_watches = []
        self.filters = {"fault", "check"}
        self.done = False
        #: a pause read while no kernel ran yet (one sent right after configurationDone's answer, before the
        #: launch made its engine): the launch it precedes stops at once; answering the pause clears it
        self.pause_pending = False

    # ---- the wire ----
    def send(self, message: dict) -> None:
        with self.lock:
            self.seq += 1
            message["seq"] = self.seq
            data = json.dumps(message).encode("utf-8")
            self.writer.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
            self.writer.flush()

    def event(self, name: str, body: Optional[dict] = None) -> None:
        self.send({"type": "event", "event": name, **({"body": body} if body is not None else {})})

    def respond(self, request: dict, body: Optional[dict] = None, error: Optional[str] = None) -> None:
        command = request.get("command")
        message = {"type": "response", "request_seq": request["seq"],
                   "command": command if isinstance(command, str) else "",
                   "success": error is None}
        if error is not None:
            message["message"] = error
            message["body"] = {"error": {"id": 1, "format": error, "showUser": True}}
        elif body is not None:
            message["body"] = body
        self.send(message)

    def say(self, text: str) -> None:
        self.event("output", {"category": "console", "output": text + "\n"})

    def _read(self) -> None:
        while True:
            try:
                message = read_message(self.reader)
            except OSError as error:
                error = BadMessage(f"reading the input: {error.strerror or error}", fatal=True)
                print(f"gpuemu dap: {error}", file=sys.stderr, flush=True)
                self.requests.put(error)
                return
            except BadMessage as error:
                print(f"gpuemu dap: {error}", file=sys.stderr, flush=True)
                if error.fatal:
                    self.requests.put(error)
                    return
                continue
            if message is None:
                self.requests.put(None)
                return
            if message.get("command") == "pause":
                self.pause_pending = True
                if self.session is not None and self.session.engine is not None:
                    self.session.engine.interrupt = True
            self.requests.put(message)

    def serve(self) -> int:
        """Answer requests until `disconnect` or the input's end (0), or until its framing is lost (1)."""
        threading.Thread(target=self._read, name="gpuemu-dap-reader", daemon=True).start()
        status = 0
        while not self.done:
            request = self.requests.get()
            if request is None:
                break
            if isinstance(request, BadMessage):
                status = 1
                break
            if request.get("type") != "request":
                continue
            seq = request.get("seq")
            if not isinstance(seq, int) or isinstance(seq, bool):
                print(f"gpuemu dap: a request without an integer 'seq' ({printable(repr(seq))[:40]}); skipped",
                      file=sys.stderr, flush=True)
                continue
            command, arguments = request.get("command"), request.get("arguments") or {}
            if not isinstance(command, str):
                self.respond(request, error="The request has no 'command' string.")
                continue
            if not isinstance(arguments, dict):
                self.respond(request, error=f"The '{command}' request's 'arguments' is not a JSON object.")
                continue
            handler = getattr(self, "on_" + command, None)
            if handler is None:
                self.respond(request, error=f"gpuemu dap does not support the '{printable(command)}' request.")
                continue
            try:
                handler(request, arguments)
            except (DebugError, GpuemuError) as error:
                self.respond(request, error=str(error))
            except Exception as error:  # a gpuemu bug: answered, and the conversation goes on
                self.respond(request, error=f"internal error: {type(error).__name__}: {error}")
        if self.session is not None:
            self.session._kill()
        return status

    # ---- set-up ----
    def on_initialize(self, request, arguments) -> None:
        self.respond(request, CAPABILITIES)

    def on_launch(self, request, arguments) -> None:
        self.arguments = arguments
        options = launch_options(arguments)
        self.session = DebugSession(options, lambda: prepare_launch(options))
        self.respond(request)
        self.event("initialized")

    def on_setBreakpoints(self, request, arguments) -> None:
        session = self._session()
        source, wanted_list = arguments.get("source"), arguments.get("breakpoints") or []
        if not isinstance(source, dict) or not isinstance(source.get("path") or source.get("name") or "", str):
            raise DebugError('The \'setBreakpoints\' request needs "source" (an object with a "path").')
        if not isinstance(wanted_list, list) or not all(isinstance(wanted, dict) for wanted in wanted_list):
            raise DebugError('The \'setBreakpoints\' request\'s "breakpoints" should be a list of objects.')
        lines = [integer_argument(wanted, "line", "setBreakpoints") for wanted in wanted_list]
        path = source.get("path") or source.get("name") or ""
        for old in self.source_breakpoints.pop(path, []):
            session.stops.remove(old)
        results, made = [], []
        for wanted, line in zip(wanted_list, lines):
            try:
                location = f"{path}:{line}"
                pcs, _ = session.stops.locate(location)
                breakpoint = session.stops.add_breakpoint(location, pcs, False, wanted.get("condition") or None)
                breakpoint.hit_condition = hit_condition(wanted.get("hitCondition"))
                made.append(breakpoint)
                first = session.program.instrs[pcs[0]]
                shown = first.user_source if not path.endswith(".ptx") and first.user_source else None
                results.append({"id": breakpoint.number, "verified": True,
                                "line": shown[1] if shown and os.path.basename(shown[0]) == os.path.basename(path)
                                else (first.line if path.endswith(".ptx") else line)})
            except DebugError as error:
                results.append({"verified": False, "message": str(error), "line": line})
        self.source_breakpoints[path] = made
        self.respond(request, {"breakpoints": results})

    def on_setExceptionBreakpoints(self, request, arguments) -> None:
        filters = arguments.get("filters") or []
        if not _strings(filters):
            raise DebugError('The \'setExceptionBreakpoints\' request\'s "filters" should be a list of strings.')
        self.filters = set(filters)
        self.respond(request, {"breakpoints": [{"verified": True} for _ in self.filters]})

    def on_dataBreakpointInfo(self, request, arguments) -> None:
        """The dataId of a variable: its full expression (a child of an expanded variable names its parent too),
        or null with the reason when it is not memory a watchpoint can cover."""
        name = arguments.get("name")
        if not isinstance(name, str) or not name:
            raise DebugError('The \'dataBreakpointInfo\' request needs "name" (a string).')
        expression, reason = name, None
        if arguments.get("variablesReference") is not None:
            reference = integer_argument(arguments, "variablesReference", "dataBreakpointInfo")
            entry = next((item for item in self.references.children(reference) if item["name"] == name), None)
            expression = entry.get("evaluateName") if entry is not None else None
            if entry is None:
                reason = f"No variable '{name}' in variablesReference {reference}."
            elif expression is None or expression.startswith("%"):
                reason = f"'{name}' is a register, not memory: gpuemu's watchpoints watch memory."
        if reason is None:
            try:
                self._session().stops.watch_target(expression, "generic", None)
            except DebugError as error:
                reason = str(error)
        if reason is not None:
            self.respond(request, {"dataId": None, "description": reason})
            return
        self.respond(request, {"dataId": expression, "description": f"write to {expression}",
                               "accessTypes": ["write"], "canPersist": False})

    def on_setDataBreakpoints(self, request, arguments) -> None:
        session = self._session()
        for watch in self.data_watches:
            session.stops.remove(watch)
        self.data_watches, results = [], []
        wanted_list = arguments.get("breakpoints") or []
        if not isinstance(wanted_list, list) or not all(
                isinstance(wanted, dict) and isinstance(wanted.get("dataId"), str) for wanted in wanted_list):
            raise DebugError('The \'setDataBreakpoints\' request\'s "breakpoints" should be a list of objects with a '
                             '"dataId" string.')
        for wanted in wanted_list:
            try:
                space, address, length, value_type = session.stops.watch_target(wanted["dataId"], "generic", None)
                watch = session.stops.add_watch(space, address, length, label=wanted["dataId"])
                watch.value_type = value_type
                self.data_watches.append(watch)
                results.append({"id": watch.number, "verified": True})
            except DebugError as error:
                results.append({"verified": False, "message": str(error)})
        self.respond(request, {"breakpoints": results})

    def on_configurationDone(self, request, arguments) -> None:
        session = self._session()
        self.respond(request)
        if self.arguments.get("stopOnEntry"):
            entry = session.program.functions[session.program.name].entry_pc
            session.stops.add_breakpoint("entry", (entry,), True, None)
        self._start()

    def _start(self) -> None:
        session = self.session
        session.launch(stdout=_Output(self))
        if self.pause_pending:
            session.engine.interrupt = True
        self.say(f"[Launch of CUDA Kernel {session.kernels} ({session._kernel_title()}) on Device 0]")
        self._report(session.engine.start(Plan("continue")))

    def _session(self) -> DebugSession:
        if self.session is None:
            raise DebugError("Send 'launch' first.")
        return self.session

    # ---- running ----
    def _report(self, event) -> None:
        """Tell the client what a launch did; a stop the exception filters leave out runs on."""
        session = self.session
        self.references.clear()
        while True:
            kind, payload, engine = session.settle(event)
            if kind != "stop":
                break
            stop = payload
            if (stop.reason == "fault" and "fault" not in self.filters) or \
                    (stop.reason == "check" and "check" not in self.filters):
                self.say(stop.error.report if stop.reason == "fault" else stop.message)   # shown, not stopped at
                event = session.engine.resume(Plan("continue"))
                continue
            body = {"reason": _REASONS.get(stop.reason, "step"), "threadId": session.focus_thread + 1,
                    "allThreadsStopped": True, "preserveFocusHint": False}
            if stop.reason == "breakpoint":
                body["hitBreakpointIds"] = [stop.breakpoint.number]
                if stop.breakpoint.spec == "entry":
                    body["reason"] = "entry"
            if stop.reason == "watch":
                body["hitBreakpointIds"] = [stop.watch.watch.number]
            if stop.reason in ("fault", "check"):
                body["description"] = "Device fault" if stop.reason == "fault" else "--check finding"
                body["text"] = stop.error.report if stop.reason == "fault" else stop.message
                self.say(body["text"])
            if stop.reason == "history-start":
                body["description"] = "No more reverse-execution history."
            if stop.message and stop.reason == "breakpoint":
                self.say(stop.message)
            self.event("stopped", body)
            return
        title = f"CUDA Kernel {session.kernels} ({session._kernel_title()}) on Device 0"
        if kind == "finished":
            self.say(f"[Termination of {title}]")
            self.event("exited", {"exitCode": 0})
        else:
            if isinstance(payload, DeviceError):
                if not (engine.fault_stop is not None and engine.fault_stop.error.cuda_error == payload.cuda_error):
                    self.say(payload.report)
                self.say(f"[Termination of {title} with {payload.cuda_error}]")
            else:
                self.say(str(payload))
            self.event("exited", {"exitCode": 1})
        self.event("terminated")

    def _running(self, arguments) -> DebugSession:
        session = self._session()
        session._require_running()
        if arguments.get("threadId"):
            self._focus(integer_argument(arguments, "threadId", None))
        return session

    def _go(self, request, arguments, mode: Optional[str] = None, reverse: Optional[str] = None) -> None:
        """Run on as the request says; next and stepIn go by CUDA line unless its granularity is "instruction"."""
        session = self._running(arguments)
        # DAP steps the thread's top frame: a frame the editor selected for scopes or evaluate does not carry over
        session.select_frame(0)
        by_line = arguments.get("granularity") != "instruction"
        plan = session._plan(mode, by_line=by_line) if mode else Plan("continue")
        self.respond(request, {"allThreadsContinued": True} if request["command"] == "continue" else None)
        if reverse:
            self._report(("stop", session.reverse(reverse, by_line=by_line)))
        else:
            self._report(session.engine.resume(plan))

    def on_continue(self, request, arguments) -> None:
        self._go(request, arguments)

    def on_next(self, request, arguments) -> None:
        self._go(request, arguments, "next")

    def on_stepIn(self, request, arguments) -> None:
        self._go(request, arguments, "step")

    def on_stepOut(self, request, arguments) -> None:
        self._go(request, arguments, "finish")

    def on_stepBack(self, request, arguments) -> None:
        self._go(request, arguments, reverse="reverse-step")

    def on_reverseContinue(self, request, arguments) -> None:
        self._go(request, arguments, reverse="reverse-continue")

    def on_pause(self, request, arguments) -> None:
        self.pause_pending = False
        self.respond(request)

    def on_disconnect(self, request, arguments) -> None:
        if self.session is not None:
            self.session._kill()
        self.respond(request)
        self.done = True

    def on_terminate(self, request, arguments) -> None:
        if self.session is not None and self.session.engine is not None:
            self.session._kill()
            self.respond(request)
            self.event("terminated")
        else:
            self.respond(request)

    # ---- looking ----
    def _focus(self, thread_id: int) -> int:
        session = self.session
        thread = thread_id - 1
        batch = session.batch
        if batch is None or not 0 <= thread < batch.n or thread % batch.tpc_pad >= batch.tpc:
            raise DebugError(f"No CUDA thread {thread_id}.")
        session.focus_thread = thread
        return thread

    def on_threads(self, request, arguments) -> None:
        self.respond(request, {"threads": threads(self._session())})

    def on_stackTrace(self, request, arguments) -> None:
        session = self._running(arguments)
        thread = session.focus_thread
        pc, state = session._thread_pc(thread)
        if exited(state, pc):
            self.respond(request, {"stackFrames": [], "totalFrames": 0})
            return
        result = stack_frames(session, thread)
        start = integer_argument(arguments, "startFrame", "stackTrace", 0)
        levels = integer_argument(arguments, "levels", "stackTrace", 0) or len(result)
        self.respond(request, {"stackFrames": result[start:start + levels], "totalFrames": len(result)})

    def _frame(self, frame_id: Optional[int]):
        """Focus the thread of a stackTrace frame id and select that frame."""
        session = self._session()
        session._require_running()
        if frame_id:
            self._focus((frame_id - 1) // FRAMES_PER_THREAD + 1)
            session.select_frame((frame_id - 1) % FRAMES_PER_THREAD)
        return session, session.focus_thread

    def on_scopes(self, request, arguments) -> None:
        session, thread = self._frame(integer_argument(arguments, "frameId", "scopes"))
        session._focus_pc()
        context = session._context(np.array([thread], dtype=np.int64))
        self.respond(request, {"scopes": scopes(session, self.references, context)})

    def on_variables(self, request, arguments) -> None:
        entries = self.references.children(integer_argument(arguments, "variablesReference", "variables"))
        start = integer_argument(arguments, "start", "variables", 0)
        count = integer_argument(arguments, "count", "variables", 0)
        self.respond(request, {"variables": entries[start:start + count] if count else entries[start:]})

    def on_evaluate(self, request, arguments) -> None:
        expression = arguments.get("expression")
        if not isinstance(expression, str):
            raise DebugError('The \'evaluate\' request needs "expression" (a string).')
        expression = expression.strip()
        session, _ = self._frame(integer_argument(arguments, "frameId", "evaluate", 0))
        value, shown = session._print_value(expression, None, None)
        if isinstance(value, CValue):
            entry = variable(self.references, expression, value, expression)
            body = {"result": entry["value"], "variablesReference": entry["variablesReference"],
                    "type": entry.get("type", "")}
        else:
            body = {"result": shown, "variablesReference": 0, "type": np.asarray(value).dtype.name}
        if arguments.get("context") == "repl":
            session.values.append(value)
        self.respond(request, body)

    def on_source(self, request, arguments) -> None:
        self.respond(request, {"content": "\n".join(self._session().program.lines), "mimeType": "text/x-ptx"})

    def on_exceptionInfo(self, request, arguments) -> None:
        session = self._running(arguments)
        pc = session._focus_pc()
        self.respond(request, {"exceptionId": "device", "breakMode": "always",
                               "description": chain_source_text(session, session.program.instrs[pc])
                               or session.ptx_name})
