"""--jobs: --repeat's random schedules over worker processes give the report, outputs and exit status of --jobs 1;
a fault or an error in a worker reads as in this process; Ctrl-C and SIGTERM end the workers and leave no output."""
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from emulator.base.errors import LaunchError
from emulator.cli import checks, main, parallel
from emulator.cli.parallel import LaunchJob, RemoteError, run_schedules

ROOT = Path(__file__).resolve().parents[1]
CHECKS = ROOT / "tests" / "kernels" / "checks.ptx"
HISTOGRAM = ROOT / "examples" / "histogram"


def gpuemu(*args, **options):
    return subprocess.run([sys.executable, "-m", "emulator", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, **options)


def order_dependent_floats() -> np.ndarray:
    """128 floats of magnitudes from 1e-3 to 1e7, in every warp: most orders of the warps' float atomic adds round
    to different sums (random schedules with seeds 0-5 give several)."""
    rng = np.random.default_rng(5)
    return (rng.standard_normal(128) * 10.0 ** rng.integers(-3, 8, 128)).astype(np.float32)


def sums_in_warp_orders(values: np.ndarray) -> set:
    """The f32 sums of values added one at a time, a warp's 32 lanes in lane order, in every order of the warps."""
    sums = set()
    for order in itertools.permutations(range(len(values) // 32)):
        total = np.float32(0)
        for value in np.concatenate([values[warp * 32:warp * 32 + 32] for warp in order]):
            total = np.float32(total + value)
        sums.add(float(total))
    return sums


def atomic_sums(tmp_path):
    """float_atomic_sum of order_dependent_floats (its sum depends on the order the schedule adds in) and
    int_atomic_sum of 0..127 (8128 in any order)."""
    np.save(tmp_path / "f.npy", order_dependent_floats())
    np.save(tmp_path / "i.npy", np.arange(128, dtype=np.int32))
    common = ["run", CHECKS, "--grid", "1", "--block", "128", "--schedule", "random", "--repeat", "6"]
    return {"float": common + ["--kernel", "float_atomic_sum", "--arg", f"@{tmp_path / 'f.npy'}", "--arg",
                               "zeros:f32:1"],
            "int": common + ["--kernel", "int_atomic_sum", "--arg", f"@{tmp_path / 'i.npy'}", "--arg", "zeros:i32:1"]}


def without_timing(stderr: str, directory: Path) -> str:
    return re.sub(r" in \d+\.\d+ s", " in T s", stderr.replace(str(directory), "DIR"))


def report_without_timing(path: Path) -> dict:
    return {key: value for key, value in json.loads(path.read_text()).items() if "second" not in key}


@pytest.mark.parametrize("kernel, status, verdict", [("float", 1, "outputs differ between schedules"),
                                                      ("int", 0, "outputs identical under 6 random schedules")])
def test_two_jobs_give_the_report_outputs_and_status_of_one(tmp_path, kernel, status, verdict):
    command = atomic_sums(tmp_path)[kernel]
    runs = {}
    for jobs in (1, 2):
        out = tmp_path / f"jobs{jobs}"
        result = gpuemu(*command, "--jobs", jobs, "--out", out, "--json", out / "report.json")
        runs[jobs] = (result.returncode, without_timing(result.stderr, out), report_without_timing(out / "report.json"),
                      sorted(path.name for path in out.iterdir()), (out / "arg1.npy").read_bytes())
    assert runs[1] == runs[2]
    returncode, stderr, report, names, _ = runs[2]
    assert returncode == status and verdict in stderr and "Traceback" not in stderr
    assert names == ["arg0.npy", "arg1.npy", "report.json"] and report["repeat"]["runs"] == 6
    if kernel == "int":
        assert np.load(tmp_path / "jobs2" / "arg1.npy")[0] == np.arange(128).sum()
    else:
        assert report["repeat"]["distinct_results"] >= 2
        assert np.load(tmp_path / "jobs2" / "arg1.npy")[0] in sums_in_warp_orders(order_dependent_floats())


def oob_job(**changes) -> LaunchJob:
    """oob_write over 2 x 64 threads into 100 ints: threads 100..127 write past the buffer under every schedule."""
    fields = dict(text=CHECKS.read_text(), source_name=str(CHECKS), kernel="oob_write", constants=(),
                  args=(np.zeros(100, np.int32), np.int32(100)), grid=(2, 1, 1), block=(64, 1, 1), shared=0,
                  max_dynamic_shared=None, max_steps=10 ** 6, arch=90, spin_limit=100_000, backend="auto",
                  max_memory=None, contract=True)
    fields.update(changes)
    return LaunchJob(**fields)


def test_a_fault_in_a_worker_is_the_outcome_it_is_in_this_process():
    seeds = [5, 6, 7]
    here = run_schedules(oob_job(), seeds, jobs=1)
    assert here == [(seed, [], "CUDA_ERROR_ILLEGAL_ADDRESS") for seed in seeds]
    assert run_schedules(oob_job(), seeds, jobs=2) == here


def test_a_workers_error_reads_as_the_same_line_with_the_same_exit_status():
    job = oob_job(max_memory=1000)
    with pytest.raises(LaunchError) as here:
        run_schedules(job, [0, 1], jobs=1)
    with pytest.raises(RemoteError) as there:
        run_schedules(job, [0, 1], jobs=2)
    assert "CUDA_ERROR_OUT_OF_MEMORY" in str(here.value) and "more than the limit of 1000 bytes" in str(here.value)
    assert str(there.value) == str(here.value) and there.value.exit_status == here.value.exit_status == 3


def test_outcomes_come_in_seed_order_with_each_seeds_own_outputs():
    sums = CHECKS.read_text()
    values = np.zeros(128, np.float32)
    values[[0, 32, 64]] = [1e8, 1.0, -1e8]
    job = oob_job(text=sums, kernel="float_atomic_sum", args=(values, np.zeros(1, np.float32)), grid=(1, 1, 1),
                  block=(128, 1, 1))
    seeds = list(range(10, 18))
    here, there = run_schedules(job, seeds, jobs=1), run_schedules(job, seeds, jobs=2)
    assert [seed for seed, _, _ in there] == seeds
    assert [[(i, a.tobytes()) for i, a in arrays] for _, arrays, _ in here] == \
        [[(i, a.tobytes()) for i, a in arrays] for _, arrays, _ in there]
    assert {float(arrays[1][1][0]) for _, arrays, _ in there} == {0.0, 1.0}


def test_a_process_forked_from_one_that_ran_workers_runs_its_own():
    job = oob_job()
    assert [error for _, _, error in run_schedules(job, [0, 1], jobs=2)] == ["CUDA_ERROR_ILLEGAL_ADDRESS"] * 2
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            outcome = repr([error for _, _, error in run_schedules(job, [2, 3], jobs=2)])
        except BaseException as error:
            outcome = f"{type(error).__name__}: {error}"
        os.write(writer, outcome.encode())
        os._exit(0)
    os.close(writer)
    with os.fdopen(reader) as stream:
        said = stream.read()
    os.waitpid(child, 0)
    assert said == "['CUDA_ERROR_ILLEGAL_ADDRESS', 'CUDA_ERROR_ILLEGAL_ADDRESS']"


def test_default_jobs_use_every_core_only_when_the_schedules_outlast_starting_workers():
    options = SimpleNamespace(jobs=None, repeat=20)
    assert checks.repeat_jobs(options, SimpleNamespace(wall_seconds=0.001)) == 1
    assert checks.repeat_jobs(options, SimpleNamespace(wall_seconds=1.0)) == len(os.sched_getaffinity(0))
    assert checks.repeat_jobs(SimpleNamespace(jobs=3, repeat=20), SimpleNamespace(wall_seconds=0.001)) == 3


@pytest.mark.parametrize("extra, fragment", [(["--jobs", "0"], "argument --jobs: 0 is not a positive number"),
                                             (["--jobs", "2"], "--jobs runs --repeat's schedules"),
                                             (["--cluster", "tcp://127.0.0.1:1"], "--cluster runs --repeat's"),
                                             (["--repeat", "2", "--schedule", "random", "--jobs", "2", "--cluster",
                                               "tcp://127.0.0.1:1"], "--jobs and --cluster: choose one")])
def test_jobs_and_cluster_misuse_is_a_one_line_usage_error(capsys, extra, fragment):
    status = main(["run", str(CHECKS), "--kernel", "int_atomic_sum", "--grid", "1", "--block", "32", "--arg",
                   "zeros:i32:32", "--arg", "zeros:i32:1", *extra])
    error = capsys.readouterr().err
    assert status == 2 and fragment in error and len(error.strip().splitlines()) == 1, error


def test_cluster_without_dask_says_how_to_install_it(capsys, monkeypatch):
    monkeypatch.setattr(parallel, "cluster_available", lambda: False)
    status = main(["run", str(CHECKS), "--kernel", "int_atomic_sum", "--grid", "1", "--block", "32", "--arg",
                   "zeros:i32:32", "--arg", "zeros:i32:1", "--schedule", "random", "--repeat", "2", "--cluster",
                   "tcp://127.0.0.1:8786"])
    error = capsys.readouterr().err
    assert status == 2 and len(error.strip().splitlines()) == 1
    assert "--cluster needs Dask distributed, which is not installed: pip install 'gpuemu[cluster]'" in error


def _descendants(pid: int):
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parents[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        children = [child for child, parent in parents.items() if parent == current]
        found += children
        todo += children
    return found


def _workers(pid: int):
    """The forkserver and the workers forked from it (they share its command line)."""
    named = []
    for child in _descendants(pid):
        try:
            if b"multiprocessing.forkserver" in Path(f"/proc/{child}/cmdline").read_bytes():
                named.append(child)
        except OSError:
            pass
    return named


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _start_long_schedules(out: Path):
    """gpuemu running --repeat 40 over 2 workers, once the workers have started: (the process, the forkserver and
    workers). Each schedule (48 MiB of bytes to count) takes about a second here, so workers left to finish theirs
    would outlive the command."""
    command = [HISTOGRAM / "histogram.ptx", "--grid", "64", "--block", "256",
               "--arg", "zeros:u8:50331648", "--arg", "i32:50331648", "--arg", "zeros:u32:256",
               "--schedule", "random", "--repeat", "40", "--jobs", "2", "--out", out, "--json", out / "report.json"]
    child, workers = _run_with_workers(command)
    time.sleep(0.3)
    return child, workers


def _run_with_workers(arguments):
    """`gpuemu run` with arguments in a session of its own, once its forkserver and 2 workers have started:
    (the process, their pids)."""
    command = [sys.executable, "-m", "emulator", "run", *arguments]
    child = subprocess.Popen(list(map(str, command)), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while len(_workers(child.pid)) < 3 and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    workers = _workers(child.pid)
    assert len(workers) >= 3, "the workers never started"
    return child, workers


@pytest.mark.parametrize("how", ["ctrl-c to the process group", "sigterm to gpuemu"])
def test_interrupting_the_schedules_ends_the_workers_and_leaves_no_output(tmp_path, how):
    out = tmp_path / "out"
    out.mkdir()
    np.save(out / "arg2.npy", np.zeros(3))
    child, workers = _start_long_schedules(out)
    signalled = time.monotonic()
    if how == "sigterm to gpuemu":
        child.send_signal(signal.SIGTERM)
    else:
        os.killpg(child.pid, signal.SIGINT)
    _, stderr = child.communicate(timeout=60)
    while any(_alive(pid) for pid in workers) and time.monotonic() < signalled + 10:
        time.sleep(0.02)
    assert not [pid for pid in workers if _alive(pid)] and time.monotonic() - signalled < 1.0
    assert child.returncode == (143 if how == "sigterm to gpuemu" else 130), stderr
    assert "Traceback" not in stderr
    said = "gpuemu: terminated" if how == "sigterm to gpuemu" else "gpuemu: interrupted"
    assert stderr.strip().splitlines()[-1] == said
    assert sorted(path.name for path in out.iterdir()) == ["report.json"]
    assert json.loads((out / "report.json").read_text())["status"] == "interrupted"


def test_interrupting_workers_while_they_send_large_results_ends_the_command_at_once(tmp_path):
    """Schedules that take no time over 3 x 120 MB of arguments: the workers spend their time sending those back, so
    a Ctrl-C lands in the middle of a result. A worker ended there left half a message that the pool's closing waited
    on for SHUTDOWN_SECONDS (5 s, then a leaked-semaphore warning after gpuemu's last line); 2 of 5 such interrupts
    did so before the fix."""
    n = 30_000_000
    for attempt, delay in enumerate((1.2, 1.5, 1.8)):
        out = tmp_path / f"out{attempt}"
        child, _ = _run_with_workers([ROOT / "examples" / "vecadd" / "vecadd.ptx", "--kernel", "vecadd", "--grid",
                                      "1", "--block", "32", "--arg", f"zeros:f32:{n}", "--arg", f"zeros:f32:{n}",
                                      "--arg", f"zeros:f32:{n}", "--arg", "i32:32", "--schedule", "random",
                                      "--repeat", "40", "--jobs", "2", "--out", out, "--quiet"])
        time.sleep(delay)
        signalled = time.monotonic()
        os.killpg(child.pid, signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
        assert time.monotonic() - signalled < 2.0, stderr
        assert child.returncode == 130 and stderr.strip().splitlines()[-1] == "gpuemu: interrupted", stderr


def test_workers_end_with_a_command_killed_outright(tmp_path):
    child, workers = _start_long_schedules(tmp_path / "out")
    killed = time.monotonic()
    child.kill()
    child.communicate(timeout=60)
    while any(_alive(pid) for pid in workers) and time.monotonic() < killed + 10:
        time.sleep(0.02)
    assert not [pid for pid in workers if _alive(pid)] and time.monotonic() - killed < 1.0


def test_a_worker_killed_mid_schedule_is_an_error_after_the_commands_own_run(tmp_path):
    """As any error of --repeat's schedules: the command's own launch was whole, so its outputs are written, and the
    run ends with the error's line and status."""
    out = tmp_path / "out"
    child, processes = _start_long_schedules(out)
    server = [pid for pid in processes if _parent(pid) == child.pid]
    worker = next(pid for pid in processes if server and _parent(pid) == server[0])
    os.kill(worker, signal.SIGKILL)
    _, stderr = child.communicate(timeout=120)
    assert child.returncode == 5 and "Traceback" not in stderr, stderr
    assert stderr.strip().splitlines()[-1] == ("gpuemu: error: a --jobs worker process was killed before it finished "
                                               "its schedule (out of host memory, or a signal); --jobs 1 runs the "
                                               "schedules in this process")
    assert sorted(path.name for path in out.iterdir()) == ["arg0.npy", "arg2.npy", "report.json"]
    assert json.loads((out / "report.json").read_text())["status"] == "check failed"


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
