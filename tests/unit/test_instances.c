/* The runner's instance table: events for start and end, no id+attempt started
 * twice, cancel and walltime (SIGTERM, SIGKILL after the grace period), the
 * scratch folder's life, leftovers of a finished instance killed; and with
 * real processes: times stamped on the host, the CPU time of the tree, an
 * instance past its mem killed while its neighbour lives on, instances
 * pinned to cores of their own; and without processes, through the fake
 * executor (fake_executor.h): start, a failed start, cancel, an instance
 * lost, and a second table reattaching to what the first left. */
#include "assign.h"
#include "fake_executor.h"
#include "instances.h"
#include "log.h"
#include "resources.h"
#include "supervise.h"
#include "tap.h"
#include "usage.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

TAP_STATE;

#define MAX_EVENTS 64

struct recorded {
	struct instance_event ev;
	char reason[256];
	char cpu_list[64];
	int64_t at_ms;
};

static struct {
	struct recorded ev[MAX_EVENTS];
	int n;
} events;

static char *mount_dir;
static char *scratch_root;

static void on_event(void *arg, const struct instance_event *ev)
{
	(void)arg;
	if (events.n >= MAX_EVENTS)
		return;
	events.ev[events.n].ev = *ev;
	snprintf(events.ev[events.n].reason, sizeof events.ev[events.n].reason, "%s", ev->reason ? ev->reason : "");
	events.ev[events.n].ev.reason = NULL;
	snprintf(events.ev[events.n].cpu_list, sizeof events.ev[events.n].cpu_list, "%s",
		 ev->cpu_list ? ev->cpu_list : "");
	events.ev[events.n].ev.cpu_list = events.ev[events.n].ev.gpu_list = NULL;
	events.ev[events.n].at_ms = time_mono_ms();
	events.n++;
}

static const struct recorded *find_event(int64_t id, int64_t attempt, enum instance_event_kind kind)
{
	for (int i = 0; i < events.n; i++)
		if (events.ev[i].ev.id == id && events.ev[i].ev.attempt == attempt && events.ev[i].ev.kind == kind)
			return &events.ev[i];
	return NULL;
}

static int count_events(int64_t id, int64_t attempt)
{
	int n = 0;

	for (int i = 0; i < events.n; i++)
		n += events.ev[i].ev.id == id && events.ev[i].ev.attempt == attempt;
	return n;
}

static void make_dirs(int64_t job, const char *stage, int64_t index)
{
	char *a = xasprintf("%s/jobs/%" PRId64 "/stages/%s/instances/%" PRId64, mount_dir, job, stage, index);
	char *b = xasprintf("%s/jobs/%" PRId64 "/out/%s", mount_dir, job, stage);

	mkdir_p(a, 0755);
	mkdir_p(b, 0755);
	free(a);
	free(b);
}

/* extra: more members (mem, cpus), taken; NULL for none. */
static struct assignment *assignment_with(int64_t id, int64_t attempt, int64_t job, const char *stage,
					  const char *run, uint64_t walltime_s, json_t *extra)
{
	struct passwd *pw = getpwuid(geteuid());
	json_t *j = json_pack("{s:I, s:I, s:I, s:s, s:i, s:s, s:I, s:i, s:i, s:s}",
			      "id", (json_int_t)id, "attempt", (json_int_t)attempt, "job", (json_int_t)job,
			      "stage", stage, "index", 0, "run", run, "walltime_s", (json_int_t)walltime_s,
			      "uid", (int)geteuid(), "gid", (int)getegid(), "user", pw ? pw->pw_name : "");
	char *err = NULL;
	struct assignment *a;

	if (extra)
		json_object_update_new(j, extra);
	a = assignment_from_json(j, &err);

	if (!a)
		diag("assignment: %s", err);
	free(err);
	json_decref(j);
	return a;
}

static struct assignment *assignment(int64_t id, int64_t attempt, int64_t job, const char *stage,
				     const char *run, uint64_t walltime_s)
{
	return assignment_with(id, attempt, job, stage, run, walltime_s, NULL);
}

