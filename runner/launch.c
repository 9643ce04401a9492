#include "launch.h"
#include "api_client.h"
#include "cpulist.h"
#include "identity.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What the child failed at before exec; the parent turns it into a sentence. */
enum launch_step {
	STEP_CGROUP = 1,
	STEP_AFFINITY,
	STEP_SETSID,
	STEP_SETGROUPS,
	STEP_SETGID,
	STEP_SETUID,
	STEP_REGAIN,
	STEP_LOG,
	STEP_NULL,
	STEP_DUP,
	STEP_CHDIR,
	STEP_WORKDIR,
	STEP_EXEC,
};

/* One record on the status pipe: smaller than PIPE_BUF, so written atomically. */
struct status_rec {
	int step;
	int err;
};

struct launch {
	pid_t pid;
	int status_fd;       /* -1 once the outcome is known */
	int outcome;         /* 0 unknown, 1 reached exec, -1 failed */
	uid_t uid;
	gid_t gid;
	char *log_path;      /* kept for the failure message */
	char *workdir;       /* the same */
	char *out_dir;
	char *scratch;
	char *cgroup;
	char *cpu_list;
};

struct envv {
	char **v;
	size_t n, cap;
};

static void env_put(struct envv *e, char *entry)
{
	size_t nlen = strcspn(entry, "=");

	for (size_t i = 0; i < e->n; i++) {
		if (strncmp(e->v[i], entry, nlen) == 0 && e->v[i][nlen] == '=') {
			free(e->v[i]);
			e->v[i] = entry;
			return;
		}
	}
	if (e->n + 2 > e->cap) {
		e->cap = e->cap ? e->cap * 2 : 32;
		e->v = xrealloc(e->v, e->cap * sizeof *e->v);
	}
	e->v[e->n++] = entry;
	e->v[e->n] = NULL;
}

static void env_set(struct envv *e, const char *name, const char *value)
{
	env_put(e, xasprintf("%s=%s", name, value));
}

static void env_free(struct envv *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i]);
	free(e->v);
}

/* The identity identity_decide() chose. 0, or -1 with *err. */
static int identity_from_json(const json_t *json, struct identity *id, char **err)
{
	const json_t *groups = json_object_get(json, "groups");
	const char *user = json_string_value(json_object_get(json, "user"));
	const char *home = json_string_value(json_object_get(json, "home"));
	const char *shell = json_string_value(json_object_get(json, "shell"));
	size_t i;
	json_t *g;

	memset(id, 0, sizeof *id);
	if (!json_is_integer(json_object_get(json, "uid")) || !json_is_integer(json_object_get(json, "gid")) ||
	    !json_is_array(groups) || !user || !home || !shell) {
		errno = EINVAL;
		return errprintf(err, "cannot start: the assignment's identity is incomplete");
	}
	id->change = json_is_true(json_object_get(json, "change"));
	id->uid = (uid_t)json_integer_value(json_object_get(json, "uid"));
	id->gid = (gid_t)json_integer_value(json_object_get(json, "gid"));
	id->groups = xcalloc(json_array_size(groups) + 1, sizeof *id->groups);
	json_array_foreach(groups, i, g)
		id->groups[id->ngroups++] = (gid_t)json_integer_value(g);
	id->user = xstrdup(user);
	id->home = xstrdup(home);
	id->shell = xstrdup(shell);
	return 0;
}

char *launch_log_path(const char *mount, const struct assignment *a)
{
	return xasprintf("%s/jobs/%" PRId64 "/stages/%s/instances/%" PRId64 "/log",
			 mount, a->job, a->stage, a->index);
}

