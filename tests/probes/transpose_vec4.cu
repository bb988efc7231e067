// transpose_vec4.cu: a probe for chapter 02's step 5 (vec4: 16-byte vectors, a 4 x 4 block
// transposed in registers, 64 x 64 tiles), against the chapter's copy kernel in the same run. It
// times the kernels that tell the two explanations of the gap between a tiled transpose and the
// copy apart (the lesson's "What is left of the gap"):
//
//   copy          the chapter's copy_same_bytes: 32 x 8 threads a 32 x 32 tile, 4 floats each
//   copy4         a float4 copy with vec4's grid: 16 x 16 threads a 64 x 64 tile, 4 float4s
//                 each (the copy-fair ceiling of vec4: the same bytes in flight)
//   copy4_mirror  copy4 with each tile written to the mirrored tile of out, untransposed inside:
//                 every thread stores to the very addresses vec4's stores go to, in the same
//                 order, without the shared-memory exchange, the barrier or the register
//                 transpose (not a transpose; it checks as a permutation of in)
//   padded_8      step 4's reference
//   vec4          step 5's reference
//   vec4_cs       vec4 with streaming cache hints: loads __ldcs, stores __stcs (evict first)
//   vec4_x2       vec4 with 16 x 8 threads a tile, two 4 x 4 blocks a thread: 8 float4 loads in
//                 flight a thread, 128-thread blocks
//   vec4_persist  vec4 with persistent blocks: as many as fit at once, each looping over tiles
//                 with a stride of the grid, the next tile's loads issued before this tile's
//                 stores, two shared tiles so that one barrier a tile is enough
//
// If copy4_mirror reaches copy4, what separates vec4 from the copy is on the SM's side (the
// exchange, the barrier, what an SM keeps in flight) and a kernel can close it; if it trails
// copy4 as vec4 does, it is the order in which the transposed writes reach DRAM.
//
// Each kernel is timed as the grader times it (harness/gpu.c): an L2 flush (a memset of twice
// the L2) before each of 20 timed runs after 3 warm-up runs, CUDA events around the kernel
// alone, the median; the whole list twice (round 1 and 2), to show the noise. Every output is
// checked once against the host's transpose (or, for the copies, the input), at sizes up to
// 8192 (16384 is timed only: "-" in the check column). Square shapes, multiples of 64, so that
// every kernel's vector path runs.
//
// Build and run on a GPU (no other file needed):
//   nvcc -O3 -std=c++17 -arch=sm_90 -o transpose_vec4 tests/probes/transpose_vec4.cu
//   ./transpose_vec4 [SIZE...]        (default: 4096 8192 16384)
// Prints tab-separated rows: kernel, shape, round, ms, GB/s (2 x rows x cols x 4 bytes over the
// time), the share of copy's and of copy4's GB/s in the same round, and the check.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static __host__ __device__ int cdiv(int a, int b) { return (a + b - 1) / b; }

// ---- the chapter's kernels, as in chapters/ and solutions/02-coalesced-transpose ------------

#define TILE 32
__global__ void copy_same_bytes_kernel(const float *__restrict__ in, float *__restrict__ out,
                                       int rows, int cols)
{
    int col = blockIdx.x * TILE + threadIdx.x;
    int row0 = blockIdx.y * TILE + threadIdx.y;
    float v[TILE / 8];
    for (int j = 0; j < TILE / 8; j++) {
        int row = row0 + j * 8;
        if (row < rows && col < cols)
            v[j] = in[row * cols + col];
    }
    for (int j = 0; j < TILE / 8; j++) {
        int row = row0 + j * 8;
        if (row < rows && col < cols)
            out[row * cols + col] = v[j];
    }
}

__global__ void padded_8_kernel(const float *__restrict__ in, float *__restrict__ out, int rows,
                                int cols)
{
    __shared__ float s_tile[TILE][TILE + 1];
    int col = blockIdx.x * TILE + threadIdx.x;
    int row0 = blockIdx.y * TILE + threadIdx.y;
    float v[TILE / 4];
    for (int j = 0; j < TILE / 4; j++) {
        int row = row0 + j * 4;
        v[j] = row < rows && col < cols ? in[row * cols + col] : 0.0f;
    }
    for (int j = 0; j < TILE / 4; j++)
        s_tile[threadIdx.y + j * 4][threadIdx.x] = v[j];
    __syncthreads();
    int out_col = blockIdx.y * TILE + threadIdx.x;
    int out_row0 = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += 4) {
        int out_row = out_row0 + j;
        if (out_row < cols && out_col < rows)
            out[out_row * rows + out_col] = s_tile[threadIdx.x][threadIdx.y + j];
    }
}

