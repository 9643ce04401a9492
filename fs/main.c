/* parsafs: the /parsa mount. Parses its flags, opens the storage and the line
 * to the scheduler, mounts (whether or not the volume answers: what it does
 * on the volume at start waits for the volume then), and runs FUSE's
 * multi-threaded loop until it is unmounted or signalled (SIGINT, SIGTERM,
 * SIGHUP unmount cleanly). */
#include "backend.h"
#include "ctl_file.h"
#include "data_dir.h"
#include "config.h"
#include "hosts_dir.h"
#include "inode_map.h"
#include "job_cache.h"
#include "defaults.h"
#include "log.h"
#include "ops.h"
#include "read_pipe.h"
#include "queue_dir.h"
#include "schedules_dir.h"
#include "sched_link.h"
#include "storage_watch.h"
#include "unlinked.h"
#include "units.h"
#include "wire.h"
#include "util.h"
#include "version.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Job and host metadata live this long in the mount's caches. */
#define CACHE_TTL_MS 1000
/* How long I/O in out/ and data/ waits for a volume that does not answer,
 * as a kernel hard mount would (--storage-patience). */
#define DEFAULT_STORAGE_PATIENCE_S 300
/* Each blocked `cat wait` holds a worker thread: allow many. */
#define DEFAULT_MAX_THREADS 256

/* Blocks up to this size are kept on the heap for reuse (mem_one_arena): the
 * largest FUSE write and read-ahead (1 MiB, ops.c) and an NFS reply of as
 * much with its headers; listings, far larger, still go back when freed. */
#define FS_DATA_BLOCK_MAX ((size_t)2 << 20)
/* The largest read on an NFS volume: its chunks read ahead (nfs_files.c). */
#define FS_READ_MAX 524288
#define STR_(x) #x
#define STR(x) STR_(x)

struct options {
	char *config;
	char *munge_socket;
	char *admin_group;
	char *sched;
	char *storage;
	char *storage_patience;
	char *log_file;
	int ready_fd;
	int page_cache;
	int show_help;
};

#define OPT(t, p) { t, offsetof(struct options, p), 1 }
static const struct fuse_opt option_spec[] = {
	OPT("--sched %s", sched),
	OPT("--sched=%s", sched),
	OPT("--storage %s", storage),
	OPT("--storage=%s", storage),
	OPT("--config %s", config),
	OPT("--config=%s", config),
	OPT("--munge-socket %s", munge_socket),
	OPT("--munge-socket=%s", munge_socket),
	OPT("--admin-group %s", admin_group),
	OPT("--admin-group=%s", admin_group),
	OPT("--log-file %s", log_file),
	OPT("--log-file=%s", log_file),
	OPT("--ready-fd %d", ready_fd),
	OPT("--ready-fd=%d", ready_fd),
	OPT("--page-cache", page_cache),
	OPT("-h", show_help),
	OPT("--help", show_help),
	FUSE_OPT_END
};

/* fuse_opt reads a template "--storage %s" as a prefix: it would take
 * "--storage-patience 3" for --storage "-patience". So that flag is taken out
 * of argv before fuse_opt sees it. -1 when its value is missing. */
static int take_patience_flag(int *argc, char **argv, char **value)
{
	static const char name[] = "--storage-patience";
	int out = 1;

	for (int i = 1; i < *argc; i++) {
		if (strcmp(argv[i], name) == 0) {
			if (i + 1 >= *argc)
				return -1;
			free(*value);
			*value = xstrdup(argv[++i]);
		} else if (strncmp(argv[i], name, sizeof name - 1) == 0 && argv[i][sizeof name - 1] == '=') {
			free(*value);
			*value = xstrdup(argv[i] + sizeof name);
		} else {
			argv[out++] = argv[i];
		}
	}
	argv[out] = NULL;
	*argc = out;
	return 0;
}

