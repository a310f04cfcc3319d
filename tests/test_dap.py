"""`gpuemu dap` driven as an editor drives it: the test speaks the Debug Adapter Protocol's JSON messages over the
adapter's stdio, started exactly as editors/vscode/package.json says, and checks every message against a subset of
the protocol's JSON schema written here from the specification (message envelopes and the bodies used), plus the
extension's package.json against VS Code's debugger contribution points."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parents[1]
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
    launch(client)
    client.request("setBreakpoints", source={"path": CU}, breakpoints=[{"line": 28}])
    client.request("configurationDone")
    thread = client.event("stopped")["body"]["threadId"]
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
    launch(client)
    client.request("setBreakpoints", source={"path": CU}, breakpoints=[{"line": 8}])
    client.request("configurationDone")
    thread = client.event("stopped")["body"]["threadId"]
    assert client.request("stackTrace", threadId=thread)["body"]["stackFrames"][0]["name"] == "square"
    client.request("setBreakpoints", source={"path": CU}, breakpoints=[])
    client.request("stepOut", threadId=thread)
    assert client.event("stopped")["body"]["reason"] == "step"
    frames = client.request("stackTrace", threadId=thread)["body"]["stackFrames"]
    assert frames[0]["name"].startswith("blocksum") and frames[0]["source"]["path"] == CU


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


COUNT_FOREVER = """.version 9.0
.target sm_90
.address_size 64
.visible .entry count_forever()
{
    .reg .b32 %r<2>;
    .reg .pred %p<2>;
    mov.u32 %r1, 0;
$L1:
    add.s32 %r1, %r1, 1;
    setp.ne.s32 %p1, %r1, -5;
    @%p1 bra $L1;
    ret;
}
"""


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
