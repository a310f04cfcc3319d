# gpuemu debug examples/reduce_divergent_sync/reduce_divergent_sync.ptx --grid 1 --block 256 --arg @examples/reduce_divergent_sync/inputs/a.npy --arg @examples/reduce_divergent_sync/inputs/b.npy --arg zeros:f32:1 --arg i32:256
# The seed's __syncthreads() inside a divergent if: divergent lanes, a barrier half arrived, finish to the barrier.
break 89 if %r22 == 16
run
info cuda warps
cuda lane 20
finish
info cuda lanes
info cuda barriers
print %r22
cuda lane 3
finish
info cuda barriers
info cuda blocks
next
info cuda warps
delete
continue
