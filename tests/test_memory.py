"""Memory system: allocator, host copies, every space and width, faults, atomics, per-warp counts."""
import struct

import numpy as np
import pytest

from emulator.memory import (GLOBAL_BASE, LOCAL_WINDOW, SHARED_WINDOW, WINDOW_SIZE, DeviceFault, Memory,
    RequestTotals, c_core_available, distinct_addresses, global_sectors, local_sectors, max_same_address,
    request_totals, shared_wavefronts)
from emulator.memory.spaces import GUARD_BYTES

BACKENDS = [
    pytest.param("c", marks=pytest.mark.skipif(not c_core_available(),
                                                reason="C core not built (python -m emulator.memory.build_core)")),
    "numpy",
]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


@pytest.fixture
def memory(backend):
    return Memory(backend=backend)


def u64(values):
    return np.asarray(values, dtype=np.uint64)


def fault_of(call):
    with pytest.raises(DeviceFault) as caught:
        call()
    return caught.value


# ---------------------------------------------------------------- allocator

def test_backend_attribute_names_the_core_in_use(memory, backend):
    assert memory.backend == backend


def test_first_allocation_sits_at_the_non_zero_global_base(memory):
    assert GLOBAL_BASE > 0x1_0000_0000
    assert memory.alloc(64) == GLOBAL_BASE


def test_allocations_honour_alignment_and_leave_guard_gaps(memory):
    spans = []
    for size, align in [(1, 256), (100, 4096), (4096, 256), (7, 1 << 16)]:
        address = memory.alloc(size, align=align)
        assert address % align == 0
        spans.append((address, size))
    for (first, size), (second, _) in zip(spans, spans[1:]):
        assert second - (first + size) >= GUARD_BYTES


def test_alloc_rejects_non_power_of_two_alignment_and_negative_size(memory):
    with pytest.raises(ValueError):
        memory.alloc(16, align=48)
    with pytest.raises(ValueError):
        memory.alloc(-1)
    with pytest.raises(ValueError):
        memory.alloc(16, kind="texture")


def test_allocations_list_kind_name_and_freed_state(memory):
    a = memory.alloc(32, name="x")
    b = memory.alloc(8, kind="const", name="coef")
    memory.free(a)
    listed = {item.address: item for item in memory.allocations()}
    assert (listed[a].size, listed[a].kind, listed[a].name, listed[a].freed) == (32, "global", "x", True)
    assert (listed[b].size, listed[b].kind, listed[b].name, listed[b].freed) == (8, "const", "coef", False)


def test_free_rejects_double_free_and_interior_addresses(memory):
    a = memory.alloc(64)
    with pytest.raises(ValueError):
        memory.free(a + 4)
    memory.free(a)
    with pytest.raises(ValueError):
        memory.free(a)


def test_new_allocation_is_zeroed_even_when_it_reuses_freed_storage(memory):
    a = memory.alloc(4096)
    memory.write(a, np.full(4096, 0xAB, dtype=np.uint8))
    memory.free(a)
    b = memory.alloc(4096)
    assert b != a
    assert not memory.read(b, 4096).any()



def test_reserving_room_keeps_live_data_and_later_allocations_start_zeroed(memory):
    a = memory.alloc(4096)
    memory.write(a, np.full(4096, 0x5A, dtype=np.uint8))
    scratch = memory.alloc(1 << 16)
    memory.write(scratch, np.full(1 << 16, 0xEE, dtype=np.uint8))
    memory.free(scratch)
    memory.reserve(8 << 20)
    b = memory.alloc(3 << 20)
    assert (memory.read(a, 4096) == 0x5A).all()
    assert not memory.read(b, 3 << 20).any()


# ---------------------------------------------------------------- host copies

def test_host_write_then_read_round_trips_bytes_and_arrays(memory):
    a = memory.alloc(64)
    memory.write(a, b"\x01\x02\x03")
    memory.write(a + 8, np.array([0x11223344], dtype=np.uint32))
    got = memory.read(a, 12)
    assert got.dtype == np.uint8
    assert got.tolist() == [1, 2, 3, 0, 0, 0, 0, 0, 0x44, 0x33, 0x22, 0x11]


def test_host_read_returns_a_copy(memory):
    a = memory.alloc(8)
    got = memory.read(a, 8)
    got[:] = 7
    assert not memory.read(a, 8).any()


def test_host_copy_outside_a_live_allocation_raises_with_the_location(memory):
    a = memory.alloc(16)
    with pytest.raises(ValueError, match="does not fit in a live allocation"):
        memory.write(a + 12, np.zeros(8, dtype=np.uint8))
    memory.free(a)
    with pytest.raises(ValueError):
        memory.read(a, 4)


def test_host_may_write_into_const_and_param_allocations(memory):
    for kind in ("const", "param"):
        a = memory.alloc(8, kind=kind)
        memory.write(a, np.array([3, 4], dtype=np.int32))
        assert memory.read(a, 8).view(np.int32).tolist() == [3, 4]


# ---------------------------------------------------------------- loads and stores

@pytest.mark.parametrize("width", [1, 2, 4, 8, 16])
def test_global_load_returns_each_lanes_little_endian_bytes(memory, width):
    pattern = (np.arange(256) * 7 % 251).astype(np.uint8)
    a = memory.alloc(256)
    memory.write(a, pattern)
    lanes = [3, 0, 5, 1]
    got = memory.load("global", u64([a + width * k for k in lanes]), None, width)
    assert got.shape == (4, width) and got.dtype == np.uint8
    for row, k in zip(got, lanes):
        assert bytes(row) == bytes(pattern[width * k:width * (k + 1)])


def test_load_of_a_word_reads_little_endian(memory):
    a = memory.alloc(8)
    memory.write(a, bytes([0x78, 0x56, 0x34, 0x12]))
    assert memory.load("global", u64([a]), None, 4).view(np.uint32)[0, 0] == 0x12345678


def _launch(memory, n_ctas=2, threads_per_cta=64, shared=256, local=128):
    memory.set_windows(n_ctas=n_ctas, threads_per_cta=threads_per_cta, shared_bytes=shared, local_bytes=local)


