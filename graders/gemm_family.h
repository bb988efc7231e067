/* gemm_family.h: the grading family of the matmul chapters (01, 04, 05): C = A B, row-major,
 * fp32 C, A and B fp32 or bf16 (as their 16 bits), as a flow_kind (harness/flow.h).
 *
 *   reference  ref_matmul in double on the host: every element, or (sampled, chapter 04) past
 *              GEMM_FULL_REF_MACS a sample of GEMM_SAMPLE_ROWS rows spread over C, every element
 *              of C still required to be written; or cuBLAS's own result (sgemm, bf16 GemmEx),
 *              with |A||B| from the host (fp32) or from cuBLAS on |A|, |B| (bf16), checked at
 *              TOL_TWO_SIDED times the tolerance (both sides round)
 *   check      guard zones, then compare_f32 at tol_dot_fp32(k) or tol_dot_bf16(k)
 *              (tolerance.h), relative to |A||B|: "MxKxN: WHAT: 12 of 1000
 *              wrong, ..." (cmp_describe), with a hint: cmp_hint's guess, the chapter's own
 *              (hint_fn), or the kind's given hint (first, when given_first)
 *   bench      flow_bench over the kind, rows "MxKxN" with GB/s and GFLOP/s; gemm_tune, chapter
 *              04's table of tile configurations
 *
 * A chapter declares its kinds as statics:
 *
 *   static const struct gemm_kind MATMUL = {
 *       GEMM_FLOW, .input = GEMM_F32, .guard_hint = "...", .hint = "...",
 *   };
 *   flow_add_correct(s, &MATMUL.kind, &SHAPES, (flow_fn)matmul, "matmul");
 *
 * It includes no chapter header: kernels come in as function pointers. */
#ifndef GEMM_FAMILY_H
#define GEMM_FAMILY_H

#include <stdint.h>

#include "flow.h"

#define GEMM_FULL_REF_MACS 1.3e9 /* above this, a sampled reference (sampled kinds) */
#define GEMM_SAMPLE_ROWS 64

struct gemm_shape { int m, k, n; };

typedef void (*gemm_f32_fn)(const float *d_a, const float *d_b, float *d_c, int m, int k, int n);
typedef void (*gemm_bf16_fn)(const uint16_t *d_a, const uint16_t *d_b, float *d_c, int m, int k,
                             int n);

enum gemm_input { GEMM_F32, GEMM_BF16 };
enum gemm_ref { GEMM_REF_HOST, GEMM_REF_LIBRARY };

/* A chapter's guess at the cause of wrong values, from the comparison and C as read back;
 * writes hint (always: the family shows it as it is). */
typedef void (*gemm_hint_fn)(const struct cmp_result *c, const float *got, struct gemm_shape s,
                             char *hint, size_t len);

struct gemm_kind {
    struct flow_kind kind;      /* GEMM_FLOW: the family's callbacks */
    enum gemm_input input;
    enum gemm_ref ref;          /* the tests' reference (the bench's is always the library) */
    int sampled;                /* 1: a sample of rows past GEMM_FULL_REF_MACS (and in bench) */
    const char *guard_hint;     /* the hint when a store lands past the end of C */
    const char *hint;           /* the hint when the guess has none */
    int given_first;            /* 1: `hint` even when the guess has one (it knows more) */
    gemm_hint_fn hint_fn;       /* the chapter's guess in place of cmp_hint's; NULL: cmp_hint */
};

void *gemm_init(const struct flow_kind *k, const void *shape);
void gemm_fill(void *p, struct rng *r);
/* gemm_fill without the reference (the same draws from r): what a runner needs (flow.c) */
void gemm_fill_inputs(void *p, struct rng *r);
void gemm_launch(void *p, flow_fn fn);
int gemm_library(void *p);
void gemm_check(void *p, int slot, const char *what);
void gemm_poison(void *p);
void gemm_free(void *p);
void gemm_shape_name(const void *shape, char *buf, size_t len);
double gemm_macs(const void *shape);
void gemm_bench_fill(void *p, struct rng *r);
int gemm_bench_check(void *p, const char *name, const char *shape);

#define GEMM_FLOW                                                                              \
    .kind = { sizeof(struct gemm_shape), gemm_init, gemm_fill, gemm_launch, gemm_library,      \
              gemm_check, gemm_poison, gemm_free, gemm_shape_name, gemm_macs, "multiply-adds",  \
              gemm_bench_fill, gemm_bench_check, gemm_fill_inputs }

/* 2 m k n, the FLOPs of a shape; and the bytes a GEMM must move: A, B and C once each. */
double gemm_flops(const void *shape);
double gemm_bytes_f32(const void *shape);
double gemm_bytes_bf16(const void *shape);

/* FLOP/s over `unit` (1e9: GFLOP/s, 1e12: TFLOP/s) of a shape done in ms. */
double gemm_rate(struct gemm_shape s, double ms, double unit);

/* bf16 on the host: round to nearest, ties to even (what __float2bfloat16 does; finite
 * inputs), and back. */
uint16_t gemm_bf16_from_float(float f);
float gemm_bf16_to_float(uint16_t h);

/* The common bench of a GEMM chapter: every rung, then cuBLAS, at each shape, 2 warm-up runs
 * and 10 timed (5 at 8e9 multiply-adds and more), rows "MxKxN" with GB/s and GFLOP/s. */
int gemm_bench(const char *chapter, const struct gemm_kind *k, const struct gemm_shape *shapes,
               int nshapes, const struct flow_rung *rungs, int nrungs, const char *path);

/* ---- tuning (chapter 04's --tune) ------------------------------------------------------------
 * Every candidate at every shape, each checked against cuBLAS (sampled as in bench), and the
 * table a tuned launcher reads, written whole at the end:
 *   # device: NVIDIA H200          comment lines: device, driver, date, then a legend
 *   device  m  n  k  config  ms  gflops  best
 * one row per (shape, candidate) measured; best = 1 on the fastest candidate of each shape. */
struct gemm_candidate {
    const char *name;
    gemm_f32_fn fn;
    int smem_bytes;             /* shared memory a block: skipped where the device has less */
};

int gemm_tune(const struct gemm_kind *k, const struct gemm_shape *shapes, int nshapes,
              const struct gemm_candidate *c, int ncand, const char *legend, const char *path);

#endif
