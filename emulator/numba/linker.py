"""numba-cuda's link step made to hand gpuemu PTX: its _Linker links the PTX of a kernel (and of the .ptx/.cu files
it links with) into one PTX module (emulator.cudart.ptxlink) instead of having nvJitLink make a cubin, which gpuemu
cannot run. LTO is turned off for the same reason: LTO-IR is NVVM bitcode, not PTX (the result is the same code, less
link-time optimisation). numba-cuda then loads that PTX through cuLibraryLoadData as it would load a cubin."""
from __future__ import annotations

from emulator.base.errors import UsageError
from emulator.cudart import fatbin, ptxlink

#: the numba-cuda releases whose _Linker this was written against (gpuemu[numba] pins them)
SUPPORTED = ("0.30.",)
EMULATED_ARCH = 90


def install() -> None:
    """Patch numba.cuda.cudadrv.driver._Linker in place (modules that imported the class see the change too)."""
    from numba.cuda.cudadrv import driver
    linker = driver._Linker
    if getattr(linker, "_gpuemu", False):
        return
    for name in ("complete", "add_ptx", "add_cu"):
        if not hasattr(linker, name):
            raise UsageError(f"this numba-cuda's linker has no {name}: gpuemu supports numba-cuda "
                             f"{', '.join(v + 'x' for v in SUPPORTED)} (pip install 'gpuemu[numba]')")
    original_init = linker.__init__

    def __init__(self, *args, **kwargs):
        kwargs["lto"] = None
        original_init(self, *args, **kwargs)

    linker.__init__ = __init__
    linker.complete = _complete
    linker._gpuemu = True


def _text(code) -> str:
    return code.decode("utf-8", "replace") if isinstance(code, (bytes, bytearray)) else str(code)


def _complete(self):
    """One PTX module from everything added to the link, as a cuda.core ObjectCode (numba's cubin slot)."""
    from cuda.core import ObjectCode
    from numba.cuda.cudadrv.driver import LinkerError
    modules = []
    for code in self._object_codes:
        kind = code.code_type
        if kind == "ptx":
            modules.append(_text(code.code).split("\0", 1)[0])
        elif kind == "fatbin":
            try:
                entry = fatbin.choose_ptx(fatbin.parse_container(bytes(code.code)), EMULATED_ARCH, code.name)
            except fatbin.FatbinError as error:
                raise LinkerError(f"gpuemu: {error}") from None
            modules.append(entry.text())
        elif kind == "library" and "cudadevrt" in (code.name or ""):
            continue  # the device runtime's calls are reported where a kernel makes them
        else:
            raise LinkerError(f"gpuemu runs PTX: {code.name or 'an input'} is {kind}, which it cannot link; link "
                              f".ptx or .cu files (or fat binaries holding PTX)")
    try:
        linked = ptxlink.link(modules)
    except UsageError as error:
        raise LinkerError(f"gpuemu: {error}") from None
    self.linker = "gpuemu"
    self._info_log = self._error_log = ""
    self._complete = True
    return ObjectCode.from_ptx(linked.encode(), name="gpuemu-linked.ptx")
