"""Files written whole: through a temporary file beside the target, renamed over it."""
from __future__ import annotations

import os
import tempfile


def write_atomically(path: str, suffix: str, write, binary: bool) -> None:
    """Write through a temporary file in the same directory, then rename it over path, so a reader never sees half
    a file; the file gets the permissions the umask gives a new file, not mkstemp's private 0600."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=directory, suffix=suffix)
    try:
        with os.fdopen(handle, "wb" if binary else "w", encoding=None if binary else "utf-8") as stream:
            write(stream)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
