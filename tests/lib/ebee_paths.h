/* SPDX-License-Identifier: MIT */
/*
 * Running the ebee integration tests on both kernel paths (socket and
 * syscall): each test program runs its group once per path, so CI on a kernel
 * that has both keeps both tested. EBEE_TEST_PATH=socket|syscall runs one.
 * A path the kernel cannot do makes its group's tests say SKIP and why.
 */
#ifndef EBEE_PATHS_H
#define EBEE_PATHS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ebee.h"
#include "testutil.h"

/* The path the running group tests; its probe groups for the io-only and
 * the always-needed hooks, for tests that check pruning. */
static enum ebee_path tp_path = EBEE_PATH_SOCKET;
static char tp_skip[600]; /* why this path cannot run here, or "" */

static inline unsigned int tp_io_probe(void)
{
	return tp_path == EBEE_PATH_SOCKET ? EBEE_PROBE_SOCK_ARRIVE : EBEE_PROBE_READ;
}

static inline unsigned int tp_conn_probe(void)
{
	return tp_path == EBEE_PATH_SOCKET ? EBEE_PROBE_SOCK_STATE : EBEE_PROBE_ACCEPT;
}

/* ebee_open for the group's path; NULL with tp_skip set when the kernel
 * lacks the path (and the caller treats it as a skip, not a failure). */
static inline struct ebee *tp_open(struct ebee_opts *o)
{
	char msg[512];
	struct ebee *e;

	o->path = tp_path;
	e = ebee_open(o, msg, sizeof(msg));
	if (!e) {
		fprintf(stderr, "ebee_open (%s path): %s\n", ebee_path_str(tp_path), msg);
		if (strstr(msg, "tracepoint"))
			snprintf(tp_skip, sizeof(tp_skip), "%s path: %s", ebee_path_str(tp_path),
				 msg);
	}
	return e;
}

/* Group setup and teardown shared by the ebee test programs: as root, an
 * ebee for the group's path in *e (a path the kernel lacks is a skip). */
static inline int tp_setup(struct ebee **e, struct ebee_opts *o)
{
	tu_init();
	if (geteuid() != 0)
		return 0;
	*e = tp_open(o);
	return *e || tp_skip[0] ? 0 : -1;
}

static inline int tp_teardown(struct ebee **e)
{
	ebee_close(*e);
	*e = NULL;
	tu_cleanup();
	return 0;
}

/* Whether the group for this path should run at all (EBEE_TEST_PATH). */
static inline bool tp_wanted(enum ebee_path p)
{
	const char *only = getenv("EBEE_TEST_PATH");

	return !only || !*only || !strcmp(only, ebee_path_str(p));
}

#define NEED_ROOT()                 \
	do {                        \
		if (tu_need_root()) \
			skip();     \
		NEED_PATH();        \
	} while (0)

#define NEED_PATH()                                    \
	do {                                           \
		if (tp_skip[0]) {                      \
			printf("SKIP: %s\n", tp_skip); \
			skip();                        \
		}                                      \
	} while (0)

/* Run a cmocka group once per wanted path. */
#define TP_RUN_BOTH(tests, setup, teardown)                                                       \
	({                                                                                        \
		int rc_ = 0;                                                                      \
		const enum ebee_path paths_[] = { EBEE_PATH_SOCKET, EBEE_PATH_SYSCALL };          \
		for (int i_ = 0; i_ < 2; i_++) {                                                  \
			if (!tp_wanted(paths_[i_]))                                               \
				continue;                                                         \
			tp_path = paths_[i_];                                                     \
			tp_skip[0] = 0;                                                           \
			printf("--- %s path\n", ebee_path_str(tp_path));                          \
			rc_ |= _cmocka_run_group_tests(ebee_path_str(tp_path), tests,             \
						       sizeof(tests) / sizeof((tests)[0]), setup, \
						       teardown);                                 \
		}                                                                                 \
		rc_;                                                                              \
	})

#endif
