/* The Slurm executor (executor_slurm.h). start writes DIR/assignment.json,
 * DIR/mount and DIR/wrapper.sh and queues the instance (id ""): a runner
 * killed now finds no slurm_batch in DIR, so nothing was handed to Slurm.
 * Within GATHER_MS the cycle's tick (slurm_submit.c) groups the queued starts
 * that can share an sbatch into job arrays, writes each batch's tag in its
 * members' DIR/slurm_batch before sbatch, and the array job id and task in
 * DIR/slurm_job after; reattach finds a job by the one, else by the other
 * (squeue's comment column). One `squeue --name=parsa-<runner>` per cycle
 * watches every job of this runner (slurm_poll.c); ended jobs' exit codes
 * come from the wrapper's exit file on the volume. Signals become one
 * batched scancel per cycle. */
#include "log.h"
#include "slurm_batch.h"
#include "slurm_internal.h"
#include "slurm_run.h"
#include "slurm_text.h"
#include "slurm_wrapper.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *path_in(const char *dir, const char *name)
{
	return xasprintf("%s/%s", dir, name);
}

int slurm_write_text(const char *dir, const char *name, const char *text, bool sync)
{
	char *path = path_in(dir, name), *tmp = xasprintf("%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	int rc = -1;

	if (f && fputs(text, f) >= 0 && fflush(f) == 0 && (!sync || fsync(fileno(f)) == 0)) {
		fclose(f);
		f = NULL;
		rc = rename(tmp, path);
	}
	if (f)
		fclose(f);
	if (rc < 0)
		unlink(tmp);
	free(path);
	free(tmp);
	return rc;
}

void slurm_rpc_counted(struct slurm_executor *se, const char *what, uint64_t *counter)
{
	(*counter)++;
	log_debug("slurm: %s (calls so far: sbatch %" PRIu64 ", squeue %" PRIu64 ", scancel %" PRIu64
		  ", scontrol %" PRIu64 ", sacct %" PRIu64 ")", what, se->counts.sbatch, se->counts.squeue,
		  se->counts.scancel, se->counts.scontrol, se->counts.sacct);
}

static struct executor_job *job_add(struct slurm_executor *se, const char *dir, const char *exit_path,
				    uint64_t job_id, long task, void *owner)
{
	struct executor_job *j = xcalloc(1, sizeof *j);

	j->se = se;
	j->owner = owner;
	j->dir = xstrdup(dir);
	j->exit_path = xstrdup(exit_path);
	j->job_id = job_id;
	j->task = task;
	if (job_id)
		slurm_format_ref(job_id, task, j->id, sizeof j->id);
	j->next = se->jobs;
	if (se->jobs)
		se->jobs->prev = j;
	se->jobs = j;
	return j;
}

static void slurm_release(struct executor_job *j);
static void slurm_forget(struct executor_job *j);

/* DIR and what start wrote there. */
static void remove_dir(const char *dir)
{
	static const char *const files[] = { "assignment.json", "mount", "wrapper.sh", "slurm_batch", "slurm_job",
					     "stop" };

	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char *path = path_in(dir, files[i]);

		unlink(path);
		free(path);
	}
	rmdir(dir);
}

void slurm_drop_submission(struct executor_job *j)
{
	slurm_argv_free(j->argv);
	free(j->script);
	json_decref(j->identity);
	free(j->key);
	j->argv = NULL;
	j->script = NULL;
	j->identity = NULL;
	j->key = NULL;
}

/* What must be equal for two starts to share an sbatch: its options and the
 * user it runs as, whatever else start may pass to sbatch one day. */
static char *key_of(char *const *argv, const json_t *identity)
{
	char *id = json_dumps(identity, JSON_COMPACT | JSON_SORT_KEYS), *key = xstrdup("");

	for (size_t i = 0; argv[i]; i++) {
		char *k = xasprintf("%s%s\x1f", key, argv[i]);

		free(key);
		key = k;
	}
	{
		char *k = xasprintf("%s\x1e%s", key, id ? id : "");

		free(key);
		key = k;
	}
	free(id);
	return key;
}

