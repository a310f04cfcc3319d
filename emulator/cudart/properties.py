"""The emulated device's properties: an H100 SXM5 by default, any field overridable with GPUEMU_DEVICE=key=value,..."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, Union

from ..errors import UsageError

GIB = 1 << 30

#: cudaDeviceProp fields of an H100 SXM5 80GB (CUDA 13 layout); arrays as lists
H100: Dict[str, Union[int, str, list]] = {
    "name": "NVIDIA H100 80GB HBM3 (gpuemu)", "totalGlobalMem": 80 * GIB, "sharedMemPerBlock": 48 * 1024,
    "regsPerBlock": 65536, "warpSize": 32, "memPitch": 2147483647, "maxThreadsPerBlock": 1024,
    "maxThreadsDim": [1024, 1024, 64], "maxGridSize": [2147483647, 65535, 65535], "totalConstMem": 65536,
    "major": 9, "minor": 0, "textureAlignment": 512, "texturePitchAlignment": 32, "multiProcessorCount": 132,
    "integrated": 0, "canMapHostMemory": 1, "maxTexture1D": 131072, "maxTexture1DMipmap": 32768,
    "maxTexture2D": [131072, 65536], "maxTexture2DMipmap": [32768, 32768],
    "maxTexture2DLinear": [131072, 65000, 2097120],
    "maxTexture2DGather": [32768, 32768], "maxTexture3D": [16384, 16384, 16384], "maxTexture3DAlt": [8192, 8192, 32768],
    "maxTextureCubemap": 32768, "maxTexture1DLayered": [32768, 2048], "maxTexture2DLayered": [32768, 32768, 2048],
    "maxTextureCubemapLayered": [32768, 2046], "maxSurface1D": 32768, "maxSurface2D": [131072, 65536],
    "maxSurface3D": [16384, 16384, 16384], "maxSurface1DLayered": [32768, 2048],
    "maxSurface2DLayered": [32768, 32768, 2048],
    "maxSurfaceCubemap": 32768, "maxSurfaceCubemapLayered": [32768, 2046], "surfaceAlignment": 512,
    "concurrentKernels": 1, "ECCEnabled": 1, "pciBusID": 1, "pciDeviceID": 0, "pciDomainID": 0, "tccDriver": 0,
    "asyncEngineCount": 3, "unifiedAddressing": 1, "memoryBusWidth": 5120, "l2CacheSize": 50 * 1024 * 1024,
    "persistingL2CacheMaxSize": 32 * 1024 * 1024, "maxThreadsPerMultiProcessor": 2048, "streamPrioritiesSupported": 1,
    "globalL1CacheSupported": 1, "localL1CacheSupported": 1, "sharedMemPerMultiprocessor": 228 * 1024,
    "regsPerMultiprocessor": 65536, "managedMemory": 1, "isMultiGpuBoard": 0, "multiGpuBoardGroupID": 0,
    "hostNativeAtomicSupported": 0, "pageableMemoryAccess": 0, "concurrentManagedAccess": 1,
    "computePreemptionSupported": 1, "canUseHostPointerForRegisteredMem": 0, "cooperativeLaunch": 1,
    "sharedMemPerBlockOptin": 227 * 1024, "pageableMemoryAccessUsesHostPageTables": 0,
    "directManagedMemAccessFromHost": 0, "maxBlocksPerMultiProcessor": 32, "accessPolicyMaxWindowSize": 134213632,
    "reservedSharedMemPerBlock": 1024, "hostRegisterSupported": 1, "sparseCudaArraySupported": 0,
    "hostRegisterReadOnlySupported": 1, "timelineSemaphoreInteropSupported": 0, "memoryPoolsSupported": 1,
    "gpuDirectRDMASupported": 0, "gpuDirectRDMAFlushWritesOptions": 0, "gpuDirectRDMAWritesOrdering": 0,
    "memoryPoolSupportedHandleTypes": 0, "deferredMappingCudaArraySupported": 0, "ipcEventSupported": 0,
    "clusterLaunch": 1, "unifiedFunctionPointers": 1, "deviceNumaConfig": 0, "deviceNumaId": -1, "mpsEnabled": 0,
    "hostNumaId": -1, "gpuPciDeviceID": 0x233010DE, "gpuPciSubsystemID": 0x16C110DE, "hostNumaMultinodeIpcSupported": 0,
    # not in CUDA 13's cudaDeviceProp; reported through cudaDeviceGetAttribute
    "clockRate": 1980000, "memoryClockRate": 2619000, "computeMode": 0, "kernelExecTimeoutEnabled": 0,
    "deviceOverlap": 1, "maxTexture1DLinear": 268435456, "singleToDoublePrecisionPerfRatio": 2,
}

#: cudaDeviceAttr / CUdevice_attribute number → property (the two enums share their numbers)
ATTRIBUTES: Dict[int, Union[str, tuple]] = {
    1: "maxThreadsPerBlock", 2: ("maxThreadsDim", 0), 3: ("maxThreadsDim", 1), 4: ("maxThreadsDim", 2),
    5: ("maxGridSize", 0), 6: ("maxGridSize", 1), 7: ("maxGridSize", 2), 8: "sharedMemPerBlock", 9: "totalConstMem",
    10: "warpSize", 11: "memPitch", 12: "regsPerBlock", 13: "clockRate", 14: "textureAlignment", 15: "deviceOverlap",
    16: "multiProcessorCount", 17: "kernelExecTimeoutEnabled", 18: "integrated", 19: "canMapHostMemory",
    20: "computeMode", 21: "maxTexture1D", 22: ("maxTexture2D", 0), 23: ("maxTexture2D", 1), 24: ("maxTexture3D", 0),
    25: ("maxTexture3D", 1), 26: ("maxTexture3D", 2), 27: ("maxTexture2DLayered", 0), 28: ("maxTexture2DLayered", 1),
    29: ("maxTexture2DLayered", 2), 30: "surfaceAlignment", 31: "concurrentKernels", 32: "ECCEnabled",
    33: "pciBusID", 34: "pciDeviceID", 35: "tccDriver", 36: "memoryClockRate", 37: "memoryBusWidth",
    38: "l2CacheSize", 39: "maxThreadsPerMultiProcessor", 40: "asyncEngineCount", 41: "unifiedAddressing",
    42: ("maxTexture1DLayered", 0), 43: ("maxTexture1DLayered", 1), 45: ("maxTexture2DGather", 0),
    46: ("maxTexture2DGather", 1), 47: ("maxTexture3DAlt", 0), 48: ("maxTexture3DAlt", 1), 49: ("maxTexture3DAlt", 2),
    50: "pciDomainID", 51: "texturePitchAlignment", 52: "maxTextureCubemap", 53: ("maxTextureCubemapLayered", 0),
    54: ("maxTextureCubemapLayered", 1), 55: "maxSurface1D", 56: ("maxSurface2D", 0), 57: ("maxSurface2D", 1),
    58: ("maxSurface3D", 0), 59: ("maxSurface3D", 1), 60: ("maxSurface3D", 2), 61: ("maxSurface1DLayered", 0),
    62: ("maxSurface1DLayered", 1), 63: ("maxSurface2DLayered", 0), 64: ("maxSurface2DLayered", 1),
    65: ("maxSurface2DLayered", 2), 66: "maxSurfaceCubemap", 67: ("maxSurfaceCubemapLayered", 0),
    68: ("maxSurfaceCubemapLayered", 1), 69: "maxTexture1DLinear", 70: ("maxTexture2DLinear", 0),
    71: ("maxTexture2DLinear", 1), 72: ("maxTexture2DLinear", 2), 73: ("maxTexture2DMipmap", 0),
    74: ("maxTexture2DMipmap", 1), 75: "major", 76: "minor", 77: "maxTexture1DMipmap",
    78: "streamPrioritiesSupported", 79: "globalL1CacheSupported", 80: "localL1CacheSupported",
    81: "sharedMemPerMultiprocessor", 82: "regsPerMultiprocessor", 83: "managedMemory", 84: "isMultiGpuBoard",
    85: "multiGpuBoardGroupID", 86: "hostNativeAtomicSupported", 87: "singleToDoublePrecisionPerfRatio",
    88: "pageableMemoryAccess", 89: "concurrentManagedAccess", 90: "computePreemptionSupported",
    91: "canUseHostPointerForRegisteredMem", 95: "cooperativeLaunch", 97: "sharedMemPerBlockOptin",
    99: "hostRegisterSupported", 100: "pageableMemoryAccessUsesHostPageTables", 101: "directManagedMemAccessFromHost",
    106: "maxBlocksPerMultiProcessor", 108: "persistingL2CacheMaxSize", 109: "accessPolicyMaxWindowSize",
    111: "reservedSharedMemPerBlock", 112: "sparseCudaArraySupported", 113: "hostRegisterReadOnlySupported",
    114: "timelineSemaphoreInteropSupported", 115: "memoryPoolsSupported", 116: "gpuDirectRDMASupported",
    117: "gpuDirectRDMAFlushWritesOptions", 118: "gpuDirectRDMAWritesOrdering", 119: "memoryPoolSupportedHandleTypes",
    120: "clusterLaunch", 121: "deferredMappingCudaArraySupported", 125: "ipcEventSupported", 130: "deviceNumaConfig",
    131: "deviceNumaId", 133: "mpsEnabled", 134: "hostNumaId", 139: "gpuPciDeviceID", 140: "gpuPciSubsystemID",
    143: "hostNumaMultinodeIpcSupported",
}


@dataclass
class DeviceProperties:
    values: Dict[str, Union[int, str, list]] = field(default_factory=lambda: dict(H100))
    #: registers a thread is assumed to use in occupancy figures (PTX does not say)
    registers_per_thread: int = 32

    @classmethod
    def from_environment(cls, text: str = None) -> "DeviceProperties":
        """H100 values, with GPUEMU_DEVICE="multiProcessorCount=8,totalGlobalMem=4294967296,name=My GPU" applied."""
        properties = cls()
        text = os.environ.get("GPUEMU_DEVICE", "") if text is None else text
        for item in filter(None, (part.strip() for part in text.split(","))):
            key, sep, value = item.partition("=")
            key = key.strip()
            if not sep or key not in properties.values:
                raise UsageError(f"GPUEMU_DEVICE: '{item}' is not FIELD=VALUE of a cudaDeviceProp field")
            if key == "name":
                properties.values[key] = value.strip()
                continue
            try:
                numbers = [int(part, 0) for part in value.replace("x", " ").split()] if key != "name" else []
            except ValueError:
                raise UsageError(f"GPUEMU_DEVICE: {key}={value} is not a number") from None
            current = properties.values[key]
            if isinstance(current, list):
                if len(numbers) != len(current):
                    raise UsageError(f"GPUEMU_DEVICE: {key} takes {len(current)} numbers separated by spaces")
                properties.values[key] = numbers
            else:
                properties.values[key] = numbers[0] if len(numbers) == 1 else current
        return properties

    def __getitem__(self, key: str):
        return self.values[key]

    def attribute(self, number: int) -> int:
        where = ATTRIBUTES.get(number)
        if where is None:
            return 0
        if isinstance(where, tuple):
            return int(self.values[where[0]][where[1]])
        return int(self.values[where])

    @property
    def arch(self) -> str:
        return f"sm_{self.arch_number}"

    @property
    def arch_number(self) -> int:
        return int(self.values["major"]) * 10 + int(self.values["minor"])

    @property
    def total_global_mem(self) -> int:
        return int(self.values["totalGlobalMem"])

    @property
    def multiprocessor_count(self) -> int:
        return int(self.values["multiProcessorCount"])

    @property
    def max_threads_per_sm(self) -> int:
        return int(self.values["maxThreadsPerMultiProcessor"])

    @property
    def registers_per_sm(self) -> int:
        return int(self.values["regsPerMultiprocessor"])

    @property
    def shared_per_sm(self) -> int:
        return int(self.values["sharedMemPerMultiprocessor"])

    @property
    def reserved_shared_per_block(self) -> int:
        return int(self.values["reservedSharedMemPerBlock"])

    @property
    def max_blocks_per_sm(self) -> int:
        return int(self.values["maxBlocksPerMultiProcessor"])
