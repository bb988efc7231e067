/* ident.c: compiled once per program, with GRADE_CHAPTER, GRADE_SIDE, GRADE_BACKEND and
 * GRADE_PROFILE defined by the Makefile (ident.h says what they are). */
#include "ident.h"

#if !defined(GRADE_CHAPTER) || !defined(GRADE_SIDE) || !defined(GRADE_BACKEND) || !defined(GRADE_PROFILE)
#error "ident.c is compiled by the Makefile, which defines what the program is"
#endif

const struct grade_build GRADE_BUILD = { GRADE_CHAPTER, GRADE_SIDE, GRADE_BACKEND, GRADE_PROFILE };
