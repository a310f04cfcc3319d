"""What ML compilers emit beyond ordinary CUDA C: cp.async copies, ldmatrix and tensor-core mma.sync.

cp.async is modelled as a real asynchronous copy: the source is read when the instruction issues,
and shared memory is written only when a cp.async.wait_group / wait_all lets the group complete, so a
kernel that forgets to wait reads stale data as it would on hardware. mma.sync and wmma add their products
the way the H100's tensor cores do (tensor_core_sum, fitted bit for bit on the H100; docs/tensor-cores.md).
"""
from __future__ import annotations

from typing import List

import numpy as np

from isa import fp

from emulator.machine import executors
from emulator.machine.registry import builds
from emulator import ir
from emulator.machine.executors import AddressPlan, lanes_of, reader, writer
from emulator.memory import DeviceFault


# ---- cp.async ---------------------------------------------------------------------------------------

class AsyncCopies:
    """Copies in flight for one batch: per record the threads, destinations, data and group number."""

    def __init__(self, n: int):
        self.committed = np.zeros(n, dtype=np.int64)
        self.records: List[list] = []

    def issue(self, instr, threads: np.ndarray, destinations: np.ndarray, data: np.ndarray) -> None:
        self.records.append([threads, destinations, data, self.committed[threads].copy(), instr])

    def commit(self, threads) -> None:
        self.committed[threads] += 1

    def complete(self, batch, threads: np.ndarray, keep_groups: int) -> None:
        """Write every copy of these threads that belongs to a group older than their keep_groups newest; the store
        event names the cp.async that issued it."""
        member = np.zeros(len(self.committed), dtype=bool)
        member[threads] = True
        remaining = []
        for record in self.records:
            owners, destinations, data, groups, instr = record
            done = member[owners] & (groups < self.committed[owners] - keep_groups)
            if np.any(done):
                if batch.observer is not None:
                    batch.observer.memory(batch, instr, "store", "shared", destinations[done], owners[done],
                                          data.shape[1])
                batch.memory.store("shared", destinations[done], owners[done], data.shape[1], data[done])
            if not np.all(done):
                remaining.append([owners[~done], destinations[~done], data[~done], groups[~done], instr])
        self.records = remaining


def _copies(batch) -> AsyncCopies:
    if getattr(batch, "async_copies", None) is None:
        batch.async_copies = AsyncCopies(batch.n)
    return batch.async_copies


@builds("cp_async", guards_itself=True)
def build_cp_async(batch, instr: ir.Instr):
    decoded = instr.decoded
    op = decoded.get("cpop")
    if op == "commit_group":
        return executors.guarded(batch, instr, lambda sel: _copies(batch).commit(lanes_of(sel, batch.n)))
    if op in ("wait_group", "wait_all"):
        keep_reader = reader(batch, instr.operands[0], "u32") if op == "wait_group" else (lambda sel: 0)

        def wait(sel):
            copies = _copies(batch)
            threads = lanes_of(sel, batch.n)
            if op == "wait_all":
                copies.commit(threads)
            keep = int(np.asarray(keep_reader(sel)).reshape(-1)[0])
            try:
                copies.complete(batch, threads, keep)
            except DeviceFault as fault:
                raise batch.memory_fault(instr, fault, None) from None
        return executors.guarded(batch, instr, wait)
    destination, source, size_ref = instr.operands[:3]
    source_size = reader(batch, instr.operands[3], "u32") if len(instr.operands) > 3 else None
    width = int(size_ref.value) if isinstance(size_ref, ir.ImmRef) else None
    if width not in (4, 8, 16):
        raise batch.lowering_error(instr, "cp.async copies 4, 8 or 16 bytes")
    to_plan = AddressPlan(batch, instr, destination, "shared")
    from_plan = AddressPlan(batch, instr, source, "global")
    observe = batch.observer

    def read(space, addresses, owners, size):
        if observe is not None:
            observe.memory(batch, instr, "load", space, addresses, owners, size)
        try:
            return batch.memory.load(space, addresses, owners, size)
        except DeviceFault as fault:
            raise batch.memory_fault(instr, fault, int(owners[fault.lane])) from None

    def issue(sel):
        lanes = lanes_of(sel, batch.n)
        _, targets, _ = to_plan.addresses(sel)
        space, addresses, _ = from_plan.addresses(sel)
        data = np.zeros((len(lanes), width), dtype=np.uint8)
        valid = np.full(len(lanes), width, dtype=np.int64)
        if source_size is not None:
            valid = np.minimum(np.broadcast_to(np.asarray(source_size(sel)).astype(np.int64), valid.shape), width)
        whole = valid == width
        if np.any(whole):
            data[whole] = read(space, addresses[whole], lanes[whole], width)
        for offset in range(width - 1):
            part = (valid > offset) & ~whole
            if np.any(part):
                data[part, offset] = read(space, addresses[part] + np.uint64(offset), lanes[part], 1)[:, 0]
        _copies(batch).issue(instr, lanes, targets.copy(), data)
    return executors.guarded(batch, instr, issue)


