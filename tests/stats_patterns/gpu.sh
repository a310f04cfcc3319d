#!/usr/bin/env bash
# On a machine with an H100, CUDA 13, CuPy and ncu, from anywhere in a copy of the repository:
# Nsight Compute counters for every launch of tests/stats_patterns (written to
# tests/stats_patterns/expected/<launch>/ncu.json and copied to $OUT/expected/), and the SASS that
# ptxas makes of patterns.ptx ($OUT/patterns.sm_90.sass), to check that each PTX access is one SASS
# instruction. The log goes to $OUT/log.txt.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/stats-patterns.XXXXXX")}
mkdir -p "$OUT"

find_tool() {
    command -v "$1" 2>/dev/null || ls /usr/local/cuda/bin/"$1" /usr/local/cuda-*/bin/"$1" 2>/dev/null | tail -n 1
}

record() {
    python3 tools/gpu_counters.py tests/stats_patterns --timeout 480
    local status=$?
    local ptxas cuobjdump
    ptxas=$(find_tool ptxas)
    cuobjdump=$(find_tool cuobjdump)
    if [[ -n $ptxas && -n $cuobjdump ]]; then
        "$ptxas" -arch=sm_90 tests/stats_patterns/patterns.ptx -o "$OUT/patterns.cubin" &&
            "$cuobjdump" -sass "$OUT/patterns.cubin" > "$OUT/patterns.sm_90.sass"
        rm -f "$OUT/patterns.cubin"
    else
        echo "gpu.sh: ptxas or cuobjdump not found; no SASS listing"
    fi
    if [[ -d tests/stats_patterns/expected ]]; then
        mkdir -p "$OUT/expected" && cp -r tests/stats_patterns/expected/. "$OUT/expected/"
    fi
    echo "gpu.sh: results in $OUT (gpu_counters exit status $status)"
    return $status
}

record 2>&1 | tee "$OUT/log.txt"
exit "${PIPESTATUS[0]}"
