"""The CUDA driver API (libcuda.so.1) over the same emulated device as the runtime: one device, its primary
context, modules from PTX text or fat binaries (cuModuleLoadData), launches, memory, streams and events."""
from __future__ import annotations

import ctypes

import numpy as np

from emulator.base.errors import UsageError
from emulator.cudart import ptxlink
from emulator.frontend.sass import cubin

from . import codes, context, fatbin, runtime
from .binding import Implementations
from .codes import CudaError

IMPLEMENTATIONS = Implementations()
NOT_SUPPORTED_NAME = "CUDA_ERROR_NOT_SUPPORTED"
#: runtime error numbers the driver API spells differently
TRANSLATE = {codes.INVALID_CONFIGURATION: codes.INVALID_VALUE, codes.INVALID_SYMBOL: codes.NOT_FOUND,
             codes.INVALID_DEVICE_POINTER: codes.INVALID_VALUE, codes.INVALID_MEMCPY_DIRECTION: codes.INVALID_VALUE,
             codes.INVALID_DEVICE_FUNCTION: codes.INVALID_HANDLE, 12: codes.INVALID_VALUE}
LAUNCH_PARAM_END, LAUNCH_PARAM_BUFFER_POINTER, LAUNCH_PARAM_BUFFER_SIZE = 0, 1, 2
MEMORYTYPE_HOST, MEMORYTYPE_DEVICE, MEMORYTYPE_UNIFIED = 1, 2, 4
PRIMARY_CONTEXT = 0xC0DE0
ffi = lib = None
_state = {"initialised": False, "current": [PRIMARY_CONTEXT], "retained": 0}


def attach(cffi_ffi, cffi_lib) -> None:
    global ffi, lib
    ffi, lib = cffi_ffi, cffi_lib
    if runtime.ffi is None:
        runtime.attach(cffi_ffi, cffi_lib)


def failure_value(name: str):
    return None


def address(pointer) -> int:
    return int(ffi.cast("uintptr_t", pointer))


def _device_ok(device: int) -> None:
    if device != 0:
        raise CudaError(codes.INVALID_DEVICE, f"device {device} does not exist (gpuemu emulates one device, 0)")


def _initialised() -> None:
    if not _state["initialised"]:
        raise CudaError(3, "cuInit has not been called")


def _stream_ok(stream) -> None:
    runtime._stream_ok(context.get(), stream)


# ---- initialisation, devices, contexts ----

@IMPLEMENTATIONS.query
def cuInit(flags):
    context.get()
    _state["initialised"] = True


@IMPLEMENTATIONS.query
def cuDriverGetVersion(version):
    version[0] = runtime.DRIVER_VERSION


@IMPLEMENTATIONS.query
def cuDeviceGet(device, ordinal):
    _initialised()
    _device_ok(ordinal)
    device[0] = 0


@IMPLEMENTATIONS.query
def cuDeviceGetCount(count):
    _initialised()
    count[0] = 1


@IMPLEMENTATIONS.query
def cuDeviceGetName(name, length, device):
    _device_ok(device)
    text = context.get().properties["name"].encode()[:max(length - 1, 0)] + b"\0"
    ffi.memmove(name, text, min(len(text), length))


@IMPLEMENTATIONS.query
def cuDeviceGetUuid_v2(uuid, device):
    _device_ok(device)
    uuid.bytes[0:16] = b"gpuemu-h100-0000"


@IMPLEMENTATIONS.query
def cuDeviceTotalMem_v2(size, device):
    _device_ok(device)
    size[0] = context.get().properties.total_global_mem


@IMPLEMENTATIONS.query
def cuDeviceGetAttribute(value, attribute, device):
    _device_ok(device)
    value[0] = context.get().properties.attribute(int(attribute))


@IMPLEMENTATIONS.query
def cuDeviceComputeCapability(major, minor, device):
    _device_ok(device)
    major[0] = context.get().properties["major"]
    minor[0] = context.get().properties["minor"]


@IMPLEMENTATIONS.query
def cuDeviceGetPCIBusId(bus_id, length, device):
    return runtime.cudaDeviceGetPCIBusId(bus_id, length, device)


@IMPLEMENTATIONS.query
def cuDevicePrimaryCtxRetain(cell, device):
    _device_ok(device)
    _state["retained"] += 1
    cell[0] = ffi.cast("void *", PRIMARY_CONTEXT)


