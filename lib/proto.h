/* The messages between parsa-runner and parsa-sched (docs/api.md, "Hosts and
 * runners"): one C type per body, with its <type>_to_json() and
 * <type>_from_json(), used by both sides so that a field is added here once.
 * Field names and JSON types are the wire format: keep them as they are. */
#ifndef PARSA_PROTO_H
#define PARSA_PROTO_H

#include "spec.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Every *_to_json() returns a new reference (NULL only if a required string
 * is NULL). Every *_from_json() reads an object the caller keeps alive: the
 * strings it fills in point into it. Missing members take defaults; those
 * that can refuse a body return -1 with errno EINVAL (and *err saying why). */

/* The compact text of a body as it goes on the wire (malloc'ed); takes the
 * reference. NULL when body is NULL or cannot be written (a real that is not
 * finite). */
char *proto_encode(json_t *body);

/* ---- POST /v1/hosts: a runner registers its host ---- */

struct host_info {
	const char *name;
	int cpus;
	uint64_t mem, scratch_total, scratch_free;
	int cpu_limit, mem_limit;        /* percent; 0 means the default (90) */
	const char *const *features;
	size_t nfeatures;
	const char *mount;
	const char *window;              /* when it takes work (lib/timewin.h); NULL: always */
	bool window_drain;               /* at the window's end running work finishes */
	int gpus;                        /* GPUs it hands out (device indices 0..gpus-1) */
};

json_t *host_info_to_json(const struct host_info *info);
/* Missing numbers are 0 (scratch_free: scratch_total); info->features is
 * allocated: host_info_clear() frees it. */
void host_info_from_json(const json_t *json, struct host_info *info);
void host_info_clear(struct host_info *info);

/* The scheduler's answer: the name it registered and the lease (ms) after
 * which a runner out of contact must stop its instances. */
struct registration_answer {
	const char *name;
	int64_t lease_ms;                /* 0 when not given */
};

json_t *registration_answer_to_json(const struct registration_answer *answer);
void registration_answer_from_json(const json_t *json, struct registration_answer *answer);

/* ---- POST /v1/hosts/<h>/heartbeat: live usage and what runs ---- */

/* What one instance's whole process tree has used, as its runner measured it
 * (runner/usage.h). -1 in a field means not measured. */
struct instance_usage {
	int64_t cpu_ms;                  /* user + system time so far */
	int64_t rss;                     /* resident bytes now */
	int64_t max_rss;                 /* the most resident bytes seen */
};

#define INSTANCE_USAGE_UNKNOWN ((struct instance_usage){ -1, -1, -1 })

struct heartbeat_entry {
	int64_t id;
	int attempt;
	int pid;
	double progress_done, progress_total; /* its last progress; total 0: none */
	struct instance_usage usage;
	/* Where it runs when that is not this host's own process (a Slurm
	 * job id "1234" or "1234_7"; NULL: none), and while it waits there
	 * the executor's word for why (Slurm's reason: "Priority"; NULL when
	 * it does not wait). */
	const char *slurm_job;
	const char *slurm_reason;
};

/* What a runner that hands its instances to a batch system (runner
 * --executor slurm) says of it with each heartbeat: a local runner sends
 * none. Counts are -1 when not known. */
struct heartbeat_executor {
	const char *kind;                /* "slurm"; NULL: no such object */
	const char *partition;           /* "" when Slurm's default */
	int64_t pending, running;        /* this runner's jobs in Slurm */
	int64_t last_poll_ms;            /* wall clock of the last query that answered; 0: none */
	const char *poll_error;          /* the last query's error; NULL when it answered */
	int64_t cpus_up;                 /* the partition's usable CPUs (sinfo); -1 unknown */
	int64_t cpus_outside;            /* of which other users' jobs hold; -1 unknown */
	/* "on" or "off": whether the batch system keeps accounting (the
	 * runner asks sacct of ended jobs); NULL not known (an older runner) */
	const char *accounting;
};

/* The host's live use split in two: what parsa's instances use and what the
 * rest of the machine does. Placement counts only the outside share as load
 * (parsa's own is already in the reservations). A runner too old to tell
 * leaves the split at -1 and the scheduler counts the whole use as outside. */
struct heartbeat {
	double cpu_pct, mem_pct, load1;  /* the whole machine */
	int64_t scratch_free;            /* -1 when not given */
	double parsa_cpu_pct, outside_cpu_pct; /* of the whole machine's CPU; -1: not given */
	double parsa_mem_pct, outside_mem_pct; /* of its memory; -1: not given */
	double outside_cores;            /* cores kept busy outside parsa; -1: not given */
	int64_t outside_mem;             /* bytes used outside parsa; -1: not given */
	/* The volume as the host's mount sees it (<mount>/storage): since when
	 * it has not answered (epoch seconds; 0: it answers, also from a runner
	 * too old to tell) and why (NULL when it answers). */
	int64_t storage_down_since;
	const char *storage_reason;
	struct heartbeat_executor executor;
	const struct heartbeat_entry *instances;
	size_t ninstances;
};

json_t *heartbeat_to_json(const struct heartbeat *hb);
/* The heartbeat's "instances" list alone. */
json_t *heartbeat_instances_to_json(const struct heartbeat_entry *entries, size_t n);
/* hb->instances is allocated: heartbeat_clear() frees it. */
void heartbeat_from_json(const json_t *json, struct heartbeat *hb);
void heartbeat_clear(struct heartbeat *hb);

