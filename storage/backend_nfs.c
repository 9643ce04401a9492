/* The NFSv3 backend, through libnfs (4.0: NFSv3 only; a context is not
 * thread-safe). Design:
 * - Connections: a pool of mounted libnfs contexts. A metadata call takes one
 *   exclusively for its duration; an open file takes one at its first read or
 *   write and keeps it until it is closed, so its pipelined requests and their
 *   replies stay on one connection that only its own (locked) caller services.
 * - Every wait is our own poll loop over nfs_get_fd/nfs_which_events/
 *   nfs_service with a deadline (the URL's timeout): nothing blocks longer. A
 *   connection that timed out or failed is destroyed (its requests are
 *   cancelled) and the next call mounts a fresh one, which is how the volume
 *   recovers by itself once the server is back.
 * - Requests are raw NFSv3 RPCs on file handles, with a short-lived cache of
 *   directory handles by path, so that a deep path costs one LOOKUP and not one
 *   per component. Each RPC carries AUTH_SYS credentials of the person acting
 *   (set on the connection just before the request is encoded; libnfs encodes
 *   the credential into each request when it is queued).
 * - Writes are UNSTABLE and written behind (up to WB_WINDOW bytes in flight per
 *   file); reads of a sequential stream are read ahead in chunks of the
 *   server's rtmax (RA_WINDOW bytes ahead). flush/close wait for every write
 *   reply and report the first error; fsync also COMMITs and checks the write
 *   verifier, so data fsync acknowledged is on the server's disk.
 * - A pump thread (one per backend, started with the first file I/O) takes
 *   the replies of files that nobody is waiting on and pushes their queued
 *   requests: between two reads of a reader (while it writes what it read
 *   somewhere) the read-ahead keeps arriving, and written-behind data keeps
 *   leaving. It only ever tries a file's lock; a file whose lock is busy is
 *   serviced by the holder, who wakes the pump when it lets go. */
#include "backend.h"
#include "inflight.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>

/* libnfs 4.0 exports nfs_get_fh() but keeps struct nfs_fh in a private
 * header; this is its layout there. conn_open() checks what it reads. */
struct nfs_fh {
	int len;
	char *val;
};

#define DEFAULT_TIMEOUT_MS 30000
#define DOWN_HOLD_MS 1000           /* after a failed mount or a time-out: fail at once */
#define WB_WINDOW (8u << 20)        /* write-behind bytes in flight per file */
#define RA_WINDOW (8u << 20)        /* read-ahead bytes beyond a sequential read */
#define RA_SLOTS 24                 /* chunks one file may hold */
#define POOL_IDLE_MAX 16            /* idle connections kept */
#define PUMP_MAX 128                /* files the pump watches at once; others wait for their callers */
#define DCACHE_TTL_MS 2000          /* how long a directory's handle is trusted */
#define DCACHE_BUCKETS 1024
#define DCACHE_MAX 8192
#define REG_BUCKETS 256
#define READDIR_DIRCOUNT 65536
#define READDIR_MAXCOUNT (1u << 20)
#define NFS_NAME_MAX 255            /* a component; statfs says so too (f_namemax) */
/* libnfs 4.0 encodes each call into a buffer of about ZDR_ENCODEBUF_MINSIZE
 * (4096) bytes (lib/pdu.c, rpc_allocate_pdu) and fails to queue one that
 * does not fit; only WRITE carries its data outside. A call starts with 68
 * bytes: six words of header, the AUTH_SYS credential libnfs builds on
 * rpc_set_uid (machine name "libnfs", no groups: 36 bytes) and an AUTH_NONE
 * verifier. Measured against ganesha: a SYMLINK call of 4,092 bytes so
 * counted is sent, one of 4,096 is not. */
#define RPC_CALL_MAX 4092
#define RPC_CALL_HEADER 68

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
	bool reused;            /* taken from the idle pool (it may have gone stale) */
	struct conn *next;      /* idle list */
};

struct dcache_entry {
	char *path;
	struct fhbuf fh;
	int64_t expires;
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
	pthread_cond_t settled; /* a write of writes was answered */
	struct reg_entry *next;
};

struct nfs_backend {
	struct backend base;    /* first: the generic header */
	char *url;              /* for libnfs (its options: nfsport, mountport...) */
	char *server;
	char *export;
	int timeout_ms;
	pthread_mutex_t lock;   /* guards the four below */
	struct conn *idle;
	size_t nidle;
	int64_t down_until;     /* monotonic ms: the server failed us just now */
	struct dcache_entry *dcache[DCACHE_BUCKETS];
	size_t ndcache;
	pthread_mutex_t reg_lock;
	struct reg_entry *reg[REG_BUCKETS];  /* protected by reg_lock */
	pthread_mutex_t pump_lock;           /* guards the pump's fields, here and in files */
	struct backend_file *pumped;         /* open files that did I/O */
	int pump_wake;                       /* eventfd: the pump's set changed */
	bool pump_running, pump_stop;
	pthread_t pump_thread;
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
	char *buf;
};

struct wreq {
	struct backend_file *f;
	uint32_t len;
	struct inflight_range *range;   /* in f->reg->writes */
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
	bool unstable;          /* written since the last COMMIT */
	bool have_verf, verf_changed;
	char verf[NFS3_WRITEVERFSIZE];
	struct chunk *ra[RA_SLOTS];
	int nra;
	int orphans;            /* read requests in flight nobody waits for */
	uint64_t last_end;      /* where the previous read ended */
	uint64_t eof_at;        /* a read saw the end here (UINT64_MAX: not yet) */
	uint64_t ra_gen;        /* reg->gen the read-ahead chunks were asked at */
	uint64_t pump_seq;      /* counts pump_state() calls (under lock) */
	/* Under nb->pump_lock: what the pump polls for this file. */
	struct backend_file *pump_next;
	bool pump_listed;
	bool pump_wanted;       /* the pump found the lock busy: wake it at unlock */
	int pump_fd;            /* -1: nothing in flight */
	short pump_events;
	uint64_t pump_applied;  /* pump_seq of the state in pump_fd/pump_events */
};

/* A file's connection as the pump should poll it. */
struct pump_state {
	int fd;
	short events;
	uint64_t seq;
};

static struct nfs_backend *nfsb(struct backend *b)
{
	return (struct nfs_backend *)b;
}

/* ---- errors ---- */

static const struct {
	int nfs;
	int err;
} nfs_errors[] = {
	{ NFS3ERR_PERM, EPERM }, { NFS3ERR_NOENT, ENOENT }, { NFS3ERR_IO, EIO },
	{ NFS3ERR_NXIO, ENXIO }, { NFS3ERR_ACCES, EACCES }, { NFS3ERR_EXIST, EEXIST },
	{ NFS3ERR_XDEV, EXDEV }, { NFS3ERR_NODEV, ENODEV }, { NFS3ERR_NOTDIR, ENOTDIR },
	{ NFS3ERR_ISDIR, EISDIR }, { NFS3ERR_INVAL, EINVAL }, { NFS3ERR_FBIG, EFBIG },
	{ NFS3ERR_NOSPC, ENOSPC }, { NFS3ERR_ROFS, EROFS }, { NFS3ERR_MLINK, EMLINK },
	{ NFS3ERR_NAMETOOLONG, ENAMETOOLONG }, { NFS3ERR_NOTEMPTY, ENOTEMPTY },
	{ NFS3ERR_DQUOT, EDQUOT }, { NFS3ERR_STALE, ESTALE }, { NFS3ERR_REMOTE, EREMOTE },
	{ NFS3ERR_BADHANDLE, ESTALE }, { NFS3ERR_NOTSUPP, EOPNOTSUPP },
	{ NFS3ERR_TOOSMALL, EIO }, { NFS3ERR_SERVERFAULT, EIO }, { NFS3ERR_BADTYPE, EINVAL },
	{ NFS3ERR_JUKEBOX, EAGAIN },
};

static int nfs_errno(int status)
{
	for (size_t i = 0; i < ARRAY_LEN(nfs_errors); i++)
		if (nfs_errors[i].nfs == status)
			return nfs_errors[i].err;
	return EIO;
}

/* ---- connections ---- */

/* Service c until *count drops to target or the deadline passes (callbacks
 * run in here and change *count). A connection that fails or times out is
 * marked broken. */
static int conn_wait(struct conn *c, const int *count, int target, int64_t deadline)
{
	while (*count > target) {
		int64_t left = deadline - time_mono_ms();
		struct pollfd p = { .fd = nfs_get_fd(c->nfs), .events = (short)nfs_which_events(c->nfs) };
		int rc;

		if (left <= 0) {
			c->broken = true;
			errno = ETIMEDOUT;
			return -1;
		}
		/* Wake now and then even without events: libnfs runs its
		 * reconnect timers from nfs_service. */
		rc = poll(&p, 1, left > 100 ? 100 : (int)left);
		if (rc < 0 && errno != EINTR) {
			c->broken = true;
			return -1;
		}
		if (nfs_service(c->nfs, rc > 0 ? p.revents : 0) < 0) {
			c->broken = true;
			errno = EIO;
			return -1;
		}
		/* A server that is gone refuses the connection at once, and
		 * libnfs reconnects from every nfs_service: without a pause that
		 * is a busy loop (a core until the deadline, measured). */
		if (rc > 0 && (p.revents & (POLLERR | POLLHUP))) {
			left = deadline - time_mono_ms();
			if (left > 0)
				poll(NULL, 0, left > 100 ? 100 : (int)left);
		}
	}
	return 0;
}

/* Push queued requests to the socket and take what replies arrived, without waiting. */
static void conn_pump(struct conn *c)
{
	struct pollfd p = { .fd = nfs_get_fd(c->nfs), .events = (short)nfs_which_events(c->nfs) };

	if (poll(&p, 1, 0) > 0 && nfs_service(c->nfs, p.revents) < 0)
		c->broken = true;
}

static void conn_close(struct conn *c)
{
	if (!c)
		return;
	/* Requests still queued are cancelled: their callbacks run now. */
	if (c->nfs)
		nfs_destroy_context(c->nfs);
	free(c);
}

static void ignore_cb(int status, struct nfs_context *nfs, void *data, void *arg)
{
	(void)status;
	(void)nfs;
	(void)data;
	(void)arg;
}

struct async_result {
	int pending;
	int status;
	struct fhbuf fh;
	char msg[256];
};

static void async_cb(int status, struct nfs_context *nfs, void *data, void *arg)
{
	struct async_result *r = arg;

	(void)nfs;
	r->status = status;
	if (status < 0 && data)
		snprintf(r->msg, sizeof r->msg, "%s", (const char *)data);
	if (status >= 0 && data && r->fh.len == UINT32_MAX) {
		struct nfs_fh *fh = nfs_get_fh(data);

		r->fh.len = 0;
		if (fh->len > 0 && fh->len <= NFS3_FHSIZE) {
			r->fh.len = (uint32_t)fh->len;
			memcpy(r->fh.val, fh->val, (size_t)fh->len);
		}
		/* NFSv3 close is local: it frees the handle and calls back at once. */
		nfs_close_async(nfs, data, ignore_cb, NULL);
	}
	r->pending = 0;
}

/* Mount a new connection: the MOUNT protocol, FSINFO, and the root's handle. */
static struct conn *conn_open(struct nfs_backend *nb, int64_t deadline, char **err)
{
	struct conn *c = xcalloc(1, sizeof *c);
	struct async_result r = { .pending = 1 };
	struct nfs_url *url;