@IMPLEMENTATIONS.query
def cuDevicePrimaryCtxRelease_v2(device):
    _device_ok(device)
    _state["retained"] = max(_state["retained"] - 1, 0)


@IMPLEMENTATIONS.query
def cuDevicePrimaryCtxReset_v2(device):
    _device_ok(device)
    context.get().reset_device()


@IMPLEMENTATIONS.query
def cuDevicePrimaryCtxGetState(device, flags, active):
    _device_ok(device)
    flags[0] = 0
    active[0] = 1 if _state["retained"] else 0


@IMPLEMENTATIONS.query
def cuDevicePrimaryCtxSetFlags_v2(device, flags):
    _device_ok(device)


def _context_ok(handle: int) -> None:
    if handle != PRIMARY_CONTEXT:
        raise CudaError(201, f"0x{handle:x} is not a context (gpuemu has one, the primary context)")


@IMPLEMENTATIONS.error
def cuCtxCreate_v2(cell, flags, device):
    """Every context is the device's primary context: gpuemu emulates one device with one address space."""
    _device_ok(device)
    cell[0] = ffi.cast("void *", PRIMARY_CONTEXT)
    _state["current"].append(PRIMARY_CONTEXT)


@IMPLEMENTATIONS.error
def cuCtxCreate_v4(cell, parameters, flags, device):
    return cuCtxCreate_v2(cell, flags, device)


@IMPLEMENTATIONS.error
def cuCtxDestroy_v2(handle):
    _context_ok(address(handle))


@IMPLEMENTATIONS.query
def cuModuleGetLoadingMode(mode):
    """Eager (CU_MODULE_EAGER_LOADING, 1): gpuemu prepares a module's functions when it is loaded."""
    mode[0] = 1


@IMPLEMENTATIONS.query
def cuCtxGetCurrent(cell):
    cell[0] = ffi.cast("void *", _state["current"][-1] if _state["current"] else 0)


@IMPLEMENTATIONS.query
def cuCtxSetCurrent(handle):
    if address(handle):
        _context_ok(address(handle))
    if _state["current"]:
        _state["current"][-1] = address(handle)
    else:
        _state["current"].append(address(handle))


@IMPLEMENTATIONS.query
def cuCtxPushCurrent_v2(handle):
    _context_ok(address(handle))
    _state["current"].append(address(handle))


@IMPLEMENTATIONS.query
def cuCtxPopCurrent_v2(cell):
    if not _state["current"]:
        raise CudaError(201, "no current context to pop")
    popped = _state["current"].pop()
    if cell != ffi.NULL:
        cell[0] = ffi.cast("void *", popped)


@IMPLEMENTATIONS.query
def cuCtxGetDevice(device):
    device[0] = 0


@IMPLEMENTATIONS.query
def cuCtxGetFlags(flags):
    flags[0] = 0


@IMPLEMENTATIONS.error
def cuCtxSynchronize():
    pass


@IMPLEMENTATIONS.query
def cuCtxGetApiVersion(handle, version):
    version[0] = 3020


@IMPLEMENTATIONS.error
def cuCtxGetLimit(value, limit):
    return runtime.cudaDeviceGetLimit(value, limit)


@IMPLEMENTATIONS.error
def cuCtxSetLimit(limit, value):
    return runtime.cudaDeviceSetLimit(limit, value)


@IMPLEMENTATIONS.error
def cuCtxGetCacheConfig(config):
    config[0] = 0


@IMPLEMENTATIONS.error
def cuCtxSetCacheConfig(config):
    pass


@IMPLEMENTATIONS.query
def cuCtxGetStreamPriorityRange(least, greatest):
    return runtime.cudaDeviceGetStreamPriorityRange(least, greatest)


# ---- modules and functions ----

def _load_image(cell, image: bytes, name: str) -> None:
    state = context.get()
    handle = state.new_handle()
    binary = context.FatBinary(name, [])
    if image[:4] == fatbin.CONTAINER_MAGIC.to_bytes(4, "little"):
        binary.entries = fatbin.parse_container(image)
    elif image[:4] == fatbin.ELF_MAGIC:
        try:
            arch = cubin.Cubin(image, name).arch
        except cubin.CubinError as error:
            raise CudaError(codes.INVALID_IMAGE, str(error)) from None
        binary.module = state.cubin_module(binary, image, arch)
    else:
        binary.ptx = image.split(b"\0", 1)[0].decode("utf-8", "replace")
    state.binaries[handle] = binary
    state.module_of(binary)
    _store(cell, handle)


