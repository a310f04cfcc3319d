"""The Memory object the interpreter calls, the cffi wrapper of the C core, and backend selection."""
from __future__ import annotations

import numpy as np

from emulator.memory import fallback
from emulator.memory.spaces import (ACCESS_WIDTHS, ATOMIC_DTYPES, ATOMIC_OPS, ATOMIC_OPS_BY_TYPE, ATOMIC_TYPES,
    COUNT_CODES, FAULT_BAD_LAYOUT, FAULT_BAD_THREAD, FAULT_KINDS, LOCAL_WINDOW, NULL_LIMIT, SHARED_WINDOW,
    SPACE_CODES, SPACE_NAMES, WINDOW_SIZE, ARENA_ALIGN, Allocation, DeviceFault, GlobalHeap, Layout, RequestTotals,
    align_up, check_thread_range)

try:
    from emulator.memory import _gpuemu_core
except ImportError:
    _gpuemu_core = None

BACKENDS = ("auto", "c", "numpy")


class CCore:
    """The compiled core behind the same methods as fallback.NumpyCore."""

    name = "c"

    def __init__(self, module):
        self._ffi, self._lib = module.ffi, module.lib
        self._layout = None
        self._struct = None
        self._keep_alive = None
        self._state_of = None
        self._state = None

    def _memory(self, layout: Layout):
        if layout is self._layout:
            return self._struct
        ffi = self._ffi
        struct = ffi.new("gm_memory *")
        buffers = {
            "global_bytes": ffi.from_buffer("uint8_t[]", layout.global_bytes, require_writable=True),
            "alloc_start": ffi.from_buffer("uint64_t[]", layout.alloc_start),
            "alloc_size": ffi.from_buffer("uint64_t[]", layout.alloc_size),
            "alloc_offset": ffi.from_buffer("uint64_t[]", layout.alloc_offset),
            "alloc_flags": ffi.from_buffer("uint8_t[]", layout.alloc_flags),
            "shared_bytes": ffi.from_buffer("uint8_t[]", layout.shared_bytes, require_writable=True),
            "local_bytes": ffi.from_buffer("uint8_t[]", layout.local_bytes, require_writable=True),
        }
        for field, pointer in buffers.items():
            setattr(struct, field, pointer)
        struct.global_len = layout.global_bytes.size
        struct.n_allocs = layout.alloc_start.size
        struct.null_limit = NULL_LIMIT
        struct.shared_window_base = SHARED_WINDOW
        struct.local_window_base = LOCAL_WINDOW
        struct.window_size = WINDOW_SIZE
        struct.shared_len = layout.shared_bytes.size
        struct.shared_limit = layout.shared_limit
        struct.shared_stride = layout.shared_stride
        struct.threads_per_cta = layout.threads_per_cta
        struct.local_len = layout.local_bytes.size
        struct.local_limit = layout.local_limit
        struct.local_stride = layout.local_stride
        struct.n_threads = layout.n_threads
        self._layout, self._struct, self._keep_alive = layout, struct, (layout, buffers)
        return struct

    def state(self, layout: Layout):
        """(addresses of the C memory struct for layout, of gm_load, gm_store and gm_atomic) for generated code that
        calls the core directly (emulator.machine.codegen)."""
        ffi, lib = self._ffi, self._lib
        struct = self._memory(layout)
        if self._state_of is not struct:
            self._state_of = struct
            self._state = tuple(int(ffi.cast("uintptr_t", pointer)) for pointer in (
                struct, ffi.addressof(lib, "gm_load"), ffi.addressof(lib, "gm_store"), ffi.addressof(lib, "gm_atomic")))
        return self._state

    def _threads(self, threads):
        return self._ffi.NULL if threads is None else self._ffi.from_buffer("int64_t[]", threads)

    def _checked(self, status: int, fault):
        if status == self._lib.GM_BAD_ARGUMENT:
            raise RuntimeError("the C memory core rejected its arguments")
        return (fault.lane, fault.kind, fault.space) if status == self._lib.GM_FAULT else None

    def load(self, layout: Layout, space: int, addr, threads, width: int):
        ffi = self._ffi
        out = np.empty((addr.size, width), dtype=np.uint8)
        fault = ffi.new("gm_fault *")
        status = self._lib.gm_load(self._memory(layout), space, ffi.from_buffer("uint64_t[]", addr),
                                   self._threads(threads), addr.size, width,
                                   ffi.from_buffer("uint8_t[]", out, require_writable=True), out.size, fault)
        found = self._checked(status, fault)
        return (None, found) if found else (out, None)

    def store(self, layout: Layout, space: int, addr, threads, width: int, data: np.ndarray):
        ffi = self._ffi
        fault = ffi.new("gm_fault *")
        status = self._lib.gm_store(self._memory(layout), space, ffi.from_buffer("uint64_t[]", addr),
                                    self._threads(threads), addr.size, width,
                                    ffi.from_buffer("uint8_t[]", data), data.size, fault)
        return self._checked(status, fault)

    def atomic(self, layout: Layout, space: int, op: int, ty: int, addr, threads, a: np.ndarray,
               b: np.ndarray | None):
        ffi = self._ffi
        fault = ffi.new("gm_fault *")
        old = np.empty(addr.size, dtype={8: np.uint64, 4: np.uint32, 2: np.uint16}[a.itemsize])
        status = self._lib.gm_atomic(
            self._memory(layout), space, op, ty, ffi.from_buffer("uint64_t[]", addr), self._threads(threads),
            addr.size, ffi.from_buffer("uint8_t[]", a.view(np.uint8)),
            ffi.NULL if b is None else ffi.from_buffer("uint8_t[]", b.view(np.uint8)), a.nbytes,
            ffi.from_buffer("uint8_t[]", old.view(np.uint8), require_writable=True),
            old.nbytes, fault)
        found = self._checked(status, fault)
        return (None, found) if found else (old, None)

    def count(self, what: int, addr, threads, width: int, bank_bytes: int):
        ffi = self._ffi
        n = addr.size
        warps = np.empty(n, dtype=np.int64)
        counts = np.empty(n, dtype=np.int64)
        written = self._lib.gm_count(what, ffi.from_buffer("uint64_t[]", addr), self._threads(threads), n, width,
                                     bank_bytes, 0, ffi.from_buffer("int64_t[]", warps, require_writable=True),
                                     ffi.from_buffer("int64_t[]", counts, require_writable=True), ffi.NULL, n,
                                     ffi.NULL)
        if written < 0:
            self._count_failed(threads)
        return warps[:written].copy(), counts[:written].copy()

    def totals(self, what: int, addr, threads, width: int, bank_bytes: int, contention: bool) -> RequestTotals:
        ffi = self._ffi
        totals = ffi.new("gm_count_totals *")
        lanes = ffi.NULL if threads is None else ffi.from_buffer("int64_t[]", threads)
        written = self._lib.gm_count(what, ffi.from_buffer("uint64_t[]", addr), lanes, addr.size, width, bank_bytes,
                                     1 if contention else 0, ffi.NULL, ffi.NULL, ffi.NULL, 0, totals)
        if written < 0:
            self._count_failed(threads)
        return RequestTotals(totals.warps, totals.count, totals.ideal, totals.most, totals.most_max)

    @staticmethod
    def _count_failed(threads):
        check_thread_range(threads)
        raise RuntimeError("the C memory core rejected its counting arguments")


