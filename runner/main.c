/* parsa-runner: one per host. It registers the host with the scheduler, sends a
 * heartbeat with live usage every second, takes assignments from the work
 * long-poll, runs each stage instance as its submitter and reports its start and
 * end. main owns the one context; the event loop waits on a signalfd, the work
 * poll's pipe and the set-up pipes of starting instances. */
#include "api_client.h"
#include "clock.h"
#include "hostwin.h"
#include "progress.h"
#include "scratch.h"
#include "timewin.h"
#include "assign.h"
#include "config.h"
#include "defaults.h"
#include "instances.h"
#include "log.h"
#include "probe.h"
#include "report.h"
#include "session.h"
#include "supervise.h"
#include "units.h"
#include "util.h"
#include "work.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#define WORK_POLL_MS 25000

struct config {
	char *config_path;
	char *munge_socket;
	char *sched;
	char *name;
	char *mount;
	char *scratch;
	char *state;
	int cpus;               /* 0: detect */
	uint64_t mem;           /* 0: detect */
	uint64_t scratch_size;  /* 0: detect */
	double cpu_limit;
	double mem_limit;
	char **features;
	size_t nfeatures;
	int64_t grace_ms;
	int verbose;
	char *window;           /* --window: when this host takes work; NULL: always */
	int window_drain;       /* --drain-at-window-end yes */
	char *clock_file;       /* --clock-file (a test facility, lib/clock.h) */
};

struct runner {
	struct config cfg;
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
};

static const char usage_text[] =
	"usage: parsa-runner [options]\n"
	"Run the stage instances the scheduler assigns to this host.\n"
	"  --config FILE       cluster and host settings (default " PARSA_CONF_DEFAULT " if it\n"
	"                      exists); the flags below override it\n"
	"  --sched ENDPOINT    scheduler: HOST:PORT (TCP, munge), unix:/path or http://host:port\n"
	"                      (default: [cluster] sched of the config, else $PARSA_SCHED,\n"
	"                      else unix:/var/lib/parsa/sched.sock as root,\n"
	"                      unix:$XDG_STATE_HOME/parsa/sched.sock otherwise)\n"
	"  --name NAME         this host's name (default: the host name)\n"
	"  --mount DIR         where parsafs is mounted on this host (default /parsa; ~/parsa for a user)\n"
	"  --scratch DIR       local scratch folder (default /var/tmp/parsa-scratch[-UID])\n"
	"  --state DIR         the runner's own state (default /var/lib/parsa/runner;\n"
	"                      $XDG_STATE_HOME/parsa/runner for a user)\n"
	"  --cpus N            cores to offer (default: detected)\n"
	"  --mem SIZE          memory to offer, e.g. 64G (default: detected)\n"
	"  --scratch-size SIZE scratch space to offer (default: the folder's filesystem)\n"
	"  --cpu-limit PCT     no new instances while CPU use is at or above PCT (default 90)\n"
	"  --mem-limit PCT     the same for memory use (default 90); 100 or more disables\n"
	"  --features A,B      features stages can ask for (hosts = feature:A)\n"
	"  --grace SECONDS     between SIGTERM and SIGKILL when stopping an instance (default 10)\n"
	"  --munge-socket PATH munged's socket for TCP (default /run/munge/munge.socket.2)\n"
	"  --window WHEN       take work only then, e.g. \"mon-fri 20:00-08:00; sat,sun 00:00-24:00\"\n"
	"  --drain-at-window-end yes|no  at the window's end let running work finish (yes)\n"
	"                      or stop it to be requeued (no, the default)\n"
	"  --clock-file PATH   a test facility: take the time from PATH (see parsa-sched)\n"
	"  -v, --verbose       log debug messages\n"
	"  -h, --help          this text\n";

static void config_free(struct config *cfg)
{
	free(cfg->config_path);
	free(cfg->munge_socket);
	free(cfg->sched);
	free(cfg->name);
	free(cfg->mount);
	free(cfg->scratch);
	free(cfg->state);
	for (size_t i = 0; i < cfg->nfeatures; i++)
		free(cfg->features[i]);
	free(cfg->features);
	free(cfg->window);
	free(cfg->clock_file);
}


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

