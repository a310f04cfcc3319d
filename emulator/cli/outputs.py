"""A run's output files, whole or absent: each is written under a temporary name beside its place and renamed into
place only when the run ends; a run that faults or is interrupted leaves none of them (except a JSON report that
says so, and the trace of a fault, which ends with the fault's record). --out's argK.npy of an earlier run that
this run does not write again are removed, so a directory never mixes two runs."""
from __future__ import annotations

import json
import os
import re
import signal
import tempfile
from typing import Callable, List, Optional, Tuple

#: the files of --out that gpuemu names itself (and so may remove when they belong to an earlier run)
ARG_FILE = re.compile(r"^arg\d+\.npy$")
TEMP_SUFFIX = ".gpuemu-tmp"
DEFERRED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


#: whether a command has taken charge of its outputs (made its RunOutputs); until then an interrupt is cleaned up
#: by abandon_outputs
taken_charge = False


def deliver_deferred_signals() -> None:
    """Let Ctrl-C and SIGTERM in again (the gpuemu command holds them back from its start until a command that
    writes files has made its RunOutputs, so an interrupt then still removes an earlier run's files)."""
    global taken_charge
    taken_charge = True
    signal.pthread_sigmask(signal.SIG_UNBLOCK, DEFERRED_SIGNALS)


def abandon_outputs(options, what: str) -> None:
    """An interrupt that came before the command took charge of its outputs (one Python noticed only once the
    command's first line ran): what run and profile would have done, the earlier run's argK.npy in --out removed
    and the --json report saying so."""
    if taken_charge or not getattr(options, "delivers_signals", False):
        return
    RunOutputs(getattr(options, "out", None)).abort()
    if getattr(options, "json", None):
        write_report_now(options.json, {"status": "interrupted", "message": what})


class Terminated(BaseException):
    """SIGTERM while a command runs: its outputs are removed as for Ctrl-C; the exit status is 143."""


def interrupted(error: BaseException) -> bool:
    return isinstance(error, (KeyboardInterrupt, Terminated))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class RunOutputs:
    """The files of one run, staged until commit() (renamed into place together) or abort() (removed)."""

    def __init__(self, out_dir: Optional[str] = None):
        self.out_dir = out_dir
        self.staged: List[Tuple[str, str]] = []  # (temporary path, final path)
        self.committed = False
        self.written: List[str] = []

    def _temporary(self, path: str, binary: bool):
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=TEMP_SUFFIX)
        os.chmod(temp, 0o666 & ~_umask())
        self.staged.append((temp, path))
        return os.fdopen(handle, "wb" if binary else "w", encoding=None if binary else "utf-8")

    def open(self, path: str, *, binary: bool = False):
        """A stream to write path's contents to during the run (a trace); the caller closes it."""
        return self._temporary(path, binary)

    def write(self, path: str, write: Callable, *, binary: bool = False) -> None:
        """Write path's contents now, under its temporary name."""
        with self._temporary(path, binary) as stream:
            write(stream)

    def write_json(self, path: str, data: dict) -> None:
        self.write(path, lambda stream: _dump_json(stream, data))

    def commit(self) -> List[str]:
        """Remove --out's argK.npy of earlier runs that this run does not replace, then rename every staged file into
        place, with Ctrl-C and SIGTERM held back until all are in place; returns the final paths."""
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, DEFERRED_SIGNALS)
        try:
            finals = {os.path.abspath(final) for _, final in self.staged}
            self._remove_stale(keep=finals)
            for temp, final in self.staged:
                os.replace(temp, final)
            self.written = [final for _, final in self.staged]
            self.staged = []
            self.committed = True
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        return self.written

    def abort(self, *, keep: Tuple[str, ...] = ()) -> None:
        """Remove the staged files (those whose final path is in keep are renamed into place instead) and --out's
        argK.npy of earlier runs, so that nothing of this run and nothing it would have replaced is left."""
        if self.committed:
            return
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, DEFERRED_SIGNALS)
        try:
            kept = {os.path.abspath(path) for path in keep}
            for temp, final in self.staged:
                if os.path.abspath(final) in kept:
                    os.replace(temp, final)
                else:
                    _unlink(temp)
            self.staged = []
            self._remove_stale(keep=kept)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)

    def _remove_stale(self, keep) -> None:
        if not self.out_dir or not os.path.isdir(self.out_dir):
            return
        for name in os.listdir(self.out_dir):
            path = os.path.abspath(os.path.join(self.out_dir, name))
            if ARG_FILE.match(name) and path not in keep and os.path.isfile(path):
                _unlink(path)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _dump_json(stream, data: dict) -> None:
    json.dump(data, stream, indent=2, sort_keys=True, default=str)
    stream.write("\n")


def write_report_now(path: str, data: dict) -> None:
    """Write a JSON report whole, at once (the report of a run that did not complete)."""
    outputs = RunOutputs()
    outputs.write_json(path, data)
    outputs.commit()
