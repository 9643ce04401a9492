#include "config.h"
#include "units.h"
#include "util.h"

#include <errno.h>
#include <ini.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONF_MAX_BYTES (64 * 1024)

/* K_AMOUNT: 0 to 1024, where 0 means none (the field is -1 when absent). */
enum kind { K_STRING, K_PATH, K_DURATION, K_SIZE, K_COUNT, K_AMOUNT, K_PERCENT, K_LIST };

/* Every key the file may hold, by section. */
static const struct key {
	const char *section;
	const char *name;
	enum kind kind;
	size_t offset;
} keys[] = {
	{ "cluster", "sched", K_STRING, offsetof(struct parsa_conf, sched) },
	{ "cluster", "munge_socket", K_PATH, offsetof(struct parsa_conf, munge_socket) },
	{ "cluster", "munge_key", K_PATH, offsetof(struct parsa_conf, munge_key) },
	{ "cluster", "admin_group", K_STRING, offsetof(struct parsa_conf, admin_group) },
	{ "cluster", "storage", K_STRING, offsetof(struct parsa_conf, storage) },
	{ "sched", "listen", K_STRING, offsetof(struct parsa_conf, listen) },
	{ "sched", "state", K_PATH, offsetof(struct parsa_conf, state) },
	{ "sched", "host_timeout", K_DURATION, offsetof(struct parsa_conf, host_timeout_ms) },
	{ "sched", "lease", K_DURATION, offsetof(struct parsa_conf, lease_ms) },
	{ "sched", "fair_share_half_life", K_DURATION, offsetof(struct parsa_conf, half_life_ms) },
	{ "sched", "retention", K_DURATION, offsetof(struct parsa_conf, retention_ms) },
	{ "host", "name", K_STRING, offsetof(struct parsa_conf, name) },
	{ "host", "features", K_LIST, offsetof(struct parsa_conf, features) },
	{ "host", "cpus", K_COUNT, offsetof(struct parsa_conf, cpus) },
	{ "host", "gpus", K_AMOUNT, offsetof(struct parsa_conf, gpus) },
	{ "host", "mem", K_SIZE, offsetof(struct parsa_conf, mem) },
	{ "host", "scratch_size", K_SIZE, offsetof(struct parsa_conf, scratch_size) },
	{ "host", "scratch", K_PATH, offsetof(struct parsa_conf, scratch) },
	{ "host", "mount", K_PATH, offsetof(struct parsa_conf, mount) },
	{ "host", "state", K_PATH, offsetof(struct parsa_conf, runner_state) },
	{ "host", "cpu_limit", K_PERCENT, offsetof(struct parsa_conf, cpu_limit) },
	{ "host", "mem_limit", K_PERCENT, offsetof(struct parsa_conf, mem_limit) },
	{ "host", "grace", K_DURATION, offsetof(struct parsa_conf, grace_ms) },
};

struct reader {
	FILE *f;
	const char *path;
	int line;           /* of the line inih got last */
	struct parsa_conf *conf;
	char *err;          /* the first error */
};

static char *read_line(char *buf, int size, void *arg)
{
	struct reader *r = arg;
	char *s = fgets(buf, size, r->f);

	if (s)
		r->line++;
	return s;
}

static int fail(struct reader *r, const char *fmt, const char *a, const char *b)
{
	char *text = xasprintf(fmt, a, b);

	if (!r->err)
		r->err = xasprintf("%s:%d: %s", r->path, r->line, text);
	free(text);
	return 0;
}

