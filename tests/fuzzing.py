"""The source fuzzer behind tests/test_fuzz.py and `make fuzz`: seeds cut from every PTX and SASS file in examples/
and tests/, mutations of many kinds, and runners that classify each mutant's outcome through the API (in forked
worker processes) and through the CLI (a forked `gpuemu` per mutant, and a few real `python -m emulator` runs).

Mutant i of a run is a pure function of (seed, i), so any one of them can be rebuilt and run alone.
"""
from __future__ import annotations

import io
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
#: the exit statuses gpuemu documents (README, docs/security.md): success, findings, usage and syntax, launch,
#: device, host memory
DOCUMENTED_STATUSES = frozenset({0, 1, 2, 3, 4, 5})
#: per-mutant limits: scheduler steps of each launch, host memory of each device, wall seconds
MAX_STEPS = 3000
MAX_MEMORY = 256 << 20
MUTANT_SECONDS = 30
#: seeds longer than this are cut (a PTX function body keeps its first lines, a SASS function its first ones)
MAX_SEED_CHARS = 6000


# ---- the corpus -------------------------------------------------------------------------------------

def corpus_files() -> List[Path]:
    """Every PTX and SASS file under examples/ and tests/ (not the fuzzer's own reproducers)."""
    found = []
    for top in ("examples", "tests"):
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix in (".ptx", ".sass") and path.is_file() and "fuzz-repro" not in path.name:
                found.append(path)
    return found


_FUNCTION_START = re.compile(r"^\s*(?:\.(?:visible|weak|extern)\s+)*\.(entry|func)\b")


def _top_level_items(text: str) -> List[Tuple[str, str]]:
    """(kind, text) of each top-level item of a PTX module: 'header', 'decl', 'entry' or 'func' (with a body)."""
    items: List[Tuple[str, str]] = []
    current: List[str] = []
    depth, opened, kind = 0, False, "decl"
    for line in text.splitlines():
        code = line.split("//", 1)[0]
        stripped = code.strip()
        if not current:
            if not stripped:
                continue
            if stripped.startswith((".version", ".target", ".address_size")):
                items.append(("header", line))
                continue
            match = _FUNCTION_START.match(code)
            kind, depth, opened = (match.group(1) if match else "decl"), 0, False
        current.append(line)
        depth += code.count("{") - code.count("}")
        opened = opened or "{" in code
        if kind == "decl" or not opened:
            ended = (depth <= 0 and (stripped.endswith((";", "}")) or (not opened and
                                                                        stripped.startswith((".file", ".loc")))))
            if ended:
                items.append(("decl", "\n".join(current)))
                current = []
        elif depth <= 0 and "}" in code:
            items.append((kind, "\n".join(current)))
            current = []
    if current:
        items.append((kind, "\n".join(current)))
    return items


def _function_name(item: str) -> Optional[str]:
    match = re.search(r"\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)", item)
    return match.group(1) if match else None


def _cut(function: str, budget: int) -> str:
    """A function cut to about budget characters: its first lines, then `ret;` and the closing brace."""
    if len(function) <= budget:
        return function
    lines = function.splitlines()
    kept, size = [], 0
    for line in lines:
        if size + len(line) > budget and any("{" in k for k in kept):
            break
        kept.append(line)
        size += len(line) + 1
    depth = sum(line.split("//", 1)[0].count("{") - line.split("//", 1)[0].count("}") for line in kept)
    return "\n".join(kept + ["\tret;"] + ["}"] * max(depth, 1))


