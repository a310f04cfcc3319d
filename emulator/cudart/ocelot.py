"""libgpuocelot.so's Python side: GPUOcelot's C ptx_run over emulator.ocelot, raw host addresses seen in place."""
from __future__ import annotations

from emulator import ocelot
from emulator.base.errors import DeviceError, GpuemuError
from emulator.cudart import context
from emulator.cudart.binding import Implementations

IMPLEMENTATIONS = Implementations()
NOT_SUPPORTED_NAME = "nothing"
ffi = lib = None


@IMPLEMENTATIONS.value
def ptx_run(src, count, args, bx, by, bz, gx, gy, gz, shared):
    """GPUOcelot's ptx_run returns nothing, so errors go to stderr: a fault as gpuemu's report (what the kernel
    wrote before it stays written, as on a GPU), anything else (bad PTX, arguments that do not fit) in one line."""
    state = context.get()
    try:
        if src == ffi.NULL or (count > 0 and args == ffi.NULL):
            raise ocelot.UsageError("ptx_run: the PTX source or the argument array is NULL")
        values = [int(ffi.cast("uintptr_t", args[index])) for index in range(max(count, 0))]
        ocelot.run_raw(ocelot.source_text(ffi.string(src)), values, (bx, by, bz), (gx, gy, gz), shared)
    except DeviceError as error:
        report = error.report if error.report != error.summary else ""
        state.write_stderr((report + "\n" if report else "") + f"gpuemu: kernel fault: {error.summary}\n")
    except GpuemuError as error:
        text = str(error)
        state.say(text if text.startswith("ptx_run") else f"ptx_run: {text}")