/* A comma-separated list of names ("avx512, bigmem"). */
static int parse_list(struct reader *r, const char *value, char ***out, size_t *n)
{
	char *copy = xstrdup(value), *save = NULL, *tok;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;

		while (*tok == ' ' || *tok == '\t')
			tok++;
		end = tok + strlen(tok);
		while (end > tok && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		if (!*tok)
			continue;
		if (strspn(tok, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != strlen(tok)) {
			fail(r, "'%s' is not a feature name (letters, digits, '.', '_', '-')%s", tok, "");
			free(copy);
			return 0;
		}
		*out = xrealloc(*out, (*n + 1) * sizeof **out);
		(*out)[(*n)++] = xstrdup(tok);
	}
	free(copy);
	return 1;
}

static int set_value(struct reader *r, const struct key *k, const char *value)
{
	char *field = (char *)r->conf + k->offset;
	uint64_t u;
	char *end;
	double d;
	long n;

	switch (k->kind) {
	case K_PATH:
		if (value[0] != '/')
			return fail(r, "%s = %s: give an absolute path", k->name, value);
		/* fall through */
	case K_STRING:
		if (!*value)
			return fail(r, "%s: empty value%s", k->name, "");
		free(*(char **)field);
		*(char **)field = xstrdup(value);
		return 1;
	case K_DURATION:
		if (parse_duration(value, &u) < 0 || u == 0 || u > 365 * 24 * 3600ULL)
			return fail(r, "%s = %s: expected a duration such as 30s, 5m or 1h", k->name, value);
		*(int64_t *)field = (int64_t)u * 1000;
		return 1;
	case K_SIZE:
		if (parse_size(value, &u) < 0 || u == 0)
			return fail(r, "%s = %s: expected a size such as 64G", k->name, value);
		*(uint64_t *)field = u;
		return 1;
	case K_COUNT:
		errno = 0;
		n = strtol(value, &end, 10);
		if (errno || end == value || *end || n < 1 || n > 1 << 20)
			return fail(r, "%s = %s: expected a number such as 8", k->name, value);
		*(int *)field = (int)n;
		return 1;
	case K_AMOUNT:
		errno = 0;
		n = strtol(value, &end, 10);
		if (errno || end == value || *end || n < 0 || n > 1024)
			return fail(r, "%s = %s: expected a number from 0 to 1024", k->name, value);
		*(int *)field = (int)n;
		return 1;
	case K_PERCENT:
		errno = 0;
		d = strtod(value, &end);
		if (errno || end == value || *end || !(d > 0) || d > 1000)
			return fail(r, "%s = %s: expected a percentage such as 90", k->name, value);
		*(double *)field = d;
		return 1;
	case K_LIST:
		return parse_list(r, value, &r->conf->features, &r->conf->nfeatures);
	}
	return 0;
}

static int on_entry(void *arg, const char *section, const char *name, const char *value)
{
	struct reader *r = arg;
	bool section_known = false;

	if (r->err)
		return 0;
	for (size_t i = 0; i < ARRAY_LEN(keys); i++) {
		if (strcmp(keys[i].section, section) != 0)
			continue;
		section_known = true;
		if (strcmp(keys[i].name, name) == 0)
			return set_value(r, &keys[i], value ? value : "");
	}
	if (!section_known)
		return fail(r, "unknown section [%s] (sections: [cluster], [sched], [host])%s",
			    *section ? section : "(none)", "");
	return fail(r, "unknown key '%s' in [%s] (see docs/operators.md)", name, section);
}

int parsa_conf_check_file(const char *path, char **err)
{
	struct stat st;
	uid_t self = geteuid();

	if (lstat(path, &st) < 0)
		return errprintf(err, "%s: %s", path, strerror(errno));
	errno = EPERM;
	if (!S_ISREG(st.st_mode))
		return errprintf(err, "%s is not a regular file (a symbolic link is not trusted)", path);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return errprintf(err, "%s is mode %04o: anybody in its group or on the host could change it;"
				 " run: chmod go-w %s", path, (unsigned)(st.st_mode & 07777), path);
	if (st.st_uid != 0 && st.st_uid != self)
		return errprintf(err, "%s belongs to uid %u, not to root%s; run: chown root %s", path,
				 (unsigned)st.st_uid, self == 0 ? "" : " or this user", path);
	if (self == 0 && st.st_uid != 0)
		return errprintf(err, "%s belongs to uid %u, not to root; run: chown root %s", path,
				 (unsigned)st.st_uid, path);
	return 0;
}

int parsa_conf_check_key(const char *path, int optional, char **err)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	struct stat st;
	uid_t munge_uid = 0;

	if (lstat(path, &st) < 0) {
		if (optional && errno == ENOENT)
			return 0;
		return errprintf(err, "munge key %s: %s", path, strerror(errno));
	}
	if (getpwnam_r("munge", &pw, buf, sizeof buf, &res) == 0 && res)
		munge_uid = pw.pw_uid;
	errno = EPERM;
	if (!S_ISREG(st.st_mode))
		return errprintf(err, "munge key %s is not a regular file", path);
	if (st.st_mode & (S_IRWXG | S_IRWXO))
		return errprintf(err, "munge key %s is mode %04o: anybody who can read it can forge"
				 " credentials; run: chmod 0400 %s", path, (unsigned)(st.st_mode & 07777), path);
	if (st.st_uid != 0 && st.st_uid != munge_uid)
		return errprintf(err, "munge key %s belongs to uid %u: it must belong to root or to the"
				 " munge user; run: chown munge:munge %s", path, (unsigned)st.st_uid, path);
	return 0;
}

int parsa_conf_load(const char *path, int optional, struct parsa_conf *conf, char **err)
{
	struct reader r = { .path = path, .conf = conf };
	struct stat st;
	int rc, ret = -1;

	memset(conf, 0, sizeof *conf);
	conf->gpus = -1;
	r.f = fopen(path, "re");
	if (!r.f) {
		if (optional && errno == ENOENT)
			return 0;
		return errprintf(err, "cannot read %s: %s", path, strerror(errno));
	}
	if (parsa_conf_check_file(path, err) < 0)
		goto out;
	if (fstat(fileno(r.f), &st) == 0 && st.st_size > CONF_MAX_BYTES) {
		errno = EFBIG;
		errprintf(err, "%s is larger than %d bytes: not a parsa.conf", path, CONF_MAX_BYTES);
		goto out;
	}
	rc = ini_parse_stream(read_line, &r, on_entry, &r);
	if (r.err) {
		errno = EINVAL;
		errprintf(err, "%s", r.err);
		goto out;
	}
	if (rc != 0) {
		errno = EINVAL;
		errprintf(err, "%s:%d: not a KEY = VALUE line or [section]", path, rc > 0 ? rc : r.line);
		goto out;
	}
	conf->path = xstrdup(path);
	ret = 0;
out:
	if (ret < 0) {
		int saved = errno;

		parsa_conf_free(conf);
		errno = saved;
	}
	free(r.err);
	fclose(r.f);
	return ret;
}

void parsa_conf_free(struct parsa_conf *conf)
{
	if (!conf)
		return;
	for (size_t i = 0; i < ARRAY_LEN(keys); i++)
		if (keys[i].kind == K_STRING || keys[i].kind == K_PATH)
			free(*(char **)((char *)conf + keys[i].offset));
	for (size_t i = 0; i < conf->nfeatures; i++)
		free(conf->features[i]);
	free(conf->features);
	free(conf->path);
	memset(conf, 0, sizeof *conf);
}

char *parsa_endpoint(const char *address)
{
	if (address[0] == '/')
		return xasprintf("unix:%s", address);
	if (strncmp(address, "unix:", 5) == 0 || strstr(address, "://"))
		return xstrdup(address);
	return xasprintf("http://%s", address);
}
