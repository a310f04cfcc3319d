"""Executors: each IR instruction bound to one batch's arrays as a closure the scheduler calls with a lane selection.

A selection `sel` is ALL (every thread of the batch: no masking at all) or a sorted int64 array of
thread indices. Semantics functions never see registers, masks or memory: this module does that
plumbing once for every instruction family.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from emulator import ir
from emulator.machine.lanes import ALL, lanes_of
from emulator.machine.operands import AddressPlan, access, guarded, reader, writer
from emulator.machine.registry import BUILDERS, builds
from emulator.memory import LOCAL_WINDOW, SHARED_WINDOW, WINDOW_SIZE, DeviceFault
from isa import atomic as atomic_semantics
from isa import memory as memory_semantics
from isa import warp
from isa.table import Decoded, semantics, vector_count
from isa.types import TYPES

# ---- ALU --------------------------------------------------------------------------------------------

@builds("alu")
def build_alu(batch, instr: ir.Instr) -> Callable:
    decoded = instr.decoded
    signature = decoded.signature
    dest, sources = instr.operands[0], instr.operands[1:]
    fn = semantics(decoded)
    readers = [reader(batch, ref, ty) for ref, ty in zip(sources, signature.sources)]
    family = decoded.family
    if family.carry_in:
        cc = batch.cc
        readers.append(lambda sel: cc[sel])
    carry_out = family.carry_out and decoded.has("cc")
    carry_always = family.carry_in or carry_out
    if isinstance(dest, ir.PredPairRef):
        if family.mnemonic in ("setp", "set"):
            return _build_setp_pair(batch, decoded, dest, readers)
        write_first = writer(batch, dest.first, signature.dest)
        write_second = writer(batch, dest.second, "pred")

        def execute_pair(sel):
            first, second = fn(*[r(sel) for r in readers])
            write_first(sel, first)
            write_second(sel, second)
        return execute_pair
    write = writer(batch, dest, signature.dest)
    if carry_always:
        cc = batch.cc
        write_carry = carry_out

        def execute_carry(sel):
            value, carry = fn(*[r(sel) for r in readers])
            write(sel, value)
            if write_carry:
                cc[sel] = carry
        return execute_carry
    if len(readers) == 1:
        (r0,) = readers
        return lambda sel: write(sel, fn(r0(sel)))
    target = _in_place_target(batch, fn, dest, signature)
    if len(readers) == 2 and target is not None:
        r0, r1 = readers

        def execute_in_place(sel):
            if sel is ALL:
                fn(r0(sel), r1(sel), out=target)
            else:
                write(sel, fn(r0(sel), r1(sel)))
        return execute_in_place
    if len(readers) == 2:
        r0, r1 = readers
        return lambda sel: write(sel, fn(r0(sel), r1(sel)))
    if len(readers) == 3:
        r0, r1, r2 = readers
        return lambda sel: write(sel, fn(r0(sel), r1(sel), r2(sel)))
    return lambda sel: write(sel, fn(*[r(sel) for r in readers]))


def _in_place_target(batch, fn, dest, signature):
    """The destination register viewed as the result type, when a numpy ufunc can write its whole batch directly
    (no temporary, no copy): same-typed integer operands and a destination register of that width."""
    if not isinstance(fn, np.ufunc) or not isinstance(dest, ir.RegRef) or dest.reg.index in batch.uniform:
        return None
    t = TYPES[signature.dest]
    if not t.is_int or any(source != signature.dest for source in signature.sources):
        return None
    storage = batch.regs[dest.reg.index]
    if storage.dtype.itemsize != t.dtype.itemsize:
        return None
    return storage if storage.dtype == t.dtype else storage.view(t.dtype)


_HALF_OF_PAIR = {"f16x2": "f16", "bf16x2": "bf16"}


def _build_setp_pair(batch, decoded: Decoded, dest: ir.PredPairRef, readers) -> Callable:
    """setp with `p|q`: p = t BOP c and q = !t BOP c; for f16x2/bf16x2, p and q compare the low and high halves."""
    from isa import intops
    from isa.table import compare_function
    op = decoded.get("boolop")
    write_p = writer(batch, dest.first, "pred")
    write_q = writer(batch, dest.second, "pred")
    half = _HALF_OF_PAIR.get(decoded.type)
    if half is not None:
        compare_half = compare_function(decoded, half)
        low_mask, shift = np.uint32(0xFFFF), np.uint32(16)

        def outcomes(sel):
            a, b = np.asarray(readers[0](sel)), np.asarray(readers[1](sel))
            low = compare_half((a & low_mask).astype(np.uint16), (b & low_mask).astype(np.uint16))
            high = compare_half((a >> shift).astype(np.uint16), (b >> shift).astype(np.uint16))
            return low, high
    else:
        compare = compare_function(decoded, decoded.type)

        def outcomes(sel):
            t = np.asarray(compare(readers[0](sel), readers[1](sel)))
            return t, ~t

    def execute(sel):
        p, q = outcomes(sel)
        if op is not None:
            c = readers[2](sel)
            p, q = intops.combine_pred(p, c, op=op), intops.combine_pred(q, c, op=op)
        write_p(sel, p)
        write_q(sel, q)
    return execute


# ---- data movement ----------------------------------------------------------------------------------

@builds("mov")
def build_mov(batch, instr: ir.Instr) -> Callable:
    type_name = instr.decoded.type
    dest, source = instr.operands
    t = TYPES[type_name]
    if isinstance(source, ir.VecRef):
        part_bits = t.bits // len(source.items)
        part_type = f"b{part_bits}"
        parts = [reader(batch, item, part_type) for item in source.items]
        wide = np.dtype(f"u{t.bytes}")
        write = writer(batch, dest, f"b{t.bits}")

        def pack(sel):
            value = None
            for i, part in enumerate(parts):
                piece = np.asarray(part(sel)).astype(wide) << wide.type(i * part_bits)
                value = piece if value is None else value | piece
            write(sel, value)
        return pack
    if isinstance(dest, ir.VecRef):
        part_bits = t.bits // len(dest.items)
        part_type = f"b{part_bits}"
        read = reader(batch, source, f"b{t.bits}")
        writes = [writer(batch, item, part_type) for item in dest.items]
        part_dtype = np.dtype(f"u{part_bits // 8}")
        mask = (1 << part_bits) - 1

        def unpack(sel):
            value = np.asarray(read(sel))
            for i, write in enumerate(writes):
                write(sel, ((value >> value.dtype.type(i * part_bits)) & value.dtype.type(mask)).astype(part_dtype))
        return unpack
    read = reader(batch, source, type_name)
    write = writer(batch, dest, type_name)
    return lambda sel: write(sel, read(sel))


@builds("cvta")
def build_cvta(batch, instr: ir.Instr) -> Callable:
    decoded = instr.decoded
    space = decoded.get("space")
    dest, source = instr.operands
    type_name = decoded.type
    read = reader(batch, source, "u64" if isinstance(source, ir.SymRef) else type_name)
    write = writer(batch, dest, type_name)
    base = batch.addressing.space_base(space)
    out_dtype = TYPES[type_name].dtype
    if base == 0:
        return lambda sel: write(sel, read(sel))

    convert = semantics(decoded)

    def execute(sel):
        write(sel, convert(read(sel), base).astype(out_dtype, copy=False))
    return execute


@builds("isspacep")
def build_isspacep(batch, instr: ir.Instr) -> Callable:
    space = instr.decoded.get("space")
    in_window = semantics(instr.decoded)
    dest, source = instr.operands
    read = reader(batch, source, "u64")
    write = writer(batch, dest, "pred")

    def execute(sel):
        address = np.asarray(read(sel), dtype=np.uint64)
        in_shared = in_window(address, SHARED_WINDOW, WINDOW_SIZE)
        in_local = in_window(address, LOCAL_WINDOW, WINDOW_SIZE)
        if space == "shared":
            result = in_shared
        elif space == "local":
            result = in_local
        elif space == "const":
            result = batch.addressing.in_const(address)
        elif space == "param":
            result = batch.addressing.in_param(address)
        else:
            result = ~in_shared & ~in_local
        write(sel, result)
    return execute


# ---- memory ------------------------------------------------------------------------------------------

def _access_width(batch, instr: ir.Instr, element_bytes: int, count: int) -> int:
    """Bytes per lane of a load or store; 256-bit accesses are sm_100 PTX, which ptxas refuses for sm_90."""
    width = element_bytes * count
    if width > 16:
        raise batch.lowering_error(instr, f"a {width}-byte access per thread (256-bit load/store) needs sm_100; "
                                          "gpuemu runs sm_90 PTX, where at most 16 bytes move per thread")
    return width


def _access_operands(batch, instr: ir.Instr, *, data_at: int, what: str):
    """ld/st: (element type, elements per thread, bytes per thread, the data registers, the address plan); the
    data operand sits at data_at and the address at the other of the first two operands."""
    decoded = instr.decoded
    t = TYPES[decoded.type]
    count = vector_count(decoded)
    width = _access_width(batch, instr, t.bytes, count)
    data = instr.operands[data_at]
    registers = data.items if isinstance(data, ir.VecRef) else (data,)
    if len(registers) != count:
        raise batch.lowering_error(instr, f"{count} {what} registers expected")
    plan = AddressPlan(batch, instr, instr.operands[1 - data_at], decoded.get("space", "generic"))
    return t, count, width, registers, plan


@builds("ld", guards_itself=True)
def build_ld(batch, instr: ir.Instr) -> Callable:
    t, _, width, dests, plan = _access_operands(batch, instr, data_at=0, what="destination")
    writes = [writer(batch, ref, t.name) for ref in dests]
    unpack = semantics(instr.decoded)
    observe = batch.observer

    uniform_address = np.array([plan.static or 0], dtype=np.uint64)

    def execute(sel):
        if plan.uniform or plan.uniform_register:
            if observe is not None:
                observe.memory(batch, instr, "load", *plan.addresses(sel), width)
            if plan.uniform_register:
                space, address, _ = plan.addresses(np.zeros(1, dtype=np.int64))
            else:
                space, address = plan.space, uniform_address
            raw = access(batch, instr, "load", space, address, None, width, tell=False)
            values = unpack(raw)
            for i, write in enumerate(writes):
                write(sel, values[0, i])
            return
        raw = access(batch, instr, "load", *plan.addresses(sel), width)
        values = unpack(raw)
        for i, write in enumerate(writes):
            write(sel, values[:, i])
    return guarded(batch, instr, execute)


@builds("st", guards_itself=True)
def build_st(batch, instr: ir.Instr) -> Callable:
    t, _, width, sources, plan = _access_operands(batch, instr, data_at=1, what="source")
    reads = [reader(batch, ref, t.name) for ref in sources]
    pack = semantics(instr.decoded)

    def execute(sel):
        space, addresses, threads = plan.addresses(sel)
        data = pack([read(sel) for read in reads], lanes=len(addresses))
        access(batch, instr, "store", space, addresses, threads, width, data=data)
    return guarded(batch, instr, execute)


@builds("atom", "red", guards_itself=True)
def build_atom(batch, instr: ir.Instr) -> Callable:
    decoded = instr.decoded
    type_name = decoded.type
    op = decoded.get("atomop") or decoded.get("redop")
    has_dest = decoded.family.op_class == "atom"
    operands = instr.operands
    if has_dest:
        dest, address, rest = operands[0], operands[1], operands[2:]
    else:
        dest, address, rest = None, operands[0], operands[1:]
    count = vector_count(decoded)
    if count > 1:
        return _build_vector_atom(batch, instr, op, dest, address, rest, count)
    if op not in atomic_semantics.OPS_BY_TYPE.get(type_name, ()):
        raise batch.lowering_error(instr, f"{decoded.family.mnemonic}.{op} is not defined for .{type_name} (ptxas "
                                          f"refuses it; .{type_name} takes "
                                          f"{', '.join(atomic_semantics.OPS_BY_TYPE.get(type_name, ())) or 'none'})")
    write = writer(batch, dest, type_name) if dest is not None else None
    reads = [reader(batch, ref, type_name) for ref in rest]
    if op == "cas" and len(reads) != 2 or op != "cas" and len(reads) != 1:
        raise batch.lowering_error(instr, "wrong number of operands")
    plan = AddressPlan(batch, instr, address, decoded.get("space", "generic"))
    ty = "b32" if type_name == "b32" else type_name
    width = TYPES[type_name].bytes

    def execute(sel):
        space, addresses, threads = plan.addresses(sel)
        n = len(addresses)
        a = np.broadcast_to(reads[0](sel), (n,))
        b = np.broadcast_to(reads[1](sel), (n,)) if len(reads) > 1 else None
        old = access(batch, instr, "atomic", space, addresses, threads, width, atomic=(op, ty, a, b))
        if write is not None:
            write(sel, old)
    return guarded(batch, instr, execute)


def _build_vector_atom(batch, instr: ir.Instr, op: str, dest, address, rest, count: int) -> Callable:
    """atom/red .v2/.v4/.v8 (sm_90 global float vectors): each element is its own atomic operation on
    consecutive elements; the vector as a whole must be aligned to its size, as a vector load's."""
    decoded = instr.decoded
    type_name = decoded.type
    sources = rest[0].items if len(rest) == 1 and isinstance(rest[0], ir.VecRef) else ()
    dests = dest.items if isinstance(dest, ir.VecRef) else ()
    if op == "cas" or len(sources) != count or (dest is not None and len(dests) != count):
        raise batch.lowering_error(instr, f"a .v{count} atomic takes {count} source registers"
                                          + (f" and {count} destinations" if dest is not None else ""))
    reads = [reader(batch, ref, type_name) for ref in sources]
    writes = [writer(batch, ref, type_name) for ref in dests]
    plan = AddressPlan(batch, instr, address, decoded.get("space", "generic"))
    observe = batch.observer
    size = TYPES[type_name].bytes
    width = size * count

    def execute(sel):
        space, addresses, threads = plan.addresses(sel)
        n = len(addresses)
        if observe is not None:
            observe.memory(batch, instr, "atomic", space, addresses, threads, width)
        misaligned = np.flatnonzero(memory_semantics.misaligned(addresses, width))
        if len(misaligned):
            lane = int(misaligned[0])
            fault = DeviceFault("misaligned", space, "atomic", width, int(addresses[lane]), lane,
                                f"Address {int(addresses[lane]):#x} is misaligned")
            raise batch.memory_fault(instr, fault, lane if threads is None else int(threads[lane]))
        for element, read in enumerate(reads):
            old = access(batch, instr, "atomic", space, addresses + np.uint64(element * size), threads, size,
                         atomic=(op, type_name, np.broadcast_to(read(sel), (n,)), None), tell=False)
            if writes:
                writes[element](sel, old)
    return guarded(batch, instr, execute)


