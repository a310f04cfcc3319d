"""`gpuemu dap` driven as an editor drives it: the test speaks the Debug Adapter Protocol's JSON messages over the
adapter's stdio, started exactly as editors/vscode/package.json says, and checks every message against a subset of
the protocol's JSON schema written here from the specification (message envelopes and the bodies used), plus the
extension's package.json against VS Code's debugger contribution points."""
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from test_debugger import NULL_FORMAT_CALL_LINE, NULL_FORMAT_PRINTF

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parents[1]
COUNT_FOREVER = (ROOT / "tests" / "kernels" / "count_forever.ptx").read_text()
EXTENSION = ROOT / "editors" / "vscode"
BUILD = ROOT / "tests" / "debugbuild"
CU = str(BUILD / "blocksum.cu")
INPUT = np.load(BUILD / "in.npy")
POINTS = np.load(BUILD / "pts.npy")

_INT, _STR, _BOOL = {"type": "integer"}, {"type": "string"}, {"type": "boolean"}
_SOURCE = {"type": "object", "properties": {"name": _STR, "path": _STR, "sourceReference": _INT}}
_VARIABLE = {"type": "object", "required": ["name", "value", "variablesReference"],
             "properties": {"name": _STR, "value": _STR, "type": _STR, "variablesReference": _INT,
                            "evaluateName": _STR, "namedVariables": _INT, "indexedVariables": _INT}}
_BREAKPOINT = {"type": "object", "required": ["verified"],
               "properties": {"id": _INT, "verified": _BOOL, "message": _STR, "line": _INT}}
BODIES = {
    "initialize": {"type": "object", "properties": {"supportsStepBack": _BOOL, "supportsDataBreakpoints": _BOOL,
                                                    "exceptionBreakpointFilters": {"type": "array", "items": {
                                                        "type": "object", "required": ["filter", "label"]}}}},
    "setBreakpoints": {"type": "object", "required": ["breakpoints"],
                       "properties": {"breakpoints": {"type": "array", "items": _BREAKPOINT}}},
    "setDataBreakpoints": {"type": "object", "required": ["breakpoints"],
                           "properties": {"breakpoints": {"type": "array", "items": _BREAKPOINT}}},
    "dataBreakpointInfo": {"type": "object", "required": ["dataId", "description"],
                           "properties": {"dataId": {"type": ["string", "null"]}, "description": _STR,
                                          "accessTypes": {"type": "array", "items": {"enum": ["read", "write",
                                                                                             "readWrite"]}}}},
    "threads": {"type": "object", "required": ["threads"], "properties": {"threads": {"type": "array", "items": {
        "type": "object", "required": ["id", "name"], "properties": {"id": _INT, "name": _STR}}}}},
    "stackTrace": {"type": "object", "required": ["stackFrames"], "properties": {
        "totalFrames": _INT, "stackFrames": {"type": "array", "items": {
            "type": "object", "required": ["id", "name", "line", "column"],
            "properties": {"id": _INT, "name": _STR, "line": _INT, "column": _INT, "source": _SOURCE,
                           "presentationHint": {"enum": ["normal", "label", "subtle"]}}}}}},
    "scopes": {"type": "object", "required": ["scopes"], "properties": {"scopes": {"type": "array", "items": {
        "type": "object", "required": ["name", "variablesReference", "expensive"],
        "properties": {"name": _STR, "variablesReference": _INT, "expensive": _BOOL, "presentationHint": _STR}}}}},
    "variables": {"type": "object", "required": ["variables"],
                  "properties": {"variables": {"type": "array", "items": _VARIABLE}}},
    "evaluate": {"type": "object", "required": ["result", "variablesReference"],
                 "properties": {"result": _STR, "type": _STR, "variablesReference": _INT}},
    "continue": {"type": "object", "properties": {"allThreadsContinued": _BOOL}},
}
EVENTS = {
    "stopped": {"type": "object", "required": ["reason"], "properties": {
        "reason": _STR, "threadId": _INT, "allThreadsStopped": _BOOL, "description": _STR, "text": _STR,
        "hitBreakpointIds": {"type": "array", "items": _INT}}},
    "output": {"type": "object", "required": ["output"], "properties": {"output": _STR, "category": _STR}},
    "exited": {"type": "object", "required": ["exitCode"], "properties": {"exitCode": _INT}},
}
MESSAGE = {"type": "object", "required": ["seq", "type"],
           "properties": {"seq": _INT, "type": {"enum": ["request", "response", "event"]}}}
