/* The scheduling engine: every change to the model goes through here, under one
 * mutex. One thread runs the scheduling pass (dependencies, foreach expansion,
 * state roll-up, placement) whenever an event kicks it, or on a one-second
 * timer; long polls (work, wait) sleep on a condition variable it broadcasts.
 * The mutex is the engine's own (sched/engine/engine_internal.h): everything
 * outside reads the model through the door below, "views", which renders what
 * is asked (sched/views) under the lock into a copy the caller owns (a snapshot
 * copied out, not an immutable published version: why is said there); a job
 * that left memory is read from the store outside the lock. */
#ifndef PARSA_ENGINE_H
#define PARSA_ENGINE_H

#include "backend.h"
#include "caller.h"
#include "model.h"
#include "placement.h"
#include "proto.h"
#include "store.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct engine;

struct engine_config {
	int64_t host_timeout_ms;   /* a host without heartbeat this long is down (10 s) */
	int64_t lost_after_ms;     /* running but not in heartbeats this long: lost (5 s) */
	int64_t timer_ms;          /* the pass runs at least this often (1 s) */
	int64_t lease_ms;          /* a runner that has not reached us this long kills its
				    * instances; we requeue them a little later (30 s) */
	int64_t half_life_ms;      /* fair share (fairshare.h; 24 h) */
	bool admin_set;            /* admin_gid names the admin group */
	gid_t admin_gid;           /* may act on any job and on hosts, like root */
	struct clock *clock;       /* every time decision (lib/clock.h); NULL: the system clock */
	const char *sendmail;      /* for notify = mail:... (NULL: /usr/sbin/sendmail) */
	int64_t retention_ms;      /* outputs of finished, un-kept jobs older than this are
				    * deleted (sched/engine/lifecycle.h); 0 = never */
	const struct parsa_conf *conf; /* [teams] and [limits] (sched/policy/policy.h), read at
				    * engine_create; NULL: the built-in limits only */
	int64_t keep_finished_ms;  /* a finished job stays in memory this long (1 h) */
	int64_t record_retention_ms; /* job records that ended longer ago are deleted; 0 = never */
	int64_t list_finished_ms;  /* jobs/ lists jobs that ended this recently (30 d) */
	bool start_bursts_at_once; /* defer_bursts = no: a burst's jobs are placed at once */
	/* A burst of submissions (engine.c): new jobs less than burst_gap_ms
	 * apart begin one; it ends after burst_quiet_ms without one, or after
	 * burst_max_ms. 0: the defaults (2, 10 and 500 ms); tests widen them. */
	int64_t burst_gap_ms, burst_quiet_ms, burst_max_ms;
	/* A failed attempt's retry waits retry_backoff_ms, twice that after the
	 * second failure and so on, up to ENGINE_RETRY_BACKOFF_MAX_MS (docs/spec.md,
	 * retries). 0: ENGINE_RETRY_BACKOFF_MS; unit tests shorten it. */
	int64_t retry_backoff_ms;
};

/* The back-off of retries: 2 s after the first failure, doubling, at most
 * 5 minutes. Short enough that a flaky command loses little time; long
 * enough that a failing volume or host is not hammered in a tight loop. */
#define ENGINE_RETRY_BACKOFF_MS 2000LL
#define ENGINE_RETRY_BACKOFF_MAX_MS (5LL * 60 * 1000)

/* The defaults of keep_finished and of what jobs/ lists. */
#define ENGINE_KEEP_FINISHED_MS (3600LL * 1000)
#define ENGINE_LIST_FINISHED_MS (30LL * 24 * 3600 * 1000)

/* What runners send (struct host_info, heartbeat, report) is lib/proto.h. */

/* The engine takes none of these: the caller destroys them after the engine. */
struct engine *engine_create(const struct engine_config *cfg, struct store *store,
			     struct backend *storage, struct model *model, char **err);
