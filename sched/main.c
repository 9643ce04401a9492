/* parsa-sched: the scheduler daemon. main owns one context: it creates the
 * store, the storage volume, the model, the engine and the API in that order,
 * waits for SIGTERM or SIGINT (and SIGHUP, which reloads parsa.conf), and
 * destroys them in reverse. -n checks the configuration and exits. */
#include "api.h"
#include "clock.h"
#include "config.h"
#include "defaults.h"
#include "engine.h"
#include "records.h"
#include "lifecycle.h"
#include "log.h"
#include "model.h"
#include "reconf.h"
#include "store.h"
#include "units.h"
#include "util.h"
#include "version.h"
#include "web.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

struct sched {
	char *config_path;
	struct parsa_conf conf;
	struct sched_flags flags; /* what the command line gave; points into the fields below */
	char *listen;
	char *munge_socket;
	char *admin_group;
	char *state_dir;
	char *socket_path;
	char *storage_url;
	char *db_path;
	int verbose;
	int log_stderr;
	char *log_file;           /* --log-file, or NULL */
	int lock_fd;
	char *clock_file;
	char *sendmail;
	struct clock *clock;
	struct store *store;
	struct backend *storage;
	struct model *model;
	struct engine *engine;
	struct api *api;
	char *web_listen;         /* --web or [web] listen; NULL or "off": no page */
	char *web_file;           /* DIR/web.url: where the page is, while it is */
	struct records *records;
	struct web *web;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: parsa-sched [--config FILE] [--state DIR] [--socket PATH] [--storage URL]\n"
		"                   [--listen HOST:PORT] [--munge-socket PATH] [--admin-group GROUP]\n"
		"                   [--host-timeout DURATION] [--lease DURATION] [--retention DURATION]\n"
		"                   [--keep-finished DURATION] [--record-retention DURATION]\n"
		"                   [--list-finished DURATION] [--web HOST:PORT|off] [-v]\n"
		"                   [--log-stderr | --syslog | --log-file PATH] [-n] [--help] [--version]\n"
		"  --config FILE   cluster settings (default " PARSA_CONF_DEFAULT " if it exists);\n"
		"                  the flags below override it\n"
		"  --state DIR     the database DIR/parsa.db (default /var/lib/parsa as root,\n"
		"                  else $XDG_STATE_HOME/parsa or ~/.local/state/parsa)\n"
		"  --socket PATH   the API's unix socket (default DIR/sched.sock)\n"
		"  --storage URL   the storage volume: a local folder (default DIR/storage) or\n"
		"                  nfs://server/export[/folder][?timeout=SECONDS]\n"
		"  --retention D   delete the outputs of finished, un-kept jobs older than D\n"
		"                  (e.g. 30d; default: never)\n"
		"  --keep-finished D   finished jobs stay in memory this long (default 1h; then\n"
		"                      they are read from the database when asked)\n"
		"  --record-retention D delete the records of jobs that ended longer ago than D\n"
		"                      (default: keep forever)\n"
		"  --list-finished D   jobs/ lists the jobs that ended this recently (default 30d;\n"
		"                      older ids still resolve)\n"
		"  --listen HOST:PORT  also serve the API on TCP (every request authenticated with munge)\n"
		"  --munge-socket PATH munged's socket (default /run/munge/munge.socket.2)\n"
		"  --admin-group GROUP may drain hosts and act on anybody's job\n"
		"  --web HOST:PORT     serve the read-only web page and /metrics there (port 0:\n"
		"                      any free one; its URL goes to DIR/web.url); off: none\n"
		"  --host-timeout D    a host silent this long is down (default 10s)\n"
		"  --lease D           a host silent this long has its instances requeued (default 30s)\n"
		"  --sendmail PATH     the program for notify = mail:... (default /usr/sbin/sendmail)\n"
		"  --clock-file PATH   a test facility: take the time from PATH (+1h, or a local time;\n"
		"                      see lib/clock.h) instead of the system clock\n"
		"  -n, --check     check the configuration (parsa.conf and these flags) and exit:\n"
		"                  0 and \"configuration OK\", or 1 and each problem\n"
		"  -v              debug logging\n"
		"  --log-stderr    log to stderr (the default)\n"
		"  --syslog        log to syslog (daemon facility; journalctl -t parsa-sched)\n"
		"  --log-file PATH append the log to PATH (parsa up: STATE/logs/sched.log)\n"
		"  -h, --help      this text\n"
		"  --version       the release and the protocol it speaks with runners and mounts\n");
}

