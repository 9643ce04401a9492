/* The Slurm executor's poll cycle (slurm_internal.h): queued starts are
 * submitted when due (slurm_submit.c), the signals asked for since the last
 * cycle go as one scancel ("123_4" for an array task), and one squeue for
 * every job of this runner, array tasks included, tells what changed; an
 * ended job's exit code comes from the wrapper's exit file. */
#include "log.h"
#include "slurm_acct.h"
#include "slurm_batch.h"
#include "slurm_internal.h"
#include "slurm_run.h"
#include "slurm_text.h"
#include "slurm_wrapper.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "cancelled in Slurm by uid 1001" with the user's name, where it has one;
 * *state: accounting's end state, "CANCELLED by alice" (malloc'ed). */
static void name_canceller(struct slurm_verdict *v, const struct slurm_acct *acct, char **state)
{
	struct passwd pw, *found = NULL;
	char buf[1024];
	long uid = acct->cancel_uid;

	if (uid >= 0 && getpwuid_r((uid_t)uid, &pw, buf, sizeof buf, &found) == 0 && found) {
		if (strncmp(v->why, "cancelled in Slurm by uid", 25) == 0)
			snprintf(v->why, sizeof v->why, "cancelled in Slurm by %s (uid %ld)", found->pw_name, uid);
		*state = xasprintf("%s by %s", acct->state, found->pw_name);
	} else if (uid >= 0) {
		*state = xasprintf("%s by uid %ld", acct->state, uid);
	} else {
		*state = xstrdup(acct->state);
	}
}

/* Report the end of j: the exit file's code, else what Slurm said (v), else
 * lost; with what accounting says (acct; NULL none): its CPU time, its peak
 * memory, and its end state with who cancelled (sacct also knows a job gone
 * from squeue). */
static void report_end(struct executor_job *j, const struct slurm_verdict *v, const struct slurm_acct *acct,
		       int64_t now_ms)
{
	struct exec_status st = { .state = EXEC_EXITED, .ended_ms = time_now_ms(), .cpu_ms = -1, .max_rss = -1 };
	char *text = read_file(j->exit_path, 128, NULL);
	struct slurm_verdict av;
	int64_t t0, t1;
	int code = 0;
	bool have = text && slurm_exit_parse(text, &code, &t0, &t1) == 0;

	/* The node's times: a job that began and ended between two squeues
	 * was never seen running. */
	if (have && t0 > 0) {
		st.started_ms = t0;
		st.ended_ms = t1;
	}
	if (acct) {
		struct slurm_job rec = { .cancel_uid = acct->cancel_uid, .has_exit = acct->has_exit,
					 .exit_code = acct->exit_code, .exit_signal = acct->exit_signal };

		st.cpu_ms = acct->cpu_ms;
		st.max_rss = acct->max_rss;
		snprintf(rec.state, sizeof rec.state, "%s", acct->state);
		if (slurm_acct_final(acct) && slurm_job_verdict(&rec, &av) == 0) {
			name_canceller(&av, acct, &st.batch_state);
			v = &av;
		}
	}
	slurm_end_status(j->id, v, have, code, &st.exit_code, &st.signal, &st.reason);
	free(text);
	j->ended = true;
	j->end_due = false;
	log_debug("slurm job %s ended: exit %d signal %d%s%s", j->id, st.exit_code, st.signal,
		  st.reason ? ", " : "", st.reason ? st.reason : "");
	executor_report(&j->se->base, j->owner, &st, now_ms);
	exec_status_clear(&st);
}

/* j ended (v: what squeue said; NULL when it is gone): told after the
 * cycle's sacct, or at once without accounting. */
static void end_found(struct executor_job *j, const struct slurm_verdict *v, int64_t now_ms)
{
	if (j->se->accounting != 1) {
		report_end(j, v, NULL, now_ms);
		return;
	}
	j->end_due = true;
	j->end_has_v = v != NULL;
	if (v)
		j->end_v = *v;
	if (!j->end_since_ms)
		j->end_since_ms = now_ms;
}

/* One sacct for every job that ended since the last cycle, then their ends
 * told. true while one still waits for accounting to catch up. */
