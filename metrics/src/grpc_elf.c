// SPDX-License-Identifier: MIT
/*
 * gRPC: the gRPC C-core in /proc/PID/maps and its chttp2 functions by
 * demangled name.
 *
 * Why demangled names. The hooked functions are C++ members and overloads
 * whose mangled names encode the argument types; matching the demangled text
 * (with __cxa_demangle from libstdc++, the demangler of the compiler that
 * built the library) both finds them and checks that the arguments the BPF
 * programs read by position (this, transport, server_data, close_reads,
 * close_writes) are the ones they think. A C-core whose chttp2 functions
 * changed shape is refused with a message naming them, instead of being
 * traced wrongly.
 *
 * Where. A libgrpc*.so by name (a distribution's library: it keeps its
 * exported symbols in .dynsym when stripped), and any other regular file a
 * process maps executable whose .dynsym or .symtab defines one of them: a
 * C-core linked statically into the program or into an extension module of
 * another name (Python's grpcio, Ruby's grpc gem), found as long as its
 * symbols were kept. A stripped one is not found (mode grpc refuses it, auto
 * mode uses the HTTP/2 framer). .symtab values are virtual addresses like
 * .dynsym's, turned into file offsets through the PT_LOAD segments for an
 * executable (ET_EXEC) as for a PIE or library (ET_DYN); a function in both
 * tables is one address, kept once; local clones (name.part.0, .isra, .cold)
 * have another calling convention and are skipped.
 *
 * Cost. Auto mode scans every traced process again and again, and a process
 * maps dozens of libraries: each file is read at most once per ebee lifetime
 * (a cache by dev, inode, size and mtime), and only its symbol string tables
 * are read unless they contain "grpc_chttp2" (a memmem), so the symbols of
 * libc and the like are never decoded. A warm scan is one stat() per
 * executable mapping.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "ebee.h"
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

/* Appends one file to a growing array; -ENOMEM. */
static int libs_add(struct ebee_grpc_lib **libs, size_t *cnt, size_t *cap,
		    const struct ebee_grpc_lib *l)
{
	if (*cnt == *cap) {
		size_t c = *cap ? 2 * *cap : 2;
		struct ebee_grpc_lib *t = realloc(*libs, c * sizeof(*t));

		if (!t)
			return -ENOMEM;
		*libs = t;
		*cap = c;
	}
	(*libs)[(*cnt)++] = *l;
	return 0;
}

static bool file_has_chttp2(const char *path, const struct stat *st);

int ebee_grpc_libs_in_maps(const char *maps_path, const char *root, struct ebee_grpc_lib **out,
			   size_t *n, bool *replaced)
{
	struct ebee_grpc_lib *libs = NULL, *l;
	size_t cnt = 0, cap = 0;
	char line[PATH_MAX + 256];
	int err = 0;
	FILE *f;

	*out = NULL;
	*n = 0;
	*replaced = false;
	l = malloc(sizeof(*l));
	if (!l)
		return -ENOMEM;
	f = fopen(maps_path, "re");
	if (!f) {
		err = -errno;
		free(l);
		return err;
	}
	while (fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/'), *nl, perms[5] = "";
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
		memset(l, 0, sizeof(*l));
		l->named = ebee_grpc_is_lib(path);
		/* Other files: only code (a C-core's text is mapped executable;
		 * its data and relro mappings are the same file). */
		if (!l->named && (sscanf(line, "%*s %4s", perms) != 1 || perms[2] != 'x'))
			continue;
		snprintf(l->mapped, sizeof(l->mapped), "%s", path);
		snprintf(l->path, sizeof(l->path), "%s%s", root ? root : "", path);
		if (stat(l->path, &st))
			continue; /* gone from its mount namespace: nothing to attach to */
		/* Each library has several mappings (text, data, relro): once. */
		for (i = 0; i < cnt; i++)
			if (libs[i].dev == st.st_dev && libs[i].ino == st.st_ino)
				break;
		if (i < cnt)
			continue;
		if (!l->named && (!S_ISREG(st.st_mode) || !file_has_chttp2(l->path, &st)))
			continue;
		l->dev = st.st_dev;
		l->ino = st.st_ino;
		err = libs_add(&libs, &cnt, &cap, l);
		if (err)
			break;
	}
	fclose(f);
	free(l);
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

/* What one read of a file found. */
struct grpc_found {
	struct ebee_grpc_syms syms;
	char bad[EBEE_GRPC_NSYMS][160]; /* a right name with the wrong arguments */
	bool seen;			/* a hooked name is defined (right arguments or not) */
};

/* Records one symbol if it is one of the hooked functions: its file offset
 * once per distinct address (the same function in .dynsym and .symtab, or
 * C1/C2 aliases, is one); a right name with the wrong arguments is kept in
 * bad[] (the first one seen) for the message. */
static void grpc_add_sym(Elf *e, const GElf_Shdr *sh, const GElf_Sym *sym, struct grpc_found *f)
{
	struct ebee_grpc_syms *syms = &f->syms;
	const char *name;
	char *dm;
	int s, st;
	uint64_t fo;
	size_t j;

	name = elf_strptr(e, sh->sh_link, sym->st_name);
	/* Demangle only what can be one of ours: a library has thousands of
	 * symbols. A '.' is a compiler's local clone (.part.N, .isra.N,
	 * .constprop.N, .cold): another calling convention, or a fragment. */
	if (!name || strncmp(name, "_Z", 2) || !strstr(name, "grpc_chttp2") || strchr(name, '.'))
		return;
	dm = __cxa_demangle(name, NULL, NULL, &st);
	if (!dm || st)
		return;
	s = classify(dm);
	if (s <= -2 && !f->bad[-2 - s][0])
		snprintf(f->bad[-2 - s], sizeof(f->bad[0]), "%s", dm);
	free(dm);
	if (s != -1)
		f->seen = true;
	if (s < 0 || vaddr_to_off(e, sym->st_value, &fo))
		return;
	j = 0;
	while (j < syms->n[s] && syms->off[s][j] != fo)
		j++;
	if (j == syms->n[s] && syms->n[s] < EBEE_GRPC_MAX_ADDRS)
		syms->off[s][syms->n[s]++] = fo;
}

/* Walks the defined functions of every symbol table, .dynsym and .symtab. */
static void grpc_scan(Elf *e, struct grpc_found *f)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !sh.sh_entsize)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;

			if (!gelf_getsym(d, i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    sym.st_shndx == SHN_UNDEF || !sym.st_value)
				continue;
			grpc_add_sym(e, &sh, &sym, f);
		}
	}
}

