"""Compare a `gpuemu run --out DIR` result with an example's recorded H100 outputs and say so in one line."""
import sys
from pathlib import Path

import numpy as np


def main(result_dir: str, expected_dir: str) -> int:
    results, expected = Path(result_dir), Path(expected_dir)
    compared = 0
    for want_path in sorted(expected.glob("arg*.npy")):
        got_path = results / want_path.name
        want, got = np.load(want_path), np.load(got_path)
        if want.dtype != got.dtype or want.shape != got.shape or want.tobytes() != got.tobytes():
            print(f"{got_path} differs from the H100's {want_path}")
            return 1
        compared += 1
    if not compared:
        print(f"no H100 outputs recorded in {expected}")
        return 1
    print(f"{compared} output buffer(s) in {results} match the H100 bit for bit ({expected})")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
