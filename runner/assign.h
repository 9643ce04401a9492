/* One assignment from the scheduler (docs/api.md, "An ASSIGNMENT"): which stage
 * instance to run, as whom and with what. assignment_from_json() checks every
 * field the runner relies on before anything is started as root, in particular
 * names that become paths and the identity the instance will run as. */
#ifndef PARSA_RUNNER_ASSIGN_H
#define PARSA_RUNNER_ASSIGN_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct assignment {
	int64_t id;          /* the instance, unique in the scheduler */
	int64_t attempt;     /* a new number each time the instance is (re)assigned */
	int64_t job;
	char *stage;         /* safe as one path component (checked) */
	int64_t index;
	char *item;          /* relative to the job's out/ folder; "" without foreach */
	char *run;           /* the shell command */
	int64_t cpus;
	uint64_t mem;
	uint64_t scratch;
	uint64_t walltime_s; /* 0 = no limit */
	uint64_t progress_files; /* progress = files:N; 0 = from $PARSA_PROGRESS */
	char **env;          /* "NAME=value" */
	size_t nenv;
	uid_t uid;
	gid_t gid;
	char *user;          /* "" when the scheduler did not know the name */
	gid_t *groups;
	size_t ngroups;
};

/* Parse one element of a work answer's "start" list. NULL with errno EINVAL
 * and *err naming the bad field; the caller frees the result with
 * assignment_destroy(). */
struct assignment *assignment_from_json(const json_t *json, char **err);
void assignment_destroy(struct assignment *a);

/* The inverse of assignment_from_json() (new reference). */
json_t *assignment_to_json(const struct assignment *a);

/* A name that may be used as one path component: 1-255 characters of
 * [A-Za-z0-9._-], not starting with '.'. */
int assignment_safe_name(const char *name);

#endif
