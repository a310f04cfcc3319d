"""`gpuemu run --trace FILE`: a deterministic JSON-lines trace of every warp instruction; `gpuemu trace diff A B`.

A trace is a header line, then per executed warp instruction one record (block, warp, pc, active
mask, destination registers with their lane values, memory accesses with their addresses and the
bytes there after the instruction, branch outcomes, shared wavefronts / global sectors), an `instr`
line the first time a pc runs (its PTX line, CUDA line and text), and an `end` line. Same launch,
same trace, byte for byte: nothing in it depends on time, paths or the host.
"""
from __future__ import annotations

import collections
import hashlib
import io
import json
import os
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, TextIO, Tuple

import numpy as np

from isa.types import TYPES

from emulator import ir
from emulator.base.errors import UsageError
from emulator.machine.lanes import ALL
from emulator.runtime.names import plain_name
from emulator.memory import DeviceFault
from emulator.machine.observe import Observer

FORMAT = 1
#: op classes (and control kinds) a --trace-filter op= may name besides opcode prefixes
CONTROL_NAMES = {ir.BRANCH: "branch", ir.EXIT: "exit", ir.BARRIER: "barrier", ir.CALL: "call",
                 ir.RETURN: "return", ir.TRAP: "trap"}
#: op classes whose first operand is not a destination register
NO_DESTINATION = frozenset({"st", "red", "bar", "nop", "cp_async", "prefetch", "stmatrix", "sass", "builtin"})


def gpuemu_version() -> str:
    try:
        from importlib.metadata import version
        return version("gpuemu")
    except Exception:
        return "unknown"


# ---- filters ----------------------------------------------------------------------------------------

class TraceFilter:
    """Which records a trace keeps: `block=0-3`, `warp=0,2`, `pc=10-40`, `op=ld,st,branch` (each optional)."""

    KEYS = ("block", "warp", "pc", "op")

    def __init__(self, specs: Sequence[str] = ()):
        self.blocks: Optional[List[Tuple[int, int]]] = None
        self.warps: Optional[List[Tuple[int, int]]] = None
        self.pcs: Optional[List[Tuple[int, int]]] = None
        self.ops: Optional[List[str]] = None
        self.text = []
        for spec in specs:
            for item in spec.replace(";", " ").split():
                self._add(item)

    def _add(self, item: str) -> None:
        key, sep, value = item.partition("=")
        key = key.strip().lower().rstrip("s")
        if not sep or key not in self.KEYS or not value:
            raise UsageError(f"--trace-filter '{item}' is not KEY=VALUES with KEY one of block, warp, pc, op "
                             f"(e.g. block=0 warp=0-1 pc=10-40 op=ld,st)")
        self.text.append(f"{key}={value}")
        if key == "op":
            self.ops = (self.ops or []) + [v.strip() for v in value.split(",") if v.strip()]
            return
        ranges = []
        for part in value.split(","):
            low, dash, high = part.partition("-")
            try:
                ranges.append((int(low, 0), int(high, 0) if dash else int(low, 0)))
            except ValueError:
                raise UsageError(f"--trace-filter '{item}': '{part}' is not N or N-M") from None
        setattr(self, {"block": "blocks", "warp": "warps", "pc": "pcs"}[key],
                (getattr(self, {"block": "blocks", "warp": "warps", "pc": "pcs"}[key]) or []) + ranges)

    @staticmethod
    def _within(value: int, ranges) -> bool:
        return ranges is None or any(low <= value <= high for low, high in ranges)

    def keeps_instr(self, instr: ir.Instr) -> bool:
        if not self._within(instr.pc, self.pcs):
            return False
        if self.ops is None:
            return True
        names = {instr.op_class, CONTROL_NAMES.get(instr.control, "")}
        return any(op in names or instr.opcode == op or instr.opcode.startswith(op + ".") for op in self.ops)

    def describe(self) -> str:
        return " ".join(self.text)


# ---- formatting values ------------------------------------------------------------------------------

