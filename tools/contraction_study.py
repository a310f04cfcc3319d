"""When does ptxas fuse a PTX mul into the add/sub that uses it? Generate patterns, compile, classify from SASS.

Each PTX text is compiled by ptxas (sm_90) after a `.loc` naming its own PTX line is put before every
instruction, so `nvdisasm -gi` tells which PTX line each SASS instruction came from. For every float
add/sub that reads a register a mul writes (a candidate, also through neg and mov), the SASS at that
line says `fused` (an FFMA, DFMA or HFMA2 with a real product), `separate` (FADD, DADD, HADD2) or
`unclear` (ptxas moved or merged it: two scalar half ops paired into one HFMA2, for instance); for every
float mul it says `kept` (FMUL, DMUL, HMUL2, or an HFMA2 with a zero addend) or `absorbed` (nothing left).

Generated cases are also run through gpuemu (--numeric): the case's `cuobjdump -sass` listing on gpuemu's
SASS path, and its PTX with contraction on and off, on inputs where one rounding and two differ.

    python tools/contraction_study.py                  # regenerate tests/contraction/*.json (needs ptxas)
    python tools/contraction_study.py --show NAME      # one case: its PTX and verdicts
    python tools/contraction_study.py --no-numeric     # skip the gpuemu runs
"""
from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "tests" / "contraction"
FLOAT_TYPES = ("f32", "f64", "f16", "f16x2", "bf16", "bf16x2")
TYPE_BYTES = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "f16x2": 4, "bf16x2": 4}
REGISTER_TYPE = {"f32": "f32", "f64": "f64", "f16": "b16", "bf16": "b16", "f16x2": "b32", "bf16x2": "b32"}
#: the rounding, flush and saturation modifiers each type's mul and add accept (PTX ISA 8.x)
MODIFIERS = {
    "f32": ("", ".ftz", ".sat", ".ftz.sat", ".rn", ".rz", ".rm", ".rp", ".rn.ftz"),
    "f64": ("", ".rn", ".rz", ".rm", ".rp"),
    "f16": ("", ".ftz", ".sat", ".ftz.sat", ".rn"),
    "f16x2": ("", ".ftz", ".sat", ".ftz.sat", ".rn"),
    "bf16": ("", ".rn"),
    "bf16x2": ("", ".rn"),
}
IMMEDIATES = {
    "f32": {"IMM0": "0f00000000", "IMM1": "0f3F800000", "IMMM1": "0fBF800000", "IMM2": "0f40000000",
            "IMMM2": "0fC0000000", "IMM3": "0f40400000", "IMMH": "0f3F000000"},
    "f64": {"IMM0": "0d0000000000000000", "IMM1": "0d3FF0000000000000", "IMMM1": "0dBFF0000000000000",
            "IMM2": "0d4000000000000000", "IMMM2": "0dC000000000000000", "IMM3": "0d4008000000000000",
            "IMMH": "0d3FE0000000000000"},
}
THREADS = 64
FLAGS = (0, 3)

_INSTRUCTION = re.compile(r"^\s*(@!?%\w+\s+)?([a-z][\w.:]*)\s*(.*?);\s*$")
_LOC = re.compile(r"^\s*\.loc\b")
_FILE = re.compile(r"^\s*\.file\s+(\d+)")
_NOT_INSTRUCTION = re.compile(r"^\s*(\.|[A-Za-z_$][\w$]*:|\{|\}|$)")
_SASS_LINE = re.compile(r'//## File "([^"]*)", line (\d+)')
_SASS_INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_ENCODING = re.compile(r"\s*/\* 0x[0-9a-f]{16} \*/")


# ---------------------------------------------------------------------------------------------
# PTX: the float mul/add/sub/neg/mov instructions of each function, and the candidates
# ---------------------------------------------------------------------------------------------

@dataclass
class PtxInstr:
    line: int
    opcode: str
    operands: List[str]

    @property
    def parts(self) -> List[str]:
        return self.opcode.split(".")

    @property
    def type(self) -> Optional[str]:
        return self.parts[-1] if self.parts[-1] in FLOAT_TYPES else None


def ptx_functions(text: str) -> Dict[str, List[PtxInstr]]:
    """Function name → its instructions (line numbers are the text's, from 1)."""
    functions: Dict[str, List[PtxInstr]] = {}
    current = pending = None
    depth = 0
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("//")[0]
        header = re.search(r"\.(entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)", code)
        if header and depth == 0:
            pending = header.group(2)
        if "{" in code and depth == 0 and pending is not None:
            current, pending = pending, None
            functions[current] = []
        depth += code.count("{") - code.count("}")
        if depth == 0:
            current = None
            continue
        if current is None or _NOT_INSTRUCTION.match(code):
            continue
        match = _INSTRUCTION.match(code)
        if match:
            operands = [item.strip() for item in re.split(r",(?![^{]*\})", match.group(3)) if item.strip()]
            functions[current].append(PtxInstr(number, match.group(2), operands))
    return functions


def candidates(instrs: List[PtxInstr]) -> Tuple[List[int], List[int]]:
    """(float mul lines, float add/sub lines reading a register that a mul writes, directly or through neg/mov)."""
    products = set()
    muls = []
    for instr in instrs:
        if instr.parts[0] == "mul" and instr.type:
            muls.append(instr.line)
            products.add(instr.operands[0])
    grown = True
    while grown:
        grown = False
        for instr in instrs:
            if instr.parts[0] in ("neg", "mov") and len(instr.operands) == 2 and instr.operands[1] in products \
                    and instr.operands[0] not in products:
                products.add(instr.operands[0])
                grown = True
    adds = [instr.line for instr in instrs if instr.parts[0] in ("add", "sub") and instr.type
            and any(operand in products for operand in instr.operands[1:])]
    return muls, adds


def with_line_locs(text: str) -> str:
    """The PTX with its .loc lines replaced by one before each instruction naming that instruction's own line."""
    lines = text.splitlines()
    index = 1 + max([int(m.group(1)) for m in map(_FILE.match, lines) if m] or [0])
    out = []
    depth = 0
    for number, line in enumerate(lines, 1):
        if _LOC.match(line):
            continue
        code = line.split("//")[0]
        if depth and not _NOT_INSTRUCTION.match(code) and _INSTRUCTION.match(code):
            out.append(f"\t.loc {index} {number} 1")
        out.append(line)
        depth += code.count("{") - code.count("}")
        if re.match(r"^\s*\.address_size", line):
            out.append(f'.file {index} "ptxlines"')
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# ptxas, nvdisasm and cuobjdump
# ---------------------------------------------------------------------------------------------

