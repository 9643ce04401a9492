#include "daemons.h"
#include "api_answers.h"
#include "api_client.h"
#include "api_paths.h"
#include "log.h"
#include "mountpoint.h"
#include "proc.h"
#include "runfile.h"
#include "util.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long each daemon gets to become ready, and to stop before SIGKILL. */
#define READY_MS 15000
#define STOP_RUNNER_MS 20000 /* the runner stops its instances: SIGTERM, grace, SIGKILL */
#define STOP_FS_MS 5000
#define STOP_SCHED_MS 10000
#define KILL_WAIT_MS 5000
#define HURRY_MS 3000     /* after a second stop signal, before SIGKILL */
#define PROBE_MS 2000
#define LOG_LINES 15

enum { SCHED, FS, RUNNER, NDAEMONS };

struct supervisor {
	const struct up_paths *paths;
	const struct up_opts *opts;
	struct daemon_proc d[NDAEMONS];
	char *bin[NDAEMONS];
	struct api_client *api;
	struct runinfo run;  /* what STATE/up.json says */
	int sigfd;
	int stopping;        /* a stop signal arrived */
	int tearing_down;
	int hurry;           /* a second stop signal during teardown: no more grace */
	dev_t mount_dev;     /* st_dev of the mount folder before parsafs mounted it */
	int64_t runner_started_ms;
	int watching;        /* the start is over: a daemon that ends is brought back */
	/* A daemon that ended (after the start), until it is back. */
	int missing[NDAEMONS];
	int64_t started_mono[NDAEMONS];      /* its last start */
	int64_t backoff_ms[NDAEMONS];        /* before the next try (0: at once) */
	int64_t next_try_mono[NDAEMONS];
};

/* Wait for an event for at most timeout_ms (-1: until one comes): a stop
 * signal is counted, a SIGCHLD reaps whichever daemon ended. */
