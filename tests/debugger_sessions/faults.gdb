# gpuemu debug examples/faults/faults.ptx --kernel misalignedShared --grid 1 --block 64 --shared 512 --arg zeros:f32:64
# The seed's misaligned shared store stops where cuda-gdb would, with the memcheck report; then the launch ends.
run
info cuda lanes
print/x %r6 + 254
print %r6 % 4
backtrace
continue
print %r6