def nvidia_tool(name: str) -> str:
    sys.path.insert(0, str(ROOT))
    from emulator.base import toolkit
    found = toolkit.nvidia_tool(name)
    if found is None:
        raise SystemExit(f"{name} not found: pip install nvidia-cuda-{name} (or put it on PATH)")
    return found


def ptxas(ptx: str, options: Tuple[str, ...], workdir: pathlib.Path) -> pathlib.Path:
    source, cubin = workdir / "case.ptx", workdir / "case.cubin"
    source.write_text(ptx)
    target = re.search(r"^\s*\.target\s+(sm_\w+)", ptx, re.M)
    result = subprocess.run(["ptxas", f"-arch={target.group(1) if target else 'sm_90'}", *options, str(source),
                             "-o", str(cubin)], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"ptxas {' '.join(options)}: {result.stderr.strip()}")
    return cubin


def sass_listings(ptx: str, options: Tuple[str, ...], workdir: pathlib.Path) -> Dict[str, str]:
    """Function name → its `cuobjdump -sass` listing (as a listing of its own), without encodings and padding."""
    cubin = ptxas(ptx, options, workdir)
    text = subprocess.run([nvidia_tool("cuobjdump"), "-sass", str(cubin)], capture_output=True, text=True,
                          check=True).stdout
    listings: Dict[str, List[str]] = {}
    current = None
    for line in text.splitlines():
        line = _ENCODING.sub("", line).rstrip()
        header = re.match(r"^\s*Function : (\S+)", line)
        if header:
            current = header.group(1)
            listings[current] = ["\tcode for sm_90", line.strip()]
        elif current is not None and line.strip() and not re.search(r"\*/\s+NOP\s*;", line) \
                and not line.strip().startswith("...."):
            listings[current].append(line.strip())
    return {name: "\n".join(lines) + "\n" for name, lines in listings.items()}


def sass_by_line(ptx: str, options: Tuple[str, ...], workdir: pathlib.Path) -> List[Tuple[int, str]]:
    """[(PTX line, SASS instruction)] over every function of the cubin (line 0: no line information)."""
    flags = tuple(options) + (() if "-g" in options else ("-lineinfo",))
    cubin = ptxas(with_line_locs(ptx), flags, workdir)
    listing = subprocess.run([nvidia_tool("nvdisasm"), "-c", "-gi", str(cubin)], capture_output=True, text=True)
    if listing.returncode != 0:
        raise RuntimeError(f"nvdisasm failed ({listing.returncode}): {listing.stderr.strip()}")
    out = []
    line = 0
    for text in listing.stdout.splitlines():
        if text.startswith("//---"):
            line = 0
        located = _SASS_LINE.search(text)
        if located:
            line = int(located.group(2)) if located.group(1) == "ptxlines" else 0
            continue
        match = _SASS_INSTRUCTION.search(text)
        if match:
            instruction = re.sub(r"\s+", " ", match.group(2).strip())
            if instruction and not instruction.startswith("NOP"):
                out.append((line, instruction))
    return out


def _is_one(operand: str) -> bool:
    return operand.replace(" ", "").lstrip("-") in ("1", "1.0", "1,1")


def sass_role(instruction: str) -> Optional[str]:
    """'fma' (a real product and an addend), 'add', 'mul', or None."""
    body = re.sub(r"^@!?U?P\w+\s+", "", instruction)
    mnemonic, _, rest = body.partition(" ")
    family = mnemonic.split(".")[0]
    sources = [item.strip() for item in rest.split(",")][1:]
    if family in ("FADD", "DADD", "HADD2", "FADD32I"):
        return "add"
    if family in ("FMUL", "DMUL", "HMUL2", "FMUL32I"):
        return "mul"
    if family in ("FFMA", "DFMA", "HFMA2", "FFMA32I"):
        if len(sources) >= 3:
            addend = sources[-1]
            if addend.lstrip("-") == "RZ" and (family == "HFMA2" or addend.startswith("-")):
                return "mul"
            if all(s.lstrip("-").startswith("RZ") for s in sources[:2]):
                return None
            if any(_is_one(s) for s in sources[:2]) or (family == "HFMA2" and _is_one(", ".join(sources[1:3]))):
                return "add"
        return "fma"
    return None


def classify(ptx: str, options: Tuple[str, ...], workdir: pathlib.Path) -> Dict[str, dict]:
    """Per function: {'adds': {line: fused|separate|unclear}, 'muls': {line: kept|absorbed|unclear}, 'sass': [...]}.
    SASS counts by PTX line wherever ptxas put it (an inlined .func's code counts for the .func's lines)."""
    sass = sass_by_line(ptx, options, workdir)
    roles: Dict[int, List[str]] = {}
    for line, instruction in sass:
        role = sass_role(instruction)
        if role:
            roles.setdefault(line, []).append(role)
    result = {}
    for name, instrs in ptx_functions(ptx).items():
        muls, adds = candidates(instrs)
        add_verdicts, mul_verdicts = {}, {}
        for line in adds:
            found = roles.get(line, [])
            add_verdicts[str(line)] = ("fused" if "fma" in found and "add" not in found else
                                       "separate" if "add" in found and "fma" not in found else "unclear")
        for line in muls:
            found = roles.get(line, [])
            mul_verdicts[str(line)] = "kept" if "mul" in found else "absorbed" if not found else "unclear"
        own = {instr.line for instr in instrs}
        arithmetic = [f"{line}: {text}" for line, text in sass if line in own and (sass_role(text) or
                                                                                 str(line) in add_verdicts)]
        result[name] = {"adds": add_verdicts, "muls": mul_verdicts, "sass": arithmetic}
    return result


# ---------------------------------------------------------------------------------------------
# generated patterns
# ---------------------------------------------------------------------------------------------

HEADER = ".version 8.8\n.target sm_90\n.address_size 64\n\n"


