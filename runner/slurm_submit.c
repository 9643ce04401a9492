/* The Slurm executor's submissions (slurm_internal.h): the starts queued
 * since the last cycle, grouped by what they pass to sbatch and whom they run
 * as (slurm_batch.h), go as one `sbatch --array` per chunk of at most
 * MaxArraySize tasks (read from `scontrol show config` now and then, capped
 * by --slurm-max-array), a single start as a plain job: its id stays the one
 * number a user expects, and an array of one buys nothing.
 *
 * Exactly once: each batch's tag is written in every member's DIR before its
 * sbatch, the job id after. An sbatch that was stopped (the timeout, at
 * MaxJobCount) may have been taken all the same: its batch is kept and looked
 * for by tag before it is sent again. An sbatch refused for now (busy, a
 * submit limit) took nothing: its members wait and are grouped anew, fewer
 * at a time after a limit. */
#include "log.h"
#include "slurm_acct.h"
#include "slurm_batch.h"
#include "slurm_internal.h"
#include "slurm_run.h"
#include "slurm_text.h"
#include "slurm_wrapper.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint64_t slurm_find_tagged(struct slurm_executor *se, const char *tag, bool fresh)
{
	char *name = xasprintf("--name=%s", se->job_name);
	char *argv[] = { "squeue", "--noheader", "-t", "all", name, "-o", "%F|%k", NULL };
	struct slurm_run_result res = { 0 };
	uint64_t found = 0;
	char *why = NULL;
	size_t tlen = strlen(tag);

	if (fresh || !se->tags_text || time_mono_ms() - se->tags_at_ms > 5000) {
		slurm_rpc_counted(se, "squeue for a tag", &se->counts.squeue);
		free(se->tags_text);
		se->tags_text = NULL;
		if (slurm_run(argv, NULL, NULL, CMD_TIMEOUT_MS, &res, &why) < 0 || res.status != 0) {
			log_warnx("squeue: %s", why ? why : res.err);
		} else {
			se->tags_text = res.out;
			res.out = NULL;
			se->tags_at_ms = time_mono_ms();
		}
	}
	/* Lines "ARRAY_ID|COMMENT", one per job or task. */
	for (const char *line = se->tags_text; line && *line && !found;) {
		const char *bar = strchr(line, '|'), *end = strchr(line, '\n');

		if (!end)
			end = line + strlen(line);
		if (bar && bar < end && (size_t)(end - bar - 1) == tlen && memcmp(bar + 1, tag, tlen) == 0)
			found = strtoull(line, NULL, 10);
		line = *end ? end + 1 : end;
	}
	slurm_run_result_clear(&res);
	free(why);
	free(name);
	return found;
}

/* MaxArraySize and MaxJobCount (an array over either could never be
 * taken), and whether the cluster keeps accounting. */
void slurm_read_config(struct slurm_executor *se, int64_t now_ms)
{
	char *argv[] = { "scontrol", "show", "config", NULL };
	struct slurm_run_result res = { 0 };
	long size = 0, count = 0;
	char *why = NULL;
	int acct;

	if (se->config_at_ms && now_ms - se->config_at_ms < CONFIG_REFRESH_MS)
		return;
	se->config_at_ms = now_ms;
	slurm_rpc_counted(se, "scontrol show config", &se->counts.scontrol);
	if (slurm_run(argv, NULL, NULL, CMD_TIMEOUT_MS, &res, &why) < 0 || res.status != 0) {
		log_warnx("scontrol show config: %s; arrays of at most %ld tasks", why ? why : res.err,
			  se->slurm_max_array > 0 ? se->slurm_max_array : 1001L);
		goto out;
	}
	acct = slurm_config_accounting(res.out);
	if (acct >= 0 && acct != se->accounting)
		log_info("slurm: accounting %s: %s", acct ? "on (AccountingStorageType)" : "off",
			 acct ? "ended jobs' CPU time, memory and who cancelled from sacct" : "no sacct");
	if (acct >= 0)
		se->accounting = acct;
	if (slurm_config_long(res.out, "MaxArraySize", &size) < 0 || size <= 0) {
		log_warnx("scontrol show config says no MaxArraySize; arrays of at most 1001 tasks");
	} else {
		if (slurm_config_long(res.out, "MaxJobCount", &count) == 0 && count > 0 && count < size)
			size = count;
		if (size != se->slurm_max_array)
			log_info("slurm: arrays of at most %ld tasks (MaxArraySize, MaxJobCount)", size);
		se->slurm_max_array = size;
	}
out:
	slurm_run_result_clear(&res);
	free(why);
}

