/* A test facility: a backend that wraps any other and fails chosen ops with a
 * chosen errno, and/or delays every call, chosen by the volume URL
 *   fault:OPTIONS:INNER_URL     e.g. fault:eio=mkdir,enospc=open+pwrite:/srv/parsa
 * OPTIONS, comma-separated (docs/operators.md, "Fault injection"):
 *   ERRNO=OP[+OP...]  every call of these ops fails with ERRNO (eio, enospc,
 *                     eacces, ...; OP as in struct backend_ops, or "all")
 *   delay_ms=N        every call waits N ms before it goes to the inner backend
 *   after=N           the first N calls that would fail pass
 *   path=GLOB         only calls on paths matching GLOB fail (fnmatch without
 *                     FNM_PATHNAME: '*' also matches '/'); an open file's
 *                     calls go by the path it was opened with
 *   while=FILE        calls fail only while FILE (a local path, no ',' or
 *                     ':') exists: a test starts and ends an outage
 * A call that fails does nothing else (close still closes the inner file). */
#include "backend.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DELAY_MAX_MS 600000

enum fault_op {
	OP_GETATTR, OP_READDIR, OP_MKDIR, OP_UNLINK, OP_RMDIR, OP_RENAME, OP_SYMLINK, OP_MKNOD,
	OP_READLINK, OP_LINK, OP_CHMOD, OP_CHOWN, OP_TRUNCATE, OP_UTIMENS, OP_STATFS, OP_OPEN,
	OP_PREAD, OP_PWRITE, OP_FTRUNCATE, OP_FALLOCATE, OP_FSTAT, OP_FSYNC, OP_FCHMOD, OP_FCHOWN,
	OP_FUTIMENS, OP_FLUSH, OP_CLOSE, OP_PREAD_TAKE,
	OP_COUNT
};

/* The ops a fault can be set on: those that can fail (not fd, spread). */
static const char *const op_names[OP_COUNT] = {
	[OP_GETATTR] = "getattr", [OP_READDIR] = "readdir", [OP_MKDIR] = "mkdir",
	[OP_UNLINK] = "unlink", [OP_RMDIR] = "rmdir", [OP_RENAME] = "rename",
	[OP_SYMLINK] = "symlink", [OP_MKNOD] = "mknod", [OP_READLINK] = "readlink",
	[OP_LINK] = "link", [OP_CHMOD] = "chmod", [OP_CHOWN] = "chown",
	[OP_TRUNCATE] = "truncate", [OP_UTIMENS] = "utimens", [OP_STATFS] = "statfs",
	[OP_OPEN] = "open", [OP_PREAD] = "pread", [OP_PWRITE] = "pwrite",
	[OP_FTRUNCATE] = "ftruncate", [OP_FALLOCATE] = "fallocate", [OP_FSTAT] = "fstat",
	[OP_FSYNC] = "fsync", [OP_FCHMOD] = "fchmod", [OP_FCHOWN] = "fchown",
	[OP_FUTIMENS] = "futimens", [OP_FLUSH] = "flush", [OP_CLOSE] = "close",
	[OP_PREAD_TAKE] = "pread_take",
};

static const struct {
	const char *name;
	int err;
} errno_names[] = {
	{ "eio", EIO }, { "enospc", ENOSPC }, { "edquot", EDQUOT }, { "eacces", EACCES },
	{ "eperm", EPERM }, { "erofs", EROFS }, { "enoent", ENOENT }, { "eexist", EEXIST },
	{ "enotdir", ENOTDIR }, { "eisdir", EISDIR }, { "einval", EINVAL },
	{ "enametoolong", ENAMETOOLONG }, { "enotempty", ENOTEMPTY }, { "exdev", EXDEV },
	{ "efbig", EFBIG }, { "emlink", EMLINK }, { "etimedout", ETIMEDOUT }, { "estale", ESTALE },
	{ "eagain", EAGAIN }, { "enomem", ENOMEM }, { "ebusy", EBUSY }, { "eoverflow", EOVERFLOW },
	{ "eopnotsupp", EOPNOTSUPP },
};