# ---- ldmatrix ---------------------------------------------------------------------------------------

def _whole_warps(batch, sel, instr) -> np.ndarray:
    """The warps sel covers; .aligned warp instructions need every live lane of them."""
    lanes = lanes_of(sel, batch.n)
    warps = np.unique(lanes >> 5)
    return warps


def _matrix_operands(batch, instr: ir.Instr, registers_at: int, what: str):
    """ldmatrix/stmatrix: (matrix count, transposed?, the register operands, the row-address plan)."""
    decoded = instr.decoded
    count = {"x1": 1, "x2": 2, "x4": 4}[decoded.get("matrixnum", "x1")]
    registers = instr.operands[registers_at]
    registers = registers.items if isinstance(registers, ir.VecRef) else (registers,)
    if len(registers) != count:
        raise batch.lowering_error(instr, f"{instr.opcode.split('.')[0]} .x{count} needs {count} {what} registers")
    plan = AddressPlan(batch, instr, instr.operands[1 - registers_at], decoded.get("space", "shared"))
    return count, decoded.has("trans"), registers, plan


def _row_lanes(batch, sel, instr, plan, count: int):
    """The threads of the warps sel covers, and the space, row addresses and owners of the 8 × count
    lanes of each warp that name a matrix row."""
    warps = _whole_warps(batch, sel, instr)
    threads = (warps[:, None] * 32 + np.arange(32)[None, :]).reshape(-1)
    space, addresses, _ = plan.addresses(threads)
    rows = addresses.reshape(len(warps), 32)[:, :8 * count].reshape(-1)
    owner = threads.reshape(len(warps), 32)[:, :8 * count].reshape(-1)
    return warps, threads, space, rows, owner


@builds("ldmatrix", guards_itself=True)
def build_ldmatrix(batch, instr: ir.Instr):
    count, transpose, dests, plan = _matrix_operands(batch, instr, 0, "destination")
    writes = [writer(batch, ref, "b32") for ref in dests]
    observe = batch.observer
    lane = np.arange(32)
    row, pair = lane >> 2, (lane & 3) * 2

    def execute(sel):
        warps, threads, space, providers, owner = _row_lanes(batch, sel, instr, plan, count)
        if observe is not None:
            observe.memory(batch, instr, "load", space, providers, owner, 16)
        try:
            rows = batch.memory.load(space, providers, owner, 16)
        except DeviceFault as fault:
            raise batch.memory_fault(instr, fault, int(owner[fault.lane])) from None
        matrices = rows.view(np.uint16).reshape(len(warps), count, 8, 8)
        wanted = np.zeros(batch.n, dtype=bool)
        wanted[lanes_of(sel, batch.n)] = True
        take = wanted[threads]
        for index, write in enumerate(writes):
            m = matrices[:, index]
            if transpose:
                low, high = m[:, pair, row], m[:, pair + 1, row]
            else:
                low, high = m[:, row, pair], m[:, row, pair + 1]
            value = (high.astype(np.uint32) << np.uint32(16)) | low.astype(np.uint32)
            write(threads[take], value.reshape(-1)[take])
    return executors.guarded(batch, instr, execute)


