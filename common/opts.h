/* SPDX-License-Identifier: MIT */
/*
 * Options structs with a size field, checked one way everywhere (libbpf's
 * OPTS_VALID; the kernel's bpf_check_uarg_tail_zero). A caller built against
 * an older header passes a smaller sz and gets the defaults of the fields it
 * lacks; one built against a newer header may pass a larger sz as long as
 * every byte this build does not know is zero. A non-zero unknown byte is an
 * option this build would silently ignore: refused with -E2BIG.
 */
#ifndef COMMON_OPTS_H
#define COMMON_OPTS_H

#include <errno.h>
#include <stddef.h>

/* The end of the last field this build knows (libbpf's offsetofend). */
#define OPTS_KNOWN_END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

/*
 * opts points at a struct whose first member is its size_t sz; known is
 * OPTS_KNOWN_END of its last field. 0 (NULL means every default), -EINVAL
 * if sz cannot even hold itself, -E2BIG if a byte past known is set.
 */
static inline int opts_check(const void *opts, size_t known)
{
	const unsigned char *p = opts;
	size_t sz;

	if (!opts)
		return 0;
	sz = *(const size_t *)opts;
	if (sz < sizeof(size_t))
		return -EINVAL;
	for (size_t i = known; i < sz; i++)
		if (p[i])
			return -E2BIG;
	return 0;
}

/* The same for a struct with fields every caller must pass: a sz that stops
 * before min (OPTS_KNOWN_END of the last required field) is -EINVAL. NULL is
 * 0 here too: whether options are required is the caller's to say. */
static inline int opts_check_min(const void *opts, size_t min, size_t known)
{
	if (opts && *(const size_t *)opts < min)
		return -EINVAL;
	return opts_check(opts, known);
}

/* Did the caller's sz reach field (libbpf's OPTS_HAS)? opts may be NULL. */
#define OPTS_HAS(opts, field) ((opts) && (opts)->sz >= OPTS_KNOWN_END(__typeof__(*(opts)), field))
/* field, or def for a caller whose sz stops before it (libbpf's OPTS_GET). */
#define OPTS_GET(opts, field, def) (OPTS_HAS(opts, field) ? (opts)->field : (def))

#endif /* COMMON_OPTS_H */