	c->nfs = nfs_init_context();
	if (!c->nfs) {
		errno = ENOMEM;
		errprintf(err, "cannot create an NFS context");
		goto fail;
	}
	/* Parsing the URL on the context applies its options (ports, ...). */
	url = nfs_parse_url_dir(c->nfs, nb->url);
	if (!url) {
		errno = EINVAL;
		errprintf(err, "%s", nfs_get_error(c->nfs));
		goto fail;
	}
	nfs_destroy_url(url);
	if (nfs_mount_async(c->nfs, nb->server, nb->export, async_cb, &r) < 0) {
		errno = EIO;
		errprintf(err, "cannot mount %s:%s: %s", nb->server, nb->export, nfs_get_error(c->nfs));
		goto fail;
	}
	if (conn_wait(c, &r.pending, 0, deadline) < 0) {
		int saved = errno;

		errprintf(err, "cannot mount %s:%s: %s", nb->server, nb->export,
			  saved == ETIMEDOUT ? "no answer within the timeout" : nfs_get_error(c->nfs));
		errno = saved;
		goto fail;
	}
	if (r.status < 0) {
		errno = -r.status;
		errprintf(err, "cannot mount %s:%s: %s", nb->server, nb->export, r.msg);
		goto fail;
	}
	r = (struct async_result){ .pending = 1, .fh.len = UINT32_MAX };
	if (nfs_open_async(c->nfs, "/", O_RDONLY, async_cb, &r) < 0 ||
	    conn_wait(c, &r.pending, 0, deadline) < 0 || r.status < 0 || r.fh.len == 0) {
		errno = r.status < 0 ? -r.status : EIO;
		errprintf(err, "cannot open the root of %s:%s: %s", nb->server, nb->export,
			  r.msg[0] ? r.msg : strerror(errno));
		goto fail;
	}
	c->root = r.fh;
	c->rpc = nfs_get_rpc_context(c->nfs);
	c->rmax = nfs_get_readmax(c->nfs);
	c->wmax = nfs_get_writemax(c->nfs);
	if (c->rmax == 0 || c->rmax > (1u << 20))
		c->rmax = 1u << 20;
	if (c->wmax == 0 || c->wmax > (1u << 20))
		c->wmax = 1u << 20;
	c->uid = -1;
	c->gid = -1;
	return c;
fail:
	{
		int saved = errno;

		conn_close(c);
		errno = saved;
	}
	return NULL;
}

static void nfs_server_failed(struct nfs_backend *nb)
{
	pthread_mutex_lock(&nb->lock);
	nb->down_until = time_mono_ms() + DOWN_HOLD_MS;
	pthread_mutex_unlock(&nb->lock);
}

/* A connection for one caller: an idle one, or a new mount. */
static struct conn *conn_get(struct nfs_backend *nb, int64_t deadline)
{
	struct conn *c;
	char *err = NULL;
	bool down;

	for (;;) {
		pthread_mutex_lock(&nb->lock);
		c = nb->idle;
		if (c) {
			nb->idle = c->next;
			nb->nidle--;
		}
		pthread_mutex_unlock(&nb->lock);
		if (!c)
			break;
		/* An idle socket that is readable was closed by the server. */
		struct pollfd p = { .fd = nfs_get_fd(c->nfs), .events = POLLIN };

		if (poll(&p, 1, 0) == 0) {
			c->next = NULL;
			c->reused = true;
			return c;
		}
		conn_close(c);
	}
	/* A server that just failed is not asked again for a moment: a caller
	 * holding a lock (the scheduler's pass) must not wait a time-out each call. */
	pthread_mutex_lock(&nb->lock);
	down = nb->down_until > time_mono_ms();
	pthread_mutex_unlock(&nb->lock);
	if (down) {
		errno = EIO;
		return NULL;
	}
	c = conn_open(nb, deadline, &err);
	if (!c) {
		int saved = errno;

		nfs_server_failed(nb);
		log_warnx("storage nfs://%s%s: %s", nb->server, nb->export, err);
		free(err);
		/* The caller sees an I/O error, or the time out. */
		errno = saved == ETIMEDOUT ? ETIMEDOUT : EIO;
	}
	return c;
}

static void conn_put(struct nfs_backend *nb, struct conn *c)
{
	if (!c)
		return;
	if (c->broken || rpc_queue_length(c->rpc) > 0) {
		conn_close(c);
		return;
	}
	pthread_mutex_lock(&nb->lock);
	if (nb->nidle < POOL_IDLE_MAX) {
		c->next = nb->idle;
		nb->idle = c;
		nb->nidle++;
		c = NULL;
	}
	pthread_mutex_unlock(&nb->lock);
	conn_close(c);
}

/* Requests queued from now on carry cred. */
static void conn_as(struct conn *c, const struct backend_cred *cred)
{
	if (c->uid != (int)cred->uid || c->gid != (int)cred->gid) {
		/* rpc_set_uid rebuilds the authenticator with the current gid: set both. */
		c->gid = (int)cred->gid;
		rpc_set_gid(c->rpc, c->gid);
		c->uid = (int)cred->uid;
		rpc_set_uid(c->rpc, c->uid);
	}
}

/* ---- the directory-handle cache ---- */

static size_t hash_str(const char *s)
{
	size_t h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

static bool dcache_get(struct nfs_backend *nb, const char *path, struct fhbuf *fh)
{
	struct dcache_entry *e;
	int64_t now = time_mono_ms();
	bool found = false;

	pthread_mutex_lock(&nb->lock);
	for (e = nb->dcache[hash_str(path) % DCACHE_BUCKETS]; e; e = e->next) {
		if (strcmp(e->path, path) == 0) {
			if (e->expires > now) {
				*fh = e->fh;
				found = true;
			}
			break;
		}
	}
	pthread_mutex_unlock(&nb->lock);
	return found;
}

static void dcache_clear_locked(struct nfs_backend *nb)
{
	for (size_t i = 0; i < DCACHE_BUCKETS; i++) {
		while (nb->dcache[i]) {
			struct dcache_entry *e = nb->dcache[i];

			nb->dcache[i] = e->next;
			free(e->path);
			free(e);
		}
	}
	nb->ndcache = 0;
}

static void dcache_put(struct nfs_backend *nb, const char *path, const struct fhbuf *fh)
{
	size_t h = hash_str(path) % DCACHE_BUCKETS;
	struct dcache_entry *e;

	pthread_mutex_lock(&nb->lock);
	for (e = nb->dcache[h]; e; e = e->next)
		if (strcmp(e->path, path) == 0)
			break;
	if (!e) {
		/* Bounded: past the limit start again rather than track age. */
		if (nb->ndcache >= DCACHE_MAX)
			dcache_clear_locked(nb);
		e = xcalloc(1, sizeof *e);
		e->path = xstrdup(path);
		e->next = nb->dcache[h];
		nb->dcache[h] = e;
		nb->ndcache++;
	}
	e->fh = *fh;
	e->expires = time_mono_ms() + DCACHE_TTL_MS;
	pthread_mutex_unlock(&nb->lock);
}

/* Forget path and everything below it (rmdir, rename). */
static void dcache_drop(struct nfs_backend *nb, const char *path)
{
	size_t n = strlen(path);

	pthread_mutex_lock(&nb->lock);
	for (size_t i = 0; i < DCACHE_BUCKETS; i++) {
		struct dcache_entry **pe = &nb->dcache[i];

		while (*pe) {
			struct dcache_entry *e = *pe;

			if (strncmp(e->path, path, n) == 0 && (e->path[n] == '\0' || e->path[n] == '/')) {
				*pe = e->next;
				free(e->path);
				free(e);
				nb->ndcache--;
			} else {
				pe = &e->next;
			}
		}
	}
	pthread_mutex_unlock(&nb->lock);
}

/* ---- open files by fileid ---- */

/* Under reg_lock. */
static struct reg_entry *reg_find(struct nfs_backend *nb, uint64_t fileid)
{
	struct reg_entry *e;

	for (e = nb->reg[fileid % REG_BUCKETS]; e; e = e->next)
		if (e->fileid == fileid)
			break;
	return e;
}

static struct reg_entry *reg_open(struct nfs_backend *nb, uint64_t fileid)
{
	struct reg_entry **head = &nb->reg[fileid % REG_BUCKETS], *e;

	pthread_mutex_lock(&nb->reg_lock);
	e = reg_find(nb, fileid);
	if (!e) {
		e = xcalloc(1, sizeof *e);
		e->fileid = fileid;
		e->writes = inflight_create();
		pthread_cond_init(&e->settled, NULL);
		e->next = *head;
		*head = e;
	}
	e->refs++;
	pthread_mutex_unlock(&nb->reg_lock);
	return e;
}

static void reg_free(struct reg_entry *e)
{
	inflight_destroy(e->writes);
	pthread_cond_destroy(&e->settled);
	free(e);
}

static void reg_close(struct nfs_backend *nb, struct reg_entry *r)
{
	struct reg_entry **pe;

	pthread_mutex_lock(&nb->reg_lock);
	if (--r->refs == 0) {
		for (pe = &nb->reg[r->fileid % REG_BUCKETS]; *pe; pe = &(*pe)->next) {
			if (*pe == r) {
				*pe = r->next;
				reg_free(r);
				break;
			}
		}
	}
	pthread_mutex_unlock(&nb->reg_lock);
}

/* The order of writes, below with the file I/O: a write about to be sent
 * and its answer; waiting for the writes of other open files. */
static struct inflight_range *reg_write_sent(struct backend_file *f, uint64_t off, uint32_t len);
static void reg_write_done(struct backend_file *f, struct inflight_range *range);
static int reg_wait_fileid(struct nfs_backend *nb, uint64_t fileid);

/* floor = max(floor, end), or = end when set (a truncate: what other open
 * files read ahead is stale). */
static void reg_size(struct nfs_backend *nb, struct reg_entry *r, uint64_t end, bool set)
{
	pthread_mutex_lock(&nb->reg_lock);
	if (set || end > r->floor)
		r->floor = end;
	if (set)
		r->gen++;
	pthread_mutex_unlock(&nb->reg_lock);
}

static void reg_truncated(struct nfs_backend *nb, uint64_t fileid, uint64_t size)
{
	pthread_mutex_lock(&nb->reg_lock);
	for (struct reg_entry *e = nb->reg[fileid % REG_BUCKETS]; e; e = e->next) {
		if (e->fileid == fileid) {
			e->floor = size;
			e->gen++;
		}
	}
	pthread_mutex_unlock(&nb->reg_lock);
}

static uint64_t reg_gen(struct nfs_backend *nb, struct reg_entry *r)
{
	uint64_t gen;

	pthread_mutex_lock(&nb->reg_lock);
	gen = r->gen;
	pthread_mutex_unlock(&nb->reg_lock);
	return gen;
}

static uint64_t reg_floor(struct nfs_backend *nb, uint64_t fileid)
{
	uint64_t floor = 0;

	pthread_mutex_lock(&nb->reg_lock);
	for (struct reg_entry *e = nb->reg[fileid % REG_BUCKETS]; e; e = e->next)
		if (e->fileid == fileid)
			floor = e->floor;
	pthread_mutex_unlock(&nb->reg_lock);
	return floor;
}

/* ---- one request, waited for ---- */

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
};

static void call_cb(struct rpc_context *rpc, int status, void *data, void *arg)
{
	struct call *call = arg;

	(void)rpc;
	call->rpc_status = status;
	if (status == RPC_STATUS_SUCCESS && data) {
		/* Every NFSv3 result starts with its nfsstat3. */
		call->nfs_status = *(const int *)data;
		if (call->nfs_status == NFS3_OK && call->take)
			call->take(call, data);
	}
	call->pending = 0;
}

static void take_fh(struct call *call, const nfs_fh3 *fh)
{
	if (fh->data.data_len > 0 && fh->data.data_len <= NFS3_FHSIZE) {
		call->fh.len = fh->data.data_len;
		memcpy(call->fh.val, fh->data.data_val, fh->data.data_len);
		call->have_fh = true;
	}
}

static void take_attr(struct call *call, const post_op_attr *a)
{
	if (a->attributes_follow) {
		call->attr = a->post_op_attr_u.attributes;
		call->have_attr = true;
	}
}

static void take_lookup(struct call *call, void *res)
{
	LOOKUP3resok *ok = &((LOOKUP3res *)res)->LOOKUP3res_u.resok;

	take_fh(call, &ok->object);
	take_attr(call, &ok->obj_attributes);
}

