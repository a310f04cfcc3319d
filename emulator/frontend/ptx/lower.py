"""Syntax tree → IR for one kernel: lexical register scopes, labels → pcs, symbols → addresses."""
from __future__ import annotations

import dataclasses
import math
import re
from typing import Dict, List, Optional, Tuple

from emulator import ir
from emulator.base.errors import PTXSemanticError
from emulator.frontend.ptx import syntax as S
from emulator.ir.contract import contract as contract_products
from emulator.ir.fold import fold_constants
from isa.table import DecodeError, decode
from isa.types import TYPES, storage_dtype

BUILTIN_FUNCTIONS = ("vprintf", "__assertfail", "malloc", "free")
#: a call's return address, which a recursive function keeps in its stack frame
RETURN_ADDRESS_BYTES = 8
MAX_LOCAL_BYTES = 512 * 1024

SPECIAL_REGISTERS = {
    "%tid", "%ntid", "%ctaid", "%nctaid", "%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid",
    "%gridid", "%lanemask_eq", "%lanemask_le", "%lanemask_lt", "%lanemask_ge", "%lanemask_gt",
    "%clock", "%clock_hi", "%clock64", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi",
    "%total_smem_size", "%dynamic_smem_size", "%aggr_smem_size", "%reserved_smem_offset_begin",
    "%reserved_smem_offset_end", "%reserved_smem_offset_cap", "%reserved_smem_offset_0", "%reserved_smem_offset_1",
    "%current_graph_exec",
    "%clusterid", "%nclusterid", "%cluster_ctaid", "%cluster_nctaid", "%cluster_ctarank",
    "%cluster_nctarank", "%is_explicit_cluster",
} | {f"%envreg{i}" for i in range(32)} | {f"%pm{i}" for i in range(8)} | {f"%pm{i}_64" for i in range(8)}
#: predefined identifiers that name constants: ptxas compiles WARP_SZ to the immediate 32
PREDEFINED_CONSTANTS = {"WARP_SZ": 32}
#: the .v4 special registers, read one component at a time (.w is always 0)
VECTOR_SPECIAL_REGISTERS = {"%tid", "%ntid", "%ctaid", "%nctaid", "%clusterid", "%nclusterid", "%cluster_ctaid",
                            "%cluster_nctaid"}

_CONTROL = {"bra": ir.BRANCH, "exit": ir.EXIT, "ret": ir.RETURN, "bar": ir.BARRIER, "barrier": ir.BARRIER,
            "call": ir.CALL, "trap": ir.TRAP, "brkpt": ir.TRAP}


def type_size(type_name: str) -> int:
    return TYPES[type_name].bytes if type_name in TYPES else 16


def _align_up(value: int, align: int) -> int:
    return (value + align - 1) // align * align


def variable_size(decl) -> int:
    count = decl.element_count
    return type_size(decl.type) * (count if count is not None else 0)


def variable_align(decl) -> int:
    return max(decl.align or 1, type_size(decl.type) * (decl.vector if decl.vector > 1 else 1))


def _walk(block: S.Block):
    for statement in block.statements:
        if isinstance(statement, S.Block):
            yield from _walk(statement)
        else:
            yield statement


def called_functions(function: S.Function) -> List[str]:
    names = []
    if function.body is None:
        return names
    for statement in _walk(function.body):
        if isinstance(statement, S.Instruction) and statement.opcode == "call":
            for operand in statement.operands:
                if isinstance(operand, S.Sym):
                    names.append(operand.name)
                    break
    return names


def calls_indirectly(function: S.Function) -> bool:
    """Whether the function has a call through a register (`call (r), %rd, (args), prototype;`)."""
    if function.body is None:
        return False
    for statement in _walk(function.body):
        if isinstance(statement, S.Instruction) and statement.opcode == "call":
            first = next((operand for operand in statement.operands if not isinstance(operand, S.CallList)), None)
            if isinstance(first, S.Reg):
                return True
    return False


def _registers_of(ref) -> List[int]:
    if isinstance(ref, ir.RegRef):
        return [ref.reg.index]
    if isinstance(ref, ir.NotRef):
        return _registers_of(ref.reg)
    if isinstance(ref, ir.AddrRef):
        return _registers_of(ref.base) if ref.base is not None else []
    if isinstance(ref, (ir.VecRef,)):
        return [index for item in ref.items for index in _registers_of(item)]
    if isinstance(ref, ir.PredPairRef):
        return _registers_of(ref.first) + (_registers_of(ref.second) if ref.second is not None else [])
    return []


def _has_destination(instr: ir.Instr) -> bool:
    return instr.decoded is not None and instr.decoded.signature.dest is not None and bool(instr.operands)


def _register_writes(instr: ir.Instr) -> List[int]:
    return _registers_of(instr.operands[0]) if _has_destination(instr) else []


