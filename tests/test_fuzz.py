"""Untrusted PTX: thousands of mutated files end in a clear gpuemu error or a clean run — never a traceback or a hang."""
import os
import random
import re
import signal
from pathlib import Path

import numpy as np
import pytest

from emulator.errors import GpuemuError
from emulator.runtime.module import Module

ROOT = Path(__file__).resolve().parents[1]
CORPUS = [ROOT / "tests" / "kernels" / "machine.ptx"] + sorted((ROOT / "examples").glob("*/*.ptx"))[:6]
MUTATIONS = int(os.environ.get("GPUEMU_FUZZ_CASES", "1500"))
RUN_EVERY = 4
CASE_SECONDS = 10
TOKEN = re.compile(r"%?[\w$.]+|\S")


def mutate(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    choice = rng.randrange(8)
    if choice == 0 and len(lines) > 1:
        del lines[rng.randrange(len(lines))]
    elif choice == 1:
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
    elif choice == 2:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif choice in (3, 4, 5):
        tokens = list(TOKEN.finditer(text))
        if not tokens:
            return text
        a = tokens[rng.randrange(len(tokens))]
        if choice == 3:
            return text[:a.start()] + text[a.end():]
        if choice == 4:
            return text[:a.end()] + " " + a.group() + text[a.end():]
        b = tokens[rng.randrange(len(tokens))]
        first, second = sorted((a, b), key=lambda m: m.start())
        if first.end() > second.start():
            return text
        return (text[:first.start()] + second.group() + text[first.end():second.start()] + first.group()
                + text[second.end():])
    elif choice == 6:
        position = rng.randrange(len(text) + 1)
        noise = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 6))).decode("latin-1")
        return text[:position] + noise + text[position:]
    else:
        numbers = list(re.finditer(r"\b\d+\b", text))
        if numbers:
            m = numbers[rng.randrange(len(numbers))]
            value = rng.choice([0, 1, 3, 31, 32, 33, 255, 4096, 65536, 2 ** 31, 2 ** 32 + 1, 10 ** 12])
            return text[:m.start()] + str(value) + text[m.end():]
    return "\n".join(lines)


def arguments(kernel):
    args = []
    for param in kernel.params:
        if param.size == 8:
            args.append(np.zeros(1024, dtype=np.int32))
        elif param.size in (1, 2, 4):
            args.append(np.array(7, dtype=f"i{param.size}")[()])
        else:
            args.append(np.zeros(param.size, dtype=np.uint8))
    return args


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


def exercise(text: str, run: bool) -> None:
    module = Module(text, "fuzz.ptx")
    if not run:
        return
    for name in module.kernel_names[:2]:
        kernel = module.kernel(name)
        try:
            kernel.launch(2, 64, arguments(kernel), max_steps=3000)
        except GpuemuError:
            pass


@pytest.mark.parametrize("source", CORPUS, ids=lambda p: p.name)
def test_mutated_ptx_gives_clear_errors_never_tracebacks_or_hangs(source):
    original = source.read_text()
    rng = random.Random(f"gpuemu-fuzz-{source.name}")
    cases = max(50, MUTATIONS // len(CORPUS))
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for case in range(cases):
            text = original
            for _ in range(rng.randrange(1, 4)):
                text = mutate(text, rng)
            signal.alarm(CASE_SECONDS)
            try:
                exercise(text, run=case % RUN_EVERY == 0)
            except GpuemuError as error:
                message = str(error)
                assert message and "\n" not in message.strip() or hasattr(error, "report"), message
            except Hang:
                pytest.fail(f"mutation {case} of {source.name} ran over {CASE_SECONDS}s")
            except Exception as error:
                pytest.fail(f"mutation {case} of {source.name} raised {type(error).__name__}: {error}\n---\n{text}")
            finally:
                signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, previous)