static void usage(const char *prog)
{
	printf("usage: %s MOUNTPOINT --sched ENDPOINT --storage URL [--ready-fd N] [--log-file PATH] [-f] [-d] [-o OPTIONS]\n"
	       "\n"
	       "  --sched ENDPOINT   the scheduler: HOST:PORT (TCP, munge), unix:/path or\n"
	       "                     http://host:port (default: $PARSA_SCHED, else [cluster] sched\n"
	       "                     of parsa.conf, else the local socket)\n"
	       "  --storage URL      the job volume: /path, file:///path or\n"
	       "                     nfs://server/export[/folder][?timeout=SECONDS&patience=SECONDS]\n"
	       "  --storage-patience DURATION  how long I/O waits for a volume that does not\n"
	       "                     answer, then EIO (default 300s; 0: fail at once)\n"
	       "  --config FILE      cluster settings (default " PARSA_CONF_DEFAULT " if it exists):\n"
	       "                     [cluster] sched, storage, storage_patience, munge_socket,\n"
	       "                     admin_group\n"
	       "  --munge-socket PATH munged's socket, for a scheduler reached over TCP\n"
	       "  --admin-group GROUP members may write hosts/<h>/ctl and any job's ctl\n"
	       "  --ready-fd N       write \"ready\\n\" to descriptor N and close it once mounted\n"
	       "  --page-cache       keep out/ and data/ files in the kernel's page cache (allows\n"
	       "                     MAP_SHARED mmap; slower streaming). Default: direct I/O\n"
	       "  --log-file PATH    append the log to PATH (default: syslog, or stderr with -f;\n"
	       "                     parsa up: STATE/logs/fs.log)\n"
	       "  -f                 stay in the foreground (log to stderr)\n"
	       "  -d                 debug output (implies -f)\n"
	       "  -o OPTIONS         FUSE mount options; default_permissions is always on,\n"
	       "                     allow_other when run as root\n\n", prog);
	fuse_lib_help(NULL);
}

static char *default_sched(void)
{
	const struct passwd *pw = getpwuid(geteuid());
	const char *home = getenv("HOME");

	if ((!home || !*home) && pw)
		home = pw->pw_dir;
	return default_sched_endpoint(geteuid(), home, getenv("XDG_STATE_HOME"), getenv("PARSA_SCHED"),
				      default_system_state());
}

/* a is b or lies below it (both absolute, resolved). */
static int path_within(const char *a, const char *b)
{
	size_t n = strlen(b);

	if (n == 1)
		return 1;
	return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '/');
}

/* The daemon must never touch its own mount: it would wait for itself. Refuse
 * a storage folder or a scheduler socket inside the mount point, or a mount
 * point inside the storage. */
static int check_no_self_reference(const char *mountpoint, const char *storage, const char *sched)
{
	char mnt[PATH_MAX], real[PATH_MAX], sock[PATH_MAX];
	const char *local = NULL;
	char *dir, *slash;

	if (!realpath(mountpoint, mnt)) {
		log_warn("mount point %s", mountpoint);
		return -1;
	}
	if (strncmp(storage, "file://", 7) == 0)
		local = storage + 7;
	else if (storage[0] == '/')
		local = storage;
	if (local && realpath(local, real) &&
	    (path_within(real, mnt) || path_within(mnt, real))) {
		log_warnx("storage %s and mount point %s overlap: the mount would wait on itself; "
			  "keep the storage outside the mount", storage, mountpoint);
		errno = EINVAL;
		return -1;
	}
	if (strncmp(sched, "unix:", 5) == 0) {
		dir = xstrdup(sched + 5);
		slash = strrchr(dir, '/');
		if (slash && slash != dir)
			*slash = '\0';
		if (realpath(dir, sock) && path_within(sock, mnt)) {
			log_warnx("the scheduler's socket %s is inside the mount point %s", sched + 5, mountpoint);
			free(dir);
			errno = EINVAL;
			return -1;
		}
		free(dir);
	}
	return 0;
}

/* The storage acts for the caller of each request (NFS: AUTH_SYS). */
static void storage_identity(void *arg, struct backend_cred *cred)
{
	fs_caller_cred(arg, cred);
}

static void take(char **dst, const char *value)
{
	if (!*dst && value)
		*dst = strdup(value);
}

/* What the flags left unset comes from the cluster's config file. */
static int apply_config(struct options *opt, struct fs_ctx *fs, char **err)
{
	struct parsa_conf c;
	int ret = -1;

	if (parsa_conf_load(opt->config ? opt->config : PARSA_CONF_DEFAULT, !opt->config, &c, err) < 0)
		return -1;
	/* The order every program keeps: --sched, $PARSA_SCHED, [cluster] sched,
	 * the local socket (default_sched). */
	if (c.sched && !opt->sched && !(getenv("PARSA_SCHED") && *getenv("PARSA_SCHED")))
		opt->sched = parsa_endpoint(c.sched);
	take(&opt->storage, c.storage);
	if (!opt->storage_patience && c.storage_patience_ms >= 0)
		opt->storage_patience = xasprintf("%lld", (long long)(c.storage_patience_ms / 1000));
	take(&opt->munge_socket, c.munge_socket);
	take(&opt->admin_group, c.admin_group);
	/* Every API client of this process signs with this munged (api_client.h). */
	if (opt->munge_socket)
		setenv("PARSA_MUNGE_SOCKET", opt->munge_socket, 1);
	if (opt->sched && !strstr(opt->sched, "://") && strncmp(opt->sched, "unix:", 5) != 0) {
		char *full = parsa_endpoint(opt->sched);

		free(opt->sched);
		opt->sched = full;
	}
	if (opt->admin_group) {
		struct group gr, *res = NULL;
		char buf[16384];

		if (getgrnam_r(opt->admin_group, &gr, buf, sizeof buf, &res) != 0 || !res) {
			errprintf(err, "admin group '%s' does not exist on this host", opt->admin_group);
			goto out;
		}
		fs->admin_set = true;
		fs->admin_gid = gr.gr_gid;
	}
	ret = 0;
out:
	parsa_conf_free(&c);
	return ret;
}