@pytest.mark.parametrize("width", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("space", ["global", "shared", "local", "generic-global", "generic-shared", "generic-local"])
def test_store_then_load_round_trips_in_every_space(memory, space, width):
    _launch(memory)
    a = memory.alloc(1024)
    threads = np.array([0, 1, 64, 127], dtype=np.int64)
    offsets = np.array([0, width, 4 * width, 2 * width], dtype=np.uint64)
    base = {"global": a, "shared": 0, "local": 0, "generic-global": a,
            "generic-shared": SHARED_WINDOW, "generic-local": LOCAL_WINDOW}[space]
    addr = u64(base) + offsets
    call_space = space.split("-")[0]
    data = (np.arange(4 * width) + 1).astype(np.uint8).reshape(4, width)
    memory.store(call_space, addr, threads, width, data)
    assert memory.load(call_space, addr, threads, width).tolist() == data.tolist()
    for lane in range(4):
        off = int(offsets[lane])
        if space.endswith("global"):
            host = memory.read(a + off, width)
        elif space.endswith("shared"):
            host = memory.shared_bytes(int(threads[lane]) // 64)[off:off + width]
        else:
            host = memory.local_bytes(int(threads[lane]))[off:off + width]
        assert host.tolist() == data[lane].tolist()


def test_generic_addresses_resolve_lane_by_lane(memory):
    _launch(memory, n_ctas=1, threads_per_cta=32, shared=64, local=16)
    a = memory.alloc(16)
    memory.write(a, np.array([111], dtype=np.uint32))
    memory.shared_bytes(0)[8:12] = np.frombuffer(np.uint32(222).tobytes(), dtype=np.uint8)
    memory.local_bytes(5)[4:8] = np.frombuffer(np.uint32(333).tobytes(), dtype=np.uint8)
    got = memory.load("generic", u64([SHARED_WINDOW + 8, a, LOCAL_WINDOW + 4]), np.array([3, 9, 5]), 4)
    assert got.view(np.uint32).ravel().tolist() == [222, 111, 333]


def test_each_cta_sees_its_own_shared_window(memory):
    _launch(memory, n_ctas=3, threads_per_cta=32, shared=16)
    threads = np.array([0, 32, 64], dtype=np.int64)
    memory.store("shared", u64([4, 4, 4]), threads, 4, np.array([10, 20, 30], dtype=np.uint32))
    for cta, value in enumerate([10, 20, 30]):
        assert memory.shared_bytes(cta)[4:8].view(np.uint32)[0] == value


def test_each_thread_sees_its_own_local_window(memory):
    _launch(memory, n_ctas=1, threads_per_cta=4, shared=0, local=8)
    memory.store("local", u64([0, 0, 0, 0]), None, 8, np.array([5, 6, 7, 8], dtype=np.uint64))
    assert [memory.local_bytes(t).view(np.uint64)[0] for t in range(4)] == [5, 6, 7, 8]


def test_windows_are_zero_filled_on_every_launch(memory):
    _launch(memory, n_ctas=1, threads_per_cta=32, shared=16, local=16)
    memory.store("shared", u64([0]), None, 4, np.array([9], dtype=np.uint32))
    _launch(memory, n_ctas=1, threads_per_cta=32, shared=16, local=16)
    assert not memory.shared_bytes(0).any()


def test_shared_bytes_view_is_writable_and_seen_by_loads(memory):
    _launch(memory, n_ctas=2, threads_per_cta=32, shared=32)
    memory.shared_bytes(1)[0:4] = [1, 2, 3, 4]
    assert memory.load("shared", u64([0]), np.array([40]), 4).tolist() == [[1, 2, 3, 4]]


def test_duplicate_store_addresses_keep_the_highest_lanes_value(memory):
    a = memory.alloc(64)
    addr = u64([a, a + 4, a, a + 4, a, a + 8])
    memory.store("global", addr, None, 4, np.array([1, 2, 3, 4, 5, 6], dtype=np.uint32))
    assert memory.read(a, 12).view(np.uint32).tolist() == [5, 4, 6]


def test_store_accepts_any_dtype_holding_n_times_width_bytes(memory):
    a = memory.alloc(64)
    memory.store("global", u64([a, a + 16]), None, 16, np.arange(8, dtype=np.uint32).reshape(2, 4))
    memory.store("global", u64([a + 32]), None, 8, np.array([1.5]))
    assert memory.read(a, 32).view(np.uint32).tolist() == list(range(8))
    assert memory.read(a + 32, 8).view(np.float64)[0] == 1.5
    with pytest.raises(ValueError):
        memory.store("global", u64([a]), None, 8, np.zeros(1, dtype=np.uint32))


def test_empty_lane_vectors_are_accepted(memory):
    assert memory.load("global", u64([]), None, 4).shape == (0, 4)
    memory.store("global", u64([]), None, 4, np.zeros(0, dtype=np.uint32))
    assert memory.atomic("global", "add", "u32", u64([]), None, 1).size == 0


def test_bad_width_space_and_thread_are_caller_errors(memory):
    a = memory.alloc(16)
    with pytest.raises(ValueError):
        memory.load("global", u64([a]), None, 3)
    with pytest.raises(ValueError):
        memory.load("texture", u64([a]), None, 4)
    _launch(memory, n_ctas=1, threads_per_cta=32)
    with pytest.raises(IndexError):
        memory.load("shared", u64([0]), np.array([32]), 4)
    with pytest.raises(ValueError):
        memory.load("global", u64([a, a]), np.array([0]), 4)


# ---------------------------------------------------------------- faults

def test_out_of_bounds_global_fault_reads_like_compute_sanitizer(memory):
    a = memory.alloc(65536)
    bad = a + 0x1000000
    fault = fault_of(lambda: memory.store("global", u64([a, a + 4, bad, a + 65536]), None, 4,
                                          np.zeros(4, dtype=np.uint32)))
    assert (fault.kind, fault.space, fault.op, fault.width, fault.lane, fault.address) == \
        ("out_of_bounds", "global", "store", 4, 2, bad)
    assert fault.detail == (f"Access to {bad:#x} is out of bounds\n"
                            f"and is 16,711,681 bytes after the nearest allocation at {a:#x} of size 65,536 bytes")
    assert str(fault).startswith("Invalid __global__ write of size 4 bytes")


def test_access_just_before_an_allocation_counts_bytes_before(memory):
    a = memory.alloc(64)
    fault = fault_of(lambda: memory.load("global", u64([a - 4]), None, 4))
    assert fault.kind == "out_of_bounds"
    assert fault.detail.endswith(f"and is 4 bytes before the nearest allocation at {a:#x} of size 64 bytes")


def test_access_straddling_the_end_is_out_of_bounds_inside_the_allocation(memory):
    a = memory.alloc(6)
    fault = fault_of(lambda: memory.load("global", u64([a, a + 4]), None, 4))
    assert (fault.kind, fault.lane) == ("out_of_bounds", 1)
    assert fault.detail == (f"Access to {a + 4:#x} is out of bounds\n"
                            f"and is inside the nearest allocation at {a:#x} of size 6 bytes")


def test_guard_gap_between_allocations_faults(memory):
    a = memory.alloc(64)
    memory.alloc(64)
    fault = fault_of(lambda: memory.load("global", u64([a + 64]), None, 4))
    assert fault.kind == "out_of_bounds"
    assert "1 bytes after the nearest allocation" in fault.detail


def test_misaligned_global_access_names_the_enclosing_allocation(memory):
    a = memory.alloc(64)
    fault = fault_of(lambda: memory.load("global", u64([a + 1]), None, 4))
    assert (fault.kind, fault.space) == ("misaligned", "global")
    assert fault.detail == (f"Access to {a + 1:#x} is misaligned\n"
                            f"and is inside the nearest allocation at {a:#x} of size 64 bytes")


@pytest.mark.parametrize("width", [2, 4, 8, 16])
def test_every_wider_access_must_be_aligned_to_its_width(memory, width):
    a = memory.alloc(64)
    assert fault_of(lambda: memory.load("global", u64([a + width // 2]), None, width)).kind == "misaligned"


def test_null_pointer_access_is_its_own_kind(memory):
    a = memory.alloc(64)
    fault = fault_of(lambda: memory.load("global", u64([0x10]), None, 4))
    assert (fault.kind, fault.space, fault.address) == ("null", "global", 0x10)
    assert fault.detail == (f"Access to 0x10 is out of bounds\n"
                            f"and is {a - 0x10:,} bytes before the nearest allocation at {a:#x} of size 64 bytes")


def test_freed_allocation_faults_as_freed(memory):
    live = memory.alloc(64)
    gone = memory.alloc(256)
    memory.free(gone)
    fault = fault_of(lambda: memory.load("global", u64([gone + 12]), None, 4))
    assert (fault.kind, fault.lane) == ("freed", 0)
    distance = gone + 12 - (live + 63)
    assert fault.detail.endswith(f"and is {distance:,} bytes after the nearest allocation at {live:#x} of size 64 bytes")


@pytest.mark.parametrize("kind", ["const", "param"])
def test_kernels_may_read_but_not_write_const_and_param(memory, kind):
    a = memory.alloc(16, kind=kind)
    memory.write(a, np.array([42], dtype=np.uint32))
    assert memory.load("global", u64([a]), None, 4).view(np.uint32)[0, 0] == 42
    store_fault = fault_of(lambda: memory.store("global", u64([a]), None, 4, np.zeros(1, dtype=np.uint32)))
    atomic_fault = fault_of(lambda: memory.atomic("generic", "add", "u32", u64([a]), None, 1))
    assert (store_fault.kind, atomic_fault.kind, atomic_fault.op) == ("read_only", "read_only", "atomic")
    assert memory.read(a, 4).view(np.uint32)[0] == 42


def test_param_and_const_buffers_are_never_named_as_the_nearest_allocation(memory):
    # compute-sanitizer knows only user allocations: the parameter buffer and the __constant__ bank
    # sit next to them in gpuemu's global space but must not appear in a fault outside them.
    user = memory.alloc(64)
    const = memory.alloc(64, kind="const")
    param = memory.alloc(32, kind="param")
    for near in (const + 64, param - 8, param + 40):
        fault = fault_of(lambda near=near: memory.load("global", u64([near]), None, 4))
        assert fault.kind == "out_of_bounds"
        assert f"the nearest allocation at {user:#x} of size 64 bytes" in fault.detail
        assert memory.describe(near).endswith(f"after the nearest allocation at {user:#x} of size 64 bytes")
    inside = fault_of(lambda: memory.store("global", u64([param + 4]), None, 4, np.zeros(1, dtype=np.uint32)))
    assert inside.kind == "read_only"
    assert inside.detail == (f"Access to {param + 4:#x} is read-only\n"
                             f"and is inside the nearest allocation at {param:#x} of size 32 bytes")


def test_a_fault_with_only_param_and_const_buffers_around_names_no_allocation():
    memory = Memory(backend="numpy")
    param = memory.alloc(32, kind="param")
    memory.alloc(16, kind="const")
    assert memory.describe(param + 4096) == f"Access to {param + 4096:#x} is out of bounds"
    assert memory.describe(param).endswith(f"inside the nearest allocation at {param:#x} of size 32 bytes")


def test_shared_out_of_bounds_reports_the_window_offset_only(memory):
    _launch(memory, n_ctas=1, threads_per_cta=32, shared=256)
    fault = fault_of(lambda: memory.store("shared", u64([252, 256]), None, 4, np.zeros(2, dtype=np.uint32)))
    assert (fault.kind, fault.space, fault.lane, fault.detail) == \
        ("out_of_bounds", "shared", 1, "Access to 0x100 is out of bounds")


@pytest.mark.parametrize("space, width", [("shared", 4), ("shared", 8), ("local", 4), ("local", 8)])
def test_window_store_with_one_faulting_lane_writes_no_lane(memory, space, width):
    _launch(memory, n_ctas=2, threads_per_cta=32, shared=256, local=64)
    limit = 256 if space == "shared" else 64
    threads = np.array([0, 1, 33, 34])
    offsets = u64([0, width, 2 * width, limit])
    fault = fault_of(lambda: memory.store(space, offsets, threads, width, np.full(4 * width, 0xAB, dtype=np.uint8)))
    assert (fault.kind, fault.lane) == ("out_of_bounds", 3)
    assert not memory.load(space, offsets[:3], threads[:3], width).any()


def test_shared_misaligned_access(memory):
    _launch(memory, n_ctas=1, threads_per_cta=32, shared=256)
    fault = fault_of(lambda: memory.load("shared", u64([2]), None, 4))
    assert (fault.kind, fault.detail) == ("misaligned", "Access to 0x2 is misaligned")


def test_generic_fault_names_the_resolved_space_and_the_programs_address(memory):
    _launch(memory, n_ctas=1, threads_per_cta=32, shared=64, local=32)
    shared_fault = fault_of(lambda: memory.load("generic", u64([SHARED_WINDOW + 64]), None, 4))
    local_fault = fault_of(lambda: memory.load("generic", u64([LOCAL_WINDOW + WINDOW_SIZE - 4]), None, 4))
    assert (shared_fault.space, shared_fault.address) == ("shared", SHARED_WINDOW + 64)
    assert (local_fault.space, local_fault.kind) == ("local", "out_of_bounds")


def test_explicit_global_space_does_not_see_the_shared_window(memory):
    _launch(memory, n_ctas=1, threads_per_cta=32, shared=64)
    assert fault_of(lambda: memory.load("global", u64([SHARED_WINDOW]), None, 4)).space == "global"


def test_the_lowest_faulting_lane_is_reported(memory):
    a = memory.alloc(64)
    addr = u64([a, a + 64, a + 4, a + 2])
    fault = fault_of(lambda: memory.load("global", addr, None, 4))
    assert (fault.lane, fault.kind) == (1, "out_of_bounds")


def test_a_faulting_store_or_atomic_changes_no_memory(memory):
    _launch(memory, n_ctas=1, threads_per_cta=32, shared=64)
    a = memory.alloc(64)
    with pytest.raises(DeviceFault):
        memory.store("generic", u64([a, SHARED_WINDOW, a + 128]), None, 4, np.full(3, 7, dtype=np.uint32))
    with pytest.raises(DeviceFault):
        memory.atomic("generic", "add", "u32", u64([a, SHARED_WINDOW, a + 1]), None, 5)
    assert not memory.read(a, 64).any()
    assert not memory.shared_bytes(0).any()


# ---------------------------------------------------------------- atomics

def test_32_lanes_adding_one_to_one_word_get_old_values_0_to_31(memory):
    a = memory.alloc(4)
    old = memory.atomic("global", "add", "u32", u64([a] * 32), None, 1)
    assert old.dtype == np.uint32
    assert old.tolist() == list(range(32))
    assert memory.read(a, 4).view(np.uint32)[0] == 32


def _python_integer_atomic(op, ty, old, a, b):
    """Reference semantics straight from the PTX ISA's atom definition, on Python integers."""
    bits = 64 if ty.endswith("64") else 32
    mask = (1 << bits) - 1

    def signed(v):
        return v - (1 << bits) if ty.startswith("s") and v >> (bits - 1) else v

    if op == "add":
        return (old + a) & mask
    if op == "exch":
        return a
    if op == "cas":
        return b if old == a else old
    if op == "min":
        return a if signed(a) < signed(old) else old
    if op == "max":
        return a if signed(a) > signed(old) else old
    if op == "inc":
        return 0 if old >= a else (old + 1) & mask
    if op == "dec":
        return a if old == 0 or old > a else old - 1
    return {"and": old & a, "or": old | a, "xor": old ^ a}[op]


@pytest.mark.parametrize("ty", ["b32", "u32", "s32", "b64", "u64", "s64"])
@pytest.mark.parametrize("op", ["add", "exch", "cas", "min", "max", "inc", "dec", "and", "or", "xor"])
def test_integer_atomics_apply_lane_by_lane_like_the_ptx_definition(memory, op, ty):
    rng = np.random.default_rng(sum(map(ord, op + ty)))
    bits = 64 if ty.endswith("64") else 32
    width = bits // 8
    word_dtype = np.uint64 if bits == 64 else np.uint32
    a_mem = memory.alloc(8 * width)
    initial = [int(v) for v in rng.integers(0, 1 << bits, size=8, dtype=np.uint64)]
    initial[1], initial[2] = 0, 5
    memory.write(a_mem, np.array(initial, dtype=np.uint64).astype(word_dtype))
    n = 70
    words = rng.integers(0, 8, size=n)
    words[:40] = words[:40] % 3
    small = rng.integers(0, 9, size=n, dtype=np.uint64)
    large = rng.integers(0, 1 << bits, size=n, dtype=np.uint64)
    a_values = np.where(rng.random(n) < 0.5, small, large).astype(word_dtype)
    b_values = rng.integers(0, 1 << bits, size=n, dtype=np.uint64).astype(word_dtype)
    if op == "cas":
        a_values[::3] = np.array(initial, dtype=np.uint64).astype(word_dtype)[words[::3]]
    addr = u64(a_mem + width * words)
    state = list(initial)
    expected_old = []
    for lane in range(n):
        w = int(words[lane])
        expected_old.append(state[w])
        state[w] = _python_integer_atomic(op, ty, state[w], int(a_values[lane]), int(b_values[lane]))
    dtype = np.dtype({"s32": np.int32, "s64": np.int64}.get(ty, word_dtype))
    old = memory.atomic("global", op, ty, addr, None, a_values, b_values if op == "cas" else None)
    assert old.dtype == dtype
    assert old.view(word_dtype).tolist() == expected_old
    assert memory.read(a_mem, 8 * width).view(word_dtype).tolist() == state


def test_contended_cas_lets_only_the_first_lane_swap(memory):
    a = memory.alloc(4)
    old = memory.atomic("global", "cas", "b32", u64([a] * 32), None, 0, np.arange(1, 33, dtype=np.uint32))
    assert old.tolist() == [0] + [1] * 31
    assert memory.read(a, 4).view(np.uint32)[0] == 1


def test_contended_inc_wraps_at_its_limit_and_dec_reloads(memory):
    a = memory.alloc(8)
    old_inc = memory.atomic("global", "inc", "u32", u64([a] * 10), None, 3)
    old_dec = memory.atomic("global", "dec", "u32", u64([a + 4] * 7), None, 2)
    assert old_inc.tolist() == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]
    assert old_dec.tolist() == [0, 2, 1, 0, 2, 1, 0]
    assert memory.read(a, 8).view(np.uint32).tolist() == [2, 2]


def test_signedness_decides_min_and_max(memory):
    a = memory.alloc(8)
    memory.write(a, np.array([-1, -1], dtype=np.int32))
    memory.atomic("global", "min", "s32", u64([a]), None, 5)
    memory.atomic("global", "min", "u32", u64([a + 4]), None, 5)
    assert memory.read(a, 8).view(np.int32).tolist() == [-1, 5]


def test_shared_atomics_go_to_each_lanes_cta(memory):
    _launch(memory, n_ctas=2, threads_per_cta=32, shared=16)
    old = memory.atomic("generic", "add", "s32", u64([SHARED_WINDOW + 4] * 64), None, -1)
    assert old.tolist() == [-k for k in range(32)] * 2
    assert [memory.shared_bytes(c)[4:8].view(np.int32)[0] for c in range(2)] == [-32, -32]


def test_atomic_operands_accept_raw_bits_and_scalars(memory):
    a = memory.alloc(8)
    memory.atomic("global", "exch", "f32", u64([a]), None, np.array([0x3F800000], dtype=np.uint32))
    memory.atomic("global", "add", "f32", u64([a]), None, 0.5)
    assert memory.read(a, 4).view(np.float32)[0] == 1.5


def test_atomic_rejects_ops_the_type_does_not_have(memory):
    a = memory.alloc(8)
    for op, ty in [("and", "f32"), ("inc", "f16x2"), ("min", "f64"), ("add", "b16")]:
        with pytest.raises(ValueError):
            memory.atomic("global", op, ty, u64([a]), None, 1)
    with pytest.raises(ValueError):
        memory.atomic("global", "cas", "b32", u64([a]), None, 1)


# Vectors read off an H100 (driver 580): (stored word, added word, word afterwards).
H100_F32_ADD_GLOBAL_FTZ = [
    (0x7FC00001, 0x3F800000, 0x7FFFFFFF), (0x3F800000, 0x7FC00002, 0x7FFFFFFF),
    (0x7F800000, 0xFF800000, 0x7FFFFFFF), (0x00000001, 0x00000000, 0x00000000),
    (0x00000000, 0x00000001, 0x00000000), (0x00C00000, 0x80800000, 0x00000000),
    (0x80000000, 0x80000000, 0x80000000), (0x00000000, 0x80000000, 0x00000000),
    (0x3F800000, 0x33800000, 0x3F800000), (0xFFC01234, 0x3F800000, 0x7FFFFFFF),
    (0x00400000, 0x00400000, 0x00000000), (0x80000000, 0x00000000, 0x00000000),
    (0x80000001, 0x00000000, 0x00000000), (0x00000000, 0x80000001, 0x00000000),
    (0x80000003, 0x80000000, 0x80000000), (0x7F7FFFFF, 0x7F7FFFFF, 0x7F800000),
]
H100_F32_ADD_SHARED = [
    (0x7FC00001, 0x3F800000, 0x7FFFFFFF), (0x3F800000, 0x7FC00002, 0x7FFFFFFF),
    (0x7F800000, 0xFF800000, 0x7FFFFFFF), (0x00000001, 0x00000000, 0x00000001),
    (0x00000000, 0x00000001, 0x00000001), (0x00C00000, 0x80800000, 0x00400000),
    (0x80000000, 0x80000000, 0x80000000), (0x00000000, 0x80000000, 0x00000000),
    (0x3F800000, 0x33800000, 0x3F800000), (0xFFC01234, 0x3F800000, 0x7FFFFFFF),
    (0x00400000, 0x00400000, 0x00800000), (0x80000000, 0x00000000, 0x00000000),
]
H100_F64_ADD = [
    (0x7FF8000000000001, 0x3FF0000000000000, 0x7FF8000000000001),
    (0x3FF0000000000000, 0x7FF8000000000002, 0x7FF8000000000002),
    (0x7FF0000000000000, 0xFFF0000000000000, 0xFFF8000000000000),
    (0x0000000000000001, 0x0000000000000001, 0x0000000000000002),
    (0xFFF8000000001234, 0x3FF0000000000000, 0xFFF8000000001234),
    (0x7FF8000000000001, 0x7FF8000000000002, 0x7FF8000000000002),
    (0x7FF0000000000001, 0x7FF8000000000003, 0x7FF8000000000003),
    (0x3FF0000000000000, 0x7FF0000000000004, 0x7FF0000000000004),
    (0x7FF0000000000005, 0x3FF0000000000000, 0x7FF0000000000005),
    (0xFFF0000000000000, 0x7FF0000000000000, 0xFFF8000000000000),
]
_F16_IN = [0x3C007E01, 0x7C00FC00, 0x00010001, 0x80000000, 0x3C000000, 0x7E017E02, 0x7BFF3C00, 0x80010001,
           0x7E017D02, 0x7C017FFF, 0x7D007E00, 0xFE01FD00]
_F16_OP = [0x7E023C00, 0xFC007C00, 0x00018000, 0x00008000, 0x7E00FE00, 0x3C003C00, 0x7BFF1001, 0x00018001,
           0x7E037D04, 0x7C02FFFF, 0x7E00FC01, 0x7E027C05]
_BF16_IN = [0x3F807FC1, 0x7F80FF80, 0x00010001, 0x80000000, 0x3F800000, 0x7FC17FC2, 0x7F7F3F80, 0x80010001,
            0x7FC17F81, 0x7F817FFF, 0x7FA07FC0, 0xFFC1FFA0]
_BF16_OP = [0x7FC23F80, 0xFF807F80, 0x00018000, 0x00008000, 0x7FC0FFC0, 0x3F803F80, 0x7F7F3B81, 0x00018001,
            0x7FC37F82, 0x7F82FFFF, 0x7FC0FF81, 0x7FC27F85]
_ALL_NAN = [0x7FFF7FFF] * 4
H100_PACKED = {
    ("add", "f16x2"): (_F16_IN, _F16_OP, [0x7FFF7FFF, 0x7FFF7FFF, 0x00020001, 0x00000000, 0x7FFF7FFF, 0x7FFF7FFF,
                                         0x7C003C01, 0x00000000] + _ALL_NAN),
    ("add", "bf16x2"): (_BF16_IN, _BF16_OP, [0x7FFF7FFF, 0x7FFF7FFF, 0x00020001, 0x00000000, 0x7FFF7FFF,
                                            0x7FFF7FFF, 0x7F803F81, 0x00000000] + _ALL_NAN),
    ("min", "f16x2"): (_F16_IN, _F16_OP, [0x3C003C00, 0xFC00FC00, 0x00018000, 0x80008000, 0x3C000000, 0x3C003C00,
                                         0x7BFF1001, 0x80018001] + _ALL_NAN),
    ("max", "f16x2"): (_F16_IN, _F16_OP, [0x3C003C00, 0x7C007C00, 0x00010001, 0x00000000, 0x3C000000, 0x3C003C00,
                                         0x7BFF3C00, 0x00010001] + _ALL_NAN),
    ("min", "bf16x2"): (_BF16_IN, _BF16_OP, [0x3F803F80, 0xFF80FF80, 0x00018000, 0x80008000, 0x3F800000,
                                            0x3F803F80, 0x7F7F3B81, 0x80018001] + _ALL_NAN),
    ("max", "bf16x2"): (_BF16_IN, _BF16_OP, [0x3F803F80, 0x7F807F80, 0x00010001, 0x00000000, 0x3F800000,
                                            0x3F803F80, 0x7F7F3F80, 0x00010001] + _ALL_NAN),
}


def _run_vectors(memory, space, op, ty, vectors):
    word = {"f64": np.uint64, "f16": np.uint16, "bf16": np.uint16, "b16": np.uint16}.get(ty, np.uint32)
    initial, operand, expected = (np.array(column, dtype=word) for column in zip(*vectors))
    n = initial.size
    width = np.dtype(word).itemsize
    if space in ("shared", "generic-shared"):
        _launch(memory, n_ctas=1, threads_per_cta=64, shared=n * width)
        memory.shared_bytes(0)[:] = initial.view(np.uint8)
        addr = u64(width * np.arange(n) + (SHARED_WINDOW if space == "generic-shared" else 0))
    else:
        base = memory.alloc(n * width)
        memory.write(base, initial)
        addr = u64(base + width * np.arange(n))
    old = memory.atomic(space.split("-")[0], op, ty, addr, None, operand)
    after = memory.shared_bytes(0) if space.endswith("shared") else memory.read(int(addr[0]), n * width)
    return old.view(word), after.view(word), initial, expected


def _hex(values):
    return [f"{int(v):#x}" for v in values]


@pytest.mark.parametrize("space", ["global", "generic-global"])
def test_f32_atomic_add_on_global_memory_flushes_like_h100_global_atomics(memory, space):
    old, after, initial, expected = _run_vectors(memory, space, "add", "f32", H100_F32_ADD_GLOBAL_FTZ)
    assert _hex(old) == _hex(initial)
    assert _hex(after) == _hex(expected)


@pytest.mark.parametrize("space", ["shared", "generic-shared"])
def test_f32_atomic_add_on_shared_memory_keeps_subnormals_like_h100_shared_atomics(memory, space):
    _, after, _, expected = _run_vectors(memory, space, "add", "f32", H100_F32_ADD_SHARED)
    assert _hex(after) == _hex(expected)


def test_the_ftz_keyword_is_ignored_because_the_space_decides(memory):
    _launch(memory, n_ctas=1, threads_per_cta=64, shared=16)
    memory.atomic("shared", "add", "f32", u64([0]), None, np.uint32(0x00000001), ftz=True)
    assert memory.shared_bytes(0)[:4].view(np.uint32)[0] == 0x00000001
    a = memory.alloc(4)
    memory.atomic("global", "add", "f32", u64([a]), None, np.uint32(0x00000001), ftz=False)
    assert memory.read(a, 4).view(np.uint32)[0] == 0


def test_one_generic_f32_atomic_flushes_its_global_lanes_and_keeps_its_shared_ones(memory):
    # atom_add_f32_generic_global flushes, atom_add_f32_generic_shared does not: the rule is per lane.
    _launch(memory, n_ctas=1, threads_per_cta=64, shared=64)
    a = memory.alloc(64)
    addr = u64([a, SHARED_WINDOW, a + 4, SHARED_WINDOW + 4])
    old = memory.atomic("generic", "add", "f32", addr, None, np.array([0x00400000, 0x00400000, 0x00000001,
                                                                       0x00000001], dtype=np.uint32))
    assert _hex(old.view(np.uint32)) == _hex([0, 0, 0, 0])
    assert _hex(memory.read(a, 8).view(np.uint32)) == _hex([0, 0])
    assert _hex(memory.shared_bytes(0)[:8].view(np.uint32)) == _hex([0x00400000, 0x00000001])


def test_f64_atomic_add_nan_and_payload_rules_match_h100(memory):
    _, after, _, expected = _run_vectors(memory, "global", "add", "f64", H100_F64_ADD)
    assert _hex(after) == _hex(expected)


# Rows of probes atom_shared_add_f64 / atom_global_add_f64 (stored, added, shared result, global result):
# shared memory quiets and prefers the stored NaN; global memory returns the added NaN unchanged.
H100_F64_ADD_BY_SPACE = [
    (0x0000000000000000, 0x7FF0000000000001, 0x7FF8000000000001, 0x7FF0000000000001),
    (0x7FF0000000000001, 0x3FF0000000000000, 0x7FF8000000000001, 0x7FF0000000000001),
    (0x7FF0000000000001, 0x7FF8000000000000, 0x7FF8000000000001, 0x7FF8000000000000),
    (0x7FF0000000000001, 0xFFF8000000000005, 0x7FF8000000000001, 0xFFF8000000000005),
    (0x7FF8000000000000, 0x7FF0000000000001, 0x7FF8000000000000, 0x7FF0000000000001),
    (0xFFF8000000000005, 0x7FF0000000000001, 0xFFF8000000000005, 0x7FF0000000000001),
    (0xFFF8000000000005, 0x7FF8000000000000, 0xFFF8000000000005, 0x7FF8000000000000),
    (0x7FF0000000000000, 0xFFF0000000000000, 0xFFF8000000000000, 0xFFF8000000000000),
    (0x3FF0000000000000, 0x4008000000000000, 0x4010000000000000, 0x4010000000000000),
]


@pytest.mark.parametrize("space", ["shared", "generic-shared", "global", "generic-global"])
def test_f64_atomic_add_nan_rule_depends_on_the_space_as_on_h100(memory, space):
    column = 2 if space.endswith("shared") else 3
    vectors = [(row[0], row[1], row[column]) for row in H100_F64_ADD_BY_SPACE]
    old, after, initial, expected = _run_vectors(memory, space, "add", "f64", vectors)
    assert _hex(old) == _hex(initial)
    assert _hex(after) == _hex(expected)


def test_contended_shared_f64_adds_keep_the_first_nan_quieted(memory):
    _launch(memory, n_ctas=1, threads_per_cta=64, shared=8)
    for count in (8, 45):  # short groups run lane rounds, long ones the chained path
        bits = np.array([1.0] * count, dtype=np.float64).view(np.uint64).copy()
        bits[3], bits[5] = 0x7FF0000000000007, 0x7FF8000000000009
        memory.shared_bytes(0)[:8] = np.array([0.5]).view(np.uint8)
        old = memory.atomic("shared", "add", "f64", u64([0] * count), None, bits)
        expected = [0x3FE0000000000000, 0x3FF8000000000000, 0x4004000000000000, 0x400C000000000000] \
            + [0x7FF8000000000007] * (count - 4)
        assert _hex(old.view(np.uint64)) == _hex(expected)
        assert memory.shared_bytes(0)[:8].view(np.uint64)[0] == 0x7FF8000000000007
    memory.shared_bytes(0)[:8] = np.array([0x7FF0000000000003], dtype=np.uint64).view(np.uint8)
    old = memory.atomic("shared", "add", "f64", u64([0] * 40), None, np.float64(1.0))
    assert _hex(old.view(np.uint64)) == _hex([0x7FF0000000000003] + [0x7FF8000000000003] * 39)
    memory.shared_bytes(0)[:8] = np.array([np.inf]).view(np.uint8)
    values = np.array([1.0] * 40, dtype=np.float64)
    values[2] = -np.inf
    memory.atomic("shared", "add", "f64", u64([0] * 40), None, values)
    assert memory.shared_bytes(0)[:8].view(np.uint64)[0] == 0xFFF8000000000000


@pytest.mark.parametrize("op,ty", sorted(H100_PACKED))
def test_packed_half_atomics_match_h100(memory, op, ty):
    vectors = list(zip(*H100_PACKED[(op, ty)]))
    _, after, _, expected = _run_vectors(memory, "global", op, ty, vectors)
    assert _hex(after) == _hex(expected)


# Rows of probes atom_{global,shared}_add_noftz_{f16,bf16} (stored, added, result; both spaces agree):
# no flushing (.noftz), canonical NaN 0x7FFF, round to nearest even, overflow to infinity.
H100_HALF_ADD = {
    "f16": [(0x0001, 0x0001, 0x0002), (0x0001, 0x8001, 0x0000), (0x0001, 0x03FF, 0x0400),
            (0x03FF, 0x8400, 0x8001), (0x0000, 0x7E00, 0x7FFF), (0x0000, 0xFE05, 0x7FFF),
            (0x0000, 0x7C01, 0x7FFF), (0x8000, 0x7C00, 0x7C00), (0x7C00, 0xFC00, 0x7FFF),
            (0x7BFF, 0x7BFF, 0x7C00), (0x3C00, 0x1000, 0x3C00), (0x03C5, 0x3B1E, 0x3B1E)],
    "bf16": [(0x0001, 0x0001, 0x0002), (0x0001, 0x8001, 0x0000), (0x0001, 0x007F, 0x0080),
             (0x007F, 0x8080, 0x8001), (0x0000, 0x7FC0, 0x7FFF), (0x0000, 0xFFC5, 0x7FFF),
             (0x0000, 0x7F81, 0x7FFF), (0x8000, 0x7F80, 0x7F80), (0x7F80, 0xFF80, 0x7FFF),
             (0x7F7F, 0x7F7F, 0x7F80), (0x3F46, 0x404F, 0x4080), (0xBFA0, 0x3FAE, 0x3DE0)],
}


@pytest.mark.parametrize("space", ["global", "shared", "generic-global", "generic-shared"])
@pytest.mark.parametrize("ty", ["f16", "bf16"])
def test_scalar_half_atomic_add_matches_h100(memory, ty, space):
    old, after, initial, expected = _run_vectors(memory, space, "add", ty, H100_HALF_ADD[ty])
    assert old.dtype == np.uint16 and after.dtype == np.uint16
    assert _hex(old) == _hex(initial)
    assert _hex(after) == _hex(expected)


def test_scalar_half_atomics_touch_only_their_two_bytes(memory):
    a = memory.alloc(8)
    memory.write(a, np.array([0x3C00, 0x3C00, 0x3C00, 0x3C00], dtype=np.uint16))
    old = memory.atomic("global", "add", "f16", u64([a + 2, a + 2, a + 6]), None,
                        np.array([0x3C00, 0x4000, 0xBC00], dtype=np.uint16))
    assert _hex(old) == _hex([0x3C00, 0x4000, 0x3C00])
    assert _hex(memory.read(a, 8).view(np.uint16)) == _hex([0x3C00, 0x4400, 0x3C00, 0x0000])


@pytest.mark.parametrize("ty,one", [("f16", 0x3C00), ("bf16", 0x3F80)])
def test_contended_half_adds_apply_in_lane_order(memory, ty, one):
    _launch(memory, n_ctas=1, threads_per_cta=64, shared=16)
    for space, base in (("global", memory.alloc(2)), ("shared", 0)):
        old = memory.atomic(space, "add", ty, u64([base] * 64), None, np.uint16(one))
        expected = [int(fp_bits) for fp_bits in _half_counts(ty, 65)]
        assert _hex(old) == _hex(expected[:64])
        after = memory.read(base, 2) if space == "global" else memory.shared_bytes(0)[:2]
        assert _hex(after.view(np.uint16)) == _hex(expected[64:])


def _half_counts(ty, n):
    values = np.arange(n, dtype=np.float32)
    if ty == "f16":
        return values.astype(np.float16).view(np.uint16)
    return (values.view(np.uint32) >> 16).astype(np.uint16)


@pytest.mark.parametrize("ty", ["f16", "bf16"])
def test_scalar_half_min_max_use_the_packed_halves_rules(memory, ty):
    nan, one, minus_two = (0x7E00, 0x3C00, 0xC000) if ty == "f16" else (0x7FC0, 0x3F80, 0xC000)
    for op, packed in (("min", f"{ty}x2"), ("max", f"{ty}x2")):
        stored = [one, nan, minus_two, 0x8000, nan]
        operand = [minus_two, one, nan, 0x0000, nan]
        _, after, _, _ = _run_vectors(memory, "global", op, ty, list(zip(stored, operand, stored)))
        _, after_packed, _, _ = _run_vectors(memory, "global", op, packed, list(zip(stored, operand, stored)))
        assert _hex(after) == _hex(after_packed & np.uint32(0xFFFF))


def test_b16_cas_matches_h100_probe_rows(memory):
    # As in probes atom_global_cas_b16 / atom_shared_cas_b16: the old value back, a swap only on equality.
    vectors = [(0x0000, 0x0000, 0x0002), (0x0000, 0x4000, 0x0001), (0xFFFF, 0xFFFF, 0x1234),
               (0x8000, 0x0000, 0x7FFF)]
    for space in ("global", "shared"):
        stored, compare, new = (np.array(column, dtype=np.uint16) for column in zip(*vectors))
        if space == "shared":
            _launch(memory, n_ctas=1, threads_per_cta=64, shared=8)
            memory.shared_bytes(0)[:] = stored.view(np.uint8)
            addr = u64(2 * np.arange(4))
        else:
            addr = u64(memory.alloc(8) + 2 * np.arange(4))
            memory.write(int(addr[0]), stored)
        old = memory.atomic(space, "cas", "b16", addr, None, compare, new)
        after = memory.shared_bytes(0) if space == "shared" else memory.read(int(addr[0]), 8)
        assert old.dtype == np.uint16 and _hex(old) == _hex(stored)
        assert _hex(after.view(np.uint16)) == _hex([0x0002, 0x0000, 0x1234, 0x8000])


@pytest.mark.parametrize("ty", ["f16", "bf16", "b16"])
def test_two_byte_atomics_fault_on_odd_addresses(memory, ty):
    a = memory.alloc(8)
    op = "cas" if ty == "b16" else "add"
    fault = fault_of(lambda: memory.atomic("global", op, ty, u64([a, a + 3]), None, np.uint16(1),
                                           np.uint16(2) if op == "cas" else None))
    assert (fault.kind, fault.lane, fault.width) == ("misaligned", 1, 2)


def test_two_byte_atomic_types_have_only_their_ptx_operations(memory):
    a = memory.alloc(8)
    for op, ty in [("exch", "f16"), ("cas", "bf16"), ("inc", "f16"), ("add", "b16"), ("exch", "b16")]:
        with pytest.raises(ValueError):
            memory.atomic("global", op, ty, u64([a]), None, np.uint16(1), np.uint16(1))


def _f32(bits):
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def _f32_bits(value):
    return struct.unpack("<I", struct.pack("<f", value))[0]


def test_contended_f32_adds_round_after_every_lane_in_lane_order(memory):
    rng = np.random.default_rng(7)
    values = (rng.standard_normal(100) * 10.0 ** rng.integers(-3, 6, size=100)).astype(np.float32)
    a = memory.alloc(4)
    old = memory.atomic("global", "add", "f32", u64([a] * 100), None, values)
    total = np.float32(0)
    expected = []
    for v in values:
        expected.append(total)
        total = np.float32(total + v)
    assert old.tolist() == [float(e) for e in expected]
    assert memory.read(a, 4).view(np.float32)[0] == total


def test_contended_global_f32_adds_flush_each_intermediate_sum(memory):
    tiny = _f32(0x00800000)
    values = np.array([tiny * 1.5, -tiny, tiny, tiny * 0.5, -tiny * 1.25] * 10, dtype=np.float32)

    def flush(x):
        return np.float32(np.copysign(0.0, x)) if 0 < abs(x) < tiny else np.float32(x)

    state = np.float32(0)
    expected = []
    for v in values:
        expected.append(_f32_bits(state))
        state = flush(np.float32(flush(state) + flush(v)))
    a = memory.alloc(4)
    old = memory.atomic("global", "add", "f32", u64([a] * values.size), None, values)
    assert _hex(old.view(np.uint32)) == _hex(expected)
    assert memory.read(a, 4).view(np.uint32)[0] == _f32_bits(state)


@pytest.mark.parametrize("ty,dtype", [("f16x2", np.float16), ("bf16x2", None)])
def test_contended_packed_adds_apply_in_lane_order(memory, ty, dtype):
    def half_bits(value):
        if dtype is not None:
            return int(np.array(value, dtype=dtype).view(np.uint16))
        return _f32_bits(value) >> 16

    operand = half_bits(1.0) << 16 | half_bits(0.5)
    a = memory.alloc(4)
    old = memory.atomic("global", "add", ty, u64([a] * 40), None, operand)
    expected = [half_bits(float(k)) << 16 | half_bits(k * 0.5) for k in range(41)]
    assert _hex(old) == _hex(expected[:40])
    assert _hex(memory.read(a, 4).view(np.uint32)) == _hex(expected[40:])


def test_contended_f64_adds_keep_the_latest_nan_payload(memory):
    values = np.array([1.0, 2.5, np.inf, -np.inf, 3.0] + [1.0] * 40, dtype=np.float64)
    bits = values.view(np.uint64).copy()
    bits[20] = 0x7FF8000000000042
    a = memory.alloc(8)
    old = memory.atomic("global", "add", "f64", u64([a] * bits.size), None, bits)
    state, expected = 0.0, []
    state_bits = 0
    for lane, value_bits in enumerate(bits.tolist()):
        expected.append(state_bits)
        value = struct.unpack("<d", struct.pack("<Q", value_bits))[0]
        if value != value:
            state_bits = value_bits
        elif state != state:
            pass
        else:
            result = state + value
            state_bits = 0xFFF8000000000000 if result != result else struct.unpack("<Q", struct.pack("<d", result))[0]
        state = struct.unpack("<d", struct.pack("<Q", state_bits))[0]
    assert _hex(old.view(np.uint64)) == _hex(expected)
    assert _hex(memory.read(a, 8).view(np.uint64)) == _hex([state_bits])


# ---------------------------------------------------------------- per-warp counts

COUNTERS = [shared_wavefronts, global_sectors, distinct_addresses, max_same_address]


def _tile_addresses(row_ints, transpose, ty_rows=32):
    tx = np.tile(np.arange(32), ty_rows)
    ty = np.repeat(np.arange(ty_rows), 32)
    index = tx * row_ints + ty if transpose else ty * row_ints + tx
    return u64(4 * index)


def test_row_access_to_an_int_tile_costs_one_wavefront_per_warp(backend):
    warps, counts = shared_wavefronts(_tile_addresses(32, False), None, 4, backend=backend)
    assert warps.tolist() == list(range(32)) and counts.tolist() == [1] * 32


def test_column_access_to_a_32_int_row_tile_costs_32_wavefronts(backend):
    _, counts = shared_wavefronts(_tile_addresses(32, True), None, 4, backend=backend)
    assert counts.tolist() == [32] * 32


def test_padding_the_row_to_33_ints_removes_the_conflict(backend):
    _, counts = shared_wavefronts(_tile_addresses(33, True), None, 4, backend=backend)
    assert counts.tolist() == [1] * 32


@pytest.mark.parametrize("addresses,width,expected", [
    ([0] * 32, 4, 1),                               # broadcast
    ([8 * t for t in range(32)], 4, 2),             # stride 2 ints: two words per even bank
    ([t for t in range(32)], 1, 1),                 # bytes of 8 words
    # 8- and 16-byte cases as the H100 counts them (tests/stats_patterns: shared_v2_*, shared_v4_*)
    ([8 * t for t in range(32)], 8, 2),             # consecutive doubles: one phase, two words per bank
    ([0] * 32, 8, 1),                               # 8-byte broadcast: one phase, one word per bank
    ([16 * t for t in range(32)], 8, 4),            # stride-2 doubles: four words per used bank
    ([16 * t for t in range(32)], 16, 4),           # consecutive 16-byte vectors: two half-warps, two each
    ([0] * 32, 16, 2),                              # 16-byte broadcast: one wavefront per half-warp
    ([128 * t for t in range(32)], 4, 32),          # every lane in bank 0
])
def test_shared_wavefront_patterns(backend, addresses, width, expected):
    _, counts = shared_wavefronts(u64(addresses), None, width, backend=backend)
    assert counts.tolist() == [expected]


def test_inactive_phases_cost_nothing(backend):
    _, counts = shared_wavefronts(u64([16 * t for t in range(12)]), np.arange(12), 16, backend=backend)
    assert counts.tolist() == [2]


def test_eight_byte_banks_serve_a_warp_of_doubles_in_one_pass(backend):
    _, counts = shared_wavefronts(u64([8 * t for t in range(32)]), None, 8, bank_bytes=8, backend=backend)
    assert counts.tolist() == [1]


def test_counts_group_unsorted_lanes_by_warp(backend):
    threads = np.array([70, 3, 65, 0, 31, 64], dtype=np.int64)
    addr = u64([0, 0, 128, 4, 256, 256])
    warps, counts = shared_wavefronts(addr, threads, 4, backend=backend)
    assert warps.tolist() == [0, 2] and counts.tolist() == [2, 3]
    warps, counts = max_same_address(addr, threads, backend=backend)
    assert warps.tolist() == [0, 2] and counts.tolist() == [1, 1]


@pytest.mark.parametrize("addresses,width,expected", [
    ([4 * t for t in range(32)], 4, 4),
    ([128 * t for t in range(32)], 4, 32),
    ([16 + 4 * t for t in range(32)], 4, 5),
    ([8 * t for t in range(32)], 8, 8),
    ([16 * t for t in range(32)], 16, 16),
    ([4 * t for t in range(8)], 4, 1),
    ([0] * 32, 4, 1),
])
def test_global_sector_patterns(backend, addresses, width, expected):
    _, counts = global_sectors(u64(addresses), None, width, backend=backend)
    assert counts.tolist() == [expected]


def test_a_stride_32_int_load_by_64_threads_touches_64_sectors(backend):
    warps, counts = global_sectors(u64(0x7F4368000000 + 128 * np.arange(64)), None, 4, backend=backend)
    assert warps.tolist() == [0, 1] and int(counts.sum()) == 64


def test_distinct_and_most_shared_address_per_warp(backend):
    addr = u64([0x100] * 16 + [0x200] * 8 + [0x300 + 4 * k for k in range(8)] + [5] * 32)
    assert distinct_addresses(addr, None, backend=backend)[1].tolist() == [10, 1]
    assert max_same_address(addr, None, backend=backend)[1].tolist() == [16, 32]


def test_counters_on_no_lanes_return_empty_arrays(backend):
    for counter in COUNTERS:
        args = (u64([]), None, 4) if counter in (shared_wavefronts, global_sectors) else (u64([]), None)
        warps, counts = counter(*args, backend=backend)
        assert warps.dtype == counts.dtype == np.int64 and warps.size == counts.size == 0


def test_memory_methods_count_with_the_memory_backend(memory):
    assert memory.global_sectors(u64(4 * np.arange(32)), None, 4)[1].tolist() == [4]
    assert memory.shared_wavefronts(u64([0] * 32), None, 4)[1].tolist() == [1]
    assert memory.distinct_addresses(u64([0, 4]), None)[1].tolist() == [2]
    assert memory.max_same_address(u64([0, 0]), None)[1].tolist() == [2]


def test_local_pieces_interleave_by_lane(backend):
    lanes = u64([0] * 32)
    assert local_sectors(lanes, None, 4, backend=backend)[1].tolist() == [4]            # bytes 0..127
    assert local_sectors(lanes, None, 8, backend=backend)[1].tolist() == [8]            # and 128..255
    assert local_sectors(u64([0] * 16), np.arange(16), 4, backend=backend)[1].tolist() == [2]
    assert local_sectors(u64([0] * 4), np.array([0, 8, 16, 24]), 4, backend=backend)[1].tolist() == [4]
    # even lanes read word 0, odd lanes word 1: bytes l * 4 and 128 + l * 4
    assert local_sectors(u64([0, 4] * 16), None, 4, backend=backend)[1].tolist() == [8]


def test_request_totals_sum_counts_ideals_and_contention_over_warps(backend):
    # warp 0: every lane on word 0; warp 1: words 0, 32, 64, 96 of bank 0, eight lanes each
    addr = u64([0] * 32 + [128 * (lane % 4) for lane in range(32)])
    totals = request_totals("shared_wavefronts", addr, None, 4, contention=True, backend=backend)
    assert totals == RequestTotals(requests=2, count=1 + 4, ideal=2, contention=32 + 8, max_contention=32)
    # 8-byte lanes: two phases a warp, and only the first has lanes when 16 threads take part
    assert request_totals("shared_wavefronts", u64(8 * np.arange(16)), np.arange(16), 8,
                          backend=backend) == RequestTotals(1, 1, 1, 0, 0)
    # stride 128: a sector per lane where 4 would do for 32 contiguous words
    assert request_totals("global_sectors", u64(128 * np.arange(40)), None, 4,
                          backend=backend) == RequestTotals(2, 40, 4 + 1, 0, 0)
    assert request_totals("local_sectors", u64([0] * 32), None, 8, backend=backend) == RequestTotals(1, 8, 8, 0, 0)
    assert request_totals("distinct_addresses", u64([4, 8, 4]), None, 1,
                          backend=backend) == RequestTotals(1, 2, 1, 0, 0)
    assert request_totals("max_same_address", u64([]), None, 1, contention=True,
                          backend=backend) == RequestTotals(0, 0, 0, 0, 0)


def test_request_totals_reject_bad_arguments(backend):
    with pytest.raises(ValueError):
        request_totals("bank_conflicts", u64([0]), None, 4, backend=backend)
    with pytest.raises(ValueError):
        request_totals("global_sectors", u64([0, 4]), np.array([0, -3]), 4, backend=backend)
    with pytest.raises(ValueError):
        request_totals("global_sectors", u64([0, 4]), np.array([0]), 4, backend=backend)
    with pytest.raises(ValueError):
        request_totals("shared_wavefronts", u64([0]), None, 3, backend=backend)



def test_counters_reject_negative_threads(backend):
    with pytest.raises(ValueError):
        global_sectors(u64([0]), np.array([-1]), 4, backend=backend)
