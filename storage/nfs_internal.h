/* What the files of the NFSv3 backend share (backend_nfs.c has the design):
 * the backend, connection, open-file and request structures, and each file's
 * calls, in the order they build on each other (conn < dcache < call < op <
 * pump < rsock < reg < paths < commit < files < fattr; dcache asks reg only whether a
 * file is open, reg asks fattr to send what another open file keeps and how
 * kept changes show, and stats counts for all). Only for storage/backend_nfs.c and nfs_*.c. */
#ifndef PARSA_NFS_INTERNAL_H
#define PARSA_NFS_INTERNAL_H

#include "backend.h"
#include "inflight.h"
#include "reply_spin.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>

#define RA_SLOTS 24                 /* chunks one file may hold */
#define WB_WINDOW (8u << 20)        /* write-behind bytes in flight per file */
#define DCACHE_BUCKETS 1024
#define ATTR_BUCKETS 1024
#define ATTR_TTL_MS 1000            /* cached attributes: fs/ops.c's attr_timeout */
#define REG_BUCKETS 256
#define PIPE_POOL 64                /* empty pipes kept for chunks */
#define NFS_NAME_MAX 255            /* a component; statfs says so too (f_namemax) */

struct fhbuf {
	uint32_t len;
	char val[NFS3_FHSIZE];
};

struct conn {
	struct nfs_context *nfs;
	struct rpc_context *rpc;
	struct fhbuf root;
	uint64_t rmax, wmax;
	int uid, gid;           /* the AUTH_SYS identity set on rpc */
	bool broken;            /* failed or timed out: destroy, never reuse */
	bool unsent;            /* a request could not be queued: our fault, not the server's */
	bool reused;            /* taken from the idle pool (it may have gone stale) */
	struct reply_spin *spin;        /* the backend's, for conn_wait */
	struct conn *next;      /* idle list */
};

/* A name in the cache (nfs_dcache.c). */
enum dcache_state { DCACHE_GONE, DCACHE_HANDLE, DCACHE_MISSING };

struct dcache_entry {
	char *path;
	enum dcache_state state;
	struct fhbuf fh;        /* DCACHE_HANDLE: the handle, its type and fileid */
	ftype3 type;
	uint64_t fileid;
	int64_t expires;        /* monotonic ms: the entry's end */
	bool have_attr;
	fattr3 attr;
	int64_t attr_expires;
	uint64_t seq;           /* attr_seq of attr; DCACHE_MISSING: ns_seq it was missed at */
	uint64_t changed;       /* ns_seq of our last change to this name */
	int64_t complete_until; /* a folder we made: every name in it is known till then */
	struct dcache_entry *next;
};

/* What this mount has written to a file but the server may not show yet:
 * stat must not see a file shrink while its writes are in flight, and a
 * write, read or SETATTR must not overtake an earlier write of the same bytes
 * (the server may apply requests in any order). All under nb->reg_lock. */
struct reg_entry {
	uint64_t fileid;
	int refs;               /* open files, and callers waiting on writes */
	uint64_t floor;         /* size at least this */
	struct inflight *writes;        /* every open file's writes in flight */
	uint64_t gen;           /* moves at each write sent or answered and each truncate */
	pthread_cond_t settled; /* a write of writes was answered, or pend_file let go */
	/* Attribute changes one open file keeps for a single SETATTR after its
	 * writes (nfs_fattr.c): set while it is the inode's only open file. */
	struct backend_file *pend_file;
	sattr3 pend_sa;
	struct backend_file *creator;   /* the open file whose open made it (until it closes) */
	struct reg_entry *next;
};

