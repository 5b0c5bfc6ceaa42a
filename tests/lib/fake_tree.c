// SPDX-License-Identifier: MIT
/* Fake file trees in a temporary directory (fake_tree.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fake_tree.h"

int ftree_make(char *root, size_t len, const char *name)
{
	if ((size_t)snprintf(root, len, "/tmp/%s-XXXXXX", name) >= len)
		return -ENAMETOOLONG;
	return mkdtemp(root) ? 0 : -errno;
}

int ftree_put(const char *root, const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "we");
	if (!f)
		return -errno;
	fputs(text, f);
	return fclose(f) ? -errno : 0;
}

int ftree_dir(const char *root, const char *rel, bool parents)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; parents && *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(path, 0755); /* what fails here fails below */
		*p = '/';
	}
	if (mkdir(path, 0755) == 0 || (parents && errno == EEXIST))
		return 0;
	return -errno;
}

int ftree_remove(const char *root)
{
	char cmd[600];

	if (strncmp(root, "/tmp/", 5) || strstr(root, "'") || strlen(root) < 12)
		return -EINVAL;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) ? -EIO : 0;
}
