#!/usr/bin/env python3
"""tools/probes_names/run_probes.py --gpu on a machine where gpuemu (or pytest) cannot be imported."""

# run_probes imports tests/test_shared_layout.py for its configurations, and that module imports pytest and
# gpuemu at the top; the GPU side needs neither, so stand-ins are installed for whichever is missing.
import sys
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent


def stand_in(name: str, **attributes) -> None:
    try:
        __import__(name)
    except Exception:
        module = types.ModuleType(name)
        module.__dict__.update(attributes)
        sys.modules[name] = module


def identity_decorator(*args, **kwargs):
    return lambda function: function


class Marks:
    parametrize = skipif = staticmethod(identity_decorator)


stand_in("pytest", mark=Marks())
stand_in("emulator")
stand_in("emulator.api", load=None)
stand_in("emulator.errors", PTXSemanticError=Exception, DeviceError=Exception)
sys.path.insert(0, str(HERE / "probes_names"))
import run_probes  # noqa: E402

if __name__ == "__main__":
    sys.exit(run_probes.main(sys.argv[1:]))
