/* mma_sync.cuh: the warp-level tensor-core instructions of chapter 05's step 2 (given):
 * ldmatrix (ldsm_x4) and mma.sync m16n8k16 bf16 (mma_16816), wrapped as inline PTX, and the
 * layouts of their fragments. What step 2 is about is where each lane points ldmatrix and how
 * the ring feeds them; the instructions themselves are given here.
 *
 * The CPU backend has no PTX: there the same three names come from its emu/ldmatrix.h, which
 * gathers the 8 x 8 matrices from the rows the lanes name, lane by lane as ldmatrix assigns
 * them, so the lanes' addressing is graded without a GPU too. */
#ifndef MMA_SYNC_CUH
#define MMA_SYNC_CUH

#include <stdint.h>

#include <cuda_bf16.h>

typedef __nv_bfloat16 bf16;

/* WMMA's load_matrix_sync hides how a fragment reaches the registers, and for bf16 on sm_90
 * the answer is plain 32-bit shared loads (LDS), four a fragment, and no LDSM at all.
 * ldmatrix (LDSM) loads four 8 x 8 matrices of 16-bit elements for the whole warp in one
 * instruction, each lane giving the address of one 8-element row and receiving two elements of each matrix in the layout mma.sync wants. With it the warp issues
 * 8 shared loads for 32 tensor-core instructions per 16 of k, instead of 32 and more.
 *
 * mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32, for lane l, g = l / 4, q = l % 4
 * (PTX ISA, "Matrix Fragments for mma.m16n8k16"):
 *   A (16 x 16, row-major), 4 registers of 2 bf16: a0 = A[g][2q..2q+1], a1 = A[g+8][2q..],
 *     a2 = A[g][8+2q..], a3 = A[g+8][8+2q..];
 *   B (16 x 8), 2 registers: b0 = B[2q..2q+1][g], b1 = B[8+2q..9+2q][g];
 *   C, D (16 x 8 fp32), 4 floats: d0, d1 = D[g][2q], D[g][2q+1]; d2, d3 = the same in row g+8.
 * ldmatrix.x4 gives exactly a0..a3 when lane l points at row l % 16, column 8 (l / 16) of the
 * 16 x 16 A tile; ldmatrix.x4.trans, reading B's rows of k (n contiguous in shared memory),
 * gives b0, b1 for two 8-column blocks when lane l points at row l % 16, column 8 (l / 16).
 */
#ifdef HARNESS_EMU
#include <emu/ldmatrix.h>
#else
struct ldsm_frag {
    uint32_t r[4]; /* matrix q's two elements for this lane in r[q] */
};

/* the four 8 x 8 matrices whose rows lanes 0-7, 8-15, 16-23, 24-31 point at: this lane's row is
 * base + off. TRANS: each matrix transposed on the way (ldmatrix .trans), lane l getting rows
 * 2 (l % 4) and 2 (l % 4) + 1 of column l / 4; for B, whose rows in shared memory run along n. */
template <bool TRANS>
static __device__ __forceinline__ void ldsm_x4(ldsm_frag &f, const bf16 *base, int off)
{
    unsigned a = (unsigned)__cvta_generic_to_shared(base + off);
    if (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(f.r[0]), "=r"(f.r[1]), "=r"(f.r[2]), "=r"(f.r[3]) : "r"(a) : "memory");
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(f.r[0]), "=r"(f.r[1]), "=r"(f.r[2]), "=r"(f.r[3]) : "r"(a) : "memory");
}

/* d += a b for one 16 x 8 x 16 product: a as ldsm_x4<false> loads a 16 x 16 tile of A (its
 * matrices are rows 0-7 and 8-15 of k 0-7, then the same of k 8-15), b as ldsm_x4<true> loads
 * 16 of k by 16 columns of B, of which `half` picks columns 0-7 (matrices 0, 1) or 8-15 (2, 3) */
static __device__ __forceinline__ void mma_16816(float (&d)[4], const ldsm_frag &a,
                                                 const ldsm_frag &b, int half)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[2 * half]),
          "r"(b.r[2 * half + 1]));
}
#endif

#endif