@dataclass
class Case:
    """One kernel: each thread loads `inputs` values, runs body (.T is the type), stores %y0.. %y<outputs-1>."""
    name: str
    type: str
    body: Tuple[str, ...]
    inputs: int = 4
    outputs: int = 1
    options: Tuple[str, ...] = ()
    functions: str = ""

    @property
    def kernel(self) -> str:
        return f"_Z{len(self.name)}{self.name}PKvPvj"

    def ptx(self) -> str:
        t, register, size = self.type, REGISTER_TYPE[self.type], TYPE_BYTES[self.type]
        move = "mov.T" if register == t else f"mov.b{size * 8}"
        lines = HEADER.splitlines()
        if self.functions:
            lines += self.functions.replace(".T", "." + t).strip().splitlines() + [""]
        lines += [f".visible .entry {self.kernel}(.param .u64 pin, .param .u64 pout, .param .u32 pflag)", "{",
                  f"\t.reg .{register} %x<{self.inputs}>;", f"\t.reg .{register} %y<{self.outputs}>;",
                  f"\t.reg .{register} %t<16>;", "\t.reg .pred %p<4>;", "\t.reg .b32 %c<4>;", "\t.reg .b16 %h<2>;",
                  "\t.reg .b64 %rd<4>;",
                  "\tld.param.u64 %rd1, [pin];", "\tld.param.u64 %rd2, [pout];", "\tld.param.u32 %c0, [pflag];",
                  "\tmov.u32 %c3, %tid.x;", f"\tmul.wide.u32 %rd3, %c3, {self.inputs * size};",
                  "\tadd.s64 %rd1, %rd1, %rd3;", f"\tmul.wide.u32 %rd3, %c3, {self.outputs * size};",
                  "\tadd.s64 %rd2, %rd2, %rd3;", "\tcvta.to.global.u64 %rd1, %rd1;",
                  "\tcvta.to.global.u64 %rd2, %rd2;", "\tsetp.ne.u32 %p0, %c0, 0;"]
        lines += [f"\tld.global.{register} %x{i}, [%rd1+{i * size}];" for i in range(self.inputs)]
        for line in self.body:
            for key, value in sorted(IMMEDIATES.get(t, {}).items(), key=lambda item: -len(item[0])):
                line = line.replace(key, value)
            bits_register = "%rd3" if size == 8 else "%c2" if size == 4 else "%h0"
            line = line.replace("mov.bB", f"mov.b{size * 8}").replace("%cB", bits_register)
            line = line.replace("mov.T", move).replace("selp.T", f"selp.b{size * 8}").replace(".T", "." + t)
            lines.append(line if line.endswith(":") or line in ("{", "}") else f"\t{line}")
        lines += [f"\tst.global.{register} [%rd2+{j * size}], %y{j};" for j in range(self.outputs)]
        lines += ["\tret;", "}", ""]
        return "\n".join(lines)


def modifier_cases() -> List[Case]:
    """mul{m} then add{a} / sub{a}, for every pair of modifiers the type takes."""
    out = []
    for t in FLOAT_TYPES:
        for m in MODIFIERS[t]:
            for a in MODIFIERS[t]:
                for op in ("add", "sub"):
                    name = f"mod_{t}_mul{m.replace('.', '_')}_{op}{a.replace('.', '_')}"
                    out.append(Case(name, t, (f"mul{m}.T %t0, %x0, %x1;", f"{op}{a}.T %y0, %t0, %x2;")))
    return out


