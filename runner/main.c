/* parsa-runner: one per host. It registers the host with the scheduler, sends a
 * heartbeat with live usage (parsa's share and the rest) every second, takes
 * assignments from the work long-poll, runs each stage instance as its
 * submitter on cores (and GPUs) of its own, measures its process tree every
 * USAGE_INTERVAL_MS and reports its start and end. main owns the one context;
 * the event loop waits on a signalfd, the work poll's pipe and the set-up
 * pipes of starting instances, with the sampling timer as a deadline. */
#include "api_client.h"
#include "cgroup.h"
#include "executor_slurm.h"
#include "slurm_host.h"
#include "clock.h"
#include "gpus.h"
#include "hostwin.h"
#include "instances.h"
#include "log.h"
#include "options.h"
#include "probe.h"
#include "progress.h"
#include "proto.h"
#include "report.h"
#include "resources.h"
#include "session.h"
#include "supervise.h"
#include "usage.h"
#include "util.h"
#include "volume.h"
#include "work.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#define WORK_POLL_MS 25000

struct runner {
	struct runner_options cfg;
	int sigfd;
	struct probe *probe;
	struct report_queue *reports;
	char *run_dir;               /* supervisors' state and kept reports */
	struct instances *inst;
	struct session *session;
	struct work_poll *work;
	int stopping;           /* 1 after the first SIGTERM/SIGINT, 2 after the second */
	int probe_failing;      /* to log a failing live sample once */
	int64_t registered_at;  /* the registration the work poll was last kicked for */
	int64_t lease_killed;   /* the lease end we stopped everything for; 0 none */
	struct clock *clock;    /* walltime and the host's window */
	struct hostwin *win;    /* NULL: no window */
	struct progress *progress;
	struct cgroup_tree *cgroups; /* NULL: instances measured through /proc */
	struct resources *res;  /* cores and GPUs handed out */
	struct usage *usage;
	int64_t next_sample_ms; /* when the instances are measured next */
	struct volume_watch *volume; /* <mount>/storage: may work start? */
	int64_t volume_down_since;   /* as last logged; 0 reachable */
	struct executor *ex;    /* --executor slurm; NULL: local supervisors */
	struct slurm_host *slurm; /* with it: the partition's CPUs and the facts for heartbeats */
};

/* Where the instances' supervisors and the undelivered reports are kept: it
 * must outlive the runner (a new one reattaches) but not the machine, and
 * every instance creates and deletes a few files there. On a tmpfs (/run, or
 * $XDG_RUNTIME_DIR) that churn stays off the disk, where ext4's inode
 * allocator slows down under it (it scans recently deleted inodes). One
 * folder per state folder, so that runners of different hosts on one machine
 * (tests) never share it. Falls back to the state folder. */
static char *runtime_dir_for(const char *state)
{
	const char *base = geteuid() == 0 ? "/run/parsa" : getenv("XDG_RUNTIME_DIR");
	char *escaped, *dir, *p;
	struct stat st;

	if (!base || base[0] != '/')
		return xstrdup(state);
	escaped = xstrdup(state);
	for (p = escaped; *p; p++)
		if (*p == '/')
			*p = '%';
	dir = xasprintf("%s%s/runner-%s", base, geteuid() == 0 ? "" : "/parsa", escaped);
	free(escaped);
	if (mkdir_p(dir, 0700) < 0 || stat(dir, &st) < 0 || st.st_uid != geteuid()) {
		log_warnx("cannot use %s for the instances' state; using %s", dir, state);
		free(dir);
		return xstrdup(state);
	}
	/* Instances reach their progress files in it by name (progress_dir_for);
	 * what else is in it stays 0700. */
	if (geteuid() == 0 && (chmod(base, 0711) < 0 || chmod(dir, 0711) < 0))
		log_warn("cannot open %s to instances", dir);
	return dir;
}

/* Where instances' progress files go: in the runtime folder when there is
 * one (each instance makes and removes one), else beside the scratch folders. */
static char *progress_dir_for(const char *run_dir, const char *state, const char *scratch)
{
	char *dir;

	if (strcmp(run_dir, state) == 0)
		return xstrdup(scratch);
	dir = xasprintf("%s/progress", run_dir);
	if ((mkdir(dir, 0711) < 0 && errno != EEXIST) || chmod(dir, 0711) < 0) {
		log_warn("cannot use %s; progress files go to %s", dir, scratch);
		free(dir);
		return xstrdup(scratch);
	}
	return dir;
}


