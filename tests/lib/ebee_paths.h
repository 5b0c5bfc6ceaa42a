/* SPDX-License-Identifier: MIT */
/*
 * Running the ebee integration tests on both kernel paths (socket and
 * syscall), and the socket path with each attach method the kernel has
 * (tp_btf, fentry): each test program runs its group once per variant, so CI
 * on a kernel that has them all keeps them all tested. The socket group runs
 * with what auto picks (tp_btf where the tracepoints exist, fentry on 6.1);
 * a second socket group forces fentry where auto picked tp_btf.
 * EBEE_TEST_PATH=socket|syscall runs one path, EBEE_TEST_ATTACH=tp_btf|fentry
 * one attach method. A variant the kernel cannot do (fentry under lockdown:
 * one of ebee's refusals in tests/lib/ebee_unsupported.re) makes its group's
 * tests say SKIP and why; any other error of ebee_open fails the group.
 */
#ifndef EBEE_PATHS_H
#define EBEE_PATHS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ebee.h"
#include "testutil.h"
#include "ebee_unsupported.h"

/* The path the running group tests; its probe groups for the io-only and
 * the always-needed hooks, for tests that check pruning. */
static enum ebee_path tp_path = EBEE_PATH_SOCKET;
static enum ebee_attach tp_attach = EBEE_ATTACH_AUTO; /* socket path: forced or auto */
static char tp_skip[600];			      /* why this path cannot run here, or "" */

static inline unsigned int tp_io_probe(void)
{
	return tp_path == EBEE_PATH_SOCKET ? EBEE_PROBE_SOCK_ARRIVE : EBEE_PROBE_READ;
}

/* The syscall path cannot do what the test checks: say why and skip. */
#define NEED_SOCKET_PATH(why)                                    \
	do {                                                     \
		if (tp_path != EBEE_PATH_SOCKET) {               \
			printf("SKIP: syscall path: %s\n", why); \
			skip();                                  \
		}                                                \
	} while (0)

/* The group that carries io's arrivals (socket path) or reads (syscall path)
 * under ebee's default options, framing on: on the socket path the framing
 * hook, whose ingress stamps the arrivals (frame_arrive), so sk_data_ready,
 * io's own group (tp_io_probe), is attached only under no_framing; conn
 * keeps the framing hook too. */
static inline unsigned int tp_io_framed_probe(void)
{
	return tp_path == EBEE_PATH_SOCKET ? EBEE_PROBE_SOCK_FRAME : EBEE_PROBE_READ;
}

static inline unsigned int tp_conn_probe(void)
{
	return tp_path == EBEE_PATH_SOCKET ? EBEE_PROBE_SOCK_STATE : EBEE_PROBE_ACCEPT;
}

/* ebee_open for the group's path; NULL with tp_skip set when the kernel
 * lacks the path (and the caller treats it as a skip, not a failure), NULL
 * with tp_skip empty on any other error. */
static inline struct ebee *tp_open(struct ebee_opts *o)
{
	char msg[512];
	struct ebee *e;

	o->path = tp_path;
	o->attach = tp_path == EBEE_PATH_SOCKET ? tp_attach : EBEE_ATTACH_AUTO;
	e = ebee_open(o, msg, sizeof(msg));
	if (!e) {
		fprintf(stderr, "ebee_open (%s path): %s\n", ebee_path_str(tp_path), msg);
		/* only a refusal that says the kernel cannot: any other error fails */
		if (tu_ebee_unsupported(msg) == 1)
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

/* What auto picks for the socket path's I/O hooks here (EBEE_ATTACH_AUTO if
 * it cannot open: not root, or no socket path). */
static inline enum ebee_attach tp_auto_attach(void)
{
	struct ebee_opts o = { .sz = sizeof(o), .path = EBEE_PATH_SOCKET };
	struct ebee_global_stats g = { .sz = sizeof(g) };
	enum ebee_attach a = EBEE_ATTACH_AUTO;
	struct ebee *e;

	if (geteuid() != 0)
		return a;
	e = ebee_open(&o, NULL, 0);
	if (e && !ebee_get_global_stats(e, &g))
		a = g.attach_io;
	ebee_close(e);
	return a;
}

static inline bool tp_attach_wanted(enum ebee_attach a)
{
	const char *only = getenv("EBEE_TEST_ATTACH");

	return !only || !*only || a == EBEE_ATTACH_AUTO || !strcmp(only, ebee_attach_str(a));
}

/* Run a cmocka group once per wanted variant: socket as auto picks, socket
 * with fentry forced (unless auto picked it already), syscall. */
#define TP_RUN_BOTH(tests, setup, teardown)                                                       \
	({                                                                                        \
		int rc_ = 0;                                                                      \
		const enum ebee_path paths_[] = { EBEE_PATH_SOCKET, EBEE_PATH_SOCKET,             \
						  EBEE_PATH_SYSCALL };                            \
		const enum ebee_attach force_[] = { EBEE_ATTACH_AUTO, EBEE_ATTACH_FENTRY,         \
						    EBEE_ATTACH_AUTO };                           \
		const char *const names_[] = { "socket", "socket-fentry", "syscall" };            \
		enum ebee_attach auto_ =                                                          \
		    tp_wanted(EBEE_PATH_SOCKET) ? tp_auto_attach() : EBEE_ATTACH_AUTO;            \
		for (int i_ = 0; i_ < 3; i_++) {                                                  \
			enum ebee_attach uses_ = i_ == 0 ? auto_ : force_[i_];                    \
			if (!tp_wanted(paths_[i_]))                                               \
				continue;                                                         \
			if (paths_[i_] == EBEE_PATH_SOCKET && !tp_attach_wanted(uses_))           \
				continue;                                                         \
			if (i_ == 1 && auto_ == EBEE_ATTACH_FENTRY) {                             \
				printf("--- socket path, fentry: the socket group ran on fentry " \
				       "(auto's choice here)\n");                                 \
				continue;                                                         \
			}                                                                         \
			tp_path = paths_[i_];                                                     \
			tp_attach = force_[i_];                                                   \
			tp_skip[0] = 0;                                                           \
			printf("--- %s path%s%s\n", ebee_path_str(tp_path),                       \
			       paths_[i_] == EBEE_PATH_SOCKET ? ", attach " : "",                 \
			       paths_[i_] == EBEE_PATH_SOCKET ? ebee_attach_str(uses_) : "");     \
			rc_ |= _cmocka_run_group_tests(names_[i_], tests,                         \
						       sizeof(tests) / sizeof((tests)[0]), setup, \
						       teardown);                                 \
		}                                                                                 \
		rc_;                                                                              \
	})

#endif