def _image_bytes(image) -> bytes:
    """The bytes of a cuModuleLoadData image: a fat binary (its length from its header) or NUL-terminated PTX."""
    start = address(image)
    head = ctypes.string_at(start, 16)
    if head[:4] == fatbin.CONTAINER_MAGIC.to_bytes(4, "little"):
        return ctypes.string_at(start, fatbin.container_size(start))
    if int.from_bytes(head[:4], "little") == fatbin.WRAPPER_MAGIC:
        return b"".join(fatbin.read_wrapper(start))
    if head[:4] == fatbin.ELF_MAGIC:
        try:
            size = cubin.image_size(lambda offset, count: ctypes.string_at(start + offset, count), "cubin image")
        except cubin.CubinError as error:
            raise CudaError(codes.INVALID_IMAGE, str(error)) from None
        return ctypes.string_at(start, size)
    return ctypes.string_at(start)


def _store(cell, value: int) -> None:
    if cell == ffi.NULL:
        raise CudaError(codes.INVALID_VALUE, "the result pointer is NULL")
    cell[0] = ffi.cast("void *", value)


@IMPLEMENTATIONS.error
def cuModuleLoad(cell, file_name):
    path = ffi.string(file_name).decode()
    try:
        with open(path, "rb") as handle:
            image = handle.read()
    except OSError as error:
        raise CudaError(301, f"{path}: {error.strerror}") from None
    _load_image(cell, image, path)


@IMPLEMENTATIONS.error
def cuModuleLoadData(cell, image):
    _load_image(cell, _image_bytes(image), f"module {context.get().next_handle + 16:#x}")


@IMPLEMENTATIONS.error
def cuModuleLoadDataEx(cell, image, count, options, values):
    return cuModuleLoadData(cell, image)


@IMPLEMENTATIONS.error
def cuModuleLoadFatBinary(cell, image):
    return cuModuleLoadData(cell, image)


def _module(handle) -> context.FatBinary:
    binary = context.get().binaries.get(address(handle))
    if binary is None:
        raise CudaError(codes.INVALID_HANDLE, f"0x{address(handle):x} is not a loaded module")
    return binary


@IMPLEMENTATIONS.error
def cuModuleUnload(handle):
    _module(handle)
    del context.get().binaries[address(handle)]


@IMPLEMENTATIONS.error
def cuModuleGetFunction(cell, handle, name):
    state = context.get()
    binary = _module(handle)
    text = ffi.string(name).decode()
    if text not in state.module_of(binary).kernel_names:
        raise CudaError(codes.NOT_FOUND, f"no kernel named '{text}' in {binary.name}")
    function = state.new_handle()
    state.functions[function] = context.Function(binary, text)
    _store(cell, function)


@IMPLEMENTATIONS.error
def cuModuleGetGlobal_v2(pointer, size, handle, name):
    binary = _module(handle)
    device_address, nbytes = context.binary_symbol(context.get().module_of(binary), ffi.string(name).decode())
    if pointer != ffi.NULL:
        pointer[0] = device_address
    if size != ffi.NULL:
        size[0] = nbytes


FUNCTION_ATTRIBUTES = {0: "maxThreadsPerBlock", 1: "sharedSizeBytes", 2: "constSizeBytes", 3: "localSizeBytes",
                       4: "numRegs", 5: "ptxVersion", 6: "binaryVersion", 7: "cacheModeCA",
                       8: "maxDynamicSharedSizeBytes", 9: "preferredShmemCarveout"}


@IMPLEMENTATIONS.error
def cuFuncGetAttribute(value, attribute, function):
    if attribute not in FUNCTION_ATTRIBUTES:
        raise CudaError(codes.INVALID_VALUE, f"function attribute {attribute} is not emulated")
    attributes = ffi.new("struct cudaFuncAttributes *")
    code = runtime.cudaFuncGetAttributes(attributes, function)
    if code:
        return code
    value[0] = getattr(attributes, FUNCTION_ATTRIBUTES[attribute])


