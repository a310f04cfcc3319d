"""CUDA's error codes (runtime and driver share the numbers gpuemu returns), their names and one-line meanings."""
from __future__ import annotations

import re
from typing import Dict

RUNTIME_NAMES: Dict[int, str] = {
    0: "cudaSuccess", 1: "cudaErrorInvalidValue", 2: "cudaErrorMemoryAllocation", 3: "cudaErrorInitializationError",
    4: "cudaErrorCudartUnloading", 9: "cudaErrorInvalidConfiguration", 12: "cudaErrorInvalidPitchValue",
    13: "cudaErrorInvalidSymbol", 16: "cudaErrorInvalidHostPointer", 17: "cudaErrorInvalidDevicePointer",
    21: "cudaErrorInvalidMemcpyDirection", 35: "cudaErrorInsufficientDriver", 52: "cudaErrorMissingConfiguration",
    98: "cudaErrorInvalidDeviceFunction", 100: "cudaErrorNoDevice", 101: "cudaErrorInvalidDevice",
    200: "cudaErrorInvalidKernelImage", 209: "cudaErrorNoKernelImageForDevice", 215: "cudaErrorUnsupportedLimit",
    217: "cudaErrorPeerAccessUnsupported", 218: "cudaErrorInvalidPtx", 222: "cudaErrorUnsupportedPtxVersion",
    400: "cudaErrorInvalidResourceHandle", 500: "cudaErrorSymbolNotFound", 600: "cudaErrorNotReady",
    700: "cudaErrorIllegalAddress", 701: "cudaErrorLaunchOutOfResources", 702: "cudaErrorLaunchTimeout",
    704: "cudaErrorPeerAccessAlreadyEnabled", 705: "cudaErrorPeerAccessNotEnabled", 710: "cudaErrorAssert",
    712: "cudaErrorHostMemoryAlreadyRegistered", 713: "cudaErrorHostMemoryNotRegistered",
    715: "cudaErrorIllegalInstruction", 716: "cudaErrorMisalignedAddress", 719: "cudaErrorLaunchFailure",
    720: "cudaErrorCooperativeLaunchTooLarge", 801: "cudaErrorNotSupported", 999: "cudaErrorUnknown",
}

DRIVER_NAMES: Dict[int, str] = {
    0: "CUDA_SUCCESS", 1: "CUDA_ERROR_INVALID_VALUE", 2: "CUDA_ERROR_OUT_OF_MEMORY", 3: "CUDA_ERROR_NOT_INITIALIZED",
    4: "CUDA_ERROR_DEINITIALIZED", 100: "CUDA_ERROR_NO_DEVICE", 101: "CUDA_ERROR_INVALID_DEVICE",
    200: "CUDA_ERROR_INVALID_IMAGE", 201: "CUDA_ERROR_INVALID_CONTEXT", 209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
    218: "CUDA_ERROR_INVALID_PTX", 222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", 400: "CUDA_ERROR_INVALID_HANDLE",
    500: "CUDA_ERROR_NOT_FOUND", 600: "CUDA_ERROR_NOT_READY", 700: "CUDA_ERROR_ILLEGAL_ADDRESS",
    701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", 702: "CUDA_ERROR_LAUNCH_TIMEOUT", 710: "CUDA_ERROR_ASSERT",
    715: "CUDA_ERROR_ILLEGAL_INSTRUCTION", 716: "CUDA_ERROR_MISALIGNED_ADDRESS", 719: "CUDA_ERROR_LAUNCH_FAILED",
    720: "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", 801: "CUDA_ERROR_NOT_SUPPORTED", 999: "CUDA_ERROR_UNKNOWN",
}

MEANINGS: Dict[int, str] = {
    0: "no error", 1: "invalid argument", 2: "out of memory", 3: "initialization error",
    9: "invalid configuration argument", 13: "invalid device symbol", 17: "invalid device pointer",
    21: "invalid copy direction for memcpy", 98: "invalid device function", 100: "no CUDA-capable device is detected",
    101: "invalid device ordinal", 200: "device kernel image is invalid",
    209: "no kernel image is available for execution on the device", 218: "a PTX JIT compilation failed",
    400: "invalid resource handle", 500: "named symbol not found", 600: "device not ready",
    700: "an illegal memory access was encountered", 701: "too many resources requested for launch",
    702: "the launch timed out and was terminated", 710: "device-side assert triggered",
    715: "an illegal instruction was encountered", 716: "misaligned address", 719: "unspecified launch failure",
    720: "too many blocks in cooperative launch", 801: "operation not supported", 999: "unknown error",
}

SUCCESS = 0
INVALID_VALUE = 1
MEMORY_ALLOCATION = 2
INVALID_CONFIGURATION = 9
INVALID_SYMBOL = 13
INVALID_DEVICE_POINTER = 17
INVALID_MEMCPY_DIRECTION = 21
INVALID_DEVICE_FUNCTION = 98
INVALID_DEVICE = 101
NO_KERNEL_IMAGE = 209
INVALID_IMAGE = 200
INVALID_PTX = 218
INVALID_HANDLE = 400
NOT_FOUND = 500
LAUNCH_OUT_OF_RESOURCES = 701
LAUNCH_TIMEOUT = 702
HOST_MEMORY_ALREADY_REGISTERED = 712
HOST_MEMORY_NOT_REGISTERED = 713
LAUNCH_FAILURE = 719
COOPERATIVE_LAUNCH_TOO_LARGE = 720
NOT_SUPPORTED = 801
UNKNOWN = 999

#: gpuemu's DeviceError/LaunchError names → the code CUDA returns
FROM_GPUEMU: Dict[str, int] = {name: code for code, name in DRIVER_NAMES.items()}
FROM_GPUEMU.update({"GPUEMU_DEADLOCK": LAUNCH_FAILURE, "GPUEMU_LIVELOCK": LAUNCH_TIMEOUT,
                    "GPUEMU_STEP_LIMIT": LAUNCH_TIMEOUT})


def runtime_name(code: int) -> str:
    return RUNTIME_NAMES.get(code, f"cudaError{code}")


def driver_name(code: int) -> str:
    return DRIVER_NAMES.get(code, f"CUDA_ERROR_{code}")


def meaning(code: int) -> str:
    if code in MEANINGS:
        return MEANINGS[code]
    name = RUNTIME_NAMES.get(code)
    if name is None:
        return "unrecognized error code"
    return " ".join(re.findall(r"[A-Z][a-z]*|[a-z]+", name[len("cudaError"):])).lower()


class CudaError(Exception):
    """An API call that fails with `code`; message (may be empty) is printed as gpuemu's one-line explanation."""

    def __init__(self, code: int, message: str = ""):
        self.code = code
        self.message = message
        super().__init__(message or meaning(code))
