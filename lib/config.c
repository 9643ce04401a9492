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
/* Feature, user, group and team names. */
#define NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"

/* K_AMOUNT: 0 to 1024, where 0 means none (the field is -1 when absent). */
/* K_BOOL: yes or no (the field is -1 when absent). */
/* K_WAIT: a duration where 0 means none (the field is -1 when absent). */
enum kind { K_STRING, K_PATH, K_DURATION, K_WAIT, K_SIZE, K_COUNT, K_AMOUNT, K_PERCENT, K_LIST, K_BOOL };

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
	{ "cluster", "storage_patience", K_WAIT, offsetof(struct parsa_conf, storage_patience_ms) },
	{ "sched", "listen", K_STRING, offsetof(struct parsa_conf, listen) },
	{ "sched", "state", K_PATH, offsetof(struct parsa_conf, state) },
	{ "sched", "host_timeout", K_DURATION, offsetof(struct parsa_conf, host_timeout_ms) },
	{ "sched", "lease", K_DURATION, offsetof(struct parsa_conf, lease_ms) },
	{ "sched", "fair_share_half_life", K_DURATION, offsetof(struct parsa_conf, half_life_ms) },
	{ "sched", "retention", K_DURATION, offsetof(struct parsa_conf, retention_ms) },
	{ "sched", "keep_finished", K_DURATION, offsetof(struct parsa_conf, keep_finished_ms) },
	{ "sched", "record_retention", K_DURATION, offsetof(struct parsa_conf, record_retention_ms) },
	{ "sched", "list_finished", K_DURATION, offsetof(struct parsa_conf, list_finished_ms) },
	{ "sched", "defer_bursts", K_BOOL, offsetof(struct parsa_conf, defer_bursts) },
	{ "web", "listen", K_STRING, offsetof(struct parsa_conf, web_listen) },
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
		if (strspn(tok, NAME_CHARS) != strlen(tok)) {
			fail(r, "'%s' is not a name (letters, digits, '.', '_', '-')%s", tok, "");
			free(copy);
			return 0;
		}
		*out = xrealloc(*out, (*n + 1) * sizeof **out);
		(*out)[(*n)++] = xstrdup(tok);
	}
	free(copy);
	return 1;
}

static const char *const limit_names[PARSA_LIMIT_NKINDS] = {
	[PARSA_LIMIT_INSTANCES_PER_JOB] = "instances_per_job",
	[PARSA_LIMIT_QUEUED_INSTANCES] = "queued_instances",
	[PARSA_LIMIT_QUEUED_JOBS] = "queued_jobs",
};

const char *parsa_limit_name(enum parsa_limit_kind kind)
{
	return kind < PARSA_LIMIT_NKINDS ? limit_names[kind] : "?";
}

static bool good_name(const char *s, size_t n)
{
	if (n == 0 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr(NAME_CHARS, s[i]) || !s[i])
			return false;
	return true;
}

/* [teams] NAME = team, team or @GROUP = team, ... */
static int on_team(struct reader *r, const char *name, const char *value)
{
	struct parsa_conf *c = r->conf;
	struct parsa_team_grant *g;
	bool group = name[0] == '@';
	const char *who = group ? name + 1 : name;
	char **teams = NULL;
	size_t nteams = 0;

	if (!good_name(who, strlen(who)))
		return fail(r, "[teams] %s: want a user name, or @ and a group name%s", name, "");
	if (!parse_list(r, value, &teams, &nteams))
		goto bad;
	if (nteams == 0) {
		fail(r, "[teams] %s: give the teams it may use (%s = arch, vlsi)", name, name);
		goto bad;
	}
	c->grants = xrealloc(c->grants, (c->ngrants + 1) * sizeof *c->grants);
	g = &c->grants[c->ngrants++];
	*g = (struct parsa_team_grant){ .who = xstrdup(who), .group = group, .teams = teams,
					.nteams = nteams, .line = r->line };
	return 1;
bad:
	for (size_t i = 0; i < nteams; i++)
		free(teams[i]);
	free(teams);
	return 0;
}

/* [limits] KIND = N, user.NAME.KIND = N or team.NAME.KIND = N. */
static int on_limit(struct reader *r, const char *name, const char *value)
{
	static const struct {
		const char *prefix;
		enum parsa_limit_scope scope;
	} scopes[] = { { "user.", PARSA_SCOPE_USER }, { "team.", PARSA_SCOPE_TEAM } };
	struct parsa_limit l = { .scope = PARSA_SCOPE_DEFAULT, .line = r->line };
	const char *kind = name, *dot;
	char *end;
	long long v;
	size_t k;

	for (size_t i = 0; i < ARRAY_LEN(scopes); i++) {
		size_t n = strlen(scopes[i].prefix);

		if (strncmp(name, scopes[i].prefix, n) != 0)
			continue;
		dot = strrchr(name + n, '.');
		if (!dot || !good_name(name + n, (size_t)(dot - name - n)))
			return fail(r, "[limits] %s: want %sNAME.KIND (e.g. user.alice.queued_jobs)",
				    name, scopes[i].prefix);
		l.scope = scopes[i].scope;
		l.name = xasprintf("%.*s", (int)(dot - name - n), name + n);
		kind = dot + 1;
	}
	for (k = 0; k < PARSA_LIMIT_NKINDS; k++)
		if (strcmp(kind, limit_names[k]) == 0)
			break;
	if (k == PARSA_LIMIT_NKINDS) {
		free(l.name);
		return fail(r, "[limits] unknown limit '%s' (limits: instances_per_job, queued_instances, "
			    "queued_jobs, each also as user.NAME.KIND or team.NAME.KIND)%s", name, "");
	}
	errno = 0;
	v = strtoll(value, &end, 10);
	if (errno || end == value || *end || v < 1 || v > 1000000000LL) {
		free(l.name);
		return fail(r, "[limits] %s = %s: expected a number from 1 to 1000000000", name, value);
	}
	l.kind = (enum parsa_limit_kind)k;
	l.value = v;
	r->conf->limits = xrealloc(r->conf->limits, (r->conf->nlimits + 1) * sizeof *r->conf->limits);
	r->conf->limits[r->conf->nlimits++] = l;
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
	case K_WAIT:
		if (parse_duration(value, &u) < 0 || u > 7 * 24 * 3600ULL)
			return fail(r, "%s = %s: expected a duration such as 0, 30s or 5m (at most 7d)", k->name, value);
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
	case K_BOOL:
		if (strcmp(value, "yes") != 0 && strcmp(value, "no") != 0)
			return fail(r, "%s = %s: expected yes or no", k->name, value);
		*(int *)field = strcmp(value, "yes") == 0;
		return 1;
	}
	return 0;
}

