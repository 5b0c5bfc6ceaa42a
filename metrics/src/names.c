// SPDX-License-Identifier: MIT
/*
 * The names of ebee's enums as users read and write them (CLI flags, JSON,
 * logs): path, attach method, latency, mode and the probe groups.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core.h"

static const char *const mode_names[EBEE_MODE_COUNT] = { "auto", "conn", "io", "grpc", "dgram" };
static const char *const path_names[] = { "auto", "socket", "syscall" };
static const char *const attach_names[] = { "auto", "tp_btf", "fentry" };
static const char *const lat_names[NLAT] = { "service", "sojourn" };

/* Index of s in names[0..n), or -EINVAL. */
static int name_index(const char *const *names, int n, const char *s)
{
	for (int i = 0; s && i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -EINVAL;
}

const char *ebee_path_str(enum ebee_path path)
{
	return path >= 0 && path <= EBEE_PATH_SYSCALL ? path_names[path] : NULL;
}

int ebee_path_parse(const char *s, enum ebee_path *path)
{
	int i = path ? name_index(path_names, EBEE_PATH_SYSCALL + 1, s) : -EINVAL;

	if (i >= 0)
		*path = i;
	return i < 0 ? i : 0;
}

const char *ebee_attach_str(enum ebee_attach attach)
{
	return attach >= 0 && attach <= EBEE_ATTACH_FENTRY ? attach_names[attach] : NULL;
}

int ebee_attach_parse(const char *s, enum ebee_attach *attach)
{
	int i = name_index(attach_names, EBEE_ATTACH_FENTRY + 1, s);

	if (i >= 0)
		*attach = i;
	return i < 0 ? i : 0;
}

const char *ebee_latency_str(enum ebee_latency lat)
{
	return lat >= 0 && lat < NLAT ? lat_names[lat] : NULL;
}

int ebee_latency_parse(const char *s, enum ebee_latency *lat)
{
	int i = lat ? name_index(lat_names, NLAT, s) : -EINVAL;

	if (i >= 0)
		*lat = i;
	return i < 0 ? i : 0;
}

const char *ebee_mode_str(enum ebee_mode mode)
{
	return mode >= 0 && mode < EBEE_MODE_COUNT ? mode_names[mode] : NULL;
}

int ebee_mode_parse(const char *s, enum ebee_mode *mode)
{
	for (int i = 0; mode && i < EBEE_MODE_COUNT; i++) {
		if (s && !strcmp(s, mode_names[i])) {
			*mode = i;
			return 0;
		}
	}
	return -EINVAL;
}

char *ebee_probes_str(unsigned int mask, char *buf, size_t len)
{
	static const char *const names[] = { "accept",	    "close", "read",	   "write",
					     "fork",	    "grpc",  "sock_state", "sock_io",
					     "sock_arrive", "dgram", "sock_frame" };
	size_t off = 0;

	if (!len)
		return buf;
	buf[0] = 0;
	for (unsigned int i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(mask & (1u << i)))
			continue;
		off += snprintf(buf + off, off < len ? len - off : 0, "%s%s", off ? "," : "",
				names[i]);
	}
	return buf;
}
