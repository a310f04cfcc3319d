"""Untrusted sources: mutants of every PTX and SASS file in examples/ and tests/, through the API and the CLI, end in
a clean run or one of gpuemu's documented errors (one line, a documented exit status) — never a traceback, a
hang or a signal.

Each run draws a new seed and prints it; GPUEMU_FUZZ_SEED=N repeats a run, GPUEMU_FUZZ_CASES (API mutants,
default 1500), GPUEMU_FUZZ_CLI_CASES (default 120, the last 6 as real `python -m emulator` processes) and
GPUEMU_FUZZ_JOBS (worker processes, default 2) size it, GPUEMU_FUZZ_ONLY=INDEX runs one API mutant in this
process; `make fuzz N=...` runs a longer one. A failure names the mutant's reproducer under the test's tmp dir.
"""
import os
import random
import time

import pytest

import fuzzing
from emulator.errors import GpuemuError

API_CASES = int(os.environ.get("GPUEMU_FUZZ_CASES", "1500"))
CLI_CASES = int(os.environ.get("GPUEMU_FUZZ_CLI_CASES", "120"))
REAL_CLI_CASES = min(6, CLI_CASES)
JOBS = max(1, int(os.environ.get("GPUEMU_FUZZ_JOBS", "2")))
#: the whole API run, however many mutants (a mutant has MUTANT_SECONDS of its own)
RUN_SECONDS = int(os.environ.get("GPUEMU_FUZZ_SECONDS", str(max(600, API_CASES // 2))))


@pytest.fixture(scope="module")
def corpus():
    return fuzzing.Corpus.load()


@pytest.fixture(scope="module")
def seed(request):
    """GPUEMU_FUZZ_SEED, else a new one; printed on the terminal either way."""
    value = int(os.environ.get("GPUEMU_FUZZ_SEED") or random.SystemRandom().randrange(1 << 32))
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(f"\ngpuemu fuzz seed {value} (GPUEMU_FUZZ_SEED={value} repeats this run)")
    return value


def _report(corpus, seed, failures, tmp_path, what: str) -> str:
    lines = [f"{len(failures)} {what} mutant(s) failed (seed {seed}; rerun with GPUEMU_FUZZ_SEED={seed}):"]
    for failure in failures[:10]:
        reproducer = fuzzing.save_reproducer(corpus, seed, failure, tmp_path) if failure.index >= 0 else None
        only = f" GPUEMU_FUZZ_ONLY={failure.index}" if failure.where == "api" else ""
        lines.append(f"- mutant {failure.index} ({failure.where}), reproducer {reproducer}{only}:\n"
                     f"{failure.problem.strip()}")
    return "\n".join(lines)


def test_the_corpus_is_every_ptx_and_sass_file_cut_into_seeds(corpus):
    on_disk = [path for top in ("examples", "tests") for path in (fuzzing.ROOT / top).rglob("*")
               if path.suffix in (".ptx", ".sass")]
    assert sorted(corpus.files) == sorted(on_disk) and len(on_disk) >= 70
    assert {seed.kind for seeds in corpus.seeds.values() for seed in seeds} == {"ptx", "sass"}
    assert all(len(seed.text) <= 2 * fuzzing.MAX_SEED_CHARS for seeds in corpus.seeds.values() for seed in seeds)


def test_every_mutation_kind_changes_its_seed_and_a_mutant_depends_only_on_seed_and_index(corpus):
    mutator = fuzzing.Mutator(corpus)
    text = (fuzzing.ROOT / "tests" / "kernels" / "scale.ptx").read_text()
    rng = random.Random(1)
    for name, mutation in mutator.kinds.items():
        assert any(mutation(text, rng) != text for _ in range(20)), name
    first = fuzzing.make_mutant(corpus, mutator, 7, 123)
    again = fuzzing.make_mutant(corpus, fuzzing.Mutator(corpus), 7, 123)
    assert (first.text, first.source, first.applied) == (again.text, again.source, again.applied)
    kinds = {kind for index in range(400) for kind in fuzzing.make_mutant(corpus, mutator, 7, index).applied}
    assert kinds == set(mutator.kinds)


def test_the_runner_reports_a_traceback_and_a_hang_with_reproducers(corpus, tmp_path, monkeypatch):
    """The fuzzer itself: a mutant that raises something other than a GpuemuError, and one that hangs, are
    failures with their reproducers; a GpuemuError with an undocumented exit status is one too."""
    def exercise(mutant):
        if mutant.index == 1:
            raise KeyError("a bug")
        if mutant.index == 2:
            time.sleep(60)
        if mutant.index == 3:
            odd = GpuemuError("a status of its own")
            odd.exit_status = 9
            fuzzing.check_error(odd)
        return "ok"
    monkeypatch.setattr(fuzzing, "exercise_api", exercise)
    monkeypatch.setattr(fuzzing, "MUTANT_SECONDS", 1)
    outcomes, failures = fuzzing.run_api(corpus, 5, 4, 1, tmp_path, time.monotonic() + 60)
    assert outcomes == {"ok": 1}
    problems = {failure.index: failure.problem for failure in failures}
    assert "KeyError: 'a bug'" in problems[1] and "a hang" in problems[2] and "exit status 9" in problems[3]
    report = _report(corpus, 5, failures, tmp_path, "API")
    assert "fuzz-repro-5-1." in report and list(tmp_path.glob("fuzz-repro-5-*"))


@pytest.mark.skipif(not os.environ.get("GPUEMU_FUZZ_ONLY"), reason="GPUEMU_FUZZ_ONLY=INDEX runs one mutant here")
def test_one_mutant_in_this_process(corpus, seed):
    mutant = fuzzing.make_mutant(corpus, fuzzing.Mutator(corpus), seed, int(os.environ["GPUEMU_FUZZ_ONLY"]))
    print(f"mutant of {mutant.source} by {', '.join(mutant.applied)}:\n{mutant.text}")
    fuzzing.exercise_api(mutant)


def test_mutants_through_the_api_end_in_documented_errors(corpus, seed, tmp_path):
    outcomes, failures = fuzzing.run_api(corpus, seed, API_CASES, JOBS, tmp_path, time.monotonic() + RUN_SECONDS)
    assert not failures, _report(corpus, seed, failures, tmp_path, "API")
    assert sum(outcomes.values()) == API_CASES
    assert outcomes.get("ok", 0) > API_CASES // 50, outcomes


def test_mutants_through_the_cli_end_in_documented_exit_statuses(corpus, seed, tmp_path):
    statuses, failures = fuzzing.run_cli(corpus, seed, CLI_CASES, REAL_CLI_CASES, JOBS, tmp_path,
                                         time.monotonic() + RUN_SECONDS)
    assert not failures, _report(corpus, seed, failures, tmp_path, "CLI")
    assert sum(statuses.values()) == CLI_CASES and set(statuses) <= fuzzing.DOCUMENTED_STATUSES
    assert statuses.get(0, 0) >= 1 and statuses.get(2, 0) >= 1, statuses

