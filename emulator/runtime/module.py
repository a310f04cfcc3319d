"""Devices, modules and kernels: PTX or a SASS listing loaded into a device's memory, kernels launched with
numpy arrays and scalars."""
from __future__ import annotations

import os
import re
import sys
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from emulator import ir
from emulator.base.errors import PTXSemanticError, PTXSyntaxError, UsageError
from emulator.base.sources import read_program
from emulator.frontend import cuda
from emulator.frontend.ptx import syntax as S
from emulator.frontend.ptx.cache import parse_cached
from emulator.frontend.ptx.lower import function_symbols, immediate_problem, lower_kernel, variable_align, variable_size
from emulator.frontend.sass import looks_like_sass
from emulator.frontend.sass.program import SassProgram
from emulator.ir.sass import EXTERNAL_FUNCTIONS
from emulator.machine.calls import DEFAULT_STACK_BYTES
from emulator.machine.operands import immediate
from emulator.machine.sass import BANK_BYTES
from emulator.memory import Memory
from emulator.runtime import budget
from emulator.runtime.arguments import describe_value, dim3, symbol_bytes
from emulator.runtime.launch import (CONST_BANK_LIMIT, DEFAULT_ARCH, DEFAULT_BATCH_BYTES, DEFAULT_MAX_STEPS,
                                     DEFAULT_SPIN_LIMIT, GLOBAL_VARIABLE_LIMIT, Launch, LaunchStats)
from emulator.runtime.names import arch_number, plain_name
from emulator.runtime.sass import CONSTANT_BANKS
from isa.types import TYPES

_BANK_NAME = re.compile(r"^c\[?\s*(0x[0-9a-fA-F]+|\d+)\s*\]?(?:\[\s*(0x[0-9a-fA-F]+|\d+)\s*\])?$")


class Device:
    """A device context: one global memory and the stream printf writes to."""

    def __init__(self, *, backend: str = "auto", stdout=None, arch: Union[str, int] = DEFAULT_ARCH,
                 spin_limit: int = DEFAULT_SPIN_LIMIT, max_memory: Union[int, str, None] = None):
        """arch: sm_70 and newer count barrier arrivals per thread, older ones per warp; spin_limit:
        loop iterations after which a batch whose state stopped changing is reported (0: never); max_memory: the
        most host memory (bytes, or a size such as '4G') the device's data and a launch's state may take
        (default: a share of the available memory, emulator.runtime.budget)."""
        if max_memory is not None and not isinstance(max_memory, str) and \
                (not isinstance(max_memory, (int, np.integer)) or isinstance(max_memory, bool) or max_memory < 1):
            raise UsageError(f"max_memory must be a positive number of bytes or a size such as '4G', "
                             f"not {describe_value(max_memory)}")
        self.max_memory = budget.parse_size(max_memory) if isinstance(max_memory, str) else max_memory
        self.memory = Memory(backend=backend)
        self.stdout = stdout
        self.launches = 0
        self.arch = arch_number(arch)
        self.spin_limit = int(spin_limit)
        #: per-thread stack for recursive functions' frames (cudaDeviceSetLimit(cudaLimitStackSize, ...))
        self.stack_bytes = DEFAULT_STACK_BYTES

    def write_stdout(self, text: str) -> None:
        stream = self.stdout if self.stdout is not None else sys.stdout
        stream.write(text)


def check_source_text(text, source_name: str) -> None:
    """Source text is a str of Unicode characters: a lone surrogate (from Python text that was never UTF-8) is a
    syntax error at its line and column."""
    if not isinstance(text, str):
        raise UsageError(f"{source_name}: the source must be text (str), not {describe_value(text)}")
    match = _SURROGATE.search(text)
    if match is not None:
        line = text.count("\n", 0, match.start()) + 1
        col = match.start() - (text.rfind("\n", 0, match.start()) + 1) + 1
        raise PTXSyntaxError(source_name, line, col, f"character U+{ord(match.group()):04X} is a lone surrogate, "
                                                     f"not a Unicode character (the text was never valid UTF-8)")


_SURROGATE = re.compile("[\ud800-\udfff]")


