/* The scheduler's state in memory: jobs, their stages and instances, hosts and
 * events. The store loads it at start and every change is written through
 * (model_flush) before anyone outside learns of it. The model itself has no
 * lock: the engine's mutex guards every field of every object here. */
#ifndef PARSA_MODEL_H
#define PARSA_MODEL_H

#include "spec.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum job_state { JOB_QUEUED, JOB_RUNNING, JOB_SUCCEEDED, JOB_FAILED, JOB_CANCELLED };
enum stage_state { STAGE_WAITING, STAGE_QUEUED, STAGE_RUNNING, STAGE_SUCCEEDED, STAGE_FAILED,
	STAGE_CANCELLED };
enum inst_state { INST_QUEUED, INST_ASSIGNED, INST_RUNNING, INST_SUCCEEDED, INST_FAILED,
	INST_CANCELLED };
#define INST_NSTATES 6

/* How an unfinished job is being brought to an end (persisted). */
enum job_ending { ENDING_NONE, ENDING_CANCEL, ENDING_FAIL };

struct job;
struct stage;
struct host;

struct instance {
	int64_t id;
	struct job *job;
	struct stage *stage;
	int index;
	char *item;               /* "warm/ckpt-3" for foreach stages, else "" */
	enum inst_state state;
	int attempt;              /* assignments so far; 0 = never assigned */
	int failures;             /* failed attempts since submission or the last retry */
	struct host *host;        /* while assigned or running */
	char *host_name;          /* last host it was assigned to ("" if none) */
	int pid;
	int exit_code;            /* -1 when unknown */
	int signal;               /* 0 when not killed */
	char *reason;             /* why it failed or was cancelled ("" if none) */
	bool cancel_requested;    /* cancel sent (or to be sent) to the runner */
	int64_t assigned_ms;      /* the scheduler's clock */
	int64_t started_ms, ended_ms; /* its host's clock, stamped there (when the runner says) */
	int64_t cpu_ms;           /* user + system time of its process tree; -1 unknown */
	int64_t max_rss;          /* its tree's peak resident bytes; -1 unknown */
	char *cpu_list;           /* the cores it was pinned to ("" when not told) */
	char *gpu_list;           /* the GPUs it got ("" when none) */
	/* Not persisted: */
	int64_t rss;              /* resident bytes now, last heartbeat; -1 unknown */
	int64_t confirmed_mono;   /* when it was (last) known to run, for "lost" */
	int64_t missing_mono;     /* first heartbeat that did not list it; 0 = listed */
	bool start_sent;          /* current attempt sent through work since assigned */
	bool cancel_sent;
	uint64_t seen_seq;        /* the host's heartbeat that last listed it */
	double progress_done;     /* last progress report: DONE of TOTAL (percent: of 100) */
	double progress_total;    /* 0 = none reported */
	int64_t progress_ms;      /* when it came */
	/* From its runner when it runs as a Slurm job (runner --executor
	 * slurm): the job id ("1234", "1234_7"), and while it waits in Slurm,
	 * Slurm's reason ("Priority"). NULL: none. */
	char *slurm_job;
	char *slurm_reason;
	/* How it ended in Slurm, from its accounting ("CANCELLED by alice");
	 * NULL: not known. */
	char *slurm_state;
	/* Queued after a failed attempt (back-off) or a start the volume
	 * refused: not placed before this time (the engine's clock; 0: at
	 * once), and rather not on host_name again when another host has room.
	 * A restarted scheduler forgets both: the retry goes at once. */
	int64_t not_before_ms;
	bool avoid_host;
	bool dirty;
	struct instance *by_id_next;  /* the model's hash of instances by id */
};

struct stage {
	struct job *job;
	int idx;                  /* position in job->spec->stages (topological order) */
	const struct spec_stage *spec;
	enum stage_state state;
	bool expanded;            /* instances exist (foreach expanded, or not foreach) */
	struct instance **inst;
	size_t ninst, cap;
	int counts[INST_NSTATES]; /* instances per state, kept by model_set_state */
	int64_t started_ms, ended_ms;
	size_t queued_hint;       /* no queued instance below this index (not persisted) */
	bool listing;             /* its foreach input is being listed (not persisted) */
	bool dirty;
};

struct event {
	int64_t ms;
	char *text;
};