static long max_array(const struct slurm_executor *se)
{
	long size = se->slurm_max_array > 0 ? se->slurm_max_array : 1001;

	return se->max_array > 0 && se->max_array < size ? se->max_array : size;
}

static void unlink_in(const char *dir, const char *name)
{
	char *path = xasprintf("%s/%s", dir, name);

	unlink(path);
	free(path);
}

static void batch_free(struct slurm_executor *se, struct slurm_batch *b)
{
	for (struct slurm_batch **p = &se->batches; *p; p = &(*p)->next) {
		if (*p == b) {
			*p = b->next;
			break;
		}
	}
	for (size_t k = 0; k < b->n; k++)
		if (b->members[k])
			b->members[k]->batch = NULL;
	free(b->members);
	free(b);
}

void slurm_batches_free(struct slurm_executor *se)
{
	while (se->batches)
		batch_free(se, se->batches);
}

void slurm_leave_batch(struct executor_job *j)
{
	struct slurm_batch *b = j->batch;
	bool empty = true;

	if (!b)
		return;
	for (size_t k = 0; k < b->n; k++) {
		if (b->members[k] == j)
			b->members[k] = NULL;
		empty &= b->members[k] == NULL;
	}
	j->batch = NULL;
	if (empty)
		batch_free(j->se, b);
}

/* What ends a queued start without Slurm: reported, never reported again. */
static void end_queued(struct executor_job *j, enum exec_state state, char *reason, int64_t now_ms)
{
	struct exec_status st = { .state = state, .cpu_ms = -1, .max_rss = -1, .reason = reason };

	if (state == EXEC_EXITED)
		st.signal = SIGTERM;
	j->ended = true;
	slurm_leave_batch(j);
	slurm_drop_submission(j);
	executor_report(&j->se->base, j->owner, &st, now_ms);
	exec_status_clear(&st);
}

/* Slurm took b as job_id: every member's id in its DIR. Not synced: the
 * batch's tag, synced before sbatch, finds it too. */
static void record(struct slurm_executor *se, struct slurm_batch *b, uint64_t job_id)
{
	char text[64];

	for (size_t k = 0; k < b->n; k++) {
		struct executor_job *m = b->members[k];

		if (!m)
			continue;
		m->job_id = job_id;
		m->task = b->spec[0] ? (long)k : -1;
		slurm_format_ref(job_id, m->task, m->id, sizeof m->id);
		snprintf(text, sizeof text, "%s\n", m->id);
		if (slurm_write_text(m->dir, "slurm_job", text, false) < 0)
			log_warn("slurm job %s: cannot record it in %s", m->id, m->dir);
		if (m->retry_ms)
			log_info("slurm job %s: submitted on a later try", m->id);
		m->retry_ms = 0;
		m->waiting_told = false;
		slurm_drop_submission(m);
	}
	log_debug("slurm job %" PRIu64 ": %zu instance(s)%s%s, tag %s", job_id, b->n, b->spec[0] ? ", array " : "",
		  b->spec, b->tag);
	batch_free(se, b);
	se->hold_ms = 0;
	/* Something waits to start: look soon. */
	se->interval_ms = FAST_INTERVAL_MS;
	if (se->next_query_ms == 0 || se->next_query_ms > time_mono_ms() + FAST_INTERVAL_MS)
		se->next_query_ms = time_mono_ms() + FAST_INTERVAL_MS;
}

static int64_t backoff(int64_t *retry_ms)
{
	*retry_ms = *retry_ms ? *retry_ms * 2 : RETRY_FIRST_MS;
	if (*retry_ms > RETRY_MAX_MS)
		*retry_ms = RETRY_MAX_MS;
	return *retry_ms;
}