/* Drive the table as the main loop would until cond() holds or ms pass. */
static int drive(struct instances *t, int ms, int (*cond)(void *), void *arg)
{
	int64_t end = time_mono_ms() + ms, next_sample = 0;

	while (time_mono_ms() < end) {
		int fds[16];
		struct pollfd pfd[16];
		size_t n = instances_status_fds(t, fds, 16);

		for (size_t i = 0; i < n; i++)
			pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
		poll(pfd, n, 10);
		if (n == 0)
			usleep(5000);
		for (size_t i = 0; i < n; i++)
			if (pfd[i].revents)
				instances_status_ready(t, pfd[i].fd, time_mono_ms());
		instances_reap(t, time_mono_ms());
		instances_tick(t, time_mono_ms());
		if (time_mono_ms() >= next_sample) {
			struct instances_use use;

			instances_sample(t, time_mono_ms(), &use);
			next_sample = time_mono_ms() + USAGE_INTERVAL_MS;
		}
		/* As the runner's loop does, once the reports went. */
		instances_cleanup(t);
		if (cond && cond(arg))
			return 1;
	}
	return 0;
}

struct want {
	int64_t id, attempt;
	enum instance_event_kind kind;
};

static int has_event(void *arg)
{
	struct want *w = arg;

	return find_event(w->id, w->attempt, w->kind) != NULL;
}

static int wait_event(struct instances *t, int64_t id, int64_t attempt, enum instance_event_kind kind, int ms)
{
	struct want w = { id, attempt, kind };

	return drive(t, ms, has_event, &w);
}

static int exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static void test_lifecycle(struct instances *t)
{
	struct assignment *a = assignment(1, 1, 100, "one",
					  "test -d \"$PARSA_SCRATCH\" && test -w \"$PARSA_SCRATCH\" && echo scratch-ok;"
					  " touch \"$PARSA_SCRATCH/file\"; mkdir -p \"$PARSA_SCRATCH/d/e\";"
					  " ln -s /etc \"$PARSA_SCRATCH/d/link\"; sleep 0.3; exit 4", 0);
	char *scratch = xasprintf("%s/100.one.0", scratch_root);
	char *log = NULL, *logpath = xasprintf("%s/jobs/100/stages/one/instances/0/log", mount_dir);
	const struct recorded *run, *end;
	json_t *list;

	make_dirs(100, "one", 0);
	is_int(instances_start(t, a, time_mono_ms()), 1, "an assignment starts");
	ok(exists(scratch), "its scratch folder exists before it runs");
	ok(wait_event(t, 1, 1, INSTANCE_RUNNING, 5000), "it reports running");
	run = find_event(1, 1, INSTANCE_RUNNING);
	ok(run && run->ev.pid > 0, "with a pid");
	is_int(instances_active(t), 1, "one active instance");
	list = instances_list_json(t);
	ok(json_array_size(list) == 1 &&
	   json_integer_value(json_object_get(json_array_get(list, 0), "id")) == 1 &&
	   json_integer_value(json_object_get(json_array_get(list, 0), "pid")) == (run ? run->ev.pid : -1),
	   "the heartbeat list names it with its pid");
	json_decref(list);

	/* The scheduler sends an assignment again until it hears "running". */
	is_int(instances_start(t, assignment(1, 1, 100, "one", "echo twice", 0), time_mono_ms()), 0,
	       "the same id and attempt is not started again while it runs");
	ok(wait_event(t, 1, 1, INSTANCE_EXITED, 5000), "it reports its end");
	end = find_event(1, 1, INSTANCE_EXITED);
	ok(end && end->ev.exit_code == 4 && end->ev.signal == 0 && end->reason[0] == '\0',
	   "exit code 4, no signal, no reason");
	is_int(instances_active(t), 0, "nothing active");
	ok(!exists(scratch), "the scratch folder is gone, symlink and all");
	ok(exists("/etc/passwd"), "and the link's target is untouched");
	log = read_file(logpath, 1 << 20, NULL);
	ok(log && strstr(log, "scratch-ok"), "the scratch folder was there and writable");
	is_int(instances_start(t, assignment(1, 1, 100, "one", "echo again", 0), time_mono_ms()), 0,
	       "nor after it finished");
	is_int(count_events(1, 1), 2, "two events in all: running and exited");
	free(log);
	free(logpath);
	free(scratch);
}

/* An instance that ends before its start is told is reported once: its end,
 * with its pid (the scheduler takes that as the start). */
static void test_short(struct instances *t)
{
	const struct recorded *end;

	make_dirs(120, "quick", 0);
	is_int(instances_start(t, assignment(20, 1, 120, "quick", "exit 0", 0), time_mono_ms()), 1,
	       "a short instance starts");
	ok(wait_event(t, 20, 1, INSTANCE_EXITED, 5000), "it reports its end");
	end = find_event(20, 1, INSTANCE_EXITED);
	ok(end && end->ev.pid > 0, "with the pid it ran as");
	ok(!find_event(20, 1, INSTANCE_RUNNING), "and no separate start");
	is_int(count_events(20, 1), 1, "one event in all");
}

