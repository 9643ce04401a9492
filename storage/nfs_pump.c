/* An open file's connection in the NFS backend, and the pump: the file takes a
 * connection at its first I/O and services it only under its own lock
 * (file_conn, file_wait, file_drain), and a read socket once it reads as a
 * stream (file_rsock, nfs_rsock.c). The pump thread (one per backend,
 * started with the first file I/O) takes the replies of files nobody is
 * waiting on and pushes their queued requests. It only ever tries a file's
 * lock; a file whose lock is busy is serviced by the holder, who wakes the
 * pump when it lets go (file_unlock). A file with only a few small writes in
 * flight is left to its own next call (only_small_writes). */
#include "nfs_internal.h"
#include "log.h"
#include "slist.h"
#include "util.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define PUMP_MAX 128                /* files the pump watches at once; others wait for their callers */
#define PUMP_SMALL_BYTES (64u << 10) /* writes in flight the pump leaves to the file's next call */

/* A file's connection as the pump should poll it. */
struct pump_state {
	int fd;
	short events;
	uint64_t seq;
};

/* Drop the file's connection after a failure: requests still in flight are
 * cancelled (their callbacks record the error) and the next I/O mounts anew. */
void file_drop_conn(struct backend_file *f)
{
	struct conn *c = f->c;

	if (!c)
		return;
	f->c = NULL;
	c->broken = true;
	conn_put(f->nb, c);
}

int file_conn(struct backend_file *f)
{
	if (f->c && f->c->broken)
		file_drop_conn(f);
	if (!f->c) {
		f->c = conn_get(f->nb, time_mono_ms() + f->nb->timeout_ms, !nfs_patient(f->nb));
		if (!f->c)
			return -1;
	}
	conn_as(f->c, &f->cred);
	return 0;
}

/* f's connection failed (or timed out): say the volume is unreachable and
 * drop it; writes in flight whose bytes are kept go to f->resend. */
static void file_lost(struct backend_file *f, int err)
{
	char *why;

	if (!f->c)
		return;
	why = err == ETIMEDOUT ? xasprintf("no answer within %.1f s", f->nb->timeout_ms / 1000.0) :
	      conn_error(f->c, "the connection failed");
	nfs_unreachable(f->nb, why);
	free(why);
	file_drop_conn(f);
}

bool file_retry(struct backend_file *f, struct patience *pat)
{
	int saved = errno;

	/* An error the server answered is the answer; a request that could
	 * not be queued would fail again. */
	if (f->c && (!f->c->broken || f->c->unsent))
		return false;
	file_lost(f, saved);
	errno = saved;
	return patience_wait(f->nb, pat);
}

/* Wait until at most `left` requests of kind count remain in flight. With
 * patience, writes cut off by a dead connection are sent again on a new one
 * until they are answered or the patience is spent. */
int file_wait(struct backend_file *f, const int *count, int left)
{
	struct patience pat = { 0 };

	for (;;) {
		int saved = EIO;

		if (f->resend && file_conn(f) == 0)
			file_resend(f);
		if (f->c && !f->c->broken) {
			if (conn_wait(f->c, count, left, time_mono_ms() + f->nb->timeout_ms) == 0 &&
			    !f->c->broken)
				return 0;
			saved = errno ? errno : EIO;
			/* Cancelling what is in flight runs the callbacks: *count
			 * drops, or the writes move to f->resend. */
			file_lost(f, saved);
		} else if (!f->resend) {
			if (f->c)
				file_drop_conn(f);
			if (*count <= left)
				return 0;
			errno = EIO;
			return -1;
		} else {
			saved = errno ? errno : EIO;       /* no connection to be had */
		}
		if (!f->resend) {
			errno = saved;
			return -1;
		}
		if (!patience_wait(f->nb, &pat)) {
			file_fail_resends(f, saved == ETIMEDOUT ? ETIMEDOUT : EIO);
			errno = saved == ETIMEDOUT ? ETIMEDOUT : EIO;
			return -1;
		}
	}
}

/* Every write sent and answered; the first error, if any, in errno. */
int file_drain(struct backend_file *f)
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

/* Under f->lock: f's read socket, made once it reads as a stream (want:
 * past its first chunk, so that a small file costs no connection of its
 * own); NULL where none can be had (the reads go through libnfs then). */
