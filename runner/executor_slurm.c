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
#include "executor_slurm.h"
#include "log.h"
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

#define CMD_TIMEOUT_MS 30000
/* At MaxJobCount sbatch itself sleeps and retries for ever: stopped after
 * this, the start waits and is tried again (looked for by its tag first). */
#define SBATCH_TIMEOUT_MS 10000
/* sbatch time the main loop spends between two ticks before further starts
 * wait for the next one: a fan-out of hundreds must not hold the heartbeat
 * back past the lease (sbatch takes 30 ms idle, much more under load). */
#define SBATCH_BUDGET_MS 1000
#define FAST_INTERVAL_MS 1000
#define RETRY_FIRST_MS 5000      /* a start Slurm refused for now, tried again after */
#define RETRY_MAX_MS 60000

struct slurm_executor {
	struct executor base;      /* first: the executor's header */
	char *runner, *job_name, *partition, *account, *qos, *map_from, *map_to;
	int64_t lost_grace_ms, max_interval_ms;
	int64_t interval_ms, next_query_ms;
	struct slurm_rpc_counts counts;
	int64_t sbatch_spent_ms;   /* in sbatch since the last tick */
	struct executor_job *jobs;
};

struct executor_job {
	struct slurm_executor *se;
	void *owner;
	char *dir;
	char *exit_path;           /* as the runner sees it */
	char id[32];               /* the Slurm job id; "" while the start is queued */
	uint64_t job_id;           /* 0 while queued: sbatch refused it for now */
	bool ended, running, cancel;
	/* What a queued start submits when it is tried again. */
	char **argv;
	char *script;
	json_t *identity;
	int64_t retry_at_ms, retry_ms;
	int64_t gone_since_ms;     /* monotonic: first squeue without it; 0 */
	int64_t ended_wait_ms;     /* monotonic: squeue says ended, no exit file yet; 0 */
	char *stop;
	struct executor_job *prev, *next;
};

static struct slurm_executor *slurm_of(struct executor *e)
{
	return (struct slurm_executor *)e;
}

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

static void rpc_counted(struct slurm_executor *se, const char *what, uint64_t *counter)
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

	rpc_counted(se, "squeue for a tag", &se->counts.squeue);
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

/* Forget what a queued start kept for its retries. */
static void drop_submission(struct executor_job *j)
{
	slurm_argv_free(j->argv);
	free(j->script);
	json_decref(j->identity);
	j->argv = NULL;
	j->script = NULL;
	j->identity = NULL;
}

/* One sbatch of j's wrapper as its user; on success the id is recorded in
 * DIR. A retry first looks for the job by its tag: an sbatch killed by the
 * timeout may have been taken all the same. -1 with *err and *retry (Slurm
 * busy or at a submit limit: try again later). */
