/* gpuemu's random schedule: one turn drawn from a batch's per-thread pcs and a stream of seeded uniform doubles, as
   emulator/accel/__init__.py's random_turn defines it (its numpy twin gives the same turns from the same stream). */
#include <stdint.h>

#include "_arith.h"

enum { NO_TURN = 0, TURN = 1, WARP_TURN = 2, SPLIT_TURN = 3 };

/* a draw u in [0, 1) made an index below count */
static inline int64_t index_below(double u, int64_t count)
{
    int64_t index = (int64_t)(u * (double)count);
    return index < count ? index : count - 1;
}

int64_t gl_random_turn(gl_turns *turns, int64_t *lanes)
{
    const int32_t *pcs = turns->pcs;
    int32_t *lowest = turns->lowest;
    int64_t *ready = turns->ready, *summary = turns->summary, *behind = turns->behind, *turn = turns->result;
    const int64_t n_ready = gl_warp_starts(pcs, turns->warps, lowest, ready, turns->seen, turns->limit, summary,
                                           behind);
    if (n_ready <= 0)
        return n_ready < 0 ? -1 : NO_TURN;
    int64_t *cursor = turns->cursor;
    const double *longer = turns->longer, *chances = turns->chances;
    const int64_t max_turn = turns->max_turn;
    const int64_t *until_sensitive = turns->until_sensitive;
    const double *u = turns->uniforms + *cursor;
    int64_t used = 0;
    int64_t length = 1;
    const double draw = u[used++];
    while (length < max_turn && draw < longer[length - 1])
        length++;
    const double catch_up_weight = chances[0], single_warp = chances[1], stop_before = chances[2];
    const int64_t distinct = summary[0];
    int32_t pc;
    int64_t count, n_warps;
    int32_t others;
    if (u[used++] * ((double)distinct + catch_up_weight) >= catch_up_weight) {
        pc = (int32_t)summary[1];
        n_warps = summary[3];
        count = gl_lanes_at(pcs, behind, n_warps, pc, lanes);
        others = (int32_t)lanes[n_warps * 32];
        if (summary[2] < others)
            others = (int32_t)summary[2];
    } else {
        const int64_t warp = ready[index_below(u[used++], n_ready)];
        if (u[used++] < single_warp) {
            turn[3] = length;
            turn[5] = warp;
            *cursor += used;
            return WARP_TURN;
        }
        pc = lowest[warp];
        const double share = u[used++];
        n_warps = 0;
        for (int64_t i = 0; i < n_ready; i++) {
            const int64_t peer = ready[i];
            if (lowest[peer] != pc)
                continue;
            if (peer == warp || u[used++] < share)
                behind[n_warps++] = peer;
        }
        count = gl_lanes_at(pcs, behind, n_warps, pc, lanes);
        others = (int32_t)lanes[n_warps * 32];
    }
    int64_t kind = TURN;
    const int64_t ahead = until_sensitive[pc];
    if (ahead == 0)
        kind = n_warps > 1 ? SPLIT_TURN : TURN;
    else if (u[used++] < stop_before && ahead < length)
        length = ahead;
    *cursor += used;
    turn[0] = pc;
    turn[1] = count;
    turn[2] = others;
    turn[3] = length;
    turn[4] = n_warps;
    return kind;
}
