/* SPDX-License-Identifier: MIT */
/*
 * gRPC: finding the gRPC C-core a process maps (libgrpc*.so by name, or any
 * executable mapping of a file whose .dynsym or .symtab defines the chttp2
 * functions: a C-core linked statically into a program or an extension
 * module) and the file offsets of the functions the grpc probes hook, by
 * demangled name (internal; no BPF here, so unit tests run it without root).
 */
#ifndef EBEE_GRPC_ELF_H
#define EBEE_GRPC_ELF_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The functions the grpc programs hook (bpf/ebee_grpc.bpf.c). */
enum ebee_grpc_sym {
	EBEE_GRPC_SYM_NEW,    /* grpc_chttp2_stream::grpc_chttp2_stream(...) */
	EBEE_GRPC_SYM_CLOSED, /* grpc_chttp2_mark_stream_closed(...) */
	EBEE_GRPC_SYM_FREE,   /* grpc_chttp2_stream::~grpc_chttp2_stream() */
	EBEE_GRPC_NSYMS,
};

/* Distinct addresses one demangled name may have (C1/C2 constructor
 * variants are usually aliases of one address, but need not be). */
#define EBEE_GRPC_MAX_ADDRS 4

struct ebee_grpc_syms {
	uint64_t off[EBEE_GRPC_NSYMS][EBEE_GRPC_MAX_ADDRS]; /* file offsets */
	unsigned int n[EBEE_GRPC_NSYMS];
};

/* The demangled signature a symbol must have, for messages. */
const char *ebee_grpc_sym_str(enum ebee_grpc_sym s);

/* Does this path (from a maps line) name the gRPC C-core library?
 * libgrpc.so, libgrpc.so.N..., libgrpc_unsecure.so...; not libgrpc++. */
bool ebee_grpc_is_lib(const char *path);

/* A gRPC C-core file mapped by a process: the path as the process sees it
 * and the same file reached from here (through /proc/PID/root). */
struct ebee_grpc_lib {
	char mapped[PATH_MAX];
	char path[PATH_MAX + 32];
	dev_t dev; /* of path, from stat(): the uprobe's inode */
	ino_t ino;
	bool named; /* libgrpc*.so by name (else found by its symbols) */
};

/* Every distinct gRPC C-core file in a maps file (maps_path, e.g.
 * /proc/PID/maps), reached through root (e.g. /proc/PID/root) into a
 * malloc'd array: each libgrpc*.so by name (whatever it holds: resolving it
 * says what is wrong), and each regular file mapped executable (r-xp) whose
 * .dynsym or .symtab defines one of the hooked functions (read through the
 * per-file cache below). Deleted (replaced on disk) libgrpc mappings are
 * skipped with *replaced set. 0 or a negative errno (-ENOENT: no such maps
 * file). */
int ebee_grpc_libs_in_maps(const char *maps_path, const char *root, struct ebee_grpc_lib **out,
			   size_t *n, bool *replaced);

/* Resolve the hooked functions in the ELF file at path from .dynsym and
 * .symtab by their demangled names, checking the argument types the
 * programs read; a function in both tables (one address) is found once. 0, or
 * a negative errno with msg naming the missing or mismatched functions. Reads
 * the file every time. */
int ebee_grpc_resolve(const char *path, struct ebee_grpc_syms *syms, char *msg, size_t msg_len);

/* The same through a cache of files by (dev, ino, size, mtime), shared by
 * the whole process for its lifetime: a file is read once (again only when
 * it changes). */
int ebee_grpc_resolve_cached(const char *path, struct ebee_grpc_syms *syms, char *msg,
			     size_t msg_len);

/* The cache's counters since start (or the last clear): files known, and
 * files read (opened as ELF: a cache miss). Clearing forgets every file
 * (tests and benchmarks measure a cold scan with it). */
struct ebee_grpc_cache_stats {
	size_t files;	  /* entries */
	size_t reads;	  /* files opened and read (misses) */
	size_t prefilter; /* of those, dropped by the string-table prefilter */
	size_t decoded;	  /* of those, whose symbol tables were decoded */
};
void ebee_grpc_cache_stats(struct ebee_grpc_cache_stats *st);
void ebee_grpc_cache_clear(void);

#endif
