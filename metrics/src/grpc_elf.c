// SPDX-License-Identifier: MIT
/*
 * gRPC: libgrpc in /proc/PID/maps and its chttp2 functions by
 * demangled name.
 *
 * Why demangled names. The hooked functions are C++ members and overloads
 * whose mangled names encode the argument types; matching the demangled text
 * (with __cxa_demangle from libstdc++, the demangler of the compiler that
 * built the library) both finds them and checks that the arguments the BPF
 * programs read by position (this, transport, server_data, close_reads,
 * close_writes) are the ones they think. A libgrpc whose chttp2 functions
 * changed shape is refused with a message naming them, instead of being
 * traced wrongly. Only .dynsym is read: exported symbols, which a stripped
 * distribution library keeps.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "grpc_elf.h"

/* libstdc++'s demangler (cxxabi.h is C++ only). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

static const struct {
	const char *name;   /* qualified name, before the '(' */
	const char *params; /* the parameter list must start with this */
	const char *shown;  /* for messages */
} sym_spec[EBEE_GRPC_NSYMS] = {
	[EBEE_GRPC_SYM_NEW] = { "grpc_chttp2_stream::grpc_chttp2_stream",
				"grpc_chttp2_transport*, grpc_stream_refcount*, void const*",
				"grpc_chttp2_stream::grpc_chttp2_stream(grpc_chttp2_transport*, "
				"grpc_stream_refcount*, void const*, ...)" },
	[EBEE_GRPC_SYM_CLOSED] = { "grpc_chttp2_mark_stream_closed",
				   "grpc_chttp2_transport*, grpc_chttp2_stream*, int, int",
				   "grpc_chttp2_mark_stream_closed(grpc_chttp2_transport*, "
				   "grpc_chttp2_stream*, int, int, ...)" },
	[EBEE_GRPC_SYM_FREE] = { "grpc_chttp2_stream::~grpc_chttp2_stream", "",
				 "grpc_chttp2_stream::~grpc_chttp2_stream()" },
};

const char *ebee_grpc_sym_str(enum ebee_grpc_sym s)
{
	return s < EBEE_GRPC_NSYMS ? sym_spec[s].shown : "?";
}

bool ebee_grpc_is_lib(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	if (!strncmp(b, "libgrpc_unsecure", 16))
		b += 16;
	else if (!strncmp(b, "libgrpc", 7))
		b += 7;
	else
		return false;
	return !strncmp(b, ".so", 3) && (b[3] == 0 || b[3] == '.');
}

int ebee_grpc_libs_in_maps(const char *maps_path, const char *root, struct ebee_grpc_lib **out,
			   size_t *n, bool *replaced)
{
	struct ebee_grpc_lib *libs = NULL;
	size_t cnt = 0, cap = 0;
	char line[PATH_MAX + 256];
	int err = 0;
	FILE *f;

	*out = NULL;
	*n = 0;
	*replaced = false;
	f = fopen(maps_path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/'), *nl;
		struct stat st;
		size_t i;

		if (!path)
			continue; /* anonymous, [heap], [vdso] ... */
		nl = strchr(path, '\n');
		if (nl)
			*nl = 0;
		if (strstr(path, " (deleted)")) {
			if (ebee_grpc_is_lib(strtok(path, " ")))
				*replaced = true;
			continue;
		}
		if (!ebee_grpc_is_lib(path))
			continue;
		if (cnt == cap) {
			struct ebee_grpc_lib *t =
			    realloc(libs, (cap = cap ? 2 * cap : 2) * sizeof(*t));

			if (!t) {
				err = -ENOMEM;
				break;
			}
			libs = t;
		}
		snprintf(libs[cnt].mapped, sizeof(libs[cnt].mapped), "%s", path);
		snprintf(libs[cnt].path, sizeof(libs[cnt].path), "%s%s", root ? root : "", path);
		if (stat(libs[cnt].path, &st))
			continue; /* gone from its mount namespace: nothing to attach to */
		/* Each library has several mappings (text, data, relro): once. */
		for (i = 0; i < cnt; i++)
			if (libs[i].dev == st.st_dev && libs[i].ino == st.st_ino)
				break;
		if (i < cnt)
			continue;
		libs[cnt].dev = st.st_dev;
		libs[cnt].ino = st.st_ino;
		cnt++;
	}
	fclose(f);
	if (err) {
		free(libs);
		return err;
	}
	*out = libs;
	*n = cnt;
	return 0;
}

/* vaddr -> file offset through the PT_LOAD segment holding it (what a uprobe
 * wants). */
