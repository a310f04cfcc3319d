"""The Python front door: load PTX, launch kernels with numpy arrays, read the statistics."""
from emulator.runtime.module import Device, Kernel, Module, load
from emulator.runtime.arguments import DevicePointer
from emulator.runtime.launch import LaunchStats

__all__ = ["Device", "DevicePointer", "Kernel", "LaunchStats", "Module", "load"]