struct nfs_backend {
	struct backend base;    /* first: the generic header */
	char *url;              /* for libnfs (its options: nfsport, mountport...) */
	char *server;
	char *export;
	char *volume;           /* nfs://server/export, for messages */
	int timeout_ms;
	struct reply_spin *spin;        /* how long a reply is polled for before sleeping */
	_Atomic int64_t patience_ms;    /* backend_set_patience; 0: fail at once */
	bool patience_fixed;    /* the URL's patience=: set_patience leaves it */
	atomic_bool down;       /* the fast path of nfs_reachable() */
	pthread_mutex_t lock;   /* guards the seven below */
	struct conn *idle;
	size_t nidle;
	int64_t down_until;     /* monotonic ms: the server failed us just now */
	int64_t down_since;     /* realtime ms it stopped answering; 0: reachable */
	int64_t down_mono;      /* monotonic ms of the same moment */
	char *down_reason;      /* why, while down */
	struct dcache_entry *dcache[DCACHE_BUCKETS];
	size_t ndcache;
	uint64_t ns_seq;        /* counts our changes to names (nfs_dcache.c) */
	uint64_t attr_seq;      /* counts our changes to attributes */
	uint64_t attr_bucket[ATTR_BUCKETS];     /* attr_seq of the last change, by fileid */
	uint64_t attr_all;      /* attr_seq of the last change to every file */
	pthread_mutex_t reg_lock;
	struct reg_entry *reg[REG_BUCKETS];  /* protected by reg_lock */
	pthread_mutex_t pump_lock;           /* guards the pump's fields, here and in files */
	struct backend_file *pumped;         /* open files that did I/O */
	int pump_wake;                       /* eventfd: the pump's set changed */
	bool pump_running, pump_stop;
	pthread_t pump_thread;
	/* Kept writes (nfs_commit.c): their bytes across all open files, and
	 * the connections lost so far (conn_put of a broken one). */
	_Atomic uint64_t kept_total;
	_Atomic uint64_t breaks;
	/* Open files that moved HEAVY_BYTES or more (nfs_files.c); once the
	 * last of them closed and none opened again for TRIM_IDLE_MS (trim_at,
	 * monotonic ms; 0: nothing to do), the heap's free memory goes back
	 * (malloc_trim, from the probe: nfs_trim_idle). */
	_Atomic int heavy_open;
	_Atomic int64_t trim_at;
	/* Pipes chunks hold or the pool keeps (nfs_rsock.c), two descriptors
	 * each: at most pipes_max, a share of the descriptors the process may
	 * open. The pool: empty pipes, sized, for the next chunks. */
	_Atomic int pipes;
	int pipes_max;
	pthread_mutex_t pipe_lock;
	int pipe_pool[PIPE_POOL][2];
	int npipe_pool;
	/* nfs_stats.c: requests sent by NFSv3 procedure, and mounts
	 * (RPC_STATS_MOUNT); NULL unless counted. */
	_Atomic uint64_t *rpc_counts;
};

/* One chunk of read-ahead: [off, off + len) of the file. */
struct chunk {
	struct backend_file *f;
	uint64_t off;
	uint32_t len;
	uint32_t got;
	int pending;            /* 1 while the READ is in flight */
	bool eof, orphan;
	int err;
	char *buf;              /* the data, unless it is in the pipe */
	/* With a read socket (nfs_rsock.c): the pipe the data is spliced
	 * into (-1, -1: none; the write end closes once the reply is in), how
	 * much of it is there, the request's xid and the socket's list. */
	int pfd[2];
	uint32_t in_pipe;
	uint32_t xid;
	struct chunk *rs_next;
};