class Module:
    """A PTX module loaded into a device: globals allocated, constants initialised, kernels on demand."""

    #: make ptxas's FMA contractions and folds of .approx constants when lowering (emulator.ir.contract,
    #: emulator.ir.fold); False runs the PTX literally
    contract = True

    def __new__(cls, text: str = "", source_name: str = "<ptx>", device: Optional[Device] = None):
        """Module(text) of a SASS listing (a .sass file, cuobjdump -sass output) is a SassModule."""
        check_source_text(text, source_name)
        if cls is Module and looks_like_sass(text, source_name):
            return super().__new__(SassModule)
        return super().__new__(cls)

    def __init__(self, text: str, source_name: str = "<ptx>", device: Optional[Device] = None):
        self.source_name = source_name
        self.syntax = parse_cached(text, source_name)
        self.device = device or Device()
        self.symbols: Dict[str, ir.SymbolInfo] = {}
        self.const_base = 0
        self.const_size = 0
        self._programs: Dict[str, ir.Program] = {}
        self._load_variables()

    # ---- variables ----
    def _load_variables(self) -> None:
        memory = self.device.memory
        self._check_variable_memory()
        self.symbols.update(function_symbols(self.syntax))
        const_decls = [d for d in self.syntax.variables if d.space == "const"]
        offset = 0
        for decl in const_decls:
            align = variable_align(decl)
            offset = (offset + align - 1) // align * align
            self.symbols[decl.name] = ir.SymbolInfo(decl.name, "const", offset, variable_size(decl), align)
            offset += variable_size(decl)
        self.const_size = max(offset, 4)
        if offset > CONST_BANK_LIMIT:
            decl = const_decls[-1]
            raise PTXSemanticError(self.source_name, decl.pos.line, decl.pos.col,
                                   f"{budget.format_size(offset)} of __constant__ data exceed the {CONST_BANK_LIMIT}-byte bank")
        self.const_base = memory.alloc(self.const_size, kind="const", name="__constant__")
        memory.write(self.const_base, np.zeros(self.const_size, dtype=np.uint8))
        for decl in self.syntax.variables:
            if decl.space == "global":
                size = max(variable_size(decl), 1)
                address = memory.alloc(size, align=max(variable_align(decl), 16), name=decl.name)
                self.symbols[decl.name] = ir.SymbolInfo(decl.name, "global", address, size, variable_align(decl))
        for decl in self.syntax.variables:
            if decl.init is not None and decl.space in ("global", "const"):
                symbol = self.symbols[decl.name]
                base = symbol.address + (self.const_base if decl.space == "const" else 0)
                memory.write(base, self._initializer_bytes(decl))
            elif decl.space not in ("global", "const", "shared"):
                raise PTXSemanticError(self.source_name, decl.pos.line, decl.pos.col,
                                       f"module-scope .{decl.space} variables are not supported")

    def _check_variable_memory(self) -> None:
        """Refuse the module before allocating when its .global and .const variables exceed the device's host
        memory limit (each .global is also capped at GLOBAL_VARIABLE_LIMIT), and make room for them at once."""
        sizes = [max(variable_size(d), 1) for d in self.syntax.variables if d.space == "global"]
        too_large = [(d, size) for d, size in zip((d for d in self.syntax.variables if d.space == "global"), sizes)
                     if size > GLOBAL_VARIABLE_LIMIT]
        if too_large:
            decl, size = too_large[0]
            raise PTXSemanticError(self.source_name, decl.pos.line, decl.pos.col,
                                   f"global variable '{decl.name}' of {budget.format_size(size)} is too large "
                                   f"(at most {budget.format_size(GLOBAL_VARIABLE_LIMIT)})")
        total = sum(size + 256 + max(variable_align(d), 16) for d, size in
                    zip((d for d in self.syntax.variables if d.space == "global"), sizes))
        budget.check({f"{len(sizes)} .global variables": total, "the __constant__ bank": CONST_BANK_LIMIT},
                     self.device.max_memory, self.device.memory.bytes_in_use, f"loading {self.source_name}")
        self.device.memory.reserve(total)

    def _initializer_bytes(self, decl: S.VarDecl) -> np.ndarray:
        element = TYPES.get(decl.type)
        size = variable_size(decl)
        out = np.zeros(size, dtype=np.uint8)
        values = []

        def flatten(value):
            if isinstance(value, list):
                for item in value:
                    flatten(item)
            else:
                values.append(value)

        flatten(decl.init)
        width = element.bytes if element else 1
        for i, value in enumerate(values):
            if (i + 1) * width > size:
                raise PTXSemanticError(self.source_name, decl.pos.line, decl.pos.col,
                                       f"too many initialisers for '{decl.name}'")
            if isinstance(value, tuple):
                _, name, extra = value
                target = self.symbols.get(name)
                if target is None:
                    raise PTXSemanticError(self.source_name, decl.pos.line, decl.pos.col,
                                           f"initialiser names unknown symbol '{name}'")
                address = target.address + (self.const_base if target.space == "const" else 0) + extra
                raw = np.array([address], dtype=np.uint64).view(np.uint8)[:width]
            else:
                ref = ir.ImmRef(value.kind, value.value)
                problem = immediate_problem(ref, decl.type if element else "b8")
                if problem:
                    raise PTXSemanticError(self.source_name, decl.pos.line, decl.pos.col,
                                           f"{problem} in the initialiser of '{decl.name}'")
                scalar = immediate(ref, decl.type if element else "b8")
                raw = np.array([scalar]).view(np.uint8)
            out[i * width:(i + 1) * width] = raw
        return out

    def global_address(self, name: str) -> Tuple[int, int]:
        """(device address, size) of a __device__ or __constant__ symbol."""
        symbol = self.symbols.get(name)
        if symbol is None:
            for candidate in self.symbols.values():
                if plain_name(candidate.name) == name:
                    symbol = candidate
                    break
        if symbol is None:
            raise UsageError(f"no __constant__ or __device__ symbol named '{name}' in {self.source_name}")
        base = self.const_base if symbol.space == "const" else 0
        return base + symbol.address, symbol.size

    def set_symbol(self, name: str, data: np.ndarray) -> None:
        address, size = self.global_address(name)
        raw = symbol_bytes(name, data)
        if raw.size > size:
            raise UsageError(f"{raw.size} bytes do not fit symbol '{name}' of {size} bytes")
        self.device.memory.write(address, raw)

    # ---- kernels ----
    @property
    def kernel_names(self) -> List[str]:
        return [fn.name for fn in self.syntax.functions if fn.kind == "entry" and fn.body is not None]

    def resolve_kernel(self, name: Optional[str]) -> str:
        names = self.kernel_names
        if name is None:
            if len(names) == 1:
                return names[0]
            if not names:
                raise UsageError(f"{self.source_name} defines no kernel (no .entry with a body)")
            listing = ", ".join(plain_name(n) for n in names)
            raise UsageError(f"{self.source_name} has {len(names)} kernels ({listing}): choose one by name "
                             f"(--kernel NAME, or kernel(NAME) from Python)")
        if name in names:
            return name
        matches = [n for n in names if plain_name(n) == name]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise UsageError(f"'{name}' is ambiguous: {', '.join(matches)}")
        listing = ", ".join(plain_name(n) for n in names) or "none"
        raise UsageError(f"no kernel named '{name}' in {self.source_name} (kernels: {listing})")

    def program(self, name: str) -> ir.Program:
        if name not in self._programs:
            try:
                self._programs[name] = lower_kernel(self.syntax, name, self.symbols, contract=self.contract)
            except RecursionError:
                raise PTXSemanticError(self.source_name, 1, 1, f"kernel '{name}' nests blocks too deeply") from None
        return self._programs[name]

    def kernel(self, name: Optional[str] = None) -> "Kernel":
        return Kernel(self, self.resolve_kernel(name))

    def __getitem__(self, name: str) -> "Kernel":
        return self.kernel(name)