/* One scheduler per state folder: a second one would share the database. */
static int lock_state(struct sched *s, char **err)
{
	char *path = xasprintf("%s/sched.lock", s->state_dir);
	int ret = -1;

	s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (s->lock_fd < 0) {
		errprintf(err, "cannot open %s: %s", path, strerror(errno));
		goto out;
	}
	if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		errprintf(err, "%s is in use by another parsa-sched (%s)", s->state_dir,
			  errno == EWOULDBLOCK ? "its lock is held" : strerror(errno));
		goto out;
	}
	ret = 0;
out:
	free(path);
	return ret;
}

static void take(char **dst, const char *value)
{
	if (!*dst && value)
		*dst = xstrdup(value);
}

/* Fill what the flags left unset from the config file, then check what must
 * be safe: the file itself (parsa_conf_load) and the munge key. */
static int apply_config(struct sched *s, struct engine_config *cfg, char **err)
{
	const char *path = s->config_path ? s->config_path : PARSA_CONF_DEFAULT;
	const struct parsa_conf *c = &s->conf;
	struct sched_settings set;
	int ret = -1;

	if (parsa_conf_load(path, !s->config_path, &s->conf, err) < 0)
		return -1;
	if (c->path)
		log_info("config %s", c->path);
	reconf_settings(&s->flags, c, &set);
	take(&s->listen, set.listen);
	take(&s->munge_socket, set.munge_socket);
	take(&s->admin_group, set.admin_group);
	take(&s->state_dir, set.state_dir);
	take(&s->storage_url, set.storage_url);
	take(&s->web_listen, set.web_listen);
	*cfg = set.cfg;
	if (s->admin_group) {
		if (reconf_admin_gid(s->admin_group, &cfg->admin_gid, err) < 0)
			goto out;
		cfg->admin_set = true;
	}
	/* Anybody who can read the key can forge any uid: a scheduler that takes
	 * requests from the network refuses to run with a key others can read. */
	if (s->listen && parsa_conf_check_key(c->munge_key ? c->munge_key : PARSA_MUNGE_KEY_DEFAULT,
					       !c->munge_key, err) < 0)
		goto out;
	ret = 0;
out:
	reconf_settings_clear(&set);
	return ret;
}

/* -n: read and check everything the scheduler would use at start, start
 * nothing. The exit status. */
static int check_config(struct sched *s)
{
	const char *path = s->config_path ? s->config_path : PARSA_CONF_DEFAULT;
	struct sched_settings set;
	char *err = NULL, *report = NULL;
	int problems;

	if (parsa_conf_load(path, !s->config_path, &s->conf, &err) < 0) {
		fprintf(stderr, "parsa-sched: %s\n", err);
		free(err);
		return 1;
	}
	reconf_settings(&s->flags, &s->conf, &set);
	problems = reconf_check(&set, &report);
	if (problems == 0)
		printf("parsa-sched: configuration OK (%s)\n", s->conf.path ? s->conf.path :
		       "no parsa.conf: the flags and the defaults");
	else
		fprintf(stderr, "%sparsa-sched: %d problem%s in the configuration\n", report, problems,
			problems == 1 ? "" : "s");
	free(report);
	reconf_settings_clear(&set);
	return problems ? 1 : 0;
}

/* The web page: a reader of the history of its own, the server, and
 * DIR/web.url (written whole, then renamed) for `parsa up` to announce. */
static int start_web(struct sched *s, char **err)
{
	struct web_deps deps = { .engine = s->engine, .storage = s->storage, .records = s->records };
	char *tmp = NULL, *text = NULL;
	int fd, ret = -1;

	s->web = web_create(s->web_listen, &deps, err);
	if (!s->web)
		return -1;
	s->web_file = xasprintf("%s/web.url", s->state_dir);
	tmp = xasprintf("%s.tmp", s->web_file);
	text = xasprintf("%s\n", web_url(s->web));
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write_all(fd, text, strlen(text)) < 0 || close(fd) < 0 ||
	    rename(tmp, s->web_file) < 0) {
		errprintf(err, "cannot write %s: %s", s->web_file, strerror(errno));
		unlink(tmp);
		free(s->web_file);
		s->web_file = NULL;
		goto out;
	}
	ret = 0;
out:
	free(tmp);
	free(text);
	return ret;
}

