/* What the modules of the parsafs mount share: the mount's context (created by
 * main, reached through FUSE's private_data), a path matched against the tree's
 * table in ops.c, the handlers a kind of node implements, and open files with
 * their own small vtable. Handlers return -1 (or NULL) with errno; ops.c turns
 * that into -errno for FUSE, in one place. */
#ifndef PARSA_FS_NODE_H
#define PARSA_FS_NODE_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

struct backend;
struct sched_link;
struct job_cache;
struct queue_dir;
struct hosts_dir;
struct schedules_dir;
struct fuse;
struct inode_map;
struct ctl_notes;
struct node_ops;

/* One per mount. The pointers are set before the FUSE loop starts and only
 * read afterwards; each module guards its own state. */
struct backend_pipe;

struct fs_ctx {
	struct backend *backend;
	struct sched_link *link;
	struct job_cache *jobs;
	struct queue_dir *queue;
	struct hosts_dir *hosts;
	struct queue_dir *schedules_queue;   /* specs being written to schedules/ */
	struct schedules_dir *schedules;     /* schedules/<name>/ (fs/schedules_dir.h) */
	struct fuse *fuse;       /* NULL outside a mount (unit tests) */
	const char *mountpoint;  /* resolved; NULL outside a mount */
	uid_t uid;               /* the daemon's own: owner of the fixed folders */
	gid_t gid;
	bool admin_set;          /* admin_gid names the cluster's admin group: */
	gid_t admin_gid;         /* its members may write every ctl file */
	struct timespec started; /* times of the fixed folders */
	struct inode_map *inodes; /* names of multiply-linked files (fs/inode_map.h); NULL in unit tests */
	struct ctl_notes *ctl_notes; /* ctl nodes' last refusals (fs/ctl_file.h); NULL: none kept */
	const char *unlinked_dir; /* volume folder of this mount's unlinked open files, NULL: none */
	const char *storage_url; /* the volume as given (--storage), for what the mount says */
	int64_t storage_patience_ms; /* how long I/O waits for an unreachable volume (0: not),
				      * as the backend has it (the URL's wins) */
	bool page_cache;         /* out/ and data/ files through the kernel's page cache
				  * (parsafs --page-cache); else direct I/O: one copy less
				  * each way, but no MAP_SHARED mmap */
	unsigned int max_read;   /* the mount's largest read (-o max_read); 0: the kernel's */
	pthread_key_t read_pipe; /* each FUSE thread's pipe for its replies (ops.c) */
	bool read_pipe_ok;       /* read_pipe was made (fs_read_pipes_init) */
};

enum { FS_PATH_ARGS = 3 };

/* A path from FUSE matched against a pattern of the tree: the components that
 * '*' matched, in order, and what a final '**' matched. */
struct fs_path {
	const char *path;        /* "/jobs/42/out/warm/x" as FUSE gave it */
	const char *name;        /* its last component ("" for "/") */
	const char *rest;        /* what "**" matched: "warm/x", "" for none */
	char arg[FS_PATH_ARGS][NAME_MAX + 1];
	const struct node_ops *ops;
};

/* Adds one directory entry; returns non-zero when the reader's buffer is full. */
typedef int (*fs_fill_fn)(void *arg, const char *name, const struct stat *st);

struct fs_file;

/* What a kind of node does. NULL members get a sensible errno in ops.c:
 * EPERM for namespace changes, EACCES for opening or creating, ENOTDIR for
 * listing. The kernel already checked the mode bits (default_permissions)
 * except for root, so handlers refuse what even root must not do. */
