"""Stands in for `cuobjdump -sass CUBIN` where the CUDA toolkit has no cuobjdump: prints the listing cuobjdump printed
on the GPU machine for the cubin with the same SHA-256 (tests/cuda_programs/sass_only/manifest.json), and fails for
any other cubin."""
import hashlib
import json
import os
import sys

RECORDED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cuda_programs", "sass_only")


def main(argv) -> int:
    if len(argv) != 3 or argv[1] != "-sass":
        sys.stderr.write("usage: cuobjdump -sass CUBIN\n")
        return 2
    with open(argv[2], "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    with open(os.path.join(RECORDED, "manifest.json"), encoding="utf-8") as handle:
        listing = json.load(handle)["listings"].get(digest)
    if listing is None:
        sys.stderr.write(f"no recorded listing for a cubin of SHA-256 {digest}\n")
        return 1
    with open(os.path.join(RECORDED, listing), encoding="utf-8") as handle:
        sys.stdout.write(handle.read())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
