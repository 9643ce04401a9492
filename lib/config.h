/* /etc/parsa/parsa.conf: what the programs of one cluster share (the
 * scheduler's address, munge, the admin group) and what describes this host
 * (name, features, limits). Parsed with inih into a fresh struct and validated
 * whole before anyone uses it; a file that anyone but root (or the user running
 * the program) could have written is refused, like a munge key that others
 * could read. Command-line flags override what the file says. */
#ifndef PARSA_CONFIG_H
#define PARSA_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PARSA_CONF_DEFAULT "/etc/parsa/parsa.conf"
#define PARSA_MUNGE_KEY_DEFAULT "/etc/munge/munge.key"

/* [limits]: what one user (or one team) may have the scheduler hold. */
enum parsa_limit_kind {
	PARSA_LIMIT_INSTANCES_PER_JOB, /* instances of one job */
	PARSA_LIMIT_QUEUED_INSTANCES,  /* unfinished instances of all unfinished jobs */
	PARSA_LIMIT_QUEUED_JOBS,       /* unfinished jobs */
	PARSA_LIMIT_NKINDS
};

/* Whom a limit line is for: everybody's default, one user, one team. */
enum parsa_limit_scope { PARSA_SCOPE_DEFAULT, PARSA_SCOPE_USER, PARSA_SCOPE_TEAM };

struct parsa_limit {
	enum parsa_limit_kind kind;
	enum parsa_limit_scope scope;
	char *name;                 /* the user or team; NULL for a default */
	int64_t value;
	int line;                   /* in the file, for "where it is set" */
};

/* [teams]: "alice = arch, vlsi" (a user) or "@students = teaching" (the
 * members of a group) may name these teams besides their own groups. */
struct parsa_team_grant {
	char *who;                  /* user name, or group name when group is set */
	bool group;
	char **teams;
	size_t nteams;
	int line;
};

/* The name of a limit kind as parsa.conf spells it ("queued_jobs"). */
const char *parsa_limit_name(enum parsa_limit_kind kind);

/* Unset strings are NULL, unset numbers 0 (gpus: -1, since 0 says none). */
struct parsa_conf {
	char *path;                 /* the file read, NULL when there was none */
	/* [cluster]: every host */
	char *sched;                /* the scheduler for clients: HOST:PORT, http://..., unix:/path */
	char *munge_socket;         /* munged's socket */
	char *munge_key;            /* checked for safe owner and mode when it exists */
	char *admin_group;          /* may drain hosts and act on anybody's job */
	char *storage;              /* the job volume (parsa-sched, parsafs) */
	int64_t storage_patience_ms; /* parsafs: how long I/O waits for an unreachable volume; -1: absent */
	/* [sched]: the head node */
	char *listen;               /* TCP address of the API: HOST:PORT */
	char *state;                /* parsa-sched's state folder */
	int64_t host_timeout_ms;    /* silent this long: down */
	int64_t lease_ms;           /* silent this long: its instances are killed and requeued */
	int64_t half_life_ms;       /* fair share: how fast past usage is forgotten */
	int64_t retention_ms;       /* outputs of finished, un-kept jobs are deleted after this */
	int64_t keep_finished_ms;   /* finished jobs stay in the scheduler's memory this long */
	int64_t record_retention_ms; /* job records older than this are deleted (0: never) */
	int64_t list_finished_ms;   /* jobs/ lists the jobs that ended this recently */
	int defer_bursts;           /* 1 (the default), 0, or -1 when absent */
	/* [web]: the dashboard and /metrics (parsa-sched) */
	char *web_listen;           /* HOST:PORT, port 0: any free one; "off": none */
	/* [host]: this machine */
	char *name;
	char **features;
	size_t nfeatures;
	int cpus;
	int gpus;                   /* GPUs to hand out; -1: detect */
	uint64_t mem;
	uint64_t scratch_size;
	char *scratch;
	char *mount;
	char *runner_state;
	double cpu_limit, mem_limit;
	int64_t grace_ms;
	/* [teams] and [limits] (the scheduler's policy, sched/policy/policy.h) */
	struct parsa_team_grant *grants;
	size_t ngrants;
	struct parsa_limit *limits;
	size_t nlimits;
	int *key_lines;             /* parsa_conf_line()'s table */
};

/* Read path into conf (zeroed first). A missing file is not an error when
 * optional is set (conf->path stays NULL). When optional is set (path is the
 * default, no --config was given), $PARSA_CONFIG replaces path, and "" means
 * no file at all: the tests' way to leave the machine's settings out. -1 with errno and *err naming the
 * file, the line and the fix. */
int parsa_conf_load(const char *path, int optional, struct parsa_conf *conf, char **err);
void parsa_conf_free(struct parsa_conf *conf);
/* The same checks on text already read (len bytes, named path in messages),
 * without the file's owner and mode (the fuzz harness's way in). */
int parsa_conf_parse(const char *text, size_t len, const char *path, struct parsa_conf *conf,
		     char **err);

/* The line of the file that set section's key name; 0 when none did. */
int parsa_conf_line(const struct parsa_conf *conf, const char *section, const char *name);

/* A configuration file must be a regular file that only its owner can write,
 * owned by root (or, for a program not running as root, by its user). -1 with
 * errno EPERM and *err saying what to run to fix it. */
int parsa_conf_check_file(const char *path, char **err);

/* A key (munge's) must be readable by its owner only, and owned by root or by
 * the munge user. 0 also when path does not exist and optional is set. */
int parsa_conf_check_key(const char *path, int optional, char **err);

/* "HOST:PORT" -> "http://HOST:PORT"; "unix:/p", "http://..." and "/p" (a
 * socket path) as they are (malloc'ed). */
char *parsa_endpoint(const char *address);

#endif