static void test_failed_start(struct instances *t)
{
	const struct recorded *f;
	char *scratch = xasprintf("%s/101.nolog.0", scratch_root);

	/* No instance folder on the mount, so the child cannot open its log. */
	is_int(instances_start(t, assignment(2, 1, 101, "nolog", "echo x", 0), time_mono_ms()), 1, "forked");
	ok(wait_event(t, 2, 1, INSTANCE_FAILED, 5000), "a set-up failure is reported as failed");
	f = find_event(2, 1, INSTANCE_FAILED);
	ok(f && strncmp(f->reason, "cannot start: cannot open the log", 33) == 0, "with the reason: %s",
	   f ? f->reason : "(none)");
	drive(t, 300, NULL, NULL);
	ok(!find_event(2, 1, INSTANCE_EXITED) && !find_event(2, 1, INSTANCE_RUNNING), "and never as running or exited");
	is_int(instances_active(t), 0, "the child was reaped");
	ok(!exists(scratch), "its scratch folder is removed");
	free(scratch);
}

static int log_says_ready(void *arg)
{
	char *path = xasprintf("%s/%s", mount_dir, (const char *)arg), *text = read_file(path, 1 << 20, NULL);
	int ready = text && strstr(text, "ready");

	free(text);
	free(path);
	return ready;
}

static void test_cancel(struct instances *t)
{
	const struct recorded *end;
	int64_t t0;

	make_dirs(102, "stubborn", 0);
	make_dirs(103, "polite", 0);
	instances_start(t, assignment(3, 1, 102, "stubborn", "trap '' TERM; sleep 300 & echo ready; wait; wait", 0),
			time_mono_ms());
	instances_start(t, assignment(4, 2, 103, "polite", "sleep 300", 0), time_mono_ms());
	ok(wait_event(t, 3, 1, INSTANCE_RUNNING, 5000) && wait_event(t, 4, 2, INSTANCE_RUNNING, 5000), "both run");
	/* Running means exec'ed, not that the shell has set its trap yet. */
	ok(drive(t, 5000, log_says_ready, "jobs/102/stages/stubborn/instances/0/log"), "the stubborn one ignores TERM now");
	t0 = time_mono_ms();
	instances_cancel(t, 3, 1, "cancelled", t0);
	instances_cancel(t, 4, 2, "cancelled", t0);
	ok(wait_event(t, 4, 2, INSTANCE_EXITED, 5000), "the polite one ends");
	end = find_event(4, 2, INSTANCE_EXITED);
	ok(end && end->ev.signal == SIGTERM && strcmp(end->reason, "cancelled") == 0,
	   "by SIGTERM, reason cancelled (signal %d, %s)", end ? end->ev.signal : 0, end ? end->reason : "");
	ok(end && end->at_ms - t0 < 250, "at once (%" PRId64 " ms)", end ? end->at_ms - t0 : -1);
	ok(wait_event(t, 3, 1, INSTANCE_EXITED, 5000), "the stubborn one ends too");
	end = find_event(3, 1, INSTANCE_EXITED);
	ok(end && end->ev.signal == SIGKILL && strcmp(end->reason, "cancelled") == 0,
	   "by SIGKILL, reason cancelled (signal %d)", end ? end->ev.signal : 0);
	ok(end && end->at_ms - t0 >= 300, "after the grace period (%" PRId64 " ms)", end ? end->at_ms - t0 : -1);

	/* A cancel for something never started here. */
	instances_cancel(t, 5, 1, "cancelled", time_mono_ms());
	ok(find_event(5, 1, INSTANCE_FAILED) && strcmp(find_event(5, 1, INSTANCE_FAILED)->reason,
							"cancelled before it started") == 0,
	   "a cancel for an unknown instance is reported failed");
	is_int(instances_start(t, assignment(5, 1, 102, "stubborn", "echo late", 0), time_mono_ms()), 0,
	       "and a late assignment for it does not start");
	make_dirs(102, "late", 0);
	is_int(instances_start(t, assignment(5, 2, 102, "late", "exit 0", 0), time_mono_ms()), 1,
	       "a new attempt of it does");
	ok(wait_event(t, 5, 2, INSTANCE_EXITED, 5000), "and ends");
}

