// fp8_gemm_variants.cu: a probe for chapter 11's step 3, the block-scaled FP8 GEMM. It times
// cuBLASLt's FP8 GEMM (per-tensor scales, no fast accumulation) and any number of variants of
// the step, each built from a copy of the step's source under a name of its own, in one process,
// in turns: a run is cuBLASLt, then every variant, and the runs repeat. So each variant's ratio
// is taken against cuBLASLt a few milliseconds away, at nearly the same clock; timed one after
// the other instead, a later kernel would meet a card the earlier ones have warmed, nearer its
// power limit (the H200 holds its FP8 GEMMs to 1.4-1.5 GHz at 8192^3). Before timing, every
// variant's output is compared bit for bit with the first variant's, on the same random e4m3
// inputs and scales (the harness's generator: fresh each run, SEED=... to repeat one), and the
// count of differing elements printed.
//
// Rows (tab-separated, to the file named by the first argument, with a header):
//   design shape run ms tflops sm_mhz watts ratio
// ms: one launch, the mean of a loop of 50 launches at 4096^3, 10 at 8192^3, after 3 unmeasured;
// sm_mhz and watts: NVML's SM clock (median) and board power (mean) while that loop ran
// (harness/gpu.h); ratio: the same run's cuBLASLt ms over this row's. Its medians go to stdout.
// The committed data made with it: plots/data/h200/probe-11-fp8-streamk.tsv (visit 3; its
// variant pdl_launch is tests/probes/step3-pdl-launch.patch applied to the step).
//
// Build (the variants, each a -D set applied to the step's source or another file, are named
// on the command line) and run on a GPU of compute capability 9.0:
//   make B=cuda build/cuda/chapters/11-mixed-precision/grade   # cuBLASLt's launcher, harness
//   tests/probes/fp8_gemm_variants.sh reference: other:@my_step3.cu
//   build/cuda/probes/fp8_gemm_variants out.tsv [runs, 9] [sizes, "4096 8192"]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>

#include "cuda_check.h"
#include "gpu.h"
#include "harness.h"
#include "quant.h"
#include "probe_args.h"

typedef void (*fp8_fn)(const uint8_t *, const float *, const uint8_t *, const float *, uint16_t *,
                       int, int, int);

// VARIANTS is V(name) V(name) ...: each name a copy of gemm_fp8_blockscaled (the build script)
#ifndef VARIANTS
#error "build with -DVARIANTS='V(a) V(b)': tests/probes/fp8_gemm_variants.sh"
#endif
#define V(name)                                                                                    \
    extern "C" void name(const uint8_t *, const float *, const uint8_t *, const float *,           \
                         uint16_t *, int, int, int);
VARIANTS
#undef V

// the harness's median (it reorders its input: a copy)
static double median_of(std::vector<double> v) { return median(v.data(), (int)v.size()); }

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUT.tsv [runs, 9] [sizes, \"4096 8192\"]\n", argv[0]);
        return 2;
    }
#define V(name) { #name, name },
    const probe_variant<fp8_fn> variants[] = { VARIANTS };
