"""The SASS words lowering knows: memory mnemonics and their spaces, data widths, atomic operations, no-ops,
special registers, register and predicate names."""
from __future__ import annotations

import re

from isa.sass import SassOp, p2r, r2p

#: load/store/atomic mnemonics: (operation, state space)
MEMORY = {
    "LD": ("load", "generic"), "ST": ("store", "generic"), "LDU": ("load", "generic"),
    "LDG": ("load", "global"), "STG": ("store", "global"),
    "LDS": ("load", "shared"), "STS": ("store", "shared"),
    "LDL": ("load", "local"), "STL": ("store", "local"),
    "LDSLK": ("lock_load", "shared"), "STSUL": ("unlock_store", "shared"),
    "ATOM": ("atomic", "generic"), "ATOMG": ("atomic", "global"), "ATOMS": ("atomic", "shared"),
    "RED": ("reduce", "generic"), "REDG": ("reduce", "global"),
    "GLD": ("load", "global"), "GST": ("store", "global"), "LLD": ("load", "local"), "LST": ("store", "local"),
    "G2R": ("load", "shared"), "R2G": ("store", "shared"), "GATOM": ("atomic", "global"),
    "GRED": ("reduce", "global"),
}
#: data widths in bytes named by a memory instruction's type word (4 when none)
WIDTHS = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "32": 4, "64": 8, "128": 16, "F32": 4, "F64": 8, "S32": 4,
          "U32": 4, "S64": 8, "U64": 8, "F16x2": 4}
ATOMIC_OPS = {"ADD": "add", "MIN": "min", "MAX": "max", "INC": "inc", "DEC": "dec", "AND": "and", "OR": "or",
              "XOR": "xor", "EXCH": "exch", "CAS": "cas", "CAST": "cas"}
#: instructions that only schedule, order memory or mark reconvergence: nothing to compute here
NO_OPS = frozenset("NOP YIELD DEPBAR MEMBAR FENCE ERRBAR CGAERRBAR CCTL CCTLL NANOSLEEP SSY PBK PCNT BSSY BSYNC "
                   "BREAK WARPSYNC BMOV PREEXIT TEXDEPBAR JOIN PRET PLONGJMP LEPC".split())
#: S2R names (SR_ and separators stripped, upper case) → the machine's special registers
SPECIALS = {
    "TID.X": "tid.x", "TID.Y": "tid.y", "TID.Z": "tid.z", "CTAID.X": "ctaid.x", "CTAID.Y": "ctaid.y",
    "CTAID.Z": "ctaid.z", "NTID.X": "ntid.x", "NTID.Y": "ntid.y", "NTID.Z": "ntid.z", "NCTAID.X": "nctaid.x",
    "NCTAID.Y": "nctaid.y", "NCTAID.Z": "nctaid.z", "LANEID": "laneid", "WARPID": "warpid", "SMID": "smid",
    "VIRTUALSMID": "smid", "NWARPID": "nwarpid", "EQMASK": "lanemask_eq", "LTMASK": "lanemask_lt",
    "LEMASK": "lanemask_le", "GTMASK": "lanemask_gt", "GEMASK": "lanemask_ge", "CLOCKLO": "clock",
    "CLOCKHI": "clock_hi", "CLOCK": "clock", "GLOBALTIMERLO": "globaltimer_lo",
    "GLOBALTIMERHI": "globaltimer_hi", "GLOBALTIMER": "globaltimer_lo", "GRIDID": "gridid",
}
#: special registers that read as constants on one CTA per cluster
SPECIAL_CONSTANTS = {"CGACTAID": 0, "CLUSTERCTARANK": 0, "SRZ": 0, "SWINLO": 0, "VIRTID": 0, "ESR_PC": 0}

_REG = re.compile(r"^(U?R)(\d+|Z)$")
_PRED = re.compile(r"^(U?P)(\d+|T)$")
_SUFFIXES_IGNORED = {"reuse", "REUSE"}
_HALF_SELECTS = {"H0_H0", "H1_H1", "H0_H1", "H1_H0", "F32", "H0", "H1", "B0", "B1", "B2", "B3"}
#: P2R and R2P move predicates to and from register bits
P2R = SassOp("P2R", "", p2r, "predicates into the bits of a register a mask selects")
R2P = SassOp("R2P", "", r2p, "the bits of a register a mask selects into predicates")
#: float literals cuobjdump prints as words
_FLOAT_WORDS = {"INF": float("inf"), "QNAN": float("nan"), "NAN": float("nan"), "SNAN": float("nan")}
