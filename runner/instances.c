#include "instances.h"
#include "clock.h"
#include "executor.h"
#include "identity.h"
#include "log.h"
#include "resources.h"
#include "scratch.h"
#include "units.h"
#include "usage.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How long, and how many, finished id+attempt pairs are remembered: longer
 * than the scheduler takes to stop re-sending an assignment it has seen confirmed. */
#define FINISHED_KEEP_MS (10 * 60 * 1000)
#define FINISHED_MAX 4096
/* How long a start waits to be reported (see settle). */
#define RUNNING_REPORT_DELAY_MS 50

enum inst_state {
	INST_STARTING,   /* the executor has not said how set-up went */
	INST_RUNNING,    /* reached exec */
};

struct instance {
	struct assignment *a;
	struct executor_job *job; /* where it runs (executor.h) */
	char *scratch;
	char *progress;
	bool progress_remote;     /* progress is on the job's volume (instance_progress) */
	struct instance *next_retired; /* retired, waiting for instances_cleanup() */
	int64_t tell_running_ms;       /* when to report it running; 0: done (or not yet) */
	enum inst_state state;
	pid_t pid;                /* the instance's, once running */
	int64_t started_ms;
	int64_t wall_deadline_ms; /* on the clock's monotonic time (clock_mono_ms); 0: no
				   * walltime (or already acted on) */
	int64_t kill_at_ms;       /* 0: no SIGKILL pending */
	char *stop_reason;        /* once we signalled it */
	struct holding hold;      /* its cores, GPUs and cgroup */
	struct usage_state use;   /* what its process tree has used */
	int64_t counted_cpu_ms;   /* how much of use.now.cpu_ms is in the table's total;
				   * -1: nothing yet (reattached: its first sample is the base) */
	int64_t host_started_ms;  /* wall clock at exec, from its executor */
	char *wait_reason;        /* while starting: why its executor says it waits
				   * (Slurm's "Priority"); NULL: none said */
};

struct finished {
	int64_t id, attempt;
	int64_t ended_ms;
};

struct instances {
	struct instances_config cfg;
	struct executor *ex;      /* cfg.executor, or the local one we own */
	char *dir;                /* <state_dir>/instances */
	struct scratch_pool *pool; /* NULL: scratch folders are made and removed */
	struct instance *retired;  /* ended, not yet cleaned up */
	struct instance **live;
	size_t nlive, caplive;
	struct finished ring[FINISHED_MAX]; /* oldest at ring_head */
	size_t ring_head, ring_n;
	int64_t cpu_ms_total;     /* what every instance used while we watched */
	int usage_failing;        /* to log a failing sample once */
};

static void emit(struct instances *t, enum instance_event_kind kind, int64_t id, int64_t attempt,
		 pid_t pid, int exit_code, int sig, const char *reason)
{
	struct instance_event ev = {
		.kind = kind, .id = id, .attempt = attempt, .pid = pid,
		.exit_code = exit_code, .signal = sig, .reason = reason,
		.usage = INSTANCE_USAGE_UNKNOWN,
	};

	if (t->cfg.on_event)
		t->cfg.on_event(t->cfg.arg, &ev);
}

/* The id of the instance's job where the scheduler shows it: a Slurm job's;
 * a local supervisor's pid is this runner's business. NULL: none. */
static const char *outside_id(const struct instances *t, const struct instance *in)
{
	const char *id;

	if (!in->job || strcmp(executor_name(t->ex), "slurm") != 0)
		return NULL;
	id = executor_job_id(t->ex, in->job);
	return id && *id ? id : NULL;
}

/* An instance that ran: its event carries its times, cores, GPUs and Slurm job. */
static void emit_ran(struct instances *t, struct instance *in, struct instance_event *ev)
{
	ev->slurm_job = outside_id(t, in);
	ev->id = in->a->id;
	ev->attempt = in->a->attempt;
	ev->started_ms = in->host_started_ms;
	ev->cpu_list = in->hold.cpu_list;
	ev->gpu_list = in->hold.gpu_list;
	if (t->cfg.on_event)
		t->cfg.on_event(t->cfg.arg, ev);
}