static json_t *registration_body(void *arg)
{
	struct runner *r = arg;
	struct probe_capacity cap = { 0 };
	struct host_info info;
	char *err = NULL;

	if (probe_capacity(r->probe, &cap, &err) < 0) {
		log_warnx("cannot measure this host: %s", err);
		free(err);
	}
	if (r->cfg.cpus)
		cap.cpus = r->cfg.cpus;
	/* A Slurm runner offers its partition's CPUs, at most the operator's
	 * cap, not this host's cores. */
	if (r->slurm) {
		cap.cpus = slurm_host_offer(r->slurm, cap.cpus, time_mono_ms());
		/* The poll's squeue asks for the partition by name; a new
		 * registration (start, SIGHUP) looks at its load at once. */
		executor_slurm_default_partition(r->ex, slurm_host_partition(r->slurm));
		executor_slurm_look_now(r->ex);
	}
	if (r->cfg.mem)
		cap.mem = r->cfg.mem;
	if (r->cfg.scratch_size) {
		cap.scratch_total = r->cfg.scratch_size;
		if (cap.scratch_free > cap.scratch_total)
			cap.scratch_free = cap.scratch_total;
	}
	/* The scheduler keeps whole percents (it always cut --cpu-limit 92.5 to 92). */
	info = (struct host_info){
		.name = r->cfg.name, .cpus = cap.cpus, .mem = cap.mem,
		.scratch_total = cap.scratch_total, .scratch_free = cap.scratch_free,
		.cpu_limit = (int)r->cfg.cpu_limit, .mem_limit = (int)r->cfg.mem_limit,
		.features = (const char *const *)r->cfg.features, .nfeatures = r->cfg.nfeatures,
		.mount = r->cfg.mount, .gpus = resources_gpus(r->res),
	};
	hostwin_describe(r->win, &info);
	return host_info_to_json(&info);
}

/* Measure the instances' trees (and stop those past their mem). */
static void sample_instances(struct runner *r, int64_t now, struct instances_use *use)
{
	instances_sample(r->inst, now, use);
	if (r->cgroups)
		cgroup_tree_sweep(r->cgroups);
	r->next_sample_ms = now + USAGE_INTERVAL_MS;
}

/* The volume's state as the mount says it, with a log line when it changes. */
static void volume_state(struct runner *r, struct volume_state *st)
{
	volume_watch_get(r->volume, st);
	if (st->down_since > 0 && r->volume_down_since <= 0)
		log_warnx("storage unreachable: %s; starting nothing until it answers", st->reason);
	else if (st->down_since <= 0 && r->volume_down_since > 0)
		log_info("storage reachable again");
	r->volume_down_since = st->down_since;
}

static json_t *heartbeat_body(void *arg)
{
	struct runner *r = arg;
	struct probe_live live = { 0 };
	struct probe_split split;
	struct instances_use use;
	struct heartbeat_entry *entries;
	struct heartbeat hb;
	struct volume_state vol;
	char *err = NULL;
	json_t *body;
	int ids[CPU_SETSIZE];
	double busy[CPU_SETSIZE];
	size_t ncores;
	bool measured;

	/* The instances first and the machine right after: parsa's share and
	 * the machine's use cover the same interval. */
	sample_instances(r, time_mono_ms(), &use);
	measured = probe_sample(r->probe, use.cpu_ms, &live, &err) == 0;
	if (!measured) {
		if (!r->probe_failing)
			log_warnx("cannot measure live usage: %s", err);
		r->probe_failing = 1;
	} else {
		r->probe_failing = 0;
	}
	free(err);
	if (r->cfg.scratch_size && live.scratch_free > r->cfg.scratch_size)
		live.scratch_free = r->cfg.scratch_size;
	hb = (struct heartbeat){
		.cpu_pct = live.cpu_pct, .mem_pct = live.mem_pct, .load1 = live.load1,
		.scratch_free = (int64_t)live.scratch_free,
		.parsa_cpu_pct = -1, .outside_cpu_pct = -1, .parsa_mem_pct = -1,
		.outside_mem_pct = -1, .outside_cores = -1, .outside_mem = -1,
	};
	if (measured) {
		probe_split(&live, use.rss, &split);
		hb.parsa_cpu_pct = split.parsa_cpu_pct;
		hb.outside_cpu_pct = split.outside_cpu_pct;
		hb.parsa_mem_pct = split.parsa_mem_pct;
		hb.outside_mem_pct = split.outside_mem_pct;
		hb.outside_cores = split.outside_cores;
		hb.outside_mem = split.outside_mem;
		/* The next instances go to the cores the rest of the machine leaves idle. */
		ncores = probe_core_busy(r->probe, ids, busy, CPU_SETSIZE);
		resources_set_busy(r->res, ids, busy, ncores);
	}
	/* The scheduler places nothing here while the volume is away. */
	volume_state(r, &vol);
	hb.storage_down_since = vol.down_since;
	hb.storage_reason = vol.down_since > 0 ? vol.reason : NULL;
	/* A Slurm host's CPU figures are its partition's, not this machine's. */
	if (r->slurm)
		slurm_host_heartbeat(r->slurm, r->ex, instances_running_cpus(r->inst), &hb);
	hb.ninstances = instances_heartbeat(r->inst, &entries);
	if (r->progress)
		progress_fill(r->progress, entries, hb.ninstances);
	hb.instances = entries;
	body = heartbeat_to_json(&hb);
	free(entries);
	return body;
}

