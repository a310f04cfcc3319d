"""`gpuemu isa`: the instructions gpuemu implements, from the instruction table itself."""
from __future__ import annotations


def add_command(commands) -> None:
    isa = commands.add_parser("isa", help="list the instructions gpuemu implements")
    isa.add_argument("--markdown", action="store_true", help="as a markdown table")
    isa.set_defaults(handler=command_isa)


def command_isa(options) -> int:
    from isa.table import FAMILIES, coverage
    if options.markdown:
        print(coverage())
    else:
        for family in FAMILIES:
            print(f"{family.mnemonic:12s} {family.op_class}")
    return 0
