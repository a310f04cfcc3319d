"""Builds the optional cffi C memory core and arithmetic accelerators, and gpuemu's drop-in CUDA libraries
(emulator/cudart); without a C compiler the install goes on."""
import os
import sys
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
        if self.inplace:
            build_cuda_libraries()

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as error:
            warnings.warn(f"gpuemu: C extension {ext.name} not built ({error}); its numpy fallback will be used")


def build_cuda_libraries():
    """libcudart.so.13/.12 and libcuda.so.1 beside the package (an in-place, editable install); elsewhere, and when
    this fails, `gpuemu libdir` builds them on first use."""
    try:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from emulator.cudart import libdir
        for name, reason in libdir.build_into(os.path.join(libdir.PACKAGE_LIBS, libdir.build_key())).items():
            warnings.warn(f"gpuemu: {name} {reason}")
    except Exception as error:
        warnings.warn(f"gpuemu: CUDA libraries not built ({error}); `gpuemu libdir` builds them on first use")


setup(
    cffi_modules=["emulator/memory/build_core.py:ffibuilder", "emulator/accel/build_arith.py:ffibuilder"],
    cmdclass={"build_ext": OptionalBuildExt},
)
