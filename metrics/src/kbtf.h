/* SPDX-License-Identifier: MIT */
/* Type ids by name from the kernel's raw BTF, in one pass (internal). */
#ifndef EBEE_KBTF_H
#define EBEE_KBTF_H

#include <stddef.h>

/* One name to find: its BTF kind (BTF_KIND_*) and, after the lookup, its type
 * id, or -ENOENT if the BTF has no type of that kind and name. */
struct ebee_kbtf_want {
	const char *name;
	int kind;
	int id;
};

/* Fill want[i].id for each of the n names from raw BTF (the bytes of
 * /sys/kernel/btf/vmlinux) of len bytes: the first type of that kind and name,
 * the one libbpf's btf__find_by_name_kind() returns. 0, or -EINVAL if the
 * bytes are not BTF this walker can read (another byte order, a kind newer
 * than it knows, a section out of bounds, a kind asked for that it does not
 * know): the caller then asks libbpf. */
int ebee_kbtf_find_raw(const void *data, size_t len, struct ebee_kbtf_want *want, size_t n);

/* The same over the running kernel's BTF, read from /sys/kernel/btf/vmlinux.
 * 0, -errno if it cannot be read, or -EINVAL as above. */
int ebee_kbtf_find(struct ebee_kbtf_want *want, size_t n);

#endif
