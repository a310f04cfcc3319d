"""What ML compilers emit beyond ordinary CUDA C: cp.async copies, ldmatrix and tensor-core mma.sync.

cp.async is modelled as a real asynchronous copy: the source is read when the instruction issues,
and shared memory is written only when a cp.async.wait_group / wait_all lets the group complete, so a
kernel that forgets to wait reads stale data as it would on hardware. mma.sync and wmma add their products
the way the H100's tensor cores do (tensor_core_sum, fitted bit for bit on the H100; docs/tensor-cores.md).
"""
from __future__ import annotations

from typing import List

import numpy as np

from emulator import ir
from emulator.machine.lanes import lanes_of
from emulator.machine.operands import AddressPlan, access, guarded, reader, writer
from emulator.machine.registry import builds
from emulator.memory import DeviceFault
from isa import memory as memory_semantics
from isa.table import semantics
from isa.tensor import (ELEMENTS_PER_WORD, MBARRIER_OPS, WMMA_SHAPES, element_bytes, element_values, fma_chain,
                        fragment_layout, integer_mma, mbarrier_apply, tensor_core_sum, wmma_dims, wmma_slots,
                        wmma_words)

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
        return guarded(batch, instr, lambda sel: _copies(batch).commit(lanes_of(sel, batch.n)))
    if op == "mbarrier":
        return _build_cp_async_arrive(batch, instr)
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
        return guarded(batch, instr, wait)
    destination, source, size_ref = instr.operands[:3]
    source_size = reader(batch, instr.operands[3], "u32") if len(instr.operands) > 3 else None
    width = int(size_ref.value) if isinstance(size_ref, ir.ImmRef) else None
    if width not in (4, 8, 16):
        raise batch.lowering_error(instr, "cp.async copies 4, 8 or 16 bytes")
    to_plan = AddressPlan(batch, instr, destination, "shared")
    from_plan = AddressPlan(batch, instr, source, "global")

    def read(space, addresses, owners, size):
        return access(batch, instr, "load", space, addresses, owners, size)

    def issue(sel):
        lanes = lanes_of(sel, batch.n)
        _, targets, _ = to_plan.addresses(sel)
        space, addresses, _ = from_plan.addresses(sel)
        data = np.zeros((len(lanes), width), dtype=np.uint8)
        size = width if source_size is None else np.broadcast_to(np.asarray(source_size(sel)), lanes.shape)
        copied = memory_semantics.copied_bytes(np.broadcast_to(size, lanes.shape), width)
        whole = copied.all(axis=1)
        if np.any(whole):
            data[whole] = read(space, addresses[whole], lanes[whole], width)
        for offset in range(width - 1):
            part = copied[:, offset] & ~whole
            if np.any(part):
                data[part, offset] = read(space, addresses[part] + np.uint64(offset), lanes[part], 1)[:, 0]
        _copies(batch).issue(instr, lanes, targets.copy(), data)
    return guarded(batch, instr, issue)


def _build_cp_async_arrive(batch, instr: ir.Instr):
    """cp.async.mbarrier.arrive[.noinc] [mbar]: the arrive-on the mbarrier gets once the thread's earlier cp.async
    copies complete. They complete here (a copy may complete at any time before its wait); without .noinc the
    pending count is raised by one before that arrive, so the object is left as it was."""
    if instr.decoded.get("cparrive") != "arrive":
        raise batch.lowering_error(instr, "cp.async.mbarrier needs .arrive")
    plan = AddressPlan(batch, instr, instr.operands[0], "shared")
    noinc = instr.decoded.has("noinc")

    def arrive(sel):
        threads = lanes_of(sel, batch.n)
        copies = _copies(batch)
        try:
            copies.complete(batch, threads, -1)
        except DeviceFault as fault:
            raise batch.memory_fault(instr, fault, None) from None
        if not noinc:
            return
        space, addresses, owners = plan.addresses(sel)
        owners = threads if owners is None else owners
        for i in range(len(threads)):
            at, owner = addresses[i:i + 1], owners[i:i + 1]
            word = int(access(batch, instr, "load", space, at, owner, 8, tell=False).view(np.uint64)[0, 0])
            new, _ = mbarrier_apply("arrive", word, 1)
            access(batch, instr, "store", space, at, owner, 8, data=np.array([new], dtype=np.uint64), tell=False)
    return guarded(batch, instr, arrive)


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


