/* SPDX-License-Identifier: MIT */
/*
 * Fake sysfs trees for topology tests: the files act_topo_read() reads
 * (devices/system/cpu/..., devices/system/node/...) under a temporary root,
 * laid out as a real kernel lays them out for a machine of nodes x cores x
 * threads.
 */
#ifndef FAKE_TOPO_H
#define FAKE_TOPO_H

#include <stdbool.h>
#include <stddef.h>

/* The numbering of a fake machine's cpus. */
enum ft_numbering {
	FT_ADJACENT, /* a core's threads adjacent (qemu, AMD): cpu0/cpu1 siblings */
	FT_SPLIT,    /* Intel: every core's first thread, then every second: cpu0/cpu4 */
};

/* Write a tree for nodes x cores x threads under a new temporary directory
 * (its path into root, len >= 64). with_nodes false: no devices/system/node
 * at all (a kernel without CONFIG_NUMA). 0 or a negative errno. */
int ft_make(char *root, size_t len, int nodes, int cores, int threads, enum ft_numbering num,
	    bool with_nodes);
/* Write one file under root (directories made as needed). 0 or -errno. */
int ft_write(const char *root, const char *rel, const char *text);
/* Remove the tree. */
void ft_remove(const char *root);

#endif
