/* pipeline.cpp: cuda_pipeline.h's asynchronous copies (include/cuda_pipeline.h says what a
 * kernel sees).
 *
 * Each CUDA thread of the running block has a queue of copies in flight, in issue order, each
 * tagged with the group it belongs to: the number of commits the thread had made when it was
 * issued. Committed groups are 0 .. committed - 1; the open group is `committed`.
 * wait_prior(n) lands, in order, every copy of a group below committed - n. The scheduler
 * empties the queues when a block starts (pipeline_block_begin) and lands what is left of a
 * thread's when it exits (pipeline_thread_exit). The queues live with the OS thread that runs
 * the block, as the block's shared memory does. */
#include "internal.h"

#include <cstdio>
#include <cstring>
#include <vector>

namespace emu {
namespace {

struct Copy {
    unsigned char *dst;
    unsigned char data[16];
    unsigned char bytes, size; /* bytes from data, then zeros up to size */
    unsigned long long group;
};

struct Queue {
    std::vector<Copy> copies;
    unsigned long long committed = 0;
};

thread_local Queue t_queue[MAX_THREADS_PER_BLOCK];

void land(const Copy &c)
{
    std::memcpy(c.dst, c.data, c.bytes);
    std::memset(c.dst + c.bytes, 0, (size_t)(c.size - c.bytes));
}

/* lands the copies of q below group `limit`, oldest first */
void land_below(Queue &q, unsigned long long limit)
{
    size_t keep = 0;
    for (size_t i = 0; i < q.copies.size(); ++i) {
        if (q.copies[i].group < limit)
            land(q.copies[i]);
        else
            q.copies[keep++] = q.copies[i];
    }
    q.copies.resize(keep);
}

} /* namespace */

void pipeline_block_begin(unsigned nthreads)
{
    for (unsigned i = 0; i < nthreads; ++i) {
        t_queue[i].copies.clear();
        t_queue[i].committed = 0;
    }
}

void pipeline_thread_exit(unsigned lin)
{
    Queue &q = t_queue[lin];
    land_below(q, ~0ull);
    q.committed = 0;
}

void pipeline_issue(void *dst, const void *data, size_t bytes, size_t size)
{
    Queue &q = t_queue[current_thread()];
    Copy c;
    c.dst = static_cast<unsigned char *>(dst);
    std::memcpy(c.data, data, bytes);
    c.bytes = (unsigned char)bytes;
    c.size = (unsigned char)size;
    c.group = q.committed;
    q.copies.push_back(c);
}

void pipeline_commit()
{
    ++t_queue[current_thread()].committed;
}

void pipeline_wait_prior(size_t prior)
{
    Queue &q = t_queue[current_thread()];
    if (q.committed > prior)
        land_below(q, q.committed - prior);
}

void pipeline_bad_size(size_t size, const char *file, int line)
{
    std::fprintf(stderr, "emu: __pipeline_memcpy_async at %s:%d copies %zu bytes: cp.async "
                         "copies 4, 8 or 16\n", file, line, size);
    trap(file, line);
}

} /* namespace emu */
