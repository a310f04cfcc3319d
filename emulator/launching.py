"""A launch from command-line options (program, kernel, constants, grid, block, arguments), for CLI and debugger."""
from __future__ import annotations

import os
import sys
from typing import List

import numpy as np

from emulator.base.errors import UsageError
from emulator.base.files import write_atomically
from emulator.base.sources import read_program
from emulator.frontend import cuda
from emulator.runtime.spec import default_arguments, parse_arg


def parse_dims(text: str, what: str):
    try:
        values = [int(part, 0) for part in text.replace("x", ",").split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"{what} '{text}' is not X[,Y[,Z]] of integers") from None
    if not 1 <= len(values) <= 3:
        raise UsageError(f"{what} '{text}' must have 1 to 3 components")
    return tuple(values)


def write_npy_atomically(path: str, array: np.ndarray) -> None:
    write_atomically(path, ".npy.tmp", lambda stream: np.save(stream, array, allow_pickle=False), binary=True)


def cuda_compile_options(options) -> List[str]:
    """The compiler options for a .cu file: -G when the command asks for debug information (`gpuemu debug` does
    unless --no-G), then the --compiler-option values."""
    chosen = [str(option) for option in getattr(options, "compiler_options", None) or []]
    wants_debug = getattr(options, "debug_info", False) and not any(o in cuda.DEBUG_OPTIONS for o in chosen)
    return (["-G"] if wants_debug else []) + chosen


def prepare_launch(options, stdout=None):
    """Load the module, resolve the kernel, set constants and parse the arguments; device printf writes to stdout
    (default: sys.stdout)."""
    from emulator.runtime.module import Device, Module
    if not os.path.exists(options.file):
        raise UsageError(f"{options.file}: no such file")
    device = Device(backend=options.backend, stdout=stdout, max_memory=getattr(options, "max_memory", None))
    if cuda.is_cuda_path(options.file):
        text = cuda.compile_file(options.file, options=cuda_compile_options(options),
                                 arch=getattr(options, "arch", None))
        name = cuda.ptx_name(options.file)
    else:
        text, name = read_program(options.file), options.file
    module = Module(text, name, device)
    module.contract = not getattr(options, "no_contract", False)
    kernel = module.kernel(options.kernel)
    for item in options.const:
        name, sep, spec = item.partition("=")
        if not sep or not spec.startswith("@"):
            raise UsageError(f"--const '{item}' should be NAME=@file.npy")
        module.set_symbol(name, parse_arg(spec))
    grid = parse_dims(options.grid, "--grid")
    block = parse_dims(options.block, "--block")
    if options.arg or not kernel.params:
        args = [parse_arg(spec, lazy=True, max_memory=device.max_memory) for spec in options.arg]
    else:
        args, note = default_arguments(kernel.params, grid, block)
        print(f"gpuemu: {note}", file=sys.stderr)
    return module, kernel, args, grid, block
