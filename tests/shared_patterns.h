/* shared_patterns.h: shared-memory loads whose wavefronts the H200 has measured, for the CPU
 * backend's model to be checked against (tests/emu_profile.c) and for the probe that measured
 * them (tests/ncu/shared_wavefronts.cu). One warp, one load of BYTES bytes a lane (4: float,
 * 8: float2, 16: float4), lane l reading element INDEX of that width from the start of a
 * 16-byte aligned shared array. The measured wavefronts are in
 * plots/data/h200/shared-wavefronts.tsv, one row per pattern, its index written as here. C and
 * C++ alike. */
#ifndef SHARED_PATTERNS_H
#define SHARED_PATTERNS_H

/* X(bytes, index in terms of the lane l) */
#define SHARED_PATTERNS(X) \
    X(16, 0)                       /* one address for all */ \
    X(16, l / 16)                  \
    X(16, l / 16 * 2)              \
    X(16, l % 16 * 2)              \
    X(16, l / 4)                   \
    X(16, l % 4)                   \
    X(16, l)                       /* 512 contiguous bytes */ \
    X(16, l / 8)                   \
    X(16, l % 8)                   \
    X(16, l / 2)                   \
    X(16, l % 16)                  \
    X(16, l % 8 * 2)               \
    X(16, l * 8)                   /* every lane in the same 4 banks */ \
    X(16, l / 4 * 8)               \
    X(16, l % 4 * 8)               \
    X(16, l / 8 * 2)               \
    X(16, l % 2)                   \
    X(16, 31 - l)                  \
    X(16, l < 8 ? l : 0)           \
    X(16, l < 8 ? 0 : l)           \
    X(16, l % 8 * 8 + l / 8)       \
    X(16, l ^ 8)                   \
    X(16, l / 4 + l % 4 * 8)       \
    X(8, 0)                        \
    X(8, l)                        \
    X(8, l / 2)                    \
    X(8, l % 16)                   \
    X(8, l / 4)                    \
    X(8, l % 4)                    \
    X(8, l * 16)                   \
    X(8, l / 16)                   \
    X(8, l % 16 * 2)               \
    X(4, 0)                        \
    X(4, l)                        \
    X(4, l * 32)                   \
    X(4, l % 16 * 32)

/* the largest index any pattern reads, and the shared array that holds it: 4 KB */
#define SHARED_PATTERN_BYTES 4096

enum { SHARED_PATTERN_COUNT = 0
#define SHARED_PATTERN_ONE(bytes, index) + 1
    SHARED_PATTERNS(SHARED_PATTERN_ONE)
#undef SHARED_PATTERN_ONE
};

/* pattern p's width, and the index lane l reads */
static inline int shared_pattern_bytes(int p)
{
    int i = 0;
#define SHARED_PATTERN_BYTES_OF(bytes, index) if (p == i++) return bytes;
    SHARED_PATTERNS(SHARED_PATTERN_BYTES_OF)
#undef SHARED_PATTERN_BYTES_OF
    return 0;
}
static inline int shared_pattern_index(int p, int l)
{
    int i = 0;
#define SHARED_PATTERN_INDEX_OF(bytes, index) if (p == i++) return (index);
    SHARED_PATTERNS(SHARED_PATTERN_INDEX_OF)
#undef SHARED_PATTERN_INDEX_OF
    (void)l;
    return -1;
}
/* its index as written above ("l / 4 * 8") */
static inline const char *shared_pattern_name(int p)
{
    int i = 0;
#define SHARED_PATTERN_NAME_OF(bytes, index) if (p == i++) return #index;
    SHARED_PATTERNS(SHARED_PATTERN_NAME_OF)
#undef SHARED_PATTERN_NAME_OF
    return "";
}

#endif