/* Make the folders of unfinished jobs (in case the scheduler died between a
 * commit and their creation) and start the scheduling thread. */
int engine_start(struct engine *e, char **err);
/* Wake every long poll (they answer at once from now on) and join the thread. */
void engine_stop(struct engine *e);
void engine_destroy(struct engine *e);

/* What a reload of parsa.conf may change in a running engine (SIGHUP,
 * sched/reconf.h); 0 in a duration: its default, as in engine_config. */
struct engine_live {
	const struct parsa_conf *conf; /* [teams] and [limits]; NULL: the built-in limits */
	bool admin_set;
	gid_t admin_gid;
	int64_t host_timeout_ms;
	int64_t keep_finished_ms;
	int64_t record_retention_ms;
	int64_t list_finished_ms;
	bool start_bursts_at_once;
};

/* Apply live under the lock, at once for the next submission and pass; the
 * engine keeps no pointer into live->conf. */
void engine_reconfigure(struct engine *e, const struct engine_live *live);

/* ---- views: the door into the model ----
 * The API and the web page never hold the lock nor keep a pointer into the
 * model: each call below takes the lock, renders with sched/views and
 * copies out (a snapshot the caller frees), so a slow client or page costs
 * the pass nothing but the rendering. Why a copy rather than a published,
 * immutable version of the model: the model changes in place many times a
 * second (heartbeats, progress) and a view needs a few objects of it, so a
 * copy of what is asked costs less than a new version of everything at
 * every change (docs/design.md). Jobs that left memory are read from the
 * store outside the lock (sched/engine/history_reader.h), as are the lists
 * and counts that cover every job. Unless said, each takes the lock itself. */

/* A job's views (engine_job_views), or-ed together. */
enum {
	JOB_VIEW_JSON = 1 << 0,      /* status.json (views_job_json) */
	JOB_VIEW_INSTANCES = 1 << 1, /* with JSON: each stage's "list", its instances'
				      * JSON, the first max_instances of the job's */
	JOB_VIEW_STATUS = 1 << 2,    /* jobs/<id>/status */
	JOB_VIEW_WHY = 1 << 3,       /* jobs/<id>/why: placement, space, a burst */
	JOB_VIEW_EVENTS = 1 << 4,
	JOB_VIEW_SPEC = 1 << 5,      /* byte for byte, NULs and all */
};
struct job_views {
	json_t *json;
	char *status, *why, *events, *spec;
	size_t spec_len;
	int64_t now;                 /* the engine's clock they were rendered at */
};
/* What of job id; the caller frees out with job_views_free. 0, or -1 with
 * errno ENOENT (no such job) or EIO (the store failed) and *err. */
int engine_job_views(struct engine *e, int64_t id, unsigned what, size_t max_instances,
		     struct job_views *out, char **err);
void job_views_free(struct job_views *v);
/* One text view of job id: JOB_VIEW_STATUS, JOB_VIEW_WHY or JOB_VIEW_EVENTS.
 * Malloc'ed; NULL as engine_job_views. */
char *engine_job_text(struct engine *e, int64_t id, unsigned view, char **err);
/* jobs/<id>/stages/<stage>/status, malloc'ed; NULL as engine_job_views. */
char *engine_stage_status(struct engine *e, int64_t id, const char *stage, char **err);
/* The instance's status text and status.json (either may be NULL): 0, or -1
 * as engine_job_views (ENOENT also for no such stage or instance). */
int engine_instance_views(struct engine *e, int64_t id, const char *stage, int64_t index,
			  char **status, json_t **json, char **err);
/* views_job_json of those of ids[] that are in memory, null for the others
 * (an array as long as ids); *now: the engine's clock then. */
json_t *engine_resident_jobs_json(struct engine *e, const int64_t *ids, size_t n, int64_t *now);

/* What jobs/ lists (GET /v1/jobs): unfinished jobs and those that ended
 * within list_finished, of uid (-1: everyone's), row by row from the store,
 * outside the lock. 0, or -1 with *err. */