class Kernel:
    """One entry function of a module; launch it with numpy arrays and scalars."""

    def __init__(self, module: Module, name: str):
        self.module = module
        self.name = name
        self.program = module.program(name)

    @property
    def params(self) -> List[ir.KernelParam]:
        return self.program.params

    def __call__(self, grid, block, args, shared_mem: int = 0, **options) -> LaunchStats:
        return self.launch(grid, block, args, shared=shared_mem, **options)

    def launch(self, grid, block, args: Sequence, shared: int = 0, *, max_steps: int = DEFAULT_MAX_STEPS,
               observer=None, policy=None, max_dynamic_shared: Optional[int] = None,
               batch_bytes: int = DEFAULT_BATCH_BYTES, arch: Union[str, int, None] = None,
               spin_limit: Optional[int] = None, progress=None,
               environment: Optional[Dict[int, int]] = None, move_arguments: bool = False,
               engine: Optional[str] = None) -> LaunchStats:
        """Run the kernel; numpy array arguments are copied to the device and written back in place.

        observer: an emulator.observe.Observer (statistics, traces, checkers, debugger); policy: a
        scheduling policy object with select(batch) (and optionally turn_limit) replacing the default
        lowest-pc-first choice of the next group of threads. arch and spin_limit default to the device's.
        progress: called with (CTAs done, CTAs in all) after each batch of CTAs. environment: the values of
        %envreg0..31 (a driver's; a cooperative launch's grid-sync workspace is %envreg1:%envreg2).
        engine: "compiled" runs straight-line code as generated C, "interpreter" in numpy, "auto" (the default, or
        GPUEMU_ENGINE) compiles a kernel once it has done enough work or when it is already in the cache; with an
        observer or a scheduling policy the interpreter runs it (emulator.machine.codegen).
        move_arguments: the arrays' host pages may be given back while their copies are on the device (for arrays
        the caller made only to pass: less memory at once; their contents are undefined if the launch fails). A
        launch whose memory would exceed the device's max_memory is refused before it starts (LaunchError
        CUDA_ERROR_OUT_OF_MEMORY)."""
        launch = Launch(self, dim3(grid, "grid"), dim3(block, "block"), shared, observer=observer, policy=policy,
                        max_dynamic_shared=max_dynamic_shared, arch=arch, spin_limit=spin_limit, engine=engine)
        launch.environment = dict(environment or {})
        return launch.run(list(args), max_steps=max_steps, batch_bytes=batch_bytes, progress=progress,
                          move_arguments=move_arguments)