static int submit(struct executor_job *j, bool *retry, char **err)
{
	struct slurm_executor *se = j->se;
	struct slurm_run_result res = { 0 };
	uint64_t job_id = j->retry_ms ? find_tagged(se, j->dir) : 0;
	char *why = NULL, idtext[32];
	int64_t t0 = time_mono_ms();
	int rc = -1, ran;

	*retry = false;
	if (!job_id) {
		rpc_counted(se, "sbatch", &se->counts.sbatch);
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
	drop_submission(j);
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
		.partition = se->partition, .account = se->account, .qos = se->qos,
		/* The wrapper appends to the instance's log itself: Slurm's
		 * --output would truncate a retry's log, and opens it on the node
		 * before the wrapper could say why it could not. */
		.log_path = "/dev/null", .chdir = "/tmp",
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
	} else if (submit(j, &retry, &why) < 0) {
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

/* Report the end of j: the exit file's code, else what Slurm said (v), else
 * lost. */
static void report_end(struct executor_job *j, const struct slurm_verdict *v, int64_t now_ms)
{
	struct exec_status st = { .state = EXEC_EXITED, .ended_ms = time_now_ms(), .cpu_ms = -1, .max_rss = -1 };
	char *text = read_file(j->exit_path, 128, NULL);
	int64_t t0, t1;
	int code;

	if (text && slurm_exit_parse(text, &code, &t0, &t1) == 0) {
		st.exit_code = code;
		/* The node's times: a job that began and ended between two
		 * squeues was never seen running. */
		if (t0 > 0) {
			st.started_ms = t0;
			st.ended_ms = t1;
		}
	} else if (v && v->outcome == SLURM_FAILED) {
		/* Cancelled, killed or timed out before the wrapper could say. */
		st.signal = SIGTERM;
		st.reason = xasprintf("slurm job %s: %s", j->id, v->why);
	} else {
		st.signal = SIGKILL;
		st.reason = v ? xasprintf("lost: slurm job %s: %s, and no exit code", j->id, v->why) :
			    xasprintf("lost: slurm job %s is gone from squeue and left no exit code", j->id);
	}
	free(text);
	j->ended = true;
	log_debug("slurm job %s ended: exit %d signal %d%s%s", j->id, st.exit_code, st.signal,
		  st.reason ? ", " : "", st.reason ? st.reason : "");
	executor_report(&j->se->base, j->owner, &st, now_ms);
	exec_status_clear(&st);
}

/* One scancel for every job a signal was asked for since the last cycle. */
static void flush_cancels(struct slurm_executor *se)
{
	char **argv = NULL;
	size_t n = 0;
	struct slurm_run_result res = { 0 };
	char *why = NULL;

	for (struct executor_job *j = se->jobs; j; j = j->next) {
		if (!j->cancel || j->ended || !j->job_id)
			continue;
		argv = xrealloc(argv, (n + 3) * sizeof *argv);
		if (n == 0)
			argv[n++] = xstrdup("scancel");
		argv[n++] = xstrdup(j->id);
		j->cancel = false;
	}
	if (n == 0)
		return;
	argv[n] = NULL;
	rpc_counted(se, "scancel", &se->counts.scancel);
	if (slurm_run(argv, NULL, NULL, CMD_TIMEOUT_MS, &res, &why) < 0)
		log_warnx("scancel: %s", why);
	else if (res.status != 0)
		log_warnx("scancel (status %d): %s", res.status, res.err);
	slurm_run_result_clear(&res);
	free(why);
	slurm_argv_free(argv);
}

/* One squeue for all of this runner's jobs; NULL (logged) when it failed. */
static struct slurm_job *query(struct slurm_executor *se, size_t *n)
{
	char *name = xasprintf("--name=%s", se->job_name);
	char *argv[] = { "squeue", "--noheader", "-t", "all", name, "-o", SLURM_SQUEUE_FORMAT, NULL };
	struct slurm_run_result res = { 0 };
	struct slurm_job *jobs = NULL;
	char *why = NULL;
	int ok = 0;

	*n = 0;
	rpc_counted(se, "squeue", &se->counts.squeue);
	if (slurm_run(argv, NULL, NULL, CMD_TIMEOUT_MS, &res, &why) < 0)
		log_warnx("squeue: %s", why);
	else if (res.status != 0)
		log_warnx("squeue (status %d): %s", res.status, res.err);
	else if (slurm_parse_jobs(res.out, false, &jobs, n, &why) < 0)
		log_warnx("squeue's answer: %s", why);
	else
		ok = 1;
	if (!ok) {
		free(jobs);
		jobs = NULL;
		*n = 0;
	}
	slurm_run_result_clear(&res);
	free(why);
	free(name);
	return ok ? (jobs ? jobs : xcalloc(1, sizeof *jobs)) : NULL;
}

/* What the cycle's answer says of j; true when something changed. */
static bool look_at(struct executor_job *j, const struct slurm_job *jobs, size_t n, int64_t now_ms)
{
	struct slurm_executor *se = j->se;
	const struct slurm_job *rec = NULL;
	struct slurm_verdict v;

	for (size_t i = 0; i < n && !rec; i++)
		if (jobs[i].job_id == j->job_id)
			rec = &jobs[i];
	if (!rec) {
		/* Gone (past MinJobAge): the exit file says how it ended. */
		char *text = read_file(j->exit_path, 128, NULL);
		int64_t t0, t1;
		int code;
		bool have = text && slurm_exit_parse(text, &code, &t0, &t1) == 0;

		free(text);
		if (!j->gone_since_ms)
			j->gone_since_ms = now_ms;
		if (have || now_ms - j->gone_since_ms >= se->lost_grace_ms) {
			report_end(j, NULL, now_ms);
			return true;
		}
		return false;
	}
	j->gone_since_ms = 0;
	if (slurm_job_verdict(rec, &v) < 0) {
		log_warnx("slurm job %s: %s", j->id, v.why);
		return false;
	}
	switch (v.outcome) {
	case SLURM_QUEUED:
		return false;
	case SLURM_RUNNING:
		if (!j->running) {
			struct exec_status st = { .state = EXEC_RUNNING, .started_ms = time_now_ms() };

			j->running = true;
			log_debug("slurm job %s runs on %s", j->id, rec->nodes);
			executor_report(&se->base, j->owner, &st, now_ms);
			return true;
		}
		return false;
	default:
		break;
	}
	/* Ended. The wrapper wrote its exit file before it ended; give a
	 * volume that shows it late the grace time. */
	if (v.outcome == SLURM_SUCCEEDED && access(j->exit_path, F_OK) < 0) {
		if (!j->ended_wait_ms)
			j->ended_wait_ms = now_ms;
		if (now_ms - j->ended_wait_ms < se->lost_grace_ms)
			return false;
	}
	report_end(j, &v, now_ms);
	return true;
}

/* Queued starts: dropped when stopped, else submitted again when due.
 * Returns the earliest retry still waiting (-1 none). */
static int64_t retry_starts(struct slurm_executor *se, int64_t now_ms)
{
	int64_t next = -1;

	for (struct executor_job *j = se->jobs, *nx; j; j = nx) {
		struct exec_status st = { .cpu_ms = -1, .max_rss = -1 };
		bool retry = false;
		char *why = NULL;

		nx = j->next;
		if (j->ended || j->job_id)
			continue;
		if (j->cancel) {
			st.state = EXEC_EXITED;
			st.signal = SIGTERM;
			st.reason = xstrdup("stopped before Slurm took it");
		} else if (now_ms < j->retry_at_ms || se->sbatch_spent_ms >= SBATCH_BUDGET_MS) {
			int64_t due = now_ms < j->retry_at_ms ? j->retry_at_ms : now_ms;

			next = next < 0 || due < next ? due : next;
			continue;
		} else if (submit(j, &retry, &why) == 0) {
			if (j->retry_ms)
				log_info("slurm job %s: submitted on a later try", j->id);
			continue;
		} else if (retry) {
			j->retry_ms = j->retry_ms ? j->retry_ms * 2 : RETRY_FIRST_MS;
			if (j->retry_ms > RETRY_MAX_MS)
				j->retry_ms = RETRY_MAX_MS;
			j->retry_at_ms = now_ms + j->retry_ms;
			log_warnx("%s; trying again in %" PRId64 " s", why, j->retry_ms / 1000);
			free(why);
			next = next < 0 || j->retry_at_ms < next ? j->retry_at_ms : next;
			continue;
		} else {
			st.state = EXEC_FAILED;
			st.reason = xasprintf("cannot start: %s", why);
		}
		free(why);
		j->ended = true;
		drop_submission(j);
		executor_report(&se->base, j->owner, &st, now_ms);
		exec_status_clear(&st);
	}
	return next;
}

static int64_t slurm_tick(struct executor *e, int64_t now_ms)
{
	struct slurm_executor *se = slurm_of(e);
	struct slurm_job *jobs;
	bool watching = false, waiting = false, changed = false;
	int64_t next;
	size_t n;

	se->sbatch_spent_ms = 0;
	next = retry_starts(se, now_ms);

	for (struct executor_job *j = se->jobs; j; j = j->next)
		watching |= !j->ended && j->job_id;
	if (!watching)
		return next;
	if (now_ms < se->next_query_ms)
		return next >= 0 && next < se->next_query_ms ? next : se->next_query_ms;
	flush_cancels(se);
	jobs = query(se, &n);
	if (jobs) {
		for (struct executor_job *j = se->jobs, *nx; j; j = nx) {
			nx = j->next;
			if (j->ended || !j->job_id)
				continue;
			changed |= look_at(j, jobs, n, now_ms);
			waiting |= !j->ended && (!j->running || j->gone_since_ms || j->ended_wait_ms);
		}
		free(jobs);
	}
	/* Quick while something waits to start or end, or just changed;
	 * slower while all run, to spare slurmctld. */
	if (waiting || changed || !jobs)
		se->interval_ms = FAST_INTERVAL_MS;
	else if ((se->interval_ms *= 2) > se->max_interval_ms)
		se->interval_ms = se->max_interval_ms;
	se->next_query_ms = now_ms + se->interval_ms;
	return next >= 0 && next < se->next_query_ms ? next : se->next_query_ms;
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
	drop_submission(j);
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
	free(se);
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
	.tick = slurm_tick,
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
	se->max_interval_ms = cfg->max_interval_ms >= FAST_INTERVAL_MS ? cfg->max_interval_ms : 10000;
	se->interval_ms = FAST_INTERVAL_MS;
	return &se->base;
}

void executor_slurm_counts(const struct executor *e, struct slurm_rpc_counts *c)
{
	*c = ((const struct slurm_executor *)e)->counts;
}
