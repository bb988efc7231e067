/* step1_occupancy.cu: chapter 09, step 1 of 4, an occupancy calculator. The reference.
 *
 * An SM holds a block only when it has room for all of it at once: its warps, its registers and
 * its shared memory, and a free block slot. So the blocks an SM holds is the smallest of four
 * limits, each of them the SM's capacity over what one block takes of it, where "what one block
 * takes" is rounded up the way the hardware allocates:
 *   - warps:     whole warps (a block of 33 threads takes two warp slots);
 *   - registers: a warp at a time, regs x 32 rounded up to 256, and each warp lives in one of
 *                the SM's four quarters, which hold regs_per_sm / 4 each;
 *   - shared:    static + dynamic + the driver's 1 KiB reserve, rounded up to 128 bytes (256 on
 *                7.x), out of the carveout the SM is set to;
 *   - blocks:    max_blocks_per_sm, however small the block.
 * Expect: the same answer as cudaOccupancyMaxActiveBlocksPerMultiprocessor, on every device. */
#include <limits.h>

#include "occupancy.h"

static int round_up(int x, int unit) { return (x + unit - 1) / unit * unit; }
static size_t round_up_size(size_t x, size_t unit) { return (x + unit - 1) / unit * unit; }
static int min_int(int a, int b) { return a < b ? a : b; }

/* The smallest carveout the SM can be set to that is at least `bytes`; 0 when none is. */
static size_t carveout_at_least(const struct occ_device *d, size_t bytes)
{
    for (int i = 0; i < d->n_smem_configs; i++)
        if (d->smem_configs[i] >= bytes)
            return d->smem_configs[i];
    return 0;
}

static int limit_by_warps(const struct occ_kernel *k, const struct occ_device *d, int warps)
{
    (void)k;
    return d->max_threads_per_sm / d->warp_size / warps;
}

static int limit_by_registers(const struct occ_kernel *k, const struct occ_device *d, int warps)
{
    if (k->regs > d->max_regs_per_thread)
        return 0;
    if (k->regs == 0)
        return INT_MAX;
    int per_warp = round_up(k->regs * d->warp_size, d->reg_alloc_unit);
    if (per_warp * warps > d->regs_per_block)
        return 0;
    /* a warp's registers come from one quarter of the file: what a quarter holds, times four */
    int warps_per_quarter = d->regs_per_sm / d->sub_partitions / per_warp;
    return warps_per_quarter * d->sub_partitions / warps;
}

static int limit_by_shared(const struct occ_kernel *k, const struct occ_device *d)
{
    if (k->smem_dynamic > k->smem_max_dynamic)
        return 0; /* the launch asks for more than the kernel opted in to: it fails */
    size_t need = round_up_size(k->smem_static + k->smem_dynamic + d->smem_reserved_per_block,
                                (size_t)d->smem_alloc_unit);
    if (need > d->smem_per_block_optin + d->smem_reserved_per_block)
        return 0;
    if (need == 0)
        return INT_MAX;
    /* the carveout: the kernel's preference, else all of it; then at least one block's worth */
    size_t prefer = k->carveout < 0 ? d->smem_per_sm : (size_t)k->carveout * d->smem_per_sm / 100;
    size_t carve = carveout_at_least(d, prefer);
    if (carve < need)
        carve = carveout_at_least(d, need);
    return (int)(carve / need);
}

int blocks_per_sm(const struct occ_kernel *k, const struct occ_device *d)
{
    if (k->threads < 1 || k->threads > d->max_threads_per_block)
        return 0;
    int warps = (k->threads + d->warp_size - 1) / d->warp_size;
    int blocks = d->max_blocks_per_sm;
    blocks = min_int(blocks, limit_by_warps(k, d, warps));
    blocks = min_int(blocks, limit_by_registers(k, d, warps));
    blocks = min_int(blocks, limit_by_shared(k, d));
    return blocks;
}
