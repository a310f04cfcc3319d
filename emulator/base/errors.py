"""The errors gpuemu reports to people: each one renders as one clear line, never a traceback."""
from __future__ import annotations

from emulator.base.text import printable


class GpuemuError(Exception):
    """Base of every error meant for the user; str() is the one-line message, control characters escaped."""

    exit_status = 1

    def __init__(self, message: str = ""):
        super().__init__(printable(message))


class PTXSyntaxError(GpuemuError):
    """Bad PTX text: file:line:col, the offending text, what was expected."""

    exit_status = 2

    def __init__(self, source: str, line: int, col: int, message: str):
        self.source, self.line, self.col, self.message = printable(source), line, col, printable(message)
        super().__init__(f"{source}:{line}:{col}: error: {message}")


class PTXSemanticError(PTXSyntaxError):
    """PTX that parses but cannot be lowered: unknown opcode, undeclared register, bad operand."""


class LaunchError(GpuemuError):
    """A launch CUDA would refuse, named after CUDA's error (e.g. CUDA_ERROR_INVALID_VALUE)."""

    exit_status = 3

    def __init__(self, cuda_error: str, message: str, configuration: bool = False):
        self.cuda_error = cuda_error
        #: a bad grid or block shape, which the CUDA runtime reports as cudaErrorInvalidConfiguration (the driver
        #: as CUDA_ERROR_INVALID_VALUE); too much shared memory stays cudaErrorInvalidValue there, as on the H100
        self.configuration = configuration
        super().__init__(f"{cuda_error}: {message}")


class UsageError(GpuemuError):
    """Bad command-line input: argument specs, files, kernel names."""

    exit_status = 2


class DeviceError(GpuemuError):
    """A kernel stopped on the device: a memory fault, a trap, a deadlock, the step limit."""

    exit_status = 4

    def __init__(self, cuda_error: str, report: str, summary: str):
        self.cuda_error = cuda_error
        self.report = printable(report, keep_newlines=True)
        self.summary = printable(summary)
        super().__init__(summary)