@IMPLEMENTATIONS.error
def cuFuncSetAttribute(function, attribute, value):
    return runtime.cudaFuncSetAttribute(function, attribute, value)


@IMPLEMENTATIONS.error
def cuFuncSetCacheConfig(function, config):
    return runtime.cudaFuncSetCacheConfig(function, config)


@IMPLEMENTATIONS.error
def cuFuncGetName(name, function):
    return runtime.cudaFuncGetName(name, function)


def _launch(function_handle, grid, block, shared, stream, parameters, extra, cooperative=False):
    state = context.get()
    _stream_ok(stream)
    function = state.function(address(function_handle))
    kernel = state.kernel_of(function)
    if parameters != ffi.NULL:
        pointers = [address(parameters[index]) for index in range(len(kernel.params))]
    elif extra != ffi.NULL:
        buffer, index = 0, 0
        while address(extra[index]) != LAUNCH_PARAM_END:
            if address(extra[index]) == LAUNCH_PARAM_BUFFER_POINTER:
                buffer = address(extra[index + 1])
            index += 2
        if not buffer:
            raise CudaError(codes.INVALID_VALUE, "extra holds no CU_LAUNCH_PARAM_BUFFER_POINTER")
        pointers = [buffer + param.offset for param in kernel.params]
    elif kernel.params:
        raise CudaError(codes.INVALID_VALUE, f"{function.plain_name} takes {len(kernel.params)} parameters and none "
                        f"were given")
    else:
        pointers = []
    state.launch(function, grid, block, pointers, int(shared), cooperative=cooperative)


@IMPLEMENTATIONS.error
def cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, stream, parameters, extra):
    _launch(f, (gx, gy, gz), (bx, by, bz), shared, stream, parameters, extra)


@IMPLEMENTATIONS.error
def cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shared, stream, parameters):
    _launch(f, (gx, gy, gz), (bx, by, bz), shared, stream, parameters, ffi.NULL, cooperative=True)


@IMPLEMENTATIONS.error
def cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks, function, block_size, dynamic_shared):
    return runtime.cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, function, block_size, dynamic_shared)


# ---- memory ----

@IMPLEMENTATIONS.error
def cuMemAlloc_v2(pointer, size):
    if size == 0:
        raise CudaError(codes.INVALID_VALUE, "cuMemAlloc of 0 bytes")
    pointer[0] = context.get().malloc(int(size))


@IMPLEMENTATIONS.error
def cuMemAllocPitch_v2(pointer, pitch, width, height, element_size):
    row = runtime._pitch(int(width))
    pointer[0] = context.get().malloc(row * int(height))
    pitch[0] = row


@IMPLEMENTATIONS.error
def cuMemAllocManaged(pointer, size, flags):
    pointer[0] = context.get().mirror(int(size), "managed", int(flags))


@IMPLEMENTATIONS.error
def cuMemFree_v2(pointer):
    context.get().free(int(pointer))


@IMPLEMENTATIONS.error
def cuMemAllocHost_v2(cell, size):
    _store(cell, context.get().mirror(int(size), "host"))


@IMPLEMENTATIONS.error
def cuMemHostAlloc(cell, size, flags):
    _store(cell, context.get().mirror(int(size), "host", int(flags)))


@IMPLEMENTATIONS.error
def cuMemFreeHost(pointer):
    return runtime.cudaFreeHost(pointer)


@IMPLEMENTATIONS.error
def cuMemHostGetDevicePointer_v2(device_pointer, host_pointer, flags):
    mirror = context.get().find_mirror(address(host_pointer), "host")
    if mirror is None:
        raise CudaError(codes.INVALID_VALUE, f"0x{address(host_pointer):x} is not page-locked host memory")
    device_pointer[0] = mirror.device + address(host_pointer) - mirror.host


@IMPLEMENTATIONS.error
def cuMemHostRegister_v2(pointer, size, flags):
    context.get().register_host(address(pointer), int(size), int(flags))


@IMPLEMENTATIONS.error
def cuMemHostUnregister(pointer):
    context.get().unregister_host(address(pointer))


@IMPLEMENTATIONS.error
def cuMemGetInfo_v2(free, total):
    return runtime.cudaMemGetInfo(free, total)