def _hex_values(values: np.ndarray) -> List[str]:
    """Raw bits as fixed-width hex strings (predicates as 0/1)."""
    if values.dtype == np.bool_:
        return ["1" if v else "0" for v in values]
    width = values.dtype.itemsize
    unsigned = values.view(np.dtype(f"u{width}")) if width in (1, 2, 4, 8) else values
    return [f"0x{int(v):0{2 * width}x}" for v in unsigned]


def _byte_values(raw: np.ndarray) -> List[str]:
    """(n, width) little-endian bytes as one hex number per lane."""
    return ["0x" + bytes(row[::-1]).hex() for row in raw]


def _compact(values: List[str]):
    """One string when every lane has the same value, else the per-lane list."""
    return values[0] if len(values) > 1 and values.count(values[0]) == len(values) else values


def _expand(values, count: int) -> List[str]:
    return [values] * count if isinstance(values, str) else list(values)


def _mask_text(lanes: np.ndarray) -> str:
    return f"{int(np.bitwise_or.reduce(np.left_shift(np.uint64(1), lanes.astype(np.uint64)))):08x}" if len(lanes) else "00000000"


#: register types trace diff shows decoded beside their bits
FLOAT_TYPES = ("f16", "bf16", "f32", "f64", "f16x2", "bf16x2")


def _float_type(instr: ir.Instr, reg: ir.RegInfo) -> Optional[str]:
    """The floating-point type a destination register holds: its declared type, else the instruction's result type
    when that is a float of the register's width (add.f32 into a .b32 register)."""
    if reg.type in FLOAT_TYPES:
        return reg.type
    decoded = getattr(instr, "decoded", None)
    try:
        result = decoded.signature.dest if decoded is not None and hasattr(decoded, "signature") else None
    except (KeyError, IndexError, ValueError):
        result = None
    if result in FLOAT_TYPES and TYPES[result].bytes == reg.storage.itemsize:
        return result
    return None


def decode_float(bits: str, type_name: str) -> Optional[str]:
    """A register's hex bits as the value of its float type ('1.5', '(1.0, -2.0)' for a pair); None if not hex."""
    try:
        value = int(bits, 16)
    except (TypeError, ValueError):
        return None
    if type_name in ("f16x2", "bf16x2"):
        half = type_name[:-2]
        return f"({decode_float(hex(value >> 16), half)}, {decode_float(hex(value & 0xFFFF), half)})"
    if type_name == "f64":
        number = np.array(value & (2 ** 64 - 1), dtype=np.uint64).view(np.float64)[()]
        return repr(float(number))
    if type_name == "f32":
        return str(np.array(value & 0xFFFFFFFF, dtype=np.uint32).view(np.float32)[()])
    if type_name == "f16":
        return str(np.array(value & 0xFFFF, dtype=np.uint16).view(np.float16)[()])
    if type_name == "bf16":
        return str(np.array((value & 0xFFFF) << 16, dtype=np.uint32).view(np.float32)[()])
    return None


def _shown_value(bits, type_name: Optional[str]) -> str:
    decoded = decode_float(bits, type_name) if type_name and isinstance(bits, str) else None
    return f"{bits} ({decoded})" if decoded is not None else f"{bits}"


def _destinations(instr: ir.Instr) -> List[ir.RegInfo]:
    if instr.control != ir.STRAIGHT or instr.op_class in NO_DESTINATION or not instr.operands:
        return []
    first = instr.operands[0]
    if isinstance(first, ir.RegRef):
        return [first.reg]
    if isinstance(first, ir.VecRef):
        return [item.reg for item in first.items if isinstance(item, ir.RegRef)]
    if isinstance(first, ir.PredPairRef):
        return [ref.reg for ref in (first.first, first.second) if isinstance(ref, ir.RegRef)]
    return []


# ---- the writer -------------------------------------------------------------------------------------

