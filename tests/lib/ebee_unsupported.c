// SPDX-License-Identifier: MIT
/*
 * The list is a file of its own so that the shell tests (grep -E) and the C
 * ones (regcomp, the same POSIX extended syntax) skip on exactly the same
 * refusals; tests/unit/test_attach.c holds it against ebee's messages.
 */
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>

#include "ebee_unsupported.h"

int tu_ebee_unsupported(const char *msg)
{
	char line[1024];
	int found = 0, n = 0;
	FILE *f = fopen(TU_EBEE_UNSUPPORTED_RE, "re");

	if (!f) {
		int err = -errno;

		fprintf(stderr, "FAIL: cannot read %s: %s\n", TU_EBEE_UNSUPPORTED_RE,
			strerror(-err));
		return err;
	}
	while (!found && fgets(line, sizeof(line), f)) {
		regex_t re;
		int rc;

		line[strcspn(line, "\n")] = 0;
		if (!line[0] || line[0] == '#')
			continue;
		rc = regcomp(&re, line, REG_EXTENDED | REG_NOSUB);
		if (rc) {
			fprintf(stderr, "FAIL: %s: bad expression '%s' (regcomp %d)\n",
				TU_EBEE_UNSUPPORTED_RE, line, rc);
			fclose(f);
			return -EINVAL;
		}
		found = !regexec(&re, msg, 0, NULL, 0);
		regfree(&re);
		n++;
	}
	fclose(f);
	if (!n) {
		fprintf(stderr, "FAIL: %s lists no refusal\n", TU_EBEE_UNSUPPORTED_RE);
		return -ENOENT;
	}
	return found;
}
