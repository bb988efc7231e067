// probe_args.h: the command line both variant probes share (fp8_gemm_variants.cu,
// mxfp4_gemv_variants.cu): OUT.tsv [runs] [a list of sizes].
#pragma once
#include <cstdio>
#include <cstdlib>
#include <vector>

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
