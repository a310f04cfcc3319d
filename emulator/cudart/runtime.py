"""The CUDA runtime API (libcudart) over gpuemu: registration by nvcc's host stubs, memory, launches, streams,
events and errors. Every launch runs to its end before the call returns: streams and events are in order by
construction, and an event's time is the emulator's wall-clock time."""
from __future__ import annotations

import re
import time

from . import codes, context, fatbin, observers
from .binding import Implementations
from .codes import CudaError

IMPLEMENTATIONS = Implementations()
NOT_SUPPORTED_NAME = "cudaErrorNotSupported"
RUNTIME_VERSION = 13000
#: what libcudart.so.12 reports: the runtime that programs built with CUDA 12 shipped with (CuPy 12 picks its bundled
#: CUDA headers by the major version)
RUNTIME_VERSION_12 = 12090
DRIVER_VERSION = 13000
STREAM_LEGACY, STREAM_PER_THREAD = 1, 2
CUDA_HOST_ALLOC_MAPPED = 2
MAX_DYNAMIC_SHARED_ATTRIBUTE = 8
FUNC_ATTRIBUTES_SKIPPED = (9, 10, 11, 12, 13, 14, 15, 16)
#: the size of union cudaLaunchAttributeValue (cudaStreamAttrValue), CUDA 13
STREAM_ATTRIBUTE_BYTES = 64
ffi = lib = None
_strings = {}


def attach(cffi_ffi, cffi_lib) -> None:
    global ffi, lib
    ffi, lib = cffi_ffi, cffi_lib


def failure_value(name: str):
    if name in ("cudaGetErrorString", "cudaGetErrorName"):
        return _c_string("unrecognized error code")
    if name == "__cudaRegisterFatBinary":
        return ffi.NULL
    return b"\0" if name == "__cudaInitModule" else None


def address(pointer) -> int:
    return int(ffi.cast("uintptr_t", pointer))


def _c_string(text: str):
    if text not in _strings:
        _strings[text] = ffi.new("char[]", text.encode())
    return _strings[text]


def _store_pointer(cell, value: int) -> None:
    if cell == ffi.NULL:
        raise CudaError(codes.INVALID_VALUE, "the result pointer is NULL")
    cell[0] = ffi.cast("void *", value)


def _dims(value) -> tuple:
    return (int(value.x), int(value.y), int(value.z))


def _stream_ok(state, stream) -> None:
    handle = address(stream)
    if handle not in (0, STREAM_LEGACY, STREAM_PER_THREAD) and handle not in state.streams:
        raise CudaError(codes.INVALID_HANDLE, f"0x{handle:x} is not a live stream")


# ---- registration by nvcc's host code ----

@IMPLEMENTATIONS.value
def __cudaRegisterFatBinary(fat_cubin):
    state = context.get()
    containers = fatbin.read_wrapper(address(fat_cubin))
    cell = ffi.new("void *[1]")
    state.register_binary(address(cell), containers, f"{state.program}.ptx")
    state.handle_cells.append(cell)
    return ffi.cast("void **", cell)


@IMPLEMENTATIONS.value
def __cudaRegisterFatBinaryEnd(handle):
    state = context.get()
    binary = state.binaries.get(address(handle))
    if binary is not None and any(v.binary is binary and v.managed_pointer for v in state.variables.values()):
        state.module_of(binary)


@IMPLEMENTATIONS.value
def __cudaUnregisterFatBinary(handle):
    """Called from atexit: the modules stay, as other atexit handlers may still use them."""


@IMPLEMENTATIONS.value
def __cudaRegisterFunction(handle, host_fun, device_fun, device_name, thread_limit, tid, bid, bdim, gdim, wsize):
    state = context.get()
    binary = state.binaries[address(handle)]
    state.functions[address(host_fun)] = context.Function(binary, ffi.string(device_name).decode())


@IMPLEMENTATIONS.value
def __cudaRegisterVar(handle, host_var, device_address, device_name, ext, size, constant, is_global):
    state = context.get()
    state.variables[address(host_var)] = context.Variable(state.binaries[address(handle)],
                                                          ffi.string(device_name).decode(), int(size))


@IMPLEMENTATIONS.value
def __cudaRegisterManagedVar(handle, host_pointer_cell, device_address, device_name, ext, size, constant, is_global):
    state = context.get()
    cell = address(host_pointer_cell)
    state.variables[cell] = context.Variable(state.binaries[address(handle)], ffi.string(device_name).decode(),
                                             int(size), managed_pointer=cell)


