/* The NFSv3 backend, through libnfs (4.0: NFSv3 only; a context is not
 * thread-safe). Design:
 * - Connections: a pool of mounted libnfs contexts. A metadata call takes one
 *   exclusively for its duration; an open file takes one at its first read or
 *   write and keeps it until it is closed, so its pipelined requests and their
 *   replies stay on one connection that only its own (locked) caller services.
 * - Every wait is our own poll loop over nfs_get_fd/nfs_which_events/
 *   nfs_service with a deadline (the URL's timeout). A connection that timed
 *   out or failed is destroyed (its requests are cancelled) and the next try
 *   mounts a fresh one, which is how the volume recovers by itself once the
 *   server is back.
 * - Patience (backend_set_patience, the URL's patience=): while the server
 *   cannot be reached a call tries again, pausing, until it answers or the
 *   patience is spent, as a kernel hard mount does; an open file's writes
 *   that were in flight on a connection that died are sent again, from a
 *   copy held until their answer (nfs_commit.c). Without patience (the
 *   default: the scheduler, the runner) a call fails at once, and a server
 *   that just failed is not asked again for a moment.
 * - Health: whether the server answered last time, since when not and why
 *   (nfs_unreachable, nfs_reachable; backend_health), and a probe. The
 *   backend is created without the server: a daemon starts in an outage.
 * - Requests are raw NFSv3 RPCs on file handles, with a short-lived cache of
 *   directory handles by path, so that a deep path costs one LOOKUP and not one
 *   per component. Each RPC carries AUTH_SYS credentials of the person acting
 *   (set on the connection just before the request is encoded; libnfs encodes
 *   the credential into each request when it is queued).
 * - Writes are UNSTABLE and written behind (up to WB_WINDOW bytes in flight per
 *   file); reads of a sequential stream are read ahead in chunks of 512 KiB
 *   (READ_CHUNK, or the server's rtmax if smaller; RA_WINDOW bytes ahead).
 * - An open file's READs go on a TCP connection of its own (nfs_rsock.c: READ
 *   only, written by hand), whose replies' data is spliced into pipes: a
 *   chunk the kernel asks for whole is moved into the FUSE thread's pipe and
 *   spliced into the reply, so the data is copied once (by the kernel), not
 *   three times (libnfs's buffer, our chunk, the kernel). Where no pipe can
 *   be had, or the socket cannot be made, the data goes through memory. flush/close wait for every write
 *   reply and report the first error; fsync also COMMITs and checks the write
 *   verifier, so data fsync acknowledged is on the server's disk. With patience
 *   the data of answered writes is kept until a COMMIT with their verifier
 *   (64 MiB at most per file) and sent again after a server restart.
 * - A pump thread (one per backend, started with the first file I/O) takes
 *   the replies of files that nobody is waiting on and pushes their queued
 *   requests: between two reads of a reader (while it writes what it read
 *   somewhere) the read-ahead keeps arriving, and written-behind data keeps
 *   leaving. It only ever tries a file's lock; a file whose lock is busy is
 *   serviced by the holder, who wakes the pump when it lets go.
 * The files, each on top of those before it (nfs_internal.h): nfs_conn.c
 * (errors, connections), nfs_dcache.c (directory handles), nfs_call.c (one
 * request), nfs_op.c (an operation by path: identity, handles), nfs_pump.c
 * (an open file's connection and when it takes a read socket, the pump),
 * nfs_rsock.c (the read socket, chunks' pipes), nfs_reg.c (open files by fileid,
 * the order of writes), nfs_paths.c (operations by path), nfs_commit.c (write
 * requests, kept until answered and until committed), nfs_files.c (open
 * files), nfs_fattr.c (an open file's attributes), nfs_url.c (the URL),
 * nfs_stats.c (requests counted); here, the ops table, create and destroy. */
#include "nfs_internal.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

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
	pipe_pool_clear(nb);
	pthread_mutex_destroy(&nb->pipe_lock);
	rpc_stats_close(nb);
	reply_spin_destroy(nb->spin);
	free(nb->down_reason);
	free(nb->volume);
	free(nb->url);
	free(nb->server);
	free(nb->export);
	free(nb);
}