# ---- warp-level: isa.warp computes, these gather each warp's 32 lanes and spread the results back ----

def _active_mask(batch, sel) -> np.ndarray:
    if sel is ALL:
        return np.ones(batch.n, dtype=bool)
    active = np.zeros(batch.n, dtype=bool)
    active[sel] = True
    return active


def _by_warp(batch, sel, values, dtype) -> np.ndarray:
    """The selected lanes' values laid out as (warps, 32), zero elsewhere."""
    spread = np.zeros(batch.n, dtype=dtype)
    spread[sel] = values
    return spread.reshape(-1, warp.WARP_SIZE)


def _spread(batch, per_warp: np.ndarray, sel):
    """Give each selected lane its warp's value."""
    if sel is ALL:
        return np.repeat(per_warp, warp.WARP_SIZE)
    return per_warp[lanes_of(sel, batch.n) >> 5]


def _member_masks(batch, instr: ir.Instr, position: int):
    """A function sel -> each lane's membermask laid out (warps, 32), for a .sync warp instruction whose
    membermask is operand `position`; None for the forms without one."""
    if len(instr.operands) <= position:
        return None
    read = reader(batch, instr.operands[position], "b32")
    return lambda sel: _by_warp(batch, sel, read(sel), np.uint32)


@builds("activemask", guards_itself=True)
def build_activemask(batch, instr: ir.Instr) -> Callable:
    write = writer(batch, instr.operands[0], "b32")
    activemask = semantics(instr.decoded)

    def execute(sel):
        write(sel, _spread(batch, activemask(_active_mask(batch, sel).reshape(-1, warp.WARP_SIZE)), sel))
    return guarded(batch, instr, execute)