class TraceWriter(Observer):
    """Writes a trace to a text stream; header fields come from the caller (ptx, hash, launch)."""

    def __init__(self, stream: TextIO, header: Dict[str, object], trace_filter: Optional[TraceFilter] = None,
                 *, close: bool = False):
        self.stream = stream
        self.header = dict(header)
        self.filter = trace_filter or TraceFilter()
        self.close_stream = close
        self.records = 0
        self.seen_pcs = set()
        self.pending = None
        self.accesses = []
        self.finished = False

    # lifecycle
    def begin_launch(self, launch) -> None:
        header = {"gpuemu": gpuemu_version(), "format": FORMAT}
        header.update(self.header)
        config = launch.config
        header.update({"kernel": plain_name(launch.program.name), "grid": list(config.grid),
                       "block": list(config.block), "shared": config.dynamic_shared, "arch": f"sm_{config.arch}"})
        if self.filter.text:
            header["filter"] = self.filter.describe()
        self._write(header)
        self.launch = launch

    def begin_batch(self, batch) -> None:
        self.warps_per_cta = batch.tpc_pad // 32
        cta = batch.cta_start + batch.cta_of
        warp = batch.local_index // 32
        filt = self.filter
        kept = batch.local_index < batch.tpc
        if filt.blocks is not None:
            kept &= np.any([(cta >= low) & (cta <= high) for low, high in filt.blocks], axis=0)
        if filt.warps is not None:
            kept &= np.any([(warp >= low) & (warp <= high) for low, high in filt.warps], axis=0)
        self.kept = kept
        self.kept_lanes = np.flatnonzero(kept)

    def end_launch(self, launch, stats) -> None:
        self._finish({"end": "ok", "records": self.records})

    def launch_failed(self, launch, error) -> None:
        # the message names the PTX file as it was given; a trace names it by its base name only
        source = launch.program.source_name
        message = error.summary.replace(source, os.path.basename(source)) if source else error.summary
        self._finish({"end": error.cuda_error, "records": self.records, "message": message})

    def _finish(self, record) -> None:
        if self.finished:
            return
        self.finished = True
        self._write(record)
        if self.close_stream:
            self.stream.close()
        else:
            self.stream.flush()

    def _write(self, record) -> None:
        self.stream.write(json.dumps(record, separators=(",", ":")) + "\n")

    # events
    def step(self, batch, instr, sel, warps, lanes) -> None:
        self.pending = None
        if not self.filter.keeps_instr(instr):
            return
        groups = self._warp_groups(batch, sel)
        if not groups:
            return
        self.accesses = []
        if instr.control == ir.STRAIGHT:
            self.pending = (instr, groups, self._executing(batch, instr, sel))
            return
        taken = None
        if instr.control == ir.BRANCH and instr.guard is not None:
            reg, negated = instr.guard
            taken = batch.regs[reg.index] != negated
        self._emit(batch, instr, groups, taken=taken)

    def memory(self, batch, instr, op, space, addresses, threads, width) -> None:
        if self.pending is not None:
            self.accesses.append((op, space, addresses.copy(), None if threads is None else threads.copy(), width))

    def retire(self, batch, instr, sel) -> None:
        if self.pending is None or self.pending[0] is not instr:
            return
        _, groups, executing = self.pending
        self.pending = None
        self._emit(batch, instr, groups, executing=executing)

    # building records
    def _warp_groups(self, batch, sel) -> List[Tuple[int, int, np.ndarray]]:
        """(cta, warp in block, thread indices) of every kept warp of the selection, in order."""
        lanes = self.kept_lanes if sel is ALL else sel[self.kept[sel]]
        if len(lanes) == 0:
            return []
        warps = lanes >> 5
        starts = np.flatnonzero(np.r_[True, warps[1:] != warps[:-1]])
        ends = np.r_[starts[1:], len(lanes)]
        groups = []
        for start, end in zip(starts, ends):
            warp = int(warps[start])
            groups.append((batch.cta_start + warp // self.warps_per_cta, warp % self.warps_per_cta,
                           lanes[start:end]))
        return groups

    @staticmethod
    def _executing(batch, instr, sel) -> Optional[np.ndarray]:
        """Per batch thread, whether a guarded instruction's predicate lets it run (None: unguarded)."""
        if instr.guard is None:
            return None
        reg, negated = instr.guard
        return batch.regs[reg.index] != negated

    def _emit(self, batch, instr, groups, *, executing=None, taken=None) -> None:
        destinations = _destinations(instr)
        if instr.pc not in self.seen_pcs:
            self.seen_pcs.add(instr.pc)
            record = {"instr": instr.pc, "line": instr.line, "text": " ".join(instr.text.split())}
            source = instr.user_source
            if source is not None:
                record["src"] = f"{os.path.basename(source[0])}:{source[1]}"
            types = {reg.name: _float_type(instr, reg) for reg in destinations}
            types = {name: type_name for name, type_name in types.items() if type_name}
            if types:
                record["types"] = types
            self._write(record)
        access_values = [self._access_values(batch, *access) for access in self.accesses]
        for cta, warp, threads in groups:
            block, _ = batch.thread_coordinates((cta - batch.cta_start) * batch.tpc_pad)
            record = {"block": list(block), "warp": warp, "pc": instr.pc, "mask": _mask_text(threads & 31)}
            ran = threads
            if executing is not None:
                ran = threads[executing[threads]]
                record["exec"] = _mask_text(ran & 31)
            if taken is not None:
                record["taken"] = _mask_text(threads[taken[threads]] & 31)
            if destinations and len(ran):
                record["regs"] = {reg.name: _compact(_hex_values(batch.regs[reg.index][ran])) for reg in destinations}
            memory = [self._access_record(access, values, threads) for access, values in
                      zip(self.accesses, access_values)]
            memory = [m for m in memory if m is not None]
            if memory:
                record["mem"] = memory
            self._write(record)
            self.records += 1
        self.accesses = []

    @staticmethod
    def _access_values(batch, op, space, addresses, threads, width):
        """The bytes at each lane's address after the instruction, and the warp counters."""
        try:
            raw = batch.memory.load(space, addresses, threads, width)
        except (DeviceFault, ValueError, IndexError):
            raw = None
        counters = None
        if space in ("shared", "global") and len(addresses):
            count = batch.memory.shared_wavefronts if space == "shared" else batch.memory.global_sectors
            warps, values = count(addresses, threads, width)
            counters = dict(zip((int(w) for w in warps), (int(v) for v in values)))
        return raw, counters

    @staticmethod
    def _access_record(access, values, threads):
        op, space, addresses, access_threads, width = access
        raw, counters = values
        owners = np.arange(len(addresses), dtype=np.int64) if access_threads is None else access_threads
        if len(owners) == 0:
            return None
        warp = int(threads[0]) >> 5
        lanes = np.flatnonzero((owners >> 5) == warp)
        if len(lanes) == 0:
            return None
        record = {"op": op, "space": space, "width": width,
                  "addr": _compact([f"0x{int(a):x}" for a in addresses[lanes]])}
        if raw is not None:
            record["value"] = _compact(_byte_values(raw[lanes]))
        if counters is not None and warp in counters:
            record["wavefronts" if space == "shared" else "sectors"] = counters[warp]
        return record