int engine_list_jobs(struct engine *e, int64_t uid, store_job_fn on_job, void *arg, char **err);
/* The newest job of uid: 1 with *id, 0 when none, -1 with *err. */
int engine_last_job(struct engine *e, uid_t uid, int64_t *id, char **err);

/* Every host's views_host_json, as an array. */
json_t *engine_hosts_json(struct engine *e);
/* One host's JSON, status text and instances running there
 * (views_host_running_json); any of them may be NULL. -1 with errno ENOENT
 * when there is no such host. */
int engine_host_views(struct engine *e, const char *name, json_t **json, char **status,
		      json_t **running);
/* hosts/<name>/status (views_host_status); NULL when there is no such host. Malloc'ed. */
char *engine_host_status(struct engine *e, const char *name);
/* The live use of each host heard from since the start, for the page's
 * charts: [{"name", "ms" (its last heartbeat's stamp), "cpu", "outside_cpu",
 * "mem", "outside_mem"}]. */
json_t *engine_host_loads_json(struct engine *e);
/* The status file of the cluster (views_cluster_status over every job the
 * store has, then fair share). NULL with errno EIO and *err. */
char *engine_cluster_status(struct engine *e, char **err);

/* Callers' names and groups, remembered (sched/api/ident.h); any thread, no lock. */
struct ident_cache *engine_ident(struct engine *e);
/* The host's runner is stopping on purpose: the host is down until it
 * registers again, and assignments it never started are requeued. */
int engine_host_leave(struct engine *e, const char *name, char **err);

/* Every call below returns 0 or -1 with errno and *err: EINVAL (bad input),
 * EFBIG (too large), EACCES (not allowed), ENOENT (no such thing), EBUSY (not
 * possible in this state), EAGAIN/ENOSPC/EIO (could not commit). */

/* Parse, check and commit a spec; *id is the new job's. token (NULL: none)
 * makes the submission idempotent: it is committed with the job, and a
 * submission whose token a job of who already has commits nothing and gives
 * that job's id with *existed set (existed may be NULL). The same token of
 * another user is EACCES; EAGAIN while that job's own submission is still
 * making its folders (it may yet be taken back: ask again). */
int engine_submit(struct engine *e, const struct caller *who, const char *filename,
		  const char *token, const char *text, size_t len, int64_t *id, bool *existed,
		  char **err);
/* The same, from a folder of the submitter's (parsa submit's or cp's working
 * folder, NULL: unknown): where its instances start unless the spec says
 * workdir (lib/spec.h). */
int engine_submit_from(struct engine *e, const struct caller *who, const char *filename,
		       const char *workdir, const char *token, const char *text, size_t len,
		       int64_t *id, bool *existed, char **err);

/* What a mount needs to know of job id at once (uid, gid, submitted_ms, the
 * stages' names and instances): the answer to a submission carries it. An
 * empty object for an unknown job. */
json_t *engine_job_meta_json(struct engine *e, int64_t id);
/* cancel | hold | release | retry | priority N | purge | keep | unkeep */
int engine_ctl(struct engine *e, const struct caller *who, int64_t id, const char *command,
	       char **err);
/* Those commands, for messages: "cancel, hold, ..., keep" + last_sep + "unkeep".
 * Malloc'ed. */
char *engine_ctl_commands(const char *last_sep);
/* Whether command is one of those, with the words it takes: 0, or -1 with
 * errno EINVAL and *err, as engine_ctl() says it. Changes nothing: a ctl
 * write of several lines checks them all before it sends any. */
int engine_ctl_check(const char *command, char **err);
/* Block up to timeout_ms until the job (or its stage, if stage is not NULL)
 * has ended. *done tells whether it has; *state names its state (static). */
int engine_wait(struct engine *e, int64_t id, const char *stage, int64_t timeout_ms,
		int *done, const char **state, char **err);