static int on_entry(void *arg, const char *section, const char *name, const char *value)
{
	struct reader *r = arg;
	bool section_known = false;

	if (r->err)
		return 0;
	/* Their keys are names the admin chooses, not a fixed table. */
	if (strcmp(section, "teams") == 0)
		return on_team(r, name, value ? value : "");
	if (strcmp(section, "limits") == 0)
		return on_limit(r, name, value ? value : "");
	for (size_t i = 0; i < ARRAY_LEN(keys); i++) {
		if (strcmp(keys[i].section, section) != 0)
			continue;
		section_known = true;
		if (strcmp(keys[i].name, name) == 0) {
			if (!r->conf->key_lines)
				r->conf->key_lines = xcalloc(ARRAY_LEN(keys), sizeof *r->conf->key_lines);
			r->conf->key_lines[i] = r->line;
			return set_value(r, &keys[i], value ? value : "");
		}
	}
	if (!section_known)
		return fail(r, "unknown section [%s] (sections: [cluster], [sched], [web], [host], [teams], [limits])%s",
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

static void conf_init(struct parsa_conf *conf)
{
	memset(conf, 0, sizeof *conf);
	conf->gpus = -1;
	conf->defer_bursts = -1;
	conf->storage_patience_ms = -1;
}

/* Parse the stream f (named path in messages) into conf, already
 * initialised; on failure conf is freed. */
static int parse_stream(FILE *f, const char *path, struct parsa_conf *conf, char **err)
{
	struct reader r = { .f = f, .path = path, .conf = conf };
	int rc, ret = -1;

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
	return ret;
}

int parsa_conf_parse(const char *text, size_t len, const char *path, struct parsa_conf *conf,
		     char **err)
{
	FILE *f;
	int ret;

	conf_init(conf);
	if (len > CONF_MAX_BYTES) {
		errno = EFBIG;
		return errprintf(err, "%s is larger than %d bytes: not a parsa.conf", path, CONF_MAX_BYTES);
	}
	/* fmemopen of no bytes is refused by older C libraries. */
	f = len ? fmemopen((void *)text, len, "r") : fmemopen((void *)"\n", 1, "r");
	if (!f)
		return errprintf(err, "%s: %s", path, strerror(errno));
	ret = parse_stream(f, path, conf, err);
	fclose(f);
	return ret;
}

int parsa_conf_load(const char *path, int optional, struct parsa_conf *conf, char **err)
{
	const char *env = optional ? getenv("PARSA_CONFIG") : NULL;
	struct stat st;
	FILE *f;
	int ret = -1;

	conf_init(conf);
	if (env && !*env)
		return 0;
	if (env)
		path = env;
	f = fopen(path, "re");
	if (!f) {
		if (optional && errno == ENOENT)
			return 0;
		return errprintf(err, "cannot read %s: %s", path, strerror(errno));
	}
	if (parsa_conf_check_file(path, err) < 0)
		goto out;
	if (fstat(fileno(f), &st) == 0 && st.st_size > CONF_MAX_BYTES) {
		errno = EFBIG;
		errprintf(err, "%s is larger than %d bytes: not a parsa.conf", path, CONF_MAX_BYTES);
		goto out;
	}
	ret = parse_stream(f, path, conf, err);
out:
	fclose(f);
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
	for (size_t i = 0; i < conf->ngrants; i++) {
		for (size_t t = 0; t < conf->grants[i].nteams; t++)
			free(conf->grants[i].teams[t]);
		free(conf->grants[i].teams);
		free(conf->grants[i].who);
	}
	free(conf->grants);
	for (size_t i = 0; i < conf->nlimits; i++)
		free(conf->limits[i].name);
	free(conf->limits);
	free(conf->path);
	free(conf->key_lines);
	memset(conf, 0, sizeof *conf);
}

int parsa_conf_line(const struct parsa_conf *conf, const char *section, const char *name)
{
	for (size_t i = 0; conf->key_lines && i < ARRAY_LEN(keys); i++)
		if (strcmp(keys[i].section, section) == 0 && strcmp(keys[i].name, name) == 0)
			return conf->key_lines[i];
	return 0;
}

char *parsa_endpoint(const char *address)
{
	if (address[0] == '/')
		return xasprintf("unix:%s", address);
	if (strncmp(address, "unix:", 5) == 0 || strstr(address, "://"))
		return xstrdup(address);
	return xasprintf("http://%s", address);
}