/* Does a string table of a symbol table hold "grpc_chttp2"? Every hooked
 * name does, so a file where none does cannot have one: its symbols need not
 * be decoded (the string tables are a fraction of the symbol data, and one
 * memmem each). */
static bool grpc_strtabs_mention(Elf *e)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh, ssh;
		Elf_Scn *str;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB))
			continue;
		str = elf_getscn(e, sh.sh_link);
		if (!str || !gelf_getshdr(str, &ssh) || ssh.sh_type != SHT_STRTAB)
			continue;
		d = elf_rawdata(str, NULL);
		if (d && d->d_buf && memmem(d->d_buf, d->d_size, "grpc_chttp2", 11))
			return true;
	}
	return false;
}

/* Counters of the cache (under cache.lock). */
static struct ebee_grpc_cache_stats cstats;

/* Reads path's symbol tables into f (zeroed): 0, or -errno (cannot open it)
 * or -ENOEXEC (not an ELF file) with msg. With prefilter, the symbols are
 * decoded only when a string table mentions grpc_chttp2 (f stays empty
 * otherwise, which is what decoding them would have found). */
static int grpc_read(const char *path, bool prefilter, struct grpc_found *f, char *msg,
		     size_t msg_len)
{
	int fd, err = 0;
	Elf *e;

	memset(f, 0, sizeof(*f));
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
	if (prefilter)
		cstats.reads++; /* the cache's reads (under its lock) */
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		snprintf(msg, msg_len, "ebee: %s is not an ELF file", path);
		err = -ENOEXEC;
		goto out;
	}
	if (prefilter && !grpc_strtabs_mention(e)) {
		cstats.prefilter++;
		goto out;
	}
	if (prefilter)
		cstats.decoded++;
	grpc_scan(e, f);
out:
	if (e)
		elf_end(e);
	close(fd);
	return err;
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
			 "as in Debian 12), or its symbols were stripped");
	else if (msg_len)
		msg[0] = 0;
	return err;
}

int ebee_grpc_resolve(const char *path, struct ebee_grpc_syms *syms, char *msg, size_t msg_len)
{
	struct grpc_found f;
	int err;

	err = grpc_read(path, false, &f, msg, msg_len);
	*syms = f.syms;
	return err ? err : grpc_check_found(path, &f.syms, f.bad, msg, msg_len);
}

/*
 * The cache: every file looked at, sorted by (dev, ino), with what its read
 * found (NULL: nothing of gRPC, the common case, so most entries are a few
 * words). A file whose size or mtime changed is read again. Files that could
 * not be opened are not kept (the cause may pass). One lock for the process:
 * ebee scans from its control path, parties' configuration check from its
 * own.
 */
#define GRPC_CACHE_MAX 65536 /* then start over: a host rebuilding binaries forever */

struct grpc_file {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	bool not_elf;
	struct grpc_found *found; /* NULL: no hooked name (or not an ELF file) */
};

static struct {
	pthread_mutex_t lock;
	struct grpc_file *v;
	size_t n, cap;
} cache = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int file_cmp(dev_t dev, ino_t ino, const struct grpc_file *b)
{
	if (dev != b->dev)
		return dev < b->dev ? -1 : 1;
	if (ino != b->ino)
		return ino < b->ino ? -1 : 1;
	return 0;
}

static void cache_clear_locked(void)
{
	for (size_t i = 0; i < cache.n; i++)
		free(cache.v[i].found);
	free(cache.v);
	cache.v = NULL;
	cache.n = cache.cap = 0;
}