@IMPLEMENTATIONS.error
def cuMemGetAddressRange_v2(base, size, pointer):
    state = context.get()
    where = int(pointer)
    for start, length in state.allocations.items():
        if start <= where < start + max(length, 1):
            if base != ffi.NULL:
                base[0] = start
            if size != ffi.NULL:
                size[0] = length
            return
    raise CudaError(codes.NOT_FOUND, f"0x{where:x} is not in memory cuMemAlloc returned")


@IMPLEMENTATIONS.error
def cuMemcpy(dst, src, count):
    context.get().copy(int(dst), int(src), int(count), 4)


@IMPLEMENTATIONS.error
def cuMemcpyAsync(dst, src, count, stream):
    _stream_ok(stream)
    context.get().copy(int(dst), int(src), int(count), 4)


@IMPLEMENTATIONS.error
def cuMemcpyHtoD_v2(dst, src, count):
    context.get().copy(int(dst), address(src), int(count), 1)


@IMPLEMENTATIONS.error
def cuMemcpyDtoH_v2(dst, src, count):
    context.get().copy(address(dst), int(src), int(count), 2)


@IMPLEMENTATIONS.error
def cuMemcpyDtoD_v2(dst, src, count):
    context.get().copy(int(dst), int(src), int(count), 3)


@IMPLEMENTATIONS.error
def cuMemcpyHtoDAsync_v2(dst, src, count, stream):
    _stream_ok(stream)
    context.get().copy(int(dst), address(src), int(count), 1)


@IMPLEMENTATIONS.error
def cuMemcpyDtoHAsync_v2(dst, src, count, stream):
    _stream_ok(stream)
    context.get().copy(address(dst), int(src), int(count), 2)


@IMPLEMENTATIONS.error
def cuMemcpyDtoDAsync_v2(dst, src, count, stream):
    _stream_ok(stream)
    context.get().copy(int(dst), int(src), int(count), 3)


def _fill(pointer: int, value: int, count: int, dtype) -> None:
    if count:
        context.get().write(pointer, np.full(count, value, dtype=dtype).view(np.uint8), "default")


@IMPLEMENTATIONS.error
def cuMemsetD8_v2(pointer, value, count):
    _fill(int(pointer), int(value), int(count), np.uint8)


@IMPLEMENTATIONS.error
def cuMemsetD16_v2(pointer, value, count):
    _fill(int(pointer), int(value), int(count), np.uint16)


@IMPLEMENTATIONS.error
def cuMemsetD32_v2(pointer, value, count):
    _fill(int(pointer), int(value), int(count), np.uint32)


@IMPLEMENTATIONS.error
def cuMemsetD8Async(pointer, value, count, stream):
    _stream_ok(stream)
    _fill(int(pointer), int(value), int(count), np.uint8)


@IMPLEMENTATIONS.error
def cuMemsetD16Async(pointer, value, count, stream):
    _stream_ok(stream)
    _fill(int(pointer), int(value), int(count), np.uint16)


@IMPLEMENTATIONS.error
def cuMemsetD32Async(pointer, value, count, stream):
    _stream_ok(stream)
    _fill(int(pointer), int(value), int(count), np.uint32)


@IMPLEMENTATIONS.error
def cuPointerGetAttribute(data, attribute, pointer):
    state = context.get()
    where = int(pointer)
    mirror = state.find_mirror(where, "host")
    device = state.is_device(where)
    if mirror is None and not device:
        raise CudaError(codes.INVALID_VALUE, f"0x{where:x} is not memory the CUDA driver knows")
    values = {
        1: ("void *", PRIMARY_CONTEXT),
        2: ("unsigned int", MEMORYTYPE_HOST if mirror is not None and mirror.kind != "managed" else
            MEMORYTYPE_UNIFIED if mirror is not None else MEMORYTYPE_DEVICE),
        3: ("unsigned long long", mirror.device + where - mirror.host if mirror is not None else where),
        4: ("void *", where if mirror is not None else 0),
        6: ("int", 1),
        7: ("unsigned long long", where),
        8: ("int", 1 if mirror is not None and mirror.kind == "managed" else 0),
        9: ("int", 0),
    }
    if attribute not in values:
        raise CudaError(codes.INVALID_VALUE, f"pointer attribute {attribute} is not emulated")
    kind, value = values[attribute]
    ffi.cast(kind + " *", data)[0] = ffi.cast(kind, value) if kind == "void *" else value