static void stop_web(struct sched *s)
{
	if (s->web_file)
		unlink(s->web_file);
	free(s->web_file);
	s->web_file = NULL;
	web_destroy(s->web);
	s->web = NULL;
}

static bool web_wanted(const char *address)
{
	return address && strcmp(address, "off") != 0;
}

/* SIGHUP's [web] listen: the page moves to want (NULL or "off": none). Where
 * it cannot listen, it comes back where it was. */
static void reload_web(struct sched *s, const char *want)
{
	char *was = s->web_listen, *err = NULL;

	stop_web(s);
	s->web_listen = want ? xstrdup(want) : NULL;
	if (!web_wanted(want)) {
		log_info("reload: the web page stopped");
	} else if (start_web(s, &err) == 0) {
		log_info("reload: the web page is now on %s", web_url(s->web));
	} else {
		log_warnx("reload: [web] listen = %s: %s; the page stays %s%s", want, err,
			  web_wanted(was) ? "on " : "off", web_wanted(was) ? was : "");
		free(err);
		err = NULL;
		stop_web(s);
		free(s->web_listen);
		s->web_listen = was;
		was = NULL;
		if (web_wanted(s->web_listen) && start_web(s, &err) < 0) {
			log_warnx("reload: the web page cannot come back on %s: %s", s->web_listen, err);
			free(err);
			stop_web(s);
		}
	}
	free(was);
}

static bool same_address(const char *a, const char *b)
{
	return web_wanted(a) == web_wanted(b) && (!web_wanted(a) || strcmp(a, b) == 0);
}

/* SIGHUP: parsa.conf again, through the same checks as at start and -n. A
 * file that fails them changes nothing; else what can change live goes to
 * the engine (and the web page moves) at once, and the log says what changed
 * and what waits for a restart. */
