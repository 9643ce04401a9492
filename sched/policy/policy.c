/* [teams] and [limits] as submission checks (see policy.h). */
#include "policy.h"
#include "ident.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Only path, grants and limits of conf are set: parsa_conf_free frees them. */
struct policy {
	struct parsa_conf conf;
};

static const int64_t builtin[PARSA_LIMIT_NKINDS] = {
	[PARSA_LIMIT_INSTANCES_PER_JOB] = POLICY_DEFAULT_INSTANCES_PER_JOB,
	[PARSA_LIMIT_QUEUED_INSTANCES] = POLICY_DEFAULT_QUEUED_INSTANCES,
	[PARSA_LIMIT_QUEUED_JOBS] = POLICY_DEFAULT_QUEUED_JOBS,
};

struct policy *policy_create(const struct parsa_conf *conf)
{
	struct policy *p = xcalloc(1, sizeof *p);
	struct parsa_conf *c = &p->conf;

	if (!conf)
		return p;
	c->path = conf->path ? xstrdup(conf->path) : NULL;
	c->ngrants = conf->ngrants;
	c->grants = xcalloc(conf->ngrants ? conf->ngrants : 1, sizeof *c->grants);
	for (size_t i = 0; i < conf->ngrants; i++) {
		const struct parsa_team_grant *g = &conf->grants[i];

		c->grants[i] = *g;
		c->grants[i].who = xstrdup(g->who);
		c->grants[i].teams = xcalloc(g->nteams ? g->nteams : 1, sizeof *g->teams);
		for (size_t t = 0; t < g->nteams; t++)
			c->grants[i].teams[t] = xstrdup(g->teams[t]);
	}
	c->nlimits = conf->nlimits;
	c->limits = xcalloc(conf->nlimits ? conf->nlimits : 1, sizeof *c->limits);
	for (size_t i = 0; i < conf->nlimits; i++) {
		c->limits[i] = conf->limits[i];
		c->limits[i].name = conf->limits[i].name ? xstrdup(conf->limits[i].name) : NULL;
	}
	return p;
}

void policy_destroy(struct policy *p)
{
	if (!p)
		return;
	parsa_conf_free(&p->conf);
	free(p);
}

/* A growing list of distinct names. */
struct names {
	char **v;
	size_t n;
};

static bool names_has(const struct names *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], name) == 0)
			return true;
	return false;
}

/* Takes name. */
static void names_add(struct names *l, char *name)
{
	if (names_has(l, name)) {
		free(name);
		return;
	}
	l->v = xrealloc(l->v, (l->n + 1) * sizeof *l->v);
	l->v[l->n++] = name;
}

