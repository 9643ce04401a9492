/* Instances outlive their runner: a table destroyed while an instance runs
 * (the runner killed) leaves it running under its supervisor; a new table
 * reattaches to it, sees it end, and reports the end once; an instance that
 * ended while no runner watched is reported at reattach, with its times and
 * CPU time from the supervisor's status file; ids already reported are never
 * started again; the cores a reattached instance was pinned to stay its own. */
#include "assign.h"
#include "instances.h"
#include "log.h"
#include "resources.h"
#include "supervise.h"
#include "tap.h"
#include "util.h"

#include <inttypes.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

TAP_STATE;

static char *root;
static struct {
	struct instance_event ev[32];
	char cpu_list[32][64];
	int n;
} events;

static void on_event(void *arg, const struct instance_event *ev)
{
	(void)arg;
	if (events.n < 32) {
		events.ev[events.n] = *ev;
		events.ev[events.n].reason = NULL;
		snprintf(events.cpu_list[events.n], sizeof events.cpu_list[0], "%s", ev->cpu_list ? ev->cpu_list : "");
		events.ev[events.n].cpu_list = events.ev[events.n].gpu_list = NULL;
		events.n++;
	}
}

static int last_of(int64_t id, enum instance_event_kind kind)
{
	for (int i = events.n - 1; i >= 0; i--)
		if (events.ev[i].id == id && events.ev[i].kind == kind)
			return i;
	return -1;
}

static int count(int64_t id, enum instance_event_kind kind)
{
	int n = 0;

	for (int i = 0; i < events.n; i++)
		n += events.ev[i].id == id && events.ev[i].kind == kind;
	return n;
}

static struct assignment *assignment(int64_t id, int64_t job, const char *run)
{
	struct passwd *pw = getpwuid(geteuid());
	json_t *j = json_pack("{s:I,s:I,s:I,s:s,s:i,s:s,s:i,s:i,s:s,s:i}", "id", (json_int_t)id,
			      "attempt", (json_int_t)1, "job", (json_int_t)job, "stage", "s",
			      "index", 0, "run", run, "uid", (int)geteuid(), "gid", (int)getegid(),
			      "user", pw ? pw->pw_name : "", "cpus", 1);
	struct assignment *a = assignment_from_json(j, NULL);
	char *dir = xasprintf("%s/mnt/jobs/%" PRId64 "/stages/s/instances/0", root, job);
	char *out = xasprintf("%s/mnt/jobs/%" PRId64 "/out/s", root, job);

	mkdir_p(dir, 0755);
	mkdir_p(out, 0755);
	free(dir);
	free(out);
	json_decref(j);
	return a;
}

/* A table as a runner has it; res may be NULL (nothing pinned). */
static struct instances *table_with(struct resources *res)
{
	char *mnt = xasprintf("%s/mnt", root), *scratch = xasprintf("%s/scratch", root);
	char *state = xasprintf("%s/state", root);
	struct instances_config cfg = {
		.mount = mnt, .scratch_root = scratch, .state_dir = state, .grace_ms = 200,
		.on_event = on_event, .resources = res,
	};
	struct instances *t;

	mkdir_p(scratch, 0755);
	mkdir_p(state, 0700);
	t = instances_create(&cfg);
	free(mnt);
	free(scratch);
	free(state);
	return t;
}

static struct instances *table(void)
{
	return table_with(NULL);
}

/* Run the table as the main loop would until event kind for id, or ms pass. */
static int drive(struct instances *t, int64_t id, enum instance_event_kind kind, int ms)
{
	int64_t end = time_mono_ms() + ms;

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
		instances_cleanup(t);
		if (count(id, kind))
			return 1;
	}
	return 0;
}

/* The runner is gone for ms; a new table reattaches and sees id's end. */
static struct instances *gone_for(struct instances *t, int ms, int64_t id)
{
	instances_destroy(t);
	usleep((useconds_t)ms * 1000);
	events.n = 0;
	t = table();
	instances_reattach(t, time_mono_ms());
	if (!count(id, INSTANCE_EXITED))
		drive(t, id, INSTANCE_EXITED, 5000);
	return t;
}

static int gate_exists(const char *name)
{
	char *path = xasprintf("%s/%s", root, name);
	int ok = access(path, F_OK) == 0;

	free(path);
	return ok;
}