/* sbatch's refusal as one line (malloc'ed). */
static char *refusal_text(const struct slurm_run_result *res)
{
	char *text = squeeze_blanks(res->err[0] ? res->err : res->out);
	size_t len = strlen(text);

	for (char *c = text; *c; c++)
		if (*c == '\n')
			*c = ' ';
	while (len > 0 && text[len - 1] == ' ')
		text[--len] = '\0';
	if (!*text && (res->status == 126 || res->status == 127)) {
		/* slurm_run's child says 126 when it could not become the
		 * user, 127 when there is no sbatch to exec. */
		free(text);
		return xasprintf("sbatch did not run: %s", res->status == 126 ?
				 "cannot switch to the instance's user" : "no sbatch in the runner's PATH");
	}
	{
		char *t = xasprintf("sbatch refused it (status %d): %s", res->status, text);

		free(text);
		return t;
	}
}

/* Refused for now, and surely not taken: the members wait on their own and
 * are grouped anew (after a limit, fewer to an sbatch). */
static void dissolve(struct slurm_executor *se, struct slurm_batch *b, const char *why,
		     enum slurm_refusal r, int64_t now_ms)
{
	size_t live = 0;

	/* Everything queued waits, not only these: the next start would hit
	 * the same limit, one refused sbatch after another. */
	se->hold_until_ms = now_ms + backoff(&se->hold_ms);
	if (r == SLURM_REFUSED_LIMIT || r == SLURM_REFUSED_ARRAY) {
		for (size_t k = 0; k < b->n; k++)
			live += b->members[k] != NULL;
		se->room_cap = live > 1 ? (long)(live / 2) : 1;
		if (r == SLURM_REFUSED_ARRAY)
			se->config_at_ms = 0;
	}
	for (size_t k = 0; k < b->n; k++) {
		struct executor_job *m = b->members[k];

		if (!m)
			continue;
		unlink_in(m->dir, "slurm_batch");
		m->retry_ms = se->hold_ms;
		m->retry_at_ms = se->hold_until_ms;
		if (!m->waiting_told) {
			/* A wait, with Slurm's reason, never a failure. */
			struct exec_status st = { .state = EXEC_STARTING, .cpu_ms = -1, .max_rss = -1,
						  .reason = xasprintf("waiting for Slurm: %s", why) };

			m->waiting_told = true;
			executor_report(&se->base, m->owner, &st, now_ms);
			exec_status_clear(&st);
		}
	}
	log_warnx("%s; %zu instance(s) try again in %" PRId64 " s, the other queued starts too", why, b->n,
		  se->hold_ms / 1000);
	batch_free(se, b);
}

/* Refused for good: every member fails (the last one frees b). */
static void fail_batch(struct slurm_batch *b, const char *reason, int64_t now_ms)
{
	size_t n = b->n;
	struct executor_job **members = xcalloc(n, sizeof *members);

	memcpy(members, b->members, n * sizeof *members);
	for (size_t k = 0; k < n; k++)
		if (members[k])
			end_queued(members[k], EXEC_FAILED, xstrdup(reason), now_ms);
	free(members);
}

