// SPDX-License-Identifier: MIT
/*
 * The socket path's attach method per hook group, chosen from what a kernel
 * offers (no root, no kernel): the offers below are those of the kernels
 * this project meets (6.18 under lockdown here, Debian's 6.1 and 6.12 in the
 * guests, 6.1 under Secure Boot's lockdown).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "ebee.h"
#include "../../metrics/src/attach.h"
#include "../lib/ebee_unsupported.h"

/* 6.18 under integrity lockdown: every tracepoint, no trampolines. */
static const struct ebee_sock_offer K618_LOCKDOWN = {
	.tp_io = true,
	.tp_arrive = true,
	.tp_state = true,
	.fn_io = true,
	.fn_arrive = true,
	.fn_inet6 = true,
	.fentry_err = -EPERM,
	.fentry_probed = true,
};
/* 6.12: every tracepoint, trampolines allowed, no inet_sendpage. */
static const struct ebee_sock_offer K612 = {
	.tp_io = true,
	.tp_arrive = true,
	.tp_state = true,
	.fn_io = true,
	.fn_arrive = true,
	.fn_inet6 = true,
	.fentry_probed = true,
};
/* Debian 12's 6.1: only inet_sock_set_state; trampolines allowed. */
static const struct ebee_sock_offer K61 = {
	.tp_state = true,
	.fn_io = true,
	.fn_arrive = true,
	.fn_inet6 = true,
	.fn_sendpage = true,
	.fentry_probed = true,
};

static void test_tracepoints_win_where_they_exist(void **state)
{
	struct ebee_sock_attach a;
	char msg[256] = "";

	assert_int_equal(ebee_sock_attach_choose(&K612, EBEE_ATTACH_AUTO, &a, msg, sizeof(msg)), 0);
	assert_int_equal(a.io, EBEE_ATTACH_TP_BTF);
	assert_int_equal(a.arrive, EBEE_ATTACH_TP_BTF);
	assert_int_equal(a.state, EBEE_ATTACH_TP_BTF);
	assert_false(a.inet6 || a.sendpage); /* no fexit program loads */
	/* and auto does not even ask whether fentry loads */
	assert_false(ebee_sock_attach_needs_probe(&K612, EBEE_ATTACH_AUTO));
	assert_true(ebee_sock_attach_needs_probe(&K612, EBEE_ATTACH_FENTRY));
	assert_false(ebee_sock_attach_needs_probe(&K61, EBEE_ATTACH_TP_BTF));
	assert_true(ebee_sock_attach_needs_probe(&K61, EBEE_ATTACH_AUTO));
}

static void test_lockdown_stays_on_tracepoints(void **state)
{
	struct ebee_sock_attach a;
	char msg[256] = "";

	assert_int_equal(
	    ebee_sock_attach_choose(&K618_LOCKDOWN, EBEE_ATTACH_AUTO, &a, msg, sizeof(msg)), 0);
	assert_int_equal(a.io, EBEE_ATTACH_TP_BTF);
	assert_int_equal(a.arrive, EBEE_ATTACH_TP_BTF);
	/* forcing fentry there is refused, and says why */
	assert_int_equal(
	    ebee_sock_attach_choose(&K618_LOCKDOWN, EBEE_ATTACH_FENTRY, &a, msg, sizeof(msg)),
	    -ENOENT);
	assert_non_null(strstr(msg, "fentry/fexit programs are refused"));
	assert_non_null(strstr(msg, "lockdown"));
}

static void test_61_uses_fentry(void **state)
{
	struct ebee_sock_attach a;
	char msg[256] = "";

	assert_int_equal(ebee_sock_attach_choose(&K61, EBEE_ATTACH_AUTO, &a, msg, sizeof(msg)), 0);
	assert_int_equal(a.io, EBEE_ATTACH_FENTRY);
	assert_int_equal(a.arrive, EBEE_ATTACH_FENTRY);
	assert_int_equal(a.state, EBEE_ATTACH_TP_BTF); /* inet_sock_set_state exists */
	assert_true(a.inet6);
	assert_true(a.sendpage); /* sendfile does not go through sendmsg there */
	/* tp_btf forced: the missing tracepoint is named */
	assert_int_equal(ebee_sock_attach_choose(&K61, EBEE_ATTACH_TP_BTF, &a, msg, sizeof(msg)),
			 -ENOENT);
	assert_non_null(strstr(msg, "sock:sock_recv_length tracepoint"));
}

