#include "supervise.h"
#include "assign.h"
#include "launch.h"
#include "log.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/pidfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define FILE_MAX (4 << 20)

struct supervised {
	char *dir;
	pid_t sup_pid;
	int notify_fd;        /* our child's stdout; -1 when reattached or closed */
	int exit_fd;          /* pidfd of the supervisor */
	char *stop_reason;
};

/* ---- shared ---- */

static char *path_in(const char *dir, const char *name)
{
	return xasprintf("%s/%s", dir, name);
}

/* Replace dir/name with text, through a temporary name: a reader never sees
 * half a file, even if we are killed in the middle. */
static int write_atomic(const char *dir, const char *name, const char *text)
{
	char *path = path_in(dir, name), *tmp = xasprintf("%s.tmp", path);
	int fd, ret = -1, saved;

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0 && write_all(fd, text, strlen(text)) == 0 && close(fd) == 0) {
		fd = -1;
		ret = rename(tmp, path);
	}
	saved = errno;
	if (fd >= 0)
		close(fd);
	if (ret < 0)
		unlink(tmp);
	free(tmp);
	free(path);
	errno = saved;
	return ret;
}

/* The status is rewritten in place (publish()): its reader holds a shared
 * lock, its writer an exclusive one, so a read never sees half of one write.
 * Any other file is only ever replaced whole. */
static char *read_locked(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *text;
	int saved;

	if (fd < 0)
		return NULL;
	if (flock(fd, LOCK_SH) < 0) {
		saved = errno;
		close(fd);
		errno = saved;
		return NULL;
	}
	text = read_fd(fd, FILE_MAX, NULL);
	saved = errno;
	close(fd);  /* and with it the lock */
	errno = saved;
	return text;
}

/* Write dir/name straight (no rename): for assignment.json, which no
 * supervisor reads before it is whole; a runner killed in the middle leaves
 * a file that does not parse, which supervised_attach() takes for none. */
static int write_new(const char *dir, const char *name, const char *text)
{
	char *path = path_in(dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), ret = -1, saved;

	if (fd >= 0) {
		ret = write_all(fd, text, strlen(text));
		if (close(fd) < 0)
			ret = -1;
	}
	saved = errno;
	free(path);
	errno = saved;
	return ret;
}

static json_t *read_json(const char *dir, const char *name)
{
	char *path = path_in(dir, name), *text = read_locked(path);
	json_t *json = text ? json_loads(text, 0, NULL) : NULL;

	free(text);
	free(path);
	if (json && !json_is_object(json)) {
		json_decref(json);
		json = NULL;
	}
	return json;
}

/* Field 22 of /proc/<pid>/stat: when the process started, in clock ticks
 * since boot. With the pid it names one process for good (pids are reused).
 * 0 when the process does not exist. */
static unsigned long long start_time(pid_t pid)
{
	char path[64], *text, *p;
	unsigned long long t = 0;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	text = read_file(path, 4096, NULL);
	if (!text)
		return 0;
	/* The command name may hold spaces and parentheses: skip past the last ')'. */
	p = strrchr(text, ')');
	if (p && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d"
			" %*d %*d %*d %llu", &t) != 1)
		t = 0;
	free(text);
	return t;
}

void sup_status_clear(struct sup_status *st)
{
	free(st->reason);
	memset(st, 0, sizeof *st);
}

/* ---- the runner's side ---- */

static struct supervised *handle(const char *dir)
{
	struct supervised *s = xcalloc(1, sizeof *s);

	s->dir = xstrdup(dir);
	s->notify_fd = -1;
	s->exit_fd = -1;
	return s;
}

/* The program to exec as the supervisor: parsa-supervise next to this
 * runner (small, quick to start), else the runner itself with --supervise.
 * Fills exe and the first arguments; returns how many. */
static int supervisor_program(char *exe, size_t len, char **argv)
{
	ssize_t n = readlink("/proc/self/exe", exe, len - 1);
	char *slash;

	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash && (size_t)(slash - exe) + sizeof "/parsa-supervise" <= len) {
			strcpy(slash, "/parsa-supervise");
			if (access(exe, X_OK) == 0) {
				argv[0] = "parsa-supervise";
				return 1;
			}
		}
	}
	snprintf(exe, len, "/proc/self/exe");
	argv[0] = "parsa-runner";
	argv[1] = "--supervise";
	return 2;
}

