#!/usr/bin/env bash
# The corpus helper's GPU session: H100 results for examples/corpus and tests/ptx_features (gpu_truth.py), the
# special-register and shared-layout probes, lock_then_syncwarp's outputs and compute-sanitizer synccheck on it,
# and cuobjdump -sass of sm_90 builds of the byte histogram; all packed into $OUT/session.tar.gz.
# Run from the root of a tree that holds those folders (a copy of the repository, or the carried subset).
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT" results
exec > >(tee -a "$OUT/log.txt") 2>&1
started=$(date +%s)
stage() { echo "=== $1 ($(($(date +%s) - started)) s)"; }
CUOBJDUMP=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2>/dev/null)
SANITIZER=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1)

stage "environment"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv | tee results/environment.txt
nvcc --version | tail -2 | tee -a results/environment.txt

stage "truth: examples/corpus"
timeout 240 python3 tools/gpu_truth.py examples/corpus 2>&1 | grep -vE "^OK " | tail -30
stage "truth: examples/corpus again (do two H100 runs agree?)"
cp -r examples/corpus/expected results/corpus_first_run
timeout 240 python3 tools/gpu_truth.py examples/corpus 2>&1 | tail -1
diff -r -q results/corpus_first_run examples/corpus/expected && echo "second run: identical"
rm -rf results/corpus_first_run
stage "truth: tests/ptx_features"
timeout 150 python3 tools/gpu_truth.py tests/ptx_features 2>&1 | tail -40

stage "probes: special registers and shared layout"
timeout 90 python3 tools/probes_device.py --gpu results/probes_h100.json 2>&1 | tail -5

stage "syncwarp: outputs, then synccheck"
timeout 60 python3 tools/syncwarp_device.py --out results/syncwarp_h100.npz 2>&1 | tail -8
timeout 120 "$SANITIZER" --tool synccheck python3 tools/syncwarp_device.py --out results/syncwarp_synccheck.npz \
    > results/syncwarp.synccheck.txt 2>&1
echo "synccheck exit $?"; tail -4 results/syncwarp.synccheck.txt

stage "sass: sm_90 histogram builds"
for source in histogram_mangled histogram_extern_c; do
    nvcc -cubin -arch=sm_90 -O3 "sass/$source.cu" -o "results/$source.cubin" && \
        "$CUOBJDUMP" -sass "results/$source.cubin" > "results/$source.sm_90.sass" && rm "results/$source.cubin"
done
ls -l results

stage "package"
find examples/corpus/expected tests/ptx_features/expected results -type f | sort > "$OUT/files.txt"
tar czf "$OUT/session.tar.gz" -T "$OUT/files.txt"
echo "$(wc -l < "$OUT/files.txt") files packed, $(stat -c %s "$OUT/session.tar.gz") bytes; session $(($(date +%s) - started)) s"