@IMPLEMENTATIONS.value
def __cudaInitModule(handle):
    state = context.get()
    binary = state.binaries.get(address(handle))
    if binary is not None:
        state.module_of(binary)
    return b"\1"


@IMPLEMENTATIONS.error
def __cudaGetKernel(kernel, host_fun):
    context.get().function(address(host_fun))
    _store_pointer(kernel, address(host_fun))


@IMPLEMENTATIONS.error
def __cudaLaunchKernel(kernel, grid, block, args, shared, stream):
    return cudaLaunchKernel(kernel, grid, block, args, shared, stream)


# ---- launches ----

def _launch(func, grid, block, args, shared, stream, cooperative=False):
    state = context.get()
    _stream_ok(state, stream)
    function = state.function(address(func))
    kernel = state.kernel_of(function)
    pointers = [address(args[index]) for index in range(len(kernel.params))]
    state.launch(function, _dims(grid), _dims(block), pointers, int(shared), cooperative=cooperative)


@IMPLEMENTATIONS.error
def cudaLaunchKernel(func, grid, block, args, shared, stream):
    _launch(func, grid, block, args, shared, stream)


@IMPLEMENTATIONS.error
def cudaLaunchCooperativeKernel(func, grid, block, args, shared, stream):
    _launch(func, grid, block, args, shared, stream, cooperative=True)


@IMPLEMENTATIONS.error
def cudaLaunchHostFunc(stream, fn, user_data):
    _stream_ok(context.get(), stream)
    fn(user_data)


@IMPLEMENTATIONS.error
def cudaGetKernel(kernel, entry):
    return __cudaGetKernel(kernel, entry)


@IMPLEMENTATIONS.error
def cudaGetFuncBySymbol(function_pointer, symbol):
    context.get().function(address(symbol))
    _store_pointer(function_pointer, address(symbol))


@IMPLEMENTATIONS.error
def cudaFuncGetName(name, func):
    function = context.get().function(address(func))
    name[0] = _c_string(function.name)


@IMPLEMENTATIONS.error
def cudaFuncGetAttributes(attributes, func):
    state = context.get()
    function = state.function(address(func))
    resources = observers.kernel_resources(state.kernel_of(function))
    attributes.sharedSizeBytes = resources.static_shared
    attributes.constSizeBytes = resources.const_bytes
    attributes.localSizeBytes = resources.local_bytes
    attributes.maxThreadsPerBlock = resources.max_threads or state.properties["maxThreadsPerBlock"]
    attributes.numRegs = state.properties.registers_per_thread
    # the PTX's virtual architecture (what CUB picks its tuning policies by); the driver compiles it for the device
    attributes.ptxVersion = _ptx_arch(state.module_of(function.binary), state.properties.arch_number)
    attributes.binaryVersion = state.properties.arch_number
    attributes.cacheModeCA = 0
    attributes.maxDynamicSharedSizeBytes = function.max_dynamic_shared or \
        state.properties["sharedMemPerBlock"] - resources.static_shared
    attributes.preferredShmemCarveout = -1


def _ptx_arch(module, default: int) -> int:
    """The architecture of the module's `.target sm_NN` (its first), or default when it names none."""
    for target in getattr(getattr(module, "syntax", None), "target", ()) or ():
        match = re.fullmatch(r"sm_(\d+)[af]?", target)
        if match:
            return int(match.group(1))
    return default


@IMPLEMENTATIONS.error
def cudaFuncSetAttribute(func, attribute, value):
    state = context.get()
    function = state.function(address(func))
    if attribute == MAX_DYNAMIC_SHARED_ATTRIBUTE:
        static_shared = observers.kernel_resources(state.kernel_of(function)).static_shared
        limit = state.properties["sharedMemPerBlockOptin"] - static_shared
        if not 0 <= value <= limit:
            raise CudaError(codes.INVALID_VALUE, f"cudaFuncAttributeMaxDynamicSharedMemorySize {value} is outside "
                            f"0..{limit}")
        function.max_dynamic_shared = int(value)
    elif attribute not in FUNC_ATTRIBUTES_SKIPPED:
        raise CudaError(codes.INVALID_VALUE, f"unknown function attribute {attribute}")


@IMPLEMENTATIONS.error
def cudaFuncSetCacheConfig(func, config):
    context.get().function(address(func)).cache_config = int(config)