struct job {
	int64_t id;
	char *name;
	char *spec_file;          /* the file name given at submission */
	char *token;              /* the submitter's token (NULL: none), written with the row */
	char *spec_text;          /* byte for byte */
	size_t spec_len;
	struct spec *spec;
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	size_t ngroups;
	char *user;
	char *team;
	int priority;
	enum job_state state;
	bool held;
	enum job_ending ending;
	char *reason;             /* why it failed or was cancelled ("" if none) */
	int64_t submitted_ms, started_ms, ended_ms;
	struct stage *stages;
	size_t nstages;
	struct event *events;
	size_t nevents, events_cap, nflushed_events;
	bool persisted;           /* its row exists (inserted at submission) */
	bool dirty;
	bool folders_pending;     /* its folders are being made: not placed yet */
	/* Not persisted (a start tries every unfinished job's folders again):
	 * while the volume refuses them, "jobs/N/out/S not made yet (last
	 * error: ...)" for why, else NULL; and which round of making them is
	 * the current one (a retry starts a new one, the old one's tries stop). */
	char *folders_wait;
	unsigned folders_round;
	/* The pass's last roll-up of it changed nothing, and nothing changed it
	 * since (every change marks it dirty, which clears this): the next
	 * roll-up would change nothing either, so the pass skips it. */
	bool quiet;
	/* Not persisted: a finished job leaves memory keep_finished after its
	 * end; one read back from the store for a view stays a little while. */
	bool loaded;              /* read back from the store on demand */
	int64_t touched_mono;     /* when a view last asked for it (loaded ones) */
};

/* What a runner that hands its instances to a batch system says of it with
 * its heartbeats (lib/proto.h, struct heartbeat_executor). */
struct host_executor {
	char *kind;                  /* "slurm" */
	char *partition;             /* "": the default one */
	int64_t pending, running;    /* its jobs there; -1 unknown */
	int64_t last_poll_ms;        /* the runner's clock: its last query that answered; 0 none */
	char *poll_error;            /* NULL while its queries answer */
	int64_t cpus_up, cpus_outside; /* the partition's usable CPUs, and other users'; -1 unknown */
	const char *accounting;      /* "on", "off" (static strings); NULL not said */
};

struct host {
	char *name;
	int cpus;
	uint64_t mem, scratch_total, scratch_free;
	int cpu_limit, mem_limit;
	char **features;
	size_t nfeatures;
	char *mount;
	int gpus;                 /* GPUs its runner hands out */
	bool draining;
	char *window;             /* when it takes work (its runner's --window); NULL = always */
	struct timewin *win;      /* window, parsed */
	bool window_drain;        /* at the window's end running work finishes (else it stops) */
	int64_t registered_ms;
	/* Not persisted: live state from heartbeats. */
	int64_t last_heartbeat_ms;   /* wall clock, for views */
	int64_t last_heartbeat_mono; /* 0 = none since the scheduler started */
	double cpu_pct, mem_pct, load1;      /* the whole machine */
	double outside_cpu_pct, outside_mem_pct; /* of which not parsa's instances */
	double outside_cores;        /* cores kept busy outside parsa */
	uint64_t outside_mem;        /* bytes used outside parsa */
	/* The volume as its runner's mount sees it: since when it has not
	 * answered (epoch seconds; 0: it answers) and why. No new work goes
	 * there meanwhile. */
	int64_t storage_down_since;
	char *storage_reason;        /* NULL while it answers */
	struct host_executor *exec;  /* NULL: instances run on the host itself */
	int reserved_cpus;
	uint64_t reserved_mem, reserved_scratch;
	int reserved_gpus;
	struct instance **active;    /* assigned or running here */
	size_t nactive, active_cap;
	int64_t *orphans;            /* id/attempt pairs it runs that we do not want */
	size_t norphans, orphans_cap;
	uint64_t heartbeat_seq;
	uint64_t poll_seq;           /* the newest work poll; older ones are stale */
	bool dirty;
};

struct model;

struct model *model_create(void);
void model_destroy(struct model *m);

const char *job_state_name(enum job_state s);
const char *stage_state_name(enum stage_state s);
const char *inst_state_name(enum inst_state s);
/* -1 when name is not a state. */
int job_state_parse(const char *name);
int stage_state_parse(const char *name);
int inst_state_parse(const char *name);

/* Whether a job or a stage has ended: succeeded, failed or cancelled, the
 * states only a retry leaves. The one definition the engine, the views and
 * the model use; inline because the pass asks it of every active job and
 * stage each round. */
static inline bool job_state_ended(enum job_state s)
{
	return s == JOB_SUCCEEDED || s == JOB_FAILED || s == JOB_CANCELLED;
}

static inline bool stage_state_ended(enum stage_state s)
{
	return s == STAGE_SUCCEEDED || s == STAGE_FAILED || s == STAGE_CANCELLED;
}