/* The number after name= in the mount's options (max_read=N), or 0. */
static unsigned int option_number(const struct fuse_args *args, const char *name)
{
	unsigned int n = 0;

	for (int i = 0; i < args->argc; i++) {
		const char *at = strstr(args->argv[i], name);

		if (at)
			n = (unsigned int)strtoul(at + strlen(name), NULL, 10);
	}
	return n;
}

static int has_option(const struct fuse_args *args, const char *name)
{
	for (int i = 0; i < args->argc; i++)
		if (strstr(args->argv[i], name))
			return 1;
	return 0;
}

/* The kernel reads ahead at most the bdi's read_ahead_kb, 128 KiB for a new
 * FUSE mount, whatever max_readahead we asked for: raise it so a sequential
 * reader sends 1 MiB requests. The bdi is found through mountinfo, since the
 * daemon must not touch its own mount. Best effort: it needs root. */
static void raise_readahead(const char *mountpoint, unsigned int kb)
{
	FILE *in = fopen("/proc/self/mountinfo", "re");
	unsigned int major = 0, minor = 0, ma, mi;
	char line[4096], mnt[4096], path[128];
	bool found = false;
	int fd;

	if (!in)
		return;
	/* The last line for the mount point is the newest mount on it: ours. */
	while (fgets(line, sizeof line, in)) {
		if (sscanf(line, "%*d %*d %u:%u %*s %4095s", &ma, &mi, mnt) == 3 &&
		    strcmp(mnt, mountpoint) == 0) {
			major = ma;
			minor = mi;
			found = true;
		}
	}
	fclose(in);
	if (!found)
		return;
	snprintf(path, sizeof path, "/sys/class/bdi/%u:%u/read_ahead_kb", major, minor);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	snprintf(line, sizeof line, "%u\n", kb);
	if (write_all(fd, line, strlen(line)) < 0)
		log_debug("%s: %s", path, strerror(errno));
	close(fd);
}

static void signal_ready(int fd)
{
	if (fd < 0)
		return;
	if (write_all(fd, "ready\n", 6) < 0)
		log_warn("--ready-fd %d", fd);
	close(fd);
}

