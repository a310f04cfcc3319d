/* Throws hostile inputs at the memory core; built with ASan/UBSan, any stray access aborts the run. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_core.h"

static int failures = 0;

#define EXPECT(cond)                                                                  \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: expectation failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                               \
        }                                                                             \
    } while (0)

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t next_random(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static uint64_t pick(const uint64_t *choices, size_t count)
{
    return choices[next_random() % count];
}

/* Exactly-sized heap buffers, so ASan sees any byte read or written past them. */
static uint8_t *exact(uint64_t len)
{
    return len ? calloc(1, (size_t)len) : NULL;
}

typedef struct {
    gm_memory mem;
    uint64_t starts[4], sizes[4], offsets[4];
    uint8_t flags[4];
} world;

static void make_consistent_world(world *w)
{
    memset(w, 0, sizeof *w);
    uint64_t base = 0x7F4368000000ull;
    for (int i = 0; i < 4; i++) {
        w->starts[i] = base + (uint64_t)i * 1024;
        w->sizes[i] = 256 + (uint64_t)i * 8;
        w->offsets[i] = (uint64_t)i * 512;
        w->flags[i] = (uint8_t)(i == 2 ? GM_ALLOC_READ_ONLY : i == 3 ? GM_ALLOC_FREED : 0);
    }
    w->mem.global_len = 2048;
    w->mem.global_bytes = exact(w->mem.global_len);
    w->mem.alloc_start = w->starts;
    w->mem.alloc_size = w->sizes;
    w->mem.alloc_offset = w->offsets;
    w->mem.alloc_flags = w->flags;
    w->mem.n_allocs = 4;
    w->mem.null_limit = 1 << 16;
    w->mem.shared_window_base = 0x7F6E00000000ull;
    w->mem.local_window_base = 0x7F6D00000000ull;
    w->mem.window_size = 1ull << 32;
    w->mem.threads_per_cta = 32;
    w->mem.n_threads = 64;
    w->mem.shared_limit = 100;
    w->mem.shared_stride = 112;
    w->mem.shared_len = 2 * 112;
    w->mem.shared_bytes = exact(w->mem.shared_len);
    w->mem.local_limit = 24;
    w->mem.local_stride = 32;
    w->mem.local_len = 64 * 32;
    w->mem.local_bytes = exact(w->mem.local_len);
}

/* Lies in the layout: arenas shorter than the tables claim, strides below limits, wrapping windows. */
static void corrupt_world(world *w)
{
    static const uint64_t huge[] = {0, 1, 15, 16, 255, 1ull << 32, (1ull << 63) - 1, 1ull << 63, UINT64_MAX - 15,
                                    UINT64_MAX - 1, UINT64_MAX};
    switch (next_random() % 10) {
    case 0: w->offsets[next_random() % 4] = pick(huge, 11); break;
    case 1: w->sizes[next_random() % 4] = pick(huge, 11); break;
    case 2: w->starts[next_random() % 4] = pick(huge, 11); break;
    case 3: w->mem.shared_stride = pick(huge, 11); break;
    case 4: w->mem.local_stride = pick(huge, 11); break;
    case 5: w->mem.threads_per_cta = (int64_t)(next_random() % 3) - 1; break;
    case 6: w->mem.n_threads = (int64_t)pick(huge, 11); break;
    case 7: w->mem.window_size = pick(huge, 11); break;
    case 8: w->mem.shared_window_base = pick(huge, 11); break;
    default: w->mem.shared_limit = pick(huge, 11); w->mem.local_limit = pick(huge, 11); break;
    }
}

static void free_world(world *w)
{
    free(w->mem.global_bytes);
    free(w->mem.shared_bytes);
    free(w->mem.local_bytes);
}

static uint64_t hostile_address(const world *w)
{
    static const uint64_t fixed[] = {0, 1, 8, 0xFFFF, 0x10000, UINT64_MAX, UINT64_MAX - 7, UINT64_MAX - 15,
                                     1ull << 63, 0x7F6E00000000ull - 16, 0x7F6D00000000ull + (1ull << 32) - 8};
    uint64_t r = next_random();
    switch (r % 6) {
    case 0: return pick(fixed, 11);
    case 1: return w->starts[r % 4] + (next_random() % 300) - 16;
    case 2: return w->mem.shared_window_base + (next_random() % 160) - 16;
    case 3: return w->mem.local_window_base + (next_random() % 48) - 8;
    case 4: return next_random() % 160;
    default: return next_random();
    }
}

