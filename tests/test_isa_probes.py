"""Every instruction probe gives the bits a real H100 gave (approximate instructions within the ISA's bound)."""
from collections import defaultdict
from pathlib import Path

import pytest

from emulator.runtime.spec import check_launch, read_launches, run_launch

ROOT = Path(__file__).resolve().parents[1]
SPECS = read_launches(ROOT / "tests" / "isa_probes" / "launches.json")
BY_FILE = defaultdict(list)
for _spec in SPECS:
    BY_FILE[_spec.ptx.name].append(_spec)


@pytest.mark.parametrize("ptx", sorted(BY_FILE), ids=str)
def test_probe_family_matches_h100(ptx):
    cache = {}
    failures = []
    for spec in BY_FILE[ptx]:
        if not spec.expected_dir.exists():
            failures.append(f"{spec.name}: no H100 result recorded")
            continue
        try:
            args, printed = run_launch(spec, module_cache=cache)
        except Exception as error:
            failures.append(f"{spec.name}: {type(error).__name__}: {error}")
            continue
        failures += [f"{spec.name}: {problem}" for problem in check_launch(spec, args, printed)]
    assert not failures, f"{len(failures)} of {len(BY_FILE[ptx])} probes differ:\n" + "\n".join(failures[:40])
