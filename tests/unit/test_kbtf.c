// SPDX-License-Identifier: MIT
/* The raw-BTF walker (metrics/src/kbtf.c) against libbpf: the same ids on BTF
 * that libbpf writes with a type of every kind the walker knows (so each kind's
 * trailing bytes are stepped over right, or the ids after it would shift), the
 * same on the running kernel's BTF, and a decline on what it cannot read. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <bpf/btf.h>
#include <linux/btf.h>
#include "../../metrics/src/kbtf.h"

#define W(n, k)                          \
	{                                \
		.name = (n), .kind = (k) \
	}

/* Every kind, each named "k_<kind>" where it has a name, a second typedef and
 * func of the same names after them (the first one is the answer), and vlen
 * above one wherever a kind has members. */
static struct btf *every_kind(void)
{
	struct btf *b = btf__new_empty();
	int i32, st, un, en, fp, var;

	assert_non_null(b);
	i32 = btf__add_int(b, "k_int", 4, BTF_INT_SIGNED);
	assert_true(i32 > 0);
	assert_true(btf__add_ptr(b, i32) > 0);
	assert_true(btf__add_array(b, i32, i32, 4) > 0);
	st = btf__add_struct(b, "k_struct", 8);
	assert_true(st > 0);
	assert_int_equal(btf__add_field(b, "a", i32, 0, 0), 0);
	assert_int_equal(btf__add_field(b, "b", i32, 32, 0), 0);
	un = btf__add_union(b, "k_union", 4);
	assert_true(un > 0);
	assert_int_equal(btf__add_field(b, "x", i32, 0, 0), 0);
	assert_int_equal(btf__add_field(b, "y", i32, 0, 0), 0);
	assert_int_equal(btf__add_field(b, "z", i32, 0, 0), 0);
	en = btf__add_enum(b, "k_enum", 4);
	assert_true(en > 0);
	assert_int_equal(btf__add_enum_value(b, "E1", 1), 0);
	assert_int_equal(btf__add_enum_value(b, "E2", 2), 0);
	assert_true(btf__add_fwd(b, "k_fwd", BTF_FWD_STRUCT) > 0);
	assert_true(btf__add_typedef(b, "k_typedef", i32) > 0);
	assert_true(btf__add_volatile(b, i32) > 0);
	assert_true(btf__add_const(b, i32) > 0);
	assert_true(btf__add_restrict(b, btf__add_ptr(b, i32)) > 0);
	fp = btf__add_func_proto(b, i32);
	assert_true(fp > 0);
	assert_int_equal(btf__add_func_param(b, "p", i32), 0);
	assert_int_equal(btf__add_func_param(b, "q", i32), 0);
	assert_true(btf__add_func(b, "k_func", BTF_FUNC_GLOBAL, fp) > 0);
	var = btf__add_var(b, "k_var", BTF_VAR_GLOBAL_ALLOCATED, i32);
	assert_true(var > 0);
	assert_true(btf__add_datasec(b, ".k_sec", 8) > 0);
	assert_int_equal(btf__add_datasec_var_info(b, var, 0, 4), 0);
	assert_int_equal(btf__add_datasec_var_info(b, var, 4, 4), 0);
	assert_true(btf__add_float(b, "k_float", 8) > 0);
	assert_true(btf__add_decl_tag(b, "k_tag", st, -1) > 0);
	assert_true(btf__add_type_tag(b, "k_ttag", i32) > 0);
	assert_true(btf__add_enum64(b, "k_enum64", 8, false) > 0);
	assert_int_equal(btf__add_enum64_value(b, "F1", 1ULL << 40), 0);
	assert_int_equal(btf__add_enum64_value(b, "F2", 2), 0);
	/* Found after every other kind, and duplicated: the first counts. */
	assert_true(btf__add_typedef(b, "k_last", i32) > 0);
	assert_true(btf__add_func(b, "k_last_func", BTF_FUNC_STATIC, fp) > 0);
	assert_true(btf__add_typedef(b, "k_last", st) > 0);
	assert_true(btf__add_func(b, "k_last_func", BTF_FUNC_GLOBAL, fp) > 0);
	return b;
}

static void check_ids(const struct btf *b, const struct ebee_kbtf_want *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int want = btf__find_by_name_kind(b, w[i].name, w[i].kind);

		if (want < 0)
			want = -ENOENT;
		if (w[i].id != want)
			fail_msg("%s (kind %d): walker %d, libbpf %d", w[i].name, w[i].kind,
				 w[i].id, want);
	}
}

static void compare(const struct btf *b, const void *raw, size_t len, struct ebee_kbtf_want *w,
		    size_t n)
{
	assert_int_equal(ebee_kbtf_find_raw(raw, len, w, n), 0);
	check_ids(b, w, n);
}