static void names_free(struct names *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

int policy_check_team(const struct policy *p, const struct caller *who, const char *user,
		      bool admin, const char *team, const char *file, int line, char **err)
{
	struct names groups = { 0 }, teams = { 0 };
	char *list = NULL;
	size_t used = 0;
	int ret = 0;

	if (admin)
		return 0;
	names_add(&groups, ident_group_name(who->gid));
	for (size_t i = 0; i < who->ngroups; i++)
		names_add(&groups, ident_group_name(who->groups[i]));
	/* Their own groups first, then what [teams] grants, in file order. */
	for (size_t i = 0; i < groups.n; i++)
		names_add(&teams, xstrdup(groups.v[i]));
	for (size_t i = 0; i < p->conf.ngrants; i++) {
		const struct parsa_team_grant *g = &p->conf.grants[i];

		if (g->group ? !names_has(&groups, g->who) : strcmp(g->who, user) != 0)
			continue;
		for (size_t t = 0; t < g->nteams; t++)
			names_add(&teams, xstrdup(g->teams[t]));
	}
	if (names_has(&teams, team))
		goto out;
	for (size_t i = 0; i < teams.n; i++) {
		list = xrealloc(list, used + strlen(teams.v[i]) + 3);
		used += (size_t)sprintf(list + used, "%s%s", i ? ", " : "", teams.v[i]);
	}
	errno = EACCES;
	ret = errprintf(err, "%s:%d: team = %s: %s may use the teams %s (their groups%s); an admin "
			"can grant more in [teams] of %s: nothing was submitted", file, line, team, user,
			list ? list : "(none)", p->conf.ngrants ? " and [teams]" : "",
			p->conf.path ? p->conf.path : PARSA_CONF_DEFAULT);
out:
	free(list);
	names_free(&groups);
	names_free(&teams);
	return ret;
}

/* The limit of kind for a user (or a team: scope), and where it comes from
 * into where. A team has no limit but its own lines (-1): the defaults are
 * each user's; and none for root without a line of its own (own_only). */
static int64_t limit_of(const struct policy *p, enum parsa_limit_kind kind,
			enum parsa_limit_scope scope, const char *name, bool own_only, char *where,
			size_t len)
{
	const struct parsa_limit *dflt = NULL, *own = NULL;

	for (size_t i = 0; i < p->conf.nlimits; i++) {
		const struct parsa_limit *l = &p->conf.limits[i];

		if (l->kind != kind)
			continue;
		/* The last line wins, as for every other key. */
		if (l->scope == PARSA_SCOPE_DEFAULT)
			dflt = l;
		else if (l->scope == scope && strcmp(l->name, name) == 0)
			own = l;
	}
	if (own) {
		snprintf(where, len, "%s.%s.%s in [limits] of %s:%d",
			 scope == PARSA_SCOPE_USER ? "user" : "team", name, parsa_limit_name(kind),
			 p->conf.path, own->line);
		return own->value;
	}
	if (scope == PARSA_SCOPE_TEAM || own_only)
		return -1;
	if (dflt) {
		snprintf(where, len, "%s in [limits] of %s:%d", parsa_limit_name(kind), p->conf.path,
			 dflt->line);
		return dflt->value;
	}
	snprintf(where, len, "the built-in default; set %s or user.%s.%s in [limits] of %s",
		 parsa_limit_name(kind), name, parsa_limit_name(kind),
		 p->conf.path ? p->conf.path : PARSA_CONF_DEFAULT);
	return builtin[kind];
}

bool policy_uses_usage(const struct policy *p, const char *user, bool root, const char *team)
{
	static const enum parsa_limit_kind kinds[] = { PARSA_LIMIT_QUEUED_JOBS, PARSA_LIMIT_QUEUED_INSTANCES };
	char where[512];

	for (size_t k = 0; k < ARRAY_LEN(kinds); k++)
		if (limit_of(p, kinds[k], PARSA_SCOPE_USER, user, root, where, sizeof where) >= 0 ||
		    limit_of(p, kinds[k], PARSA_SCOPE_TEAM, team, false, where, sizeof where) >= 0)
			return true;
	return false;
}

int policy_check_limits(const struct policy *p, const char *user, bool root, const char *team,
			int64_t job_instances, int64_t added, bool new_job,
			const struct policy_usage *user_use, const struct policy_usage *team_use,
			const char *file, char **err)
{
	static const struct {
		enum parsa_limit_scope scope;
		const char *what;
	} scopes[] = { { PARSA_SCOPE_USER, "user" }, { PARSA_SCOPE_TEAM, "team" } };
	char where[512];

	for (size_t s = 0; s < ARRAY_LEN(scopes); s++) {
		const char *name = scopes[s].scope == PARSA_SCOPE_USER ? user : team;
		const struct policy_usage *use = scopes[s].scope == PARSA_SCOPE_USER ? user_use : team_use;
		bool own_only = root && scopes[s].scope == PARSA_SCOPE_USER;
		int64_t max;

		max = limit_of(p, PARSA_LIMIT_INSTANCES_PER_JOB, scopes[s].scope, name, own_only, where,
			       sizeof where);
		if (max >= 0 && job_instances > max) {
			errno = EDQUOT;
			return errprintf(err, "%s: %lld instances in one job of %s %s, more than "
					 "instances_per_job = %lld (%s)", file,
					 (long long)job_instances, scopes[s].what, name, (long long)max, where);
		}
		max = limit_of(p, PARSA_LIMIT_QUEUED_JOBS, scopes[s].scope, name, own_only, where,
			       sizeof where);
		if (max >= 0 && new_job && use->jobs + 1 > max) {
			errno = EDQUOT;
			return errprintf(err, "%s: %s %s has %lld unfinished jobs, and queued_jobs = %lld (%s): "
					 "wait for some to end, or cancel some", file,
					 scopes[s].what, name, (long long)use->jobs, (long long)max, where);
		}
		max = limit_of(p, PARSA_LIMIT_QUEUED_INSTANCES, scopes[s].scope, name, own_only, where,
			       sizeof where);
		if (max >= 0 && use->instances + added > max) {
			errno = EDQUOT;
			return errprintf(err, "%s: %lld more instances would give %s %s %lld unfinished, more "
					 "than queued_instances = %lld (%s)", file,
					 (long long)added, scopes[s].what, name,
					 (long long)(use->instances + added), (long long)max, where);
		}
	}
	return 0;
}
