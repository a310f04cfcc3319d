"""C variables of a `nvcc -G` build: their types and where they live at each pc, from the PTX's DWARF.

DWARF's address classes are CUDA's (2 register, 4 const, 5 global, 6 local, 7 param, 8 shared, 12 generic);
a register location is DW_OP_regx of the PTX register's name packed as a big-endian number."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from emulator.observers.debugger.dwarf import DwarfSections

SPACE_OF_CLASS = {2: "register", 4: "const", 5: "global", 6: "local", 7: "param", 8: "shared", 12: "generic"}
_DW_OP_ADDR, _DW_OP_REGX, _DW_OP_PLUS_UCONST = 0x03, 0x90, 0x23


@dataclass
class CType:
    """kind: base, pointer, array, struct, union, enum, void. Base types carry encoding (DW_ATE_*) and size;
    pointers target and space; arrays element and dims; structs and unions members (name, offset, type)."""
    kind: str
    name: str = ""
    size: int = 0
    encoding: int = 0
    target: Optional["CType"] = None
    space: str = "generic"
    dims: Tuple[int, ...] = ()
    members: List[Tuple[str, int, "CType"]] = field(default_factory=list)
    qualifiers: str = ""

    def element(self) -> "CType":
        """An array's element type (a sub-array when it has several dimensions)."""
        if len(self.dims) > 1:
            inner = CType("array", size=self.size // self.dims[0], target=self.target, dims=self.dims[1:])
            return inner
        return self.target

    def spelled(self, inner: str = "") -> str:
        """The C++ declaration of this type around `inner` (a name, or '' for the type alone)."""
        prefix = f"{self.qualifiers} " if self.qualifiers else ""
        if self.kind == "pointer":
            star = f"*{inner}"
            if self.target is not None and self.target.kind == "array":
                star = f"(*{inner})"
            target = self.target or CType("void", "void")
            return target.spelled(star + (f" {self.qualifiers}" if self.qualifiers else ""))
        if self.kind == "array":
            return self.target.spelled(inner + "".join(f"[{dim}]" for dim in self.dims))
        base = f"{prefix}{self.name or ('void' if self.kind not in ('struct', 'union', 'enum') else self.kind)}"
        if not inner:
            return base
        return f"{base} {inner}" if not inner.startswith(")") else base + inner

    def is_scalar(self) -> bool:
        return self.kind in ("base", "pointer", "enum")


@dataclass
class Variable:
    name: str
    type: CType
    space: str                        # where the location lives: register, param, shared, global, const, local
    location: object                  # expression bytes, or a .debug_loc offset (int)
    scope: Tuple[int, int]            # pcs where the name is visible
    function: str                     # linkage name of the subprogram
    is_argument: bool = False
    linkage_name: Optional[str] = None
    line: int = 0
    inline_depth: int = 0             # 0: the function's own; 1+: inside inlined calls


@dataclass
class InlinedCall:
    function: str                     # the inlined function's name
    pcs: Tuple[int, int]
    call: Tuple[int, int]             # (file index, line) of the call


class SourceVariables:
    """Every variable, argument and inlined call that the PTX's DWARF describes."""

    def __init__(self, sections: DwarfSections):
        self.sections = sections
        self.variables: List[Variable] = []
        self.inlined: List[InlinedCall] = []
        self.functions: Dict[str, Tuple[int, int]] = {}
        self.files: Dict[int, str] = {}
        self._types: Dict[int, CType] = {}
        self._location_lists = None
        info = sections.dwarf_info()
        if info is None:
            return
        self._location_lists = info.location_lists()
        for unit in info.iter_CUs():
            top = unit.get_top_DIE()
            for die in top.iter_children():
                if die.tag == "DW_TAG_subprogram":
                    self._subprogram(die)
                elif die.tag == "DW_TAG_variable":
                    self._variable(die, "", (0, 1 << 62), False, 0)

    @classmethod
    def of_program(cls, program) -> "SourceVariables":
        """The program's C variables from its DWARF; none when that cannot be read (ptxas would refuse such debug
        sections; the debugger then works at the PTX level, as for a build without -G)."""
        try:
            return cls(DwarfSections(program.lines, program.labels))
        except Exception:  # pyelftools and the section reader raise many kinds on malformed bytes
            return cls(DwarfSections([], {}))

    def __bool__(self) -> bool:
        return bool(self.variables)

    # ---- reading ----
    def _subprogram(self, die) -> None:
        attributes = die.attributes
        if "DW_AT_low_pc" not in attributes:
            return
        low, high = attributes["DW_AT_low_pc"].value, _high(die)
        linkage = _text(die, "DW_AT_MIPS_linkage_name") or _text(die, "DW_AT_linkage_name") or _text(die, "DW_AT_name")
        self.functions[linkage] = (low, high)
        self._children(die, linkage, (low, high), 0)

    def _children(self, die, function: str, scope: Tuple[int, int], depth: int) -> None:
        for child in die.iter_children():
            if child.tag in ("DW_TAG_formal_parameter", "DW_TAG_variable"):
                self._variable(child, function, scope, child.tag == "DW_TAG_formal_parameter", depth)
            elif child.tag == "DW_TAG_lexical_block":
                inner = (child.attributes["DW_AT_low_pc"].value, _high(child)) \
                    if "DW_AT_low_pc" in child.attributes else scope
                self._children(child, function, inner, depth)
            elif child.tag == "DW_TAG_inlined_subroutine" and "DW_AT_low_pc" in child.attributes:
                origin = child.get_DIE_from_attribute("DW_AT_abstract_origin")
                inner = (child.attributes["DW_AT_low_pc"].value, _high(child))
                call = (child.attributes["DW_AT_call_file"].value if "DW_AT_call_file" in child.attributes else 0,
                        child.attributes["DW_AT_call_line"].value if "DW_AT_call_line" in child.attributes else 0)
                self.inlined.append(InlinedCall(_text(origin, "DW_AT_name") or "?", inner, call))
                self._children(child, function, inner, depth + 1)

    def _variable(self, die, function: str, scope: Tuple[int, int], is_argument: bool, depth: int) -> None:
        named = die
        if "DW_AT_abstract_origin" in die.attributes:
            named = die.get_DIE_from_attribute("DW_AT_abstract_origin")
        name = _text(named, "DW_AT_name")
        if not name or "DW_AT_location" not in die.attributes:
            return
        type_die = named.get_DIE_from_attribute("DW_AT_type") if "DW_AT_type" in named.attributes else None
        ctype = self._type(type_die)
        space = SPACE_OF_CLASS.get(die.attributes["DW_AT_address_class"].value, "generic") \
            if "DW_AT_address_class" in die.attributes else "register"
        location = die.attributes["DW_AT_location"]
        value = location.value if location.form not in ("DW_FORM_data4", "DW_FORM_sec_offset", "DW_FORM_data8") \
            else int(location.value)
        line = named.attributes["DW_AT_decl_line"].value if "DW_AT_decl_line" in named.attributes else 0
        self.variables.append(Variable(name, ctype, space, value, scope, function, is_argument,
                                       _text(die, "DW_AT_MIPS_linkage_name") or _text(die, "DW_AT_linkage_name"),
                                       line, depth))

    def _type(self, die) -> CType:
        if die is None:
            return CType("void", "void")
        cached = self._types.get(die.offset)
        if cached is not None:
            return cached
        tag, attributes = die.tag, die.attributes
        size = attributes["DW_AT_byte_size"].value if "DW_AT_byte_size" in attributes else 0
        name = _text(die, "DW_AT_name") or ""
        ctype = CType("void", "void")
        self._types[die.offset] = ctype
        target = die.get_DIE_from_attribute("DW_AT_type") if "DW_AT_type" in attributes else None
        if tag == "DW_TAG_base_type":
            ctype.kind, ctype.name, ctype.size, ctype.encoding = "base", name, size, attributes["DW_AT_encoding"].value
        elif tag == "DW_TAG_pointer_type" or tag == "DW_TAG_reference_type":
            ctype.kind, ctype.size, ctype.target = "pointer", 8, self._type(target)
            ctype.space = SPACE_OF_CLASS.get(attributes["DW_AT_address_class"].value, "generic") \
                if "DW_AT_address_class" in attributes else "generic"
        elif tag == "DW_TAG_array_type":
            dims = []
            for child in die.iter_children():
                if child.tag == "DW_TAG_subrange_type":
                    if "DW_AT_count" in child.attributes:
                        dims.append(child.attributes["DW_AT_count"].value)
                    elif "DW_AT_upper_bound" in child.attributes:
                        dims.append(child.attributes["DW_AT_upper_bound"].value + 1)
                    else:
                        dims.append(0)
            element = self._type(target)
            ctype.kind, ctype.target, ctype.dims = "array", element, tuple(dims)
            total = element.size
            for dim in dims:
                total *= dim
            ctype.size = total
        elif tag in ("DW_TAG_structure_type", "DW_TAG_class_type", "DW_TAG_union_type"):
            ctype.kind = "union" if tag == "DW_TAG_union_type" else "struct"
            ctype.name, ctype.size = name, size
            for child in die.iter_children():
                if child.tag == "DW_TAG_member":
                    offset = _member_offset(child)
                    member_type = child.get_DIE_from_attribute("DW_AT_type") if "DW_AT_type" in child.attributes \
                        else None
                    ctype.members.append((_text(child, "DW_AT_name") or "", offset, self._type(member_type)))
        elif tag == "DW_TAG_enumeration_type":
            ctype.kind, ctype.name, ctype.size, ctype.encoding = "enum", name, size, 5
        elif tag in ("DW_TAG_const_type", "DW_TAG_volatile_type", "DW_TAG_typedef", "DW_TAG_restrict_type"):
            inner = self._type(target)
            word = {"DW_TAG_const_type": "const", "DW_TAG_volatile_type": "volatile",
                    "DW_TAG_restrict_type": ""}.get(tag)
            ctype.__dict__.update(inner.__dict__)
            ctype.members = inner.members
            if tag == "DW_TAG_typedef":
                ctype.name = name if inner.kind == "base" else inner.name
            elif word:
                ctype.qualifiers = f"{word} {inner.qualifiers}".strip()
        elif tag == "DW_TAG_unspecified_type":
            ctype.name = name or "void"
        return ctype

    # ---- queries ----
    def visible(self, function: str, pc: int, inline_depth: Optional[int] = None) -> List[Variable]:
        """Variables in scope at pc in a PTX function, innermost scope first (shadowing names after); with
        inline_depth, only those of the calls inlined at most that deep (a caller's frame of an inlined call)."""
        here = [variable for variable in self.variables
                if (variable.function == function or variable.function == "")
                and variable.scope[0] <= pc < variable.scope[1]
                and (inline_depth is None or variable.inline_depth <= inline_depth)]
        here.sort(key=lambda variable: (variable.scope[1] - variable.scope[0], -variable.inline_depth))
        return here

    def find(self, name: str, function: str, pc: int, inline_depth: Optional[int] = None) -> Optional[Variable]:
        for variable in self.visible(function, pc, inline_depth):
            if name in (variable.name, variable.linkage_name):
                return variable
        for variable in self.variables:
            if variable.linkage_name == name or (variable.function == "" and variable.name == name):
                return variable
        return None

    def location_at(self, variable: Variable, pc: int):
        """('register', name) | ('symbol', name, offset) | ('address', space, address) | None (not live here)."""
        expression = variable.location
        if isinstance(expression, int):
            if self._location_lists is None:
                return None
            expression = None
            for entry in self._location_lists.get_location_list_at_offset(variable.location):
                if hasattr(entry, "begin_offset") and entry.begin_offset <= pc < entry.end_offset:
                    expression = entry.loc_expr
                    break
            if expression is None:
                return None
        return self._decode(list(expression))

    def _decode(self, expression: List[int]):
        if not expression:
            return None
        op = expression[0]
        if op == _DW_OP_REGX:
            number, _ = _uleb(expression, 1)
            return ("register", number.to_bytes((number.bit_length() + 7) // 8, "big").decode("ascii", "replace"))
        if op == _DW_OP_ADDR:
            address = int.from_bytes(bytes(expression[1:9]), "little")
            rest = expression[9:]
            if rest and rest[0] == _DW_OP_PLUS_UCONST:
                address += _uleb(rest, 1)[0]
            symbol = self.sections.symbol_of(address)
            if symbol is not None:
                return ("symbol", symbol[0], symbol[1])
            return ("address", address)
        return ("unsupported", op)

    def inlined_at(self, pc: int) -> List[InlinedCall]:
        """The inlined calls whose code holds pc, innermost first."""
        calls = [call for call in self.inlined if call.pcs[0] <= pc < call.pcs[1]]
        calls.sort(key=lambda call: call.pcs[1] - call.pcs[0])
        return calls


def _text(die, attribute: str) -> Optional[str]:
    if die is None or attribute not in die.attributes:
        return None
    value = die.attributes[attribute].value
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _high(die) -> int:
    attribute = die.attributes["DW_AT_high_pc"]
    low = die.attributes["DW_AT_low_pc"].value
    return attribute.value if attribute.form == "DW_FORM_addr" else low + attribute.value


def _member_offset(die) -> int:
    if "DW_AT_data_member_location" not in die.attributes:
        return 0
    value = die.attributes["DW_AT_data_member_location"].value
    if isinstance(value, int):
        return value
    if value and value[0] == _DW_OP_PLUS_UCONST:
        return _uleb(list(value), 1)[0]
    return 0


def _uleb(data: List[int], position: int) -> Tuple[int, int]:
    result = shift = 0
    while position < len(data):
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    return result, position