static void config_defaults(struct config *cfg)
{
	int root = geteuid() == 0;
	const char *env = getenv("PARSA_SCHED"), *home = getenv("HOME");
	char host[HOST_NAME_MAX + 1] = "";
	char *state = default_state_dir(geteuid(), home, getenv("XDG_STATE_HOME"));

	if (!cfg->sched)
		cfg->sched = env && env[0] ? xstrdup(env) : xasprintf("unix:%s/sched.sock", state);
	if (!cfg->name) {
		gethostname(host, sizeof host - 1);
		cfg->name = xstrdup(host[0] ? host : "localhost");
	}
	if (!cfg->mount)
		cfg->mount = root || !home || !home[0] ? xstrdup("/parsa") : xasprintf("%s/parsa", home);
	if (!cfg->scratch)
		cfg->scratch = root ? xstrdup("/var/tmp/parsa-scratch")
				    : xasprintf("/var/tmp/parsa-scratch-%u", (unsigned)geteuid());
	if (!cfg->state)
		cfg->state = xasprintf("%s/runner", state);
	free(state);
}

static int parse_pct(const char *flag, const char *text, double *out, char **err)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(text, &end);
	if (errno || end == text || *end != '\0' || !(v > 0) || v > 1000)
		return errprintf(err, "%s '%s': expected a percentage such as 90", flag, text);
	*out = v;
	return 0;
}

static int parse_features(struct config *cfg, const char *text, char **err)
{
	char *copy = xstrdup(text), *save = NULL, *tok;
	int rc = 0;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		if (!*tok)
			continue;
		if (!assignment_safe_name(tok)) {
			rc = errprintf(err, "--features: '%s' is not a feature name (letters, digits, '.', '_', '-')", tok);
			break;
		}
		cfg->features = xrealloc(cfg->features, (cfg->nfeatures + 1) * sizeof *cfg->features);
		cfg->features[cfg->nfeatures++] = xstrdup(tok);
	}
	free(copy);
	return rc;
}

static void take(char **dst, const char *value)
{
	if (!*dst && value)
		*dst = xstrdup(value);
}

/* What the flags left unset comes from the config file ([cluster], [host]). */
static int apply_file(struct config *cfg, const int *seen, char **err)
{
	struct parsa_conf c;

	if (parsa_conf_load(cfg->config_path ? cfg->config_path : PARSA_CONF_DEFAULT,
			    !cfg->config_path, &c, err) < 0)
		return -1;
	if (c.sched && !cfg->sched)
		cfg->sched = parsa_endpoint(c.sched);
	take(&cfg->munge_socket, c.munge_socket);
	if (!cfg->name && c.name && !assignment_safe_name(c.name)) {
		errprintf(err, "%s: [host] name = %s: use letters, digits, '.', '_' and '-'", c.path, c.name);
		parsa_conf_free(&c);
		return -1;
	}
	take(&cfg->name, c.name);
	take(&cfg->mount, c.mount);
	take(&cfg->scratch, c.scratch);
	take(&cfg->state, c.runner_state);
	if (!cfg->cpus)
		cfg->cpus = c.cpus;
	if (!cfg->mem)
		cfg->mem = c.mem;
	if (!cfg->scratch_size)
		cfg->scratch_size = c.scratch_size;
	if (!seen[0] && c.cpu_limit > 0)
		cfg->cpu_limit = c.cpu_limit;
	if (!seen[1] && c.mem_limit > 0)
		cfg->mem_limit = c.mem_limit;
	if (!seen[2] && c.grace_ms > 0)
		cfg->grace_ms = c.grace_ms;
	if (!cfg->nfeatures && c.nfeatures) {
		cfg->features = c.features;
		cfg->nfeatures = c.nfeatures;
		c.features = NULL;
		c.nfeatures = 0;
	}
	/* The munge key of a host that takes work from the network: nobody else
	 * may read it. */
	if (cfg->sched && strncmp(cfg->sched, "http", 4) == 0 &&
	    parsa_conf_check_key(c.munge_key ? c.munge_key : PARSA_MUNGE_KEY_DEFAULT, !c.munge_key, err) < 0) {
		parsa_conf_free(&c);
		return -1;
	}
	parsa_conf_free(&c);
	return 0;
}

