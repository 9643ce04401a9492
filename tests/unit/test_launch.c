/* Starting one instance: environment, log, exit status, signals, the status-pipe
 * failure path, identity rules, stopping a whole process group, and the
 * cores and GPUs the runner chose (affinity set before exec, the variables). A plain
 * temporary folder stands in for the parsafs mount. */
#include "assign.h"
#include "identity.h"
#include "launch.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
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

static char *root_dir;   /* the fake mount */
static char *scratch;

static char *path_of(const char *rel)
{
	return xasprintf("%s/%s", root_dir, rel);
}

static char *slurp(const char *rel)
{
	char *p = path_of(rel), *text = read_file(p, 1 << 20, NULL);

	free(p);
	return text;
}

static void make_dirs(int64_t job, const char *stage, int64_t index, mode_t mode)
{
	char *a = xasprintf("%s/jobs/%" PRId64 "/stages/%s/instances/%" PRId64, root_dir, job, stage, index);
	char *b = xasprintf("%s/jobs/%" PRId64 "/out/%s", root_dir, job, stage);

	mkdir_p(a, 0755);
	mkdir_p(b, 0755);
	chmod(a, mode);
	chmod(b, mode);
	free(a);
	free(b);
}

/* An assignment as the scheduler would send it, for the current user. */
static struct assignment *assignment(int64_t job, const char *stage, const char *run, const char *extra)
{
	struct passwd *pw = getpwuid(geteuid());
	char *err = NULL, *text;
	json_error_t jerr;
	json_t *json;
	struct assignment *a;

	text = xasprintf("{\"id\": 17, \"attempt\": 1, \"job\": %" PRId64 ", \"stage\": \"%s\", \"index\": 0,"
			 " \"item\": \"warm/ckpt-0003\", \"run\": \"\", \"cpus\": 2, \"mem\": 1024, \"scratch\": 0,"
			 " \"walltime_s\": 0, \"env\": [\"FOO=bar baz\", \"PARSA_JOB=999\"],"
			 " \"uid\": %u, \"gid\": %u, \"user\": \"%s\", \"groups\": [%u]%s%s}",
			 job, stage, (unsigned)geteuid(), (unsigned)getegid(), pw ? pw->pw_name : "",
			 (unsigned)getegid(), extra ? ", " : "", extra ? extra : "");
	json = json_loads(text, 0, &jerr);
	if (!json)
		diag("bad test JSON: %s: %s", jerr.text, text);
	json_object_set_new(json, "run", json_string(run));
	a = assignment_from_json(json, &err);
	if (!a)
		diag("assignment: %s", err);
	json_decref(json);
	free(text);
	free(err);
	return a;
}

