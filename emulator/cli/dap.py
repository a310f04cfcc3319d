"""`gpuemu dap`: serve the Debug Adapter Protocol on stdin/stdout (editors start it; see editors/vscode)."""
from __future__ import annotations

import os
import sys


def add_command(commands) -> None:
    dap = commands.add_parser(
        "dap", help="serve the Debug Adapter Protocol over stdio (VS Code, nvim-dap, dap-mode)",
        description="Speak the Debug Adapter Protocol on stdin/stdout: an editor sends the launch configuration "
                    "(program, kernel, grid, block, args as in launches.json).")
    dap.set_defaults(handler=command_dap)


def command_dap(options, stdin=None, stdout=None) -> int:
    """Serve until the client disconnects or stdin ends; the protocol owns stdout, so stray text goes to stderr."""
    from emulator.debug.dap import DapServer
    reader = stdin if stdin is not None else sys.stdin.buffer
    writer = stdout if stdout is not None else os.fdopen(os.dup(1), "wb", buffering=0)
    saved, sys.stdout = sys.stdout, sys.stderr
    try:
        return DapServer(reader, writer).serve()
    finally:
        sys.stdout = saved