/* ---- GET /v1/hosts/<h>/work: {"start": [ASSIGNMENT...], "cancel": [REF...]} ---- */

/* One attempt of one instance: an entry of the "cancel" list, and what a
 * runner reads first of an assignment (to refuse one it cannot parse). */
struct attempt_ref {
	int64_t id;
	int64_t attempt;
};

json_t *attempt_ref_to_json(const struct attempt_ref *ref);
/* -1 unless both are integers. */
int attempt_ref_from_json(const json_t *json, struct attempt_ref *ref);

/* The two lists of a work answer, borrowed from it (NULL when missing). */
struct work_answer {
	const json_t *start;
	const json_t *cancel;
};

/* Takes the references to both lists. */
json_t *work_answer_to_json(json_t *start, json_t *cancel);
void work_answer_from_json(const json_t *json, struct work_answer *work);
/* Does it carry anything (an assignment or a cancel)? */
bool work_answer_has_items(const json_t *json);

/* An element of "start": which stage instance to run, as whom and with what.
 * assignment_from_json() checks every field the runner relies on before
 * anything is started as root, in particular names that become paths and the
 * identity the instance will run as. */
struct assignment {
	int64_t id;          /* the instance, unique in the scheduler */
	int64_t attempt;     /* a new number each time the instance is (re)assigned */
	int64_t job;
	char *stage;         /* safe as one path component (checked) */
	int64_t index;
	char *item;          /* relative to the job's out/ folder; "" without foreach */
	char *point;         /* a sweep's point as a folder name ("cache=2M,quantum=1000"),
	                      * below the stage's out/ folder; "" without matrix keys */
	char *run;           /* the shell command */
	char *workdir;       /* where it starts (lib/spec.h, workdir); "" for its output folder */
	bool workdir_fallback; /* a workdir that is not on this host: start in the output folder */
	int64_t cpus;
	uint64_t mem;
	uint64_t scratch;
	uint64_t walltime_s; /* 0 = no limit */
	uint64_t progress_files; /* progress = files:N; 0 = from $PARSA_PROGRESS */
	int64_t gpus;        /* GPUs it gets, distinct from its neighbours' (0: none) */
	char **env;          /* "NAME=value" */
	size_t nenv;
	uid_t uid;
	gid_t gid;
	char *user;          /* "" when the scheduler did not know the name */
	gid_t *groups;
	size_t ngroups;
	/* The stage's slurm.* keys: a Slurm runner submits with them over its
	 * own --slurm-partition/account/qos; a local runner ignores them. */
	struct spec_slurm slurm;
};

json_t *assignment_to_json(const struct assignment *a);
/* Where the instance writes ($PARSA_OUT): MOUNT/jobs/J/out/STAGE, or its
 * point's folder below that for a sweep. Malloc'ed. */
char *assignment_out_dir(const char *mount, const struct assignment *a);
/* Unlike the others, a copy: the caller frees it with assignment_destroy(). */
struct assignment *assignment_from_json(const json_t *json, char **err);
void assignment_destroy(struct assignment *a);

/* A name that may be used as one path component (an assignment's stage, a
 * host's name and features): 1-255 characters of [A-Za-z0-9._-], not starting
 * with '.'. */
bool proto_safe_name(const char *name);

/* ---- POST /v1/instances/<id>/state: an instance started or ended ---- */

enum report_kind { REPORT_RUNNING, REPORT_EXITED, REPORT_FAILED };

/* Times are the runner's wall clock in ms since the epoch, stamped on the
 * host when the instance reached exec and when it ended: the scheduler
 * records them, not when the report arrived. */
struct report {
	int attempt;
	enum report_kind kind;
	int pid;                         /* 0 when not given */
	int exit_code;                   /* -1 when not given */
	int signal;                      /* 0 when not given */
	const char *reason;              /* NULL when not given */
	int64_t started_ms;              /* 0 when not given */
	int64_t ended_ms;                /* exited only; 0 when not given */
	struct instance_usage usage;     /* exited: the totals; -1 when not given */
	const char *cpu_list;            /* the cores it was pinned to ("0-1,4"); NULL: none */
	const char *gpu_list;            /* the GPU indices it got ("0,1"); NULL: none */
	const char *slurm_job;           /* its Slurm job id ("1234_7"); NULL: not a Slurm job */
	/* exited: Slurm's end state from its accounting ("TIMEOUT", "CANCELLED
	 * by alice"); NULL: not known (no accounting, an older runner) */
	const char *slurm_state;
};

/* An exited report carries its signal, else its exit code, and its pid when
 * it is known (its start may not have been reported). */
json_t *report_to_json(const struct report *r);
/* Fails for a "state" other than running, exited or failed. */
int report_from_json(const json_t *json, struct report *r, char **err);

/* ---- POST /v1/instances/<id>/progress: done of total ---- */

struct progress_report {
	int attempt;
	double done, total;              /* a percentage is done of 100 */
};

json_t *progress_report_to_json(const struct progress_report *p);
/* Takes {"attempt", "done", "total"} or {"attempt", "percent"}. */
void progress_report_from_json(const json_t *json, struct progress_report *p);

#endif