static int64_t hostile_thread(void)
{
    static const int64_t fixed[] = {0, 1, 31, 32, 63, 64, 65, -1, INT64_MIN, INT64_MAX, 1ll << 40};
    return next_random() % 3 ? (int64_t)(next_random() % 70) : fixed[next_random() % 11];
}

static int hostile_width(void)
{
    static const int widths[] = {1, 2, 4, 8, 16, 0, 3, 32, -4, 1 << 30};
    return next_random() % 4 ? (1 << (next_random() % 5)) : widths[next_random() % 10];
}

static void check_fault(int status, const gm_fault *fault, int64_t n)
{
    if (status == GM_FAULT) {
        EXPECT(fault->lane >= 0 && fault->lane < n);
        EXPECT(fault->kind >= GM_FAULT_OUT_OF_BOUNDS && fault->kind <= GM_FAULT_BAD_LAYOUT);
        EXPECT(fault->space >= GM_SPACE_GLOBAL && fault->space <= GM_SPACE_LOCAL);
    } else {
        EXPECT(status == GM_OK || status == GM_BAD_ARGUMENT);
    }
}

static void fuzz_once(world *w)
{
    int64_t n = (int64_t)(next_random() % 40);
    uint64_t *addr = malloc((size_t)(n ? n : 1) * sizeof *addr);
    int64_t *threads = malloc((size_t)(n ? n : 1) * sizeof *threads);
    for (int64_t i = 0; i < n; i++) {
        addr[i] = hostile_address(w);
        threads[i] = hostile_thread();
    }
    const int64_t *lane_threads = next_random() % 4 ? threads : NULL;
    int space = (int)(next_random() % 6) - 1;
    int width = hostile_width();
    gm_fault fault = {0, 0, 0};
    uint64_t per_lane = width > 0 && width <= 16 ? (uint64_t)width : 16;
    uint64_t buffer_len = (uint64_t)n * per_lane - (next_random() % 8 == 0 && n ? per_lane : 0);
    uint8_t *buffer = exact(buffer_len);
    int status;

    switch (next_random() % 4) {
    case 0:
        status = gm_load(&w->mem, space, addr, lane_threads, n, width, buffer, buffer_len, &fault);
        check_fault(status, &fault, n);
        break;
    case 1:
        status = gm_store(&w->mem, space, addr, lane_threads, n, width, buffer, buffer_len, &fault);
        check_fault(status, &fault, n);
        break;
    case 2: {
        int op = (int)(next_random() % 12) - 1, type = (int)(next_random() % 15) - 1;
        uint64_t operand_len = (uint64_t)n * 8 - (next_random() % 8 == 0 && n ? 8 : 0);
        uint8_t *a = exact(operand_len), *b = exact(operand_len), *old = exact(operand_len);
        for (uint64_t i = 0; i < operand_len; i++) {
            a[i] = (uint8_t)next_random();
            b[i] = (uint8_t)next_random();
        }
        status = gm_atomic(&w->mem, space, op, type, addr, lane_threads, n, a, next_random() % 5 ? b : NULL,
                           operand_len, old, operand_len, &fault);
        check_fault(status, &fault, n);
        free(a);
        free(b);
        free(old);
        break;
    }
    default: {
        int64_t cap = n - (int64_t)(next_random() % 3 == 0);
        int64_t *warps = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *warps);
        int64_t *counts = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *counts);
        int bank = next_random() % 4 ? 4 : (int)(next_random() % 40) - 4;
        int64_t *most = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *most);
        int with_most = (int)(next_random() % 2);
        gm_count_totals totals;
        int64_t got = gm_count((int)(next_random() % 7) - 1, addr, lane_threads, n, width, bank, with_most,
                               warps, counts, with_most && next_random() % 2 ? most : NULL, cap,
                               next_random() % 2 ? &totals : NULL);
        EXPECT(got >= GM_BAD_ARGUMENT && got <= (cap > 0 ? cap : 0));
        int64_t only_totals = gm_count((int)(next_random() % 7) - 1, addr, lane_threads, n, width, bank, with_most,
                                       NULL, NULL, NULL, 0, &totals);
        EXPECT(only_totals == GM_BAD_ARGUMENT || (only_totals == totals.warps && totals.warps <= n));
        free(warps);
        free(counts);
        free(most);
        break;
    }
    }
    free(buffer);
    free(addr);
    free(threads);
}