RESPONSE = {"required": ["request_seq", "success", "command"],
            "properties": {"request_seq": _INT, "success": _BOOL, "command": _STR, "message": _STR}}
EVENT = {"required": ["event"], "properties": {"event": _STR}}


def check(message):
    jsonschema.validate(message, MESSAGE)
    if message["type"] == "response":
        jsonschema.validate(message, RESPONSE)
        schema = BODIES.get(message["command"]) if message["success"] else None
    else:
        jsonschema.validate(message, EVENT)
        schema = EVENTS.get(message["event"])
    if schema is not None:
        jsonschema.validate(message["body"], schema)


def adapter_command():
    """The adapter as VS Code starts it: the extension folder joined with debuggers[0].program."""
    package = json.loads((EXTENSION / "package.json").read_text())
    return [str(EXTENSION / package["contributes"]["debuggers"][0]["program"])]


class Client:
    def __init__(self):
        env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
        self.process = subprocess.Popen(adapter_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        cwd=ROOT, env=env)
        self.seq = 0
        self.events = []

    def _read(self):
        length = None
        while True:
            line = self.process.stdout.readline()
            assert line, "the adapter closed its output"
            line = line.strip()
            if not line:
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        message = json.loads(self.process.stdout.read(length))
        check(message)
        return message

    def request(self, command, **arguments):
        self.seq += 1
        data = json.dumps({"seq": self.seq, "type": "request", "command": command, "arguments": arguments}).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        self.process.stdin.flush()
        while True:
            message = self._read()
            if message["type"] == "response" and message["request_seq"] == self.seq:
                return message
            self.events.append(message)

    def event(self, name):
        for index, message in enumerate(self.events):
            if message["event"] == name:
                return self.events.pop(index)
        while True:
            message = self._read()
            if message["type"] == "event" and message["event"] == name:
                return message
            self.events.append(message)

    def close(self):
        if self.process.poll() is None:
            self.request("disconnect")
        self.process.wait(timeout=30)


@pytest.fixture
def client():
    started = Client()
    yield started
    started.close()


def launch(client, **extra):
    assert client.request("initialize", adapterID="gpuemu", linesStartAt1=True)["body"]["supportsStepBack"]
    response = client.request("launch", program="tests/debugbuild/blocksum.G.ptx", kernel="blocksum", grid=[1, 1, 1],
                              block=[64, 1, 1], cwd=str(ROOT), args=["@tests/debugbuild/in.npy", "zeros:f32:1",
                                                                    "@tests/debugbuild/pts.npy", "i32:64"], **extra)
    assert response["success"], response
    client.event("initialized")


def values(client, reference):
    return {entry["name"]: entry for entry in client.request("variables", variablesReference=reference)["body"]
            ["variables"]}


def stopped_at(client, line: int) -> int:
    """Launch blocksum, stop at a breakpoint on a line of blocksum.cu; the stopped thread's id."""
    launch(client)
    client.request("setBreakpoints", source={"path": CU}, breakpoints=[{"line": line}])
    client.request("configurationDone")
    return client.event("stopped")["body"]["threadId"]


