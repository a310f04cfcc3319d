"""`gpuemu ocelot-lib`: the path of gpuemu's libgpuocelot.so (GPUOcelot's C ptx_run over emulator.ocelot)."""
from __future__ import annotations

import argparse
import sys

from ..errors import GpuemuError
from . import libdir
from .libraries import OCELOT


def add_command(commands) -> None:
    parser = commands.add_parser("ocelot-lib", help="print the path of gpuemu's libgpuocelot.so (GPUOcelot's ptx_run: "
                                 "OCELOT_PATH=$(gpuemu ocelot-lib) runs tinygrad's mock GPUs on gpuemu)")
    parser.set_defaults(handler=command_ocelot_lib)


def command_ocelot_lib(options: argparse.Namespace) -> int:
    directory, failed = libdir.library_directory()
    if OCELOT.filename in failed:
        raise GpuemuError(f"{OCELOT.filename} could not be built: {failed[OCELOT.filename]}")
    print(f"{directory}/{OCELOT.filename}", file=sys.stdout)
    return 0