def _register_reads(instr: ir.Instr) -> List[int]:
    sources = instr.operands[1:] if _has_destination(instr) else instr.operands
    return [index for ref in sources for index in _registers_of(ref)]


def function_symbols(module: S.Module) -> Dict[str, ir.SymbolInfo]:
    """The address of every .func with a body, for `mov.u64 %rd, f`, initialisers and indirect calls."""
    functions = [fn for fn in module.functions if fn.kind == "func" and fn.body is not None]
    return {fn.name: ir.SymbolInfo(fn.name, "func", ir.FUNCTION_ADDRESS_BASE + 16 * index, 0, 16)
            for index, fn in enumerate(functions)}


def _initialiser_names(value) -> List[str]:
    if isinstance(value, list):
        return [name for item in value for name in _initialiser_names(item)]
    if isinstance(value, tuple) and value[0] in ("symbol", "generic"):
        return [value[1]]
    return []


def referenced_symbols(function: S.Function) -> set:
    names = set()
    if function.body is None:
        return names

    def visit(operand):
        if isinstance(operand, (S.Sym, S.SymIndex)):
            names.add(operand.name)
        elif isinstance(operand, S.Addr) and isinstance(operand.base, S.Sym):
            names.add(operand.base.name)
        elif isinstance(operand, (S.Vec, S.CallList)):
            for item in operand.items:
                visit(item)

    for statement in _walk(function.body):
        if isinstance(statement, S.Instruction):
            for operand in statement.operands:
                visit(operand)
    return names


_TRAILING_DIGITS = re.compile(r"^(.*?)(\d+)$")
#: names and numbers longer than this are cut short in error messages
_LONG_WORD = re.compile(r"[^\s']{81,}")


def _shorten(match: re.Match) -> str:
    word = match.group()
    return f"{word[:40]}...({len(word):,} characters)"


class _Scope:
    """One { } block: its registers (single names and %r<N> ranges, made on first use) and symbols."""

    def __init__(self, parent: Optional["_Scope"], new_register=None):
        self.parent = parent
        self.new_register = new_register if new_register is not None else parent.new_register
        self.registers: Dict[str, ir.RegInfo] = {}
        self.ranges: Dict[str, Tuple[int, str]] = {}
        self.symbols: Dict[str, ir.SymbolInfo] = {}

    def _own(self, name: str) -> Optional[ir.RegInfo]:
        if name in self.registers:
            return self.registers[name]
        match = _TRAILING_DIGITS.match(name)
        if match and match.group(1) in self.ranges and not (len(match.group(2)) > 1 and match.group(2)[0] == "0"):
            count, type_name = self.ranges[match.group(1)]
            digits = match.group(2)
            if len(digits) <= len(str(count)) and int(digits) < count:
                self.registers[name] = self.new_register(name, type_name)
                return self.registers[name]
        return None

    def register(self, name: str) -> Optional[ir.RegInfo]:
        scope = self
        while scope is not None:
            found = scope._own(name)
            if found is not None:
                return found
            scope = scope.parent
        return None

    def symbol(self, name: str) -> Optional[ir.SymbolInfo]:
        scope = self
        while scope is not None:
            if name in scope.symbols:
                return scope.symbols[name]
            scope = scope.parent
        return None


