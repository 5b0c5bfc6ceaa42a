// SPDX-License-Identifier: MIT
/*
 * Choosing the socket path's attach method per hook group. The tracepoints
 * are preferred where they exist: they are the kernel's stable interface,
 * and they need no BPF trampoline (refused under lockdown). fentry/fexit on
 * the functions the tracepoints sit in stand in on kernels without them
 * (before 6.3), with the same programs' logic (bpf/ebee.bpf.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "attach.h"

bool ebee_sock_attach_needs_probe(const struct ebee_sock_offer *k, enum ebee_attach want)
{
	if (want == EBEE_ATTACH_TP_BTF)
		return false;
	if (want == EBEE_ATTACH_FENTRY)
		return true;
	return !k->tp_io || !k->tp_arrive;
}

static void why_fentry(const struct ebee_sock_offer *k, const char *fn, bool have_fn, char *buf,
		       size_t len)
{
	if (!have_fn)
		snprintf(buf, len, "the kernel's BTF has no %s for fentry/fexit", fn);
	else if (k->fentry_err)
		snprintf(buf, len, "fentry/fexit programs are refused (%s%s)",
			 strerror(-k->fentry_err),
			 k->fentry_err == -EPERM ? ": kernel lockdown?" : "");
	else
		buf[0] = 0;
}

/* One request hook: its tracepoint (tp_name, present: have_tp) or fentry on
 * fn (present: have_fn). */
static int choose_one(const struct ebee_sock_offer *k, enum ebee_attach want, bool have_tp,
		      const char *tp_name, bool have_fn, const char *fn, enum ebee_attach *out,
		      char *msg, size_t msg_len)
{
	char why[160];

	why_fentry(k, fn, have_fn, why, sizeof(why));
	if (want != EBEE_ATTACH_FENTRY && have_tp) {
		*out = EBEE_ATTACH_TP_BTF;
		return 0;
	}
	if (want != EBEE_ATTACH_TP_BTF && !why[0]) {
		*out = EBEE_ATTACH_FENTRY;
		return 0;
	}
	if (want == EBEE_ATTACH_TP_BTF)
		snprintf(msg, msg_len,
			 "ebee: the kernel has no sock:%s tracepoint (added in Linux 6.3); use "
			 "--attach auto (fentry) or the syscall path",
			 tp_name);
	else if (want == EBEE_ATTACH_FENTRY)
		snprintf(msg, msg_len, "ebee: --attach fentry: %s; use --attach auto", why);
	else
		snprintf(msg, msg_len,
			 "ebee: the kernel has no sock:%s tracepoint (added in Linux 6.3) and %s: "
			 "the socket path needs one of them; use the syscall path",
			 tp_name, why);
	return -ENOENT;
}

int ebee_sock_attach_choose(const struct ebee_sock_offer *k, enum ebee_attach want,
			    struct ebee_sock_attach *out, char *msg, size_t msg_len)
{
	int err;

	memset(out, 0, sizeof(*out));
	if (!k->tp_state) {
		snprintf(msg, msg_len,
			 "ebee: the kernel has no sock:inet_sock_set_state tracepoint (Linux "
			 ">= 4.16); use the syscall path");
		return -ENOENT;
	}
	out->state = EBEE_ATTACH_TP_BTF;
	err = choose_one(k, want, k->tp_io, "sock_recv_length", k->fn_io, "inet_recvmsg", &out->io,
			 msg, msg_len);
	if (!err)
		err = choose_one(k, want, k->tp_arrive, "sk_data_ready", k->fn_arrive,
				 "sock_def_readable", &out->arrive, msg, msg_len);
	if (err)
		return err;
	out->inet6 = out->io == EBEE_ATTACH_FENTRY && k->fn_inet6;
	out->sendpage = out->io == EBEE_ATTACH_FENTRY && k->fn_sendpage;
	return 0;
}
