"""gpuemu's on-disk caches: one private directory per user, every entry signed with the user's own key.

An entry is read back only when its HMAC-SHA256, keyed by a 32-byte secret kept in the cache directory,
matches: a file planted by anyone who cannot read that secret is ignored, so callers may store pickled
or otherwise executable payloads. The directory is created 0700; one that is owned by someone else, is
a link, or can be written by group or others (or sits below such a directory without a sticky bit)
turns the cache off with a one-line warning. GPUEMU_NO_CACHE=1 turns every cache off.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Optional

from emulator.base.text import printable

MAGIC = b"GPUEMU-CACHE-1\0"
KEY_FILE = "key"
KEY_BYTES = 32

_warned: set = set()


def cache_root() -> Optional[Path]:
    """$GPUEMU_CACHE_DIR, else $XDG_CACHE_HOME/gpuemu or ~/.cache/gpuemu; None when GPUEMU_NO_CACHE is set."""
    if os.environ.get("GPUEMU_NO_CACHE"):
        return None
    explicit = os.environ.get("GPUEMU_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpuemu"


def _warn_once(directory: Path, problem: str) -> None:
    if directory in _warned:
        return
    _warned.add(directory)
    print(f"gpuemu: warning: cache off: {printable(str(directory))} {problem}", file=sys.stderr)


def _unsafe_ancestor(directory: Path) -> Optional[str]:
    """Why a directory above the cache would let another user replace it, or None."""
    for parent in directory.parents:
        try:
            info = parent.stat()
        except OSError:
            return f"cannot be checked ({printable(str(parent))} is unreadable)"
        others_write = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        if info.st_uid not in (0, os.getuid()) or (others_write and not info.st_mode & stat.S_ISVTX):
            return f"sits in {printable(str(parent))}, which other users can change"
    return None


def _private_directory(directory: Path) -> Optional[Path]:
    """directory, created 0700 if missing, when only this user can change it; else None (warned once)."""
    if not hasattr(os, "getuid"):
        return directory if _make(directory) else None
    if not _make(directory):
        return None
    try:
        info = os.lstat(directory)
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        _warn_once(directory, "is not a plain directory")
        return None
    if info.st_uid != os.getuid():
        _warn_once(directory, "is owned by another user")
        return None
    if info.st_mode & 0o077 and not (info.st_mode & 0o022 == 0 and _tighten(directory)):
        _warn_once(directory, f"is open to group or others (mode {stat.S_IMODE(info.st_mode):o}; chmod 700 it)")
        return None
    problem = _unsafe_ancestor(directory)
    if problem:
        _warn_once(directory, problem)
        return None
    return directory


def _tighten(directory: Path) -> bool:
    """Make a directory only others could read (as earlier gpuemu versions created the cache) private; whether it now is.
    Nobody else could have written into it, and every entry read back must carry this user's signature anyway."""
    try:
        os.chmod(directory, 0o700, follow_symlinks=False)
    except (OSError, NotImplementedError):
        return False
    return True


def _make(directory: Path) -> bool:
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        return True
    except OSError:
        return False


def _secret(directory: Path) -> Optional[bytes]:
    """The user's signing key, made on first use (0600, never overwritten)."""
    path = directory / KEY_FILE
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        pass
    except OSError:
        return None
    else:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(os.urandom(KEY_BYTES))
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as stream:
        info = os.fstat(stream.fileno())
        if hasattr(os, "getuid") and (info.st_uid != os.getuid() or info.st_mode & 0o077):
            _warn_once(directory, "holds a signing key that other users can read or that is not yours")
            return None
        key = stream.read(KEY_BYTES + 1)
    return key if len(key) == KEY_BYTES else None


class Cache:
    """One namespace (e.g. "ptx", "grammar") of signed entries in the user's private cache directory."""

    def __init__(self, namespace: str):
        self.namespace = namespace

    def _place(self):
        root = cache_root()
        if root is None or _private_directory(root) is None:
            return None
        secret = _secret(root)
        folder = root / self.namespace
        if secret is None or not _make(folder):
            return None
        return folder, secret

    def _signature(self, secret: bytes, key: str, payload: bytes) -> bytes:
        header = f"{self.namespace}\0{key}\0".encode("utf-8", "surrogateescape")
        return hmac.new(secret, header + payload, hashlib.sha256).digest()

    def load(self, key: str) -> Optional[bytes]:
        """The payload stored under key, or None when absent, damaged or not signed with this user's key."""
        place = self._place()
        if place is None:
            return None
        folder, secret = place
        try:
            descriptor = os.open(folder / f"{key}.bin", os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(descriptor, "rb") as stream:
                blob = stream.read()
        except OSError:
            return None
        head = len(MAGIC)
        if not blob.startswith(MAGIC) or len(blob) < head + 32:
            return None
        signature, payload = blob[head:head + 32], blob[head + 32:]
        if not hmac.compare_digest(signature, self._signature(secret, key, payload)):
            return None
        return payload

    def store(self, key: str, payload: bytes) -> None:
        """Write atomically; a cache that cannot be written (read-only home, full disk) is simply not used."""
        place = self._place()
        if place is None:
            return
        folder, secret = place
        path = folder / f"{key}.bin"
        try:
            handle, temp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        except OSError:
            return
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(MAGIC + self._signature(secret, key, payload) + payload)
            os.replace(temp, path)
        except OSError:
            pass
        finally:
            if os.path.exists(temp):
                os.unlink(temp)


def digest(*parts) -> str:
    """A hex key over text, bytes and file contents (Path) alike."""
    hasher = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            part = part.read_bytes()
        elif isinstance(part, str):
            part = part.encode("utf-8", "surrogateescape")
        hasher.update(len(part).to_bytes(8, "little") + part)
    return hasher.hexdigest()