struct backend_file {
	struct nfs_backend *nb;
	pthread_mutex_t lock;   /* one caller at a time: it alone services f->c */
	struct fhbuf fh;
	struct backend_cred cred;
	struct reg_entry *reg;
	struct conn *c;         /* NULL until the first I/O, and after a failure */
	int inflight;           /* write requests in flight */
	uint64_t inflight_bytes;
	int werr;               /* the first write error; reported by flush/fsync/close */
	struct wreq *resend;    /* writes whose connection died, to send again (patience) */
	struct wreq *kept;      /* answered UNSTABLE, not yet committed (patience), newest first */
	uint64_t kept_bytes;
	uint64_t kept_seq;      /* counts writes kept (wreq.kseq) */
	uint64_t kept_breaks;   /* nb->breaks when kept was last empty */
	bool kept_stale;        /* answers with another verifier than some kept writes' */
	uint64_t wseq;          /* counts writes sent (wreq.seq) */
	int committing;         /* 1 while a COMMIT sent behind the writes is in flight */
	uint64_t commit_upto;   /* it covers the kept writes up to this kseq */
	bool unstable;          /* written since the last COMMIT */
	bool have_verf, verf_changed;
	char verf[NFS3_WRITEVERFSIZE];
	struct chunk *ra[RA_SLOTS];
	int nra;
	struct rsock *rs;       /* the read socket (nfs_rsock.c); NULL: none yet */
	bool rs_off;            /* none to be had: reads go through libnfs */
	int orphans;            /* read requests in flight nobody waits for */
	uint64_t last_end;      /* where the previous read ended */
	uint64_t eof_at;        /* a read saw the end here (UINT64_MAX: not yet) */
	uint64_t ra_gen;        /* reg->gen the read-ahead chunks were asked at */
	uint64_t pump_seq;      /* counts pump_state() calls (under lock) */
	uint64_t moved;         /* bytes read and written, up to HEAVY_BYTES */
	bool heavy;             /* counted in nb->heavy_open */
	/* Under nb->pump_lock: what the pump polls for this file. */
	struct backend_file *pump_next;
	bool pump_listed;
	bool pump_wanted;       /* the pump found the lock busy: wake it at unlock */
	int pump_fd;            /* -1: nothing in flight */
	short pump_events;
	uint64_t pump_applied;  /* pump_seq of the state in pump_fd/pump_events */
	/* What fstat answers without asking while dcache_attr_holds(attr_seq):
	 * the attributes its create left. */
	fattr3 attr;
	uint64_t attr_seq;
	int64_t attr_expires;
	bool created;           /* this open made the file: attr is its create's */
	char *path;             /* created: its name then (for the cache of names) */
	int pins;               /* reg_lock_creator callers that may still lock it (reg_lock) */
	struct backend_cred pend_cred;  /* who the kept attribute changes act as */
};

static inline struct nfs_backend *nfsb(struct backend *b)
{
	return (struct nfs_backend *)b;
}

/* ---- nfs_conn.c: errors and connections ---- */

int nfs_errno(int status);
int conn_wait(struct conn *c, const int *count, int target, int64_t deadline);
void conn_pump(struct conn *c);
void conn_close(struct conn *c);
struct conn *conn_open(struct nfs_backend *nb, int64_t deadline, char **err);
void nfs_server_failed(struct nfs_backend *nb);
/* The volume's health (backend_health): a call the server failed for want of
 * an answer, and one it answered. Each logs a line when the state changes. */
void nfs_unreachable(struct nfs_backend *nb, const char *reason);
void nfs_reachable(struct nfs_backend *nb);
/* One caller's patience across its tries (backend_set_patience): zeroed
 * before the first. After a failure for want of the server, patience_wait
 * sleeps the next pause and returns true, or false once the patience is
 * spent (or is 0); errno is kept. */
struct patience {
	int64_t give_up;        /* monotonic ms; 0: not started */
	int pause_ms;
};
bool patience_wait(struct nfs_backend *nb, struct patience *p);
/* Whether a caller may wait for the server (a patience is set). */
bool nfs_patient(struct nfs_backend *nb);
/* fail_fast: while the server has just failed (down-hold), fail at once
 * with EIO instead of mounting again. */
struct conn *conn_get(struct nfs_backend *nb, int64_t deadline, bool fail_fast);
char *conn_error(struct conn *c, const char *what);
void conn_put(struct nfs_backend *nb, struct conn *c);
void conn_as(struct conn *c, const struct backend_cred *cred);