_CORES: dict[str, object] = {}


def c_core_available() -> bool:
    return _gpuemu_core is not None


def get_core(backend: str | None = "auto"):
    """The core object for "c", "numpy" or "auto" (C when it is built, else numpy)."""
    backend = "auto" if backend is None else backend
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")
    if backend == "auto":
        backend = "c" if _gpuemu_core is not None else "numpy"
    if backend == "c" and _gpuemu_core is None:
        raise RuntimeError("the C memory core is not built (run: python -m emulator.memory.build_core)")
    if backend not in _CORES:
        _CORES[backend] = CCore(_gpuemu_core) if backend == "c" else fallback.NumpyCore()
    return _CORES[backend]


def _thread_indices(threads, n: int) -> np.ndarray | None:
    if threads is None:
        return None
    threads = np.ascontiguousarray(np.asarray(threads).reshape(-1).astype(np.int64, copy=False))
    if threads.size != n:
        raise ValueError(f"{threads.size} thread indices for {n} lanes")
    return threads


def _lanes(addr, threads) -> tuple[np.ndarray, np.ndarray | None]:
    if not (type(addr) is np.ndarray and addr.dtype == np.uint64 and addr.ndim == 1 and addr.flags.c_contiguous):
        addr = np.ascontiguousarray(np.asarray(addr).reshape(-1).astype(np.uint64, copy=False))
    return addr, _thread_indices(threads, addr.size)


