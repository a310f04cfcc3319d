"""Process memory attached to the device (Memory.attach_host): kernels read and write it in place at its own
address, bounded by the attached range, and it never overlaps gpuemu's own allocations."""
import ctypes

import numpy as np
import pytest

from emulator.api import Device, DevicePointer, Module
from emulator.errors import DeviceError
from emulator.memory import DeviceFault, Memory, c_core_available

pytestmark = pytest.mark.skipif(not c_core_available(), reason="host memory in place needs the C memory core")

SCALE = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry scale(.param .u64 data, .param .u32 n)
{
  .reg .b64 %rd<4>;
  .reg .b32 %r<4>;
  .reg .f32 %f<3>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [data];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  setp.ge.u32 %p1, %r2, %r1;
  @%p1 ret;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.f32 %f1, [%rd3];
  mul.f32 %f2, %f1, 0f40000000;
  st.global.f32 [%rd3], %f2;
  ret;
}
"""


def test_kernel_writes_attached_host_memory_in_place_through_an_interior_pointer():
    device = Device()
    host = np.arange(16, dtype=np.float32)
    device.memory.attach_host(host.ctypes.data, host.nbytes)
    Module(SCALE, "scale.ptx", device).kernel("scale").launch(1, 32, [DevicePointer(host.ctypes.data + 16), 8])
    assert host.tolist() == [0, 1, 2, 3] + [2.0 * v for v in range(4, 12)] + [12, 13, 14, 15]


def test_access_past_the_attached_range_faults_and_leaves_the_bytes_after_it():
    device = Device()
    backing = np.arange(16, dtype=np.float32)
    device.memory.attach_host(backing.ctypes.data, 8 * 4)
    with pytest.raises(DeviceError) as info:
        Module(SCALE, "scale.ptx", device).kernel("scale").launch(1, 32, [DevicePointer(backing.ctypes.data), 16])
    assert "out of bounds" in str(info.value.report)
    assert backing[8:].tolist() == list(range(8, 16))


def test_read_only_host_memory_faults_on_store():
    memory = Memory()
    host = np.arange(4, dtype=np.uint32)
    memory.attach_host(host.ctypes.data, host.nbytes, read_only=True)
    assert memory.load("global", [host.ctypes.data + 4], None, 4).view(np.uint32).tolist() == [[1]]
    with pytest.raises(DeviceFault) as info:
        memory.store("global", [host.ctypes.data], None, 4, np.array([7], np.uint32))
    assert info.value.kind == "read_only" and host[0] == 0
    with pytest.raises(ValueError, match="read-only"):
        memory.write(host.ctypes.data, np.array([7], np.uint32))


def test_host_copies_and_detach():
    memory = Memory()
    host = np.zeros(8, dtype=np.uint8)
    memory.attach_host(host.ctypes.data, host.nbytes)
    memory.write(host.ctypes.data + 2, np.array([5, 6], np.uint8))
    assert host.tolist() == [0, 0, 5, 6, 0, 0, 0, 0]
    assert memory.read(host.ctypes.data + 2, 3).tolist() == [5, 6, 0]
    with pytest.raises(ValueError):
        memory.free(host.ctypes.data)
    memory.detach_host(host.ctypes.data)
    with pytest.raises(DeviceFault):
        memory.load("global", [host.ctypes.data], None, 1)


def _map_at(address: int, length: int) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    mapped = libc.mmap(address, length, 3, 0x22 | 0x100000, -1, 0)  # rw, private anonymous, fixed-noreplace
    if mapped != address:
        pytest.skip(f"cannot map memory at {address:#x} in this process")
    return mapped


def test_device_allocations_step_past_attached_host_memory_and_overlaps_are_refused():
    memory = Memory()
    first = memory.alloc(256)
    host = _map_at(first + (1 << 20), 1 << 16)
    memory.attach_host(host, 1 << 16)
    with pytest.raises(ValueError, match="overlaps"):
        memory.attach_host(first, 16)
    addresses = [memory.alloc(300_000) for _ in range(8)]
    for address in addresses:
        assert address + 300_000 <= host or address >= host + (1 << 16)
    ctypes.CDLL(None).munmap(ctypes.c_void_p(host), ctypes.c_size_t(1 << 16))


def test_device_allocations_below_attached_host_memory_keep_the_table_in_address_order():
    memory = Memory()
    first = memory.alloc(64)
    host = _map_at(first + (1 << 24), 1 << 12)
    memory.attach_host(host, 1 << 12)
    second = memory.alloc(64)
    memory.write(second, np.arange(64, dtype=np.uint8))
    assert first < second < host and memory.read(second + 10, 2).tolist() == [10, 11]
    memory.detach_host(host)
    ctypes.CDLL(None).munmap(ctypes.c_void_p(host), ctypes.c_size_t(1 << 12))
