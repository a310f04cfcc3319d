"""The Python front door: load PTX, launch kernels with numpy arrays, read the statistics."""
from emulator.runtime.launch import Device, DevicePointer, Kernel, LaunchStats, Module, load

__all__ = ["Device", "DevicePointer", "Kernel", "LaunchStats", "Module", "load"]
