/* gpuemu memory core: the integer atomics' arithmetic, for the core and the compiled engine's generated code (a
   header of its own because cffi's cdef reads _core.h and takes no function bodies). Needs _core.h first. */
#ifndef GPUEMU_INTEGER_ATOMICS_H
#define GPUEMU_INTEGER_ATOMICS_H

/* An integer atomic's new word from the old one and operand a (CAS and the float types are the caller's); mask keeps
   the operation's width. */
static inline uint64_t gm_integer_apply(int op, int is_signed, uint64_t old, uint64_t a, uint64_t mask)
{
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

#endif