@IMPLEMENTATIONS.error
def cudaFuncSetSharedMemConfig(func, config):
    context.get().function(address(func))


@IMPLEMENTATIONS.error
def cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, func, block_size, dynamic_shared):
    state = context.get()
    blocks[0] = state.occupancy(state.kernel_of(state.function(address(func))), int(block_size), int(dynamic_shared))


@IMPLEMENTATIONS.error
def cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, func, block_size, dynamic_shared, flags):
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, func, block_size, dynamic_shared)


@IMPLEMENTATIONS.error
def cudaOccupancyAvailableDynamicSMemPerBlock(size, func, blocks, block_size):
    state = context.get()
    static_shared = observers.kernel_resources(state.kernel_of(state.function(address(func)))).static_shared
    per_block = state.properties.shared_per_sm // max(int(blocks), 1) - state.properties.reserved_shared_per_block
    size[0] = max(0, min(per_block, state.properties["sharedMemPerBlockOptin"]) - static_shared)


# ---- device ----

def _device_ok(device: int) -> None:
    if device != 0:
        raise CudaError(codes.INVALID_DEVICE, f"device {device} does not exist (gpuemu emulates one device, 0)")


@IMPLEMENTATIONS.query
def cudaGetDeviceCount(count):
    count[0] = 1


@IMPLEMENTATIONS.query
def cudaGetDevice(device):
    device[0] = 0


@IMPLEMENTATIONS.query
def cudaSetDevice(device):
    _device_ok(device)


@IMPLEMENTATIONS.query
def cudaInitDevice(device, device_flags, flags):
    _device_ok(device)


@IMPLEMENTATIONS.query
def cudaChooseDevice(device, properties):
    device[0] = 0


@IMPLEMENTATIONS.query
def cudaSetValidDevices(devices, length):
    for index in range(length):
        _device_ok(devices[index])


def fill_properties(struct, values) -> None:
    """Write the property values into a cudaDeviceProp (or a layout with the same field names)."""
    fields = dict(ffi.typeof(struct).item.fields)
    for name, value in values.items():
        if name not in fields:
            continue
        if name == "name":
            data = value.encode()[:255]
            ffi.memmove(struct.name, data + b"\0", len(data) + 1)
        elif isinstance(value, list):
            target = getattr(struct, name)
            for index, item in enumerate(value):
                target[index] = item
        else:
            setattr(struct, name, value)


@IMPLEMENTATIONS.query
def cudaGetDeviceProperties(properties, device):
    _device_ok(device)
    ffi.memmove(properties, b"\0" * ffi.sizeof("struct cudaDeviceProp"), ffi.sizeof("struct cudaDeviceProp"))
    fill_properties(properties, context.get().properties.values)
    properties.uuid.bytes[0:16] = b"gpuemu-h100-0000"


@IMPLEMENTATIONS.query
def cudaGetDeviceProperties_v2(properties, device):
    """CUDA 12's cudaGetDeviceProperties (its own cudaDeviceProp layout, with clockRate and friends)."""
    _device_ok(device)
    struct = ffi.cast("struct cudaDeviceProp12 *", properties)
    ffi.memmove(struct, b"\0" * ffi.sizeof("struct cudaDeviceProp12"), ffi.sizeof("struct cudaDeviceProp12"))
    fill_properties(struct, context.get().properties.values)
    struct.uuid.bytes[0:16] = b"gpuemu-h100-0000"


@IMPLEMENTATIONS.query
def cudaDeviceGetAttribute(value, attribute, device):
    _device_ok(device)
    value[0] = context.get().properties.attribute(int(attribute))


@IMPLEMENTATIONS.query
def cudaDeviceGetPCIBusId(bus_id, length, device):
    _device_ok(device)
    text = b"0000:01:00.0"[:max(length - 1, 0)] + b"\0"
    ffi.memmove(bus_id, text, min(len(text), length))


@IMPLEMENTATIONS.query
def cudaDeviceGetByPCIBusId(device, bus_id):
    device[0] = 0


@IMPLEMENTATIONS.query
def cudaDeviceGetStreamPriorityRange(least, greatest):
    if least != ffi.NULL:
        least[0] = 0
    if greatest != ffi.NULL:
        greatest[0] = -5


_limits = {0: 1024, 1: 1 << 20, 2: 8 << 20, 3: 2, 4: 2048, 5: 64, 6: 0}
#: cudaLimitStackSize: the per-thread stack recursive device functions take their frames from
LIMIT_STACK_SIZE = 0


