"""Integer, bit-manipulation, logic and comparison semantics of PTX, as pure vectorised numpy functions."""

import functools

import numpy as np

PTX_INTEGER_DTYPES = {
    "s8": np.dtype(np.int8), "s16": np.dtype(np.int16), "s32": np.dtype(np.int32), "s64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8), "u16": np.dtype(np.uint16), "u32": np.dtype(np.uint32), "u64": np.dtype(np.uint64),
    "b8": np.dtype(np.uint8), "b16": np.dtype(np.uint16), "b32": np.dtype(np.uint32), "b64": np.dtype(np.uint64),
    "pred": np.dtype(np.bool_),
}

_U32 = np.dtype(np.uint32)
_U64 = np.dtype(np.uint64)

# prmt's specialised modes: for each c[1:0], the source byte (0..7 of {b, a}) that lands in
# destination bytes 0, 1, 2, 3 (the PTX ISA's table lists the same rows as d.b3 d.b2 d.b1 d.b0).
PRMT_MODE_BYTE_SELECTORS = {
    "f4e": ((0, 1, 2, 3), (1, 2, 3, 4), (2, 3, 4, 5), (3, 4, 5, 6)),
    "b4e": ((0, 7, 6, 5), (1, 0, 7, 6), (2, 1, 0, 7), (3, 2, 1, 0)),
    "rc8": ((0, 0, 0, 0), (1, 1, 1, 1), (2, 2, 2, 2), (3, 3, 3, 3)),
    "ecl": ((0, 1, 2, 3), (1, 1, 2, 3), (2, 2, 2, 3), (3, 3, 3, 3)),
    "ecr": ((0, 0, 0, 0), (0, 1, 1, 1), (0, 1, 2, 2), (0, 1, 2, 3)),
    "rc16": ((0, 1, 0, 1), (2, 3, 2, 3), (0, 1, 0, 1), (2, 3, 2, 3)),
}

_COMPARISONS = {
    "eq": np.equal, "ne": np.not_equal,
    "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
    "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal,
}
_UNSIGNED_COMPARISONS = frozenset(("lo", "ls", "hi", "hs"))

_PREDICATE_COMBINERS = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}


def _silent(function):
    """Run `function` with numpy's floating-point and integer-overflow reports switched off."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with np.errstate(all="ignore"):
            return function(*args, **kwargs)

    return wrapper


def dtype_of(ty):
    """The numpy dtype that holds a PTX integer, bit or predicate type such as 's32' or 'b64'."""
    try:
        return PTX_INTEGER_DTYPES[ty]
    except KeyError:
        raise ValueError(f"not a PTX integer, bit or predicate type: {ty!r}") from None


def _unsigned(dtype):
    return np.dtype(f"u{np.dtype(dtype).itemsize}")


def _width(dtype):
    return np.dtype(dtype).itemsize * 8


def _as(value, dtype):
    """`value` reinterpreted (same width) or truncated/extended (other width) as an array of `dtype`."""
    array = np.asarray(value)
    dtype = np.dtype(dtype)
    if array.dtype == dtype:
        return array
    if array.dtype.kind in "iu" and array.dtype.itemsize == dtype.itemsize and dtype.kind in "iu":
        return array.view(dtype)
    return array.astype(dtype)


def _bits(value, dtype):
    """The bit pattern of `value` as an array of the unsigned type as wide as `dtype`."""
    return _as(_as(value, dtype), _unsigned(dtype))


def _shift_amount(value):
    """A PTX shift or position operand (an unsigned 32-bit value) as uint64."""
    return _as(value, _U32).astype(_U64)


def _low_mask(count, dtype):
    """Unsigned masks of `dtype`'s width with the lowest `count` bits set (0 <= count <= width)."""
    udtype = _unsigned(dtype)
    width = _width(dtype)
    count = np.asarray(count, dtype=_U64)
    all_ones = np.array(-1).astype(udtype)
    shift = np.minimum(np.uint64(width) - np.minimum(count, np.uint64(width)), np.uint64(width - 1))
    return np.where(count == 0, udtype.type(0), all_ones >> shift.astype(udtype)).astype(udtype)


def _set_bit_count(unsigned_bits):
    """Number of set bits of each element (np.bitwise_count where numpy has it: 2.0 and later)."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(unsigned_bits)
    values = np.asarray(unsigned_bits)
    octets = np.ascontiguousarray(values.reshape(-1)).view(np.uint8).reshape(values.shape + (values.dtype.itemsize,))
    return np.unpackbits(octets, axis=-1).sum(axis=-1)


def _bit_length(unsigned_bits):
    """Position of the highest set bit plus one (0 for 0), vectorised by halving."""
    width = _width(unsigned_bits.dtype)
    remaining = unsigned_bits.astype(_U64)
    length = np.zeros(remaining.shape, dtype=np.int64)
    step = width // 2
    while step >= 1:
        has_high = (remaining >> np.uint64(step)) != 0
        length = length + np.where(has_high, step, 0)
        remaining = np.where(has_high, remaining >> np.uint64(step), remaining)
        step //= 2
    return length + (remaining != 0)


def _signed_value(unsigned_bits, width):
    """Two's-complement value of the low `width` bits of uint64 patterns, as int64."""
    value = unsigned_bits.astype(np.int64)
    if width == 64:
        return value
    sign = np.int64(1) << np.int64(width - 1)
    return (value ^ sign) - sign


