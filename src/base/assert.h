/* CUBEC_ASSERT: a check of an internal invariant, on in debug builds (NDEBUG not defined: Debug
 * and the sanitizer builds) and compiled out otherwise. A broken invariant is a bug in cubec, never
 * the consequence of user input, so it reports the file, line and condition on stderr and aborts
 * there, rather than showing up as a wrong result later. Everything a user can get wrong is
 * refused with a status instead, and no release build aborts (docs/api.md). The condition must
 * have no side effects: release builds do not evaluate it. */
#ifndef CUBEC_BASE_ASSERT_H
#define CUBEC_BASE_ASSERT_H

#ifdef NDEBUG
/* sizeof keeps the condition's variables used without evaluating it. */
#define CUBEC_ASSERT(cond) ((void)sizeof(!(cond)))
#else
#define CUBEC_ASSERT(cond)                                                                         \
    ((cond) ? (void)0 : invariant_failed(#cond, __FILE__, __LINE__, __func__))
#endif

/* Prints "cubec: internal invariant broken at <file>:<line> in <func>: <cond>" and aborts. */
void invariant_failed(const char *cond, const char *file, int line, const char *func)
    __attribute__((noreturn, cold));

#endif