/* One sbatch for b (first its tag, when an earlier one was stopped). */
static void submit_batch(struct slurm_executor *se, struct slurm_batch *b, int64_t now_ms)
{
	struct executor_job *lead = NULL;
	struct slurm_run_result res = { 0 };
	const char **bodies = NULL;
	char **argv = NULL, *script = NULL, *why = NULL;
	uint64_t job_id = 0;
	size_t n = 0;
	int64_t t0;
	enum slurm_refusal r;

	for (size_t k = 0; k < b->n && !lead; k++)
		lead = b->members[k];
	if (!lead) {
		batch_free(se, b);
		return;
	}
	if (b->uncertain && (job_id = slurm_find_tagged(se, b->tag, true)) > 0) {
		log_info("slurm job %" PRIu64 ": the stopped sbatch of %s was taken", job_id, b->tag);
		record(se, b, job_id);
		return;
	}
	for (size_t i = 0; lead->argv[i]; i++) {
		argv = xrealloc(argv, (n + 4) * sizeof *argv);
		argv[n++] = xstrdup(lead->argv[i]);
	}
	argv = xrealloc(argv, (n + 3) * sizeof *argv);
	if (b->spec[0])
		argv[n++] = xasprintf("--array=%s", b->spec);
	argv[n++] = xasprintf("--comment=%s", b->tag);
	argv[n] = NULL;
	if (b->n == 1) {
		script = xstrdup(lead->script);
	} else {
		/* A member stopped meanwhile keeps its task: it then runs its
		 * wrapper, whose result nobody reads; it is cancelled next cycle. */
		bodies = xcalloc(b->n, sizeof *bodies);
		for (size_t k = 0; k < b->n; k++)
			bodies[k] = b->members[k] ? b->members[k]->script : "exit 0\n";
		script = slurm_array_script(bodies, b->n);
	}
	slurm_rpc_counted(se, b->spec[0] ? "sbatch --array" : "sbatch", &se->counts.sbatch);
	t0 = time_mono_ms();
	if (slurm_run(argv, script, lead->identity, SBATCH_TIMEOUT_MS, &res, &why) < 0) {
		char *reason = xasprintf("cannot start: sbatch: %s", why);

		fail_batch(b, reason, now_ms);
		free(reason);
		goto out;
	}
	se->sbatch_spent_ms += time_mono_ms() - t0;
	if (res.status == 0 && slurm_parse_sbatch_id(res.out, &job_id) == 0) {
		record(se, b, job_id);
		/* Room again after a limit: more at a time. */
		if (se->room_cap > 0 && (se->room_cap *= 2) >= max_array(se))
			se->room_cap = -1;
		goto out;
	}
	free(why);
	why = refusal_text(&res);
	r = slurm_sbatch_refusal(res.err);
	if (res.status > 128) {
		/* Stopped (the timeout): it may have been taken. */
		b->uncertain = true;
		b->retry_at_ms = now_ms + backoff(&b->retry_ms);
		/* sbatch sleeps and retries by itself at MaxJobCount: new
		 * starts would hang the same way. */
		se->hold_until_ms = now_ms + backoff(&se->hold_ms);
		log_warnx("%s; looking for %s in %" PRId64 " s", why, b->tag, b->retry_ms / 1000);
	} else if (r == SLURM_REFUSED_BUSY || r == SLURM_REFUSED_LIMIT || r == SLURM_REFUSED_ARRAY) {
		dissolve(se, b, why, r, now_ms);
	} else {
		char *reason = xasprintf("cannot start: %s", why);

		fail_batch(b, reason, now_ms);
		free(reason);
	}
out:
	slurm_run_result_clear(&res);
	slurm_argv_free(argv);
	free(bodies);
	free(script);
	free(why);
}

/* The starts due now, grouped into new batches whose tags are in their
 * members' DIRs, synced, before any of them goes to sbatch. */
static void form_batches(struct slurm_executor *se, int64_t now_ms)
{
	struct executor_job **due = NULL;
	struct slurm_plan_item *items = NULL;
	struct slurm_plan_batch *plan = NULL;
	struct slurm_limits lim = { .max_array_size = max_array(se), .submit_room = se->room_cap };
	struct slurm_batch **made = NULL;
	long *batch_of = NULL;
	size_t n = 0;
	int nb;

	for (struct executor_job *j = se->jobs; j; j = j->next) {
		if (j->ended || j->job_id || j->batch || j->cancel || now_ms < j->retry_at_ms)
			continue;
		due = xrealloc(due, (n + 1) * sizeof *due);
		due[n++] = j;
	}
	if (n == 0)
		goto out;
	/* Oldest first: the list holds the latest start at its head. */
	for (size_t i = 0; i < n / 2; i++) {
		struct executor_job *t = due[i];

		due[i] = due[n - 1 - i];
		due[n - 1 - i] = t;
	}
	items = xcalloc(n, sizeof *items);
	plan = xcalloc(n, sizeof *plan);
	batch_of = xcalloc(n, sizeof *batch_of);
	for (size_t i = 0; i < n; i++)
		items[i] = (struct slurm_plan_item){ .key = due[i]->key, .script_len = strlen(due[i]->script) };
	nb = slurm_plan(items, n, &lim, ARRAY_SCRIPT_MAX, plan, n, batch_of);
	if (nb <= 0)
		goto out;
	made = xcalloc((size_t)nb, sizeof *made);
	for (int k = 0; k < nb; k++) {
		struct slurm_batch *b = xcalloc(1, sizeof *b);

		snprintf(b->tag, sizeof b->tag, "parsa:%s:%" PRId64 ".%d.%u", se->runner, time_now_ms(), (int)getpid(),
			 ++se->batch_seq);
		snprintf(b->spec, sizeof b->spec, "%s", plan[k].spec);
		b->members = xcalloc((size_t)plan[k].count, sizeof *b->members);
		made[k] = b;
	}
	for (size_t i = 0; i < n; i++) {
		struct slurm_batch *b;
		char text[128];

		if (batch_of[i] < 0)
			continue;
		b = made[batch_of[i]];
		snprintf(text, sizeof text, "%s %ld\n", b->tag, b->spec[0] ? (long)b->n : -1L);
		if (slurm_write_text(due[i]->dir, "slurm_batch", text, false) < 0) {
			/* Without its tag it must not go: a restart could not find it. */
			log_warn("cannot write %s/slurm_batch; the start waits", due[i]->dir);
			due[i]->retry_at_ms = now_ms + backoff(&due[i]->retry_ms);
			continue;
		}
		due[i]->batch = b;
		b->members[b->n++] = due[i];
	}
	{
		/* One sync of the state folder for all the tags. */
		char *parent = xstrdup(due[0]->dir), *slash = strrchr(parent, '/');
		int fd;

		if (slash)
			*slash = '\0';
		fd = open(slash ? parent : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || syncfs(fd) < 0)
			log_warn("cannot sync %s", parent);
		if (fd >= 0)
			close(fd);
		free(parent);
	}
	for (int k = 0; k < nb; k++) {
		struct slurm_batch *b = made[k];

		if (b->n == 0) {
			free(b->members);
			free(b);
			continue;
		}
		/* An array stays one (its members' DIRs say task k) even if a
		 * member could not be tagged. */
		if (b->spec[0])
			snprintf(b->spec, sizeof b->spec, "0-%zu", b->n - 1);
		b->next = se->batches;
		se->batches = b;
	}
out:
	free(made);
	free(due);
	free(items);
	free(plan);
	free(batch_of);
}

