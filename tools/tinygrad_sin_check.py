"""tinygrad's large-argument sin/cos/tan case (test_ops, tolerance 3e-3) on whatever DEV names; saves the results.

Run from a tinygrad checkout: `DEV=CUDA:PTX python tools/tinygrad_sin_check.py gpu.npz` on a GPU, then
`OCELOT_PATH=$(gpuemu ocelot-lib) DEV=MOCK+CUDA:PTX python .../tinygrad_sin_check.py gpuemu.npz`, and compare."""
import sys

import numpy as np
from tinygrad import Device, Tensor

ARGUMENTS = [1e1, 1e2, 1e3, 1e4, 1e5, 1e6, -1e1, -1e2, -1e3, -1e4, -1e5, -1e6]
TOLERANCE = 3e-3


def main(path: str) -> None:
    print("device", Device.DEFAULT)
    results = {}
    for name in ("sin", "cos", "tan"):
        values = getattr(Tensor(np.array(ARGUMENTS, np.float32)), name)().numpy()
        reference = getattr(np, name)(np.array(ARGUMENTS, np.float32).astype(np.float64))
        outside = np.flatnonzero(~np.isclose(values, reference, atol=TOLERANCE, rtol=TOLERANCE))
        results[name] = values
        print(name, "within tolerance:", len(outside) == 0, "| outside:",
              [(ARGUMENTS[i], float(values[i]), float(reference[i])) for i in outside])
    np.savez(path, **results)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tinygrad_sin.npz")