def test_breakpoint_on_a_cu_line_then_locals_struct_expansion_shared_and_evaluate(client):
    launch(client)
    answer = client.request("setBreakpoints", source={"path": CU},
                            breakpoints=[{"line": 28, "condition": "%tid.x == 5"}, {"line": 999}])["body"]
    assert answer["breakpoints"][0]["verified"] and not answer["breakpoints"][1]["verified"]
    client.request("setExceptionBreakpoints", filters=["fault"])
    client.request("configurationDone")
    stopped = client.event("stopped")["body"]
    assert stopped["reason"] == "breakpoint" and stopped["threadId"] == 6          # thread (5,0,0)
    frames = client.request("stackTrace", threadId=6)["body"]["stackFrames"]
    assert frames[0]["source"]["path"] == CU and frames[0]["line"] == 28
    scopes = {scope["name"]: scope for scope in client.request("scopes", frameId=frames[0]["id"])["body"]["scopes"]}
    assert set(scopes) == {"Locals", "Registers", "Shared", "Special registers"}
    local = values(client, scopes["Locals"]["variablesReference"])
    expected_sum = np.float32(INPUT[5] * INPUT[5]) + np.float32(POINTS[1]["x"] * 2 + POINTS[1]["y"])
    assert float(local["sum"]["value"]) == expected_sum and local["tx"]["value"] == "5"
    pointee = values(client, local["p"]["variablesReference"])["*p"]
    fields = values(client, pointee["variablesReference"])
    assert float(fields["x"]["value"]) == POINTS[1]["x"] and fields["y"]["value"] == str(POINTS[1]["y"])
    shared = values(client, scopes["Shared"]["variablesReference"])
    assert shared["s"]["indexedVariables"] == 64 and shared["tile"]["type"] == "float [8][8]"
    specials = values(client, scopes["Special registers"]["variablesReference"])
    assert specials["%tid.x"]["value"] == "5"
    result = client.request("evaluate", expression="p->y + 1", frameId=frames[0]["id"], context="watch")["body"]
    assert result["result"] == str(POINTS[1]["y"] + 1)
    failed = client.request("evaluate", expression="nosuch", frameId=frames[0]["id"], context="hover")
    assert not failed["success"] and "No symbol" in failed["message"]


def test_data_breakpoint_step_back_reverse_continue_and_the_end(client):
    thread = stopped_at(client, 28)
    info = client.request("dataBreakpointInfo", name="s[3]")["body"]
    assert info["dataId"] == "s[3]" and info["accessTypes"] == ["write"]
    watch = client.request("setDataBreakpoints", breakpoints=[{"dataId": "s[3]", "accessType": "write"}])
    assert watch["body"]["breakpoints"][0]["verified"]
    client.request("setBreakpoints", source={"path": CU}, breakpoints=[])
    client.request("continue", threadId=thread)
    stopped = client.event("stopped")["body"]
    assert stopped["reason"] == "data breakpoint" and stopped["threadId"] == 4     # thread (3,0,0) wrote s[3]
    written = client.request("evaluate", expression="s[3]", context="watch")["body"]["result"]
    assert float(written) == np.float32(INPUT[3] * INPUT[3]) + np.float32(POINTS[3]["x"] * 2 + POINTS[3]["y"])
    line_before = client.request("stackTrace", threadId=4)["body"]["stackFrames"][0]["line"]
    client.request("stepBack", threadId=4)
    assert client.event("stopped")["body"]["reason"] == "step"
    assert client.request("evaluate", expression="s[3]", context="watch")["body"]["result"] == "0"   # undone
    client.request("reverseContinue", threadId=4)
    client.event("stopped")
    client.request("next", threadId=4)
    client.event("stopped")
    assert client.request("stackTrace", threadId=4)["body"]["stackFrames"][0]["line"] <= line_before
    client.request("setDataBreakpoints", breakpoints=[])
    client.request("continue", threadId=4)
    assert client.event("exited")["body"]["exitCode"] == 0
    client.event("terminated")


def test_inlined_frames_and_hit_counts(client):
    launch(client)
    client.request("setBreakpoints", source={"path": CU}, breakpoints=[{"line": 8}, {"line": 34, "hitCondition": "3"}])
    client.request("configurationDone")
    thread = client.event("stopped")["body"]["threadId"]
    frames = client.request("stackTrace", threadId=thread)["body"]["stackFrames"]
    assert [(frame["name"], frame["line"]) for frame in frames] == [("square", 8),
                                                                     ("blocksum<<<(1,1,1),(64,1,1)>>>", 25)]
    assert frames[0]["presentationHint"] == "subtle"
    client.request("continue", threadId=thread)
    assert client.event("stopped")["body"]["reason"] == "breakpoint"
    assert client.request("evaluate", expression="k", context="watch")["body"]["result"] == "2"   # the third hit