static void remember(struct instances *t, int64_t id, int64_t attempt, int64_t now_ms)
{
	struct finished *f;

	if (t->ring_n == FINISHED_MAX) {
		t->ring_head = (t->ring_head + 1) % FINISHED_MAX;
		t->ring_n--;
	}
	f = &t->ring[(t->ring_head + t->ring_n) % FINISHED_MAX];
	f->id = id;
	f->attempt = attempt;
	f->ended_ms = now_ms;
	t->ring_n++;
}

void instances_remember(struct instances *t, int64_t id, int64_t attempt, int64_t now_ms)
{
	remember(t, id, attempt, now_ms);
}

static int finished_recently(const struct instances *t, int64_t id, int64_t attempt)
{
	for (size_t i = 0; i < t->ring_n; i++) {
		const struct finished *f = &t->ring[(t->ring_head + i) % FINISHED_MAX];

		if (f->id == id && f->attempt == attempt)
			return 1;
	}
	return 0;
}

static struct instance *find(const struct instances *t, int64_t id, int64_t attempt)
{
	for (size_t i = 0; i < t->nlive; i++)
		if (t->live[i]->a->id == id && t->live[i]->a->attempt == attempt)
			return t->live[i];
	return NULL;
}

static void changed(void *arg, void *owner, const struct exec_status *st, int64_t now_ms);

struct instances *instances_create(const struct instances_config *cfg)
{
	struct instances *t = xcalloc(1, sizeof *t);
	char *err = NULL;

	t->cfg = *cfg;
	t->cfg.mount = xstrdup(cfg->mount);
	t->cfg.scratch_root = xstrdup(cfg->scratch_root);
	t->cfg.progress_dir = xstrdup(cfg->progress_dir ? cfg->progress_dir : cfg->scratch_root);
	t->cfg.state_dir = NULL;
	t->ex = cfg->executor ? cfg->executor : executor_local_create();
	executor_set_callback(t->ex, changed, t);
	t->dir = xasprintf("%s/instances", cfg->state_dir ? cfg->state_dir : cfg->scratch_root);
	if (mkdir_p(t->dir, 0700) < 0)
		log_warn("cannot create %s", t->dir);
	t->pool = scratch_pool_create(cfg->scratch_root, &err);
	if (!t->pool) {
		log_warnx("%s: scratch folders will not be reused", err);
		free(err);
	}
	return t;
}

static void instance_free(struct instances *t, struct instance *in)
{
	if (!in)
		return;
	executor_release(t->ex, in->job);
	assignment_destroy(in->a);
	holding_clear(&in->hold);
	free(in->scratch);
	free(in->progress);
	free(in->stop_reason);
	free(in->wait_reason);
	free(in);
}

void instances_destroy(struct instances *t)
{
	if (!t)
		return;
	instances_cleanup(t);
	for (size_t i = 0; i < t->nlive; i++)
		instance_free(t, t->live[i]);
	free(t->live);
	executor_set_callback(t->ex, NULL, NULL);
	if (!t->cfg.executor)
		executor_destroy(t->ex);
	free((char *)t->cfg.mount);
	free((char *)t->cfg.scratch_root);
	free((char *)t->cfg.progress_dir);
	scratch_pool_destroy(t->pool);
	free(t->dir);
	free(t);
}

static void remove_scratch(struct instances *t, const char *path)
{
	char *err = NULL;

	if (scratch_release(t->pool, path, &err) < 0)
		log_warnx("%s", err);
	free(err);
}

static void add_live(struct instances *t, struct instance *in)
{
	if (t->nlive == t->caplive) {
		t->caplive = t->caplive ? t->caplive * 2 : 16;
		t->live = xrealloc(t->live, t->caplive * sizeof *t->live);
	}
	t->live[t->nlive++] = in;
}

/* What retire() leaves to instances_cleanup(). */
static void clean_up(struct instances *t, struct instance *in)
{
	remove_scratch(t, in->scratch);
	if (t->cfg.on_retire)
		t->cfg.on_retire(t->cfg.arg, in->a, in->progress);
	executor_forget(t->ex, in->job);
	instance_free(t, in);
}

/* Take an ended instance out of the table and remember it. Its end has been
 * queued as a report (kept on disk) by now, so its executor's folder can
 * go; that and the rest of the clean-up wait for instances_cleanup(), so
 * that the report is sent first: the scheduler can reuse the slot sooner. */
