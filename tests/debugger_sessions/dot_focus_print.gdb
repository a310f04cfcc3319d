# gpuemu debug examples/dot/dot.ptx --kernel dot --grid 2 --block 256 --arg @examples/dot/inputs/a.npy --arg @examples/dot/inputs/b.npy --arg zeros:f32:2 --arg i32:8192
# Focus (cuda block/thread, warp/lane), print for one lane, a named lane and all lanes, formats, specials.
break 74
run
cuda block thread
cuda block 1 thread 37
cuda warp lane
print %tid
print %r3
print/x %r3
print/t %r3
print/o %r3
print/d %p1
print %p1
print %r3 @lane 0
print %r3 @all
print %f13
print/x %f13
print %f13 @all
print %r1 * %r2 + %r3 == %tid.x + 256 && $laneid == 5
print $1
print $$2
print $laneid
print $warpid
print %ntid.x
print %nctaid
print %rd3
print/x %rd3
print _Z3dotPfS_S_i_param_3
print param_3 / 3
print 7 / -2
print 7 % -2
print -7 >> 1
print 1.5 * 2
print 0f3f800000
print $pc
info registers %r1 %r2 %r3 %f13 %p1 %rd3
cuda warp 7 lane 31
print %tid.x
cuda block (0,0,0) thread (128,0,0)
print %tid.x
info args
display %r3
display/x %tid.x
info display
undisplay 1
step