static void take_getattr(struct call *call, void *res)
{
	call->attr = ((GETATTR3res *)res)->GETATTR3res_u.resok.obj_attributes;
	call->have_attr = true;
}

static void take_create(struct call *call, void *res)
{
	CREATE3resok *ok = &((CREATE3res *)res)->CREATE3res_u.resok;

	if (ok->obj.handle_follows)
		take_fh(call, &ok->obj.post_op_fh3_u.handle);
	take_attr(call, &ok->obj_attributes);
}

static void take_mkdir(struct call *call, void *res)
{
	MKDIR3resok *ok = &((MKDIR3res *)res)->MKDIR3res_u.resok;

	if (ok->obj.handle_follows)
		take_fh(call, &ok->obj.post_op_fh3_u.handle);
	take_attr(call, &ok->obj_attributes);
}

static void take_readlink(struct call *call, void *res)
{
	const char *data = ((READLINK3res *)res)->READLINK3res_u.resok.data;

	call->text = xstrdup(data ? data : "");
}

static void take_fsstat(struct call *call, void *res)
{
	call->fsstat = ((FSSTAT3res *)res)->FSSTAT3res_u.resok;
}

static void take_commit(struct call *call, void *res)
{
	memcpy(call->verf, ((COMMIT3res *)res)->COMMIT3res_u.resok.verf, NFS3_WRITEVERFSIZE);
}

static void attr_to_stat(const fattr3 *a, struct stat *st);

static void take_readdir(struct call *call, void *res)
{
	READDIRPLUS3resok *ok = &((READDIRPLUS3res *)res)->READDIRPLUS3res_u.resok;

	memcpy(call->cookieverf, ok->cookieverf, sizeof call->cookieverf);
	call->eof = ok->reply.eof;
	/* libnfs 4.0 decodes the entries at unaligned addresses: copy each one
	 * out before touching its fields. */
	for (const entryplus3 *next = ok->reply.entries; next && !call->stop; ) {
		entryplus3 e;
		struct stat st;

		memcpy(&e, next, sizeof e);
		next = e.nextentry;
		call->cookie = e.cookie;
		if (strcmp(e.name, ".") == 0 || strcmp(e.name, "..") == 0)
			continue;
		memset(&st, 0, sizeof st);
		if (e.name_attributes.attributes_follow)
			attr_to_stat(&e.name_attributes.post_op_attr_u.attributes, &st);
		st.st_ino = e.fileid;
		if (call->fn(call->fn_arg, e.name, &st))
			call->stop = true;
	}
}

/* ---- operations: a connection, a deadline and an identity ---- */

struct op {
	struct nfs_backend *nb;
	struct conn *c;
	struct backend_cred cred;
	int64_t deadline;
};

static void whoami(struct nfs_backend *nb, const struct backend_cred *cred, struct backend_cred *out)
{
	if (cred)
		*out = *cred;
	else if (nb->base.who)
		nb->base.who(nb->base.who_arg, out);
	else {
		out->uid = geteuid();
		out->gid = getegid();
	}
}

static void call_init(struct call *call, void (*take)(struct call *, void *))
{
	memset(call, 0, sizeof *call);
	call->pending = 1;
	call->take = take;
}

/* Wait for a request that was queued (queued < 0: it was not) and turn its
 * outcome into 0 or -1/errno. */
static int call_finish(struct op *op, struct call *call, int queued)
{
	if (queued < 0) {
		op->c->broken = true;
		errno = EIO;
		return -1;
	}
	if (conn_wait(op->c, &call->pending, 0, op->deadline) < 0)
		return -1;
	if (call->rpc_status != RPC_STATUS_SUCCESS) {
		op->c->broken = true;
		errno = call->rpc_status == RPC_STATUS_TIMEOUT ? ETIMEDOUT : EIO;
		return -1;
	}
	if (call->nfs_status != NFS3_OK) {
		errno = nfs_errno(call->nfs_status);
		return -1;
	}
	return 0;
}

static void set_fh(nfs_fh3 *to, const struct fhbuf *fh)
{
	to->data.data_len = fh->len;
	to->data.data_val = (char *)fh->val;
}

static int rpc_lookup(struct op *op, const struct fhbuf *dir, const char *name, struct call *call)
{
	LOOKUP3args args;

	memset(&args, 0, sizeof args);
	set_fh(&args.what.dir, dir);
	args.what.name = (char *)name;
	call_init(call, take_lookup);
	conn_as(op->c, &op->cred);
	return call_finish(op, call, rpc_nfs3_lookup_async(op->c->rpc, call_cb, &args, call));
}

static int rpc_getattr(struct op *op, const struct fhbuf *fh, struct call *call)
{
	GETATTR3args args;

	memset(&args, 0, sizeof args);
	set_fh(&args.object, fh);
	call_init(call, take_getattr);
	conn_as(op->c, &op->cred);
	return call_finish(op, call, rpc_nfs3_getattr_async(op->c->rpc, call_cb, &args, call));
}

static int rpc_setattr(struct op *op, const struct fhbuf *fh, const sattr3 *sa)
{
	SETATTR3args args;
	struct call call;

	memset(&args, 0, sizeof args);
	set_fh(&args.object, fh);
	args.new_attributes = *sa;
	call_init(&call, NULL);
	conn_as(op->c, &op->cred);
	return call_finish(op, &call, rpc_nfs3_setattr_async(op->c->rpc, call_cb, &args, &call));
}

/* Relative, no "." or "..", no empty components (backend.h). A component
 * over NAME_MAX is ENAMETOOLONG, as from Linux's own client (nfs_lookup
 * checks the server's namelen, 255 here): the volume cannot hold it. */
