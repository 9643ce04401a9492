/* Storage behind the job folders: an ops table so that the local-directory
 * backend and the libnfs backend (issue 4) are interchangeable, and a
 * fault-injecting wrapper costs a few lines. Paths are relative to the volume
 * root ("jobs/42/out/warm/x"), never start with '/', never contain "..".
 * Every call takes the credentials of the person acting: files and folders are
 * created owned by them. Calls return 0 (or a count) or -1 with errno. */
#ifndef PARSA_BACKEND_H
#define PARSA_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

struct backend;
struct backend_file;

struct backend_cred {
	uid_t uid;
	gid_t gid;
};

/* Called once per directory entry ("." and ".." left out); return non-zero to
 * stop early. st may hold only st_ino and the file type bits of st_mode:
 * listing a folder of 100,000 entries must not cost a stat each. */
typedef int (*backend_dirent_fn)(void *arg, const char *name, const struct stat *st);

/* Who is acting when a call carries no credentials of its own: parsafs sets
 * it to the caller of the current FUSE request. A backend whose server checks
 * permissions itself (NFS, AUTH_SYS) asks it on every call; without it the
 * daemon acts as itself and may create entries for others (the scheduler
 * making a user's job folders). */
typedef void (*backend_who_fn)(void *arg, struct backend_cred *cred);

/* An empty pipe of the caller's that pread_take may move the bytes into
 * (used: it did; they are all there, and nothing else). */
struct backend_pipe {
	int rfd, wfd;
	bool used;
};

struct backend_ops {
	const char *name;
	void (*destroy)(struct backend *b);
	int (*getattr)(struct backend *b, const char *path, struct stat *st);
	int (*readdir)(struct backend *b, const char *path, backend_dirent_fn fn, void *arg);
	int (*mkdir)(struct backend *b, const struct backend_cred *cred, const char *path, mode_t mode);
	int (*unlink)(struct backend *b, const char *path);
	int (*rmdir)(struct backend *b, const char *path);
	int (*rename)(struct backend *b, const char *from, const char *to, unsigned int flags);
	int (*symlink)(struct backend *b, const struct backend_cred *cred, const char *target, const char *path);
	/* A FIFO, a unix socket or an empty regular file (mode holds the type),
	 * owned by cred. Device nodes are refused with EPERM whoever asks: the
	 * daemon runs as root, and a lab volume must not hand out a disk or
	 * /dev/mem to whoever can write to a job's out/. Other types: EINVAL. */
	int (*mknod)(struct backend *b, const struct backend_cred *cred, const char *path, mode_t mode);
	ssize_t (*readlink)(struct backend *b, const char *path, char *buf, size_t size);
	int (*link)(struct backend *b, const char *from, const char *to);
	int (*chmod)(struct backend *b, const char *path, mode_t mode);
	int (*chown)(struct backend *b, const char *path, uid_t uid, gid_t gid);
	int (*truncate)(struct backend *b, const char *path, off_t size);
	int (*utimens)(struct backend *b, const char *path, const struct timespec tv[2]);
	int (*statfs)(struct backend *b, const char *path, struct statvfs *st);
	/* open with O_CREAT creates the file owned by cred. */
	int (*open)(struct backend *b, const struct backend_cred *cred, const char *path,
		    int flags, mode_t mode, struct backend_file **file);
	ssize_t (*pread)(struct backend_file *f, void *buf, size_t size, off_t off);
	ssize_t (*pwrite)(struct backend_file *f, const void *buf, size_t size, off_t off);
	int (*ftruncate)(struct backend_file *f, off_t size);
	/* fallocate(2) on the open file, mode as there (keep size, punch hole,
	 * ...); EOPNOTSUPP where the storage cannot (NFSv3). */
	int (*fallocate)(struct backend_file *f, int mode, off_t off, off_t len);
	/* Attributes of an open file (it may have been unlinked meanwhile). */
	int (*fstat)(struct backend_file *f, struct stat *st);
	int (*fsync)(struct backend_file *f, int datasync);
	/* Optional: chmod, chown and utimens of an open file, which may have been
	 * unlinked or renamed meanwhile. fchmod acts as cred (NULL: the caller):
	 * clearing set-uid after another user's write is the owner's change. */
	int (*fchmod)(struct backend_file *f, const struct backend_cred *cred, mode_t mode);
	int (*fchown)(struct backend_file *f, uid_t uid, gid_t gid);
	int (*futimens)(struct backend_file *f, const struct timespec tv[2]);
	/* Reports errors of write-behind data; the file stays open. */
	int (*flush)(struct backend_file *f);
	/* Closes and frees the file whatever happens; returns the last write error. */
	int (*close)(struct backend_file *f);
	/* Optional, for zero-copy data paths. fd: a descriptor of the open file
	 * that size bytes at off may be spliced to or from (local folders), or -1
	 * when the backend would rather hand them over with pread_take.
	 * pread_take: like pread, but the data comes back in a malloc'ed buffer
	 * the caller frees (*buf), which a backend that already holds the bytes
	 * (NFS read-ahead) hands over without copying; or, where pipe is not
	 * NULL, possibly moved into that empty pipe of the caller's (pipe->used
	 * set, *buf NULL), for the caller to splice on (NFS read-ahead spliced
	 * from the socket). */
	int (*fd)(struct backend_file *f, size_t size, off_t off);
	ssize_t (*pread_take)(struct backend_file *f, size_t size, off_t off, char **buf,
			      struct backend_pipe *pipe);
	/* Optional, best effort: the folder's entries are independent trees
	 * (jobs/<id>), to be spread over the disk as top folders are (ext4:
	 * the Orlov "top directory" flag). */
	void (*spread)(struct backend *b, const char *path);
	/* Optional, for a backend that wraps another (backend_fault.c): the
	 * identity hook set on it (backend_set_identity) goes to the inner one. */
	void (*set_identity)(struct backend *b, backend_who_fn who, void *arg);
	/* Optional, for a volume behind a server (NFS): how long a call waits
	 * for a server that cannot be reached (backend_set_patience), whether
	 * it could be reached last time (backend_health), and one quick call
	 * to find out now (backend_probe). Without them: always reachable. */
	int64_t (*set_patience)(struct backend *b, int64_t ms);
	int (*health)(struct backend *b, int64_t *down_since_epoch_s, char **reason);
	int (*probe)(struct backend *b, int timeout_ms);
};

