// SPDX-License-Identifier: MIT
/*
 * Type ids by name from the kernel's raw BTF, in one pass.
 *
 * The feature check asks the kernel's BTF about ten names (which socket
 * tracepoints and functions exist, and one function's id for a test load).
 * Through libbpf that is a full parse of /sys/kernel/btf/vmlinux (about 5 MB:
 * read, copied, every type indexed) and then a linear scan of every type per
 * name; an ebee start did that before libbpf parsed the same file again for
 * each object it loads. Here the bytes are read once and walked once, each
 * type's name compared only when its kind is one asked for. Anything the
 * walker does not know (another byte order, a kind added after BTF_KIND_ENUM64)
 * makes it decline, and the caller asks libbpf instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <linux/btf.h>

#include "kbtf.h"

#define KBTF_PATH "/sys/kernel/btf/vmlinux"

/* Bytes that follow a type's struct btf_type, by kind; -1: a kind this walker
 * does not know. */
static long kbtf_extra(const struct btf_type *t)
{
	unsigned int vlen = BTF_INFO_VLEN(t->info);

	switch (BTF_INFO_KIND(t->info)) {
	case BTF_KIND_INT:
		return sizeof(uint32_t);
	case BTF_KIND_PTR:
	case BTF_KIND_FWD:
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_FUNC:
	case BTF_KIND_FLOAT:
	case BTF_KIND_TYPE_TAG:
		return 0;
	case BTF_KIND_ARRAY:
		return sizeof(struct btf_array);
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		return (long)vlen * sizeof(struct btf_member);
	case BTF_KIND_ENUM:
		return (long)vlen * sizeof(struct btf_enum);
	case BTF_KIND_FUNC_PROTO:
		return (long)vlen * sizeof(struct btf_param);
	case BTF_KIND_VAR:
		return sizeof(struct btf_var);
	case BTF_KIND_DATASEC:
		return (long)vlen * sizeof(struct btf_var_secinfo);
	case BTF_KIND_DECL_TAG:
		return sizeof(struct btf_decl_tag);
	case BTF_KIND_ENUM64:
		return (long)vlen * sizeof(struct btf_enum64);
	default:
		return -1;
	}
}

int ebee_kbtf_find_raw(const void *data, size_t len, struct ebee_kbtf_want *want, size_t n)
{
	const struct btf_header *h = data;
	const char *types, *strs;
	size_t off = 0, left = n;
	uint32_t kinds = 0;
	int id = 1;

	for (size_t i = 0; i < n; i++) {
		want[i].id = -ENOENT;
		if (want[i].kind <= 0 || want[i].kind > BTF_KIND_ENUM64)
			return -EINVAL;
		kinds |= 1u << want[i].kind;
	}
	if (len < sizeof(*h) || h->magic != BTF_MAGIC || h->hdr_len < sizeof(*h) ||
	    h->hdr_len > len)
		return -EINVAL;
	if ((uint64_t)h->type_off + h->type_len > len - h->hdr_len ||
	    (uint64_t)h->str_off + h->str_len > len - h->hdr_len || !h->str_len)
		return -EINVAL;
	types = (const char *)data + h->hdr_len + h->type_off;
	strs = (const char *)data + h->hdr_len + h->str_off;
	if (strs[h->str_len - 1])
		return -EINVAL; /* every name must end inside the section */
	while (off < h->type_len && left) {
		const struct btf_type *t = (const void *)(types + off);
		long extra;

		if (h->type_len - off < sizeof(*t))
			return -EINVAL;
		extra = kbtf_extra(t);
		if (extra < 0 || (uint64_t)h->type_len - off - sizeof(*t) < (uint64_t)extra)
			return -EINVAL;
		if ((kinds >> BTF_INFO_KIND(t->info)) & 1) {
			if (t->name_off >= h->str_len)
				return -EINVAL;
			for (size_t i = 0; i < n; i++) {
				if (want[i].id < 0 && want[i].kind == (int)BTF_INFO_KIND(t->info) &&
				    !strcmp(strs + t->name_off, want[i].name)) {
					want[i].id = id;
					left--;
				}
			}
		}
		off += sizeof(*t) + extra;
		id++;
	}
	return 0;
}

int ebee_kbtf_find(struct ebee_kbtf_want *want, size_t n)
{
	struct stat st;
	size_t got = 0;
	char *buf;
	int fd, err;

	fd = open(KBTF_PATH, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	errno = 0;
	if (fstat(fd, &st) || st.st_size <= 0) {
		err = errno ? -errno : -EINVAL;
		close(fd);
		return err;
	}
	buf = malloc(st.st_size);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += r;
	}
	close(fd);
	err = got == (size_t)st.st_size ? ebee_kbtf_find_raw(buf, got, want, n) : -EIO;
	free(buf);
	return err;
}