static int64_t vol_set_patience(struct backend *b, int64_t ms)
{
	struct nfs_backend *nb = nfsb(b);

	if (!nb->patience_fixed)
		atomic_store(&nb->patience_ms, ms);
	return atomic_load(&nb->patience_ms);
}

static int vol_health(struct backend *b, int64_t *down_since_epoch_s, char **reason)
{
	struct nfs_backend *nb = nfsb(b);
	int ret = 1;

	pthread_mutex_lock(&nb->lock);
	if (nb->down_since) {
		ret = 0;
		if (down_since_epoch_s)
			*down_since_epoch_s = nb->down_since / 1000;
		if (reason)
			*reason = xstrdup(nb->down_reason ? nb->down_reason : "no answer");
	}
	pthread_mutex_unlock(&nb->lock);
	return ret;
}

/* A GETATTR of the root, or the mount of a fresh connection: what answers
 * it is a server that can serve calls. */
static int vol_probe(struct backend *b, int timeout_ms)
{
	struct nfs_backend *nb = nfsb(b);
	int ret = -1;

	nfs_trim_idle(nb);
	if (timeout_ms <= 0 || timeout_ms > nb->timeout_ms)
		timeout_ms = nb->timeout_ms;
	for (int attempt = 0; attempt < 2; attempt++) {
		struct op op = { .nb = nb, .cred = { geteuid(), getegid() } };
		struct call call;
		int saved;

		op.deadline = time_mono_ms() + timeout_ms;
		op.c = conn_get(nb, op.deadline, false);
		if (!op.c)
			return -1;
		ret = rpc_getattr(&op, &op.c->root, &call);
		saved = errno;
		if (ret < 0 && op.c->broken && op.c->reused && attempt == 0 && saved != ETIMEDOUT) {
			conn_put(nb, op.c);
			continue;       /* an idle connection the server dropped */
		}
		if (ret < 0 && op.c->broken) {
			char *why = saved == ETIMEDOUT ? xasprintf("no answer within %.1f s", timeout_ms / 1000.0) :
				    conn_error(op.c, "the connection failed");

			nfs_unreachable(nb, why);
			free(why);
		}
		conn_put(nb, op.c);
		errno = saved;
		break;
	}
	return ret;
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
	.set_patience = vol_set_patience,
	.health = vol_health,
	.probe = vol_probe,
};

/* A first mount is tried, briefly, so that a daemon says at start whether
 * the volume answers and the first call finds a connection; its failure is
 * no error (the volume reads unreachable until it answers). */
#define CREATE_MOUNT_MS 3000

struct backend *backend_nfs_create(const char *url, char **err)
{
	struct nfs_backend *nb = xcalloc(1, sizeof *nb);
	struct nfs_url_opts opts;
	struct conn *c;

	nb->base.ops = &nfs_ops;
	pthread_mutex_init(&nb->lock, NULL);
	pthread_mutex_init(&nb->reg_lock, NULL);
	pthread_mutex_init(&nb->pump_lock, NULL);
	nb->pipes_max = rsock_pipes_max();
	pthread_mutex_init(&nb->pipe_lock, NULL);
	nb->pump_wake = -1;
	rpc_stats_open(nb);
	if (backend_nfs_parse_url(url, &nb->server, &nb->export, &nb->url, &opts, err) < 0)
		goto fail;
	nb->volume = xasprintf("nfs://%s%s", nb->server, nb->export);
	nb->timeout_ms = opts.timeout_ms;
	nb->spin = reply_spin_create(opts.spin_us);
	if (opts.patience_ms >= 0) {
		atomic_store(&nb->patience_ms, opts.patience_ms);
		nb->patience_fixed = true;
	}
	c = conn_get(nb, time_mono_ms() + (nb->timeout_ms < CREATE_MOUNT_MS ? nb->timeout_ms : CREATE_MOUNT_MS),
		     false);
	if (c)
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
