#include "instances.h"
#include "launch.h"
#include "log.h"
#include "scratch.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* How long, and how many, finished id+attempt pairs are remembered: longer
 * than the scheduler takes to stop re-sending an assignment it has seen confirmed. */
#define FINISHED_KEEP_MS (10 * 60 * 1000)
#define FINISHED_MAX 4096

enum inst_state {
	INST_STARTING,   /* forked; the status pipe has not said how set-up went */
	INST_RUNNING,    /* reached exec */
	INST_FAILED,     /* set-up failed and was reported; waiting to reap the child */
};

struct instance {
	struct assignment *a;
	struct launch *proc;
	char *scratch;
	enum inst_state state;
	int64_t started_ms;
	int64_t wall_deadline_ms; /* 0: no walltime (or already acted on) */
	int64_t kill_at_ms;       /* 0: no SIGKILL pending */
	const char *stop_reason;  /* static string once we signalled it */
};

struct finished {
	int64_t id, attempt;
	int64_t ended_ms;
};

struct instances {
	struct instances_config cfg;
	struct instance **live;
	size_t nlive, caplive;
	struct finished ring[FINISHED_MAX]; /* oldest at ring_head */
	size_t ring_head, ring_n;
};

static void emit(struct instances *t, enum instance_event_kind kind, int64_t id, int64_t attempt,
		 pid_t pid, int exit_code, int sig, const char *reason)
{
	struct instance_event ev = {
		.kind = kind, .id = id, .attempt = attempt, .pid = pid,
		.exit_code = exit_code, .signal = sig, .reason = reason,
	};

	if (t->cfg.on_event)
		t->cfg.on_event(t->cfg.arg, &ev);
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

static struct instance *find_pid(const struct instances *t, pid_t pid)
{
	for (size_t i = 0; i < t->nlive; i++)
		if (launch_pid(t->live[i]->proc) == pid)
			return t->live[i];
	return NULL;
}

struct instances *instances_create(const struct instances_config *cfg)
{
	struct instances *t = xcalloc(1, sizeof *t);

	t->cfg = *cfg;
	t->cfg.mount = xstrdup(cfg->mount);
	t->cfg.scratch_root = xstrdup(cfg->scratch_root);
	return t;
}

static void instance_free(struct instance *in)
{
	if (!in)
		return;
	launch_destroy(in->proc);
	assignment_destroy(in->a);
	free(in->scratch);
	free(in);
}

void instances_destroy(struct instances *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nlive; i++)
		instance_free(t->live[i]);
	free(t->live);
	free((char *)t->cfg.mount);
	free((char *)t->cfg.scratch_root);
	free(t);
}

static void remove_scratch(const char *path)
{
	char *err = NULL;

	if (scratch_remove(path, &err) < 0)
		log_warnx("%s", err);
	free(err);
}

/* Take an ended instance out of the table, remember it, clean up after it. */
static void retire(struct instances *t, struct instance *in, int64_t now_ms)
{
	for (size_t i = 0; i < t->nlive; i++) {
		if (t->live[i] == in) {
			t->live[i] = t->live[--t->nlive];
			break;
		}
	}
	remember(t, in->a->id, in->a->attempt, now_ms);
	remove_scratch(in->scratch);
	instance_free(in);
}

int instances_start(struct instances *t, struct assignment *a, int64_t now_ms)
{
	struct instance *in = NULL;
	struct launch_request req;
	char *err = NULL;
	int started = 0;

	if (find(t, a->id, a->attempt) || finished_recently(t, a->id, a->attempt)) {
		log_debug("instance %" PRId64 " attempt %" PRId64 " is already known here; not starting it again",
			  a->id, a->attempt);
		assignment_destroy(a);
		goto out;
	}
	in = xcalloc(1, sizeof *in);
	in->a = a;
	in->scratch = scratch_path(t->cfg.scratch_root, a);
	if (scratch_prepare(in->scratch, a->uid, a->gid, &err) < 0) {
		char *reason = xasprintf("cannot start: %s", err);

		log_warnx("job %" PRId64 " stage %s index %" PRId64 ": %s", a->job, a->stage, a->index, reason);
		emit(t, INSTANCE_FAILED, a->id, a->attempt, 0, 0, 0, reason);
		free(reason);
		remember(t, a->id, a->attempt, now_ms);
		goto out;
	}
	req = (struct launch_request){ .a = a, .mount = t->cfg.mount, .scratch = in->scratch };
	in->proc = launch_create(&req, &err);
	if (!in->proc) {
		log_warnx("job %" PRId64 " stage %s index %" PRId64 ": %s", a->job, a->stage, a->index, err);
		emit(t, INSTANCE_FAILED, a->id, a->attempt, 0, 0, 0, err);
		remember(t, a->id, a->attempt, now_ms);
		remove_scratch(in->scratch);
		goto out;
	}
	in->state = INST_STARTING;
	in->started_ms = now_ms;
	if (a->walltime_s > 0)
		in->wall_deadline_ms = now_ms + (int64_t)a->walltime_s * 1000;
	if (t->nlive == t->caplive) {
		t->caplive = t->caplive ? t->caplive * 2 : 16;
		t->live = xrealloc(t->live, t->caplive * sizeof *t->live);
	}
	t->live[t->nlive++] = in;
	log_info("started job %" PRId64 " stage %s index %" PRId64 " (instance %" PRId64
		 " attempt %" PRId64 ") as uid %u, pid %d", a->job, a->stage, a->index,
		 a->id, a->attempt, (unsigned)a->uid, (int)launch_pid(in->proc));
	in = NULL;
	started = 1;
out:
	instance_free(in);
	free(err);
	return started;
}