@IMPLEMENTATIONS.error
def cudaDeviceSetLimit(limit, value):
    if limit not in _limits:
        raise CudaError(215, f"unknown limit {limit}")
    _limits[limit] = int(value)
    if limit == LIMIT_STACK_SIZE:
        context.get().device.stack_bytes = int(value)


@IMPLEMENTATIONS.error
def cudaDeviceGetLimit(value, limit):
    if limit not in _limits:
        raise CudaError(215, f"unknown limit {limit}")
    value[0] = _limits[limit]


@IMPLEMENTATIONS.error
def cudaDeviceSetCacheConfig(config):
    pass


@IMPLEMENTATIONS.error
def cudaDeviceGetCacheConfig(config):
    config[0] = 0


@IMPLEMENTATIONS.error
def cudaDeviceSetSharedMemConfig(config):
    pass


@IMPLEMENTATIONS.error
def cudaDeviceGetSharedMemConfig(config):
    config[0] = 1


@IMPLEMENTATIONS.query
def cudaDeviceCanAccessPeer(can, device, peer):
    _device_ok(device)
    can[0] = 0


@IMPLEMENTATIONS.error
def cudaDeviceEnablePeerAccess(peer, flags):
    raise CudaError(217, "gpuemu emulates one device: there is no peer")


@IMPLEMENTATIONS.error
def cudaDeviceDisablePeerAccess(peer):
    raise CudaError(705)


_device_flags = [0]


@IMPLEMENTATIONS.query
def cudaSetDeviceFlags(flags):
    _device_flags[0] = int(flags)


@IMPLEMENTATIONS.query
def cudaGetDeviceFlags(flags):
    flags[0] = _device_flags[0]


@IMPLEMENTATIONS.error
def cudaDeviceSynchronize():
    pass


@IMPLEMENTATIONS.error
def cudaThreadSynchronize():
    pass


@IMPLEMENTATIONS.query
def cudaDeviceReset():
    context.get().reset_device()


@IMPLEMENTATIONS.query
def cudaThreadExit():
    context.get().reset_device()


@IMPLEMENTATIONS.query
def cudaDriverGetVersion(version):
    version[0] = DRIVER_VERSION


@IMPLEMENTATIONS.query
def cudaRuntimeGetVersion(version):
    version[0] = RUNTIME_VERSION


def implementations_for(library_name: str) -> dict:
    """What a library answers differently from IMPLEMENTATIONS: libcudart.so.12 is CUDA 12's runtime."""
    if library_name != "libcudart.so.12":
        return {}

    def cudaRuntimeGetVersion(version):
        version[0] = RUNTIME_VERSION_12
    return {"cudaRuntimeGetVersion": (cudaRuntimeGetVersion, "query")}


@IMPLEMENTATIONS.error
def cudaMemGetInfo(free, total):
    state = context.get()
    free[0] = state.free_bytes()
    total[0] = state.properties.total_global_mem


@IMPLEMENTATIONS.query
def cudaProfilerStart():
    pass


@IMPLEMENTATIONS.query
def cudaProfilerStop():
    pass


# ---- errors ----

@IMPLEMENTATIONS.query
def cudaGetLastError():
    state = context.get()
    code = state.last_error or (state.sticky if state.fault_seen else 0)
    state.last_error = 0
    return code


@IMPLEMENTATIONS.query
def cudaPeekAtLastError():
    state = context.get()
    return state.last_error or (state.sticky if state.fault_seen else 0)


@IMPLEMENTATIONS.value
def cudaGetErrorString(error):
    return _c_string(codes.meaning(int(error)))


@IMPLEMENTATIONS.value
def cudaGetErrorName(error):
    return _c_string(codes.RUNTIME_NAMES.get(int(error), "cudaErrorUnknown"))


# ---- memory ----

@IMPLEMENTATIONS.error
def cudaMalloc(pointer, size):
    if pointer == ffi.NULL:
        raise CudaError(codes.INVALID_VALUE)
    pointer[0] = ffi.cast("void *", context.get().malloc(int(size)) if size else 0)


@IMPLEMENTATIONS.error
def cudaMallocAsync(pointer, size, stream):
    _stream_ok(context.get(), stream)
    return cudaMalloc(pointer, size)


@IMPLEMENTATIONS.error
def cudaFree(pointer):
    context.get().free(address(pointer))