static void pinned_cases(void)
{
    world w;
    make_consistent_world(&w);
    gm_fault fault = {0, 0, 0};
    uint8_t out[64];
    uint64_t start = w.starts[0];

    EXPECT(gm_load(&w.mem, GM_SPACE_GLOBAL, NULL, NULL, 0, 4, NULL, 0, &fault) == GM_OK);
    EXPECT(gm_load(&w.mem, GM_SPACE_GLOBAL, &start, NULL, 1, 3, out, sizeof out, &fault) == GM_BAD_ARGUMENT);
    EXPECT(gm_load(&w.mem, 7, &start, NULL, 1, 4, out, sizeof out, &fault) == GM_BAD_ARGUMENT);
    EXPECT(gm_load(&w.mem, GM_SPACE_GLOBAL, &start, NULL, 1, 16, out, 8, &fault) == GM_BAD_ARGUMENT);
    EXPECT(gm_load(NULL, GM_SPACE_GLOBAL, &start, NULL, 1, 4, out, sizeof out, &fault) == GM_BAD_ARGUMENT);

    uint64_t wrapped[] = {UINT64_MAX - 15, UINT64_MAX - 3, 0};
    EXPECT(gm_load(&w.mem, GM_SPACE_GLOBAL, wrapped, NULL, 3, 16, out, sizeof out, &fault) == GM_FAULT);
    EXPECT(fault.lane == 0 && fault.kind == GM_FAULT_OUT_OF_BOUNDS);
    EXPECT(gm_load(&w.mem, GM_SPACE_GLOBAL, wrapped + 1, NULL, 2, 4, out, sizeof out, &fault) == GM_FAULT);
    EXPECT(fault.lane == 0 && fault.kind == GM_FAULT_OUT_OF_BOUNDS);
    EXPECT(gm_load(&w.mem, GM_SPACE_GLOBAL, wrapped + 2, NULL, 1, 4, out, sizeof out, &fault) == GM_FAULT);
    EXPECT(fault.kind == GM_FAULT_NULL);

    uint64_t last_word = start + w.sizes[0] - 4, straddle = w.starts[1] + 256, unaligned = start + 248;
    EXPECT(gm_load(&w.mem, GM_SPACE_GLOBAL, &last_word, NULL, 1, 4, out, sizeof out, &fault) == GM_OK);
    EXPECT(gm_load(&w.mem, GM_SPACE_GLOBAL, &straddle, NULL, 1, 16, out, sizeof out, &fault) == GM_FAULT);
    EXPECT(fault.kind == GM_FAULT_OUT_OF_BOUNDS);
    EXPECT(gm_load(&w.mem, GM_SPACE_GLOBAL, &unaligned, NULL, 1, 16, out, sizeof out, &fault) == GM_FAULT);
    EXPECT(fault.kind == GM_FAULT_MISALIGNED);

    int64_t bad_threads[] = {-1, 64, INT64_MIN};
    uint64_t zero_offsets[] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        EXPECT(gm_load(&w.mem, GM_SPACE_SHARED, zero_offsets, bad_threads + i, 1, 4, out, sizeof out, &fault)
               == GM_FAULT);
        EXPECT(fault.kind == GM_FAULT_BAD_THREAD);
    }
    uint64_t past_window = 100;
    int64_t thread = 63;
    EXPECT(gm_store(&w.mem, GM_SPACE_SHARED, &past_window, &thread, 1, 4, out, sizeof out, &fault) == GM_FAULT);
    EXPECT(fault.kind == GM_FAULT_OUT_OF_BOUNDS);
    uint64_t local_end = 20;
    EXPECT(gm_store(&w.mem, GM_SPACE_LOCAL, &local_end, &thread, 1, 4, out, sizeof out, &fault) == GM_OK);

    uint64_t read_only = w.starts[2], freed = w.starts[3];
    EXPECT(gm_store(&w.mem, GM_SPACE_GLOBAL, &read_only, NULL, 1, 4, out, sizeof out, &fault) == GM_FAULT);
    EXPECT(fault.kind == GM_FAULT_READ_ONLY);
    EXPECT(gm_load(&w.mem, GM_SPACE_GLOBAL, &freed, NULL, 1, 4, out, sizeof out, &fault) == GM_FAULT);
    EXPECT(fault.kind == GM_FAULT_FREED);

    /* The table claims more bytes than the arena holds: refused, never read. */
    w.sizes[1] = 4096;
    uint64_t beyond = w.starts[1] + 512;
    EXPECT(gm_load(&w.mem, GM_SPACE_GLOBAL, &beyond, NULL, 1, 8, out, sizeof out, &fault) == GM_FAULT);
    EXPECT(fault.kind == GM_FAULT_BAD_LAYOUT);
    w.sizes[1] = 264;

    /* Shared windows claimed beyond the shared arena. */
    w.mem.shared_len = 100;
    EXPECT(gm_load(&w.mem, GM_SPACE_SHARED, zero_offsets, &thread, 1, 4, out, sizeof out, &fault) == GM_FAULT);
    EXPECT(fault.kind == GM_FAULT_BAD_LAYOUT);
    w.mem.shared_len = 224;
    w.mem.threads_per_cta = 0;
    EXPECT(gm_load(&w.mem, GM_SPACE_SHARED, zero_offsets, &thread, 1, 4, out, sizeof out, &fault) == GM_FAULT);
    EXPECT(fault.kind == GM_FAULT_BAD_LAYOUT);
    w.mem.threads_per_cta = 32;

    uint64_t one_word[] = {start, start, start};
    uint32_t ones[] = {1, 1, 1};
    uint32_t old[3];
    EXPECT(gm_atomic(&w.mem, GM_SPACE_GLOBAL, GM_OP_ADD, GM_TYPE_U32, one_word, NULL, 3, (uint8_t *)ones, NULL,
                     sizeof ones, (uint8_t *)old, sizeof old, &fault) == GM_OK);
    EXPECT(old[0] == 0 && old[1] == 1 && old[2] == 2);
    EXPECT(gm_atomic(&w.mem, GM_SPACE_GLOBAL, GM_OP_CAS, GM_TYPE_U32, one_word, NULL, 3, (uint8_t *)ones, NULL,
                     sizeof ones, (uint8_t *)old, sizeof old, &fault) == GM_BAD_ARGUMENT);
    EXPECT(gm_atomic(&w.mem, GM_SPACE_GLOBAL, GM_OP_INC, GM_TYPE_F32, one_word, NULL, 3, (uint8_t *)ones, NULL,
                     sizeof ones, (uint8_t *)old, sizeof old, &fault) == GM_BAD_ARGUMENT);
    EXPECT(gm_atomic(&w.mem, GM_SPACE_GLOBAL, GM_OP_ADD, GM_TYPE_U64, one_word, NULL, 3, (uint8_t *)ones, NULL,
                     sizeof ones, (uint8_t *)old, sizeof old, &fault) == GM_BAD_ARGUMENT);

    int64_t warps[4], counts[4], most[4];
    gm_count_totals totals;
    uint64_t sectors[] = {0, 4, 128, UINT64_MAX - 3};
    int64_t count_threads[] = {0, 1, 40, 41};
    EXPECT(gm_count(GM_COUNT_GLOBAL_SECTORS, sectors, count_threads, 4, 16, 4, 1, warps, counts, most, 4, &totals)
           == 2);
    EXPECT(warps[0] == 0 && counts[0] == 1 && warps[1] == 1 && counts[1] == 3 && most[0] == 1 && most[1] == 1);
    EXPECT(totals.warps == 2 && totals.count == 4 && totals.most == 2 && totals.most_max == 1);
    /* Local sectors: words 0 and 1 of lanes 0 and 1 sit at bytes 0, 4 (sector 0) and 128, 132 (sector 4). */
    uint64_t local_offsets[] = {0, 0};
    EXPECT(gm_count(GM_COUNT_LOCAL_SECTORS, local_offsets, NULL, 2, 8, 4, 1, NULL, NULL, NULL, 0, &totals) == 1);
    EXPECT(totals.warps == 1 && totals.count == 2 && totals.most == 2 && totals.most_max == 2);
    int64_t negative[] = {0, -1, 3, 4}, huge[] = {0, 1ll << 48, 3, 4};
    EXPECT(gm_count(GM_COUNT_DISTINCT_ADDRESSES, sectors, negative, 4, 4, 4, 0, warps, counts, NULL, 4, NULL)
           == GM_BAD_ARGUMENT);
    EXPECT(gm_count(GM_COUNT_DISTINCT_ADDRESSES, sectors, huge, 4, 4, 4, 0, warps, counts, NULL, 4, NULL)
           == GM_BAD_ARGUMENT);
    EXPECT(gm_count(GM_COUNT_DISTINCT_ADDRESSES, sectors, count_threads, 4, 4, 4, 0, warps, counts, NULL, 1, NULL)
           == GM_BAD_ARGUMENT);
    EXPECT(gm_count(GM_COUNT_SHARED_WAVEFRONTS, sectors, NULL, 4, 16, 3, 0, warps, counts, NULL, 4, NULL)
           == GM_BAD_ARGUMENT);
    EXPECT(gm_count(GM_COUNT_SHARED_WAVEFRONTS, sectors, NULL, 4, 4, 4, 0, warps, NULL, NULL, 4, NULL)
           == GM_BAD_ARGUMENT);
    EXPECT(gm_count(GM_COUNT_SHARED_WAVEFRONTS, sectors, NULL, 4, 4, 4, 0, warps, counts, most, 4, NULL)
           == GM_BAD_ARGUMENT);
    EXPECT(gm_count(GM_COUNT_SHARED_WAVEFRONTS, NULL, NULL, 0, 4, 4, 1, NULL, NULL, NULL, 0, &totals) == 0);
    EXPECT(totals.warps == 0 && totals.count == 0 && totals.most == 0 && totals.most_max == 0);
    /* One address for every lane, threads 3 and 40: one sector each, two contended atomics. */
    uint64_t one_address[] = {64, 64, 64};
    int64_t spread_threads[] = {3, 3, 40};
    EXPECT(gm_count(GM_COUNT_GLOBAL_SECTORS, one_address, spread_threads, 3, 4, 4, 1, NULL, NULL, NULL, 0, &totals)
           == 2);
    EXPECT(totals.count == 2 && totals.most == 3 && totals.most_max == 2);
    int64_t unordered[] = {40, 3, 3};
    EXPECT(gm_count(GM_COUNT_GLOBAL_SECTORS, one_address, unordered, 3, 4, 4, 1, warps, counts, most, 4, &totals)
           == 2);
    EXPECT(warps[0] == 0 && most[0] == 2 && warps[1] == 1 && most[1] == 1);
    EXPECT(gm_count(GM_COUNT_GLOBAL_SECTORS, one_address, huge, 3, 4, 4, 0, NULL, NULL, NULL, 0, &totals)
           == GM_BAD_ARGUMENT);

    free_world(&w);
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
    pinned_cases();
    for (long round = 0; round < rounds; round++) {
        world w;
        make_consistent_world(&w);
        if (next_random() % 3 == 0)
            corrupt_world(&w);
        if (next_random() % 4 == 0)
            corrupt_world(&w);
        for (int call = 0; call < 4; call++)
            fuzz_once(&w);
        free_world(&w);
    }
    if (failures) {
        fprintf(stderr, "%d expectation(s) failed\n", failures);
        return 1;
    }
    printf("hostile inputs: %ld rounds survived\n", rounds);
    return 0;
}
