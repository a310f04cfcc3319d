# gpuemu debug examples/printf/printf.ptx --grid 2 --block 4 --arg f32:1.5
# Device printf output appears in order with the session; a finished kernel can be run again.
break printf.cu:14 if %ctaid.x == 1
run
print %ctaid.x
delete
next
continue
run
