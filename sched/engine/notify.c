#include "notify.h"

#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Output of a notification kept for the log. */
#define OUTPUT_KEEP 512
/* How long a notification still gets once the scheduler stops. */
#define STOP_GRACE_MS 2000

struct task {
	int64_t job;
	char *name, *state, *user;
	uid_t uid;
	gid_t gid;
	char **targets;
	size_t ntargets;
	char *status;
	struct task *next;
};

struct notify {
	char *sendmail;
	notify_note_fn note;        /* may be NULL */
	void *note_arg;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct task *head, *tail;   /* protected by lock */
	bool busy;                  /* a task is running; protected by lock */
	bool stopping;              /* protected by lock */
	int64_t stop_mono;          /* when stopping began; protected by lock */
	pthread_t thread;
	bool started;
};

static void task_free(struct task *t)
{
	if (!t)
		return;
	free(t->name);
	free(t->state);
	free(t->user);
	for (size_t i = 0; i < t->ntargets; i++)
		free(t->targets[i]);
	free(t->targets);
	free(t->status);
	free(t);
}

/* Everything one program needs, prepared before fork(): the child only makes
 * async-signal-safe calls (the scheduler has other threads). */
struct plan {
	bool change_user;
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	int ngroups;
	char *argv[5];
	char **envp;
	size_t nenv;
};

static void plan_env(struct plan *p, char *entry)
{
	p->envp = xrealloc(p->envp, (p->nenv + 2) * sizeof *p->envp);
	p->envp[p->nenv++] = entry;
	p->envp[p->nenv] = NULL;
}

static void plan_clear(struct plan *p)
{
	for (size_t i = 0; i < p->nenv; i++)
		free(p->envp[i]);
	free(p->envp);
	for (size_t i = 0; i < ARRAY_LEN(p->argv); i++)
		free(p->argv[i]);
	free(p->groups);
	memset(p, 0, sizeof *p);
}

/* As whom it runs: the job's owner. A scheduler that is not root can only run
 * its own user's. 0, or -1 with *err. */
static int plan_identity(struct plan *p, const struct task *t, char **err)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	const char *home = "/";
	int n = 64;

	if (getpwuid_r(t->uid, &pw, buf, sizeof buf, &res) == 0 && res)
		home = pw.pw_dir;
	plan_env(p, xasprintf("HOME=%s", home));
	plan_env(p, xasprintf("USER=%s", t->user));
	plan_env(p, xasprintf("LOGNAME=%s", t->user));
	if (geteuid() != 0) {
		if (t->uid != geteuid())
			return errprintf(err, "the scheduler runs as uid %u, not as root: it cannot run "
					 "anything as uid %u", (unsigned)geteuid(), (unsigned)t->uid);
		return 0;
	}
	if (t->uid == 0 && strcmp(t->user, "root") != 0)
		return errprintf(err, "refusing to run a notification as uid 0 for a job not submitted by root");
	p->change_user = true;
	p->uid = t->uid;
	p->gid = t->gid;
	p->groups = xcalloc((size_t)n, sizeof *p->groups);
	if (!res || getgrouplist(res->pw_name, t->gid, p->groups, &n) < 0) {
		p->groups[0] = t->gid;
		n = 1;
	}
	p->ngroups = n;
	return 0;
}

static void __attribute__((noreturn)) child(const struct plan *p, int in, int out)
{
	struct sigaction dfl;
	sigset_t none;

	/* The scheduler ignores SIGPIPE and blocks SIGTERM/SIGINT for sigwait. */
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigaction(SIGPIPE, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setpgid(0, 0);
	if (p->change_user &&
	    (setgroups((size_t)p->ngroups, p->groups) < 0 || setgid(p->gid) < 0 || setuid(p->uid) < 0))
		_exit(126);
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0 || chdir("/") < 0)
		_exit(126);
	execve(p->argv[0], p->argv, p->envp);
	_exit(127);
}

/* Run the plan with input on stdin, kill it at the deadline. Returns its wait
 * status, or -1 with *err. output gets the start of what it printed. */