def trace_header(ptx_name: str, ptx_text: str, *, args: Sequence[str] = (), schedule: str = "lockstep",
                 seed: Optional[int] = None) -> Dict[str, object]:
    """The launch-describing fields of a header: the PTX file's name and hash, the arguments, the schedule."""
    header = {"ptx": os.path.basename(ptx_name),
              "ptx_sha256": hashlib.sha256(ptx_text.encode()).hexdigest(),
              "args": list(args), "schedule": schedule}
    if schedule == "random" and seed is not None:
        header["seed"] = seed
    return header


# ---- diff -------------------------------------------------------------------------------------------

def read_records(lines: Iterable[str], name: str) -> Iterator[dict]:
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError as error:
            raise UsageError(f"{name}:{number}: not a gpuemu trace line ({error.msg})") from None


def _lanes(mask: str) -> List[int]:
    value = int(mask, 16)
    return [lane for lane in range(32) if value >> lane & 1]


def describe_record(record: dict, texts: Optional[Dict[int, str]] = None) -> str:
    if "instr" in record:
        src = f" ({record['src']})" if "src" in record else ""
        return f"pc {record['instr']} = line {record['line']}{src}: `{record['text']}`"
    if "end" in record:
        return f"end: {record['end']}" + (f" ({record['message']})" if "message" in record else "")
    if "block" in record:
        text = f" `{texts[record['pc']]}`" if texts and record["pc"] in texts else ""
        return (f"block ({','.join(map(str, record['block']))}) warp {record['warp']} pc {record['pc']}{text} "
                f"mask {record['mask']}" + (f" exec {record['exec']}" if "exec" in record else "")
                + (f" taken {record['taken']}" if "taken" in record else ""))
    return json.dumps(record, separators=(",", ":"))