struct supervised *supervised_start(const char *dir, const json_t *assignment, const char *mount,
				    const char *scratch, const char *progress, json_t *identity,
				    char **err)
{
	struct supervised *s = handle(dir);
	json_t *copy = json_deep_copy(assignment);
	char *text = NULL, *argv[4], exe[PATH_MAX];
	posix_spawn_file_actions_t actions;
	int fds[2] = { -1, -1 }, nargs, rc;
	pid_t pid;

	/* Beside the assignment's own members (its "scratch" is a size). */
	json_object_set_new(copy, "runner_mount", json_string(mount));
	json_object_set_new(copy, "runner_scratch_dir", json_string(scratch));
	json_object_set_new(copy, "runner_progress_file", json_string(progress));
	json_object_set_new(copy, "runner_identity", identity);
	text = json_dumps(copy, JSON_COMPACT);
	json_decref(copy);
	if ((mkdir(dir, 0700) < 0 && errno != EEXIST) || !text ||
	    write_new(dir, "assignment.json", text) < 0) {
		errprintf(err, "cannot start: cannot write %s/assignment.json: %s", dir, strerror(errno));
		goto fail;
	}
	if (pipe2(fds, O_CLOEXEC) < 0) {
		errprintf(err, "cannot start: cannot create a pipe: %s", strerror(errno));
		goto fail;
	}
	nargs = supervisor_program(exe, sizeof exe, argv);
	argv[nargs++] = s->dir;
	argv[nargs] = NULL;
	/* posix_spawn, not fork: it shares the runner's memory until the exec
	 * instead of copying its page tables (and faulting them back) for every
	 * instance. */
	if ((rc = posix_spawn_file_actions_init(&actions)) != 0 ||
	    (rc = posix_spawn_file_actions_adddup2(&actions, fds[1], 1)) != 0 ||
	    (rc = posix_spawn(&pid, exe, &actions, NULL, argv, environ)) != 0) {
		errno = rc;
		errprintf(err, "cannot start: cannot start %s: %s", exe, strerror(rc));
		posix_spawn_file_actions_destroy(&actions);
		goto fail;
	}
	posix_spawn_file_actions_destroy(&actions);
	close(fds[1]);
	s->sup_pid = pid;
	s->notify_fd = fds[0];
	fcntl(s->notify_fd, F_SETFL, O_NONBLOCK);
	s->exit_fd = pidfd_open(pid, 0);
	if (s->exit_fd < 0)
		log_warn("pidfd_open(%d)", (int)pid);
	free(text);
	return s;
fail:
	{
		int saved = errno;

		if (fds[0] >= 0)
			close(fds[0]);
		if (fds[1] >= 0)
			close(fds[1]);
		free(text);
		supervised_forget(s);
		supervised_destroy(s);
		errno = saved;
	}
	return NULL;
}

struct supervised *supervised_attach(const char *dir, json_t **assignment, char **err)
{
	struct supervised *s;
	json_t *status;
	char *path;

	*assignment = read_json(dir, "assignment.json");
	if (!*assignment) {
		errno = ENOENT;
		errprintf(err, "%s holds no assignment", dir);
		return NULL;
	}
	s = handle(dir);
	status = read_json(dir, "status");
	if (status) {
		pid_t pid = (pid_t)json_integer_value(json_object_get(status, "supervisor"));
		unsigned long long t = (unsigned long long)json_integer_value(
			json_object_get(status, "supervisor_start"));

		/* Only the very process that wrote the status: its pid may have
		 * been reused since. */
		if (pid > 0 && t && start_time(pid) == t) {
			s->sup_pid = pid;
			s->exit_fd = pidfd_open(pid, 0);
		}
		json_decref(status);
	}
	path = path_in(dir, "stop");
	s->stop_reason = read_file(path, 4096, NULL);
	free(path);
	return s;
}

void supervised_destroy(struct supervised *s)
{
	if (!s)
		return;
	if (s->notify_fd >= 0)
		close(s->notify_fd);
	if (s->exit_fd >= 0)
		close(s->exit_fd);
	free(s->dir);
	free(s->stop_reason);
	free(s);
}

int supervised_notify_fd(const struct supervised *s)
{
	return s->notify_fd;
}

void supervised_notified(struct supervised *s)
{
	char buf[64];
	ssize_t n;

	if (s->notify_fd < 0)
		return;
	while ((n = read(s->notify_fd, buf, sizeof buf)) > 0)
		;
	if (n == 0) {
		/* The supervisor has ended (or closed its stdout): the pidfd says
		 * the rest. */
		close(s->notify_fd);
		s->notify_fd = -1;
	}
}