/* Wait for the set-up outcome: 1 started, -1 failed (reason set), 0 timeout. */
static int outcome(struct launch *l, char **reason)
{
	for (int i = 0; i < 500; i++) {
		struct pollfd pfd = { .fd = launch_status_fd(l), .events = POLLIN };
		int rc;

		if (pfd.fd >= 0)
			poll(&pfd, 1, 20);
		rc = launch_poll(l, reason);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* waitpid with a deadline; returns the status, or -1 on timeout. */
static int wait_exit(pid_t pid, int secs)
{
	int status;

	for (int i = 0; i < secs * 100; i++) {
		pid_t got = waitpid(pid, &status, WNOHANG);

		if (got == pid)
			return status;
		usleep(10000);
	}
	return -1;
}

/* As the runner does: the identity decided first, then the launch with it. */
static struct launch *start(struct assignment *a, char **err)
{
	json_t *identity = identity_decide(a, scratch, err);
	struct launch_request req = { .a = a, .mount = root_dir, .scratch = scratch, .identity = identity };
	struct launch *l = identity ? launch_create(&req, err) : NULL;

	json_decref(identity);
	return l;
}


static const char *env_value(const char *env, const char *name, char *buf, size_t len)
{
	size_t n = strlen(name);

	for (const char *p = env; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t linelen = nl ? (size_t)(nl - p) : strlen(p);

		if (linelen > n && strncmp(p, name, n) == 0 && p[n] == '=') {
			snprintf(buf, len, "%.*s", (int)(linelen - n - 1), p + n + 1);
			return buf;
		}
		p = nl ? nl + 1 : p + linelen;
	}
	return NULL;
}

static void test_env_and_exit_code(void)
{
	struct assignment *a;
	struct launch *l;
	char *err = NULL, *reason = NULL, *env, *log, *want, *fds, *sess;
	char buf[512];
	int status;

	make_dirs(7, "timing", 0, 0755);
	a = assignment(7, "timing",
		       "env > \"$PARSA_OUT/env.txt\"; pwd > \"$PARSA_OUT/pwd.txt\";"
		       " ls /proc/self/fd > \"$PARSA_OUT/fds.txt\";"
		       " cut -d' ' -f5,6 /proc/$$/stat > \"$PARSA_OUT/sess.txt\"; echo $$ >> \"$PARSA_OUT/sess.txt\";"
		       " echo to-stdout; echo to-stderr >&2; read x; echo \"stdin:$x\"; exit 3", NULL);
	if (!a) {
		ok(0, "assignment");
		return;
	}
	l = start(a, &err);
	ok(l != NULL, "launch: %s", err ? err : "ok");
	if (!l)
		goto out;
	is_int(outcome(l, &reason), 1, "the child reached exec");
	status = wait_exit(launch_pid(l), 10);
	ok(status >= 0 && WIFEXITED(status), "the shell exited");
	is_int(WEXITSTATUS(status), 3, "with the script's exit code");

	env = slurp("jobs/7/out/timing/env.txt");
	ok(env != NULL, "the script ran in PARSA_OUT and wrote its environment");
	is_str(env_value(env, "PARSA_JOB", buf, sizeof buf), "7", "PARSA_JOB (the stage's env cannot override it)");
	is_str(env_value(env, "PARSA_STAGE", buf, sizeof buf), "timing", "PARSA_STAGE");
	is_str(env_value(env, "PARSA_INDEX", buf, sizeof buf), "0", "PARSA_INDEX");
	is_str(env_value(env, "PARSA_CPUS", buf, sizeof buf), "2", "PARSA_CPUS");
	want = xasprintf("%s/jobs/7/out/warm/ckpt-0003", root_dir);
	is_str(env_value(env, "PARSA_ITEM", buf, sizeof buf), want, "PARSA_ITEM is absolute under the job's out/");
	free(want);
	want = xasprintf("%s/jobs/7/out/timing", root_dir);
	is_str(env_value(env, "PARSA_OUT", buf, sizeof buf), want, "PARSA_OUT");
	free(want);
	want = xasprintf("%s/jobs/7", root_dir);
	is_str(env_value(env, "PARSA_JOBDIR", buf, sizeof buf), want, "PARSA_JOBDIR");
	free(want);
	is_str(env_value(env, "PARSA_SCRATCH", buf, sizeof buf), scratch, "PARSA_SCRATCH");
	is_str(env_value(env, "FOO", buf, sizeof buf), "bar baz", "the stage's env");
	ok(env_value(env, "PATH", buf, sizeof buf) && strstr(buf, "/usr/bin"), "PATH is set");
	ok(env_value(env, "HOME", buf, sizeof buf) != NULL, "HOME is set");
	ok(env_value(env, "USER", buf, sizeof buf) != NULL && env_value(env, "LOGNAME", buf, sizeof buf) != NULL,
	   "USER and LOGNAME are set");
	ok(env_value(env, "SHELL", buf, sizeof buf) != NULL, "SHELL is set");
	ok(env && !strstr(env, "ASAN_OPTIONS=") && !strstr(env, "\nOLDPWD="), "nothing else leaks from the runner");
	free(env);

	want = xasprintf("%s/jobs/7/out/timing\n", root_dir);
	env = slurp("jobs/7/out/timing/pwd.txt");
	is_str(env, want, "the working folder is PARSA_OUT");
	free(env);
	free(want);

	fds = slurp("jobs/7/out/timing/fds.txt");
	is_str(fds, "0\n1\n2\n3\n", "only stdin, stdout and stderr are open (3 is ls's own)");
	free(fds);

	sess = slurp("jobs/7/out/timing/sess.txt");
	if (sess) {
		int pgrp = 0, sid = 0, pid = 0;

		sscanf(sess, "%d %d %d", &pgrp, &sid, &pid);
		ok(pid > 0 && pgrp == pid && sid == pid, "the shell leads its own session and process group");
		is_int(pid, launch_pid(l), "and it is the pid the runner knows");
	} else {
		ok(0, "session file");
	}
	free(sess);

	log = slurp("jobs/7/stages/timing/instances/0/log");
	ok(log && strstr(log, "to-stdout\n") && strstr(log, "to-stderr\n"), "stdout and stderr go to the log");
	ok(log && strstr(log, "stdin:\n"), "stdin is /dev/null");
	free(log);
	launch_destroy(l);

	/* The log is appended to, not truncated: a retry keeps the first attempt's output. */
	l = start(a, &err);
	if (l && outcome(l, &reason) == 1)
		wait_exit(launch_pid(l), 10);
	log = slurp("jobs/7/stages/timing/instances/0/log");
	ok(log && strstr(log, "to-stdout\n") && strstr(strstr(log, "to-stdout\n") + 1, "to-stdout\n"),
	   "a second run appends to the log");
	free(log);
	launch_destroy(l);
out:
	assignment_destroy(a);
	free(err);
	free(reason);
}

/* The cores and GPUs the runner chose: the kernel's affinity and the
 * variables, GPUs the runner's whatever the stage's env says; a cgroup that
 * cannot be entered is a set-up failure with the reason. */
static void test_pinned(void)
{
	struct assignment *a;
	json_t *identity;
	struct launch_request req;
	struct launch *l;
	char *err = NULL, *reason = NULL, *env, *allowed, buf[128];
	cpu_set_t set;
	int first = -1;

	CPU_ZERO(&set);
	sched_getaffinity(0, sizeof set, &set);
	for (int i = 0; i < CPU_SETSIZE && first < 0; i++)
		if (CPU_ISSET(i, &set))
			first = i;
	snprintf(buf, sizeof buf, "%d", first);
	make_dirs(9, "pinned", 0, 0755);
	a = assignment(9, "pinned", "env > \"$PARSA_OUT/env.txt\";"
		       " sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status > \"$PARSA_OUT/allowed.txt\"",
		       "\"gpus\": 2, \"env\": [\"CUDA_VISIBLE_DEVICES=0,1,2,3\"]");
	identity = identity_decide(a, scratch, &err);
	req = (struct launch_request){ .a = a, .mount = root_dir, .scratch = scratch, .identity = identity,
				       .cpu_list = buf, .gpu_list = "1,3" };
	l = launch_create(&req, &err);
	ok(l && outcome(l, &reason) == 1, "a pinned instance starts: %s", err ? err : reason ? reason : "ok");
	if (l)
		wait_exit(launch_pid(l), 10);
	launch_destroy(l);
	env = slurp("jobs/9/out/pinned/env.txt");
	allowed = slurp("jobs/9/out/pinned/allowed.txt");
	{
		char v[128];

		is_str(env_value(env, "PARSA_CPU_LIST", v, sizeof v), buf, "PARSA_CPU_LIST is its core");
		ok(allowed && atoi(allowed) == first && strcspn(allowed, ",-") == strlen(allowed),
		   "and the kernel holds it to that core alone (Cpus_allowed_list %.*s)",
		   allowed ? (int)strcspn(allowed, "\n") : 0, allowed ? allowed : "");
		is_str(env_value(env, "PARSA_GPUS", v, sizeof v), "1,3", "PARSA_GPUS");
		is_str(env_value(env, "CUDA_VISIBLE_DEVICES", v, sizeof v), "1,3",
		       "CUDA_VISIBLE_DEVICES is the runner's choice, not the stage's env");
		is_str(env_value(env, "CUDA_DEVICE_ORDER", v, sizeof v), "PCI_BUS_ID", "numbered as nvidia-smi does");
	}
	free(env);
	free(allowed);
	req.cpu_list = "0;1";
	l = launch_create(&req, &err);
	ok(!l && err && strstr(err, "not a list of cores"), "a bad core list is refused: %s", err ? err : "");
	req.cpu_list = NULL;
	req.cgroup = "/nonexistent/cgroup";
	free(err);
	err = NULL;
	l = launch_create(&req, &err);
	ok(!l && err && strstr(err, "/nonexistent/cgroup/cgroup.procs"), "a cgroup that is not there: %s",
	   err ? err : "");
	json_decref(identity);
	assignment_destroy(a);
	free(err);
	free(reason);
}

static void test_signal(void)
{
	struct assignment *a = assignment(8, "sig", "kill -USR1 $$", NULL);
	struct launch *l;
	char *err = NULL;
	int status;

	make_dirs(8, "sig", 0, 0755);
	l = start(a, &err);
	ok(l && outcome(l, NULL) == 1, "started");
	status = l ? wait_exit(launch_pid(l), 10) : -1;
	ok(status >= 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGUSR1, "killed by its signal");
	launch_destroy(l);
	assignment_destroy(a);
	free(err);
}

static void test_setup_failures(void)
{
	struct assignment *a;
	struct launch *l;
	char *err = NULL, *reason = NULL, *saved_scratch = scratch;
	int status;

	/* No out/ folder and no scratch folder: chdir has nowhere to go. */
	make_dirs(9, "nodir", 0, 0755);
	{
		char *out = xasprintf("%s/jobs/9/out/nodir", root_dir);

		rmdir(out);
		free(out);
	}
	scratch = "/nonexistent/scratch";
	a = assignment(9, "nodir", "echo should-not-run", NULL);
	l = start(a, &err);
	ok(l != NULL, "forked");
	is_int(l ? outcome(l, &reason) : 0, -1, "set-up failed");
	ok(reason && strncmp(reason, "cannot start: cannot change directory", 37) == 0 &&
	   strstr(reason, "/nonexistent/scratch"), "with the reason: %s", reason ? reason : "(null)");
	status = l ? wait_exit(launch_pid(l), 10) : -1;
	ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 127, "the child exits 127");
	launch_destroy(l);
	assignment_destroy(a);
	scratch = saved_scratch;

	/* With out/ missing but the scratch folder there, the instance runs there. */
	a = assignment(9, "nodir", "pwd", NULL);
	l = start(a, &err);
	ok(l && outcome(l, &reason) == 1, "without out/ it falls back to the scratch folder");
	if (l)
		wait_exit(launch_pid(l), 10);
	{
		char *log = slurp("jobs/9/stages/nodir/instances/0/log"), *want = xasprintf("%s\n", scratch);

		ok(log && strstr(log, want), "and runs in it");
		free(log);
		free(want);
	}
	launch_destroy(l);
	assignment_destroy(a);

	/* No instance folder on the mount: the log cannot be opened. */
	a = assignment(10, "nolog", "echo x", NULL);
	free(reason);
	reason = NULL;
	l = start(a, &err);
	is_int(l ? outcome(l, &reason) : 0, -1, "a missing log folder fails the set-up");
	ok(reason && strstr(reason, "cannot open the log") && strstr(reason, "jobs/10/stages/nolog/instances/0/log"),
	   "naming the log: %s", reason ? reason : "(null)");
	if (l)
		wait_exit(launch_pid(l), 10);
	launch_destroy(l);
	assignment_destroy(a);
	free(reason);
	free(err);
}

static void test_identity(void)
{
	char *err = NULL, *reason = NULL;
	struct assignment *a;
	struct launch *l;

	make_dirs(11, "who", 0, 0777);
	if (geteuid() != 0) {
		a = assignment(11, "who", "id", NULL);
		a->uid = geteuid() + 1;
		free(a->user);
		a->user = xstrdup("");
		l = start(a, &err);
		ok(l == NULL, "a runner that is not root refuses another user's job");
		ok(err && strstr(err, "cannot start: this runner runs as uid"), "with a clear reason: %s",
		   err ? err : "(null)");
		launch_destroy(l);
		assignment_destroy(a);
		free(err);
		return;
	}

	/* uid 0 for a job not submitted by root. */
	a = assignment(11, "who", "id", NULL);
	a->uid = 0;
	free(a->user);
	a->user = xstrdup("");
	l = start(a, &err);
	ok(l == NULL && err && strstr(err, "refusing to run as uid 0"), "uid 0 without user root is refused: %s",
	   err ? err : "(null)");
	launch_destroy(l);
	assignment_destroy(a);

	/* A user name that this host maps to another uid. */
	a = assignment(11, "who", "id", NULL);
	a->uid = 4242;
	free(a->user);
	a->user = xstrdup("root");
	l = start(a, &err);
	ok(l == NULL && err && strstr(err, "is uid 0 on this host"), "a user/uid mismatch is refused: %s",
	   err ? err : "(null)");
	launch_destroy(l);
	assignment_destroy(a);

	/* A user this host does not know: the assignment's groups, HOME = scratch. */
	a = assignment(11, "who", "echo \"ids:$(id -u) $(id -g) $(id -G | tr ' ' '\\n' | sort -n | tr '\\n' ' ')\";"
		       " echo \"home:$HOME user:$USER\"", NULL);
	a->uid = 4242;
	a->gid = 4243;
	free(a->user);
	a->user = xstrdup("ghost-parsa-test");
	free(a->groups);
	a->groups = xcalloc(2, sizeof *a->groups);
	a->groups[0] = 4243;
	a->groups[1] = 4300;
	a->ngroups = 2;
	chmod(scratch, 0777);
	l = start(a, &err);
	ok(l && outcome(l, &reason) == 1, "an unknown user's job starts: %s", reason ? reason : err ? err : "ok");
	if (l) {
		int status = wait_exit(launch_pid(l), 10);
		char *log = slurp("jobs/11/stages/who/instances/0/log"), *want;
		struct stat st;
		char *logpath = path_of("jobs/11/stages/who/instances/0/log");

		ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "and exits 0");
		ok(log && strstr(log, "ids:4242 4243 4243 4300 \n"), "as uid 4242, gid 4243, groups 4243 4300");
		want = xasprintf("home:%s user:ghost-parsa-test\n", scratch);
		ok(log && strstr(log, want), "HOME is the scratch folder, USER the name sent");
		ok(stat(logpath, &st) == 0 && st.st_uid == 4242, "the log belongs to the user (created as them)");
		free(want);
		free(log);
		free(logpath);
	}
	launch_destroy(l);
	assignment_destroy(a);

	/* A user passwd knows: this host's groups (initgroups) and their HOME. */
	{
		struct passwd *pw = getpwnam("nobody");

		if (!pw) {
			diag("no user nobody: skipping the initgroups case");
		} else {
			make_dirs(12, "nobody", 0, 0777);
			a = assignment(12, "nobody", "echo \"uid:$(id -u) home:$HOME\"; touch /proc/1/root/x 2>/dev/null"
				       " && echo root-access", NULL);
			a->uid = pw->pw_uid;
			a->gid = pw->pw_gid;
			free(a->user);
			a->user = xstrdup("nobody");
			free(a->groups);
			a->groups = xcalloc(1, sizeof *a->groups);
			a->groups[0] = 0;   /* must not be used: passwd knows nobody */
			a->ngroups = 1;
			free(reason);
			reason = NULL;
			l = start(a, &err);
			ok(l && outcome(l, &reason) == 1, "nobody's job starts");
			if (l) {
				char *log, *want;

				wait_exit(launch_pid(l), 10);
				log = slurp("jobs/12/stages/nobody/instances/0/log");
				want = xasprintf("uid:%u home:%s\n", (unsigned)pw->pw_uid, pw->pw_dir);
				ok(log && strstr(log, want), "runs as nobody with passwd's HOME");
				ok(log && !strstr(log, "root-access"), "without root's powers");
				free(log);
				free(want);
			}
			launch_destroy(l);
			assignment_destroy(a);
		}
	}
	free(err);
	free(reason);
}