SOURCE_SUFFIXES = (".ptx", ".sass", ".cubin", ".fatbin", ".cuobjdump", ".s", ".txt", ".cu")


def looks_like_path(text: str) -> bool:
    """A one-line string that names a file: it ends like a kernel source or holds a directory separator."""
    if "\n" in text or "{" in text or ";" in text:
        return False
    return text.strip().lower().endswith(SOURCE_SUFFIXES) or "/" in text or os.sep in text


def load(source: Union[str, bytes, os.PathLike], *, device: Optional[Device] = None, language: Optional[str] = None,
         options: Sequence[str] = (), contract: bool = True) -> Module:
    """Load PTX (or a SASS listing) from a path or from its text; bytes are taken as UTF-8 text. A .cu path, or
    text with language="cuda", is CUDA C++ compiled with the compiler options given (emulator.frontend.cuda).
    contract=False runs the PTX literally, without the FMA contractions and the constant folds of .approx
    instructions ptxas makes (docs/fidelity.md)."""
    module = _read(source, device, language, options)
    module.contract = bool(contract)
    return module


def _read(source, device: Optional[Device], language: Optional[str], options: Sequence[str]) -> Module:
    if language not in (None, "ptx", "cuda"):
        raise UsageError(f"language={language!r}: choose 'ptx' or 'cuda'")
    if isinstance(source, (bytes, bytearray)):
        try:
            source = bytes(source).decode("utf-8")
        except UnicodeDecodeError as error:
            raise UsageError(f"load() was given bytes that are not UTF-8 text "
                             f"(byte 0x{error.object[error.start]:02x} at offset {error.start})") from None
    if isinstance(source, os.PathLike) or (isinstance(source, str) and
                                           (looks_like_path(source) or ("\n" not in source and
                                                                        os.path.exists(source)))):
        path = os.fsdecode(os.fspath(source))
        if not os.path.exists(path):
            raise UsageError(f"{path}: no such file")
        if language == "cuda" or (language is None and cuda.is_cuda_path(path)):
            return load_cuda(path, device=device, options=options, from_file=True)
        return Module(read_program(path), path, device)
    if not isinstance(source, str):
        raise UsageError(f"load() takes a path, PTX text or UTF-8 bytes, not {describe_value(source)}")
    if language == "cuda":
        check_source_text(source, "<cuda>")
        return load_cuda(source, device=device, options=options)
    return Module(source, "<ptx>", device)