int supervised_exit_fd(const struct supervised *s)
{
	return s->exit_fd;
}

int supervised_done(const struct supervised *s)
{
	struct pollfd pfd = { .fd = s->exit_fd, .events = POLLIN };

	if (s->exit_fd < 0)
		return s->sup_pid <= 0 || kill(s->sup_pid, 0) < 0;
	return poll(&pfd, 1, 0) > 0;
}

pid_t supervised_supervisor_pid(const struct supervised *s)
{
	return s->sup_pid;
}

/* In the order of enum sup_state: publish() indexes it. */
static const struct state_name {
	const char *name;
	enum sup_state state;
} state_names[] = {
	{ "starting", SUP_STARTING },
	{ "running", SUP_RUNNING },
	{ "failed", SUP_FAILED },
	{ "exited", SUP_EXITED },
};

void supervised_status(struct supervised *s, struct sup_status *st)
{
	/* Whether the supervisor is gone is asked before its status is read: it
	 * writes its last word and then exits, so a status read first and a
	 * "gone" seen after could be the moment in between, not a kill. */
	int gone = supervised_done(s);
	json_t *json = read_json(s->dir, "status");
	const char *state = json ? json_string_value(json_object_get(json, "state")) : NULL;
	const char *reason = json ? json_string_value(json_object_get(json, "reason")) : NULL;

	memset(st, 0, sizeof *st);
	st->state = SUP_STARTING;
	st->cpu_ms = st->max_rss = -1;
	for (size_t i = 0; i < ARRAY_LEN(state_names) && state; i++)
		if (strcmp(state_names[i].name, state) == 0)
			st->state = state_names[i].state;
	if (json) {
		st->pid = (pid_t)json_integer_value(json_object_get(json, "pid"));
		st->started_ms = json_integer_value(json_object_get(json, "started_ms"));
		st->exit_code = (int)json_integer_value(json_object_get(json, "exit_code"));
		st->signal = (int)json_integer_value(json_object_get(json, "signal"));
		st->ended_ms = json_integer_value(json_object_get(json, "ended_ms"));
		st->cpu_ms = json_is_integer(json_object_get(json, "cpu_ms")) ?
			     json_integer_value(json_object_get(json, "cpu_ms")) : -1;
		st->max_rss = json_is_integer(json_object_get(json, "max_rss")) ?
			      json_integer_value(json_object_get(json, "max_rss")) : -1;
		if (reason)
			st->reason = xstrdup(reason);
	}
	json_decref(json);
	if ((st->state == SUP_STARTING || st->state == SUP_RUNNING) && gone) {
		/* Gone without a last word (killed, or it could not even start). */
		if (st->state == SUP_STARTING && st->pid <= 0) {
			st->state = SUP_FAILED;
			free(st->reason);
			st->reason = xstrdup("cannot start: the instance's supervisor did not start"
					     " (see the runner's log)");
		} else {
			st->state = SUP_EXITED;
			st->signal = SIGKILL;
			free(st->reason);
			st->reason = xstrdup("its supervisor was killed");
		}
	}
}

int supervised_signal(struct supervised *s, int sig)
{
	struct sup_status st;
	int ret;

	supervised_status(s, &st);
	if (st.pid <= 0 || st.state == SUP_EXITED || st.state == SUP_FAILED) {
		sup_status_clear(&st);
		/* Not started yet: the supervisor passes nothing on, but the
		 * instance then dies with it only if we kill the supervisor. */
		if (s->sup_pid > 0 && !supervised_done(s) && sig == SIGKILL)
			return kill(s->sup_pid, SIGKILL);
		errno = ESRCH;
		return -1;
	}
	/* The supervisor has not reaped the instance while this status says
	 * running, so its pid is still its own. */
	ret = kill(-st.pid, sig);
	if (ret < 0 && errno == ESRCH)
		ret = kill(st.pid, sig);
	sup_status_clear(&st);
	return ret;
}

void supervised_set_stop(struct supervised *s, const char *reason)
{
	if (s->stop_reason)
		return;
	s->stop_reason = xstrdup(reason);
	if (write_atomic(s->dir, "stop", reason) < 0)
		log_warn("cannot write %s/stop", s->dir);
}

