#!/usr/bin/env bash
# Second GPU ground-truth session: H100 outputs for the Triton, tinygrad-style and mathlib examples and
# the re-made out-of-bounds fault, ncu counters for the stats patterns, compute-sanitizer reports for
# the checkers' kernels. Everything new is packed into $OUT/session2.tar.gz (paths from the repo root).
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
stamp=$(mktemp)
touch "$stamp"
started=$(date +%s)
stage() { echo "=== $1 ($(($(date +%s) - started)) s)"; }

stage "truth: triton, tinygrad, mathlib, faults"
timeout 240 python3 tools/gpu_truth.py examples/triton examples/tinygrad examples/mathlib examples/faults 2>&1 | grep -vE "^OK " | tail -40
stage "ncu: stats patterns"
OUT="$OUT/stats" timeout 240 bash tests/stats_patterns/gpu.sh > /dev/null 2>&1
tail -3 "$OUT/stats/log.txt"
cp "$OUT/stats/patterns.sm_90.sass" tests/stats_patterns/patterns.sm_90.sass 2>/dev/null
stage "compute-sanitizer: checker kernels"
OUT="$OUT" timeout 200 python3 tools/sanitizer_checks.py 2>&1 | tail -25
mkdir -p tests/sanitizer && cp -r "$OUT/sanitizer/." tests/sanitizer/ 2>/dev/null
stage "package"
find examples tests -newer "$stamp" -type f \( -path '*/expected/*' -o -name '*.sass' -o -path 'tests/sanitizer/*' \) \
    | sort > "$OUT/files.txt"
tar czf "$OUT/session2.tar.gz" -T "$OUT/files.txt"
echo "$(wc -l < "$OUT/files.txt") files packed; session $(($(date +%s) - started)) s"