static void retire(struct instances *t, struct instance *in, int64_t now_ms)
{
	for (size_t i = 0; i < t->nlive; i++) {
		if (t->live[i] == in) {
			t->live[i] = t->live[--t->nlive];
			break;
		}
	}
	/* Nothing of it runs any more: its cores and GPUs are free for the next. */
	if (t->cfg.resources)
		resources_release(t->cfg.resources, &in->hold);
	remember(t, in->a->id, in->a->attempt, now_ms);
	in->next_retired = t->retired;
	t->retired = in;
}

void instances_cleanup(struct instances *t)
{
	while (t->retired) {
		struct instance *in = t->retired;

		t->retired = in->next_retired;
		clean_up(t, in);
	}
}

/* Its progress file: where its executor says, on the job's volume, for an
 * instance on another machine; else the runner's own. */
static void instance_progress(const struct instances *t, struct instance *in)
{
	in->progress = executor_progress_file(t->ex, t->cfg.mount, in->a);
	in->progress_remote = in->progress != NULL;
	if (!in->progress)
		in->progress = progress_path(t->cfg.progress_dir, in->a);
}

static char *instance_dir(const struct instances *t, const struct assignment *a)
{
	return xasprintf("%s/%" PRId64 ".%" PRId64, t->dir, a->id, a->attempt);
}

int instances_start(struct instances *t, struct assignment *a, int64_t now_ms)
{
	struct instance *in = NULL;
	json_t *json = NULL;
	char *err = NULL, *dir = NULL;
	json_t *identity;
	struct executor_start req;
	int started = 0;

	if (find(t, a->id, a->attempt) || finished_recently(t, a->id, a->attempt)) {
		log_debug("instance %" PRId64 " attempt %" PRId64 " is already known here; not starting it again",
			  a->id, a->attempt);
		assignment_destroy(a);
		goto out;
	}
	in = xcalloc(1, sizeof *in);
	in->a = a;
	in->use = USAGE_STATE_INIT;
	in->scratch = scratch_path(t->cfg.scratch_root, a);
	instance_progress(t, in);
	if (t->cfg.resources) {
		char *name = xasprintf("%" PRId64 ".%" PRId64, a->id, a->attempt);
		int rc = resources_take(t->cfg.resources, a, name, &in->hold, &err);

		free(name);
		if (rc < 0) {
			log_warnx("job %" PRId64 " stage %s index %" PRId64 ": %s", a->job, a->stage, a->index, err);
			emit(t, INSTANCE_FAILED, a->id, a->attempt, 0, 0, 0, err);
			remember(t, a->id, a->attempt, now_ms);
			goto out;
		}
	}
	if (scratch_prepare(t->pool, in->scratch, a->uid, a->gid, &err) < 0) {
		char *reason = xasprintf("cannot start: %s", err);

		log_warnx("job %" PRId64 " stage %s index %" PRId64 ": %s", a->job, a->stage, a->index, reason);
		emit(t, INSTANCE_FAILED, a->id, a->attempt, 0, 0, 0, reason);
		free(reason);
		remember(t, a->id, a->attempt, now_ms);
		goto out;
	}
	if (t->cfg.on_prepare)
		t->cfg.on_prepare(t->cfg.arg, a, in->progress, in->progress_remote, true);
	json = assignment_to_json(a);
	resources_describe(&in->hold, json);
	dir = instance_dir(t, a);
	identity = identity_decide(a, in->scratch, &err);
	req = (struct executor_start){ .dir = dir, .assignment = json, .mount = t->cfg.mount,
				       .scratch = in->scratch, .progress = in->progress, .identity = identity };
	in->job = identity ? executor_start(t->ex, &req, in, &err) : NULL;
	if (!in->job) {
		log_warnx("job %" PRId64 " stage %s index %" PRId64 ": %s", a->job, a->stage, a->index, err);
		emit(t, INSTANCE_FAILED, a->id, a->attempt, 0, 0, 0, err);
		remember(t, a->id, a->attempt, now_ms);
		remove_scratch(t, in->scratch);
		if (t->cfg.on_retire)
			t->cfg.on_retire(t->cfg.arg, a, in->progress);
		goto out;
	}
	in->state = INST_STARTING;
	in->started_ms = now_ms;
	/* An executor with a queue of its own starts the clock when it runs (settle). */
	if (a->walltime_s > 0 && executor_walltime_ms(t->ex, a->walltime_s) < 0)
		in->wall_deadline_ms = clock_mono_ms(t->cfg.clock) + (int64_t)a->walltime_s * 1000;
	add_live(t, in);
	log_info("starting job %" PRId64 " stage %s index %" PRId64 " (instance %" PRId64
		 " attempt %" PRId64 ") as uid %u, %s %s", a->job, a->stage, a->index,
		 a->id, a->attempt, (unsigned)a->uid, executor_id_label(t->ex), executor_job_id(t->ex, in->job));
	in = NULL;
	started = 1;
out:
	if (in && t->cfg.resources)
		resources_release(t->cfg.resources, &in->hold);
	instance_free(t, in);
	json_decref(json);
	free(dir);
	free(err);
	return started;
}