int main(int argc, char *argv[])
{
	struct options opt = { .ready_fd = -1 };
	int patience_ok = take_patience_flag(&argc, argv, &opt.storage_patience);
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts cmd = { 0 };
	struct fuse_loop_config *loop = NULL;
	struct fs_ctx fs = { 0 };
	struct fuse *fuse = NULL;
	struct storage_watch *watch = NULL;
	char *storage_name = NULL;
	unsigned int pending = 0;
	int mounted = 0, handlers = 0, ret = 1;
	char *unlinked_dir = NULL;
	char *err = NULL;

	if (patience_ok < 0) {
		fprintf(stderr, "parsafs: --storage-patience needs a duration (0, 30s, 5m)\n");
		goto out;
	}
	if (fuse_opt_parse(&args, &opt, option_spec, NULL) < 0)
		goto out;
	if (opt.show_help) {
		usage(argv[0]);
		ret = 0;
		goto out;
	}
	if (fuse_parse_cmdline(&args, &cmd) < 0)
		goto out;
	if (cmd.show_version) {
		printf("parsafs %s, libfuse %s\n", PARSA_VERSION, fuse_pkgversion());
		ret = 0;
		goto out;
	}
	log_init("parsafs", cmd.foreground || cmd.debug, cmd.debug ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO);
	/* A stream of its own: fuse_daemonize() points stderr at /dev/null. */
	if (opt.log_file && log_to_file(opt.log_file, &err) < 0) {
		fprintf(stderr, "parsafs: --log-file: %s\n", err);
		goto out;
	}
	if (!cmd.mountpoint) {
		fprintf(stderr, "parsafs: no mount point (see parsafs --help)\n");
		goto out;
	}
	if (apply_config(&opt, &fs, &err) < 0) {
		fprintf(stderr, "parsafs: %s\n", err);
		goto out;
	}
	if (!opt.storage) {
		fprintf(stderr, "parsafs: no storage: give --storage /path or nfs://server/export\n");
		goto out;
	}
	if (!opt.sched)
		opt.sched = default_sched();
	{
		uint64_t secs = DEFAULT_STORAGE_PATIENCE_S;

		if (opt.storage_patience && (parse_duration(opt.storage_patience, &secs) < 0 ||
					     secs > 7 * 86400)) {
			fprintf(stderr, "parsafs: --storage-patience %s: expected a duration such as 0, "
				"30s or 5m (at most 7d)\n", opt.storage_patience);
			goto out;
		}
		fs.storage_patience_ms = (int64_t)secs * 1000;
	}
	if (check_no_self_reference(cmd.mountpoint, opt.storage, opt.sched) < 0)
		goto out;

	/* Modes come from the kernel with the caller's umask applied; ours must
	 * not take bits away a second time. */
	umask(0);
	/* The data path allocates and frees blocks of up to 1 MiB and a little
	 * more all the time (libnfs's buffer for each reply, ours for each read):
	 * below the mmap threshold they are reused, above it each is mapped and
	 * its pages faulted in and zeroed, which was a third of the mount's CPU
	 * on the NFS random checker (1 MiB of page faults per operation). */
	mem_one_arena(FS_DATA_BLOCK_MAX);
	fs.mountpoint = realpath(cmd.mountpoint, NULL);
	fs.page_cache = opt.page_cache != 0;
	fs.uid = geteuid();
	fs.gid = getegid();
	clock_gettime(CLOCK_REALTIME, &fs.started);
	/* The volume as the mount names it (MOUNT/storage, the log): its
	 * URL without the options. */
	storage_name = xasprintf("%.*s", (int)strcspn(opt.storage, "?"), opt.storage);
	fs.storage_url = storage_name;
	/* A volume whose server is down is made all the same: the mount comes
	 * up and says so (MOUNT/storage). */
	fs.backend = backend_create(opt.storage, &err);
	if (!fs.backend) {
		fprintf(stderr, "parsafs: %s\n", err);
		goto out;
	}
	backend_set_identity(fs.backend, storage_identity, &fs);
	/* What start-up does on the volume must not wait for it: without an
	 * answer it is left to the probe thread (storage_watch.c). */
	if (!backend_health(fs.backend, NULL, NULL))
		pending |= STORAGE_PENDING_DATA;
	else if (data_dir_prepare(&fs) < 0) {
		if (backend_health(fs.backend, NULL, NULL))
			log_warn("cannot make data/ on the storage %s", opt.storage);
		else
			pending |= STORAGE_PENDING_DATA;
	}
	fs.link = sched_link_create(opt.sched, &err);
	if (!fs.link) {
		fprintf(stderr, "parsafs: %s\n", err);
		goto out;
	}
	fs.jobs = job_cache_create(fs.link, fs.backend, CACHE_TTL_MS);
	fs.queue = queue_dir_create(&fs);
	fs.hosts = hosts_dir_create(&fs, CACHE_TTL_MS);
	fs.schedules_queue = queue_dir_create_at(&fs, "schedules", API_SCHEDULES_PUT);
	fs.schedules = schedules_dir_create(&fs, CACHE_TTL_MS);
	queue_dir_on_accepted(fs.schedules_queue, schedules_dir_forget, fs.schedules);
	fs.inodes = inode_map_create();
	fs.ctl_notes = ctl_notes_create();
	if (read_pipes_init(&fs) < 0)
		log_warn("reads of the volume answer from memory (no thread key)");

	/* The kernel checks modes for us; root's mount is everyone's. */
	fuse_opt_add_arg(&args, "-odefault_permissions");
	if (geteuid() == 0 && !has_option(&args, "allow_other"))
		fuse_opt_add_arg(&args, "-oallow_other");
	/* On NFS, reads the size of the backend's chunks (storage/nfs_files.c
	 * READ_CHUNK), so that each leaves as the pipe it was spliced into; a
	 * local folder's files are spliced whatever the size, and 1 MiB reads
	 * read them faster. libfuse wants it as an option and from init (ops.c)
	 * alike. */
	fs.max_read = option_number(&args, "max_read=");
	if (!fs.max_read && strstr(opt.storage, "nfs://")) {
		fs.max_read = FS_READ_MAX;
		fuse_opt_add_arg(&args, "-omax_read=" STR(FS_READ_MAX));
	}
	if (!has_option(&args, "fsname="))
		fuse_opt_add_arg(&args, "-ofsname=parsa");
	fuse = fuse_new(&args, fs_operations(), sizeof(struct fuse_operations), &fs);
	if (!fuse)
		goto out;
	fs.fuse = fuse;
	if (fuse_mount(fuse, cmd.mountpoint) != 0)
		goto out;
	mounted = 1;
	/* Without the tap a spec's name lingers in the kernel's cache after its
	 * submission and costs its next writer a few round trips (queue_dir.c). */
	if (fs_wire_attach(fuse) < 0)
		log_warn("cannot read the mount's requests through the tap");
	if (fs.mountpoint)
		raise_readahead(fs.mountpoint, 1024);
	if (fuse_daemonize(cmd.foreground) != 0)
		goto out;
	if (chdir("/") < 0)
		log_warn("chdir /");
	/* Named by the pid that serves the mount, known only now. Without it
	 * an unlinked open file stays listed under its .fuse_hidden name. */
	unlinked_dir = backend_health(fs.backend, NULL, NULL) ? unlinked_prepare(fs.backend) : NULL;
	if (!unlinked_dir && !backend_health(fs.backend, NULL, NULL)) {
		/* Its name is known now; the folder is made once the volume answers. */
		unlinked_dir = unlinked_path();
		pending |= STORAGE_PENDING_UNLINKED;
	} else if (!unlinked_dir) {
		log_warn("cannot make a folder for unlinked open files on the storage %s", opt.storage);
	}
	fs.unlinked_dir = unlinked_dir;
	/* From now on I/O waits for a volume that does not answer (unless the
	 * URL says otherwise), and the probe keeps the state fresh. */
	fs.storage_patience_ms = backend_set_patience(fs.backend, fs.storage_patience_ms);
	watch = storage_watch_create(&fs, pending);
	if (!watch)
		log_warn("no storage probe thread: the volume's state changes with calls only");
	if (fuse_set_signal_handlers(fuse_get_session(fuse)) != 0)
		goto out;
	handlers = 1;
	log_info("mounted %s (storage %s, scheduler %s)", cmd.mountpoint, opt.storage, opt.sched);
	signal_ready(opt.ready_fd);
	opt.ready_fd = -1;

	if (cmd.singlethread) {
		ret = fuse_loop(fuse) == 0 ? 0 : 1;
	} else {
		loop = fuse_loop_cfg_create();
		fuse_loop_cfg_set_clone_fd(loop, (unsigned int)cmd.clone_fd);
		if (cmd.max_idle_threads != UINT_MAX)
			fuse_loop_cfg_set_idle_threads(loop, cmd.max_idle_threads);
		fuse_loop_cfg_set_max_threads(loop, cmd.max_threads > 10 ? cmd.max_threads : DEFAULT_MAX_THREADS);
		ret = fuse_loop_mt(fuse, loop) == 0 ? 0 : 1;
	}
	log_info("unmounting %s", cmd.mountpoint);
out:
	/* Nothing waits for the volume any more: the probe thread's own work
	 * (data/ in an outage) gives up at its next try. */
	if (fs.backend)
		backend_set_patience(fs.backend, 0);
	storage_watch_destroy(watch);
	if (opt.ready_fd >= 0)
		close(opt.ready_fd);
	if (loop)
		fuse_loop_cfg_destroy(loop);
	if (handlers)
		fuse_remove_signal_handlers(fuse_get_session(fuse));
	if (mounted)
		fuse_unmount(fuse);
	if (fuse)
		fuse_destroy(fuse);
	if (unlinked_dir)
		unlinked_finish(fs.backend, unlinked_dir);
	free(unlinked_dir);
	inode_map_destroy(fs.inodes);
	ctl_notes_destroy(fs.ctl_notes);
	schedules_dir_destroy(fs.schedules);
	queue_dir_destroy(fs.schedules_queue);
	hosts_dir_destroy(fs.hosts);
	queue_dir_destroy(fs.queue);
	job_cache_destroy(fs.jobs);
	sched_link_destroy(fs.link);
	backend_destroy(fs.backend);
	free((char *)fs.mountpoint);
	free(cmd.mountpoint);
	free(opt.sched);
	free(opt.storage);
	free(opt.storage_patience);
	free(opt.log_file);
	free(storage_name);
	free(opt.config);
	free(opt.munge_socket);
	free(opt.admin_group);
	free(err);
	fuse_opt_free_args(&args);
	return ret;
}