def test_the_extension_contributes_the_gpuemu_debugger_as_vs_code_documents_it():
    package = json.loads((EXTENSION / "package.json").read_text())
    schema = {"type": "object", "required": ["name", "version", "publisher", "engines", "contributes"], "properties": {
        "engines": {"type": "object", "required": ["vscode"], "properties": {"vscode": _STR}},
        "contributes": {"type": "object", "required": ["debuggers"], "properties": {
            "breakpoints": {"type": "array", "items": {"type": "object", "required": ["language"]}},
            "debuggers": {"type": "array", "minItems": 1, "items": {
                "type": "object", "required": ["type", "label", "program", "configurationAttributes"],
                "properties": {"type": _STR, "label": _STR, "program": _STR, "runtime": _STR,
                               "args": {"type": "array", "items": _STR},
                               "languages": {"type": "array", "items": _STR},
                               "configurationAttributes": {"type": "object", "properties": {
                                   "launch": {"type": "object", "required": ["properties"],
                                              "properties": {"required": {"type": "array", "items": _STR},
                                                             "properties": {"type": "object"}}}},
                                   "additionalProperties": False},
                               "initialConfigurations": {"type": "array", "items": {
                                   "type": "object", "required": ["type", "request", "name"]}},
                               "configurationSnippets": {"type": "array", "items": {
                                   "type": "object", "required": ["label", "body"],
                                   "properties": {"label": _STR, "description": _STR,
                                                  "body": {"type": "object",
                                                           "required": ["type", "request", "name"]}}}}}}}}}}}
    jsonschema.validate(package, schema)
    debugger = package["contributes"]["debuggers"][0]
    assert debugger["type"] == "gpuemu"
    launch_schema = debugger["configurationAttributes"]["launch"]
    jsonschema.Draft7Validator.check_schema(launch_schema)
    for configuration in debugger["initialConfigurations"]:
        jsonschema.validate({key: value for key, value in configuration.items()
                             if key not in ("type", "request", "name")}, launch_schema)
    assert os.access(EXTENSION / debugger["program"], os.X_OK)


def test_step_out_of_an_inlined_function_returns_to_the_callers_line(client):
    thread = stopped_at(client, 8)
    assert client.request("stackTrace", threadId=thread)["body"]["stackFrames"][0]["name"] == "square"
    client.request("setBreakpoints", source={"path": CU}, breakpoints=[])
    client.request("stepOut", threadId=thread)
    assert client.event("stopped")["body"]["reason"] == "step"
    frames = client.request("stackTrace", threadId=thread)["body"]["stackFrames"]
    assert frames[0]["name"].startswith("blocksum") and frames[0]["source"]["path"] == CU
    assert [frame["line"] for frame in frames] == [25]     # `float sum = square(v);`, not a later line


def test_step_out_after_the_editor_looked_at_the_callers_frame_still_leaves_the_inlined_call(client):
    thread = stopped_at(client, 8)
    frames = client.request("stackTrace", threadId=thread)["body"]["stackFrames"]
    assert [frame["name"].partition("<")[0] for frame in frames][0] == "square"
    client.request("scopes", frameId=frames[1]["id"])
    client.request("evaluate", expression="sum", frameId=frames[1]["id"], context="hover")
    client.request("setBreakpoints", source={"path": CU}, breakpoints=[])
    client.request("stepOut", threadId=thread)
    assert client.event("stopped")["body"]["reason"] == "step"
    assert [frame["line"] for frame in client.request("stackTrace", threadId=thread)["body"]["stackFrames"]] == [25]


def frame_lines(client, thread):
    return [(frame["name"].partition("<")[0], frame["line"])
            for frame in client.request("stackTrace", threadId=thread)["body"]["stackFrames"]]


def test_next_and_step_in_move_by_cuda_line_unless_the_granularity_is_instruction(client):
    capabilities = client.request("initialize", adapterID="gpuemu", linesStartAt1=True)["body"]
    assert capabilities["supportsSteppingGranularity"] and capabilities["supportsExceptionInfoRequest"]
    response = client.request("launch", **BLOCKSUM_LAUNCH)
    assert response["success"], response
    client.event("initialized")
    client.request("setBreakpoints", source={"path": CU}, breakpoints=[{"line": 24, "condition": "%tid.x == 5"}])
    client.request("configurationDone")
    thread = client.event("stopped")["body"]["threadId"]
    client.request("setBreakpoints", source={"path": CU}, breakpoints=[])
    client.request("next", threadId=thread, granularity="instruction")
    assert client.event("stopped")["body"]["reason"] == "step"
    assert frame_lines(client, thread) == [("blocksum", 24)]    # line 24 is several instructions
    # blocksum.cu: 24 v = ..., 25 sum = square(v) (8 r = v * v, 9 return r), 26 p = ..., 27 sum += scaled(...) (14)
    expected = [("next", [("blocksum", 25)]), ("stepIn", [("square", 8), ("blocksum", 25)]),
                ("next", [("square", 9), ("blocksum", 25)]), ("next", [("blocksum", 25)]),
                ("next", [("blocksum", 26)]), ("stepIn", [("blocksum", 27)]),
                ("stepIn", [("scaled", 12), ("blocksum", 27)]), ("next", [("scaled", 14), ("blocksum", 27)]),
                ("stepOut", [("blocksum", 27)])]
    for request, lines in expected:
        client.request(request, threadId=thread)
        assert client.event("stopped")["body"]["reason"] == "step"
        assert (request, frame_lines(client, thread)) == (request, lines)


