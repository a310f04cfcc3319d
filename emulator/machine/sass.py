"""Executors of SASS instructions: each lowered instruction bound to a batch as a closure over its registers,
constant banks, memory and LDSLK lock table; registered as the builder of op class 'sass'.

Registers are 32-bit arrays (R, UR) and bool arrays (P, UP), one element per thread; a 64-bit operand
is a register pair (low word first). Uniform registers are written for every lane of the warps that
execute, as the hardware's one-per-warp copy would be seen.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from emulator.ir.sass import (EXTERNAL_FUNCTIONS, PLAN_KINDS, SASS_OP_CLASS, Address, ConstWord, Immediate, Pred,
                              SignBit, Special, Value)
from emulator.machine.lanes import ALL, count_of, lanes_of, subselect, threads_of
from emulator.machine.operands import access
from emulator.machine.printf import format_printf, read_c_string
from emulator.machine.registry import RegistryError, builds
from emulator.machine.stops import AssertFailure, MemoryFault
from emulator.memory import GLOBAL_BASE, SHARED_WINDOW, WINDOW_SIZE, DeviceFault
from isa import warp

U32, U64 = np.uint32, np.uint64
#: 32-bit pointers (Fermi code for a 32-bit host) address the 4 GiB of global memory starting here
ADDRESS_HIGH = GLOBAL_BASE & ~0xFFFFFFFF
BANK_BYTES = 64 * 1024
#: Fermi's shared-memory locks: 256 per SM (the seed), indexed by bits 2-9 of the shared address; CTAs share
#: their SM's as %smid places them (CTA number modulo the SM count)
LOCKS_PER_SM, LOCK_SMS = 256, 132
_SIGN = {"f": 0x80000000, "F": 1 << 63, "h": 0x80008000, "hb": 0x80008000}


# ---- operand reading and writing -------------------------------------------------------------------

def _zero(width: int):
    return U64(0) if width == 64 else U32(0)


def _width_of(ref) -> int:
    if isinstance(ref, Value):
        return 32 * len(ref.regs)
    if isinstance(ref, (Immediate, ConstWord)):
        return 64 if ref.width == 64 else 32
    return 32


def _raw_reader(batch, ref) -> Callable:
    """sel → the operand's raw bits (np.uint32, np.uint64 for pairs; arrays or scalars)."""
    if isinstance(ref, Value):
        parts = [batch.regs[reg.index] if reg is not None else None for reg in ref.regs]
        if len(parts) == 1:
            (only,) = parts
            return (lambda sel: only[sel]) if only is not None else (lambda sel: U32(0))
        low, high = parts
        if low is None and high is None:
            return lambda sel: U64(0)

        def pair(sel):
            lo = low[sel].astype(U64) if low is not None else U64(0)
            hi = high[sel].astype(U64) if high is not None else U64(0)
            return lo | (hi << U64(32))
        return pair
    if isinstance(ref, Immediate):
        value = U64(ref.bits) if ref.width == 64 else U32(ref.bits & 0xFFFFFFFF)
        return lambda sel: value
    if isinstance(ref, ConstWord):
        return _const_reader(batch, ref)
    if isinstance(ref, Special):
        return _special_reader(batch, ref)
    raise TypeError(f"cannot read {ref!r} as a value")