@builds("stmatrix", guards_itself=True)
def build_stmatrix(batch, instr: ir.Instr):
    count, transpose, sources, plan = _matrix_operands(batch, instr, 1, "source")
    reads = [reader(batch, ref, "b32") for ref in sources]
    observe = batch.observer
    lane = np.arange(32)
    row, pair = lane >> 2, (lane & 3) * 2

    def execute(sel):
        warps, threads, space, targets, owner = _row_lanes(batch, sel, instr, plan, count)
        matrices = np.zeros((len(warps), count, 8, 8), dtype=np.uint16)
        for index, read in enumerate(reads):
            words = np.broadcast_to(np.asarray(read(threads)), threads.shape).reshape(len(warps), 32)
            low, high = (words & np.uint32(0xFFFF)).astype(np.uint16), (words >> np.uint32(16)).astype(np.uint16)
            if transpose:
                matrices[:, index, pair, row] = low
                matrices[:, index, pair + 1, row] = high
            else:
                matrices[:, index, row, pair] = low
                matrices[:, index, row, pair + 1] = high
        if observe is not None:
            observe.memory(batch, instr, "store", space, targets, owner, 16)
        try:
            batch.memory.store(space, targets, owner, 16, matrices.reshape(-1, 8))
        except DeviceFault as fault:
            raise batch.memory_fault(instr, fault, int(owner[fault.lane])) from None
    return executors.guarded(batch, instr, execute)


# ---- mma.sync ---------------------------------------------------------------------------------------

