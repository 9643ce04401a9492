/* A folder of fake Slurm commands for the unit tests that drive the runner's
 * Slurm code without a Slurm: tmp/bin first in PATH, scripts and the texts
 * they answer with written there, what they were given read back. Real
 * Slurm outputs come from slurm_fixture.h. */
#ifndef PARSA_TEST_SLURM_FAKE_H
#define PARSA_TEST_SLURM_FAKE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

/* The test's folder (fake_setup makes it). */
static char fake_tmp[256];

/* Write text to fake_tmp/name with mode (0755 for a script). */
static inline void fake_write(const char *name, const char *text, int mode)
{
	char *path = xasprintf("%s/%s", fake_tmp, name);
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
	chmod(path, (mode_t)mode);
	free(path);
}

/* fake_tmp/name's text; "" when it is not there (malloc'ed). */
static inline char *fake_read(const char *name)
{
	char *path = xasprintf("%s/%s", fake_tmp, name);
	char *text = read_file(path, 1 << 20, NULL);

	free(path);
	return text ? text : xstrdup("");
}

/* A script fake_tmp/bin/name running body (after #!/bin/sh). */
static inline void fake_command(const char *name, const char *body)
{
	char *path = xasprintf("bin/%s", name), *text = xasprintf("#!/bin/sh\n%s", body);

	fake_write(path, text, 0755);
	free(path);
	free(text);
}

/* Make fake_tmp (from prefix, "/tmp/test_x") and its bin/ and state/, bin/
 * first in PATH. 0, or -1 (bail out). */
static inline int fake_setup(const char *prefix)
{
	char *cmd, *path;
	int rc;

	snprintf(fake_tmp, sizeof fake_tmp, "%s.XXXXXX", prefix);
	if (!mkdtemp(fake_tmp))
		return -1;
	cmd = xasprintf("mkdir -p %s/bin %s/state", fake_tmp, fake_tmp);
	rc = system(cmd) == 0 ? 0 : -1;
	free(cmd);
	path = xasprintf("%s/bin:%s", fake_tmp, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	setenv("PATH", path, 1);
	free(path);
	return rc;
}

static inline void fake_cleanup(void)
{
	char *cmd = xasprintf("rm -rf %s", fake_tmp);

	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", fake_tmp);
	free(cmd);
}

#endif
