#include "reconf.h"
#include "backend.h"
#include "defaults.h"
#include "units.h"
#include "util.h"

#include <errno.h>
#include <grp.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *pick(const char *flag, const char *file)
{
	return flag ? flag : file;
}

void reconf_settings(const struct sched_flags *flags, const struct parsa_conf *conf,
		     struct sched_settings *s)
{
	const struct engine_config *f = &flags->durations;
	struct engine_config *cfg = &s->cfg;

	memset(s, 0, sizeof *s);
	s->flags = flags;
	s->conf = conf;
	s->listen = pick(flags->listen, conf->listen);
	s->munge_socket = pick(flags->munge_socket, conf->munge_socket);
	s->admin_group = pick(flags->admin_group, conf->admin_group);
	s->state_dir = pick(flags->state_dir, conf->state);
	if (!s->state_dir)
		s->state_dir = s->owned[0] = default_state_dir(geteuid(), getenv("HOME"),
							       getenv("XDG_STATE_HOME"));
	s->db_path = s->owned[1] = xasprintf("%s/parsa.db", s->state_dir);
	s->storage_url = pick(flags->storage_url, conf->storage);
	if (!s->storage_url)
		s->storage_url = s->owned[2] = xasprintf("%s/storage", s->state_dir);
	s->web_listen = pick(flags->web_listen, conf->web_listen);
	*cfg = *f;
	cfg->host_timeout_ms = f->host_timeout_ms ? f->host_timeout_ms : conf->host_timeout_ms;
	cfg->lease_ms = f->lease_ms ? f->lease_ms : conf->lease_ms;
	cfg->half_life_ms = conf->half_life_ms;
	cfg->retention_ms = f->retention_ms ? f->retention_ms : conf->retention_ms;
	cfg->keep_finished_ms = f->keep_finished_ms ? f->keep_finished_ms : conf->keep_finished_ms;
	cfg->record_retention_ms = f->record_retention_ms ? f->record_retention_ms
							  : conf->record_retention_ms;
	cfg->list_finished_ms = f->list_finished_ms ? f->list_finished_ms : conf->list_finished_ms;
	cfg->start_bursts_at_once = conf->defer_bursts == 0;
}

void reconf_settings_clear(struct sched_settings *s)
{
	for (size_t i = 0; i < ARRAY_LEN(s->owned); i++)
		free(s->owned[i]);
	memset(s, 0, sizeof *s);
}

int reconf_admin_gid(const char *group, gid_t *gid, char **err)
{
	struct group gr, *res = NULL;
	char buf[16384];

	if (getgrnam_r(group, &gr, buf, sizeof buf, &res) != 0 || !res) {
		errno = EINVAL;
		return errprintf(err, "admin group '%s' does not exist on this host (groupadd %s)",
				 group, group);
	}
	*gid = gr.gr_gid;
	return 0;
}

/* ---- -n ---- */

/* Where a value came from, to start a problem's line: the flag, the file's
 * line, or the default. */
static char *origin(const struct sched_settings *s, const char *section, const char *key,
		    const char *flag, const char *flag_value, const char *value)
{
	int line = parsa_conf_line(s->conf, section, key);

	if (flag_value)
		return xasprintf("--%s %s", flag, flag_value);
	if (s->conf->path && line)
		return xasprintf("%s:%d: [%s] %s = %s", s->conf->path, line, section, key, value);
	return xasprintf("%s (the default [%s] %s)", value, section, key);
}

