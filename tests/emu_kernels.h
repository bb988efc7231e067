/* emu_kernels.h: the kernels of the emulator's own tests (tests/emu_kernels.cu), behind C
 * launchers, for tests/emu.c.
 *
 * Each ek_* function allocates what it needs, runs its kernel, copies the results to the host
 * arrays it is given and returns the first error of the launch (cudaGetLastError) or of the
 * synchronisation after it. The ek_launch_* functions only launch, so that a test can look at
 * each error call itself. */
#ifndef EMU_KERNELS_H
#define EMU_KERNELS_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* barriers */
cudaError_t ek_barrier_rotate(int n, int *out);           /* out[i] = s[(i + 1) % n] */
cudaError_t ek_barrier_votes(int n, int modulo, int *count, int *all, int *any);
cudaError_t ek_early_exit(int n, int live, int *out);     /* threads >= live exit first */
/* out[i] = in[i - 1] with in[i] = base + i. Static shared memory keeps its contents from one
 * block (and launch) to the next, as it may on a GPU: vary base between runs. */
cudaError_t ek_missing_barrier(int n, int base, int with_barrier, int *out);
void ek_launch_divergent_barriers(void);
void ek_launch_warp_op_without_lanes(void);

/* warp operations: lane values are lane * 10 + 1 (64-bit), width and arg as in CUDA */
enum ek_shfl_kind { EK_SHFL_IDX, EK_SHFL_UP, EK_SHFL_DOWN, EK_SHFL_XOR };
cudaError_t ek_shfl(enum ek_shfl_kind kind, int arg, int width, long long out[32]);
cudaError_t ek_shfl_float(int src, float out[32]);        /* a 4-byte type, __shfl_sync */
/* lanes with lane % modulo == 0 vote 1; only the lanes of mask take part */
cudaError_t ek_votes(unsigned mask, int modulo, unsigned ballot[32], int any[32], int all[32]);
/* __reduce_*_sync over lane values v = (lane * 7) % 11 - 3 */
cudaError_t ek_warp_reduce(int *add, int *min, int *max, unsigned *umax, unsigned *and_,
                           unsigned *or_, unsigned *xor_);
cudaError_t ek_match_any(unsigned out[32]);               /* value = lane % 4 */
cudaError_t ek_partial_warp_sum(int nthreads, int *sum);  /* warp sums in a 48-thread block */
cudaError_t ek_active_mask(int live, unsigned *mask);     /* lanes >= live exited */
cudaError_t ek_syncwarp_exchange(int out[32]);            /* s[lane] written, __syncwarp, read */

/* atomics: `blocks` x 256 threads, every thread updates one counter */
struct ek_atomics {
    int add_i, sub_i, min_i, max_i, and_i, or_i, xor_i, cas_i, exch_seen;
    unsigned add_u, inc_u, dec_u, max_u;
    unsigned long long add_ull, min_ull;
    float add_f;
    double add_d;
};
cudaError_t ek_atomics(int blocks, struct ek_atomics *out);

/* shared memory */
cudaError_t ek_dynamic_smem_reverse(int n, size_t smem_bytes, int *out);
cudaError_t ek_dynamic_smem_first_read(unsigned *bits);   /* a read before any write */
cudaError_t ek_raise_dynamic_smem(int bytes);             /* cudaFuncSetAttribute */
cudaError_t ek_static_smem_blocks(int blocks, int *out);  /* each block writes, then reads */

/* grids: every thread writes (block linear id * threads + thread linear id) at its slot */
cudaError_t ek_grid_ids(dim3 grid, dim3 block, unsigned *out);
cudaError_t ek_block_order(int blocks, int *order);       /* the order blocks ran in */

/* launch forms: a template kernel, a kernel from a table, a multi-line launch with a stream */
cudaError_t ek_launch_forms(int out[4]);
cudaError_t ek_constant_symbol(const float *values, int n, float *out);

/* cooperative groups and cuda_pipeline.h */
struct ek_groups {
    unsigned rank[64], tile_rank[64], meta_rank[64], tile_ballot[64];
    int tile_sum[64], reduce_sum[64], dyn_rank[64], block_size;
};
cudaError_t ek_cooperative_groups(struct ek_groups *out);
cudaError_t ek_pipeline_copy(const float *in, int n, int zfill_floats, float *out);
/* in: 3 x 128 floats, out: 3 x 128 + 4 (pipeline_stages_kernel in emu_kernels.cu says what
 * each mode waits for and reads) */
cudaError_t ek_pipeline_stages(const float *in, int mode, float *out);

/* __half and __nv_bfloat16 */
cudaError_t ek_half_bf16(float a, float b, float *half_sum, float *bf16_product, float *half2_low);

/* WMMA (mma.h): one warp computes c = a b + 1 for 16 x 16 x 16, a and b given as floats that
 * bf16 holds exactly; b is read as col_major when b_col_major, c stored as mem_col_major when
 * c_col_major. Returns the launch's error. */
cudaError_t ek_wmma_bf16(const float *a, const float *b, int b_col_major, int c_col_major,
                         float *c);

/* errors */
void ek_launch_config(dim3 grid, dim3 block, size_t smem);  /* a trivial kernel */
int ek_launch_out_of_bounds(float *d, int n, int offset);   /* d[n + offset] = 1; its line */
void ek_launch_read(const float *d, float *out);            /* out[0] = d[0] */
void ek_launch_trap(void);
void ek_launch_assert(int value);                           /* assert(value != 7) */
void ek_launch_big_frame(float *out);                       /* 256 KiB of locals */
void ek_launch_divide(int *out, int divisor);
const void *ek_out_of_bounds_kernel(void);

#ifdef __cplusplus
}
#endif

#endif