#: shape → (body, outputs); `.T` is the type, IMM* an immediate (f32/f64 only)
SHAPES: Dict[str, Tuple[Tuple[str, ...], int]] = {
    "add_product_first": (("mul.T %t0, %x0, %x1;", "add.T %y0, %t0, %x2;"), 1),
    "add_product_second": (("mul.T %t0, %x0, %x1;", "add.T %y0, %x2, %t0;"), 1),
    "sub_product_first": (("mul.T %t0, %x0, %x1;", "sub.T %y0, %t0, %x2;"), 1),
    "sub_product_second": (("mul.T %t0, %x0, %x1;", "sub.T %y0, %x2, %t0;"), 1),
    "square": (("mul.T %t0, %x0, %x0;", "add.T %y0, %t0, %x2;"), 1),
    "add_self": (("mul.T %t0, %x0, %x1;", "add.T %y0, %t0, %t0;"), 1),
    "sub_self": (("mul.T %t0, %x0, %x1;", "sub.T %y0, %t0, %t0;"), 1),
    "add_dest_is_product_register": (("mul.T %t0, %x0, %x1;", "add.T %t0, %t0, %x2;", "mov.T %y0, %t0;"), 1),
    "product_also_stored": (("mul.T %t0, %x0, %x1;", "add.T %y0, %t0, %x2;", "mov.T %y1, %t0;"), 2),
    "product_also_stored_first": (("mul.T %t0, %x0, %x1;", "mov.T %y1, %t0;", "add.T %y0, %t0, %x2;"), 2),
    "product_also_multiplied": (("mul.T %t0, %x0, %x1;", "add.T %y0, %t0, %x2;", "mul.T %y1, %t0, %x3;"), 2),
    "product_two_adds": (("mul.T %t0, %x0, %x1;", "add.T %y0, %t0, %x2;", "add.T %y1, %t0, %x3;"), 2),
    "product_add_and_sub": (("mul.T %t0, %x0, %x1;", "add.T %y0, %t0, %x2;", "sub.T %y1, %x3, %t0;"), 2),
    "product_three_adds": (("mul.T %t0, %x0, %x1;", "add.T %y0, %t0, %x2;", "add.T %y1, %t0, %x3;",
                            "sub.T %y2, %t0, %x0;"), 3),
    "product_four_adds": (("mul.T %t0, %x0, %x1;", "add.T %y0, %t0, %x2;", "add.T %y1, %t0, %x3;",
                           "sub.T %y2, %t0, %x0;", "sub.T %y3, %x1, %t0;"), 4),
    "product_two_adds_and_store": (("mul.T %t0, %x0, %x1;", "add.T %y0, %t0, %x2;", "add.T %y1, %t0, %x3;",
                                    "mov.T %y2, %t0;"), 3),
    "product_add_and_rn_add": (("mul.T %t0, %x0, %x1;", "add.T %y0, %t0, %x2;", "add.rn.T %y1, %t0, %x3;"), 2),
    "product_add_and_sat_add": (("mul.T %t0, %x0, %x1;", "add.T %y0, %t0, %x2;", "add.sat.T %y1, %t0, %x3;"), 2),
    "product_ftz_add_and_plain_add": (("mul.ftz.T %t0, %x0, %x1;", "add.ftz.T %y0, %t0, %x2;",
                                       "add.T %y1, %t0, %x3;"), 2),
    "product_in_own_add_twice": (("mul.T %t0, %x0, %x1;", "add.T %t1, %t0, %x2;", "add.T %y0, %t1, %t0;"), 1),
    "product_dead_copy": (("mul.T %t0, %x0, %x1;", "add.T %y0, %t0, %x2;", "mov.T %t5, %t0;"), 1),
    "product_dead_add": (("mul.T %t0, %x0, %x1;", "add.T %y0, %t0, %x2;", "add.T %t5, %t0, %x3;"), 1),
    "product_dead_mul": (("mul.T %t0, %x0, %x1;", "add.T %y0, %t0, %x2;", "mul.T %t5, %t0, %x3;"), 1),
    "unused_product": (("mul.T %t0, %x0, %x1;", "add.T %y0, %x2, %x3;"), 1),
    "two_products_one_add": (("mul.T %t0, %x0, %x1;", "mul.T %t1, %x2, %x3;", "add.T %y0, %t0, %t1;"), 1),
    "two_products_one_add_swapped": (("mul.T %t0, %x0, %x1;", "mul.T %t1, %x2, %x3;", "add.T %y0, %t1, %t0;"), 1),
    "two_products_one_sub": (("mul.T %t0, %x0, %x1;", "mul.T %t1, %x2, %x3;", "sub.T %y0, %t0, %t1;"), 1),
    "two_products_one_sub_swapped": (("mul.T %t0, %x0, %x1;", "mul.T %t1, %x2, %x3;", "sub.T %y0, %t1, %t0;"), 1),
    "two_products_first_rn": (("mul.rn.T %t0, %x0, %x1;", "mul.T %t1, %x2, %x3;", "add.T %y0, %t0, %t1;"), 1),
    "two_products_first_stored": (("mul.T %t0, %x0, %x1;", "mul.T %t1, %x2, %x3;", "add.T %y0, %t0, %t1;",
                                   "mov.T %y1, %t0;"), 2),
    "two_products_second_stored": (("mul.T %t0, %x0, %x1;", "mul.T %t1, %x2, %x3;", "add.T %y0, %t0, %t1;",
                                    "mov.T %y1, %t1;"), 2),
    "two_products_first_also_added": (("mul.T %t0, %x0, %x1;", "mul.T %t1, %x2, %x3;", "add.T %y0, %t0, %t1;",
                                       "add.T %y1, %t0, %x2;"), 2),
    "two_products_second_also_added": (("mul.T %t0, %x0, %x1;", "mul.T %t1, %x2, %x3;", "add.T %y0, %t0, %t1;",
                                        "add.T %y1, %t1, %x2;"), 2),
    "two_products_first_addend_elsewhere": (("mul.T %t0, %x0, %x1;", "mul.T %t1, %x2, %x3;",
                                             "add.T %y0, %t1, %t0;", "add.T %y1, %t0, %x2;"), 2),
    "two_products_both_twice": (("mul.T %t0, %x0, %x1;", "mul.T %t1, %x2, %x3;", "add.T %y0, %t0, %t1;",
                                 "sub.T %y1, %t1, %t0;"), 2),
    "two_products_first_negated": (("mul.T %t0, %x0, %x1;", "mul.T %t1, %x2, %x3;", "neg.T %t2, %t0;",
                                    "add.T %y0, %t2, %t1;"), 1),
    "two_products_both_twice_swapped": (("mul.T %t0, %x0, %x1;", "mul.T %t1, %x2, %x3;", "add.T %y0, %t1, %t0;",
                                         "sub.T %y1, %t0, %t1;"), 2),
    "two_products_both_twice_reversed_muls": (("mul.T %t1, %x2, %x3;", "mul.T %t0, %x0, %x1;",
                                               "add.T %y0, %t0, %t1;", "sub.T %y1, %t1, %t0;"), 2),
    "two_products_later_add_first": (("mul.T %t0, %x0, %x1;", "mul.T %t1, %x2, %x3;", "add.T %y1, %t1, %x0;",
                                      "add.T %y0, %t0, %t1;"), 2),
    "chain_two": (("mul.T %t0, %x0, %x1;", "add.T %t1, %t0, %x2;", "mul.T %t2, %t1, %x3;",
                   "add.T %y0, %t2, %x0;"), 1),
    "sum_of_three_products": (("mul.T %t0, %x0, %x1;", "mul.T %t1, %x2, %x3;", "mul.T %t2, %x1, %x2;",
                               "add.T %t3, %t0, %t1;", "add.T %y0, %t3, %t2;"), 1),
    "horner_three": (("mul.T %t0, %x0, %x3;", "add.T %t1, %t0, %x1;", "mul.T %t2, %t1, %x3;",
                      "add.T %y0, %t2, %x2;"), 1),
    "neg_then_add": (("mul.T %t0, %x0, %x1;", "neg.T %t1, %t0;", "add.T %y0, %t1, %x2;"), 1),
    "neg_then_sub": (("mul.T %t0, %x0, %x1;", "neg.T %t1, %t0;", "sub.T %y0, %x2, %t1;"), 1),
    "neg_then_sub_first": (("mul.T %t0, %x0, %x1;", "neg.T %t1, %t0;", "sub.T %y0, %t1, %x2;"), 1),
    "neg_twice": (("mul.T %t0, %x0, %x1;", "neg.T %t1, %t0;", "neg.T %t2, %t1;", "add.T %y0, %t2, %x2;"), 1),
    "neg_also_stored": (("mul.T %t0, %x0, %x1;", "neg.T %t1, %t0;", "add.T %y0, %t1, %x2;", "mov.T %y1, %t1;"), 2),
    "neg_and_direct_add": (("mul.T %t0, %x0, %x1;", "neg.T %t1, %t0;", "add.T %y0, %t1, %x2;",
                            "add.T %y1, %t0, %x3;"), 2),
    "neg_two_adds": (("mul.T %t0, %x0, %x1;", "neg.T %t1, %t0;", "add.T %y0, %t1, %x2;", "sub.T %y1, %x3, %t1;"),
                     2),
    "neg_ftz_all_ftz": (("mul.ftz.T %t0, %x0, %x1;", "neg.ftz.T %t1, %t0;", "add.ftz.T %y0, %t1, %x2;"), 1),
    "neg_ftz_between_plain": (("mul.T %t0, %x0, %x1;", "neg.ftz.T %t1, %t0;", "add.T %y0, %t1, %x2;"), 1),
    "mov_then_add": (("mul.T %t0, %x0, %x1;", "mov.T %t1, %t0;", "add.T %y0, %t1, %x2;"), 1),
    "mov_then_neg_then_add": (("mul.T %t0, %x0, %x1;", "mov.T %t1, %t0;", "neg.T %t2, %t1;",
                               "add.T %y0, %t2, %x2;"), 1),
    "bits_round_trip": (("mul.T %t0, %x0, %x1;", "mov.bB %cB, %t0;", "mov.bB %t1, %cB;", "add.T %y0, %t1, %x2;"), 1),
    "abs_then_add": (("mul.T %t0, %x0, %x1;", "abs.T %t1, %t0;", "add.T %y0, %t1, %x2;"), 1),
    "mul_immediate_two": (("mul.T %t0, %x0, IMM2;", "add.T %y0, %t0, %x2;"), 1),
    "mul_immediate_minus_two": (("mul.T %t0, %x0, IMMM2;", "add.T %y0, %t0, %x2;"), 1),
    "mul_immediate_half": (("mul.T %t0, %x0, IMMH;", "add.T %y0, %t0, %x2;"), 1),
    "mul_immediate_three": (("mul.T %t0, %x0, IMM3;", "add.T %y0, %t0, %x2;"), 1),
    "mul_immediate_first": (("mul.T %t0, IMM3, %x0;", "add.T %y0, %t0, %x2;"), 1),
    "mul_immediate_one": (("mul.T %t0, %x0, IMM1;", "add.T %y0, %t0, %x2;"), 1),
    "mul_immediate_minus_one": (("mul.T %t0, %x0, IMMM1;", "add.T %y0, %t0, %x2;"), 1),
    "mul_immediate_one_sub": (("mul.T %t0, %x0, IMM1;", "sub.T %y0, %x2, %t0;"), 1),
    "mul_immediate_zero": (("mul.T %t0, %x0, IMM0;", "add.T %y0, %t0, %x2;"), 1),
    "add_immediate": (("mul.T %t0, %x0, %x1;", "add.T %y0, %t0, IMM3;"), 1),
    "sub_from_immediate": (("mul.T %t0, %x0, %x1;", "sub.T %y0, IMM3, %t0;"), 1),
    "add_zero": (("mul.T %t0, %x0, %x1;", "add.T %y0, %t0, IMM0;"), 1),
    "far_apart": (("mul.T %t0, %x0, %x1;",) + tuple(f"add.T %x3, %x3, %x{1 + i % 2};" for i in range(12)) +
                  ("add.T %y0, %t0, %x2;", "add.T %y1, %x3, %x0;"), 2),
    "guarded_mul": (("mov.T %t0, %x3;", "@%p0 mul.T %t0, %x0, %x1;", "add.T %y0, %t0, %x2;"), 1),
    "guarded_add": (("mul.T %t0, %x0, %x1;", "mov.T %y0, %x3;", "@%p0 add.T %y0, %t0, %x2;"), 1),
    "guarded_add_both_ways": (("mul.T %t0, %x0, %x1;", "@%p0 add.T %y0, %t0, %x2;", "@!%p0 sub.T %y0, %t0, %x3;"),
                              1),
    "guarded_both": (("mov.T %y0, %x3;", "@%p0 mul.T %t0, %x0, %x1;", "@%p0 add.T %y0, %t0, %x2;"), 1),
    "selp_between": (("mul.T %t0, %x0, %x1;", "selp.T %t1, %t0, %x3, %p0;", "add.T %y0, %t1, %x2;"), 1),
    "label_unused_between": (("mul.T %t0, %x0, %x1;", "UNUSED:", "add.T %y0, %t0, %x2;"), 1),
    "bar_sync_between": (("mul.T %t0, %x0, %x1;", "bar.sync 0;", "add.T %y0, %t0, %x2;"), 1),
    "membar_between": (("mul.T %t0, %x0, %x1;", "membar.gl;", "add.T %y0, %t0, %x2;"), 1),
    "fence_sc_between": (("mul.T %t0, %x0, %x1;", "fence.sc.gpu;", "add.T %y0, %t0, %x2;"), 1),
    "fence_acq_rel_between": (("mul.T %t0, %x0, %x1;", "fence.acq_rel.gpu;", "add.T %y0, %t0, %x2;"), 1),
    "membar_cta_between": (("mul.T %t0, %x0, %x1;", "membar.cta;", "add.T %y0, %t0, %x2;"), 1),
    "atom_between": (("mul.T %t0, %x0, %x1;", "atom.global.add.u32 %c2, [%rd1], 1;", "add.T %y0, %t0, %x2;"), 1),
    "red_between": (("mul.T %t0, %x0, %x1;", "red.global.add.u32 [%rd1], 1;", "add.T %y0, %t0, %x2;"), 1),
    "volatile_load_between": (("mul.T %t0, %x0, %x1;", "ld.volatile.global.u32 %c2, [%rd1];",
                               "add.T %y0, %t0, %x2;"), 1),
    "warp_sync_between": (("mul.T %t0, %x0, %x1;", "bar.warp.sync -1;", "add.T %y0, %t0, %x2;"), 1),
    "shfl_between": (("mul.T %t0, %x0, %x1;", "shfl.sync.idx.b32 %c2, %c0, 0, 31, -1;", "add.T %y0, %t0, %x2;"),
                     1),
    "vote_between": (("mul.T %t0, %x0, %x1;", "vote.sync.any.pred %p2, %p0, -1;", "add.T %y0, %t0, %x2;"), 1),
    "nanosleep_between": (("mul.T %t0, %x0, %x1;", "nanosleep.u32 10;", "add.T %y0, %t0, %x2;"), 1),
    "barrier_arrive_between": (("mul.T %t0, %x0, %x1;", "bar.arrive 1, 64;", "add.T %y0, %t0, %x2;"), 1),
    "guarded_exit_between": (("mul.T %t0, %x0, %x1;", "setp.eq.u32 %p2, %c0, 7;", "@%p2 exit;",
                              "add.T %y0, %t0, %x2;"), 1),
    "guarded_trap_between": (("mul.T %t0, %x0, %x1;", "setp.eq.u32 %p2, %c0, 7;", "@%p2 trap;",
                              "add.T %y0, %t0, %x2;"), 1),
    "store_between": (("mul.T %t0, %x0, %x1;", "st.global.u32 [%rd1], %c0;", "add.T %y0, %t0, %x2;"), 1),
    "branch_over_add": (("mul.T %t0, %x0, %x1;", "mov.T %y0, %x3;", "@%p0 bra SKIP;", "add.T %y0, %t0, %x2;",
                         "SKIP:"), 1),
    "branch_over_nothing": (("mul.T %t0, %x0, %x1;", "@%p0 bra NEXT;", "NEXT:", "add.T %y0, %t0, %x2;"), 1),
    "uniform_branch_between": (("mul.T %t0, %x0, %x1;", "bra.uni NEXT;", "NEXT:", "add.T %y0, %t0, %x2;"), 1),
    "add_in_other_block": (("mul.T %t0, %x0, %x1;", "@%p0 bra ELSE;", "add.T %y0, %t0, %x2;", "bra DONE;",
                            "ELSE:", "sub.T %y0, %x3, %t0;", "DONE:"), 1),
    "fused_here_used_in_next_block": (("mul.T %t0, %x0, %x1;", "add.T %y0, %t0, %x2;", "@%p0 bra DONE;",
                                       "add.T %y0, %y0, %t0;", "DONE:"), 1),
    "add_in_one_branch_store_in_other": (("mul.T %t0, %x0, %x1;", "@%p0 bra ELSE;", "add.T %y0, %t0, %x2;",
                                          "bra DONE;", "ELSE:", "mov.T %y0, %t0;", "DONE:"), 1),
    "mul_in_branch_add_after": (("mov.T %t0, %x3;", "@%p0 bra JOIN;", "mul.T %t0, %x0, %x1;", "JOIN:",
                                 "add.T %y0, %t0, %x2;"), 1),
    "mul_before_loop_add_in_loop": (("mul.T %t0, %x0, %x1;", "mov.T %y0, %x2;", "mov.u32 %c1, 0;", "LOOP:",
                                     "add.T %y0, %y0, %t0;", "add.u32 %c1, %c1, 1;", "setp.lt.u32 %p1, %c1, %c0;",
                                     "@%p1 bra LOOP;"), 1),
    "accumulate_in_loop": (("mov.T %y0, %x2;", "mov.u32 %c1, 0;", "LOOP:", "mul.T %t0, %x0, %x1;",
                            "add.T %y0, %y0, %t0;", "add.T %x0, %x0, %x3;", "add.u32 %c1, %c1, 1;",
                            "setp.lt.u32 %p1, %c1, %c0;", "@%p1 bra LOOP;"), 1),
    "loop_carried_product": (("mov.T %t0, %x3;", "mov.T %y0, %x2;", "mov.u32 %c1, 0;", "LOOP:",
                              "add.T %y0, %y0, %t0;", "mul.T %t0, %x0, %y0;", "add.u32 %c1, %c1, 1;",
                              "setp.lt.u32 %p1, %c1, %c0;", "@%p1 bra LOOP;"), 1),
    "product_used_after_loop": (("mul.T %t0, %x0, %x1;", "mov.T %y0, %x2;", "mov.u32 %c1, 0;", "LOOP:",
                                 "add.T %y0, %y0, %x3;", "add.u32 %c1, %c1, 1;", "setp.lt.u32 %p1, %c1, %c0;",
                                 "@%p1 bra LOOP;", "add.T %y0, %y0, %t0;"), 1),
    "redefined_product_register": (("mul.T %t0, %x0, %x1;", "add.T %y0, %t0, %x2;", "mov.T %t0, %x3;",
                                    "add.T %y1, %t0, %x2;"), 2),
    "operand_redefined_between": (("mul.T %t0, %x0, %x1;", "mov.T %x0, %x3;", "add.T %y0, %t0, %x2;",
                                   "add.T %y1, %x0, %x2;"), 2),
    "mul_overwrites_its_operand": (("mul.T %x0, %x0, %x1;", "add.T %y0, %x0, %x2;"), 1),
    "redefined_by_guarded_move": (("mul.T %t0, %x0, %x1;", "@%p0 mov.T %t0, %x3;", "add.T %y0, %t0, %x2;"), 1),
    "mad_present": (("mul.T %t0, %x0, %x1;", "fma.rn.T %t1, %x2, %x3, %t0;", "add.T %y0, %t1, %t0;"), 1),
    "fma_then_add": (("fma.rn.T %t0, %x0, %x1, %x2;", "add.T %y0, %t0, %x3;"), 1),
    "product_into_fma_addend": (("mul.T %t0, %x0, %x1;", "fma.rn.T %y0, %x2, %x3, %t0;"), 1),
    "product_used_by_setp": (("mul.T %t0, %x0, %x1;", "add.T %y0, %t0, %x2;", "setp.gt.T %p1, %t0, %x3;",
                              "@%p1 mov.T %y0, %x3;"), 1),
}
#: shapes that need a scalar compare or an immediate the packed and half types lack
SCALAR_ONLY = {"product_used_by_setp"}
CALL_SHAPES = {
    "product_across_call": (
        ".func (.param .bN r) FNAME(.param .bN a, .param .bN b)\n{\n\t.reg .R %a, %b, %r;\n"
        "\tld.param.R %a, [a];\n\tld.param.R %b, [b];\n\tadd.T %r, %a, %b;\n\tst.param.R [r], %r;\n\tret;\n}",
        ("{", ".param .bN pa;", ".param .bN pb;", ".param .bN pr;", "st.param.R [pa], %t0;",
         "st.param.R [pb], %x2;", "call (pr), FNAME, (pa, pb);", "ld.param.R %y0, [pr];", "}"),
        ("mul.T %t0, %x0, %x1;",)),
    "call_between": (
        ".func FNAME()\n{\n\tret;\n}",
        ("call FNAME, ();",),
        ("mul.T %t0, %x0, %x1;", "CALL", "add.T %y0, %t0, %x2;")),
    "product_returned_from_call": (
        ".func (.param .bN r) FNAME(.param .bN a, .param .bN b)\n{\n\t.reg .R %a, %b, %r;\n"
        "\tld.param.R %a, [a];\n\tld.param.R %b, [b];\n\tmul.T %r, %a, %b;\n\tst.param.R [r], %r;\n\tret;\n}",
        ("{", ".param .bN pa;", ".param .bN pb;", ".param .bN pr;", "st.param.R [pa], %x0;",
         "st.param.R [pb], %x1;", "call (pr), FNAME, (pa, pb);", "ld.param.R %t0, [pr];", "}"),
        ("CALL", "add.T %y0, %t0, %x2;")),
}


