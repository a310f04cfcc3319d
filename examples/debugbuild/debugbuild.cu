// The vecadd and dot examples compiled with -G (device debug): no optimisation, generic
// loads and stores, DWARF sections in the PTX.

#include "../vecadd/vecadd.cu"
#include "../dot/dot.cu"
