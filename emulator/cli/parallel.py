"""Independent launches (--repeat's random schedules) run in this process, over worker processes (--jobs) or on a
Dask distributed cluster (--cluster), with the same results in the same order whichever runs them."""
from __future__ import annotations

import io
import os
import select
import signal
import threading
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from emulator.base.errors import DeviceError, GpuemuError, UsageError
from emulator.machine.policies import RandomSchedule
from emulator.runtime.arguments import ArgumentTypeWarning
from emulator.runtime.module import Device, Module

#: what one schedule gives: (seed, [(argument index, array after the launch)], CUDA error name or None)
Outcome = Tuple[int, List[Tuple[int, np.ndarray]], Optional[str]]

#: below this many seconds of expected work, starting worker processes costs more than it saves
WORKER_START_SECONDS = 0.5

#: how long an interrupted or broken pool of workers may take to close before the command goes on without it
SHUTDOWN_SECONDS = 5

#: how long --cluster waits for its scheduler to answer
CONNECT_SECONDS = 20

CLUSTER_EXTRA = "pip install 'gpuemu[cluster]' (or pip install 'dask[distributed]')"


def available_cores() -> int:
    """The cores this process may run on (its affinity mask, which a container or taskset narrows)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class LaunchJob:
    """One launch as data, read once by the command: what every schedule of it needs, with no file to open, so a
    worker process or a cluster's machine runs it from this alone."""
    text: str
    source_name: str
    kernel: Optional[str]
    constants: Tuple[Tuple[str, np.ndarray], ...]
    args: Tuple[object, ...]
    grid: Tuple[int, ...]
    block: Tuple[int, ...]
    shared: int
    max_dynamic_shared: Optional[int]
    max_steps: int
    arch: int
    spin_limit: int
    backend: str
    max_memory: Optional[int]
    contract: bool


def run_schedule(job: LaunchJob, seed: int) -> Outcome:
    """Launch job under the random schedule of seed on a fresh device. Its printf output and argument warnings
    are dropped: the command's own launch of the same arguments has shown them."""
    device = Device(backend=job.backend, stdout=io.StringIO(), max_memory=job.max_memory)
    module = Module(job.text, job.source_name, device)
    module.contract = job.contract
    for name, value in job.constants:
        module.set_symbol(name, value)
    kernel = module.kernel(job.kernel)
    args = [np.array(arg) if isinstance(arg, np.ndarray) else arg for arg in job.args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ArgumentTypeWarning)
        try:
            kernel.launch(job.grid, job.block, args, job.shared, max_steps=job.max_steps,
                          max_dynamic_shared=job.max_dynamic_shared, arch=job.arch, spin_limit=job.spin_limit,
                          policy=RandomSchedule(seed, independent_groups=job.arch >= 70), move_arguments=True)
        except DeviceError as error:
            return seed, [], error.cuda_error
    return seed, [(index, arg) for index, arg in enumerate(args) if isinstance(arg, np.ndarray)], None


class RemoteError(GpuemuError):
    """A GpuemuError raised where a schedule ran (a worker process, a cluster's machine): its one-line message and
    exit status, which the command reports as it would its own."""

    def __init__(self, message: str, exit_status: int):
        super().__init__(message)
        self.exit_status = exit_status

    def __reduce__(self):
        return RemoteError, (str(self), self.exit_status)


def run_schedule_remotely(job: LaunchJob, seed: int) -> Outcome:
    """run_schedule where it runs away from the command: a GpuemuError comes back as a RemoteError (gpuemu's errors
    take other arguments than their message, which pickle cannot rebuild)."""
    try:
        return run_schedule(job, seed)
    except RemoteError:
        raise
    except GpuemuError as error:
        raise RemoteError(str(error), error.exit_status) from None


class WorkerLost(GpuemuError):
    """A worker process ended in the middle of a schedule: killed by the system's out-of-memory killer or a
    signal."""

    exit_status = 5

    def __init__(self):
        super().__init__("a --jobs worker process was killed before it finished its schedule (out of host memory, "
                         "or a signal); --jobs 1 runs the schedules in this process")


_WORKER_JOB: List[LaunchJob] = []


