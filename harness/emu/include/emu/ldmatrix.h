/* emu/ldmatrix.h: ldmatrix and mma.sync for the emu backend, the warp-level tensor-core PTX
 * that a kernel reaches through inline asm on a GPU.
 *
 *   ldsm_frag                          what one ldmatrix .x4 gives a lane: four 8 x 8 matrices
 *                                      of 16-bit elements
 *   ldsm_x4<TRANS>(f, base, off)       ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16, this
 *                                      lane's 8-element row at base + off
 *   mma_16816(d, a, b, half)           mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32,
 *                                      d += a b, B's registers 2 half and 2 half + 1
 *   mma_16816_f16(d, a, b, half)       the same with fp16 inputs (.f32.f16.f16.f32)
 *   ldsm_from_regs(f, r0, r1, r2, r3)  an A fragment made of this lane's own four registers in
 *                                      mma.sync's A layout (an accumulator turned operand, no
 *                                      load): what a GPU passes to mma.sync as they are
 *
 * A kernel file that uses them writes the GPU's versions (inline PTX, a struct of four 32-bit
 * registers) under #ifndef HARNESS_EMU and includes this header otherwise: the same three names,
 * the same calls. (chapter 05's step 2 does: chapters/05-async-pipelining/mma_sync.cuh.)
 *
 * On a GPU, lane l gives the address of row l % 8 of matrix l / 8, and receives elements
 * 2 (l % 4) and 2 (l % 4) + 1 of row l / 4 of each matrix (with .trans: of column l / 4), one
 * register a matrix. mma.sync's fragments are those registers (PTX ISA, "Matrix Fragments for
 * mma.m16n8k16"), for lane l, g = l / 4, q = l % 4:
 *   A (16 x 16), 4 registers: a0 = A[g][2q..2q+1], a1 = A[g+8][2q..], a2 = A[g][8+2q..],
 *     a3 = A[g+8][8+2q..];
 *   B (16 x 8), 2 registers: b0 = B[2q..2q+1][g], b1 = B[8+2q..9+2q][g];
 *   C, D (16 x 8 fp32), 4 floats: d0, d1 = D[g][2q], D[g][2q+1]; d2, d3 = the same in row g+8.
 *
 * The model here: a fragment holds the four 8 x 8 matrices whole, as stored, gathered from the
 * rows whose addresses the 32 lanes give, exactly as the hardware assigns them (matrix i from
 * lanes 8i..8i+7), and whether they were loaded with .trans; the product reads each lane's
 * rows and columns of A and B out of them in the register layout above. So the addressing is
 * what is graded, as on a GPU, at 17 warp shuffles a load instead of 32 a product; A and B may
 * each be loaded with or without .trans (row- or column-major in shared memory). Products are
 * summed in float, k in order. bf16 and fp16 inputs; the other shapes and types are not here. */
#ifndef EMU_LDMATRIX_H
#define EMU_LDMATRIX_H

#include <stdint.h>
#include <string.h>

struct ldsm_frag {
    uint16_t m[4][8][8]; /* matrix, row, column: the 16-bit elements as stored */
    bool trans;          /* loaded with .trans */
};