static int vaddr_to_off(Elf *e, uint64_t vaddr, uint64_t *off)
{
	size_t nph;

	if (elf_getphdrnum(e, &nph))
		return -EINVAL;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

/* Which hooked function a demangled name is: the index, -1 for none, or
 * -2 - index for the right name with the wrong arguments. */
static int classify(const char *dm)
{
	for (int s = 0; s < EBEE_GRPC_NSYMS; s++) {
		size_t ln = strlen(sym_spec[s].name), lp = strlen(sym_spec[s].params);

		if (strncmp(dm, sym_spec[s].name, ln) || dm[ln] != '(')
			continue;
		if (!strncmp(dm + ln + 1, sym_spec[s].params, lp) &&
		    (dm[ln + 1 + lp] == ')' || (lp && dm[ln + 1 + lp] == ',')))
			return s;
		return -2 - s;
	}
	return -1;
}

/* Records one dynamic symbol if it is one of the hooked functions: its file
 * offset once per distinct address; a right name with the wrong arguments is
 * kept in bad[] (the first one seen) for the message. */
static void grpc_add_sym(Elf *e, const GElf_Shdr *sh, const GElf_Sym *sym,
			 struct ebee_grpc_syms *syms, char bad[][160])
{
	const char *name;
	char *dm;
	int s, st;
	uint64_t fo;
	size_t j;

	name = elf_strptr(e, sh->sh_link, sym->st_name);
	/* Demangle only what can be one of ours: a library has
	 * thousands of symbols. */
	if (!name || strncmp(name, "_Z", 2) || !strstr(name, "grpc_chttp2"))
		return;
	dm = __cxa_demangle(name, NULL, NULL, &st);
	if (!dm || st)
		return;
	s = classify(dm);
	if (s <= -2 && !bad[-2 - s][0])
		snprintf(bad[-2 - s], sizeof(bad[0]), "%s", dm);
	free(dm);
	if (s < 0 || vaddr_to_off(e, sym->st_value, &fo))
		return;
	j = 0;
	while (j < syms->n[s] && syms->off[s][j] != fo)
		j++;
	if (j == syms->n[s] && syms->n[s] < EBEE_GRPC_MAX_ADDRS)
		syms->off[s][syms->n[s]++] = fo;
}

/* Walks the defined functions of every dynamic symbol table. */
static void grpc_scan(Elf *e, struct ebee_grpc_syms *syms, char bad[][160])
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !sh.sh_entsize)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;

			if (!gelf_getsym(d, i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    sym.st_shndx == SHN_UNDEF || !sym.st_value)
				continue;
			grpc_add_sym(e, &sh, &sym, syms, bad);
		}
	}
}

/* 0 when every hooked function was found (msg emptied), else -ENOENT with
 * msg naming each one missing and what was found in its place. */
static int grpc_check_found(const char *path, const struct ebee_grpc_syms *syms, char bad[][160],
			    char *msg, size_t msg_len)
{
	size_t off;
	int err = 0;

	off = snprintf(msg, msg_len, "ebee: %s lacks", path);
	for (int s = 0; s < EBEE_GRPC_NSYMS; s++) {
		if (syms->n[s])
			continue;
		if (bad[s][0])
			off +=
			    snprintf(msg + (off < msg_len ? off : msg_len),
				     off < msg_len ? msg_len - off : 0, "%s %s (found %s instead)",
				     err ? "," : "", sym_spec[s].shown, bad[s]);
		else
			off += snprintf(msg + (off < msg_len ? off : msg_len),
					off < msg_len ? msg_len - off : 0, "%s %s", err ? "," : "",
					sym_spec[s].shown);
		err = -ENOENT;
	}
	if (err)
		snprintf(msg + (off < msg_len ? off : msg_len), off < msg_len ? msg_len - off : 0,
			 ": not a gRPC C-core with the chttp2 transport ebee knows (gRPC 1.51 "
			 "as in Debian 12), or its symbols are not exported");
	else if (msg_len)
		msg[0] = 0;
	return err;
}

int ebee_grpc_resolve(const char *path, struct ebee_grpc_syms *syms, char *msg, size_t msg_len)
{
	char bad[EBEE_GRPC_NSYMS][160] = {};
	int fd, err = 0;
	Elf *e;

	memset(syms, 0, sizeof(*syms));
	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(msg, msg_len, "ebee: libelf is unusable: %s", elf_errmsg(-1));
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		snprintf(msg, msg_len, "ebee: cannot open %s: %s", path, strerror(-err));
		return err;
	}
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		snprintf(msg, msg_len, "ebee: %s is not an ELF file", path);
		err = -ENOEXEC;
		goto out;
	}
	grpc_scan(e, syms, bad);
	err = grpc_check_found(path, syms, bad, msg, msg_len);
out:
	if (e)
		elf_end(e);
	close(fd);
	return err;
}
