"""CUDA C++ sources: compiled to PTX with nvcc (when on PATH) or NVRTC (the nvidia-cuda-nvrtc wheel), cached.

`gpuemu run k.cu`, `emulator.load("k.cu")`, `load(text, language="cuda")` and the CuPy-style RawModule
and RawKernel (emulator.raw) compile here. Every compile adds -lineinfo (reports name .cu lines; left out when
the options ask for -G, which implies it) and -arch from the emulated architecture unless the options give one.
GPUEMU_CUDA_COMPILER=nvcc or nvrtc picks a compiler; GPUEMU_NVRTC names a libnvrtc to load. The PTX is kept in
gpuemu's signed cache under a key over the source, the quoted headers it includes, the options, the architecture
and the compiler's identity, so an edited header or another compiler compiles afresh.
"""
from __future__ import annotations

import ctypes
import glob
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from emulator.base.cache import Cache, digest
from emulator.base.errors import UsageError
from emulator.base.text import printable

CUDA_SUFFIXES = (".cu",)
DEFAULT_ARCH = "sm_90"
DEFAULT_NAME = "kernel.cu"
#: the compiler options that ask for device debug information (DWARF variables; no optimisation)
DEBUG_OPTIONS = ("-G", "--device-debug")
CACHE_FORMAT = "cuda-ptx-1"
INSTALL_HINT = ("no CUDA compiler: put nvcc on PATH (the CUDA toolkit) or pip install 'gpuemu[cuda]' "
                "(NVRTC, no toolkit needed)")
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]', re.MULTILINE)


class CudaCompileError(UsageError):
    """The compiler refused the source; the message is its own `file(line): error` report."""

    def __init__(self, compiler: str, log: str):
        lines = [line.rstrip() for line in log.strip("\n").splitlines()]
        super().__init__(lines[0] if lines else f"{compiler} failed")
        self.compiler = compiler
        self.log = "\n".join(printable(line) for line in lines) or f"{compiler} failed without a message"
        self.args = (self.log,)


def is_cuda_path(path) -> bool:
    return os.fspath(path).lower().endswith(CUDA_SUFFIXES)


def arch_name(arch) -> str:
    """90, "90", "sm_90", "sm_90a" or "compute_90" → "sm_90" / "sm_90a"."""
    match = re.fullmatch(r"(?:sm_|compute_)?(\d+)([af]?)", str(arch if arch is not None else DEFAULT_ARCH).strip())
    if not match:
        raise UsageError(f"architecture '{arch}' is not sm_NN (for example sm_80 or sm_90)")
    return f"sm_{match.group(1)}{match.group(2)}"


# ---- compilers ----

class Nvcc:
    name = "nvcc"

    def __init__(self, executable: str):
        self.executable = executable

    def identity(self) -> str:
        try:
            result = subprocess.run([self.executable, "--version"], capture_output=True, text=True, timeout=60)
            version = result.stdout
        except (OSError, subprocess.SubprocessError):
            version = "?"
        return f"nvcc {os.path.realpath(self.executable)} {version}"

    def compile(self, source: str, file_name: str, options: List[str], arch: str,
                directory: Optional[str]) -> Tuple[str, str]:
        """(PTX, the compiler's messages); raises CudaCompileError."""
        with tempfile.TemporaryDirectory(prefix="gpuemu-nvcc-") as scratch:
            output = os.path.join(scratch, "out.ptx")
            if directory is None:
                source_path = os.path.join(scratch, os.path.basename(file_name))
                Path(source_path).write_text(source, encoding="utf-8")
                command_source, cwd = os.path.basename(file_name), scratch
            else:
                command_source, cwd = file_name, None
            command = [self.executable, "-ptx", *_line_info(options), *_arch_option(options, f"-arch={arch}"), *options,
                       command_source, "-o", output]
            try:
                result = subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=600)
            except OSError as error:
                raise UsageError(f"cannot run {self.executable}: {error.strerror or error}") from None
            except subprocess.TimeoutExpired:
                raise UsageError(f"nvcc did not finish compiling {file_name} in 600 s") from None
            messages = (result.stderr + result.stdout).strip()
            if result.returncode != 0 or not os.path.exists(output):
                raise CudaCompileError("nvcc", messages or f"nvcc exited with status {result.returncode}")
            ptx = Path(output).read_text(encoding="utf-8", errors="replace")
            if directory is None:
                ptx = ptx.replace(scratch + os.sep, "")
            return ptx, messages