@builds("ldmatrix", "stmatrix", guards_itself=True)
def build_matrix_move(batch, instr: ir.Instr):
    """ldmatrix/stmatrix: 8x8 b16 matrices between the rows (16 bytes) that lanes of each warp name and the warp's
    registers; how a matrix maps onto the fragments is the table's semantics."""
    loads = instr.decoded.family.mnemonic == "ldmatrix"
    count, transpose, registers, plan = _matrix_operands(batch, instr, 0 if loads else 1,
                                                         "destination" if loads else "source")
    move = semantics(instr.decoded)
    writes = [writer(batch, ref, "b32") for ref in registers] if loads else None
    reads = None if loads else [reader(batch, ref, "b32") for ref in registers]

    def load(sel):
        warps, threads, space, providers, owner = _row_lanes(batch, sel, instr, plan, count)
        rows = access(batch, instr, "load", space, providers, owner, 16)
        matrices = rows.view(np.uint16).reshape(len(warps), count, 8, 8)
        wanted = np.zeros(batch.n, dtype=bool)
        wanted[lanes_of(sel, batch.n)] = True
        take = wanted[threads]
        words = move(matrices, transpose)
        for index, write in enumerate(writes):
            write(threads[take], words[:, index].reshape(-1)[take])

    def store(sel):
        warps, threads, space, targets, owner = _row_lanes(batch, sel, instr, plan, count)
        words = np.stack([np.broadcast_to(np.asarray(read(threads)), threads.shape).reshape(len(warps), 32)
                          for read in reads], axis=1)
        matrices = move(words, transpose)
        access(batch, instr, "store", space, targets, owner, 16, data=matrices.reshape(-1, 8))
    return guarded(batch, instr, load if loads else store)


# ---- mma.sync ---------------------------------------------------------------------------------------


#: bits kept below the largest term when the H100's tensor cores add products and accumulator, and below the
#: leading bit of the sum (fitted bit for bit on examples/wgmma; fp8 sums keep 14 significant bits).
#: the one NaN a tensor core writes, whatever NaN or invalid operation made it (H100: inf·0, NaN inputs, inf − inf)


@builds("mma", guards_itself=True)
def build_mma(batch, instr: ir.Instr):
    decoded = instr.decoded
    shape = decoded.get("mmashape")
    dtype, atype, btype, ctype = decoded.types
    # gpuemu's fragment layouts: .f64 only at m8n8k4, and m8n8k4 only with .f64
    if shape not in ("m16n8k16", "m16n8k8", "m8n8k4") or atype not in ("f16", "bf16", "tf32", "f64") or \
            (atype == "f64") != (shape == "m8n8k4"):
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
    a_rows, a_cols = fragment_layout(shape, atype, "a")
    b_rows, b_cols = fragment_layout(shape, btype, "b")
    c_rows, c_cols = fragment_layout(shape, ctype, "c")
    for name, ref, kind, rows, cols in (("d", d_ref, dtype, c_rows, c_cols), ("a", a_ref, atype, a_rows, a_cols),
                                        ("b", b_ref, btype, b_rows, b_cols), ("c", c_ref, ctype, c_rows, c_cols)):
        wanted = np.broadcast(rows, cols).shape[1] // (2 if kind in ("f16", "bf16") else 1)
        if len(regs(ref)) != wanted:
            raise batch.lowering_error(instr, f"the {name} fragment of mma.sync .{shape} .{kind} takes {wanted} "
                                              f"register{'s' if wanted > 1 else ''}, not {len(regs(ref))}")
    multiply_add = semantics(decoded)

    def gather(readers, threads, kind):
        words = np.stack([np.broadcast_to(np.asarray(r(threads)), threads.shape) for r in readers], axis=1)
        return element_values(words, kind).reshape(-1, 32, element_values(words[:1], kind).shape[1])

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
            d = multiply_add(a, b, c)
        else:
            d = multiply_add(a, b.swapaxes(1, 2), c).astype(np.float64)
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
    return guarded(batch, instr, execute)