def _start_worker(job: LaunchJob, command: int) -> None:
    """A worker process's start: Ctrl-C at the terminal reaches the whole process group, and the command, not each
    worker, answers it (it stops the workers); the job arrives once, not with every seed."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _end_with(command)
    _WORKER_JOB[:] = [job]


def _end_with(command: int) -> None:
    """End this worker when the command process ends without stopping it (SIGKILL): the pool's queues, which every
    worker holds both ends of, would otherwise keep it, and the forkserver, waiting for work forever."""
    try:
        handle = os.pidfd_open(command)
    except ProcessLookupError:
        os._exit(1)
    except (AttributeError, OSError):  # no pidfd (before Linux 5.3, or not Linux)
        return

    def wait() -> None:
        select.select([handle], [], [])
        os._exit(1)
    threading.Thread(target=wait, name="gpuemu-command-watch", daemon=True).start()


def _schedule_in_worker(seed: int) -> Outcome:
    return run_schedule_remotely(_WORKER_JOB[0], seed)


def run_schedules(job: LaunchJob, seeds: Sequence[int], *, jobs: int, cluster: Optional[str] = None,
                  advance: Callable[[], None] = lambda: None) -> List[Outcome]:
    """Every seed's outcome, in the order of seeds, from this process (jobs 1), jobs worker processes, or the Dask
    scheduler at address cluster; advance() is called as each one ends."""
    if cluster is not None:
        return _on_cluster(job, seeds, cluster, advance)
    workers = min(jobs, len(seeds))
    if workers <= 1:
        outcomes = []
        for seed in seeds:
            outcomes.append(run_schedule(job, seed))
            advance()
        return outcomes
    return _in_worker_processes(job, seeds, workers, advance)


def _worker_context():
    """forkserver: each worker forks from a single-threaded server that imported gpuemu once (fork from this process,
    which may hold threads, is unsafe, and spawn would import gpuemu again in every worker)."""
    import multiprocessing
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


def _start_own_worker_server() -> None:
    """In a process forked from one that ran workers (a test harness, a fuzzer): forget the forkserver inherited from
    it, which is not this process's child and which multiprocessing would fail to check on, so that --jobs starts
    one of its own."""
    from multiprocessing import forkserver
    inherited = forkserver._forkserver._forkserver_alive_fd
    if inherited is not None:
        try:
            os.close(inherited)
        except OSError:
            pass
    forkserver._forkserver.__init__()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_start_own_worker_server)


def _in_worker_processes(job: LaunchJob, seeds: Sequence[int], workers: int, advance) -> List[Outcome]:
    by_seed = {}
    executor = ProcessPoolExecutor(workers, mp_context=_worker_context(), initializer=_start_worker,
                                   initargs=(job, os.getpid()))
    try:
        futures = {executor.submit(_schedule_in_worker, seed): seed for seed in seeds}
        for future in as_completed(futures):
            by_seed[futures[future]] = future.result()
            advance()
    except BrokenProcessPool:
        _abandon(executor)
        raise WorkerLost() from None
    except BaseException:
        _abandon(executor)
        raise
    executor.shutdown(wait=True)
    return [by_seed[seed] for seed in seeds]


def _abandon(executor: ProcessPoolExecutor) -> None:
    """End the worker processes now, mid-launch (shutdown alone would wait for their current schedules), then let the
    pool close for at most SHUTDOWN_SECONDS: closing a pool whose workers were just ended can block for good (its
    manager thread may be writing to a queue no worker reads), and the command must still end."""
    for process in list((getattr(executor, "_processes", None) or {}).values()):
        if process.is_alive():
            process.terminate()
    # a worker ended while it sent its result leaves half a message, which the pool's manager thread would wait on for
    # good while this process holds the pipe's writing end too: closed here, the thread reads the pipe's end instead
    writer = getattr(getattr(executor, "_result_queue", None), "_writer", None)
    if writer is not None:
        writer.close()
    closing = threading.Thread(target=executor.shutdown, kwargs={"wait": True, "cancel_futures": True},
                               name="gpuemu-pool-close", daemon=True)
    closing.start()
    closing.join(SHUTDOWN_SECONDS)


def cluster_available() -> bool:
    import importlib.util
    return importlib.util.find_spec("distributed") is not None


def _on_cluster(job: LaunchJob, seeds: Sequence[int], address: str, advance) -> List[Outcome]:
    if not cluster_available():
        raise UsageError(f"--cluster needs Dask distributed, which is not installed: {CLUSTER_EXTRA}")
    from distributed import Client
    from distributed import as_completed as cluster_completed
    try:
        client = Client(address, set_as_default=False, timeout=f"{CONNECT_SECONDS}s")
    except (OSError, TimeoutError, ValueError) as error:
        raise UsageError(f"--cluster {address}: cannot reach a Dask scheduler there ({error})") from None
    futures = []
    try:
        [shared_job] = client.scatter([job], broadcast=True, hash=False)
        futures = [client.submit(run_schedule_remotely, shared_job, seed, pure=False) for seed in seeds]
        by_key = {future.key: seed for future, seed in zip(futures, seeds)}
        by_seed = {}
        for future in cluster_completed(futures, loop=client.loop):
            by_seed[by_key[future.key]] = future.result()
            advance()
        return [by_seed[seed] for seed in seeds]
    finally:
        if futures:
            client.cancel(futures)
        client.close()