class Nvrtc:
    name = "nvrtc"

    def __init__(self, library_path: str):
        self.library_path = library_path
        try:
            self.library = ctypes.CDLL(library_path)
        except OSError as error:
            raise UsageError(f"cannot load NVRTC from {library_path}: {error}") from None
        self.library.nvrtcGetErrorString.restype = ctypes.c_char_p

    def version(self) -> Tuple[int, int]:
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.library.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        return major.value, minor.value

    def identity(self) -> str:
        return f"nvrtc {os.path.realpath(self.library_path)} {self.version()}"

    def _check(self, status: int, what: str) -> None:
        if status != 0:
            message = self.library.nvrtcGetErrorString(status)
            raise UsageError(f"NVRTC {what} failed: {message.decode(errors='replace') if message else status}")

    def compile(self, source: str, file_name: str, options: List[str], arch: str,
                directory: Optional[str]) -> Tuple[str, str]:
        virtual = "compute_" + arch[len("sm_"):]
        flags = [*_line_info(options), *_arch_option(options, f"-arch={virtual}"), *options]
        if directory is not None:
            flags.append(f"-I{directory or '.'}")
        program = ctypes.c_void_p()
        self._check(self.library.nvrtcCreateProgram(ctypes.byref(program), source.encode("utf-8"),
                                                    file_name.encode("utf-8"), 0, None, None), "nvrtcCreateProgram")
        try:
            encoded = [flag.encode("utf-8") for flag in flags]
            array = (ctypes.c_char_p * len(encoded))(*encoded)
            status = self.library.nvrtcCompileProgram(program, len(encoded), array)
            size = ctypes.c_size_t()
            self._check(self.library.nvrtcGetProgramLogSize(program, ctypes.byref(size)), "nvrtcGetProgramLogSize")
            log = ctypes.create_string_buffer(size.value + 1)
            self._check(self.library.nvrtcGetProgramLog(program, log), "nvrtcGetProgramLog")
            messages = log.value.decode("utf-8", errors="replace").strip()
            if status != 0:
                raise CudaCompileError("nvrtc", messages or self.library.nvrtcGetErrorString(status).decode())
            self._check(self.library.nvrtcGetPTXSize(program, ctypes.byref(size)), "nvrtcGetPTXSize")
            ptx = ctypes.create_string_buffer(size.value + 1)
            self._check(self.library.nvrtcGetPTX(program, ptx), "nvrtcGetPTX")
            return ptx.value.decode("utf-8", errors="replace"), messages
        finally:
            self.library.nvrtcDestroyProgram(ctypes.byref(program))


def _line_info(options: Sequence[str]) -> List[str]:
    """-lineinfo unless the options ask for -G (device debug information), which includes it and which nvcc and
    ptxas warn about combining with it."""
    return [] if any(option in DEBUG_OPTIONS for option in options) else ["-lineinfo"]


def _arch_option(options: Sequence[str], default: str) -> List[str]:
    """[default] unless the options choose an architecture themselves."""
    chosen = any(option.startswith(("-arch", "--gpu-architecture", "-gencode", "--generate-code"))
                 for option in options)
    return [] if chosen else [default]


