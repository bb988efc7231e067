/* loop_ref.h: chapter 06's loop of three kernels (blur, bias, copy: pipeline_kernels.cu),
 * replayed on the host; the reference of chapter 06's run_pipeline and of chapter 08's graph of
 * the same loop. Each element's every step is one IEEE operation in the kernels' own order,
 * (l + c) + r then times 1/3, then + 1, with no product fed to a sum that a compiler could
 * fuse: the replay is bit for bit what a device computes, and the graders compare it exactly
 * (TOL_EXACT, tolerance.h). */
#ifndef LOOP_REF_H
#define LOOP_REF_H

#include <string.h>

/* `iterations` of the loop on a (n floats, updated in place), with b (n more) as the scratch. */
static inline void loop_on_host(float *a, float *b, int n, int iterations)
{
    for (int it = 0; it < iterations; it++) {
        for (int i = 0; i < n; i++) {
            float l = a[i > 0 ? i - 1 : i], c = a[i], r = a[i < n - 1 ? i + 1 : i];
            b[i] = (l + c + r) * (1.0f / 3.0f);
        }
        for (int i = 0; i < n; i++)
            b[i] = b[i] + 1.0f;
        memcpy(a, b, (size_t)n * sizeof *a);
    }
}

#endif