def structure_cases() -> List[Case]:
    """Operand order, uses, negation, moves, chains, immediates, predication, control flow, calls."""
    out = []
    for t in FLOAT_TYPES:
        for shape, (body, outputs) in SHAPES.items():
            if any("IMM" in line for line in body) and t not in IMMEDIATES:
                continue
            if shape in SCALAR_ONLY and t.endswith("x2"):
                continue
            if any(f"{m}." in line for line in body for m in (".sat", ".ftz") if m not in MODIFIERS[t]):
                continue
            out.append(Case(f"shape_{t}_{shape}", t, body, outputs=outputs))
        for shape, (function, call, body) in CALL_SHAPES.items():
            name = f"shape_{t}_{shape}"
            callee = name + "_callee"
            bits, register = f"b{TYPE_BYTES[t] * 8}", REGISTER_TYPE[t]
            call = tuple(line.replace("FNAME", callee).replace(".bN", "." + bits).replace(".R", "." + register)
                         for line in call)
            if "CALL" not in body:
                body = body + ("CALL",)
            lines = [item for line in body for item in (call if line == "CALL" else (line,))]
            out.append(Case(name, t, tuple(lines), functions=function.replace("FNAME", callee)
                            .replace(".bN", "." + bits).replace(".R", "." + register)))
    return out