/* Fill cfg from argv. 0; 1 when --help was printed; -1 with *err. */
static int parse_flags(int argc, char **argv, struct config *cfg, char **err)
{
	enum { O_SCHED = 256, O_NAME, O_MOUNT, O_SCRATCH, O_STATE, O_CPUS, O_MEM, O_SCRATCH_SIZE,
	       O_CPU_LIMIT, O_MEM_LIMIT, O_FEATURES, O_GRACE, O_CONFIG, O_MUNGE, O_WINDOW, O_DRAIN,
	       O_CLOCK };
	static const struct option opts[] = {
		{ "sched", required_argument, NULL, O_SCHED },
		{ "name", required_argument, NULL, O_NAME },
		{ "mount", required_argument, NULL, O_MOUNT },
		{ "scratch", required_argument, NULL, O_SCRATCH },
		{ "state", required_argument, NULL, O_STATE },
		{ "cpus", required_argument, NULL, O_CPUS },
		{ "mem", required_argument, NULL, O_MEM },
		{ "scratch-size", required_argument, NULL, O_SCRATCH_SIZE },
		{ "cpu-limit", required_argument, NULL, O_CPU_LIMIT },
		{ "mem-limit", required_argument, NULL, O_MEM_LIMIT },
		{ "features", required_argument, NULL, O_FEATURES },
		{ "grace", required_argument, NULL, O_GRACE },
		{ "config", required_argument, NULL, O_CONFIG },
		{ "munge-socket", required_argument, NULL, O_MUNGE },
		{ "window", required_argument, NULL, O_WINDOW },
		{ "drain-at-window-end", required_argument, NULL, O_DRAIN },
		{ "clock-file", required_argument, NULL, O_CLOCK },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int seen[3] = { 0 };  /* --cpu-limit, --mem-limit, --grace given */
	uint64_t u;
	char *end;
	long n;
	int c;

	cfg->cpu_limit = 90;
	cfg->mem_limit = 90;
	cfg->grace_ms = 10000;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (c) {
		case O_SCHED:
			free(cfg->sched);
			cfg->sched = parsa_endpoint(optarg);
			break;
		case O_CONFIG:
			free(cfg->config_path);
			cfg->config_path = xstrdup(optarg);
			break;
		case O_MUNGE:
			free(cfg->munge_socket);
			cfg->munge_socket = xstrdup(optarg);
			break;
		case O_NAME:
			if (!assignment_safe_name(optarg))
				return errprintf(err, "--name '%s': use letters, digits, '.', '_' and '-'", optarg);
			free(cfg->name);
			cfg->name = xstrdup(optarg);
			break;
		case O_MOUNT:
		case O_SCRATCH:
		case O_STATE: {
			char **dst = c == O_MOUNT ? &cfg->mount : c == O_SCRATCH ? &cfg->scratch : &cfg->state;

			if (optarg[0] != '/')
				return errprintf(err, "--%s '%s': give an absolute path",
						 c == O_MOUNT ? "mount" : c == O_SCRATCH ? "scratch" : "state", optarg);
			free(*dst);
			*dst = xstrdup(optarg);
			break;
		}
		case O_CPUS:
			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || n < 1 || n > 1 << 20)
				return errprintf(err, "--cpus '%s': expected a number of cores such as 8", optarg);
			cfg->cpus = (int)n;
			break;
		case O_MEM:
		case O_SCRATCH_SIZE:
			if (parse_size(optarg, &u) < 0 || u == 0)
				return errprintf(err, "--%s '%s': expected a size such as 64G",
						 c == O_MEM ? "mem" : "scratch-size", optarg);
			if (c == O_MEM)
				cfg->mem = u;
			else
				cfg->scratch_size = u;
			break;
		case O_CPU_LIMIT:
			if (parse_pct("--cpu-limit", optarg, &cfg->cpu_limit, err) < 0)
				return -1;
			seen[0] = 1;
			break;
		case O_MEM_LIMIT:
			if (parse_pct("--mem-limit", optarg, &cfg->mem_limit, err) < 0)
				return -1;
			seen[1] = 1;
			break;
		case O_FEATURES:
			if (parse_features(cfg, optarg, err) < 0)
				return -1;
			break;
		case O_GRACE:
			if (parse_duration(optarg, &u) < 0 || u > 24 * 3600)
				return errprintf(err, "--grace '%s': expected seconds such as 10 (or 30s, 2m)", optarg);
			cfg->grace_ms = (int64_t)u * 1000;
			seen[2] = 1;
			break;
		case O_WINDOW: {
			char *why = NULL;
			struct timewin *w = timewin_parse(optarg, &why);

			/* Checked here, so that a typo stops the runner before it starts. */
			if (!w) {
				errprintf(err, "--window '%s': %s", optarg, why ? why : "not a window");
				free(why);
				return -1;
			}
			timewin_destroy(w);
			free(cfg->window);
			cfg->window = xstrdup(optarg);
			break;
		}
		case O_DRAIN:
			if (strcmp(optarg, "yes") != 0 && strcmp(optarg, "no") != 0)
				return errprintf(err, "--drain-at-window-end '%s': expected yes or no", optarg);
			cfg->window_drain = strcmp(optarg, "yes") == 0;
			break;
		case O_CLOCK:
			free(cfg->clock_file);
			cfg->clock_file = xstrdup(optarg);
			break;
		case 'v':
			cfg->verbose++;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 1;
		default:
			return errprintf(err, "unknown or incomplete option '%s' (see parsa-runner --help)",
					 argv[optind - 1]);
		}
	}
	if (optind < argc)
		return errprintf(err, "unexpected argument '%s' (see parsa-runner --help)", argv[optind]);
	if (apply_file(cfg, seen, err) < 0)
		return -1;
	config_defaults(cfg);
	return 0;
}