/* An instance's progress is watched from before it starts until it is retired. */
static void on_prepare(void *arg, const struct assignment *a, const char *file, bool remote, bool fresh)
{
	struct runner *r = arg;
	char *out = NULL, *err = NULL;
	int rc = 0;

	if (a->progress_files)
		out = assignment_out_dir(r->cfg.mount, a);
	/* Without the watcher the file is still there: an instance that writes
	 * to $PARSA_PROGRESS must not fail because of it. */
	if (remote) {
		/* It makes its own, on its machine. */
		if (r->progress)
			progress_poll(r->progress, a->id, a->attempt, file, out, a->progress_files);
	} else if (r->progress) {
		rc = progress_watch(r->progress, a->id, a->attempt, file, a->uid, a->gid, fresh, out,
				    a->progress_files, &err);
	} else {
		rc = progress_file_make(file, a->uid, a->gid, fresh, &err);
	}
	if (rc < 0) {
		log_warnx("job %" PRId64 " stage %s index %" PRId64 ": no progress: %s", a->job,
			  a->stage, a->index, err);
		free(err);
	}
	free(out);
}

static void on_retire(void *arg, const struct assignment *a, const char *file)
{
	struct runner *r = arg;

	if (r->progress)
		progress_forget(r->progress, a->id, a->attempt);
	else
		unlink(file);
}

/* An instance event becomes a state report (docs/api.md). */
static void on_event(void *arg, const struct instance_event *ev)
{
	static const enum report_kind kinds[] = {
		[INSTANCE_RUNNING] = REPORT_RUNNING,
		[INSTANCE_EXITED] = REPORT_EXITED,
		[INSTANCE_FAILED] = REPORT_FAILED,
	};
	struct runner *r = arg;
	struct report report = {
		.attempt = (int)ev->attempt, .kind = kinds[ev->kind], .pid = (int)ev->pid,
		.exit_code = ev->exit_code, .signal = ev->signal, .reason = ev->reason,
		.started_ms = ev->started_ms, .ended_ms = ev->ended_ms, .usage = ev->usage,
		.cpu_list = ev->cpu_list && *ev->cpu_list ? ev->cpu_list : NULL,
		.gpu_list = ev->gpu_list && *ev->gpu_list ? ev->gpu_list : NULL,
		.slurm_job = ev->slurm_job, .slurm_state = ev->slurm_state,
	};

	/* An end is still in the instance's folder until instances_cleanup(),
	 * which runs after report_queue_keep(): a runner killed before then
	 * reads it there again (instances_reattach). */
	if (ev->kind == INSTANCE_EXITED)
		report_queue_push_later(r->reports, ev->id, report_to_json(&report));
	else
		report_queue_push(r->reports, ev->id, report_to_json(&report));
}

static void remember_reported(void *arg, int64_t id, int64_t attempt)
{
	struct runner *r = arg;

	instances_remember(r->inst, id, attempt, time_mono_ms());
}

static void on_cancel(struct runner *r, const json_t *v, int64_t now)
{
	struct attempt_ref ref;

	if (attempt_ref_from_json(v, &ref) < 0) {
		log_warnx("ignoring a cancel without id and attempt");
		return;
	}
	instances_cancel(r->inst, ref.id, ref.attempt, "cancelled", now);
}