static void test_walltime(struct instances *t)
{
	const struct recorded *end;
	int64_t t0 = time_mono_ms();

	make_dirs(104, "slow", 0);
	instances_start(t, assignment(6, 1, 104, "slow", "sleep 300", 1), t0);
	ok(wait_event(t, 6, 1, INSTANCE_EXITED, 5000), "an instance past its walltime is stopped");
	end = find_event(6, 1, INSTANCE_EXITED);
	ok(end && end->ev.signal == SIGTERM && strcmp(end->reason, "walltime") == 0,
	   "by SIGTERM with reason walltime");
	ok(end && end->at_ms - t0 >= 1000 && end->at_ms - t0 < 2000, "after 1 s (%" PRId64 " ms)",
	   end ? end->at_ms - t0 : -1);
}

static void test_leftovers(struct instances *t)
{
	char *pidfile = xasprintf("%s/jobs/105/out/bg/bg.pid", mount_dir), *text;
	int bg = 0;

	make_dirs(105, "bg", 0);
	instances_start(t, assignment(7, 1, 105, "bg", "sleep 300 & echo $! > \"$PARSA_OUT/bg.pid\"; exit 0", 0),
			time_mono_ms());
	ok(wait_event(t, 7, 1, INSTANCE_EXITED, 5000), "the shell ends, leaving a background sleep");
	text = read_file(pidfile, 100, NULL);
	if (text)
		bg = atoi(text);
	ok(bg > 0, "the background pid was recorded");
	drive(t, 200, NULL, NULL);
	ok(bg > 0 && kill(bg, 0) < 0 && errno == ESRCH, "the leftover process was killed with its group");
	free(text);
	free(pidfile);
}

static void test_stop_all(struct instances *t)
{
	make_dirs(106, "many", 0);
	instances_start(t, assignment(8, 1, 106, "many", "trap '' TERM; sleep 300; wait", 0), time_mono_ms());
	instances_start(t, assignment(9, 1, 106, "many", "trap '' TERM; sleep 300; wait", 0), time_mono_ms());
	ok(wait_event(t, 8, 1, INSTANCE_RUNNING, 5000) && wait_event(t, 9, 1, INSTANCE_RUNNING, 5000), "two run");
	instances_stop_all(t, "runner stopped", 1, time_mono_ms());
	ok(wait_event(t, 8, 1, INSTANCE_EXITED, 2000) && wait_event(t, 9, 1, INSTANCE_EXITED, 2000),
	   "stop_all with kill_now ends both at once");
	ok(strcmp(find_event(8, 1, INSTANCE_EXITED)->reason, "runner stopped") == 0, "with reason 'runner stopped'");
	is_int(instances_active(t), 0, "nothing left");
}

/* Stamps on the host and the tree's CPU time (python3: a busy loop of
 * 0.5 s of CPU, not of wall time). */
static void test_accounting(struct instances *t)
{
	const struct recorded *end;
	struct instances_use use;
	int64_t t0 = time_now_ms(), before;

	make_dirs(110, "nap", 0);
	make_dirs(111, "busy", 0);
	instances_sample(t, time_mono_ms(), &use);
	before = use.cpu_ms;
	instances_start(t, assignment(30, 1, 110, "nap", "sleep 0.3", 0), time_mono_ms());
	instances_start(t, assignment(31, 1, 111, "busy",
				      "python3 -c 'import time\ne = time.process_time() + 0.5\n"
				      "while time.process_time() < e: pass'", 0), time_mono_ms());
	ok(wait_event(t, 30, 1, INSTANCE_EXITED, 5000) && wait_event(t, 31, 1, INSTANCE_EXITED, 10000),
	   "a nap and a busy loop end");
	end = find_event(30, 1, INSTANCE_EXITED);
	ok(end && end->ev.started_ms >= t0 && end->ev.started_ms < t0 + 1000,
	   "the nap's start is stamped on the host (%lld ms after the call)",
	   end ? (long long)(end->ev.started_ms - t0) : -1LL);
	/* Not shorter than the nap; the upper bound leaves a busy host (a
	 * build beside the test) its delays in starting sleep and reaping it. */
	ok(end && end->ev.ended_ms - end->ev.started_ms >= 280 && end->ev.ended_ms - end->ev.started_ms <= 3000,
	   "sleep 0.3 lasted 0.28-3 s: %lld ms", end ? (long long)(end->ev.ended_ms - end->ev.started_ms) : -1LL);
	ok(end && end->ev.usage.cpu_ms >= 0 && end->ev.usage.cpu_ms < 100, "and used next to no CPU: %lld ms",
	   end ? (long long)end->ev.usage.cpu_ms : -1LL);
	ok(end && end->ev.usage.max_rss > 0 && end->ev.usage.rss == -1, "a peak, and no rss in the totals");
	end = find_event(31, 1, INSTANCE_EXITED);
	ok(end && end->ev.usage.cpu_ms >= 450 && end->ev.usage.cpu_ms <= 1000,
	   "the busy loop's tree used 0.5 s of CPU: %lld ms", end ? (long long)end->ev.usage.cpu_ms : -1LL);
	instances_sample(t, time_mono_ms(), &use);
	ok(use.cpu_ms - before >= 450, "the table's total counts it: +%lld ms", (long long)(use.cpu_ms - before));
}