static bool tell_ends(struct slurm_executor *se, int64_t now_ms)
{
	struct slurm_run_result res = { 0 };
	struct slurm_acct *recs = NULL;
	char *ids = NULL, *why = NULL;
	size_t n = 0;
	bool waiting = false;

	for (struct executor_job *j = se->jobs; j; j = j->next) {
		char *more;

		if (!j->end_due)
			continue;
		more = xasprintf("%s%s%s", ids ? ids : "", ids ? "," : "", j->id);
		free(ids);
		ids = more;
	}
	if (!ids)
		return false;
	{
		char *jobs = xasprintf("--jobs=%s", ids);
		char *argv[] = { "sacct", "--noheader", "--parsable2", "--allusers", "--format=" SLURM_SACCT_FORMAT,
				 jobs, NULL };

		slurm_rpc_counted(se, "sacct", &se->counts.sacct);
		if (slurm_run(argv, NULL, NULL, SACCT_TIMEOUT_MS, &res, &why) < 0) {
			log_warnx("sacct: %s", why);
		} else if (res.status != 0) {
			log_warnx("sacct (status %d): %s", res.status, res.err);
			if (slurm_acct_disabled(res.err)) {
				log_info("slurm: accounting off (sacct says so): no sacct");
				se->accounting = 0;
			}
		} else if (slurm_acct_parse(res.out, &recs, &n, &why) < 0) {
			log_warnx("sacct's answer: %s", why);
		}
		free(jobs);
	}
	for (struct executor_job *j = se->jobs, *nx; j; j = nx) {
		const struct slurm_acct *a;

		nx = j->next;
		if (!j->end_due)
			continue;
		a = slurm_acct_find(recs, n, j->id);
		if ((!a || !slurm_acct_final(a)) && se->accounting == 1 && now_ms - j->end_since_ms < ACCT_WAIT_MS) {
			waiting = true;
			continue;
		}
		report_end(j, j->end_has_v ? &j->end_v : NULL, a && slurm_acct_final(a) ? a : NULL, now_ms);
	}
	free(recs);
	free(ids);
	free(why);
	slurm_run_result_clear(&res);
	return waiting;
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
	slurm_rpc_counted(se, "scancel", &se->counts.scancel);
	if (slurm_run(argv, NULL, NULL, CMD_TIMEOUT_MS, &res, &why) < 0)
		log_warnx("scancel: %s", why);
	else if (res.status != 0)
		log_warnx("scancel (status %d): %s", res.status, res.err);
	slurm_run_result_clear(&res);
	free(why);
	slurm_argv_free(argv);
}

/* The partitions the cycle's squeue asks for, comma-separated: the runner's
 * (whose other users' jobs are the host's outside load) and those its jobs
 * were sent to (a stage's slurm.partition); NULL when one of them is Slurm's
 * default and its name is not known yet: then every partition. */
static char *partitions(const struct slurm_executor *se)
{
	const char *own = se->partition ? se->partition : se->default_partition;
	char *list;

	if (!own)
		return NULL;
	list = xstrdup(own);
	for (const struct executor_job *j = se->jobs; j; j = j->next) {
		const char *p = j->partition ? j->partition : se->default_partition;
		size_t len = strlen(p ? p : "");
		bool listed = false;

		if (j->ended || !j->job_id)
			continue;
		if (!p) {
			free(list);
			return NULL;
		}
		for (const char *q = list; *q; q += strcspn(q, ",") + (q[strcspn(q, ",")] ? 1 : 0))
			listed |= strcspn(q, ",") == len && strncmp(q, p, len) == 0;
		if (!listed) {
			char *more = xasprintf("%s,%s", list, p);

			free(list);
			list = more;
		}
	}
	return list;
}

/* Keep the records of this runner's jobs (its job name) in jobs[0..*n), the
 * others' CPUs in the runner's partition as the outside load. */
static void sort_out(struct slurm_executor *se, struct slurm_job *jobs, size_t *n)
{
	const char *own = se->partition ? se->partition : se->default_partition;
	size_t kept = 0;

	if (own) {
		se->outside_cpus = slurm_outside_cpus(jobs, *n, se->job_name, own);
		se->outside_at_ms = time_now_ms();
	}
	for (size_t i = 0; i < *n; i++)
		if (strcmp(jobs[i].name, se->job_name) == 0)
			jobs[kept++] = jobs[i];
	*n = kept;
}

/* One squeue for the runner's partitions: all of this runner's jobs, and
 * other users' for the outside load; NULL (logged) when it failed. */
static struct slurm_job *query(struct slurm_executor *se, size_t *n)
{
	char *parts = partitions(se), *part_arg = parts ? xasprintf("--partition=%s", parts) : NULL;
	char *argv[] = { "squeue", "--noheader", "-t", "all", "-o", SLURM_SQUEUE_FORMAT, part_arg, NULL };
	struct slurm_run_result res = { 0 };
	struct slurm_job *jobs = NULL;
	char *why = NULL;
	int ok = 0;

