#!/usr/bin/env bash
# tolerance.sh: the graders' tolerances come from one place (graders/tolerance.c), and none is
# looser than twice the bound it is derived from but the known exceptions named below.
#   1. the audit: every entry of TOL_ENTRIES, at reduction lengths 1 to 300 and every power of
#      two to 2^28 and its neighbours, each output format it grades, and a grid of the other
#      parameters (a softmax element's distance below the maximum, attention's head dimension
#      and score scale): allowed <= 2 x derived; and an entry made 2.01 times its derivation
#      is caught (the audit can fail). The entries kept looser (KNOWN_LOOSE) are printed with
#      their ratio instead, and fail past the ratio recorded or back within 2 x; and chapter
#      10's tol_attention_lse and tol_attention_vs_gpu add what tol_attention's fields say
#   2. TOLERANCE.md's table is the one the source prints (tests/tolerance.sh --table)
#   3. no grader computes a tolerance of its own: outside comments and strings, no unit
#      roundoff written out (2^-24 as 16777216, 0x1p-24, U32, UBF16 ...), no fp32_dot_rtol,
#      no lambda sqrt(n) term, no literal like 1e-5 but in timing conversions and a contract's
#      eps. The files still to move onto graders/tolerance.h are listed in PENDING: their sites
#      are printed, not failed. A planted constant is caught (the check can fail).
# Fails with what it saw. Needs gcc and make's build/ only as scratch.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CC=${CC:-gcc}

# graders whose tolerances are still computed in place (see TOLERANCE.md, "Still to move"):
# their sites are printed, not failed
PENDING=""

# Entries allowed more than twice their derivation, kept at the values their grader grades with
# (TOLERANCE.md, "Where the graders are looser than twice their derivation"), as NAME|RATIO:
# the audit prints each with its largest allowed / derived, and fails one past RATIO or one
# back within twice (which is then no exception: take it off the list).
KNOWN_LOOSE=(
    "tol_attention(D, E, n, out).lse_rel|8"
    "tol_attention(D, E, n, out).lse_abs|4.3"
)

cat > "$tmp/audit.c" <<'EOF'
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tolerance.h"

/* an entry 2.01 times the fp32 dot product's derivation: the audit must reject it */
static double loose(const struct tol_point *p) { return 2.01 * TOL_ENTRIES[4].derived(p); }

/* the known exceptions, from the arguments NAME|RATIO */
static const char *exc_name[16];
static double exc_ratio[16];
static int nexc;

static int is_exception(const char *name)
{
    for (int i = 0; i < nexc; i++)
        if (strcmp(exc_name[i], name) == 0)
            return 1;
    return 0;
}

/* tol_attention_lse and tol_attention_vs_gpu against the fields they are documented to add */
static int consistent(void)
{
    static const int dims[] = { 1, 64, 128 };
    static const double es[] = { 0, 0.7, 8, 310 }, xs[] = { -3, 0, 0.4, 9, 200 };
    static const long ns[] = { 1, 17, 4096, 1L << 20 };
    int bad = 0;
    for (int f = TOL_BF16; f <= TOL_FP16; f++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++)
                for (int k = 0; k < 4; k++)
                    for (int m = 0; m < 5; m++) {
                        struct tol_attention t = tol_attention(dims[i], es[j], ns[k], f);
                        double lse = t.lse_rel * fabs(xs[m]) + t.lse_abs;
                        double lse_got = tol_attention_lse(dims[i], es[j], ns[k], xs[m]);
                        double gpu = TOL_TWO_SIDED * (t.o_rel * fabs(xs[m]) + t.o_a) +
                                     TOL_FLOOR_FP16;
                        double gpu_got = tol_attention_vs_gpu(&t, xs[m]);
                        if (fabs(lse_got - lse) <= 1e-14 * lse &&
                            fabs(gpu_got - gpu) <= 1e-14 * gpu && t.o_a == t.o_rel + t.o_w)
                            continue;
                        if (bad++ < 5)
                            printf("tolerance: tol_attention_lse %.17g or tol_attention_vs_gpu "
                                   "%.17g is not what its fields add to, %.17g or %.17g\n",
                                   lse_got, gpu_got, lse, gpu);
                    }
    return bad;
}