@builds("vote", guards_itself=True)
def build_vote(batch, instr: ir.Instr) -> Callable:
    mode = instr.decoded.get("votemode")
    dest, pred_ref = instr.operands[0], instr.operands[1]
    read = reader(batch, pred_ref, "pred")
    write = writer(batch, dest, "b32" if mode == "ballot" else "pred")
    vote = semantics(instr.decoded)
    member_masks = _member_masks(batch, instr, 2)

    def execute(sel):
        active = _active_mask(batch, sel).reshape(-1, warp.WARP_SIZE)
        if member_masks is not None:
            result = vote(_by_warp(batch, sel, read(sel), bool), active, member_masks(sel))
            write(sel, result.reshape(-1)[sel])
            return
        result = vote(_by_warp(batch, sel, read(sel), bool), active)
        write(sel, _spread(batch, result, sel))
    return guarded(batch, instr, execute)


@builds("shfl", guards_itself=True)
def build_shfl(batch, instr: ir.Instr) -> Callable:
    source_of = semantics(instr.decoded)
    dest = instr.operands[0]
    a_ref, b_ref, c_ref = instr.operands[1:4]
    source = batch.regs[a_ref.reg.index] if isinstance(a_ref, ir.RegRef) else None
    read_a = reader(batch, a_ref, "b32")
    read_b = reader(batch, b_ref, "b32")
    read_c = reader(batch, c_ref, "b32")
    if isinstance(dest, ir.PredPairRef):
        write_d = writer(batch, dest.first, "b32")
        write_p = writer(batch, dest.second, "pred")
    else:
        write_d, write_p = writer(batch, dest, "b32"), None
    lane_ids = batch.lane_ids
    read_mask = reader(batch, instr.operands[4], "b32") if len(instr.operands) > 4 else None

    def execute(sel):
        lanes = lanes_of(sel, batch.n)
        lane = lane_ids[sel].astype(np.int64)
        source_lane, valid = source_of(lane, read_b(sel), read_c(sel))
        source_thread = lanes - lane + source_lane
        if source is not None:
            values = source[source_thread]
        else:
            values = np.broadcast_to(read_a(sel), lanes.shape)
        active = _active_mask(batch, sel)
        participates = warp.shfl_participates(active[source_thread], source_lane,
                                              None if read_mask is None else read_mask(sel))
        own = source[lanes] if source is not None else values
        write_d(sel, warp.shfl_value(values, own, valid, participates))
        if write_p is not None:
            write_p(sel, valid)
    return guarded(batch, instr, execute)


