/* ident.h: what a program is, as the build tells it.
 *
 * Every grader, profile driver and test program links an object the Makefile compiles from
 * harness/ident.c for that program alone, with its facts as definitions: nothing in a program
 * works out what it is from its own path. */
#ifndef IDENT_H
#define IDENT_H

#ifdef __cplusplus
extern "C" {
#endif

struct grade_build {
    const char *chapter;  /* "02-coalesced-transpose"; "" for a program of no chapter */
    const char *side;     /* "chapters", "solutions", "mutant NAME" (a known-bug kernel), "tests" */
    const char *backend;  /* "cuda" or "emu" */
    const char *profile;  /* the profile driver its concept tests run (graders/concept.h), or "" */
};

extern const struct grade_build GRADE_BUILD;

#ifdef __cplusplus
}
#endif

#endif