/* An instance past its mem is killed; its neighbour is not. */
static void test_mem_limit(struct instances *t)
{
	const struct recorded *end;
	int64_t t0 = time_mono_ms();

	make_dirs(112, "hungry", 0);
	make_dirs(113, "modest", 0);
	instances_start(t, assignment_with(32, 1, 112, "hungry",
					   "python3 -c 'b = bytearray(100 << 20); import time; time.sleep(5)'", 0,
					   json_pack("{s:I}", "mem", (json_int_t)(30 << 20))), t0);
	instances_start(t, assignment(33, 1, 113, "modest", "sleep 1", 0), t0);
	ok(wait_event(t, 32, 1, INSTANCE_EXITED, 4000), "an instance that touches 100 MB with mem = 30M ends");
	end = find_event(32, 1, INSTANCE_EXITED);
	ok(end && end->ev.signal == SIGKILL, "killed (signal %d)", end ? end->ev.signal : -1);
	ok(end && strncmp(end->reason, "out of memory: used ", 20) == 0 && strstr(end->reason, " of mem = 30M"),
	   "reason: %s", end ? end->reason : "");
	ok(end && end->at_ms - t0 < 3000, "at once (%lld ms after the start)", end ? (long long)(end->at_ms - t0) : -1LL);
	ok(end && end->ev.usage.max_rss > 30 << 20, "its peak is past the limit: %lld MB",
	   end ? (long long)(end->ev.usage.max_rss >> 20) : -1LL);
	ok(!find_event(33, 1, INSTANCE_EXITED), "its neighbour still runs");
	ok(wait_event(t, 33, 1, INSTANCE_EXITED, 5000), "and ends");
	end = find_event(33, 1, INSTANCE_EXITED);
	ok(end && end->ev.exit_code == 0 && end->ev.signal == 0 && end->reason[0] == '\0', "well");
}

static int has_file(void *arg)
{
	return access((const char *)arg, F_OK) == 0;
}

/* Two cpus = 1 instances at once: cores of their own, as the kernel sees it. */
static void test_affinity(struct instances *t)
{
	static const char run[] = "echo \"$PARSA_CPU_LIST\" > \"$PARSA_OUT/list\";"
				  " sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status > \"$PARSA_OUT/allowed\";"
				  " sleep 0.5";
	char *list[2], *allowed[2], *path;
	const struct recorded *end;

	make_dirs(114, "a", 0);
	make_dirs(114, "b", 0);
	instances_start(t, assignment_with(34, 1, 114, "a", run, 0, json_pack("{s:i}", "cpus", 1)), time_mono_ms());
	instances_start(t, assignment_with(35, 1, 114, "b", run, 0, json_pack("{s:i}", "cpus", 1)), time_mono_ms());
	ok(wait_event(t, 34, 1, INSTANCE_EXITED, 5000) && wait_event(t, 35, 1, INSTANCE_EXITED, 5000), "both ran");
	for (int i = 0; i < 2; i++) {
		path = xasprintf("%s/jobs/114/out/%s/list", mount_dir, i ? "b" : "a");
		drive(t, 1000, has_file, path);
		list[i] = read_file(path, 256, NULL);
		free(path);
		path = xasprintf("%s/jobs/114/out/%s/allowed", mount_dir, i ? "b" : "a");
		allowed[i] = read_file(path, 256, NULL);
		free(path);
		ok(list[i] && allowed[i] && strcmp(list[i], allowed[i]) == 0 && list[i][0] != '\n',
		   "$PARSA_CPU_LIST %.*s is its Cpus_allowed_list", list[i] ? (int)strcspn(list[i], "\n") : 0,
		   list[i] ? list[i] : "");
		end = find_event(34 + i, 1, INSTANCE_EXITED);
		ok(end && list[i] && strncmp(end->cpu_list, list[i], strlen(end->cpu_list)) == 0 && end->cpu_list[0],
		   "and its report's cpu_list (%s)", end ? end->cpu_list : "");
	}
	if (sysconf(_SC_NPROCESSORS_ONLN) >= 2)
		ok(list[0] && list[1] && strcmp(list[0], list[1]) != 0, "the two are pinned to different cores");
	else
		diag("skip: one core only: the two share it");
	for (int i = 0; i < 2; i++) {
		free(list[i]);
		free(allowed[i]);
	}
}

