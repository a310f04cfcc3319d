# gpuemu debug tests/kernels/machine.ptx --kernel call_collatz --grid 1 --block 32 --arg zeros:i32:32 --arg i32:5
# Through a .func call: step into it, backtrace, finish out of it, next over it.
break machine.cu:68
run
stepi 9
step
backtrace
print %rd10
finish
next
print %r7
reverse-next
reverse-next
next
next
print %r7
print %r7 @all
continue