def option_cases() -> List[Case]:
    """A few shapes under ptxas -O0, -O1, -O2, -g and --fmad=false (the driver's JIT compiles at -O3)."""
    chosen = ("add_product_first", "sub_product_second", "product_two_adds", "two_products_one_add")
    out = []
    for options in (("-O0",), ("-O1",), ("-O2",), ("-g",), ("--fmad=false",)):
        flag = options[0].strip("-").replace("=", "_")
        for t in ("f32", "f64", "f16x2", "bf16"):
            for shape in chosen:
                body, outputs = SHAPES[shape]
                out.append(Case(f"opt_{flag}_{t}_{shape}", t, body, outputs=outputs, options=options))
    return out


CORPUS_SOURCE = r"""
#include <cuda_fp16.h>
__device__ inline float lerp_(float start, float end, float weight) { return fma(weight, end, fma(-weight, start, start)); }
__global__ void adamw(float* params, const float* grads, float* m, float* v, long n, float lr, float beta1,
                      float beta2, float bc1, float bc2, float eps, float wd) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float grad = grads[i], mm = m[i], vv = v[i];
    mm = lerp_(grad, mm, beta1); m[i] = mm;
    vv = lerp_(grad * grad, vv, beta2); v[i] = vv;
    mm /= bc1; vv /= bc2;
    params[i] -= lr * (mm / (sqrtf(vv) + eps) + wd * params[i]);
}
__global__ void gelu(float* out, const float* in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float x = in[i]; float cube = 0.044715f * x * x * x;
        out[i] = 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + cube))); }
}
__global__ void layernorm(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                          const float* bias, int N, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N) return;
    const float* x = inp + idx * C;
    float m = 0.0f; for (int i = 0; i < C; i++) m += x[i]; m = m / C;
    float v = 0.0f; for (int i = 0; i < C; i++) { float d = x[i] - m; v += d * d; } v = v / C;
    float s = 1.0f / sqrtf(v + 1e-5f);
    float* o = out + idx * C;
    for (int i = 0; i < C; i++) o[i] = s * (x[i] - m) * weight[i] + bias[i];
    mean[idx] = m; rstd[idx] = s;
}
__global__ void softmax(float* out, const float* inp, int N, int C) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    const float* x = inp + i * C; float mx = -1e30f;
    for (int j = 0; j < C; j++) mx = fmaxf(mx, x[j]);
    float sum = 0.0f;
    for (int j = 0; j < C; j++) { float e = expf(x[j] - mx); out[i * C + j] = e; sum += e; }
    float norm = 1.0f / sum;
    for (int j = 0; j < C; j++) out[i * C + j] *= norm;
}
__global__ void complexmul(float2* out, const float2* a, const float2* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float2 x = a[i], y = b[i]; out[i] = make_float2(x.x * y.x - x.y * y.y, x.x * y.y + x.y * y.x); }
}
__global__ void lerp_double(double* out, const double* a, const double* b, double t, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] * (1.0 - t) + b[i] * t;
}
__global__ void half_axpy(__half2* y, const __half2* x, __half2 a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __hadd2(__hmul2(a, x[i]), y[i]);
}
__global__ void norm3(float* out, const float3* v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float3 p = v[i]; float s = p.x * p.x + p.y * p.y + p.z * p.z; out[i] = s; out[n + i] = p.x * p.y; }
}
"""


