#!/usr/bin/env bash
# The one command for the GPU machine: SASS listings, GPU ground truth for examples/ and tests/isa_probes/, ncu counters, packed into $OUT/truth.tar.gz.
#
# Run from anywhere inside a copy of the repository; everything lands under examples/ and
# tests/isa_probes/ and is then packed, with paths relative to the repository root, into
# $OUT/truth.tar.gz (split into truth.tar.gz.part-aa, -ab, ... when larger than 15 MiB).
# The whole log goes to $OUT/log.txt. Stages that would start after SESSION_BUDGET seconds
# are skipped, so the session ends well inside the machine's 10-minute command limit.
set -u

cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/device-session.XXXXXX")}
PYTHON=${PYTHON:-python3}
SESSION_BUDGET=${SESSION_BUDGET:-400}
PACKAGE_RESERVE=40
PART_SIZE=15M
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
tee_pid=$!

session_start=$(date +%s)
scratch=$(mktemp -d)
stamp=$scratch/stamp
touch "$stamp"
trap 'rm -rf "$scratch"' EXIT
summary=()

seconds_left() {
    echo $((SESSION_BUDGET - ($(date +%s) - session_start)))
}

# run_stage NAME LIMIT COMMAND...: run COMMAND under a time limit, log it, add a summary row.
run_stage() {
    local name=$1 limit=$2
    shift 2
    local left=$(($(seconds_left) - PACKAGE_RESERVE))
    if ((left < 20)); then
        summary+=("$(printf '%-20s %-14s %6s' "$name" skipped -)")
        echo "=== $name: skipped, the session budget is spent"
        return
    fi
    ((limit > left)) && limit=$left
    echo "=== $name (limit ${limit}s): $*"
    local started=$(date +%s)
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$scratch/${name// /_}.log"
    local status=${PIPESTATUS[0]}
    local took=$(($(date +%s) - started))
    local result="ok"
    ((status == 124 || status == 137)) && result="timed out"
    ((status != 0 && status != 124 && status != 137)) && result="exit $status"
    summary+=("$(printf '%-20s %-14s %5ss' "$name" "$result" "$took")")
}

find_tool() {
    command -v "$1" 2>/dev/null || ls /usr/local/cuda/bin/"$1" /opt/nvidia/nsight-compute/*/"$1" 2>/dev/null | tail -n 1
}

record_environment() {
    local ncu cuobjdump
    ncu=$(find_tool ncu)
    cuobjdump=$(find_tool cuobjdump)
    {
        echo "# GPU environment of the ground-truth run, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "## nvidia-smi -L"
        nvidia-smi -L
        echo "## nvidia-smi --query-gpu"
        nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,clocks.max.sm,clocks.max.mem --format=csv
        echo "## nvcc --version"
        nvcc --version
        echo "## ncu --version ($ncu)"
        [ -n "$ncu" ] && "$ncu" --version
        echo "## cuobjdump --version ($cuobjdump)"
        [ -n "$cuobjdump" ] && "$cuobjdump" --version
        echo "## $PYTHON"
        "$PYTHON" -c 'import sys, numpy, cupy
runtime = cupy.cuda.runtime
properties = runtime.getDeviceProperties(0)
print("python", sys.version.split()[0], "| numpy", numpy.__version__, "| cupy", cupy.__version__)
print("CUDA runtime", runtime.runtimeGetVersion(), "| driver", runtime.driverGetVersion())
print("device", properties["name"].decode(), "| compute capability", properties["major"], properties["minor"],
      "| multiprocessors", properties["multiProcessorCount"])'
    } > examples/gpu_environment.txt 2>&1
    cat examples/gpu_environment.txt
}

export -f find_tool record_environment
export PYTHON
run_stage "environment" 60 bash -c record_environment
run_stage "sass" 120 bash tools/gpu_sass.sh
run_stage "truth examples" 180 "$PYTHON" tools/gpu_truth.py examples
if [ -d tests/isa_probes ]; then
    run_stage "truth isa_probes" 180 "$PYTHON" tools/gpu_truth.py tests/isa_probes
else
    summary+=("$(printf '%-20s %-14s %6s' "truth isa_probes" "none here" -)")
fi
run_stage "check references" 60 "$PYTHON" tools/make_examples.py --check
counters_deadline=$(($(seconds_left) - PACKAGE_RESERVE - 30))
run_stage "counters" 240 "$PYTHON" tools/gpu_counters.py --deadline "$((counters_deadline > 0 ? counters_deadline : 1))"

echo "=== package"
find examples tests/isa_probes -newer "$stamp" -type f \
    \( -path '*/expected/*' -o -name '*.sass' -o -name gpu_environment.txt \) 2>/dev/null | sort > "$scratch/files"
rm -f "$OUT"/truth.tar.gz*
tar czf "$OUT/truth.tar.gz" -T "$scratch/files"
if (($(stat -c %s "$OUT/truth.tar.gz") > 15 * 1024 * 1024)); then
    split -b "$PART_SIZE" "$OUT/truth.tar.gz" "$OUT/truth.tar.gz.part-"
    rm "$OUT/truth.tar.gz"
fi

echo
echo "==================== device session summary ===================="
printf '%-20s %-14s %6s\n' stage result time
printf '%s\n' "${summary[@]}"
echo
for log in "$scratch"/truth_*.log "$scratch"/check_references.log "$scratch"/counters.log "$scratch"/sass.log; do
    [ -f "$log" ] || continue
    grep -E '^(gpu_(truth|counters|sass):|summary:)' "$log"
    grep -E '^(ERROR|NO-FAULT|WRONG-FAULT|TIMEOUT|CRASHED|SPEC-ERROR|CHILD-FAILED|NOT-FOUND|NO-DATA|FAILED|MISMATCH|problem) ' "$log" | head -n 25
done
echo
echo "$(wc -l < "$scratch/files") files packed; in \$OUT:"
ls -l "$OUT" | tail -n +2
echo "unpack from the repository root: cat <returned folder>/truth.tar.gz* | tar xzf -"
echo "session: $(($(date +%s) - session_start)) s"

exec >&- 2>&-
wait "$tee_pid"