static void test_every_kind(void **state)
{
	struct ebee_kbtf_want w[] = {
		W("k_int", BTF_KIND_INT),
		W("k_struct", BTF_KIND_STRUCT),
		W("k_union", BTF_KIND_UNION),
		W("k_enum", BTF_KIND_ENUM),
		W("k_fwd", BTF_KIND_FWD),
		W("k_typedef", BTF_KIND_TYPEDEF),
		W("k_func", BTF_KIND_FUNC),
		W("k_var", BTF_KIND_VAR),
		W(".k_sec", BTF_KIND_DATASEC),
		W("k_float", BTF_KIND_FLOAT),
		W("k_tag", BTF_KIND_DECL_TAG),
		W("k_ttag", BTF_KIND_TYPE_TAG),
		W("k_enum64", BTF_KIND_ENUM64),
		W("k_last", BTF_KIND_TYPEDEF),
		W("k_last_func", BTF_KIND_FUNC),
		/* absent, and present under another kind */
		W("nothing", BTF_KIND_TYPEDEF),
		W("k_struct", BTF_KIND_TYPEDEF),
	};
	struct btf *b = every_kind();
	const void *raw;
	__u32 len;

	raw = btf__raw_data(b, &len);
	assert_non_null(raw);
	compare(b, raw, len, w, sizeof(w) / sizeof(w[0]));
	assert_true(w[13].id > w[12].id); /* k_last after k_enum64 */
	assert_int_equal(w[15].id, -ENOENT);
	assert_int_equal(w[16].id, -ENOENT);
	btf__free(b);
}

/* Bytes it cannot read: it declines (the caller then asks libbpf). */
static void test_declines(void **state)
{
	/* found first, and never found (so the walk goes to the end) */
	struct ebee_kbtf_want w[] = { W("k_int", BTF_KIND_INT) };
	struct ebee_kbtf_want none[] = { W("nothing", BTF_KIND_TYPEDEF) };
	struct btf *b = every_kind();
	struct btf_header *h;
	struct btf_type *t;
	const void *raw;
	char *copy;
	__u32 len;

	raw = btf__raw_data(b, &len);
	copy = malloc(len);
	assert_non_null(copy);
	h = (struct btf_header *)copy;
	memcpy(copy, raw, len);
	h->magic = 0x9feb; /* the other byte order */
	assert_int_equal(ebee_kbtf_find_raw(copy, len, w, 1), -EINVAL);
	memcpy(copy, raw, len);
	h->str_len += 4096; /* a section past the end */
	assert_int_equal(ebee_kbtf_find_raw(copy, len, w, 1), -EINVAL);
	memcpy(copy, raw, len);
	t = (struct btf_type *)(copy + h->hdr_len + h->type_off);
	t->info = 31u << 24; /* a kind newer than the walker */
	assert_int_equal(ebee_kbtf_find_raw(copy, len, w, 1), -EINVAL);
	assert_int_equal(ebee_kbtf_find_raw(copy, 8, w, 1), -EINVAL);
	memcpy(copy, raw, len);
	/* the type section cut inside the struct's members */
	h->type_len = (12 + 4) + 12 + (12 + 12) + 12 + 6;
	assert_int_equal(ebee_kbtf_find_raw(copy, len, none, 1), -EINVAL);
	/* and whole: read to its end, nothing found */
	assert_int_equal(ebee_kbtf_find_raw(raw, len, none, 1), 0);
	assert_int_equal(none[0].id, -ENOENT);
	free(copy);
	btf__free(b);
}

/* The running kernel's BTF, with the names the feature check asks for. */
static void test_kernel(void **state)
{
	struct ebee_kbtf_want w[] = {
		W("btf_trace_sock_recv_length", BTF_KIND_TYPEDEF),
		W("btf_trace_sk_data_ready", BTF_KIND_TYPEDEF),
		W("btf_trace_inet_sock_set_state", BTF_KIND_TYPEDEF),
		W("inet_recvmsg", BTF_KIND_FUNC),
		W("sock_def_readable", BTF_KIND_FUNC),
		W("inet_sendpage", BTF_KIND_FUNC),
		W("task_struct", BTF_KIND_STRUCT),
		W("no_such_function_here", BTF_KIND_FUNC),
	};
	struct btf *b;
	const void *raw;
	__u32 len;

	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		printf("SKIP: no readable /sys/kernel/btf/vmlinux\n");
		skip();
	}
	b = btf__load_vmlinux_btf();
	assert_non_null(b);
	raw = btf__raw_data(b, &len);
	assert_non_null(raw);
	compare(b, raw, len, w, sizeof(w) / sizeof(w[0]));
	assert_true(w[3].id > 0 && w[6].id > 0);
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		w[i].id = 0;
	assert_int_equal(ebee_kbtf_find(w, sizeof(w) / sizeof(w[0])), 0);
	check_ids(b, w, sizeof(w) / sizeof(w[0]));
	btf__free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_kind),
		cmocka_unit_test(test_declines),
		cmocka_unit_test(test_kernel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