static void reload_config(struct sched *s)
{
	const char *path = s->config_path ? s->config_path : PARSA_CONF_DEFAULT;
	struct sched_settings old, fresh;
	struct parsa_conf conf;
	struct engine_live live;
	char *err = NULL, *report = NULL, *changes, *line, *save = NULL;
	int problems;

	log_info("got SIGHUP: reading the configuration again");
	if (parsa_conf_load(path, !s->config_path, &conf, &err) < 0) {
		log_warnx("reload: %s; the configuration is unchanged", err ? err : path);
		free(err);
		return;
	}
	reconf_settings(&s->flags, &s->conf, &old);
	reconf_settings(&s->flags, &conf, &fresh);
	/* What -n finds wrong refuses the whole file, as at start. */
	problems = reconf_check(&fresh, &report);
	if (problems) {
		for (line = strtok_r(report, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			log_warnx("reload: %s", line);
		log_warnx("reload: %d problem%s: the configuration is unchanged", problems,
			  problems == 1 ? "" : "s");
		free(report);
		parsa_conf_free(&conf);
		goto out;
	}
	free(report);
	changes = reconf_diff(&old, &fresh, &live, &err);
	if (!changes) {
		log_warnx("reload: %s: %s; the configuration is unchanged", conf.path ? conf.path : path,
			  err ? err : "cannot apply");
		free(err);
		parsa_conf_free(&conf);
		goto out;
	}
	engine_reconfigure(s->engine, &live);
	if (!same_address(old.web_listen, fresh.web_listen))
		reload_web(s, fresh.web_listen);
	if (!*changes)
		log_info("reload: %s: nothing changed", conf.path ? conf.path : "no parsa.conf");
	for (line = strtok_r(changes, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		log_info("reload: %s", line);
	free(changes);
	parsa_conf_free(&s->conf);
	s->conf = conf;
out:
	reconf_settings_clear(&old);
	reconf_settings_clear(&fresh);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "state", required_argument, NULL, 's' },
		{ "socket", required_argument, NULL, 'S' },
		{ "storage", required_argument, NULL, 'd' },
		{ "retention", required_argument, NULL, 'R' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "log-stderr", no_argument, NULL, 'e' },
		{ "syslog", no_argument, NULL, 'L' },
		{ "log-file", required_argument, NULL, 'G' },
		{ "config", required_argument, NULL, 'C' },
		{ "listen", required_argument, NULL, 'T' },
		{ "munge-socket", required_argument, NULL, 'M' },
		{ "admin-group", required_argument, NULL, 'A' },
		{ "host-timeout", required_argument, NULL, 'H' },
		{ "lease", required_argument, NULL, 'E' },
		{ "clock-file", required_argument, NULL, 'K' },
		{ "sendmail", required_argument, NULL, 'W' },
		{ "keep-finished", required_argument, NULL, 'F' },
		{ "record-retention", required_argument, NULL, 'D' },
		{ "list-finished", required_argument, NULL, 'I' },
		{ "web", required_argument, NULL, 'w' },
		{ "check", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct engine_config cfg = { 0 };
	struct sched s = { .lock_fd = -1, .log_stderr = 1 };
	sigset_t sigs;
	char *err = NULL;
	int64_t load_ms;
	int opt, sig, status = 1, check_only = 0;

	while ((opt = getopt_long(argc, argv, "vhn", options, NULL)) != -1) {
		switch (opt) {
		case 's':
			free(s.state_dir);
			s.state_dir = xstrdup(optarg);
			break;
		case 'S':
			free(s.socket_path);
			s.socket_path = xstrdup(optarg);
			break;
		case 'd':
			free(s.storage_url);
			s.storage_url = xstrdup(optarg);
			break;
		case 'R':
			if (lifecycle_parse_retention(optarg, &cfg.retention_ms, &err) < 0) {
				fprintf(stderr, "parsa-sched: --retention: %s\n", err);
				status = 2;
				goto out;
			}
			break;
		case 'v':
			s.verbose = 1;
			break;
		case 'n':
			check_only = 1;
			break;
		case 'e':
			s.log_stderr = 1;
			break;
		case 'L':
			s.log_stderr = 0;
			break;
		case 'G':
			free(s.log_file);
			s.log_file = xstrdup(optarg);
			break;
		case 'C':
			free(s.config_path);
			s.config_path = xstrdup(optarg);
			break;
		case 'T':
			free(s.listen);
			s.listen = xstrdup(optarg);
			break;
		case 'M':
			free(s.munge_socket);
			s.munge_socket = xstrdup(optarg);
			break;
		case 'A':
			free(s.admin_group);
			s.admin_group = xstrdup(optarg);
			break;
		case 'H':
		case 'E':
		case 'F':
		case 'D':
		case 'I': {
			static const struct { int opt; const char *name; size_t at; } durations[] = {
				{ 'H', "host-timeout", offsetof(struct engine_config, host_timeout_ms) },
				{ 'E', "lease", offsetof(struct engine_config, lease_ms) },
				{ 'F', "keep-finished", offsetof(struct engine_config, keep_finished_ms) },
				{ 'D', "record-retention", offsetof(struct engine_config, record_retention_ms) },
				{ 'I', "list-finished", offsetof(struct engine_config, list_finished_ms) },
			};
			uint64_t secs;
			size_t d = 0;

			while (durations[d].opt != opt)
				d++;
			if (parse_duration(optarg, &secs) < 0 || secs == 0) {
				fprintf(stderr, "parsa-sched: --%s '%s': expected a duration such as 30s\n",
					durations[d].name, optarg);
				status = 2;
				goto out;
			}
			*(int64_t *)((char *)&cfg + durations[d].at) = (int64_t)secs * 1000;
			break;
		}
		case 'K':
		case 'W':
		case 'w': {
			char **dst = opt == 'K' ? &s.clock_file : opt == 'W' ? &s.sendmail : &s.web_listen;

			free(*dst);
			*dst = xstrdup(optarg);
			break;
		}
		case 'h':
			usage(stdout);
			status = 0;
			goto out;
		case 'V':
			printf("parsa-sched %s (protocol %d)\n", PARSA_VERSION, PARSA_PROTOCOL);
			status = 0;
			goto out;
		default:
			usage(stderr);
			status = 2;
			goto out;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "parsa-sched: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		status = 2;
		goto out;
	}
	log_init("parsa-sched", s.log_stderr, s.verbose ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO);
	if (s.log_file && log_to_file(s.log_file, &err) < 0) {
		fprintf(stderr, "parsa-sched: --log-file: %s\n", err);
		status = 2;
		goto out;
	}
	s.flags = (struct sched_flags){ .listen = s.listen, .munge_socket = s.munge_socket,
					.admin_group = s.admin_group, .state_dir = s.state_dir,
					.storage_url = s.storage_url, .web_listen = s.web_listen,
					.durations = cfg };
	if (check_only) {
		status = check_config(&s);
		goto out;
	}
	if (apply_config(&s, &cfg, &err) < 0)
		goto fail;
	if (!s.state_dir)
		s.state_dir = default_state_dir(geteuid(), getenv("HOME"), getenv("XDG_STATE_HOME"));
	if (!s.socket_path)
		s.socket_path = xasprintf("%s/sched.sock", s.state_dir);
	if (!s.storage_url)
		s.storage_url = xasprintf("%s/storage", s.state_dir);
	s.db_path = xasprintf("%s/parsa.db", s.state_dir);

	/* Every thread inherits this mask; main alone takes the signals, with sigwait. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	mem_one_arena(MEM_LARGE);

	if (mkdir_p(s.state_dir, 0755) < 0) {
		log_warn("cannot create the state folder %s", s.state_dir);
		goto out;
	}
	if (lock_state(&s, &err) < 0)
		goto fail;
	s.store = store_open(s.db_path, &err);
	if (!s.store || store_checkpoint_in_background(s.store, &err) < 0)
		goto fail;
	if (strncmp(s.storage_url, "file://", 7) != 0 && strstr(s.storage_url, "://") == NULL &&
	    mkdir_p(s.storage_url, 0755) < 0) {
		log_warn("cannot create the storage folder %s", s.storage_url);
		goto out;
	}
	s.storage = backend_create(s.storage_url, &err);
	if (!s.storage)
		goto fail;
	s.clock = clock_create(s.clock_file);
	if (s.clock_file)
		log_info("time comes from the clock file %s (a test facility)", s.clock_file);
	s.model = model_create();
	load_ms = time_mono_ms();
	if (store_load(s.store, s.model, clock_now_ms(s.clock) - (cfg.keep_finished_ms > 0 ?
			cfg.keep_finished_ms : ENGINE_KEEP_FINISHED_MS), &err) < 0)
		goto fail;
	log_info("state %s: %zu jobs in memory (%zu unfinished), next id %lld, %zu hosts; "
		 "loaded in %lld ms", s.db_path, model_nresident(s.model), model_nactive(s.model),
		 (long long)model_next_job_id(s.model), model_nhosts(s.model),
		 (long long)(time_mono_ms() - load_ms));
	cfg.clock = s.clock;
	cfg.sendmail = s.sendmail;
	cfg.conf = &s.conf;
	s.engine = engine_create(&cfg, s.store, s.storage, s.model, &err);
	if (!s.engine || engine_start(s.engine, &err) < 0)
		goto fail;
	s.records = records_open(s.db_path, &err);
	if (!s.records)
		goto fail;
	/* Before the API: its socket says "ready", and by then web.url is there. */
	if (web_wanted(s.web_listen) && start_web(&s, &err) < 0)
		goto fail;
	s.api = api_create_with_records(s.socket_path, s.engine, s.records, &err);
	if (!s.api)
		goto fail;
	if (s.listen && api_listen_tcp(s.api, s.listen, s.munge_socket, &err) < 0)
		goto fail;
	/* Once we answer: a restart does not wait for the whole file's check. */
	if (store_check_in_background(s.store, &err) < 0) {
		log_warnx("%s: the database is not checked", err ? err : "quick_check");
		free(err);
		err = NULL;
	}

	for (;;) {
		if (sigwait(&sigs, &sig) != 0)
			continue;
		if (sig == SIGTERM || sig == SIGINT)
			break;
		/* Here, not in a handler: the main thread takes the signals
		 * with sigwait, and the engine takes the new settings under
		 * its own lock. */
		if (sig == SIGHUP)
			reload_config(&s);
	}
	log_info("got %s: stopping", strsignal(sig));
	status = 0;
	goto out;
fail:
	log_warnx("%s", err ? err : "cannot start");
out:
	/* Long polls return first, then the HTTP server stops, then the rest. */
	if (s.engine)
		engine_stop(s.engine);
	api_destroy(s.api);
	stop_web(&s);
	records_close(s.records);
	engine_destroy(s.engine);
	clock_destroy(s.clock);
	free(s.clock_file);
	free(s.sendmail);
	model_destroy(s.model);
	if (s.storage)
		backend_destroy(s.storage);
	store_close(s.store);
	if (s.lock_fd >= 0)
		close(s.lock_fd);
	free(err);
	parsa_conf_free(&s.conf);
	free(s.config_path);
	free(s.listen);
	free(s.munge_socket);
	free(s.admin_group);
	free(s.state_dir);
	free(s.log_file);
	free(s.socket_path);
	free(s.storage_url);
	free(s.db_path);
	free(s.web_listen);
	return status;
}