	*n = 0;
	slurm_rpc_counted(se, "squeue", &se->counts.squeue);
	free(se->poll_error);
	se->poll_error = NULL;
	if (slurm_run(argv, NULL, NULL, CMD_TIMEOUT_MS, &res, &why) < 0)
		se->poll_error = xasprintf("squeue: %s", why);
	else if (res.status != 0)
		se->poll_error = xasprintf("squeue (status %d): %s", res.status, res.err);
	else if (slurm_parse_jobs(res.out, false, &jobs, n, &why) < 0)
		se->poll_error = xasprintf("squeue's answer: %s", why);
	else
		ok = 1;
	/* Kept for the heartbeat (executor_facts): when Slurm last answered, or why not. */
	if (ok) {
		se->last_poll_ms = time_now_ms();
		sort_out(se, jobs, n);
	} else {
		size_t len = strlen(se->poll_error);

		while (len > 0 && (se->poll_error[len - 1] == '\n' || se->poll_error[len - 1] == ' '))
			se->poll_error[--len] = '\0';
		log_warnx("%s", se->poll_error);
		free(jobs);
		jobs = NULL;
		*n = 0;
	}
	slurm_run_result_clear(&res);
	free(why);
	free(parts);
	free(part_arg);
	return ok ? (jobs ? jobs : xcalloc(1, sizeof *jobs)) : NULL;
}

/* Whether j's exit file is there whole (the wrapper writes it in place: a
 * reader may see it empty or cut short, without its newline). */
static bool exit_file_complete(const struct executor_job *j)
{
	char *text = read_file(j->exit_path, 128, NULL);
	int64_t t0, t1;
	int code;
	bool whole = text && slurm_exit_parse(text, &code, &t0, &t1) == 0;

	free(text);
	return whole;
}

/* What the cycle's answer says of j; true when something changed. */
static bool look_at(struct executor_job *j, const struct slurm_job *jobs, size_t n, int64_t now_ms)
{
	struct slurm_executor *se = j->se;
	const struct slurm_job *rec = NULL;
	struct slurm_verdict v;

	/* An array task: its own record once it started, else its array's
	 * pending range. */
	rec = slurm_find_ref(jobs, n, j->job_id, j->task);
	if (!rec) {
		/* Gone (past MinJobAge): the exit file says how it ended. */
		bool have = exit_file_complete(j);

		if (!j->gone_since_ms)
			j->gone_since_ms = now_ms;
		if (have || now_ms - j->gone_since_ms >= se->lost_grace_ms) {
			end_found(j, NULL, now_ms);
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
		if (rec->reason[0] && strcmp(rec->reason, "None") != 0) {
			/* Each cycle: the instance table shows Slurm's reason of now. */
			struct exec_status st = { .state = EXEC_STARTING, .reason = (char *)rec->reason };

			executor_report(&se->base, j->owner, &st, now_ms);
		}
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
	if (v.outcome == SLURM_SUCCEEDED && !exit_file_complete(j)) {
		if (!j->ended_wait_ms)
			j->ended_wait_ms = now_ms;
		if (now_ms - j->ended_wait_ms < se->lost_grace_ms)
			return false;
	}
	end_found(j, &v, now_ms);
	return true;
}

int64_t slurm_poll_tick(struct executor *e, int64_t now_ms)
{
	struct slurm_executor *se = slurm_of(e);
	struct slurm_job *jobs;
	bool watching = false, waiting = false, changed = false;
	int64_t next;
	size_t n;

	se->sbatch_spent_ms = 0;
	next = slurm_submit_queued(se, now_ms);

	/* At the first tick, then every CONFIG_REFRESH_MS: accounting on or off. */
	slurm_read_config(se, now_ms);
	for (struct executor_job *j = se->jobs; j; j = j->next)
		watching |= !j->ended && j->job_id;
	/* With no job of its own in Slurm the runner still looks at the
	 * partition now and then: other users' jobs are the host's load. */
	if (!watching && se->next_query_ms - now_ms > LOAD_INTERVAL_MS)
		se->next_query_ms = now_ms + LOAD_INTERVAL_MS;
	if (now_ms < se->next_query_ms)
		return next >= 0 && next < se->next_query_ms ? next : se->next_query_ms;
	flush_cancels(se);
	jobs = query(se, &n);
	if (jobs) {
		for (struct executor_job *j = se->jobs, *nx; j; j = nx) {
			nx = j->next;
			if (j->ended || j->end_due || !j->job_id)
				continue;
			changed |= look_at(j, jobs, n, now_ms);
			waiting |= !j->ended && !j->end_due && (!j->running || j->gone_since_ms || j->ended_wait_ms);
		}
		free(jobs);
	}
	waiting |= tell_ends(se, now_ms);
	/* Quick while something waits to start or end, or just changed;
	 * slower while all run, to spare slurmctld. */
	if (!watching)
		se->interval_ms = LOAD_INTERVAL_MS;
	else if (waiting || changed || !jobs)
		se->interval_ms = FAST_INTERVAL_MS;
	else if ((se->interval_ms *= 2) > se->max_interval_ms)
		se->interval_ms = se->max_interval_ms;
	se->next_query_ms = now_ms + se->interval_ms;
	return next >= 0 && next < se->next_query_ms ? next : se->next_query_ms;
}
