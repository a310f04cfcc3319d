"""The CUDA source lines reports may show: only files beside the PTX, files the user named, or under --source-dir.

A PTX file's `.file 1 "/any/path"` is untrusted input: gpuemu never reads a path just because the
PTX names it. A name is looked up (as given, then by its base name) in the PTX file's own directory
and in each source directory the user gave; a file is read only when its real path is one the user
passed, sits directly in the PTX's directory, or lies below a source directory."""
from __future__ import annotations

import os
import stat
from typing import Dict, List, Optional, Sequence

from emulator.base.errors import UsageError
from emulator.base.text import printable

#: the largest program file gpuemu reads (nvcc's PTX for a whole library is tens of megabytes)
MAX_PROGRAM_BYTES = 1 << 30


def read_program(path: str, what: str = "it") -> str:
    """The text of a PTX/SASS file the user named: a regular file of at most MAX_PROGRAM_BYTES (a device such as
    /dev/zero or a pipe would be read without end), undecodable bytes replaced."""
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise UsageError(f"{printable(path)}: not a regular file")
            data = handle.read(MAX_PROGRAM_BYTES + 1)
    except OSError as error:
        raise UsageError(f"{printable(path)}: cannot read {what} ({error.strerror or error})") from None
    if len(data) > MAX_PROGRAM_BYTES:
        raise UsageError(f"{printable(path)}: larger than {MAX_PROGRAM_BYTES >> 20} MiB, too large for a program")
    return data.decode("utf-8", errors="replace")


class SourceFiles:
    """Lines of the source files a PTX file's .file directives name, read once, within the allowed places."""

    def __init__(self, ptx_path: Optional[str], source_dirs: Sequence[str] = (), passed: Sequence[str] = ()):
        self.ptx_dir = (os.path.dirname(os.path.realpath(ptx_path))
                        if ptx_path and not ptx_path.startswith("<") else None)
        self.source_dirs = [os.path.realpath(directory) for directory in source_dirs]
        self.passed = {os.path.realpath(path) for path in passed}
        self._lines: Dict[str, Optional[List[str]]] = {}

    def _allowed(self, real: str) -> bool:
        if real in self.passed or (self.ptx_dir is not None and os.path.dirname(real) == self.ptx_dir):
            return True
        return any(os.path.commonpath([real, directory]) == directory for directory in self.source_dirs)

    def _candidates(self, name: str) -> List[str]:
        directories = ([self.ptx_dir] if self.ptx_dir else []) + self.source_dirs
        found = [name] if os.path.isabs(name) else []
        for directory in directories:
            found += [os.path.join(directory, name), os.path.join(directory, os.path.basename(name))]
        return found

    def lines(self, name: str) -> Optional[List[str]]:
        """Every line of the file `name` (control characters escaped), or None when it is not to be shown."""
        if name not in self._lines:
            self._lines[name] = None
            for candidate in self._candidates(name):
                real = os.path.realpath(candidate)
                if not (os.path.isfile(real) and self._allowed(real)):
                    continue
                try:
                    with open(real, encoding="utf-8", errors="replace") as handle:
                        self._lines[name] = [printable(line) for line in handle.read().splitlines()]
                except OSError:
                    continue
                break
        return self._lines[name]

    def line(self, name: str, number: int) -> Optional[str]:
        """Line `number` (1-based) of `name`, stripped, or None."""
        lines = self.lines(name)
        if lines is None or not 0 < number <= len(lines):
            return None
        return lines[number - 1].strip()