const char *supervised_stop_reason(const struct supervised *s)
{
	return s->stop_reason;
}

void supervised_forget(struct supervised *s)
{
	static const char *const files[] = { "assignment.json", "status", "stop",
					     "assignment.json.tmp", "status.tmp", "stop.tmp" };

	for (size_t i = 0; i < ARRAY_LEN(files); i++) {
		char *path = path_in(s->dir, files[i]);

		unlink(path);
		free(path);
	}
	if (rmdir(s->dir) < 0 && errno != ENOENT)
		log_warn("cannot remove %s", s->dir);
}

/* ---- the supervisor ---- */

struct sup {
	const char *dir;
	pid_t self;
	unsigned long long self_start;
	struct sup_status st;  /* what the next publish() says (reason aside) */
	int status_fd;         /* DIR/status once written, kept open to rewrite; -1 */
	size_t status_len;     /* its length: a shorter status is padded to it */
};

/* The first status appears whole (written aside, renamed); each later one
 * overwrites it in place under an exclusive lock (read_locked() takes a shared
 * one), padded with spaces, which JSON ignores, to the length before. On ext4
 * this spares each instance two new inodes and two renames over a file, each
 * of which writes the new file's blocks out at once (auto_da_alloc). */
static int write_status(struct sup *p, const char *text)
{
	size_t len = strlen(text), size = len > p->status_len ? len : p->status_len;
	char *padded = NULL, *path, *tmp;
	int fd, ok = 0;

	if (p->status_fd >= 0) {
		padded = xmalloc(size);
		memcpy(padded, text, len);
		memset(padded + len, ' ', size - len);
		if (flock(p->status_fd, LOCK_EX) == 0) {
			ok = pwrite(p->status_fd, padded, size, 0) == (ssize_t)size;
			flock(p->status_fd, LOCK_UN);
		}
		free(padded);
		if (ok) {
			p->status_len = size;
			return 0;
		}
		/* A short write left a torn status: replace it whole. */
		close(p->status_fd);
		p->status_fd = -1;
		return write_atomic(p->dir, "status", text);
	}
	path = path_in(p->dir, "status");
	tmp = xasprintf("%s.tmp", path);
	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0 && write_all(fd, text, len) == 0 && rename(tmp, path) == 0) {
		p->status_fd = fd;
		p->status_len = len;
		fd = -1;
		ok = 1;
	}
	if (fd >= 0) {
		close(fd);
		unlink(tmp);
	}
	free(tmp);
	free(path);
	return ok ? 0 : write_atomic(p->dir, "status", text);
}

/* Write the status and tell the runner (if it still listens) to read it. */
static void publish(struct sup *p, enum sup_state state, const char *reason)
{
	const struct sup_status *st = &p->st;
	json_t *json = json_pack("{s:s,s:i,s:I,s:i,s:I,s:i,s:i}", "state", state_names[state].name,
				 "supervisor", (int)p->self,
				 "supervisor_start", (json_int_t)p->self_start, "pid", (int)st->pid,
				 "started_ms", (json_int_t)st->started_ms, "exit_code", st->exit_code,
				 "signal", st->signal);
	char *text;

	if (reason)
		json_object_set_new(json, "reason", json_string(reason));
	/* The end: when wait returned, and what the instance and the children
	 * it waited for used (its rusage), which a runner restart must not lose. */
	if (state == SUP_EXITED)
		json_object_update_new(json, json_pack("{s:I,s:I,s:I}", "ended_ms", (json_int_t)st->ended_ms,
						       "cpu_ms", (json_int_t)st->cpu_ms,
						       "max_rss", (json_int_t)st->max_rss));
	text = json_dumps(json, JSON_COMPACT);
	if (!text || write_status(p, text) < 0)
		log_warn("cannot write %s/status", p->dir);
	free(text);
	json_decref(json);
	/* EPIPE once the runner is gone: it reads the status when it is back.
	 * "starting" is what the runner assumes of a supervisor it just
	 * started: it is written for a runner that reattaches, not told. */
	if (state != SUP_STARTING && write(1, "\n", 1) < 0 && errno != EPIPE)
		log_debug("cannot notify the runner: %s", strerror(errno));
}

/* Wait for the launch's set-up to say how it went: 1 running, -1 failed. */
static int await_setup(struct launch *l, char **reason)
{
	for (;;) {
		struct pollfd pfd = { .fd = launch_status_fd(l), .events = POLLIN };
		int rc = launch_poll(l, reason);

		if (rc != 0)
			return rc;
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			return 1;  /* cannot tell: the exit status will */
	}
}