class SassModule(Module):
    """A cuobjdump -sass listing (one or more `Function :` sections) loaded into a device."""

    def __init__(self, text: str, source_name: str = "<sass>", device: Optional[Device] = None):
        from emulator.frontend.sass.parse import parse_listing  # lark: only a listing pays for importing it
        self.source_name = "<sass>" if source_name == "<ptx>" else source_name
        self.listing = parse_listing(text, self.source_name)
        self.syntax = None
        self.device = device or Device()
        self.symbols = {}
        self.const_base = 0
        self.const_size = 0
        self.banks: Dict[int, np.ndarray] = {}
        self._programs: Dict[str, SassProgram] = {}

    @property
    def kernel_names(self) -> List[str]:
        return [function.name for function in self.listing.functions]

    def program(self, name: str) -> SassProgram:
        if name not in self._programs:
            from emulator.frontend.sass.lower import lower_function
            function = next(f for f in self.listing.functions if f.name == name)
            self._programs[name] = lower_function(self.listing, function, self.source_name)
        return self._programs[name]

    def global_address(self, name: str):
        raise UsageError(f"a SASS listing names no symbols: set constant bank 3 with c[0x3]=@file.npy, not '{name}'")

    def set_symbol(self, name: str, data: np.ndarray) -> None:
        """Fill constant bank N (name `c[0xN]`, `cN` or `c[0xN][offset]`) with data's bytes."""
        match = _BANK_NAME.match(name.strip())
        if match is None:
            self.global_address(name)
        bank = int(match.group(1), 0)
        offset = int(match.group(2), 0) if match.group(2) else 0
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        if not 0 < bank < CONSTANT_BANKS or offset + raw.size > BANK_BYTES:
            raise UsageError(f"{raw.size} bytes at {offset:#x} do not fit constant bank {bank} (banks 1 to "
                             f"{CONSTANT_BANKS - 1} hold {BANK_BYTES} bytes each; bank 0 belongs to the launch)")
        self.banks.setdefault(bank, np.zeros(BANK_BYTES, dtype=np.uint8))[offset:offset + raw.size] = raw

    def launch_banks(self) -> Dict[int, np.ndarray]:
        """The constant banks (other than the launch's bank 0) a launch of this module's code reads."""
        return self.banks