# ---- streams and events ----

@IMPLEMENTATIONS.error
def cuStreamCreate(cell, flags):
    return runtime.cudaStreamCreateWithFlags(cell, flags)


@IMPLEMENTATIONS.error
def cuStreamCreateWithPriority(cell, flags, priority):
    return runtime.cudaStreamCreateWithPriority(cell, flags, priority)


@IMPLEMENTATIONS.error
def cuStreamDestroy_v2(stream):
    return runtime.cudaStreamDestroy(stream)


@IMPLEMENTATIONS.error
def cuStreamSynchronize(stream):
    _stream_ok(stream)


@IMPLEMENTATIONS.error
def cuStreamQuery(stream):
    _stream_ok(stream)


@IMPLEMENTATIONS.error
def cuStreamWaitEvent(stream, event, flags):
    return runtime.cudaStreamWaitEvent(stream, event, flags)


@IMPLEMENTATIONS.error
def cuStreamGetFlags(stream, flags):
    return runtime.cudaStreamGetFlags(stream, flags)


@IMPLEMENTATIONS.error
def cuStreamGetPriority(stream, priority):
    return runtime.cudaStreamGetPriority(stream, priority)


@IMPLEMENTATIONS.error
def cuEventCreate(cell, flags):
    return runtime.cudaEventCreateWithFlags(cell, flags)


@IMPLEMENTATIONS.error
def cuEventRecord(event, stream):
    return runtime.cudaEventRecord(event, stream)


@IMPLEMENTATIONS.error
def cuEventRecordWithFlags(event, stream, flags):
    return runtime.cudaEventRecord(event, stream)


@IMPLEMENTATIONS.error
def cuEventQuery(event):
    return runtime.cudaEventQuery(event)


@IMPLEMENTATIONS.error
def cuEventSynchronize(event):
    return runtime.cudaEventSynchronize(event)


@IMPLEMENTATIONS.error
def cuEventElapsedTime_v2(milliseconds, start, end):
    return runtime.cudaEventElapsedTime(milliseconds, start, end)


@IMPLEMENTATIONS.error
def cuEventDestroy_v2(event):
    return runtime.cudaEventDestroy(event)


@IMPLEMENTATIONS.query
def cuGetErrorString(error, text):
    if int(error) not in codes.DRIVER_NAMES:
        text[0] = ffi.NULL
        return codes.INVALID_VALUE
    text[0] = runtime._c_string(codes.meaning(int(error)))


@IMPLEMENTATIONS.query
def cuGetErrorName(error, text):
    if int(error) not in codes.DRIVER_NAMES:
        text[0] = ffi.NULL
        return codes.INVALID_VALUE
    text[0] = runtime._c_string(codes.driver_name(int(error)))


@IMPLEMENTATIONS.error
def cuOccupancyMaxPotentialBlockSize(min_grid, block_size, function, shared_of_block, dynamic_shared, limit):
    """The block size with the most resident threads per SM (the largest among equals), and the grid that fills
    the device with it."""
    state = context.get()
    kernel = state.kernel_of(state.function(address(function)))
    most = min(int(limit) or 1024, 1024)
    best = (0, 0, 0)
    for size in range(32, most + 1, 32):
        shared = int(shared_of_block(size)) if shared_of_block != ffi.NULL else int(dynamic_shared)
        blocks = state.occupancy(kernel, size, shared)
        if blocks * size >= best[0]:
            best = (blocks * size, size, blocks)
    if min_grid != ffi.NULL:
        min_grid[0] = best[2] * state.properties.multiprocessor_count
    if block_size != ffi.NULL:
        block_size[0] = best[1]


@IMPLEMENTATIONS.error
def cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, function, block_size, dynamic_shared, flags):
    return runtime.cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, function, block_size, dynamic_shared)


# ---- linking: the PTX inputs linked into one PTX module (emulator.cudart.ptxlink), the image to load ----

JIT_INPUT_CUBIN, JIT_INPUT_PTX, JIT_INPUT_FATBINARY, JIT_INPUT_OBJECT, JIT_INPUT_LIBRARY = 0, 1, 2, 3, 4
_links = {}