/* ---- nfs_stats.c: requests counted by procedure (PARSA_NFS_RPC_COUNTS) ---- */

#define RPC_STATS_MOUNT 22          /* after NFS3_COMMIT (21): connections mounted */
#define RPC_STATS_SLOTS 23
void rpc_stats_open(struct nfs_backend *nb);
void rpc_stats_close(struct nfs_backend *nb);
void rpc_count(struct nfs_backend *nb, int proc);

/* ---- nfs_dcache.c: the cache of names by path (under nb->lock) ---- */

/* A folder's handle. */
bool dcache_get(struct nfs_backend *nb, const char *path, struct fhbuf *fh);
/* What is known of path: DCACHE_FULL (handle and attributes),
 * DCACHE_HANDLE_ONLY (the handle; of attr only type and fileid),
 * DCACHE_ABSENT (missing just now) or DCACHE_MISS (ask the server). */
enum { DCACHE_MISS, DCACHE_HANDLE_ONLY, DCACHE_FULL, DCACHE_ABSENT };
int dcache_lookup(struct nfs_backend *nb, const char *path, struct fhbuf *fh, fattr3 *attr);
void dcache_clear_locked(struct nfs_backend *nb);
/* A folder's handle (lookup_dir). */
void dcache_put(struct nfs_backend *nb, const char *path, const struct fhbuf *fh);
/* Where the cache stood when a request was sent: taken before sending, so
 * that what the reply says is not kept past a change of ours meanwhile. */
struct dcache_stamp {
	uint64_t ns, attr;
};
struct dcache_stamp dcache_stamp(struct nfs_backend *nb);
/* What a LOOKUP or READDIRPLUS said of path (attr may be NULL). */
void dcache_put_attr(struct nfs_backend *nb, const char *path, const struct fhbuf *fh,
		     const fattr3 *attr, struct dcache_stamp at);
void dcache_put_missing(struct nfs_backend *nb, const char *path, struct dcache_stamp at);
/* Attributes our own change left (a create's, a SETATTR's reply), the
 * request sent at at; kept when nothing else of ours changed the file
 * since. Returns the attr_seq they hold as of (for dcache_attr_holds), 0
 * when not kept. */
uint64_t dcache_put_mine(struct nfs_backend *nb, const char *path, const struct fhbuf *fh,
			 const fattr3 *attr, struct dcache_stamp at);
/* The same for a name the cache holds as attr's file already (an open
 * file's SETATTR, whose name may have changed since it was opened); false
 * when not kept (the caller moves the file's attributes: dcache_changed). */
bool dcache_put_mine_named(struct nfs_backend *nb, const char *path, const fattr3 *attr,
			   struct dcache_stamp at);
bool dcache_attr_holds(struct nfs_backend *nb, uint64_t fileid, uint64_t seq);
/* Our change to the name path (made, removed): it and its folder's
 * attributes are forgotten; the folder's (handle dir) are dir_attr where
 * the reply carried them (else NULL), the request sent at at. */
void dcache_forget(struct nfs_backend *nb, const char *path, const struct fhbuf *dir,
		   const fattr3 *dir_attr, struct dcache_stamp at);
/* A folder we just made: empty, so a name in it that the cache does not
 * hold is missing, for ATTR_TTL_MS (a create's LOOKUP costs nothing). */
void dcache_made_folder(struct nfs_backend *nb, const char *path);
/* Forget path and everything below it (rmdir), and its folder's
 * attributes as dcache_forget. */
void dcache_drop(struct nfs_backend *nb, const char *path, const struct fhbuf *dir,
		 const fattr3 *dir_attr, struct dcache_stamp at);
/* The same without the folder (rename: dcache_folder_changed for each
 * folder once). */