/* ---- through the fake executor: no processes, the test says what happens ---- */

static struct exec_status status_of(enum exec_state state, int exit_code, int sig, const char *reason)
{
	return (struct exec_status){ .state = state, .exit_code = exit_code, .signal = sig,
				     .cpu_ms = -1, .max_rss = -1, .reason = (char *)reason,
				     .started_ms = state == EXEC_STARTING ? 0 : 1234567 };
}

/* Tell the fake's news through its descriptor, as the runner's loop would. */
static void deliver_by_fd(struct instances *t, int64_t now)
{
	int fds[4];
	size_t n = instances_status_fds(t, fds, 4);
	struct pollfd pfd[4];

	for (size_t i = 0; i < n; i++)
		pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	poll(pfd, n, 100);
	for (size_t i = 0; i < n; i++)
		if (pfd[i].revents)
			instances_status_ready(t, pfd[i].fd, now);
}

static void fake_set(struct executor *e, int64_t id, int64_t attempt, struct exec_status st)
{
	if (fake_executor_set(e, id, attempt, &st) < 0)
		diag("fake_executor_set %" PRId64 ".%" PRId64 ": %s", id, attempt, strerror(errno));
}

static void test_fake_lifecycle(struct executor *e, struct instances *t, const char *state)
{
	int64_t now = 1000000;
	char *dir = xasprintf("%s/instances/41.1", state);
	const struct recorded *run, *end;
	struct heartbeat_entry *hb;
	size_t n;

	is_int(instances_start(t, assignment(41, 1, 141, "f", "true", 0), now), 1, "fake: an assignment starts");
	is_int(fake_executor_starts(e, 41, 1), 1, "fake: handed to the executor once");
	ok(exists(dir), "fake: its folder is recorded before the start returns");
	/* It waits in the executor's queue first: the heartbeat says why. */
	fake_set(e, 41, 1, status_of(EXEC_STARTING, 0, 0, "Priority"));
	instances_reap(t, now + 5);
	n = instances_heartbeat(t, &hb);
	ok(n == 1 && hb[0].slurm_reason && strcmp(hb[0].slurm_reason, "Priority") == 0 && !hb[0].slurm_job,
	   "fake: while it waits, the heartbeat gives the executor's reason (no Slurm job id: not Slurm)");
	free(hb);
	ok(!find_event(41, 1, INSTANCE_RUNNING), "fake: and nothing is reported");
	fake_set(e, 41, 1, status_of(EXEC_RUNNING, 0, 0, NULL));
	instances_reap(t, now + 10);
	ok(!find_event(41, 1, INSTANCE_RUNNING), "fake: running is told a little later");
	instances_tick(t, now + 100);
	run = find_event(41, 1, INSTANCE_RUNNING);
	ok(run && run->ev.started_ms == 1234567, "fake: then with the executor's start time");
	n = instances_heartbeat(t, &hb);
	ok(n == 1 && !hb[0].slurm_reason, "fake: running, no reason any more");
	free(hb);
	is_int(instances_start(t, assignment(41, 1, 141, "f", "true", 0), now + 200), 0,
	       "fake: the same id and attempt is not started again");
	is_int(fake_executor_starts(e, 41, 1), 1, "fake: the executor saw one start");
	fake_set(e, 41, 1, status_of(EXEC_EXITED, 3, 0, NULL));
	deliver_by_fd(t, now + 300);
	end = find_event(41, 1, INSTANCE_EXITED);
	ok(end && end->ev.exit_code == 3 && end->ev.signal == 0 && end->reason[0] == '\0',
	   "fake: its end, told through the executor's descriptor: exit code 3");
	is_int(instances_active(t), 0, "fake: nothing active");
	ok(!fake_executor_forgotten(e, 41, 1), "fake: not forgotten before the clean-up");
	instances_cleanup(t);
	ok(fake_executor_forgotten(e, 41, 1) && !exists(dir), "fake: forgotten after it");
	is_int(count_events(41, 1), 2, "fake: two events in all");
	free(dir);
}

