/* emu_schedule.h: the CPU backend's schedule record as the stream and device suites read it
 * (tests/emu_streams.c, tests/emu_devices.c).
 *
 * schedule(&n): the operations recorded since the last emu_schedule_reset, as an array of n
 * (free it). schedule_tsv(path): the record written by emu_schedule_write_tsv into a new file
 * made from the mkstemp template `path` (its name left there, for the caller to unlink), opened
 * for reading. Either fails the test where a call fails. */
#ifndef EMU_SCHEDULE_H
#define EMU_SCHEDULE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <emu_streams.h>

static inline struct emu_op *schedule(size_t *count)
{
    *count = emu_schedule_count();
    struct emu_op *ops = calloc(*count + 1, sizeof *ops);
    ck_assert_ptr_nonnull(ops);
    for (size_t i = 0; i < *count; ++i)
        ck_assert_int_eq(emu_schedule_get(i, &ops[i]), 0);
    return ops;
}

static inline FILE *schedule_tsv(char *path)
{
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(emu_schedule_write_tsv(path), 0);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    return f;
}

#endif