void dcache_drop_name(struct nfs_backend *nb, const char *path);
void dcache_folder_changed(struct nfs_backend *nb, const char *dir_path, const struct fhbuf *dir,
			   const fattr3 *dir_attr, struct dcache_stamp at);
/* Our change to the attributes of fileid, known under path. */
void dcache_touch(struct nfs_backend *nb, const char *path, uint64_t fileid);
/* Our change to fileid's attributes (every name of it shows it), or to
 * files we cannot name. */
void dcache_changed(struct nfs_backend *nb, uint64_t fileid);
void dcache_changed_all(struct nfs_backend *nb);

/* ---- nfs_call.c: one request, waited for ---- */

/* A request in flight and what its reply left us (copied: the reply's memory
 * is libnfs's and only valid in the callback). */
struct call {
	int pending;
	int rpc_status;
	int nfs_status;
	void (*take)(struct call *call, void *res);
	struct fhbuf fh;
	bool have_fh;
	fattr3 attr;
	bool have_attr;
	char *text;
	FSSTAT3resok fsstat;
	char verf[NFS3_WRITEVERFSIZE];
	/* READDIRPLUS */
	backend_dirent_fn fn;
	void *fn_arg;
	bool stop;
	cookie3 cookie;
	cookieverf3 cookieverf;
	bool eof;
	/* READDIRPLUS: the entries go to the cache of names too */
	struct nfs_backend *nb;
	const char *dir;
	struct dcache_stamp at;
	/* the folder's attributes after a change to a name in it (wcc) */
	fattr3 dir_attr;
	bool have_dir_attr;
	fattr3 dir2_attr;       /* RENAME: the folder it went to */
	bool have_dir2_attr;
};

struct op {
	struct nfs_backend *nb;
	struct conn *c;
	struct backend_cred cred;
	int64_t deadline;
	bool retried;           /* an earlier try may have been carried out (no answer) */
};

void call_cb(struct rpc_context *rpc, int status, void *data, void *arg);
void take_lookup(struct call *call, void *res);
void take_getattr(struct call *call, void *res);
void take_create(struct call *call, void *res);
void take_mkdir(struct call *call, void *res);
void take_readlink(struct call *call, void *res);
void take_fsstat(struct call *call, void *res);
void take_commit(struct call *call, void *res);
void take_readdir(struct call *call, void *res);
void take_remove(struct call *call, void *res);
void take_rmdir(struct call *call, void *res);
void take_symlink(struct call *call, void *res);
void take_mknod(struct call *call, void *res);
void take_link(struct call *call, void *res);
void take_rename(struct call *call, void *res);
void call_init(struct call *call, void (*take)(struct call *, void *));
int call_finish(struct op *op, struct call *call, int queued);
void set_fh(nfs_fh3 *to, const struct fhbuf *fh);
int rpc_lookup(struct op *op, const struct fhbuf *dir, const char *name, struct call *call);
int rpc_getattr(struct op *op, const struct fhbuf *fh, struct call *call);
/* after: the attributes the reply carries (wcc), when it does (else type 0). */
int rpc_setattr(struct op *op, const struct fhbuf *fh, const sattr3 *sa, fattr3 *after);
void attr_to_stat(const fattr3 *a, struct stat *st);
void sattr_time(set_atime *at, set_mtime *mt, const struct timespec tv[2]);
bool nfs_time_fits(const struct timespec *t);

/* ---- nfs_op.c: an operation by path, its identity and its handles ---- */

void whoami(struct nfs_backend *nb, const struct backend_cred *cred, struct backend_cred *out);
int check_path(const char *path);
int lookup_dir(struct op *op, const char *path, struct fhbuf *fh);
int lookup_parent(struct op *op, const char *path, struct fhbuf *dir, const char **name);
int lookup_path(struct op *op, const char *path, struct fhbuf *fh, fattr3 *attr, bool need_attr);
int run_op(struct nfs_backend *nb, const struct backend_cred *cred,
	   int (*fn)(struct op *op, void *arg), void *arg);

