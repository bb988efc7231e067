/* sum_cub_gpu.cu: chapter 07, the library for scale beside steps 1-3. Given; GPU builds only
 * (the CPU backend has no CUB, and its builds leave *_gpu.cu out).
 *
 * cub::DeviceReduce::Sum: a grid sized for the device, each block summing an even share of
 * the input with vectorised loads and then its threads' values, and a second kernel of one
 * block over the blocks' partials (one kernel alone when the input is a single tile): step
 * 2's shape, tuned for each architecture. The bench and the speed tests of steps 1-3 time it
 * beside them; on an H200 it reads about 4.6 TB/s at n = 2^28.
 *
 * CUB takes its temporary storage from the caller: the first call, with no storage, asks how
 * much it needs; the second runs. Here that storage is the contract's d_scratch, so nothing is
 * allocated and a timed launch is only CUB's kernels. CUB's need is a few KiB, far under
 * membound_scratch_bytes(1); a CUB that asked for more would be a different library from the
 * one the lesson measured, and the launcher says so and stops rather than write past the
 * scratch. */
#include <cub/device/device_reduce.cuh>

#include "cuda_check.h"
#include "membound.h"

void sum_cub(const float *d_in, int n, float *d_out, void *d_scratch)
{
    size_t need = 0;
    CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, need, d_in, d_out, n));
    size_t have = membound_scratch_bytes(1);
    if (need > have) {
        fprintf(stderr, "sum_cub: cub::DeviceReduce::Sum needs %zu bytes of temporary storage "
                        "for n = %d; the scratch holds %zu\n", need, n, have);
        exit(EXIT_FAILURE);
    }
    CUDA_CHECK(cub::DeviceReduce::Sum(d_scratch, need, d_in, d_out, n));
    CUDA_CHECK(cudaGetLastError());
}
