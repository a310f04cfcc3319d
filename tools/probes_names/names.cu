// Probes for the values of PTX special registers and predefined identifiers that ptxas leaves to the
// driver or the hardware (tools/probes_names/run_probes.py runs them on a GPU and on gpuemu).
// PTX: nvcc -ptx -arch=sm_90 -O3 names.cu -o names.ptx
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#define READ32(name, slot) { unsigned v; asm volatile("mov.u32 %0, " name ";" : "=r"(v)); row[slot] = v; }
#define READ64(name, slot) { unsigned long long v; asm volatile("mov.u64 %0, " name ";" : "=l"(v)); row[slot] = v; }

// One row of 96 values per thread, in the order of SPECIAL_REGISTER_SLOTS in run_probes.py.
__global__ void special_registers(unsigned long long* out) {
    unsigned long long* row = out + (blockIdx.x * blockDim.x + threadIdx.x) * 96;
    READ32("WARP_SZ", 0) READ32("%%laneid", 1) READ32("%%warpid", 2) READ32("%%nwarpid", 3)
    READ32("%%smid", 4) READ32("%%nsmid", 5) READ64("%%gridid", 6)
    READ32("%%lanemask_eq", 7) READ32("%%lanemask_le", 8) READ32("%%lanemask_lt", 9)
    READ32("%%lanemask_ge", 10) READ32("%%lanemask_gt", 11)
    READ32("%%clock", 12) READ32("%%clock_hi", 13) READ64("%%clock64", 14)
    READ64("%%globaltimer", 15) READ32("%%globaltimer_lo", 16) READ32("%%globaltimer_hi", 17)
    READ32("%%pm0", 18) READ32("%%pm1", 19) READ32("%%pm2", 20) READ32("%%pm3", 21)
    READ32("%%pm4", 22) READ32("%%pm5", 23) READ32("%%pm6", 24) READ32("%%pm7", 25)
    READ64("%%pm0_64", 26) READ64("%%pm1_64", 27) READ64("%%pm2_64", 28) READ64("%%pm3_64", 29)
    READ64("%%pm4_64", 30) READ64("%%pm5_64", 31) READ64("%%pm6_64", 32) READ64("%%pm7_64", 33)
    READ32("%%envreg0", 34) READ32("%%envreg1", 35) READ32("%%envreg2", 36) READ32("%%envreg3", 37)
    READ32("%%envreg4", 38) READ32("%%envreg5", 39) READ32("%%envreg6", 40) READ32("%%envreg7", 41)
    READ32("%%envreg8", 42) READ32("%%envreg9", 43) READ32("%%envreg10", 44) READ32("%%envreg11", 45)
    READ32("%%envreg12", 46) READ32("%%envreg13", 47) READ32("%%envreg14", 48) READ32("%%envreg15", 49)
    READ32("%%envreg16", 50) READ32("%%envreg17", 51) READ32("%%envreg18", 52) READ32("%%envreg19", 53)
    READ32("%%envreg20", 54) READ32("%%envreg21", 55) READ32("%%envreg22", 56) READ32("%%envreg23", 57)
    READ32("%%envreg24", 58) READ32("%%envreg25", 59) READ32("%%envreg26", 60) READ32("%%envreg27", 61)
    READ32("%%envreg28", 62) READ32("%%envreg29", 63) READ32("%%envreg30", 64) READ32("%%envreg31", 65)
    READ32("%%total_smem_size", 66) READ32("%%aggr_smem_size", 67) READ32("%%dynamic_smem_size", 68)
    READ32("%%reserved_smem_offset_begin", 69) READ32("%%reserved_smem_offset_end", 70)
    READ32("%%reserved_smem_offset_cap", 71) READ32("%%reserved_smem_offset_0", 72)
    READ32("%%reserved_smem_offset_1", 73) READ64("%%current_graph_exec", 74)
    { unsigned v; asm volatile("{ .reg .pred p; mov.pred p, %%is_explicit_cluster; selp.u32 %0, 1, 0, p; }"
                               : "=r"(v)); row[75] = v; }
    READ32("%%clusterid.x", 76) READ32("%%clusterid.y", 77) READ32("%%clusterid.z", 78)
    READ32("%%nclusterid.x", 79) READ32("%%nclusterid.y", 80) READ32("%%nclusterid.z", 81)
    READ32("%%cluster_ctaid.x", 82) READ32("%%cluster_ctaid.y", 83) READ32("%%cluster_ctaid.z", 84)
    READ32("%%cluster_nctaid.x", 85) READ32("%%cluster_nctaid.y", 86) READ32("%%cluster_nctaid.z", 87)
    READ32("%%cluster_ctarank", 88) READ32("%%cluster_nctarank", 89)
    READ32("%%tid.x", 90) READ32("%%ctaid.x", 91) READ32("%%ntid.x", 92) READ32("%%nctaid.x", 93)
    row[94] = warpSize;
    row[95] = 0xC0FFEE;
}

// The issue's false fault: a 1-byte static variable and an extern array; every thread writes one dynamic byte
// (the last 15 used to be reported as illegal), and thread 0 reports the layout and the size registers.
__global__ void shared_sizes(unsigned* out, unsigned n) {
    __shared__ unsigned char flag;
    extern __shared__ unsigned char dynamic_bytes[];
    if (threadIdx.x < n) dynamic_bytes[threadIdx.x] = (unsigned char)(threadIdx.x + 1);
    if (threadIdx.x == 0) flag = 7;
    __syncthreads();
    if (threadIdx.x < n) out[16 + threadIdx.x] = dynamic_bytes[threadIdx.x];
    if (threadIdx.x != 0) return;
    unsigned v;
    out[0] = (unsigned)__cvta_generic_to_shared(&flag);
    out[1] = (unsigned)__cvta_generic_to_shared(dynamic_bytes);
    asm volatile("mov.u32 %0, %%total_smem_size;" : "=r"(v)); out[2] = v;
    asm volatile("mov.u32 %0, %%aggr_smem_size;" : "=r"(v)); out[3] = v;
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(v)); out[4] = v;
    asm volatile("mov.u32 %0, %%reserved_smem_offset_begin;" : "=r"(v)); out[5] = v;
    asm volatile("mov.u32 %0, %%reserved_smem_offset_end;" : "=r"(v)); out[6] = v;
    asm volatile("mov.u32 %0, %%reserved_smem_offset_cap;" : "=r"(v)); out[7] = v;
    asm volatile("mov.u32 %0, %%reserved_smem_offset_0;" : "=r"(v)); out[8] = v;
    asm volatile("mov.u32 %0, %%reserved_smem_offset_1;" : "=r"(v)); out[9] = v;
    out[10] = flag;
}

// cooperative_groups' multi-warp tiles keep their barriers and shuffle slots at %reserved_smem_offset_1.
__global__ void cg_tiles(unsigned* out) {
    __shared__ cg::block_tile_memory<256> scratch;
    cg::thread_block block = cg::this_thread_block(scratch);
    auto tile = cg::tiled_partition<64>(block);
    unsigned mine = threadIdx.x * 3 + 1;
    unsigned got = tile.shfl(mine, 5);
    tile.sync();
    out[threadIdx.x] = got + 1000 * tile.meta_group_rank() + 100000 * tile.thread_rank();
}
