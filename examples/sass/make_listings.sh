#!/usr/bin/env bash
# Regenerate kernels.sm_90.sass and kernels.sm_75.sass: kernels.cu compiled to cubins by nvcc 13 and dumped
# with cuobjdump -sass (cuobjdump and nvdisasm from the CUDA toolkit, or from the nvidia-cuda-cuobjdump and
# nvidia-cuda-nvdisasm wheels on PATH). Run from anywhere; writes next to this script.
set -eu
cd "$(dirname "$0")"
NVCC=${NVCC:-nvcc}
CUOBJDUMP=${CUOBJDUMP:-cuobjdump}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for arch in sm_90 sm_75; do
    "$NVCC" -cubin -arch="$arch" -lineinfo kernels.cu -o "$scratch/kernels.$arch.cubin"
    "$CUOBJDUMP" -sass "$scratch/kernels.$arch.cubin" > "kernels.$arch.sass"
    echo "kernels.$arch.sass: $(grep -c '^ */\*[0-9a-f]\{4\}\*/' "kernels.$arch.sass") instructions"
done
