/* SPDX-License-Identifier: MIT */
/*
 * Fake file trees for unit tests of code that reads a cgroup mount, /proc or
 * /sys: a temporary directory, files written into it exactly as given,
 * directories, and its removal. Each returns 0 or a negative errno, which the
 * test asserts.
 */
#ifndef FAKE_TREE_H
#define FAKE_TREE_H

#include <stdbool.h>
#include <stddef.h>

/* A new directory /tmp/NAME-XXXXXX; its path into root (len >= 64). */
int ftree_make(char *root, size_t len, const char *name);
/* root/rel holding text as is (fake_topo.h's ft_write() adds a newline). */
int ftree_put(const char *root, const char *rel, const char *text);
/* mkdir root/rel, which must not exist; with parents, its missing parents
 * below root too, and one that exists is fine (mkdir -p). */
int ftree_dir(const char *root, const char *rel, bool parents);
/* rm -rf root, only a tree ftree_make() made (/tmp/...-XXXXXX). */
int ftree_remove(const char *root);

#endif