def test_step_back_goes_back_by_cuda_line_unless_the_granularity_is_instruction(client):
    thread = stopped_at(client, 26)
    client.request("setBreakpoints", source={"path": CU}, breakpoints=[])
    for _ in range(2):                                            # into the middle of line 26's instructions
        client.request("next", threadId=thread, granularity="instruction")
        client.event("stopped")
    assert frame_lines(client, thread)[-1] == ("blocksum", 26)
    client.request("stepBack", threadId=thread, granularity="instruction")
    client.event("stopped")
    assert frame_lines(client, thread)[-1] == ("blocksum", 26)     # one instruction back: still line 26
    client.request("stepBack", threadId=thread)
    assert client.event("stopped")["body"]["reason"] == "step"
    assert frame_lines(client, thread)[-1] == ("blocksum", 25)    # sum = square(v), the line before


def test_next_over_an_inlined_call_does_not_stop_inside_it(client):
    thread = stopped_at(client, 25)
    client.request("setBreakpoints", source={"path": CU}, breakpoints=[])
    lines = []
    for _ in range(3):
        client.request("next", threadId=thread)
        client.event("stopped")
        lines.append(frame_lines(client, thread))
    assert lines == [[("blocksum", 26)], [("blocksum", 27)], [("blocksum", 28)]]   # not into square (8, 9)


def test_exception_info_names_the_users_line_then_the_inlined_call_in_a_G_build(client):
    thread = stopped_at(client, 8)
    description = client.request("exceptionInfo", threadId=thread)["body"]["description"]
    assert re.fullmatch(r"(.*/)?blocksum\.cu:25, inlined: square at (.*/)?blocksum\.cu:8", description), description


def scope_values(client, frame_id):
    scopes = client.request("scopes", frameId=frame_id)["body"]["scopes"]
    return values(client, next(scope for scope in scopes if scope["name"] == "Locals")["variablesReference"])


def test_scopes_and_evaluate_of_a_callers_frame_show_the_callers_variables(client):
    launch(client)
    client.request("setBreakpoints", source={"path": CU}, breakpoints=[{"line": 14, "condition": "%tid.x == 5"}])
    client.request("configurationDone")
    thread = client.event("stopped")["body"]["threadId"]
    frames = client.request("stackTrace", threadId=thread)["body"]["stackFrames"]
    assert [(frame["name"].partition("<")[0], frame["line"]) for frame in frames] == [("scaled", 14),
                                                                                      ("blocksum", 27)]
    callee, caller = scope_values(client, frames[0]["id"]), scope_values(client, frames[1]["id"])
    assert set(callee) == {"p", "k"} and callee["k"]["value"] == "2"
    v = np.float32(INPUT[5])
    assert {"tx", "i", "v", "sum", "p"} <= set(caller) and "k" not in caller
    assert float(caller["sum"]["value"]) == v * v and caller["tx"]["value"] == "5"
    assert float(client.request("evaluate", expression="sum", frameId=frames[1]["id"])["body"]["result"]) == v * v
    assert not client.request("evaluate", expression="sum", frameId=frames[0]["id"])["success"]
    assert client.request("evaluate", expression="k", frameId=frames[0]["id"])["body"]["result"] == "2"


def test_the_outer_frame_of_an_inlined_call_leaves_out_the_inlined_functions_variables(client):
    launch(client)
    client.request("setBreakpoints", source={"path": CU}, breakpoints=[{"line": 9, "condition": "%tid.x == 5"}])
    client.request("configurationDone")
    thread = client.event("stopped")["body"]["threadId"]
    frames = client.request("stackTrace", threadId=thread)["body"]["stackFrames"]
    assert [frame["line"] for frame in frames] == [9, 25]
    inner, outer = scope_values(client, frames[0]["id"]), scope_values(client, frames[1]["id"])
    v = np.float32(INPUT[5])
    assert float(inner["r"]["value"]) == v * v and "r" not in outer and {"tx", "i", "v"} <= set(outer)
    assert float(client.request("evaluate", expression="r", frameId=frames[0]["id"])["body"]["result"]) == v * v
    assert not client.request("evaluate", expression="r", frameId=frames[1]["id"])["success"]


