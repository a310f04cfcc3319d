"""The event hook: every subscriber sees the same steps, memory accesses, branches and barriers the machine runs."""
from collections import Counter
from pathlib import Path

import numpy as np

import emulator
from emulator.machine.observe import Observer, combine

ROOT = Path(__file__).resolve().parents[1]


class Recorder(Observer):
    def __init__(self):
        self.events = Counter()
        self.lanes = 0
        self.spaces = Counter()

    def begin_launch(self, launch):
        self.events["begin_launch"] += 1

    def end_launch(self, launch, stats):
        self.events["end_launch"] += 1

    def step(self, batch, instr, sel, warps, lanes):
        self.events["step"] += 1
        self.lanes += lanes

    def memory(self, batch, instr, op, space, addresses, threads, width):
        self.spaces[(op, instr.decoded.get("space", "generic"), space)] += len(addresses)

    def branch(self, batch, instr, sel, taken, lanes, split_warps):
        self.events["divergent" if 0 < taken < lanes else "uniform"] += 1

    def barrier(self, batch, instr, sel, barrier_id, released):
        self.events["barrier"] += 1

    def exited(self, batch, instr, threads):
        self.events["exited"] += 1


def test_every_subscriber_sees_each_step_memory_access_branch_and_barrier():
    module = emulator.load(ROOT / "examples" / "dot" / "dot.ptx")
    n = 33 * 1024
    a = np.arange(n, dtype=np.float32)
    first, second = Recorder(), Recorder()
    stats = module.kernel("dot").launch(32, 256, [a, 2 * a, np.zeros(32, np.float32), np.int32(n)],
                                        observer=combine(first, second))
    assert first.events == second.events and first.spaces == second.spaces
    assert first.events["begin_launch"] == first.events["end_launch"] == 1
    assert first.events["step"] == stats.steps and first.lanes == stats.thread_instructions
    assert first.spaces[("load", "global", "global")] == 2 * n
    assert first.spaces[("store", "shared", "shared")] == 32 * (256 + 128 + 64 + 32 + 16 + 8 + 4 + 2 + 1)
    assert first.spaces[("load", "param", "global")] == 4 * 32 * 256
    assert first.events["barrier"] > 0 and first.events["divergent"] > 0 and first.events["exited"] > 0


def test_no_observer_means_no_events_and_the_same_results():
    module = emulator.load(ROOT / "examples" / "dot" / "dot.ptx")
    n = 33 * 1024
    a = np.arange(n, dtype=np.float32)
    plain, observed = np.zeros(32, np.float32), np.zeros(32, np.float32)
    module.kernel("dot").launch(32, 256, [a, 2 * a, plain, np.int32(n)])
    module.kernel("dot").launch(32, 256, [a, 2 * a, observed, np.int32(n)], observer=Recorder())
    assert plain.tobytes() == observed.tobytes()
