/* array_family.h: the grading family of the chapters whose kernels read one float array and
 * write another of the same length (02's transpose, 03's process), as a flow_kind
 * (harness/flow.h).
 *
 *   shapes     { rows, cols } for a 2-D array, named "ROWSxCOLS", launched fn(d_in, d_out, rows,
 *              cols); ARRAY_N(n) for a 1-D one, named "n = N", launched fn(d_in, d_out, n)
 *   inputs     uniform in [-1, 1): rarely equal to one another, so an element that lands in the
 *              wrong place shows
 *   reference  a move (out is in, copied or transposed: exact, in the bench too, where a double
 *              reference of 16384^2 would take 2 GiB), or computed by the chapter from in
 *              (within rtol and atol)
 *   check      guard zones of out, then of in, then compare_f32: "SHAPE: WHAT: 12 of 1000 wrong,
 *              ..." (cmp_describe), with the chapter's hint
 *   bench      flow_bench over the kind (array_bench): rows named by the shape, with GB/s
 *
 *   static const struct array_kind TRANSPOSE = {
 *       ARRAY_FLOW, .dims = ARRAY_2D, .move = ARRAY_TRANSPOSE, .guard_hint = "...",
 *       .hint = transpose_hint,
 *   };
 *
 * It includes no chapter header: kernels come in as function pointers. */
#ifndef ARRAY_FAMILY_H
#define ARRAY_FAMILY_H

#include "flow.h"
#include "tolerance.h"

struct array_shape { int rows, cols; }; /* 1-D: cols 0, ARRAY_N(n) */
#define ARRAY_N(n) { (n), 0 }

enum array_dims { ARRAY_1D, ARRAY_2D };

/* What out must hold: in itself (a copy), in transposed (out is cols x rows, and messages give
 * positions as (row, col) of out), or the chapter's reference computed from in. */
enum array_move { ARRAY_COMPUTED, ARRAY_COPY, ARRAY_TRANSPOSE };

/* Host and device buffers of one problem: what a chapter's reference, hint and vetting read. */
struct array_problem {
    const struct array_kind *k;
    const struct array_kind *bench_as; /* the kind a bench rung's output is checked as */
    struct array_shape s;
    size_t n;                /* elements of in, and of out */
    float *h_in, *h_out;     /* h_out: out as read back by the last check */
    double *ref;             /* what out must hold (tests only: the bench checks moves only) */
    float *d_in, *d_out;
};

/* A chapter's guess at the cause of wrong values (h_out holds them), into hint; "" for none. */
typedef void (*array_hint_fn)(const struct array_problem *p, const struct cmp_result *c,
                              char *hint, size_t len);

struct array_kind {
    struct flow_kind kind;   /* ARRAY_FLOW: the family's callbacks */
    enum array_dims dims;
    enum array_move move;
    void (*reference)(const struct array_problem *p); /* ARRAY_COMPUTED: p->ref from p->h_in */
    double rtol, atol;       /* ARRAY_COMPUTED's tolerance, from tolerance.h (a move: TOL_EXACT) */
    const char *guard_hint;  /* the hint when a store lands past the end of out */
    const char *in_guard_hint; /* ... around in, which is only read (NULL: the family's) */
    array_hint_fn hint;      /* the hint on wrong values (NULL, or "" from it: cmp_hint's) */
};

void *array_init(const struct flow_kind *k, const void *shape);
void array_fill(void *p, struct rng *r);
void array_fill_inputs(void *p, struct rng *r);
void array_adopt(void *p);
void array_launch(void *p, flow_fn fn);
void array_check(void *p, int slot, const char *what);
void array_poison(void *p);
void array_free(void *p);
void array_shape_name(const void *shape, char *buf, size_t len);
double array_elements(const void *shape);
int array_bench_check(void *p, const char *name, const char *shape);
void array_bench_select(void *p, const void *arg);

#define ARRAY_FLOW                                                                             \
    .kind = { sizeof(struct array_shape), array_init, array_fill, array_launch, NULL,          \
              array_check, array_poison, array_free, array_shape_name, array_elements,         \
              "elements", array_fill_inputs, array_bench_check, array_fill_inputs, array_adopt,  \
              array_bench_select }

/* The bytes a kernel of the family must move: in read once, out written once. */
double array_bytes(const void *shape);

/* The bench of a chapter of the family: every rung at each shape, on the same inputs in one
 * run, rows with GB/s. A rung's arg is the kind its output is checked as (NULL: k). */
int array_bench(const char *chapter, const struct array_kind *k, const struct array_shape *shapes,
                int nshapes, const struct flow_rung *rungs, int nrungs, int warmup, int reps,
                const char *path);

#endif