def corpus_records(workdir: pathlib.Path) -> List[dict]:
    """Kernels of the kinds LLM trainers run (AdamW, GELU, layernorm, softmax, ...), as nvcc -O3 emits them,
    with and without --use_fast_math: which of nvcc's separate mul and add/sub ptxas fuses."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return []
    source = workdir / "corpus.cu"
    source.write_text(CORPUS_SOURCE)
    records = []
    for name, flags in (("default", ()), ("fast_math", ("--use_fast_math",))):
        ptx = workdir / f"corpus_{name}.ptx"
        subprocess.run([nvcc, "-ptx", "-arch=sm_90", "-O3", *flags, str(source), "-o", str(ptx)], check=True)
        text = ptx.read_text()
        kernels = {kernel: verdict for kernel, verdict in classify(text, (), workdir).items()
                   if verdict["adds"] or verdict["muls"]}
        records.append({"name": name, "nvcc_flags": ["-O3", *flags], "ptx": text, "kernels": kernels})
    return records


DEBUG_SOURCE = r"""
#include <cuda_fp16.h>
__global__ void axpy_debug(const float* x, const float* y, float* out, float a) {
    int i = threadIdx.x;
    out[i] = a * x[i] + y[i];
}
__global__ void dot_debug(const double* x, const double* y, double* out, int n) {
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += x[i] * y[i];
    out[threadIdx.x] = sum;
}
__global__ void half_debug(const __half2* x, const __half2* y, __half2* out) {
    int i = threadIdx.x;
    out[i] = __hadd2(__hmul2(x[i], y[i]), x[i]);
}
"""


def debug_records(workdir: pathlib.Path) -> List[dict]:
    """`nvcc -G -ptx` output (`.target sm_90, debug`), compiled as nvcc -G compiles it and with ptxas's defaults."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return []
    source, ptx = workdir / "debug_cases.cu", workdir / "debug_cases.ptx"
    source.write_text(DEBUG_SOURCE)
    subprocess.run([nvcc, "-G", "-ptx", "-arch=sm_90", str(source), "-o", str(ptx)], check=True)
    text = ptx.read_text()
    records = []
    for name, flags in (("nvcc_G_flags", ("-g", "--dont-merge-basicblocks", "--return-at-end")),
                        ("ptxas_defaults", ()), ("ptxas_O3", ("-O3",))):
        try:
            verdicts = classify(text, flags, workdir)
        except RuntimeError as error:
            records.append({"name": name, "options": list(flags), "ptxas_error": str(error)})
            continue
        kernels = {kernel: verdict for kernel, verdict in verdicts.items() if verdict["adds"] or verdict["muls"]}
        records.append({"name": name, "options": list(flags), "kernels": kernels})
    return [{"source": DEBUG_SOURCE, "ptx": text, "builds": records}]


