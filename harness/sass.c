/* sass.c: the machine code of this very program, through cuobjdump (see sass.h). */
#define _POSIX_C_SOURCE 200809L /* popen, readlink */
#include "sass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sass_on_path(const char *prog)
{
    const char *path = getenv("PATH");
    if (!path)
        return 0;
    char dir[4096], file[4200];
    while (*path) {
        size_t len = strcspn(path, ":");
        if (len > 0 && len < sizeof dir) {
            memcpy(dir, path, len);
            dir[len] = '\0';
            snprintf(file, sizeof file, "%s/%s", dir, prog);
            if (access(file, X_OK) == 0)
                return 1;
        }
        path += len + (path[len] == ':');
    }
    return 0;
}

int sass_own_path(char *buf, size_t size, char *why, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n < 0 || (size_t)n >= size - 1) {
        snprintf(why, len, "could not resolve this grader's own path from /proc/self/exe");
        return -1;
    }
    buf[n] = '\0';
    return 0;
}

int sass_shell_quote(const char *path, char *out, size_t size)
{
    size_t o = 0;
    if (o + 1 >= size)
        return -1;
    out[o++] = '\'';
    for (const char *p = path; *p; p++) {
        const char *piece = *p == '\'' ? "'\\''" : NULL;
        size_t plen = piece ? strlen(piece) : 1;
        if (o + plen + 2 >= size)
            return -1;
        if (piece) {
            memcpy(out + o, piece, plen);
            o += plen;
        } else {
            out[o++] = *p;
        }
    }
    out[o++] = '\'';
    out[o] = '\0';
    return 0;
}

int sass_arch_line(const char *line, const char *arch)
{
    const char *a = strstr(line, "arch = sm_");
    if (!a)
        return -1;
    size_t alen = strlen(arch);
    if (strncmp(a + 7, arch, alen) != 0)
        return 0;
    char next = a[7 + alen];
    return !(next >= '0' && next <= '9') && next != 'a';
}

/* Whole lines of text, one at a time, into line (len bytes, a longer line cut): the next line's
 * start, or NULL at the end. */
static const char *next_line(const char *at, char *line, size_t len)
{
    if (!at || !*at)
        return NULL;
    size_t n = strcspn(at, "\n");
    size_t keep = n < len - 1 ? n : len - 1;
    memcpy(line, at, keep);
    line[keep] = '\0';
    return at[n] ? at + n + 1 : at + n;
}

void sass_scan(const char *text, const char *kernel, const char *opcode, const char *arch,
               int *nfn, int *nwith)
{
    char line[4096];
    int in_arch = 0, in_fn = 0, has = 0;
    *nfn = *nwith = 0;
    for (const char *at = text; (at = next_line(at, line, sizeof line)) != NULL;) {
        int is = sass_arch_line(line, arch);
        if (is >= 0 || strstr(line, "Function : ")) {
            *nwith += in_fn && has;
            in_fn = has = 0;
            if (is >= 0) {
                in_arch = is;
                continue;
            }
            in_fn = in_arch && strstr(line, kernel) != NULL;
            *nfn += in_fn;
            continue;
        }
        if (in_fn && strstr(line, opcode))
            has = 1;
    }
    *nwith += in_fn && has;
}

/* The mnemonic of an instruction line of a dump (its address in a comment, /[*]0010[*]/ without
 * the brackets, then "@!P1 LDS.128 R4, [R2] ;") into op, without modifiers: LDS; 0 when the
 * line holds no instruction (the encoding line under each one holds only a comment). */
