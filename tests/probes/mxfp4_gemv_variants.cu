// mxfp4_gemv_variants.cu: a probe for chapter 11's step 4, the weight-only MXFP4 GEMV. It times
// cuBLAS's BF16 GEMM of the same shape, a plain read of the MXFP4 weights' bytes, and any number
// of variants of the step, each built from a copy of the step's source under a name of its own,
// in one process, in turns: a run is cuBLAS, the read, then every variant, and the runs repeat,
// so that each ratio is taken against cuBLAS a few milliseconds away, at nearly the same clock.
// Each design is timed as the chapter's bench times it (harness/gpu.h, gpu_time: the L2 flushed
// before each launch, the median of 20 launches after 3 unmeasured), so the weights come from
// DRAM every time: at k = n = 8192 the MXFP4 weights (34 MiB) would otherwise fit in the H200's
// L2 (60 MiB).
//
// The read is the floor of any kernel that reads these bytes: every byte of the codes and the
// scales once, 16 bytes a lane, a grid of 8 CTAs of 256 threads an SM, and nothing else. At m = 1
// its ratio to cuBLAS is what the bytes allow when timed this way, start and end included.
//
// Before timing, every variant's y is compared with a double-precision reference on a sample of
// 256 columns (all of them when n is smaller), on the same random inputs (the harness's
// generator: fresh each run, SEED=... to repeat one): x bf16 in runs of 16 of magnitude
// 2^U(-3, 3), codes random bytes, scales 2^-12 .. 2^12. The largest |got - want| / S, S the sum
// of the terms' magnitudes, is printed; the grader (make grade CH=11 STEP=4), not this probe,
// says whether a variant is correct.
//
// The flush (the fourth argument): "memset", the harness's, leaves L2 full of the dirty lines
// of a 120 MiB memset, and a kernel's reads must write them back as they evict them; "clean"
// then reads the buffer back, so that L2 holds clean lines that cost nothing to evict. cuBLAS
// reads 128 MiB and evicts all of them; the MXFP4 kernels read 34 MiB and evict about as much:
// the two flushes bracket what a kernel meets after others have run. "stream" flushes nothing:
// it runs STREAM_LAYERS layers back to back, as a decode step does, each with weights of its own
// (copies of the first layer's), 8 x 34 MiB of MXFP4 or 8 x 128 MiB of bf16, several times L2,
// so that each layer's weights have left L2 by the time they come round again, and what L2 holds
// when a layer starts is the clean lines of the layers before it. A short kernel that holds the
// GPU until every launch is queued goes first, so that neither the launches' cost on the host
// nor a gap between them is timed; us is then the layers' time over their number.
//
// Rows (tab-separated, to the file named by the first argument, with a header):
//   design m flush run us gbs sm_mhz watts ratio
// us: one launch, the median of the run's 20; gbs: the design's bytes (cuBLAS: x, W in bf16 and
// y; the read: W's codes and scales; a variant: those and x and y) over that time; sm_mhz and
// watts: NVML's SM clock (median) and board power (mean) while the 20 ran; ratio: the same run's
// cuBLAS time over this row's. The medians over the runs go to stdout.
//
// Build (the variants, each a -D set applied to the step's source or another file, are named on
// the command line) and run on a GPU of compute capability 8.0 or more:
//   make B=cuda build/cuda/chapters/11-mixed-precision/grade   # the harness's objects
//   tests/probes/mxfp4_gemv_variants.sh reference: other:@my_step4.cu
//   build/cuda/probes/mxfp4_gemv_variants out.tsv [runs, 9] [m values, "1"] [flush, memset]
//   (flush: memset, clean or stream)
// tests/probes/mxfp4_reads.cu is a variant of its own: other plain reads of the same bytes.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#include "blas.h"
#include "cuda_check.h"
#include "gpu.h"
#include "harness.h"
#include "quant.h"
#include "probe_args.h"
#include "read_bytes.cuh"

typedef void (*gemv_fn)(const uint16_t *, const uint8_t *, const uint8_t *, float *, int, int,
                        int);

// VARIANTS is V(name) V(name) ...: each name a copy of gemm_mxfp4_bf16 (the build script)
#ifndef VARIANTS
#error "build with -DVARIANTS='V(a) V(b)': tests/probes/mxfp4_gemv_variants.sh"
#endif
#define V(name)                                                                                    \
    extern "C" void name(const uint16_t *, const uint8_t *, const uint8_t *, float *, int, int,  \
                         int);