int main(int argc, char **argv)
{
	char tmpl[] = "/tmp/parsa-test-supervise.XXXXXX";
	struct instances *t;
	char *run, *gate, *cmd, *pidfile, *text;
	json_t *list;
	pid_t pid = 0;

	if (argc == 3 && strcmp(argv[1], "--supervise") == 0)
		return supervise_main(argv[2]);
	root = mkdtemp(tmpl);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	log_init("test_supervise", 1, LOG_LEVEL_WARN);
	gate = xasprintf("%s/open", root);
	pidfile = xasprintf("%s/pid", root);
	run = xasprintf("echo $$ > %s; while [ ! -e %s ]; do sleep 0.02; done; echo done > %s/finished",
			pidfile, gate, root);

	t = table();
	instances_start(t, assignment(1, 10, run), time_mono_ms());
	ok(drive(t, 1, INSTANCE_RUNNING, 5000), "the instance runs under its supervisor");
	instances_destroy(t);
	/* The shell writes its pid just after exec, which is when it counts as running. */
	for (int64_t end = time_mono_ms() + 5000; pid <= 0 && time_mono_ms() < end; usleep(5000)) {
		text = read_file(pidfile, 64, NULL);
		if (text)
			pid = (pid_t)atoi(text);
		free(text);
	}
	ok(pid > 0 && kill(pid, 0) == 0, "it outlives the runner's table (pid %d)", (int)pid);

	events.n = 0;
	t = table();
	is_int(instances_reattach(t, time_mono_ms()), 1, "a new table reattaches to it");
	is_int(instances_active(t), 1, "and counts it as running");
	list = instances_list_json(t);
	text = json_dumps(list, JSON_COMPACT);
	ok(text && strstr(text, "\"id\":1,"), "the heartbeat lists it: %s", text);
	free(text);
	json_decref(list);
	is_int(events.n, 0, "nothing is reported for a running instance");
	cmd = xasprintf("touch %s", gate);
	if (system(cmd) != 0)
		diag("cannot open the gate");
	free(cmd);
	ok(drive(t, 1, INSTANCE_EXITED, 5000), "its end is seen through the supervisor's pidfd");
	is_int(events.n ? events.ev[events.n - 1].exit_code : -1, 0, "with its exit status");
	ok(gate_exists("finished"), "it ran to its end");
	is_int(instances_active(t), 0, "and it is gone from the table");
	instances_start(t, assignment(1, 10, run), time_mono_ms());
	is_int(instances_active(t), 0, "the same id and attempt is not started again");

	/* Ended while nobody watched: reported at reattach. */
	unlink(gate);
	instances_start(t, assignment(2, 11, "exit 3"), time_mono_ms());
	t = gone_for(t, 300, 2);
	is_int(count(2, INSTANCE_EXITED), 1, "an instance that ended with no runner is reported once");
	is_int(events.n ? events.ev[events.n - 1].exit_code : -1, 3, "with its exit status");

	/* Reports left on disk by an earlier runner: those ids never start. */
	instances_remember(t, 3, 1, time_mono_ms());
	is_int(instances_start(t, assignment(3, 12, "true"), time_mono_ms()), 0,
	       "an id whose end is already reported is not started");
	instances_destroy(t);

	/* The end's figures survive the runner: a busy loop of 0.3 s of CPU that
	 * ends while no runner watches. */
	instances_start(t = table(), assignment(6, 13, "python3 -c 'import time\ne = time.process_time() + 0.3\n"
					    "while time.process_time() < e: pass'"), time_mono_ms());
	t = gone_for(t, 1500, 6);
	{
		int i = last_of(6, INSTANCE_EXITED);
		const struct instance_event *ev = i >= 0 ? &events.ev[i] : NULL;

		ok(ev && ev->started_ms > 0 && ev->ended_ms >= ev->started_ms + 250,
		   "reported with its start and end stamps (%lld ms apart)",
		   ev ? (long long)(ev->ended_ms - ev->started_ms) : -1LL);
		ok(ev && ev->usage.cpu_ms >= 250 && ev->usage.cpu_ms < 1000,
		   "and its CPU time from wait4, kept in the status file: %lld ms", ev ? (long long)ev->usage.cpu_ms : -1LL);
		ok(ev && ev->usage.max_rss > 0, "and its peak memory (ru_maxrss): %lld kB",
		   ev ? (long long)(ev->usage.max_rss / 1024) : -1LL);
	}
	instances_destroy(t);

	/* The cores of a reattached instance stay its own. */
	if (sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
		struct resources *res = resources_create(&(struct resources_config){ 0 });
		char held[64];
		int i;

		unlink(gate);
		events.n = 0;
		t = table_with(res);
		instances_start(t, assignment(7, 14, run), time_mono_ms());
		ok(drive(t, 7, INSTANCE_RUNNING, 5000), "a pinned instance runs");
		i = last_of(7, INSTANCE_RUNNING);
		snprintf(held, sizeof held, "%s", i >= 0 ? events.cpu_list[i] : "?");
		instances_destroy(t);
		resources_destroy(res);
		res = resources_create(&(struct resources_config){ 0 });
		t = table_with(res);
		is_int(instances_reattach(t, time_mono_ms()), 1, "a new runner reattaches to it");
		instances_start(t, assignment(8, 15, "sleep 0.2"), time_mono_ms());
		ok(drive(t, 8, INSTANCE_EXITED, 5000), "and starts another");
		i = last_of(8, INSTANCE_EXITED);
		ok(i >= 0 && events.cpu_list[i][0] && strcmp(events.cpu_list[i], held) != 0,
		   "on another core (%s) than the reattached one's (%s)", i >= 0 ? events.cpu_list[i] : "", held);
		cmd = xasprintf("touch %s", gate);
		if (system(cmd) != 0)
			diag("cannot open the gate");
		free(cmd);
		ok(drive(t, 7, INSTANCE_EXITED, 5000), "the reattached one ends");
		i = last_of(7, INSTANCE_EXITED);
		is_str(i >= 0 ? events.cpu_list[i] : NULL, held, "its end names the cores it had");
		instances_destroy(t);
		resources_destroy(res);
	} else {
		diag("skip: one core only");
	}

	cmd = xasprintf("rm -rf '%s'", root);
	if (system(cmd) != 0)
		diag("cannot remove %s", root);
	free(cmd);
	free(run);
	free(gate);
	free(pidfile);
	return done_testing();
}