/* The entry of the file at path (st: its stat), read now if it is not known
 * or changed. NULL with *err and msg when it cannot be read (not kept) or on
 * ENOMEM. Under cache.lock. */
static const struct grpc_file *cache_get(const char *path, const struct stat *st, int *err,
					 char *msg, size_t msg_len)
{
	struct grpc_file *fl;
	struct grpc_found f, *keep = NULL;
	size_t lo = 0, hi = cache.n;
	int e;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = file_cmp(st->st_dev, st->st_ino, &cache.v[mid]);

		if (!c) {
			lo = mid;
			hi = mid + 1;
			break;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	fl = lo < cache.n && !file_cmp(st->st_dev, st->st_ino, &cache.v[lo]) ? &cache.v[lo] : NULL;
	if (fl && fl->size == st->st_size && fl->mtime.tv_sec == st->st_mtim.tv_sec &&
	    fl->mtime.tv_nsec == st->st_mtim.tv_nsec)
		return fl;
	e = grpc_read(path, true, &f, msg, msg_len);
	if (e && e != -ENOEXEC) {
		*err = e;
		return NULL;
	}
	if (!e && f.seen) {
		keep = malloc(sizeof(*keep));
		if (!keep) {
			*err = -ENOMEM;
			snprintf(msg, msg_len, "ebee: out of memory reading %s", path);
			return NULL;
		}
		*keep = f;
	}
	if (!fl) {
		if (cache.n >= GRPC_CACHE_MAX) {
			cache_clear_locked();
			lo = 0;
		}
		if (cache.n == cache.cap) {
			size_t cap = cache.cap ? 2 * cache.cap : 64;
			struct grpc_file *t = realloc(cache.v, cap * sizeof(*t));

			if (!t) {
				free(keep);
				*err = -ENOMEM;
				snprintf(msg, msg_len, "ebee: out of memory reading %s", path);
				return NULL;
			}
			cache.v = t;
			cache.cap = cap;
		}
		memmove(&cache.v[lo + 1], &cache.v[lo], (cache.n - lo) * sizeof(cache.v[0]));
		cache.n++;
		fl = &cache.v[lo];
	} else {
		free(fl->found);
	}
	*fl = (struct grpc_file){ .dev = st->st_dev,
				  .ino = st->st_ino,
				  .size = st->st_size,
				  .mtime = st->st_mtim,
				  .not_elf = e == -ENOEXEC,
				  .found = keep };
	cstats.files = cache.n;
	return fl;
}

/* Does the file define one of the hooked functions (with the right
 * arguments or not)? Through the cache; false when it cannot be read. */
static bool file_has_chttp2(const char *path, const struct stat *st)
{
	const struct grpc_file *fl;
	char msg[PATH_MAX + 64];
	bool seen;
	int err;

	pthread_mutex_lock(&cache.lock);
	fl = cache_get(path, st, &err, msg, sizeof(msg));
	seen = fl && fl->found;
	pthread_mutex_unlock(&cache.lock);
	return seen;
}

int ebee_grpc_resolve_cached(const char *path, struct ebee_grpc_syms *syms, char *msg,
			     size_t msg_len)
{
	struct grpc_found f;
	const struct grpc_file *fl;
	struct stat st;
	int err = 0;

	memset(syms, 0, sizeof(*syms));
	if (stat(path, &st)) {
		err = -errno;
		snprintf(msg, msg_len, "ebee: cannot open %s: %s", path, strerror(-err));
		return err;
	}
	pthread_mutex_lock(&cache.lock);
	fl = cache_get(path, &st, &err, msg, msg_len);
	if (fl && fl->not_elf) {
		snprintf(msg, msg_len, "ebee: %s is not an ELF file", path);
		err = -ENOEXEC;
	} else if (fl) {
		if (fl->found)
			f = *fl->found;
		else
			memset(&f, 0, sizeof(f));
	}
	pthread_mutex_unlock(&cache.lock);
	if (!fl || err)
		return err;
	*syms = f.syms;
	return grpc_check_found(path, &f.syms, f.bad, msg, msg_len);
}

void ebee_grpc_cache_stats(struct ebee_grpc_cache_stats *st)
{
	pthread_mutex_lock(&cache.lock);
	*st = cstats;
	st->files = cache.n;
	pthread_mutex_unlock(&cache.lock);
}

void ebee_grpc_cache_clear(void)
{
	pthread_mutex_lock(&cache.lock);
	cache_clear_locked();
	memset(&cstats, 0, sizeof(cstats));
	pthread_mutex_unlock(&cache.lock);
}

int ebee_grpc_maps_core(pid_t pid)
{
	struct ebee_grpc_lib *libs;
	char maps[64], root[64];
	bool replaced;
	size_t n;
	int err;

	if (pid <= 0)
		return -EINVAL;
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	err = ebee_grpc_libs_in_maps(maps, root, &libs, &n, &replaced);
	if (err)
		return err == -ENOENT ? -ESRCH : err;
	free(libs);
	return n > 0;
}
