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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tracepoints_win_where_they_exist),
		cmocka_unit_test(test_lockdown_stays_on_tracepoints),
		cmocka_unit_test(test_61_uses_fentry),
		cmocka_unit_test(test_fentry_forced_where_both_exist),
		cmocka_unit_test(test_neither_means_no_socket_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
