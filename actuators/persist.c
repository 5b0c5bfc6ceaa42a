// SPDX-License-Identifier: MIT
/*
 * The step before every write: the front's records (act->rec, what was found
 * before any change) written to the state file, so that a restore in this
 * process or a later one knows how to put things back; and the state file
 * removed once everything is back. Every front file calls these; they call
 * only records.c and log.c, so the calls go one way.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "act_front.h"

int act__persist(struct act *act)
{
	int err;

	if (act->dry_run || !act->state_path[0])
		return 0;
	err = act__state_file_write(act->state_path, &act->rec);
	if (err)
		return ERR(act, err, "cannot write the state file %s: %s", act->state_path,
			   strerror(-err));
	return 0;
}

void act__drop_state_file(struct act *act)
{
	if (!act->dry_run && act->state_path[0])
		unlink(act->state_path);
}