static void build_env(struct envv *e, const struct launch_request *req, const struct identity *id)
{
	const struct assignment *a = req->a;
	char num[32];
	char *v;

	env_set(e, "HOME", id->home);
	env_set(e, "USER", id->user);
	env_set(e, "LOGNAME", id->user);
	env_set(e, "SHELL", id->shell);
	env_set(e, "PATH", id->uid == 0 ?
		"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" :
		"/usr/local/bin:/usr/bin:/bin");
	/* The stage's own variables may change the defaults above, but not the
	 * PARSA_ ones below, which describe where the instance really is. */
	for (size_t i = 0; i < a->nenv; i++)
		env_put(e, xstrdup(a->env[i]));
	snprintf(num, sizeof num, "%" PRId64, a->job);
	env_set(e, "PARSA_JOB", num);
	env_set(e, "PARSA_STAGE", a->stage);
	snprintf(num, sizeof num, "%" PRId64, a->index);
	env_set(e, "PARSA_INDEX", num);
	v = a->item[0] ? xasprintf("%s/jobs/%" PRId64 "/out/%s", req->mount, a->job, a->item) : xstrdup("");
	env_set(e, "PARSA_ITEM", v);
	free(v);
	v = assignment_out_dir(req->mount, a);
	env_set(e, "PARSA_OUT", v);
	free(v);
	v = xasprintf("%s/jobs/%" PRId64, req->mount, a->job);
	env_set(e, "PARSA_JOBDIR", v);
	free(v);
	env_set(e, "PARSA_SCRATCH", req->scratch);
	/* Made by the runner before the start (runner/progress.h). */
	if (req->progress)
		env_set(e, "PARSA_PROGRESS", req->progress);
	snprintf(num, sizeof num, "%" PRId64, a->cpus);
	env_set(e, "PARSA_CPUS", num);
	if (req->cpu_list)
		env_set(e, "PARSA_CPU_LIST", req->cpu_list);
	/* After the stage's own variables: its GPUs are what the runner gave
	 * it, whatever env.CUDA_VISIBLE_DEVICES says. CUDA numbers devices
	 * fastest first unless told to follow the PCI bus, which is the order
	 * of nvidia-smi and of /dev/nvidiaN that the indices come from. */
	if (req->gpu_list) {
		env_set(e, "PARSA_GPUS", req->gpu_list);
		env_set(e, "CUDA_VISIBLE_DEVICES", req->gpu_list);
		env_set(e, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
	}
}

/* Everything the child needs, prepared before fork. */
struct child_plan {
	const struct identity *id;
	const char *log_path;
	const char *log_banner; /* written first, for an attempt after the first; or NULL */
	size_t log_banner_len;
	const char *out_dir;
	const char *workdir;     /* started in first, or NULL */
	bool workdir_fallback;   /* a missing workdir means out_dir, not a failure */
	bool make_out_dir;   /* a sweep's point folder below out/STAGE */
	const char *scratch;
	char *const *argv;
	char *const *envp;
	int status_fd;
	int cgroup_fd;       /* its cgroup's cgroup.procs, or -1 */
	bool pin;            /* apply cpus */
	cpu_set_t cpus;
};

static void __attribute__((noreturn)) child_fail(int status_fd, int step)
{
	struct status_rec rec = { step, errno };
	ssize_t n;

	do
		n = write(status_fd, &rec, sizeof rec);
	while (n < 0 && errno == EINTR);
	_exit(127);
}

/* A descriptor at 3 or above, so that dup2 onto 0, 1 and 2 always copies it
 * (and clears close-on-exec) even if the runner was started with closed stdio. */
static int above_stdio(int fd)
{
	int moved;

	if (fd < 0 || fd > 2)
		return fd;
	moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return moved;
}

/* Runs between fork and exec: async-signal-safe calls only. */
static void __attribute__((noreturn)) child_main(const struct child_plan *p)
{
	int logfd, nullfd;
	bool in_workdir;

	/* The runner blocks the signals it reads through signalfd and ignores
	 * SIGPIPE; the instance starts from a clean slate. */
	child_default_signals();

	/* Into its cgroup while still root: only the runner may write there.
	 * Writing 0 moves the writer. */
	if (p->cgroup_fd >= 0 && write(p->cgroup_fd, "0", 1) != 1)
		child_fail(p->status_fd, STEP_CGROUP);
	if (p->pin && sched_setaffinity(0, sizeof p->cpus, &p->cpus) < 0)
		child_fail(p->status_fd, STEP_AFFINITY);
	if (setsid() < 0)
		child_fail(p->status_fd, STEP_SETSID);
	if (p->id->change) {
		if (setgroups((size_t)p->id->ngroups, p->id->groups) < 0)
			child_fail(p->status_fd, STEP_SETGROUPS);
		if (setgid(p->id->gid) < 0)
			child_fail(p->status_fd, STEP_SETGID);
		if (setuid(p->id->uid) < 0)
			child_fail(p->status_fd, STEP_SETUID);
		/* Belt and braces: a process that gave up root must not get it back. */
		if (p->id->uid != 0 && setuid(0) == 0) {
			errno = EPERM;
			child_fail(p->status_fd, STEP_REGAIN);
		}
	}
	umask(022);
	/* Opened as the user, so that parsafs makes the log theirs and refuses
	 * what they may not write. */
	logfd = above_stdio(open(p->log_path, O_WRONLY | O_APPEND | O_CREAT | O_NOCTTY | O_CLOEXEC, 0644));
	if (logfd < 0)
		child_fail(p->status_fd, STEP_LOG);
	nullfd = above_stdio(open("/dev/null", O_RDONLY | O_CLOEXEC));
	if (nullfd < 0)
		child_fail(p->status_fd, STEP_NULL);
	/* The log holds every attempt: a line between them, so that an attempt
	 * that succeeded does not seem to end with the last one's error. */
	if (p->log_banner && write(logfd, p->log_banner, p->log_banner_len) < 0)
		child_fail(p->status_fd, STEP_LOG);
	if (dup2(nullfd, 0) < 0 || dup2(logfd, 1) < 0 || dup2(logfd, 2) < 0)
		child_fail(p->status_fd, STEP_DUP);
	/* A sweep's point has a folder of its own, made by its first instance
	 * (as the user, like the log). */
	if (p->make_out_dir)
		(void)mkdir(p->out_dir, 0755); /* EEXIST is fine; chdir tells any other error */
	/* Where it was submitted from, as the user: a folder this host lacks
	 * (or the user may not enter) means the output folder, unless the spec
	 * named it. */
	in_workdir = p->workdir && chdir(p->workdir) == 0;
	if (!in_workdir && p->workdir && !p->workdir_fallback)
		child_fail(p->status_fd, STEP_WORKDIR);
	if (!in_workdir && chdir(p->out_dir) < 0) {
		int out_err = errno;

		/* The volume's own error is the one worth telling (and the one
		 * that makes it "storage unreachable", launch_volume_errno). */
		if (chdir(p->scratch) < 0) {
			if (launch_volume_errno(out_err))
				errno = out_err;
			child_fail(p->status_fd, STEP_CHDIR);
		}
	}
	/* Nothing of the runner's (sockets, signalfd, other instances' pipes)
	 * leaks into the instance. */
	close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
	execve("/bin/sh", p->argv, p->envp);
	child_fail(p->status_fd, STEP_EXEC);
}

struct launch *launch_create(const struct launch_request *req, char **err)
{
	const struct assignment *a = req->a;
	struct launch *l = xcalloc(1, sizeof *l);
	struct identity id = { 0 };
	struct envv env = { 0 };
	struct child_plan plan;
	char *argv[4], *banner = NULL;
	int fds[2] = { -1, -1 }, cgroup_fd = -1;
	int ok = 0;
	pid_t pid;

	memset(&plan, 0, sizeof plan);
	l->pid = -1;
	l->status_fd = -1;
	l->log_path = launch_log_path(req->mount, a);
	l->out_dir = assignment_out_dir(req->mount, a);
	l->scratch = xstrdup(req->scratch);
	l->cgroup = req->cgroup ? xstrdup(req->cgroup) : NULL;
	l->cpu_list = req->cpu_list ? xstrdup(req->cpu_list) : NULL;
	if (req->cpu_list && *req->cpu_list) {
		if (cpulist_to_set(req->cpu_list, &plan.cpus) < 0) {
			errprintf(err, "cannot start: '%s' is not a list of cores", req->cpu_list);
			goto out;
		}
		plan.pin = true;
	}
	if (req->cgroup) {
		char *procs = xasprintf("%s/cgroup.procs", req->cgroup);

		cgroup_fd = open(procs, O_WRONLY | O_CLOEXEC);
		if (cgroup_fd < 0)
			errprintf(err, "cannot start: cannot open %s: %s", procs, strerror(errno));
		free(procs);
		if (cgroup_fd < 0)
			goto out;
	}
	if (identity_from_json(req->identity, &id, err) < 0) {
		memset(&id, 0, sizeof id);
		goto out;
	}
	l->uid = id.uid;
	l->gid = id.gid;
	build_env(&env, req, &id);
	argv[0] = "sh";
	argv[1] = "-c";
	argv[2] = a->run;
	argv[3] = NULL;
	if (pipe2(fds, O_CLOEXEC) < 0) {
		errprintf(err, "cannot start: cannot create a pipe: %s", strerror(errno));
		goto out;
	}
	plan.id = &id;
	plan.log_path = l->log_path;
	if (a->attempt > 1) {
		char host[256] = "?", when[32] = "?";
		time_t now = time(NULL);
		struct tm tm;

		gethostname(host, sizeof host - 1);
		if (localtime_r(&now, &tm))
			strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
		banner = xasprintf("---- parsa: attempt %" PRId64 " of this instance, started %s on %s ----\n",
				   a->attempt, when, host);
		plan.log_banner = banner;
		plan.log_banner_len = strlen(banner);
	}
	plan.out_dir = l->out_dir;
	l->workdir = a->workdir && a->workdir[0] ? xstrdup(a->workdir) : NULL;
	plan.workdir = l->workdir;
	plan.workdir_fallback = a->workdir_fallback;
	plan.make_out_dir = a->point && a->point[0];
	plan.scratch = l->scratch;
	plan.argv = argv;
	plan.envp = env.v;
	plan.status_fd = fds[1];
	plan.cgroup_fd = cgroup_fd;
	pid = fork();
	if (pid < 0) {
		errprintf(err, "cannot start: cannot fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0) {
		close(fds[0]);
		child_main(&plan);
	}
	close(fds[1]);
	fds[1] = -1;
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	l->pid = pid;
	l->status_fd = fds[0];
	fds[0] = -1;
	ok = 1;
out:
	if (cgroup_fd >= 0) {
		int saved = errno;

		close(cgroup_fd);
		errno = saved;
	}
	if (!ok) {
		int saved = errno;

		if (fds[0] >= 0)
			close(fds[0]);
		if (fds[1] >= 0)
			close(fds[1]);
		launch_destroy(l);
		l = NULL;
		errno = saved;
	}
	env_free(&env);
	identity_free(&id);
	free(banner);
	return l;
}

void launch_destroy(struct launch *l)
{
	if (!l)
		return;
	if (l->status_fd >= 0)
		close(l->status_fd);
	free(l->log_path);
	free(l->workdir);
	free(l->out_dir);
	free(l->scratch);
	free(l->cgroup);
	free(l->cpu_list);
	free(l);
}

pid_t launch_pid(const struct launch *l)
{
	return l->pid;
}

int launch_status_fd(const struct launch *l)
{
	return l->status_fd;
}

bool launch_volume_errno(int err)
{
	switch (err) {
	case EIO:
	case ETIMEDOUT:
	case ENOTCONN:
	case ESTALE:
	case EHOSTDOWN:
	case ECONNREFUSED:
		return true;
	default:
		return false;
	}
}

static char *failure_text(const struct launch *l, const struct status_rec *rec)
{
	const char *why = strerror(rec->err);

	/* The volume failed under us while the instance was being set up: not
	 * the job's fault, and not an attempt (lib/api_client.h). */
	if ((rec->step == STEP_LOG || rec->step == STEP_CHDIR) && launch_volume_errno(rec->err)) {
		if (rec->step == STEP_LOG)
			return xasprintf(API_REASON_STORAGE_UNREACHABLE ": cannot open the log %s as "
					 "uid %u: %s", l->log_path, (unsigned)l->uid, why);
		return xasprintf(API_REASON_STORAGE_UNREACHABLE ": cannot change directory to %s: %s",
				 l->out_dir, why);
	}
	switch (rec->step) {
	case STEP_CGROUP:
		return xasprintf("cannot start: cannot enter the cgroup %s: %s", l->cgroup ? l->cgroup : "", why);
	case STEP_AFFINITY:
		return xasprintf("cannot start: cannot pin it to cores %s: %s", l->cpu_list ? l->cpu_list : "", why);
	case STEP_SETSID:
		return xasprintf("cannot start: cannot create a session: %s", why);
	case STEP_SETGROUPS:
		return xasprintf("cannot start: cannot set the supplementary groups: %s", why);
	case STEP_SETGID:
		return xasprintf("cannot start: cannot set gid %u: %s", (unsigned)l->gid, why);
	case STEP_SETUID:
		return xasprintf("cannot start: cannot set uid %u: %s", (unsigned)l->uid, why);
	case STEP_REGAIN:
		return xasprintf("cannot start: uid %u could become root again; refusing to run", (unsigned)l->uid);
	case STEP_LOG:
		return xasprintf("cannot start: cannot open the log %s as uid %u: %s (is parsafs mounted there?)",
				 l->log_path, (unsigned)l->uid, why);
	case STEP_NULL:
		return xasprintf("cannot start: cannot open /dev/null: %s", why);
	case STEP_DUP:
		return xasprintf("cannot start: cannot redirect stdin, stdout and stderr: %s", why);
	case STEP_CHDIR:
		return xasprintf("cannot start: cannot change directory to %s nor to %s: %s",
				 l->out_dir, l->scratch, why);
	case STEP_WORKDIR:
		return xasprintf("cannot start: workdir %s: %s (the spec's workdir must exist on every "
				 "host the stage may run on)", l->workdir, why);
	case STEP_EXEC:
		return xasprintf("cannot start: cannot execute /bin/sh: %s", why);
	default:
		return xasprintf("cannot start: set-up failed (step %d): %s", rec->step, why);
	}
}

int launch_poll(struct launch *l, char **reason)
{
	struct status_rec rec;
	ssize_t n;

	if (l->outcome != 0 || l->status_fd < 0)
		goto done;
	do
		n = read(l->status_fd, &rec, sizeof rec);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return 0;
	if (n == (ssize_t)sizeof rec) {
		l->outcome = -1;
		if (reason) {
			free(*reason);
			*reason = failure_text(l, &rec);
		}
	} else {
		/* End of file: exec closed the pipe. A short read or an error
		 * cannot come from our child; treat it as started and let the exit
		 * status tell the rest. */
		l->outcome = 1;
	}
	close(l->status_fd);
	l->status_fd = -1;
	return l->outcome;
done:
	return l->outcome ? l->outcome : 1;
}

int launch_signal(struct launch *l, int sig)
{
	if (l->pid <= 0) {
		errno = ESRCH;
		return -1;
	}
	if (kill(-l->pid, sig) == 0)
		return 0;
	/* Before its setsid() the child is not yet a group leader. */
	if (errno == ESRCH)
		return kill(l->pid, sig);
	return -1;
}
