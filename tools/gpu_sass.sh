#!/usr/bin/env bash
# Compile every example to a cubin and save its SASS (cuobjdump -sass) as examples/<name>/<name>.<arch>.sass.
#
# Every example gets sm_90; a few also get sm_75, the oldest architecture nvcc 13 still builds for
# (nvcc --list-gpu-arch). cuobjdump exists only on the GPU machine. The cubins are built with the
# same flags as the checked-in PTX (tools/make_examples.py), -G for debugbuild.
set -u

cd "$(dirname "$0")/.."
NVCC=${NVCC:-nvcc}
CUOBJDUMP=${CUOBJDUMP:-$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)}
OLDEST_ARCH=sm_75
OLDEST_ARCH_EXAMPLES="transpose atomic32shared dot vecadd histogram"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0

dump_sass() {
    local name=$1 arch=$2 flags=$3
    local cubin=$scratch/$name.$arch.cubin
    local listing=examples/$name/$name.$arch.sass
    # shellcheck disable=SC2086
    if (cd "examples/$name" && "$NVCC" -cubin -arch="$arch" $flags "$name.cu" -o "$cubin") \
        && "$CUOBJDUMP" -sass "$cubin" > "$listing.partial"; then
        mv "$listing.partial" "$listing"
        echo "sass    $listing ($(grep -c '^ */\*[0-9a-f]\{4\}\*/' "$listing") instructions)"
    else
        rm -f "$listing.partial"
        echo "FAILED  $name for $arch"
        failures=$((failures + 1))
    fi
}

for directory in examples/*/; do
    name=$(basename "$directory")
    [ -f "$directory/$name.cu" ] || continue
    flags=-lineinfo
    [ "$name" = debugbuild ] && flags=-G
    dump_sass "$name" sm_90 "$flags"
done
for name in $OLDEST_ARCH_EXAMPLES; do
    dump_sass "$name" "$OLDEST_ARCH" -lineinfo
done

echo "gpu_sass: $failures failures"
[ "$failures" -eq 0 ]