static void test_fake_failures(struct executor *e, struct instances *t)
{
	int64_t now = 2000000;
	const struct recorded *f;
	char *scratch = xasprintf("%s/142.g.0", scratch_root);

	fake_executor_fail_next(e, "cannot start: sbatch: QOSMaxSubmitJobPerUserLimit");
	is_int(instances_start(t, assignment(42, 1, 142, "g", "true", 0), now), 0, "fake: a refused start");
	f = find_event(42, 1, INSTANCE_FAILED);
	ok(f && strcmp(f->reason, "cannot start: sbatch: QOSMaxSubmitJobPerUserLimit") == 0,
	   "fake: is reported failed with the executor's reason (%s)", f ? f->reason : "");
	ok(!exists(scratch), "fake: its scratch folder is removed");
	is_int(instances_start(t, assignment(42, 1, 142, "g", "true", 0), now), 0,
	       "fake: and it is not tried again");

	is_int(instances_start(t, assignment(43, 1, 143, "h", "true", 0), now), 1, "fake: another starts");
	fake_set(e, 43, 1, status_of(EXEC_FAILED, 0, 0, "cannot start: cannot open the log"));
	instances_reap(t, now + 10);
	instances_tick(t, now + 500);
	f = find_event(43, 1, INSTANCE_FAILED);
	ok(f && strcmp(f->reason, "cannot start: cannot open the log") == 0 &&
	   !find_event(43, 1, INSTANCE_RUNNING), "fake: a set-up that failed later is reported failed, never running");
	instances_cleanup(t);
	free(scratch);
}

static void test_fake_cancel_and_lost(struct executor *e, struct instances *t)
{
	int64_t now = 3000000;
	const struct recorded *end;

	instances_start(t, assignment(44, 1, 144, "c", "true", 0), now);
	instances_start(t, assignment(45, 1, 145, "l", "true", 0), now);
	fake_set(e, 44, 1, status_of(EXEC_RUNNING, 0, 0, NULL));
	fake_set(e, 45, 1, status_of(EXEC_RUNNING, 0, 0, NULL));
	instances_reap(t, now);
	instances_tick(t, now + 100);
	instances_cancel(t, 44, 1, "cancelled", now + 100);
	ok(fake_executor_last_signal(e, 44, 1) == SIGTERM && fake_executor_nsignals(e, 44, 1) == 1,
	   "fake: cancel sends SIGTERM through the executor");
	ok(fake_executor_stop(e, 44, 1) && strcmp(fake_executor_stop(e, 44, 1), "cancelled") == 0,
	   "fake: and has it keep the reason");
	instances_tick(t, now + 100 + 299);
	is_int(fake_executor_nsignals(e, 44, 1), 1, "fake: nothing more within the grace period");
	instances_tick(t, now + 100 + 300);
	is_int(fake_executor_last_signal(e, 44, 1), SIGKILL, "fake: SIGKILL after it");
	fake_set(e, 44, 1, status_of(EXEC_EXITED, 0, SIGKILL, NULL));
	instances_reap(t, now + 500);
	end = find_event(44, 1, INSTANCE_EXITED);
	ok(end && end->ev.signal == SIGKILL && strcmp(end->reason, "cancelled") == 0,
	   "fake: its end says cancelled (%s)", end ? end->reason : "");

	fake_set(e, 45, 1, status_of(EXEC_EXITED, 0, SIGKILL, "lost: gone without an exit file"));
	instances_reap(t, now + 600);
	end = find_event(45, 1, INSTANCE_EXITED);
	ok(end && strcmp(end->reason, "lost: gone without an exit file") == 0,
	   "fake: an instance the executor lost ends with its reason");
	is_int(instances_active(t), 0, "fake: nothing active");
	instances_cleanup(t);
}

/* A runner stops and another starts: what runs is taken over, not started
 * again; what ended meanwhile is reported; a stop reason survives. */