class CubinModule(SassModule):
    """A cubin (SASS for one GPU, as a fat binary may hold it alone) run from its cuobjdump listing: the ELF's
    __device__ variables are allocated and initialised, its __constant__ bank (3) lives in device memory where
    cudaMemcpyToSymbol writes it, and bank 4 holds the variables' addresses as the driver relocates them."""

    def __new__(cls, image: bytes = b"", source_name: str = "<cubin>", device: Optional[Device] = None,
                listing: Optional[str] = None):
        return object.__new__(cls)

    def __init__(self, image: bytes, source_name: str = "<cubin>", device: Optional[Device] = None,
                 listing: Optional[str] = None):
        from emulator.frontend.sass import cubin as elf
        self.cubin = elf.Cubin(image, source_name)
        patched = self.cubin.code_relocations()
        if patched:
            first = patched[0]
            raise elf.LinkedCodeError(f"{source_name}: its code is relocatable device code (nvcc -rdc=true), which the "
                                      f"driver links as it loads it ({len(patched)} relocations into the code, the "
                                      f"first of '{first.symbol.name}' in {first.section}) and gpuemu does not: build "
                                      f"without -rdc=true")
        if listing is None:
            tool = elf.find_disassembler()
            if tool is None:
                raise elf.CubinError(f"{source_name}: running SASS from a cubin takes NVIDIA's cuobjdump, which is not "
                                     f"installed (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm, or the "
                                     f"CUDA toolkit)")
            listing = elf.disassemble(self.cubin, tool)
        super().__init__(listing, source_name, device)
        memory = self.device.memory
        self.const_size = max(self.cubin.section_size(elf.CONSTANT_SECTION), 4)
        variables = sum(self.cubin.section_size(section) + 256 for section in elf.GLOBAL_SECTIONS)
        budget.check({"its __device__ variables": variables, "its __constant__ bank": self.const_size},
                     self.device.max_memory, memory.bytes_in_use, f"loading {source_name}")
        self.const_base = memory.alloc(self.const_size, kind="const", name="__constant__")
        memory.write(self.const_base, np.frombuffer(self.cubin.section_bytes(elf.CONSTANT_SECTION)
                                                    or bytes(self.const_size), dtype=np.uint8))
        section_bases = {}
        for section in elf.GLOBAL_SECTIONS:
            size = self.cubin.section_size(section)
            if size:
                section_bases[section] = memory.alloc(size, align=256, name=section)
                memory.write(section_bases[section], np.frombuffer(self.cubin.section_bytes(section), dtype=np.uint8))
        for name, symbol in self.cubin.variables().items():
            if symbol.section == elf.CONSTANT_SECTION:
                self.symbols[name] = ir.SymbolInfo(name, "const", symbol.value, symbol.size, 1)
            else:
                self.symbols[name] = ir.SymbolInfo(name, "global", section_bases[symbol.section] + symbol.value,
                                                   symbol.size, 1)
        self.address_bank = self._relocated_addresses(section_bases)

    def _relocated_addresses(self, section_bases) -> np.ndarray:
        """Bank 4: the 64-bit addresses nvcc's relocations ask for: variables', and gpuemu's own for the functions the
        driver provides (vprintf, __assertfail); another function's address reads as 0 (a call through it is refused
        where it runs)."""
        from emulator.frontend.sass import cubin as elf
        bank = np.zeros(BANK_BYTES, dtype=np.uint8)
        for relocation in self.cubin.relocations:
            if relocation.section != elf.ADDRESS_BANK_SECTION:
                continue
            if relocation.kind != elf.R_CUDA_64 or relocation.offset + 8 > BANK_BYTES:
                raise elf.CubinError(f"{self.source_name}: relocation type {relocation.kind} of "
                                     f"'{relocation.symbol.name}' in constant bank 4 is not supported")
            symbol = self.symbols.get(relocation.symbol.name)
            target = EXTERNAL_FUNCTIONS.get(relocation.symbol.name, 0) if not relocation.symbol.section else 0
            if symbol is not None:
                target = symbol.address + (self.const_base if symbol.space == "const" else 0)
            elif relocation.symbol.section in section_bases:
                target = section_bases[relocation.symbol.section] + relocation.symbol.value
            value = (target + relocation.addend) if target else 0
            bank[relocation.offset:relocation.offset + 8] = np.frombuffer(value.to_bytes(8, "little"), np.uint8)
        return bank

    def program(self, name: str) -> SassProgram:
        """A kernel lowered with what its cubin says: its parameters, its static shared memory, and a stack of
        the device's size (cudaLimitStackSize) when it uses local memory."""
        if name not in self._programs:
            from emulator.frontend.sass.lower import lower_function
            function = next(f for f in self.listing.functions if f.name == name)
            program = lower_function(self.listing, function, self.source_name,
                                     parameters=self.cubin.kernel_parameters(name))
            # on sm_90 a kernel's shared section counts the driver's reserved kilobyte in front of its variables
            program.static_shared = max(self.cubin.section_size(f".nv.shared.{name}") - program.arch.shared_base, 0)
            program.shared_size_known = True
            if program.local_bytes:
                program.local_bytes = max(program.local_bytes, self.device.stack_bytes)
            self._programs[name] = program
        return self._programs[name]

    def launch_banks(self) -> Dict[int, np.ndarray]:
        bank3 = np.zeros(BANK_BYTES, dtype=np.uint8)
        bank3[:self.const_size] = self.device.memory.read(self.const_base, self.const_size)
        return {**self.banks, 3: bank3, 4: self.address_bank}

    def global_address(self, name: str) -> Tuple[int, int]:
        return Module.global_address(self, name)

    def set_symbol(self, name: str, data: np.ndarray) -> None:
        if _BANK_NAME.match(name.strip()):
            super().set_symbol(name, data)
        else:
            Module.set_symbol(self, name, data)


def load_cuda(source, *, device=None, options: Sequence[str] = (), from_file: bool = False,
              name: str = cuda.DEFAULT_NAME, compiler: Optional[str] = None):
    """A Module from a .cu path (from_file) or CUDA C++ text, compiled for the device's architecture."""
    arch = f"sm_{device.arch}" if device is not None else None
    if from_file:
        return Module(cuda.compile_file(source, options=options, arch=arch, compiler=compiler), cuda.ptx_name(source), device)
    return Module(cuda.compile_ptx(source, file_name=name, options=options, arch=arch, compiler=compiler),
                  f"<{name}.ptx>", device)