static void problem(FILE *out, int *n, char *where, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* One line of the report; takes where. */
static void problem(FILE *out, int *n, char *where, const char *fmt, ...)
{
	va_list ap;

	fprintf(out, "%s: ", where);
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
	free(where);
	(*n)++;
}

/* HOST:PORT as the API (numeric_port 0) or the web page (1) binds it; NULL
 * when it parses, else why not (malloc'ed). */
static char *address_problem(const char *address, const char *any_host, int numeric_port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *res = NULL;
	char *host = xstrdup(address), *port = strrchr(host, ':'), *why = NULL;
	int rc;

	if (numeric_port)
		hints.ai_flags |= AI_NUMERICSERV;
	if (!port || !port[1]) {
		why = xstrdup("expected HOST:PORT, e.g. 10.0.0.1:7070, [::1]:7070 or :7070 for every address");
		goto out;
	}
	*port++ = '\0';
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	rc = getaddrinfo(*host ? host : any_host, port, &hints, &res);
	if (rc != 0)
		why = xasprintf("%s: give an address or a name this host resolves, and a port number",
				gai_strerror(rc));
out:
	if (res)
		freeaddrinfo(res);
	free(host);
	return why;
}

/* A folder the scheduler writes in, or creates (mkdir -p): NULL when it can,
 * else why not (malloc'ed). */
static char *folder_problem(const char *path)
{
	char *p = xstrdup(path), *why = NULL, *slash;
	struct stat st;

	for (;;) {
		if (stat(p, &st) == 0) {
			if (!S_ISDIR(st.st_mode))
				why = xasprintf("%s is not a folder; move it away or choose another path", p);
			else if (access(p, W_OK | X_OK) < 0)
				why = xasprintf("%s is not writable by uid %u (%s); run: chown %u %s", p,
						(unsigned)geteuid(), strerror(errno), (unsigned)geteuid(), p);
			break;
		}
		if (errno != ENOENT) {
			why = xasprintf("%s: %s", p, strerror(errno));
			break;
		}
		/* Missing: it will be made, if its nearest existing parent lets us. */
		slash = strrchr(p, '/');
		if (!slash) {
			free(p);
			p = xstrdup(".");
		} else if (slash == p) {
			p[1] = '\0';
		} else {
			*slash = '\0';
		}
	}
	free(p);
	return why;
}

static void check_addresses(const struct sched_settings *s, FILE *out, int *n)
{
	const struct sched_flags *f = s->flags;
	char *why;

	if (s->listen && (why = address_problem(s->listen, NULL, 0))) {
		problem(out, n, origin(s, "sched", "listen", "listen", f->listen, s->listen), "%s", why);
		free(why);
	}
	if (s->web_listen && strcmp(s->web_listen, "off") != 0 &&
	    (why = address_problem(s->web_listen, "127.0.0.1", 1))) {
		problem(out, n, origin(s, "web", "listen", "web", f->web_listen, s->web_listen),
			"%s, or off for no web page", why);
		free(why);
	}
}

static void check_paths(const struct sched_settings *s, FILE *out, int *n)
{
	const struct sched_flags *f = s->flags;
	const char *url = s->storage_url;
	struct stat st;
	char *why;

	if ((why = folder_problem(s->state_dir))) {
		problem(out, n, origin(s, "sched", "state", "state", f->state_dir, s->state_dir),
			"the database's folder: %s", why);
		free(why);
	} else if (stat(s->db_path, &st) == 0 &&
		   (!S_ISREG(st.st_mode) || access(s->db_path, R_OK | W_OK) < 0)) {
		problem(out, n, origin(s, "sched", "state", "state", f->state_dir, s->state_dir),
			"the database %s is %s; run: chown %u %s", s->db_path,
			S_ISREG(st.st_mode) ? "not writable" : "not a file", (unsigned)geteuid(), s->db_path);
	}
	if (strncmp(url, "nfs://", 6) == 0) {
		char *server = NULL, *export = NULL, *libnfs = NULL, *err = NULL;
		struct nfs_url_opts opts;

		if (backend_nfs_parse_url(url, &server, &export, &libnfs, &opts, &err) < 0)
			problem(out, n, origin(s, "cluster", "storage", "storage", f->storage_url, url), "%s",
				err ? err : "not an nfs://server/export[/folder] URL");
		free(server);
		free(export);
		free(libnfs);
		free(err);
	} else if (strncmp(url, "fault:", 6) != 0 && strstr(url, "://") && strncmp(url, "file://", 7) != 0) {
		problem(out, n, origin(s, "cluster", "storage", "storage", f->storage_url, url),
			"not a volume: give a local folder, file:///folder or nfs://server/export[/folder]");
	} else if (strncmp(url, "fault:", 6) != 0 &&
		   (why = folder_problem(strncmp(url, "file://", 7) == 0 ? url + 7 : url))) {
		problem(out, n, origin(s, "cluster", "storage", "storage", f->storage_url, url),
			"the volume: %s", why);
		free(why);
	}
}

int reconf_check(const struct sched_settings *s, char **report)
{
	const struct parsa_conf *c = s->conf;
	char *text = NULL, *err = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	int n = 0;
	gid_t gid;

	if (!out) {
		*report = xasprintf("cannot check: %s\n", strerror(errno));
		return 1;
	}
	check_addresses(s, out, &n);
	check_paths(s, out, &n);
	if (s->admin_group && reconf_admin_gid(s->admin_group, &gid, &err) < 0)
		problem(out, &n, origin(s, "cluster", "admin_group", "admin-group", s->flags->admin_group,
					s->admin_group), "%s", err);
	free(err);
	err = NULL;
	/* As at start: a scheduler on the network refuses a key others can read. */
	if (s->listen && parsa_conf_check_key(c->munge_key ? c->munge_key : PARSA_MUNGE_KEY_DEFAULT,
					      !c->munge_key, &err) < 0)
		problem(out, &n, origin(s, "cluster", "munge_key", "munge-key", NULL,
					c->munge_key ? c->munge_key : PARSA_MUNGE_KEY_DEFAULT), "%s", err);
	free(err);
	fclose(out);
	*report = text;
	return n;
}

/* ---- SIGHUP ---- */

static bool same_string(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static const char *or_none(const char *s)
{
	return s ? s : "(none)";
}

/* No page is "off", whether the file says so or says nothing. */
static const char *web_address(const char *listen)
{
	return listen ? listen : "off";
}

/* A duration of the engine for the log: 0 is the default. */
static void ms_text(int64_t ms, char *buf, size_t len)
{
	if (ms <= 0)
		snprintf(buf, len, "the default");
	else
		format_duration((uint64_t)(ms / 1000), buf, len);
}

static void diff_restart(const struct sched_settings *old, const struct sched_settings *fresh, FILE *out)
{
	static const struct {
		const char *section, *key;
		size_t at;
	} fields[] = {
		{ "sched", "listen", offsetof(struct sched_settings, listen) },
		{ "sched", "state", offsetof(struct sched_settings, state_dir) },
		{ "cluster", "munge_socket", offsetof(struct sched_settings, munge_socket) },
		{ "cluster", "storage", offsetof(struct sched_settings, storage_url) },
	};

	for (size_t i = 0; i < ARRAY_LEN(fields); i++) {
		const char *a = *(const char *const *)((const char *)old + fields[i].at);
		const char *b = *(const char *const *)((const char *)fresh + fields[i].at);

		if (!same_string(a, b))
			fprintf(out, "[%s] %s: %s -> %s needs a restart (the scheduler goes on with %s)\n",
				fields[i].section, fields[i].key, or_none(a), or_none(b), or_none(a));
	}
}

static void diff_durations(const struct sched_settings *old, const struct sched_settings *fresh, FILE *out)
{
	static const struct {
		const char *key;
		size_t at;
		bool live;
	} fields[] = {
		{ "host_timeout", offsetof(struct engine_config, host_timeout_ms), true },
		{ "keep_finished", offsetof(struct engine_config, keep_finished_ms), true },
		{ "record_retention", offsetof(struct engine_config, record_retention_ms), true },
		{ "list_finished", offsetof(struct engine_config, list_finished_ms), true },
		{ "lease", offsetof(struct engine_config, lease_ms), false },
		{ "fair_share_half_life", offsetof(struct engine_config, half_life_ms), false },
		{ "retention", offsetof(struct engine_config, retention_ms), false },
	};

	for (size_t i = 0; i < ARRAY_LEN(fields); i++) {
		int64_t a = *(const int64_t *)((const char *)&old->cfg + fields[i].at);
		int64_t b = *(const int64_t *)((const char *)&fresh->cfg + fields[i].at);
		char ta[32], tb[32];

		if (a == b)
			continue;
		ms_text(a, ta, sizeof ta);
		ms_text(b, tb, sizeof tb);
		if (fields[i].live)
			fprintf(out, "[sched] %s: %s -> %s\n", fields[i].key, ta, tb);
		else
			fprintf(out, "[sched] %s: %s -> %s needs a restart (the scheduler goes on with %s)\n",
				fields[i].key, ta, tb, ta);
	}
	if (old->cfg.start_bursts_at_once != fresh->cfg.start_bursts_at_once)
		fprintf(out, "[sched] defer_bursts: %s -> %s\n", old->cfg.start_bursts_at_once ? "no" : "yes",
			fresh->cfg.start_bursts_at_once ? "no" : "yes");
}

/* A [limits] line's key as written ("user.alice.queued_jobs"). */
static char *limit_key(const struct parsa_limit *l)
{
	static const char *const scopes[] = { [PARSA_SCOPE_DEFAULT] = "", [PARSA_SCOPE_USER] = "user.",
					      [PARSA_SCOPE_TEAM] = "team." };

	return xasprintf("%s%s%s%s", scopes[l->scope], l->name ? l->name : "", l->name ? "." : "",
			 parsa_limit_name(l->kind));
}

static const struct parsa_limit *find_limit(const struct parsa_conf *c, const char *key)
{
	const struct parsa_limit *found = NULL;

	for (size_t i = 0; i < c->nlimits; i++) {
		char *k = limit_key(&c->limits[i]);

		if (strcmp(k, key) == 0)
			found = &c->limits[i];
		free(k);
	}
	return found;
}

static void diff_limits(const struct parsa_conf *a, const struct parsa_conf *b, FILE *out)
{
	for (size_t i = 0; i < b->nlimits; i++) {
		char *key = limit_key(&b->limits[i]);
		const struct parsa_limit *was = find_limit(a, key);

		if (find_limit(b, key) != &b->limits[i])
			;       /* set again further down: the last line counts */
		else if (!was)
			fprintf(out, "[limits] %s = %lld (new)\n", key, (long long)b->limits[i].value);
		else if (was->value != b->limits[i].value)
			fprintf(out, "[limits] %s: %lld -> %lld\n", key, (long long)was->value,
				(long long)b->limits[i].value);
		free(key);
	}
	for (size_t i = 0; i < a->nlimits; i++) {
		char *key = limit_key(&a->limits[i]);

		if (find_limit(a, key) == &a->limits[i] && !find_limit(b, key))
			fprintf(out, "[limits] %s = %lld removed\n", key, (long long)a->limits[i].value);
		free(key);
	}
}

static char *grant_teams(const struct parsa_team_grant *g)
{
	char *text = xstrdup("");

	for (size_t t = 0; t < g->nteams; t++) {
		char *more = xasprintf("%s%s%s", text, t ? ", " : "", g->teams[t]);

		free(text);
		text = more;
	}
	return text;
}

static const struct parsa_team_grant *find_grant(const struct parsa_conf *c,
						 const struct parsa_team_grant *like)
{
	const struct parsa_team_grant *found = NULL;

	for (size_t i = 0; i < c->ngrants; i++)
		if (c->grants[i].group == like->group && strcmp(c->grants[i].who, like->who) == 0)
			found = &c->grants[i];
	return found;
}

static void diff_teams(const struct parsa_conf *a, const struct parsa_conf *b, FILE *out)
{
	for (size_t i = 0; i < b->ngrants; i++) {
		const struct parsa_team_grant *g = &b->grants[i], *was = find_grant(a, g);
		char *now = grant_teams(g), *before = was ? grant_teams(was) : NULL;

		if (find_grant(b, g) == g && !was)
			fprintf(out, "[teams] %s%s = %s (new)\n", g->group ? "@" : "", g->who, now);
		else if (find_grant(b, g) == g && strcmp(before, now) != 0)
			fprintf(out, "[teams] %s%s: %s -> %s\n", g->group ? "@" : "", g->who, before, now);
		free(now);
		free(before);
	}
	for (size_t i = 0; i < a->ngrants; i++)
		if (find_grant(a, &a->grants[i]) == &a->grants[i] && !find_grant(b, &a->grants[i]))
			fprintf(out, "[teams] %s%s removed\n", a->grants[i].group ? "@" : "", a->grants[i].who);
}

char *reconf_diff(const struct sched_settings *old, const struct sched_settings *fresh,
		  struct engine_live *live, char **err)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	*live = (struct engine_live){
		.conf = fresh->conf,
		.host_timeout_ms = fresh->cfg.host_timeout_ms,
		.keep_finished_ms = fresh->cfg.keep_finished_ms,
		.record_retention_ms = fresh->cfg.record_retention_ms,
		.list_finished_ms = fresh->cfg.list_finished_ms,
		.start_bursts_at_once = fresh->cfg.start_bursts_at_once,
	};
	if (fresh->admin_group) {
		if (reconf_admin_gid(fresh->admin_group, &live->admin_gid, err) < 0)
			return NULL;
		live->admin_set = true;
	}
	out = open_memstream(&text, &len);
	if (!out) {
		errprintf(err, "cannot compare the settings: %s", strerror(errno));
		return NULL;
	}
	diff_restart(old, fresh, out);
	/* main moves the page itself (it owns the server), also off and on. */
	if (!same_string(web_address(old->web_listen), web_address(fresh->web_listen)))
		fprintf(out, "[web] listen: %s -> %s\n", web_address(old->web_listen),
			web_address(fresh->web_listen));
	diff_durations(old, fresh, out);
	if (!same_string(old->admin_group, fresh->admin_group))
		fprintf(out, "[cluster] admin_group: %s -> %s\n", or_none(old->admin_group),
			or_none(fresh->admin_group));
	diff_teams(old->conf, fresh->conf, out);
	diff_limits(old->conf, fresh->conf, out);
	fclose(out);
	return text;
}
