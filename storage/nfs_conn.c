/* The NFS backend's connections: a pool of mounted libnfs contexts, each
 * used by one caller at a time, and our own poll loop that services one with
 * a deadline (conn_wait, conn_pump). A connection that failed or timed out
 * is marked broken and destroyed when put back; a server that just failed is
 * not asked again for DOWN_HOLD_MS by callers without patience. Also the
 * volume's health (reachable or not, since when, why), the patience of a
 * caller that waits for the server, and how NFSv3 errors become errnos. */
#include "nfs_internal.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* libnfs 4.0 exports nfs_get_fh() but keeps struct nfs_fh in a private
 * header; this is its layout there. conn_open() checks what it reads. */
struct nfs_fh {
	int len;
	char *val;
};

#define DOWN_HOLD_MS 1000           /* after a failed mount or a time-out: fail at once */
#define POOL_IDLE_MAX 16            /* idle connections kept */
#define PAUSE_MIN_MS 200            /* a patient caller's first pause between tries */
#define PAUSE_MAX_MS 2000           /* ...doubling up to this */

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

int nfs_errno(int status)
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
int conn_wait(struct conn *c, const int *count, int target, int64_t deadline)
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
		 * reconnect timers from nfs_service. With everything sent, what
		 * comes is a reply: spun for first (reply_spin.h). */
		if (p.events & POLLOUT)
			rc = poll(&p, 1, left > 100 ? 100 : (int)left);
		else
			rc = reply_spin_poll(c->spin, &p, left > 100 ? 100 : (int)left);
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
void conn_pump(struct conn *c)
{
	struct pollfd p = { .fd = nfs_get_fd(c->nfs), .events = (short)nfs_which_events(c->nfs) };

	if (poll(&p, 1, 0) > 0 && nfs_service(c->nfs, p.revents) < 0)
		c->broken = true;
}

void conn_close(struct conn *c)
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
struct conn *conn_open(struct nfs_backend *nb, int64_t deadline, char **err)
{
	struct conn *c = xcalloc(1, sizeof *c);
	struct async_result r = { .pending = 1 };
	struct nfs_url *url;

	c->spin = nb->spin;
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
	rpc_count(nb, RPC_STATS_MOUNT);
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

void nfs_server_failed(struct nfs_backend *nb)
{
	pthread_mutex_lock(&nb->lock);
	nb->down_until = time_mono_ms() + DOWN_HOLD_MS;
	pthread_mutex_unlock(&nb->lock);
}

/* The log says each change of state once (parsafs's operators read it), not
 * each failed call: a hundred waiting callers would repeat it. */
void nfs_unreachable(struct nfs_backend *nb, const char *reason)
{
	if (!reason || !*reason)
		reason = "no answer";
	pthread_mutex_lock(&nb->lock);
	if (!nb->down_since) {
		nb->down_since = time_now_ms();
		nb->down_mono = time_mono_ms();
		atomic_store(&nb->down, true);
		log_warnx("storage %s: unreachable: %s", nb->volume, reason);
	}
	/* The latest reason is the one worth reading. */
	free(nb->down_reason);
	nb->down_reason = xstrdup(reason);
	pthread_mutex_unlock(&nb->lock);
}

void nfs_reachable(struct nfs_backend *nb)
{
	/* Every answered call comes here: no lock while all is well. */
	if (!atomic_load_explicit(&nb->down, memory_order_relaxed))
		return;
	pthread_mutex_lock(&nb->lock);
	if (nb->down_since) {
		log_info("storage %s: reachable again after %.1f s", nb->volume,
			 (double)(time_mono_ms() - nb->down_mono) / 1000.0);
		nb->down_since = 0;
		free(nb->down_reason);
		nb->down_reason = NULL;
		atomic_store(&nb->down, false);
	}
	pthread_mutex_unlock(&nb->lock);
}

bool nfs_patient(struct nfs_backend *nb)
{
	return atomic_load(&nb->patience_ms) > 0;
}

bool patience_wait(struct nfs_backend *nb, struct patience *p)
{
	int64_t patience = atomic_load(&nb->patience_ms), now = time_mono_ms(), left;
	int saved = errno;
	struct timespec ts;

	if (patience <= 0)
		return false;
	if (!p->give_up) {
		p->give_up = now + patience;
		p->pause_ms = PAUSE_MIN_MS;
	}
	left = p->give_up - now;
	if (left <= 0) {
		errno = saved;
		return false;
	}
	if (left > p->pause_ms)
		left = p->pause_ms;
	/* Sleeping, never spinning: many callers may wait at once. */
	ts.tv_sec = left / 1000;
	ts.tv_nsec = (long)(left % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	p->pause_ms = p->pause_ms * 2 > PAUSE_MAX_MS ? PAUSE_MAX_MS : p->pause_ms * 2;
	errno = saved;
	return true;
}

/* What went wrong on c, for the volume's health. */
char *conn_error(struct conn *c, const char *what)
{
	const char *e = c && c->nfs ? nfs_get_error(c->nfs) : NULL;

	return xasprintf("%s%s%s", what, e && *e ? ": " : "", e && *e ? e : "");
}

/* A connection for one caller: an idle one, or a new mount. */
struct conn *conn_get(struct nfs_backend *nb, int64_t deadline, bool fail_fast)
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
	 * holding a lock (the scheduler's pass) must not wait a time-out each
	 * call. A patient caller pauses between its tries instead. */
	if (fail_fast) {
		pthread_mutex_lock(&nb->lock);
		down = nb->down_until > time_mono_ms();
		pthread_mutex_unlock(&nb->lock);
		if (down) {
			errno = EIO;
			return NULL;
		}
	}
	c = conn_open(nb, deadline, &err);
	if (!c) {
		int saved = errno;

		nfs_server_failed(nb);
		nfs_unreachable(nb, err);
		free(err);
		/* The caller sees an I/O error, or the time out. */
		errno = saved == ETIMEDOUT ? ETIMEDOUT : EIO;
		return NULL;
	}
	nfs_reachable(nb);
	return c;
}

void conn_put(struct nfs_backend *nb, struct conn *c)
{
	if (!c)
		return;
	if (c->broken)
		atomic_fetch_add(&nb->breaks, 1);       /* a restart may be why: see vol_flush */
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
void conn_as(struct conn *c, const struct backend_cred *cred)
{
	if (c->uid != (int)cred->uid || c->gid != (int)cred->gid) {
		/* rpc_set_uid rebuilds the authenticator with the current gid: set both. */
		c->gid = (int)cred->gid;
		rpc_set_gid(c->rpc, c->gid);
		c->uid = (int)cred->uid;
		rpc_set_uid(c->rpc, c->uid);
	}
}