namespace emu_ldsm {

inline float bf16_bits_to_float(uint16_t h)
{
    uint32_t b = (uint32_t)h << 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

inline float f16_bits_to_float(uint16_t h)
{
    int field = (h >> 10) & 0x1f, mant = h & 0x3ff;
    float sign = h & 0x8000 ? -1.0f : 1.0f;
    if (field == 31)
        return mant ? __builtin_nanf("") : sign * __builtin_inff();
    if (field == 0)
        return sign * __builtin_ldexpf((float)mant, -24);
    return sign * __builtin_ldexpf((float)(1024 + mant), field - 25);
}

/* element (r, c) of matrix i in the register layout (ldmatrix's output), from the stored one */
template <bool TRANS, bool F16> inline float elem(const ldsm_frag &f, int i, int r, int c)
{
    uint16_t h = TRANS ? f.m[i][c][r] : f.m[i][r][c];
    return F16 ? f16_bits_to_float(h) : bf16_bits_to_float(h);
}

/* d += a b in the register layout: row `row` of A is A(r, k) = register matrix
 * row / 8 + 2 (k / 8) at (row % 8, k % 8); column `col` (0-7) of B is B(k, n) = register matrix
 * 2 half + k / 8 at (n, k % 8) */
template <bool TA, bool TB, bool F16>
inline void mma(float (&d)[4], const ldsm_frag &a, const ldsm_frag &b, int half)
{
    int lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
    for (int e = 0; e < 4; e++) {
        int row = g + 8 * (e / 2), col = 2 * q + e % 2; /* this lane's d[e] */
        float sum = d[e];
        for (int kk = 0; kk < 16; kk++)
            sum += elem<TA, F16>(a, (row / 8) + 2 * (kk / 8), row % 8, kk % 8) *
                   elem<TB, F16>(b, 2 * half + kk / 8, col, kk % 8);
        d[e] = sum;
    }
}

} /* namespace emu_ldsm */

/* the four 8 x 8 matrices whose rows lanes 0-7, 8-15, 16-23, 24-31 point at: this lane's row is
 * base + off (8 elements of 16 bits). Warp-collective, like ldmatrix.sync: the warp operations
 * below report a lane that does not take part, at the caller's line. */
template <bool TRANS, class T>
inline void ldsm_x4(ldsm_frag &f, const T *base, int off, EMU_SITE)
{
    static_assert(sizeof(T) == 2, "ldmatrix moves 16-bit elements");
    int lane = threadIdx.x % 32;
    /* two lanes' offsets a shuffle: first pair each even lane with the odd one after it */
    int other = __shfl_xor_sync(0xffffffffu, off, 1, 32, emu_file_, emu_line_);
    uint32_t even = (uint32_t)(lane & 1 ? other : off), odd = (uint32_t)(lane & 1 ? off : other);
    unsigned long long pair = (unsigned long long)even | (unsigned long long)odd << 32;
    for (int j = 0; j < 16; j++) {
        unsigned long long p = __shfl_sync(0xffffffffu, pair, 2 * j, 32, emu_file_, emu_line_);
        for (int h = 0; h < 2; h++) {
            int src = 2 * j + h, row = (int)(uint32_t)(h ? p >> 32 : p);
            memcpy(f.m[src / 8][src % 8], base + row, 8 * sizeof(uint16_t));
        }
    }
    f.trans = TRANS;
}

namespace emu_ldsm {

template <bool F16>
inline void mma_any(float (&d)[4], const ldsm_frag &a, const ldsm_frag &b, int half)
{
    if (a.trans)
        b.trans ? mma<true, true, F16>(d, a, b, half) : mma<true, false, F16>(d, a, b, half);
    else
        b.trans ? mma<false, true, F16>(d, a, b, half) : mma<false, false, F16>(d, a, b, half);
}

} /* namespace emu_ldsm */

/* d += a b for one 16 x 8 x 16 product, bf16 inputs, fp32 accumulators: a as ldsm_x4 loads a
 * 16 x 16 tile of A (its matrices rows 0-7 and 8-15 of k 0-7, then the same of k 8-15), b as
 * ldsm_x4 loads 16 of k by 16 columns of B, of which `half` picks columns 0-7 (matrices 0, 1)
 * or 8-15 (2, 3) */
inline void mma_16816(float (&d)[4], const ldsm_frag &a, const ldsm_frag &b, int half)
{
    emu_ldsm::mma_any<false>(d, a, b, half);
}

/* the same, fp16 inputs */
inline void mma_16816_f16(float (&d)[4], const ldsm_frag &a, const ldsm_frag &b, int half)
{
    emu_ldsm::mma_any<true>(d, a, b, half);
}

/* An A fragment from registers: lane l (g = l / 4, q = l % 4) holds, two 16-bit elements a
 * register (the lower one first), r0 = A[g][2q..2q+1], r1 = A[g+8][2q..], r2 = A[g][8+2q..],
 * r3 = A[g+8][8+2q..], as mma.sync reads A and as an m16n8k16 accumulator pair lays out its
 * rows. On a GPU the registers are the operand; here every lane gathers the four matrices
 * from the 32 lanes (64 warp shuffles). Warp-collective. */
inline void ldsm_from_regs(ldsm_frag &f, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3,
                           EMU_SITE)
{
    const unsigned long long lo = (unsigned long long)r0 | (unsigned long long)r1 << 32;
    const unsigned long long hi = (unsigned long long)r2 | (unsigned long long)r3 << 32;
    for (int src = 0; src < 32; src++) {
        unsigned long long p[2] = { __shfl_sync(0xffffffffu, lo, src, 32, emu_file_, emu_line_),
                                    __shfl_sync(0xffffffffu, hi, src, 32, emu_file_, emu_line_) };
        for (int i = 0; i < 4; i++) {
            uint32_t reg = (uint32_t)(p[i / 2] >> (32 * (i % 2)));
            f.m[i][src / 4][2 * (src % 4)] = (uint16_t)reg;
            f.m[i][src / 4][2 * (src % 4) + 1] = (uint16_t)(reg >> 16);
        }
    }
    f.trans = false;
}

#endif
