// SPDX-License-Identifier: MIT
/*
 * Journal priority prefixes (see journal.h). stderr is replaced by a
 * fopencookie() stream whose writer collects whole lines and writes each to
 * fd 2 with its prefix in one write(), so lines from several threads (ebee's
 * consumer logs too) never interleave mid-line.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "journal.h"

static bool on_journal;

static const char *const pfx[8] = { "<0>", "<1>", "<2>", "<3>", "<4>", "<5>", "<6>", "<7>" };

const char *journal_pfx(int level)
{
	return on_journal && level >= 0 && level <= 7 ? pfx[level] : "";
}

int journal_level_of(const char *line)
{
	static const char *const err[] = { "cannot", "failed", "error", "incomplete" };
	static const char *const warn[] = { "refused", "exited",    "gone",
					    "stale",   "violation", "keeping" };

	for (size_t i = 0; i < sizeof(err) / sizeof(err[0]); i++)
		if (strstr(line, err[i]))
			return 3;
	for (size_t i = 0; i < sizeof(warn) / sizeof(warn[0]); i++)
		if (strstr(line, warn[i]))
			return 4;
	return 6;
}

struct jstream {
	char buf[4096];
	size_t len;
};

static void emit(struct jstream *j)
{
	char out[4096 + 4];
	size_t n = 0;

	if (!(j->len >= 3 && j->buf[0] == '<' && isdigit((unsigned char)j->buf[1]) &&
	      j->buf[2] == '>')) {
		char line[4096 + 1];

		memcpy(line, j->buf, j->len);
		line[j->len] = 0;
		memcpy(out, pfx[journal_level_of(line)], 3);
		n = 3;
	}
	memcpy(out + n, j->buf, j->len);
	n += j->len;
	if (write(STDERR_FILENO, out, n) < 0) {
		/* nowhere left to report it */
	}
	j->len = 0;
}

static ssize_t jwrite(void *cookie, const char *data, size_t size)
{
	struct jstream *j = cookie;

	for (size_t i = 0; i < size; i++) {
		j->buf[j->len++] = data[i];
		/* a full buffer is cut into a line of its own rather than dropped */
		if (data[i] == '\n' || j->len == sizeof(j->buf) - 1) {
			if (data[i] != '\n')
				j->buf[j->len++] = '\n';
			emit(j);
		}
	}
	return (ssize_t)size;
}

static int jclose(void *cookie)
{
	struct jstream *j = cookie;

	if (j->len) {
		j->buf[j->len++] = '\n';
		emit(j);
	}
	free(j);
	return 0;
}

bool journal_stderr_init(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	cookie_io_functions_t io = { .write = jwrite, .close = jclose };
	struct jstream *j;
	struct stat st;
	FILE *f;

	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) ||
	    (unsigned long long)st.st_dev != dev || (unsigned long long)st.st_ino != ino)
		return false;
	j = calloc(1, sizeof(*j));
	if (!j)
		return false;
	f = fopencookie(j, "w", io);
	if (!f) {
		free(j);
		return false;
	}
	setvbuf(f, NULL, _IOLBF, 0);
	stderr = f;
	on_journal = true;
	return true;
}