/* Add what the instance used since it was last counted to the table's total. */
static void count_cpu(struct instances *t, struct instance *in)
{
	int64_t now = in->use.now.cpu_ms;

	if (now < 0)
		return;
	if (in->counted_cpu_ms < 0) {
		/* Reattached: what it used before we came is not in this
		 * runner's intervals. */
		in->counted_cpu_ms = now;
		return;
	}
	if (now > in->counted_cpu_ms) {
		t->cpu_ms_total += now - in->counted_cpu_ms;
		in->counted_cpu_ms = now;
	}
}

/* "out of memory: used 1.2G of mem = 1G" (malloc'ed). */
static char *out_of_memory(int64_t used, uint64_t mem)
{
	char u[32], m[32];

	format_size(used > 0 ? (uint64_t)used : 0, u, sizeof u);
	format_size(mem, m, sizeof m);
	return xasprintf("out of memory: used %s of mem = %s", u, m);
}

/* Act on what the executor says of an instance now (st, only read) and report
 * what changed: running once, then the end (which retires the instance). */
static void settle(struct instances *t, struct instance *in, const struct exec_status *stp, int64_t now_ms)
{
	struct exec_status st = *stp;
	const struct assignment *a = in->a;

	if (in->state == INST_STARTING && st.state == EXEC_STARTING) {
		if (!st.reason != !in->wait_reason || (st.reason && strcmp(st.reason, in->wait_reason) != 0)) {
			free(in->wait_reason);
			in->wait_reason = st.reason ? xstrdup(st.reason) : NULL;
		}
		return;
	}
	if (in->state == INST_STARTING && st.state != EXEC_STARTING && st.state != EXEC_FAILED) {
		free(in->wait_reason);
		in->wait_reason = NULL;
		/* Told a little later (instances_tick): an instance that ends before
		 * then is reported once, its end carrying its pid, which saves the
		 * scheduler a request and a commit per short instance. */
		in->state = INST_RUNNING;
		if (a->walltime_s > 0 && st.state == EXEC_RUNNING &&
		    executor_walltime_ms(t->ex, a->walltime_s) >= 0)
			in->wall_deadline_ms = clock_mono_ms(t->cfg.clock) +
					       executor_walltime_ms(t->ex, a->walltime_s);
		in->pid = st.pid;
		in->host_started_ms = st.started_ms;
		in->tell_running_ms = now_ms + RUNNING_REPORT_DELAY_MS;
	}
	if (st.state == EXEC_FAILED) {
		log_warnx("job %" PRId64 " stage %s index %" PRId64 ": %s", a->job, a->stage, a->index,
			  st.reason ? st.reason : "cannot start");
		emit(t, INSTANCE_FAILED, a->id, a->attempt, st.pid, 0, 0,
		     st.reason ? st.reason : "cannot start");
		retire(t, in, now_ms);
	} else if (st.state == EXEC_EXITED) {
		struct instance_event ev = { .kind = INSTANCE_EXITED, .pid = st.pid,
					     .exit_code = st.exit_code < 0 ? 0 : st.exit_code,
					     .signal = st.signal, .ended_ms = st.ended_ms };
		char *oom = NULL;

		if (st.started_ms > 0)
			in->host_started_ms = st.started_ms;
		usage_finish(&in->use, in->hold.cgroup, st.cpu_ms, st.max_rss);
		count_cpu(t, in);
		/* With memory.max the kernel stopped it, not we. */
		if (!in->stop_reason && in->a->mem > 0 && in->use.oom_kills > 0)
			oom = out_of_memory(in->use.now.max_rss, in->a->mem);
		ev.reason = in->stop_reason ? in->stop_reason : oom ? oom : st.reason;
		ev.usage = in->use.now;
		ev.slurm_state = st.batch_state;
		log_info("job %" PRId64 " stage %s index %" PRId64 " (instance %" PRId64
			 ") %s %d after %.1f s%s%s", a->job, a->stage, a->index, a->id,
			 st.signal ? "killed by signal" : "exited with", st.signal ? st.signal : st.exit_code,
			 (double)(now_ms - in->started_ms) / 1000.0, ev.reason ? ", " : "", ev.reason ? ev.reason : "");
		emit_ran(t, in, &ev);
		free(oom);
		retire(t, in, now_ms);
	}
}