static int check_path(const char *path)
{
	const char *p = path;

	if (*path == '/')
		goto bad;
	while (*p) {
		const char *end = strchrnul(p, '/');
		size_t n = (size_t)(end - p);

		if (n > NFS_NAME_MAX) {
			errno = ENAMETOOLONG;
			return -1;
		}
		if (n == 0 || (n == 2 && p[0] == '.' && p[1] == '.') || (n == 1 && p[0] == '.'))
			goto bad;
		p = *end ? end + 1 : end;
		if (*end && !*p)
			goto bad;
	}
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

/* The handle of folder path ("" is the root): from the cache for the longest
 * known prefix, then one LOOKUP per remaining component. */
static int lookup_dir(struct op *op, const char *path, struct fhbuf *fh)
{
	size_t len = strlen(path), known = len, pos;
	char *copy = xstrdup(path);
	struct call call;
	int ret = -1;

	/* known: the length of the longest prefix whose handle is cached. */
	while (known > 0) {
		char *slash;

		copy[known] = '\0';
		if (dcache_get(op->nb, copy, fh))
			break;
		slash = memrchr(copy, '/', known);
		known = slash ? (size_t)(slash - copy) : 0;
	}
	memcpy(copy, path, len + 1);
	if (known == 0)
		*fh = op->c->root;
	for (pos = known == 0 ? 0 : known + 1; pos < len; ) {
		size_t e = pos;

		while (e < len && copy[e] != '/')
			e++;
		copy[e] = '\0';
		if (rpc_lookup(op, fh, copy + pos, &call) < 0)
			goto out;
		if (!call.have_fh) {
			errno = EIO;
			goto out;
		}
		if (call.have_attr && call.attr.type != NF3DIR) {
			errno = ENOTDIR;
			goto out;
		}
		*fh = call.fh;
		dcache_put(op->nb, copy, fh);
		copy[e] = '/';
		pos = e + 1;
	}
	ret = 0;
out:
	free(copy);
	return ret;
}

/* The handle of path's folder, and its last component (points into path). */
static int lookup_parent(struct op *op, const char *path, struct fhbuf *dir, const char **name)
{
	const char *slash;
	char *parent;
	int ret;

	if (check_path(path) < 0)
		return -1;
	if (!*path) {
		errno = EINVAL;
		return -1;
	}
	slash = strrchr(path, '/');
	if (!slash) {
		*name = path;
		*dir = op->c->root;
		return 0;
	}
	*name = slash + 1;
	parent = xasprintf("%.*s", (int)(slash - path), path);
	ret = lookup_dir(op, parent, dir);
	free(parent);
	return ret;
}

/* Handle and attributes of path itself, not following a final symlink. */
static int lookup_path(struct op *op, const char *path, struct fhbuf *fh, fattr3 *attr)
{
	struct fhbuf dir;
	const char *name;
	struct call call;

	if (check_path(path) < 0)
		return -1;
	if (!*path) {
		*fh = op->c->root;
		if (rpc_getattr(op, fh, &call) < 0)
			return -1;
		*attr = call.attr;
		return 0;
	}
	if (lookup_parent(op, path, &dir, &name) < 0 || rpc_lookup(op, &dir, name, &call) < 0)
		return -1;
	if (!call.have_fh) {
		errno = EIO;
		return -1;
	}
	*fh = call.fh;
	if (!call.have_attr && rpc_getattr(op, fh, &call) < 0)
		return -1;
	*attr = call.attr;
	if (attr->type == NF3DIR)
		dcache_put(op->nb, path, fh);
	return 0;
}

/* Run fn(op, arg) with a connection acting as cred (NULL: the caller of the
 * identity hook). Retried once on a fresh connection when the first one was
 * an idle one that turned out dead, or when a cached handle went stale. */
static int run_op(struct nfs_backend *nb, const struct backend_cred *cred,
		  int (*fn)(struct op *op, void *arg), void *arg)
{
	int ret = -1;

	for (int attempt = 0; attempt < 2; attempt++) {
		struct op op = { .nb = nb };
		bool again;

		whoami(nb, cred, &op.cred);
		op.deadline = time_mono_ms() + nb->timeout_ms;
		op.c = conn_get(nb, op.deadline);
		if (!op.c)
			return -1;
		ret = fn(&op, arg);
		if (ret < 0 && errno == ETIMEDOUT)
			nfs_server_failed(nb);
		again = ret < 0 && attempt == 0 &&
			((op.c->broken && op.c->reused && errno != ETIMEDOUT) || errno == ESTALE);
		if (ret < 0 && errno == ESTALE) {
			pthread_mutex_lock(&nb->lock);
			dcache_clear_locked(nb);
			pthread_mutex_unlock(&nb->lock);
		}
		{
			int saved = errno;

			conn_put(nb, op.c);
			errno = saved;
		}
		if (!again)
			break;
	}
	return ret;
}

/* ---- attributes ---- */

static void attr_to_stat(const fattr3 *a, struct stat *st)
{
	static const mode_t types[] = {
		[NF3REG] = S_IFREG, [NF3DIR] = S_IFDIR, [NF3BLK] = S_IFBLK, [NF3CHR] = S_IFCHR,
		[NF3LNK] = S_IFLNK, [NF3SOCK] = S_IFSOCK, [NF3FIFO] = S_IFIFO,
	};

	memset(st, 0, sizeof *st);
	st->st_mode = (a->type < ARRAY_LEN(types) ? types[a->type] : 0) | (a->mode & 07777);
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_size = (off_t)a->size;
	st->st_blocks = (blkcnt_t)((a->used + 511) / 512);
	/* Tools size their buffers by st_blksize: ask for the large requests we stream. */
	st->st_blksize = 1 << 20;
	st->st_ino = a->fileid;
	st->st_rdev = makedev(a->rdev.specdata1, a->rdev.specdata2);
	st->st_atim.tv_sec = a->atime.seconds;
	st->st_atim.tv_nsec = a->atime.nseconds;
	st->st_mtim.tv_sec = a->mtime.seconds;
	st->st_mtim.tv_nsec = a->mtime.nseconds;
	st->st_ctim.tv_sec = a->ctime.seconds;
	st->st_ctim.tv_nsec = a->ctime.nseconds;
}

/* The attributes, with a size no smaller than what this mount has in flight. */
static void attr_to_stat_floor(struct nfs_backend *nb, const fattr3 *a, struct stat *st)
{
	attr_to_stat(a, st);
	if (a->type == NF3REG) {
		uint64_t floor = reg_floor(nb, a->fileid);

		if ((uint64_t)st->st_size < floor)
			st->st_size = (off_t)floor;
	}
}

/* ---- the ops table ---- */

struct path_args {
	const char *path;
	const char *path2;
	struct stat *st;
	mode_t mode;
	backend_dirent_fn fn;
	void *fn_arg;
	char *buf;
	size_t size;
	ssize_t len;
	unsigned int flags;
	uid_t uid;
	gid_t gid;
	off_t off;
	const struct timespec *tv;
	struct statvfs *vfs;
	bool trusted;           /* may create as root for cred (the scheduler) */
};

static int do_getattr(struct op *op, void *arg)
{
	struct path_args *a = arg;
	struct fhbuf fh;
	fattr3 attr;

	if (lookup_path(op, a->path, &fh, &attr) < 0)
		return -1;
	attr_to_stat_floor(op->nb, &attr, a->st);
	return 0;
}

static int vol_getattr(struct backend *b, const char *path, struct stat *st)
{
	struct path_args a = { .path = path, .st = st };

	return run_op(nfsb(b), NULL, do_getattr, &a);
}

static int do_readdir(struct op *op, void *arg)
{
	struct path_args *a = arg;
	READDIRPLUS3args args;
	struct fhbuf dir;
	struct call call;

	if (check_path(a->path) < 0 || lookup_dir(op, a->path, &dir) < 0)
		return -1;
	memset(&args, 0, sizeof args);
	set_fh(&args.dir, &dir);
	args.dircount = READDIR_DIRCOUNT;
	args.maxcount = READDIR_MAXCOUNT;
	for (;;) {
		call_init(&call, take_readdir);
		call.fn = a->fn;
		call.fn_arg = a->fn_arg;
		conn_as(op->c, &op->cred);
		if (call_finish(op, &call, rpc_nfs3_readdirplus_async(op->c->rpc, call_cb, &args, &call)) < 0)
			return -1;
		if (call.stop || call.eof)
			return 0;
		args.cookie = call.cookie;
		memcpy(args.cookieverf, call.cookieverf, sizeof args.cookieverf);
	}
}

static int vol_readdir(struct backend *b, const char *path, backend_dirent_fn fn, void *arg)
{
	struct path_args a = { .path = path, .fn = fn, .fn_arg = arg };

	return run_op(nfsb(b), NULL, do_readdir, &a);
}

static void sattr_owner(sattr3 *sa, const struct backend_cred *cred)
{
	sa->uid.set_it = 1;
	sa->uid.set_uid3_u.uid = cred->uid;
	sa->gid.set_it = 1;
	sa->gid.set_gid3_u.gid = cred->gid;
}

/* Create with AUTH_SYS of the person acting, so the server checks and owns
 * the entry to them. The scheduler (no identity hook, running as root) makes
 * a user's job folder inside its own: that one is created as root with the
 * owner set in the same request. */
static bool may_create_for(struct op *op, const struct path_args *a)
{
	return a->trusted && geteuid() == 0 && op->cred.uid != 0 && (errno == EACCES || errno == EPERM);
}

static int do_mkdir(struct op *op, void *arg)
{
	struct path_args *a = arg;
	struct backend_cred cred = op->cred;
	MKDIR3args args;
	struct fhbuf dir;
	const char *name;
	struct call call;
	int rc;

	if (lookup_parent(op, a->path, &dir, &name) < 0)
		return -1;
	memset(&args, 0, sizeof args);
	set_fh(&args.where.dir, &dir);
	args.where.name = (char *)name;
	args.attributes.mode.set_it = 1;
	args.attributes.mode.set_mode3_u.mode = a->mode & 07777;
	call_init(&call, take_mkdir);
	conn_as(op->c, &op->cred);
	rc = call_finish(op, &call, rpc_nfs3_mkdir_async(op->c->rpc, call_cb, &args, &call));
	if (rc < 0 && may_create_for(op, a)) {
		struct backend_cred root = { 0, 0 };

		sattr_owner(&args.attributes, &cred);
		call_init(&call, take_mkdir);
		conn_as(op->c, &root);
		rc = call_finish(op, &call, rpc_nfs3_mkdir_async(op->c->rpc, call_cb, &args, &call));
	}
	if (rc == 0 && call.have_fh)
		dcache_put(op->nb, a->path, &call.fh);
	return rc;
}

static int vol_mkdir(struct backend *b, const struct backend_cred *cred, const char *path, mode_t mode)
{
	struct path_args a = { .path = path, .mode = mode, .trusted = b->who == NULL };

	return run_op(nfsb(b), cred, do_mkdir, &a);
}

static int do_remove(struct op *op, void *arg)
{
	struct path_args *a = arg;
	struct fhbuf dir;
	const char *name;
	struct call call;
	int rc;

	if (lookup_parent(op, a->path, &dir, &name) < 0)
		return -1;
	call_init(&call, NULL);
	conn_as(op->c, &op->cred);
	if (a->flags) {
		RMDIR3args args;

		memset(&args, 0, sizeof args);
		set_fh(&args.object.dir, &dir);
		args.object.name = (char *)name;
		rc = call_finish(op, &call, rpc_nfs3_rmdir_async(op->c->rpc, call_cb, &args, &call));
		dcache_drop(op->nb, a->path);
	} else {
		REMOVE3args args;

		memset(&args, 0, sizeof args);
		set_fh(&args.object.dir, &dir);
		args.object.name = (char *)name;
		rc = call_finish(op, &call, rpc_nfs3_remove_async(op->c->rpc, call_cb, &args, &call));
	}
	return rc;
}

static int vol_unlink(struct backend *b, const char *path)
{
	struct path_args a = { .path = path };

	return run_op(nfsb(b), NULL, do_remove, &a);
}

static int vol_rmdir(struct backend *b, const char *path)
{
	struct path_args a = { .path = path, .flags = 1 };

	return run_op(nfsb(b), NULL, do_remove, &a);
}

static int do_rename(struct op *op, void *arg)
{
	struct path_args *a = arg;
	struct fhbuf from, to, fh;
	const char *fname, *tname;
	RENAME3args args;
	struct call call;
	fattr3 attr;
	int rc;

	if (a->flags & ~(unsigned int)RENAME_NOREPLACE) {
		errno = EINVAL;
		return -1;
	}
	if (lookup_parent(op, a->path, &from, &fname) < 0 || lookup_parent(op, a->path2, &to, &tname) < 0)
		return -1;
	/* NFSv3 has no "do not replace": check first (not atomic, the best it allows). */
	if (a->flags & RENAME_NOREPLACE) {
		if (lookup_path(op, a->path2, &fh, &attr) == 0) {
			errno = EEXIST;
			return -1;
		}
		if (errno != ENOENT)
			return -1;
	}
	memset(&args, 0, sizeof args);
	set_fh(&args.from.dir, &from);
	args.from.name = (char *)fname;
	set_fh(&args.to.dir, &to);
	args.to.name = (char *)tname;
	call_init(&call, NULL);
	conn_as(op->c, &op->cred);
	rc = call_finish(op, &call, rpc_nfs3_rename_async(op->c->rpc, call_cb, &args, &call));
	dcache_drop(op->nb, a->path);
	dcache_drop(op->nb, a->path2);
	return rc;
}

static int vol_rename(struct backend *b, const char *from, const char *to, unsigned int flags)
{
	struct path_args a = { .path = from, .path2 = to, .flags = flags };

	return run_op(nfsb(b), NULL, do_rename, &a);
}

/* The XDR size of a string or opaque of n bytes. */
static size_t xdr_size(size_t n)
{
	return 4 + ((n + 3) & ~(size_t)3);
}

/* The bytes of the SYMLINK call do_symlink makes (RFC 1813: the folder's
 * handle, the name, a sattr3 with only the mode set, the target). A target
 * that makes it larger than libnfs can encode (RPC_CALL_MAX) would fail to be
 * queued, which looks like a broken connection (EIO): with a 4,095-byte
 * target, the longest Linux allows, it always does. */
static size_t symlink_call_size(const struct fhbuf *dir, const char *name, const char *target)
{
	const size_t sattr_mode_only = 8 + 5 * 4;

	return RPC_CALL_HEADER + xdr_size(dir->len) + xdr_size(strlen(name)) + sattr_mode_only +
	       xdr_size(strlen(target));
}

static int do_symlink(struct op *op, void *arg)
{
	struct path_args *a = arg;
	SYMLINK3args args;
	struct fhbuf dir;
	const char *name;
	struct call call;

	if (lookup_parent(op, a->path, &dir, &name) < 0)
		return -1;
	if (symlink_call_size(&dir, name, a->path2) > RPC_CALL_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memset(&args, 0, sizeof args);
	set_fh(&args.where.dir, &dir);
	args.where.name = (char *)name;
	args.symlink.symlink_attributes.mode.set_it = 1;
	args.symlink.symlink_attributes.mode.set_mode3_u.mode = 0777;
	args.symlink.symlink_data = (char *)a->path2;
	call_init(&call, NULL);
	conn_as(op->c, &op->cred);
	return call_finish(op, &call, rpc_nfs3_symlink_async(op->c->rpc, call_cb, &args, &call));
}

static int vol_symlink(struct backend *b, const struct backend_cred *cred, const char *target, const char *path)
{
	struct path_args a = { .path = path, .path2 = target };

	return run_op(nfsb(b), cred, do_symlink, &a);
}

static int do_readlink(struct op *op, void *arg)
{
	struct path_args *a = arg;
	READLINK3args args;
	struct call call;
	struct fhbuf fh;
	fattr3 attr;
	size_t n;

	if (lookup_path(op, a->path, &fh, &attr) < 0)
		return -1;
	if (attr.type != NF3LNK) {
		errno = EINVAL;
		return -1;
	}
	memset(&args, 0, sizeof args);
	set_fh(&args.symlink, &fh);
	call_init(&call, take_readlink);
	conn_as(op->c, &op->cred);
	if (call_finish(op, &call, rpc_nfs3_readlink_async(op->c->rpc, call_cb, &args, &call)) < 0)
		return -1;
	/* readlink(2): at most size bytes, no terminating NUL. */
	n = strlen(call.text);
	if (n > a->size)
		n = a->size;
	memcpy(a->buf, call.text, n);
	free(call.text);
	a->len = (ssize_t)n;
	return 0;
}

static ssize_t vol_readlink(struct backend *b, const char *path, char *buf, size_t size)
{
	struct path_args a = { .path = path, .buf = buf, .size = size };

	return run_op(nfsb(b), NULL, do_readlink, &a) < 0 ? -1 : a.len;
}

static int do_link(struct op *op, void *arg)
{
	struct path_args *a = arg;
	struct fhbuf fh, dir;
	const char *name;
	LINK3args args;
	struct call call;
	fattr3 attr;

	if (lookup_path(op, a->path, &fh, &attr) < 0 || lookup_parent(op, a->path2, &dir, &name) < 0)
		return -1;
	memset(&args, 0, sizeof args);
	set_fh(&args.file, &fh);
	set_fh(&args.link.dir, &dir);
	args.link.name = (char *)name;
	call_init(&call, NULL);
	conn_as(op->c, &op->cred);
	return call_finish(op, &call, rpc_nfs3_link_async(op->c->rpc, call_cb, &args, &call));
}

static int vol_link(struct backend *b, const char *from, const char *to)
{
	struct path_args a = { .path = from, .path2 = to };

	return run_op(nfsb(b), NULL, do_link, &a);
}

static void sattr_time(set_atime *at, set_mtime *mt, const struct timespec tv[2])
{
	const struct timespec *t[2] = { &tv[0], &tv[1] };
	time_how how[2];
	nfstime3 val[2];

	for (int i = 0; i < 2; i++) {
		val[i].seconds = (u_int)t[i]->tv_sec;
		val[i].nseconds = (u_int)t[i]->tv_nsec;
		how[i] = t[i]->tv_nsec == UTIME_OMIT ? DONT_CHANGE :
			 t[i]->tv_nsec == UTIME_NOW ? SET_TO_SERVER_TIME : SET_TO_CLIENT_TIME;
		if (how[i] != SET_TO_CLIENT_TIME)
			val[i].seconds = val[i].nseconds = 0;
	}
	at->set_it = how[0];
	at->set_atime_u.atime = val[0];
	mt->set_it = how[1];
	mt->set_mtime_u.mtime = val[1];
}

/* chmod, chown, truncate, utimens: one SETATTR on the path's handle. */
static int do_setattr(struct op *op, void *arg)
{
	struct path_args *a = arg;
	struct fhbuf fh;
	fattr3 attr;
	sattr3 sa;

	if (lookup_path(op, a->path, &fh, &attr) < 0)
		return -1;
	if (attr.type == NF3REG && reg_wait_fileid(op->nb, attr.fileid) < 0)
		return -1;
	memset(&sa, 0, sizeof sa);
	switch (a->flags) {
	case 'm':
		sa.mode.set_it = 1;
		sa.mode.set_mode3_u.mode = a->mode & 07777;
		break;
	case 'o':
		sa.uid.set_it = a->uid != (uid_t)-1;
		sa.uid.set_uid3_u.uid = a->uid;
		sa.gid.set_it = a->gid != (gid_t)-1;
		sa.gid.set_gid3_u.gid = a->gid;
		break;
	case 's':
		if (attr.type == NF3DIR) {
			errno = EISDIR;
			return -1;
		}
		if (attr.type != NF3REG) {
			errno = EINVAL;
			return -1;
		}
		sa.size.set_it = 1;
		sa.size.set_size3_u.size = (uint64_t)a->off;
		break;
	case 't':
		/* On a symlink (touch -h, cp -a) nfs-ganesha's VFS backend
		 * answers NFS3_OK and keeps the link's times ("Setting time on
		 * symlinks is illegal"). Linux's NFS client reports that
		 * success, and so do we: an error here makes cp -a fail on
		 * every tree with a symlink (docs/filesystem.md). */
		sattr_time(&sa.atime, &sa.mtime, a->tv);
		break;
	}
	if (rpc_setattr(op, &fh, &sa) < 0)
		return -1;
	if (a->flags == 's')
		reg_truncated(op->nb, attr.fileid, (uint64_t)a->off);
	return 0;
}

static int vol_chmod(struct backend *b, const char *path, mode_t mode)
{
	struct path_args a = { .path = path, .mode = mode, .flags = 'm' };

	return run_op(nfsb(b), NULL, do_setattr, &a);
}

static int vol_chown(struct backend *b, const char *path, uid_t uid, gid_t gid)
{
	struct path_args a = { .path = path, .uid = uid, .gid = gid, .flags = 'o' };

	return run_op(nfsb(b), NULL, do_setattr, &a);
}

static int vol_truncate(struct backend *b, const char *path, off_t size)
{
	struct path_args a = { .path = path, .off = size, .flags = 's' };

	if (size < 0) {
		errno = EINVAL;
		return -1;
	}
	return run_op(nfsb(b), NULL, do_setattr, &a);
}

/* Whether NFSv3's nfstime3 (unsigned 32-bit seconds) holds t. */
static bool nfs_time_fits(const struct timespec *t)
{
	if (t->tv_nsec == UTIME_NOW || t->tv_nsec == UTIME_OMIT)
		return true;
	return t->tv_sec >= 0 && (uint64_t)t->tv_sec <= UINT32_MAX;
}

static int vol_utimens(struct backend *b, const char *path, const struct timespec tv[2])
{
	struct timespec now[2] = { { 0, UTIME_NOW }, { 0, UTIME_NOW } };
	struct path_args a = { .path = path, .tv = tv ? tv : now, .flags = 't' };

	/* Before 1970 or from 2106 on the server would store the seconds cut
	 * to 32 bits (2^32 became 0): refuse, and change nothing. */
	if (!nfs_time_fits(&a.tv[0]) || !nfs_time_fits(&a.tv[1])) {
		errno = EOVERFLOW;
		return -1;
	}
	return run_op(nfsb(b), NULL, do_setattr, &a);
}

static int do_statfs(struct op *op, void *arg)
{
	struct path_args *a = arg;
	FSSTAT3args args;
	struct call call;
	const unsigned long bsize = 4096;

	memset(&args, 0, sizeof args);
	set_fh(&args.fsroot, &op->c->root);
	call_init(&call, take_fsstat);
	conn_as(op->c, &op->cred);
	if (call_finish(op, &call, rpc_nfs3_fsstat_async(op->c->rpc, call_cb, &args, &call)) < 0)
		return -1;
	memset(a->vfs, 0, sizeof *a->vfs);
	a->vfs->f_bsize = 1 << 20;
	a->vfs->f_frsize = bsize;
	a->vfs->f_blocks = call.fsstat.tbytes / bsize;
	a->vfs->f_bfree = call.fsstat.fbytes / bsize;
	a->vfs->f_bavail = call.fsstat.abytes / bsize;
	a->vfs->f_files = call.fsstat.tfiles;
	a->vfs->f_ffree = call.fsstat.ffiles;
	a->vfs->f_favail = call.fsstat.afiles;
	a->vfs->f_namemax = NFS_NAME_MAX;
	return 0;
}

static int vol_statfs(struct backend *b, const char *path, struct statvfs *st)
{
	struct path_args a = { .path = path, .vfs = st };

	/* The scheduler asks for space as itself: it must see the volume. */
	return run_op(nfsb(b), &(struct backend_cred){ geteuid(), getegid() }, do_statfs, &a);
}

/* ---- open files ---- */

struct open_args {
	int flags;
	mode_t mode;
	const char *path;
	struct fhbuf fh;
	fattr3 attr;
	bool trusted;
};

static int do_create(struct op *op, struct open_args *a, const struct fhbuf *dir, const char *name)
{
	struct backend_cred cred = op->cred;
	CREATE3args args;
	struct call call;
	int rc;

	memset(&args, 0, sizeof args);
	set_fh(&args.where.dir, dir);
	args.where.name = (char *)name;
	/* GUARDED: never touch a file somebody else created meanwhile. */
	args.how.mode = GUARDED;
	args.how.createhow3_u.obj_attributes.mode.set_it = 1;
	args.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = a->mode & 07777;
	call_init(&call, take_create);
	conn_as(op->c, &op->cred);
	rc = call_finish(op, &call, rpc_nfs3_create_async(op->c->rpc, call_cb, &args, &call));
	if (rc < 0 && may_create_for(op, &(struct path_args){ .trusted = a->trusted })) {
		struct backend_cred root = { 0, 0 };

		sattr_owner(&args.how.createhow3_u.obj_attributes, &cred);
		call_init(&call, take_create);
		conn_as(op->c, &root);
		rc = call_finish(op, &call, rpc_nfs3_create_async(op->c->rpc, call_cb, &args, &call));
	}
	if (rc < 0)
		return -1;
	if (!call.have_fh) {
		if (rpc_lookup(op, dir, name, &call) < 0)
			return -1;
		if (!call.have_fh) {
			errno = EIO;
			return -1;
		}
	}
	a->fh = call.fh;
	if (!call.have_attr && rpc_getattr(op, &a->fh, &call) < 0)
		return -1;
	a->attr = call.attr;
	return 0;
}

/* mknod: a FIFO or a socket with MKNOD, a regular file with CREATE (MKNOD
 * does not make those), as the person acting (or, for the scheduler, as root
 * for them, like mkdir). Devices are refused before asking (backend.h). */
static int do_mknod(struct op *op, void *arg)
{
	struct path_args *a = arg;
	struct backend_cred cred = op->cred;
	MKNOD3args args;
	struct fhbuf dir;
	const char *name;
	struct call call;
	sattr3 *sa;
	int rc;

	if (lookup_parent(op, a->path, &dir, &name) < 0)
		return -1;
	memset(&args, 0, sizeof args);
	set_fh(&args.where.dir, &dir);
	args.where.name = (char *)name;
	switch (a->mode & S_IFMT) {
	case S_IFREG: {
		struct open_args oa = { .mode = a->mode, .path = a->path, .trusted = a->trusted };

		return do_create(op, &oa, &dir, name);
	}
	case S_IFIFO:
		args.what.type = NF3FIFO;
		sa = &args.what.mknoddata3_u.pipe_attributes;
		break;
	case S_IFSOCK:
		args.what.type = NF3SOCK;
		sa = &args.what.mknoddata3_u.sock_attributes;
		break;
	default:
		errno = EINVAL;
		return -1;
	}
	sa->mode.set_it = 1;
	sa->mode.set_mode3_u.mode = a->mode & 07777;
	call_init(&call, NULL);
	conn_as(op->c, &op->cred);
	rc = call_finish(op, &call, rpc_nfs3_mknod_async(op->c->rpc, call_cb, &args, &call));
	if (rc < 0 && may_create_for(op, a)) {
		struct backend_cred root = { 0, 0 };

		sattr_owner(sa, &cred);
		call_init(&call, NULL);
		conn_as(op->c, &root);
		rc = call_finish(op, &call, rpc_nfs3_mknod_async(op->c->rpc, call_cb, &args, &call));
	}
	return rc;
}

static int vol_mknod(struct backend *b, const struct backend_cred *cred, const char *path, mode_t mode)
{
	struct path_args a = { .path = path, .mode = mode, .trusted = b->who == NULL };

	if (S_ISCHR(mode) || S_ISBLK(mode)) {
		errno = EPERM;
		return -1;
	}
	return run_op(nfsb(b), cred, do_mknod, &a);
}

static int do_open(struct op *op, void *arg)
{
	struct open_args *a = arg;
	int acc = a->flags & O_ACCMODE;
	struct fhbuf dir;
	const char *name;
	struct call call;
	bool found = false;

	if (lookup_parent(op, a->path, &dir, &name) < 0)
		return -1;
	for (int tries = 0; tries < 3 && !found; tries++) {
		/* Creating: try it first (a new file costs one request), and open
		 * what is there only when it exists already. */
		if ((a->flags & O_CREAT) && tries == 0) {
			if (do_create(op, a, &dir, name) == 0)
				return 0;
			if (errno != EEXIST || (a->flags & O_EXCL))
				return -1;
		}
		if (rpc_lookup(op, &dir, name, &call) == 0) {
			if (!call.have_fh) {
				errno = EIO;
				return -1;
			}
			if ((a->flags & O_CREAT) && (a->flags & O_EXCL)) {
				errno = EEXIST;
				return -1;
			}
			a->fh = call.fh;
			if (!call.have_attr && rpc_getattr(op, &a->fh, &call) < 0)
				return -1;
			a->attr = call.attr;
			found = true;
			break;
		}
		if (errno != ENOENT || !(a->flags & O_CREAT))
			return -1;
		if (do_create(op, a, &dir, name) == 0)
			return 0;
		/* Created by somebody else between our LOOKUP and CREATE: open theirs. */
		if (errno != EEXIST || (a->flags & O_EXCL))
			return -1;
	}
	if (!found) {
		errno = EEXIST;
		return -1;
	}
	switch (a->attr.type) {
	case NF3REG:
		break;
	case NF3DIR:
		if (acc != O_RDONLY) {
			errno = EISDIR;
			return -1;
		}
		break;
	case NF3LNK:
		errno = ELOOP;
		return -1;
	default:
		/* Devices and FIFOs on the volume are not ours to serve. */
		errno = ENXIO;
		return -1;
	}
	if ((a->flags & O_TRUNC) && acc != O_RDONLY && a->attr.size > 0) {
		sattr3 sa;

		memset(&sa, 0, sizeof sa);
		sa.size.set_it = 1;
		if (reg_wait_fileid(op->nb, a->attr.fileid) < 0 || rpc_setattr(op, &a->fh, &sa) < 0)
			return -1;
		a->attr.size = 0;
		reg_truncated(op->nb, a->attr.fileid, 0);
	}
	return 0;
}

static int vol_open(struct backend *b, const struct backend_cred *cred, const char *path,
		    int flags, mode_t mode, struct backend_file **file)
{
	struct nfs_backend *nb = nfsb(b);
	struct open_args a = { .flags = flags, .mode = mode, .path = path, .trusted = b->who == NULL };
	struct backend_file *f;

	*file = NULL;
	if (run_op(nb, cred, do_open, &a) < 0)
		return -1;
	f = xcalloc(1, sizeof *f);
	f->nb = nb;
	pthread_mutex_init(&f->lock, NULL);
	f->fh = a.fh;
	whoami(nb, cred, &f->cred);
	f->reg = reg_open(nb, a.attr.fileid);
	f->eof_at = UINT64_MAX;
	f->pump_fd = -1;
	*file = f;
	return 0;
}

static void write_cb(struct rpc_context *rpc, int status, void *data, void *arg)
{
	struct wreq *w = arg;
	struct backend_file *f = w->f;
	WRITE3res *res = data;

	(void)rpc;
	f->inflight--;
	f->inflight_bytes -= w->len;
	reg_write_done(f, w->range);
	if (status != RPC_STATUS_SUCCESS) {
		if (!f->werr)
			f->werr = status == RPC_STATUS_TIMEOUT ? ETIMEDOUT : EIO;
	} else if (res->status != NFS3_OK) {
		if (!f->werr)
			f->werr = nfs_errno(res->status);
	} else if (res->WRITE3res_u.resok.count != w->len) {
		/* The data is gone from our hands: a short write cannot be redone. */
		if (!f->werr)
			f->werr = EIO;
	} else {
		const char *verf = res->WRITE3res_u.resok.verf;

		if (res->WRITE3res_u.resok.committed != FILE_SYNC) {
			if (f->have_verf && memcmp(f->verf, verf, sizeof f->verf) != 0)
				f->verf_changed = true;
			memcpy(f->verf, verf, sizeof f->verf);
			f->have_verf = true;
		}
	}
	free(w);
}

static void read_cb(struct rpc_context *rpc, int status, void *data, void *arg)
{
	struct chunk *ch = arg;
	READ3res *res = data;

	(void)rpc;
	if (ch->orphan) {
		ch->f->orphans--;
		free(ch->buf);
		free(ch);
		return;
	}
	if (status != RPC_STATUS_SUCCESS) {
		ch->err = status == RPC_STATUS_TIMEOUT ? ETIMEDOUT : EIO;
	} else if (res->status != NFS3_OK) {
		ch->err = nfs_errno(res->status);
	} else {
		READ3resok *ok = &res->READ3res_u.resok;
		uint32_t n = ok->data.data_len < ch->len ? ok->data.data_len : ch->len;

		memcpy(ch->buf, ok->data.data_val, n);
		ch->got = n;
		ch->eof = ok->eof || n < ch->len;
	}
	ch->pending = 0;
}

/* Drop the file's connection after a failure: requests still in flight are
 * cancelled (their callbacks record the error) and the next I/O mounts anew. */
static void file_drop_conn(struct backend_file *f)
{
	struct conn *c = f->c;

	if (!c)
		return;
	f->c = NULL;
	c->broken = true;
	conn_put(f->nb, c);
}

static int file_conn(struct backend_file *f)
{
	if (f->c && f->c->broken)
		file_drop_conn(f);
	if (!f->c) {
		f->c = conn_get(f->nb, time_mono_ms() + f->nb->timeout_ms);
		if (!f->c)
			return -1;
	}
	conn_as(f->c, &f->cred);
	return 0;
}

/* Wait until at most `left` requests of kind count remain in flight. */
static int file_wait(struct backend_file *f, const int *count, int left)
{
	int64_t deadline = time_mono_ms() + f->nb->timeout_ms;

	if (!f->c)
		return 0;
	if (conn_wait(f->c, count, left, deadline) < 0 || f->c->broken) {
		int saved = errno ? errno : EIO;

		/* Cancelling what is in flight runs the callbacks: *count drops. */
		file_drop_conn(f);
		errno = saved;
		return -1;
	}
	return 0;
}

/* Every write sent and answered; the first error, if any, in errno. */
static int file_drain(struct backend_file *f)
{
	if (f->inflight > 0 && file_wait(f, &f->inflight, 0) < 0) {
		if (!f->werr)
			f->werr = errno;
	}
	if (f->werr) {
		errno = f->werr;
		return -1;
	}
	return 0;
}

/* Forget the read-ahead: chunks in flight finish as orphans. */
static void ra_drop(struct backend_file *f)
{
	for (int i = 0; i < f->nra; i++) {
		struct chunk *ch = f->ra[i];

		if (!ch->pending) {
			free(ch->buf);
			free(ch);
		} else {
			ch->orphan = true;
			f->orphans++;
		}
	}
	f->nra = 0;
	f->eof_at = UINT64_MAX;
}

/* ---- the pump ---- */

/* Under f->lock: what is in flight on f's connection, for the pump. */
static void pump_state(struct backend_file *f, struct pump_state *ps)
{
	bool busy = f->inflight > 0 || f->orphans > 0;

	for (int i = 0; i < f->nra && !busy; i++)
		busy = f->ra[i]->pending;
	ps->seq = ++f->pump_seq;
	ps->fd = -1;
	ps->events = 0;
	if (busy && f->c && !f->c->broken) {
		ps->fd = nfs_get_fd(f->c->nfs);
		ps->events = (short)nfs_which_events(f->c->nfs);
	}
}

/* Under pump_lock: keep the newest state (two callers of one file may let
 * go in either order); true if the pump has something new to poll. */
static bool pump_apply(struct backend_file *f, const struct pump_state *ps)
{
	bool changed;

	if (ps->seq <= f->pump_applied)
		return false;
	changed = ps->fd != f->pump_fd || ps->events != f->pump_events;
	f->pump_applied = ps->seq;
	f->pump_fd = ps->fd;
	f->pump_events = ps->events;
	return changed && ps->fd >= 0;
}

static bool pump_has(const struct nfs_backend *nb, const struct backend_file *f)
{
	for (const struct backend_file *g = nb->pumped; g; g = g->pump_next)
		if (g == f)
			return true;
	return false;
}

static void *pump_main(void *arg)
{
	struct nfs_backend *nb = arg;
	struct pollfd pfd[PUMP_MAX + 1];
	struct backend_file *who[PUMP_MAX + 1];

	pthread_mutex_lock(&nb->pump_lock);
	while (!nb->pump_stop) {
		nfds_t n = 1;

		pfd[0] = (struct pollfd){ .fd = nb->pump_wake, .events = POLLIN };
		for (struct backend_file *f = nb->pumped; f && n <= PUMP_MAX; f = f->pump_next) {
			if (f->pump_fd < 0 || f->pump_wanted)
				continue;
			pfd[n] = (struct pollfd){ .fd = f->pump_fd, .events = f->pump_events };
			who[n++] = f;
		}
		pthread_mutex_unlock(&nb->pump_lock);
		/* Every change of the set comes with a wake-up; the time-out is
		 * only a safety net. */
		if (poll(pfd, n, 1000) < 0)
			pfd[0].revents = 0;
		if (pfd[0].revents & POLLIN) {
			eventfd_t v;

			(void)eventfd_read(nb->pump_wake, &v);
		}
		pthread_mutex_lock(&nb->pump_lock);
		for (nfds_t i = 1; i < n; i++) {
			struct backend_file *f = who[i];
			struct pump_state ps;

			/* Files closed while we polled are gone from the list. */
			if (!pfd[i].revents || !pump_has(nb, f) || f->pump_fd != pfd[i].fd)
				continue;
			if (pthread_mutex_trylock(&f->lock) != 0) {
				f->pump_wanted = true;
				continue;
			}
			if (f->c && !f->c->broken)
				conn_pump(f->c);
			pump_state(f, &ps);
			pthread_mutex_unlock(&f->lock);
			pump_apply(f, &ps);
			/* A socket in error stays "ready" while libnfs reconnects
			 * or until a caller sees it broken: leave it to the
			 * file's callers, who wake the pump when they let go. */
			if (pfd[i].revents & (POLLERR | POLLHUP | POLLNVAL))
				f->pump_wanted = true;
		}
	}
	pthread_mutex_unlock(&nb->pump_lock);
	return NULL;
}

/* Under pump_lock. Without a pump, callers still service their own files. */
static int pump_start(struct nfs_backend *nb)
{
	nb->pump_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (nb->pump_wake < 0)
		goto fail;
	errno = pthread_create(&nb->pump_thread, NULL, pump_main, nb);
	if (errno != 0) {
		close(nb->pump_wake);
		nb->pump_wake = -1;
		goto fail;
	}
	nb->pump_running = true;
	return 0;
fail:
	log_warn("nfs: no I/O pump thread: reads and writes wait more");
	nb->pump_stop = true;   /* do not try again for every file */
	return -1;
}

static void pump_note(struct backend_file *f, const struct pump_state *ps)
{
	struct nfs_backend *nb = f->nb;
	bool wake;

	pthread_mutex_lock(&nb->pump_lock);
	if (!f->pump_listed && ps->fd >= 0) {
		f->pump_next = nb->pumped;
		nb->pumped = f;
		f->pump_listed = true;
	}
	wake = pump_apply(f, ps) || f->pump_wanted;
	f->pump_wanted = false;
	if (wake && !nb->pump_running && (nb->pump_stop || pump_start(nb) < 0))
		wake = false;
	pthread_mutex_unlock(&nb->pump_lock);
	if (wake)
		(void)eventfd_write(nb->pump_wake, 1);
}

/* Let go of f, telling the pump what f has in flight now. */
static void file_unlock(struct backend_file *f)
{
	struct pump_state ps;

	pump_state(f, &ps);
	pthread_mutex_unlock(&f->lock);
	pump_note(f, &ps);
}

/* f is being freed: the pump must not find it any more. */
static void pump_forget(struct backend_file *f)
{
	struct nfs_backend *nb = f->nb;

	pthread_mutex_lock(&nb->pump_lock);
	for (struct backend_file **pp = &nb->pumped; *pp; pp = &(*pp)->pump_next) {
		if (*pp == f) {
			*pp = f->pump_next;
			break;
		}
	}
	pthread_mutex_unlock(&nb->pump_lock);
}

static void pump_shutdown(struct nfs_backend *nb)
{
	bool running;

	pthread_mutex_lock(&nb->pump_lock);
	nb->pump_stop = true;
	running = nb->pump_running;
	nb->pump_running = false;
	pthread_mutex_unlock(&nb->pump_lock);
	if (!running)
		return;
	(void)eventfd_write(nb->pump_wake, 1);
	pthread_join(nb->pump_thread, NULL);
	close(nb->pump_wake);
	nb->pump_wake = -1;
}

/* ---- the order of writes ---- */

static struct inflight_range *reg_write_sent(struct backend_file *f, uint64_t off, uint32_t len)
{
	struct nfs_backend *nb = f->nb;
	struct inflight_range *range;

	pthread_mutex_lock(&nb->reg_lock);
	range = inflight_add(f->reg->writes, off, len, f);
	f->reg->gen++;
	pthread_mutex_unlock(&nb->reg_lock);
	return range;
}

/* Answered or cancelled (the callbacks run under f->lock). */
static void reg_write_done(struct backend_file *f, struct inflight_range *range)
{
	struct nfs_backend *nb = f->nb;

	pthread_mutex_lock(&nb->reg_lock);
	inflight_remove(f->reg->writes, range);
	f->reg->gen++;
	pthread_cond_broadcast(&f->reg->settled);
	pthread_mutex_unlock(&nb->reg_lock);
}

/* Under f->lock: one of f's own writes in flight overlaps [off, end). */
static bool reg_mine_overlap(struct backend_file *f, uint64_t off, uint64_t end)
{
	bool found;

	pthread_mutex_lock(&f->nb->reg_lock);
	found = inflight_overlap(f->reg->writes, off, end, f, INFLIGHT_MINE) != NULL;
	pthread_mutex_unlock(&f->nb->reg_lock);
	return found;
}

/* Wait until no write in flight of an open file of r other than self (NULL:
 * any) overlaps [off, end). Called holding no file's lock: the other files'
 * writes are answered while their callers or the pump service them, and a
 * file nobody is servicing is drained here. A write that failed stays that
 * file's error, for its own flush and close. */
static int reg_wait(struct nfs_backend *nb, struct reg_entry *r, const struct backend_file *self,
		    uint64_t off, uint64_t end)
{
	int64_t deadline = time_mono_ms() + nb->timeout_ms;
	int ret = 0;

	pthread_mutex_lock(&nb->reg_lock);
	for (;;) {
		struct backend_file *g;
		struct timespec until;

		g = (struct backend_file *)inflight_overlap(r->writes, off, end, self, INFLIGHT_OTHERS);
		if (!g)
			break;
		/* g has writes in flight, so it is not freed: its close
		 * drains them under g->lock, which we now hold. */
		if (pthread_mutex_trylock(&g->lock) == 0) {
			pthread_mutex_unlock(&nb->reg_lock);
			(void)file_drain(g);
			file_unlock(g);
			pthread_mutex_lock(&nb->reg_lock);
			continue;
		}
		if (time_mono_ms() >= deadline) {
			errno = ETIMEDOUT;
			ret = -1;
			break;
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 20 * 1000 * 1000;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&r->settled, &nb->reg_lock, &until);
	}
	pthread_mutex_unlock(&nb->reg_lock);
	return ret;
}

/* Before a SETATTR by path: the writes of this mount's open files of the
 * inode first, or one landing later would undo it (tar's times). */
static int reg_wait_fileid(struct nfs_backend *nb, uint64_t fileid)
{
	struct reg_entry *e;
	int ret;

	pthread_mutex_lock(&nb->reg_lock);
	e = reg_find(nb, fileid);
	if (e)
		e->refs++;
	pthread_mutex_unlock(&nb->reg_lock);
	if (!e)
		return 0;
	ret = reg_wait(nb, e, NULL, 0, UINT64_MAX);
	reg_close(nb, e);
	return ret;
}

static ssize_t vol_pwrite(struct backend_file *f, const void *buf, size_t size, off_t off)
{
	uint64_t start = (uint64_t)off, end = start + size;
	ssize_t ret = -1;
	size_t done = 0;

	/* Another open file's write of these bytes goes first... */
	if (reg_wait(f->nb, f->reg, f, start, end) < 0)
		return -1;
	pthread_mutex_lock(&f->lock);
	if (f->werr) {
		errno = f->werr;
		goto out;
	}
	if (f->nra)
		ra_drop(f);
	/* ...and so does our own: only a writer going back over what it just
	 * wrote waits here, a sequential one never does. */
	if (f->inflight > 0 && reg_mine_overlap(f, start, end) && file_wait(f, &f->inflight, 0) < 0)
		goto fail;
	if (file_conn(f) < 0)
		goto out;
	while (done < size) {
		uint32_t n = (uint32_t)(size - done < f->c->wmax ? size - done : f->c->wmax);
		WRITE3args args;
		struct wreq *w;

		/* Write-behind: wait only when the window is full. */
		while (f->inflight > 0 && f->inflight_bytes + n > WB_WINDOW) {
			if (file_wait(f, &f->inflight, f->inflight - 1) < 0)
				goto fail;
		}
		if (f->werr || !f->c)
			goto fail;
		memset(&args, 0, sizeof args);
		set_fh(&args.file, &f->fh);
		args.offset = (uint64_t)off + done;
		args.count = n;
		args.stable = UNSTABLE;
		args.data.data_len = n;
		args.data.data_val = (char *)buf + done;
		w = xmalloc(sizeof *w);
		w->f = f;
		w->len = n;
		w->range = reg_write_sent(f, args.offset, n);
		/* libnfs copies the data into the request here. */
		if (rpc_nfs3_write_async(f->c->rpc, write_cb, &args, w) < 0) {
			reg_write_done(f, w->range);
			free(w);
			f->werr = EIO;
			file_drop_conn(f);
			goto fail;
		}
		f->inflight++;
		f->inflight_bytes += n;
		f->unstable = true;
		done += n;
	}
	reg_size(f->nb, f->reg, (uint64_t)off + size, false);
	conn_pump(f->c);
	ret = (ssize_t)size;
	goto out;
fail:
	if (!f->werr)
		f->werr = errno ? errno : EIO;
	errno = f->werr;
	/* What was queued before the failure counts as written (POSIX short write). */
	if (done > 0)
		ret = (ssize_t)done;
out:
	file_unlock(f);
	return ret;
}

static struct chunk *ra_find(struct backend_file *f, uint64_t off)
{
	for (int i = 0; i < f->nra; i++)
		if (f->ra[i]->off == off)
			return f->ra[i];
	return NULL;
}

/* Make sure chunk idx (of size csize) is read or being read. */
static int ra_issue(struct backend_file *f, uint64_t off, uint32_t csize)
{
	READ3args args;
	struct chunk *ch;

	if (ra_find(f, off) || off >= f->eof_at)
		return 0;
	if (f->nra == RA_SLOTS)
		return 0;
	ch = xcalloc(1, sizeof *ch);
	ch->f = f;
	ch->off = off;
	ch->len = csize;
	ch->buf = xmalloc(csize);
	ch->pending = 1;
	memset(&args, 0, sizeof args);
	set_fh(&args.file, &f->fh);
	args.offset = off;
	args.count = csize;
	if (rpc_nfs3_read_async(f->c->rpc, read_cb, &args, ch) < 0) {
		free(ch->buf);
		free(ch);
		f->c->broken = true;
		errno = EIO;
		return -1;
	}
	f->ra[f->nra++] = ch;
	return 0;
}

/* Free chunks that end before off (the reader moved past them). */
static void ra_trim(struct backend_file *f, uint64_t keep_from)
{
	int j = 0;

	for (int i = 0; i < f->nra; i++) {
		struct chunk *ch = f->ra[i];

		if (ch->off + ch->len <= keep_from) {
			if (!ch->pending) {
				free(ch->buf);
				free(ch);
			} else {
				ch->orphan = true;
				f->orphans++;
			}
		} else {
			f->ra[j++] = ch;
		}
	}
	f->nra = j;
}

/* Forget one chunk whose buffer was handed over. */
static void ra_remove(struct backend_file *f, struct chunk *ch)
{
	for (int i = 0; i < f->nra; i++) {
		if (f->ra[i] == ch) {
			f->ra[i] = f->ra[--f->nra];
			break;
		}
	}
	free(ch->buf);
	free(ch);
}

/* Read into buf; or, with buf NULL, into a buffer returned in *take: a chunk
 * read ahead that is exactly what was asked for is handed over as it is. */
static ssize_t file_read_once(struct backend_file *f, char *buf, size_t size, off_t off, char **take,
			      uint64_t *gen_seen)
{
	uint64_t start = (uint64_t)off, end = start + size, csize, ahead, pos;
	size_t copied = 0;
	bool sequential;
	ssize_t ret = -1;
	uint64_t gen;

	pthread_mutex_lock(&f->lock);
	if (f->inflight > 0 && file_drain(f) < 0)
		goto out;
	/* Chunks read ahead before another file wrote or truncated may hold
	 * what was there before. */
	gen = reg_gen(f->nb, f->reg);
	*gen_seen = gen;
	if (gen != f->ra_gen) {
		ra_drop(f);
		f->ra_gen = gen;
	}
	if (file_conn(f) < 0)
		goto out;
	csize = f->c->rmax;
	/* The kernel sends a stream's reads from several threads, a little out
	 * of order: near the last end counts as sequential. */
	sequential = start + 2 * csize >= f->last_end && start <= f->last_end + 2 * csize &&
		     (start > 0 || f->last_end == 0);
	if (!sequential)
		ra_drop(f);
	ra_trim(f, start >= csize ? (start / csize - 1) * csize : 0);
	ahead = sequential ? RA_WINDOW : 0;
	for (pos = start / csize * csize; pos < end + ahead; pos += csize)
		if (ra_issue(f, pos, (uint32_t)csize) < 0)
			goto fail;
	conn_pump(f->c);
	for (pos = start; pos < end; ) {
		uint64_t base = pos / csize * csize;
		struct chunk *ch = ra_find(f, base);

		if (!ch) {
			/* Past the end the server reported, or no slot free. */
			if (base >= f->eof_at)
				break;
			if (ra_issue(f, base, (uint32_t)csize) < 0)
				goto fail;
			ch = ra_find(f, base);
			if (!ch) {
				errno = EIO;
				goto fail;
			}
		}
		if (ch->pending && conn_wait(f->c, &ch->pending, 0, time_mono_ms() + f->nb->timeout_ms) < 0)
			goto fail;
		if (ch->err) {
			errno = ch->err;
			goto fail;
		}
		if (ch->eof && ch->off + ch->got < f->eof_at)
			f->eof_at = ch->off + ch->got;
		if (pos >= ch->off + ch->got)
			break;
		if (!buf && copied == 0 && pos == ch->off && ch->got == end - pos) {
			/* The kernel asked for this chunk exactly: no copy. */
			*take = ch->buf;
			ch->buf = NULL;
			copied = ch->got;
			pos = end;
			ra_remove(f, ch);
			break;
		}
		if (!buf)
			buf = *take = xmalloc(size ? size : 1);
		{
			uint64_t n = ch->off + ch->got - pos;

			if (n > end - pos)
				n = end - pos;
			memcpy((char *)buf + copied, ch->buf + (pos - ch->off), n);
			copied += n;
			pos += n;
		}
		if (ch->eof)
			break;
	}
	f->last_end = start + copied;
	ret = (ssize_t)copied;
	goto out;
fail:
	{
		int saved = errno;

		ra_drop(f);
		if (f->c && f->c->broken)
			file_drop_conn(f);
		errno = saved;
		/* FUSE takes a short read as the end: report the error instead. */
	}
out:
	file_unlock(f);
	return ret;
}

/* Under no lock: another open file has a write in flight at or past pos. */
static bool reg_others_past(struct backend_file *f, uint64_t pos)
{
	bool found;

	pthread_mutex_lock(&f->nb->reg_lock);
	found = inflight_overlap(f->reg->writes, pos, UINT64_MAX, f, INFLIGHT_OTHERS) != NULL;
	pthread_mutex_unlock(&f->nb->reg_lock);
	return found;
}

/* A read sees every write that returned before it, through any open file of
 * this mount: those of the bytes asked for are waited for first. One beyond
 * them may still make the file longer than the server says: a read that
 * comes back short while such a write is (or was, during the read) in
 * flight waits for the writes past its end and reads again. */
static ssize_t file_read(struct backend_file *f, char *buf, size_t size, off_t off, char **take)
{
	uint64_t start = (uint64_t)off, gen;
	ssize_t n;

	if (reg_wait(f->nb, f->reg, f, start, start + size) < 0)
		return -1;
	n = file_read_once(f, buf, size, off, take, &gen);
	if (n < 0 || (size_t)n == size)
		return n;
	if (!reg_others_past(f, start + (uint64_t)n) && reg_gen(f->nb, f->reg) == gen)
		return n;
	if (reg_wait(f->nb, f->reg, f, start + (uint64_t)n, UINT64_MAX) < 0)
		return -1;
	if (take) {
		free(*take);
		*take = NULL;
	}
	return file_read_once(f, buf, size, off, take, &gen);
}

static ssize_t vol_pread(struct backend_file *f, void *buf, size_t size, off_t off)
{
	return file_read(f, buf, size, off, NULL);
}

static ssize_t vol_pread_take(struct backend_file *f, size_t size, off_t off, char **buf)
{
	ssize_t n;

	*buf = NULL;
	n = file_read(f, NULL, size, off, buf);
	if (n < 0) {
		int saved = errno;

		free(*buf);
		*buf = NULL;
		errno = saved;
	} else if (!*buf) {
		*buf = xmalloc(1);      /* nothing read: the end of the file */
	}
	return n;
}

static int vol_ftruncate(struct backend_file *f, off_t size)
{
	struct op op = { .nb = f->nb, .cred = f->cred };
	sattr3 sa;
	int ret = -1;

	if (reg_wait(f->nb, f->reg, f, 0, UINT64_MAX) < 0)
		return -1;
	pthread_mutex_lock(&f->lock);
	if (file_drain(f) < 0 || file_conn(f) < 0)
		goto out;
	if (f->nra)
		ra_drop(f);
	memset(&sa, 0, sizeof sa);
	sa.size.set_it = 1;
	sa.size.set_size3_u.size = (uint64_t)size;
	op.c = f->c;
	op.deadline = time_mono_ms() + f->nb->timeout_ms;
	ret = rpc_setattr(&op, &f->fh, &sa);
	if (ret == 0)
		reg_size(f->nb, f->reg, (uint64_t)size, true);
out:
	file_unlock(f);
	return ret;
}

/* chmod, chown, utimens of an open file: one SETATTR on its handle, after the
 * writes on their way (they would move mtime afterwards), acting as cred. */
static int file_setattr(struct backend_file *f, const struct backend_cred *cred, const sattr3 *sa)
{
	struct op op = { .nb = f->nb };
	int ret = -1;

	whoami(f->nb, cred, &op.cred);
	if (reg_wait(f->nb, f->reg, f, 0, UINT64_MAX) < 0)
		return -1;
	pthread_mutex_lock(&f->lock);
	if (file_drain(f) < 0 || file_conn(f) < 0)
		goto out;
	op.c = f->c;
	op.deadline = time_mono_ms() + f->nb->timeout_ms;
	ret = rpc_setattr(&op, &f->fh, sa);
out:
	file_unlock(f);
	return ret;
}

static int vol_fchmod(struct backend_file *f, const struct backend_cred *cred, mode_t mode)
{
	sattr3 sa;

	memset(&sa, 0, sizeof sa);
	sa.mode.set_it = 1;
	sa.mode.set_mode3_u.mode = mode & 07777;
	return file_setattr(f, cred, &sa);
}

static int vol_fchown(struct backend_file *f, uid_t uid, gid_t gid)
{
	sattr3 sa;

	memset(&sa, 0, sizeof sa);
	sa.uid.set_it = uid != (uid_t)-1;
	sa.uid.set_uid3_u.uid = uid;
	sa.gid.set_it = gid != (gid_t)-1;
	sa.gid.set_gid3_u.gid = gid;
	return file_setattr(f, NULL, &sa);
}

static int vol_futimens(struct backend_file *f, const struct timespec tv[2])
{
	struct timespec now[2] = { { 0, UTIME_NOW }, { 0, UTIME_NOW } };
	sattr3 sa;

	if (!tv)
		tv = now;
	if (!nfs_time_fits(&tv[0]) || !nfs_time_fits(&tv[1])) {
		errno = EOVERFLOW;
		return -1;
	}
	memset(&sa, 0, sizeof sa);
	sattr_time(&sa.atime, &sa.mtime, tv);
	return file_setattr(f, NULL, &sa);
}

/* NFSv3 has no ALLOCATE (NFSv4.2 does): as Linux's NFSv3 client, which has
 * no fallocate for it, EOPNOTSUPP for every mode; posix_fallocate(3) then
 * writes zeros itself. */
static int vol_fallocate(struct backend_file *f, int mode, off_t off, off_t len)
{
	(void)f;
	(void)mode;
	(void)off;
	(void)len;
	errno = EOPNOTSUPP;
	return -1;
}

static int vol_fstat(struct backend_file *f, struct stat *st)
{
	struct op op = { .nb = f->nb, .cred = f->cred };
	struct call call;
	int ret = -1;

	pthread_mutex_lock(&f->lock);
	if (file_conn(f) < 0)
		goto out;
	op.c = f->c;
	op.deadline = time_mono_ms() + f->nb->timeout_ms;
	ret = rpc_getattr(&op, &f->fh, &call);
	if (ret == 0)
		attr_to_stat_floor(f->nb, &call.attr, st);
out:
	file_unlock(f);
	return ret;
}

static int vol_fsync(struct backend_file *f, int datasync)
{
	struct op op = { .nb = f->nb, .cred = f->cred };
	COMMIT3args args;
	struct call call;
	int ret = -1;

	(void)datasync;
	/* The file's data, whichever open file wrote it. */
	if (reg_wait(f->nb, f->reg, f, 0, UINT64_MAX) < 0)
		return -1;
	pthread_mutex_lock(&f->lock);
	if (file_drain(f) < 0)
		goto out;
	if (!f->unstable) {
		ret = 0;
		goto out;
	}
	if (file_conn(f) < 0)
		goto out;
	memset(&args, 0, sizeof args);
	set_fh(&args.file, &f->fh);
	op.c = f->c;
	op.deadline = time_mono_ms() + f->nb->timeout_ms;
	call_init(&call, take_commit);
	if (call_finish(&op, &call, rpc_nfs3_commit_async(f->c->rpc, call_cb, &args, &call)) < 0) {
		if (!f->werr)
			f->werr = errno;
		goto out;
	}
	/* A new verifier means the server restarted and may have lost unstable
	 * writes we no longer hold: say so. */
	if (f->verf_changed || (f->have_verf && memcmp(f->verf, call.verf, sizeof f->verf) != 0)) {
		f->werr = EIO;
		errno = EIO;
		goto out;
	}
	f->unstable = false;
	f->have_verf = f->verf_changed = false;
	ret = 0;
out:
	file_unlock(f);
	return ret;
}

static int vol_flush(struct backend_file *f)
{
	int ret;

	pthread_mutex_lock(&f->lock);
	ret = file_drain(f);
	file_unlock(f);
	return ret;
}

static int vol_close(struct backend_file *f)
{
	int ret, saved;

	pthread_mutex_lock(&f->lock);
	ret = file_drain(f);
	saved = errno;
	ra_drop(f);
	if (f->orphans > 0 && file_wait(f, &f->orphans, 0) < 0)
		file_drop_conn(f);
	conn_put(f->nb, f->c);
	f->c = NULL;
	pthread_mutex_unlock(&f->lock);
	pump_forget(f);
	pthread_mutex_destroy(&f->lock);
	reg_close(f->nb, f->reg);
	free(f);
	errno = saved;
	return ret;
}

static void vol_destroy(struct backend *b)
{
	struct nfs_backend *nb = nfsb(b);

	pump_shutdown(nb);
	while (nb->idle) {
		struct conn *c = nb->idle;

		nb->idle = c->next;
		conn_close(c);
	}
	dcache_clear_locked(nb);
	for (size_t i = 0; i < REG_BUCKETS; i++) {
		while (nb->reg[i]) {
			struct reg_entry *e = nb->reg[i];

			nb->reg[i] = e->next;
			reg_free(e);
		}
	}
	pthread_mutex_destroy(&nb->lock);
	pthread_mutex_destroy(&nb->reg_lock);
	pthread_mutex_destroy(&nb->pump_lock);
	free(nb->url);
	free(nb->server);
	free(nb->export);
	free(nb);
}

static const struct backend_ops nfs_ops = {
	.name = "nfs",
	.destroy = vol_destroy,
	.getattr = vol_getattr,
	.readdir = vol_readdir,
	.mkdir = vol_mkdir,
	.unlink = vol_unlink,
	.rmdir = vol_rmdir,
	.rename = vol_rename,
	.symlink = vol_symlink,
	.mknod = vol_mknod,
	.readlink = vol_readlink,
	.link = vol_link,
	.chmod = vol_chmod,
	.chown = vol_chown,
	.truncate = vol_truncate,
	.utimens = vol_utimens,
	.statfs = vol_statfs,
	.open = vol_open,
	.pread = vol_pread,
	.pwrite = vol_pwrite,
	.ftruncate = vol_ftruncate,
	.fallocate = vol_fallocate,
	.fstat = vol_fstat,
	.fsync = vol_fsync,
	.fchmod = vol_fchmod,
	.fchown = vol_fchown,
	.futimens = vol_futimens,
	.flush = vol_flush,
	.close = vol_close,
	.pread_take = vol_pread_take,
};

/* ---- the URL ---- */

int backend_nfs_parse_url(const char *url, char **server, char **export, char **libnfs_url,
			  int *timeout_ms, char **err)
{
	const char *p, *slash, *q;
	char *query = NULL, *rest = NULL, *opt, *save = NULL;
	int ret = -1;

	*server = *export = *libnfs_url = NULL;
	*timeout_ms = DEFAULT_TIMEOUT_MS;
	if (strncmp(url, "nfs://", 6) != 0) {
		errno = EINVAL;
		return errprintf(err, "storage '%s' is not nfs://server/export/path", url);
	}
	p = url + 6;
	slash = strchr(p, '/');
	q = strchr(p, '?');
	if (!slash || slash == p || (q && q < slash)) {
		errno = EINVAL;
		return errprintf(err, "storage '%s': expected nfs://server/export/path", url);
	}
	*server = xasprintf("%.*s", (int)(slash - p), p);
	*export = q ? xasprintf("%.*s", (int)(q - slash), slash) : xstrdup(slash);
	/* A trailing slash would make libnfs mount "export/". */
	while (strlen(*export) > 1 && (*export)[strlen(*export) - 1] == '/')
		(*export)[strlen(*export) - 1] = '\0';
	if (strstr(*export, "/../") || strcmp(*export + strlen(*export) - (strlen(*export) >= 3 ? 3 : 0), "/..") == 0) {
		errno = EINVAL;
		errprintf(err, "storage '%s': '..' in the export path", url);
		goto out;
	}
	/* Our own options come out of the query; libnfs gets the others. */
	rest = xstrdup("");
	if (q) {
		query = xstrdup(q + 1);
		for (opt = strtok_r(query, "&", &save); opt; opt = strtok_r(NULL, "&", &save)) {
			if (strncmp(opt, "timeout=", 8) == 0) {
				char *end;
				double secs = strtod(opt + 8, &end);

				if (end == opt + 8 || *end || secs < 0.1 || secs > 86400) {
					errno = EINVAL;
					errprintf(err, "storage '%s': timeout must be seconds between 0.1 and 86400", url);
					goto out;
				}
				*timeout_ms = (int)(secs * 1000);
			} else if (strncmp(opt, "nfsport=", 8) == 0 || strncmp(opt, "mountport=", 10) == 0 ||
				   strncmp(opt, "tcp-syncnt=", 11) == 0 || strncmp(opt, "autoreconnect=", 14) == 0) {
				char *joined = xasprintf("%s%s%s", rest, *rest ? "&" : "", opt);

				free(rest);
				rest = joined;
			} else {
				errno = EINVAL;
				errprintf(err, "storage '%s': unknown option '%s' (known: timeout, nfsport, "
					  "mountport, tcp-syncnt, autoreconnect)", url, opt);
				goto out;
			}
		}
	}
	*libnfs_url = xasprintf("nfs://%s%s%s%s", *server, *export, *rest ? "?" : "", rest);
	ret = 0;
out:
	if (ret < 0) {
		free(*server);
		free(*export);
		*server = *export = NULL;
	}
	free(query);
	free(rest);
	return ret;
}

struct backend *backend_nfs_create(const char *url, char **err)
{
	struct nfs_backend *nb = xcalloc(1, sizeof *nb);
	struct conn *c;

	nb->base.ops = &nfs_ops;
	pthread_mutex_init(&nb->lock, NULL);
	pthread_mutex_init(&nb->reg_lock, NULL);
	pthread_mutex_init(&nb->pump_lock, NULL);
	nb->pump_wake = -1;
	if (backend_nfs_parse_url(url, &nb->server, &nb->export, &nb->url, &nb->timeout_ms, err) < 0)
		goto fail;
	/* Mount once now: a wrong URL or an unreachable server is said at start. */
	c = conn_open(nb, time_mono_ms() + nb->timeout_ms, err);
	if (!c)
		goto fail;
	conn_put(nb, c);
	return &nb->base;
fail:
	{
		int saved = errno;

		vol_destroy(&nb->base);
		errno = saved;
	}
	return NULL;
}
