/* SPDX-License-Identifier: MIT */
/*
 * How each hook group of the socket path attaches (internal): the choice from
 * what the kernel offers, kept apart from the probing so it can be tested
 * without a kernel.
 */
#ifndef EBEE_ATTACH_H
#define EBEE_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include "ebee.h"

/* What this kernel offers the socket path (the feature check fills it). */
struct ebee_sock_offer {
	bool tp_io;	    /* tracepoints sock_recv_length and sock_send_length (6.3+) */
	bool tp_arrive;	    /* tracepoint sk_data_ready (6.3+) */
	bool tp_state;	    /* tracepoint inet_sock_set_state (4.16+) */
	bool fn_io;	    /* inet_recvmsg and inet_sendmsg in the kernel's BTF */
	bool fn_arrive;	    /* sock_def_readable in the kernel's BTF */
	bool fn_inet6;	    /* inet6_recvmsg and inet6_sendmsg (IPv6 built in) */
	bool fn_sendpage;   /* inet_sendpage (until 6.4: sendfile bypassed sendmsg) */
	int fentry_err;	    /* 0: fentry/fexit programs load; else the kernel's -errno */
	bool fentry_probed; /* fentry_err is known (probing is skipped when not needed) */
};

/* The choice: per group EBEE_ATTACH_TP_BTF or EBEE_ATTACH_FENTRY. */
struct ebee_sock_attach {
	enum ebee_attach io, arrive, state;
	bool inet6;    /* also the inet6_* fexit programs */
	bool sendpage; /* also the inet_sendpage fexit program */
};

/* Whether `want` needs to know if fentry programs load on a kernel offering
 * *k (so the caller probes only then). */
bool ebee_sock_attach_needs_probe(const struct ebee_sock_offer *k, enum ebee_attach want);

/* Choose per group: `want` forces a method for the request hooks (I/O and
 * arrival); auto takes the tracepoint where it exists, else fentry/fexit.
 * 0 and *out, or -ENOENT (a hook has no usable method) with a one-line
 * reason in msg that names the missing tracepoint and why fentry cannot
 * stand in. */
int ebee_sock_attach_choose(const struct ebee_sock_offer *k, enum ebee_attach want,
			    struct ebee_sock_attach *out, char *msg, size_t msg_len);

#endif