/* The executor's callback (executor.h): the owner is the instance. */
static void changed(void *arg, void *owner, const struct exec_status *st, int64_t now_ms)
{
	settle(arg, owner, st, now_ms);
}

static void signal_instance(struct instances *t, struct instance *in, int sig)
{
	if (executor_signal(t->ex, in->job, sig) < 0 && errno != ESRCH)
		log_warn("cannot send signal %d to instance %" PRId64, sig, in->a->id);
}

/* SIGTERM now and SIGKILL later (or SIGKILL now); the first reason sticks. */
static void stop(struct instances *t, struct instance *in, const char *reason, int kill_now, int64_t now_ms)
{
	if (!in->stop_reason) {
		in->stop_reason = xstrdup(reason);
		executor_set_stop(t->ex, in->job, reason);
	}
	if (kill_now || t->cfg.grace_ms <= 0) {
		signal_instance(t, in, SIGKILL);
		in->kill_at_ms = 0;
		return;
	}
	if (in->kill_at_ms)
		return;  /* already on its way out */
	signal_instance(t, in, SIGTERM);
	in->kill_at_ms = now_ms + t->cfg.grace_ms;
}

void instances_cancel(struct instances *t, int64_t id, int64_t attempt, const char *reason, int64_t now_ms)
{
	struct instance *in = find(t, id, attempt);

	if (in) {
		log_info("stopping instance %" PRId64 " attempt %" PRId64 " (%s)", id, attempt, reason);
		stop(t, in, reason, 0, now_ms);
		return;
	}
	/* Never started here: make sure a late assignment does not start it, and
	 * tell the scheduler it is over. */
	instances_refuse(t, id, attempt, "cancelled before it started", now_ms);
}

void instances_refuse(struct instances *t, int64_t id, int64_t attempt, const char *reason, int64_t now_ms)
{
	if (find(t, id, attempt) || finished_recently(t, id, attempt))
		return;  /* its end is already reported (or on its way) */
	remember(t, id, attempt, now_ms);
	emit(t, INSTANCE_FAILED, id, attempt, 0, 0, 0, reason);
}

void instances_stop_all(struct instances *t, const char *reason, int kill_now, int64_t now_ms)
{
	for (size_t i = 0; i < t->nlive; i++)
		stop(t, t->live[i], reason, kill_now, now_ms);
}

void instances_reap(struct instances *t, int64_t now_ms)
{
	executor_poll(t->ex, now_ms);
}

size_t instances_status_fds(const struct instances *t, int *fds, size_t max)
{
	return executor_fds(t->ex, fds, max);
}

void instances_status_ready(struct instances *t, int fd, int64_t now_ms)
{
	executor_ready(t->ex, fd, now_ms);
}