static inline bool job_ended(const struct job *job)
{
	return job_state_ended(job->state);
}

static inline bool stage_ended(const struct stage *stage)
{
	return stage_state_ended(stage->state);
}

/* Resident jobs, by id (NULL when unknown or not in memory: the store has
 * the others, store_history.c), and by index up to model_njobs (the next id;
 * NULL for gaps and jobs not in memory). */
struct job *model_job(struct model *m, int64_t id);
size_t model_njobs(struct model *m);
struct job *model_job_at(struct model *m, size_t i);   /* may be NULL (gaps) */
size_t model_nresident(struct model *m);               /* jobs in memory */
int64_t model_next_job_id(struct model *m);
int64_t model_next_instance_id(struct model *m);
/* At load: the next ids as the store's rows say (never lowered). */
void model_set_next_ids(struct model *m, int64_t job_id, int64_t inst_id);

/* Jobs that have not ended, oldest first. model_prune_active() drops the ended ones. */
size_t model_nactive(struct model *m);
struct job *model_active_at(struct model *m, size_t i);
void model_prune_active(struct model *m);
/* Put an ended job back among the active ones (retry). */
void model_activate(struct model *m, struct job *job);

struct instance *model_instance(struct model *m, int64_t id);

/* A job object not yet in the model: created with its stages (no instances). It
 * takes ownership of spec. model_job_free() frees one that was never added. */
struct job *model_job_new(int64_t id, struct spec *spec);
void model_job_free(struct job *job);
/* Take back a job model_add_job added, whose submission failed before anybody
 * learned its id, and free it: gone from the jobs, instances, active and
 * dirty lists. */
void model_forget_job(struct model *m, struct job *job);
/* A job just read back from the store: none of its objects is to be written. */
void model_undirty_job(struct model *m, struct job *job);
/* Add a job (its id must be free); with its instances. */
void model_add_job(struct model *m, struct job *job);
/* Append an instance to stage (state queued) with the given id; not yet
 * registered by id: model_add_job or model_add_instance does that. */
struct instance *model_stage_new_instance(struct stage *stage, int64_t id, const char *item);
void model_add_instance(struct model *m, struct instance *inst);

void model_job_event(struct model *m, struct job *job, int64_t ms, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Change an instance's state, keeping stage counts and the host's active list
 * and reservations right. Marks it dirty. */
void model_set_state(struct model *m, struct instance *inst, enum inst_state state);
/* Bind an instance to a host (reserving its needs) or unbind it (host NULL). */
void model_set_host(struct model *m, struct instance *inst, struct host *host);

/* Replace a string field of a model object with a copy of text (NULL: ""). */
void model_set_text(char **field, const char *text);
/* Replace an optional string field (NULL: none) with a copy of text, cut
 * to max bytes; NULL or "" clears it. Nothing happens when it is the same. */
void model_set_short(char **field, const char *text, size_t max);
void model_host_executor_free(struct host_executor *x);

/* Write-through bookkeeping: mark objects changed, to be written by the next flush. */
void model_dirty_job(struct model *m, struct job *job);
void model_dirty_stage(struct model *m, struct stage *stage);
void model_dirty_instance(struct model *m, struct instance *inst);
void model_dirty_host(struct model *m, struct host *host);

/* Hosts. */
struct host *model_host(struct model *m, const char *name);
struct host *model_add_host(struct model *m, const char *name);
size_t model_nhosts(struct model *m);
struct host *model_host_at(struct model *m, size_t i);
void model_host_orphan(struct host *host, int64_t id, int attempt);
/* Forget a host with nothing assigned to it (hosts/<h>/ctl remove). */
void model_remove_host(struct model *m, struct host *host);

/* The objects waiting to be written, for the store. */
struct model_dirty {
	struct job **jobs;          /* rows to upsert, and events past nflushed_events */
	size_t njobs;
	struct stage **stages;
	size_t nstages;
	struct instance **insts;
	size_t ninsts;
	struct host **hosts;
	size_t nhosts;
};
const struct model_dirty *model_dirty(struct model *m);

/* Usage to add to the store's hourly totals with the next flush (fair share
 * and accounting read those, not the instances): an attempt of job that
 * ended at ended_ms after holding cpu_s reserved cpu-seconds. */
struct model_charge {
	int64_t hour;               /* ended_ms / 1 h */
	char *team, *user;
	double cpu_s;
};
void model_charge(struct model *m, const struct job *job, int64_t ended_ms, double cpu_s);
const struct model_charge *model_charges(struct model *m, size_t *n);
/* After a successful commit: everything dirty is now clean. */
void model_clean(struct model *m);

#endif
