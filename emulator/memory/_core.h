/* gpuemu memory core: bounds-checked gathers, scatters, atomics and per-warp access counts. */
#ifndef GPUEMU_MEMORY_CORE_H
#define GPUEMU_MEMORY_CORE_H

#include <stdint.h>

/* Return values of gm_load, gm_store and gm_atomic. */
#define GM_OK 0
#define GM_FAULT 1
#define GM_BAD_ARGUMENT -1

/* Address spaces (the same numbers as emulator.memory.spaces.SPACE_CODES). */
#define GM_SPACE_GENERIC 0
#define GM_SPACE_GLOBAL 1
#define GM_SPACE_SHARED 2
#define GM_SPACE_LOCAL 3

/* Fault kinds (the same numbers as emulator.memory.spaces.FAULT_KINDS). */
#define GM_FAULT_OUT_OF_BOUNDS 1
#define GM_FAULT_MISALIGNED 2
#define GM_FAULT_READ_ONLY 3
#define GM_FAULT_FREED 4
#define GM_FAULT_NULL 5
#define GM_FAULT_BAD_THREAD 6
#define GM_FAULT_BAD_LAYOUT 7

/* Allocation flags. */
#define GM_ALLOC_READ_ONLY 1
#define GM_ALLOC_FREED 2
/* The allocation's bytes are process memory: its alloc_offset is their address, not an arena offset. */
#define GM_ALLOC_HOST 4

/* Atomic operations and types (the same numbers as ATOMIC_OPS / ATOMIC_TYPES in spaces.py). */
#define GM_OP_ADD 0
#define GM_OP_EXCH 1
#define GM_OP_CAS 2
#define GM_OP_MIN 3
#define GM_OP_MAX 4
#define GM_OP_INC 5
#define GM_OP_DEC 6
#define GM_OP_AND 7
#define GM_OP_OR 8
#define GM_OP_XOR 9

#define GM_TYPE_B32 0
#define GM_TYPE_U32 1
#define GM_TYPE_S32 2
#define GM_TYPE_B64 3
#define GM_TYPE_U64 4
#define GM_TYPE_S64 5
#define GM_TYPE_F32 6
#define GM_TYPE_F64 7
#define GM_TYPE_F16X2 8
#define GM_TYPE_BF16X2 9
#define GM_TYPE_F16 10
#define GM_TYPE_BF16 11
#define GM_TYPE_B16 12

/* Per-warp counts computed by gm_count. */
#define GM_COUNT_SHARED_WAVEFRONTS 0
#define GM_COUNT_GLOBAL_SECTORS 1
#define GM_COUNT_DISTINCT_ADDRESSES 2
#define GM_COUNT_MAX_SAME_ADDRESS 3
#define GM_COUNT_LOCAL_SECTORS 4

typedef struct {
    /* Global arena and its allocation table, sorted by start address. */
    uint8_t *global_bytes;
    uint64_t global_len;
    const uint64_t *alloc_start;
    const uint64_t *alloc_size;
    const uint64_t *alloc_offset;
    const uint8_t *alloc_flags;
    int64_t n_allocs;
    uint64_t null_limit;
    /* Generic-address windows. */
    uint64_t shared_window_base;
    uint64_t local_window_base;
    uint64_t window_size;
    /* Shared: one window of shared_limit usable bytes every shared_stride bytes, one per CTA. */
    uint8_t *shared_bytes;
    uint64_t shared_len;
    uint64_t shared_limit;
    uint64_t shared_stride;
    int64_t threads_per_cta;
    /* Local: one window of local_limit usable bytes every local_stride bytes, one per thread. */
    uint8_t *local_bytes;
    uint64_t local_len;
    uint64_t local_limit;
    uint64_t local_stride;
    int64_t n_threads;
} gm_memory;

typedef struct {
    int64_t lane;
    int32_t kind;
    int32_t space;
} gm_fault;

int gm_load(const gm_memory *mem, int space, const uint64_t *addr, const int64_t *threads,
            int64_t n, int width, uint8_t *out, uint64_t out_len, gm_fault *fault);

int gm_store(const gm_memory *mem, int space, const uint64_t *addr, const int64_t *threads,
             int64_t n, int width, const uint8_t *data, uint64_t data_len, gm_fault *fault);

/* Floating-point rules follow each lane's resolved space, as on an H100: add.f32 flushes
   subnormal operands and results on global memory and keeps them on shared memory; add.f64 returns
   a NaN operand unchanged (before a stored NaN) on global memory, and the stored NaN (before the
   operand's) quieted on shared memory. f16, bf16 and b16 atomics are 2 bytes wide. */
int gm_atomic(const gm_memory *mem, int space, int op, int type, const uint64_t *addr,
              const int64_t *threads, int64_t n, const uint8_t *a, const uint8_t *b,
              uint64_t operand_len, uint8_t *old, uint64_t old_len, gm_fault *fault);

/* Sums over the warps of one gm_count call: warps, their counts, what the same lanes would cost at
   best (one wavefront per phase with lanes; the sectors of lanes * width contiguous bytes, local:
   of each 32-bit piece; one address), and the most lanes on one address (summed, and the largest). */
typedef struct {
    int64_t warps;
    int64_t count;
    int64_t ideal;
    int64_t most;
    int64_t most_max;
} gm_count_totals;

/* Per warp (lanes grouped by thread / 32, warps in ascending order): the count `what` of its lanes'
   [addr, addr + width) accesses and, with with_most, the most lanes on one address. Local sectors
   are counted on the interleaved layout (32-bit word w of lane l at byte (w * 32 + l) * 4).
   warps_out and counts_out (and most_out) may be NULL when only totals are wanted; totals may be
   NULL. Returns the number of warps, or GM_BAD_ARGUMENT (also for a thread outside [0, 2**48)). */
int64_t gm_count(int what, const uint64_t *addr, const int64_t *threads, int64_t n, int width, int bank_bytes,
                 int with_most, int64_t *warps_out, int64_t *counts_out, int64_t *most_out, int64_t out_cap,
                 gm_count_totals *totals);

#endif