static void test_fake_reattach(struct executor *e, const struct instances_config *cfg, const char *state)
{
	struct instances *t = instances_create(cfg), *t2;
	int64_t now = 4000000;
	char *junk = xasprintf("%s/instances/49.1", state);
	const struct recorded *end;

	instances_start(t, assignment(46, 1, 146, "r", "true", 0), now);
	instances_start(t, assignment(47, 1, 147, "r", "true", 0), now);
	instances_start(t, assignment(48, 1, 148, "r", "true", 0), now);
	fake_set(e, 46, 1, status_of(EXEC_RUNNING, 0, 0, NULL));
	fake_set(e, 47, 1, status_of(EXEC_RUNNING, 0, 0, NULL));
	instances_reap(t, now);
	instances_tick(t, now + 100);
	instances_cancel(t, 47, 1, "cancelled", now + 100);
	instances_destroy(t);
	is_int(fake_executor_handles(e), 0, "fake: a table destroyed releases every handle");
	/* While no runner watches, 48 ends; and a folder with nothing in it. */
	fake_set(e, 48, 1, status_of(EXEC_EXITED, 0, 0, NULL));
	mkdir_p(junk, 0700);

	events.n = 0;
	t2 = instances_create(cfg);
	is_int((int)instances_reattach(t2, now + 1000), 2, "fake: a new table reattaches to the two that run");
	end = find_event(48, 1, INSTANCE_EXITED);
	ok(end && end->ev.exit_code == 0, "fake: the one that ended meanwhile is reported at once");
	ok(!exists(junk), "fake: a folder the executor knows nothing of is removed");
	is_int(instances_start(t2, assignment(46, 1, 146, "r", "true", 0), now + 1100), 0,
	       "fake: an assignment sent again for a reattached one is not started");
	is_int(fake_executor_starts(e, 46, 1), 1, "fake: the executor saw one start of it");
	instances_cleanup(t2);
	fake_set(e, 47, 1, status_of(EXEC_EXITED, 0, SIGTERM, NULL));
	fake_set(e, 46, 1, status_of(EXEC_EXITED, 0, 0, NULL));
	deliver_by_fd(t2, now + 1200);
	end = find_event(47, 1, INSTANCE_EXITED);
	ok(end && strcmp(end->reason, "cancelled") == 0, "fake: the stop reason outlived the first table (%s)",
	   end ? end->reason : "");
	ok(find_event(46, 1, INSTANCE_EXITED) && !find_event(46, 1, INSTANCE_RUNNING),
	   "fake: the other's end is reported, and no second start");
	is_int(instances_active(t2), 0, "fake: nothing active");
	instances_destroy(t2);
	free(junk);
}

static void test_fake(void)
{
	struct executor *e = fake_executor_create();
	char *state = xasprintf("%s/fake-state", mount_dir);
	struct instances_config cfg = {
		.mount = mount_dir, .scratch_root = scratch_root, .state_dir = state, .grace_ms = 300,
		.on_event = on_event, .executor = e,
	};
	struct instances *t;

	mkdir(state, 0700);
	t = instances_create(&cfg);
	test_fake_lifecycle(e, t, state);
	test_fake_failures(e, t);
	test_fake_cancel_and_lost(e, t);
	instances_destroy(t);
	test_fake_reattach(e, &cfg, state);
	executor_destroy(e);
	free(state);
}

int main(int argc, char **argv)
{
	char tmpl[] = "/tmp/parsa-test-instances.XXXXXX";
	struct instances_config cfg;
	struct instances *t;
	struct resources *res;
	struct usage *usage;
	char *cmd, *state;

	/* The table runs each instance under a supervisor, `<this program>
	 * --supervise DIR`, as parsa-runner does. */
	if (argc == 3 && strcmp(argv[1], "--supervise") == 0)
		return supervise_main(argv[2]);

	mount_dir = mkdtemp(tmpl);
	if (!mount_dir) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	scratch_root = xasprintf("%s/scratch", mount_dir);
	mkdir(scratch_root, 0755);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	log_init("test_instances", 1, LOG_LEVEL_WARN);
	state = xasprintf("%s/state", mount_dir);
	mkdir(state, 0700);
	res = resources_create(&(struct resources_config){ 0 });
	usage = usage_create("/proc");
	cfg = (struct instances_config){
		.mount = mount_dir, .scratch_root = scratch_root, .state_dir = state, .grace_ms = 300,
		.on_event = on_event, .resources = res, .usage = usage,
	};
	t = instances_create(&cfg);

	test_lifecycle(t);
	test_short(t);
	test_failed_start(t);
	test_cancel(t);
	test_walltime(t);
	test_leftovers(t);
	test_stop_all(t);
	test_accounting(t);
	test_mem_limit(t);
	test_affinity(t);

	instances_destroy(t);
	test_fake();
	resources_destroy(res);
	usage_destroy(usage);
	cmd = xasprintf("rm -rf '%s'", mount_dir);
	if (system(cmd) != 0)
		diag("cannot remove %s", mount_dir);
	free(cmd);
	free(scratch_root);
	free(state);
	return done_testing();
}