@IMPLEMENTATIONS.error
def cuLinkCreate_v2(count, options, values, cell):
    state = context.get()
    handle = state.new_handle()
    _links[handle] = {"ptx": [], "image": None}
    _store(cell, handle)


def _link(handle) -> dict:
    link = _links.get(address(handle))
    if link is None:
        raise CudaError(codes.INVALID_HANDLE, f"0x{address(handle):x} is not a link state")
    return link


def _add_input(link: dict, kind: int, data: bytes, name: str) -> None:
    if kind == JIT_INPUT_PTX:
        link["ptx"].append(data.split(b"\0", 1)[0])
    elif kind == JIT_INPUT_FATBINARY:
        entries = fatbin.parse_container(data)
        entry = fatbin.choose_ptx(entries, context.get().properties.arch_number, name)
        link["ptx"].append(entry.data().split(b"\0", 1)[0])
    elif kind == JIT_INPUT_LIBRARY:
        return  # libcudadevrt.a and friends: device-runtime calls gpuemu does not emulate are reported where used
    else:
        raise CudaError(codes.NOT_SUPPORTED, f"{name}: gpuemu links PTX and fat binaries with PTX, not cubins or "
                        f"objects (input type {kind})")


@IMPLEMENTATIONS.error
def cuLinkAddData_v2(handle, kind, data, size, name, count, options, values):
    _add_input(_link(handle), int(kind), bytes(ffi.buffer(ffi.cast("char *", data), int(size))),
               ffi.string(name).decode() if name != ffi.NULL else "<data>")


@IMPLEMENTATIONS.error
def cuLinkAddFile_v2(handle, kind, path, count, options, values):
    file_name = ffi.string(path).decode()
    try:
        with open(file_name, "rb") as stream:
            data = stream.read()
    except OSError as error:
        raise CudaError(301, f"{file_name}: {error.strerror}") from None
    _add_input(_link(handle), int(kind), data, file_name)


@IMPLEMENTATIONS.error
def cuLinkComplete(handle, image, size):
    link = _link(handle)
    try:
        linked = ptxlink.link([ptx.decode("utf-8", "replace") for ptx in link["ptx"]]).encode()
    except UsageError as error:
        raise CudaError(codes.INVALID_PTX, f"cuLinkComplete: {error}") from None
    link["image"] = ffi.new("char[]", linked + b"\0")
    image[0] = link["image"]
    size[0] = len(linked) + 1


@IMPLEMENTATIONS.error
def cuLinkDestroy(handle):
    _link(handle)
    del _links[address(handle)]


# ---- libraries (CUDA 12's context-independent modules): a library is a module, a kernel is its function ----

@IMPLEMENTATIONS.error
def cuLibraryLoadData(cell, code, jit_options, jit_values, jit_count, options, values, count):
    return cuModuleLoadData(cell, code)


@IMPLEMENTATIONS.error
def cuLibraryLoadFromFile(cell, file_name, jit_options, jit_values, jit_count, options, values, count):
    return cuModuleLoad(cell, file_name)


@IMPLEMENTATIONS.error
def cuLibraryUnload(library):
    return cuModuleUnload(library)


@IMPLEMENTATIONS.error
def cuLibraryGetKernel(cell, library, name):
    return cuModuleGetFunction(cell, library, name)


@IMPLEMENTATIONS.error
def cuLibraryGetKernelCount(count, library):
    count[0] = len(context.get().module_of(_module(library)).kernel_names)


@IMPLEMENTATIONS.error
def cuLibraryEnumerateKernels(kernels, count, library):
    state = context.get()
    binary = _module(library)
    for index, name in enumerate(state.module_of(binary).kernel_names[:int(count)]):
        handle = state.new_handle()
        state.functions[handle] = context.Function(binary, name)
        kernels[index] = ffi.cast("void *", handle)


@IMPLEMENTATIONS.error
def cuLibraryGetModule(cell, library):
    _module(library)
    _store(cell, address(library))


@IMPLEMENTATIONS.error
def cuLibraryGetGlobal(pointer, size, library, name):
    return cuModuleGetGlobal_v2(pointer, size, library, name)


@IMPLEMENTATIONS.error
def cuKernelGetFunction(cell, kernel):
    context.get().function(address(kernel))
    _store(cell, address(kernel))