/* Read the outcome of set-up if it is known; report running or failed once. */
static void settle(struct instances *t, struct instance *in)
{
	char *reason = NULL;
	int rc;

	if (in->state != INST_STARTING)
		return;
	rc = launch_poll(in->proc, &reason);
	if (rc > 0) {
		in->state = INST_RUNNING;
		emit(t, INSTANCE_RUNNING, in->a->id, in->a->attempt, launch_pid(in->proc), 0, 0, NULL);
	} else if (rc < 0) {
		in->state = INST_FAILED;
		log_warnx("job %" PRId64 " stage %s index %" PRId64 ": %s",
			  in->a->job, in->a->stage, in->a->index, reason);
		emit(t, INSTANCE_FAILED, in->a->id, in->a->attempt, launch_pid(in->proc), 0, 0, reason);
	}
	free(reason);
}

static void signal_instance(struct instance *in, int sig)
{
	if (launch_signal(in->proc, sig) < 0 && errno != ESRCH)
		log_warn("cannot send signal %d to instance %" PRId64 " (pid %d)",
			 sig, in->a->id, (int)launch_pid(in->proc));
}

/* SIGTERM now and SIGKILL later (or SIGKILL now); the first reason sticks. */
static void stop(struct instances *t, struct instance *in, const char *reason, int kill_now, int64_t now_ms)
{
	if (!in->stop_reason)
		in->stop_reason = reason;
	if (kill_now || t->cfg.grace_ms <= 0) {
		signal_instance(in, SIGKILL);
		in->kill_at_ms = 0;
		return;
	}
	if (in->kill_at_ms)
		return;  /* already on its way out */
	signal_instance(in, SIGTERM);
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
	for (;;) {
		siginfo_t si;
		struct instance *in;
		int status;
		pid_t pid;

		/* Look without reaping first: while the leader is a zombie its pid,
		 * and so its process group id, cannot be reused, which makes the
		 * SIGKILL of leftovers below safe. */
		memset(&si, 0, sizeof si);
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
			break;
		pid = si.si_pid;
		in = find_pid(t, pid);
		if (in)
			launch_signal(in->proc, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		if (!in)
			continue;  /* not an instance (cannot happen today) */
		settle(t, in);
		if (in->state == INST_RUNNING) {
			int code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
			int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;

			log_info("job %" PRId64 " stage %s index %" PRId64 " (instance %" PRId64
				 ") %s %d after %.1f s%s%s", in->a->job, in->a->stage, in->a->index,
				 in->a->id, sig ? "killed by signal" : "exited with", sig ? sig : code,
				 (double)(now_ms - in->started_ms) / 1000.0,
				 in->stop_reason ? ", " : "", in->stop_reason ? in->stop_reason : "");
			emit(t, INSTANCE_EXITED, in->a->id, in->a->attempt, pid, code, sig, in->stop_reason);
		}
		retire(t, in, now_ms);
	}
}

size_t instances_status_fds(const struct instances *t, int *fds, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nlive && n < max; i++) {
		int fd = launch_status_fd(t->live[i]->proc);

		if (t->live[i]->state == INST_STARTING && fd >= 0)
			fds[n++] = fd;
	}
	return n;
}

void instances_status_ready(struct instances *t, int fd)
{
	for (size_t i = 0; i < t->nlive; i++) {
		if (t->live[i]->state == INST_STARTING && launch_status_fd(t->live[i]->proc) == fd) {
			settle(t, t->live[i]);
			return;
		}
	}
}

int64_t instances_tick(struct instances *t, int64_t now_ms)
{
	int64_t next = -1;

	for (size_t i = 0; i < t->nlive; i++) {
		struct instance *in = t->live[i];

		if (in->wall_deadline_ms && now_ms >= in->wall_deadline_ms) {
			in->wall_deadline_ms = 0;
			log_info("instance %" PRId64 " reached its walltime of %" PRIu64 " s",
				 in->a->id, in->a->walltime_s);
			stop(t, in, "walltime", 0, now_ms);
		}
		if (in->kill_at_ms && now_ms >= in->kill_at_ms) {
			in->kill_at_ms = 0;
			log_info("instance %" PRId64 " outlived the grace period: SIGKILL", in->a->id);
			signal_instance(in, SIGKILL);
		}
		if (in->wall_deadline_ms && (next < 0 || in->wall_deadline_ms < next))
			next = in->wall_deadline_ms;
		if (in->kill_at_ms && (next < 0 || in->kill_at_ms < next))
			next = in->kill_at_ms;
	}
	while (t->ring_n > 0 && now_ms - t->ring[t->ring_head].ended_ms > FINISHED_KEEP_MS) {
		t->ring_head = (t->ring_head + 1) % FINISHED_MAX;
		t->ring_n--;
	}
	return next;
}

size_t instances_active(const struct instances *t)
{
	return t->nlive;
}

json_t *instances_list_json(const struct instances *t)
{
	json_t *list = json_array();

	for (size_t i = 0; i < t->nlive; i++) {
		const struct instance *in = t->live[i];

		json_array_append_new(list, json_pack("{s:I, s:I, s:i}", "id", (json_int_t)in->a->id,
						      "attempt", (json_int_t)in->a->attempt,
						      "pid", (int)launch_pid(in->proc)));
	}
	return list;
}