static void on_start(struct runner *r, const json_t *v, int64_t now)
{
	struct attempt_ref ref;
	bool named = attempt_ref_from_json(v, &ref) == 0;
	struct assignment *a;
	struct volume_state vol;
	char *err = NULL;

	if (r->stopping) {
		log_info("not starting new work: the runner is stopping");
		return;
	}
	/* Sent before our heartbeat told the volume is away: back to the
	 * queue, no retry used (its log and folder are there). */
	volume_state(r, &vol);
	if (vol.down_since > 0 && named) {
		char *reason = xasprintf(API_REASON_STORAGE_UNREACHABLE ": %s", vol.reason);

		log_info("not starting instance %" PRId64 " attempt %" PRId64 ": %s", ref.id,
			 ref.attempt, reason);
		instances_refuse(r->inst, ref.id, ref.attempt, reason, now);
		free(reason);
		return;
	}
	/* Sent just as the window closed: back to the queue, no retry used. */
	if (hostwin_must_stop(r->win) && named) {
		instances_refuse(r->inst, ref.id, ref.attempt, API_REASON_WINDOW_CLOSED, now);
		return;
	}
	a = assignment_from_json(v, &err);
	if (a) {
		instances_start(r->inst, a, now);
		return;
	}
	log_warnx("%s", err);
	/* Say so once, or the scheduler sends it again forever. */
	if (named) {
		char *reason = xasprintf("cannot start: %s", err);

		instances_refuse(r->inst, ref.id, ref.attempt, reason, now);
		free(reason);
	}
	free(err);
}

/* Cancels first, so that an instance both assigned and cancelled in one
 * answer never starts. */
static void handle_answer(struct runner *r, const json_t *answer, int64_t now)
{
	struct work_answer work;
	const json_t *item;
	size_t i;

	work_answer_from_json(answer, &work);
	json_array_foreach(work.cancel, i, item)
		on_cancel(r, item, now);
	json_array_foreach(work.start, i, item)
		on_start(r, item, now);
}

static void drain_work(struct runner *r, int64_t now)
{
	struct work_msg *msg;

	while (r->work && (msg = work_poll_next(r->work)) != NULL) {
		if (msg->kind == WORK_HOST_UNKNOWN) {
			/* A poll sent before we registered says nothing new. */
			if (!session_registered(r->session) || msg->sent_ms >= session_registered_at(r->session))
				session_reregister(r->session);
		} else {
			handle_answer(r, msg->json, now);
		}
		work_msg_destroy(msg);
	}
}

static void begin_stop(struct runner *r, int sig, int64_t now)
{
	if (r->stopping) {
		log_info("signal %d again: killing every instance now", sig);
		r->stopping = 2;
		instances_stop_all(r->inst, API_REASON_RUNNER_STOPPED, 1, now);
		return;
	}
	r->stopping = 1;
	log_info("signal %d: stopping %zu instance(s) and exiting", sig, instances_active(r->inst));
	instances_stop_all(r->inst, API_REASON_RUNNER_STOPPED, 0, now);
	/* No new work from here on; the thread is joined at the end. */
	work_poll_stop(r->work);
}

