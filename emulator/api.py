"""The Python front door: load PTX, SASS or CUDA C++, launch kernels with numpy arrays, read the statistics."""
from emulator.base.errors import DeviceError, GpuemuError, LaunchError, PTXSemanticError, PTXSyntaxError, UsageError
from emulator.raw import RawKernel, RawModule
from emulator.runtime.arguments import DevicePointer
from emulator.runtime.launch import LaunchStats
from emulator.runtime.module import Device, Kernel, Module, load

__all__ = ["Device", "DevicePointer", "Kernel", "LaunchStats", "Module", "load", "RawKernel", "RawModule",
           "GpuemuError", "UsageError", "LaunchError", "DeviceError", "PTXSyntaxError", "PTXSemanticError"]
