/* array_family.c: the grading family of one array in, one array out (see array_family.h). */
#include "array_family.h"

#include <stdlib.h>
#include <string.h>

typedef void (*array_1d_fn)(const float *d_in, float *d_out, int n);
typedef void (*array_2d_fn)(const float *d_in, float *d_out, int rows, int cols);

static size_t elements_of(struct array_shape s)
{
    return (size_t)s.rows * (s.cols ? (size_t)s.cols : 1);
}

void array_shape_name(const void *shape, char *buf, size_t len)
{
    const struct array_shape *s = shape;
    if (s->cols)
        snprintf(buf, len, "%dx%d", s->rows, s->cols);
    else
        snprintf(buf, len, "n = %d", s->rows);
}

double array_elements(const void *shape)
{
    return (double)elements_of(*(const struct array_shape *)shape);
}

double array_bytes(const void *shape)
{
    return 2.0 * array_elements(shape) * sizeof(float);
}

void *array_init(const struct flow_kind *kind, const void *shape)
{
    struct array_problem *p = xmalloc(sizeof *p);
    memset(p, 0, sizeof *p);
    p->k = p->bench_as = (const struct array_kind *)kind;
    p->s = *(const struct array_shape *)shape;
    p->n = elements_of(p->s);
    p->h_in = xmalloc(p->n * sizeof(float));
    p->h_out = xmalloc(p->n * sizeof(float));
    p->d_in = dbuf_alloc_input(p->n * sizeof(float), "d_in");
    p->d_out = dbuf_alloc(p->n * sizeof(float), "d_out");
    return p; /* the reference on first use: the bench has none */
}

void array_free(void *pp)
{
    struct array_problem *p = pp;
    dbuf_free(p->d_in);
    dbuf_free(p->d_out);
    free(p->h_in);
    free(p->h_out);
    free(p->ref);
    free(p);
}

void array_poison(void *p)
{
    dbuf_poison(((struct array_problem *)p)->d_out);
}

/* out[k] of a move is in[source(k)]: out of a transpose is cols x rows, out(c, r) = in(r, c). */
static size_t source(const struct array_problem *p, enum array_move m, size_t k)
{
    if (m != ARRAY_TRANSPOSE)
        return k;
    size_t rows = (size_t)p->s.rows;
    return (k % rows) * (size_t)p->s.cols + k / rows;
}

void array_fill_inputs(void *pp, struct rng *r)
{
    struct array_problem *p = pp;
    rng_fill_f32(r, p->h_in, p->n, -1.0f, 1.0f);
    to_device(p->d_in, p->h_in, p->n * sizeof(float));
    dbuf_poison(p->d_out);
}

void array_fill(void *pp, struct rng *r)
{
    struct array_problem *p = pp;
    if (!p->ref)
        p->ref = xmalloc(p->n * sizeof(double));
    rng_fill_f32(r, p->h_in, p->n, -1.0f, 1.0f);
    if (p->k->move == ARRAY_COMPUTED)
        p->k->reference(p);
    else
        for (size_t k = 0; k < p->n; k++)
            p->ref[k] = p->h_in[source(p, p->k->move, k)];
    to_device(p->d_in, p->h_in, p->n * sizeof(float));
    dbuf_poison(p->d_out);
}

void array_adopt(void *pp)
{
    struct array_problem *p = pp;
    if (!p->ref)
        p->ref = xmalloc(p->n * sizeof(double));
    to_host(p->h_out, p->d_out, p->n * sizeof(float));
    for (size_t k = 0; k < p->n; k++)
        p->ref[k] = p->h_out[k];
}

void array_launch(void *pp, flow_fn fn)
{
    struct array_problem *p = pp;
    if (p->k->dims == ARRAY_2D)
        ((array_2d_fn)fn)(p->d_in, p->d_out, p->s.rows, p->s.cols);
    else
        ((array_1d_fn)fn)(p->d_in, p->d_out, (int)p->n);
}

void array_check(void *pp, int slot, const char *what)
{
    struct array_problem *p = pp;
    const struct array_kind *k = p->k;
    char shape[48], guard[256];
    array_shape_name(&p->s, shape, sizeof shape);
    if (dbuf_check_guards(p->d_out, guard, sizeof guard) != 0) {
        grade_hint(slot, "%s", k->guard_hint);
        ck_abort_msg("%s: %s: %s", shape, what, guard);
    }
    if (dbuf_check_guards(p->d_in, guard, sizeof guard) != 0) {
        grade_hint(slot, "%s", k->in_guard_hint ? k->in_guard_hint
                                                : "the kernel wrote around in, which it only "
                                                  "reads: are in and out swapped somewhere?");
        ck_abort_msg("%s: %s: %s", shape, what, guard);
    }
    to_host(p->h_out, p->d_out, p->n * sizeof(float));
    /* a row of out: in's for a copy, in's column for a transpose; none for a 1-D array */
    int transposed = k->move == ARRAY_TRANSPOSE;
    size_t out_rows = (size_t)(transposed ? p->s.cols : p->s.rows);
    size_t out_cols = (size_t)(p->s.cols == 0 ? 0 : transposed ? p->s.rows : p->s.cols);
    int exact = k->move != ARRAY_COMPUTED;
    struct cmp_result c = compare_f32(p->h_out, p->ref, NULL, p->n, out_cols,
                                      exact ? TOL_EXACT : k->rtol, exact ? TOL_EXACT : k->atol);
    if (c.bad == 0)
        return;
    char desc[512], hint[600] = "";
    cmp_describe(&c, out_cols, desc, sizeof desc);
    if (k->hint)
        k->hint(p, &c, hint, sizeof hint);
    if (!hint[0])
        cmp_hint(&c, out_cols ? out_rows : p->n, out_cols, hint, sizeof hint);
    grade_hint(slot, "%s", hint);
    if (transposed)
        ck_abort_msg("%s: %s: %s (positions are (row, col) of out, which is %zux%zu)", shape,
                     what, desc, out_rows, out_cols);
    ck_abort_msg("%s: %s: %s", shape, what, desc);
}

/* ---- bench ---------------------------------------------------------------------------------- */

void array_bench_select(void *pp, const void *arg)
{
    struct array_problem *p = pp;
    p->bench_as = arg ? arg : p->k;
}

/* Exact, without a double reference: out[k] is in[source(k)], bit for bit. A computed kind's
 * output is not checked here. */
int array_bench_check(void *pp, const char *name, const char *shape)
{
    struct array_problem *p = pp;
    enum array_move m = p->bench_as->move;
    if (m == ARRAY_COMPUTED)
        return 0;
    to_host(p->h_out, p->d_out, p->n * sizeof(float));
    for (size_t k = 0; k < p->n; k++)
        if (memcmp(&p->h_out[k], &p->h_in[source(p, m, k)], sizeof(float))) {
            fprintf(stderr, "bench: %s at %s is wrong: out[%zu] = %g\n", name, shape, k,
                    p->h_out[k]);
            return -1;
        }
    return 0;
}

int array_bench(const char *chapter, const struct array_kind *k, const struct array_shape *shapes,
                int nshapes, const struct flow_rung *rungs, int nrungs, int warmup, int reps,
                const char *path)
{
    const struct flow_bench b = {
        .chapter = chapter, .kind = &k->kind, .shapes = shapes, .nshapes = nshapes,
        .rungs = rungs, .nrungs = nrungs, .warmup = warmup, .reps = reps, .bytes = array_bytes,
        .print_unit = 1e9, .print_label = "GB/s", .shape_width = 12, .name_width = 10,
    };
    return flow_bench(&b, path);
}
