/* launch_wrap.c: the launch calls, wrapped (launches.h). Linked only into the GPU build's
 * graders, with -Wl,--wrap for each call below (the Makefile's LAUNCH_CALLS): every reference
 * to __cudaLaunchKernel in their objects goes to __wrap___cudaLaunchKernel here, which notes the
 * launch and calls the runtime's own, __real___cudaLaunchKernel. A launch call made from inside
 * another (the runtime's objects may call each other) is noted once. */
#include <cuda_runtime_api.h>

#include "launches.h"

extern int launches_wrapped;

__attribute__((constructor)) static void mark_wrapped(void)
{
    launches_wrapped = 1;
}

static __thread int depth;

cudaError_t __real___cudaLaunchKernel(cudaKernel_t, dim3, dim3, void **, size_t, cudaStream_t);
cudaError_t __real_cudaLaunchKernel(const void *, dim3, dim3, void **, size_t, cudaStream_t);
cudaError_t __real_cudaLaunchKernelExC(const cudaLaunchConfig_t *, const void *, void **);
cudaError_t __real_cudaLaunchCooperativeKernel(const void *, dim3, dim3, void **, size_t,
                                               cudaStream_t);

static void note(const void *f, dim3 g, dim3 b, size_t smem)
{
    if (depth == 1)
        launches_note(f, g.x, g.y, g.z, b.x, b.y, b.z, smem);
}

cudaError_t __wrap___cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void **args, size_t smem,
                                      cudaStream_t s)
{
    depth++;
    note((const void *)k, g, b, smem);
    cudaError_t e = __real___cudaLaunchKernel(k, g, b, args, smem, s);
    depth--;
    return e;
}

cudaError_t __wrap_cudaLaunchKernel(const void *f, dim3 g, dim3 b, void **args, size_t smem,
                                    cudaStream_t s)
{
    depth++;
    note(f, g, b, smem);
    cudaError_t e = __real_cudaLaunchKernel(f, g, b, args, smem, s);
    depth--;
    return e;
}

cudaError_t __wrap_cudaLaunchKernelExC(const cudaLaunchConfig_t *c, const void *f, void **args)
{
    depth++;
    if (c)
        note(f, c->gridDim, c->blockDim, c->dynamicSmemBytes);
    cudaError_t e = __real_cudaLaunchKernelExC(c, f, args);
    depth--;
    return e;
}

cudaError_t __wrap_cudaLaunchCooperativeKernel(const void *f, dim3 g, dim3 b, void **args,
                                               size_t smem, cudaStream_t s)
{
    depth++;
    note(f, g, b, smem);
    cudaError_t e = __real_cudaLaunchCooperativeKernel(f, g, b, args, smem, s);
    depth--;
    return e;
}
