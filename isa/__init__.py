"""Instruction-set data: opcode tables, types and the pure semantics functions they name."""
