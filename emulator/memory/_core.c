/* gpuemu memory core: every lane's access is resolved and bounds-checked before any byte moves. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "_core.h"

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
    if (mem->global_bytes == NULL || offset > mem->global_len || size > mem->global_len - offset)
        return GM_FAULT_BAD_LAYOUT;
    /* Remember this allocation: later lanes inside it skip every check but alignment. */
    if (start >= mem->null_limit) {
        ctx->fast_start = start;
        ctx->fast_count = size - (uint64_t)ctx->width + 1;
        ctx->fast_base = mem->global_bytes + offset;
    }
    *where = mem->global_bytes + offset + inside;
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
        int64_t thread = threads ? threads[lane] : lane;
        uint8_t *where;
        int32_t resolved;
        int kind = resolve(&ctx, addr[lane], thread, &where, &resolved);
        if (kind != 0) {
            fault->lane = lane;
            fault->kind = kind;
            fault->space = resolved;
            return lane;
        }
    }
    return -1;
}

int gm_load(const gm_memory *mem, int space, const uint64_t *addr, const int64_t *threads,
            int64_t n, int width, uint8_t *out, uint64_t out_len, gm_fault *fault)
{
    if (!check_common(mem, space, addr, n, fault) || !valid_width(width))
        return GM_BAD_ARGUMENT;
    if ((uint64_t)n > out_len / (uint64_t)width || (n > 0 && out == NULL))
        return GM_BAD_ARGUMENT;
    lane_context ctx;
    context_init(&ctx, mem, space, width, 0);
    for (int64_t lane = 0; lane < n; lane++) {
        int64_t thread = threads ? threads[lane] : lane;
        uint8_t *where;
        int32_t resolved;
        int kind = resolve(&ctx, addr[lane], thread, &where, &resolved);
        if (kind != 0) {
            fault->lane = lane;
            fault->kind = kind;
            fault->space = resolved;
            return GM_FAULT;
        }
        copy_bytes(out + (uint64_t)lane * (uint64_t)width, where, width);
    }
    return GM_OK;
}

