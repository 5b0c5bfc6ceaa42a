/* SPDX-License-Identifier: MIT */
/*
 * Syslog priority prefixes ("<3>", sd-daemon(3)) on stderr lines when stderr
 * is the systemd journal (JOURNAL_STREAM names our fd 2), so `journalctl -p
 * warning -u parties` shows the problems and not every interval's event.
 *
 * Once journal_stderr_init() found the journal, stderr is a stream that
 * prefixes each line: a line that already starts with "<N>" keeps it (code
 * that knows its level writes journal_pfx(level) first); any other line gets
 * one from its wording -- error for "cannot", "failed", "error", "incomplete";
 * warning for "refused", "exited", "gone", "stale", "violation", "keeping";
 * info otherwise. Without the journal nothing changes.
 */
#ifndef PARTIES_JOURNAL_H
#define PARTIES_JOURNAL_H

#include <stdbool.h>

/* True when stderr was found to be the journal and is now prefixed. */
bool journal_stderr_init(void);
/* "<N>" for a syslog level (3 err, 4 warning, 6 info, 7 debug) when on the
 * journal, "" otherwise. */
const char *journal_pfx(int level);
/* The level journal_stderr_init's stream gives an unprefixed line; exposed for tests. */
int journal_level_of(const char *line);

#endif /* PARTIES_JOURNAL_H */