@IMPLEMENTATIONS.error
def cudaFreeAsync(pointer, stream):
    context.get().free(address(pointer))


@IMPLEMENTATIONS.error
def cudaMallocHost(pointer, size):
    _store_pointer(pointer, context.get().mirror(int(size), "host"))


@IMPLEMENTATIONS.error
def cudaHostAlloc(pointer, size, flags):
    _store_pointer(pointer, context.get().mirror(int(size), "host", int(flags)))


@IMPLEMENTATIONS.error
def cudaFreeHost(pointer):
    state = context.get()
    host = address(pointer)
    if host and (host not in state.mirrors or state.mirrors[host].kind != "host"):
        raise CudaError(codes.INVALID_VALUE, f"cudaFreeHost(0x{host:x}): not memory cudaMallocHost or cudaHostAlloc "
                        f"returned")
    if host:
        state.free_mirror(host)


@IMPLEMENTATIONS.error
def cudaHostRegister(pointer, size, flags):
    context.get().register_host(address(pointer), int(size), int(flags))


@IMPLEMENTATIONS.error
def cudaHostUnregister(pointer):
    context.get().unregister_host(address(pointer))


@IMPLEMENTATIONS.error
def cudaHostGetDevicePointer(device_pointer, host_pointer, flags):
    state = context.get()
    host = address(host_pointer)
    mirror = state.find_mirror(host, "host")
    if mirror is None:
        raise CudaError(codes.INVALID_VALUE, f"0x{host:x} is not page-locked host memory")
    _store_pointer(device_pointer, mirror.device + host - mirror.host)


@IMPLEMENTATIONS.error
def cudaHostGetFlags(flags, host_pointer):
    mirror = context.get().find_mirror(address(host_pointer), "host")
    if mirror is None:
        raise CudaError(codes.INVALID_VALUE)
    flags[0] = mirror.flags | CUDA_HOST_ALLOC_MAPPED


@IMPLEMENTATIONS.error
def cudaMallocManaged(pointer, size, flags):
    if size == 0:
        raise CudaError(codes.INVALID_VALUE, "cudaMallocManaged of 0 bytes")
    _store_pointer(pointer, context.get().mirror(int(size), "managed", int(flags)))


def _pitch(width: int) -> int:
    return max((width + 511) // 512 * 512, 512)


@IMPLEMENTATIONS.error
def cudaMallocPitch(pointer, pitch, width, height):
    row = _pitch(int(width))
    pointer[0] = ffi.cast("void *", context.get().malloc(row * int(height)) if width and height else 0)
    pitch[0] = row


@IMPLEMENTATIONS.error
def cudaMalloc3D(pitched, extent):
    row = _pitch(int(extent.width))
    size = row * int(extent.height) * int(extent.depth)
    pitched.ptr = ffi.cast("void *", context.get().malloc(size) if size else 0)
    pitched.pitch = row
    pitched.xsize = extent.width
    pitched.ysize = extent.height


@IMPLEMENTATIONS.error
def cudaMemAdvise(pointer, count, advice, location):
    pass


@IMPLEMENTATIONS.error
def cudaMemPrefetchAsync(pointer, count, location, flags, stream):
    _stream_ok(context.get(), stream)


@IMPLEMENTATIONS.error
def cudaStreamAttachMemAsync(stream, pointer, length, flags):
    _stream_ok(context.get(), stream)


@IMPLEMENTATIONS.query
def cudaPointerGetAttributes(attributes, pointer):
    state = context.get()
    where = address(pointer)
    ffi.memmove(attributes, b"\0" * ffi.sizeof("struct cudaPointerAttributes"),
                ffi.sizeof("struct cudaPointerAttributes"))
    mirror = state.find_mirror(where, "host")
    if mirror is not None:
        attributes.type = 3 if mirror.kind == "managed" else 1
        attributes.devicePointer = ffi.cast("void *", mirror.device + where - mirror.host)
        attributes.hostPointer = ffi.cast("void *", where)
    elif state.is_device(where):
        attributes.type = 2
        attributes.devicePointer = ffi.cast("void *", where)
    attributes.device = 0


@IMPLEMENTATIONS.error
def cudaMemcpy(dst, src, count, kind):
    context.get().copy(address(dst), address(src), int(count), int(kind))


@IMPLEMENTATIONS.error
def cudaMemcpyAsync(dst, src, count, kind, stream):
    _stream_ok(context.get(), stream)
    return cudaMemcpy(dst, src, count, kind)


@IMPLEMENTATIONS.error
def cudaMemcpyPeer(dst, dst_device, src, src_device, count):
    _device_ok(dst_device)
    _device_ok(src_device)
    context.get().copy(address(dst), address(src), int(count), 3)


@IMPLEMENTATIONS.error
def cudaMemcpyPeerAsync(dst, dst_device, src, src_device, count, stream):
    return cudaMemcpyPeer(dst, dst_device, src, src_device, count)


def _copy_2d(dst: int, dst_pitch: int, src: int, src_pitch: int, width: int, height: int, kind: int) -> None:
    if width > dst_pitch or width > src_pitch:
        raise CudaError(12, f"width {width} exceeds a pitch ({dst_pitch}, {src_pitch})")
    state = context.get()
    for row in range(height):
        state.copy(dst + row * dst_pitch, src + row * src_pitch, width, kind)


@IMPLEMENTATIONS.error
def cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind):
    _copy_2d(address(dst), int(dpitch), address(src), int(spitch), int(width), int(height), int(kind))