def ptx_seeds(text: str) -> List[str]:
    """One seed per kernel: the module's header and declarations, the .funcs it calls, and the kernel."""
    items = _top_level_items(text)
    header = [item for kind, item in items if kind == "header"]
    decls = [item for kind, item in items if kind == "decl"]
    funcs = {_function_name(item): item for kind, item in items if kind == "func"}
    seeds = []
    for kind, item in items:
        if kind != "entry":
            continue
        called, todo = [], [item]
        while todo:
            body = todo.pop()
            for name in re.findall(r"\bcall(?:\.uni)?\s*(?:\([^)]*\)\s*,\s*)?([\w$]+)", body):
                if name in funcs and funcs[name] not in called:
                    called.append(funcs[name])
                    todo.append(funcs[name])
        prefix = "\n".join(header + [d if len(d) < 2000 else d[:2000].rsplit(",", 1)[0] + "};" for d in decls])
        budget = max(MAX_SEED_CHARS - len(prefix), 1500)
        seeds.append("\n".join([prefix] + [_cut(f, budget // 2) for f in called] + [_cut(item, budget)]) + "\n")
    return seeds or [text[:MAX_SEED_CHARS]]


def sass_seeds(text: str) -> List[str]:
    """One seed per `Function :` section of a listing, with the listing's header lines."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if re.match(r"^\s*Function\s*:", line)]
    if not starts:
        return [text[:MAX_SEED_CHARS]]
    header = lines[:starts[0]]
    seeds = []
    for start, end in zip(starts, starts[1:] + [len(lines)]):
        section, size = [], 0
        for line in lines[start:end]:
            if size + len(line) > MAX_SEED_CHARS:
                break
            section.append(line)
            size += len(line) + 1
        seeds.append("\n".join(header + section) + "\n")
    return seeds


@dataclass
class Seed:
    path: Path
    text: str
    kind: str  # "ptx" or "sass"


@dataclass
class Corpus:
    files: List[Path]
    seeds: Dict[Path, List[Seed]]
    lines: List[str]
    identifiers: List[str]
    labels: List[str]

    @classmethod
    def load(cls) -> "Corpus":
        files = corpus_files()
        seeds: Dict[Path, List[Seed]] = {}
        lines, identifiers, labels = [], set(), set()
        for path in files:
            text = path.read_text(encoding="utf-8", errors="replace")
            kind = "sass" if path.suffix == ".sass" else "ptx"
            pieces = sass_seeds(text) if kind == "sass" else ptx_seeds(text)
            seeds[path] = [Seed(path, piece, kind) for piece in pieces]
            for piece in pieces[:3]:
                lines.extend(line for line in piece.splitlines()[:400] if line.strip())
                identifiers.update(re.findall(r"%[A-Za-z_][\w.]*|\b[A-Za-z_][\w$]{2,}\b", piece))
                labels.update(re.findall(r"^\s*([$\w]+):", piece, re.M))
        return cls(files, seeds, lines, sorted(identifiers), sorted(labels))

    def seed_for(self, index: int, rng: random.Random) -> Seed:
        """Every file in turn (so each gets its share of mutants), one of its seeds at random."""
        path = self.files[index % len(self.files)]
        return rng.choice(self.seeds[path])


# ---- mutations --------------------------------------------------------------------------------------

TOKEN = re.compile(r"%?[\w$.]+|0[fFdD][0-9a-fA-F]+|\S")
NUMBER = re.compile(r"(?<![\w%$.])-?(?:0[xX][0-9a-fA-F]+|0[fFdD][0-9a-fA-F]{8,16}|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)")
IDENTIFIER = re.compile(r"%[A-Za-z_][\w]*(?:\.[xyzw])?|\$?[A-Za-z_][\w$]*")
DOTTED = re.compile(r"\.[A-Za-z_][\w:]*")
NUMBERS = ["0", "1", "-1", "3", "31", "32", "33", "255", "4096", "65535", "65536", str(2 ** 31 - 1), str(2 ** 31),
           str(2 ** 32), str(2 ** 32 + 1), str(2 ** 63), str(2 ** 64 - 1), str(2 ** 64), str(-2 ** 63), "10" + "0" * 30,
           "1.5", "1e308", "1e400", "-0.0", "nan", "0x7fffffff", "0xffffffffffffffff", "0x1" + "0" * 20,
           "0f7F800000", "0f7FC00000", "0dFFF0000000000000", "0d7FEFFFFFFFFFFFFF", "07777777777777777777777",
           "0b101", "1U", "9" * 4301]
SPECIALS = ["%tid.x", "%tid.w", "%ntid.y", "%ctaid.z", "%nctaid.x", "%laneid", "%warpid", "%nwarpid", "%smid",
            "%clock", "%clock64", "%globaltimer", "%lanemask_lt", "%envreg3", "%pm0", "%dynamic_smem_size",
            "%total_smem_size", "%cluster_ctarank", "%gridid", "%tid", "%ntid", "%is_explicit_cluster",
            "_", "%r0", "%p0", "%rd999999", "%undeclared", "undeclared_symbol", "$L__BB0_1", "vprintf",
            "__assertfail", "malloc", "free", "%SR_TID", "RZ", "PT", "UR63", "R255", "P7", "c[0x0][0x210]",
            "SR_CLOCKLO", "SR_LANEID"]
TYPES = [".u8", ".s8", ".u16", ".s16", ".u32", ".s32", ".u64", ".s64", ".b8", ".b16", ".b32", ".b64", ".b128",
         ".f16", ".f16x2", ".bf16", ".bf16x2", ".f32", ".f64", ".tf32", ".pred", ".e4m3x2", ".e5m2x2", ".u4", ".s2",
         ".v2", ".v4", ".v8"]
CONTROL = ["\x00", "\x1b[31m", "\x1b]0;title\x07", "\r", "\x7f", "\x08", "\x0c", "\x85", "\u202e", "\u2028",
           "\ufeff", "\t\t\t", "\u00e9", "\U0001f600"]
SURROGATES = ["\ud800", "\udfff", "\udc80"]


def _opcodes() -> List[str]:
    from isa.table import FAMILIES
    return [family.mnemonic for family in FAMILIES] + ["brx", "tex", "suld", "vadd", "IADD3", "LDG.E", "BRA",
                                                       "EXIT", "S2R", "BAR.SYNC", "WARPSYNC"]


def _modifiers() -> List[str]:
    from isa.table import CATEGORIES
    return sorted("." + value for values in CATEGORIES.values() for value in values if len(value) < 12)


def _replace_match(text: str, pattern: re.Pattern, rng: random.Random, make: Callable[[str], str]) -> str:
    matches = list(pattern.finditer(text))
    if not matches:
        return text
    match = rng.choice(matches)
    return text[:match.start()] + make(match.group()) + text[match.end():]


class Mutator:
    """Applies one to three mutations, chosen from KINDS, to a seed."""

    def __init__(self, corpus: Corpus):
        self.corpus = corpus
        self.opcodes = _opcodes()
        self.modifiers = _modifiers()
        self.kinds: Dict[str, Callable[[str, random.Random], str]] = {
            "delete token": self.delete_token, "duplicate token": self.duplicate_token, "swap tokens": self.swap_tokens,
            "delete line": self.delete_line, "duplicate line": self.duplicate_line, "swap lines": self.swap_lines,
            "number": self.number, "long digits": self.long_digits, "identifier": self.identifier,
            "type": self.type_swap, "modifier": self.modifier_swap, "opcode": self.opcode_swap,
            "control characters": self.control, "surrogate": self.surrogate, "truncate": self.truncate,
            "noise": self.noise, "brackets": self.brackets, "splice": self.splice, "guard": self.guard,
            "duplicate function": self.duplicate_function, "dimension": self.dimension,
        }

    #: mutations that keep the text readable as PTX come up more often than those that mostly break its syntax
    WEIGHTS = {"number": 4, "identifier": 4, "type": 3, "modifier": 3, "opcode": 3, "guard": 2, "dimension": 2,
               "splice": 2, "delete line": 2, "duplicate line": 2, "swap lines": 1, "duplicate function": 1}

    def mutate(self, text: str, rng: random.Random, *, surrogates: bool = True) -> Tuple[str, List[str]]:
        applied = []
        names = [name for name in self.kinds if surrogates or name != "surrogate"]
        weights = [self.WEIGHTS.get(name, 1) for name in names]
        for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
            name = rng.choices(names, weights)[0]
            text = self.kinds[name](text, rng)
            applied.append(name)
        return text, applied

    @staticmethod
    def _tokens(text: str):
        return list(TOKEN.finditer(text))

    def delete_token(self, text, rng):
        tokens = self._tokens(text)
        if not tokens:
            return text
        token = rng.choice(tokens)
        return text[:token.start()] + text[token.end():]

    def duplicate_token(self, text, rng):
        tokens = self._tokens(text)
        if not tokens:
            return text
        token = rng.choice(tokens)
        return text[:token.end()] + rng.choice(("", " ", ", ")) + token.group() + text[token.end():]

    def swap_tokens(self, text, rng):
        tokens = self._tokens(text)
        if len(tokens) < 2:
            return text
        first, second = sorted(rng.sample(tokens, 2), key=lambda m: m.start())
        return (text[:first.start()] + second.group() + text[first.end():second.start()] + first.group()
                + text[second.end():])

    @staticmethod
    def delete_line(text, rng):
        lines = text.split("\n")
        if len(lines) > 1:
            del lines[rng.randrange(len(lines))]
        return "\n".join(lines)

    @staticmethod
    def duplicate_line(text, rng):
        lines = text.split("\n")
        index = rng.randrange(len(lines))
        lines.insert(rng.randrange(len(lines) + 1), lines[index])
        return "\n".join(lines)

    @staticmethod
    def swap_lines(text, rng):
        lines = text.split("\n")
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines)

    @staticmethod
    def number(text, rng):
        return _replace_match(text, NUMBER, rng, lambda old: rng.choice(NUMBERS))

    @staticmethod
    def long_digits(text, rng):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.choice((20, 400, 4300, 4301, 9000))))
        return _replace_match(text, NUMBER, rng, lambda old: digits)

    def identifier(self, text, rng):
        def replacement(old):
            pool = rng.choice((SPECIALS, self.corpus.labels, self.corpus.identifiers))
            return rng.choice(pool) if pool else old
        return _replace_match(text, IDENTIFIER, rng, replacement)

    @staticmethod
    def type_swap(text, rng):
        return _replace_match(text, re.compile(r"\.(?:[usbf]\d+(?:x2)?|pred|bf16(?:x2)?|v[248])\b"), rng,
                              lambda old: rng.choice(TYPES))

    def modifier_swap(self, text, rng):
        return _replace_match(text, DOTTED, rng, lambda old: rng.choice(self.modifiers + TYPES + [""]))

    def opcode_swap(self, text, rng):
        return _replace_match(text, re.compile(r"^(\s*(?:@!?%?\w+\s+)?)([a-zA-Z][\w]*)", re.M), rng,
                              lambda old: re.sub(r"[a-zA-Z]\w*$", rng.choice(self.opcodes), old))

    @staticmethod
    def control(text, rng):
        position = rng.randrange(len(text) + 1)
        return text[:position] + rng.choice(CONTROL) + text[position:]

    @staticmethod
    def surrogate(text, rng):
        position = rng.randrange(len(text) + 1)
        return text[:position] + rng.choice(SURROGATES) + text[position:]

    @staticmethod
    def truncate(text, rng):
        return text[:rng.randrange(len(text) + 1)]

    @staticmethod
    def noise(text, rng):
        position = rng.randrange(len(text) + 1)
        noise = "".join(chr(rng.randrange(256)) for _ in range(rng.randrange(1, 8)))
        return text[:position] + noise + text[position:]

    @staticmethod
    def brackets(text, rng):
        brackets = [m for m in re.finditer(r"[{}\[\]()<>;,|!@]", text)]
        if brackets and rng.random() < 0.5:
            mark = rng.choice(brackets)
            return text[:mark.start()] + text[mark.end():]
        position = rng.randrange(len(text) + 1)
        return text[:position] + rng.choice("{}[]()<>;,|!@") + text[position:]

    def splice(self, text, rng):
        lines = text.split("\n")
        for _ in range(rng.randrange(1, 4)):
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(self.corpus.lines))
        return "\n".join(lines)

    @staticmethod
    def guard(text, rng):
        lines = text.split("\n")
        candidates = [i for i, line in enumerate(lines) if re.match(r"^\s+[a-z]", line)]
        if not candidates:
            return text
        index = rng.choice(candidates)
        guard = rng.choice(("@%p1 ", "@!%p1 ", "@%r1 ", "@P0 ", "@!PT ", "@%undeclared "))
        lines[index] = re.sub(r"^(\s+)", lambda m: m.group(1) + guard, lines[index], count=1)
        return "\n".join(lines)

    @staticmethod
    def duplicate_function(text, rng):
        match = re.search(r"(?:\.visible\s+)?\.entry[\s\S]*?\n}\n?", text)
        if not match:
            return text
        return text + "\n" + match.group()

    @staticmethod
    def dimension(text, rng):
        return _replace_match(text, re.compile(r"\[\d*\]|<\d+>|\.align\s+\d+|\.maxntid\s+[\d, ]+|\.reqntid\s+[\d, ]+"),
                              rng, lambda old: re.sub(r"\d+", lambda m: rng.choice(NUMBERS[:20] + ["0"]), old))


@dataclass
class Mutant:
    index: int
    text: str
    kind: str
    source: Path
    applied: List[str]
    kernels: List[str] = field(default_factory=list)


def make_mutant(corpus: Corpus, mutator: Mutator, seed: int, index: int, *, surrogates: bool = True) -> Mutant:
    rng = random.Random(f"gpuemu-fuzz:{seed}:{index}")
    chosen = corpus.seed_for(index, rng)
    text, applied = mutator.mutate(chosen.text, rng, surrogates=surrogates)
    kernels = re.findall(r"\.entry\s+([\w$]+)", chosen.text) or re.findall(r"Function\s*:\s*(\S+)", chosen.text)
    return Mutant(index, text, chosen.kind, chosen.path, applied, kernels)


# ---- running mutants through the API ----------------------------------------------------------------

class Hang(Exception):
    """A mutant ran past MUTANT_SECONDS."""


def _alarm(signum, frame):
    raise Hang()


def _arguments(kernel) -> list:
    """A 16 KB buffer for each 64-bit parameter, 7 (or 1.5) of the parameter's type for scalars, zero bytes for
    structs passed by value."""
    from isa.types import TYPES
    args = []
    for param in kernel.params:
        t = TYPES.get(param.type)
        if param.size == 8:
            args.append(np.zeros(4096, dtype=np.int32))
        elif t is not None and t.bytes == param.size and t.kind == "float":
            args.append(t.dtype.type(1.5))
        elif t is not None and t.bytes == param.size and t.kind == "half":
            args.append(np.array(0x3E00, dtype=f"u{param.size}")[()].view(f"f{param.size}") if param.size == 2
                        else np.array(0x3E003E00, dtype=np.uint32)[()].view(np.float32))
        elif param.size in (1, 2, 4):
            args.append(np.array(7, dtype=f"i{param.size}")[()])
        else:
            args.append(np.void(bytes(param.size)))
    return args


def exercise_api(mutant: Mutant) -> str:
    """Load the mutant and launch (at most two of) its kernels with small grids, step and memory limits, and one
    of the observers; returns the outcome ('ok' or an error's class). Raises what gpuemu should not."""
    from emulator.base.errors import GpuemuError
    from emulator.machine.policies import RandomSchedule
    from emulator.observers.checks import CheckSession
    from emulator.observers.stats import MemoryStats
    from emulator.observers.trace import TraceWriter
    from emulator.runtime.module import Device, Module
    device = Device(max_memory=MAX_MEMORY, stdout=io.StringIO())
    try:
        module = Module(mutant.text, f"fuzz.{mutant.kind}", device)
    except GpuemuError as error:
        check_error(error)
        return type(error).__name__
    outcome = "ok"
    for number, name in enumerate(module.kernel_names[:2]):
        choice = (mutant.index + number) % 5
        observer = [None, MemoryStats(), TraceWriter(io.StringIO(), {"ptx": "fuzz"}),
                    CheckSession({"race", "sync", "init", "mem"}, stream=io.StringIO()), None][choice]
        policy = RandomSchedule(mutant.index) if choice == 4 else None
        try:
            kernel = module.kernel(name)
            kernel.launch((1 + mutant.index % 2, 1, 1), (32 * (1 + mutant.index % 3), 1, 1), _arguments(kernel),
                          max_steps=MAX_STEPS, observer=observer, policy=policy, spin_limit=200)
        except GpuemuError as error:
            check_error(error)
            outcome = type(error).__name__
    return outcome


class Undocumented(Exception):
    """A GpuemuError that breaks the error contract (empty, several lines, an undocumented status)."""


def check_error(error) -> None:
    message = str(error)
    if not message.strip() or "\n" in message:
        raise Undocumented(f"{type(error).__name__} message is empty or not one line: {message!r}")
    if error.exit_status not in DOCUMENTED_STATUSES:
        raise Undocumented(f"{type(error).__name__} has undocumented exit status {error.exit_status}")


def api_worker(corpus: Corpus, seed: int, indices: List[int], log_path: Path) -> None:
    """Run mutants in this (forked) process, one JSON line per event: started, then the outcome or a failure."""
    import warnings
    os.environ["GPUEMU_NO_CACHE"] = "1"
    warnings.simplefilter("ignore")  # gpuemu's warnings (an argument of another kind) are not failures
    mutator = Mutator(corpus)
    signal.signal(signal.SIGALRM, _alarm)
    with open(log_path, "w", encoding="utf-8") as log:
        for index in indices:
            mutant = make_mutant(corpus, mutator, seed, index)
            log.write(json.dumps({"start": index}) + "\n")
            log.flush()
            record = {"index": index}
            signal.alarm(MUTANT_SECONDS)
            try:
                record["outcome"] = exercise_api(mutant)
            except Hang:
                record["failure"] = f"ran past {MUTANT_SECONDS} s (a hang)"
            except BaseException:
                record["failure"] = traceback.format_exc(limit=12)
            finally:
                signal.alarm(0)
            log.write(json.dumps(record) + "\n")
            log.flush()


@dataclass
class Failure:
    where: str
    index: int
    problem: str
    reproducer: Optional[Path] = None


def warm_up() -> None:
    """Build the PTX and SASS parsers and import every command before forking, so that no child spends its time
    on them (the children run with the caches off)."""
    import importlib
    from emulator.cli import COMMANDS
    from emulator.frontend.ptx.parse import parse
    from emulator.frontend.sass.parse import parse_listing
    for module in COMMANDS.values():
        importlib.import_module(module)
    parse((ROOT / "tests" / "kernels" / "scale.ptx").read_text())
    parse_listing((ROOT / "examples" / "sass" / "return32.sm_20.sass").read_text(), "warm.sass")


def run_api(corpus: Corpus, seed: int, count: int, jobs: int, workdir: Path, deadline: float) -> Tuple[Dict[str, int],
                                                                                                      List[Failure]]:
    """Mutants 0..count-1 through the API in `jobs` forked workers; (outcome counts, failures)."""
    warm_up()
    workers = []
    for job in range(jobs):
        indices = list(range(job, count, jobs))
        log_path = workdir / f"api-worker-{job}.jsonl"
        pid = os.fork()
        if pid == 0:
            status = 0
            try:
                api_worker(corpus, seed, indices, log_path)
            except BaseException:
                traceback.print_exc()
                status = 70
            finally:
                os._exit(status)
        workers.append((pid, log_path))
    outcomes: Dict[str, int] = {}
    failures: List[Failure] = []
    for pid, log_path in workers:
        status = _wait(pid, deadline)
        events = [json.loads(line) for line in log_path.read_text().splitlines() if line.strip()] \
            if log_path.exists() else []
        finished = {event["index"] for event in events if "index" in event}
        for event in events:
            if "outcome" in event:
                outcomes[event["outcome"]] = outcomes.get(event["outcome"], 0) + 1
            elif "failure" in event:
                failures.append(Failure("api", event["index"], event["failure"]))
        started = [event["start"] for event in events if "start" in event and event["start"] not in finished]
        if status != 0:
            index = started[-1] if started else -1
            problem = (f"the worker was killed by signal {-status}" if status < 0 else
                       "the worker ran past the time limit (a hang)" if status is None else
                       f"the worker exited with status {status}")
            failures.append(Failure("api", index, problem))
    return outcomes, failures


def _wait(pid: int, deadline: float) -> Optional[int]:
    """The child's exit status (negative: the signal that killed it; None: killed at the deadline)."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.02)


# ---- running mutants through the CLI ----------------------------------------------------------------

DEBUG_SCRIPT = "break 3\nrun\nnext\ninfo registers\nstep 5\nprint $pc\ncontinue\nquit\n"


def cli_command(mutant: Mutant, path: Path, workdir: Path) -> Tuple[List[str], str]:
    """The gpuemu command line for a mutant (which command and flags depend on its index) and its stdin."""
    index = mutant.index
    common = ["--grid", str(1 + index % 2), "--block", str(32 * (1 + index % 2)), "--max-steps", str(MAX_STEPS),
              "--max-memory", str(MAX_MEMORY)]
    if mutant.kernels and index % 3:
        common += ["--kernel", mutant.kernels[index % len(mutant.kernels)]]
    out = workdir / f"out-{index}"
    variant = index % 8
    if variant == 6:
        return ["debug", str(path), *common, "--batch"], DEBUG_SCRIPT
    if variant == 7:
        return ["profile", str(path), *common, "--json", str(out / "profile.json"),
                "--html", str(out / "profile.html")], ""
    extra = [[], ["--out", str(out), "--json", str(out / "run.json")], ["--stats"], ["--check", "all"],
             ["--trace", str(out / "t.trace")], ["--schedule", "random", "--seed", "3", "--repeat", "2"]][variant]
    return ["run", str(path), *common, *extra], ""


def write_mutant(mutant: Mutant, path: Path) -> None:
    """The mutant as a file: UTF-8, each lone surrogate as three bytes that are not valid UTF-8."""
    path.write_bytes(mutant.text.encode("utf-8", "surrogatepass"))


def run_cli(corpus: Corpus, seed: int, count: int, real: int, jobs: int, workdir: Path, deadline: float,
            first_index: int = 1_000_000) -> Tuple[Dict[int, int], List[Failure]]:
    """count mutants through gpuemu's CLI: the last `real` as `python -m emulator` subprocesses, the rest in
    forked children calling emulator.cli.main; (exit status counts, failures)."""
    from emulator.cli import main
    warm_up()
    mutator = Mutator(corpus)
    statuses: Dict[int, int] = {}
    failures: List[Failure] = []
    pending = list(range(first_index, first_index + count))
    running: Dict[int, Tuple[object, Mutant, Path, Path, Path]] = {}
    env = dict(os.environ, GPUEMU_NO_CACHE="1", PYTHONPATH=str(ROOT))
    while pending or running:
        while pending and len(running) < jobs:
            index = pending.pop(0)
            mutant = make_mutant(corpus, mutator, seed, index)
            source = workdir / f"mutant-{index}.{mutant.kind}"
            write_mutant(mutant, source)
            argv, script = cli_command(mutant, source, workdir)
            stdin_path, out_path = workdir / f"stdin-{index}", workdir / f"output-{index}"
            stdin_path.write_text(script)
            if index >= first_index + count - real:
                with open(stdin_path) as stdin, open(out_path, "w") as output:
                    child = subprocess.Popen([sys.executable, "-m", "emulator", *argv], stdin=stdin, stdout=output,
                                             stderr=subprocess.STDOUT, cwd=ROOT, env=env)
            else:
                child = _fork_cli(main, argv, stdin_path, out_path)
            running[index] = (child, mutant, source, out_path, time.monotonic() + MUTANT_SECONDS)
        for index, (child, mutant, source, out_path, until) in list(running.items()):
            status = _poll(child, until if until < deadline else deadline)
            if status == "running":
                continue
            del running[index]
            output = out_path.read_text(errors="replace")
            problem = None
            if status is None:
                problem = f"ran past {MUTANT_SECONDS} s (a hang)"
            elif status < 0:
                problem = f"killed by signal {-status}"
            elif status not in DOCUMENTED_STATUSES:
                problem = f"exit status {status}, which gpuemu does not document"
            elif "Traceback (most recent call last)" in output:
                problem = "a Python traceback"
            elif "internal error" in output:
                problem = "an internal error"
            if problem:
                failures.append(Failure("cli", index, f"{problem}: gpuemu {' '.join(argv_of(mutant, source, workdir))}"
                                                      f"\n{output[-3000:]}", source))
            else:
                statuses[status] = statuses.get(status, 0) + 1
        time.sleep(0.01)
    return statuses, failures


def argv_of(mutant: Mutant, source: Path, workdir: Path) -> List[str]:
    return cli_command(mutant, source, workdir)[0]


def _fork_cli(main, argv: List[str], stdin_path: Path, out_path: Path) -> int:
    pid = os.fork()
    if pid == 0:
        status = 99
        try:
            os.environ["GPUEMU_NO_CACHE"] = "1"
            stdin = os.open(stdin_path, os.O_RDONLY)
            output = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(stdin, 0)
            os.dup2(output, 1)
            os.dup2(output, 2)
            sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
            sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
            sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)
            status = main(argv)
        except BaseException:
            traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass
            os._exit(status if isinstance(status, int) else 99)
    return pid


def _poll(child, until: float):
    """'running', the exit status (negative: killed by that signal), or None after killing it at `until`."""
    if isinstance(child, int):
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        if time.monotonic() > until:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
            return None
        return "running"
    status = child.poll()
    if status is not None:
        return status
    if time.monotonic() > until:
        child.kill()
        child.wait()
        return None
    return "running"


def save_reproducer(corpus: Corpus, seed: int, failure: Failure, directory: Path) -> Path:
    """Write the failing mutant where the failure message can name it (a CLI mutant's file is kept as run)."""
    if failure.reproducer is not None:
        return failure.reproducer
    mutant = make_mutant(corpus, Mutator(corpus), seed, failure.index)
    path = directory / f"fuzz-repro-{seed}-{failure.index}.{mutant.kind}"
    write_mutant(mutant, path)
    return path