struct node_ops {
	int (*getattr)(struct fs_ctx *fs, const struct fs_path *p, struct stat *st);
	int (*readdir)(struct fs_ctx *fs, const struct fs_path *p, fs_fill_fn fill, void *arg);
	/* flags as open(2) got them (O_CREAT and O_EXCL removed by the kernel). */
	int (*open)(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file);
	int (*create)(struct fs_ctx *fs, const struct fs_path *p, int flags, mode_t mode,
		      struct fs_file **file);
	ssize_t (*readlink)(struct fs_ctx *fs, const struct fs_path *p, char *buf, size_t size);
	int (*mkdir)(struct fs_ctx *fs, const struct fs_path *p, mode_t mode);
	int (*unlink)(struct fs_ctx *fs, const struct fs_path *p);
	int (*rmdir)(struct fs_ctx *fs, const struct fs_path *p);
	int (*symlink)(struct fs_ctx *fs, const char *target, const struct fs_path *p);
	/* mknod(2) and bind(2) of a unix socket: mode holds the file type. */
	int (*mknod)(struct fs_ctx *fs, const struct fs_path *p, mode_t mode, dev_t rdev);
	/* to has been matched too; the handler decides whether it may go there. */
	int (*rename)(struct fs_ctx *fs, const struct fs_path *from, const struct fs_path *to,
		      unsigned int flags);
	int (*link)(struct fs_ctx *fs, const struct fs_path *from, const struct fs_path *to);
	int (*chmod)(struct fs_ctx *fs, const struct fs_path *p, mode_t mode);
	int (*chown)(struct fs_ctx *fs, const struct fs_path *p, uid_t uid, gid_t gid);
	int (*truncate)(struct fs_ctx *fs, const struct fs_path *p, off_t size);
	int (*utimens)(struct fs_ctx *fs, const struct fs_path *p, const struct timespec tv[2]);
	/* Set on a family of nodes matched by one route (the files of
	 * jobs/<id>/): the handlers of the one named name, NULL for none. Its
	 * other members are not used. */
	const struct node_ops *(*by_name)(const char *name);
};

/* An open file. Members may be NULL: read/write -> EACCES, flush/fsync -> 0,
 * truncate -> EACCES, getattr -> by path, fallocate -> EOPNOTSUPP. */
struct fs_file_ops {
	ssize_t (*read)(struct fs_file *f, char *buf, size_t size, off_t off);
	ssize_t (*write)(struct fs_file *f, const char *buf, size_t size, off_t off);
	int (*flush)(struct fs_file *f);
	int (*fsync)(struct fs_file *f, int datasync);
	int (*truncate)(struct fs_file *f, off_t size);
	int (*fallocate)(struct fs_file *f, int mode, off_t off, off_t len);
	int (*getattr)(struct fs_file *f, struct stat *st);
	/* Optional: the attribute changes that come with a file handle and no
	 * path (nullpath_ok), or NULL: EACCES. */
	int (*chmod)(struct fs_file *f, mode_t mode);
	int (*chown)(struct fs_file *f, uid_t uid, gid_t gid);
	int (*utimens)(struct fs_file *f, const struct timespec tv[2]);
	void (*release)(struct fs_file *f);   /* frees f */
	/* Optional, the zero-copy data path (ops.c read_buf/write_buf): read_take
	 * returns up to size bytes at off in a malloc'ed *buf the caller frees,
	 * or (pipe not NULL) moves them into that pipe (storage/backend.h);
	 * splice_fd is a descriptor size bytes at off may be spliced to or from,
	 * or -1 (then read_take, if there is one). */
	ssize_t (*read_take)(struct fs_file *f, size_t size, off_t off, char **buf, struct backend_pipe *pipe);
	int (*splice_fd)(struct fs_file *f, size_t size, off_t off);
	/* Optional: the path (as FUSE names it) the file was opened by, whose
	 * other names' attributes a change through the file makes stale
	 * (fs_invalidate_others); NULL for files that cannot have several. */
	const char *(*path)(struct fs_file *f);
};

struct fs_file {
	const struct fs_file_ops *ops;
	bool direct_io;          /* bypass the page cache: content made at open */
	atomic_bool written;     /* written since the last flush (ops.c); zeroed at allocation */
};

/* A read-only file serving a buffer made at open; takes ownership of data. */
struct fs_file *text_file_create(char *data, size_t len);

/* Attributes of the nodes the mount makes up (not from the backend). */
void fs_stat_dir(const struct fs_ctx *fs, struct stat *st, mode_t mode, uid_t uid, gid_t gid);
void fs_stat_file(const struct fs_ctx *fs, struct stat *st, mode_t mode, uid_t uid, gid_t gid, off_t size);
/* Set the three times of st to epoch milliseconds ms (unless 0). */
void fs_stat_time(struct stat *st, int64_t ms);