# --------------------------------------------------------------------------------------------------
# Multiplication
# --------------------------------------------------------------------------------------------------

def _product_halves(a, b, dtype):
    """(high, low) halves, as unsigned patterns of `dtype`'s width, of the exact product a*b."""
    dtype = np.dtype(dtype)
    udtype = _unsigned(dtype)
    width = _width(dtype)
    if width <= 32:
        wide = np.dtype(np.int64) if dtype.kind == "i" else _U64
        product = _as(a, dtype).astype(wide) * _as(b, dtype).astype(wide)
        pattern = product.astype(_U64) if wide.kind == "i" else product
        low = (pattern & np.uint64((1 << width) - 1)).astype(udtype)
        high = ((pattern >> np.uint64(width)) & np.uint64((1 << width) - 1)).astype(udtype)
        return high, low
    ua, ub = _bits(a, dtype), _bits(b, dtype)
    high, low = _unsigned_64bit_product(ua, ub)
    if dtype.kind == "i":
        high = high - np.where(_as(a, dtype) < 0, ub, np.uint64(0))
        high = high - np.where(_as(b, dtype) < 0, ua, np.uint64(0))
    return high, low


def _unsigned_64bit_product(ua, ub):
    """(high, low) uint64 halves of the 128-bit product of two uint64 arrays, by 32-bit limbs."""
    half_mask = np.uint64(0xFFFFFFFF)
    thirty_two = np.uint64(32)
    a_low, a_high = ua & half_mask, ua >> thirty_two
    b_low, b_high = ub & half_mask, ub >> thirty_two
    low_low = a_low * b_low
    low_high = a_low * b_high
    high_low = a_high * b_low
    high_high = a_high * b_high
    middle = (low_low >> thirty_two) + (low_high & half_mask) + (high_low & half_mask)
    high = high_high + (low_high >> thirty_two) + (high_low >> thirty_two) + (middle >> thirty_two)
    low = (middle << thirty_two) | (low_low & half_mask)
    return high, low


def _wide_dtype(ty):
    dtype = dtype_of(ty)
    if _width(dtype) not in (16, 32):
        raise ValueError(f".wide needs a 16- or 32-bit type, got {ty!r}")
    return np.dtype(f"{dtype.kind}{dtype.itemsize * 2}")


@_silent
def mul_lo(a, b):
    """mul.lo: the low half of a*b, in a's dtype (wraps)."""
    a = np.asarray(a)
    product = (_bits(a, a.dtype) * _bits(b, a.dtype)).astype(_unsigned(a.dtype))
    return _as(product, a.dtype)


@_silent
def mul_hi(a, b, *, ty):
    """mul.hi: the high half of the double-width product a*b (16, 32 and 64-bit types)."""
    dtype = dtype_of(ty)
    high, _ = _product_halves(a, b, dtype)
    return _as(high, dtype)


@_silent
def mul_wide(a, b, *, ty):
    """mul.wide: the exact double-width product of two 16- or 32-bit values."""
    dtype, wide = dtype_of(ty), _wide_dtype(ty)
    return _as(a, dtype).astype(wide) * _as(b, dtype).astype(wide)


@_silent
def mad_lo(a, b, c):
    """mad.lo: low half of a*b plus c, in a's dtype (wraps)."""
    a = np.asarray(a)
    product = _bits(mul_lo(a, b), a.dtype)
    return _as(product + _bits(c, a.dtype), a.dtype)


@_silent
def mad_hi(a, b, c, *, ty):
    """mad.hi: high half of the double-width a*b plus c (wraps)."""
    dtype = dtype_of(ty)
    high, _ = _product_halves(a, b, dtype)
    return _as(high + _bits(c, dtype), dtype)


@_silent
def mad_wide(a, b, c, *, ty):
    """mad.wide: the exact double-width product a*b plus the double-width c (wraps)."""
    wide = _wide_dtype(ty)
    product = mul_wide(a, b, ty=ty)
    return _as(_bits(product, wide) + _bits(c, wide), wide)


@_silent
def mad_hi_sat_s32(a, b, c):
    """mad.hi.sat.s32: high half of the 64-bit product plus c, clamped to the s32 range."""
    high = mul_hi(a, b, ty="s32").astype(np.int64)
    return np.clip(high + _as(c, np.int32).astype(np.int64), -(1 << 31), (1 << 31) - 1).astype(np.int32)


def _product_24bit(a, b, ty):
    """The exact 48-bit product of the low 24 bits of a and b (sign-extended for s32), as int64."""
    dtype = dtype_of(ty)
    if ty not in ("u32", "s32"):
        raise ValueError(f"mul24/mad24 take u32 or s32, got {ty!r}")
    low24 = np.uint64(0xFFFFFF)
    a24 = _bits(a, dtype).astype(_U64) & low24
    b24 = _bits(b, dtype).astype(_U64) & low24
    if ty == "s32":
        return _signed_value(a24, 24) * _signed_value(b24, 24)
    return (a24 * b24).astype(np.int64)