@IMPLEMENTATIONS.error
def cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, stream):
    _stream_ok(context.get(), stream)
    return cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind)


@IMPLEMENTATIONS.error
def cudaMemcpy3D(p):
    if p.srcArray != ffi.NULL or p.dstArray != ffi.NULL:
        raise CudaError(codes.NOT_SUPPORTED, "CUDA arrays are not emulated (cudaMemcpy3D with srcArray/dstArray)")
    state = context.get()
    width, height, depth = int(p.extent.width), int(p.extent.height), int(p.extent.depth)
    src, dst = p.srcPtr, p.dstPtr
    for z in range(depth):
        for y in range(height):
            source_row = (int(p.srcPos.z) + z) * int(src.ysize) + int(p.srcPos.y) + y
            target_row = (int(p.dstPos.z) + z) * int(dst.ysize) + int(p.dstPos.y) + y
            source = address(src.ptr) + source_row * int(src.pitch) + int(p.srcPos.x)
            target = address(dst.ptr) + target_row * int(dst.pitch) + int(p.dstPos.x)
            state.copy(target, source, width, int(p.kind))


@IMPLEMENTATIONS.error
def cudaMemcpy3DAsync(p, stream):
    _stream_ok(context.get(), stream)
    return cudaMemcpy3D(p)


def _symbol_range(symbol, count: int, offset: int) -> int:
    device_address, size = context.get().symbol(address(symbol))
    if offset + count > size:
        raise CudaError(codes.INVALID_VALUE, f"{count} bytes at offset {offset} do not fit the {size}-byte symbol")
    return device_address + offset


@IMPLEMENTATIONS.error
def cudaMemcpyToSymbol(symbol, src, count, offset, kind):
    if kind not in (1, 3, 4):
        raise CudaError(codes.INVALID_MEMCPY_DIRECTION)
    target = _symbol_range(symbol, int(count), int(offset))
    context.get().copy(target, address(src), int(count), 4)


@IMPLEMENTATIONS.error
def cudaMemcpyToSymbolAsync(symbol, src, count, offset, kind, stream):
    _stream_ok(context.get(), stream)
    return cudaMemcpyToSymbol(symbol, src, count, offset, kind)


@IMPLEMENTATIONS.error
def cudaMemcpyFromSymbol(dst, symbol, count, offset, kind):
    if kind not in (2, 3, 4):
        raise CudaError(codes.INVALID_MEMCPY_DIRECTION)
    source = _symbol_range(symbol, int(count), int(offset))
    context.get().copy(address(dst), source, int(count), 4)


@IMPLEMENTATIONS.error
def cudaMemcpyFromSymbolAsync(dst, symbol, count, offset, kind, stream):
    _stream_ok(context.get(), stream)
    return cudaMemcpyFromSymbol(dst, symbol, count, offset, kind)


@IMPLEMENTATIONS.error
def cudaMemset(pointer, value, count):
    context.get().fill(address(pointer), int(value), int(count))


@IMPLEMENTATIONS.error
def cudaMemsetAsync(pointer, value, count, stream):
    _stream_ok(context.get(), stream)
    return cudaMemset(pointer, value, count)


@IMPLEMENTATIONS.error
def cudaMemset2D(pointer, pitch, value, width, height):
    state = context.get()
    for row in range(int(height)):
        state.fill(address(pointer) + row * int(pitch), int(value), int(width))