def _check_width(width: int) -> int:
    if width not in ACCESS_WIDTHS:
        raise ValueError(f"access width must be one of {ACCESS_WIDTHS} bytes, not {width}")
    return int(width)


def _count_arguments(addr, threads, width: int, bank_bytes: int):
    addr, threads = _lanes(addr, threads)
    width = _check_width(width)
    if bank_bytes not in (1, 2, 4, 8, 16):
        raise ValueError(f"bank_bytes must be a power of two from 1 to 16, not {bank_bytes}")
    return addr, threads, width, int(bank_bytes)


def _counting(what: str, addr, threads, width: int, bank_bytes: int, backend):
    addr, threads, width, bank_bytes = _count_arguments(addr, threads, width, bank_bytes)
    return get_core(backend).count(COUNT_CODES[what], addr, threads, width, bank_bytes)


def shared_wavefronts(addr, threads, width: int, bank_bytes: int = 4, *, backend: str | None = None):
    """Per warp: shared-memory wavefronts (32 banks, same word broadcast, 8/16-byte accesses in phases)."""
    return _counting("shared_wavefronts", addr, threads, width, bank_bytes, backend)


def global_sectors(addr, threads, width: int, *, backend: str | None = None):
    """Per warp: distinct 32-byte sectors touched by the lanes' [a, a + width) ranges."""
    return _counting("global_sectors", addr, threads, width, 4, backend)


def local_sectors(addr, threads, width: int, *, backend: str | None = None):
    """Per warp: distinct 32-byte sectors of local accesses as the hardware interleaves them
    (32-bit word w of lane l at byte (w * 32 + l) * 4; see fallback.interleaved_local)."""
    return _counting("local_sectors", addr, threads, width, 4, backend)


def distinct_addresses(addr, threads, *, backend: str | None = None):
    """Per warp: number of distinct addresses (constant-cache serialisation)."""
    return _counting("distinct_addresses", addr, threads, 1, 4, backend)


def max_same_address(addr, threads, *, backend: str | None = None):
    """Per warp: the most lanes on one address (atomic contention)."""
    return _counting("max_same_address", addr, threads, 1, 4, backend)


def request_totals(what: str, addr, threads, width: int, bank_bytes: int = 4, *, contention: bool = False,
                   backend: str | None = None) -> RequestTotals:
    """One counting call (what: a COUNT_CODES name) summed over its warps, with atomic contention
    (the most lanes on one address per warp) from the same call when asked."""
    return _request_totals(get_core(backend), what, addr, threads, width, bank_bytes, contention)


def _request_totals(core, what: str, addr, threads, width: int, bank_bytes: int, contention: bool) -> RequestTotals:
    code = COUNT_CODES.get(what)
    if code is None:
        raise ValueError(f"what must be one of {tuple(COUNT_CODES)}, not {what!r}")
    # arrays already in the core's layout (every --stats request) skip _count_arguments' conversions
    if not (type(addr) is np.ndarray and addr.dtype == np.uint64 and addr.ndim == 1 and addr.flags.c_contiguous
            and (threads is None or (type(threads) is np.ndarray and threads.dtype == np.int64 and threads.ndim == 1
                                     and threads.flags.c_contiguous and threads.size == addr.size))
            and width in ACCESS_WIDTHS and bank_bytes in (1, 2, 4, 8, 16)):
        addr, threads, width, bank_bytes = _count_arguments(addr, threads, width, bank_bytes)
    return core.totals(code, addr, threads, width, bank_bytes, contention)