def _product_24bit_part(product, hi):
    part = (product >> np.int64(16)) if hi else product
    return (part.astype(_U64) & np.uint64(0xFFFFFFFF)).astype(_U32)


@_silent
def mul24(a, b, *, ty, hi):
    """mul24.hi/lo: bits 47..16 (hi) or 31..0 (lo) of the 48-bit product of two 24-bit values."""
    return _as(_product_24bit_part(_product_24bit(a, b, ty), hi), dtype_of(ty))


@_silent
def mad24(a, b, c, *, ty, hi, sat=False):
    """mad24: mul24's selected 32 bits plus c; .sat (hi.s32 only) clamps the sum to the s32 range."""
    dtype = dtype_of(ty)
    product = _product_24bit(a, b, ty)
    if sat:
        if not (hi and ty == "s32"):
            raise ValueError("mad24 .sat exists only as mad24.hi.sat.s32")
        total = (product >> np.int64(16)) + _as(c, np.int32).astype(np.int64)
        return np.clip(total, -(1 << 31), (1 << 31) - 1).astype(np.int32)
    return _as(_product_24bit_part(product, hi) + _bits(c, _U32), dtype)


@_silent
def sad(a, b, c, *, ty):
    """sad: |a - b| + c, with the difference taken exactly and the sum wrapping."""
    dtype = dtype_of(ty)
    a, b = _as(a, dtype), _as(b, dtype)
    ua, ub = _bits(a, dtype), _bits(b, dtype)
    magnitude = np.where(a < b, ub - ua, ua - ub).astype(_unsigned(dtype))
    return _as(magnitude + _bits(c, dtype), dtype)


# --------------------------------------------------------------------------------------------------
# Division
# --------------------------------------------------------------------------------------------------

def division_by_zero_results(dividend, *, ty):
    """(quotient, remainder) the GPU gives for `dividend` / 0 and `dividend` % 0, as dividend's dtype.

    The one place that decides this. Read off an H100 (sm_90, CUDA 13.0, divisor in a register) for
    u16/s16/u32/s32/u64/s64 and dividends of every sign: both are all ones (-1 for signed types),
    whatever the dividend.
    """
    dtype = dtype_of(ty)
    all_ones = np.full(_as(dividend, dtype).shape, -1).astype(dtype)
    return all_ones, all_ones.copy()