class StorageLayout:
    """Where a kernel's variables live: the functions it reaches, its registers and symbols, the .shared and .local
    layout, call frames and parameter symbols."""

    def __init__(self, lowering):
        self.lowering = lowering
        self.registers: List[ir.RegInfo] = []
        self.symbols: Dict[str, ir.SymbolInfo] = {}
        self.local_bytes = 0
        self.shared_bytes = 0
        self.has_dynamic_shared = False
        #: functions that can be active twice in a thread, their frames' sizes and .local bytes
        self.recursive: set = set()
        self.frame_bytes: Dict[str, int] = {}
        self.local_variable_bytes: Dict[str, int] = {}
        self.framed_symbols: set = set()
        self.keep_alive: List[ir.SymbolInfo] = []

    def reachable(self) -> List[S.Function]:
        by_name = {fn.name: fn for fn in self.lowering.module.functions}
        order = [self.lowering.kernel]
        seen = {self.lowering.kernel.name}
        stack = [self.lowering.kernel]
        indirect_targets: List[str] = []
        while stack:
            fn = stack.pop()
            callees = called_functions(fn)
            if calls_indirectly(fn) and not indirect_targets:
                indirect_targets = self._address_taken(by_name)
            if calls_indirectly(fn):
                callees = callees + indirect_targets
            for callee in callees:
                if callee in seen or callee in BUILTIN_FUNCTIONS:
                    continue
                target = by_name.get(callee)
                if target is None:
                    continue
                seen.add(callee)
                order.append(target)
                stack.append(target)
        for fn in order:
            if fn.body is None and fn.name != self.lowering.kernel.name and fn.name not in BUILTIN_FUNCTIONS:
                raise self.lowering.error(fn.pos, f"call to external function '{fn.name}' is not supported")
        self.recursive = self._recursive_functions(order, indirect_targets)
        return order

    def _address_taken(self, by_name) -> List[str]:
        """The .funcs whose address some function or initialiser takes: what an indirect call may reach."""
        names = set()
        for fn in self.lowering.module.functions:
            names |= referenced_symbols(fn)
        for decl in self.lowering.module.variables:
            names.update(_initialiser_names(decl.init))
        return sorted(name for name in names if name in by_name and by_name[name].kind == "func"
                      and by_name[name].body is not None)

    def _recursive_functions(self, functions: List[S.Function], indirect_targets: List[str]) -> set:
        """The functions on a cycle of the call graph (an indirect call may reach every address-taken function):
        those that can be active twice in one thread, so their variables need a frame per call."""
        names = {fn.name for fn in functions}
        graph = {fn.name: [c for c in called_functions(fn) + (indirect_targets if calls_indirectly(fn) else [])
                           if c in names] for fn in functions}
        recursive = set()
        for start in graph:
            stack, seen = list(graph[start]), set()
            while stack:
                name = stack.pop()
                if name == start:
                    recursive.add(start)
                    break
                if name not in seen:
                    seen.add(name)
                    stack.extend(graph[name])
        return recursive

    def layout_shared(self, functions: List[S.Function]) -> None:
        """ptxas's layout (sm_90): after the driver's reserved kilobyte, the kernel's own variables, then the
        module's (in declaration order, those the kernel reaches), then each called .func's (in the order the
        module defines them), each at its alignment; the dynamic base is the end of all that rounded up to 16,
        and each extern array sits at the base rounded up to its own alignment."""
        used = set()
        for fn in functions:
            used |= referenced_symbols(fn)
        offset = ir.SHARED_RESERVED_BYTES
        dynamic: List[S.VarDecl] = []

        def place(decl: S.VarDecl, scope_symbols: Dict[str, ir.SymbolInfo]) -> None:
            nonlocal offset
            if decl.element_count is None or "extern" in decl.linkage:
                dynamic.append((decl, scope_symbols))
                return
            align = variable_align(decl)
            offset = _align_up(offset, align)
            scope_symbols[decl.name] = ir.SymbolInfo(decl.name, "shared", offset, variable_size(decl), align)
            offset += variable_size(decl)

        def place_function(fn: S.Function) -> None:
            table: Dict[str, ir.SymbolInfo] = {}
            if fn.body is not None:
                for statement in _walk(fn.body):
                    if isinstance(statement, S.VarDecl) and statement.space == "shared":
                        place(statement, table)
            self._function_shared[fn.name] = table

        self._function_shared: Dict[str, Dict[str, ir.SymbolInfo]] = {}
        place_function(self.lowering.kernel)
        for decl in self.lowering.module.variables:
            if decl.space == "shared" and decl.name in used:
                place(decl, self.symbols)
        reachable = {fn.name for fn in functions}
        for fn in self.lowering.module.functions:
            if fn.name in reachable and fn.name != self.lowering.kernel.name and fn.name not in self._function_shared:
                place_function(fn)
        window = offset
        if dynamic:
            base = _align_up(offset, 16)
            for decl, table in dynamic:
                start = _align_up(base, variable_align(decl))
                table[decl.name] = ir.SymbolInfo(decl.name, "shared", start, 0, variable_align(decl))
                window = max(window, start)
            self.has_dynamic_shared = True
        self.shared_bytes = window - ir.SHARED_RESERVED_BYTES

    def kept_across_calls(self, info: ir.FunctionInfo) -> int:
        """Bytes of the registers a function writes before one of its calls and reads after it: what ptxas
        keeps in the function's stack frame over the call (an estimate of its spills)."""
        pcs = [instr.pc for instr in self.lowering.instrs if instr.function == info.name]
        written: set = set()
        kept: set = set()
        calls_seen: List[set] = []
        for pc in pcs:
            instr = self.lowering.instrs[pc]
            for before in calls_seen:
                kept |= before & set(_register_reads(instr))
            if instr.control == ir.CALL:
                calls_seen.append(set(written))
            written |= set(_register_writes(instr))
        return sum(max(self.registers[index].storage.itemsize, 4) for index in kept
                   if self.registers[index].type != "pred")

    def _alloc_local(self, size: int, align: int, fn: Optional[S.Function] = None) -> int:
        """An offset in the thread's local memory; for a recursive function's variables, in its frame."""
        if fn is not None and fn.name in self.recursive:
            frame = _align_up(self.frame_bytes.get(fn.name, 0), max(align, 1))
            self.frame_bytes[fn.name] = frame + size
            return frame
        self.local_bytes = _align_up(self.local_bytes, max(align, 1))
        offset = self.local_bytes
        self.local_bytes += size
        return offset

    def framed(self, symbol: Optional[ir.SymbolInfo]) -> bool:
        return symbol is not None and id(symbol) in self.framed_symbols

    def _frame_symbol(self, symbol: ir.SymbolInfo, fn: Optional[S.Function]) -> ir.SymbolInfo:
        if fn is not None and fn.name in self.recursive:
            self.framed_symbols.add(id(symbol))
            self.keep_alive.append(symbol)
        return symbol

    def new_register(self, name: str, type_name: str) -> ir.RegInfo:
        info = ir.RegInfo(len(self.registers), name, type_name, storage_dtype(TYPES[type_name].bits))
        self.registers.append(info)
        return info

    def declare_registers(self, scope: _Scope, decl: S.RegDecl) -> None:
        lowering = self.lowering
        if decl.vector > 1:
            raise lowering.error(decl.pos, "vector registers (.reg .v2/.v4) are not supported")
        if decl.type not in TYPES:
            raise lowering.error(decl.pos, f"registers of type .{decl.type} are not supported")
        for name, count in decl.names:
            if (name in scope.registers) if count is None else (name in scope.ranges):
                raise lowering.error(decl.pos,
                                     f"duplicate definition of register {name}{'' if count is None else '<>'}")
            if count is None:
                scope.registers[name] = self.new_register(name, decl.type)
            else:
                scope.ranges[name] = (count, decl.type)

    def declare_variable(self, scope: _Scope, fn: S.Function, decl: S.VarDecl) -> None:
        if decl.space == "shared":
            scope.symbols[decl.name] = self._function_shared[fn.name][decl.name]
        elif decl.space == "local":
            size, align = variable_size(decl), variable_align(decl)
            symbol = ir.SymbolInfo(decl.name, "local", self._alloc_local(size, align, fn), size, align)
            scope.symbols[decl.name] = self._frame_symbol(symbol, fn)
            if fn.name in self.recursive:
                self.local_variable_bytes[fn.name] = self.local_variable_bytes.get(fn.name, 0) + size
        elif decl.space == "param":
            size, align = variable_size(decl), variable_align(decl)
            offset = self._alloc_local(size, align, fn)
            symbol = ir.SymbolInfo(decl.name, "fparam", ir.FUNC_PARAM_BASE + offset, size, align)
            scope.symbols[decl.name] = self._frame_symbol(symbol, fn)
        elif decl.space in ("global", "const"):
            raise self.lowering.error(decl.pos, f"function-scope .{decl.space} variables are not supported")
        else:
            raise self.lowering.error(decl.pos, f"unsupported state space .{decl.space}")

    def param_symbol(self, decl: S.ParamDecl, fn: S.Function) -> ir.SymbolInfo:
        size = type_size(decl.type) * decl.element_count
        align = max(decl.align or 1, type_size(decl.type))
        offset = self._alloc_local(size, align, fn)
        return self._frame_symbol(ir.SymbolInfo(decl.name, "fparam", ir.FUNC_PARAM_BASE + offset, size, align), fn)

    def kernel_params(self):
        params = []
        offset = 0
        for decl in self.lowering.kernel.params:
            size = type_size(decl.type) * decl.element_count
            align = max(decl.align or 1, type_size(decl.type))
            offset = _align_up(offset, align)
            params.append(ir.KernelParam(decl.name, decl.type, offset, size, align))
            offset += size
        return params, offset