static int line_mnemonic(const char *line, char *op, size_t len)
{
    const char *p = strstr(line, "/*");
    if (!p)
        return 0;
    p += 2;
    const char *q = p;
    while ((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f'))
        q++;
    if (q == p || q[0] != '*' || q[1] != '/')
        return 0; /* the encoding line under an instruction, or no address at all */
    q += 2;
    while (*q == ' ' || *q == '\t')
        q++;
    if (*q == '@') { /* a predicate: @P0, @!UP1; @!PT never lets the instruction run */
        if (strncmp(q, "@!PT", 4) == 0 && (q[4] == ' ' || q[4] == '\t'))
            return 0;
        while (*q && *q != ' ' && *q != '\t')
            q++;
        while (*q == ' ' || *q == '\t')
            q++;
    }
    size_t n = 0;
    while ((q[n] >= 'A' && q[n] <= 'Z') || (q[n] >= '0' && q[n] <= '9') || q[n] == '_')
        n++;
    if (n == 0 || n >= len)
        return 0;
    memcpy(op, q, n);
    op[n] = '\0';
    return 1;
}

int sass_scan_ops(const char *text, const char *kernel, const char *arch, const char *const *ops,
                  int nops, int *counts, int max)
{
    char line[4096], op[32];
    int in_arch = 0, fn = -1, nfn = 0;
    for (int i = 0; i < max * nops; i++)
        counts[i] = 0;
    for (const char *at = text; (at = next_line(at, line, sizeof line)) != NULL;) {
        int is = sass_arch_line(line, arch);
        if (is >= 0) {
            in_arch = is;
            fn = -1;
            continue;
        }
        if (strstr(line, "Function : ")) {
            fn = in_arch && strstr(line, kernel) != NULL ? nfn++ : -1;
            continue;
        }
        if (fn < 0 || fn >= max || !line_mnemonic(line, op, sizeof op))
            continue;
        for (int j = 0; j < nops; j++)
            if (strcmp(op, ops[j]) == 0)
                counts[fn * nops + j]++;
    }
    return nfn;
}

/* The whole -sass dump of this program, once: what sass_preload read (the grader's parent, before
 * any test and any code under grading ran), or NULL. */
static char *dump;

/* cuobjdump -sass of this program into a malloc'd string; 0, or -1 with why */
static int read_dump(char **out, char *why, size_t len)
{
    char self[4096], quoted[3 * 4096], cmd[3 * 4096 + 64];
    if (sass_own_path(self, sizeof self, why, len) != 0)
        return -1;
    if (sass_shell_quote(self, quoted, sizeof quoted) != 0) {
        snprintf(why, len, "this grader's path is too long to pass to cuobjdump");
        return -1;
    }
    snprintf(cmd, sizeof cmd, "cuobjdump -sass %s 2>&1", quoted);
    FILE *f = popen(cmd, "r");
    if (!f) {
        snprintf(why, len, "could not run cuobjdump");
        return -1;
    }
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            char *more = realloc(buf, cap * 2);
            if (!more) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = more;
            cap *= 2;
        }
    }
    int st = pclose(f);
    if (!buf) {
        snprintf(why, len, "out of memory reading cuobjdump's output");
        return -1;
    }
    buf[n] = '\0';
    if (st == -1) {
        free(buf);
        snprintf(why, len, "cuobjdump -sass %.100s did not finish", self);
        return -1;
    }
    *out = buf;
    return 0;
}

int sass_preload(char *why, size_t len)
{
    if (dump)
        return 0;
    return read_dump(&dump, why, len);
}

int sass_count(const char *kernel, const char *opcode, const char *arch, int *nfn, int *nwith,
               char *why, size_t len)
{
    if (dump) {
        sass_scan(dump, kernel, opcode, arch, nfn, nwith);
        return 0;
    }
    char *text;
    if (read_dump(&text, why, len) != 0)
        return -1;
    sass_scan(text, kernel, opcode, arch, nfn, nwith);
    free(text);
    return 0;
}

int sass_tally(const char *kernel, const char *arch, const char *const *ops, int nops,
               int *counts, int max, int *nfn, char *why, size_t len)
{
    if (dump) {
        *nfn = sass_scan_ops(dump, kernel, arch, ops, nops, counts, max);
        return 0;
    }
    char *text;
    if (read_dump(&text, why, len) != 0)
        return -1;
    *nfn = sass_scan_ops(text, kernel, arch, ops, nops, counts, max);
    free(text);
    return 0;
}