def differing_lanes(a: dict, b: dict, limit: int = 8, types: Optional[Dict[str, str]] = None) -> List[str]:
    """What differs between two execution records, lane by lane; registers of the float types named in types
    (register → type, from the instruction's record) show their values decoded beside the bits."""
    types = types or {}
    out = []
    for key in ("block", "warp", "pc", "mask", "exec", "taken"):
        if a.get(key) != b.get(key):
            out.append(f"{key}: A {a.get(key)} B {b.get(key)}")
    lanes = _lanes(a.get("exec", a.get("mask", "0")))
    regs_a, regs_b = a.get("regs", {}), b.get("regs", {})
    for name in sorted(set(regs_a) | set(regs_b), key=lambda n: (n not in regs_a, n)):
        va, vb = regs_a.get(name), regs_b.get(name)
        if va == vb:
            continue
        if va is not None and vb is not None:
            va, vb = _expand(va, len(lanes)), _expand(vb, len(lanes))
        if va is None or vb is None or len(va) != len(vb):
            out.append(f"{name}: A {va} B {vb}")
            continue
        kind = types.get(name)
        diffs = [f"lane {lanes[i] if i < len(lanes) else i}: A {_shown_value(x, kind)} B {_shown_value(y, kind)}"
                 for i, (x, y) in enumerate(zip(va, vb)) if x != y]
        out.append(f"{name} differs in {len(diffs)} lane{'s' if len(diffs) != 1 else ''}: " + ", ".join(diffs[:limit])
                   + (" ..." if len(diffs) > limit else ""))
    mem_a, mem_b = a.get("mem", []), b.get("mem", [])
    for index in range(max(len(mem_a), len(mem_b))):
        ma = mem_a[index] if index < len(mem_a) else None
        mb = mem_b[index] if index < len(mem_b) else None
        if ma == mb:
            continue
        if ma is None or mb is None:
            out.append(f"memory access {index}: A {ma} B {mb}")
            continue
        for key in ("op", "space", "width", "wavefronts", "sectors"):
            if ma.get(key) != mb.get(key):
                out.append(f"memory {key}: A {ma.get(key)} B {mb.get(key)}")
        access_lanes = _lanes(a.get("exec", a.get("mask", "0")))
        for key in ("addr", "value"):
            xa, xb = _expand(ma.get(key, []), len(access_lanes)), _expand(mb.get(key, []), len(access_lanes))
            if xa != xb:
                diffs = [f"lane {access_lanes[i] if i < len(access_lanes) else i}: A {x} B {y}"
                         for i, (x, y) in enumerate(zip(xa, xb)) if x != y]
                if not diffs:  # one side has fewer lanes' worth (or none: an access whose bytes were not read)
                    out.append(f"memory {key}: A {ma.get(key)} B {mb.get(key)}")
                    continue
                out.append(f"memory {key} differs in {len(diffs)} lane{'s' if len(diffs) != 1 else ''}: "
                           + ", ".join(diffs[:limit]) + (" ..." if len(diffs) > limit else ""))
    return out