/* ---- nfs_pump.c: an open file's connection, and the pump ---- */

void file_drop_conn(struct backend_file *f);
int file_conn(struct backend_file *f);
bool file_retry(struct backend_file *f, struct patience *pat);
int file_wait(struct backend_file *f, const int *count, int left);
int file_drain(struct backend_file *f);
void file_unlock(struct backend_file *f);
void pump_forget(struct backend_file *f);
/* f's read socket (nfs_rsock.c), made once it reads as a stream (want);
 * one that failed or that the server closed is made anew. */
void file_rsock(struct backend_file *f, bool want);
/* Wait for ch's answer, on the read socket or the connection it went out on. */
int chunk_wait(struct backend_file *f, struct chunk *ch);
/* Whether f's connection or read socket failed. */
bool file_io_broken(const struct backend_file *f);
void pump_shutdown(struct nfs_backend *nb);

/* ---- nfs_rsock.c: an open file's READs on a socket of its own, spliced ---- */

struct rsock;
/* A connection to the server c is connected to, or NULL with errno. */
struct rsock *rsock_open(struct nfs_backend *nb, struct conn *c, int64_t deadline);
/* Every chunk still asked on it ends (orphans are freed, others get EIO). */
void rsock_close(struct rsock *rs);
/* Ask for ch (off, len; pending set), its data to go to a pipe of its own,
 * or to ch->buf where no pipe can be had. */
int rsock_read(struct rsock *rs, struct chunk *ch, const struct fhbuf *fh, const struct backend_cred *cred);
/* Service it until *count drops to target or the deadline passes; a socket
 * that fails or times out is broken. */
int rsock_wait(struct rsock *rs, const int *count, int target, int64_t deadline);
void rsock_pump(struct rsock *rs);
bool rsock_broken(const struct rsock *rs);
bool rsock_busy(const struct rsock *rs);
int rsock_fd(const struct rsock *rs);
short rsock_events(const struct rsock *rs);
/* A chunk's data out of its pipe into ch->buf (a reader wants it in memory). */
int chunk_to_memory(struct chunk *ch);
/* ch's data, all in its pipe, moved into to (empty); its pipe goes back to
 * the pool. -1: it did not all fit (then ch has it in memory, to is empty). */
int chunk_move_pipe(struct chunk *ch, const struct backend_pipe *to);
/* Throw away what a pipe holds (non-blocking read end). */
void pipe_empty(int rfd);
/* The pipes of the pool (vol_destroy). */
void pipe_pool_clear(struct nfs_backend *nb);
/* The share of the process's descriptors chunks' pipes may take. */
int rsock_pipes_max(void);
/* Whether rs, with nothing asked, was closed by the server (idle too long). */
bool rsock_stale(const struct rsock *rs);
void chunk_close_pipe(struct chunk *ch);
/* Free a chunk nobody waits for any more (its READ answered or cancelled). */
void chunk_free(struct chunk *ch);

/* ---- nfs_reg.c: open files by fileid, and the order of writes ---- */

struct reg_entry *reg_open(struct nfs_backend *nb, uint64_t fileid);
bool reg_is_open(struct nfs_backend *nb, uint64_t fileid);
void reg_free(struct reg_entry *e);
void reg_close(struct nfs_backend *nb, struct reg_entry *r);
void reg_size(struct nfs_backend *nb, struct reg_entry *r, uint64_t end, bool set);
void reg_truncated(struct nfs_backend *nb, uint64_t fileid, uint64_t size);
uint64_t reg_gen(struct nfs_backend *nb, struct reg_entry *r);
void attr_to_stat_floor(struct nfs_backend *nb, const fattr3 *a, struct stat *st);
struct inflight_range *reg_write_sent(struct backend_file *f, uint64_t off, uint32_t len);
void reg_write_done(struct backend_file *f, struct inflight_range *range);
bool reg_mine_overlap(struct backend_file *f, uint64_t off, uint64_t end);
int reg_wait(struct nfs_backend *nb, struct reg_entry *r, const struct backend_file *self,
	     uint64_t off, uint64_t end);
