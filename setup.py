"""Builds the optional cffi C memory core and arithmetic accelerators; without a C compiler the install goes on."""
import warnings

from setuptools import setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """build_ext that turns a failed C build into a warning instead of a failed install."""

    def run(self):
        try:
            super().run()
        except Exception as error:  # no compiler, missing headers, a platform distutils cannot drive
            warnings.warn(f"gpuemu: C extensions not built ({error}); the numpy fallbacks will be used")

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as error:
            warnings.warn(f"gpuemu: C extension {ext.name} not built ({error}); its numpy fallback will be used")


setup(
    cffi_modules=["emulator/memory/build_core.py:ffibuilder", "emulator/accel/build_arith.py:ffibuilder"],
    cmdclass={"build_ext": OptionalBuildExt},
)