VARIANTS
#undef V

// the harness's median (it reorders its input: a copy)
static double median_of(std::vector<double> v) { return median(v.data(), (int)v.size()); }

// the clean flush: the flush buffer read back after its memset (its first word the sink)
static void clean_flush(void *buf, size_t bytes)
{
    read_bytes_launch<1, false>(buf, bytes, nullptr, 0, static_cast<unsigned *>(buf));
}

static uint16_t bf16_of(float f) // round to nearest even; f finite
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + (u >> 16 & 1u);
    return (uint16_t)(u >> 16);
}

static double bf16_value(uint16_t h)
{
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static const double E2M1[8] = { 0, 0.5, 1, 1.5, 2, 3, 4, 6 };
static double e2m1_value(unsigned c) { return (c & 8 ? -1 : 1) * E2M1[c & 7]; }

#define STREAM_LAYERS 8

struct ctx {
    int design; // -2 cuBLAS, -1 the read, else a variant
    gemv_fn fn;
    const uint16_t *x, *wb[STREAM_LAYERS]; // every layer's weights, bf16 and MXFP4
    const uint8_t *w[STREAM_LAYERS], *ws[STREAM_LAYERS];
    float *y;
    unsigned *sink;
    int m, k, n;
    int layer; // the layer run_one runs
};

static void run_one(void *p)
{
    const struct ctx *c = (const struct ctx *)p;
    const int l = c->layer;
    if (c->design == -2) {
        if (blas_gemm_bf16(c->x, c->wb[l], c->y, c->m, c->k, c->n) != 0) {
            fprintf(stderr, "cuBLAS: %s\n", blas_unavailable_reason());
            exit(1);
        }
    } else if (c->design == -1) {
        read_bytes_launch<1, false>(c->w[l], (size_t)c->n * c->k / 2, c->ws[l],
                                    (size_t)c->n * c->k / MX_BLOCK, c->sink);
    } else {
        c->fn(c->x, c->w[l], c->ws[l], c->y, c->m, c->k, c->n);
    }
}

// holds the GPU for ns nanoseconds (%globaltimer), so that what the host queues behind it is
// all queued when it ends
static __global__ void gate(long long ns)
{
    long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    while (t - t0 < ns);
}

// The stream: the STREAM_LAYERS layers once each, in order, behind the gate; the median over
// reps of their time over their number, and the clocks while the reps ran. Nothing is flushed:
// each layer evicts what the ones before it left in L2.
static struct timing stream_time(struct ctx *c, int warmup, int reps)
{
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    for (int i = 0; i < warmup; i++)
        for (c->layer = 0; c->layer < STREAM_LAYERS; c->layer++)
            run_one(c);
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<double> ms(reps);
    gpu_clocks_start();
    for (int i = 0; i < reps; i++) {
        gate<<<1, 1>>>(400000); // 0.4 ms: the layers' launches take less to queue
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaEventRecord(start, 0));
        for (c->layer = 0; c->layer < STREAM_LAYERS; c->layer++)
            run_one(c);
        CUDA_CHECK(cudaEventRecord(stop, 0));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float t;
        CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
        ms[i] = t / STREAM_LAYERS;
    }
    struct timing r = {};
    r.clocks = gpu_clocks_stop();
    c->layer = 0;
    r.reps = reps;
    r.median_ms = median_of(ms);
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    return r;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUT.tsv [runs, 9] [m values, \"1\"] [flush: memset, clean or "
                        "stream]\n",
                argv[0]);
        return 2;
    }
#define V(name) { #name, name },
    const probe_variant<gemv_fn> variants[] = { VARIANTS };
