/* Writing fixture files for the unit tests that read /proc- or /sys-like
 * folders (a fake /proc for the probe, a fake cgroup). */
#ifndef PARSA_TEST_TEXTFILE_H
#define PARSA_TEST_TEXTFILE_H

#include <stdio.h>
#include <stdlib.h>

#include "util.h"

/* Replace dir/name with text. */
static inline void write_text(const char *dir, const char *name, const char *text)
{
	char *path = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
	free(path);
}

#endif