/* Every backend struct starts with this header. */
struct backend {
	const struct backend_ops *ops;
	backend_who_fn who;     /* set before use, then only read */
	void *who_arg;
};

void backend_set_identity(struct backend *b, backend_who_fn who, void *arg);

/* Patience, as a kernel hard mount has it: while the server cannot be reached
 * (connection refused, mount failed, no answer within the timeout, the
 * connection died), a call waits and tries again, pausing 0.2 s growing to
 * 2 s, for up to ms milliseconds, then fails with EIO (ETIMEDOUT when the
 * last try timed out). 0, every backend's default, fails at once: the
 * scheduler and the runner must never block on the volume. A URL's own
 * patience (nfs://...?patience=SECONDS) wins over this. Safe to call while
 * other threads use b; backends that cannot be unreachable ignore it.
 * Returns the patience now in effect (ms; 0 where there is none). */
int64_t backend_set_patience(struct backend *b, int64_t ms);

/* Whether the volume answered when last asked: 1 reachable; 0 unreachable,
 * with the realtime second it stopped answering in *down_since_epoch_s and
 * why in *reason (malloc'ed, the caller frees; either pointer may be NULL).
 * Kept in memory: it never touches the volume nor blocks. Volumes without a
 * server (local folders) are always reachable. */
int backend_health(struct backend *b, int64_t *down_since_epoch_s, char **reason);

/* Ask the volume now with one cheap call, without patience, within
 * timeout_ms (and regardless of a fail-fast hold), so that health is fresh
 * even when nobody does I/O. 0 if it answered, else -1 with errno. Backends
 * without a server: 0. */
int backend_probe(struct backend *b, int timeout_ms);

/* Open the volume named by url: "/local/path" or "file:///local/path" (local
 * folder), "nfs://server/export/path" (libnfs, issue 4), or, for tests,
 * "fault:OPTIONS:URL" (backend_fault_create). NULL with errno and *err on
 * failure. */
struct backend *backend_create(const char *url, char **err);
void backend_destroy(struct backend *b);

/* Local directory backend (backend_local.c). */
struct backend *backend_local_create(const char *root, char **err);

/* NFSv3 backend through libnfs (backend_nfs.c): url is
 * nfs://server/export[/folder][?timeout=SECONDS&patience=SECONDS&spin=MICROSECONDS&nfsport=N&mountport=N].
 * Whatever the server's state: it does not mount here, so a daemon starts
 * during an outage (the volume then reads unreachable until a call or a
 * probe gets an answer). NULL with errno EINVAL and *err only for a
 * malformed URL or bad options. */
struct backend *backend_nfs_create(const char *url, char **err);
/* An NFS volume URL's own options (the others go to libnfs). */
struct nfs_url_opts {
	int timeout_ms;         /* timeout=: how long one request may wait */
	int64_t patience_ms;    /* patience=; -1: not in the URL */
	int spin_us;            /* spin=: the longest poll for a reply before sleeping */
};
/* Split such a URL: server, export path, the URL libnfs gets (our own options
 * removed) and our options (defaults where the URL has none). Strings
 * malloc'ed; -1 with *err when bad. */
