# gpuemu debug examples/constcoef/constcoef.ptx --grid 16 --block 256 --arg @examples/constcoef/inputs/signal.npy --arg zeros:f32:4096 --arg i32:4000 --const coef=@examples/constcoef/inputs/coef.npy
# __constant__ memory: the coef bank set from the host, examined by @const offset and by symbol.
break constcoef.cu:18
run
x/9f @const 0
x/3wx @const coef + 12
watch @const 0
