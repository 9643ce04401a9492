/* Who may name which team, and how much one user or team may have the
 * scheduler hold: the [teams] and [limits] of parsa.conf (docs/operators.md)
 * turned into the checks a submission passes. A policy is built once from a
 * whole, validated config and read under the engine lock; it owns copies of
 * what it needs, so the config may go after policy_create. */
#ifndef PARSA_POLICY_H
#define PARSA_POLICY_H

#include "config.h"
#include "engine.h"

#include <stdbool.h>
#include <stdint.h>

/* Built-in defaults: large enough for any real pipeline, small enough that
 * one spec cannot fill the scheduler's memory (issue 15: a million instances
 * cost 230 MB and 57 MB of database). */
#define POLICY_DEFAULT_INSTANCES_PER_JOB 100000
#define POLICY_DEFAULT_QUEUED_INSTANCES 1000000
#define POLICY_DEFAULT_QUEUED_JOBS 10000

struct policy;

/* conf may be NULL (no parsa.conf): only the built-in defaults then. Never
 * fails: parsa_conf_load validated the lines. */
struct policy *policy_create(const struct parsa_conf *conf);
void policy_destroy(struct policy *p);

/* May who (named user; admin: root or the admin group) account a job to
 * team? Their groups' names always, and the teams [teams] grants them or a
 * group of theirs. 0, or -1 with errno EACCES and *err listing the teams
 * they may use (file and line name the spec's team line). */
int policy_check_team(const struct policy *p, const struct caller *who, const char *user,
		      bool admin, const char *team, const char *file, int line, char **err);

/* What a user or a team holds now. */
struct policy_usage {
	int64_t jobs;              /* unfinished jobs */
	int64_t instances;         /* their instances that have not ended */
};

/* Does a queued_jobs or queued_instances limit apply to user or team? If not,
 * policy_check_limits does not look at what they hold (their usage may be
 * left at zero, which spares counting it). */
bool policy_uses_usage(const struct policy *p, const char *user, bool root, const char *team);

/* Would a job of user and team with job_instances (known so far) pass
 * instances_per_job, and would adding added instances (and, new_job, one
 * more job) to what they hold pass queued_instances and queued_jobs? root
 * (uid 0, the operator) has no default limits, only its own user.root.
 * lines, and its team's. 0, or -1 with errno EDQUOT and *err naming the
 * limit, its value and where it is set. */
int policy_check_limits(const struct policy *p, const char *user, bool root, const char *team,
			int64_t job_instances, int64_t added, bool new_job,
			const struct policy_usage *user_use, const struct policy_usage *team_use,
			const char *file, char **err);

#endif