static void handle_signals(struct runner *r)
{
	struct signalfd_siginfo si;

	while (read(r->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
		int64_t now = time_mono_ms();

		switch (si.ssi_signo) {
		case SIGCHLD:
			instances_reap(r->inst, now);
			break;
		case SIGTERM:
		case SIGINT:
			begin_stop(r, (int)si.ssi_signo, now);
			break;
		case SIGHUP:
			log_info("SIGHUP: measuring the host again and re-registering");
			session_reregister(r->session);
			break;
		}
	}
}

/* Past the lease the scheduler may have given our instances to other hosts
 * (it requeues them a little after the lease ends): stop them now, so that
 * none runs twice. Returns when to look again, -1 for no deadline. */
static int64_t check_lease(struct runner *r, int64_t now)
{
	int64_t end = session_lease_end(r->session);

	if (!end || instances_active(r->inst) == 0)
		return -1;
	if (now < end)
		return end;
	if (r->lease_killed != end) {
		r->lease_killed = end;
		log_warnx("no contact with the scheduler for the whole lease: killing %zu instance(s);"
			  " the scheduler requeues them", instances_active(r->inst));
		instances_stop_all(r->inst, "lease expired: no contact with the scheduler", 1, now);
	}
	return -1;
}

static int run_loop(struct runner *r)
{
	struct pollfd *pfds = NULL;
	int *fds = NULL;
	size_t cap = 0;

	for (;;) {
		int64_t now = time_mono_ms(), next, t;
		size_t n, nstatus, active = instances_active(r->inst);
		int timeout;

		if (r->stopping && active == 0) {
			session_leave(r->session, r->reports, now);
			break;
		}
		next = session_tick(r->session, r->reports, now);
		if (session_registered_at(r->session) != r->registered_at) {
			/* (Re-)registered: the work poll may be waiting out a backoff
			 * from when the scheduler was away. */
			r->registered_at = session_registered_at(r->session);
			if (r->registered_at && r->work)
				work_poll_kick(r->work);
		}
		t = instances_tick(r->inst, now);
		if (t >= 0 && t < next)
			next = t;
		if (r->slurm && session_registered(r->session) &&
		    slurm_host_refresh(r->slurm, instances_running_cpus(r->inst), now))
			session_reregister(r->session);
		if (r->slurm)
			executor_slurm_default_partition(r->ex, slurm_host_partition(r->slurm));
		t = check_lease(r, now);
		if (t >= 0 && t < next)
			next = t;
		if (active > 0) {
			struct instances_use use;

			if (now >= r->next_sample_ms)
				sample_instances(r, now, &use);
			if (r->next_sample_ms < next)
				next = r->next_sample_ms;
		}
		/* The window closed (drain-at-window-end no): stop what runs; the
		 * scheduler requeues it. stop is idempotent, so every turn is fine. */
		if (active > 0 && !r->stopping && hostwin_must_stop(r->win))
			instances_stop_all(r->inst, API_REASON_WINDOW_CLOSED, 0, now);
		timeout = next <= now ? 0 : next - now > 1000 ? 1000 : (int)(next - now);
		if (2 * active + 2 > cap) {
			cap = 2 * active + 16;
			pfds = xrealloc(pfds, cap * sizeof *pfds);
			fds = xrealloc(fds, cap * sizeof *fds);
		}
		n = 0;
		pfds[n++] = (struct pollfd){ .fd = r->sigfd, .events = POLLIN };
		pfds[n++] = (struct pollfd){ .fd = r->work ? work_poll_fd(r->work) : -1, .events = POLLIN };
		nstatus = instances_status_fds(r->inst, fds, cap - n);
		for (size_t i = 0; i < nstatus; i++)
			pfds[n++] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
		if (poll(pfds, n, timeout) < 0 && errno != EINTR) {
			log_warn("poll");
			break;
		}
		now = time_mono_ms();
		if (pfds[0].revents)
			handle_signals(r);
		if (pfds[1].revents)
			drain_work(r, now);
		for (size_t i = 2; i < n; i++)
			if (pfds[i].revents)
				instances_status_ready(r->inst, pfds[i].fd, now);
		/* Starts and ends reach the scheduler now, not at the next heartbeat. */
		session_flush(r->session, r->reports, now);
		report_queue_keep(r->reports);
		instances_cleanup(r->inst);
	}
	free(pfds);
	free(fds);
	return 0;
}

/* What instances are given and how they are measured: a cgroup each where
 * the runner has a delegated cgroup v2 subtree, else /proc; cores of the
 * runner's affinity mask (the first --cpus of them); the GPUs of --gpus or
 * found on the host. Only a cgroup subtree found but unusable is worth a
 * warning; none at all is the usual case. */
static void setup_resources(struct runner *r)
{
	struct resources_config rc = { .cpus = r->cfg.cpus, .gpus = r->cfg.gpus };
	char *why = NULL;

	r->cgroups = cgroup_tree_create(NULL, &why);
	if (!r->cgroups) {
		if (errno == ENOTSUP)
			log_info("instances are measured through /proc: %s", why);
		else
			log_warnx("instances are measured through /proc: %s", why);
		free(why);
		why = NULL;
	}
	if (rc.gpus < 0) {
		rc.gpus = gpus_detect(NULL, "/dev", GPUS_SMI_TIMEOUT_MS, &why);
		log_info("GPUs: %s", why);
		free(why);
	}
	rc.cgroups = r->cgroups;
	r->res = resources_create(&rc);
	r->usage = usage_create("/proc");
}

/* The event loop writes to sockets and pipes whose other end may go away;
 * stdio must be open so that nothing we open lands on 0, 1 or 2. */
static int setup_process(sigset_t *mask, char **err)
{
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) < 0) {
			int null = open("/dev/null", O_RDWR);

			if (null < 0)
				return errprintf(err, "cannot open /dev/null: %s", strerror(errno));
			if (null != fd) {
				dup2(null, fd);
				close(null);
			}
		}
	}
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(mask);
	sigaddset(mask, SIGCHLD);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGHUP);
	/* Blocked before any thread exists, so every thread inherits the mask
	 * and the signals are only ever read from the signalfd. */
	if (sigprocmask(SIG_BLOCK, mask, NULL) < 0)
		return errprintf(err, "cannot block signals: %s", strerror(errno));
	return 0;
}