void file_rsock(struct backend_file *f, bool want)
{
	/* A socket that failed, or that the server closed while the file sat
	 * idle, is made anew. Its chunks in flight end with it (pending ones
	 * as orphans). */
	if (f->rs && (rsock_broken(f->rs) || rsock_stale(f->rs))) {
		ra_drop(f);
		rsock_close(f->rs);
		f->rs = NULL;
	}
	if (!f->rs && !f->rs_off && want) {
		int64_t deadline = time_mono_ms() + f->nb->timeout_ms;

		/* What was asked on the connection is answered first: from now
		 * on only the socket is waited on (chunk_wait, pump_state). */
		for (int i = 0; i < f->nra; i++)
			if (f->ra[i]->pending && conn_wait(f->c, &f->ra[i]->pending, 0, deadline) < 0)
				return;
		if (f->orphans > 0 && conn_wait(f->c, &f->orphans, 0, deadline) < 0)
			return;
		f->rs = rsock_open(f->nb, f->c, deadline);
		f->rs_off = !f->rs;
	}
}

int chunk_wait(struct backend_file *f, struct chunk *ch)
{
	int64_t deadline = time_mono_ms() + f->nb->timeout_ms;

	return f->rs ? rsock_wait(f->rs, &ch->pending, 0, deadline) : conn_wait(f->c, &ch->pending, 0, deadline);
}

bool file_io_broken(const struct backend_file *f)
{
	return (f->c && f->c->broken) || (f->rs && rsock_broken(f->rs));
}

/* ---- the pump ---- */

/* Under f->lock: all f has in flight is a few small writes, sent whole. Their
 * replies wait in the socket for f's next call (its close at the latest, or
 * another file's wait on them: reg_wait serves f): waking the pump for each
 * costs tar's many small files two thread switches apiece (bench/storage,
 * meta_tar_ratio). A stream's writes, a COMMIT or reads still go to the pump. */
static bool only_small_writes(const struct backend_file *f)
{
	if (f->committing > 0 || f->heavy || f->inflight_bytes > PUMP_SMALL_BYTES || !f->c || f->c->broken)
		return false;
	if (f->orphans > 0 || (f->rs && rsock_busy(f->rs)))
		return false;
	for (int i = 0; i < f->nra; i++)
		if (f->ra[i]->pending)
			return false;
	return !(nfs_which_events(f->c->nfs) & POLLOUT);
}

/* Under f->lock: what is in flight on f's connection, for the pump. */
static void pump_state(struct backend_file *f, struct pump_state *ps)
{
	bool busy = f->inflight > 0 || f->committing > 0;
	bool reading = f->rs && !rsock_broken(f->rs) && rsock_busy(f->rs);

	/* Without a read socket, reads are on the connection too. */
	if (!f->rs) {
		busy = busy || f->orphans > 0;
		for (int i = 0; i < f->nra && !busy; i++)
			busy = f->ra[i]->pending;
	}
	ps->seq = ++f->pump_seq;
	ps->fd = -1;
	ps->events = 0;
	if (busy && only_small_writes(f))
		busy = false;
	/* One descriptor per file: its writes' connection while they are in
	 * flight (a writer drops its read-ahead), else its read socket. */
	if (busy && f->c && !f->c->broken) {
		ps->fd = nfs_get_fd(f->c->nfs);
		ps->events = (short)nfs_which_events(f->c->nfs);
	} else if (reading) {
		ps->fd = rsock_fd(f->rs);
		ps->events = rsock_events(f->rs);
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
			if (f->rs)
				rsock_pump(f->rs);
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
void file_unlock(struct backend_file *f)
{
	struct pump_state ps;

	pump_state(f, &ps);
	pthread_mutex_unlock(&f->lock);
	pump_note(f, &ps);
}

/* f is being freed: the pump must not find it any more. */
void pump_forget(struct backend_file *f)
{
	struct nfs_backend *nb = f->nb;

	pthread_mutex_lock(&nb->pump_lock);
	SLIST_UNLINK(struct backend_file, &nb->pumped, f, pump_next);
	pthread_mutex_unlock(&nb->pump_lock);
}

void pump_shutdown(struct nfs_backend *nb)
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
