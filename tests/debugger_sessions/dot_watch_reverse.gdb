# gpuemu debug examples/dot/dot.ptx --kernel dot --grid 2 --block 256 --arg @examples/dot/inputs/a.npy --arg @examples/dot/inputs/b.npy --arg zeros:f32:2 --arg i32:8192
# A shared-memory watchpoint names the writing thread and pc; reverse execution restores registers and memory.
break 74
run
print %f13
x/wf @shared 0x440
watch @shared 0x440
continue
print %f10
x/wf @shared 0x440
reverse-step
print %f10
x/wf @shared 0x440
reverse-step
print %f10
reverse-step 3
step 4
print %f10
x/wf @shared 0x440
reverse-continue
reverse-continue
info cuda warps
continue
continue
delete
continue