/* Who asks: the uid/gid of the current FUSE request (the daemon's own
 * outside one, as in unit tests), whom new files and folders belong to. */
struct backend_cred;
struct fs_identity;
void fs_caller_cred(const struct fs_ctx *fs, struct backend_cred *cred);
/* Whether the caller of the current request has gid among its groups (true
 * outside a request: the daemon acting for itself). */
bool fs_caller_in_group(const struct fs_ctx *fs, gid_t gid);
/* Drop the kernel's cached attributes of path and of the other names of its
 * file (fs/inode_map.h): each name is its own kernel inode, so a change made
 * through one name, or behind the kernel's back, does not reach the others.
 * Nothing outside a mount. */
void fs_invalidate(const struct fs_ctx *fs, const char *path);
/* Drop the kernel's cached attributes of the other names of path's file, not
 * of path itself: the one place that keeps hard links' attributes true, after
 * an unlink or a rename over path (forget: path is no longer the file's
 * name; the others have a link fewer), a link, and a change of mode, owner,
 * size or times made through path (ops.c, attrs_changed), whose own new
 * attributes the kernel takes from the reply. It sends only inode
 * invalidations, which take no lock a handler's request holds (see
 * fs_invalidate). Nothing outside a mount, nor for a NULL path, nor for a
 * file not in the map (fs/inode_map.h: then its other names' attributes are
 * at most attr_timeout old). */
void fs_invalidate_others(const struct fs_ctx *fs, const char *path, bool forget);
/* The asking thread's id, 0 outside a request. */
/* Make the kernel forget the cached names below the top folder name
 * ("jobs"): every jobs/N, jobs/N/status, ... it looked up holds a node in
 * libfuse until the kernel forgets it, which an unpressed kernel never does,
 * so a mount that sees thousands of new jobs grows by each (issue 35). Names
 * in use (an open file, a shell's folder) stay. 0, or a negative errno; a no-op
 * outside a mount. Takes the root folder's lock in the kernel: call it from a
 * handler that holds no folder's (a flush, a release). */
int fs_forget_top_folder(const struct fs_ctx *fs, const char *name);
pid_t fs_caller_pid(const struct fs_ctx *fs);
/* The reader of the current request gave up (a signal). */
bool fs_interrupted(const struct fs_ctx *fs);
/* For the scheduler: uid, gid and the supplementary groups (read from /proc
 * by libfuse); _basic leaves the groups out, enough for reading what everyone
 * may read. Clear with fs_identity_clear(). */
void fs_identity_current(const struct fs_ctx *fs, struct fs_identity *who);
void fs_identity_basic(const struct fs_ctx *fs, struct fs_identity *who);

/* The inode number of a node the mount makes up (root, status, queue/, jobs/N/...):
 * a hash of its path with the top bit set. Stable across remounts and hosts,
 * needs no table, and lies where real inode numbers (ext4's 32 bits, XFS's
 * and NFS fileids in practice far below 2^63) do not go. */
uint64_t fs_virtual_ino(const char *path);

/* libfuse renames an open file that is unlinked to "<dir>/.fuse_hidden<16 hex>"
 * and removes it at the last close; volume folders keep such names in the
 * mount's unlinked folder. The prefix is reserved: users cannot create names
 * starting with it (EINVAL). is_hide_name: exactly the form libfuse makes. */
#define FS_HIDDEN_PREFIX ".fuse_hidden"
bool fs_is_hidden_name(const char *name);
bool fs_is_hide_name(const char *name);

/* Refuse an open for writing with EACCES: read-only even for root. */
int fs_check_read_only(int flags);

/* The truncate of a read-only file (`: > status`): EACCES. */
int fs_refuse_truncate(struct fs_ctx *fs, const struct fs_path *p, off_t size);

/* The job id of a path component: digits only, no leading zero; -1/ENOENT otherwise. */
int fs_parse_id(const char *text, int64_t *id);

#endif