def _operand(value, dtype, n: int, role: str) -> np.ndarray:
    """An atomic operand as n contiguous values of dtype; same-size arrays are taken as raw bits."""
    array = np.asarray(value)
    if array.dtype != dtype:
        if array.dtype.kind in "uif" and array.dtype.itemsize == np.dtype(dtype).itemsize:
            array = array.view(dtype)
        else:
            array = array.astype(dtype)
    if array.ndim == 0:
        return np.full(n, array, dtype=dtype)
    array = np.ascontiguousarray(array.reshape(-1))
    if array.size != n:
        raise ValueError(f"atomic operand {role} has {array.size} values for {n} lanes")
    return array


class Memory:
    """All device memory of one emulated GPU: global allocations plus per-launch shared/local windows."""

    def __init__(self, *, backend: str = "auto"):
        self._core = get_core(backend)
        self.backend = self._core.name
        self._heap = GlobalHeap()
        self._layout: Layout | None = None
        self._layout_version = -1
        self.set_windows(n_ctas=0, threads_per_cta=0, shared_bytes=0, local_bytes=0)

    # ---- host side ----
    def alloc(self, nbytes: int, *, align: int = 256, kind: str = "global", name: str | None = None,
              unwritten=None) -> int:
        """A new allocation's address; its bytes are zeros, or, given unwritten ((offset, length) pairs), zeros only
        there: the caller writes the rest before anything reads it."""
        return self._heap.alloc(nbytes, align, kind, name, unwritten)

    def reserve(self, nbytes: int) -> None:
        """Make room at once for global allocations of about nbytes in all (fewer arena copies)."""
        self._heap.reserve(nbytes)

    def free(self, address: int) -> None:
        self._heap.free(address)

    def attach_host(self, address: int, nbytes: int, *, read_only: bool = False, name: str | None = None) -> None:
        """Process memory as a global allocation at its own address, read and written in place by kernels (see
        GlobalHeap.attach_host); the C core only: the numpy core reads global memory from its arena alone."""
        if self.backend != "c":
            raise RuntimeError("host memory seen in place needs gpuemu's C memory core, which is not built "
                               "(python -m emulator.memory.build_core)")
        self._heap.attach_host(address, nbytes, read_only=read_only, name=name)

    def detach_host(self, address: int) -> None:
        self._heap.detach_host(address)

    def write(self, address: int, data) -> None:
        self._heap.write(address, data)

    def read(self, address: int, nbytes: int) -> np.ndarray:
        return self._heap.read(address, nbytes)

    def view(self, address: int, nbytes: int) -> np.ndarray:
        """The bytes in place (read-only, no copy); valid until the next alloc."""
        return self._heap.view(address, nbytes)

    def release(self, address: int, nbytes: int) -> int:
        """Give the host pages under these bytes (of a live allocation) back to the system; they read as zeros
        afterwards. For device copies that are about to be freed."""
        return self._heap.release(address, nbytes)

    @property
    def bytes_in_use(self) -> int:
        """Host bytes the device's global allocations occupy (their arena up to the highest live one)."""
        return self._heap.bytes_in_use

    def growth_for(self, nbytes: int) -> int:
        """Host bytes the arena grows by for allocations of nbytes in all (0 when they fit)."""
        return self._heap.growth_for(nbytes)

    def allocations(self) -> list[Allocation]:
        return self._heap.allocations()

    def describe(self, address: int, problem: str = "out of bounds") -> str:
        return self._heap.describe(address, problem)

    # ---- per launch ----
    def set_windows(self, *, n_ctas: int, threads_per_cta: int, shared_bytes: int, local_bytes: int) -> None:
        """Fresh zero-filled shared windows (one per CTA) and local windows (one per thread)."""
        for label, value in (("n_ctas", n_ctas), ("threads_per_cta", threads_per_cta),
                             ("shared_bytes", shared_bytes), ("local_bytes", local_bytes)):
            if int(value) < 0:
                raise ValueError(f"{label} must not be negative, not {value}")
        if shared_bytes > WINDOW_SIZE or local_bytes > WINDOW_SIZE:
            raise ValueError(f"a shared or local window holds at most {WINDOW_SIZE:,} bytes")
        if n_ctas and not threads_per_cta:
            raise ValueError("threads_per_cta must be positive when there are CTAs")
        self._n_ctas, self._threads_per_cta = int(n_ctas), int(threads_per_cta)
        self._shared_limit, self._local_limit = int(shared_bytes), int(local_bytes)
        self._shared_stride = align_up(self._shared_limit, ARENA_ALIGN)
        self._local_stride = align_up(self._local_limit, ARENA_ALIGN)
        self._n_threads = self._n_ctas * self._threads_per_cta
        self._shared = np.zeros(self._n_ctas * self._shared_stride, dtype=np.uint8)
        self._local = np.zeros(self._n_threads * self._local_stride, dtype=np.uint8)
        self._layout = None

    def shared_bytes(self, cta: int) -> np.ndarray:
        if not 0 <= cta < self._n_ctas:
            raise IndexError(f"CTA {cta} is outside the batch of {self._n_ctas}")
        start = cta * self._shared_stride
        return self._shared[start:start + self._shared_limit]

    def local_bytes(self, thread: int) -> np.ndarray:
        if not 0 <= thread < self._n_threads:
            raise IndexError(f"thread {thread} is outside the batch of {self._n_threads}")
        start = thread * self._local_stride
        return self._local[start:start + self._local_limit]

    def local_windows(self) -> np.ndarray:
        """Every thread's local window of the batch, one after another at the window stride (read-only, no copy)."""
        windows = self._local.view()
        windows.flags.writeable = False
        return windows

    # ---- device side ----
    def load(self, space: str, addr, threads, width: int) -> np.ndarray:
        """Each lane's `width` bytes (little-endian, as stored) as an (n, width) uint8 array."""
        space_code, (addr, threads), width = self._space(space), _lanes(addr, threads), _check_width(width)
        out, found = self._core.load(self._current_layout(), space_code, addr, threads, width)
        if found:
            self._raise(found, "load", width, addr, threads)
        return out

    def store(self, space: str, addr, threads, width: int, data) -> None:
        """Stores each lane's `width` bytes; when lanes write the same bytes the highest lane wins."""
        space_code, (addr, threads), width = self._space(space), _lanes(addr, threads), _check_width(width)
        raw = np.ascontiguousarray(np.asarray(data)).reshape(-1).view(np.uint8)
        if raw.size != addr.size * width:
            raise ValueError(f"store data holds {raw.size} bytes, {addr.size} lanes of {width} need {addr.size * width}")
        found = self._core.store(self._current_layout(), space_code, addr, threads, width, raw)
        if found:
            self._raise(found, "store", width, addr, threads)

    def atomic(self, space: str, op: str, ty: str, addr, threads, a, b=None, *, ftz=None) -> np.ndarray:
        """Applies the lanes' atomics one after another in lane order; returns each lane's old value.

        Types: b32 u32 s32 b64 u64 s64 f32 f64 f16x2 bf16x2, and the 2-byte f16 bf16 (add, min,
        max) and b16 (cas) on 2-byte aligned addresses; a, b hold one value (or raw bits of the
        type's width: np.uint16 for f16/bf16/b16) per lane.
        Floating-point rules follow each lane's resolved space (generic addresses included), as an
        H100 does: add.f32 flushes subnormal operands and results on global memory and keeps them
        on shared memory; add.f64 on global returns a NaN operand unchanged (before a NaN in
        memory), on shared it returns the NaN in memory (before the operand's) quieted.
        `ftz` is accepted for old callers and ignored: the space decides.
        """
        if ty not in ATOMIC_TYPES:
            raise ValueError(f"atomic type must be one of {tuple(ATOMIC_TYPES)}, not {ty!r}")
        if op not in ATOMIC_OPS_BY_TYPE[ty]:
            raise ValueError(f"atom.{op} is not defined for .{ty} (allowed: {ATOMIC_OPS_BY_TYPE[ty]})")
        if op == "cas" and b is None:
            raise ValueError("atom.cas needs both a (compare) and b (new value)")
        space_code, (addr, threads) = self._space(space), _lanes(addr, threads)
        dtype = ATOMIC_DTYPES[ty]
        a_values = _operand(a, dtype, addr.size, "a")
        b_values = _operand(b, dtype, addr.size, "b") if op == "cas" else None
        old, found = self._core.atomic(self._current_layout(), space_code, ATOMIC_OPS[op], ATOMIC_TYPES[ty],
                                       addr, threads, a_values, b_values)
        if found:
            self._raise(found, "atomic", np.dtype(dtype).itemsize, addr, threads)
        return old.view(dtype)

    def core_state(self):
        """The C core's (memory struct, gm_load, gm_store, gm_atomic) addresses for the current layout, or None on the numpy
        core; valid until the next allocation or set_windows."""
        if self.backend != "c":
            return None
        return self._core.state(self._current_layout())

    # ---- counting, with this memory's backend ----
    def shared_wavefronts(self, addr, threads, width: int, bank_bytes: int = 4):
        return shared_wavefronts(addr, threads, width, bank_bytes, backend=self.backend)

    def global_sectors(self, addr, threads, width: int):
        return global_sectors(addr, threads, width, backend=self.backend)

    def distinct_addresses(self, addr, threads):
        return distinct_addresses(addr, threads, backend=self.backend)

    def max_same_address(self, addr, threads):
        return max_same_address(addr, threads, backend=self.backend)

    def local_sectors(self, addr, threads, width: int):
        return local_sectors(addr, threads, width, backend=self.backend)

    def request_totals(self, what: str, addr, threads, width: int, bank_bytes: int = 4, *,
                       contention: bool = False) -> RequestTotals:
        return _request_totals(self._core, what, addr, threads, width, bank_bytes, contention)

    # ---- internals ----
    @staticmethod
    def _space(space: str) -> int:
        if space not in SPACE_CODES:
            raise ValueError(f"space must be one of {tuple(SPACE_CODES)}, not {space!r}")
        return SPACE_CODES[space]

    def _current_layout(self) -> Layout:
        if self._layout is None or self._layout_version != self._heap.version:
            start, size, offset, flags = self._heap.tables()
            self._layout = Layout(
                global_bytes=self._heap.arena, alloc_start=start, alloc_size=size, alloc_offset=offset,
                alloc_flags=flags, shared_bytes=self._shared, shared_limit=self._shared_limit,
                shared_stride=self._shared_stride, threads_per_cta=self._threads_per_cta,
                local_bytes=self._local, local_limit=self._local_limit, local_stride=self._local_stride,
                n_threads=self._n_threads)
            self._layout_version = self._heap.version
        return self._layout

    def _raise(self, found, op: str, width: int, addr: np.ndarray, threads) -> None:
        lane, kind_code, space_code = found
        address = int(addr[lane])
        if kind_code == FAULT_BAD_THREAD:
            thread = int(threads[lane]) if threads is not None else lane
            raise IndexError(f"lane {lane}: thread {thread} is outside the batch of {self._n_threads} threads")
        if kind_code == FAULT_BAD_LAYOUT or not 0 < kind_code < len(FAULT_KINDS):
            raise RuntimeError(f"memory layout inconsistent at lane {lane} (code {kind_code})")
        kind, space = FAULT_KINDS[kind_code], SPACE_NAMES[space_code]
        problem = {"misaligned": "misaligned", "read_only": "read-only"}.get(kind, "out of bounds")
        if space == "global":
            detail = self._heap.describe(address, problem)
        else:
            detail = f"Access to {address:#x} is {problem}"
        raise DeviceFault(kind, space, op, width, address, lane, detail)