def diff_traces(lines_a: Iterable[str], lines_b: Iterable[str], *, context: int = 5, name_a: str = "A",
                name_b: str = "B") -> Tuple[bool, str]:
    """(identical, report): the first record where two traces part ways, with the records before it."""
    records_a = read_records(lines_a, name_a)
    records_b = read_records(lines_b, name_b)
    out = []
    header_a, header_b = next(records_a, None), next(records_b, None)
    for header, name in ((header_a, name_a), (header_b, name_b)):
        if not isinstance(header, dict) or "gpuemu" not in header:
            raise UsageError(f"{name}: no gpuemu trace header on the first line")
    for key in sorted(set(header_a) | set(header_b)):
        if header_a.get(key) != header_b.get(key):
            out.append(f"header {key}: A {header_a.get(key)} B {header_b.get(key)}")
    recent = collections.deque(maxlen=context)
    texts: Dict[int, str] = {}
    types: Dict[int, Dict[str, str]] = {}
    number = 0
    last_a = last_b = header_a
    while True:
        a, b = next(records_a, None), next(records_b, None)
        number += 1
        for record in (a, b):
            if record is not None and "instr" in record:
                texts.setdefault(record["instr"], record.get("text", ""))
                types.setdefault(record["instr"], record.get("types", {}))
        if a is None and b is None:
            incomplete = _incomplete(last_a, last_b, name_a, name_b)
            if incomplete:
                out.append(f"traces agree on their {number - 1:,} records, but " + "; ".join(incomplete))
                return False, "\n".join(out)
            out.append(f"traces identical: {number - 1:,} records")
            return True, "\n".join(out)
        last_a, last_b = (a if a is not None else last_a), (b if b is not None else last_b)
        if a == b:
            recent.append((number, a))
            continue
        out.append(f"traces part ways at record {number:,} (after {number - 1:,} identical records)")
        if recent:
            out.append(f"last {len(recent)} common record{'s' if len(recent) != 1 else ''}:")
            out += [f"  #{n}: {describe_record(r, texts)}" for n, r in recent]
        out.append(f"A #{number}: {describe_record(a, texts) if a is not None else '(trace ends)'}")
        out.append(f"B #{number}: {describe_record(b, texts) if b is not None else '(trace ends)'}")
        if a is not None and b is not None:
            if "instr" in a and "instr" in b:
                next_a, next_b = next(records_a, None), next(records_b, None)
                last_a, last_b = (next_a if next_a is not None else last_a), (next_b if next_b is not None else last_b)
                if next_a is not None and next_b is not None and next_a != next_b and "block" in next_a:
                    out.append(f"then A #{number + 1}: {describe_record(next_a, {a['instr']: a['text']})}")
                    out.append(f"     B #{number + 1}: {describe_record(next_b, {b['instr']: b['text']})}")
                    out += ["  " + line for line in differing_lanes(next_a, next_b,
                                                                     types=a.get("types") or b.get("types"))]
            elif "block" in a and "block" in b:
                out += ["  " + line for line in differing_lanes(a, b, types=types.get(a.get("pc"), {}))]
        for record in records_a:
            last_a = record
        for record in records_b:
            last_b = record
        out += _incomplete(last_a, last_b, name_a, name_b)
        return False, "\n".join(out)


def _incomplete(last_a, last_b, name_a: str, name_b: str) -> List[str]:
    """Which traces lack their end record (the run was interrupted, or the trace is still being written)."""
    return [f"{name} is incomplete: it has no end record (its run was interrupted or is still writing it)"
            for name, last in ((name_a, last_a), (name_b, last_b)) if not (isinstance(last, dict) and "end" in last)]


def trace_text(kernel, grid, block, args, shared: int = 0, *, header: Dict[str, object],
               trace_filter: Optional[TraceFilter] = None, **launch_options) -> str:
    """Run a launch with a trace attached and return the trace (errors end the trace, not the call)."""
    from emulator.base.errors import DeviceError
    stream = io.StringIO()
    writer = TraceWriter(stream, header, trace_filter)
    try:
        kernel.launch(grid, block, args, shared, observer=writer, **launch_options)
    except DeviceError:
        pass
    return stream.getvalue()
