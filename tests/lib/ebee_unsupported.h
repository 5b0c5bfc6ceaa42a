/* SPDX-License-Identifier: MIT */
/*
 * Whether an error of ebee's is one of its refusals that say this kernel
 * cannot run a path or attach method (tests/lib/ebee_unsupported.re, shared
 * with the shell tests): only those make a test SKIP, any other error fails it.
 */
#ifndef EBEE_UNSUPPORTED_H
#define EBEE_UNSUPPORTED_H

/* The list, relative to the repository root (the tests' working directory). */
#define TU_EBEE_UNSUPPORTED_RE "tests/lib/ebee_unsupported.re"

/* 1 if msg holds one of the listed refusals, 0 if not, a negative errno
 * (and why on stderr) if the list cannot be read or has a bad expression. */
int tu_ebee_unsupported(const char *msg);

#endif