static json_t *registration_body(void *arg)
{
	struct runner *r = arg;
	struct probe_capacity cap = { 0 };
	json_t *features = json_array(), *body;
	char *err = NULL;

	if (probe_capacity(r->probe, &cap, &err) < 0) {
		log_warnx("cannot measure this host: %s", err);
		free(err);
	}
	if (r->cfg.cpus)
		cap.cpus = r->cfg.cpus;
	if (r->cfg.mem)
		cap.mem = r->cfg.mem;
	if (r->cfg.scratch_size) {
		cap.scratch_total = r->cfg.scratch_size;
		if (cap.scratch_free > cap.scratch_total)
			cap.scratch_free = cap.scratch_total;
	}
	for (size_t i = 0; i < r->cfg.nfeatures; i++)
		json_array_append_new(features, json_string(r->cfg.features[i]));
	body = json_pack("{s:s, s:i, s:I, s:I, s:I, s:f, s:f, s:o, s:s}",
			 "name", r->cfg.name, "cpus", cap.cpus, "mem", (json_int_t)cap.mem,
			 "scratch_total", (json_int_t)cap.scratch_total,
			 "scratch_free", (json_int_t)cap.scratch_free,
			 "cpu_limit", r->cfg.cpu_limit, "mem_limit", r->cfg.mem_limit,
			 "features", features, "mount", r->cfg.mount);
	hostwin_register(r->win, body);
	return body;
}

static json_t *heartbeat_body(void *arg)
{
	struct runner *r = arg;
	struct probe_live live = { 0 };
	char *err = NULL;
	json_t *list;

	if (probe_sample(r->probe, &live, &err) < 0) {
		if (!r->probe_failing)
			log_warnx("cannot measure live usage: %s", err);
		r->probe_failing = 1;
	} else {
		r->probe_failing = 0;
	}
	free(err);
	if (r->cfg.scratch_size && live.scratch_free > r->cfg.scratch_size)
		live.scratch_free = r->cfg.scratch_size;
	list = instances_list_json(r->inst);
	if (r->progress)
		progress_annotate(r->progress, list);
	return json_pack("{s:f, s:f, s:f, s:I, s:o}", "cpu_pct", live.cpu_pct,
			 "mem_pct", live.mem_pct, "load1", live.load1,
			 "scratch_free", (json_int_t)live.scratch_free,
			 "instances", list);
}

/* An instance's progress is watched from before it starts until it is retired. */
static void on_prepare(void *arg, const struct assignment *a, const char *file, bool fresh)
{
	struct runner *r = arg;
	char *out = NULL, *err = NULL;
	int rc;

	if (a->progress_files)
		out = xasprintf("%s/jobs/%" PRId64 "/out/%s", r->cfg.mount, a->job, a->stage);
	/* Without the watcher the file is still there: an instance that writes
	 * to $PARSA_PROGRESS must not fail because of it. */
	if (r->progress)
		rc = progress_watch(r->progress, a->id, a->attempt, file, a->uid, a->gid, fresh, out,
				    a->progress_files, &err);
	else
		rc = progress_file_make(file, a->uid, a->gid, fresh, &err);
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
	struct runner *r = arg;
	json_t *body = json_pack("{s:I}", "attempt", (json_int_t)ev->attempt);

	switch (ev->kind) {
	case INSTANCE_RUNNING:
		json_object_set_new(body, "state", json_string("running"));
		json_object_set_new(body, "pid", json_integer(ev->pid));
		break;
	case INSTANCE_EXITED:
		json_object_set_new(body, "state", json_string("exited"));
		/* Its start may not have been reported (runner/instances.c). */
		if (ev->pid > 0)
			json_object_set_new(body, "pid", json_integer(ev->pid));
		if (ev->signal)
			json_object_set_new(body, "signal", json_integer(ev->signal));
		else
			json_object_set_new(body, "exit_code", json_integer(ev->exit_code));
		break;
	case INSTANCE_FAILED:
		json_object_set_new(body, "state", json_string("failed"));
		break;
	}
	if (ev->reason)
		json_object_set_new(body, "reason", json_string(ev->reason));
	report_queue_push(r->reports, ev->id, body);
}