static int run(struct notify *n, const struct plan *p, const char *input, char *output, char **err)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, status = 0, ret = -1;
	size_t left = strlen(input), kept = 0;
	int64_t deadline = time_mono_ms() + NOTIFY_DEADLINE_MS;
	bool exited = false, killed = false;
	pid_t pid;

	output[0] = '\0';
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) {
		errprintf(err, "cannot create a pipe: %s", strerror(errno));
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		errprintf(err, "cannot fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		child(p, in[0], out[1]);
	close(in[0]);
	close(out[1]);
	in[0] = out[1] = -1;
	fcntl(in[1], F_SETFL, O_NONBLOCK);
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	while (!exited) {
		struct pollfd pfd[2] = { { .fd = out[0], .events = POLLIN }, { .fd = in[1], .events = POLLOUT } };
		int64_t now = time_mono_ms();
		char buf[1024];
		ssize_t r;

		pthread_mutex_lock(&n->lock);
		if (n->stopping && deadline > n->stop_mono + STOP_GRACE_MS)
			deadline = n->stop_mono + STOP_GRACE_MS;
		pthread_mutex_unlock(&n->lock);
		if (now >= deadline && !killed) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			killed = true;
		}
		poll(pfd, in[1] >= 0 ? 2 : 1, 100);
		while ((r = read(out[0], buf, sizeof buf)) > 0) {
			size_t take = (size_t)r < OUTPUT_KEEP - 1 - kept ? (size_t)r : OUTPUT_KEEP - 1 - kept;

			memcpy(output + kept, buf, take);
			kept += take;
			output[kept] = '\0';
		}
		if (in[1] >= 0 && left > 0) {
			ssize_t w = write(in[1], input + strlen(input) - left, left);

			if (w > 0)
				left -= (size_t)w;
			else if (w < 0 && errno != EAGAIN && errno != EINTR)
				left = 0;   /* it does not read its input: fine */
		}
		if (in[1] >= 0 && left == 0) {
			close(in[1]);
			in[1] = -1;
		}
		if (waitpid(pid, &status, WNOHANG) == pid)
			exited = true;
	}
	ret = killed ? -2 : status;
	if (killed)
		errprintf(err, "killed after %d s", NOTIFY_DEADLINE_MS / 1000);
out:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
	}
	return ret < -1 ? -1 : ret;
}

static void one_target(struct notify *n, const struct task *t, const char *target)
{
	struct plan p = { 0 };
	char output[OUTPUT_KEEP], *err = NULL, *input = NULL;
	const char *text = t->status;
	int status;

	output[0] = '\0';
	if (plan_identity(&p, t, &err) < 0)
		goto fail;
	plan_env(&p, xstrdup("PATH=/usr/local/bin:/usr/bin:/bin"));
	plan_env(&p, xasprintf("PARSA_JOB=%lld", (long long)t->job));
	plan_env(&p, xasprintf("PARSA_JOB_NAME=%s", t->name));
	plan_env(&p, xasprintf("PARSA_JOB_STATE=%s", t->state));
	if (strncmp(target, "exec:", 5) == 0) {
		p.argv[0] = xstrdup(target + 5);
	} else if (strncmp(target, "mail:", 5) == 0) {
		if (access(n->sendmail, X_OK) < 0) {
			errprintf(&err, "%s is not there (%s): no mail sent; install a mail transfer agent "
				  "such as exim4 or use exec:", n->sendmail, strerror(errno));
			goto fail;
		}
		p.argv[0] = xstrdup(n->sendmail);
		p.argv[1] = xstrdup("-i");
		p.argv[2] = xstrdup("--");
		p.argv[3] = xstrdup(target + 5);
		input = xasprintf("To: %s\nSubject: parsa: job %lld (%s) %s\n\n%s", target + 5,
				  (long long)t->job, t->name, t->state, t->status);
		text = input;
	} else {
		errprintf(&err, "unknown kind of target");
		goto fail;
	}
	status = run(n, &p, text, output, &err);
	if (status < 0)
		goto fail;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		log_info("job %lld: notified %s", (long long)t->job, target);
		goto out;
	}
	if (WIFEXITED(status))
		errprintf(&err, "exit code %d%s", WEXITSTATUS(status),
			  WEXITSTATUS(status) == 127 ? " (cannot execute it)" :
			  WEXITSTATUS(status) == 126 ? " (cannot become the job's owner)" : "");
	else
		errprintf(&err, "killed by signal %d", WTERMSIG(status));
