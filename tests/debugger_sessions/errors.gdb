# gpuemu debug examples/vecadd/vecadd.ptx --kernel vecadd --grid 1 --block 48 --arg @examples/vecadd/inputs/a_small.npy --arg @examples/vecadd/inputs/b_small.npy --arg zeros:f32:1000 --arg i32:1000
# Mistakes answer with one line: unknown commands with close matches, ambiguous prefixes, bad expressions and locations.
print %r1
step
info cuda warps
contniue
re
bogus
break 9999
break nowhere
break *0x18
print 1 +
print (1
print 1 / 0
print 2 + 3 * 4 == 14 && !(1 > 2)
print/q 1
help step
help rev
info
info cuda
info bogus
delete 42
break 46
run
cuda block 5 thread 0
cuda warp 1 lane 20
print %nosuch
cuda warp 1 lane 15
print %r1 @lane 17
print %tid.x @all
info cuda lanes
