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
 *   serviced by the holder, who wakes the pump when it lets go.
 * The files, each on top of those before it (nfs_internal.h): nfs_conn.c
 * (errors, connections), nfs_dcache.c (directory handles), nfs_call.c (one
 * request), nfs_op.c (an operation by path: identity, handles), nfs_pump.c
 * (an open file's connection, the pump), nfs_reg.c (open files by fileid,
 * the order of writes), nfs_paths.c (operations by path), nfs_files.c (open
 * files), nfs_url.c (the URL); here, the ops table, create and destroy. */
#include "nfs_internal.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>

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