int backend_nfs_parse_url(const char *url, char **server, char **export, char **libnfs_url,
			  struct nfs_url_opts *opts, char **err);

/* A test facility (backend_fault.c): the backend of INNER_URL with faults,
 * url = fault:OPTIONS:INNER_URL, OPTIONS comma-separated: ERRNO=OP[+OP...]
 * (every call of these ops fails with ERRNO: eio=mkdir, enospc=open+pwrite,
 * OP "all" for every op), delay_ms=N (every call waits N ms first), after=N
 * (the first N calls that would fail pass), path=GLOB (only calls on such
 * paths fail), while=FILE (only while the local FILE exists). It takes
 * inner, the backend of INNER_URL (destroyed on failure too). NULL with
 * errno and *err on failure. */
struct backend *backend_fault_create(const char *url, struct backend *inner, char **err);

/* ---- the calls: every user of a backend goes through these, never b->ops ----
 * (one seam for a wrapper such as the fault-injecting one). An optional op the
 * backend lacks fails with the errno noted. */
int backend_getattr(struct backend *b, const char *path, struct stat *st);
int backend_readdir(struct backend *b, const char *path, backend_dirent_fn fn, void *arg);
int backend_mkdir(struct backend *b, const struct backend_cred *cred, const char *path, mode_t mode);
int backend_unlink(struct backend *b, const char *path);
int backend_rmdir(struct backend *b, const char *path);
int backend_rename(struct backend *b, const char *from, const char *to, unsigned int flags);
int backend_symlink(struct backend *b, const struct backend_cred *cred, const char *target, const char *path);
int backend_mknod(struct backend *b, const struct backend_cred *cred, const char *path, mode_t mode);  /* missing: EPERM */
ssize_t backend_readlink(struct backend *b, const char *path, char *buf, size_t size);
int backend_link(struct backend *b, const char *from, const char *to);
int backend_chmod(struct backend *b, const char *path, mode_t mode);
int backend_chown(struct backend *b, const char *path, uid_t uid, gid_t gid);
int backend_truncate(struct backend *b, const char *path, off_t size);
int backend_utimens(struct backend *b, const char *path, const struct timespec tv[2]);
int backend_statfs(struct backend *b, const char *path, struct statvfs *st);
int backend_open(struct backend *b, const struct backend_cred *cred, const char *path, int flags, mode_t mode, struct backend_file **file);
ssize_t backend_pread(struct backend *b, struct backend_file *f, void *buf, size_t size, off_t off);
ssize_t backend_pwrite(struct backend *b, struct backend_file *f, const void *buf, size_t size, off_t off);
int backend_ftruncate(struct backend *b, struct backend_file *f, off_t size);
int backend_fallocate(struct backend *b, struct backend_file *f, int mode, off_t off, off_t len);  /* missing: EOPNOTSUPP */
int backend_fstat(struct backend *b, struct backend_file *f, struct stat *st);
int backend_fsync(struct backend *b, struct backend_file *f, int datasync);
int backend_fchmod(struct backend *b, struct backend_file *f, const struct backend_cred *cred, mode_t mode);  /* missing: EOPNOTSUPP */
int backend_fchown(struct backend *b, struct backend_file *f, uid_t uid, gid_t gid);  /* missing: EOPNOTSUPP */
int backend_futimens(struct backend *b, struct backend_file *f, const struct timespec tv[2]);  /* missing: EOPNOTSUPP */
int backend_flush(struct backend *b, struct backend_file *f);
int backend_close(struct backend *b, struct backend_file *f);
/* A descriptor of f to splice size bytes at off to or from, or -1 (see fd above). */
int backend_splice_fd(struct backend *b, struct backend_file *f, size_t size, off_t off);
/* pread into a malloc'ed *buf the caller frees, without a copy where the
 * backend holds the bytes already (pread_take); NULL *buf on failure. With
 * pipe, the bytes may go into it instead (see pread_take above). */
ssize_t backend_pread_take(struct backend *b, struct backend_file *f, size_t size, off_t off, char **buf,
			   struct backend_pipe *pipe);
/* Best effort (see spread above); nothing where the backend cannot. */
void backend_spread(struct backend *b, const char *path);
/* Whether the backend can change an open file's mode (fchmod). */
bool backend_can_fchmod(const struct backend *b);

/* Create every missing folder of path, owned by cred, with mode. */
int backend_mkdir_p(struct backend *b, const struct backend_cred *cred, const char *path, mode_t mode);
/* Remove path and everything below it; a missing path is not an error. */
int backend_remove_tree(struct backend *b, const char *path);

#endif