int reg_wait_fileid(struct nfs_backend *nb, uint64_t fileid);
/* Called holding no file's lock: the attribute changes another open file of
 * r than self keeps (nfs_fattr.c) are sent first. */
int reg_settle_others(struct nfs_backend *nb, struct reg_entry *r, const struct backend_file *self);
/* The open file whose open made fileid (set: f from now on; cleared by
 * f's close under f->lock, which then waits with reg_unpinned_wait before
 * freeing f). reg_lock_creator returns it locked (NULL: none), for
 * reg_unlock_creator; the caller holds no file's lock. */
void reg_set_creator(struct nfs_backend *nb, struct backend_file *f, bool set);
void reg_unpinned_wait(struct nfs_backend *nb, struct backend_file *f);
struct backend_file *reg_lock_creator(struct nfs_backend *nb, uint64_t fileid);
void reg_unlock_creator(struct nfs_backend *nb, struct backend_file *g);
/* The attributes of fileid without asking, while an open file keeps changes
 * that set its mtime (nfs_fattr.c): its create's, the kept changes, the size
 * written. False otherwise. */
bool reg_kept_stat(struct nfs_backend *nb, uint64_t fileid, struct stat *st);
bool reg_others_past(struct backend_file *f, uint64_t pos);

/* ---- nfs_paths.c: the operations by path ---- */

struct open_args {
	int flags;
	mode_t mode;
	const char *path;
	struct fhbuf fh;
	fattr3 attr;
	bool trusted;
	bool created;           /* do_create made it */
	struct dcache_stamp at; /* when its CREATE was sent */
};

int do_create(struct op *op, struct open_args *a, const struct fhbuf *dir, const char *name);
int vol_getattr(struct backend *b, const char *path, struct stat *st);
int vol_readdir(struct backend *b, const char *path, backend_dirent_fn fn, void *arg);
int vol_mkdir(struct backend *b, const struct backend_cred *cred, const char *path, mode_t mode);
int vol_unlink(struct backend *b, const char *path);
int vol_rmdir(struct backend *b, const char *path);
int vol_rename(struct backend *b, const char *from, const char *to, unsigned int flags);
int vol_symlink(struct backend *b, const struct backend_cred *cred, const char *target, const char *path);
ssize_t vol_readlink(struct backend *b, const char *path, char *buf, size_t size);
int vol_link(struct backend *b, const char *from, const char *to);
int vol_chmod(struct backend *b, const char *path, mode_t mode);
int vol_chown(struct backend *b, const char *path, uid_t uid, gid_t gid);
int vol_truncate(struct backend *b, const char *path, off_t size);
int vol_utimens(struct backend *b, const char *path, const struct timespec tv[2]);
int vol_statfs(struct backend *b, const char *path, struct statvfs *st);
int vol_mknod(struct backend *b, const struct backend_cred *cred, const char *path, mode_t mode);

/* ---- nfs_commit.c: write requests, kept until answered and until committed ---- */

/* What an open file has written is kept, with patience, until the server has
 * it on disk, and sent again after a lost connection or a server restart; the
 * memory it takes is bounded, with COMMITs sent behind the writes. */

/* With patience, answered UNSTABLE writes are kept until committed (as a
 * kernel client keeps their pages): a COMMIT goes out behind the writes once
 * a file keeps KEEP_COMMIT_AT bytes, and a writer waits for one once it keeps
 * KEEP_FILE_MAX, or KEEP_SQUEEZE while the mount keeps KEEP_TOTAL_MAX. */
#define KEEP_COMMIT_AT (16ull << 20)
#define KEEP_FILE_MAX (64ull << 20)
#define KEEP_SQUEEZE (4ull << 20)
#define KEEP_TOTAL_MAX (512ull << 20)