int64_t instances_tick(struct instances *t, int64_t now_ms)
{
	/* Walltime deadlines are on the clock, which a test may have moved. */
	int64_t next = -1, shift = clock_offset_ms(t->cfg.clock), t_ex;

	for (size_t i = 0; i < t->nlive; i++) {
		struct instance *in = t->live[i];

		if (in->tell_running_ms && now_ms >= in->tell_running_ms) {
			struct instance_event ev = { .kind = INSTANCE_RUNNING, .pid = in->pid,
						     .usage = INSTANCE_USAGE_UNKNOWN };

			in->tell_running_ms = 0;
			emit_ran(t, in, &ev);
		}
		if (in->tell_running_ms && (next < 0 || in->tell_running_ms < next))
			next = in->tell_running_ms;
		if (in->wall_deadline_ms && now_ms + shift >= in->wall_deadline_ms) {
			in->wall_deadline_ms = 0;
			log_info("instance %" PRId64 " reached its walltime of %" PRIu64 " s",
				 in->a->id, in->a->walltime_s);
			stop(t, in, "walltime", 0, now_ms);
		}
		if (in->kill_at_ms && now_ms >= in->kill_at_ms) {
			in->kill_at_ms = 0;
			log_info("instance %" PRId64 " outlived the grace period: SIGKILL", in->a->id);
			signal_instance(t, in, SIGKILL);
		}
		if (in->wall_deadline_ms && (next < 0 || in->wall_deadline_ms - shift < next))
			next = in->wall_deadline_ms - shift;
		if (in->kill_at_ms && (next < 0 || in->kill_at_ms < next))
			next = in->kill_at_ms;
	}
	while (t->ring_n > 0 && now_ms - t->ring[t->ring_head].ended_ms > FINISHED_KEEP_MS) {
		t->ring_head = (t->ring_head + 1) % FINISHED_MAX;
		t->ring_n--;
	}
	/* The executor's own timers (a batched query per poll cycle). */
	t_ex = executor_tick(t->ex, now_ms);
	if (t_ex >= 0 && (next < 0 || t_ex < next))
		next = t_ex;
	return next;
}

/* One folder an earlier runner left: reattach or report its end. */
static void reattach_one(struct instances *t, const char *dir, int64_t now_ms)
{
	struct instance *in = xcalloc(1, sizeof *in);
	struct exec_status st = { 0 };
	json_t *json = NULL;
	char *err = NULL;

	/* The instance is the job's owner before it is filled in: the executor
	 * calls back only from ready, poll and tick. */
	in->job = executor_reattach(t->ex, dir, in, &json, &st, &err);
	if (!in->job) {
		/* A runner killed while it wrote the assignment: nothing ran. */
		log_warnx("%s; removing it", err ? err : dir);
		free(err);
		err = NULL;
		if (scratch_remove(dir, &err) < 0)
			log_warnx("%s", err);
		free(err);
		free(in);
		return;
	}
	in->use = USAGE_STATE_INIT;
	in->counted_cpu_ms = -1;
	in->a = assignment_from_json(json, &err);
	/* The cores and GPUs it had stay its own. */
	if (in->a && t->cfg.resources)
		resources_reclaim(t->cfg.resources, json, &in->hold);
	json_decref(json);
	if (!in->a) {
		log_warnx("%s: %s; removing it", dir, err ? err : "bad assignment");
		executor_forget(t->ex, in->job);
		instance_free(t, in);
		exec_status_clear(&st);
		free(err);
		return;
	}
	in->scratch = scratch_path(t->cfg.scratch_root, in->a);
	instance_progress(t, in);
	if (executor_stop_reason(t->ex, in->job))
		in->stop_reason = xstrdup(executor_stop_reason(t->ex, in->job));
	in->state = st.state == EXEC_STARTING ? INST_STARTING : INST_RUNNING;
	in->pid = st.pid;
	in->host_started_ms = st.started_ms;
	/* Walltime counts from the real start, which was before we came. */
	in->started_ms = now_ms - (st.started_ms > 0 ? time_now_ms() - st.started_ms : 0);
	if (in->a->walltime_s > 0 && executor_walltime_ms(t->ex, in->a->walltime_s) < 0)
		in->wall_deadline_ms = in->started_ms + clock_offset_ms(t->cfg.clock) +
				       (int64_t)in->a->walltime_s * 1000;
	if (t->cfg.on_prepare)
		t->cfg.on_prepare(t->cfg.arg, in->a, in->progress, in->progress_remote, false);
	add_live(t, in);
	if (st.state == EXEC_RUNNING)
		log_info("reattached to job %" PRId64 " stage %s index %" PRId64 " (instance %" PRId64
			 " attempt %" PRId64 ", pid %d)", in->a->job, in->a->stage, in->a->index,
			 in->a->id, in->a->attempt, (int)st.pid);
	/* Report what ended while no runner watched (it retires those). */
	settle(t, in, &st, now_ms);
	exec_status_clear(&st);
	free(err);
}

