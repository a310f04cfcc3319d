"""The errors gpuemu reports, for code that catches them: `from emulator.errors import GpuemuError`."""
from emulator.base.errors import DeviceError, GpuemuError, LaunchError, PTXSemanticError, PTXSyntaxError, UsageError

__all__ = ["DeviceError", "GpuemuError", "LaunchError", "PTXSemanticError", "PTXSyntaxError", "UsageError"]
