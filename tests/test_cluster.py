"""--cluster: --repeat's schedules on a Dask distributed cluster (a LocalCluster this module starts) give the report,
outputs and exit status of --jobs 1, and a fault or error there reads as in this process."""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from emulator.base.errors import LaunchError  # noqa: E402
from emulator.cli import main, parallel  # noqa: E402
from emulator.cli.parallel import RemoteError, run_schedules  # noqa: E402
from test_parallel import oob_job, order_dependent_floats  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CHECKS = ROOT / "tests" / "kernels" / "checks.ptx"


@pytest.fixture(scope="module")
def scheduler():
    """Two worker processes of one thread each, on this machine: the address --cluster takes."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  scheduler_port=0) as cluster:
        yield cluster.scheduler_address


def gpuemu(*args):
    return subprocess.run([sys.executable, "-m", "emulator", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_schedules_on_the_cluster_give_the_report_outputs_and_status_of_one_process(tmp_path, scheduler):
    np.save(tmp_path / "f.npy", order_dependent_floats())
    command = ["run", CHECKS, "--kernel", "float_atomic_sum", "--grid", "1", "--block", "128", "--schedule", "random",
               "--repeat", "6", "--arg", f"@{tmp_path / 'f.npy'}", "--arg", "zeros:f32:1", "--quiet"]
    here = gpuemu(*command, "--jobs", "1", "--out", tmp_path / "here")
    there = gpuemu(*command, "--cluster", scheduler, "--out", tmp_path / "there")
    assert here.returncode == there.returncode == 1 and here.stderr == there.stderr
    assert re.search(r"outputs differ between schedules \(\d distinct results over seeds 0-5\)", there.stderr)
    assert (tmp_path / "here" / "arg1.npy").read_bytes() == (tmp_path / "there" / "arg1.npy").read_bytes()


def test_a_fault_and_an_error_on_the_cluster_read_as_in_this_process(scheduler):
    seeds = [3, 4, 5]
    assert run_schedules(oob_job(), seeds, jobs=1, cluster=scheduler) == \
        [(seed, [], "CUDA_ERROR_ILLEGAL_ADDRESS") for seed in seeds]
    with pytest.raises(LaunchError) as here:
        run_schedules(oob_job(max_memory=1000), seeds, jobs=1)
    with pytest.raises(RemoteError) as there:
        run_schedules(oob_job(max_memory=1000), seeds, jobs=1, cluster=scheduler)
    assert str(there.value) == str(here.value) and there.value.exit_status == here.value.exit_status == 3


def test_an_address_with_no_scheduler_is_a_one_line_error(capsys, monkeypatch):
    monkeypatch.setattr(parallel, "CONNECT_SECONDS", 1)
    status = main(["run", str(CHECKS), "--kernel", "int_atomic_sum", "--grid", "1", "--block", "32", "--arg",
                   "zeros:i32:32", "--arg", "zeros:i32:1", "--schedule", "random", "--repeat", "2",
                   "--cluster", "tcp://127.0.0.1:9", "--quiet"])
    error = capsys.readouterr().err
    assert status == 2 and len(error.strip().splitlines()) == 1, error
    assert "--cluster tcp://127.0.0.1:9: cannot reach a Dask scheduler there" in error