class KernelLowering:
    """Lowers one entry function and the .funcs it calls into an ir.Program."""

    def __init__(self, module: S.Module, kernel: S.Function, module_symbols: Dict[str, ir.SymbolInfo]):
        self.module = module
        self.kernel = kernel
        self.module_symbols = module_symbols
        self.source = module.source_name
        self.instrs: List[ir.Instr] = []
        self.functions: Dict[str, ir.FunctionInfo] = {}
        self.labels: Dict[str, int] = {}
        self.storage = StorageLayout(self)
        self.pending_branches: List[Tuple[ir.Instr, str, S.Instruction]] = []
        self.frame_register: Optional[ir.RegInfo] = None

    def error(self, pos: S.Pos, message: str) -> PTXSemanticError:
        return PTXSemanticError(self.source, pos.line, pos.col + 0, _LONG_WORD.sub(_shorten, message))

    # ---- instructions ----
    def lower(self) -> ir.Program:
        storage = self.storage
        functions = storage.reachable()
        storage.layout_shared(functions)
        if storage.recursive:
            self.frame_register = storage.new_register(ir.FRAME_REGISTER, "u64")
        kernel_params, param_bytes = storage.kernel_params()
        root = _Scope(None, storage.new_register)
        root.symbols.update(self.module_symbols)
        root.symbols.update(storage.symbols)
        function_scopes = {}
        for fn in functions[1:]:
            scope = _Scope(root)
            params = tuple(storage.param_symbol(p, fn) for p in fn.params)
            returns = tuple(storage.param_symbol(p, fn) for p in fn.returns)
            for symbol in params + returns:
                scope.symbols[symbol.name] = symbol
            for decl in fn.params + fn.returns:
                if decl.space == "reg":
                    raise self.error(decl.pos, ".reg function parameters are not supported")
            self.functions[fn.name] = ir.FunctionInfo(fn.name, -1, params, returns)
            function_scopes[fn.name] = scope
        kernel_scope = _Scope(root)
        for param in kernel_params:
            kernel_scope.symbols[param.name] = ir.SymbolInfo(param.name, "param", param.offset, param.size,
                                                             param.align)
        function_scopes[self.kernel.name] = kernel_scope
        self.functions[self.kernel.name] = ir.FunctionInfo(self.kernel.name, 0, (), ())
        for fn in functions:
            self.functions[fn.name].entry_pc = len(self.instrs)
            self._current_labels: Dict[str, int] = {}
            self._function_pending: List[Tuple[ir.Instr, S.Instruction]] = []
            self._loc: Optional[Tuple[str, int]] = None
            self._inlined: Tuple[ir.InlineFrame, ...] = ()
            self._loc_scopes: Dict[Tuple[int, int, int], Tuple[ir.InlineFrame, ...]] = {}
            first_register = len(storage.registers)
            self._lower_block(fn, fn.body, _Scope(function_scopes[fn.name]))
            if fn.name in storage.recursive:
                self.functions[fn.name].registers = tuple(range(first_register, len(storage.registers)))
            if self._falls_off_the_end(fn):
                self.instrs.append(self._implicit_return(fn))
            for instr, syntax in self._function_pending:
                name = syntax.operands[0].name
                if name not in self._current_labels:
                    raise self.error(syntax.pos, f"undefined label '{name}'")
                instr.target = self._current_labels[name]
                instr.operands = (ir.LabelRef(name, instr.target),)
            for name, pc in self._current_labels.items():
                self.labels.setdefault(name, pc)
        for name in storage.recursive:
            info = self.functions[name]
            info.frame_bytes = _align_up(storage.frame_bytes.get(name, 0), 16)
            info.stack_cost = _align_up(storage.local_variable_bytes.get(name, 0) + storage.kept_across_calls(info)
                                        + RETURN_ADDRESS_BYTES, 16)
        if storage.local_bytes > MAX_LOCAL_BYTES:
            raise self.error(self.kernel.pos, f"{storage.local_bytes} bytes of local memory per thread exceed the "
                             f"{MAX_LOCAL_BYTES}-byte limit")
        directives = {name: values for name, values in self.kernel.directives}
        return ir.Program(
            name=self.kernel.name, source_name=self.source, instrs=self.instrs, registers=storage.registers,
            params=kernel_params, param_bytes=param_bytes, static_shared=storage.shared_bytes,
            has_dynamic_shared=storage.has_dynamic_shared, local_bytes=_align_up(storage.local_bytes, 16),
            functions=self.functions, labels=self.labels,
            symbols={**self.module_symbols, **storage.symbols}, files=dict(self.module.files),
            directives=directives, lines=self.module.lines)

    def _falls_off_the_end(self, fn: S.Function) -> bool:
        """Whether control can reach the end of fn's body: its last instruction is not an unguarded exit,
        return, branch or trap, or a branch goes to a label after it (`bra DONE; DONE: }`)."""
        if not self.instrs or self.instrs[-1].function != fn.name:
            return True
        last = self.instrs[-1]
        if last.control not in (ir.EXIT, ir.RETURN, ir.BRANCH, ir.TRAP) or last.guard is not None:
            return True
        end = len(self.instrs)
        return any(self._current_labels.get(syntax.operands[0].name) == end for _, syntax in self._function_pending)

    def _implicit_return(self, fn: S.Function) -> ir.Instr:
        line = len(self.module.lines)
        control = ir.EXIT if fn is self.kernel else ir.RETURN
        return ir.Instr(len(self.instrs), fn.name, line, 1, "ret; (end of function)", self._loc, "ret", None,
                        control, None, (), inlined=self._inlined)

    def _lower_block(self, fn: S.Function, block: Optional[S.Block], scope: _Scope) -> None:
        if block is None:
            return
        for statement in block.statements:
            if isinstance(statement, S.RegDecl):
                self.storage.declare_registers(scope, statement)
            elif isinstance(statement, S.VarDecl):
                self.storage.declare_variable(scope, fn, statement)
            elif isinstance(statement, S.Label):
                if statement.name in self._current_labels:
                    raise self.error(statement.pos, f"label '{statement.name}' defined twice")
                self._current_labels[statement.name] = len(self.instrs)
            elif isinstance(statement, S.Block):
                self._lower_block(fn, statement, _Scope(scope))
            elif isinstance(statement, S.SourceLoc):
                self._loc, self._inlined = _source_location(self.module, statement, self._loc_scopes)
            elif isinstance(statement, S.Instruction):
                self.instrs.append(self._lower_instruction(fn, statement, scope))

    def _lower_instruction(self, fn: S.Function, syntax: S.Instruction, scope: _Scope) -> ir.Instr:
        opcode = ".".join((syntax.opcode,) + syntax.modifiers)
        try:
            decoded = decode(syntax.opcode, syntax.modifiers)
        except DecodeError as error:
            raise self.error(syntax.pos, f"{error} in '{opcode}'") from None
        guard = None
        if syntax.guard is not None:
            reg = scope.register(syntax.guard)
            if reg is None:
                raise self.error(syntax.pos, f"undeclared predicate register '{syntax.guard}'")
            if reg.type != "pred":
                raise self.error(syntax.pos, f"guard '{syntax.guard}' is not a .pred register")
            guard = (reg, syntax.guard_negated)
        line = syntax.pos.line
        text = self.module.lines[line - 1].strip() if 0 < line <= len(self.module.lines) else opcode
        control = _CONTROL.get(syntax.opcode, ir.STRAIGHT)
        if syntax.opcode == "ret" and fn is self.kernel:
            control = ir.EXIT
        instr = ir.Instr(len(self.instrs), fn.name, line, syntax.pos.col, text, self._loc, opcode, decoded,
                         control, guard, (), inlined=self._inlined)
        if syntax.opcode == "bra":
            if len(syntax.operands) != 1 or not isinstance(syntax.operands[0], S.Sym):
                raise self.error(syntax.pos, "bra needs one label operand")
            self._function_pending.append((instr, syntax))
            return instr
        if syntax.opcode == "call":
            instr.operands = self._call_operands(syntax, scope)
            return instr
        operands = tuple(self._indexed(fn, syntax, position, operand) if isinstance(operand, S.SymIndex) else operand
                         for position, operand in enumerate(syntax.operands))
        instr.operands = tuple(self._operand(operand, syntax, scope) for operand in operands)
        framed = [ref for ref in instr.operands if isinstance(ref, ir.SymRef) and self.storage.framed(ref.symbol)]
        if framed:
            return self._frame_address(instr, framed[0], syntax)
        self._check_destination_writable(instr, syntax)
        self._check_operand_count(instr, syntax)
        self._check_operand_kinds(instr, syntax)
        return instr

    def _check_destination_writable(self, instr: ir.Instr, syntax: S.Instruction) -> None:
        """Special registers are read-only: ptxas refuses one where an instruction's result goes."""
        if not _has_destination(instr):
            return
        destination = instr.operands[0]
        written = destination.items if isinstance(destination, ir.VecRef) else (destination,)
        for ref in written:
            if isinstance(ref, ir.SpecialRef):
                raise self.error(syntax.pos, f"%{ref.name} is a special register and cannot be written")

    def _frame_address(self, instr: ir.Instr, ref: ir.SymRef, syntax: S.Instruction) -> ir.Instr:
        """`mov.u64 %r, var` of a recursive function's .local/.param variable: the running frame's address of
        it, `add.u64 %r, <frame>, offset`."""
        if instr.decoded.family.mnemonic != "mov" or len(instr.operands) != 2 or instr.operands[1] is not ref:
            raise self.error(syntax.pos, f"'{ref.symbol.name}' lives in the frame of a recursive function: only "
                             f"mov may take its address")
        decoded = decode("add", ("u64",))
        operands = (instr.operands[0], ir.RegRef(self.frame_register),
                    ir.ImmRef("int", ref.symbol.address + ref.offset))
        return dataclasses.replace(instr, opcode="add.u64", decoded=decoded, operands=operands)

    def _indexed(self, fn: S.Function, syntax: S.Instruction, position: int, operand: S.SymIndex):
        """`array[i]` as ptxas reads it: the address of element i (i times the element type's size; vectors count
        their scalar type), and for ld/ldu/st the memory operand at that address."""
        decls = [d for d in _walk(fn.body) if isinstance(d, S.VarDecl)] if fn.body is not None else []
        decl = next((d for d in decls + list(self.module.variables) if d.name == operand.name), None)
        if decl is None:
            raise self.error(syntax.pos, f"undeclared name '{operand.name}'")
        if not decl.dims:
            raise self.error(syntax.pos, f"array indexing on '{operand.name}', which is not an array")
        offset = operand.index * type_size(decl.type)
        memory_position = {"ld": 1, "ldu": 1, "st": 0}.get(syntax.opcode)
        if position == memory_position:
            return S.Addr(S.Sym(operand.name), offset)
        return S.Sym(operand.name, offset)

    def _check_operand_count(self, instr: ir.Instr, syntax: S.Instruction) -> None:
        family = instr.decoded.family
        if family.op_class not in ("alu",):
            return
        signature = instr.decoded.signature
        wanted = len(signature.sources) + (1 if signature.dest else 0)
        given = len(instr.operands)
        if not wanted - signature.optional <= given <= wanted:
            raise self.error(syntax.pos, f"'{instr.opcode}' takes {wanted} operands, got {given}")

    def _check_operand_kinds(self, instr: ir.Instr, syntax: S.Instruction) -> None:
        """What ptxas refuses as "Arguments mismatch": a constant where the result goes, a predicate pair where one
        register goes (or one register where setp on half pairs writes two), and a floating-point constant for an
        integer operand (0fXXXXXXXX stands for .b32 bits and 0dXXXXXXXXXXXXXXXX for .b64 bits)."""
        family = instr.decoded.family
        if not instr.operands or (not callable(family.sig) and family.sig.strip() == "<-"):
            return
        signature = instr.decoded.signature
        first = instr.operands[0]
        if signature.dest is not None and isinstance(first, ir.ImmRef):
            raise self.error(syntax.pos, f"'{instr.opcode}' writes its result to a register, not a constant")
        if family.op_class == "alu":
            pair_allowed = family.mnemonic == "setp" or (family.mnemonic == "lop3" and instr.decoded.has("boolop"))
            if isinstance(first, ir.PredPairRef) and not pair_allowed:
                raise self.error(syntax.pos, f"'{instr.opcode}' writes one register, not a predicate pair")
            if family.mnemonic == "setp" and instr.decoded.type in ("f16x2", "bf16x2") and \
                    not isinstance(first, ir.PredPairRef):
                raise self.error(syntax.pos, f"'{instr.opcode}' compares two halves into a pair of predicates "
                                 f"(p|q), not one")
        types = ([signature.dest] if signature.dest is not None else []) + list(signature.sources)
        for operand, type_name in zip(instr.operands, types):
            if isinstance(operand, ir.ImmRef) and type_name in TYPES:
                problem = immediate_problem(operand, type_name)
                if problem:
                    raise self.error(syntax.pos, f"{problem} in '{instr.opcode}'")

    def _call_operands(self, syntax: S.Instruction, scope: _Scope):
        operands = list(syntax.operands)
        returns: List[ir.SymbolInfo] = []
        if operands and isinstance(operands[0], S.CallList):
            returns = [self._call_param(item, syntax, scope) for item in operands[0].items]
            operands = operands[1:]
        if operands and isinstance(operands[0], S.Reg):
            target = self._reg_operand(operands[0].name, syntax, scope)
            arguments = []
            if len(operands) > 1 and isinstance(operands[1], S.CallList):
                arguments = [self._call_param(item, syntax, scope) for item in operands[1].items]
            return (ir.CallSite("", tuple(arguments), tuple(returns), target),)
        if not operands or not isinstance(operands[0], S.Sym):
            raise self.error(syntax.pos, "call needs a function name or a register holding a function's address")
        callee = operands[0].name
        arguments: List[ir.SymbolInfo] = []
        if len(operands) > 1 and isinstance(operands[1], S.CallList):
            arguments = [self._call_param(item, syntax, scope) for item in operands[1].items]
        if callee not in BUILTIN_FUNCTIONS and callee not in self.functions:
            raise self.error(syntax.pos, f"call to unknown function '{callee}'")
        return (ir.CallSite(callee, tuple(arguments), tuple(returns)),)

    def _call_param(self, operand, syntax, scope) -> ir.SymbolInfo:
        if not isinstance(operand, S.Sym):
            raise self.error(syntax.pos, "call arguments must be .param variables")
        symbol = scope.symbol(operand.name)
        if symbol is None or symbol.space != "fparam":
            raise self.error(syntax.pos, f"'{operand.name}' is not a .param variable")
        return symbol

    def _operand(self, operand, syntax: S.Instruction, scope: _Scope):
        if isinstance(operand, S.Reg):
            return self._reg_operand(operand.name, syntax, scope)
        if isinstance(operand, S.NotReg):
            return ir.NotRef(self._reg_operand(operand.name, syntax, scope))
        if isinstance(operand, S.PredPair):
            pair = [self._reg_operand(operand.first, syntax, scope),
                    None if operand.second == "_" else self._reg_operand(operand.second, syntax, scope)]
            for name, ref in zip((operand.first, operand.second), pair):
                if ref is not None and not isinstance(ref, ir.RegRef):
                    raise self.error(syntax.pos, f"{name} is a special register and cannot be written")
            return ir.PredPairRef(*pair)
        if isinstance(operand, S.Imm):
            return ir.ImmRef(operand.kind, operand.value)
        if isinstance(operand, S.Sink):
            return ir.SinkRef()
        if isinstance(operand, S.Sym):
            reg = scope.register(operand.name)
            if reg is not None and operand.offset == 0:
                return ir.RegRef(reg)
            symbol = scope.symbol(operand.name)
            if symbol is None and operand.name in PREDEFINED_CONSTANTS and operand.offset == 0:
                return ir.ImmRef("int", PREDEFINED_CONSTANTS[operand.name])
            if symbol is None:
                raise self.error(syntax.pos, f"undeclared name '{operand.name}'")
            return ir.SymRef(symbol, operand.offset)
        if isinstance(operand, S.Vec):
            return ir.VecRef(tuple(self._operand(item, syntax, scope) for item in operand.items))
        if isinstance(operand, S.Addr):
            if operand.base is None:
                return ir.AddrRef(None, None, operand.offset)
            if isinstance(operand.base, S.Reg):
                base = self._reg_operand(operand.base.name, syntax, scope)
                if not isinstance(base, ir.RegRef):
                    raise self.error(syntax.pos, f"special register '{operand.base.name}' cannot be an address; "
                                     f"move it to a register first")
                return ir.AddrRef(base, None, operand.offset)
            if not isinstance(operand.base, S.Sym):
                raise self.error(syntax.pos, "an address is a register, a variable or a number")
            reg = scope.register(operand.base.name)
            if reg is not None:
                return ir.AddrRef(ir.RegRef(reg), None, operand.offset)
            symbol = scope.symbol(operand.base.name)
            if symbol is None:
                raise self.error(syntax.pos, f"undeclared name '{operand.base.name}'")
            if self.storage.framed(symbol):
                return ir.AddrRef(ir.RegRef(self.frame_register), None, symbol.address + operand.offset)
            return ir.AddrRef(None, symbol, operand.offset)
        raise self.error(syntax.pos, f"operand {operand} is not allowed here")

    def _reg_operand(self, name: str, syntax: S.Instruction, scope: _Scope):
        base, _, component = name.partition(".")
        if base in SPECIAL_REGISTERS:
            if base in VECTOR_SPECIAL_REGISTERS and component not in ("x", "y", "z", "w"):
                raise self.error(syntax.pos, f"'{name}': {base} is a vector; name its .x, .y, .z or .w")
            if base not in VECTOR_SPECIAL_REGISTERS and component:
                raise self.error(syntax.pos, f"'{name}': {base} has no components")
            return ir.SpecialRef(name[1:])
        reg = scope.register(name)
        if reg is None:
            raise self.error(syntax.pos, f"undeclared register '{name}'")
        return ir.RegRef(reg)