static void sup_poll(struct supervisor *s, int timeout_ms)
{
	struct pollfd pfd = { .fd = s->sigfd, .events = POLLIN };
	struct signalfd_siginfo si;

	if (poll(&pfd, 1, timeout_ms) > 0) {
		while (read(s->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
			if (si.ssi_signo == SIGCHLD)
				continue;
			if (s->tearing_down && !s->hurry) {
				log_warnx("got %s again: killing what is left now", strsignal((int)si.ssi_signo));
				s->hurry = 1;
			} else if (!s->stopping) {
				log_info("got %s: stopping", strsignal((int)si.ssi_signo));
			}
			s->stopping = 1;
		}
	}
	for (int i = 0; i < NDAEMONS; i++)
		if (s->d[i].pid > 0)
			daemon_reap(&s->d[i]);
}

static void save_run(struct supervisor *s)
{
	char *err = NULL;

	s->run.sched = s->d[SCHED].pid;
	s->run.fs = s->d[FS].pid;
	s->run.runner = s->d[RUNNER].pid;
	free(s->run.web);
	s->run.web = s->d[SCHED].pid > 0 ? runinfo_web_url(s->paths->state) : NULL;
	if (runinfo_write(s->paths->runfile, &s->run, &err) < 0)
		log_warnx("%s", err); /* `parsa down --mount` still finds us through the lock */
	free(err);
}

/* The last lines daemon i logged in this run, without a final newline. */
static char *tail_of(const struct daemon_proc *d)
{
	char *tail = log_tail(d->log, d->log_start, LOG_LINES);
	size_t n = strlen(tail);

	if (n == 0) {
		free(tail);
		return xstrdup("  | (nothing)");
	}
	if (tail[n - 1] == '\n')
		tail[n - 1] = '\0';
	return tail;
}

/* The error for daemon i having ended while we waited on it or a later one. */
static int died(struct supervisor *s, int i, const char *while_doing, char **err)
{
	char how[128], *tail = tail_of(&s->d[i]);

	describe_status(s->d[i].status, how, sizeof how);
	errprintf(err, "%s %s %s; last lines of %s:\n%s", s->d[i].name, how, while_doing,
		  s->d[i].log, tail);
	free(tail);
	return -1;
}

/* The scheduler is ready when it answers GET /v1/status. */
static int sched_ready(struct supervisor *s)
{
	struct api_reply reply;
	char *path = api_path(API_STATUS, NULL);
	int ready = api_call(s->api, "GET", path, NULL, 0, NULL, 1000, &reply, NULL) == 200;

	api_reply_clear(&reply);
	free(path);
	return ready;
}

/* The mount is ready when the mount point has a new device and MOUNT/status
 * answers. The stat runs in a child that we can kill: a FUSE daemon that never
 * answers would otherwise hang us past any deadline. */
static int fs_ready(struct supervisor *s)
{
	char *status_path;
	int64_t deadline;
	int status, mounted;
	pid_t pid;

	mounted = is_mounted(s->paths->mount, NULL, 0);
	if (mounted <= 0)
		return 0;
	/* Allocate before the fork: the child only makes system calls. */
	status_path = xasprintf("%s/status", s->paths->mount);
	pid = fork();
	if (pid < 0) {
		free(status_path);
		return 0;
	}
	if (pid == 0) {
		struct stat st;
		int ok = stat(s->paths->mount, &st) == 0 && st.st_dev != s->mount_dev &&
			 stat(status_path, &st) == 0;

		_exit(ok ? 0 : 1);
	}
	free(status_path);
	deadline = time_mono_ms() + PROBE_MS;
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return WIFEXITED(status) && WEXITSTATUS(status) == 0;
		if ((r < 0 && errno != EINTR) || time_mono_ms() >= deadline)
			break;
		usleep(2000);
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return 0;
}

/* The runner is ready when a host has reported since it started (the database
 * may remember hosts from an earlier run, so any host will not do). */
static int runner_ready(struct supervisor *s)
{
	struct api_reply reply;
	struct api_host *hosts = NULL;
	char *path = api_path(API_HOSTS_LIST, NULL);
	size_t n = 0;
	int ready = 0;

	if (api_call(s->api, "GET", path, NULL, 0, NULL, 1000, &reply, NULL) == 200 &&
	    api_read_hosts(reply.body, reply.len, &hosts, &n, NULL) == 0) {
		for (size_t i = 0; i < n; i++)
			if (hosts[i].last_heartbeat_ms >= s->runner_started_ms - 1000)
				ready = 1;
	}
	api_hosts_free(hosts, n);
	api_reply_clear(&reply);
	free(path);
	return ready;
}

/* Start daemon i with argv and wait until ready(s) says so, a daemon dies,
 * a stop signal arrives, or READY_MS passes. 0 or -1 with *err. */
static int start_one(struct supervisor *s, int i, char **argv, int (*ready)(struct supervisor *),
		     char **err)
{
	int64_t t0 = time_mono_ms(), deadline = t0 + READY_MS;
	char *what;
	int rc = -1;

	log_info("starting %s", s->d[i].name);
	if (i == SCHED) {
		/* A scheduler that died left its page's address: the new one writes its own. */
		char *web = xasprintf("%s/web.url", s->paths->state);

		unlink(web);
		free(web);
	}
	if (daemon_start(&s->d[i], argv, err) < 0)
		return -1;
	save_run(s);
	what = xasprintf("while %s was starting", s->d[i].name);
	for (;;) {
		/* At the start each needs those before it; later one that is
		 * missing is being brought back on its own. */
		for (int j = s->watching ? i : 0; j <= i; j++)
			if (s->d[j].pid <= 0 && s->d[j].exited) {
				died(s, j, j == i ? "during its start" : what, err);
				goto out;
			}
		if (s->stopping) {
			errprintf(err, "interrupted while starting %s; stopped what had started", s->d[i].name);
			goto out;
		}
		if (ready(s))
			break;
		if (time_mono_ms() >= deadline) {
			char *tail = tail_of(&s->d[i]);

			errprintf(err, "%s was not ready within %d s; last lines of %s:\n%s", s->d[i].name,
				  READY_MS / 1000, s->d[i].log, tail);
			free(tail);
			goto out;
		}
		sup_poll(s, 50);
	}
	log_info("%s is ready (pid %d, %lld ms)", s->d[i].name, (int)s->d[i].pid,
		 (long long)(time_mono_ms() - t0));
	save_run(s); /* now with what it wrote once ready (web.url) */
	rc = 0;
out:
	free(what);
	return rc;
}

/* The command line of daemon i into argv (at least 24 slots). */
static void daemon_argv(struct supervisor *s, int i, char **argv)
{
	const struct up_paths *p = s->paths;
	const struct up_opts *o = s->opts;
	int n = 0;

	argv[n++] = s->bin[i];
	switch (i) {
	case SCHED:
		argv[n++] = "--state";
		argv[n++] = p->state;
		argv[n++] = "--socket";
		argv[n++] = p->socket;
		argv[n++] = "--storage";
		argv[n++] = p->storage;
		argv[n++] = "--web";
		argv[n++] = (char *)(o->web ? o->web : UP_WEB_DEFAULT);
		break;
	case FS:
		argv[n++] = p->mount;
		argv[n++] = "--sched";
		argv[n++] = p->endpoint;
		argv[n++] = "--storage";
		argv[n++] = p->storage;
		argv[n++] = "-f";
		if (geteuid() == 0) {
			/* Root mounts for every user of the machine: they submit through it. */
			argv[n++] = "-o";
			argv[n++] = "allow_other";
		}
		break;
	case RUNNER:
		argv[n++] = "--sched";
		argv[n++] = p->endpoint;
		argv[n++] = "--mount";
		argv[n++] = p->mount;
		argv[n++] = "--scratch";
		argv[n++] = p->scratch;
		argv[n++] = "--state";
		argv[n++] = p->runner_state;
		if (o->cpus) {
			argv[n++] = "--cpus";
			argv[n++] = (char *)o->cpus;
		}
		if (o->mem) {
			argv[n++] = "--mem";
			argv[n++] = (char *)o->mem;
		}
		if (o->scratch_size) {
			argv[n++] = "--scratch-size";
			argv[n++] = (char *)o->scratch_size;
		}
		if (o->cpu_limit) {
			argv[n++] = "--cpu-limit";
			argv[n++] = (char *)o->cpu_limit;
		}
		if (o->mem_limit) {
			argv[n++] = "--mem-limit";
			argv[n++] = (char *)o->mem_limit;
		}
		if (o->host_name) {
			argv[n++] = "--name";
			argv[n++] = (char *)o->host_name;
		}
		break;
	}
	argv[n] = NULL;
}

static int (*const ready_check[NDAEMONS])(struct supervisor *) = {
	[SCHED] = sched_ready, [FS] = fs_ready, [RUNNER] = runner_ready,
};

static int sup_start(struct supervisor *s, char **err)
{
	char *argv[24];
	struct stat st;

	/* Find every program before starting any, so a missing one costs nothing. */
	for (int i = 0; i < NDAEMONS; i++) {
		s->bin[i] = find_program(s->d[i].name);
		if (!s->bin[i])
			return errprintf(err, "cannot find %s next to parsa or in PATH: build it (cmake --build build) or install it",
					 s->d[i].name);
	}
	for (int i = 0; i < NDAEMONS; i++) {
		if (i == FS) {
			if (stat(s->paths->mount, &st) < 0)
				return errprintf(err, "cannot use mount folder %s: %s", s->paths->mount,
						 strerror(errno));
			s->mount_dev = st.st_dev;
		}
		if (i == RUNNER)
			s->runner_started_ms = time_now_ms();
		daemon_argv(s, i, argv);
		if (start_one(s, i, argv, ready_check[i], err) < 0)
			return -1;
	}
	return 0;
}

static void log_exit(const struct daemon_proc *d)
{
	char how[128];

	describe_status(d->status, how, sizeof how);
	log_info("%s %s", d->name, how);
}

/* Wait up to ms for daemon i to end, or until a second stop signal when
 * heed_hurry. 1 if it ended. */
static int wait_gone(struct supervisor *s, int i, int ms, int heed_hurry)
{
	int64_t deadline = time_mono_ms() + ms;

	while (s->d[i].pid > 0 && !(heed_hurry && s->hurry) && time_mono_ms() < deadline)
		sup_poll(s, 50);
	return s->d[i].pid <= 0;
}

/* Send SIGTERM to daemon i and wait up to ms for it to end; then SIGKILL.
 * After a second stop signal it gets a second SIGTERM (the runner then kills
 * its instances at once instead of leaving them orphaned) and HURRY_MS. */
static void stop_one(struct supervisor *s, int i, int ms)
{
	struct daemon_proc *d = &s->d[i];
	int64_t deadline;

	if (d->pid <= 0)
		return;
	kill(d->pid, SIGTERM);
	if (!wait_gone(s, i, ms, 1) && s->hurry) {
		kill(d->pid, SIGTERM);
		wait_gone(s, i, HURRY_MS, 0);
	}
	if (d->pid > 0) {
		if (s->hurry)
			log_warnx("killing %s (pid %d)", d->name, (int)d->pid);
		else
			log_warnx("%s (pid %d) did not stop within %d s: killing it", d->name,
				  (int)d->pid, (ms + 999) / 1000);
		kill(d->pid, SIGKILL);
		deadline = time_mono_ms() + KILL_WAIT_MS;
		while (d->pid > 0 && time_mono_ms() < deadline)
			sup_poll(s, 50);
	}
	if (d->pid > 0) {
		log_warnx("%s (pid %d) survived SIGKILL (stuck in the kernel?)", d->name, (int)d->pid);
		return;
	}
	log_exit(d);
}

/* Stop everything that runs, in the reverse order of the start. */
static void sup_teardown(struct supervisor *s)
{
	const char *mnt = s->paths->mount;

	s->tearing_down = 1;
	stop_one(s, RUNNER, STOP_RUNNER_MS);
	if (is_mounted(mnt, NULL, 0) > 0) {
		/* A clean unmount first: parsafs then ends on its own. */
		if (unmount(mnt, 0) < 0)
			log_warnx("cannot unmount %s cleanly (%s): a process may be using it; detaching it instead",
				  mnt, strerror(errno));
		else if (wait_gone(s, FS, STOP_FS_MS, 1))
			log_exit(&s->d[FS]);
	}
	stop_one(s, FS, STOP_FS_MS);
	if (is_mounted(mnt, NULL, 0) > 0 && unmount(mnt, 1) < 0)
		log_warn("cannot detach %s", mnt);
	stop_one(s, SCHED, STOP_SCHED_MS);
}

/* A daemon that ends is started again, so that one crash or one outage (a
 * scheduler that cannot reach its volume, or stops) does not take the
 * machine's jobs down with it: running instances belong to the runner's
 * children and survive a scheduler or mount restart, and the mount and the
 * runner wait for a scheduler that is away. The others keep running, and the
 * missing one is tried again and again, at once after a death (when it had
 * run for RESTART_STABLE_MS), then each time twice as long after the last
 * try, from RESTART_FIRST_MS up to RESTART_MAX_MS; every failure is logged,
 * and the success. Only a stop signal (Ctrl-C, SIGTERM, parsa down) stops
 * everything. */
#define RESTART_FIRST_MS 1000
#define RESTART_MAX_MS 30000
#define RESTART_STABLE_MS 60000

static const int stop_ms[NDAEMONS] = { STOP_SCHED_MS, STOP_FS_MS, STOP_RUNNER_MS };

static int64_t longer(int64_t ms)
{
	ms = ms ? ms * 2 : RESTART_FIRST_MS;
	return ms > RESTART_MAX_MS ? RESTART_MAX_MS : ms;
}

/* Daemon i ended (pid <= 0): note it and, when its time has come, try to
 * start it again. Never fatal. */
static void bring_back(struct supervisor *s, int i)
{
	struct daemon_proc *d = &s->d[i];
	char *argv[24], *err = NULL;
	int64_t now = time_mono_ms();

	if (!s->missing[i]) {
		char how[128], *tail = tail_of(d);

		describe_status(d->status, how, sizeof how);
		log_warnx("%s %s unexpectedly; last lines of %s:\n%s", d->name, how, d->log, tail);
		free(tail);
		s->missing[i] = 1;
		/* One that keeps dying soon after its start waits longer each time. */
		s->backoff_ms[i] = now - s->started_mono[i] >= RESTART_STABLE_MS ? 0 :
				   longer(s->backoff_ms[i]);
		s->next_try_mono[i] = now + s->backoff_ms[i];
		if (i == FS && is_mounted(s->paths->mount, NULL, 0) > 0 &&
		    unmount(s->paths->mount, 1) < 0)
			log_warn("cannot detach the dead mount %s", s->paths->mount);
	}
	if (now < s->next_try_mono[i])
		return;
	if (i == RUNNER)
		s->runner_started_ms = time_now_ms();
	s->started_mono[i] = now;
	daemon_argv(s, i, argv);
	if (start_one(s, i, argv, ready_check[i], &err) == 0) {
		log_info("%s restarted", d->name);
		s->missing[i] = 0;
		free(err);
		return;
	}
	/* A runner that runs but is not ready (it registers with a scheduler
	 * that is away, say) stays: it may have taken its running instances
	 * back, and stopping it would stop them. Another one that was not ready
	 * in time goes before the next try. */
	if (d->pid > 0 && i == RUNNER && !s->stopping) {
		log_warnx("%s runs but is not ready yet (%s); left running", d->name, err ? err : "?");
		s->missing[i] = 0;
		free(err);
		return;
	}
	if (d->pid > 0)
		stop_one(s, i, stop_ms[i]);
	if (s->stopping) {
		free(err);
		return;
	}
	s->backoff_ms[i] = longer(s->backoff_ms[i]);
	s->next_try_mono[i] = time_mono_ms() + s->backoff_ms[i];
	log_warnx("cannot restart %s: %s\ntrying again in %lld s; the others keep running",
		  d->name, err ? err : "?", (long long)(s->backoff_ms[i] / 1000));
	free(err);
}

/* After the start: wait for a stop signal, bringing back daemons that end.
 * Returns 0 once a stop signal came. */
static int sup_watch(struct supervisor *s)
{
	int64_t now = time_mono_ms();

	s->watching = 1;
	for (int i = 0; i < NDAEMONS; i++)
		s->started_mono[i] = now;
	for (;;) {
		int wait = -1;

		now = time_mono_ms();
		for (int i = 0; i < NDAEMONS; i++)
			if (s->missing[i] && s->d[i].pid <= 0) {
				int64_t left = s->next_try_mono[i] > now ? s->next_try_mono[i] - now : 0;

				if (wait < 0 || left < wait)
					wait = (int)left;
			}
		sup_poll(s, wait);
		if (s->stopping)
			return 0;
		for (int i = 0; i < NDAEMONS && !s->stopping; i++)
			if (s->d[i].pid <= 0)
				bring_back(s, i);
		if (s->stopping)
			return 0;
	}
}

void up_announce(const struct up_paths *p, int detached, const char *default_endpoint)
{
	char *web = runinfo_web_url(p->state);

	printf("parsa is up.\n"
	       "  mount:     %s\n"
	       "  state:     %s (logs in %s)\n"
	       "  storage:   %s\n"
	       "  scheduler: %s\n",
	       p->mount, p->state, p->logs, p->storage, p->endpoint);
	if (web)
		printf("  web:       %s\n", web);
	printf("Submit a job:  cp job.conf %s/queue/    or: parsa submit job.conf\n"
	       "Follow it:     cat %s/jobs/last/status  or: parsa status last%s%s\n",
	       p->mount, p->mount, web ? "  or: " : "", web ? web : "");
	free(web);
	/* The parsa command finds only the default state's socket by itself. */
	if (strcmp(p->endpoint, default_endpoint) != 0)
		printf("For the parsa command: export PARSA_SCHED=%s\n", p->endpoint);
	if (detached)
		printf("Stop it:       parsa down --mount %s\n", p->mount);
	else
		printf("Stop it:       Ctrl-C here (or parsa down --mount %s)\n", p->mount);
	fflush(stdout);
}

int supervise(const struct up_paths *paths, const struct up_opts *opts,
	      const struct up_notify *notify, char **err)
{
	static const char *const names[NDAEMONS][2] = {
		{ "parsa-sched", "sched" }, { "parsafs", "fs" }, { "parsa-runner", "runner" },
	};
	struct supervisor s = { .paths = paths, .opts = opts, .sigfd = -1 };
	char *local_err = NULL;
	int notify_fd = notify->fd, rc = -1;
	sigset_t set;

	for (int i = 0; i < NDAEMONS; i++) {
		s.d[i].name = names[i][0];
		s.d[i].role = names[i][1];
		s.d[i].log = xasprintf("%s/%s.log", paths->logs, names[i][1]);
	}
	s.run.pid = getpid();
	s.run.mount = xstrdup(paths->mount);
	s.run.state = xstrdup(paths->state);
	s.run.storage = xstrdup(paths->storage);
	s.run.endpoint = xstrdup(paths->endpoint);
	s.run.started_ms = time_now_ms();
	save_run(&s);

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGCHLD);
	s.sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (s.sigfd < 0) {
		errprintf(&local_err, "cannot watch signals: %s", strerror(errno));
		goto out;
	}
	s.api = api_client_create(paths->endpoint, &local_err);
	if (!s.api)
		goto out;

	if (sup_start(&s, &local_err) < 0)
		goto out;
	if (notify_fd >= 0) {
		/* The parent prints the announcement; it only needs to know we are ready. */
		if (write_all(notify_fd, "ok\n", 3) < 0)
			log_warn("cannot tell the starting parsa up that we are ready (it is gone?)");
		close(notify_fd);
		notify_fd = -1;
	} else {
		up_announce(paths, 0, notify->default_endpoint);
	}
	log_info("up: mount %s, state %s", paths->mount, paths->state);
	rc = sup_watch(&s);
out:
	sup_teardown(&s);
	unlink(paths->runfile);
	if (rc < 0) {
		if (!local_err)
			local_err = xstrdup("failed");
		if (notify_fd >= 0) {
			/* Only now, with everything stopped, may the starting parent return. */
			(void)write_all(notify_fd, "error\n", 6);
			(void)write_all(notify_fd, local_err, strlen(local_err));
			close(notify_fd);
		}
		errprintf(err, "%s", local_err);
	} else {
		log_info("stopped; %s is unmounted", paths->mount);
	}
	api_client_destroy(s.api);
	if (s.sigfd >= 0)
		close(s.sigfd);
	for (int i = 0; i < NDAEMONS; i++) {
		free(s.d[i].log);
		free(s.bin[i]);
	}
	runinfo_free(&s.run);
	free(local_err);
	return rc;
}