#define TILE5 64
#define QUADS 16
#define SWZ(row, chunk) ((chunk) ^ ((row) / 4 % 8))

__device__ __forceinline__ float4 ld4(const float4 *p, bool cs) { return cs ? __ldcs(p) : *p; }
__device__ __forceinline__ void st4(float4 *p, float4 v, bool cs)
{
    if (cs)
        __stcs(p, v);
    else
        *p = v;
}

// step 5's kernel (CS: the streaming hints)
template <bool CS>
__global__ void __launch_bounds__(QUADS * QUADS)
vec4_kernel(const float4 *__restrict__ in, float4 *__restrict__ out, int rows, int cols)
{
    __shared__ float4 s_tile[TILE5][QUADS];
    const int q = threadIdx.x, b = threadIdx.y;
    const int rows4 = rows / 4, cols4 = cols / 4;
    const int col4 = blockIdx.x * QUADS + q;
    const int row = blockIdx.y * TILE5 + 4 * b;
    float4 a[4];
#pragma unroll
    for (int j = 0; j < 4; j++)
        a[j] = row + j < rows && col4 < cols4 ? ld4(&in[(row + j) * cols4 + col4], CS)
                                              : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float4 t[4] = {
        make_float4(a[0].x, a[1].x, a[2].x, a[3].x),
        make_float4(a[0].y, a[1].y, a[2].y, a[3].y),
        make_float4(a[0].z, a[1].z, a[2].z, a[3].z),
        make_float4(a[0].w, a[1].w, a[2].w, a[3].w),
    };
#pragma unroll
    for (int k = 0; k < 4; k++)
        s_tile[4 * q + k][SWZ(4 * q + k, b)] = t[k];
    __syncthreads();
    const int out_col4 = blockIdx.y * QUADS + q;
    const int out_row = blockIdx.x * TILE5 + 4 * b;
#pragma unroll
    for (int k = 0; k < 4; k++)
        if (out_row + k < cols && out_col4 < rows4)
            st4(&out[(out_row + k) * rows4 + out_col4], s_tile[4 * b + k][SWZ(4 * b + k, q)], CS);
}

// ---- the probe's variants --------------------------------------------------------------------

// copy4 (MIRROR false) and copy4_mirror (true): vec4's loads; each thread stores its 4 float4s,
// rows 4b + j, float4 q, to the same tile of out (a copy) or to the mirrored one (the rows of
// out vec4's thread (q, b) stores: 4b + k, float4 q)
template <bool MIRROR>
__global__ void __launch_bounds__(QUADS * QUADS)
copy4_kernel(const float4 *__restrict__ in, float4 *__restrict__ out, int rows, int cols)
{
    const int q = threadIdx.x, b = threadIdx.y;
    const int rows4 = rows / 4, cols4 = cols / 4;
    const int col4 = blockIdx.x * QUADS + q;
    const int row = blockIdx.y * TILE5 + 4 * b;
    float4 a[4];
#pragma unroll
    for (int j = 0; j < 4; j++)
        a[j] = row + j < rows && col4 < cols4 ? in[(row + j) * cols4 + col4]
                                              : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (MIRROR) {
        const int out_col4 = blockIdx.y * QUADS + q;
        const int out_row = blockIdx.x * TILE5 + 4 * b;
#pragma unroll
        for (int k = 0; k < 4; k++)
            if (out_row + k < cols && out_col4 < rows4)
                out[(out_row + k) * rows4 + out_col4] = a[k];
    } else {
#pragma unroll
        for (int j = 0; j < 4; j++)
            if (row + j < rows && col4 < cols4)
                out[(row + j) * cols4 + col4] = a[j];
    }
}