@IMPLEMENTATIONS.error
def cudaMemset2DAsync(pointer, pitch, value, width, height, stream):
    return cudaMemset2D(pointer, pitch, value, width, height)


@IMPLEMENTATIONS.error
def cudaMemset3D(pitched, value, extent):
    state = context.get()
    for z in range(int(extent.depth)):
        for y in range(int(extent.height)):
            state.fill(address(pitched.ptr) + (z * int(pitched.ysize) + y) * int(pitched.pitch), int(value),
                       int(extent.width))


@IMPLEMENTATIONS.error
def cudaMemset3DAsync(pitched, value, extent, stream):
    return cudaMemset3D(pitched, value, extent)


@IMPLEMENTATIONS.error
def cudaGetSymbolAddress(pointer, symbol):
    _store_pointer(pointer, context.get().symbol(address(symbol))[0])


@IMPLEMENTATIONS.error
def cudaGetSymbolSize(size, symbol):
    size[0] = context.get().symbol(address(symbol))[1]


# ---- streams and events ----

def _new_stream(cell, flags: int = 0, priority: int = 0) -> None:
    state = context.get()
    handle = state.new_handle()
    state.streams[handle] = context.Stream(flags, priority)
    _store_pointer(cell, handle)


@IMPLEMENTATIONS.error
def cudaStreamCreate(cell):
    _new_stream(cell)


@IMPLEMENTATIONS.error
def cudaStreamCreateWithFlags(cell, flags):
    _new_stream(cell, int(flags))


@IMPLEMENTATIONS.error
def cudaStreamCreateWithPriority(cell, flags, priority):
    _new_stream(cell, int(flags), int(priority))


@IMPLEMENTATIONS.error
def cudaStreamDestroy(stream):
    state = context.get()
    if state.streams.pop(address(stream), None) is None:
        raise CudaError(codes.INVALID_HANDLE, f"0x{address(stream):x} is not a live stream")


@IMPLEMENTATIONS.error
def cudaStreamSynchronize(stream):
    _stream_ok(context.get(), stream)


@IMPLEMENTATIONS.error
def cudaStreamQuery(stream):
    _stream_ok(context.get(), stream)


@IMPLEMENTATIONS.error
def cudaStreamWaitEvent(stream, event, flags):
    state = context.get()
    _stream_ok(state, stream)
    _event(state, event)


@IMPLEMENTATIONS.error
def cudaStreamAddCallback(stream, callback, user_data, flags):
    _stream_ok(context.get(), stream)
    callback(stream, 0, user_data)


@IMPLEMENTATIONS.error
def cudaStreamGetFlags(stream, flags):
    state = context.get()
    _stream_ok(state, stream)
    found = state.streams.get(address(stream))
    flags[0] = found.flags if found else 0


@IMPLEMENTATIONS.error
def cudaStreamGetPriority(stream, priority):
    state = context.get()
    _stream_ok(state, stream)
    found = state.streams.get(address(stream))
    priority[0] = found.priority if found else 0


@IMPLEMENTATIONS.error
def cudaStreamGetDevice(stream, device):
    _stream_ok(context.get(), stream)
    device[0] = 0


@IMPLEMENTATIONS.error
def cudaStreamIsCapturing(stream, status):
    _stream_ok(context.get(), stream)
    status[0] = 0


def _event(state, event) -> context.Event:
    found = state.events.get(address(event))
    if found is None:
        raise CudaError(codes.INVALID_HANDLE, f"0x{address(event):x} is not a live event")
    return found


@IMPLEMENTATIONS.error
def cudaEventCreate(cell):
    return cudaEventCreateWithFlags(cell, 0)


@IMPLEMENTATIONS.error
def cudaEventCreateWithFlags(cell, flags):
    state = context.get()
    handle = state.new_handle()
    state.events[handle] = context.Event(int(flags))
    _store_pointer(cell, handle)


@IMPLEMENTATIONS.error
def cudaEventRecord(event, stream):
    state = context.get()
    _stream_ok(state, stream)
    _event(state, event).time = time.perf_counter()


@IMPLEMENTATIONS.error
def cudaEventRecordWithFlags(event, stream, flags):
    return cudaEventRecord(event, stream)


@IMPLEMENTATIONS.error
def cudaEventQuery(event):
    _event(context.get(), event)


@IMPLEMENTATIONS.error
def cudaEventSynchronize(event):
    _event(context.get(), event)