/* Kill whatever the instance left in its process group and, with a
 * cgroup, also what left the group (cgroup.kill, Linux 5.14). */
static void kill_leftovers(pid_t pid, const char *cgroup)
{
	kill(-pid, SIGKILL);
	if (cgroup) {
		char *path = xasprintf("%s/cgroup.kill", cgroup);
		int fd = open(path, O_WRONLY | O_CLOEXEC);

		if (fd >= 0) {
			if (write(fd, "1", 1) < 0)
				log_debug("cannot write %s: %s", path, strerror(errno));
			close(fd);
		}
		free(path);
	}
}

static int64_t timeval_ms(const struct timeval *tv)
{
	return (int64_t)tv->tv_sec * 1000 + tv->tv_usec / 1000;
}

int supervise_main(const char *dir)
{
	struct sup p = { .dir = dir, .self = getpid(), .status_fd = -1 };
	struct launch_request req;
	struct assignment *a = NULL;
	struct launch *l = NULL;
	struct sigaction ign;
	struct rusage ru;
	json_t *json = NULL;
	char *err = NULL, *reason = NULL;
	sigset_t none;
	siginfo_t si;
	pid_t pid;
	int status = 0;

	log_init("parsa-runner[supervise]", 1, LOG_LEVEL_INFO);
	/* Out of the runner's session: a signal for the runner's terminal or
	 * group (Ctrl-C of `parsa up`, a kill of the runner's group) is not for
	 * us, and we outlive the runner. Stray termination signals are ignored;
	 * the instance gets default dispositions back in launch.c. */
	setsid();
	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &ign, NULL);
	sigaction(SIGHUP, &ign, NULL);
	sigaction(SIGINT, &ign, NULL);
	sigaction(SIGTERM, &ign, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	p.self_start = start_time(p.self);

	json = read_json(dir, "assignment.json");
	if (json)
		a = assignment_from_json(json, &err);
	if (!a) {
		reason = xasprintf("cannot start: %s", err ? err : "no readable assignment.json");
		publish(&p, SUP_FAILED, reason);
		goto out;
	}
	publish(&p, SUP_STARTING, NULL);
	req = (struct launch_request){
		.a = a,
		.mount = json_string_value(json_object_get(json, "runner_mount")),
		.scratch = json_string_value(json_object_get(json, "runner_scratch_dir")),
		.progress = json_string_value(json_object_get(json, "runner_progress_file")),
		.identity = json_object_get(json, "runner_identity"),
		.cpu_list = json_string_value(json_object_get(json, "runner_cpu_list")),
		.gpu_list = json_string_value(json_object_get(json, "runner_gpu_list")),
		.cgroup = json_string_value(json_object_get(json, "runner_cgroup")),
	};
	if (!req.mount || !req.scratch) {
		publish(&p, SUP_FAILED, "cannot start: the assignment names no mount or scratch");
		goto out;
	}
	l = launch_create(&req, &reason);
	if (!l) {
		publish(&p, SUP_FAILED, reason ? reason : "cannot start");
		goto out;
	}
	pid = launch_pid(l);
	p.st.pid = pid;
	if (await_setup(l, &reason) < 0) {
		publish(&p, SUP_FAILED, reason ? reason : "cannot start");
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		goto out;
	}
	p.st.started_ms = time_now_ms();
	publish(&p, SUP_RUNNING, NULL);
	/* Look without reaping first: while the instance is a zombie its pid,
	 * and so its process group id, cannot be reused, which makes killing what
	 * it left in its group safe. */
	memset(&si, 0, sizeof si);
	while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
		;
	p.st.ended_ms = time_now_ms();
	kill_leftovers(pid, req.cgroup);
	memset(&ru, 0, sizeof ru);
	while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
		;
	p.st.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	p.st.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	p.st.cpu_ms = timeval_ms(&ru.ru_utime) + timeval_ms(&ru.ru_stime);
	p.st.max_rss = (int64_t)ru.ru_maxrss * 1024;  /* kB */
	publish(&p, SUP_EXITED, NULL);
out:
	if (p.status_fd >= 0)
		close(p.status_fd);
	launch_destroy(l);
	assignment_destroy(a);
	json_decref(json);
	free(reason);
	free(err);
	return 0;
}
