// SPDX-License-Identifier: MIT
/*
 * Finding the threads of a workload: its main process, every thread of it and
 * every descendant process with all their threads, as common/procfs.h reads
 * them (threads that have exited, zombies among them, are left out: they
 * cannot be moved). Racy by nature (processes fork while we read), so callers
 * repeat until stable.
 */
#include <errno.h>
#include <stdlib.h>

#include "act_proc.h"
#include "procfs.h"

int act__proc_tree(pid_t pid, pid_t **tids, size_t *n)
{
	pid_t *procs = NULL, *out = NULL;
	size_t nprocs = 0, nout = 0, cap = 0;
	int err;

	*tids = NULL;
	*n = 0;
	if (!procfs_alive(pid, 0))
		return -ESRCH;
	err = procfs_descendants(pid, &procs, &nprocs);
	if (err)
		return err;
	err = procfs_threads(pid, &out, &nout, &cap);
	for (size_t i = 0; !err && i < nprocs; i++)
		err = procfs_threads(procs[i], &out, &nout, &cap);
	if (!err && nout == 0)
		err = -ESRCH;
	free(procs);
	if (err) {
		free(out);
		return err;
	}
	*tids = out;
	*n = nout;
	return 0;
}