@IMPLEMENTATIONS.error
def cuKernelGetAttribute(value, attribute, kernel, device):
    _device_ok(device)
    return cuFuncGetAttribute(value, attribute, kernel)


@IMPLEMENTATIONS.error
def cuKernelSetAttribute(attribute, value, kernel, device):
    _device_ok(device)
    return cuFuncSetAttribute(kernel, attribute, value)


@IMPLEMENTATIONS.error
def cuKernelGetName(name, kernel):
    return cuFuncGetName(name, kernel)


# ---- memory pools and cuLaunchKernelEx (cuda.core's ways to allocate and launch, which numba-cuda uses) ----

@IMPLEMENTATIONS.error
def cuDeviceGetDefaultMemPool(pool, device):
    return runtime.cudaDeviceGetDefaultMemPool(pool, device)


@IMPLEMENTATIONS.error
def cuDeviceGetMemPool(pool, device):
    return runtime.cudaDeviceGetMemPool(pool, device)


@IMPLEMENTATIONS.error
def cuMemAllocAsync(pointer, size, stream):
    _stream_ok(stream)
    return cuMemAlloc_v2(pointer, size)


@IMPLEMENTATIONS.error
def cuMemAllocFromPoolAsync(pointer, size, pool, stream):
    runtime._pool_ok(pool)
    return cuMemAllocAsync(pointer, size, stream)


@IMPLEMENTATIONS.error
def cuMemFreeAsync(pointer, stream):
    _stream_ok(stream)
    context.get().free(int(pointer))


@IMPLEMENTATIONS.error
def cuMemPoolGetAttribute(pool, attribute, value):
    return runtime.cudaMemPoolGetAttribute(pool, attribute, value)


@IMPLEMENTATIONS.error
def cuMemPoolSetAttribute(pool, attribute, value):
    return runtime.cudaMemPoolSetAttribute(pool, attribute, value)


@IMPLEMENTATIONS.error
def cuMemPoolTrimTo(pool, keep):
    return runtime.cudaMemPoolTrimTo(pool, keep)


@IMPLEMENTATIONS.error
def cuLaunchKernelEx(config, f, parameters, extra):
    """The cooperative attribute is honoured; clusters of more than one block are not emulated."""
    cooperative = False
    for index in range(int(config.numAttrs)):
        attribute = config.attrs[index]
        words = [int(word) for word in attribute.val]
        if attribute.id == runtime.LAUNCH_ATTRIBUTE_COOPERATIVE:
            cooperative = bool(words[0] & 0xFFFFFFFF)
        elif attribute.id == runtime.LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
            x, y, z = words[0] & 0xFFFFFFFF, words[0] >> 32, words[1] & 0xFFFFFFFF
            if (x, y, z) not in ((1, 1, 1), (0, 0, 0)):
                raise CudaError(codes.NOT_SUPPORTED, f"thread block clusters ({x}x{y}x{z}) are not emulated")
    _launch(f, (config.gridDimX, config.gridDimY, config.gridDimZ),
            (config.blockDimX, config.blockDimY, config.blockDimZ), config.sharedMemBytes, config.hStream, parameters,
            extra, cooperative=cooperative)


@IMPLEMENTATIONS.error
def cuStreamIsCapturing(stream, status):
    return runtime.cudaStreamIsCapturing(stream, status)


@IMPLEMENTATIONS.error
def cuLaunchHostFunc(stream, function, user_data):
    return runtime.cudaLaunchHostFunc(stream, function, user_data)


@IMPLEMENTATIONS.error
def cuStreamAddCallback(stream, callback, user_data, flags):
    return runtime.cudaStreamAddCallback(stream, callback, user_data, flags)


@IMPLEMENTATIONS.error
def cuPointerGetAttributes(count, attributes, data, pointer):
    """Each attribute as cuPointerGetAttribute gives it; for memory the driver does not know, the context is NULL
    and the memory type 0, as CUDA reports it."""
    for index in range(int(count)):
        code = cuPointerGetAttribute(data[index], attributes[index], pointer)
        if code == codes.INVALID_VALUE and int(attributes[index]) in (1, 2):
            ffi.cast("unsigned long long *", data[index])[0] = 0
        elif code:
            return code