def _element_values(words: np.ndarray, kind: str) -> np.ndarray:
    """Register words of one fragment (lanes × registers) → float64 element values, two per word for 16-bit types."""
    if kind in ("f16", "bf16"):
        halves = np.stack([words & np.uint32(0xFFFF), words >> np.uint32(16)], axis=-1).astype(np.uint16)
        halves = halves.reshape(words.shape[0], -1)
        if kind == "f16":
            return halves.view(np.float16).astype(np.float64)
        return (halves.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    if kind == "tf32":
        return (words & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    if kind == "f32":
        return words.view(np.float32).astype(np.float64)
    if kind == "f64":
        return words.view(np.float64)
    raise ValueError(kind)


def _fragment_layout(shape: str, kind: str, role: str):
    """(row, column) of each fragment element per lane: arrays of shape (32, elements)."""
    lane = np.arange(32)
    group, tig = lane >> 2, lane & 3
    if shape == "m8n8k4":
        if role == "a":
            return group[:, None], tig[:, None]
        if role == "b":
            return tig[:, None], group[:, None]
        return group[:, None], np.stack([tig * 2, tig * 2 + 1], axis=1)
    if role == "c":
        rows = np.stack([group, group, group + 8, group + 8], axis=1)
        cols = np.stack([tig * 2, tig * 2 + 1, tig * 2, tig * 2 + 1], axis=1)
        return rows, cols
    k = int(shape.split("k")[1])
    if kind == "tf32":
        if role == "a":
            rows = np.stack([group, group + 8, group, group + 8], axis=1)[:, :k // 2]
            cols = np.stack([tig, tig, tig + 4, tig + 4], axis=1)[:, :k // 2]
            return rows, cols
        return np.stack([tig, tig + 4], axis=1)[:, :k // 4], np.stack([group, group], axis=1)[:, :k // 4]
    if role == "a":
        base_rows = [group, group, group + 8, group + 8, group, group, group + 8, group + 8]
        base_cols = [tig * 2, tig * 2 + 1, tig * 2, tig * 2 + 1, tig * 2 + 8, tig * 2 + 9, tig * 2 + 8, tig * 2 + 9]
        count = k // 2
        return np.stack(base_rows[:count], axis=1), np.stack(base_cols[:count], axis=1)
    base_rows = [tig * 2, tig * 2 + 1, tig * 2 + 8, tig * 2 + 9]
    count = k // 4
    return np.stack(base_rows[:count], axis=1), np.stack([group] * count, axis=1)


#: bits kept below the largest term when the H100's tensor cores add products and accumulator, and below the
#: leading bit of the sum (fitted bit for bit on examples/wgmma; fp8 sums keep 14 significant bits).
ALIGNMENT_BITS = {"f16": 25, "bf16": 25, "tf32": 25, "e4m3": 13, "e5m2": 13}
SUM_BITS = {"f16": 23, "bf16": 23, "tf32": 23, "e4m3": 13, "e5m2": 13}
#: the one NaN a tensor core writes, whatever NaN or invalid operation made it (H100: inf·0, NaN inputs, inf − inf)
_F32_NAN = np.array(0x7FFFFFFF, dtype=np.uint32).view(np.float32)
_F16_NAN = np.array(0x7FFF, dtype=np.uint16).view(np.float16)


def _exponents(x: np.ndarray) -> np.ndarray:
    """floor(log2 |x|) of each nonzero element; a very small number for zeros."""
    mantissa, exponent = np.frexp(x)
    return np.where(mantissa == 0, -100000, exponent - 1)


def _cut(x: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """x cut toward zero to a multiple of 2**exponent."""
    quantum = np.ldexp(1.0, np.clip(exponent, -1074, 1023))
    return np.trunc(x / quantum) * quantum


def tensor_core_sum(a: np.ndarray, b: np.ndarray, c: np.ndarray, kind: str, accumulator: str = "f32") -> np.ndarray:
    """A·B + C (a: (..., m, k), b: (..., n, k), c: (..., m, n) float64) as the H100's tensor cores add it, in the
    accumulator type (f32 or f16): each product's exponent is the sum of its factors' exponents; every product
    and C is cut toward zero to ALIGNMENT_BITS below the largest of those exponents and the cut terms are added
    exactly. An f32 sum is then cut toward zero to SUM_BITS below its leading bit (beyond the f32 range it is
    infinite); an f16 sum is rounded to nearest; any NaN comes out as the canonical one. (A single rounding of
    the exact sum agrees with the H100 on only 60 % of random f16 elements; this agrees on all of them.)"""
    with np.errstate(invalid="ignore", over="ignore"):
        products = a[..., :, None, :] * b[..., None, :, :]
        exponents = np.where(products == 0, -100000, _exponents(a)[..., :, None, :] + _exponents(b)[..., None, :, :])
        step = np.maximum(exponents.max(axis=-1), _exponents(c)) - ALIGNMENT_BITS[kind]
        total = _cut(products, step[..., None]).sum(axis=-1) + _cut(c, step)
        if accumulator == "f16":
            return np.where(np.isnan(total), _F16_NAN, total.astype(np.float16))
        total = _cut(total, _exponents(total) - SUM_BITS[kind])
        rounded = total.astype(np.float32)
        too_far = np.isfinite(rounded) & (np.abs(rounded.astype(np.float64)) > np.abs(total))
    rounded = np.where(too_far, np.nextafter(rounded, np.float32(0)), rounded)
    return np.where(np.isnan(total), _F32_NAN, rounded)


def _fma_chain(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """A·B + C as the H100's f64 tensor core computes it: a chain of fused multiply-adds from C, in k order
    (matches every element of examples/warpmma mmaF64, where a single rounding of the exact sum does not)."""
    accumulator = c
    for k in range(a.shape[2]):
        accumulator = fp.ffma(np.broadcast_to(a[:, :, k, None], c.shape), np.broadcast_to(b[:, None, k, :], c.shape),
                              accumulator, ty="f64")
    return accumulator


@builds("mma", guards_itself=True)
def build_mma(batch, instr: ir.Instr):
    decoded = instr.decoded
    shape = decoded.get("mmashape")
    dtype, atype, btype, ctype = decoded.types
    if shape not in ("m16n8k16", "m16n8k8", "m8n8k4") or atype not in ("f16", "bf16", "tf32", "f64"):
        raise batch.lowering_error(instr, f"mma.sync {shape} with .{atype} inputs is not supported")
    layouts = tuple(value for category, value in decoded.mods if category == "mmalayout")
    if layouts != ("row", "col"):
        raise batch.lowering_error(instr, "mma.sync needs .row.col layouts")
    d_ref, a_ref, b_ref, c_ref = instr.operands
    regs = lambda ref: ref.items if isinstance(ref, ir.VecRef) else (ref,)
    word = lambda kind: "b64" if kind == "f64" else "b32"
    a_read = [reader(batch, r, word(atype)) for r in regs(a_ref)]
    b_read = [reader(batch, r, word(btype)) for r in regs(b_ref)]
    c_read = [reader(batch, r, word(ctype) if ctype != "f16" else "b32") for r in regs(c_ref)]
    d_write = [writer(batch, r, word(dtype) if dtype != "f16" else "b32") for r in regs(d_ref)]
    m, n, k = (int(part) for part in shape[1:].replace("n", " ").replace("k", " ").split())
    a_rows, a_cols = _fragment_layout(shape, atype, "a")
    b_rows, b_cols = _fragment_layout(shape, btype, "b")
    c_rows, c_cols = _fragment_layout(shape, ctype, "c")

    def gather(readers, threads, kind):
        words = np.stack([np.broadcast_to(np.asarray(r(threads)), threads.shape) for r in readers], axis=1)
        return _element_values(words, kind).reshape(-1, 32, _element_values(words[:1], kind).shape[1])

    def execute(sel):
        warps = _whole_warps(batch, sel, instr)
        threads = (warps[:, None] * 32 + np.arange(32)[None, :]).reshape(-1)
        a = np.zeros((len(warps), m, k))
        b = np.zeros((len(warps), k, n))
        c = np.zeros((len(warps), m, n))
        a[:, a_rows, a_cols] = gather(a_read, threads, atype)
        b[:, b_rows, b_cols] = gather(b_read, threads, btype)
        c[:, c_rows, c_cols] = gather(c_read, threads, ctype)
        if atype == "f64":
            d = _fma_chain(a, b, c)
        else:
            d = tensor_core_sum(a, b.swapaxes(1, 2), c, atype, dtype).astype(np.float64)
        values = d[:, c_rows, c_cols].reshape(len(warps) * 32, -1)
        wanted = np.zeros(batch.n, dtype=bool)
        wanted[lanes_of(sel, batch.n)] = True
        take = wanted[threads]
        if dtype == "f32":
            out = values.astype(np.float32).view(np.uint32)
            for i, write in enumerate(d_write):
                write(threads[take], out[take, i])
        elif dtype == "f64":
            for i, write in enumerate(d_write):
                write(threads[take], values[take, i].view(np.uint64))
        else:
            halves = values.astype(np.float16).view(np.uint16).astype(np.uint32)
            for i, write in enumerate(d_write):
                write(threads[take], (halves[take, 2 * i + 1] << np.uint32(16)) | halves[take, 2 * i])
    return executors.guarded(batch, instr, execute)


# ---- wmma -------------------------------------------------------------------------------------------
# PTX leaves wmma fragment layouts to the implementation; gpuemu's: lane l holds elements
# l*per .. l*per+per-1 of the fragment's logical matrix in row-major order (per = elements / 32), and
# fragments with more slots than that hold the same elements again, as the hardware replicates them.

WMMA_SHAPES = {"m16n16k16": (16, 16, 16), "m32n8k16": (32, 8, 16), "m8n32k16": (8, 32, 16), "m16n16k8": (16, 16, 8)}


def _wmma_dims(shape: str, role: str):
    m, n, k = WMMA_SHAPES[shape]
    return {"a": (m, k), "b": (k, n), "c": (m, n), "d": (m, n)}[role]


def _element_bytes(kind: str) -> int:
    return {"f16": 2, "bf16": 2, "f32": 4, "tf32": 4, "f64": 8}[kind]


def _wmma_slots(words: np.ndarray, kind: str) -> np.ndarray:
    """Register words (threads, regs) → element values (threads, slots) in float64."""
    return _element_values(words, kind).reshape(words.shape[0], -1)


def _wmma_words(values: np.ndarray, kind: str, regs: int) -> np.ndarray:
    """Element values (threads, slots) → register words (threads, regs)."""
    if kind in ("f16", "bf16"):
        if kind == "f16":
            halves = values.astype(np.float16).view(np.uint16)
        else:
            halves = (values.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
        halves = halves.reshape(values.shape[0], regs, 2).astype(np.uint32)
        return halves[:, :, 0] | (halves[:, :, 1] << np.uint32(16))
    if kind == "f64":
        return values.astype(np.float64).view(np.uint64)
    return values.astype(np.float32).view(np.uint32)


def _wmma_kind(decoded, role: str) -> str:
    types = decoded.types
    return types[-1] if role in ("a", "b", "c", "d") else types[0]


@builds("wmma", guards_itself=True)
def build_wmma(batch, instr: ir.Instr):
    decoded = instr.decoded
    op = decoded.get("wmmaop")
    shape = decoded.get("wmmashape")
    if shape not in WMMA_SHAPES:
        raise batch.lowering_error(instr, f"wmma shape .{shape} is not supported")
    if op == "mma":
        return _build_wmma_mma(batch, instr, shape)
    role = decoded.get("wmmarole")
    kind = decoded.types[-1]
    rows, cols = _wmma_dims(shape, role)
    elements = rows * cols
    per_lane = elements // 32
    layout = decoded.get("mmalayout", "row")
    size = _element_bytes(kind)
    if op == "load":
        dest, address_ref = instr.operands[0], instr.operands[1]
        registers = dest.items if isinstance(dest, ir.VecRef) else (dest,)
    else:
        address_ref, source = instr.operands[0], instr.operands[1]
        registers = source.items if isinstance(source, ir.VecRef) else (source,)
    stride_ref = instr.operands[2] if len(instr.operands) > 2 else None
    read_stride = reader(batch, stride_ref, "u32") if stride_ref is not None else (lambda sel: cols if layout == "row"
                                                                                     else rows)
    word = "b64" if kind == "f64" else "b32"
    plan = AddressPlan(batch, instr, address_ref, decoded.get("space", "generic"))
    element = np.arange(elements)
    row_of, col_of = element // cols, element % cols
    observe = batch.observer
    if op == "load":
        writes = [writer(batch, ref, word) for ref in registers]
    else:
        reads = [reader(batch, ref, word) for ref in registers]

    def element_addresses(threads):
        space, bases, _ = plan.addresses(threads)
        stride = np.asarray(read_stride(threads)).astype(np.int64).reshape(-1)
        leaders = bases.reshape(-1, 32)[:, 0]
        stride = np.broadcast_to(stride, threads.shape).reshape(-1, 32)[:, 0]
        offsets = (row_of[None, :] * stride[:, None] + col_of[None, :]) if layout == "row" else \
            (col_of[None, :] * stride[:, None] + row_of[None, :])
        return space, leaders[:, None] + (offsets * size).astype(np.uint64)

    def execute(sel):
        warps = _whole_warps(batch, sel, instr)
        threads = (warps[:, None] * 32 + np.arange(32)[None, :]).reshape(-1)
        space, addresses = element_addresses(threads)
        owners = np.repeat(warps * 32, elements)
        wanted = np.zeros(batch.n, dtype=bool)
        wanted[lanes_of(sel, batch.n)] = True
        take = wanted[threads]
        if op == "load":
            if observe is not None:
                observe.memory(batch, instr, "load", space, addresses.reshape(-1), owners, size)
            try:
                raw = batch.memory.load(space, addresses.reshape(-1), owners, size)
            except DeviceFault as fault:
                raise batch.memory_fault(instr, fault, int(owners[fault.lane])) from None
            values = _element_values(raw.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[size]).reshape(
                len(warps), elements), kind) if kind not in ("f16", "bf16") else None
            if kind in ("f16", "bf16"):
                bits = raw.view(np.uint16).reshape(len(warps), elements)
                values = (bits.view(np.float16).astype(np.float64) if kind == "f16"
                          else (bits.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64))
            per_thread = values.reshape(len(warps) * 32, per_lane)
            slots = len(registers) * (2 if kind in ("f16", "bf16") else 1)
            filled = np.tile(per_thread, (1, slots // per_lane))
            words = _wmma_words(filled, kind, len(registers))
            for index, write in enumerate(writes):
                write(threads[take], words[take, index])
        else:
            words = np.stack([np.broadcast_to(np.asarray(r(threads)), threads.shape) for r in reads], axis=1)
            values = _wmma_slots(words, kind)[:, :per_lane].reshape(len(warps), elements)
            if kind in ("f16", "bf16"):
                data = _wmma_words(values.reshape(-1, 2), kind, 1).astype(np.uint32)
                raw = np.stack([data & np.uint32(0xFFFF), data >> np.uint32(16)], axis=1).astype(np.uint16)
                raw = raw.reshape(-1)
            elif kind == "f64":
                raw = values.reshape(-1).astype(np.float64)
            else:
                raw = values.reshape(-1).astype(np.float32)
            targets = addresses.reshape(-1)
            if observe is not None:
                observe.memory(batch, instr, "store", space, targets, owners, size)
            try:
                batch.memory.store(space, targets, owners, size, raw)
            except DeviceFault as fault:
                raise batch.memory_fault(instr, fault, int(owners[fault.lane])) from None
    return executors.guarded(batch, instr, execute)


def _build_wmma_mma(batch, instr: ir.Instr, shape: str):
    decoded = instr.decoded
    dtype, ctype = decoded.types[0], decoded.types[-1]
    input_kind = {"m16n16k8": "tf32"}.get(shape, "f16")
    if len(decoded.types) == 4:
        input_kind = decoded.types[1]
    m, n, k = WMMA_SHAPES[shape]
    d_ref, a_ref, b_ref, c_ref = instr.operands
    regs = lambda ref: ref.items if isinstance(ref, ir.VecRef) else (ref,)
    word = lambda kind: "b64" if kind == "f64" else "b32"
    a_read = [reader(batch, r, word(input_kind)) for r in regs(a_ref)]
    b_read = [reader(batch, r, word(input_kind)) for r in regs(b_ref)]
    c_read = [reader(batch, r, word(ctype)) for r in regs(c_ref)]
    d_write = [writer(batch, r, word(dtype)) for r in regs(d_ref)]

    def gather(readers, threads, kind, count):
        words = np.stack([np.broadcast_to(np.asarray(r(threads)), threads.shape) for r in readers], axis=1)
        return _wmma_slots(words, kind)[:, :count].reshape(-1, 32 * count)

    def execute(sel):
        warps = _whole_warps(batch, sel, instr)
        threads = (warps[:, None] * 32 + np.arange(32)[None, :]).reshape(-1)
        a = gather(a_read, threads, input_kind, m * k // 32).reshape(-1, m, k)
        b = gather(b_read, threads, input_kind, k * n // 32).reshape(-1, k, n)
        c = gather(c_read, threads, ctype, m * n // 32).reshape(-1, m, n)
        d = tensor_core_sum(a, b.swapaxes(1, 2), c, input_kind, dtype).astype(np.float64)
        d = d.reshape(len(warps) * 32, m * n // 32)
        slots = len(d_write) * (2 if dtype in ("f16", "bf16") else 1)
        words = _wmma_words(np.tile(d, (1, slots // d.shape[1])), dtype, len(d_write))
        wanted = np.zeros(batch.n, dtype=bool)
        wanted[lanes_of(sel, batch.n)] = True
        take = wanted[threads]
        for index, write in enumerate(d_write):
            write(threads[take], words[take, index])
    return executors.guarded(batch, instr, execute)


# ---- mbarrier ---------------------------------------------------------------------------------------
# The 64-bit object in shared memory: bits 0-20 the expected arrivals of a phase, 21-41 the arrivals
# still pending, 42-62 the transaction bytes still expected, 63 the phase parity.

_COUNT_MASK = (1 << 21) - 1


def _unpack(word: int):
    return word & _COUNT_MASK, (word >> 21) & _COUNT_MASK, (word >> 42) & _COUNT_MASK, word >> 63


def _pack(expected: int, pending: int, transactions: int, phase: int) -> int:
    return (expected & _COUNT_MASK) | ((pending & _COUNT_MASK) << 21) | ((transactions & _COUNT_MASK) << 42) | \
        ((phase & 1) << 63)


def _settle(expected, pending, transactions, phase):
    if pending <= 0 and transactions <= 0:
        return expected, expected, 0, phase ^ 1
    return expected, pending, transactions, phase


@builds("mbarrier", guards_itself=True)
def build_mbarrier(batch, instr: ir.Instr):
    decoded = instr.decoded
    op = decoded.get("mbarop")
    operands = instr.operands
    dest = None
    if op in ("arrive", "arrive_drop", "test_wait", "try_wait", "pending_count"):
        dest, operands = operands[0], operands[1:]
    plan = AddressPlan(batch, instr, operands[0], decoded.get("space", "shared"))
    extra = [reader(batch, ref, "b64" if op in ("test_wait", "try_wait") and not decoded.has("parity") else "u32")
             for ref in operands[1:]]
    expect_tx = decoded.has("expecttx") or op == "expect_tx"
    write_dest = writer(batch, dest, "pred" if op in ("test_wait", "try_wait") else
                        ("u32" if op == "pending_count" else "b64")) if dest is not None else None
    memory = batch.memory

    def execute(sel):
        lanes = lanes_of(sel, batch.n)
        space, addresses, threads = plan.addresses(sel)
        owners = lanes if threads is None else threads
        operand_values = [np.broadcast_to(np.asarray(r(sel)), lanes.shape) for r in extra]
        results = np.zeros(len(lanes), dtype=np.uint64)
        try:
            for i in range(len(lanes)):
                at = addresses[i:i + 1]
                owner = owners[i:i + 1]
                word = int(memory.load(space, at, owner, 8).view(np.uint64)[0, 0])
                expected, pending, transactions, phase = _unpack(word)
                if op == "init":
                    new = _pack(int(operand_values[0][i]), int(operand_values[0][i]), 0, 0)
                elif op in ("arrive", "arrive_drop", "expect_tx", "complete_tx"):
                    results[i] = word
                    amount = int(operand_values[0][i]) if operand_values and op in ("arrive", "arrive_drop") \
                        and not expect_tx else 1
                    if op == "arrive_drop":
                        expected -= amount
                    if expect_tx:
                        transactions += int(operand_values[0][i])
                    if op == "complete_tx":
                        transactions -= int(operand_values[0][i])
                    if op in ("arrive", "arrive_drop") and not decoded.has("nocomplete"):
                        pending -= amount
                    elif op in ("arrive", "arrive_drop"):
                        pending -= amount
                    new = _pack(*_settle(expected, pending, transactions, phase))
                elif op in ("test_wait", "try_wait"):
                    waited = int(operand_values[0][i])
                    waited_phase = waited & 1 if decoded.has("parity") else waited >> 63
                    results[i] = 1 if phase != waited_phase else 0
                    continue
                elif op == "pending_count":
                    results[i] = _unpack(int(operand_values[0][i]))[1]
                    continue
                elif op == "inval":
                    new = 0
                else:
                    raise batch.lowering_error(instr, f"mbarrier.{op} is not supported")
                memory.store(space, at, owner, 8, np.array([new], dtype=np.uint64))
        except DeviceFault as fault:
            raise batch.memory_fault(instr, fault, int(owners[i])) from None
        if write_dest is not None:
            write_dest(sel, results.astype(bool) if op in ("test_wait", "try_wait") else results)
    return executors.guarded(batch, instr, execute)