#undef V
    const int nv = (int)(sizeof variants / sizeof variants[0]);
    const int runs = probe_runs(argc > 2 ? argv[2] : nullptr);
    if (!runs)
        return 2;
    std::vector<int> sizes;
    if (!probe_ints(argc > 3 ? argv[3] : "4096 8192", 128, 32768, 128, "size", sizes))
        return 2;
    FILE *out = probe_open(argv[1]);
    if (!out)
        return 1;
    fprintf(out, "# chapter 11, step 3: cuBLASLt's FP8 GEMM (per-tensor scales) and the variants, "
                 "timed in turns in one process (tests/probes/fp8_gemm_variants.cu), each the mean "
                 "of a loop of launches; sm_mhz, watts: NVML's SM clock (median) and board power "
                 "(mean) while it ran; ratio = the same run's cuBLASLt ms / this row's\n");
    fprintf(out, "design\tshape\trun\tms\ttflops\tsm_mhz\twatts\tratio\n");
    struct rng r;
    rng_init(&r, harness_seed()); // fresh inputs each run unless a seed is set
    for (int size : sizes) {
        const int m = size, k = size, n = size, kb = k / 128;
        const size_t mk = (size_t)m * k, nk = (size_t)n * k, mn = (size_t)m * n;
        // random codes, never NaN (0x7f, 0xff); scales in [0.5, 1.5)
        std::vector<uint8_t> a(mk), b(nk);
        std::vector<uint8_t> *ab[2] = { &a, &b };
        for (auto *vec : ab)
            for (auto &x : *vec) {
                x = (uint8_t)(rng_next(&r) & 0xff);
                if ((x & 0x7f) == 0x7f)
                    x ^= 1;
            }
        std::vector<float> sa((size_t)kb * m), sb((size_t)(n / 128) * kb);
        for (auto &x : sa)
            x = (float)rng_uniform(&r, 0.5, 1.5);
        for (auto &x : sb)
            x = (float)rng_uniform(&r, 0.5, 1.5);
        uint8_t *da, *db;
        float *dsa, *dsb, *one;
        uint16_t *dd;
        CUDA_CHECK(cudaMalloc(&da, mk));
        CUDA_CHECK(cudaMalloc(&db, nk));
        CUDA_CHECK(cudaMalloc(&dsa, sa.size() * 4));
        CUDA_CHECK(cudaMalloc(&dsb, sb.size() * 4));
        CUDA_CHECK(cudaMalloc(&one, 4));
        CUDA_CHECK(cudaMalloc(&dd, mn * 2));
        CUDA_CHECK(cudaMemcpy(da, a.data(), mk, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(db, b.data(), nk, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(dsa, sa.data(), sa.size() * 4, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(dsb, sb.data(), sb.size() * 4, cudaMemcpyHostToDevice));
        const float unit = 1.0f;
        CUDA_CHECK(cudaMemcpy(one, &unit, 4, cudaMemcpyHostToDevice));
        auto launch = [&](int v) {
            if (v < 0)
                gemm_fp8_cublaslt(da, one, db, one, dd, m, k, n);
            else
                variants[v].fn(da, dsa, db, dsb, dd, m, k, n);
        };

        // every variant's output against the first's, on a poisoned D
        std::vector<uint16_t> first(mn), got(mn);
        for (int v = 0; v < nv; v++) {
            CUDA_CHECK(cudaMemset(dd, 0xff, mn * 2));
            launch(v);
            CUDA_CHECK(cudaGetLastError());
            CUDA_CHECK(cudaDeviceSynchronize());
            CUDA_CHECK(cudaMemcpy(v ? got.data() : first.data(), dd, mn * 2,
                                  cudaMemcpyDeviceToHost));
            if (v) {
                size_t diff = 0;
                for (size_t i = 0; i < mn; i++)
                    diff += got[i] != first[i];
                printf("%d^3 %s: %zu of %zu outputs differ from %s's\n", size,
                       variants[v].name, diff, mn, variants[0].name);
            }
        }

        cudaEvent_t e0, e1;
        CUDA_CHECK(cudaEventCreate(&e0));
        CUDA_CHECK(cudaEventCreate(&e1));
        const double flops = 2.0 * m * n * k;
        const int loop = size <= 4096 ? 50 : 10;
        std::vector<std::vector<double>> ms(nv + 1), ratio(nv + 1), mhz(nv + 1);
        char shape[48];
        snprintf(shape, sizeof shape, "%dx%dx%d", m, k, n);
        for (int r = 0; r < runs; r++) {
            double lib_ms = 0.0;
            for (int v = -1; v < nv; v++) {
                for (int w = 0; w < 3; w++)
                    launch(v);
                gpu_clocks_start();
                CUDA_CHECK(cudaEventRecord(e0));
                for (int i = 0; i < loop; i++)
                    launch(v);
                CUDA_CHECK(cudaEventRecord(e1));
                CUDA_CHECK(cudaGetLastError());
                CUDA_CHECK(cudaEventSynchronize(e1));
                const struct clocks c = gpu_clocks_stop();
                float total;
                CUDA_CHECK(cudaEventElapsedTime(&total, e0, e1));
                const double one_ms = total / loop;
                if (v < 0)
                    lib_ms = one_ms;
                const double q = lib_ms / one_ms;
                fprintf(out, "%s\t%s\t%d\t%.5f\t%.1f\t%.0f\t%.0f\t%.3f\n",
                        v < 0 ? "cublaslt" : variants[v].name, shape, r + 1, one_ms,
                        flops / (one_ms * 1e9), c.sm_mhz, c.watts, q);
                ms[v + 1].push_back(one_ms);
                ratio[v + 1].push_back(q);
                mhz[v + 1].push_back(c.sm_mhz);
            }
            fflush(out);
        }
        for (int v = -1; v < nv; v++)
            printf("%s %-20s median %7.1f TFLOP/s at %4.0f MHz, %.3f of cuBLASLt (median ratio)\n",
                   shape, v < 0 ? "cublaslt" : variants[v].name,
                   flops / (median_of(ms[v + 1]) * 1e9), median_of(mhz[v + 1]),
                   median_of(ratio[v + 1]));
        CUDA_CHECK(cudaEventDestroy(e0));
        CUDA_CHECK(cudaEventDestroy(e1));
        CUDA_CHECK(cudaFree(da));
        CUDA_CHECK(cudaFree(db));
        CUDA_CHECK(cudaFree(dsa));
        CUDA_CHECK(cudaFree(dsb));
        CUDA_CHECK(cudaFree(dd));
        CUDA_CHECK(cudaFree(one));
    }
    if (fclose(out) != 0) {
        perror(argv[1]);
        return 1;
    }
    return 0;
}
