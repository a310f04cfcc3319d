# gpuemu debug examples/dot/dot.ptx --kernel dot --grid 2 --block 256 --arg @examples/dot/inputs/a.npy --arg @examples/dot/inputs/b.npy --arg zeros:f32:2 --arg i32:8192
# Examine memory in each space: @shared (of the focused block; its data starts after the 1 KB sm_90 reserves), @global, @param, generic addresses, code.
break 74
run
x/8wx @shared 0x400
x/4f @shared 0x400
x
x/2gx @param 0
x/wd @param 24
x/4f @global _Z3dotPfS_S_i_param_0
x/4f @global %rd1 + 4 * %r3
x/4f %rd2
x/3xb @global %rd1
x/2i $pc
cuda block 1 thread 0
x/4f @shared 0x400
x/4wx @shared 0x800
x/2wx @const 0