/* A WRITE in flight. With patience its bytes are kept (data) until it is
 * answered, so that it can be sent again on a new connection when the one
 * it went out on died (file_resend), and after an UNSTABLE answer until a
 * COMMIT with the answer's verifier (f->kept), so that it can be sent again
 * when the server restarted in between (file_commit); without, they are
 * libnfs's alone. */
struct wreq {
	struct backend_file *f;
	uint64_t off;
	uint32_t len;
	uint64_t seq;                   /* the order writes were first sent in */
	uint64_t kseq;                  /* the order they were kept in */
	char verf[NFS3_WRITEVERFSIZE];  /* of the answer, once kept */
	char *data;                     /* NULL: not kept */
	struct inflight_range *range;   /* in f->reg->writes while in flight */
	struct wreq *next;              /* f->resend or f->kept */
};

/* Under f->lock, at close: let go of what is kept, uncommitted. */
void kept_drop(struct backend_file *f);
/* Queue w on f->c (a live connection), its bytes from buf. */
int queue_write(struct backend_file *f, struct wreq *w, const void *buf);
int file_resend(struct backend_file *f);
void file_fail_resends(struct backend_file *f, int err);
void commit_behind(struct backend_file *f);
/* Under f->lock: every write answered and on the server's disk (COMMIT), the
 * kept ones sent again after a restart; 0 or -1 with errno (and f->werr). */
int file_commit(struct backend_file *f);
/* Whether f keeps more than its bound (a writer waits for a COMMIT). */
bool kept_over(const struct backend_file *f);

/* ---- nfs_files.c: open files, written behind and read ahead ---- */

/* The heap's free memory back to the system, if the mount has been without
 * heavy files long enough (called by vol_probe, every few seconds). */
void nfs_trim_idle(struct nfs_backend *nb);

/* Under f->lock: let go of the chunks read ahead (nfs_fattr.c too). */
void ra_drop(struct backend_file *f);
int vol_open(struct backend *b, const struct backend_cred *cred, const char *path,
	     int flags, mode_t mode, struct backend_file **file);
ssize_t vol_pread(struct backend_file *f, void *buf, size_t size, off_t off);
ssize_t vol_pread_take(struct backend_file *f, size_t size, off_t off, char **buf, struct backend_pipe *pipe);
ssize_t vol_pwrite(struct backend_file *f, const void *buf, size_t size, off_t off);
int vol_fsync(struct backend_file *f, int datasync);
int vol_flush(struct backend_file *f);
int vol_close(struct backend_file *f);

/* ---- nfs_fattr.c: an open file's attributes ---- */

/* Under f->lock: the attribute changes f keeps, sent in one SETATTR after
 * its writes; 0, or -1 with errno (also f->werr, for its close). */
int file_settle_attrs(struct backend_file *f);
/* Whether f keeps attribute changes (a peek, under f->lock). */
bool file_keeps_attrs(struct backend_file *f);
/* A SETATTR by path of fileid, acting as who: kept by the open file that
 * made it, where it may be (true); else false, for the caller to send. */
bool attrs_keep_by_fileid(struct nfs_backend *nb, uint64_t fileid, const struct backend_cred *who,
			  const sattr3 *sa);
/* a with the changes sa sets. */
void sattr_apply(fattr3 *a, const sattr3 *sa);

int vol_ftruncate(struct backend_file *f, off_t size);
int vol_fallocate(struct backend_file *f, int mode, off_t off, off_t len);
int vol_fstat(struct backend_file *f, struct stat *st);
int vol_fchmod(struct backend_file *f, const struct backend_cred *cred, mode_t mode);
int vol_fchown(struct backend_file *f, uid_t uid, gid_t gid);
int vol_futimens(struct backend_file *f, const struct timespec tv[2]);

#endif