# ---- wmma -------------------------------------------------------------------------------------------
# PTX leaves wmma fragment layouts to the implementation; gpuemu's: lane l holds elements
# l*per .. l*per+per-1 of the fragment's logical matrix in row-major order (per = elements / 32), and
# fragments with more slots than that hold the same elements again, as the hardware replicates them.


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
    rows, cols = wmma_dims(shape, role)
    elements = rows * cols
    per_lane = elements // 32
    layout = decoded.get("mmalayout", "row")
    size = element_bytes(kind)
    if op == "load":
        dest, address_ref = instr.operands[0], instr.operands[1]
        registers = dest.items if isinstance(dest, ir.VecRef) else (dest,)
    else:
        address_ref, source = instr.operands[0], instr.operands[1]
        registers = source.items if isinstance(source, ir.VecRef) else (source,)
    slots = len(registers) * ELEMENTS_PER_WORD.get(kind, 1)
    if slots < per_lane or slots % per_lane:
        raise batch.lowering_error(instr, f"a wmma .{shape} {role} fragment of .{kind} takes "
                                          f"{-(-per_lane // ELEMENTS_PER_WORD.get(kind, 1))} registers, not "
                                          f"{len(registers)}")
    stride_ref = instr.operands[2] if len(instr.operands) > 2 else None
    read_stride = reader(batch, stride_ref, "u32") if stride_ref is not None else (lambda sel: cols if layout == "row"
                                                                                     else rows)
    word = "b64" if kind == "f64" else "b32"
    plan = AddressPlan(batch, instr, address_ref, decoded.get("space", "generic"))
    element = np.arange(elements)
    row_of, col_of = element // cols, element % cols
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
            raw = access(batch, instr, "load", space, addresses.reshape(-1), owners, size)
            if size == 1:
                octets = raw.reshape(len(warps), elements)
                values = (octets.view(np.int8) if kind == "s8" else octets).astype(np.float64)
            elif kind not in ("f16", "bf16"):
                values = element_values(raw.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[size]).reshape(
                    len(warps), elements), kind)
            if kind in ("f16", "bf16"):
                bits = raw.view(np.uint16).reshape(len(warps), elements)
                values = (bits.view(np.float16).astype(np.float64) if kind == "f16"
                          else (bits.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64))
            per_thread = values.reshape(len(warps) * 32, per_lane)
            slots = len(registers) * ELEMENTS_PER_WORD.get(kind, 1)
            filled = np.tile(per_thread, (1, slots // per_lane))
            words = wmma_words(filled, kind, len(registers))
            for index, write in enumerate(writes):
                write(threads[take], words[take, index])
        else:
            words = np.stack([np.broadcast_to(np.asarray(r(threads)), threads.shape) for r in reads], axis=1)
            values = wmma_slots(words, kind)[:, :per_lane].reshape(len(warps), elements)
            if kind in ("f16", "bf16"):
                data = wmma_words(values.reshape(-1, 2), kind, 1).astype(np.uint32)
                raw = np.stack([data & np.uint32(0xFFFF), data >> np.uint32(16)], axis=1).astype(np.uint16)
                raw = raw.reshape(-1)
            elif kind == "f64":
                raw = values.reshape(-1).astype(np.float64)
            elif kind == "s32":
                raw = values.reshape(-1).astype(np.int64).astype(np.int32)
            else:
                raw = values.reshape(-1).astype(np.float32)
            targets = addresses.reshape(-1)
            access(batch, instr, "store", space, targets, owners, size, data=raw)
    return guarded(batch, instr, execute)


def _build_wmma_mma(batch, instr: ir.Instr, shape: str):
    decoded = instr.decoded
    dtype, ctype = decoded.types[0], decoded.types[-1]
    input_kind = {"m16n16k8": "tf32"}.get(shape, "f16")
    if len(decoded.types) == 4:
        input_kind = decoded.types[1]
    m, n, k = WMMA_SHAPES[shape]
    integer_inputs = input_kind in ("s8", "u8", "s4", "u4", "b1")
    accumulators = ("s32",) if integer_inputs else ("f64",) if input_kind == "f64" else ("f16", "f32")
    if dtype not in accumulators or ctype not in accumulators:
        raise batch.lowering_error(instr, f"wmma.mma with .{input_kind} inputs accumulates in "
                                          f"{' or '.join('.' + kind for kind in accumulators)}, not .{dtype}/.{ctype}")
    d_ref, a_ref, b_ref, c_ref = instr.operands
    regs = lambda ref: ref.items if isinstance(ref, ir.VecRef) else (ref,)
    word = lambda kind: "b64" if kind == "f64" else "b32"
    a_read = [reader(batch, r, word(input_kind)) for r in regs(a_ref)]
    b_read = [reader(batch, r, word(input_kind)) for r in regs(b_ref)]
    c_read = [reader(batch, r, word(ctype)) for r in regs(c_ref)]
    d_write = [writer(batch, r, word(dtype)) for r in regs(d_ref)]
    for name, ref, kind, count in (("a", a_ref, input_kind, m * k // 32), ("b", b_ref, input_kind, k * n // 32),
                                   ("c", c_ref, ctype, m * n // 32), ("d", d_ref, dtype, m * n // 32)):
        slots = len(regs(ref)) * ELEMENTS_PER_WORD.get(kind, 1)
        if slots < count or (name == "d" and slots % count):
            raise batch.lowering_error(instr, f"the {name} fragment of wmma.mma .{shape} .{kind} takes "
                                              f"{-(-count // ELEMENTS_PER_WORD.get(kind, 1))} registers, "
                                              f"not {len(regs(ref))}")

    def gather(readers, threads, kind, count):
        words = np.stack([np.broadcast_to(np.asarray(r(threads)), threads.shape) for r in readers], axis=1)
        return wmma_slots(words, kind)[:, :count].reshape(-1, 32 * count)

    def execute(sel):
        warps = _whole_warps(batch, sel, instr)
        threads = (warps[:, None] * 32 + np.arange(32)[None, :]).reshape(-1)
        a = gather(a_read, threads, input_kind, m * k // 32).reshape(-1, m, k)
        b = gather(b_read, threads, input_kind, k * n // 32).reshape(-1, k, n)
        c = gather(c_read, threads, ctype, m * n // 32).reshape(-1, m, n)
        if dtype == "s32":
            d = integer_mma(a, b.swapaxes(1, 2), c, decoded.has("satfinite"))
        elif input_kind == "f64":
            d = fma_chain(a, b, c)
        else:
            d = tensor_core_sum(a, b.swapaxes(1, 2), c, input_kind, dtype).astype(np.float64)
        d = d.reshape(len(warps) * 32, m * n // 32)
        slots = len(d_write) * ELEMENTS_PER_WORD.get(dtype, 1)
        words = wmma_words(np.tile(d, (1, slots // d.shape[1])), dtype, len(d_write))
        wanted = np.zeros(batch.n, dtype=bool)
        wanted[lanes_of(sel, batch.n)] = True
        take = wanted[threads]
        for index, write in enumerate(d_write):
            write(threads[take], words[take, index])
    return guarded(batch, instr, execute)


# ---- mbarrier ---------------------------------------------------------------------------------------
# The 64-bit object in shared memory; what each operation does to it is isa.tensor.mbarrier_apply. Its reads and
# writes go through access without telling the observers: they are the barrier's, not the program's, accesses.


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
    apply = semantics(decoded)
    parity = decoded.has("parity")

    def execute(sel):
        lanes = lanes_of(sel, batch.n)
        space, addresses, threads = plan.addresses(sel)
        owners = lanes if threads is None else threads
        operand_values = [np.broadcast_to(np.asarray(r(sel)), lanes.shape) for r in extra]
        results = np.zeros(len(lanes), dtype=np.uint64)
        for i in range(len(lanes)):
            at = addresses[i:i + 1]
            owner = owners[i:i + 1]
            word = int(access(batch, instr, "load", space, at, owner, 8, tell=False).view(np.uint64)[0, 0])
            if op not in MBARRIER_OPS:
                raise batch.lowering_error(instr, f"mbarrier.{op} is not supported")
            operand = int(operand_values[0][i]) if operand_values else None
            new, results[i] = apply(op, word, operand, expect_tx=expect_tx, parity=parity)
            if new is not None:
                access(batch, instr, "store", space, at, owner, 8, data=np.array([new], dtype=np.uint64),
                       tell=False)
        if write_dest is not None:
            write_dest(sel, results.astype(bool) if op in ("test_wait", "try_wait") else results)
    return guarded(batch, instr, execute)
