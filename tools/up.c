/* `parsa up` and `parsa down`: the command-line edge of the supervisor.
 * up resolves the paths, creates the folders, takes the locks that make a
 * second `parsa up` on the same mount or state fail, checks what would make the
 * start fail anyway, and runs the supervisor in the foreground or in a
 * setsid'ed child (--detach). down finds that supervisor through the per-mount
 * pointer or the state folder, asks it to stop, and cleans up after it if it
 * died or does not stop in time. */
#include "cli.h"
#include "daemons.h"
#include "log.h"
#include "mountpoint.h"
#include "paths.h"
#include "proc.h"
#include "runfile.h"
#include "units.h"
#include "unix_socket.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long `parsa down` lets the supervisor stop everything (its own
 * deadlines add up to about a minute in the worst case), then how long it
 * gives leftovers after SIGTERM. */
#define DOWN_MS 90000
#define LEFTOVER_MS 5000

/* Resolve symlinks in path's parent (which exists) but not in path itself:
 * the last component may be a dead FUSE mount, which realpath cannot stat. */
static char *canonical(const char *path)
{
	char *copy = xstrdup(path), *slash = strrchr(copy, '/'), *parent, *out;
	char real[PATH_MAX];

	if (!slash || slash == copy || !slash[1]) {
		/* "/x": the parent is "/" and needs no resolving. */
		return copy;
	}
	*slash = '\0';
	parent = realpath(copy, real);
	out = parent ? xasprintf("%s/%s", strcmp(real, "/") == 0 ? "" : real, slash + 1) : xstrdup(path);
	free(copy);
	return out;
}

