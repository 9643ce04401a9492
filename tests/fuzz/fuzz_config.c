/* libFuzzer harness for the parsa.conf reader (lib/config.c, through inih).
 * Its promises: a refused file comes with EINVAL or EFBIG and one
 * "file:line:" message; an accepted one holds only what the checks let
 * through (limits from 1 to 10^9, names of name characters, absolute
 * paths), and frees cleanly. */
#include "config.h"
#include "fuzz.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"

static void check_name(const char *name)
{
	if (!name || !*name || strspn(name, NAME_CHARS) != strlen(name))
		abort();
}

static void check_path(const char *path)
{
	if (path && path[0] != '/')
		abort();
}

static void check_conf(const struct parsa_conf *c)
{
	if (!c->path || strcmp(c->path, "fuzz.conf") != 0)
		abort();
	for (size_t i = 0; i < c->nlimits; i++) {
		const struct parsa_limit *l = &c->limits[i];

		if (l->value < 1 || l->value > 1000000000 || l->kind >= PARSA_LIMIT_NKINDS)
			abort();
		if ((l->scope == PARSA_SCOPE_DEFAULT) != (l->name == NULL))
			abort();
		if (l->name)
			check_name(l->name);
	}
	for (size_t i = 0; i < c->ngrants; i++) {
		check_name(c->grants[i].who);
		if (c->grants[i].nteams == 0)
			abort();
		for (size_t t = 0; t < c->grants[i].nteams; t++)
			check_name(c->grants[i].teams[t]);
	}
	for (size_t i = 0; i < c->nfeatures; i++)
		check_name(c->features[i]);
	check_path(c->state);
	check_path(c->munge_key);
	check_path(c->munge_socket);
	check_path(c->scratch);
	check_path(c->mount);
	check_path(c->runner_state);
	if (c->gpus < -1 || c->gpus > 1024 || c->cpus < 0 || c->cpus > 1 << 20)
		abort();
	if (c->host_timeout_ms < 0 || c->lease_ms < 0 || c->storage_patience_ms < -1)
		abort();
	if (c->defer_bursts < -1 || c->defer_bursts > 1)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct parsa_conf conf;
	char *err = NULL;

	errno = 0;
	if (parsa_conf_parse((const char *)data, size, "fuzz.conf", &conf, &err) == 0) {
		if (err)
			abort();
		check_conf(&conf);
		parsa_conf_free(&conf);
	} else {
		if (errno != EINVAL && errno != EFBIG)
			abort();
		/* One message naming the file (and, but for EFBIG, the line). */
		if (!err || strncmp(err, "fuzz.conf", 9) != 0 || strchr(err, '\n'))
			abort();
		free(err);
	}
	return 0;
}
