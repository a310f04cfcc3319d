# gpuemu debug examples/localarray/localarray.ptx --grid 4 --block 64 --arg @examples/localarray/inputs/values_small.npy --arg zeros:u32:256
# Local memory: each thread's own window, by @local offset and through %SPL; a watchpoint on one thread's word.
break localarray.cu:18
run
x/16wu @local 0
x/4wu @local %SPL + 8
cuda thread 1
x/4wu @local 0
cuda thread 0
delete 1
watch @local 0xc
continue
x/4wu @local 0
reverse-step
x/4wu @local 0
