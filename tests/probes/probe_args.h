// probe_args.h: the command line and the output file both variant probes share
// (fp8_gemm_variants.cu, mxfp4_gemv_variants.cu): OUT.tsv [runs] [a list of sizes] ..., and
// OUT.tsv opened with the device, driver and date lines every measurement file starts with.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gpu.h"
#include "harness.h"

// A variant of a step, as the build script's VARIANTS lists it (V(a) V(b) ...): its NAME and
// its launcher, of type FN. A probe makes the table with V(name) defined as { #name, name },
// and its extern declarations of the launchers with V(name) defined as the declaration.
template <typename FN>
struct probe_variant {
    const char *name;
    FN fn;
};

// The space-separated integers of s, each of which must be a multiple of step from lo to hi.
// False, with a message that names `what`, when one is not or when there are none.
static bool probe_ints(const char *s, long lo, long hi, long step, const char *what,
                       std::vector<int> &out)
{
    while (*s) {
        char *end;
        const long v = strtol(s, &end, 10);
        if (end == s)
            break;
        if (v < lo || v > hi || v % step) {
            if (step > 1)
                fprintf(stderr, "%s must be a multiple of %ld from %ld to %ld: %ld\n", what, step,
                        lo, hi, v);
            else
                fprintf(stderr, "%s must be from %ld to %ld: %ld\n", what, lo, hi, v);
            return false;
        }
        out.push_back((int)v);
        s = end;
    }
    if (out.empty()) {
        fprintf(stderr, "at least one %s\n", what);
        return false;
    }
    return true;
}

// The runs argument (9 when s is NULL): at least one; 0, with a message, when it is not.
static int probe_runs(const char *s)
{
    const int runs = s ? atoi(s) : 9;
    if (runs < 1) {
        fprintf(stderr, "at least one run\n");
        return 0;
    }
    return runs;
}

// path opened for writing, its first lines the device's, the driver's and the date
// (results_provenance); NULL, with a message, when it cannot be opened or there is no GPU.
static FILE *probe_open(const char *path)
{
    struct device_info info;
    char why[256];
    if (gpu_probe(&info, why, sizeof why) != 0) {
        fprintf(stderr, "no GPU: %s\n", why);
        return nullptr;
    }
    FILE *out = fopen(path, "w");
    if (!out) {
        perror(path);
        return nullptr;
    }
    results_provenance(out, info.name, info.driver);
    return out;
}