// vec4_x2: 16 x 8 threads a tile; thread (q, b) moves the 4 x 4 blocks of bands b and b + 8
__global__ void __launch_bounds__(QUADS * QUADS / 2)
vec4_x2_kernel(const float4 *__restrict__ in, float4 *__restrict__ out, int rows, int cols)
{
    __shared__ float4 s_tile[TILE5][QUADS];
    const int q = threadIdx.x;
    const int rows4 = rows / 4, cols4 = cols / 4;
    const int col4 = blockIdx.x * QUADS + q;
    float4 a[2][4];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int row = blockIdx.y * TILE5 + 4 * (threadIdx.y + 8 * h);
#pragma unroll
        for (int j = 0; j < 4; j++)
            a[h][j] = row + j < rows && col4 < cols4 ? in[(row + j) * cols4 + col4]
                                                     : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int b = threadIdx.y + 8 * h;
        s_tile[4 * q + 0][SWZ(4 * q + 0, b)] =
            make_float4(a[h][0].x, a[h][1].x, a[h][2].x, a[h][3].x);
        s_tile[4 * q + 1][SWZ(4 * q + 1, b)] =
            make_float4(a[h][0].y, a[h][1].y, a[h][2].y, a[h][3].y);
        s_tile[4 * q + 2][SWZ(4 * q + 2, b)] =
            make_float4(a[h][0].z, a[h][1].z, a[h][2].z, a[h][3].z);
        s_tile[4 * q + 3][SWZ(4 * q + 3, b)] =
            make_float4(a[h][0].w, a[h][1].w, a[h][2].w, a[h][3].w);
    }
    __syncthreads();
    const int out_col4 = blockIdx.y * QUADS + q;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int b = threadIdx.y + 8 * h;
        const int out_row = blockIdx.x * TILE5 + 4 * b;
#pragma unroll
        for (int k = 0; k < 4; k++)
            if (out_row + k < cols && out_col4 < rows4)
                out[(out_row + k) * rows4 + out_col4] = s_tile[4 * b + k][SWZ(4 * b + k, q)];
    }
}

// vec4_persist: a grid of as many blocks as fit at once; block i takes tiles i, i + grid, ...
// (tile t is row t / tiles_x, column t % tiles_x of tiles, in the order of vec4's grid). The
// loads of the next tile are issued after this tile's transposed blocks are in shared memory
// and before this tile's stores; two shared tiles alternate, so that the stores of tile n
// (reading buffer n % 2) and the shared stores of tile n + 1 (into the other) need no barrier
// between them: the one barrier a tile orders the shared stores before the reads, and the reads
// of tile n before the shared stores of tile n + 2.
__global__ void __launch_bounds__(QUADS * QUADS)
vec4_persist_kernel(const float4 *__restrict__ in, float4 *__restrict__ out, int rows, int cols)
{
    __shared__ float4 s_tile[2][TILE5][QUADS];
    const int q = threadIdx.x, b = threadIdx.y;
    const int rows4 = rows / 4, cols4 = cols / 4;
    const int tiles_x = cdiv(cols, TILE5), tiles = tiles_x * cdiv(rows, TILE5);
    float4 a[4];
    auto load = [&](int tile) {
        const int col4 = tile % tiles_x * QUADS + q;
        const int row = tile / tiles_x * TILE5 + 4 * b;
#pragma unroll
        for (int j = 0; j < 4; j++)
            a[j] = row + j < rows && col4 < cols4 ? in[(row + j) * cols4 + col4]
                                                  : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    };
    int buf = 0;
    int tile = blockIdx.x;
    if (tile < tiles)
        load(tile);
    for (; tile < tiles; tile += (int)gridDim.x, buf ^= 1) {
        s_tile[buf][4 * q + 0][SWZ(4 * q + 0, b)] = make_float4(a[0].x, a[1].x, a[2].x, a[3].x);
        s_tile[buf][4 * q + 1][SWZ(4 * q + 1, b)] = make_float4(a[0].y, a[1].y, a[2].y, a[3].y);
        s_tile[buf][4 * q + 2][SWZ(4 * q + 2, b)] = make_float4(a[0].z, a[1].z, a[2].z, a[3].z);
        s_tile[buf][4 * q + 3][SWZ(4 * q + 3, b)] = make_float4(a[0].w, a[1].w, a[2].w, a[3].w);
        __syncthreads();
        if (tile + (int)gridDim.x < tiles)
            load(tile + gridDim.x);
        const int out_col4 = tile / tiles_x * QUADS + q;
        const int out_row = tile % tiles_x * TILE5 + 4 * b;
#pragma unroll
        for (int k = 0; k < 4; k++)
            if (out_row + k < cols && out_col4 < rows4)
                out[(out_row + k) * rows4 + out_col4] =
                    s_tile[buf][4 * b + k][SWZ(4 * b + k, q)];
    }
}

// ---- the harness --------------------------------------------------------------------------

