#!/usr/bin/env python3
"""Run the H100 instruction probes (tests/isa_probes) as SASS: each family's PTX assembled by ptxas for sm_90,
dumped by cuobjdump -sass, every probe launched from the listing and compared with the H100's recorded results.

Needs ptxas and cuobjdump on PATH (`pip install nvidia-cuda-cuobjdump
nvidia-cuda-nvdisasm` provides cuobjdump).
Usage: python examples/sass/check_probes.py [FAMILY ...]   (families: atomics bits compare cvt fp32 ...)
"""
import argparse
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from emulator.errors import GpuemuError
from emulator.launch import Device, Module
from emulator.spec import check_launch, read_launches


def listing(ptx: Path, scratch: Path, arch: str) -> str:
    cubin = scratch / f"{ptx.stem}.{arch}.cubin"
    subprocess.run(["ptxas", f"-arch={arch}", str(ptx), "-o", str(cubin)], check=True)
    return subprocess.run(["cuobjdump", "-sass", str(cubin)], check=True, capture_output=True, text=True).stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("families", nargs="*", help="probe families (default: all)")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--show", type=int, default=8, help="differences to print per family")
    options = parser.parse_args()
    by_family = defaultdict(list)
    for spec in read_launches(ROOT / "tests" / "isa_probes" / "launches.json"):
        by_family[spec.ptx.stem].append(spec)
    total = failed = 0
    with tempfile.TemporaryDirectory() as scratch:
        for family in sorted(options.families or by_family):
            text = listing(ROOT / "tests" / "isa_probes" / f"{family}.ptx", Path(scratch), options.arch)
            module = Module(text, f"{family}.{options.arch}.sass", Device())
            problems = []
            for spec in by_family[family]:
                if not spec.expected_dir.exists():
                    continue
                try:
                    args = spec.arguments()
                    module.kernel(spec.kernel).launch(spec.grid, spec.block, args, spec.shared)
                    differences = check_launch(spec, args, "")
                except GpuemuError as error:
                    differences = [str(error)]
                if differences:
                    problems.append(f"{spec.name}: {'; '.join(differences)[:200]}")
            total += len(by_family[family])
            failed += len(problems)
            print(f"{family}: {len(by_family[family]) - len(problems)}/{len(by_family[family])} match the H100")
            for line in problems[:options.show]:
                print(f"    {line}")
    print(f"check_probes: {total - failed} of {total} probes match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