def test_a_check_finding_stops_the_kernel_as_an_exception(client):
    assert client.request("initialize", adapterID="gpuemu", linesStartAt1=True)["success"]
    response = client.request("launch", program="tests/kernels/checks.ptx", kernel="shared_race", grid=[1, 1, 1],
                              block=[64, 1, 1], cwd=str(ROOT), args=["zeros:i32:64", "zeros:i32:64"], check=["race"])
    assert response["success"], response
    client.event("initialized")
    client.request("setExceptionBreakpoints", filters=["check"])
    client.request("configurationDone")
    stopped = client.event("stopped")["body"]
    assert stopped["reason"] == "exception" and "race" in (stopped.get("text", "") + stopped.get("description", "")
                                                          ).lower()




def test_pause_stops_a_kernel_that_runs_on(client, tmp_path):
    program = tmp_path / "count.ptx"
    program.write_text(COUNT_FOREVER)
    assert client.request("initialize", adapterID="gpuemu", linesStartAt1=True)["success"]
    response = client.request("launch", program=str(program), grid=[1, 1, 1], block=[32, 1, 1], cwd=str(ROOT),
                              args=[])
    assert response["success"], response
    client.event("initialized")
    client.request("configurationDone")
    assert client.request("pause", threadId=1)["success"]
    assert client.event("stopped")["body"]["reason"] == "pause"


def test_a_pause_sent_with_configuration_done_stops_the_launch_it_precedes(client, tmp_path):
    """configurationDone and pause in one write: the adapter reads the pause before the launch has made its engine,
    and must still stop the kernel (it runs for ever otherwise; the timer ends a hung adapter so the test fails)."""
    program = tmp_path / "count.ptx"
    program.write_text(COUNT_FOREVER)
    assert client.request("initialize", adapterID="gpuemu", linesStartAt1=True)["success"]
    assert client.request("launch", program=str(program), grid=[1, 1, 1], block=[32, 1, 1], cwd=str(ROOT),
                          args=[])["success"]
    client.event("initialized")
    frames = b""
    for command in ("configurationDone", "pause"):
        client.seq += 1
        body = json.dumps({"seq": client.seq, "type": "request", "command": command,
                           "arguments": {"threadId": 1} if command == "pause" else {}}).encode()
        frames += _framed(body)
    watchdog = threading.Timer(60, client.process.kill)
    watchdog.start()
    try:
        client.process.stdin.write(frames)
        client.process.stdin.flush()
        assert client.event("stopped")["body"]["reason"] == "pause"
    finally:
        watchdog.cancel()


def _adapter_with_stderr():
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.Popen(adapter_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=ROOT, env=env)