enum check { TRANSPOSE, COPY, MIRROR };

struct variant {
    const char *name;
    enum check check;
    void (*launch)(const float *in, float *out, int n);
};

static int g_persist_blocks;

static void l_copy(const float *in, float *out, int n)
{
    copy_same_bytes_kernel<<<dim3(cdiv(n, TILE), cdiv(n, TILE)), dim3(TILE, 8)>>>(in, out, n, n);
}
static void l_copy4(const float *in, float *out, int n)
{
    copy4_kernel<false><<<dim3(cdiv(n, TILE5), cdiv(n, TILE5)), dim3(QUADS, QUADS)>>>(
        (const float4 *)in, (float4 *)out, n, n);
}
static void l_copy4_mirror(const float *in, float *out, int n)
{
    copy4_kernel<true><<<dim3(cdiv(n, TILE5), cdiv(n, TILE5)), dim3(QUADS, QUADS)>>>(
        (const float4 *)in, (float4 *)out, n, n);
}
static void l_padded_8(const float *in, float *out, int n)
{
    padded_8_kernel<<<dim3(cdiv(n, TILE), cdiv(n, TILE)), dim3(TILE, 4)>>>(in, out, n, n);
}
static void l_vec4(const float *in, float *out, int n)
{
    vec4_kernel<false><<<dim3(cdiv(n, TILE5), cdiv(n, TILE5)), dim3(QUADS, QUADS)>>>(
        (const float4 *)in, (float4 *)out, n, n);
}
static void l_vec4_cs(const float *in, float *out, int n)
{
    vec4_kernel<true><<<dim3(cdiv(n, TILE5), cdiv(n, TILE5)), dim3(QUADS, QUADS)>>>(
        (const float4 *)in, (float4 *)out, n, n);
}
static void l_vec4_x2(const float *in, float *out, int n)
{
    vec4_x2_kernel<<<dim3(cdiv(n, TILE5), cdiv(n, TILE5)), dim3(QUADS, QUADS / 2)>>>(
        (const float4 *)in, (float4 *)out, n, n);
}
static void l_vec4_persist(const float *in, float *out, int n)
{
    int tiles = cdiv(n, TILE5) * cdiv(n, TILE5);
    vec4_persist_kernel<<<std::min(g_persist_blocks, tiles), dim3(QUADS, QUADS)>>>(
        (const float4 *)in, (float4 *)out, n, n);
}

static const variant VARIANTS[] = {
    { "copy", COPY, l_copy },
    { "copy4", COPY, l_copy4 },
    { "copy4_mirror", MIRROR, l_copy4_mirror },
    { "padded_8", TRANSPOSE, l_padded_8 },
    { "vec4", TRANSPOSE, l_vec4 },
    { "vec4_cs", TRANSPOSE, l_vec4_cs },
    { "vec4_x2", TRANSPOSE, l_vec4_x2 },
    { "vec4_persist", TRANSPOSE, l_vec4_persist },
};
static const int NVARIANTS = sizeof VARIANTS / sizeof VARIANTS[0];

// the mismatches of out against what the variant should have written, on the host, a 64 x 64
// tile of out at a time (the source tile of in stays in the cache), bits compared
static long long check_output(const variant &v, const std::vector<float> &h_in,
                              const std::vector<float> &h_out, int n)
{
    const uint32_t *in = (const uint32_t *)h_in.data(), *out = (const uint32_t *)h_out.data();
    long long bad = 0;
    for (long long tr = 0; tr < n / TILE5; tr++)
        for (long long tc = 0; tc < n / TILE5; tc++)
            for (long long i = 0; i < TILE5; i++)
                for (long long j = 0; j < TILE5; j++) {
                    long long r = tr * TILE5 + i, c = tc * TILE5 + j; // out(r, c)
                    long long src = v.check == COPY        ? r * n + c
                                    : v.check == TRANSPOSE ? c * n + r
                                                           : (tc * TILE5 + i) * n + tr * TILE5 + j;
                    bad += out[r * n + c] != in[src];
                }
    return bad;
}

