/* parsa-sched: the scheduler daemon. main owns one context: it creates the
 * store, the storage volume, the model, the engine and the API in that order,
 * waits for SIGTERM or SIGINT, and destroys them in reverse. */
#include "api.h"
#include "engine.h"
#include "log.h"
#include "model.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

struct sched {
	char *state_dir;
	char *socket_path;
	char *storage_url;
	char *db_path;
	int verbose;
	int log_stderr;
	int lock_fd;
	struct store *store;
	struct backend *storage;
	struct model *model;
	struct engine *engine;
	struct api *api;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: parsa-sched [--state DIR] [--socket PATH] [--storage URL] [-v] [--log-stderr]\n"
		"  --state DIR     the database DIR/parsa.db (default /var/lib/parsa as root,\n"
		"                  else $XDG_STATE_HOME/parsa or ~/.local/state/parsa)\n"
		"  --socket PATH   the API's unix socket (default DIR/sched.sock)\n"
		"  --storage URL   the storage volume: a local folder (default DIR/storage)\n"
		"  -v              debug logging\n"
		"  --log-stderr    log to stderr (the default; --syslog logs to syslog instead)\n");
}

static char *default_state_dir(void)
{
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	struct passwd pw, *res = NULL;
	char buf[4096];

	if (geteuid() == 0)
		return xstrdup("/var/lib/parsa");
	if (xdg && xdg[0] == '/')
		return xasprintf("%s/parsa", xdg);
	if ((!home || !*home) && getpwuid_r(geteuid(), &pw, buf, sizeof buf, &res) == 0 && res)
		home = pw.pw_dir;
	return xasprintf("%s/.local/state/parsa", home && *home ? home : "/tmp");
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

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "state", required_argument, NULL, 's' },
		{ "socket", required_argument, NULL, 'S' },
		{ "storage", required_argument, NULL, 'd' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "log-stderr", no_argument, NULL, 'e' },
		{ "syslog", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct engine_config cfg = { 0 };
	struct sched s = { .lock_fd = -1, .log_stderr = 1 };
	sigset_t sigs;
	char *err = NULL;
	int opt, sig, status = 1;

	while ((opt = getopt_long(argc, argv, "vh", options, NULL)) != -1) {
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
		case 'v':
			s.verbose = 1;
			break;
		case 'e':
			s.log_stderr = 1;
			break;
		case 'L':
			s.log_stderr = 0;
			break;
		case 'h':
			usage(stdout);
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
	if (!s.state_dir)
		s.state_dir = default_state_dir();
	if (!s.socket_path)
		s.socket_path = xasprintf("%s/sched.sock", s.state_dir);
	if (!s.storage_url)
		s.storage_url = xasprintf("%s/storage", s.state_dir);
	s.db_path = xasprintf("%s/parsa.db", s.state_dir);

	/* Every thread inherits this mask; main alone takes the signals, with sigwait. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (mkdir_p(s.state_dir, 0755) < 0) {
		log_warn("cannot create the state folder %s", s.state_dir);
		goto out;
	}
	if (lock_state(&s, &err) < 0)
		goto fail;
	s.store = store_open(s.db_path, &err);
	if (!s.store)
		goto fail;
	if (strncmp(s.storage_url, "file://", 7) != 0 && strstr(s.storage_url, "://") == NULL &&
	    mkdir_p(s.storage_url, 0755) < 0) {
		log_warn("cannot create the storage folder %s", s.storage_url);
		goto out;
	}
	s.storage = backend_create(s.storage_url, &err);
	if (!s.storage)
		goto fail;
	s.model = model_create();
	if (store_load(s.store, s.model, &err) < 0)
		goto fail;
	log_info("state %s: %zu jobs (%zu unfinished), %zu hosts", s.db_path,
		 model_njobs(s.model) - 1, model_nactive(s.model), model_nhosts(s.model));
	s.engine = engine_create(&cfg, s.store, s.storage, s.model, &err);
	if (!s.engine || engine_start(s.engine, &err) < 0)
		goto fail;
	s.api = api_create(s.socket_path, s.engine, &err);
	if (!s.api)
		goto fail;

	for (;;) {
		if (sigwait(&sigs, &sig) != 0)
			continue;
		if (sig == SIGTERM || sig == SIGINT)
			break;
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
	engine_destroy(s.engine);
	model_destroy(s.model);
	if (s.storage)
		backend_destroy(s.storage);
	store_close(s.store);
	if (s.lock_fd >= 0)
		close(s.lock_fd);
	free(err);
	free(s.state_dir);
	free(s.socket_path);
	free(s.storage_url);
	free(s.db_path);
	return status;
}