int main(int argc, char **argv)
{
	struct runner r = { .sigfd = -1 };
	struct instances_config icfg;
	struct session_hooks hooks;
	sigset_t mask;
	struct stat st;
	char *err = NULL, *progress_dir = NULL;
	int rc = 1, flags;

	/* The supervisor of one instance (supervise.h): started by the runner. */
	if (argc == 3 && strcmp(argv[1], "--supervise") == 0)
		return supervise_main(argv[2]);
	flags = options_parse(argc, argv, &r.cfg, &err);
	if (flags != 0) {
		if (flags < 0)
			fprintf(stderr, "parsa-runner: %s\n", err);
		rc = flags < 0 ? 2 : 0;
		goto out;
	}
	log_init("parsa-runner", 1, r.cfg.verbose ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO);
	if (r.cfg.log_file && log_to_file(r.cfg.log_file, &err) < 0) {
		fprintf(stderr, "parsa-runner: --log-file: %s\n", err);
		goto out;
	}
	/* Every API client of this process (api_client.h) signs with this munged. */
	if (r.cfg.munge_socket)
		setenv("PARSA_MUNGE_SOCKET", r.cfg.munge_socket, 1);
	if (setup_process(&mask, &err) < 0)
		goto fail;
	r.sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (r.sigfd < 0) {
		errprintf(&err, "signalfd: %s", strerror(errno));
		goto fail;
	}
	/* Folders the runner makes for users (the scratch root) must be
	 * searchable by them whatever umask we were started with. */
	umask(022);
	if (mkdir_p(r.cfg.scratch, 0755) < 0) {
		errprintf(&err, "cannot create the scratch folder %s: %s", r.cfg.scratch, strerror(errno));
		goto fail;
	}
	if (geteuid() == 0 && stat(r.cfg.scratch, &st) == 0 && !(st.st_mode & S_IXOTH))
		log_warnx("scratch folder %s is mode %03o: other users' instances cannot reach their "
			  "scratch folders in it (chmod 755 it)", r.cfg.scratch, (unsigned)(st.st_mode & 0777));
	if (mkdir_p(r.cfg.state, 0700) < 0) {
		errprintf(&err, "cannot create the state folder %s: %s", r.cfg.state, strerror(errno));
		goto fail;
	}
	r.probe = probe_create("/proc", r.cfg.scratch, &err);
	if (!r.probe)
		goto fail;
	setup_resources(&r);
	r.run_dir = runtime_dir_for(r.cfg.state);
	progress_dir = progress_dir_for(r.run_dir, r.cfg.state, r.cfg.scratch);
	r.reports = report_queue_create(r.run_dir, &err);
	if (!r.reports)
		goto fail;
	r.clock = clock_create(r.cfg.clock_file);
	if (r.cfg.window && !(r.win = hostwin_create(r.cfg.window, r.cfg.window_drain, r.clock, &err)))
		goto fail;
	r.progress = progress_create(r.cfg.sched, r.run_dir, &err);
	if (!r.progress) {
		/* Progress is a nicety: run without it rather than not at all. */
		log_warnx("%s: instances' progress will not be reported", err);
		free(err);
		err = NULL;
	}
	if (r.cfg.slurm) {
		struct executor_slurm_config scfg = {
			.runner = r.cfg.name, .partition = r.cfg.slurm_partition, .account = r.cfg.slurm_account,
			.qos = r.cfg.slurm_qos, .map_from = r.cfg.slurm_map_from, .map_to = r.cfg.slurm_map_to,
			.lost_grace_ms = r.cfg.slurm_lost_ms, .max_array = r.cfg.slurm_max_array,
			.allow_requeue = r.cfg.slurm_requeue != 0,
		};

		r.ex = executor_slurm_create(&scfg, &err);
		if (!r.ex)
			goto fail;
		r.slurm = slurm_host_create(r.cfg.slurm_partition, r.cfg.slurm_max_jobs);
		log_info("instances run as Slurm jobs named parsa-%s%s%s", r.cfg.name,
			 r.cfg.slurm_partition ? " in partition " : "",
			 r.cfg.slurm_partition ? r.cfg.slurm_partition : "");
	}
	icfg = (struct instances_config){
		.mount = r.cfg.mount, .scratch_root = r.cfg.scratch, .state_dir = r.run_dir,
		.progress_dir = progress_dir, 
		.grace_ms = r.cfg.grace_ms, .on_event = on_event, .arg = &r,
		.clock = r.clock, .on_prepare = on_prepare, .on_retire = on_retire,
		.resources = r.res, .usage = r.usage, .executor = r.ex,
	};
	if (r.ex) {
		/* Its instances' folders hold Slurm job ids: on the state folder,
		 * which outlives a reboot of this host, as the jobs do. Cores,
		 * GPUs and measuring are Slurm's. */
		icfg.state_dir = r.cfg.state;
		icfg.resources = NULL;
		icfg.usage = NULL;
	}
	r.volume = volume_watch_create(r.cfg.mount, &err);
	if (!r.volume)
		goto fail;
	r.inst = instances_create(&icfg);
	/* Before the first work poll: what an earlier runner left running is
	 * ours again, and what it already reported ended is never started twice. */
	report_queue_each(r.reports, remember_reported, &r);
	instances_reattach(r.inst, time_mono_ms());
	hooks = (struct session_hooks){ .registration = registration_body, .heartbeat = heartbeat_body, .arg = &r };
	r.session = session_create(r.cfg.sched, r.cfg.name, &hooks, &err);
	if (!r.session)
		goto fail;
	r.work = work_poll_create(r.cfg.sched, r.cfg.name, WORK_POLL_MS, &err);
	if (!r.work)
		goto fail;
	log_info("host %s: scheduler %s, mount %s, scratch %s%s", r.cfg.name, r.cfg.sched,
		 r.cfg.mount, r.cfg.scratch, geteuid() == 0 ? "" : " (not root: only this user's jobs)");
	run_loop(&r);
	/* A last try for the reports of the instances stopped above. */
	session_flush(r.session, r.reports, time_mono_ms());
	report_queue_keep(r.reports);
	if (report_queue_pending(r.reports) > 0)
		log_warnx("%zu state report(s) not delivered; kept in %s/reports for the next start",
			  report_queue_pending(r.reports), r.cfg.state);
	rc = 0;
	goto out;
fail:
	log_warnx("%s", err ? err : "cannot start");
out:
	work_poll_destroy(r.work);
	session_destroy(r.session);
	/* Ends not delivered stay on disk once their instances' folders go. */
	if (r.reports)
		report_queue_keep(r.reports);
	instances_destroy(r.inst);
	executor_destroy(r.ex);
	slurm_host_destroy(r.slurm);
	volume_watch_destroy(r.volume);
	progress_destroy(r.progress);
	hostwin_destroy(r.win);
	clock_destroy(r.clock);
	report_queue_destroy(r.reports);
	resources_destroy(r.res);
	usage_destroy(r.usage);
	cgroup_tree_destroy(r.cgroups);
	probe_destroy(r.probe);
	if (r.sigfd >= 0)
		close(r.sigfd);
	if (r.run_dir && strcmp(r.run_dir, r.cfg.state) != 0) {
		/* Left with nothing running and nothing to report: leave no trace
		 * in /run. Non-empty folders stay (rmdir fails) for the next runner. */
		char *sub = xasprintf("%s/instances", r.run_dir);

		rmdir(sub);
		free(sub);
		sub = xasprintf("%s/reports", r.run_dir);
		rmdir(sub);
		free(sub);
		if (progress_dir && strcmp(progress_dir, r.cfg.scratch) != 0)
			rmdir(progress_dir);
		rmdir(r.run_dir);
	}
	free(r.run_dir);
	free(progress_dir);
	options_free(&r.cfg);
	free(err);
	return rc;
}