def _truncating_division(a, b, ty):
    dtype = dtype_of(ty)
    udtype = _unsigned(dtype)
    a, b = _as(a, dtype), _as(b, dtype)
    ua, ub = _bits(a, dtype), _bits(b, dtype)
    if dtype.kind == "i":
        a_negative, b_negative = a < 0, b < 0
        ua = np.where(a_negative, udtype.type(0) - ua, ua).astype(udtype)
        ub = np.where(b_negative, udtype.type(0) - ub, ub).astype(udtype)
    divisor_is_zero = ub == 0
    safe_divisor = np.where(divisor_is_zero, udtype.type(1), ub).astype(udtype)
    quotient = (ua // safe_divisor).astype(udtype)
    remainder = (ua % safe_divisor).astype(udtype)
    if dtype.kind == "i":
        quotient = np.where(a_negative ^ b_negative, udtype.type(0) - quotient, quotient).astype(udtype)
        remainder = np.where(a_negative, udtype.type(0) - remainder, remainder).astype(udtype)
    by_zero_quotient, by_zero_remainder = division_by_zero_results(a, ty=ty)
    quotient = np.where(divisor_is_zero, _bits(by_zero_quotient, dtype), quotient).astype(udtype)
    remainder = np.where(divisor_is_zero, _bits(by_zero_remainder, dtype), remainder).astype(udtype)
    return _as(quotient, dtype), _as(remainder, dtype)


@_silent
def div(a, b, *, ty):
    """Integer div: C semantics (truncates toward zero); INT_MIN / -1 = INT_MIN; x / 0 per the GPU."""
    return _truncating_division(a, b, ty)[0]


@_silent
def rem(a, b, *, ty):
    """Integer rem: C semantics (sign of the dividend); INT_MIN % -1 = 0; x % 0 per the GPU."""
    return _truncating_division(a, b, ty)[1]


# --------------------------------------------------------------------------------------------------
# abs, neg, min, max, saturating add/sub
# --------------------------------------------------------------------------------------------------

@_silent
def iabs(a):
    """abs for signed integers: |a|, with abs(INT_MIN) = INT_MIN."""
    a = np.asarray(a)
    ua = _bits(a, a.dtype)
    return _as(np.where(a < 0, _unsigned(a.dtype).type(0) - ua, ua).astype(ua.dtype), a.dtype)


@_silent
def ineg(a):
    """neg for integers: -a in two's complement, with -INT_MIN = INT_MIN."""
    a = np.asarray(a)
    udtype = _unsigned(a.dtype)
    return _as((udtype.type(0) - _bits(a, a.dtype)).astype(udtype), a.dtype)


def _packed_halves(x, signed):
    bits = _bits(x, _U32)
    halves = [(bits & np.uint32(0xFFFF)).astype(np.uint16), (bits >> np.uint32(16)).astype(np.uint16)]
    return [half.view(np.int16) if signed else half for half in halves]


def _pack_halves(low, high):
    low_bits = _bits(low, np.uint16).astype(_U32)
    high_bits = _bits(high, np.uint16).astype(_U32)
    return (high_bits << np.uint32(16)) | low_bits


def _min_or_max(a, b, choose, relu, ty):
    if ty in ("u16x2", "s16x2"):
        signed = ty == "s16x2"
        if relu and not signed:
            raise ValueError(".relu exists only for s16x2 and s32")
        lows, highs = zip(_packed_halves(a, signed), _packed_halves(b, signed))
        results = [choose(lows[0], lows[1]), choose(highs[0], highs[1])]
        if relu:
            results = [np.maximum(half, np.int16(0)) for half in results]
        return _pack_halves(*results)
    dtype = dtype_of(ty) if ty is not None else np.asarray(a).dtype
    result = choose(_as(a, dtype), _as(b, dtype))
    if relu:
        if dtype != np.int32:
            raise ValueError(".relu exists only for s16x2 and s32")
        result = np.maximum(result, np.int32(0))
    return result


@_silent
def imin(a, b, *, relu=False, ty=None):
    """min for integers (dtype of a, or ty; 'u16x2'/'s16x2' treat a, b as packed halves); .relu clamps at 0."""
    return _min_or_max(a, b, np.minimum, relu, ty)


@_silent
def imax(a, b, *, relu=False, ty=None):
    """max for integers (dtype of a, or ty; 'u16x2'/'s16x2' treat a, b as packed halves); .relu clamps at 0."""
    return _min_or_max(a, b, np.maximum, relu, ty)


@_silent
def add_sat_s32(a, b):
    """add.sat.s32: a + b clamped to [INT_MIN, INT_MAX]."""
    total = _as(a, np.int32).astype(np.int64) + _as(b, np.int32).astype(np.int64)
    return np.clip(total, -(1 << 31), (1 << 31) - 1).astype(np.int32)


@_silent
def sub_sat_s32(a, b):
    """sub.sat.s32: a - b clamped to [INT_MIN, INT_MAX]."""
    difference = _as(a, np.int32).astype(np.int64) - _as(b, np.int32).astype(np.int64)
    return np.clip(difference, -(1 << 31), (1 << 31) - 1).astype(np.int32)


# --------------------------------------------------------------------------------------------------
# Extended-precision carry chain (CC.CF)
# --------------------------------------------------------------------------------------------------

def carry_flag_after_subtraction(borrow):
    """CC.CF left by sub.cc/subc.cc: the carry out of a + ~b + 1, i.e. set when there was NO borrow.

    This is how the H100 stores the PTX ISA's "borrow-out" in the one CC.CF bit it shares with
    add.cc/addc (read off one: sub.cc 0 - 0 then addc 0 + 0 gives 1; subc after an add.cc that
    carried borrows nothing). It only shows when add and sub carries are mixed; subc reads its
    borrow-in back through `borrow_into_subtraction`.
    """
    return ~np.asarray(borrow, dtype=bool)


def borrow_into_subtraction(carry_flag):
    """The borrow-in subc takes from CC.CF (the inverse of `carry_flag_after_subtraction`)."""
    return ~np.asarray(carry_flag, dtype=bool)


def _carry_dtype(a):
    a = np.asarray(a)
    if a.dtype.kind not in "iu" or _width(a.dtype) not in (32, 64):
        raise ValueError(f"the carry chain works on 32- and 64-bit integers, got {a.dtype}")
    return a.dtype


@_silent
def add_cc(a, b):
    """add.cc: (a + b wrapped, carry out as bool)."""
    dtype = _carry_dtype(a)
    ua = _bits(a, dtype)
    total = ua + _bits(b, dtype)
    return _as(total, dtype), total < ua


@_silent
def addc(a, b, carry_in):
    """addc(.cc): (a + b + CC.CF wrapped, carry out as bool)."""
    dtype = _carry_dtype(a)
    ua = _bits(a, dtype)
    partial = ua + _bits(b, dtype)
    total = partial + np.asarray(carry_in, dtype=bool).astype(ua.dtype)
    return _as(total, dtype), (partial < ua) | (total < partial)


@_silent
def sub_cc(a, b):
    """sub.cc: (a - b wrapped, CC.CF as the GPU leaves it: see `carry_flag_after_subtraction`)."""
    dtype = _carry_dtype(a)
    ua, ub = _bits(a, dtype), _bits(b, dtype)
    return _as(ua - ub, dtype), carry_flag_after_subtraction(ua < ub)


@_silent
def subc(a, b, carry_in):
    """subc(.cc): (a - b - borrow-in wrapped, new CC.CF); carry_in is CC.CF as sub.cc/add.cc left it."""
    dtype = _carry_dtype(a)
    ua, ub = _bits(a, dtype), _bits(b, dtype)
    borrow_in = borrow_into_subtraction(carry_in).astype(ua.dtype)
    partial = ua - ub
    difference = partial - borrow_in
    borrow_out = (ua < ub) | (partial < borrow_in)
    return _as(difference, dtype), carry_flag_after_subtraction(borrow_out)


def _mad_carry_part(a, b, hi, ty):
    dtype = dtype_of(ty)
    if _width(dtype) not in (32, 64):
        raise ValueError(f"mad.cc/madc take 32- or 64-bit types, got {ty!r}")
    high, low = _product_halves(a, b, dtype)
    return _as(high if hi else low, dtype)


@_silent
def mad_cc(a, b, c, *, hi, ty):
    """mad.hi.cc / mad.lo.cc: (selected half of a*b plus c, carry out of that addition)."""
    return add_cc(_mad_carry_part(a, b, hi, ty), _as(c, dtype_of(ty)))


@_silent
def madc(a, b, c, carry_in, *, hi, ty):
    """madc.hi / madc.lo (.cc): (selected half of a*b plus c plus CC.CF, carry out)."""
    return addc(_mad_carry_part(a, b, hi, ty), _as(c, dtype_of(ty)), carry_in)


# --------------------------------------------------------------------------------------------------
# Bit manipulation
# --------------------------------------------------------------------------------------------------

@_silent
def popc(a):
    """popc: number of set bits, as uint32."""
    a = np.asarray(a)
    return _set_bit_count(_bits(a, a.dtype)).astype(_U32)


@_silent
def clz(a):
    """clz: number of leading zero bits (the full width for 0), as uint32."""
    a = np.asarray(a)
    return (_width(a.dtype) - _bit_length(_bits(a, a.dtype))).astype(_U32)


@_silent
def bfind(a, *, ty, shiftamt=False):
    """bfind: position of the most significant non-sign bit (0xFFFFFFFF if none), as uint32.

    With shiftamt, the left shift that moves that bit to the msb instead.
    """
    dtype = dtype_of(ty)
    msb = _width(dtype) - 1
    bits = _bits(a, dtype)
    if dtype.kind == "i":
        bits = np.where(_as(a, dtype) < 0, ~bits, bits).astype(bits.dtype)
    position = _bit_length(bits) - 1
    if shiftamt:
        position = np.where(position < 0, -1, msb - position)
    return position.astype(np.int64).astype(_U32)


@_silent
def brev(a):
    """brev: bits in reverse order, in a's dtype."""
    a = np.asarray(a)
    bits = _bits(a, a.dtype)
    udtype = bits.dtype
    width = _width(udtype)
    for shift, pattern in ((1, 0x55), (2, 0x33), (4, 0x0F)):
        mask = udtype.type(int.from_bytes(bytes([pattern]) * (width // 8), "little"))
        amount = udtype.type(shift)
        bits = ((bits >> amount) & mask) | ((bits & mask) << amount)
    return _as(np.asarray(bits).byteswap(), a.dtype)


def _bit_field_operands(pos, length, width):
    """bfe/bfi position and length: the low 8 bits for 32-bit types (PTX ISA), all 32 bits for 64-bit.

    The 64-bit rule is the H100's: ptxas lowers bfe/bfi.b64 to shifts by the whole register, so a
    position or length of 256 does not wrap to 0 there.
    """
    position, field_length = _shift_amount(pos), _shift_amount(length)
    if width == 32:
        position, field_length = position & np.uint64(0xFF), field_length & np.uint64(0xFF)
    return position, field_length


@_silent
def bfe(a, pos, length, *, ty):
    """bfe: extract `length` bits from bit `pos`; signed types sign-extend from the last extracted bit.

    Bits past the msb are not there to extract (see `_bit_field_operands` for how pos and len are read).
    """
    dtype = dtype_of(ty)
    width = _width(dtype)
    msb = np.uint64(width - 1)
    udtype = _unsigned(dtype)
    bits = _bits(a, dtype)
    position, field_length = _bit_field_operands(pos, length, width)
    available = np.where(position > msb, np.uint64(0), np.uint64(width) - np.minimum(position, msb))
    copied = np.minimum(field_length, available)
    shifted = bits >> np.minimum(position, msb).astype(udtype)
    field = shifted & _low_mask(copied, udtype)
    if dtype.kind == "u":
        return _as(field, dtype)
    sign_position = np.minimum(position + field_length - np.uint64(1), msb)
    sign = ((bits >> sign_position.astype(udtype)) & udtype.type(1)).astype(bool) & (field_length != 0)
    extension = np.where(sign, ~_low_mask(copied, udtype), udtype.type(0)).astype(udtype)
    return _as(field | extension, dtype)


@_silent
def bfi(f, b, pos, length, *, ty):
    """bfi: b with the `length` low bits of f inserted at bit `pos`; bits that would pass the msb are dropped."""
    dtype = dtype_of(ty)
    width = _width(dtype)
    msb = np.uint64(width - 1)
    udtype = _unsigned(dtype)
    position, field_length = _bit_field_operands(pos, length, width)
    available = np.where(position > msb, np.uint64(0), np.uint64(width) - np.minimum(position, msb))
    inserted = np.minimum(field_length, available)
    shift = np.minimum(position, msb).astype(udtype)
    mask = (_low_mask(inserted, udtype) << shift).astype(udtype)
    result = (_bits(b, dtype) & ~mask) | ((_bits(f, dtype) << shift) & mask)
    return _as(result, dtype)


@_silent
def prmt(a, b, c, *, mode=None):
    """prmt.b32: bytes picked from {b, a} by selector c (default: four nibbles, bit 3 = sign replicate)."""
    source = (_bits(b, _U32).astype(_U64) << np.uint64(32)) | _bits(a, _U32).astype(_U64)
    control = _bits(c, _U32).astype(_U64)
    result = np.zeros(np.broadcast(source, control).shape, dtype=_U64)
    if mode is None:
        for position in range(4):
            nibble = (control >> np.uint64(4 * position)) & np.uint64(0xF)
            byte = (source >> ((nibble & np.uint64(7)) * np.uint64(8))) & np.uint64(0xFF)
            sign_replicated = np.where(byte & np.uint64(0x80), np.uint64(0xFF), np.uint64(0))
            byte = np.where(nibble & np.uint64(8), sign_replicated, byte)
            result |= byte << np.uint64(8 * position)
    else:
        try:
            table = np.array(PRMT_MODE_BYTE_SELECTORS[mode], dtype=_U64)
        except KeyError:
            raise ValueError(f"unknown prmt mode {mode!r}") from None
        row = (control & np.uint64(3)).astype(np.intp)
        for position in range(4):
            selector = table[row, position]
            byte = (source >> (selector * np.uint64(8))) & np.uint64(0xFF)
            result |= byte << np.uint64(8 * position)
    return result.astype(_U32)


@_silent
def shf(a, b, c, *, direction, mode):
    """shf.{l,r}.{clamp,wrap}.b32: funnel shift of the 64-bit {b, a} by c; the high (l) or low (r) word."""
    ua = _bits(a, _U32).astype(_U64)
    ub = _bits(b, _U32).astype(_U64)
    amount = _shift_amount(c)
    if mode == "clamp":
        amount = np.minimum(amount, np.uint64(32))
    elif mode == "wrap":
        amount = amount & np.uint64(31)
    else:
        raise ValueError(f"shf mode must be 'clamp' or 'wrap', got {mode!r}")
    complement = np.uint64(32) - amount
    if direction == "l":
        result = (ub << amount) | (ua >> complement)
    elif direction == "r":
        result = (ub << complement) | (ua >> amount)
    else:
        raise ValueError(f"shf direction must be 'l' or 'r', got {direction!r}")
    return (result & np.uint64(0xFFFFFFFF)).astype(_U32)


@_silent
def shl(a, n, *, bits):
    """shl.b{16,32,64}: a << n, n an unsigned 32-bit amount; amounts >= the width give 0."""
    a = np.asarray(a)
    udtype = np.dtype(f"u{bits // 8}")
    value = _bits(a, udtype)
    amount = _shift_amount(n)
    shifted = value << np.minimum(amount, np.uint64(bits - 1)).astype(udtype)
    result = np.where(amount >= np.uint64(bits), udtype.type(0), shifted).astype(udtype)
    return _as(result, a.dtype) if _width(a.dtype) == bits else result


@_silent
def shr(a, n, *, ty):
    """shr: a >> n, n an unsigned 32-bit amount clamped to the width; signed types shift in the sign."""
    dtype = dtype_of(ty)
    width = _width(dtype)
    amount = _shift_amount(n)
    if dtype.kind == "i":
        clamped = np.minimum(amount, np.uint64(width - 1)).astype(dtype)
        return _as(_as(a, dtype) >> clamped, dtype)
    udtype = _unsigned(dtype)
    value = _bits(a, dtype)
    shifted = value >> np.minimum(amount, np.uint64(width - 1)).astype(udtype)
    return _as(np.where(amount >= np.uint64(width), udtype.type(0), shifted).astype(udtype), dtype)


@_silent
def lop3(a, b, c, *, lut):
    """lop3: the bitwise function of a, b, c whose truth table is `lut` (F(0xF0, 0xCC, 0xAA) = lut)."""
    a = np.asarray(a)
    dtype = a.dtype
    ua, ub, uc = _bits(a, dtype), _bits(b, dtype), _bits(c, dtype)
    result = np.zeros(np.broadcast(ua, ub, uc).shape, dtype=ua.dtype)
    for minterm in range(8):
        if (int(lut) >> minterm) & 1:
            term = (ua if minterm & 4 else ~ua) & (ub if minterm & 2 else ~ub) & (uc if minterm & 1 else ~uc)
            result |= term
    return _as(result, dtype)


@_silent
def bmsk(a, b, *, mode):
    """bmsk.{clamp,wrap}.b32: a mask of b bits starting at bit a (the PTX ISA's definition)."""
    if mode not in ("clamp", "wrap"):
        raise ValueError(f"bmsk mode must be 'clamp' or 'wrap', got {mode!r}")
    position_raw, width_raw = _shift_amount(a), _shift_amount(b)
    position = position_raw & np.uint64(31)
    field_width = width_raw & np.uint64(31)
    total = position + field_width
    all_ones = np.uint64(0xFFFFFFFF)
    low_cleared = (all_ones << position) & all_ones
    overflow = total >= np.uint64(32)
    if mode == "clamp":
        position_overflow = position_raw >= np.uint64(32)
        low_cleared = np.where(position_overflow, np.uint64(0), low_cleared)
        overflow = overflow | position_overflow | (width_raw >= np.uint64(32))
    high_cleared = (all_ones << np.minimum(total, np.uint64(63))) & all_ones
    high_cleared = np.where(overflow, np.uint64(0), np.where(field_width == 0, all_ones, high_cleared))
    return (low_cleared & ~high_cleared & all_ones).astype(_U32)


@_silent
def szext(a, b, *, mode, signed):
    """szext.{clamp,wrap}.{s32,u32}: sign- or zero-extend the low b bits of a (0 bits give 0)."""
    if mode not in ("clamp", "wrap"):
        raise ValueError(f"szext mode must be 'clamp' or 'wrap', got {mode!r}")
    value = _bits(a, _U32).astype(_U64)
    count_raw = _shift_amount(b)
    count = count_raw & np.uint64(31)
    all_ones = np.uint64(0xFFFFFFFF)
    too_large = (count_raw >= np.uint64(32)) if mode == "clamp" else np.zeros(count_raw.shape, dtype=bool)
    high_mask = np.where(too_large, np.uint64(0), (all_ones << count) & all_ones)
    if signed:
        sign_position = (count - np.uint64(1)) & np.uint64(31)
        sign = ((value >> sign_position) & np.uint64(1)).astype(bool) & (count != 0) & ~too_large
    else:
        sign = np.zeros(np.broadcast(value, count).shape, dtype=bool)
    result = (value & ~high_mask & all_ones) | np.where(sign, high_mask, np.uint64(0))
    return _as(result.astype(_U32), np.int32 if signed else _U32)


def _packed_integers(x, count, signed):
    """The `count` equal-width fields of each 32-bit x (low field first), sign- or zero-extended to int64."""
    bits = _bits(x, _U32).astype(_U64)
    width = 32 // count
    fields = []
    for index in range(count):
        field = (bits >> np.uint64(width * index)) & np.uint64((1 << width) - 1)
        fields.append(_signed_value(field, width) if signed else field.astype(np.int64))
    return fields


def _dot_product_type(atype, btype):
    for name in (atype, btype):
        if name not in ("u32", "s32"):
            raise ValueError(f"dp4a/dp2a types are u32 or s32, got {name!r}")
    accumulator = np.dtype(np.uint32) if atype == btype == "u32" else np.dtype(np.int32)
    return atype == "s32", btype == "s32", accumulator


@_silent
def dp4a(a, b, c, *, atype, btype):
    """dp4a: c plus the dot product of the four bytes of a and of b (u32 result if both u32, else s32)."""
    a_signed, b_signed, accumulator = _dot_product_type(atype, btype)
    total = _as(c, accumulator).astype(np.int64)
    for a_byte, b_byte in zip(_packed_integers(a, 4, a_signed), _packed_integers(b, 4, b_signed)):
        total = total + a_byte * b_byte
    return _as((total.astype(_U64) & np.uint64(0xFFFFFFFF)).astype(_U32), accumulator)


@_silent
def dp2a(a, b, c, *, atype, btype, hi):
    """dp2a.{lo,hi}: c plus the dot product of a's two halves with bytes 0,1 (lo) or 2,3 (hi) of b."""
    a_signed, b_signed, accumulator = _dot_product_type(atype, btype)
    b_bytes = _packed_integers(b, 4, b_signed)[2:] if hi else _packed_integers(b, 4, b_signed)[:2]
    total = _as(c, accumulator).astype(np.int64)
    for a_half, b_byte in zip(_packed_integers(a, 2, a_signed), b_bytes):
        total = total + a_half * b_byte
    return _as((total.astype(_U64) & np.uint64(0xFFFFFFFF)).astype(_U32), accumulator)


# --------------------------------------------------------------------------------------------------
# Logic, comparison, predicates
# --------------------------------------------------------------------------------------------------

def _same_type_operands(a, b):
    a = np.asarray(a)
    return a, _as(b, a.dtype)


@_silent
def land(a, b):
    """and: bitwise and (logical for bool predicates)."""
    a, b = _same_type_operands(a, b)
    return np.bitwise_and(a, b)


@_silent
def lor(a, b):
    """or: bitwise or (logical for bool predicates)."""
    a, b = _same_type_operands(a, b)
    return np.bitwise_or(a, b)


@_silent
def lxor(a, b):
    """xor: bitwise exclusive or (logical for bool predicates)."""
    a, b = _same_type_operands(a, b)
    return np.bitwise_xor(a, b)


@_silent
def move(a):
    """mov: the source's bits, unchanged."""
    return a


def lnot(a):
    """not: bitwise complement (logical not for bool predicates)."""
    return np.invert(np.asarray(a))


@_silent
def cnot(a):
    """cnot: 1 where a is 0, else 0, in a's dtype."""
    a = np.asarray(a)
    return (a == 0).astype(a.dtype)


@_silent
def icompare(a, b, *, cmp):
    """Integer comparison for setp/set; lo, ls, hi, hs compare the bit patterns as unsigned."""
    try:
        compare = _COMPARISONS[cmp]
    except KeyError:
        raise ValueError(f"unknown integer comparison {cmp!r}") from None
    a, b = _same_type_operands(a, b)
    if cmp in _UNSIGNED_COMPARISONS:
        a, b = _bits(a, a.dtype), _bits(b, a.dtype)
    return compare(a, b)


@_silent
def combine_pred(p, q, *, op):
    """The .and/.or/.xor that setp and set apply between a comparison and another predicate."""
    try:
        combine = _PREDICATE_COMBINERS[op]
    except KeyError:
        raise ValueError(f"unknown predicate combination {op!r}") from None
    return combine(np.asarray(p, dtype=bool), np.asarray(q, dtype=bool))


@_silent
def set_result(pred, *, dtype):
    """What set writes: 1.0f (float32) or all ones (integer dtypes) for true, 0 for false."""
    dtype = np.dtype(dtype)
    pred = np.asarray(pred, dtype=bool)
    if dtype == np.float32:
        return np.where(pred, np.float32(1.0), np.float32(0.0)).astype(np.float32)
    if dtype.kind not in "iu":
        raise ValueError(f"set writes u32, s32 or f32, got {dtype}")
    udtype = _unsigned(dtype)
    all_ones = np.array(-1).astype(udtype)
    return _as(np.where(pred, all_ones, udtype.type(0)).astype(udtype), dtype)


@_silent
def add_halves(a, b, *, ty):
    """add.u16x2 / add.s16x2: two independent 16-bit wrapping sums in one 32-bit word."""
    signed = ty == "s16x2"
    (a_low, a_high), (b_low, b_high) = _packed_halves(a, signed), _packed_halves(b, signed)
    return _pack_halves(a_low + b_low, a_high + b_high)


@_silent
def fns(mask, base, offset):
    """fns.b32: the bit position of the offset-th set bit of mask counting from base (up for offset > 0,
    down for offset < 0, base itself when offset is 0 and that bit is set); 0xFFFFFFFF when there is none.
    An offset of INT_MIN, whose negation overflows, gave 0 on the H100 (tests/isa_probes fns_b32)."""
    mask = _bits(mask, np.uint32).astype(np.uint64)
    base = _bits(base, np.uint32).astype(np.int64)
    offset = _as(offset, np.int32).astype(np.int64)
    mask, base, offset = np.broadcast_arrays(mask, base, offset)
    positions = np.arange(32, dtype=np.int64)
    bits = ((mask[..., None] >> positions.astype(np.uint64)) & np.uint64(1)).astype(bool)
    upward = offset >= 0
    eligible = np.where(upward[..., None], positions >= base[..., None], positions <= base[..., None]) & bits
    wanted = np.where(upward, np.maximum(offset, 1), -offset)
    order = np.where(upward[..., None], np.cumsum(eligible, axis=-1),
                     np.cumsum(eligible[..., ::-1], axis=-1)[..., ::-1])
    hit = eligible & (order == wanted[..., None])
    zero_offset = offset == 0
    at_base = (((mask >> np.clip(base, 0, 31).astype(np.uint64)) & np.uint64(1)) == 1) & (base < 32)
    found = np.where(hit.any(axis=-1), np.argmax(hit, axis=-1), -1)
    found = np.where(zero_offset, np.where(at_base, base, -1), found)
    result = np.where(found >= 0, found, 0xFFFFFFFF)
    return np.where(offset == -(1 << 31), 0, result).astype(np.uint32)


_PACK_RANGES = {"u16": (0, 0xFFFF, 16), "s16": (-0x8000, 0x7FFF, 16), "u8": (0, 0xFF, 8), "s8": (-0x80, 0x7F, 8),
                "u4": (0, 0xF, 4), "s4": (-0x8, 0x7, 4), "u2": (0, 0x3, 2), "s2": (-0x2, 0x1, 2)}


@_silent
def cvt_pack_sat(a, b, c=None, *, dst):
    """cvt.pack.sat.dst.s32{.b32}: saturate the s32 inputs a, b to dst and pack them, b in the low field;
    with a third operand c the two fields are inserted at the bottom of c shifted up by two fields."""
    low, high, bits = _PACK_RANGES[dst]
    mask = np.int64((1 << bits) - 1)
    first = np.clip(_as(a, np.int32).astype(np.int64), low, high) & mask
    second = np.clip(_as(b, np.int32).astype(np.int64), low, high) & mask
    packed = (first << np.int64(bits)) | second
    if c is not None:
        packed = packed | (_bits(c, np.uint32).astype(np.int64) << np.int64(2 * bits))
    return (packed & np.int64(0xFFFFFFFF)).astype(np.uint32)
