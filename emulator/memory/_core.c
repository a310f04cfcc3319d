/* gpuemu memory core: every lane's access is resolved and bounds-checked before any byte moves. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "_core.h"
#include "_integer_atomics.h"

#define CANONICAL_NAN_F32 0x7fffffffu
#define DEFAULT_NAN_F64 0xfff8000000000000ull
#define CANONICAL_NAN_HALF 0x7fffu

static int valid_width(int width)
{
    return width == 1 || width == 2 || width == 4 || width == 8 || width == 16;
}

static int valid_space(int space)
{
    return space >= GM_SPACE_GENERIC && space <= GM_SPACE_LOCAL;
}

/* Index of the allocation containing addr, or -1; *cache remembers the last hit. */
static int64_t find_allocation(const gm_memory *mem, uint64_t addr, int64_t *cache)
{
    int64_t hit = *cache;
    if (hit >= 0 && hit < mem->n_allocs && addr >= mem->alloc_start[hit]
        && addr - mem->alloc_start[hit] < mem->alloc_size[hit])
        return hit;
    int64_t lo = 0, hi = mem->n_allocs;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (mem->alloc_start[mid] <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    int64_t candidate = lo - 1;
    if (candidate >= 0 && addr >= mem->alloc_start[candidate]
        && addr - mem->alloc_start[candidate] < mem->alloc_size[candidate]) {
        *cache = candidate;
        return candidate;
    }
    return -1;
}

/* True when `units` windows of `stride` bytes fit in `len` bytes and `limit` fits in a stride. */
static int windows_fit(const uint8_t *bytes, uint64_t len, uint64_t units, uint64_t stride, uint64_t limit)
{
    if (units == 0 || limit == 0)
        return 1;
    if (bytes == NULL || limit > stride)
        return 0;
    return units <= len / stride;
}

/* Everything one call needs per lane, with memos of the last allocation and CTA seen. */
typedef struct {
    const gm_memory *mem;
    int space;
    int width;
    int writes;
    uint64_t width_mask;
    int shared_fits;
    int local_fits;
    int64_t allocation;
    uint64_t fast_start;
    uint64_t fast_count;
    uint8_t *fast_base;
    int64_t cta_first_thread;
    int64_t cta_end_thread;
    uint8_t *cta_base;
} lane_context;

static void context_init(lane_context *ctx, const gm_memory *mem, int space, int width, int writes)
{
    ctx->mem = mem;
    ctx->space = space;
    ctx->width = width;
    ctx->writes = writes;
    ctx->width_mask = (uint64_t)width - 1;
    uint64_t n_threads = mem->n_threads > 0 ? (uint64_t)mem->n_threads : 0;
    uint64_t n_ctas = 0;
    if (mem->threads_per_cta > 0)
        n_ctas = n_threads / (uint64_t)mem->threads_per_cta
            + (n_threads % (uint64_t)mem->threads_per_cta != 0);
    ctx->shared_fits = mem->threads_per_cta > 0
        && windows_fit(mem->shared_bytes, mem->shared_len, n_ctas, mem->shared_stride, mem->shared_limit);
    ctx->local_fits = windows_fit(mem->local_bytes, mem->local_len, n_threads, mem->local_stride, mem->local_limit);
    ctx->allocation = -1;
    ctx->fast_start = 0;
    ctx->fast_count = 0;
    ctx->fast_base = NULL;
    ctx->cta_first_thread = 0;
    ctx->cta_end_thread = 0;
    ctx->cta_base = NULL;
}

static int resolve_window(lane_context *ctx, int space, uint64_t addr, uint64_t offset, int64_t thread,
                          uint8_t **where)
{
    const gm_memory *mem = ctx->mem;
    if (thread < 0 || thread >= mem->n_threads)
        return GM_FAULT_BAD_THREAD;
    if (addr & ctx->width_mask)
        return GM_FAULT_MISALIGNED;
    uint64_t limit = space == GM_SPACE_SHARED ? mem->shared_limit : mem->local_limit;
    if (offset >= limit || (uint64_t)ctx->width > limit - offset)
        return GM_FAULT_OUT_OF_BOUNDS;
    if (space == GM_SPACE_LOCAL) {
        if (!ctx->local_fits)
            return GM_FAULT_BAD_LAYOUT;
        *where = mem->local_bytes + (uint64_t)thread * mem->local_stride + offset;
        return 0;
    }
    if (!ctx->shared_fits)
        return GM_FAULT_BAD_LAYOUT;
    if (thread < ctx->cta_first_thread || thread >= ctx->cta_end_thread) {
        int64_t cta = thread / mem->threads_per_cta;
        ctx->cta_first_thread = cta * mem->threads_per_cta;
        ctx->cta_end_thread = ctx->cta_first_thread + mem->threads_per_cta;
        ctx->cta_base = mem->shared_bytes + (uint64_t)cta * mem->shared_stride;
    }
    *where = ctx->cta_base + offset;
    return 0;
}

static int resolve_global(lane_context *ctx, uint64_t addr, uint8_t **where)
{
    const gm_memory *mem = ctx->mem;
    if (addr & ctx->width_mask)
        return GM_FAULT_MISALIGNED;
    if (addr < mem->null_limit)
        return GM_FAULT_NULL;
    int64_t index = find_allocation(mem, addr, &ctx->allocation);
    if (index < 0)
        return GM_FAULT_OUT_OF_BOUNDS;
    uint8_t flags = mem->alloc_flags[index];
    if (flags & GM_ALLOC_FREED)
        return GM_FAULT_FREED;
    uint64_t start = mem->alloc_start[index], size = mem->alloc_size[index];
    uint64_t inside = addr - start;
    if ((uint64_t)ctx->width > size - inside)
        return GM_FAULT_OUT_OF_BOUNDS;
    if (ctx->writes && (flags & GM_ALLOC_READ_ONLY))
        return GM_FAULT_READ_ONLY;
    uint64_t offset = mem->alloc_offset[index];
    uint8_t *base;
    if (flags & GM_ALLOC_HOST) {
        base = (uint8_t *)(uintptr_t)offset;
    } else {
        if (mem->global_bytes == NULL || offset > mem->global_len || size > mem->global_len - offset)
            return GM_FAULT_BAD_LAYOUT;
        base = mem->global_bytes + offset;
    }
    /* Remember this allocation: later lanes inside it skip every check but alignment. */
    if (start >= mem->null_limit) {
        ctx->fast_start = start;
        ctx->fast_count = size - (uint64_t)ctx->width + 1;
        ctx->fast_base = base;
    }
    *where = base + inside;
    return 0;
}

/* Resolves one lane; returns 0 and sets *where, or a GM_FAULT_* kind. */
static inline int resolve(lane_context *ctx, uint64_t addr, int64_t thread, uint8_t **where,
                          int32_t *resolved_space)
{
    const gm_memory *mem = ctx->mem;
    int space = ctx->space;
    uint64_t offset = addr;
    if (space == GM_SPACE_GENERIC) {
        if (addr - mem->shared_window_base < mem->window_size) {
            space = GM_SPACE_SHARED;
            offset = addr - mem->shared_window_base;
        } else if (addr - mem->local_window_base < mem->window_size) {
            space = GM_SPACE_LOCAL;
            offset = addr - mem->local_window_base;
        } else {
            space = GM_SPACE_GLOBAL;
        }
    }
    *resolved_space = space;
    if (space != GM_SPACE_GLOBAL)
        return resolve_window(ctx, space, addr, offset, thread, where);
    uint64_t inside = addr - ctx->fast_start;
    if (inside < ctx->fast_count && (addr & ctx->width_mask) == 0) {
        *where = ctx->fast_base + inside;
        return 0;
    }
    return resolve_global(ctx, addr, where);
}

/* The per-lane helpers of the access loops must be inlined there: a call per lane costs the loops about a tenth. */
#if defined(__GNUC__)
#define LANE_INLINE inline __attribute__((always_inline))
#else
#define LANE_INLINE inline
#endif

/* Resolves lane `lane` of an access (its thread threads[lane], or the lane itself without threads); returns 0 and
   sets *where, or returns the GM_FAULT_* kind and fills *fault with the lane, the kind and the space. */
static LANE_INLINE int resolve_lane(lane_context *ctx, const uint64_t *addr, const int64_t *threads, int64_t lane,
                               uint8_t **where, int32_t *resolved, gm_fault *fault)
{
    int kind = resolve(ctx, addr[lane], threads ? threads[lane] : lane, where, resolved);
    if (kind != 0) {
        fault->lane = lane;
        fault->kind = kind;
        fault->space = *resolved;
    }
    return kind;
}

/* Fixed-size copies let the compiler emit single moves. */
static inline void copy_bytes(uint8_t *to, const uint8_t *from, int width)
{
    switch (width) {
    case 1: *to = *from; break;
    case 2: memcpy(to, from, 2); break;
    case 4: memcpy(to, from, 4); break;
    case 8: memcpy(to, from, 8); break;
    default: memcpy(to, from, 16); break;
    }
}

static int check_common(const gm_memory *mem, int space, const uint64_t *addr, int64_t n,
                        gm_fault *fault)
{
    if (mem == NULL || fault == NULL || n < 0 || !valid_space(space))
        return 0;
    if (n > 0 && addr == NULL)
        return 0;
    if (mem->n_allocs < 0 || (mem->n_allocs > 0 && (mem->alloc_start == NULL
        || mem->alloc_size == NULL || mem->alloc_offset == NULL || mem->alloc_flags == NULL)))
        return 0;
    return 1;
}

/* First lane whose access faults, or -1; fills *fault. */
static int64_t validate(const gm_memory *mem, int space, const uint64_t *addr,
                        const int64_t *threads, int64_t n, int width, int writes, gm_fault *fault)
{
    lane_context ctx;
    context_init(&ctx, mem, space, width, writes);
    for (int64_t lane = 0; lane < n; lane++) {
        uint8_t *where;
        int32_t resolved;
        if (resolve_lane(&ctx, addr, threads, lane, &where, &resolved, fault) != 0)
            return lane;
    }
    return -1;
}

/* A shared (one window per CTA) or local (one per thread) space, for the inline-checked loops below. */
typedef struct {
    uint8_t *bytes;
    uint64_t limit;
    uint64_t stride;
    int64_t threads_per_window;
} window_space;

static int window_space_of(const gm_memory *mem, const lane_context *ctx, int space, window_space *out)
{
    if (space == GM_SPACE_SHARED && ctx->shared_fits) {
        *out = (window_space){mem->shared_bytes, mem->shared_limit, mem->shared_stride, mem->threads_per_cta};
        return 1;
    }
    if (space == GM_SPACE_LOCAL && ctx->local_fits) {
        *out = (window_space){mem->local_bytes, mem->local_limit, mem->local_stride, 1};
        return 1;
    }
    return 0;
}

static inline int window_lane_ok(const gm_memory *mem, const window_space *w, int64_t thread, uint64_t offset,
                                 int width)
{
    return thread >= 0 && thread < mem->n_threads && (offset & ((uint64_t)width - 1)) == 0 && offset < w->limit
        && (uint64_t)width <= w->limit - offset;
}

static inline uint8_t *window_base(const window_space *w, int64_t thread, int64_t *first, int64_t *end,
                                   uint8_t *base)
{
    if (thread >= *first && thread < *end)
        return base;
    int64_t window = thread / w->threads_per_window;
    *first = window * w->threads_per_window;
    *end = *first + w->threads_per_window;
    return w->bytes + (uint64_t)window * w->stride;
}

/* Window loads of one width with every check inline: returns how many leading lanes were served; the general
   loop takes over at the first lane that needs a fault report. */
static inline int64_t load_window_lanes(const gm_memory *mem, const window_space *w, const uint64_t *addr,
                                        const int64_t *threads, int64_t n, int width, uint8_t *out)
{
    int64_t first = 0, end = 0;
    uint8_t *base = NULL;
    for (int64_t lane = 0; lane < n; lane++) {
        int64_t thread = threads ? threads[lane] : lane;
        if (!window_lane_ok(mem, w, thread, addr[lane], width))
            return lane;
        base = window_base(w, thread, &first, &end, base);
        memcpy(out + (uint64_t)lane * (uint64_t)width, base + addr[lane], (size_t)width);
    }
    return n;
}

/* Window stores of one width: every lane is checked first, so that a faulting store writes nothing; returns 0
   (nothing written) when some lane needs the general path's fault report. */
static inline int store_window_lanes(const gm_memory *mem, const window_space *w, const uint64_t *addr,
                                     const int64_t *threads, int64_t n, int width, const uint8_t *data)
{
    for (int64_t lane = 0; lane < n; lane++)
        if (!window_lane_ok(mem, w, threads ? threads[lane] : lane, addr[lane], width))
            return 0;
    int64_t first = 0, end = 0;
    uint8_t *base = NULL;
    for (int64_t lane = 0; lane < n; lane++) {
        base = window_base(w, threads ? threads[lane] : lane, &first, &end, base);
        memcpy(base + addr[lane], data + (uint64_t)lane * (uint64_t)width, (size_t)width);
    }
    return 1;
}

/* What a load or store checks first: the common arguments, the width, a buffer of n * width bytes. */
static int check_transfer(const gm_memory *mem, int space, const uint64_t *addr, int64_t n, int width,
                          const void *buffer, uint64_t buffer_len, gm_fault *fault)
{
    return check_common(mem, space, addr, n, fault) && valid_width(width)
        && (uint64_t)n <= buffer_len / (uint64_t)width && !(n > 0 && buffer == NULL);
}

int gm_load(const gm_memory *mem, int space, const uint64_t *addr, const int64_t *threads,
            int64_t n, int width, uint8_t *out, uint64_t out_len, gm_fault *fault)
{
    if (!check_transfer(mem, space, addr, n, width, out, out_len, fault))
        return GM_BAD_ARGUMENT;
    lane_context ctx;
    context_init(&ctx, mem, space, width, 0);
    int64_t lane = 0;
    window_space window;
    if (window_space_of(mem, &ctx, space, &window)) {
        switch (width) {
        case 4: lane = load_window_lanes(mem, &window, addr, threads, n, 4, out); break;
        case 8: lane = load_window_lanes(mem, &window, addr, threads, n, 8, out); break;
        default: break;
        }
    }
    for (; lane < n; lane++) {
        uint8_t *where;
        int32_t resolved;
        if (resolve_lane(&ctx, addr, threads, lane, &where, &resolved, fault) != 0)
            return GM_FAULT;
        copy_bytes(out + (uint64_t)lane * (uint64_t)width, where, width);
    }
    return GM_OK;
}

int gm_store(const gm_memory *mem, int space, const uint64_t *addr, const int64_t *threads,
             int64_t n, int width, const uint8_t *data, uint64_t data_len, gm_fault *fault)
{
    if (!check_transfer(mem, space, addr, n, width, data, data_len, fault))
        return GM_BAD_ARGUMENT;
    lane_context ctx;
    context_init(&ctx, mem, space, width, 1);
    window_space window;
    if (window_space_of(mem, &ctx, space, &window)
        && ((width == 4 && store_window_lanes(mem, &window, addr, threads, n, 4, data))
            || (width == 8 && store_window_lanes(mem, &window, addr, threads, n, 8, data))))
        return GM_OK;
    if (validate(mem, space, addr, threads, n, width, 1, fault) >= 0)
        return GM_FAULT;
    /* Lanes write in index order, so when several lanes store to the same bytes the highest lane wins. */
    for (int64_t lane = 0; lane < n; lane++) {
        uint8_t *where;
        int32_t resolved;
        if (resolve_lane(&ctx, addr, threads, lane, &where, &resolved, fault) != 0)
            return GM_BAD_ARGUMENT;
        copy_bytes(where, data + (uint64_t)lane * (uint64_t)width, width);
    }
    return GM_OK;
}

/* ---- floating-point helpers: exact decoding, one correctly rounded narrowing ---- */

/* 2**k for k inside the normal double range, built from its bits (exact, no libm call). */
static inline double power_of_two(int k)
{
    uint64_t bits = (uint64_t)(k + 1023) << 52;
    double value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

static double small_to_double(uint32_t bits, int mant_bits, int exp_bits)
{
    uint32_t exp_mask = (1u << exp_bits) - 1;
    uint32_t exponent = (bits >> mant_bits) & exp_mask;
    uint32_t mantissa = bits & ((1u << mant_bits) - 1);
    int negative = (bits >> (mant_bits + exp_bits)) & 1;
    int bias = (1 << (exp_bits - 1)) - 1;
    double value;
    if (exponent == exp_mask)
        value = INFINITY;
    else if (exponent == 0)
        value = (double)mantissa * power_of_two(1 - bias - mant_bits);
    else
        value = (double)(mantissa | (1u << mant_bits)) * power_of_two((int)exponent - bias - mant_bits);
    return negative ? -value : value;
}

static int small_is_nan(uint32_t bits, int mant_bits, int exp_bits)
{
    uint32_t exp_mask = (1u << exp_bits) - 1;
    return ((bits >> mant_bits) & exp_mask) == exp_mask && (bits & ((1u << mant_bits) - 1)) != 0;
}

/* Rounds a non-NaN double to nearest-even in a binary format with the given field widths. */
static uint32_t narrow_double(double x, int mant_bits, int exp_bits)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    uint32_t sign = (uint32_t)(bits >> 63) << (mant_bits + exp_bits);
    int biased = (int)((bits >> 52) & 0x7ff);
    uint64_t fraction = bits & ((1ull << 52) - 1);
    int bias = (1 << (exp_bits - 1)) - 1;
    uint32_t infinity = ((1u << exp_bits) - 1) << mant_bits;
    if (biased == 0x7ff)
        return sign | infinity;
    if (biased == 0)
        return sign;
    int exponent = biased - 1023;
    uint64_t significand = fraction | (1ull << 52);
    int min_exponent = 1 - bias;
    int64_t shift = 52 - mant_bits + (exponent < min_exponent ? min_exponent - exponent : 0);
    uint64_t rounded = 0;
    if (shift < 64) {
        rounded = significand >> shift;
        uint64_t rest = significand & ((1ull << shift) - 1);
        uint64_t half = 1ull << (shift - 1);
        if (rest > half || (rest == half && (rounded & 1)))
            rounded++;
    }
    if (exponent < min_exponent)
        return sign | (uint32_t)rounded;
    if (rounded >> (mant_bits + 1)) {
        rounded >>= 1;
        exponent++;
    }
    if (exponent > bias)
        return sign | infinity;
    return sign | ((uint32_t)(exponent + bias) << mant_bits)
        | (uint32_t)(rounded & ((1u << mant_bits) - 1));
}

static uint32_t f32_flush(uint32_t bits)
{
    return (bits & 0x7f800000u) == 0 ? (bits & 0x80000000u) : bits;
}

static inline int f32_normal_or_zero(uint32_t bits)
{
    uint32_t exponent = bits & 0x7f800000u;
    return exponent != 0x7f800000u && (exponent != 0 || (bits & 0x7fffffu) == 0);
}

static uint32_t f32_add(uint32_t x, uint32_t y, int ftz)
{
    if (small_is_nan(x, 23, 8) || small_is_nan(y, 23, 8))
        return CANONICAL_NAN_F32;
    if (ftz) {
        x = f32_flush(x);
        y = f32_flush(y);
    }
    /* Normal or zero operands with a normal sum: the machine's float add is the IEEE result
       whatever its denormal modes, so it can stand in for the exact path below. */
    if (FLT_EVAL_METHOD == 0 && f32_normal_or_zero(x) && f32_normal_or_zero(y)) {
        float a, b, quick;
        memcpy(&a, &x, 4);
        memcpy(&b, &y, 4);
        quick = a + b;
        uint32_t bits;
        memcpy(&bits, &quick, 4);
        uint32_t exponent = bits & 0x7f800000u;
        if (exponent != 0 && exponent != 0x7f800000u)
            return bits;
    }
    double sum = small_to_double(x, 23, 8) + small_to_double(y, 23, 8);
    if (sum != sum)
        return CANONICAL_NAN_F32;
    uint32_t result = narrow_double(sum, 23, 8);
    return ftz ? f32_flush(result) : result;
}

static int f64_is_nan(uint64_t bits)
{
    return (bits & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (bits & ((1ull << 52) - 1)) != 0;
}

/* Measured on an H100 (probes atom/red_{global,shared}_add_f64): on global memory a NaN operand
   comes back unchanged (the added value's before the stored one's); on shared memory the stored
   NaN comes first, then the added one, each with its quiet bit set. Either way an invalid sum such
   as inf + -inf gives 0xfff8000000000000. */
static uint64_t f64_add(uint64_t x, uint64_t y, int shared)
{
    const uint64_t quiet = 0x0008000000000000ull;
    if (shared) {
        if (f64_is_nan(x))
            return x | quiet;
        if (f64_is_nan(y))
            return y | quiet;
    } else {
        if (f64_is_nan(y))
            return y;
        if (f64_is_nan(x))
            return x;
    }
    double a, b;
    memcpy(&a, &x, sizeof a);
    memcpy(&b, &y, sizeof b);
    double sum = a + b;
    if (sum != sum)
        return DEFAULT_NAN_F64;
    uint64_t out;
    memcpy(&out, &sum, sizeof out);
    return out;
}

static uint32_t half_add(uint32_t x, uint32_t y, int mant_bits, int exp_bits)
{
    if (small_is_nan(x, mant_bits, exp_bits) || small_is_nan(y, mant_bits, exp_bits))
        return CANONICAL_NAN_HALF;
    double sum = small_to_double(x, mant_bits, exp_bits) + small_to_double(y, mant_bits, exp_bits);
    if (sum != sum)
        return CANONICAL_NAN_HALF;
    return narrow_double(sum, mant_bits, exp_bits);
}

/* Total order on sign-magnitude 16-bit values with -0 below +0. */
static int32_t half_order_key(uint32_t h)
{
    return (h & 0x8000u) ? -(int32_t)(h & 0x7fffu) - 1 : (int32_t)h;
}

static uint32_t half_min_max(uint32_t x, uint32_t y, int want_max, int mant_bits, int exp_bits)
{
    int x_nan = small_is_nan(x, mant_bits, exp_bits), y_nan = small_is_nan(y, mant_bits, exp_bits);
    if (x_nan && y_nan)
        return CANONICAL_NAN_HALF;
    if (x_nan)
        return y;
    if (y_nan)
        return x;
    int y_wins = want_max ? half_order_key(y) > half_order_key(x) : half_order_key(y) < half_order_key(x);
    return y_wins ? y : x;
}

static uint32_t half_apply(int op, uint32_t x, uint32_t y, int bf16)
{
    int mant_bits = bf16 ? 7 : 10, exp_bits = bf16 ? 8 : 5;
    return op == GM_OP_ADD ? half_add(x, y, mant_bits, exp_bits)
                           : half_min_max(x, y, op == GM_OP_MAX, mant_bits, exp_bits);
}

static uint32_t packed_apply(int op, uint32_t old, uint32_t value, int bf16)
{
    uint32_t result = 0;
    for (int half = 0; half < 2; half++) {
        uint32_t x = (old >> (16 * half)) & 0xffffu, y = (value >> (16 * half)) & 0xffffu;
        result |= half_apply(op, x, y, bf16) << (16 * half);
    }
    return result;
}

/* ---- atomics ---- */

static int atomic_supported(int op, int type)
{
    if (op < GM_OP_ADD || op > GM_OP_XOR || type < GM_TYPE_B32 || type > GM_TYPE_B16)
        return 0;
    if (type == GM_TYPE_F16 || type == GM_TYPE_BF16)
        return op == GM_OP_ADD || op == GM_OP_MIN || op == GM_OP_MAX;
    if (type == GM_TYPE_B16)
        return op == GM_OP_CAS;
    if (type == GM_TYPE_F32 || type == GM_TYPE_F64)
        return op == GM_OP_ADD || op == GM_OP_EXCH || op == GM_OP_CAS;
    if (type == GM_TYPE_F16X2 || type == GM_TYPE_BF16X2)
        return op == GM_OP_ADD || op == GM_OP_MIN || op == GM_OP_MAX || op == GM_OP_EXCH
            || op == GM_OP_CAS;
    return 1;
}

static int type_width(int type)
{
    if (type == GM_TYPE_B64 || type == GM_TYPE_U64 || type == GM_TYPE_S64 || type == GM_TYPE_F64)
        return 8;
    if (type == GM_TYPE_F16 || type == GM_TYPE_BF16 || type == GM_TYPE_B16)
        return 2;
    return 4;
}

/* `space` is the lane's resolved space (never generic). */
static uint64_t atomic_apply(int op, int type, uint64_t old, uint64_t a, uint64_t b, int space)
{
    int width = type_width(type);
    uint64_t mask = width == 8 ? UINT64_MAX : width == 2 ? 0xffffull : 0xffffffffull;
    if (op == GM_OP_CAS)
        return old == a ? b : old;
    if (op == GM_OP_EXCH)
        return a;
    switch (type) {
    case GM_TYPE_F32: return f32_add((uint32_t)old, (uint32_t)a, space == GM_SPACE_GLOBAL);
    case GM_TYPE_F64: return f64_add(old, a, space != GM_SPACE_GLOBAL);
    case GM_TYPE_F16X2: return packed_apply(op, (uint32_t)old, (uint32_t)a, 0);
    case GM_TYPE_BF16X2: return packed_apply(op, (uint32_t)old, (uint32_t)a, 1);
    case GM_TYPE_F16: return half_apply(op, (uint32_t)old, (uint32_t)a, 0);
    case GM_TYPE_BF16: return half_apply(op, (uint32_t)old, (uint32_t)a, 1);
    default: return gm_integer_apply(op, type == GM_TYPE_S32 || type == GM_TYPE_S64, old, a, mask);
    }
}

static uint64_t read_word(const uint8_t *p, int width)
{
    if (width == 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    if (width == 2) {
        uint16_t h;
        memcpy(&h, p, 2);
        return h;
    }
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static void write_word(uint8_t *p, uint64_t value, int width)
{
    if (width == 8) {
        memcpy(p, &value, 8);
    } else if (width == 2) {
        uint16_t h = (uint16_t)value;
        memcpy(p, &h, 2);
    } else {
        uint32_t v = (uint32_t)value;
        memcpy(p, &v, 4);
    }
}

int gm_atomic(const gm_memory *mem, int space, int op, int type, const uint64_t *addr,
              const int64_t *threads, int64_t n, const uint8_t *a, const uint8_t *b,
              uint64_t operand_len, uint8_t *old, uint64_t old_len, gm_fault *fault)
{
    if (!check_common(mem, space, addr, n, fault) || !atomic_supported(op, type))
        return GM_BAD_ARGUMENT;
    int width = type_width(type);
    if ((uint64_t)n > operand_len / (uint64_t)width || (uint64_t)n > old_len / (uint64_t)width)
        return GM_BAD_ARGUMENT;
    if (n > 0 && (a == NULL || old == NULL || (op == GM_OP_CAS && b == NULL)))
        return GM_BAD_ARGUMENT;
    if (validate(mem, space, addr, threads, n, width, 1, fault) >= 0)
        return GM_FAULT;
    lane_context ctx;
    context_init(&ctx, mem, space, width, 1);
    for (int64_t lane = 0; lane < n; lane++) {
        uint8_t *where;
        int32_t resolved;
        if (resolve_lane(&ctx, addr, threads, lane, &where, &resolved, fault) != 0)
            return GM_BAD_ARGUMENT;
        uint64_t offset = (uint64_t)lane * (uint64_t)width;
        uint64_t current = read_word(where, width);
        uint64_t operand_b = op == GM_OP_CAS ? read_word(b + offset, width) : 0;
        uint64_t updated = atomic_apply(op, type, current, read_word(a + offset, width), operand_b, resolved);
        write_word(old + offset, current, width);
        write_word(where, updated, width);
    }
    return GM_OK;
}

/* ---- per-warp counting ---- */

/* Counting loops over whole calls that the compiler can vectorise: on x86-64 Linux with GCC they are built
   twice, for AVX2 and for the baseline, and the loader picks one for the CPU it runs on. */
#if defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__) && defined(__GNUC__) && !defined(__clang__)
#define VECTORISED __attribute__((target_clones("avx2", "default"), optimize("O3")))
#else
#define VECTORISED
#endif

#define WARP_LANES 32
#define BANKS 32
#define MAX_PHASES 32
#define SECTOR_BYTES 32
#define SECTOR_SHIFT 5
#define LOCAL_WORD_BYTES 4
/* At most this many counted values per lane (16-byte accesses over 1-byte banks). */
#define VALUES_PER_LANE 16
#define THREAD_LIMIT (1ll << 48)
/* Values spanning fewer than this many are marked in a bitmap or tallied in a table indexed by
   value; wider ones go through the hash table. */
#define DIRECT_SPAN 4096
#define KEPT_VALUES (1 << 16)

/* Buffers reused from warp to warp, each made when first needed: one warp's lanes when they must
   be gathered, the values it contributes and their phases; a bitmap indexed by value (all zero
   between uses); a tally indexed by value whose entries hold the generation (a multiple of 2**32)
   plus the count, counting only from the current generation; and an open-addressing tally whose
   slots are live while their stamp equals the current one. Starting a tally afresh thus costs
   one increment. `failed` records that memory ran out (the warp's count is then void). */
typedef struct {
    uint64_t *lane_addr;
    int64_t *lane_threads;
    uint64_t *values;
    uint64_t *regrouped;
    uint8_t *phase;
    int64_t capacity;
    uint64_t *bitmap;
    uint64_t *direct;
    uint64_t direct_generation;
    uint64_t *keys;
    int64_t *tally;
    uint32_t *stamps;
    int64_t table_capacity;
    int table_bits;
    uint32_t stamp;
    int failed;
} count_scratch;

/* One scratch per thread, kept from call to call unless a call grew it past KEPT_VALUES values. */
#if defined(_MSC_VER)
static __declspec(thread) count_scratch kept_scratch;
#else
static _Thread_local count_scratch kept_scratch;
#endif

static void scratch_free(count_scratch *s)
{
    free(s->lane_addr);
    free(s->lane_threads);
    free(s->values);
    free(s->regrouped);
    free(s->phase);
    free(s->bitmap);
    free(s->direct);
    free(s->keys);
    free(s->tally);
    free(s->stamps);
}

/* Grows *buffer to count items of size bytes; false when memory runs out (the old buffer stays). */
static int grow(void **buffer, int64_t count, size_t size)
{
    void *grown = realloc(*buffer, (size_t)count * size);
    if (grown == NULL)
        return 0;
    *buffer = grown;
    return 1;
}

/* Room for the values of a warp of this many lanes. */
static int scratch_reserve(count_scratch *s, int64_t lanes)
{
    int64_t values = lanes * VALUES_PER_LANE;
    if (values <= s->capacity)
        return 1;
    int64_t capacity = s->capacity > 0 ? s->capacity : WARP_LANES * VALUES_PER_LANE;
    while (capacity < values)
        capacity *= 2;
    if (!grow((void **)&s->lane_addr, capacity, sizeof *s->lane_addr)
        || !grow((void **)&s->lane_threads, capacity, sizeof *s->lane_threads)
        || !grow((void **)&s->values, capacity, sizeof *s->values)
        || !grow((void **)&s->regrouped, capacity, sizeof *s->regrouped)
        || !grow((void **)&s->phase, capacity, sizeof *s->phase))
        return 0;
    s->capacity = capacity;
    return 1;
}

static uint64_t *bitmap_table(count_scratch *s)
{
    if (s->bitmap == NULL)
        s->bitmap = calloc(DIRECT_SPAN / 64, sizeof *s->bitmap);
    return s->bitmap;
}

/* Starts an empty direct tally; NULL without memory. */
static uint64_t *direct_begin(count_scratch *s)
{
    if (s->direct == NULL)
        s->direct = calloc(DIRECT_SPAN, sizeof *s->direct);
    s->direct_generation += (uint64_t)1 << 32;
    if (s->direct_generation == 0 && s->direct != NULL) {
        memset(s->direct, 0, DIRECT_SPAN * sizeof *s->direct);
        s->direct_generation = (uint64_t)1 << 32;
    }
    return s->direct;
}

/* Counts offset once more in the direct tally; returns how many times it has been counted. An
   entry below the generation belongs to an earlier tally and counts as zero. */
static inline int64_t direct_add(uint64_t *direct, uint64_t generation, uint64_t offset)
{
    uint64_t entry = direct[offset];
    entry = (entry > generation ? entry : generation) + 1;
    direct[offset] = entry;
    return (int64_t)(entry - generation);
}

/* Starts an empty hash tally for up to s->capacity values; false (and s->failed) without memory. */
static int hash_begin(count_scratch *s)
{
    if (s->table_capacity < s->capacity) {
        int bits = 1;
        while ((1ll << bits) < 2 * s->capacity)
            bits++;
        int64_t slots = 1ll << bits;
        free(s->stamps);
        s->stamps = calloc((size_t)slots, sizeof *s->stamps);
        if (s->stamps == NULL || !grow((void **)&s->keys, slots, sizeof *s->keys)
            || !grow((void **)&s->tally, slots, sizeof *s->tally)) {
            s->table_capacity = 0;
            s->failed = 1;
            return 0;
        }
        s->table_capacity = s->capacity;
        s->table_bits = bits;
        s->stamp = 0;
    }
    if (++s->stamp == 0) {
        memset(s->stamps, 0, ((size_t)1 << s->table_bits) * sizeof *s->stamps);
        s->stamp = 1;
    }
    return 1;
}

/* Counts value once more in the hash tally; returns how many times it has been counted. */
static inline int64_t hash_add(count_scratch *s, uint64_t value)
{
    uint64_t mask = ((uint64_t)1 << s->table_bits) - 1;
    uint64_t slot = (value * 0x9E3779B97F4A7C15ull) >> (64 - s->table_bits);
    while (s->stamps[slot] == s->stamp) {
        if (s->keys[slot] == value)
            return ++s->tally[slot];
        slot = (slot + 1) & mask;
    }
    s->stamps[slot] = s->stamp;
    s->keys[slot] = value;
    s->tally[slot] = 1;
    return 1;
}

static inline int bit_count(uint64_t x)
{
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (int)((x * 0x0101010101010101ull) >> 56);
}

typedef struct {
    uint64_t lowest;
    uint64_t highest;
    int ascending;
} value_range;

/* Smallest and largest of k >= 1 values, and whether they never decrease. */
static value_range range_of(const uint64_t *v, int64_t k)
{
    value_range range = {v[0], v[0], 1};
    for (int64_t i = 1; i < k; i++) {
        uint64_t x = v[i];
        range.ascending &= x >= v[i - 1];
        range.lowest = x < range.lowest ? x : range.lowest;
        range.highest = x > range.highest ? x : range.highest;
    }
    return range;
}

/* Marks offset in the bitmap; returns whether it was unmarked. */
static inline int bitmap_mark(uint64_t *bitmap, uint64_t offset)
{
    uint64_t bit = (uint64_t)1 << (offset & 63), *word = &bitmap[offset >> 6];
    int fresh = (*word & bit) == 0;
    *word |= bit;
    return fresh;
}

static void bitmap_clear(uint64_t *bitmap, value_range range)
{
    memset(bitmap, 0, (size_t)(((range.highest - range.lowest) >> 6) + 1) * sizeof *bitmap);
}

/* Distinct values among k >= 1 values inside range. */
static int64_t distinct_in(count_scratch *s, const uint64_t *v, int64_t k, value_range range)
{
    uint64_t span = range.highest - range.lowest, *bitmap;
    int64_t distinct = 0;
    if (range.ascending) {
        distinct = 1;
        for (int64_t i = 1; i < k; i++)
            distinct += v[i] != v[i - 1];
    } else if (span < 64) {
        uint64_t seen = 0;
        for (int64_t i = 0; i < k; i++)
            seen |= (uint64_t)1 << (v[i] - range.lowest);
        distinct = bit_count(seen);
    } else if (span < DIRECT_SPAN && (bitmap = bitmap_table(s)) != NULL) {
        for (int64_t i = 0; i < k; i++)
            distinct += bitmap_mark(bitmap, v[i] - range.lowest);
        bitmap_clear(bitmap, range);
    } else if (hash_begin(s)) {
        for (int64_t i = 0; i < k; i++)
            distinct += hash_add(s, v[i]) == 1;
    }
    return distinct;
}

static int64_t distinct_values(count_scratch *s, const uint64_t *v, int64_t k)
{
    return k ? distinct_in(s, v, k, range_of(v, k)) : 0;
}

/* The most times one value occurs among k >= 1 values. */
static int64_t most_repeated(count_scratch *s, const uint64_t *v, int64_t k)
{
    value_range range = range_of(v, k);
    int64_t most = 1;
    uint64_t *direct;
    if (range.ascending) {
        int64_t run = 1;
        for (int64_t i = 1; i < k; i++) {
            run = v[i] == v[i - 1] ? run + 1 : 1;
            most = run > most ? run : most;
        }
    } else if (range.highest - range.lowest < DIRECT_SPAN && (direct = direct_begin(s)) != NULL) {
        for (int64_t i = 0; i < k; i++) {
            int64_t seen = direct_add(direct, s->direct_generation, v[i] - range.lowest);
            most = seen > most ? seen : most;
        }
    } else if (hash_begin(s)) {
        for (int64_t i = 0; i < k; i++) {
            int64_t seen = hash_add(s, v[i]);
            most = seen > most ? seen : most;
        }
    }
    return most;
}

/* Wavefronts of one phase's k >= 1 bank words: the most distinct words that one bank holds. */
static int64_t phase_wavefronts(count_scratch *s, const uint64_t *words, int64_t k)
{
    value_range range = range_of(words, k);
    uint64_t span = range.highest - range.lowest, *bitmap;
    /* Words within 32 consecutive ones fall in distinct banks. */
    if (span < BANKS)
        return 1;
    int32_t per_bank[BANKS] = {0};
    int64_t worst = 0;
    if (range.ascending) {
        for (int64_t i = 0; i < k; i++) {
            if (i > 0 && words[i] == words[i - 1])
                continue;
            int64_t held = ++per_bank[words[i] % BANKS];
            worst = held > worst ? held : worst;
        }
    } else if (span < 64) {
        /* Offsets o and o + 32 are the only two words of one bank. */
        uint64_t seen = 0;
        for (int64_t i = 0; i < k; i++)
            seen |= (uint64_t)1 << (words[i] - range.lowest);
        worst = (seen & (seen >> 32)) ? 2 : 1;
    } else if (span < DIRECT_SPAN && (bitmap = bitmap_table(s)) != NULL) {
        for (int64_t i = 0; i < k; i++) {
            int32_t held = per_bank[words[i] % BANKS] + bitmap_mark(bitmap, words[i] - range.lowest);
            per_bank[words[i] % BANKS] = held;
            worst = held > worst ? held : worst;
        }
        bitmap_clear(bitmap, range);
    } else if (hash_begin(s)) {
        for (int64_t i = 0; i < k; i++) {
            int32_t held = per_bank[words[i] % BANKS] + (hash_add(s, words[i]) == 1);
            per_bank[words[i] % BANKS] = held;
            worst = held > worst ? held : worst;
        }
    }
    return worst;
}

/* The last of the units (bank words, sectors) that [a, a + width) touches; the first is a >> shift. */
static inline uint64_t last_unit(uint64_t a, uint64_t width, int shift)
{
    return (a >> shift) + (((a & (((uint64_t)1 << shift) - 1)) + width - 1) >> shift);
}

typedef struct {
    int what;
    uint64_t width;
    int bank_shift;
    int phase_shift;  /* lanes served together: 32 for accesses up to 2 bank words, 16 for 4 */
    int ideal_shift;  /* lanes whose bytes fill one wavefront (32 x 4-byte words) */
} count_request;

/* One warp's lanes: addresses and threads side by side (threads NULL: lane k is thread 32w + k). */
typedef struct {
    const uint64_t *addr;
    const int64_t *threads;
    int64_t lanes;
} warp_lanes;

static inline uint64_t lane_in_warp(const warp_lanes *w, int64_t k)
{
    return w->threads ? (uint64_t)(w->threads[k] & (WARP_LANES - 1)) : (uint64_t)k;
}

/* With several phases: one wavefront for each phase whose words lie within 32 consecutive ones;
   returns that count, or -1 when some phase needs its words counted bank by bank. */
static int64_t conflict_free_phases(const count_request *r, const warp_lanes *w)
{
    uint64_t lowest[MAX_PHASES], highest[MAX_PHASES];
    uint32_t used = 0;
    if (w->threads == NULL) {
        int64_t per_phase = (int64_t)1 << r->phase_shift;
        for (int64_t first = 0; first < w->lanes; first += per_phase) {
            int64_t last = first + per_phase < w->lanes ? first + per_phase : w->lanes;
            value_range range = range_of(w->addr + first, last - first);
            int phase = (int)(first >> r->phase_shift);
            lowest[phase] = range.lowest;
            highest[phase] = range.highest;
            used |= (uint32_t)1 << phase;
        }
    } else {
        for (int64_t k = 0; k < w->lanes; k++) {
            uint64_t a = w->addr[k];
            int phase = (int)(lane_in_warp(w, k) >> r->phase_shift);
            uint32_t bit = (uint32_t)1 << phase;
            if (used & bit) {
                lowest[phase] = a < lowest[phase] ? a : lowest[phase];
                highest[phase] = a > highest[phase] ? a : highest[phase];
            } else {
                lowest[phase] = highest[phase] = a;
                used |= bit;
            }
        }
    }
    int64_t phases = 0;
    for (int phase = 0; phase < MAX_PHASES; phase++) {
        if (!(used & ((uint32_t)1 << phase)))
            continue;
        if (last_unit(highest[phase], r->width, r->bank_shift) - (lowest[phase] >> r->bank_shift) >= BANKS)
            return -1;
        phases++;
    }
    return phases;
}

/* One phase of lanes that each touch one word at the same offset inside it, their addresses
   between lowest and highest: words and addresses correspond one to one, so one tally gives the
   wavefronts and the most lanes on one address. */
static int64_t one_word_lanes(count_scratch *s, const warp_lanes *w, int shift, uint64_t lowest, uint64_t highest,
                              int64_t *most)
{
    const uint64_t *a = w->addr;
    int64_t m = w->lanes, worst = 0, repeats = 1;
    uint64_t *direct = NULL;
    int32_t per_bank[BANKS] = {0};
    uint64_t first_word = lowest >> shift;
    int ascending = 0;
    if ((highest >> shift) - first_word >= DIRECT_SPAN || (direct = direct_begin(s)) == NULL) {
        ascending = 1;
        for (int64_t k = 1; k < m; k++)
            ascending &= a[k] >= a[k - 1];
    }
    if (direct != NULL) {
        for (int64_t k = 0; k < m; k++) {
            uint64_t word = a[k] >> shift;
            int64_t seen = direct_add(direct, s->direct_generation, word - first_word);
            repeats = seen > repeats ? seen : repeats;
            int32_t held = per_bank[word % BANKS] + (seen == 1);
            per_bank[word % BANKS] = held;
            worst = held > worst ? held : worst;
        }
    } else if (ascending) {
        int64_t run = 1;
        for (int64_t k = 0; k < m; k++) {
            if (k > 0 && a[k] == a[k - 1]) {
                run++;
                repeats = run > repeats ? run : repeats;
                continue;
            }
            run = 1;
            int64_t held = ++per_bank[(a[k] >> shift) % BANKS];
            worst = held > worst ? held : worst;
        }
    } else if (hash_begin(s)) {
        for (int64_t k = 0; k < m; k++) {
            uint64_t word = a[k] >> shift;
            int64_t seen = hash_add(s, word);
            repeats = seen > repeats ? seen : repeats;
            int32_t held = per_bank[word % BANKS] + (seen == 1);
            per_bank[word % BANKS] = held;
            worst = held > worst ? held : worst;
        }
    }
    *most = repeats;
    return worst;
}

/* The one-word case of one_word_lanes in a single pass, for atomics (whose contention needs the
   tally whatever the wavefronts) at offset 0 of their words: tallies in a window of DIRECT_SPAN
   words centred on the first lane's. Returns -1, leaving *most, when some lane falls outside the
   window or off the start of its word. */
static int64_t one_word_lanes_in_window(count_scratch *s, const warp_lanes *w, const count_request *r,
                                        int64_t *most)
{
    const uint64_t *a = w->addr;
    int shift = r->bank_shift;
    uint64_t mask = ((uint64_t)1 << shift) - 1, *direct;
    if ((a[0] & mask) != 0 || r->width - 1 > mask || w->lanes > UINT16_MAX || (direct = direct_begin(s)) == NULL)
        return -1;
    /* Lanes outside the window or off a word start leave bits outside `inside` in `reach`. */
    uint64_t generation = s->direct_generation, base = a[0] - (uint64_t)(DIRECT_SPAN / 2) * (mask + 1);
    uint64_t reach = 0, inside = (uint64_t)(DIRECT_SPAN - 1) << shift, highest_entry = generation + 1;
    /* The window starts on a word, so a word's index in it and its bank differ by a fixed rotation
       of the banks, which leaves the most words on one bank as it is. */
    uint16_t per_bank[BANKS];
    int64_t worst = 0;
    memset(per_bank, 0, sizeof per_bank);
    /* One lane: its word's tally (new words count in their bank), four lanes an iteration. */
#define TALLY_LANE(address)                                                                        \
    do {                                                                                           \
        uint64_t offset = (address) - base, index = (offset >> shift) & (DIRECT_SPAN - 1);         \
        reach |= offset;                                                                           \
        uint64_t entry = direct[index];                                                            \
        int fresh = entry < generation;                                                            \
        entry = (fresh ? generation : entry) + 1;                                                  \
        direct[index] = entry;                                                                     \
        highest_entry = entry > highest_entry ? entry : highest_entry;                             \
        int64_t held = per_bank[index % BANKS] + fresh;                                            \
        per_bank[index % BANKS] = (uint16_t)held;                                                  \
        worst = held > worst ? held : worst;                                                       \
    } while (0)
    int64_t k = 0;
    for (; k + 3 < w->lanes; k += 4) {
        uint64_t x0 = a[k], x1 = a[k + 1], x2 = a[k + 2], x3 = a[k + 3];
        TALLY_LANE(x0);
        TALLY_LANE(x1);
        TALLY_LANE(x2);
        TALLY_LANE(x3);
    }
    for (; k < w->lanes; k++)
        TALLY_LANE(a[k]);
#undef TALLY_LANE
    if ((reach & ~inside) != 0)
        return -1;
    *most = (int64_t)(highest_entry - generation);
    return worst;
}

/* Wavefronts of the warp from each lane's bank words, phase by phase. */
static int64_t words_by_phase(const count_request *r, count_scratch *s, const warp_lanes *w)
{
    uint64_t bank_mask = ((uint64_t)1 << r->bank_shift) - 1;
    const uint64_t *a = w->addr;
    int64_t m = 0;
    int phases_ascend = 1;
    uint8_t previous_phase = 0;
    for (int64_t k = 0; k < w->lanes; k++) {
        uint8_t phase = (uint8_t)(lane_in_warp(w, k) >> r->phase_shift);
        phases_ascend &= phase >= previous_phase;
        previous_phase = phase;
        uint64_t first = a[k] >> r->bank_shift, words = (((a[k] & bank_mask) + r->width - 1) >> r->bank_shift) + 1;
        for (uint64_t word = 0; word < words; word++) {
            s->values[m] = first + word;
            s->phase[m] = phase;
            m++;
        }
    }
    const uint64_t *words = s->values;
    int64_t ends[MAX_PHASES + 1] = {0};
    if (phases_ascend) {
        for (int64_t i = 0; i < m; i++)
            ends[s->phase[i]] = i + 1;
        for (int p = 1; p < MAX_PHASES; p++)
            ends[p] = ends[p] > ends[p - 1] ? ends[p] : ends[p - 1];
    } else {
        /* Stable counting sort by phase. */
        for (int64_t i = 0; i < m; i++)
            ends[s->phase[i] + 1]++;
        for (int p = 0; p < MAX_PHASES; p++)
            ends[p + 1] += ends[p];
        for (int64_t i = 0; i < m; i++)
            s->regrouped[ends[s->phase[i]]++] = s->values[i];
        words = s->regrouped;
    }
    /* Phase p now holds words [ends[p - 1], ends[p]). */
    int64_t total = 0, begin = 0;
    for (int p = 0; p < MAX_PHASES; p++) {
        if (ends[p] > begin)
            total += phase_wavefronts(s, words + begin, ends[p] - begin);
        begin = ends[p];
    }
    return total;
}

/* Lowest and highest of k >= 1 addresses, two at a time. */
static inline void lanes_between(const uint64_t *a, int64_t k, uint64_t *lowest, uint64_t *highest)
{
    uint64_t low = a[0], high = a[0];
    for (int64_t i = k & 1; i < k; i += 2) {
        uint64_t x = a[i], y = a[i + 1];
        uint64_t small = x < y ? x : y, big = x < y ? y : x;
        low = small < low ? small : low;
        high = big > high ? big : high;
    }
    *lowest = low;
    *highest = high;
}

/* Wavefronts of a one-phase warp whose words span 32 or more (lowest, highest: its addresses);
   sets *most when it comes for free. */
static int64_t conflicting_phase(const count_request *r, count_scratch *s, const warp_lanes *w, uint64_t lowest,
                                 uint64_t highest, int64_t *most)
{
    uint64_t bank_mask = ((uint64_t)1 << r->bank_shift) - 1, differ = 0;
    const uint64_t *a = w->addr;
    for (int64_t k = 1; k < w->lanes; k++)
        differ |= a[k] ^ a[0];
    if ((differ & bank_mask) == 0 && (a[0] & bank_mask) + r->width - 1 <= bank_mask)
        return one_word_lanes(s, w, r->bank_shift, lowest, highest, most);
    return words_by_phase(r, s, w);
}

/* Wavefronts of the warp; sets *most (the most lanes on one address) when it comes for free. */
static int64_t warp_wavefronts(const count_request *r, count_scratch *s, const warp_lanes *w, int want_most,
                               int64_t *most)
{
    if (r->phase_shift == 5) {
        int64_t tallied = want_most ? one_word_lanes_in_window(s, w, r, most) : -1;
        if (tallied >= 0)
            return tallied;
        uint64_t lowest, highest;
        lanes_between(w->addr, w->lanes, &lowest, &highest);
        if (last_unit(highest, r->width, r->bank_shift) - (lowest >> r->bank_shift) < BANKS)
            return 1;
        return conflicting_phase(r, s, w, lowest, highest, most);
    }
    int64_t quick = conflict_free_phases(r, w);
    return quick >= 0 ? quick : words_by_phase(r, s, w);
}

/* Distinct sectors of the k >= 1 ranges [a, a + width) (width <= 32). Contiguous ranges span
   their sectors; otherwise, while every range is aligned to its width (and so lies in one
   sector), they are counted in one pass if they ascend, else marked in a window of 128 sectors
   around one of them when they all fall inside it; failing that, collected and marked. */
static int64_t sectors_of(count_scratch *s, const uint64_t *a, int64_t k, uint64_t width)
{
    /* Steps below 32 bytes (so never down) leave no sector between the first and the last untouched. */
    uint64_t steps = 0;
    int64_t next = 1;
    for (; next + 3 < k; next += 4)
        steps |= (a[next] - a[next - 1]) | (a[next + 1] - a[next]) | (a[next + 2] - a[next + 1])
            | (a[next + 3] - a[next + 2]);
    for (; next < k; next++)
        steps |= a[next] - a[next - 1];
    if (steps < SECTOR_BYTES)
        return (int64_t)(last_unit(a[k - 1], width, SECTOR_SHIFT) - (a[0] >> SECTOR_SHIFT)) + 1;
    uint64_t address_bits = 0, previous = a[0] >> SECTOR_SHIFT;
    int64_t distinct = 1, i = 0;
    for (; i < k; i++) {
        uint64_t sector = a[i] >> SECTOR_SHIFT;
        if (sector < previous)
            break;
        distinct += sector != previous;
        previous = sector;
        address_bits |= a[i];
    }
    if (i == k && (address_bits & (width - 1)) == 0)
        return distinct;
    if (i < k) {
        /* Sectors outside the window leave a bit at or above 128 in `outside`. */
        uint64_t base = previous - 64, low = 0, high = 0, outside = 0;
        address_bits = 0;
        for (i = 0; i < k; i++) {
            uint64_t offset = (a[i] >> SECTOR_SHIFT) - base, bit = (uint64_t)1 << (offset & 63);
            outside |= offset;
            low |= offset & 64 ? 0 : bit;
            high |= offset & 64 ? bit : 0;
            address_bits |= a[i];
        }
        if (outside < 128 && (address_bits & (width - 1)) == 0)
            return bit_count(low) + bit_count(high);
    }
    int64_t m = 0;
    value_range range = {UINT64_MAX, 0, 0};
    for (i = 0; i < k; i++) {
        uint64_t first = a[i] >> SECTOR_SHIFT, last = last_unit(a[i], width, SECTOR_SHIFT);
        range.lowest = first < range.lowest ? first : range.lowest;
        range.highest = last > range.highest ? last : range.highest;
        s->values[m++] = first;
        if (last != first)
            s->values[m++] = last;
    }
    return distinct_in(s, s->values, m, range);
}

/* local_sectors_of for lanes whose pieces are aligned: piece j of lane l lies in sector (word + j) * 4 + l / 8,
   so each group of 8 lanes needs as many sectors as the distinct words its lanes touch, kept as bits within 32
   words either side of the group's first. Returns -1 when a word falls outside that span, a piece is off its
   alignment, or an address is so high that the sector number would wrap (the general path counts those). */
static int64_t local_sectors_by_group(const warp_lanes *w, uint64_t words, uint64_t piece)
{
    const uint64_t *a = w->addr;
    uint64_t base[4] = {0, 0, 0, 0}, bits[4] = {0, 0, 0, 0}, span = ((uint64_t)1 << words) - 1;
    uint64_t address_bits = 0, outside = 0;
    for (int64_t k = 0; k < w->lanes; k++) {
        unsigned group = (unsigned)(w->threads ? w->threads[k] & (WARP_LANES - 1) : k) >> 3;
        uint64_t word = a[k] >> 2;
        if (bits[group] == 0)
            base[group] = word - 32;
        uint64_t offset = word - base[group];
        outside |= offset | (offset + words - 1);
        address_bits |= a[k];
        bits[group] |= span << (offset & 63);
    }
    if (outside >= 64 || (address_bits & (piece - 1)) != 0 || address_bits >= ((uint64_t)1 << 58))
        return -1;
    return bit_count(bits[0]) + bit_count(bits[1]) + bit_count(bits[2]) + bit_count(bits[3]);
}

/* Local memory interleaves threads: 32-bit word j of lane l lives at byte (j * 32 + l) * 4. Each
   lane's 32-bit pieces are laid out word by word, so that a warp reading one offset meets its
   sectors in ascending order, and counted by sectors_of. */
static int64_t local_sectors_of(count_scratch *s, const warp_lanes *w, uint64_t width)
{
    uint64_t words = width > LOCAL_WORD_BYTES ? width / LOCAL_WORD_BYTES : 1;
    uint64_t piece = width < LOCAL_WORD_BYTES ? width : LOCAL_WORD_BYTES;
    const uint64_t *a = w->addr;
    /* Lanes at one aligned offset a: piece j of lane l lies in sector ((a >> 2) + j) * 4 + l / 8
       (modulo 2**59), so the sectors are the words times the groups of 8 lanes that take part. */
    int64_t same = 1;
    while (same < w->lanes && a[same] == a[0])
        same++;
    if (same == w->lanes && (a[0] & (piece - 1)) == 0) {
        if (w->threads == NULL)
            return (int64_t)words * ((w->lanes + 7) / 8);
        uint64_t groups = 0;
        for (int64_t k = 0; k < w->lanes; k++)
            groups |= (uint64_t)1 << ((w->threads[k] & (WARP_LANES - 1)) >> 3);
        return (int64_t)words * bit_count(groups);
    }
    int64_t grouped = local_sectors_by_group(w, words, piece);
    if (grouped >= 0)
        return grouped;
    uint64_t *laid_out = s->regrouped;
    int64_t m = 0;
    for (uint64_t word = 0; word < words; word++) {
        if (w->threads == NULL)
            for (int64_t k = 0; k < w->lanes; k++)
                laid_out[m++] = (((a[k] >> 2) + word) * WARP_LANES + (uint64_t)k) * LOCAL_WORD_BYTES + (a[k] & 3);
        else
            for (int64_t k = 0; k < w->lanes; k++)
                laid_out[m++] = (((a[k] >> 2) + word) * WARP_LANES + (uint64_t)(w->threads[k] & (WARP_LANES - 1)))
                    * LOCAL_WORD_BYTES + (a[k] & 3);
    }
    return sectors_of(s, laid_out, m, piece);
}

/* The warp's count; sets *most when the count yields it on the way (or wants it, want_most). */
static int64_t warp_count(const count_request *r, count_scratch *s, const warp_lanes *w, int want_most,
                          int64_t *most)
{
    switch (r->what) {
    case GM_COUNT_SHARED_WAVEFRONTS: return warp_wavefronts(r, s, w, want_most, most);
    case GM_COUNT_GLOBAL_SECTORS: return sectors_of(s, w->addr, w->lanes, r->width);
    case GM_COUNT_LOCAL_SECTORS: return local_sectors_of(s, w, r->width);
    case GM_COUNT_DISTINCT_ADDRESSES: return distinct_values(s, w->addr, w->lanes);
    default: return *most = most_repeated(s, w->addr, w->lanes);
    }
}

/* What the warp's lanes would cost at best: a wavefront per 128 bytes' worth of lanes (fewer where
   broadcasts make the warp cheaper still), the sectors of lanes * width contiguous bytes (local: of
   each 32-bit piece), one address. */
static int64_t warp_ideal(const count_request *r, const warp_lanes *w, int64_t count)
{
    if (r->what == GM_COUNT_SHARED_WAVEFRONTS) {
        int64_t groups;
        if (w->threads == NULL) {
            groups = (w->lanes + ((int64_t)1 << r->ideal_shift) - 1) >> r->ideal_shift;
        } else {
            uint64_t used = 0;
            for (int64_t k = 0; k < w->lanes; k++)
                used |= (uint64_t)1 << (lane_in_warp(w, k) >> r->ideal_shift);
            groups = bit_count(used);
        }
        return groups < count ? groups : count;
    }
    if (r->what == GM_COUNT_GLOBAL_SECTORS)
        return (w->lanes * (int64_t)r->width + SECTOR_BYTES - 1) / SECTOR_BYTES;
    if (r->what == GM_COUNT_LOCAL_SECTORS) {
        int64_t words = r->width > LOCAL_WORD_BYTES ? (int64_t)r->width / LOCAL_WORD_BYTES : 1;
        int64_t piece = r->width > LOCAL_WORD_BYTES ? LOCAL_WORD_BYTES : (int64_t)r->width;
        return words * ((w->lanes * piece + SECTOR_BYTES - 1) / SECTOR_BYTES);
    }
    return 1;
}

/* Stable merge sort of lane indices by warp. */
static void sort_lanes_by_warp(int64_t *lanes, int64_t *scratch, const int64_t *warp, int64_t n)
{
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n;
            int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                scratch[k++] = warp[lanes[j]] < warp[lanes[i]] ? lanes[j++] : lanes[i++];
            while (i < mid)
                scratch[k++] = lanes[i++];
            while (j < hi)
                scratch[k++] = lanes[j++];
        }
        memcpy(lanes, scratch, (size_t)n * sizeof *lanes);
    }
}

static int log2_of(int64_t power_of_two)
{
    int shift = 0;
    while ((1ll << shift) < power_of_two)
        shift++;
    return shift;
}

/* Where gm_count puts each warp's results. */
typedef struct {
    int64_t *warps;
    int64_t *counts;
    int64_t *most;
    int64_t cap;
    gm_count_totals sums;
} count_output;

static inline int record_warp(count_output *out, int64_t warp, int64_t count, int64_t ideal, int64_t most)
{
    if (out->warps != NULL) {
        if (out->sums.warps >= out->cap)
            return 0;
        out->warps[out->sums.warps] = warp;
        out->counts[out->sums.warps] = count;
        if (out->most != NULL)
            out->most[out->sums.warps] = most;
    }
    out->sums.warps++;
    out->sums.count += count;
    out->sums.ideal += ideal;
    out->sums.most += most;
    out->sums.most_max = most > out->sums.most_max ? most : out->sums.most_max;
    return 1;
}

/* One warp of lanes all at address a: its count and ideal from how many lanes it has and how many
   phases (shared) or groups of 8 lanes (local) they fall in, and in how many groups of lanes that
   fill a wavefront (ideal_groups). */
static void one_address_warp(const count_request *r, uint64_t a, int64_t lanes, int64_t groups,
                             int64_t ideal_groups, int64_t *count, int64_t *ideal)
{
    uint64_t words = r->width > LOCAL_WORD_BYTES ? r->width / LOCAL_WORD_BYTES : 1;
    uint64_t piece = r->width < LOCAL_WORD_BYTES ? r->width : LOCAL_WORD_BYTES;
    switch (r->what) {
    case GM_COUNT_SHARED_WAVEFRONTS:
        /* One lane's words, at most 16 consecutive ones, fall in distinct banks. */
        *count = groups;
        *ideal = ideal_groups < groups ? ideal_groups : groups;
        break;
    case GM_COUNT_GLOBAL_SECTORS:
        *count = (int64_t)(last_unit(a, r->width, SECTOR_SHIFT) - (a >> SECTOR_SHIFT)) + 1;
        *ideal = (lanes * (int64_t)r->width + SECTOR_BYTES - 1) / SECTOR_BYTES;
        break;
    case GM_COUNT_LOCAL_SECTORS:
        /* Piece j of lane l lies in sector ((a >> 2) + j) * 4 + l / 8 (modulo 2**59). */
        *count = (int64_t)words * groups;
        *ideal = (int64_t)words * ((lanes * (int64_t)piece + SECTOR_BYTES - 1) / SECTOR_BYTES);
        break;
    case GM_COUNT_DISTINCT_ADDRESSES:
        *count = *ideal = 1;
        break;
    default:
        *count = lanes;
        *ideal = 1;
    }
}

/* count_one_address for ascending threads when only totals are wanted: in a warp of ascending
   threads, the groups its lanes fall in are the changes of thread >> shift from lane to lane.
   Returns 1 when done, 0 when the threads do not ascend (the sums are then void), or
   GM_BAD_ARGUMENT. */
static int count_one_address_ascending(const count_request *r, uint64_t a, const int64_t *threads, int64_t n,
                                       int group_shift, int with_most, count_output *out)
{
    /* Threads of one warp differ below bit 5, of one group below bit group_shift. */
    uint64_t group_span = (uint64_t)1 << group_shift, ideal_span = (uint64_t)1 << r->ideal_shift;
    int64_t previous = threads[0], warp_start = 0, groups = 1, ideal_groups = 1, count, ideal;
    int descending = 0;
    for (int64_t k = 1; k < n; k++) {
        int64_t thread = threads[k];
        uint64_t differ = (uint64_t)(thread ^ previous);
        descending |= thread < previous;
        if (differ >= WARP_LANES) {
            one_address_warp(r, a, k - warp_start, groups, ideal_groups, &count, &ideal);
            record_warp(out, previous >> 5, count, ideal, with_most ? k - warp_start : 0);
            warp_start = k;
            groups = ideal_groups = 0;
        }
        groups += differ >= group_span;
        ideal_groups += differ >= ideal_span;
        previous = thread;
    }
    if (descending)
        return 0;
    if (threads[0] < 0 || previous >= THREAD_LIMIT)
        return GM_BAD_ARGUMENT;
    one_address_warp(r, a, n - warp_start, groups, ideal_groups, &count, &ideal);
    record_warp(out, previous >> 5, count, ideal, with_most ? n - warp_start : 0);
    return 1;
}

/* How many warps of strictly ascending threads have more than m lanes: lane k shares its warp with lane k - m,
   which starts its warp. */
static inline uint64_t warps_longer_than(const int64_t *threads, int64_t n, int64_t m)
{
    if (n <= m)
        return 0;
    uint64_t longer = ((uint64_t)(threads[m] ^ threads[0]) < WARP_LANES);
    for (int64_t k = m + 1; k < n; k++)
        longer += ((uint64_t)(threads[k] ^ threads[k - m]) < WARP_LANES)
            & ((uint64_t)(threads[k - m] ^ threads[k - m - 1]) >= WARP_LANES);
    return longer;
}

/* count_one_address_ascending's totals for local sectors and shared wavefronts without contention, from sums
   over the lanes that vectorise: new warps and groups are where a thread's bits above them change, and a warp's
   ideal sectors (ceil(lanes * piece / 32)) count the warps longer than each multiple of 32 / piece lanes.
   Returns 0, counting nothing, unless the threads strictly ascend below 2**48. */
VECTORISED static int count_one_address_ascending_sums(const count_request *r, const int64_t *threads, int64_t n,
                                                       int group_shift, count_output *out)
{
    uint64_t group_span = (uint64_t)1 << group_shift, thread_bits = (uint64_t)threads[0];
    uint64_t warps = 1, groups = 1, not_ascending = 0;
    for (int64_t k = 1; k < n; k++) {
        uint64_t differ = (uint64_t)(threads[k] ^ threads[k - 1]);
        warps += differ >= WARP_LANES;
        groups += differ >= group_span;
        not_ascending |= threads[k] <= threads[k - 1];
        thread_bits |= (uint64_t)threads[k];
    }
    if (not_ascending || thread_bits >= (uint64_t)THREAD_LIMIT)
        return 0;
    uint64_t words = 1, ideal = groups;
    if (r->what == GM_COUNT_LOCAL_SECTORS) {
        uint64_t piece = r->width < LOCAL_WORD_BYTES ? r->width : LOCAL_WORD_BYTES;
        words = r->width > LOCAL_WORD_BYTES ? r->width / LOCAL_WORD_BYTES : 1;
        ideal = warps;
        for (int64_t m = SECTOR_BYTES / (int64_t)piece; m < WARP_LANES; m += SECTOR_BYTES / (int64_t)piece)
            ideal += warps_longer_than(threads, n, m);
    }
    out->sums.warps += (int64_t)warps;
    out->sums.count += (int64_t)(words * groups);
    out->sums.ideal += (int64_t)(words * ideal);
    return 1;
}

/* Every lane at address a: each warp's counts follow from how many of its lanes there are and
   which phases (shared) or groups of 8 lanes (local) they fall in. Returns 1 when done, 0 when the
   general path must count (threads not grouped by warp, or local pieces off their alignment), or
   GM_BAD_ARGUMENT. */
static int count_one_address(const count_request *r, uint64_t a, const int64_t *threads, int64_t n,
                             int with_most, count_output *out)
{
    uint64_t piece = r->width < LOCAL_WORD_BYTES ? r->width : LOCAL_WORD_BYTES;
    if (r->what == GM_COUNT_LOCAL_SECTORS && (a & (piece - 1)) != 0)
        return 0;
    int group_shift = r->what == GM_COUNT_SHARED_WAVEFRONTS ? r->phase_shift : 3;
    int ideal_shift = r->ideal_shift;
    /* Shared lanes' ideal wavefronts, min(ideal groups, groups) a warp, are its groups: phases are never
       narrower than wavefronts. */
    if (threads != NULL && out->warps == NULL && !with_most && (r->what == GM_COUNT_LOCAL_SECTORS
            || (r->what == GM_COUNT_SHARED_WAVEFRONTS && ideal_shift <= group_shift))
            && count_one_address_ascending_sums(r, threads, n, group_shift, out))
        return 1;
    if (threads != NULL && out->warps == NULL) {
        int done = count_one_address_ascending(r, a, threads, n, group_shift, with_most, out);
        if (done != 0)
            return done;
        memset(&out->sums, 0, sizeof out->sums);
    }
    uint64_t thread_bits = 0;
    for (int64_t start = 0; start < n;) {
        int64_t warp = (threads ? threads[start] : start) >> 5, end = start;
        uint64_t groups = 0, ideal_groups = 0;
        if (threads == NULL) {
            end = start + WARP_LANES < n ? start + WARP_LANES : n;
            groups = ((uint64_t)1 << (((end - start - 1) >> group_shift) + 1)) - 1;
            ideal_groups = ((uint64_t)1 << (((end - start - 1) >> ideal_shift) + 1)) - 1;
        } else {
            for (; end < n && threads[end] >> 5 == warp; end++) {
                thread_bits |= (uint64_t)threads[end];
                groups |= (uint64_t)1 << ((threads[end] & (WARP_LANES - 1)) >> group_shift);
                ideal_groups |= (uint64_t)1 << ((threads[end] & (WARP_LANES - 1)) >> ideal_shift);
            }
            if (end < n && threads[end] >> 5 < warp)
                return 0;
        }
        int64_t lanes = end - start, count, ideal;
        one_address_warp(r, a, lanes, bit_count(groups), bit_count(ideal_groups), &count, &ideal);
        if (!record_warp(out, warp, count, ideal, with_most ? lanes : 0))
            return GM_BAD_ARGUMENT;
        start = end;
    }
    return thread_bits >= (uint64_t)THREAD_LIMIT ? GM_BAD_ARGUMENT : 1;
}

/* Whether the n >= 1 values all equal the first, a vectorisable block of 64 at a time. */
VECTORISED static int all_equal(const uint64_t *v, int64_t n)
{
    uint64_t first = v[0], differ = 0;
    int64_t k = 0;
    for (; k + 64 <= n; k += 64) {
        for (int64_t j = 0; j < 64; j++)
            differ |= v[k + j] ^ first;
        if (differ != 0)
            return 0;
    }
    for (; k < n; k++)
        differ |= v[k] ^ first;
    return differ == 0;
}

/* Totals of a call whose lanes are threads 0..n-1 (whole warps of 32 in order), when no per-warp
   results are wanted, without the general loop's per-warp bookkeeping; one-phase shared warps
   without bank conflicts are counted inline. */
VECTORISED static int count_convergent(const count_request *r, const uint64_t *addr, int64_t n, int with_most,
                            count_scratch *s, gm_count_totals *sums)
{
    if (!scratch_reserve(s, WARP_LANES))
        return 0;
    if (r->what == GM_COUNT_GLOBAL_SECTORS && !with_most) {
        /* Steps below 32 bytes all through the call: every warp spans its sectors. */
        uint64_t steps = 0;
        int64_t next = 1;
        for (; next + 3 < n; next += 4)
            steps |= (addr[next] - addr[next - 1]) | (addr[next + 1] - addr[next])
                | (addr[next + 2] - addr[next + 1]) | (addr[next + 3] - addr[next + 2]);
        for (; next < n; next++)
            steps |= addr[next] - addr[next - 1];
        if (steps < SECTOR_BYTES) {
            for (int64_t start = 0; start < n; start += WARP_LANES) {
                int64_t lanes = n - start < WARP_LANES ? n - start : WARP_LANES;
                sums->warps++;
                sums->count += (int64_t)(last_unit(addr[start + lanes - 1], r->width, SECTOR_SHIFT)
                                         - (addr[start] >> SECTOR_SHIFT)) + 1;
                sums->ideal += (lanes * (int64_t)r->width + SECTOR_BYTES - 1) / SECTOR_BYTES;
            }
            return 1;
        }
    }
    int one_phase = r->what == GM_COUNT_SHARED_WAVEFRONTS && r->phase_shift == 5;
    for (int64_t start = 0; start < n; start += WARP_LANES) {
        const uint64_t *a = addr + start;
        int64_t lanes = n - start < WARP_LANES ? n - start : WARP_LANES, count = -1, most = -1;
        warp_lanes w = {a, NULL, lanes};
        if (one_phase) {
            if (with_most)
                count = one_word_lanes_in_window(s, &w, r, &most);
            if (count < 0) {
                uint64_t lowest, highest;
                lanes_between(a, lanes, &lowest, &highest);
                count = last_unit(highest, r->width, r->bank_shift) - (lowest >> r->bank_shift) < BANKS ? 1
                    : conflicting_phase(r, s, &w, lowest, highest, &most);
            }
        } else if (r->what == GM_COUNT_GLOBAL_SECTORS) {
            count = sectors_of(s, a, lanes, r->width);
        } else {
            count = warp_count(r, s, &w, with_most, &most);
        }
        if (!with_most)
            most = 0;
        else if (most < 0)
            most = most_repeated(s, a, lanes);
        if (s->failed)
            return 0;
        sums->warps++;
        sums->count += count;
        sums->ideal += warp_ideal(r, &w, count);
        sums->most += most;
        sums->most_max = most > sums->most_max ? most : sums->most_max;
    }
    return 1;
}

int64_t gm_count(int what, const uint64_t *addr, const int64_t *threads, int64_t n, int width, int bank_bytes,
                 int with_most, int64_t *warps_out, int64_t *counts_out, int64_t *most_out, int64_t out_cap,
                 gm_count_totals *totals)
{
    if (what < GM_COUNT_SHARED_WAVEFRONTS || what > GM_COUNT_LOCAL_SECTORS || n < 0 || !valid_width(width))
        return GM_BAD_ARGUMENT;
    if (bank_bytes < 1 || bank_bytes > 16 || (bank_bytes & (bank_bytes - 1)) != 0)
        return GM_BAD_ARGUMENT;
    if ((warps_out == NULL) != (counts_out == NULL) || (most_out != NULL && (warps_out == NULL || !with_most)))
        return GM_BAD_ARGUMENT;
    if (n > 0 && (addr == NULL || (warps_out != NULL && out_cap < 0)))
        return GM_BAD_ARGUMENT;
    if (n >= THREAD_LIMIT || n > INT64_MAX / VALUES_PER_LANE / (int64_t)sizeof(uint64_t))
        return GM_BAD_ARGUMENT;
    if (totals != NULL)
        memset(totals, 0, sizeof *totals);
    if (n == 0)
        return 0;

    /* Measured on the H100 (tests/stats_patterns): a warp's 8-byte accesses are served as one phase,
       its 16-byte ones as two half-warps; each phase costs the most distinct words one bank holds. */
    int64_t lanes_per_phase = 2 * WARP_LANES * (int64_t)bank_bytes / width;
    int64_t lanes_per_wavefront = WARP_LANES * (int64_t)bank_bytes / width;
    count_request request = {
        .what = what, .width = (uint64_t)width, .bank_shift = log2_of(bank_bytes),
        .phase_shift = log2_of(lanes_per_phase < WARP_LANES ? lanes_per_phase : WARP_LANES),
        .ideal_shift = log2_of(lanes_per_wavefront < WARP_LANES ? lanes_per_wavefront : WARP_LANES),
    };
    count_output out = {warps_out, counts_out, most_out, out_cap, {0, 0, 0, 0, 0}};
    if (all_equal(addr, n)) {
        int done = count_one_address(&request, addr[0], threads, n, with_most, &out);
        if (done == GM_BAD_ARGUMENT)
            return GM_BAD_ARGUMENT;
        if (done) {
            if (totals != NULL)
                *totals = out.sums;
            return out.sums.warps;
        }
        memset(&out.sums, 0, sizeof out.sums);
    }

    if (threads == NULL && warps_out == NULL) {
        kept_scratch.failed = 0;
        if (!count_convergent(&request, addr, n, with_most, &kept_scratch, &out.sums))
            return GM_BAD_ARGUMENT;
        if (totals != NULL)
            *totals = out.sums;
        return out.sums.warps;
    }

    int grouped = 1;
    if (threads != NULL) {
        /* A negative thread or one of 2**48 or more sets a bit from 48 up in thread_bits. */
        uint64_t thread_bits = 0;
        int64_t previous_warp = 0;
        for (int64_t lane = 0; lane < n; lane++) {
            int64_t warp_of_lane = threads[lane] >> 5;
            thread_bits |= (uint64_t)threads[lane];
            grouped &= warp_of_lane >= previous_warp;
            previous_warp = warp_of_lane;
        }
        if (thread_bits >= (uint64_t)THREAD_LIMIT)
            return GM_BAD_ARGUMENT;
    }

    int64_t *warp = NULL, *order = NULL, *merge_scratch = NULL;
    count_scratch *scratch = &kept_scratch;
    scratch->failed = 0;
    int64_t result = GM_BAD_ARGUMENT;
    if (!grouped) {
        warp = malloc((size_t)n * sizeof *warp);
        order = malloc((size_t)n * sizeof *order);
        merge_scratch = malloc((size_t)n * sizeof *merge_scratch);
        if (warp == NULL || order == NULL || merge_scratch == NULL)
            goto done;
        for (int64_t lane = 0; lane < n; lane++) {
            warp[lane] = threads[lane] >> 5;
            order[lane] = lane;
        }
        sort_lanes_by_warp(order, merge_scratch, warp, n);
    }

    for (int64_t start = 0; start < n;) {
        int64_t this_warp, end;
        if (threads == NULL) {
            this_warp = start / WARP_LANES;
            end = start + WARP_LANES < n ? start + WARP_LANES : n;
        } else if (order == NULL) {
            this_warp = threads[start] >> 5;
            for (end = start + 1; end < n && threads[end] >> 5 == this_warp; end++)
                ;
        } else {
            this_warp = threads[order[start]] >> 5;
            for (end = start + 1; end < n && threads[order[end]] >> 5 == this_warp; end++)
                ;
        }
        /* Per-bank tallies are 32-bit. */
        if (end - start > INT32_MAX / VALUES_PER_LANE || !scratch_reserve(scratch, end - start))
            goto done;
        warp_lanes lanes = {addr + start, threads ? threads + start : NULL, end - start};
        if (order != NULL) {
            for (int64_t k = start; k < end; k++) {
                scratch->lane_addr[k - start] = addr[order[k]];
                scratch->lane_threads[k - start] = threads[order[k]];
            }
            lanes.addr = scratch->lane_addr;
            lanes.threads = scratch->lane_threads;
        }
        int64_t most = -1;
        int64_t count = warp_count(&request, scratch, &lanes, with_most, &most);
        if (!with_most)
            most = 0;
        else if (most < 0)
            most = most_repeated(scratch, lanes.addr, lanes.lanes);
        if (scratch->failed || !record_warp(&out, this_warp, count, warp_ideal(&request, &lanes, count), most))
            goto done;
        start = end;
    }
    if (totals != NULL)
        *totals = out.sums;
    result = out.sums.warps;
done:
    free(warp);
    free(order);
    free(merge_scratch);
    if (scratch->capacity > KEPT_VALUES) {
        scratch_free(scratch);
        memset(scratch, 0, sizeof *scratch);
    }
    return result;
}

