"""SASS operands to IR operands: registers, predicates, immediates, constant words, addresses; code regions."""
from __future__ import annotations

import re
from typing import Any, Optional, Tuple

import numpy as np

from emulator import ir
from emulator.base.errors import PTXSemanticError
from emulator.frontend.sass import syntax as S
from emulator.frontend.sass.program import _float_bits, _int, _is_integer
from emulator.frontend.sass.vocabulary import (_FLOAT_WORDS, _HALF_SELECTS, _PRED, _REG, _SUFFIXES_IGNORED,
                                               SPECIAL_CONSTANTS, SPECIALS)
from emulator.ir.sass import Address, ConstWord, Immediate, Pred, SignBit, Special, Value


class OperandLowering:
    """SASS operands to IR operands: registers, predicates, immediates, constant words, addresses; code regions."""

    def error(self, instr, message: str) -> PTXSemanticError:
        return PTXSemanticError(self.source, instr.pos.line, instr.pos.col, message)

    def register(self, name: str, kind: str) -> ir.RegInfo:
        info = self.by_name.get(name)
        if info is None:
            dtype = np.dtype(np.bool_) if kind == "pred" else np.dtype(np.uint32)
            info = ir.RegInfo(len(self.registers), name, kind, dtype)
            self.registers.append(info)
            self.by_name[name] = info
        return info

    def hidden_pred(self, name: str) -> ir.RegInfo:
        return self.register(f"%{name}", "pred")

    # ---- addresses and regions ----
    def _addressed(self, body):
        items = []
        next_address = 0
        for item in body:
            if isinstance(item, S.Instruction):
                address = item.address if item.address is not None else next_address
                next_address = address + self.arch.instruction_bytes
                items.append((address, item))
            else:
                items.append((next_address, item))
        return items

    def _regions(self):
        """(kind, start, target) of every SSY/PBK/PCNT: the reconvergence, break and continue points."""
        regions = []
        for address, item in self.items:
            if isinstance(item, S.Instruction):
                base = item.opcode.split(".")[0]
                if base in ("SSY", "PBK", "PCNT") and item.operands:
                    target = self._target_address(item, item.operands[-1])
                    regions.append((base, address, target))
        return regions

    def _innermost(self, kind: str, address: int) -> Optional[int]:
        best = None
        for region, start, target in self.regions:
            if region == kind and start < address <= target and (best is None or start > best[0]):
                best = (start, target)
        return None if best is None else best[1]

    def _target_address(self, instr, operand) -> int:
        if isinstance(operand, S.Number):
            if not _is_integer(operand.text):
                raise self.error(instr, f"branch target '{operand.text}' is not an address such as 0x80")
            return _int(operand.text)
        if isinstance(operand, S.LabelRef):
            for address, item in self.items:
                if isinstance(item, S.Label) and item.name == operand.name:
                    return address
            raise self.error(instr, f"unknown label '{operand.name}'")
        raise self.error(instr, "a branch target must be an address such as 0x80")

    # ---- operands ----
    def value(self, instr, operand, width: int = 32, kind: str = "int") -> Any:
        """A value source or destination: register (pair), immediate, constant word or special register."""
        if isinstance(operand, tuple) and operand[0] == "halves":
            high, low = (self.value(instr, part, 32, kind if kind in ("h", "hb") else "h") for part in operand[1:])
            return Immediate((high.bits << 16) | low.bits, 32)
        negate = absolute = invert = False
        while isinstance(operand, S.Modified):
            if operand.modifier == "-":
                negate = not negate
            elif operand.modifier == "|":
                absolute = True
            elif operand.modifier == "~":
                invert = True
            else:
                raise self.error(instr, f"'{operand.modifier}' cannot apply to a value operand")
            operand = operand.inner
        if isinstance(operand, S.Number):
            return self._immediate(instr, operand.text, width, kind, negate, absolute)
        if isinstance(operand, S.Name):
            text = operand.text
            parts = text.split(".")
            base, suffixes = parts[0], [p for p in parts[1:] if p not in _SUFFIXES_IGNORED]
            if base.upper() in _FLOAT_WORDS and kind in ("f", "F", "h", "hb"):
                return self._immediate(instr, base.upper(), width, kind, negate, absolute)
            match = _REG.match(base)
            if match:
                half = next((s for s in suffixes if s in _HALF_SELECTS), None)
                return self._register_value(match, width, negate, absolute, invert, half)
            if base.startswith("SR") or base == "SRZ":
                return self._special(instr, text)
            raise self.error(instr, f"'{text}' is not a register or value here")
        if isinstance(operand, S.Bracketed) and operand.prefix in ("c", "cx"):
            return self._const(instr, operand, width, negate, absolute, invert)
        raise self.error(instr, "expected a register, immediate or constant operand")

    def _register_value(self, match, width, negate, absolute, invert, half) -> Value:
        prefix, number = match.groups()
        uniform = prefix == "UR"
        count = width // 32
        if number == "Z":
            regs = (None,) * count
        else:
            first = int(number)
            regs = tuple(self.register(f"{prefix}{first + i}", "b32") for i in range(count))
        return Value(regs, uniform, negate, absolute, invert, half)

    def _immediate(self, instr, text: str, width: int, kind: str, negate: bool, absolute: bool) -> Immediate:
        mask = (1 << width) - 1
        if kind in ("f", "F", "h", "hb") and (text in _FLOAT_WORDS or not text.lower().startswith("0x")):
            value = _FLOAT_WORDS[text] if text in _FLOAT_WORDS else float(text)
            if absolute:
                value = abs(value)
            if negate:
                value = -value
            if kind == "h":
                return Immediate(int(np.array(value, dtype=np.float16).view(np.uint16)), 16)
            if kind == "hb":
                return Immediate(int(np.array(value, dtype=np.float32).view(np.uint32)) >> 16, 16)
            return Immediate(_float_bits(value, 64 if kind == "F" else 32), width)
        try:
            value = _int(text)
        except ValueError:
            raise self.error(instr, f"'{text}' is not an integer") from None
        if kind in ("f", "F") and negate:
            return Immediate(value ^ (1 << (width - 1)), width)
        if kind in ("h", "hb"):
            return Immediate(value & 0xFFFF, 16)
        return Immediate((-value if negate else value) & mask, width)

    def _special(self, instr, text: str) -> Special:
        key = text.upper()
        key = key[3:] if key.startswith("SR_") else key
        key = key.replace("_X", ".X").replace("_Y", ".Y").replace("_Z", ".Z") if "." not in key else key
        key = key.replace("_", "")
        if key in SPECIALS:
            return Special(SPECIALS[key])
        if key in SPECIAL_CONSTANTS:
            return Special(key.lower(), SPECIAL_CONSTANTS[key])
        if key in ("SWINHI", "SMEMSZ"):
            return Special(key.lower())
        raise self.error(instr, f"unsupported special register '{text}'")

    def _const(self, instr, operand: S.Bracketed, width: int, negate=False, absolute=False, invert=False) -> ConstWord:
        if len(operand.groups) != 2:
            raise self.error(instr, "a constant operand is c[bank][offset]")
        bank_terms, offset_terms = operand.groups
        if len(bank_terms) != 1 or bank_terms[0].kind != "number":
            raise self.error(instr, "constant banks are numbered: c[0x0][...]")
        bank = _int(bank_terms[0].text)
        offset = 0
        index = None
        for term in offset_terms:
            if term.kind == "number":
                offset += -_int(term.text) if term.negative else _int(term.text)
            else:
                match = _REG.match(term.text.split(".")[0])
                if not match:
                    raise self.error(instr, f"'{term.text}' cannot index a constant bank")
                index = self._register_value(match, 32, False, False, False, None)
        if bank == 0 and index is None:
            self.const_reads.append((offset, width // 8))
        if bank != 0 and not (bank == 1 and self.arch.stack[0] == 1):
            self.user_banks.add(bank)
        return ConstWord(bank, offset, index, width, negate, absolute, invert)

    def pred(self, instr, operand) -> Pred:
        negated = False
        while isinstance(operand, S.Modified):
            if operand.modifier != "!":
                raise self.error(instr, "expected a predicate")
            negated = not negated
            operand = operand.inner
        if not isinstance(operand, S.Name):
            raise self.error(instr, "expected a predicate such as P0 or PT")
        register = _REG.match(operand.text.split(".")[0])
        if register and "SIGN" in operand.text.split(".")[1:]:
            return SignBit(self._register_value(register, 32, False, False, False, None), negated)
        match = _PRED.match(operand.text.split(".")[0])
        if not match:
            raise self.error(instr, f"'{operand.text}' is not a predicate")
        prefix, number = match.groups()
        if number == "T":
            return Pred(None, negated, prefix == "UP")
        return Pred(self.register(f"{prefix}{number}", "pred"), negated, prefix == "UP")

    def address(self, instr, operand, mods: Tuple[str, ...], space: str) -> Address:
        if not isinstance(operand, S.Bracketed) or operand.prefix in ("c", "cx"):
            raise self.error(instr, "expected a memory operand such as [R2+0x4]")
        terms = operand.groups[-1]
        wide = space in ("global", "generic") and ("E" in mods or self.arch.pointer_bytes == 8 and
                                                  self.arch.instruction_bytes == 16)
        base = uniform = None
        offset = 0
        scale = 1
        for term in terms:
            if term.kind == "number":
                offset += -_int(term.text) if term.negative else _int(term.text)
                continue
            parts = term.text.split(".")
            match = _REG.match(parts[0])
            if not match:
                raise self.error(instr, f"'{term.text}' cannot form an address")
            suffixes = set(parts[1:])
            scale_word = next((s for s in suffixes if re.match(r"X\d+$", s)), None)
            if scale_word:
                scale = int(scale_word[1:])
            if match.group(1) == "UR":
                uniform = self._register_value(match, 64 if wide and "U32" not in suffixes else 32,
                                               False, False, False, None)
            else:
                width = 64 if ("64" in suffixes or wide) and "U32" not in suffixes else 32
                base = self._register_value(match, width, False, False, False, None)
        offset = (offset + (1 << 63)) % (1 << 64) - (1 << 63)  # addresses wrap around 64 bits
        if space in ("shared", "generic"):
            self.uses_shared = True
        if space == "local":
            self.local_ops = True
        return Address(base, uniform, offset, scale, 64 if wide else 32)
