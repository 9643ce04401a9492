/* The saved outputs of a real Slurm the unit tests parse
 * (tests/fixtures/slurm/, PARSA_FIXTURES from tests/CMakeLists.txt). */
#ifndef PARSA_TEST_SLURM_FIXTURE_H
#define PARSA_TEST_SLURM_FIXTURE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* The text of tests/fixtures/slurm/NAME (malloc'ed); bails out without it. */
static inline char *fixture(const char *name)
{
	char path[512];
	char *text;

	snprintf(path, sizeof(path), "%s/slurm/%s", PARSA_FIXTURES, name);
	text = read_file(path, 1 << 20, NULL);
	if (!text) {
		printf("Bail out! cannot read %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return text;
}

#endif