@IMPLEMENTATIONS.error
def cudaEventElapsedTime(milliseconds, start, end):
    state = context.get()
    first, last = _event(state, start), _event(state, end)
    if first.time is None or last.time is None:
        raise CudaError(600, "an event was never recorded")
    if (first.flags | last.flags) & 2:
        raise CudaError(codes.INVALID_HANDLE, "an event created with cudaEventDisableTiming has no time")
    milliseconds[0] = (last.time - first.time) * 1000.0


@IMPLEMENTATIONS.error
def cudaEventElapsedTime_v2(milliseconds, start, end):
    return cudaEventElapsedTime(milliseconds, start, end)


@IMPLEMENTATIONS.error
def cudaEventDestroy(event):
    state = context.get()
    if state.events.pop(address(event), None) is None:
        raise CudaError(codes.INVALID_HANDLE, f"0x{address(event):x} is not a live event")


@IMPLEMENTATIONS.error
def cudaStreamSetAttribute(stream, attribute, value):
    """Access-policy windows and priorities are hints: accepted and kept, never acted on."""
    state = context.get()
    _stream_ok(state, stream)
    state.stream_attributes[(address(stream), int(attribute))] = bytes(ffi.buffer(value, STREAM_ATTRIBUTE_BYTES))


@IMPLEMENTATIONS.error
def cudaStreamGetAttribute(stream, attribute, value):
    state = context.get()
    _stream_ok(state, stream)
    saved = state.stream_attributes.get((address(stream), int(attribute)), b"\0" * STREAM_ATTRIBUTE_BYTES)
    ffi.memmove(value, saved, STREAM_ATTRIBUTE_BYTES)


@IMPLEMENTATIONS.error
def cudaCtxResetPersistingL2Cache():
    pass


LAUNCH_ATTRIBUTE_COOPERATIVE = 2
LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4


@IMPLEMENTATIONS.error
def cudaLaunchKernelExC(config, func, args):
    """cudaLaunchKernelEx: the cooperative attribute is honoured; clusters of more than one block are not emulated."""
    cooperative = False
    for index in range(int(config.numAttrs)):
        attribute = config.attrs[index]
        words = [int(word) for word in attribute.val]
        if attribute.id == LAUNCH_ATTRIBUTE_COOPERATIVE:
            cooperative = bool(words[0] & 0xFFFFFFFF)
        elif attribute.id == LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
            x, y, z = words[0] & 0xFFFFFFFF, words[0] >> 32, words[1] & 0xFFFFFFFF
            if (x, y, z) not in ((1, 1, 1), (0, 0, 0)):
                raise CudaError(codes.NOT_SUPPORTED, f"thread block clusters ({x}x{y}x{z}) are not emulated")
    _launch(func, config.gridDim, config.blockDim, args, config.dynamicSmemBytes, config.stream, cooperative)


#: the device's one memory pool: cudaMallocAsync and cudaMallocFromPoolAsync allocate as cudaMalloc does
MEMORY_POOL = 0xB0010


@IMPLEMENTATIONS.error
def cudaDeviceGetDefaultMemPool(pool, device):
    _device_ok(device)
    _store_pointer(pool, MEMORY_POOL)


@IMPLEMENTATIONS.error
def cudaDeviceGetMemPool(pool, device):
    return cudaDeviceGetDefaultMemPool(pool, device)


def _pool_ok(pool) -> None:
    if address(pool) != MEMORY_POOL:
        raise CudaError(codes.INVALID_VALUE, f"0x{address(pool):x} is not a memory pool (gpuemu has one, the default)")


_pool_attributes = {}


@IMPLEMENTATIONS.error
def cudaMemPoolSetAttribute(pool, attribute, value):
    _pool_ok(pool)
    _pool_attributes[int(attribute)] = bytes(ffi.buffer(ffi.cast("char *", value), 8))


@IMPLEMENTATIONS.error
def cudaMemPoolGetAttribute(pool, attribute, value):
    _pool_ok(pool)
    ffi.memmove(value, _pool_attributes.get(int(attribute), bytes(8)), 8)


@IMPLEMENTATIONS.error
def cudaMemPoolTrimTo(pool, keep):
    _pool_ok(pool)


@IMPLEMENTATIONS.error
def cudaMallocFromPoolAsync(pointer, size, pool, stream):
    _pool_ok(pool)
    return cudaMallocAsync(pointer, size, stream)