fail:
	output[strcspn(output, "\n")] = '\0';
	log_warnx("job %lld: notify %s failed (the job is not affected): %s%s%s", (long long)t->job,
		  target, err ? err : "?", output[0] ? "; it printed: " : "", output);
	/* The log is root's: the job's owner reads why in the job's events. */
	if (n->note) {
		char *text = xasprintf("notification %s%s failed: %s%s%s",
				       strncmp(target, "mail:", 5) == 0 ? "to " : "",
				       strncmp(target, "mail:", 5) == 0 ? target + 5 : target,
				       err ? err : "?", output[0] ? "; it printed: " : "", output);

		n->note(n->note_arg, t->job, text);
		free(text);
	}
out:
	free(err);
	free(input);
	plan_clear(&p);
}

static void *notify_main(void *arg)
{
	struct notify *n = arg;

	pthread_mutex_lock(&n->lock);
	for (;;) {
		struct task *t;

		while (!n->head && !n->stopping)
			pthread_cond_wait(&n->cond, &n->lock);
		if (n->stopping || !n->head)
			break;
		t = n->head;
		n->head = t->next;
		if (!n->head)
			n->tail = NULL;
		n->busy = true;
		pthread_mutex_unlock(&n->lock);
		for (size_t i = 0; i < t->ntargets; i++)
			one_target(n, t, t->targets[i]);
		task_free(t);
		pthread_mutex_lock(&n->lock);
		n->busy = false;
		pthread_cond_broadcast(&n->cond);
	}
	pthread_mutex_unlock(&n->lock);
	return NULL;
}

struct notify *notify_create(const char *sendmail, notify_note_fn note, void *arg)
{
	struct notify *n = xcalloc(1, sizeof *n);

	n->note = note;
	n->note_arg = arg;
	n->sendmail = xstrdup(sendmail && *sendmail ? sendmail : "/usr/sbin/sendmail");
	pthread_mutex_init(&n->lock, NULL);
	pthread_cond_init(&n->cond, NULL);
	return n;
}

void notify_destroy(struct notify *n)
{
	struct task *t, *next;

	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	n->stopping = true;
	n->stop_mono = time_mono_ms();
	pthread_cond_broadcast(&n->cond);
	pthread_mutex_unlock(&n->lock);
	if (n->started)
		pthread_join(n->thread, NULL);
	for (t = n->head; t; t = next) {
		next = t->next;
		log_warnx("job %lld: the scheduler stops: its notifications are not sent", (long long)t->job);
		task_free(t);
	}
	pthread_cond_destroy(&n->cond);
	pthread_mutex_destroy(&n->lock);
	free(n->sendmail);
	free(n);
}

void notify_job(struct notify *n, const struct job *job, const char *status)
{
	struct task *t;

	if (!n || job->spec->nnotify == 0)
		return;
	t = xcalloc(1, sizeof *t);
	t->job = job->id;
	t->name = xstrdup(job->name);
	t->state = xstrdup(job_state_name(job->state));
	t->user = xstrdup(job->user);
	t->uid = job->uid;
	t->gid = job->gid;
	t->ntargets = job->spec->nnotify;
	t->targets = xcalloc(t->ntargets, sizeof *t->targets);
	for (size_t i = 0; i < t->ntargets; i++)
		t->targets[i] = xstrdup(job->spec->notify[i]);
	t->status = xstrdup(status ? status : "");
	pthread_mutex_lock(&n->lock);
	if (n->stopping) {
		pthread_mutex_unlock(&n->lock);
		task_free(t);
		return;
	}
	if (!n->started) {
		/* Started on first use: most schedulers never notify anyone. */
		if (pthread_create(&n->thread, NULL, notify_main, n) == 0) {
			n->started = true;
		} else {
			pthread_mutex_unlock(&n->lock);
			log_warnx("job %lld: cannot start the notification thread", (long long)job->id);
			task_free(t);
			return;
		}
	}
	if (n->tail)
		n->tail->next = t;
	else
		n->head = t;
	n->tail = t;
	pthread_cond_broadcast(&n->cond);
	pthread_mutex_unlock(&n->lock);
}

void notify_drain(struct notify *n)
{
	pthread_mutex_lock(&n->lock);
	while ((n->head || n->busy) && !n->stopping)
		pthread_cond_wait(&n->cond, &n->lock);
	pthread_mutex_unlock(&n->lock);
}