static void test_fentry_forced_where_both_exist(void **state)
{
	struct ebee_sock_attach a;
	char msg[256] = "";

	assert_int_equal(ebee_sock_attach_choose(&K612, EBEE_ATTACH_FENTRY, &a, msg, sizeof(msg)),
			 0);
	assert_int_equal(a.io, EBEE_ATTACH_FENTRY);
	assert_int_equal(a.arrive, EBEE_ATTACH_FENTRY);
	assert_true(a.inet6);
	assert_false(a.sendpage); /* gone in 6.5: only what exists is loaded */
}

static void test_neither_means_no_socket_path(void **state)
{
	struct ebee_sock_offer k = K61;
	struct ebee_sock_attach a;
	char msg[256] = "";

	k.fentry_err = -EPERM; /* 6.1 under Secure Boot's lockdown */
	assert_int_equal(ebee_sock_attach_choose(&k, EBEE_ATTACH_AUTO, &a, msg, sizeof(msg)),
			 -ENOENT);
	assert_non_null(strstr(msg, "no sock:sock_recv_length tracepoint"));
	assert_non_null(strstr(msg, "refused"));
	k = K61;
	k.fn_arrive = false; /* a hook whose function is not in BTF */
	assert_int_equal(ebee_sock_attach_choose(&k, EBEE_ATTACH_AUTO, &a, msg, sizeof(msg)),
			 -ENOENT);
	assert_non_null(strstr(msg, "sock_def_readable"));
	k = K61;
	k.tp_state = false;
	assert_int_equal(ebee_sock_attach_choose(&k, EBEE_ATTACH_AUTO, &a, msg, sizeof(msg)),
			 -ENOENT);
	assert_non_null(strstr(msg, "inet_sock_set_state"));
}

/* Whether the refusal ebee_sock_attach_choose gives k for want is one the
 * integration tests take for "this kernel cannot" (a SKIP). */
static int refusal_skips(const struct ebee_sock_offer *k, enum ebee_attach want)
{
	struct ebee_sock_attach a;
	char msg[256] = "";

	assert_int_equal(ebee_sock_attach_choose(k, want, &a, msg, sizeof(msg)), -ENOENT);
	print_message("  %s\n", msg);
	return tu_ebee_unsupported(msg);
}

/* The tests skip on exactly what a kernel cannot do (tests/lib/ebee_unsupported.re):
 * each refusal above is listed; a trampoline refused for another reason than lockdown
 * or a kernel without them, or an attach or load that fails, is not: those fail. */
static void test_refusals_the_tests_skip_on(void **state)
{
	struct ebee_sock_offer k;

	assert_int_equal(refusal_skips(&K61, EBEE_ATTACH_TP_BTF), 1);
	assert_int_equal(refusal_skips(&K618_LOCKDOWN, EBEE_ATTACH_FENTRY), 1);
	k = K612;
	k.fentry_err = -524; /* ENOTSUPP: a kernel built without trampolines */
	assert_int_equal(refusal_skips(&k, EBEE_ATTACH_FENTRY), 1);
	k = K612;
	k.fn_io = false;
	assert_int_equal(refusal_skips(&k, EBEE_ATTACH_FENTRY), 1);
	k = K61;
	k.fentry_err = -EPERM;
	assert_int_equal(refusal_skips(&k, EBEE_ATTACH_AUTO), 1);
	k = K61;
	k.fn_arrive = false;
	assert_int_equal(refusal_skips(&k, EBEE_ATTACH_AUTO), 1);
	k = K61;
	k.tp_state = false;
	assert_int_equal(refusal_skips(&k, EBEE_ATTACH_AUTO), 1);

	k = K61;
	k.fentry_err = -EINVAL; /* the kernel's verifier against ebee's probe: a bug */
	assert_int_equal(refusal_skips(&k, EBEE_ATTACH_AUTO), 0);
	k = K612;
	k.fentry_err = -EINVAL;
	assert_int_equal(refusal_skips(&k, EBEE_ATTACH_FENTRY), 0);
	assert_int_equal(tu_ebee_unsupported("ebee: cannot attach sock_recv "
					     "(tp_btf/sock_recv_length): Invalid argument"),
			 0);
	assert_int_equal(tu_ebee_unsupported("ebee: cannot attach exit_read (fexit/inet_recvmsg): "
					     "Operation not permitted"),
			 0);
	assert_int_equal(tu_ebee_unsupported("ebee: loading the BPF programs failed: Permission "
					     "denied: tracepoint"),
			 0);
	assert_int_equal(tu_ebee_unsupported("ebee: not root: loading BPF programs needs root"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tracepoints_win_where_they_exist),
		cmocka_unit_test(test_lockdown_stays_on_tracepoints),
		cmocka_unit_test(test_61_uses_fentry),
		cmocka_unit_test(test_fentry_forced_where_both_exist),
		cmocka_unit_test(test_neither_means_no_socket_path),
		cmocka_unit_test(test_refusals_the_tests_skip_on),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