#undef V
    const int nv = (int)(sizeof variants / sizeof variants[0]);
    const int runs = probe_runs(argc > 2 ? argv[2] : nullptr);
    if (!runs)
        return 2;
    std::vector<int> ms_list;
    if (!probe_ints(argc > 3 ? argv[3] : "1", 1, 64, 1, "m", ms_list))
        return 2;
    const char *flush = argc > 4 ? argv[4] : "memset";
    const bool stream = strcmp(flush, "stream") == 0;
    if (strcmp(flush, "memset") != 0 && strcmp(flush, "clean") != 0 && !stream) {
        fprintf(stderr, "flush: memset, clean or stream, not '%s'\n", flush);
        return 2;
    }
    FILE *out = probe_open(argv[1]);
    if (!out)
        return 1;
    fprintf(out, "# chapter 11, step 4: cuBLAS BF16, a plain read of the MXFP4 weights' bytes and "
                 "the variants, k = n = 8192, timed in turns in one process "
                 "(tests/probes/mxfp4_gemv_variants.cu), each the median of 20 launches after an "
                 "L2 flush each (flush: memset, the harness's, which leaves L2 dirty, or clean, "
                 "the memset then a read of its buffer), or (stream) the median of 20 runs of %d "
                 "layers back to back, each with weights of its own, over the layers; sm_mhz, "
                 "watts: NVML's SM clock (median) and board power (mean) while they ran; ratio = "
                 "the same run's cuBLAS time / this row's\n", STREAM_LAYERS);
    fprintf(out, "design\tm\tflush\trun\tus\tgbs\tsm_mhz\twatts\tratio\n");
    struct rng r;
    rng_init(&r, harness_seed()); // fresh inputs each run unless a seed is set
    const int k = 8192, n = 8192, kb = k / MX_BLOCK;
    const size_t nk = (size_t)n * k;
    std::vector<uint8_t> w(nk / 2), ws((size_t)n * kb);
    for (auto &b : w)
        b = (uint8_t)rng_next(&r);
    for (auto &b : ws)
        b = (uint8_t)(127 - 12 + rng_next(&r) % 25);
    // cuBLAS's B: k x n bf16, W's values (any bf16 of the shape would time the same)
    std::vector<uint16_t> wb(nk);
    for (size_t i = 0; i < (size_t)k; i++)
        for (size_t c = 0; c < (size_t)n; c++) {
            const unsigned code = w[(c * k + i) / 2] >> (4 * (i % 2)) & 0xf;
            wb[i * n + c] = bf16_of((float)ldexp(e2m1_value(code), ws[c * kb + i / 32] - 127));
        }
    uint8_t *dw, *dws;
    uint16_t *dwb;
    unsigned *sink;
    CUDA_CHECK(cudaMalloc(&dw, w.size()));
    CUDA_CHECK(cudaMalloc(&dws, ws.size()));
    CUDA_CHECK(cudaMalloc(&dwb, nk * 2));
    CUDA_CHECK(cudaMalloc(&sink, 4));
    if (strcmp(flush, "clean") == 0)
        gpu_time_after_flush(clean_flush);
    CUDA_CHECK(cudaMemcpy(dw, w.data(), w.size(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dws, ws.data(), ws.size(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dwb, wb.data(), nk * 2, cudaMemcpyHostToDevice));
    // the stream's layers past the first: copies of its weights, at addresses of their own
    const int nlayers = stream ? STREAM_LAYERS : 1;
    struct ctx c = {};
    c.w[0] = dw, c.ws[0] = dws, c.wb[0] = dwb;
    for (int l = 1; l < STREAM_LAYERS; l++) {
        uint8_t *a = dw, *b = dws;
        uint16_t *h = dwb;
        if (l < nlayers) {
            CUDA_CHECK(cudaMalloc(&a, w.size()));
            CUDA_CHECK(cudaMalloc(&b, ws.size()));
            CUDA_CHECK(cudaMalloc(&h, nk * 2));
            CUDA_CHECK(cudaMemcpy(a, dw, w.size(), cudaMemcpyDeviceToDevice));
            CUDA_CHECK(cudaMemcpy(b, dws, ws.size(), cudaMemcpyDeviceToDevice));
            CUDA_CHECK(cudaMemcpy(h, dwb, nk * 2, cudaMemcpyDeviceToDevice));
        }
        c.w[l] = a, c.ws[l] = b, c.wb[l] = h;
    }
    const int ncheck = n < 256 ? n : 256;
    for (int m : ms_list) {
        const size_t mk = (size_t)m * k, mn = (size_t)m * n;
        std::vector<uint16_t> x(mk);
        for (size_t i = 0; i < mk; i += 16) {
            const double mag = exp2(rng_uniform(&r, -3, 3));
            for (size_t j = i; j < i + 16 && j < mk; j++)
                x[j] = bf16_of((float)(mag * rng_uniform(&r, -1, 1)));
        }
        uint16_t *dx;
        float *dy;
        CUDA_CHECK(cudaMalloc(&dx, mk * 2));
        CUDA_CHECK(cudaMalloc(&dy, mn * 4));
        CUDA_CHECK(cudaMemcpy(dx, x.data(), mk * 2, cudaMemcpyHostToDevice));
        c.x = dx, c.y = dy, c.sink = sink, c.m = m, c.k = k, c.n = n, c.layer = 0;

        // every variant's y against double precision, on a sample of columns, y poisoned first
        std::vector<int> cols(ncheck);
        for (int i = 0; i < ncheck; i++)
            cols[i] = ncheck == n ? i : (int)(rng_next(&r) % (uint64_t)n);
        std::vector<float> got(mn);
        for (int v = 0; v < nv; v++) {
            CUDA_CHECK(cudaMemset(dy, 0xff, mn * 4));
            c.design = v, c.fn = variants[v].fn;
            run_one(&c);
            CUDA_CHECK(cudaDeviceSynchronize());
            CUDA_CHECK(cudaMemcpy(got.data(), dy, mn * 4, cudaMemcpyDeviceToHost));
            double worst = 0;
            for (int row = 0; row < m; row++)
                for (int col : cols) {
                    double want = 0, s = 0;
                    for (int i = 0; i < k; i++) {
                        const unsigned code = w[((size_t)col * k + i) / 2] >> (4 * (i % 2)) & 0xf;
                        const int e = ws[(size_t)col * kb + i / 32] - 127;
                        const double t = bf16_value(x[(size_t)row * k + i]) *
                                         ldexp(e2m1_value(code), e);
                        want += t, s += fabs(t);
                    }
                    const double g = got[(size_t)row * n + col];
                    const double e = std::isfinite(g) ? fabs(g - want) / (s > 0 ? s : 1) : INFINITY;
                    worst = e > worst ? e : worst;
                }
            printf("m = %d %s: the largest |got - want| / S over %d columns: %.3g\n", m,
                   variants[v].name, ncheck, worst);
        }

        const double bytes_lib = 2.0 * mk + 2.0 * nk + 4.0 * mn,
                     bytes_read = nk / 2.0 + (double)nk / MX_BLOCK,
                     bytes_var = bytes_read + 2.0 * mk + 4.0 * mn;
        std::vector<std::vector<double>> us(nv + 2), ratio(nv + 2), mhz(nv + 2);
        for (int run = 0; run < runs; run++) {
            double lib_us = 0.0;
            for (int d = -2; d < nv; d++) {
                c.design = d, c.fn = d >= 0 ? variants[d].fn : nullptr;
                const struct timing t =
                    stream ? stream_time(&c, 1, 20) : gpu_time(run_one, &c, 3, 20);
                const double one_us = t.median_ms * 1e3;
                if (d == -2)
                    lib_us = one_us;
                const double q = lib_us / one_us,
                             bytes = d == -2 ? bytes_lib : d == -1 ? bytes_read : bytes_var;
                const char *name = d == -2 ? "cublas_bf16" : d == -1 ? "read" : variants[d].name;
                fprintf(out, "%s\t%d\t%s\t%d\t%.2f\t%.0f\t%.0f\t%.0f\t%.3f\n", name, m, flush,
                        run + 1, one_us, bytes / (one_us * 1e3), t.clocks.sm_mhz, t.clocks.watts,
                        q);
                us[d + 2].push_back(one_us);
                ratio[d + 2].push_back(q);
                mhz[d + 2].push_back(t.clocks.sm_mhz);
            }
            fflush(out);
        }
        for (int d = -2; d < nv; d++)
            printf("m = %d %s %-20s median %7.2f us at %4.0f MHz, %.3f x cuBLAS (median ratio)\n",
                   m, flush, d == -2 ? "cublas_bf16" : d == -1 ? "read" : variants[d].name,
                   median_of(us[d + 2]), median_of(mhz[d + 2]), median_of(ratio[d + 2]));
        CUDA_CHECK(cudaFree(dx));
        CUDA_CHECK(cudaFree(dy));
    }
    for (int l = 0; l < nlayers; l++) {
        CUDA_CHECK(cudaFree(const_cast<uint8_t *>(c.w[l])));
        CUDA_CHECK(cudaFree(const_cast<uint8_t *>(c.ws[l])));
        CUDA_CHECK(cudaFree(const_cast<uint16_t *>(c.wb[l])));
    }
    CUDA_CHECK(cudaFree(sink));
    if (fclose(out) != 0) {
        perror(argv[1]);
        return 1;
    }
    return 0;
}