static struct executor_job *slurm_start(struct executor *e, const struct executor_start *req, void *owner,
					char **err)
{
	struct slurm_executor *se = slurm_of(e);
	struct assignment *a = assignment_from_json(req->assignment, err);
	struct executor_job *j = NULL;
	char *node_mount = slurm_map_path(req->mount, se->map_from, se->map_to);
	char *script = NULL, *exit_path = NULL, **argv = NULL, *why = NULL;
	struct slurm_submit s;
	size_t last;

	if (!a) {
		char *e2 = *err;

		*err = xasprintf("cannot start: %s", e2 ? e2 : "bad assignment");
		free(e2);
		goto out;
	}
	if (mkdir(req->dir, 0700) < 0 && errno != EEXIST) {
		errprintf(err, "cannot start: cannot create %s: %s", req->dir, strerror(errno));
		goto out;
	}
	script = slurm_wrapper_text(a, node_mount);
	exit_path = slurm_exit_path(req->mount, a);
	/* An exit file of an earlier runner's try of this attempt is not ours. */
	unlink(exit_path);
	{
		char *text = json_dumps(req->assignment, JSON_COMPACT);
		/* Not synced one by one (three fsyncs a start were most of a
		 * 1,000-instance fan-out's submit time): the one syncfs before
		 * the batch's sbatch makes them durable with its tag. Lost
		 * before that, DIR has no slurm_batch: never handed to Slurm. */
		int rc = slurm_write_text(req->dir, "assignment.json", text, false) < 0 ||
			 slurm_write_text(req->dir, "mount", req->mount, false) < 0 ? -1 :
			 slurm_write_text(req->dir, "wrapper.sh", script, false);

		free(text);
		if (rc < 0) {
			errprintf(err, "cannot start: cannot write in %s: %s", req->dir, strerror(errno));
			remove_dir(req->dir);
			goto out;
		}
	}
	s = (struct slurm_submit){
		.script = "/dev/stdin", .job_name = se->job_name, .cpus = (int)a->cpus,
		.mem_mb = (a->mem + (1 << 20) - 1) >> 20, .gpus = (int)a->gpus,
		/* Slurm's limit, in minutes rounded up; the instance table's own
		 * walltime kill stays behind it (slurm_text.h). */
		.walltime_s = (int64_t)a->walltime_s,
		/* The stage's slurm.* keys over the runner's options. */
		.partition = a->slurm.partition ? a->slurm.partition : se->partition,
		.account = a->slurm.account ? a->slurm.account : se->account,
		.qos = a->slurm.qos ? a->slurm.qos : se->qos,
		/* The wrapper appends to the instance's log itself: Slurm's
		 * --output would truncate a retry's log, and opens it on the node
		 * before the wrapper could say why it could not. */
		.log_path = "/dev/null", .chdir = "/tmp", .allow_requeue = se->allow_requeue,
	};
	argv = slurm_sbatch_argv(&s, &why);
	if (!argv) {
		errprintf(err, "cannot start: %s", why);
		goto out;
	}
	/* Without a script argument sbatch reads stdin: a user cannot open
	 * /dev/stdin once the uid changed (its /proc/self is not theirs). The
	 * batch's --array and --comment take its place (slurm_submit.c). */
	for (last = 0; argv[last + 1]; last++)
		;
	free(argv[last]);
	argv[last] = NULL;
	j = job_add(se, req->dir, exit_path, 0, -1, owner);
	j->partition = s.partition ? xstrdup(s.partition) : NULL;
	j->key = key_of(argv, req->identity);
	j->argv = argv;
	j->script = script;
	j->identity = json_incref(req->identity);
	argv = NULL;
	script = NULL;
	/* Submitted by the tick, with the other starts of this moment
	 * (executor.h: a start may queue). */
	if (!se->submit_at_ms)
		se->submit_at_ms = time_mono_ms() + GATHER_MS;
out:
	json_decref(req->identity);
	slurm_argv_free(argv);
	assignment_destroy(a);
	free(node_mount);
	free(script);
	free(exit_path);
	free(why);
	return j;
}