static void remember_reported(void *arg, int64_t id, int64_t attempt)
{
	struct runner *r = arg;

	instances_remember(r->inst, id, attempt, time_mono_ms());
}

static void on_cancel(struct runner *r, const json_t *v, int64_t now)
{
	const json_t *id = json_object_get(v, "id"), *attempt = json_object_get(v, "attempt");

	if (!json_is_integer(id) || !json_is_integer(attempt)) {
		log_warnx("ignoring a cancel without id and attempt");
		return;
	}
	instances_cancel(r->inst, json_integer_value(id), json_integer_value(attempt), "cancelled", now);
}

static void on_start(struct runner *r, const json_t *v, int64_t now)
{
	const json_t *id = json_object_get(v, "id"), *attempt = json_object_get(v, "attempt");
	struct assignment *a;
	char *err = NULL;

	if (r->stopping) {
		log_info("not starting new work: the runner is stopping");
		return;
	}
	/* Sent just as the window closed: back to the queue, no retry used. */
	if (hostwin_must_stop(r->win) && json_is_integer(id) && json_is_integer(attempt)) {
		instances_refuse(r->inst, json_integer_value(id), json_integer_value(attempt),
				 API_REASON_WINDOW_CLOSED, now);
		return;
	}
	a = assignment_from_json(v, &err);
	if (a) {
		instances_start(r->inst, a, now);
		return;
	}
	log_warnx("%s", err);
	/* Say so once, or the scheduler sends it again forever. */
	if (json_is_integer(id) && json_is_integer(attempt)) {
		char *reason = xasprintf("cannot start: %s", err);

		instances_refuse(r->inst, json_integer_value(id), json_integer_value(attempt), reason, now);
		free(reason);
	}
	free(err);
}

/* The lists of a work answer, in the order they are handled: cancels first, so
 * that an instance both assigned and cancelled in one answer never starts. */
static const struct work_list {
	const char *name;
	void (*handle)(struct runner *r, const json_t *item, int64_t now);
} work_lists[] = {
	{ "cancel", on_cancel },
	{ "start", on_start },
};

static void handle_answer(struct runner *r, const json_t *answer, int64_t now)
{
	for (size_t l = 0; l < ARRAY_LEN(work_lists); l++) {
		const json_t *item;
		size_t i;

		json_array_foreach(json_object_get(answer, work_lists[l].name), i, item)
			work_lists[l].handle(r, item, now);
	}
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
		t = check_lease(r, now);
		if (t >= 0 && t < next)
			next = t;
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
		instances_cleanup(r->inst);
	}
	free(pfds);
	free(fds);
	return 0;
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
	flags = parse_flags(argc, argv, &r.cfg, &err);
	if (flags != 0) {
		if (flags < 0)
			fprintf(stderr, "parsa-runner: %s\n", err);
		rc = flags < 0 ? 2 : 0;
		goto out;
	}
	log_init("parsa-runner", 1, r.cfg.verbose ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO);
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
	icfg = (struct instances_config){
		.mount = r.cfg.mount, .scratch_root = r.cfg.scratch, .state_dir = r.run_dir,
		.progress_dir = progress_dir, 
		.grace_ms = r.cfg.grace_ms, .on_event = on_event, .arg = &r,
		.clock = r.clock, .on_prepare = on_prepare, .on_retire = on_retire,
	};
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
	instances_destroy(r.inst);
	progress_destroy(r.progress);
	hostwin_destroy(r.win);
	clock_destroy(r.clock);
	report_queue_destroy(r.reports);
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
	config_free(&r.cfg);
	free(err);
	return rc;
}