size_t instances_reattach(struct instances *t, int64_t now_ms)
{
	DIR *d = opendir(t->dir);
	struct dirent *de;

	if (!d) {
		log_warn("cannot open %s", t->dir);
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		char *dir;

		if (de->d_name[0] == '.')
			continue;
		dir = xasprintf("%s/%s", t->dir, de->d_name);
		reattach_one(t, dir, now_ms);
		free(dir);
	}
	closedir(d);
	if (t->nlive)
		log_info("%zu instance(s) of an earlier runner still run here: reattached", t->nlive);
	return t->nlive;
}

/* Past its mem: stopped at once, its group killed (the kernel does it
 * first for one with memory.max; then its end tells). */
static void enforce_mem(struct instances *t, struct instance *in, int64_t now_ms)
{
	const struct assignment *a = in->a;
	char *reason;

	if (a->mem == 0 || in->stop_reason || in->use.now.rss <= (int64_t)a->mem)
		return;
	reason = out_of_memory(in->use.now.rss, a->mem);
	log_info("job %" PRId64 " stage %s index %" PRId64 " (instance %" PRId64 "): %s; killing it",
		 a->job, a->stage, a->index, a->id, reason);
	stop(t, in, reason, 1, now_ms);
	free(reason);
}

void instances_sample(struct instances *t, int64_t now_ms, struct instances_use *use)
{
	struct usage_target *targets = xcalloc(t->nlive + 1, sizeof *targets);
	struct instance **which = xcalloc(t->nlive + 1, sizeof *which);
	size_t n = 0;
	char *err = NULL;

	use->rss = 0;
	for (size_t i = 0; i < t->nlive && t->cfg.usage; i++) {
		struct instance *in = t->live[i];

		if (in->state != INST_RUNNING || in->pid <= 0)
			continue;
		targets[n] = (struct usage_target){ .pid = in->pid, .cgroup = in->hold.cgroup, .state = &in->use };
		which[n++] = in;
	}
	if (n > 0 && usage_sample(t->cfg.usage, targets, n, &err) < 0) {
		if (!t->usage_failing)
			log_warnx("cannot measure the instances: %s", err);
		t->usage_failing = 1;
	} else if (n > 0) {
		t->usage_failing = 0;
	}
	free(err);
	for (size_t i = 0; i < n; i++) {
		count_cpu(t, which[i]);
		if (which[i]->use.now.rss > 0)
			use->rss += (uint64_t)which[i]->use.now.rss;
		enforce_mem(t, which[i], now_ms);
	}
	use->cpu_ms = t->cpu_ms_total;
	free(targets);
	free(which);
}

size_t instances_active(const struct instances *t)
{
	return t->nlive;
}

size_t instances_heartbeat(const struct instances *t, struct heartbeat_entry **out)
{
	struct heartbeat_entry *entries = xcalloc(t->nlive + 1, sizeof *entries);

	for (size_t i = 0; i < t->nlive; i++) {
		const struct instance *in = t->live[i];

		entries[i] = (struct heartbeat_entry){ .id = in->a->id, .attempt = (int)in->a->attempt,
						       .pid = (int)in->pid, .usage = in->use.now,
						       .slurm_job = outside_id(t, in),
						       .slurm_reason = in->state == INST_STARTING ?
								       in->wait_reason : NULL };
	}
	*out = entries;
	return t->nlive;
}

long instances_running_cpus(const struct instances *t)
{
	long cpus = 0;

	for (size_t i = 0; i < t->nlive; i++)
		if (t->live[i]->state == INST_RUNNING)
			cpus += t->live[i]->a->cpus > 0 ? t->live[i]->a->cpus : 1;
	return cpus;
}

json_t *instances_list_json(const struct instances *t)
{
	struct heartbeat_entry *entries;
	size_t n = instances_heartbeat(t, &entries);
	json_t *list = heartbeat_instances_to_json(entries, n);

	free(entries);
	return list;
}