static struct executor_job *slurm_reattach(struct executor *e, const char *dir, void *owner,
					   json_t **assignment, struct exec_status *st, char **err)
{
	struct slurm_executor *se = slurm_of(e);
	char *path = path_in(dir, "assignment.json"), *idtext = NULL, *mount = NULL, *exit_path = NULL;
	struct executor_job *j = NULL;
	struct assignment *a = NULL;
	char *batch = NULL;
	json_error_t jerr;
	uint64_t job_id = 0;
	long task = -1;
	json_t *json;

	memset(st, 0, sizeof *st);
	json = json_load_file(path, 0, &jerr);
	free(path);
	path = path_in(dir, "slurm_job");
	idtext = read_file(path, 64, NULL);
	if (json && !idtext) {
		/* Killed between sbatch and recording the job id? The batch's
		 * tag, written before sbatch, finds the array in squeue. */
		char tag[96];
		long t = -1;

		free(path);
		path = path_in(dir, "slurm_batch");
		batch = read_file(path, 256, NULL);
		if (batch && sscanf(batch, "%95s %ld", tag, &t) == 2 &&
		    (job_id = slurm_find_tagged(se, tag, false)) > 0) {
			char ref[48];

			slurm_format_ref(job_id, t, ref, sizeof ref);
			log_info("%s: slurm job %s was submitted by a runner that stopped before it recorded it",
				 dir, ref);
			idtext = xasprintf("%s\n", ref);
			if (slurm_write_text(dir, "slurm_job", idtext, false) < 0)
				log_warn("cannot record slurm job %s in %s", ref, dir);
		}
	}
	if (!json || !idtext || slurm_parse_ref(idtext, &job_id, &task) < 0) {
		errno = ENOENT;
		errprintf(err, "%s holds no Slurm job (%s)", dir, batch ? "its batch is not in squeue" :
			  "it was never handed to Slurm");
		goto out;
	}
	a = assignment_from_json(json, err);
	free(path);
	path = path_in(dir, "mount");
	mount = read_file(path, 4096, NULL);
	if (!a || !mount) {
		if (a)
			errprintf(err, "%s holds no mount", dir);
		errno = ENOENT;
		goto out;
	}
	exit_path = slurm_exit_path(mount, a);
	j = job_add(se, dir, exit_path, job_id, task, owner);
	j->partition = a->slurm.partition ? xstrdup(a->slurm.partition) : se->partition ? xstrdup(se->partition) : NULL;
	free(path);
	path = path_in(dir, "stop");
	j->stop = read_file(path, 4096, NULL);
	/* Where it is, the next squeue says. */
	st->state = EXEC_STARTING;
	*assignment = json_incref(json);
	se->interval_ms = FAST_INTERVAL_MS;
	se->next_query_ms = time_mono_ms();
out:
	json_decref(json);
	assignment_destroy(a);
	free(path);
	free(idtext);
	free(batch);
	free(mount);
	free(exit_path);
	return j;
}

static const char *slurm_id(const struct executor_job *j)
{
	return j->id;
}

static int slurm_signal(struct executor_job *j, int sig)
{
	(void)sig;
	if (j->ended) {
		errno = ESRCH;
		return -1;
	}
	/* Whatever the signal, the runner only signals to stop: one scancel
	 * at the next cycle (Slurm sends SIGTERM, then SIGKILL after KillWait). */
	j->cancel = true;
	j->se->next_query_ms = time_mono_ms();
	return 0;
}

static void slurm_set_stop(struct executor_job *j, const char *reason)
{
	if (j->stop)
		return;
	j->stop = xstrdup(reason);
	if (slurm_write_text(j->dir, "stop", reason, true) < 0)
		log_warn("cannot write %s/stop", j->dir);
}

static const char *slurm_stop_reason(const struct executor_job *j)
{
	return j->stop;
}

static void slurm_forget(struct executor_job *j)
{
	remove_dir(j->dir);
	/* The exit file is the job's, on its volume: not left among its outputs. */
	unlink(j->exit_path);
}

static void slurm_release(struct executor_job *j)
{
	if (!j)
		return;
	if (j->prev)
		j->prev->next = j->next;
	else
		j->se->jobs = j->next;
	if (j->next)
		j->next->prev = j->prev;
	slurm_leave_batch(j);
	slurm_drop_submission(j);
	free(j->dir);
	free(j->exit_path);
	free(j->partition);
	free(j->stop);
	free(j);
}

static void slurm_destroy(struct executor *e)
{
	struct slurm_executor *se = slurm_of(e);

	while (se->jobs)
		slurm_release(se->jobs);
	slurm_batches_free(se);
	free(se->tags_text);
	log_info("slurm: %" PRIu64 " sbatch, %" PRIu64 " squeue, %" PRIu64 " scancel, %" PRIu64
		 " scontrol and %" PRIu64 " sacct calls made", se->counts.sbatch, se->counts.squeue,
		 se->counts.scancel, se->counts.scontrol, se->counts.sacct);
	free(se->runner);
	free(se->job_name);
	free(se->partition);
	free(se->account);
	free(se->qos);
	free(se->map_from);
	free(se->map_to);
	free(se->poll_error);
	free(se->default_partition);
	free(se);
}