/* The runtime folder holds the pointers; under /tmp anyone could have made it first. */
static int check_private_dir(const char *dir, char **err)
{
	struct stat st;

	if (lstat(dir, &st) < 0)
		return errprintf(err, "cannot use %s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		errno = EPERM;
		return errprintf(err, "%s is not a private folder of yours (owner %u, mode %o): remove it, or set XDG_RUNTIME_DIR",
				 dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	}
	return 0;
}

/* Read the state folder a mount's pointer names; NULL if there is none. */
static char *read_pointer(const char *pointer)
{
	char *text = read_file(pointer, PATH_MAX, NULL);
	size_t n;

	if (!text)
		return NULL;
	n = strcspn(text, "\n");
	text[n] = '\0';
	if (n == 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* Describe who holds a busy lock, from the run file in state. */
static char *holder(const char *state)
{
	char *runfile = xasprintf("%s/up.json", state), *text;
	struct runinfo ri;

	if (runinfo_read(runfile, &ri, NULL) == 0) {
		text = xasprintf("mount %s, state %s, supervisor pid %d", ri.mount, ri.state, (int)ri.pid);
		runinfo_free(&ri);
	} else {
		text = xasprintf("state %s", state);
	}
	free(runfile);
	return text;
}

/* Everything that would make the start fail, checked while nothing runs. */
static int up_prechecks(const struct up_paths *p, char **err)
{
	char fstype[64] = "";
	struct stat st;
	char *helper;

	if (access("/dev/fuse", R_OK | W_OK) < 0)
		return errprintf(err, "cannot use FUSE: /dev/fuse is %s (install fuse3 and load the fuse module, or run parsa up as root)",
				 errno == ENOENT ? "missing" : "not accessible to you");
	if (geteuid() != 0) {
		helper = find_program("fusermount3");
		if (!helper)
			return errprintf(err, "fusermount3 not found in PATH: install the fuse3 package (an ordinary user mounts through it)");
		free(helper);
	}
	if (is_mounted(p->mount, fstype, sizeof fstype) > 0) {
		/* We hold the locks, so no parsa up of ours owns it: a leftover or a stranger. */
		if (stat(p->mount, &st) < 0 && errno == ENOTCONN) {
			log_info("%s is a stale mount left by a parsafs that died: detaching it", p->mount);
			if (unmount(p->mount, 1) < 0)
				return errprintf(err, "%s is a stale mount and cannot be detached (%s): run `fusermount3 -u -z %s` (or umount -l as root)",
						 p->mount, strerror(errno), p->mount);
		} else {
			errno = EBUSY;
			return errprintf(err, "%s is already a mount point (%s) that no parsa up manages: unmount it, or choose another --mount",
					 p->mount, fstype);
		}
	}
	if (unix_socket_answers(p->socket)) {
		errno = EADDRINUSE;
		return errprintf(err, "a scheduler already listens on %s (started by hand?): stop it, or choose another --state",
				 p->socket);
	}
	/* Nobody answers: a socket left by a scheduler that died; it would block the bind. */
	if (unlink(p->socket) < 0 && errno != ENOENT)
		return errprintf(err, "cannot remove the old socket %s: %s", p->socket, strerror(errno));
	return 0;
}

/* Create every folder, then make the paths canonical (the pointer key must
 * not depend on how the mount was spelled). */
static int up_prepare(struct up_paths *p, const struct up_env *env, char **err)
{
	const char *dirs[] = { p->mount, p->state, p->logs, p->storage, p->scratch, p->runner_state };
	char *mount, *state, *storage;
	int rc;

	for (size_t i = 0; i < ARRAY_LEN(dirs); i++)
		if (!(dirs[i] == p->storage && paths_is_url(p->storage)) && mkdir_p(dirs[i], 0755) < 0)
			return errprintf(err, "cannot create %s: %s", dirs[i], strerror(errno));
	/* /run/parsa is shared with anything else parsa keeps there; a user's is private. */
	if (mkdir_p(p->pointer_dir, env->uid == 0 ? 0755 : 0700) < 0)
		return errprintf(err, "cannot create %s: %s", p->pointer_dir, strerror(errno));
	if (env->uid != 0) {
		char *runtime = xstrdup(p->pointer_dir);

		*strrchr(runtime, '/') = '\0';
		rc = check_private_dir(runtime, err);
		free(runtime);
		if (rc < 0)
			return -1;
	}
	mount = canonical(p->mount);
	state = canonical(p->state);
	storage = paths_is_url(p->storage) ? xstrdup(p->storage) : canonical(p->storage);
	up_paths_free(p);
	rc = up_paths_init(p, env, mount, state, storage, err);
	free(mount);
	free(state);
	free(storage);
	return rc;
}

/* Take the mount's and the state's locks; a busy one is a clear refusal. */
static int up_lock(const struct up_paths *p, int *pointer_fd, int *state_fd, char **err)
{
	char *other, *who;
	int r;

	r = lock_try(p->pointer, 1, pointer_fd);
	if (r != 0) {
		if (r < 0)
			return errprintf(err, "cannot lock %s: %s", p->pointer, strerror(errno));
		other = read_pointer(p->pointer);
		who = holder(other ? other : p->state);
		errno = EBUSY;
		errprintf(err, "%s is already up (%s): stop it first with `parsa down --mount %s`", p->mount,
			  who, p->mount);
		free(who);
		free(other);
		return -1;
	}
	r = lock_try(p->lockfile, 0, state_fd);
	if (r != 0) {
		if (r < 0)
			return errprintf(err, "cannot lock %s: %s", p->lockfile, strerror(errno));
		who = holder(p->state);
		errno = EBUSY;
		errprintf(err, "the state folder %s is in use by another parsa up (%s): choose another --state, or stop it with `parsa down --state %s`",
			  p->state, who, p->state);
		free(who);
		return -1;
	}
	/* The pointer says which state folder runs this mount. */
	if (ftruncate(*pointer_fd, 0) < 0 || pwrite(*pointer_fd, p->state, strlen(p->state), 0) < 0 ||
	    pwrite(*pointer_fd, "\n", 1, (off_t)strlen(p->state)) < 0)
		return errprintf(err, "cannot write %s: %s", p->pointer, strerror(errno));
	return 0;
}

/* The starting parent of a detached supervisor: wait for its "ok" or its
 * error, forwarding a Ctrl-C as SIGTERM. Returns the exit code. */
static int up_wait_detached(const struct up_paths *p, pid_t child, int fd, const char *default_endpoint)
{
	char buf[8192];
	size_t used = 0;
	int sigfd, rc = CLI_FAIL, status, interrupted = 0;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	for (;;) {
		struct pollfd pfd[2] = { { .fd = fd, .events = POLLIN }, { .fd = sigfd, .events = POLLIN } };
		ssize_t n;

		if (poll(pfd, sigfd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (sigfd >= 0 && (pfd[1].revents & POLLIN)) {
			struct signalfd_siginfo si;

			while (read(sigfd, &si, sizeof si) > 0)
				;
			if (!interrupted) {
				fprintf(stderr, "parsa: interrupted: stopping what has started...\n");
				kill(child, SIGTERM);
				interrupted = 1;
			}
		}
		if (!(pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = read(fd, buf + used, sizeof buf - 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || used + (size_t)n >= sizeof buf - 1) {
			if (n > 0)
				used += (size_t)n;
			break;
		}
		used += (size_t)n;
	}
	buf[used] = '\0';
	if (strncmp(buf, "ok\n", 3) == 0) {
		up_announce(p, 1, default_endpoint);
		rc = CLI_OK;
		goto out;
	}
	/* The supervisor exits right after reporting; collect it so nothing is left. */
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (strncmp(buf, "error\n", 6) == 0) {
		cli_fail("%s", buf + 6);
	} else {
		char how[128];

		describe_status(status, how, sizeof how);
		cli_fail("the supervisor %s during the start: see %s/up.log", how, p->logs);
	}
out:
	if (sigfd >= 0)
		close(sigfd);
	return rc;
}

static int parse_up_flags(const struct cli_cmd *self, int argc, char **argv, const char **mount,
			  const char **state, const char **storage, struct up_opts *o, int *rc)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "mount", required_argument, NULL, 'm' },
		{ "state", required_argument, NULL, 's' },
		{ "storage", required_argument, NULL, 'S' },
		{ "detach", no_argument, NULL, 'd' },
		{ "cpus", required_argument, NULL, 'c' },
		{ "mem", required_argument, NULL, 'M' },
		{ "scratch-size", required_argument, NULL, 'x' },
		{ "cpu-limit", required_argument, NULL, 'l' },
		{ "mem-limit", required_argument, NULL, 'L' },
		{ "name", required_argument, NULL, 'n' },
		{ "web", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t size;
	double pct;
	char *end;
	long v;
	int c, idx = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, &idx)) != -1) {
		switch (c) {
		case 'h':
			cli_help(self, stdout);
			*rc = CLI_OK;
			return -1;
		case 'm': *mount = optarg; break;
		case 's': *state = optarg; break;
		case 'S': *storage = optarg; break;
		case 'd': o->detach = 1; break;
		case 'c':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || v <= 0 || v > 1 << 20)
				goto bad_value;
			o->cpus = optarg;
			break;
		case 'M':
		case 'x':
			if (parse_size(optarg, &size) < 0)
				goto bad_value;
			*(c == 'M' ? &o->mem : &o->scratch_size) = optarg;
			break;
		case 'l':
		case 'L':
			/* As the runner reads them: a percentage; 100 or more disables the check. */
			errno = 0;
			pct = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(pct > 0) || pct > 1000)
				goto bad_value;
			*(c == 'l' ? &o->cpu_limit : &o->mem_limit) = optarg;
			break;
		case 'n':
			o->host_name = optarg;
			break;
		case 'w':
			if (strcmp(optarg, "off") != 0 && !strchr(optarg, ':'))
				goto bad_value;
			o->web = optarg;
			break;
		default:
			*rc = cli_usage_error(self, "unknown option or missing value: '%s'", argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		*rc = cli_usage_error(self, "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	return 0;
bad_value:
	*rc = cli_usage_error(self, "bad value '%s' for --%s (e.g. --cpus 8, --mem 8G, --scratch-size 100G, --cpu-limit 90, --web 127.0.0.1:8080)",
			      optarg, longopts[idx].name);
	return -1;
}

int cmd_up(const struct cli_cmd *self, int argc, char **argv)
{
	const char *mount = NULL, *state = NULL, *storage = NULL;
	struct up_opts opts = { 0 };
	struct up_paths paths = { 0 };
	struct up_env env;
	char cwd[PATH_MAX], *err = NULL, *default_endpoint = NULL;
	int pointer_fd = -1, state_fd = -1, sv[2] = { -1, -1 }, rc = CLI_FAIL;
	int owner = 1; /* this process removes the pointer it locked when it is done */
	sigset_t block;
	pid_t pid;

	if (parse_up_flags(self, argc, argv, &mount, &state, &storage, &opts, &rc) < 0)
		return rc;
	up_env_from_process(&env, cwd, sizeof cwd);
	default_endpoint = paths_default_endpoint(&env);
	if (up_paths_init(&paths, &env, mount, state, storage, &err) < 0 ||
	    up_prepare(&paths, &env, &err) < 0 || up_lock(&paths, &pointer_fd, &state_fd, &err) < 0) {
		cli_fail("%s", err);
		goto out;
	}
	if (up_prechecks(&paths, &err) < 0) {
		cli_fail("%s", err);
		goto out;
	}
	/* Signals become events read from a signalfd, in the supervisor and in the
	 * starting parent; SIGPIPE from a parent that went away must not kill us. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (!opts.detach) {
		struct up_notify notify = { .fd = -1, .default_endpoint = default_endpoint };

		if (supervise(&paths, &opts, &notify, &err) < 0)
			cli_fail("%s", err);
		else
			rc = CLI_OK;
		goto out;
	}

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		cli_fail("cannot start the supervisor: %s", strerror(errno));
		goto out;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		cli_fail("cannot start the supervisor: %s", strerror(errno));
		goto out;
	}
	if (pid > 0) {
		/* The child holds the locks and the pointer now; we only report. */
		owner = 0;
		close(sv[1]);
		sv[1] = -1;
		rc = up_wait_detached(&paths, pid, sv[0], default_endpoint);
		goto out;
	} else {
		struct up_notify notify = { .fd = sv[1], .default_endpoint = default_endpoint };
		char *uplog = xasprintf("%s/up.log", paths.logs);
		int nullfd = open("/dev/null", O_RDWR), logfd;

		close(sv[0]);
		sv[0] = -1;
		setsid();
		logfd = open(uplog, O_WRONLY | O_APPEND | O_CREAT, 0644);
		if (nullfd >= 0)
			dup2(nullfd, STDIN_FILENO);
		if (logfd >= 0) {
			dup2(logfd, STDOUT_FILENO);
			dup2(logfd, STDERR_FILENO);
		}
		if (nullfd > STDERR_FILENO)
			close(nullfd);
		if (logfd > STDERR_FILENO)
			close(logfd);
		free(uplog);
		log_info("supervisor of %s started (pid %d)", paths.mount, (int)getpid());
		sv[1] = -1; /* supervise() closes it */
		if (supervise(&paths, &opts, &notify, &err) < 0)
			cli_fail("%s", err);
		else
			rc = CLI_OK;
	}
out:
	/* Remove the pointer while we still hold its lock (see lock_try). */
	if (owner && pointer_fd >= 0)
		unlink(paths.pointer);
	if (pointer_fd >= 0)
		close(pointer_fd);
	if (state_fd >= 0)
		close(state_fd);
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	up_paths_free(&paths);
	free(default_endpoint);
	free(err);
	return rc;
}

/* Stop a process we did not start, known by pid and program name: SIGTERM,
 * then SIGKILL after ms. 1 if it is gone, 0 if it survived. */
static int stop_pid(pid_t pid, const char *comm, int ms)
{
	int64_t deadline = time_mono_ms() + ms;

	if (!pid_is(pid, comm))
		return 1;
	log_info("stopping %s (pid %d)", comm, (int)pid);
	kill(pid, SIGTERM);
	while (pid_is(pid, comm) && time_mono_ms() < deadline)
		usleep(50 * 1000);
	if (pid_is(pid, comm)) {
		kill(pid, SIGKILL);
		deadline = time_mono_ms() + LEFTOVER_MS;
		while (pid_is(pid, comm) && time_mono_ms() < deadline)
			usleep(50 * 1000);
	}
	return !pid_is(pid, comm);
}

/* 1 if a FUSE file system is mounted at path (ours, or one left by parsafs). */
static int fuse_mounted(const char *path)
{
	char fstype[64] = "";

	return is_mounted(path, fstype, sizeof fstype) > 0 && strncmp(fstype, "fuse", 4) == 0;
}

/* 1 if path is a FUSE mount whose daemon is gone: it answers ENOTCONN. */
static int stale_mount(const char *path)
{
	struct stat st;

	return fuse_mounted(path) && stat(path, &st) < 0 && errno == ENOTCONN;
}

/* Take the mount's pointer lock: 1 (and *fd) if no other live parsa up owns
 * the mount, so that down may unmount it; 0 if one does. */
static int claim_mount(const struct up_paths *p, int *fd)
{
	char *named;
	int r, mine;

	*fd = -1;
	r = lock_try(p->pointer, 1, fd);
	if (r < 0)
		return errno == ENOENT; /* no pointer folder: nobody is up anywhere */
	if (r == 1)
		return 0;
	named = read_pointer(p->pointer);
	mine = !named || strcmp(named, p->state) == 0;
	free(named);
	return mine;
}

/* With the supervisor gone (or never there), stop whatever it left, in the
 * supervisor's order; the mount only if it is ours (mine) and the run file
 * names it, or it is stale. 0 when nothing is left, -1 with *err. */
static int clean_leftovers(const struct up_paths *p, const struct runinfo *ri, int mine, char **err)
{
	int ok = 1, touch = mine && (ri || stale_mount(p->mount));

	if (ri) {
		ok &= stop_pid(ri->runner, "parsa-runner", LEFTOVER_MS);
		if (touch && fuse_mounted(p->mount) && unmount(p->mount, 0) < 0)
			log_info("cannot unmount %s cleanly (%s): detaching it", p->mount, strerror(errno));
		ok &= stop_pid(ri->fs, "parsafs", LEFTOVER_MS);
	}
	if (touch && fuse_mounted(p->mount) && unmount(p->mount, 1) < 0)
		log_warn("cannot detach %s", p->mount);
	if (ri)
		ok &= stop_pid(ri->sched, "parsa-sched", LEFTOVER_MS);
	unlink(p->runfile);
	if (touch && fuse_mounted(p->mount)) {
		errno = EBUSY;
		return errprintf(err, "%s is still mounted: try `fusermount3 -u -z %s` (umount -l as root)",
				 p->mount, p->mount);
	}
	if (!ok) {
		errno = EBUSY;
		return errprintf(err, "a daemon of %s survived SIGKILL: see `ps -p %d,%d,%d`", p->mount,
				 (int)ri->sched, (int)ri->fs, (int)ri->runner);
	}
	return 0;
}

/* Find which state folder runs the mount: from --state, the mount's pointer,
 * or the default state if its run file names this mount. NULL if none. */
static char *down_find_state(const struct up_env *env, const char *mount_flag, const char *state_flag)
{
	struct up_paths p;
	struct runinfo ri;
	char *mount = NULL, *state = NULL;

	if (state_flag) {
		char *abs = path_absolute(state_flag, env->cwd);

		state = canonical(abs);
		free(abs);
		return state;
	}
	if (up_paths_init(&p, env, mount_flag, NULL, NULL, NULL) < 0)
		return NULL;
	mount = canonical(p.mount);
	up_paths_free(&p);
	if (up_paths_init(&p, env, mount, NULL, NULL, NULL) == 0) {
		state = read_pointer(p.pointer);
		if (!state && runinfo_read(p.runfile, &ri, NULL) == 0) {
			if (strcmp(ri.mount, mount) == 0)
				state = xstrdup(ri.state);
			runinfo_free(&ri);
		}
		up_paths_free(&p);
	}
	free(mount);
	return state;
}

int cmd_down(const struct cli_cmd *self, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "mount", required_argument, NULL, 'm' },
		{ "state", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	const char *mount_flag = NULL, *state_flag = NULL;
	struct runinfo ri = { 0 };
	struct up_paths paths = { 0 };
	struct up_env env;
	char cwd[PATH_MAX], *err = NULL, *state = NULL, *mount = NULL;
	int lock_fd = -1, pointer_fd = -1, have_run = 0, mine, rc = CLI_FAIL, c, r;
	int64_t deadline;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			cli_help(self, stdout);
			return CLI_OK;
		case 'm': mount_flag = optarg; break;
		case 's': state_flag = optarg; break;
		default:
			return cli_usage_error(self, "unknown option or missing value: '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error(self, "unexpected argument '%s'", argv[optind]);
	up_env_from_process(&env, cwd, sizeof cwd);

	state = down_find_state(&env, mount_flag, state_flag);
	if (!state) {
		if (up_paths_init(&paths, &env, mount_flag, NULL, NULL, &err) < 0) {
			cli_fail("%s", err);
			goto out;
		}
		/* A parsafs that died leaves a mount that answers ENOTCONN: take it away. */
		mine = claim_mount(&paths, &pointer_fd);
		if (mine && pointer_fd >= 0)
			unlink(paths.pointer); /* lock_try made it; nothing points anywhere */
		if (mine && stale_mount(paths.mount)) {
			if (unmount(paths.mount, 1) < 0) {
				cli_fail("%s is a stale mount and cannot be detached (%s): try `fusermount3 -u -z %s` (umount -l as root)",
					 paths.mount, strerror(errno), paths.mount);
				goto out;
			}
			fprintf(stderr, "parsa: detached the stale mount at %s\n", paths.mount);
		} else {
			fprintf(stderr, "parsa: nothing is up at %s\n", paths.mount);
		}
		rc = CLI_OK;
		goto out;
	}
	/* The run file knows the mount when only --state was given. */
	{
		char *runfile = xasprintf("%s/up.json", state);

		have_run = runinfo_read(runfile, &ri, NULL) == 0;
		free(runfile);
	}
	if (mount_flag) {
		char *abs = path_absolute(mount_flag, env.cwd);

		mount = canonical(abs);
		free(abs);
		if (have_run && strcmp(ri.mount, mount) != 0) {
			cli_fail("the parsa up with state %s runs %s, not %s: check --mount and --state", state,
				 ri.mount, mount);
			goto out;
		}
	} else if (have_run) {
		mount = xstrdup(ri.mount);
	}
	if (up_paths_init(&paths, &env, mount, state, NULL, &err) < 0) {
		cli_fail("%s", err);
		goto out;
	}

	r = lock_try(paths.lockfile, 0, &lock_fd);
	if (r < 0 && errno == ENOENT) {
		fprintf(stderr, "parsa: nothing is up with the state folder %s (there is no such folder)\n",
			paths.state);
		rc = CLI_OK;
		goto out;
	}
	if (r < 0) {
		cli_fail("cannot lock %s: %s", paths.lockfile, strerror(errno));
		goto out;
	}
	if (r == 1) {
		/* A supervisor holds the lock: ask it to stop, and wait for the lock. */
		deadline = time_mono_ms() + 3000;
		while (!have_run && time_mono_ms() < deadline) {
			usleep(50 * 1000); /* it writes up.json right after taking the lock */
			have_run = runinfo_read(paths.runfile, &ri, NULL) == 0;
		}
		if (!have_run || !pid_is(ri.pid, "parsa")) {
			cli_fail("%s is locked but its run file names no live supervisor: see %s/up.json",
				 paths.state, paths.state);
			goto out;
		}
		log_info("stopping the parsa up on %s (pid %d)", paths.mount, (int)ri.pid);
		kill(ri.pid, SIGTERM);
		deadline = time_mono_ms() + DOWN_MS;
		while ((r = lock_try(paths.lockfile, 0, &lock_fd)) == 1 && time_mono_ms() < deadline)
			usleep(100 * 1000);
		if (r == 1) {
			log_warnx("the supervisor (pid %d) did not stop within %d s: killing it",
				  (int)ri.pid, DOWN_MS / 1000);
			kill(ri.pid, SIGKILL);
			deadline = time_mono_ms() + LEFTOVER_MS;
			while ((r = lock_try(paths.lockfile, 0, &lock_fd)) == 1 && time_mono_ms() < deadline)
				usleep(100 * 1000);
		}
	} else if (!have_run && state_flag && !mount_flag) {
		fprintf(stderr, "parsa: nothing is up with the state folder %s\n", paths.state);
	} else if (!have_run) {
		fprintf(stderr, "parsa: nothing is up at %s\n", paths.mount);
	}
	/* We hold the lock (or the supervisor is unkillable): clean what is left. */
	mine = claim_mount(&paths, &pointer_fd);
	if (clean_leftovers(&paths, have_run ? &ri : NULL, mine, &err) < 0) {
		cli_fail("%s", err);
		goto out;
	}
	if (mine && pointer_fd >= 0)
		unlink(paths.pointer); /* while holding its lock: see lock_try */
	if (have_run)
		printf("parsa on %s is down\n", paths.mount);
	rc = CLI_OK;
out:
	if (pointer_fd >= 0)
		close(pointer_fd);
	if (lock_fd >= 0)
		close(lock_fd);
	runinfo_free(&ri);
	up_paths_free(&paths);
	free(state);
	free(mount);
	free(err);
	return rc;
}
