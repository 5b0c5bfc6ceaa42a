/* SPDX-License-Identifier: MIT */
/*
 * gRPC: finding the libgrpc a process maps and the file offsets of
 * the chttp2 functions the grpc probes hook, by demangled name (internal; no
 * BPF here, so unit tests run it without root).
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

/* A libgrpc file mapped by a process: the path as the process sees it and
 * the same file reached from here (through /proc/PID/root). */
struct ebee_grpc_lib {
	char mapped[PATH_MAX];
	char path[PATH_MAX + 32];
	dev_t dev; /* of path, from stat(): the uprobe's inode */
	ino_t ino;
};

/* Every distinct libgrpc file in a maps file (maps_path, e.g.
 * /proc/PID/maps), reached through root (e.g. /proc/PID/root) into a
 * malloc'd array. Deleted (replaced on disk) mappings are skipped with
 * *replaced set. 0 or a negative errno (-ENOENT: no such maps file). */
int ebee_grpc_libs_in_maps(const char *maps_path, const char *root, struct ebee_grpc_lib **out,
			   size_t *n, bool *replaced);

/* Resolve the hooked functions in the ELF file at path from .dynsym by their
 * demangled names, checking the argument types the programs read. 0, or a
 * negative errno with msg naming the missing or mismatched functions. */
int ebee_grpc_resolve(const char *path, struct ebee_grpc_syms *syms, char *msg, size_t msg_len);

#endif