static void slurm_facts(const struct executor *e, struct executor_facts *f)
{
	const struct slurm_executor *se = (const struct slurm_executor *)e;

	*f = (struct executor_facts){ .partition = se->partition, .last_poll_ms = se->last_poll_ms,
				      .poll_error = se->poll_error, .cpus_outside = se->outside_cpus,
				      .outside_at_ms = se->outside_at_ms,
				      .accounting = se->accounting < 0 ? NULL : se->accounting ? "on" : "off" };
	for (const struct executor_job *j = se->jobs; j; j = j->next) {
		/* An end waiting for sacct has left Slurm's queue. */
		if (j->ended || j->end_due || !j->job_id)
			continue;
		if (j->running)
			f->running++;
		else
			f->pending++;
	}
}

/* Slurm's --time is whole minutes (rounded up) and slurmctld looks at time
 * limits every 30 s, then gives KillWait: parsa's kill comes a while after,
 * for a job Slurm failed to stop. */
#define WALLTIME_BACKSTOP_MS 90000

static int64_t slurm_walltime_ms(const struct executor *e, uint64_t walltime_s)
{
	(void)e;
	return (int64_t)(walltime_s + 59) / 60 * 60000 + WALLTIME_BACKSTOP_MS;
}

/* The node cannot write the runner's progress folder: the instance's file
 * is on the job's volume, beside its exit file, and read from there. */
static char *slurm_progress_file(const struct executor *e, const char *mount, const struct assignment *a)
{
	(void)e;
	return slurm_progress_path(mount, a);
}

static const struct executor_ops slurm_ops = {
	.name = "slurm",
	.id_label = "slurm job",
	.destroy = slurm_destroy,
	.start = slurm_start,
	.reattach = slurm_reattach,
	.id = slurm_id,
	.signal = slurm_signal,
	.set_stop = slurm_set_stop,
	.stop_reason = slurm_stop_reason,
	.tick = slurm_poll_tick,
	.facts = slurm_facts,
	.walltime_ms = slurm_walltime_ms,
	.progress_file = slurm_progress_file,
	.forget = slurm_forget,
	.release = slurm_release,
};

static char *dup_or_null(const char *s)
{
	return s && *s ? xstrdup(s) : NULL;
}

struct executor *executor_slurm_create(const struct executor_slurm_config *cfg, char **err)
{
	struct slurm_executor *se;

	if (!cfg->runner || !proto_safe_name(cfg->runner)) {
		errno = EINVAL;
		errprintf(err, "the Slurm executor needs the runner's name");
		return NULL;
	}
	se = xcalloc(1, sizeof *se);
	se->base.ops = &slurm_ops;
	se->runner = xstrdup(cfg->runner);
	se->job_name = xasprintf("parsa-%s", cfg->runner);
	se->partition = dup_or_null(cfg->partition);
	se->account = dup_or_null(cfg->account);
	se->qos = dup_or_null(cfg->qos);
	se->map_from = dup_or_null(cfg->map_from);
	se->map_to = dup_or_null(cfg->map_to);
	se->lost_grace_ms = cfg->lost_grace_ms > 0 ? cfg->lost_grace_ms : 60000;
	se->allow_requeue = cfg->allow_requeue;
	se->max_interval_ms = cfg->max_interval_ms >= FAST_INTERVAL_MS ? cfg->max_interval_ms : 10000;
	se->interval_ms = FAST_INTERVAL_MS;
	se->max_array = cfg->max_array > 0 ? cfg->max_array : 0;
	se->room_cap = -1;
	se->outside_cpus = -1;
	se->accounting = -1;
	return &se->base;
}

void executor_slurm_default_partition(struct executor *e, const char *name)
{
	struct slurm_executor *se = slurm_of(e);

	if (!name || (se->default_partition && strcmp(se->default_partition, name) == 0))
		return;
	free(se->default_partition);
	se->default_partition = xstrdup(name);
}

void executor_slurm_look_now(struct executor *e)
{
	slurm_of(e)->next_query_ms = 0;
}

void executor_slurm_counts(const struct executor *e, struct slurm_rpc_counts *c)
{
	*c = ((const struct slurm_executor *)e)->counts;
}