def _framed(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _messages(data: bytes):
    """The JSON messages in an adapter's whole output, split by their Content-Length headers."""
    found = []
    while data:
        header, _, rest = data.partition(b"\r\n\r\n")
        length = int(header.decode().split(":")[1])
        found.append(json.loads(rest[:length]))
        data = rest[length:]
    return found


def test_malformed_messages_are_skipped_with_one_line_each_and_the_conversation_goes_on():
    adapter = _adapter_with_stderr()
    good = json.dumps({"seq": 9, "type": "request", "command": "initialize", "arguments": {"adapterID": "x"}})
    stdin = b"".join([_framed(b"{abc}"), _framed(b"\xff\xfe"), _framed(b"[]"),
                      _framed(b'{"type": "request", "command": "threads"}'),
                      _framed(b'{"seq": 7, "type": "request"}'),
                      _framed(b'{"seq": 8, "type": "request", "command": "threads", "arguments": [1]}'),
                      _framed(good.encode()),
                      _framed(b'{"seq": 10, "type": "request", "command": "disconnect"}')])
    stdout, stderr = adapter.communicate(stdin, timeout=60)
    assert adapter.returncode == 0
    answers = {message["request_seq"]: message for message in _messages(stdout) if message["type"] == "response"}
    for message in answers.values():
        check(message)
    # the DAP specification's Response: request_seq names the request answered; success false carries a message
    assert not answers[7]["success"] and "command" in answers[7]["message"]
    assert not answers[8]["success"] and "arguments" in answers[8]["message"]
    assert answers[9]["success"] and answers[9]["body"]["supportsStepBack"]
    lines = stderr.decode().splitlines()
    assert len(lines) == 4 and "Traceback" not in stderr.decode()
    assert "not JSON" in lines[0] and "not UTF-8" in lines[1] and "array" in lines[2] and "seq" in lines[3]


@pytest.mark.parametrize("header", [b"Content-Length: abc\r\n\r\n{}", b"Content-Length: -3\r\n\r\n{}",
                                    b"Content-Length: 50\r\n\r\n{}"])
def test_a_message_whose_framing_is_lost_ends_the_server_with_one_line_and_status_1(header):
    adapter = _adapter_with_stderr()
    stdout, stderr = adapter.communicate(header, timeout=60)
    assert adapter.returncode == 1 and stdout == b""
    assert len(stderr.decode().splitlines()) == 1 and "Traceback" not in stderr.decode()


BLOCKSUM_LAUNCH = {"program": "tests/debugbuild/blocksum.G.ptx", "kernel": "blocksum", "grid": [1], "block": [64],
                 "cwd": str(ROOT), "args": ["@tests/debugbuild/in.npy", "zeros:f32:1", "@tests/debugbuild/pts.npy",
                                            "i32:64"]}


def test_launch_configuration_fields_of_the_wrong_type_are_usage_messages_naming_the_field(client):
    assert client.request("initialize", adapterID="gpuemu")["success"]
    for field, value in [("history", "lots"), ("args", 5), ("shared", "x"), ("grid", {"x": 1}), ("maxSteps", -1),
                         ("sourceDirs", "src"), ("const", ["N"]), ("check", ["bogus"]), ("arch", "sm_x"),
                         ("grid", "abc"), ("debugInfo", "yes"), ("compilerOptions", ["-DN=1"])]:
        answer = client.request("launch", **{**BLOCKSUM_LAUNCH, field: value})
        assert not answer["success"] and f'"{field}"' in answer["message"], (field, answer)
        assert "internal error" not in answer["message"]


def test_requests_missing_a_required_field_are_usage_messages_naming_it(client):
    launch(client)
    answer = client.request("setBreakpoints", source={"path": CU}, breakpoints=[{"column": 3}])
    assert not answer["success"] and '"line"' in answer["message"] and "internal error" not in answer["message"]
    answer = client.request("variables")
    assert not answer["success"] and '"variablesReference"' in answer["message"]
    answer = client.request("variables", variablesReference="1")
    assert not answer["success"] and '"variablesReference"' in answer["message"]
    answer = client.request("setDataBreakpoints", breakpoints=[{"accessType": "write"}])
    assert not answer["success"] and '"dataId"' in answer["message"]
    answer = client.request("evaluate", expression=3)
    assert not answer["success"] and '"expression"' in answer["message"]


def _locals_at_line_28(client, **extra):
    assert client.request("initialize", adapterID="gpuemu")["success"]
    response = client.request("launch", **{**BLOCKSUM_LAUNCH, "program": "tests/debugbuild/blocksum.cu", **extra})
    assert response["success"], response
    client.event("initialized")
    client.request("setBreakpoints", source={"path": CU}, breakpoints=[{"line": 28, "condition": "%tid.x == 5"}])
    client.request("configurationDone")
    thread = client.event("stopped")["body"]["threadId"]
    frame = client.request("stackTrace", threadId=thread)["body"]["stackFrames"][0]
    scopes = {scope["name"]: scope for scope in client.request("scopes", frameId=frame["id"])["body"]["scopes"]}
    return values(client, scopes["Locals"]["variablesReference"])


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_launching_a_cu_program_compiles_it_with_G_so_the_locals_are_c_variables(client):
    local = _locals_at_line_28(client)
    expected_sum = np.float32(INPUT[5] * INPUT[5]) + np.float32(POINTS[1]["x"] * 2 + POINTS[1]["y"])
    assert float(local["sum"]["value"]) == expected_sum and local["tx"]["value"] == "5"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_debug_info_false_launches_a_cu_program_built_without_G(client):
    local = _locals_at_line_28(client, debugInfo=False)
    assert sorted(name.rsplit("_param_", 1)[1] for name in local) == ["0", "1", "2", "3"]   # the PTX parameters
    assert next(entry["value"] for name, entry in local.items() if name.endswith("_param_3")) == "64"


def test_data_breakpoints_on_expanded_children_resolve_to_their_full_expression(client):
    thread = stopped_at(client, 24)
    frame = client.request("stackTrace", threadId=thread)["body"]["stackFrames"][0]
    scopes = {scope["name"]: scope for scope in client.request("scopes", frameId=frame["id"])["body"]["scopes"]}
    shared_s = values(client, scopes["Shared"]["variablesReference"])["s"]
    element = client.request("dataBreakpointInfo", variablesReference=shared_s["variablesReference"],
                             name="[40]")["body"]
    assert element["dataId"] == "s[40]" and element["accessTypes"] == ["write"]
    local = values(client, scopes["Locals"]["variablesReference"])
    pointee = values(client, local["p"]["variablesReference"])["*p"]
    field = client.request("dataBreakpointInfo", variablesReference=pointee["variablesReference"], name="y")["body"]
    assert field["dataId"] == "(*p).y"             # resolved when set: p is assigned on line 26, after this stop
    # the DAP specification: dataId null, with a description of why, for what cannot be watched
    in_register = client.request("dataBreakpointInfo", variablesReference=scopes["Locals"]["variablesReference"],
                                 name="tx")["body"]
    assert in_register["dataId"] is None and "register" in in_register["description"]
    register = client.request("dataBreakpointInfo", variablesReference=scopes["Registers"]["variablesReference"],
                              name="%r1")["body"]
    assert register["dataId"] is None and "register" in register["description"]
    answer = client.request("setDataBreakpoints", breakpoints=[{"dataId": element["dataId"]}])["body"]
    assert answer["breakpoints"][0]["verified"], answer
    client.request("setBreakpoints", source={"path": CU}, breakpoints=[])
    client.request("continue", threadId=thread)
    stopped = client.event("stopped")["body"]
    assert stopped["reason"] == "data breakpoint" and stopped["threadId"] == 41     # thread (40,0,0) wrote s[40]
    written = client.request("evaluate", expression="s[40]", context="watch")["body"]["result"]
    expected = np.float32(INPUT[40] * INPUT[40]) + np.float32(POINTS[0]["x"] * 2 + POINTS[0]["y"])
    assert float(written) == expected


NULL_LOAD = """.version 8.0
.target sm_90
.address_size 64
.visible .entry null_load()
{
    .reg .b64 %rd<2>;
    .reg .b32 %r<2>;
    mov.u64 %rd1, 0;
    ld.global.u32 %r1, [%rd1];
    ret;
}
"""


def _faulting_launch(client, tmp_path, text, filters):
    program = tmp_path / "fault.ptx"
    program.write_text(text)
    assert client.request("initialize", adapterID="gpuemu")["success"]
    assert client.request("launch", program=str(program), grid=[1], block=[1], cwd=str(ROOT))["success"]
    client.event("initialized")
    client.request("setExceptionBreakpoints", filters=filters)
    client.request("configurationDone")


def test_a_vprintf_fault_is_an_exception_stop(client, tmp_path):
    _faulting_launch(client, tmp_path, NULL_FORMAT_PRINTF, ["fault"])
    stopped = client.event("stopped")["body"]
    assert stopped["reason"] == "exception" and "Access to 0x0" in stopped["text"]
    assert client.request("stackTrace", threadId=stopped["threadId"])["body"]["stackFrames"][0]["line"] == \
        NULL_FORMAT_CALL_LINE


@pytest.mark.parametrize("text", [NULL_LOAD, NULL_FORMAT_PRINTF], ids=["load", "vprintf"])
def test_with_the_fault_filter_off_the_fault_report_is_shown_as_output(client, tmp_path, text):
    _faulting_launch(client, tmp_path, text, [])
    assert client.event("exited")["body"]["exitCode"] == 1
    shown = "".join(message["body"]["output"] for message in client.events
                    if message["type"] == "event" and message["event"] == "output")
    assert shown.count("Access to 0x0 is out of bounds") == 1 and "CUDA_ERROR_ILLEGAL_ADDRESS" in shown
    assert not any(message["event"] == "stopped" for message in client.events if message["type"] == "event")