# ---------------------------------------------------------------------------------------------
# gpuemu runs: the case's SASS against its PTX with contraction on and off
# ---------------------------------------------------------------------------------------------

def case_inputs(case: Case):
    """Per-thread input bytes: values in ±[0.25, 2) whose products carry more bits than the type keeps."""
    import numpy as np
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    size = TYPE_BYTES[case.type]
    lanes = 2 if case.type.endswith("x2") else 1
    count = THREADS * case.inputs * lanes
    values = rng.uniform(0.25, 2.0, count) * rng.choice([-1.0, 1.0], count)
    if case.type.startswith("bf16"):
        raw = (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    elif case.type in ("f32", "f64"):
        raw = values.astype(np.float32 if case.type == "f32" else np.float64)
    else:
        raw = values.astype(np.float16)
    return raw.view(np.uint8).reshape(THREADS, case.inputs * size).reshape(-1)


def run_case(module, case: Case):
    import numpy as np
    kernel = module.kernel(case.kernel)
    outputs = []
    for flag in FLAGS:
        out = np.zeros(THREADS * case.outputs * TYPE_BYTES[case.type], dtype=np.uint8)
        kernel.launch(1, THREADS, [case_inputs(case), out, np.uint32(flag)])
        outputs.append(out)
    return np.concatenate(outputs)


def numeric_check(case: Case, listing: str) -> dict:
    import numpy as np
    sys.path.insert(0, str(ROOT))
    from emulator.api import load
    sass = run_case(load(listing), case)
    contracted = run_case(load(case.ptx()), case)
    literal = run_case(load(case.ptx(), contract=False), case)
    return {"sass_equals_contracted": bool(np.array_equal(sass, contracted)),
            "sass_equals_literal": bool(np.array_equal(sass, literal))}


# ---------------------------------------------------------------------------------------------
# driver
# ---------------------------------------------------------------------------------------------

def classify_cases(cases: List[Case], workdir: pathlib.Path) -> Dict[str, dict]:
    """Case name → verdicts in its own PTX's line numbers; cases with the same options share one ptxas run."""
    verdicts: Dict[str, dict] = {}
    groups: Dict[Tuple[str, ...], List[Case]] = {}
    for case in cases:
        groups.setdefault(case.options, []).append(case)
    header_lines = len(HEADER.splitlines())
    for options, group in groups.items():
        lines = HEADER.splitlines()
        shifts = {}
        for case in group:
            shifts[case.name] = len(lines) - header_lines
            lines += case.ptx().splitlines()[header_lines:]
        combined = classify("\n".join(lines) + "\n", options, workdir)
        for case in group:
            shift = shifts[case.name]
            verdict = combined[case.kernel]

            def own(line: str) -> str:
                return str(int(line) - shift)

            verdicts[case.name] = {
                "adds": {own(line): value for line, value in verdict["adds"].items()},
                "muls": {own(line): value for line, value in verdict["muls"].items()},
                "sass": [f"{own(text.split(':', 1)[0])}:{text.split(':', 1)[1]}" for text in verdict["sass"]]}
    return verdicts


def write_records(path: pathlib.Path, records: List[dict]) -> None:
    """A JSON list with one record a line (diffs stay readable)."""
    path.write_text("[\n" + ",\n".join(json.dumps(record) for record in records) + "\n]\n")


def study(cases: List[Case], workdir: pathlib.Path, numeric: bool) -> List[dict]:
    verdicts = classify_cases(cases, workdir)
    plain = [case for case in cases if not case.options]
    listings = sass_listings(HEADER + "".join(c.ptx()[len(HEADER):] for c in plain), (), workdir) if plain else {}
    records = []
    for case in cases:
        record = {"name": case.name, "type": case.type, "options": list(case.options), "ptx": case.ptx(),
                  **verdicts[case.name]}
        if not case.options and numeric:
            record["numeric"] = numeric_check(case, listings[case.kernel])
            if not record["numeric"]["sass_equals_literal"]:
                record["listing"] = listings[case.kernel]
        records.append(record)
    return records


def example_records(workdir: pathlib.Path) -> List[dict]:
    records = []
    for path in sorted((ROOT / "examples").glob("*/*.ptx")):
        text = path.read_text()
        for kernel, verdict in classify(text, (), workdir).items():
            if verdict["adds"] or verdict["muls"]:
                records.append({"file": str(path.relative_to(ROOT)), "function": kernel,
                                "sha256": hashlib.sha256(text.encode()).hexdigest(), **verdict})
    return records


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", metavar="NAME", help="print one generated case's PTX and verdicts")
    parser.add_argument("--no-numeric", action="store_true", help="skip running the cases in gpuemu")
    parser.add_argument("--out", default=str(OUT_DIR), help="directory for the JSON results")
    options = parser.parse_args(argv)
    groups = {"modifiers": modifier_cases(), "structure": structure_cases(), "options": option_cases()}
    with tempfile.TemporaryDirectory() as temp:
        workdir = pathlib.Path(temp)
        if options.show:
            case = next((c for cases in groups.values() for c in cases if c.name == options.show), None)
            if case is None:
                print(f"no case named {options.show}", file=sys.stderr)
                return 2
            print(case.ptx())
            print(json.dumps(classify(case.ptx(), case.options, workdir)[case.kernel], indent=1))
            print(sass_listings(case.ptx(), case.options, workdir)[case.kernel])
            return 0
        out = pathlib.Path(options.out)
        out.mkdir(parents=True, exist_ok=True)
        for group, cases in groups.items():
            records = study(cases, workdir, not options.no_numeric)
            write_records(out / f"{group}.json", records)
            print(f"{group}: {len(records)} cases")
        write_records(out / "debug.json", debug_records(workdir))
        write_records(out / "corpus.json", corpus_records(workdir))
        examples = example_records(workdir)
        write_records(out / "examples.json", examples)
        print(f"examples: {len(examples)} functions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