/* When b may go to sbatch: its retry, and a batch not sent yet also waits
 * out a hold (one that was sent is looked for by its tag, which costs
 * slurmctld no submission). */
static int64_t batch_due(const struct slurm_executor *se, const struct slurm_batch *b)
{
	return !b->uncertain && se->hold_until_ms > b->retry_at_ms ? se->hold_until_ms : b->retry_at_ms;
}

int64_t slurm_submit_queued(struct slurm_executor *se, int64_t now_ms)
{
	int64_t next = -1;
	bool any = false;

	/* Stopped before Slurm took them: dropped. Not when their batch's
	 * sbatch was stopped: that one may be in Slurm, and is cancelled there
	 * once found. */
	for (struct executor_job *j = se->jobs, *nx; j; j = nx) {
		nx = j->next;
		if (j->ended || j->job_id || !j->cancel || (j->batch && j->batch->uncertain))
			continue;
		if (j->batch)
			unlink_in(j->dir, "slurm_batch");
		end_queued(j, EXEC_EXITED, xstrdup("stopped before Slurm took it"), now_ms);
	}
	for (struct executor_job *j = se->jobs; j && !any; j = j->next)
		any = !j->ended && !j->job_id && !j->batch && j->retry_at_ms <= now_ms;
	if (any && (!se->submit_at_ms || now_ms >= se->submit_at_ms) && now_ms >= se->hold_until_ms) {
		slurm_read_config(se, now_ms);
		form_batches(se, now_ms);
		se->submit_at_ms = 0;
	}
	/* The batches, oldest first, within the cycle's sbatch budget. */
	for (;;) {
		struct slurm_batch *b = NULL;

		for (struct slurm_batch *c = se->batches; c; c = c->next)
			if (batch_due(se, c) <= now_ms)
				b = c;
		if (!b)
			break;
		if (se->sbatch_spent_ms >= SBATCH_BUDGET_MS) {
			/* The rest at the next tick: the loop must go on. */
			next = now_ms;
			break;
		}
		submit_batch(se, b, now_ms);
	}
	/* What waits: batches to try again, starts to group. */
	for (struct slurm_batch *c = se->batches; c; c = c->next)
		if (next < 0 || batch_due(se, c) < next)
			next = batch_due(se, c);
	for (struct executor_job *j = se->jobs; j; j = j->next) {
		int64_t due;

		if (j->ended || j->job_id || j->batch)
			continue;
		due = j->retry_at_ms > now_ms ? j->retry_at_ms : se->submit_at_ms > now_ms ? se->submit_at_ms : now_ms;
		if (due < se->hold_until_ms)
			due = se->hold_until_ms;
		if (next < 0 || due < next)
			next = due;
	}
	return next;
}