static float time_one(const variant &v, const float *d_in, float *d_out, int n, void *d_flush,
                      size_t flush_bytes)
{
    cudaEvent_t start, stop;
    CK(cudaEventCreate(&start));
    CK(cudaEventCreate(&stop));
    for (int i = 0; i < 3; i++)
        v.launch(d_in, d_out, n);
    CK(cudaGetLastError());
    std::vector<float> t;
    for (int i = 0; i < 20; i++) {
        CK(cudaMemsetAsync(d_flush, i, flush_bytes));
        CK(cudaEventRecord(start));
        v.launch(d_in, d_out, n);
        CK(cudaEventRecord(stop));
        CK(cudaEventSynchronize(stop));
        CK(cudaGetLastError());
        float ms;
        CK(cudaEventElapsedTime(&ms, start, stop));
        t.push_back(ms);
    }
    CK(cudaEventDestroy(start));
    CK(cudaEventDestroy(stop));
    std::sort(t.begin(), t.end());
    return (t[9] + t[10]) / 2;
}

int main(int argc, char **argv)
{
    std::vector<int> sizes;
    for (int i = 1; i < argc; i++)
        sizes.push_back(atoi(argv[i]));
    if (sizes.empty())
        sizes = { 4096, 8192, 16384 };
    for (int n : sizes)
        if (n <= 0 || n % TILE5 != 0 || (long long)n * n >= (1ll << 31)) {
            fprintf(stderr, "transpose_vec4: %d: sizes are multiples of 64 under 46341\n", n);
            return 2;
        }

    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, vec4_persist_kernel,
                                                     QUADS * QUADS, 0));
    g_persist_blocks = per_sm * prop.multiProcessorCount;
    int per_sm_vec4 = 0, per_sm_x2 = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_vec4, vec4_kernel<false>,
                                                     QUADS * QUADS, 0));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_x2, vec4_x2_kernel,
                                                     QUADS * QUADS / 2, 0));
    printf("# device: %s, %d SMs, L2 %d bytes\n", prop.name, prop.multiProcessorCount,
           prop.l2CacheSize);
    printf("# blocks an SM: vec4 %d (256 threads), vec4_x2 %d (128), vec4_persist %d (256; "
           "grid %d)\n", per_sm_vec4, per_sm_x2, per_sm, g_persist_blocks);
    printf("kernel\tshape\tround\tms\tgbs\tof_copy\tof_copy4\tcheck\n");

    size_t flush_bytes = 2 * (size_t)prop.l2CacheSize;
    void *d_flush;
    CK(cudaMalloc(&d_flush, flush_bytes));
    for (int n : sizes) {
        size_t count = (size_t)n * n;
        std::vector<float> h_in(count), h_out(count);
        uint32_t s = 12345u + n;
        for (size_t i = 0; i < count; i++) {
            s = s * 1664525u + 1013904223u;
            h_in[i] = (float)(s >> 8) / 16777216.0f - 0.5f;
        }
        float *d_in, *d_out;
        CK(cudaMalloc(&d_in, count * sizeof(float)));
        CK(cudaMalloc(&d_out, count * sizeof(float)));
        CK(cudaMemcpy(d_in, h_in.data(), count * sizeof(float), cudaMemcpyHostToDevice));
        std::vector<long long> bad(NVARIANTS);
        const bool checked = n <= 8192;
        for (int i = 0; i < NVARIANTS && checked; i++) {
            CK(cudaMemset(d_out, 0xff, count * sizeof(float)));
            VARIANTS[i].launch(d_in, d_out, n);
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(h_out.data(), d_out, count * sizeof(float), cudaMemcpyDeviceToHost));
            bad[i] = check_output(VARIANTS[i], h_in, h_out, n);
        }
        for (int round = 1; round <= 2; round++) {
            std::vector<float> ms(NVARIANTS);
            for (int i = 0; i < NVARIANTS; i++)
                ms[i] = time_one(VARIANTS[i], d_in, d_out, n, d_flush, flush_bytes);
            for (int i = 0; i < NVARIANTS; i++) {
                double gbs = 2.0 * count * sizeof(float) / (ms[i] * 1e-3) / 1e9;
                printf("%s\t%dx%d\t%d\t%.6f\t%.1f\t%.3f\t%.3f\t%s\n", VARIANTS[i].name, n, n,
                       round, ms[i], gbs, ms[0] / ms[i], ms[1] / ms[i],
                       !checked ? "-" : bad[i] ? "WRONG" : "ok");
                if (bad[i])
                    printf("# %s at %d: %lld of %zu elements wrong\n", VARIANTS[i].name, n,
                           bad[i], count);
            }
            fflush(stdout);
        }
        CK(cudaFree(d_in));
        CK(cudaFree(d_out));
    }
    CK(cudaFree(d_flush));
    return 0;
}
