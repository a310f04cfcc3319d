# gpuemu debug examples/dot/dot.ptx --kernel dot --grid 2 --block 256 --arg @examples/dot/inputs/a.npy --arg @examples/dot/inputs/b.npy --arg zeros:f32:2 --arg i32:8192
# Breakpoints by PTX line, label, CUDA source line (.loc), address and condition; tbreak, disable, delete.
break 74
break $L__BB0_3
break dot.cu:30
tbreak *0x160 if %tid.x == 5 && %ctaid.x == 1
break 96 if $laneid == 0 && %r22 == 64
info breakpoints
run
continue
info cuda warps
continue
print %tid.x
print %ctaid.x
continue
continue
print %r22
print %tid.x
disable 3
continue
info breakpoints
delete 1 5
continue
