/* slices_gpu.cu: chapter 09, given, for step 4; a GPU only. The driver's green-context calls
 * (green.h), the way into a slice for code that launches on the default stream, and the two
 * kernels the grader runs on a slice's stream: one that says which SM each of its blocks ran
 * on, and a copy that is bound by memory bandwidth. */
#include <string.h>

#include "cuda_check.h"
#include "green.h"
#include "occupancy.h"

/* ---- the driver's calls, through the runtime -------------------------------------------------
 *
 * Each at the ABI of CUDA 12.5, the first version that has them all (cuGreenCtxStreamCreate came
 * in 12.5, the rest in 12.4); a newer driver still answers for that ABI. */
#define GREEN_ABI 12050

static int resolve(const char *name, void **fn)
{
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    cudaError_t err = cudaGetDriverEntryPointByVersion(name, fn, GREEN_ABI, cudaEnableDefault,
                                                       &found);
    if (err != cudaSuccess || found != cudaDriverEntryPointSuccess || !*fn) {
        fprintf(stderr, "green contexts: the driver has no %s for CUDA %d.%d (%s)\n", name,
                GREEN_ABI / 1000, GREEN_ABI % 1000 / 10,
                err != cudaSuccess ? cudaGetErrorString(err) : "not found");
        return -1;
    }
    return 0;
}

const struct green_driver *green_driver(void)
{
    static struct green_driver d;
    static int state; /* 0: not yet, 1: resolved, -1: the driver lacks a call */
    if (state == 0) {
        int bad = 0;
        bad |= resolve("cuGetErrorString", (void **)&d.GetErrorString);
        bad |= resolve("cuDeviceGet", (void **)&d.DeviceGet);
        bad |= resolve("cuDeviceGetDevResource", (void **)&d.DeviceGetDevResource);
        bad |= resolve("cuCtxGetDevResource", (void **)&d.CtxGetDevResource);
        bad |= resolve("cuDevSmResourceSplitByCount", (void **)&d.DevSmResourceSplitByCount);
        bad |= resolve("cuDevResourceGenerateDesc", (void **)&d.DevResourceGenerateDesc);
        bad |= resolve("cuGreenCtxCreate", (void **)&d.GreenCtxCreate);
        bad |= resolve("cuGreenCtxDestroy", (void **)&d.GreenCtxDestroy);
        bad |= resolve("cuCtxFromGreenCtx", (void **)&d.CtxFromGreenCtx);
        bad |= resolve("cuGreenCtxStreamCreate", (void **)&d.GreenCtxStreamCreate);
        bad |= resolve("cuStreamDestroy", (void **)&d.StreamDestroy);
        bad |= resolve("cuCtxPushCurrent", (void **)&d.CtxPushCurrent);
        bad |= resolve("cuCtxPopCurrent", (void **)&d.CtxPopCurrent);
        bad |= resolve("cuCtxGetCurrent", (void **)&d.CtxGetCurrent);
        state = bad ? -1 : 1;
    }
    return state == 1 ? &d : NULL;
}

/* ---- into a slice and out ------------------------------------------------------------------
 *
 * The runtime works in whatever context is current to the calling thread. A green context,
 * seen as a CUcontext (cuCtxFromGreenCtx) and pushed current, is that context: allocations and
 * attributes behave as in the device's primary context, whose memory it shares, and every
 * launch, on the default stream too, runs on the green context's SMs alone. */
void slice_enter(const struct sm_slice *s)
{
    const struct green_driver *cu = green_driver();
    if (!cu || !s->green) {
        fprintf(stderr, "slice_enter: no green context to enter\n");
        exit(EXIT_FAILURE);
    }
    CUcontext ctx;
    CU_CHECK(cu->CtxFromGreenCtx(&ctx, s->green));
    CU_CHECK(cu->CtxPushCurrent(ctx));
}

void slice_leave(void)
{
    CUcontext ctx;
    CU_CHECK(green_driver()->CtxPopCurrent(&ctx));
}

int slice_current_sms(void)
{
    const struct green_driver *cu = green_driver();
    if (!cu)
        return -1;
    CUDA_CHECK(cudaFree(0)); /* a context is current: the primary one, or a slice entered */
    CUcontext ctx = NULL;
    CU_CHECK(cu->CtxGetCurrent(&ctx));
    CUdevResource r;
    memset(&r, 0, sizeof r);
    CU_CHECK(cu->CtxGetDevResource(ctx, &r, CU_DEV_RESOURCE_TYPE_SM));
    return (int)r.sm.smCount;
}

/* ---- the kernels the grader runs on a slice's stream -------------------------------------- */

/* Each block holds its SM for `spin` cycles, so that the blocks of the grid spread over every
 * SM they may run on, and writes the SM it ran on: the %smid register. */
static __global__ void slice_smid_kernel(int *ids, long long spin)
{
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    const long long t0 = clock64();
    while (clock64() - t0 < spin) {
    }
    if (threadIdx.x == 0)
        ids[blockIdx.x] = (int)smid;
}

void slice_smids(struct CUstream_st *stream, int *d_ids, int blocks)
{
    slice_smid_kernel<<<blocks, SLICE_SMID_THREADS, 0, stream>>>(d_ids, SLICE_SMID_SPIN);
    CUDA_CHECK(cudaGetLastError());
}

/* out = in, a float4 a thread a step, grid-stride: bound by memory bandwidth, and by the SMs
 * only as far as they keep enough loads in flight */
static __global__ void slice_copy_kernel(const float4 *__restrict__ in, float4 *__restrict__ out,
                                         size_t n4)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride)
        out[i] = in[i];
}

void slice_copy(struct CUstream_st *stream, const float *d_in, float *d_out, size_t n)
{
    if (n % 4 != 0) {
        fprintf(stderr, "slice_copy: n = %zu is not a multiple of 4\n", n);
        exit(EXIT_FAILURE);
    }
    int device, sms;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    /* eight blocks for every SM of the device: more than enough for any slice of it */
    slice_copy_kernel<<<8 * sms, 256, 0, stream>>>((const float4 *)d_in, (float4 *)d_out, n / 4);
    CUDA_CHECK(cudaGetLastError());
}
