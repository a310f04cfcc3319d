/* gpuemu lane scans for the schedulers: a batch's per-thread pcs (int32, INT32_MAX for a thread that runs no more)
   looked at warp by warp, in one pass where numpy would take several. */
#include <stdint.h>

#include "_arith.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

/* x86-64 glibc Linux with GCC: an AVX2 build of the scans as well, picked at load time where the CPU has it (SSE2 has
   no 32-bit integer min: a warp's lowest pc costs three times as much without it) */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__)
#define GL_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define GL_CLONES
#endif

/* the lowest of a warp's 32 pcs, in eight columns that the compiler can keep in vector registers */
static inline int32_t warp_min(const int32_t *lane)
{
    int32_t column[8];
    for (int j = 0; j < 8; j++)
        column[j] = lane[j];
    for (int k = 8; k < 32; k += 8)
        for (int j = 0; j < 8; j++)
            column[j] = lane[k + j] < column[j] ? lane[k + j] : column[j];
    int32_t low = column[0];
    for (int j = 1; j < 8; j++)
        low = column[j] < low ? column[j] : low;
    return low;
}

GL_CLONES void gl_warp_lowest(const int32_t *pcs, int64_t warps, int32_t *lowest)
{
    for (int64_t w = 0; w < warps; w++)
        lowest[w] = warp_min(pcs + w * 32);
}

/* out: room for 32 lanes a warp and one slot after them, which gets the lowest pc of the other lanes */
GL_CLONES int64_t gl_lanes_at(const int32_t *pcs, const int64_t *warps, int64_t n_warps, int32_t pc, int64_t *out)
{
    int64_t count = 0;
    int32_t low = INT32_MAX;
    for (int64_t i = 0; i < n_warps; i++) {
        const int64_t base = warps[i] * 32;
        const int32_t *lane = pcs + base;
        int all_at = 1;
        for (int k = 0; k < 32; k++)
            all_at &= lane[k] == pc;
        if (all_at) {
            for (int k = 0; k < 32; k++)
                out[count + k] = base + k;
            count += 32;
            continue;
        }
        for (int k = 0; k < 32; k++) {
            const int32_t at = lane[k];
            if (at == pc)
                out[count++] = base + k;
            else if (at < low)
                low = at;
        }
    }
    out[n_warps * 32] = low;
    return count;
}

int64_t gl_warps_in(const int64_t *lanes, int64_t n)
{
    int64_t warps = n > 0;
    for (int64_t i = 1; i < n; i++)
        warps += (lanes[i] >> 5) != (lanes[i - 1] >> 5);
    return warps;
}

void gl_assign(int32_t *values, const int64_t *lanes, int64_t n, int32_t value)
{
    for (int64_t i = 0; i < n; i++)
        values[lanes[i]] = value;
}

GL_CLONES int64_t gl_warp_starts(const int32_t *pcs, int64_t warps, int32_t *lowest, int64_t *ready, uint8_t *seen,
                       int64_t limit, int64_t *summary, int64_t *behind)
{
    int64_t n_ready = 0, distinct = 0, n_behind = 0;
    int32_t first = INT32_MAX, second = INT32_MAX;
    for (int64_t w = 0; w < warps; w++) {
        const int32_t low = warp_min(pcs + w * 32);
        lowest[w] = low;
        if (low == INT32_MAX)
            continue;
        if (low < 0 || low >= limit)
            return -1;
        ready[n_ready++] = w;
        if (!seen[low]) {
            seen[low] = 1;
            distinct++;
        }
        if (low < first) {
            second = first;
            first = low;
            n_behind = 0;
        } else if (low > first && low < second) {
            second = low;
        }
        if (low == first)
            behind[n_behind++] = w;
    }
    for (int64_t i = 0; i < n_ready; i++)
        seen[lowest[ready[i]]] = 0;
    summary[0] = distinct;
    summary[1] = first;
    summary[2] = second;
    summary[3] = n_behind;
    return n_ready;
}