_FLOAT_LITERAL_BITS = {"f32": 32, "f64": 64}


def immediate_problem(ref: ir.ImmRef, type_name: str) -> Optional[str]:
    """Why a constant cannot be an operand of type type_name (None when it can)."""
    t = TYPES[type_name]
    if ref.kind == "int":
        return None
    if ref.kind == "float":
        if t.kind in ("float", "half"):
            return None if math.isfinite(ref.value) else f"constant {ref.value} overflows .{type_name}"
        return f"floating-point constant {ref.value!r} for a .{type_name} operand"
    if t.kind in ("float", "half") or (t.kind == "bits" and t.bits == _FLOAT_LITERAL_BITS[ref.kind]):
        return None
    spelled = f"0{'f' if ref.kind == 'f32' else 'd'}{ref.value:0{_FLOAT_LITERAL_BITS[ref.kind] // 4}X}"
    return f"floating-point constant {spelled} for a .{type_name} operand"


def lower_kernel(module: S.Module, kernel_name: str, module_symbols: Dict[str, ir.SymbolInfo],
                 contract: bool = True) -> ir.Program:
    """The kernel's program with ptxas's folds of approximate instructions on constants (emulator.ir.fold);
    contract: make the FMA contractions ptxas makes (emulator.ir.contract)."""
    kernel = next((fn for fn in module.functions if fn.name == kernel_name and fn.kind == "entry"), None)
    if kernel is None:
        raise KeyError(kernel_name)
    if kernel.body is None:
        raise PTXSemanticError(module.source_name, kernel.pos.line, kernel.pos.col,
                               f"kernel '{kernel_name}' has no body")
    program = KernelLowering(module, kernel, module_symbols).lower()
    if not contract:
        return program
    return contract_products(fold_constants(program, module.target), module.target)


def _source_location(module: S.Module, loc: S.SourceLoc, scopes):
    """(file, line) of a .loc and its chain of inlined calls, innermost first. A call site's own chain is that of
    the latest .loc at the call's file, line and column (NVVM writes each enclosing call's .loc first)."""
    files = dict(module.files)

    def file_name(index: int) -> str:
        return files.get(index, f"file{index}")

    chain: Tuple[ir.InlineFrame, ...] = ()
    if loc.inlined_at is not None:
        call_file, call_line, _ = loc.inlined_at
        name, _, offset = (loc.function or "?").partition("+")
        name = dict(module.strings).get(name, name)[int(offset or 0):]
        chain = (ir.InlineFrame(name, (file_name(call_file), call_line)),) + scopes.get(loc.inlined_at, ())
    scopes[(loc.file, loc.line, loc.col)] = chain
    return (file_name(loc.file), loc.line), chain