static int group_alive(pid_t pgid)
{
	return kill(-pgid, 0) == 0;
}

/* Reap what was re-parented to us (we are a subreaper) so the group empties. */
static void reap_orphans(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

static void test_cancel_group(void)
{
	struct assignment *a;
	struct launch *l;
	char *err = NULL;
	pid_t pid;
	int status, alive_after_term;

	make_dirs(13, "stubborn", 0, 0755);
	/* The shell and both children ignore TERM (ignored signals are inherited). */
	a = assignment(13, "stubborn", "trap '' TERM; sleep 300 & sleep 300 & echo ready; wait; wait", NULL);
	l = start(a, &err);
	ok(l && outcome(l, NULL) == 1, "a TERM-ignoring group started");
	if (!l)
		goto out;
	pid = launch_pid(l);
	for (int i = 0; i < 300; i++) {
		char *log = slurp("jobs/13/stages/stubborn/instances/0/log");
		int ready = log && strstr(log, "ready");

		free(log);
		if (ready)
			break;
		usleep(10000);
	}
	is_int(launch_signal(l, SIGTERM), 0, "SIGTERM to the group");
	usleep(200000);
	alive_after_term = group_alive(pid) && waitpid(pid, &status, WNOHANG) == 0;
	ok(alive_after_term, "the group survives SIGTERM");
	is_int(launch_signal(l, SIGKILL), 0, "SIGKILL to the group");
	status = wait_exit(pid, 10);
	ok(status >= 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the shell died of SIGKILL");
	for (int i = 0; i < 200 && group_alive(pid); i++) {
		reap_orphans();
		usleep(10000);
	}
	ok(!group_alive(pid), "nothing of the process group is left");
	launch_destroy(l);
out:
	assignment_destroy(a);
	free(err);
}

static void test_assignment_validation(void)
{
	static const char *bad[] = {
		"{\"attempt\": 1, \"job\": 1, \"stage\": \"s\", \"index\": 0, \"run\": \"x\", \"uid\": 1, \"gid\": 1}",
		"{\"id\": 1, \"attempt\": 1, \"job\": 1, \"stage\": \"../etc\", \"index\": 0, \"run\": \"x\", \"uid\": 1, \"gid\": 1}",
		"{\"id\": 1, \"attempt\": 1, \"job\": 1, \"stage\": \"s\", \"index\": 0, \"run\": \"x\", \"gid\": 1}",
		"{\"id\": 1, \"attempt\": 1, \"job\": 1, \"stage\": \"s\", \"index\": 0, \"run\": \"x\", \"uid\": -1, \"gid\": 1}",
		"{\"id\": 1, \"attempt\": 1, \"job\": 1, \"stage\": \"s\", \"index\": 0, \"uid\": 1, \"gid\": 1}",
		"{\"id\": 1, \"attempt\": 1, \"job\": 1, \"stage\": \"s\", \"index\": 0, \"run\": \"x\", \"uid\": 1, \"gid\": 1, \"item\": \"../../x\"}",
		"{\"id\": 1, \"attempt\": 1, \"job\": 1, \"stage\": \"s\", \"index\": 0, \"run\": \"x\", \"uid\": 1, \"gid\": 1, \"env\": [\"NOEQUALS\"]}",
		"[1, 2]",
	};
	static const char *why[] = {
		"'id'", "stage name", "'uid'", "'uid'", "'run'", "item", "NAME=value", "not a JSON object",
	};
	static const char good[] = "{\"id\": 1, \"attempt\": 2, \"job\": 3, \"stage\": \"s-1.x\", \"index\": 4,"
				   " \"run\": \"x\", \"uid\": 5, \"gid\": 6, \"item\": \"warm/a..b\"}";
	struct assignment *a;
	char *err = NULL;
	json_t *j;

	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		j = json_loads(bad[i], 0, NULL);
		a = assignment_from_json(j, &err);
		ok(a == NULL && err && strstr(err, why[i]), "bad assignment %zu refused: %s", i, err ? err : "(null)");
		assignment_destroy(a);
		json_decref(j);
	}
	j = json_loads(good, 0, NULL);
	a = assignment_from_json(j, &err);
	ok(a != NULL, "a minimal assignment parses");
	if (a) {
		is_int(a->cpus, 1, "cpus defaults to 1");
		is_int(a->walltime_s, 0, "no walltime by default");
		is_str(a->user, "", "user defaults to empty");
		is_int(a->nenv, 0, "no env");
	}
	assignment_destroy(a);
	json_decref(j);
	free(err);
}

int main(void)
{
	char tmpl[] = "/tmp/parsa-test-launch.XXXXXX";
	char *cmd;

	root_dir = mkdtemp(tmpl);
	if (!root_dir) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	chmod(root_dir, 0755);
	scratch = xasprintf("%s/scratch", root_dir);
	mkdir(scratch, 0755);
	/* Orphaned grandchildren come back to us, so the test can see a process
	 * group disappear entirely. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);

	test_assignment_validation();
	test_env_and_exit_code();
	test_pinned();
	test_signal();
	test_setup_failures();
	test_identity();
	test_cancel_group();

	cmd = xasprintf("rm -rf '%s'", root_dir);
	if (system(cmd) != 0)
		diag("cannot remove %s", root_dir);
	free(cmd);
	free(scratch);
	return done_testing();
}