int main(int argc, char **argv)
{
    const int table = argc > 1 && strcmp(argv[1], "--table") == 0;
    for (int a = 1 + table; a < argc; a++) {
        char *bar = strrchr(argv[a], '|');
        if (!bar || nexc == 16) {
            printf("tolerance: a known exception is NAME|RATIO, at most 16: %s\n", argv[a]);
            return 2;
        }
        *bar = 0;
        exc_name[nexc] = argv[a], exc_ratio[nexc++] = atof(bar + 1);
    }
    if (table) {
        printf("| Entry (graders/tolerance.h) | Graded | Formats | Bound | Allowed | "
               "Derived from |\n|---|---|---|---|---|---|\n");
        for (int i = 0; i < TOL_NENTRIES; i++) {
            const struct tol_entry *t = &TOL_ENTRIES[i];
            char bound[160];
            if (is_exception(t->name))
                snprintf(bound, sizeof bound, "%s; **known exception**, up to %.3g times its "
                         "derivation", tol_kind_name(t->kind), tol_ratio(t));
            else
                snprintf(bound, sizeof bound, "%s", tol_kind_name(t->kind));
            printf("| `%s` | %s | %s | %s | `%s` | `%s` |\n", t->name, t->graded, t->formats,
                   bound, t->allowed_text, t->derived_text);
        }
        return 0;
    }
    /* every entry but the known exceptions: within twice its derivation */
    static struct tol_entry held[256];
    int nheld = 0, bad = 0;
    for (int i = 0; i < TOL_NENTRIES && nheld < 256; i++)
        if (!is_exception(TOL_ENTRIES[i].name))
            held[nheld++] = TOL_ENTRIES[i];
    bad += tol_audit(held, nheld, 1);
    /* each known exception, with its ratio: no looser than recorded, and still over 2 */
    for (int e = 0; e < nexc; e++) {
        const struct tol_entry *t = NULL;
        for (int i = 0; i < TOL_NENTRIES; i++)
            if (strcmp(TOL_ENTRIES[i].name, exc_name[e]) == 0)
                t = &TOL_ENTRIES[i];
        if (!t) {
            printf("tolerance: the known exception %s is no entry of TOL_ENTRIES\n",
                   exc_name[e]);
            bad++;
            continue;
        }
        const double r = tol_ratio(t);
        printf("  known exception: %-36s at most %.3g times its derivation (recorded %g)\n",
               t->name, r, exc_ratio[e]);
        if (r > exc_ratio[e])
            printf("tolerance: %s is up to %.3g times its derivation, over the %g recorded\n",
                   t->name, r, exc_ratio[e]), bad++;
        if (r <= 2)
            printf("tolerance: %s is within twice its derivation: it is no exception, take it "
                   "off KNOWN_LOOSE\n", t->name), bad++;
    }
    printf("tolerance: %d known exceptions over twice their derivation (KNOWN_LOOSE, "
           "TOLERANCE.md)\n", nexc);
    bad += consistent();
    struct tol_entry planted = TOL_ENTRIES[4];
    planted.name = "planted: 2.01 x tol_dot_fp32's derivation";
    planted.allowed = loose;
    int caught = tol_audit(&planted, 1, 0);
    if (caught == 0)
        printf("tolerance: the audit let an entry 2.01 times its derivation pass\n");
    return bad != 0 || caught == 0;
}
EOF
fail=0
if ! $CC -std=c11 -O2 -Wall -Wextra -Werror -Igraders -o "$tmp/audit" "$tmp/audit.c" \
    graders/tolerance.c -lm; then
    echo "tolerance: the audit does not build"; exit 1
fi
if [[ ${1:-} == --table ]]; then
    "$tmp/audit" --table "${KNOWN_LOOSE[@]}"; exit
fi
"$tmp/audit" "${KNOWN_LOOSE[@]}" || fail=1

# 2. the table in TOLERANCE.md, between its markers, is the generated one
"$tmp/audit" --table "${KNOWN_LOOSE[@]}" > "$tmp/table.md"
sed -n '/^<!-- tolerance table: begin/,/^<!-- tolerance table: end/p' TOLERANCE.md |
    sed '1d;$d' > "$tmp/doc.md"
if ! diff -u "$tmp/doc.md" "$tmp/table.md"; then
    echo "tolerance: TOLERANCE.md's table differs from the source's (tests/tolerance.sh --table)"
    fail=1
fi

# 3. no tolerance computed in a grader. Comments go (the preprocessor, macros kept), then
# string literals; what is left is code.
FORBIDDEN='fp32_dot_rtol|0x1(\.0*)?p-(8|11|24|25|126)\b|16777216|33554432|1\.0 / (256|2048)\.0'
FORBIDDEN+='|\b(U32|UBF16|UF16|TINY|F16_ATOL|RTOL|ATOL)\b|\b(8|16)(\.0)? \* (sqrt\(|sq\b)'
SCIENTIFIC='[0-9.]e-[0-9]+'
ALLOWED_SCIENTIFIC='ms\b|_ms|nsec|_EPS\b'
sites() { # sites FILE: its tolerance constants, FILE:LINE: CODE
    $CC -fpreprocessed -dD -E "$1" 2>/dev/null |
        awk -v f="$1" '/^# [0-9]+ "/ { line = $2; next } { print f ":" line ": " $0; line++ }' |
        sed -E 's/"([^"\\]|\\.)*"/""/g' > "$tmp/code"
    { grep -E "$FORBIDDEN" "$tmp/code"
      grep -E "$SCIENTIFIC" "$tmp/code" | grep -Ev "$ALLOWED_SCIENTIFIC"; } | sort -t: -k2,2n -u
}
printf '/* a comment with 1e-5 and U32 */\nstatic const double x = 1e-5 * 2;\n' > "$tmp/planted.c"
printf 'static const char *m = "1e-5 U32";\ndouble t(double ms) { return ms * 1e-3; }\n' \
    > "$tmp/clean.c"
if [[ $(sites "$tmp/planted.c" | wc -l) -ne 1 || -n $(sites "$tmp/clean.c") ]]; then
    echo "tolerance: the check for constants in graders misses a planted one, or flags a" \
         "comment, a string or a timing:"
    sites "$tmp/planted.c"; sites "$tmp/clean.c"
    fail=1
fi
inline=0 pending=0
for f in graders/*.c graders/*.h; do
    [[ $f == graders/tolerance.[ch] ]] && continue
    found=$(sites "$f")
    [[ -z $found ]] && continue
    if [[ " $PENDING " == *" $f "* ]]; then
        pending=$((pending + $(wc -l <<<"$found")))
        while IFS= read -r site; do echo "pending: $site"; done <<<"$found"
    else
        inline=$((inline + $(wc -l <<<"$found")))
        while IFS= read -r site; do
            echo "tolerance: computed in place, not from graders/tolerance.h: $site"
        done <<<"$found"
    fi
done
for f in $PENDING; do
    [[ -f $f && -z $(sites "$f") ]] && echo "note: $f computes no tolerance in place any more:" \
        "take it off PENDING in tests/tolerance.sh"
done
echo "tolerance: $inline tolerance constants in graders outside graders/tolerance.c," \
     "$pending pending (in the files still to move: ${PENDING:-none})"
((inline == 0)) || fail=1
exit $fail