struct fault_backend {
	struct backend base;    /* first: the generic header; base.ops is &ops */
	struct backend_ops ops; /* optional ops only where the inner backend has them */
	struct backend *inner;
	int fail[OP_COUNT];     /* the errno each op fails with; 0: it passes */
	char *path_glob;        /* NULL: any path */
	char *while_file;       /* NULL: always */
	unsigned long pass_first;       /* after=N */
	atomic_ulong would_fail;        /* calls that would have failed so far */
	int delay_ms;
};

struct backend_file {
	struct fault_backend *fb;
	struct backend_file *inner;     /* the inner backend's own, opaque here */
	char *path;                     /* as opened, for path= */
};

static struct fault_backend *fault(struct backend *b)
{
	return (struct fault_backend *)b;
}

static void delay(const struct fault_backend *fb)
{
	struct timespec until;

	if (fb->delay_ms <= 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += fb->delay_ms / 1000;
	until.tv_nsec += (long)(fb->delay_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
		;
}

/* Whether a call of op on path (or path2, the other name of a rename or a
 * link) is one the URL chose, without counting it. */
static bool chosen(const struct fault_backend *fb, enum fault_op op, const char *path, const char *path2)
{
	if (!fb->fail[op])
		return false;
	if (fb->while_file && access(fb->while_file, F_OK) != 0)
		return false;
	if (!fb->path_glob)
		return true;
	return (path && fnmatch(fb->path_glob, path, 0) == 0) ||
	       (path2 && fnmatch(fb->path_glob, path2, 0) == 0);
}

/* Every call comes through here first: the delay, then -1 with errno when
 * this call is to fail (after the first pass_first of them), else 0. */
static int enter(struct fault_backend *fb, enum fault_op op, const char *path, const char *path2)
{
	delay(fb);
	if (!chosen(fb, op, path, path2))
		return 0;
	if (atomic_fetch_add(&fb->would_fail, 1) < fb->pass_first)
		return 0;
	errno = fb->fail[op];
	return -1;
}

static int enter_file(struct backend_file *f, enum fault_op op)
{
	return enter(f->fb, op, f->path, NULL);
}

/* ---- the ops: the fault, then the inner backend's call ---- */

static void f_destroy(struct backend *b)
{
	struct fault_backend *fb = fault(b);

	backend_destroy(fb->inner);
	free(fb->path_glob);
	free(fb->while_file);
	free(fb);
}

static void f_set_identity(struct backend *b, backend_who_fn who, void *arg)
{
	backend_set_identity(fault(b)->inner, who, arg);
}

/* Patience, health and the probe are the inner volume's: passed through
 * without faults or delay (the probe must stay quick). */
static int64_t f_set_patience(struct backend *b, int64_t ms)
{
	return backend_set_patience(fault(b)->inner, ms);
}

static int f_health(struct backend *b, int64_t *down_since_epoch_s, char **reason)
{
	return backend_health(fault(b)->inner, down_since_epoch_s, reason);
}

static int f_probe(struct backend *b, int timeout_ms)
{
	return backend_probe(fault(b)->inner, timeout_ms);
}

static int f_getattr(struct backend *b, const char *path, struct stat *st)
{
	if (enter(fault(b), OP_GETATTR, path, NULL) < 0)
		return -1;
	return backend_getattr(fault(b)->inner, path, st);
}

static int f_readdir(struct backend *b, const char *path, backend_dirent_fn fn, void *arg)
{
	if (enter(fault(b), OP_READDIR, path, NULL) < 0)
		return -1;
	return backend_readdir(fault(b)->inner, path, fn, arg);
}

static int f_mkdir(struct backend *b, const struct backend_cred *cred, const char *path, mode_t mode)
{
	if (enter(fault(b), OP_MKDIR, path, NULL) < 0)
		return -1;
	return backend_mkdir(fault(b)->inner, cred, path, mode);
}

static int f_unlink(struct backend *b, const char *path)
{
	if (enter(fault(b), OP_UNLINK, path, NULL) < 0)
		return -1;
	return backend_unlink(fault(b)->inner, path);
}

static int f_rmdir(struct backend *b, const char *path)
{
	if (enter(fault(b), OP_RMDIR, path, NULL) < 0)
		return -1;
	return backend_rmdir(fault(b)->inner, path);
}

static int f_rename(struct backend *b, const char *from, const char *to, unsigned int flags)
{
	if (enter(fault(b), OP_RENAME, from, to) < 0)
		return -1;
	return backend_rename(fault(b)->inner, from, to, flags);
}

static int f_symlink(struct backend *b, const struct backend_cred *cred, const char *target, const char *path)
{
	if (enter(fault(b), OP_SYMLINK, path, NULL) < 0)
		return -1;
	return backend_symlink(fault(b)->inner, cred, target, path);
}

static int f_mknod(struct backend *b, const struct backend_cred *cred, const char *path, mode_t mode)
{
	if (enter(fault(b), OP_MKNOD, path, NULL) < 0)
		return -1;
	return backend_mknod(fault(b)->inner, cred, path, mode);
}

static ssize_t f_readlink(struct backend *b, const char *path, char *buf, size_t size)
{
	if (enter(fault(b), OP_READLINK, path, NULL) < 0)
		return -1;
	return backend_readlink(fault(b)->inner, path, buf, size);
}

static int f_link(struct backend *b, const char *from, const char *to)
{
	if (enter(fault(b), OP_LINK, from, to) < 0)
		return -1;
	return backend_link(fault(b)->inner, from, to);
}

static int f_chmod(struct backend *b, const char *path, mode_t mode)
{
	if (enter(fault(b), OP_CHMOD, path, NULL) < 0)
		return -1;
	return backend_chmod(fault(b)->inner, path, mode);
}

static int f_chown(struct backend *b, const char *path, uid_t uid, gid_t gid)
{
	if (enter(fault(b), OP_CHOWN, path, NULL) < 0)
		return -1;
	return backend_chown(fault(b)->inner, path, uid, gid);
}

static int f_truncate(struct backend *b, const char *path, off_t size)
{
	if (enter(fault(b), OP_TRUNCATE, path, NULL) < 0)
		return -1;
	return backend_truncate(fault(b)->inner, path, size);
}

static int f_utimens(struct backend *b, const char *path, const struct timespec tv[2])
{
	if (enter(fault(b), OP_UTIMENS, path, NULL) < 0)
		return -1;
	return backend_utimens(fault(b)->inner, path, tv);
}

static int f_statfs(struct backend *b, const char *path, struct statvfs *st)
{
	if (enter(fault(b), OP_STATFS, path, NULL) < 0)
		return -1;
	return backend_statfs(fault(b)->inner, path, st);
}

static int f_open(struct backend *b, const struct backend_cred *cred, const char *path,
		  int flags, mode_t mode, struct backend_file **file)
{
	struct fault_backend *fb = fault(b);
	struct backend_file *inner;

	*file = NULL;
	if (enter(fb, OP_OPEN, path, NULL) < 0)
		return -1;
	if (backend_open(fb->inner, cred, path, flags, mode, &inner) < 0)
		return -1;
	*file = xcalloc(1, sizeof **file);
	(*file)->fb = fb;
	(*file)->inner = inner;
	(*file)->path = xstrdup(path);
	return 0;
}

static ssize_t f_pread(struct backend_file *f, void *buf, size_t size, off_t off)
{
	if (enter_file(f, OP_PREAD) < 0)
		return -1;
	return backend_pread(f->fb->inner, f->inner, buf, size, off);
}

static ssize_t f_pwrite(struct backend_file *f, const void *buf, size_t size, off_t off)
{
	if (enter_file(f, OP_PWRITE) < 0)
		return -1;
	return backend_pwrite(f->fb->inner, f->inner, buf, size, off);
}

static int f_ftruncate(struct backend_file *f, off_t size)
{
	if (enter_file(f, OP_FTRUNCATE) < 0)
		return -1;
	return backend_ftruncate(f->fb->inner, f->inner, size);
}

static int f_fallocate(struct backend_file *f, int mode, off_t off, off_t len)
{
	if (enter_file(f, OP_FALLOCATE) < 0)
		return -1;
	return backend_fallocate(f->fb->inner, f->inner, mode, off, len);
}

static int f_fstat(struct backend_file *f, struct stat *st)
{
	if (enter_file(f, OP_FSTAT) < 0)
		return -1;
	return backend_fstat(f->fb->inner, f->inner, st);
}

static int f_fsync(struct backend_file *f, int datasync)
{
	if (enter_file(f, OP_FSYNC) < 0)
		return -1;
	return backend_fsync(f->fb->inner, f->inner, datasync);
}

static int f_fchmod(struct backend_file *f, const struct backend_cred *cred, mode_t mode)
{
	if (enter_file(f, OP_FCHMOD) < 0)
		return -1;
	return backend_fchmod(f->fb->inner, f->inner, cred, mode);
}

static int f_fchown(struct backend_file *f, uid_t uid, gid_t gid)
{
	if (enter_file(f, OP_FCHOWN) < 0)
		return -1;
	return backend_fchown(f->fb->inner, f->inner, uid, gid);
}

static int f_futimens(struct backend_file *f, const struct timespec tv[2])
{
	if (enter_file(f, OP_FUTIMENS) < 0)
		return -1;
	return backend_futimens(f->fb->inner, f->inner, tv);
}

static int f_flush(struct backend_file *f)
{
	if (enter_file(f, OP_FLUSH) < 0)
		return -1;
	return backend_flush(f->fb->inner, f->inner);
}

/* Closes the inner file whatever happens (backend.h), then fails if chosen. */
static int f_close(struct backend_file *f)
{
	int injected = enter_file(f, OP_CLOSE) < 0 ? errno : 0;
	int ret = backend_close(f->fb->inner, f->inner);
	int saved = errno;

	free(f->path);
	free(f);
	if (injected) {
		errno = injected;
		return -1;
	}
	errno = saved;
	return ret;
}

/* A descriptor handed out for splicing would carry the data past the faults:
 * none while reads or writes of this file are chosen to fail. */
static int f_fd(struct backend_file *f, size_t size, off_t off)
{
	if (chosen(f->fb, OP_PREAD, f->path, NULL) || chosen(f->fb, OP_PREAD_TAKE, f->path, NULL) ||
	    chosen(f->fb, OP_PWRITE, f->path, NULL))
		return -1;
	delay(f->fb);
	return backend_splice_fd(f->fb->inner, f->inner, size, off);
}

static ssize_t f_pread_take(struct backend_file *f, size_t size, off_t off, char **buf,
			    struct backend_pipe *pipe)
{
	*buf = NULL;
	if (pipe)
		pipe->used = false;
	if (enter_file(f, OP_PREAD_TAKE) < 0)
		return -1;
	return backend_pread_take(f->fb->inner, f->inner, size, off, buf, pipe);
}

static void f_spread(struct backend *b, const char *path)
{
	delay(fault(b));
	backend_spread(fault(b)->inner, path);
}

/* Every op; the optional ones are dropped where the inner backend lacks them,
 * so that the backend_*() calls answer for the pair as for the inner alone. */
static const struct backend_ops fault_ops = {
	.name = "fault",
	.destroy = f_destroy,
	.getattr = f_getattr,
	.readdir = f_readdir,
	.mkdir = f_mkdir,
	.unlink = f_unlink,
	.rmdir = f_rmdir,
	.rename = f_rename,
	.symlink = f_symlink,
	.mknod = f_mknod,
	.readlink = f_readlink,
	.link = f_link,
	.chmod = f_chmod,
	.chown = f_chown,
	.truncate = f_truncate,
	.utimens = f_utimens,
	.statfs = f_statfs,
	.open = f_open,
	.pread = f_pread,
	.pwrite = f_pwrite,
	.ftruncate = f_ftruncate,
	.fallocate = f_fallocate,
	.fstat = f_fstat,
	.fsync = f_fsync,
	.fchmod = f_fchmod,
	.fchown = f_fchown,
	.futimens = f_futimens,
	.flush = f_flush,
	.close = f_close,
	.fd = f_fd,
	.pread_take = f_pread_take,
	.spread = f_spread,
	.set_identity = f_set_identity,
	.set_patience = f_set_patience,
	.health = f_health,
	.probe = f_probe,
};

static void ops_like(struct backend_ops *ops, const struct backend_ops *inner)
{
	*ops = fault_ops;
	if (!inner->mknod)
		ops->mknod = NULL;
	if (!inner->fallocate)
		ops->fallocate = NULL;
	if (!inner->fchmod)
		ops->fchmod = NULL;
	if (!inner->fchown)
		ops->fchown = NULL;
	if (!inner->futimens)
		ops->futimens = NULL;
	if (!inner->fd)
		ops->fd = NULL;
	if (!inner->pread_take)
		ops->pread_take = NULL;
	if (!inner->spread)
		ops->spread = NULL;
	if (!inner->set_patience)
		ops->set_patience = NULL;
	if (!inner->health)
		ops->health = NULL;
	if (!inner->probe)
		ops->probe = NULL;
}

/* ---- the URL ---- */

static int parse_number(const char *url, const char *key, const char *value, unsigned long max,
			unsigned long *out, char **err)
{
	char *end;

	errno = 0;
	*out = strtoul(value, &end, 10);
	if (!*value || *end || errno || *value == '-' || *out > max) {
		errno = EINVAL;
		return errprintf(err, "storage '%s': %s must be a whole number from 0 to %lu", url, key, max);
	}
	return 0;
}

/* ERRNO=OP[+OP...]: set fb->fail for each op. */
static int parse_ops(struct fault_backend *fb, const char *url, int err_no, char *list, char **err)
{
	char *save = NULL;

	for (char *op = strtok_r(list, "+", &save); op; op = strtok_r(NULL, "+", &save)) {
		bool known = false;

		for (int i = 0; i < OP_COUNT; i++) {
			if (strcmp(op, "all") == 0 || strcmp(op, op_names[i]) == 0) {
				fb->fail[i] = err_no;
				known = true;
			}
		}
		if (!known) {
			errno = EINVAL;
			return errprintf(err, "storage '%s': no op '%s' to fail (getattr, readdir, mkdir, "
					 "open, pread, pwrite, ..., as in backend.h, or all)", url, op);
		}
	}
	return 0;
}

static int parse_option(struct fault_backend *fb, const char *url, char *opt, char **err)
{
	char *value = strchr(opt, '=');
	unsigned long n;

	if (!value || value == opt || !value[1]) {
		errno = EINVAL;
		return errprintf(err, "storage '%s': fault option '%s' is not NAME=VALUE", url, opt);
	}
	*value++ = '\0';
	if (strcmp(opt, "delay_ms") == 0) {
		if (parse_number(url, opt, value, DELAY_MAX_MS, &n, err) < 0)
			return -1;
		fb->delay_ms = (int)n;
		return 0;
	}
	if (strcmp(opt, "after") == 0)
		return parse_number(url, opt, value, 1000000000ul, &fb->pass_first, err);
	if (strcmp(opt, "path") == 0) {
		free(fb->path_glob);
		fb->path_glob = xstrdup(value);
		return 0;
	}
	if (strcmp(opt, "while") == 0) {
		free(fb->while_file);
		fb->while_file = xstrdup(value);
		return 0;
	}
	for (size_t i = 0; i < ARRAY_LEN(errno_names); i++)
		if (strcmp(opt, errno_names[i].name) == 0)
			return parse_ops(fb, url, errno_names[i].err, value, err);
	errno = EINVAL;
	return errprintf(err, "storage '%s': unknown fault option '%s' (known: delay_ms, after, path, while, "
			 "and an errno in lower case: eio, enospc, eacces, erofs, ...)", url, opt);
}

struct backend *backend_fault_create(const char *url, struct backend *inner, char **err)
{
	struct fault_backend *fb = xcalloc(1, sizeof *fb);
	char *opts = NULL, *save = NULL;
	const char *colon;
	int saved;

	if (strncmp(url, "fault:", 6) != 0 || !(colon = strchr(url + 6, ':')) || !colon[1]) {
		errno = EINVAL;
		errprintf(err, "storage '%s': expected fault:OPTIONS:URL (e.g. fault:eio=mkdir:/srv/parsa)", url);
		goto fail;
	}
	opts = xasprintf("%.*s", (int)(colon - (url + 6)), url + 6);
	for (char *opt = strtok_r(opts, ",", &save); opt; opt = strtok_r(NULL, ",", &save))
		if (parse_option(fb, url, opt, err) < 0)
			goto fail;
	fb->inner = inner;
	inner = NULL;
	ops_like(&fb->ops, fb->inner->ops);
	fb->base.ops = &fb->ops;
	log_warnx("storage: faults injected as %s asks (a test facility)", url);
	free(opts);
	return &fb->base;
fail:
	saved = errno;
	backend_destroy(inner);
	free(opts);
	free(fb->path_glob);
	free(fb->while_file);
	free(fb);
	errno = saved;
	return NULL;
}