int engine_register_host(struct engine *e, const struct host_info *info, char **err);
int engine_heartbeat(struct engine *e, const char *host, const struct heartbeat *hb, char **err);
/* Block up to timeout_ms until the host has new work or cancels; returns
 * {"start": [...], "cancel": [...]} (the caller decrefs) or NULL. */
json_t *engine_work(struct engine *e, const char *host, int64_t timeout_ms, char **err);
/* An answer of engine_work() that could not be delivered (the connection
 * broke): what it carried goes out again with the next poll. */
void engine_work_undelivered(struct engine *e, const char *host, const json_t *answer);
int engine_report(struct engine *e, int64_t id, const struct report *r, char **err);

/* drain | resume | remove, by root or a member of the admin group. remove
 * forgets a drained host with nothing on it whose runner has stopped. */
int engine_host_ctl(struct engine *e, const struct caller *who, const char *host,
		    const char *command, char **err);
/* Those commands, for messages: "drain, resume" + last_sep + "remove". Malloc'ed. */
char *engine_host_ctl_commands(const char *last_sep);
/* Whether command is one of those (see engine_ctl_check). */
int engine_host_ctl_check(const char *command, char **err);

/* The lease runners are told when they register (engine_config.lease_ms). */
int64_t engine_lease_ms(const struct engine *e);

/* Durations of the last scheduling passes in milliseconds, oldest first:
 * copies at most max into out and returns how many; *total is how many passes
 * ran since the start. */
size_t engine_pass_stats(struct engine *e, double *out, size_t max, uint64_t *total);
/* Submissions committed since the start, and in how many transactions
 * (groups: concurrent submissions share one, engine_submit). */
void engine_submit_stats(struct engine *e, size_t *groups, size_t *submissions);
/* How many bursts of submissions waited to be placed together (engine.c). */
uint64_t engine_bursts(struct engine *e);
/* The spare folders (sched/engine/spare_folders.h): [0] a job's, [1] a stage's;
 * all 0 without a volume. */
struct engine_spare_stats {
	size_t ready[2], taken[2];
};
void engine_spare_stats(struct engine *e, struct engine_spare_stats *out);

/* What /metrics counts since the start: attempts ended by result (a failed
 * attempt that is retried counts as failed), and the scheduling passes'
 * durations as a histogram. */
enum engine_ended { ENDED_SUCCEEDED, ENDED_FAILED, ENDED_CANCELLED, ENDED_REQUEUED, ENDED_NKINDS };
#define ENGINE_PASS_BUCKETS 12
/* The buckets' upper bounds in seconds, as an initializer. */
#define ENGINE_PASS_BUCKET_S \
	{ 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2.5 }
struct engine_counters {
	uint64_t ended[ENDED_NKINDS];
	uint64_t passes;
	double pass_seconds;                       /* their sum */
	uint64_t pass_le[ENGINE_PASS_BUCKETS];     /* passes at most that long (cumulative) */
};
/* A copy of the counters (takes the lock). */
void engine_get_counters(struct engine *e, struct engine_counters *out);

/* Fair-share usage per team (fairshare_text). Malloc'ed. */
char *engine_fairshare_text(struct engine *e);
/* One team's fair-share usage now, in cpu-seconds (fairshare_usage). */
double engine_fairshare_usage(struct engine *e, const char *team);

/* ---- time and progress ---- */

struct schedules;
struct clock;

/* The time of every decision: the engine's clock (engine_config.clock). */
int64_t engine_now_ms(struct engine *e);
/* The recurring pipelines (sched/engine/schedules.h). */
struct schedules *engine_schedules(struct engine *e);
/* Free space on the volume and its reservations (sched/engine/space.h). */
struct space *engine_space(struct engine *e);

/* An instance's progress (POST /v1/instances/<id>/progress): done of total
 * (a percentage is done of 100). Reports for another attempt are ignored. */
int engine_progress(struct engine *e, int64_t id, int attempt, double done, double total,
		    char **err);

#endif