int gm_store(const gm_memory *mem, int space, const uint64_t *addr, const int64_t *threads,
             int64_t n, int width, const uint8_t *data, uint64_t data_len, gm_fault *fault)
{
    if (!check_common(mem, space, addr, n, fault) || !valid_width(width))
        return GM_BAD_ARGUMENT;
    if ((uint64_t)n > data_len / (uint64_t)width || (n > 0 && data == NULL))
        return GM_BAD_ARGUMENT;
    if (validate(mem, space, addr, threads, n, width, 1, fault) >= 0)
        return GM_FAULT;
    lane_context ctx;
    context_init(&ctx, mem, space, width, 1);
    /* Lanes write in index order, so when several lanes store to the same bytes the highest lane wins. */
    for (int64_t lane = 0; lane < n; lane++) {
        int64_t thread = threads ? threads[lane] : lane;
        uint8_t *where;
        int32_t resolved;
        if (resolve(&ctx, addr[lane], thread, &where, &resolved) != 0)
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

static uint64_t integer_apply(int op, int type, uint64_t old, uint64_t a, uint64_t mask)
{
    int is_signed = type == GM_TYPE_S32 || type == GM_TYPE_S64;
    uint64_t sign_bit = (mask >> 1) + 1;
    switch (op) {
    case GM_OP_ADD: return (old + a) & mask;
    case GM_OP_EXCH: return a;
    case GM_OP_AND: return old & a;
    case GM_OP_OR: return old | a;
    case GM_OP_XOR: return old ^ a;
    case GM_OP_INC: return old >= a ? 0 : (old + 1) & mask;
    case GM_OP_DEC: return (old == 0 || old > a) ? a : old - 1;
    case GM_OP_MIN:
    case GM_OP_MAX: {
        uint64_t ko = is_signed ? old ^ sign_bit : old, ka = is_signed ? a ^ sign_bit : a;
        int take_a = op == GM_OP_MIN ? ka < ko : ka > ko;
        return take_a ? a : old;
    }
    default: return old;
    }
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
    default: return integer_apply(op, type, old, a, mask);
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
        int64_t thread = threads ? threads[lane] : lane;
        uint8_t *where;
        int32_t resolved;
        if (resolve(&ctx, addr[lane], thread, &where, &resolved) != 0)
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

typedef struct {
    uint64_t group;
    uint64_t value;
} count_entry;

static int entry_less(const count_entry *x, const count_entry *y)
{
    return x->group < y->group || (x->group == y->group && x->value < y->value);
}

static int entry_compare(const void *x, const void *y)
{
    const count_entry *p = x, *q = y;
    return entry_less(p, q) ? -1 : entry_less(q, p) ? 1 : 0;
}

static void sort_entries(count_entry *entries, int64_t n)
{
    if (n > 64) {
        qsort(entries, (size_t)n, sizeof *entries, entry_compare);
        return;
    }
    for (int64_t i = 1; i < n; i++) {
        count_entry item = entries[i];
        int64_t j = i;
        while (j > 0 && entry_less(&item, &entries[j - 1])) {
            entries[j] = entries[j - 1];
            j--;
        }
        entries[j] = item;
    }
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

static int64_t count_warp(int what, const count_entry *entries, int64_t m)
{
    int64_t total = 0;
    if (what == GM_COUNT_MAX_SAME_ADDRESS) {
        int64_t run = 0;
        for (int64_t i = 0; i < m; i++) {
            run = (i > 0 && entries[i].value == entries[i - 1].value) ? run + 1 : 1;
            if (run > total)
                total = run;
        }
        return total;
    }
    if (what != GM_COUNT_SHARED_WAVEFRONTS) {
        for (int64_t i = 0; i < m; i++)
            total += i == 0 || entries[i].value != entries[i - 1].value;
        return total;
    }
    /* group = phase * 32 + bank: distinct words per bank, worst bank per phase, phases summed. */
    int64_t bank_words = 0, phase_worst = 0;
    for (int64_t i = 0; i < m; i++) {
        int new_group = i == 0 || entries[i].group != entries[i - 1].group;
        int new_phase = i == 0 || (entries[i].group >> 5) != (entries[i - 1].group >> 5);
        if (new_phase) {
            total += phase_worst;
            phase_worst = 0;
        }
        if (new_group)
            bank_words = 0;
        if (new_group || entries[i].value != entries[i - 1].value)
            bank_words++;
        if (bank_words > phase_worst)
            phase_worst = bank_words;
    }
    return total + phase_worst;
}

int64_t gm_count(int what, const uint64_t *addr, const int64_t *threads, int64_t n, int width,
                 int bank_bytes, int64_t *warps_out, int64_t *counts_out, int64_t out_cap)
{
    if (what < GM_COUNT_SHARED_WAVEFRONTS || what > GM_COUNT_MAX_SAME_ADDRESS || n < 0 || !valid_width(width))
        return GM_BAD_ARGUMENT;
    if (bank_bytes < 1 || bank_bytes > 16 || (bank_bytes & (bank_bytes - 1)) != 0)
        return GM_BAD_ARGUMENT;
    if (n == 0)
        return 0;
    if (addr == NULL || warps_out == NULL || counts_out == NULL || out_cap < 0)
        return GM_BAD_ARGUMENT;
    if (n > INT64_MAX / 16 / (int64_t)sizeof(count_entry))
        return GM_BAD_ARGUMENT;

    int sorted = 1;
    int64_t previous_warp = 0;
    for (int64_t lane = 0; lane < n; lane++) {
        int64_t thread = threads ? threads[lane] : lane;
        if (thread < 0)
            return GM_BAD_ARGUMENT;
        if ((thread >> 5) < previous_warp)
            sorted = 0;
        previous_warp = thread >> 5;
    }

    /* Lanes arrive grouped by warp almost always; only otherwise is an ordering built. */
    int64_t *warp = NULL, *lanes = NULL, *scratch = NULL;
    count_entry *entries = NULL;
    int64_t capacity = 0, result = 0;
    if (!sorted) {
        warp = malloc((size_t)n * sizeof *warp);
        lanes = malloc((size_t)n * sizeof *lanes);
        scratch = malloc((size_t)n * sizeof *scratch);
        if (warp == NULL || lanes == NULL || scratch == NULL) {
            result = GM_BAD_ARGUMENT;
            goto done;
        }
        for (int64_t lane = 0; lane < n; lane++) {
            warp[lane] = (threads ? threads[lane] : lane) >> 5;
            lanes[lane] = lane;
        }
        sort_lanes_by_warp(lanes, scratch, warp, n);
    }

    int bank_shift = 0, phase_shift = 0;
    while ((1 << bank_shift) < bank_bytes)
        bank_shift++;
    int64_t lanes_per_phase = 32 * bank_bytes / width;
    if (lanes_per_phase > 32)
        lanes_per_phase = 32;
    while ((1 << phase_shift) < lanes_per_phase)
        phase_shift++;
    uint64_t bank_mask = (uint64_t)bank_bytes - 1;
    int64_t written = 0;
    for (int64_t start = 0; start < n;) {
        int64_t first_lane = sorted ? start : lanes[start];
        int64_t this_warp = (threads ? threads[first_lane] : first_lane) >> 5;
        int64_t end = start + 1;
        while (end < n) {
            int64_t lane = sorted ? end : lanes[end];
            if (((threads ? threads[lane] : lane) >> 5) != this_warp)
                break;
            end++;
        }
        int64_t need = (end - start) * 16;
        if (need > capacity) {
            count_entry *grown = realloc(entries, (size_t)need * sizeof *entries);
            if (grown == NULL) {
                result = GM_BAD_ARGUMENT;
                goto done;
            }
            entries = grown;
            capacity = need;
        }
        int64_t m = 0;
        for (int64_t k = start; k < end; k++) {
            int64_t lane = sorted ? k : lanes[k];
            uint64_t a = addr[lane];
            int64_t thread = threads ? threads[lane] : lane;
            if (what == GM_COUNT_SHARED_WAVEFRONTS) {
                uint64_t phase = (uint64_t)(thread & 31) >> phase_shift;
                uint64_t first = a >> bank_shift;
                uint64_t words = (((a & bank_mask) + (uint64_t)width - 1) >> bank_shift) + 1;
                for (uint64_t w = 0; w < words; w++) {
                    uint64_t word = first + w;
                    entries[m].group = phase * 32 + (word & 31);
                    entries[m].value = word;
                    m++;
                }
            } else if (what == GM_COUNT_GLOBAL_SECTORS) {
                uint64_t first = a >> 5;
                uint64_t sectors = (((a & 31) + (uint64_t)width - 1) >> 5) + 1;
                for (uint64_t s = 0; s < sectors; s++) {
                    entries[m].group = 0;
                    entries[m].value = first + s;
                    m++;
                }
            } else {
                entries[m].group = 0;
                entries[m].value = a;
                m++;
            }
        }
        sort_entries(entries, m);
        if (written >= out_cap) {
            result = GM_BAD_ARGUMENT;
            goto done;
        }
        warps_out[written] = this_warp;
        counts_out[written] = count_warp(what, entries, m);
        written++;
        start = end;
    }
    result = written;
done:
    free(warp);
    free(lanes);
    free(scratch);
    free(entries);
    return result;
}