def nvrtc_library() -> Optional[str]:
    """libnvrtc: $GPUEMU_NVRTC, else the nvidia-cuda-nvrtc wheel's (CUDA 13 or 12), else the system's."""
    explicit = os.environ.get("GPUEMU_NVRTC")
    if explicit:
        return explicit
    roots = []
    for key in ("purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path and path not in roots:
            roots.append(path)
    roots += [entry for entry in sys.path if entry and entry not in roots and os.path.isdir(entry)]
    patterns = ("nvidia/cu*/lib/libnvrtc.so*", "nvidia/cuda_nvrtc/lib/libnvrtc.so*")
    for root in roots:
        for pattern in patterns:
            found = sorted(path for path in glob.glob(os.path.join(root, pattern)) if "builtins" not in path)
            if found:
                return found[-1]
    import ctypes.util
    return ctypes.util.find_library("nvrtc")


def find_compiler(wanted: Optional[str] = None):
    """nvcc when on PATH, else NVRTC; wanted (else $GPUEMU_CUDA_COMPILER) = "nvcc" or "nvrtc" insists on one."""
    source = "compiler" if wanted is not None else "GPUEMU_CUDA_COMPILER"
    wanted = (wanted if wanted is not None else os.environ.get("GPUEMU_CUDA_COMPILER", "")).strip().lower()
    if wanted not in ("", "nvcc", "nvrtc"):
        raise UsageError(f"{source}={wanted!r}: choose nvcc or nvrtc")
    if wanted in ("", "nvcc"):
        executable = shutil.which("nvcc")
        if executable:
            return Nvcc(executable)
        if wanted == "nvcc":
            raise UsageError(f"{source}=nvcc but nvcc is not on PATH: install the CUDA toolkit")
    library = nvrtc_library()
    if library:
        return Nvrtc(library)
    if wanted == "nvrtc":
        raise UsageError(f"{source}=nvrtc but NVRTC is not installed: pip install 'gpuemu[cuda]'")
    raise UsageError(INSTALL_HINT)


# ---- the cache key ----

def _include_dirs(options: Sequence[str]) -> List[str]:
    folders, options = [], list(options)
    for index, option in enumerate(options):
        for prefix in ("--include-path=", "-I"):
            if option.startswith(prefix):
                value = option[len(prefix):] or (options[index + 1] if index + 1 < len(options) else "")
                if value:
                    folders.append(value)
    return folders


def included_files(source: str, directory: Optional[str], options: Sequence[str]) -> Optional[Dict[str, bytes]]:
    """The contents of the user headers the source includes, transitively: "x.h" beside the including file or
    under -I, <x.h> when found under -I (others are the compiler's own). None when a quoted one is missing."""
    found: Dict[str, bytes] = {}
    search = _include_dirs(options)
    pending = [(source, directory)]
    while pending:
        text, here = pending.pop()
        for kind, name in _INCLUDE.findall(text):
            places = ([here] if kind == '"' and here is not None else []) + search
            path = next((os.path.join(place, name) for place in places if os.path.isfile(os.path.join(place, name))),
                        None)
            if path is None:
                if kind == '"':
                    return None
                continue
            path = os.path.realpath(path)
            if path in found:
                continue
            try:
                data = Path(path).read_bytes()
            except OSError:
                return None
            found[path] = data
            pending.append((data.decode("utf-8", errors="replace"), os.path.dirname(path)))
    return found


def cache_key(compiler, source: str, file_name: str, options: Sequence[str], arch: str,
              directory: Optional[str]) -> Optional[str]:
    headers = included_files(source, directory, options)
    if headers is None:
        return None
    parts = [CACHE_FORMAT, compiler.identity(), arch, "\0".join(options), file_name, source]
    for path in sorted(headers):
        parts += [path, headers[path]]
    return digest(*parts)


# ---- front doors ----

def compile_ptx(source: str, *, file_name: str = DEFAULT_NAME, options: Sequence[str] = (), arch=None,
                directory: Optional[str] = None, compiler: Optional[str] = None) -> str:
    """PTX for CUDA C++ source text. file_name names it in the compiler's messages and the PTX's .file;
    directory (for a source read from a file) is where its quoted includes are found; compiler: "nvcc" or
    "nvrtc" (default: nvcc when on PATH)."""
    options = [str(option) for option in options]
    arch = arch_name(arch)
    compiler = find_compiler(compiler)
    key = cache_key(compiler, source, file_name, options, arch, directory)
    cache = Cache("cuda")
    if key is not None:
        cached = cache.load(key)
        if cached is not None:
            return cached.decode("utf-8")
    ptx, messages = compiler.compile(source, file_name, options, arch, directory)
    if messages:
        print(printable(messages, keep_newlines=True), file=sys.stderr)
    if key is not None:
        cache.store(key, ptx.encode("utf-8"))
    return ptx


def compile_file(path, *, options: Sequence[str] = (), arch=None, compiler: Optional[str] = None) -> str:
    """PTX for a .cu file, compiled where it lies so its own includes resolve."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise UsageError(f"{path}: no such file")
    try:
        source = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text") from None
    except OSError as error:
        raise UsageError(f"{path}: cannot read it ({error.strerror or error})") from None
    return compile_ptx(source, file_name=path, options=options, arch=arch, directory=os.path.dirname(path) or ".",
                       compiler=compiler)


def ptx_name(path) -> str:
    """What reports call the PTX compiled from a .cu file: `k.cu.ptx`, beside it (so `k.cu:LINE` means the
    CUDA line, and `k.cu.ptx:LINE` the PTX one)."""
    return f"{os.fspath(path)}.ptx"