def _const_reader(batch, ref: ConstWord) -> Callable:
    bank = batch.config.constant_banks.get(ref.bank)
    if bank is None:
        bank = np.zeros(BANK_BYTES, dtype=np.uint8)
    size = ref.width // 8
    dtype = U64 if size == 8 else U32
    if ref.index is None:
        if not 0 <= ref.offset <= BANK_BYTES - size:
            value = dtype(0)
        else:
            value = bank[ref.offset:ref.offset + size].view(dtype)[0]
        return lambda sel: value
    read_index = _raw_reader(batch, ref.index)
    words = bank[:BANK_BYTES - BANK_BYTES % size].view(dtype)
    offset = ref.offset
    if not -(1 << 32) < offset < BANK_BYTES:  # no 32-bit index brings it into the bank
        return lambda sel: np.zeros(count_of(sel, batch.n), dtype=dtype)

    def gather(sel):
        where = np.asarray(read_index(sel)).astype(np.int64) + offset
        inside = (where >= 0) & (where <= BANK_BYTES - size) & (where % size == 0)
        index = np.where(inside, where // size, 0)
        return np.where(inside, words[index], dtype(0))
    return gather


def _special_reader(batch, ref: Special) -> Callable:
    if ref.value is not None:
        value = U32(ref.value)
        return lambda sel: value
    if ref.name == "swinhi":
        value = U32(SHARED_WINDOW >> 32)
        return lambda sel: value
    if ref.name == "smemsz":
        value = U32(batch.program.arch.shared_base + (batch.config.dynamic_shared + 127) // 128 * 128)
        return lambda sel: value
    special = batch.special(ref.name)
    if callable(special):
        return lambda sel: np.asarray(special(sel)).astype(U32)
    special = np.asarray(special).astype(U32)
    if special.ndim == 0:
        value = special[()]
        return lambda sel: value
    return lambda sel: special[sel]


def value_reader(batch, ref, kind: str = "int") -> Callable:
    """sel → bits of a source operand with its `~`, `|x|` and (for float kinds) `-` applied."""
    if ref is None:
        return lambda sel: None
    if isinstance(ref, (Pred, SignBit)):
        return pred_reader(batch, ref)
    read = _raw_reader(batch, ref)
    invert = getattr(ref, "invert", False)
    absolute = getattr(ref, "absolute", False)
    negate = getattr(ref, "negate", False) and kind in _SIGN
    half = getattr(ref, "half", None)
    if not (invert or absolute or negate or half in ("H0_H0", "H1_H1")):
        return read
    width = _width_of(ref)
    dtype = U64 if width == 64 else U32
    sign = dtype(_SIGN.get(kind, 0) if kind != "F" or width == 64 else 0)

    def modified(sel):
        bits = np.asarray(read(sel), dtype=dtype)
        if half == "H0_H0":
            bits = (bits & dtype(0xFFFF)) | ((bits & dtype(0xFFFF)) << dtype(16))
        elif half == "H1_H1":
            bits = (bits >> dtype(16)) | ((bits >> dtype(16)) << dtype(16))
        if invert:
            bits = ~bits
        if absolute:
            if kind in _SIGN:
                bits = bits & ~sign
            else:
                signed = bits.view(np.int64 if width == 64 else np.int32)
                bits = np.abs(signed).view(dtype)
        if negate:
            bits = bits ^ sign
        if kind in ("f", "F") and (absolute or negate):
            raw = np.asarray(read(sel), dtype=dtype)
            magnitude = raw & ~sign
            exponent = dtype(0x7F800000 if width == 32 else 0x7FF0000000000000)
            bits = np.where(magnitude > exponent, raw, bits)
        return bits
    return modified


def pred_reader(batch, ref) -> Callable:
    if isinstance(ref, SignBit):
        read = _raw_reader(batch, ref.value)
        if ref.negated:
            return lambda sel: (np.asarray(read(sel)) >> U32(31)) == 0
        return lambda sel: (np.asarray(read(sel)) >> U32(31)) != 0
    if ref.reg is None:
        value = np.bool_(not ref.negated)
        return lambda sel: value
    storage = batch.regs[ref.reg.index]
    if ref.negated:
        return lambda sel: ~storage[sel]
    return lambda sel: storage[sel]


def _warp_broadcast(storage: np.ndarray) -> Callable:
    """Write per-lane values to every lane of each executing warp (uniform registers)."""
    grid = storage.reshape(-1, 32)

    def store(sel, values):
        values = np.broadcast_to(np.asarray(values), (count_of(sel, storage.size),))
        if sel is ALL:
            storage[:] = values
            return
        warps, first = np.unique(sel >> 5, return_index=True)
        grid[warps] = values[first][:, None]
    return store


def value_writer(batch, ref, width: int) -> Optional[Callable]:
    """(sel, bits) → stores into a destination register (pair), or None for RZ/PT/absent."""
    if ref is None:
        return None
    if isinstance(ref, Pred):
        if ref.reg is None:
            return None
        storage = batch.regs[ref.reg.index]
        if ref.uniform:
            broadcast = _warp_broadcast(storage)
            return lambda sel, values: broadcast(sel, np.asarray(values, dtype=bool))

        def store_pred(sel, values):
            storage[sel] = values
        return store_pred
    if not isinstance(ref, Value):
        raise TypeError(f"{ref!r} cannot be written")
    stores = []
    for part, reg in enumerate(ref.regs):
        if reg is None:
            stores.append(None)
            continue
        storage = batch.regs[reg.index]
        if ref.uniform:
            stores.append(_warp_broadcast(storage))
        else:
            def store(sel, values, storage=storage):
                storage[sel] = values
            stores.append(store)
    if all(store is None for store in stores):
        return None
    if len(stores) == 1:
        (only,) = stores

        def store32(sel, values):
            only(sel, np.asarray(values).astype(U32))
        return store32
    low, high = stores

    def store64(sel, values):
        values = np.asarray(values).astype(U64)
        if low is not None:
            low(sel, (values & U64(0xFFFFFFFF)).astype(U32))
        if high is not None:
            high(sel, (values >> U64(32)).astype(U32))
    return store64


# ---- ALU --------------------------------------------------------------------------------------------

def build_alu(batch, instr, plan) -> Callable:
    readers = [value_reader(batch, ref, kind) for ref, kind in zip(plan.sources, plan.kinds)]
    writers = [value_writer(batch, ref, width) for ref, width in zip(plan.dests, plan.widths)]
    function = plan.op.semantics
    mods, neg = plan.mods, plan.neg
    pairs = [(index, write) for index, write in enumerate(writers) if write is not None]

    def execute(sel):
        outputs = function(*[read(sel) for read in readers], mods=mods, neg=neg)
        for index, write in pairs:
            write(sel, outputs[index])
    return execute


# ---- memory -----------------------------------------------------------------------------------------

def address_reader(batch, ref: Address, space: str) -> Callable:
    """sel → (space for the memory core, uint64 addresses, threads) of an address operand."""
    arch = batch.program.arch
    base = _raw_reader(batch, ref.base) if ref.base is not None else None
    uniform = _raw_reader(batch, ref.uniform) if ref.uniform is not None else None
    offset = np.int64(ref.offset).astype(U64)
    scale = U64(ref.scale)
    narrow = ref.width == 32 and space in ("global", "generic")
    core_space = "global" if narrow else space
    shared_base = U64(arch.shared_base)

    def addresses(sel):
        n = count_of(sel, batch.n)
        total = np.full(n, offset, dtype=U64)
        if base is not None:
            total = total + np.asarray(base(sel)).astype(U64) * scale
        if uniform is not None:
            total = total + np.asarray(uniform(sel)).astype(U64)
        if narrow:
            total = (total & U64(0xFFFFFFFF)) + U64(ADDRESS_HIGH)
        elif space == "generic" and shared_base:
            in_shared = (total >= U64(SHARED_WINDOW)) & (total < U64(SHARED_WINDOW + WINDOW_SIZE))
            total = np.where(in_shared, total - shared_base, total)
        elif space in ("shared", "local"):
            total = total & U64(0xFFFFFFFF)
            if space == "shared" and shared_base:
                total = (total & U64(0xFFFFFF)) - shared_base
        return core_space, total, threads_of(sel)
    return addresses


def _to_registers(raw: np.ndarray, width: int, signed: bool) -> np.ndarray:
    """(n, width) bytes → (n, registers) uint32 words, narrow loads zero- or sign-extended."""
    n = raw.shape[0]
    if width >= 4:
        return np.ascontiguousarray(raw).view(U32).reshape(n, width // 4)
    dtype = {1: np.int8 if signed else np.uint8, 2: np.int16 if signed else np.uint16}[width]
    values = np.ascontiguousarray(raw).view(dtype).reshape(n)
    return values.astype(np.int64).astype(U32).reshape(n, 1)


def _register_loader(batch, instr, where, writers, width: int, signed: bool) -> Callable:
    """sel → the addresses it loaded from, after writing the loaded words to the destination registers."""

    def load(sel):
        space, addresses, threads = where(sel)
        raw = access(batch, instr, "load", space, addresses, threads, width)
        words = _to_registers(raw.reshape(len(addresses), width), width, signed)
        for index, write in enumerate(writers):
            if write is not None:
                write(sel, words[:, index])
        return addresses
    return load


def build_load(batch, instr, plan) -> Callable:
    where = address_reader(batch, plan.sources[0], plan.space)
    writers = [value_writer(batch, ref, 32) for ref in plan.dests]
    signed = any(m in ("S8", "S16") for m in plan.mods)
    return _register_loader(batch, instr, where, writers, plan.width, signed)


def _store_data(readers, sel, n: int, width: int) -> np.ndarray:
    words = np.empty((n, len(readers)), dtype=U32)
    for index, read in enumerate(readers):
        words[:, index] = read(sel)
    if width >= 4:
        return words
    return words[:, 0].astype(np.uint8 if width == 1 else np.uint16).reshape(n, 1)


def build_store(batch, instr, plan) -> Callable:
    where = address_reader(batch, plan.sources[0], plan.space)
    readers = [value_reader(batch, ref) for ref in plan.sources[1:]]
    width = plan.width

    def execute(sel):
        space, addresses, threads = where(sel)
        data = _store_data(readers, sel, len(addresses), width)
        access(batch, instr, "store", space, addresses, threads, width, data=data)
    return execute


_ATOMIC_VIEWS = {"u32": U32, "s32": np.int32, "f32": np.float32, "u64": U64, "s64": np.int64, "f64": np.float64,
                 "f16x2": U32, "bf16x2": U32}


def build_atomic(batch, instr, plan) -> Callable:
    """ATOM/ATOMG/ATOMS/RED/REDG: the memory core applies the lanes in order; CAS.SPIN (.CAST.SPIN) writes
    1 to its register when the swap happened, 0 when it did not, where CAS writes the old value."""
    where = address_reader(batch, plan.sources[0], plan.space)
    readers = [value_reader(batch, ref) for ref in plan.sources[1:]]
    spin = "CAST" in plan.mods
    write = value_writer(batch, plan.dests[0], plan.width * 8) if plan.dests else None
    write_success = value_writer(batch, plan.dests[1], 1) if len(plan.dests) > 1 else None
    op, ty = plan.atomic
    view = _ATOMIC_VIEWS[ty]
    bits = U64 if plan.width == 8 else U32
    width = plan.width

    def operand(read, sel, n):
        return np.broadcast_to(np.asarray(read(sel)).astype(bits), (n,)).view(view)

    def execute(sel):
        space, addresses, threads = where(sel)
        n = len(addresses)
        a = operand(readers[0], sel, n)
        b = operand(readers[1], sel, n) if len(readers) > 1 else None
        old = access(batch, instr, "atomic", space, addresses, threads, width, atomic=(op, ty, a, b))
        if write is not None:
            previous = np.asarray(old).view(bits)
            write(sel, (previous == a.view(bits)).astype(bits) if spin else previous)
        if write_success is not None:
            write_success(sel, np.asarray(old) == a if op == "cas" else np.ones(n, dtype=bool))
    return execute


# ---- LDSLK / STSUL: shared-memory locks ------------------------------------------------------------------

def lock_table(batch) -> np.ndarray:
    """Per SM, the thread holding each of its 256 shared-memory locks (-1: free)."""
    table = getattr(batch, "sass_locks", None)
    if table is None:
        table = np.full((LOCK_SMS, LOCKS_PER_SM), -1, dtype=np.int64)
        batch.sass_locks = table
    return table


def _lock_keys(batch, sel, addresses) -> np.ndarray:
    """sm * 256 + lock index; the lock index is bits 2-9 of the shared address."""
    lanes = lanes_of(sel, batch.n)
    locks = ((addresses >> U64(2)) & U64(LOCKS_PER_SM - 1)).astype(np.int64)
    return (batch.cta_of[lanes] + batch.cta_start) % LOCK_SMS * LOCKS_PER_SM + locks


def _first_of_each(keys: np.ndarray) -> np.ndarray:
    """Mask of the first lane (in lane order) of every distinct key."""
    _, first = np.unique(keys, return_index=True)
    mask = np.zeros(len(keys), dtype=bool)
    mask[first] = True
    return mask


def build_lock_arbitrate(batch, instr, plan) -> Callable:
    """Before an LDSLK: lanes whose lock another warp holds, or another (lower) warp wants in this same
    step, stall (are parked) instead of looping; the guard of the LDSLK applies here too."""
    where = address_reader(batch, plan.sources[0], "shared")
    write = value_writer(batch, plan.dests[0], 1)
    guard = plan.guard
    guard_storage = batch.regs[guard[0].index] if guard else None

    def execute(sel):
        stall = np.zeros(count_of(sel, batch.n), dtype=bool)
        active = np.ones(len(stall), dtype=bool)
        if guard_storage is not None:
            active = guard_storage[sel] != guard[1]
        if active.any():
            lanes = lanes_of(sel, batch.n)[active]
            sub = subselect(sel, active)
            _, addresses, _ = where(sub)
            keys = _lock_keys(batch, sub, addresses)
            table = lock_table(batch).reshape(-1)
            warps = lanes >> 5
            owner = table[keys]
            held_elsewhere = (owner >= 0) & ((owner >> 5) != warps)
            _, inverse = np.unique(keys, return_inverse=True)
            lowest = np.full(inverse.max() + 1, np.iinfo(np.int64).max, dtype=np.int64)
            np.minimum.at(lowest, inverse, warps)
            stall[active] = held_elsewhere | (warps != lowest[inverse])
        write(sel, stall)
    return execute


def build_lock_load(batch, instr, plan) -> Callable:
    """LDSLK P, R, [a]: load the shared word; P tells each lane whether it took the word's lock (one
    lane per free lock per execution)."""
    where = address_reader(batch, plan.sources[0], "shared")
    write_pred = value_writer(batch, plan.dests[0], 1)
    writers = [value_writer(batch, ref, 32) for ref in plan.dests[1:]]
    load = _register_loader(batch, instr, where, writers, plan.width, False)

    def execute(sel):
        addresses = load(sel)
        keys = _lock_keys(batch, sel, addresses)
        table = lock_table(batch).reshape(-1)
        won = (table[keys] < 0) & _first_of_each(keys)
        table[keys[won]] = lanes_of(sel, batch.n)[won]
        if write_pred is not None:
            write_pred(sel, won)
    return execute


def build_unlock_store(batch, instr, plan) -> Callable:
    """STSUL [a], R: store the shared word and release its lock."""
    store = build_store(batch, instr, plan)
    where = address_reader(batch, plan.sources[0], "shared")

    def execute(sel):
        store(sel)
        _, addresses, _ = where(sel)
        lock_table(batch).reshape(-1)[_lock_keys(batch, sel, addresses)] = -1
    return execute


# ---- warp-level and synthetic ------------------------------------------------------------------------------

#: SASS VOTE modes as isa.warp's vote modes
_VOTE_MODES = {"ANY": "any", "ALL": "all", "EQ": "uni"}


def build_vote(batch, instr, plan) -> Callable:
    """VOTE/VOTEU.{ANY,ALL,EQ} Rd, Pd, Ps: Rd the ballot of Ps over the warp's executing lanes, Pd its vote."""
    read = pred_reader(batch, plan.sources[0])
    write_mask = value_writer(batch, plan.dests[0], 32)
    write_vote = value_writer(batch, plan.dests[1], 1)
    mode = _VOTE_MODES[plan.mods[0]]

    def execute(sel):
        active = np.zeros(batch.n, dtype=bool)
        active[sel] = True
        flags = np.zeros(batch.n, dtype=bool)
        flags[sel] = read(sel)
        active, flags = active.reshape(-1, warp.WARP_SIZE), flags.reshape(-1, warp.WARP_SIZE)
        warps = lanes_of(sel, batch.n) >> 5
        if write_mask is not None:
            write_mask(sel, warp.vote("ballot", flags, active)[warps])
        if write_vote is not None:
            write_vote(sel, warp.vote(mode, flags, active)[warps])
    return execute


def build_match(batch, instr, plan) -> Callable:
    """MATCH.ANY: the lanes of the warp holding the same value; MATCH.ALL: the active mask when all agree."""
    read = _raw_reader(batch, plan.sources[0])
    write_mask = value_writer(batch, plan.dests[0], 32)
    write_all = value_writer(batch, plan.dests[1], 1)
    mode = "all" if "ALL" in plan.mods else "any"

    def execute(sel):
        active = np.zeros(batch.n, dtype=bool)
        active[sel] = True
        values = np.zeros(batch.n, dtype=U64)
        values[sel] = np.asarray(read(sel)).astype(U64)
        masks, agree = warp.match(mode, values.reshape(-1, warp.WARP_SIZE), active.reshape(-1, warp.WARP_SIZE))
        if write_all is not None and mode == "all":
            write_all(sel, agree.reshape(-1)[sel])
        if write_mask is not None:
            write_mask(sel, masks.reshape(-1)[sel])
    return execute


def build_return_check(batch, instr, plan) -> Callable:
    read = _raw_reader(batch, plan.sources[0])
    write = value_writer(batch, plan.dests[0], 1)
    target = U32(plan.value & 0xFFFFFFFF)
    guard = plan.guard
    guard_storage = batch.regs[guard[0].index] if guard else None

    def execute(sel):
        hit = np.asarray(read(sel)) == target
        if guard_storage is not None:
            hit = hit & (guard_storage[sel] != guard[1])
        write(sel, np.broadcast_to(hit, (count_of(sel, batch.n),)))
    return execute


def build_nop(batch, instr, plan) -> Callable:
    return lambda sel: None


def build_external_call(batch, instr, plan) -> Callable:
    """CALL.ABS to vprintf or __assertfail (their addresses as a cubin's relocations give them, EXTERNAL_FUNCTIONS),
    with the ABI's arguments; any other target is an illegal instruction."""
    target, format_or_message, args_or_file, line, _function = (_raw_reader(batch, ref) for ref in plan.sources)
    write_result = value_writer(batch, plan.dests[0], 32)
    names = {address: name for name, address in EXTERNAL_FUNCTIONS.items()}

    def execute(sel):
        lanes = lanes_of(sel, batch.n)
        if not len(lanes):
            return
        addresses = np.broadcast_to(np.asarray(target(sel), dtype=U64), lanes.shape)
        unknown = [index for index, address in enumerate(addresses) if int(address) not in names]
        if unknown:
            raise batch.illegal_instruction(instr, f"calls address {int(addresses[unknown[0]]):#x}, which is no "
                                                   f"function gpuemu provides ({', '.join(EXTERNAL_FUNCTIONS)})",
                                            lanes[unknown[0]])
        first = np.broadcast_to(np.asarray(format_or_message(sel), dtype=U64), lanes.shape)
        second = np.broadcast_to(np.asarray(args_or_file(sel), dtype=U64), lanes.shape)
        if any(names[int(address)] == "__assertfail" for address in addresses):
            index = next(i for i, address in enumerate(addresses) if names[int(address)] == "__assertfail")
            thread = int(lanes[index])
            try:
                texts = [read_c_string(batch.memory, int(value), thread).decode(errors="replace") if value else "?"
                         for value in (first[index], second[index])]
            except DeviceFault as fault:
                raise MemoryFault(instr, fault, batch.place(thread)) from None
            number = int(np.broadcast_to(np.asarray(line(sel)), lanes.shape)[index])
            raise AssertFailure(texts[0], texts[1], number, batch.place(thread))
        for index, thread in enumerate(lanes):
            try:
                text = format_printf(batch.memory, int(first[index]), int(second[index]), int(thread))
            except DeviceFault as fault:
                raise MemoryFault(instr, fault, batch.place(int(thread))) from None
            batch.config.write_stdout(text)
        if write_result is not None:
            write_result(sel, np.zeros(len(lanes), dtype=U32))
    return execute


BUILDERS = {
    "alu": build_alu, "load": build_load, "store": build_store, "atomic": build_atomic, "reduce": build_atomic,
    "lock_arbitrate": build_lock_arbitrate, "lock_load": build_lock_load, "unlock_store": build_unlock_store,
    "vote": build_vote, "match": build_match, "return_check": build_return_check, "nop": build_nop,
    "external_call": build_external_call,
}


def _check_builders() -> None:
    """Every plan kind the SASS lowering makes has a builder here, and every builder a kind."""
    if set(BUILDERS) != set(PLAN_KINDS):
        raise RegistryError(f"SASS plan kinds without a builder: {sorted(set(PLAN_KINDS) - set(BUILDERS))}; "
                            f"builders of no plan kind: {sorted(set(BUILDERS) - set(PLAN_KINDS))}")


_check_builders()


@builds(SASS_OP_CLASS)
def build(batch, instr) -> Callable:
    """The executor of a lowered SASS instruction (op class 'sass')."""
    plan = instr.info["sass"]
    execute = BUILDERS[plan.kind](batch, instr, plan)
    if batch.observer is not None and instr.decoded.get("space") == "const":
        return _telling_constant_reads(batch, instr, execute)
    return execute


def _telling_constant_reads(batch, instr, execute) -> Callable:
    """LDC/ULDC read their bank as an operand, so observers hear of the read here: a "constant" load at
    bank * 64 KiB + offset (+ the index register) for each lane."""
    word = instr.operands[1]
    base = U64((word.bank * BANK_BYTES + word.offset) % (1 << 64))
    read_index = _raw_reader(batch, word.index) if word.index is not None else None
    width = word.width // 8
    observe = batch.observer

    def run(sel):
        n = count_of(sel, batch.n)
        if read_index is None:
            addresses = np.full(n, base, dtype=U64)
        else:
            addresses = np.broadcast_to(np.asarray(read_index(sel)).astype(U64) + base, (n,)).copy()
        observe.memory(batch, instr, "load", "constant", addresses, threads_of(sel), width)
        execute(sel)
    return run
