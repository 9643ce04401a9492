/* The Slurm executor (executor_slurm.h). start writes DIR/assignment.json and
 * DIR/wrapper.sh, submits the wrapper with sbatch as the instance's user (the
 * script on stdin, so that the user needs no access to the runner's state
 * folder; tagged --comment=parsa:<DIR's name>) and records the job id in
 * DIR/slurm_job before it returns. A start Slurm refuses for now, or one past
 * the cycle's sbatch budget, waits in the executor (id "") and tick submits
 * it. tick runs one `squeue --name=parsa-<runner>` for every job of this
 * runner, every second while a job waits to start or something changed,
 * backing off to max_interval_ms while all run; ended jobs' exit codes come
 * from the wrapper's exit file on the volume. Signals become one batched
 * scancel per cycle. */
#include "log.h"
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

static int write_text(const char *dir, const char *name, const char *text)
{
	char *path = path_in(dir, name), *tmp = xasprintf("%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	int rc = -1;

	if (f && fputs(text, f) >= 0 && fflush(f) == 0 && fsync(fileno(f)) == 0) {
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
	log_debug("slurm: %s (calls so far: sbatch %" PRIu64 ", squeue %" PRIu64 ", scancel %" PRIu64 ")", what,
		  se->counts.sbatch, se->counts.squeue, se->counts.scancel);
}

static struct executor_job *job_add(struct slurm_executor *se, const char *dir, const char *exit_path,
				    uint64_t job_id, void *owner)
{
	struct executor_job *j = xcalloc(1, sizeof *j);

	j->se = se;
	j->owner = owner;
	j->dir = xstrdup(dir);
	j->exit_path = xstrdup(exit_path);
	j->job_id = job_id;
	if (job_id)
		snprintf(j->id, sizeof j->id, "%" PRIu64, job_id);
	j->next = se->jobs;
	if (se->jobs)
		se->jobs->prev = j;
	se->jobs = j;
	return j;
}

/* The instance's tag in Slurm: parsa:<id>.<attempt>, DIR's own name. */
static char *tag_of(const char *dir)
{
	const char *base = strrchr(dir, '/');
	static char tag[96];

	snprintf(tag, sizeof tag, "parsa:%s", base ? base + 1 : dir);
	return tag;
}

/* The job of DIR's instance when sbatch took it but the runner did not live
 * to record its id: squeue's comment column. 0 when none is there. */
static uint64_t find_tagged(struct slurm_executor *se, const char *dir)
{
	char *name = xasprintf("--name=%s", se->job_name);
	char *argv[] = { "squeue", "--noheader", "-t", "all", name, "-o", "%A|%k", NULL };
	struct slurm_run_result res = { 0 };
	const char *tag = tag_of(dir);
	uint64_t found = 0;
	char *why = NULL;

	slurm_rpc_counted(se, "squeue for a tag", &se->counts.squeue);
	if (slurm_run(argv, NULL, NULL, CMD_TIMEOUT_MS, &res, &why) < 0 || res.status != 0) {
		log_warnx("squeue: %s", why ? why : res.err);
	} else {
		for (char *line = res.out, *next, *bar; line && *line; line = next) {
			next = strchr(line, '\n');
			if (next)
				*next++ = '\0';
			bar = strchr(line, '|');
			if (bar && strcmp(bar + 1, tag) == 0) {
				*bar = '\0';
				found = strtoull(line, NULL, 10);
			}
		}
	}
	slurm_run_result_clear(&res);
	free(why);
	free(name);
	return found;
}

static void slurm_release(struct executor_job *j);
static void slurm_forget(struct executor_job *j);

/* DIR and what start wrote there. */
static void remove_dir(const char *dir)
{
	static const char *const files[] = { "assignment.json", "mount", "wrapper.sh", "slurm_job", "stop" };

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
	j->argv = NULL;
	j->script = NULL;
	j->identity = NULL;
}

int slurm_submit_job(struct executor_job *j, bool *retry, char **err)
{
	struct slurm_executor *se = j->se;
	struct slurm_run_result res = { 0 };
	uint64_t job_id = j->retry_ms ? find_tagged(se, j->dir) : 0;
	char *why = NULL, idtext[32];
	int64_t t0 = time_mono_ms();
	int rc = -1, ran;

	*retry = false;
	if (!job_id) {
		slurm_rpc_counted(se, "sbatch", &se->counts.sbatch);
		ran = slurm_run(j->argv, j->script, j->identity, SBATCH_TIMEOUT_MS, &res, &why);
		se->sbatch_spent_ms += time_mono_ms() - t0;
		if (ran < 0) {
			errprintf(err, "sbatch: %s", why);
			goto out;
		}
		if (res.status != 0 || slurm_parse_sbatch_id(res.out, &job_id) < 0) {
			char *text = squeeze_blanks(res.err[0] ? res.err : res.out);
			enum slurm_refusal r = slurm_sbatch_refusal(res.err);
			size_t len = strlen(text);

			/* Its lines as one: the log's and the status's reason. */
			for (char *c = text; *c; c++)
				if (*c == '\n')
					*c = ' ';
			while (len > 0 && text[len - 1] == ' ')
				text[--len] = '\0';

			*retry = r == SLURM_REFUSED_BUSY || r == SLURM_REFUSED_LIMIT || res.status > 128;
			/* slurm_run's child says 126 when it could not become the
			 * user, 127 when there is no sbatch to exec. */
			if (!*text && (res.status == 126 || res.status == 127))
				errprintf(err, "sbatch did not run: %s", res.status == 126 ?
					  "cannot switch to the instance's user" : "no sbatch in the runner's PATH");
			else
				errprintf(err, "sbatch refused it (status %d): %s", res.status, text);
			free(text);
			goto out;
		}
	}
	j->job_id = job_id;
	snprintf(j->id, sizeof j->id, "%" PRIu64, job_id);
	snprintf(idtext, sizeof idtext, "%" PRIu64 "\n", job_id);
	if (write_text(j->dir, "slurm_job", idtext) < 0)
		/* It runs; a runner restarted now finds it by its tag. */
		log_warn("slurm job %" PRIu64 ": cannot record it in %s", job_id, j->dir);
	slurm_drop_submission(j);
	/* Something waits: look soon. */
	se->interval_ms = FAST_INTERVAL_MS;
	if (se->next_query_ms == 0 || se->next_query_ms > time_mono_ms() + FAST_INTERVAL_MS)
		se->next_query_ms = time_mono_ms() + FAST_INTERVAL_MS;
	rc = 0;
out:
	slurm_run_result_clear(&res);
	free(why);
	return rc;
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
	bool retry = false;

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
		int rc = write_text(req->dir, "assignment.json", text) < 0 ||
			 write_text(req->dir, "mount", req->mount) < 0 ? -1 :
			 write_text(req->dir, "wrapper.sh", script);

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
	 * /dev/stdin once the uid changed (its /proc/self is not theirs). In
	 * its place the instance's tag, by which a runner killed before it
	 * recorded the job id finds the job (find_tagged). */
	for (size_t i = 0; argv[i]; i++) {
		if (!argv[i + 1] && strcmp(argv[i], s.script) == 0) {
			free(argv[i]);
			argv[i] = xasprintf("--comment=%s", tag_of(req->dir));
			break;
		}
	}
	j = job_add(se, req->dir, exit_path, 0, owner);
	j->argv = argv;
	j->script = script;
	j->identity = json_incref(req->identity);
	argv = NULL;
	script = NULL;
	if (se->sbatch_spent_ms >= SBATCH_BUDGET_MS) {
		/* Submitted at the next tick, at once (executor.h: a start may queue). */
		log_debug("%s: queued for the next cycle's sbatch calls", req->dir);
	} else if (slurm_submit_job(j, &retry, &why) < 0) {
		if (!retry) {
			errprintf(err, "cannot start: %s", why);
			/* Nothing in Slurm: nothing for a next runner to find. */
			slurm_forget(j);
			slurm_release(j);
			j = NULL;
			errno = EINVAL;
			goto out;
		}
		/* Slurm is busy or at a limit: the start waits (executor.h). */
		log_warnx("%s; trying again in %d s", why, RETRY_FIRST_MS / 1000);
		j->retry_ms = RETRY_FIRST_MS;
		j->retry_at_ms = time_mono_ms() + j->retry_ms;
	}
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
	json_error_t jerr;
	uint64_t job_id = 0;
	json_t *json;

	memset(st, 0, sizeof *st);
	json = json_load_file(path, 0, &jerr);
	free(path);
	path = path_in(dir, "slurm_job");
	idtext = read_file(path, 64, NULL);
	if (json && !idtext && (job_id = find_tagged(se, dir)) > 0) {
		log_info("%s: slurm job %" PRIu64 " was submitted by a runner that stopped before it "
			 "recorded it", dir, job_id);
		idtext = xasprintf("%" PRIu64 "\n", job_id);
		if (write_text(dir, "slurm_job", idtext) < 0)
			log_warn("cannot record slurm job %" PRIu64 " in %s", job_id, dir);
	}
	if (!json || !idtext || slurm_parse_sbatch_id(idtext, &job_id) < 0 || job_id == 0) {
		errno = ENOENT;
		errprintf(err, "%s holds no Slurm job", dir);
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
	j = job_add(se, dir, exit_path, job_id, owner);
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
	if (write_text(j->dir, "stop", reason) < 0)
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
	slurm_drop_submission(j);
	free(j->dir);
	free(j->exit_path);
	free(j->stop);
	free(j);
}

static void slurm_destroy(struct executor *e)
{
	struct slurm_executor *se = slurm_of(e);

	while (se->jobs)
		slurm_release(se->jobs);
	log_info("slurm: %" PRIu64 " sbatch, %" PRIu64 " squeue and %" PRIu64 " scancel calls made",
		 se->counts.sbatch, se->counts.squeue, se->counts.scancel);
	free(se->runner);
	free(se->job_name);
	free(se->partition);
	free(se->account);
	free(se->qos);
	free(se->map_from);
	free(se->map_to);
	free(se->poll_error);
	free(se);
}

static void slurm_facts(const struct executor *e, struct executor_facts *f)
{
	const struct slurm_executor *se = (const struct slurm_executor *)e;

	*f = (struct executor_facts){ .partition = se->partition, .last_poll_ms = se->last_poll_ms,
				      .poll_error = se->poll_error };
	for (const struct executor_job *j = se->jobs; j; j = j->next) {
		if (j->ended || !j->job_id)
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
	return &se->base;
}

void executor_slurm_counts(const struct executor *e, struct slurm_rpc_counts *c)
{
	*c = ((const struct slurm_executor *)e)->counts;
}