@builds("match", guards_itself=True)
def build_match(batch, instr: ir.Instr) -> Callable:
    decoded = instr.decoded
    mode = decoded.get("matchmode")
    dtype = TYPES[decoded.type].dtype
    dest = instr.operands[0]
    read = reader(batch, instr.operands[1], decoded.type)
    if isinstance(dest, ir.PredPairRef):
        write_d, write_p = writer(batch, dest.first, "b32"), writer(batch, dest.second, "pred")
    else:
        write_d, write_p = writer(batch, dest, "b32"), None
    match = semantics(decoded)
    member_masks = _member_masks(batch, instr, 2)

    def execute(sel):
        active = _active_mask(batch, sel).reshape(-1, warp.WARP_SIZE)
        masks, agree = match(_by_warp(batch, sel, read(sel), dtype), active,
                             member_masks(sel) if member_masks is not None else None)
        write_d(sel, masks.reshape(-1)[sel])
        if write_p is not None and mode == "all":
            write_p(sel, agree.reshape(-1)[sel])
    return guarded(batch, instr, execute)


@builds("redux", guards_itself=True)
def build_redux(batch, instr: ir.Instr) -> Callable:
    decoded = instr.decoded
    reduce = semantics(decoded)
    dtype = TYPES[decoded.type].dtype
    read = reader(batch, instr.operands[1], decoded.type)
    write = writer(batch, instr.operands[0], decoded.type)
    member_masks = _member_masks(batch, instr, 2)

    def execute(sel):
        active = _active_mask(batch, sel).reshape(-1, warp.WARP_SIZE)
        if member_masks is not None:
            write(sel, reduce(_by_warp(batch, sel, read(sel), dtype), active, member_masks(sel)).reshape(-1)[sel])
            return
        write(sel, _spread(batch, reduce(_by_warp(batch, sel, read(sel), dtype), active), sel))
    return guarded(batch, instr, execute)


@builds("elect", guards_itself=True)
def build_elect(batch, instr: ir.Instr) -> Callable:
    dest = instr.operands[0]
    if isinstance(dest, ir.PredPairRef):
        write_d, write_p = writer(batch, dest.first, "b32"), writer(batch, dest.second, "pred")
    else:
        write_d, write_p = None, writer(batch, dest, "pred")
    lane_ids = batch.lane_ids
    elect = semantics(instr.decoded)

    def execute(sel):
        leader = _spread(batch, elect(_active_mask(batch, sel).reshape(-1, warp.WARP_SIZE)), sel)
        if write_d is not None:
            write_d(sel, leader)
        write_p(sel, lane_ids[sel] == leader)
    return guarded(batch, instr, execute)


@builds("nop")
def build_nop(batch, instr: ir.Instr) -> Callable:
    return lambda sel: None




def build(batch, instr: ir.Instr) -> Callable:
    """The executor of a straight-line instruction, guard included."""
    builder = BUILDERS.get(instr.op_class)
    if builder is None:
        raise batch.lowering_error(instr, f"'{instr.opcode}' is not supported yet")
    execute = builder.build(batch, instr)
    return execute if builder.guards_itself else guarded(batch, instr, execute)
