/* The NFS backend's open files. Writes are UNSTABLE and written behind (up to
 * WB_WINDOW bytes in flight per file); reads of a sequential stream are read
 * ahead in chunks of READ_CHUNK (RA_WINDOW bytes ahead), on the file's read
 * socket where it has one (nfs_rsock.c). flush/close
 * wait for every write reply and report the first error; fsync also COMMITs
 * and checks the write verifier, so data fsync acknowledged is on the
 * server's disk. With patience, answered UNSTABLE writes are kept until
 * committed and sent again when the server restarted before (file_commit,
 * nfs_commit.c, with the write requests themselves). Every write and read
 * keeps the order of writes (nfs_reg.c). */
#include "nfs_internal.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RA_WINDOW (8u << 20)        /* read-ahead bytes beyond a sequential read */
/* A chunk read ahead is at most this (and the server's rtmax): the mount's
 * largest read (fs/main.c, max_read), so that a chunk is what the kernel
 * asks for and leaves whole. libfuse splices a reply only where its pipe
 * takes the reply with its header, and a pipe holds 1 MiB at most
 * (pipe-max-size) without CAP_SYS_RESOURCE: a 1 MiB reply is copied. */
#define READ_CHUNK (512u << 10)
/* A file that moved this much went through read-ahead chunks, write-behind
 * requests and (with patience) kept copies: megabytes of heap, freed at its
 * close but kept by malloc for reuse. Once no such file has been open for
 * TRIM_IDLE_MS the mount hands the free memory back, so that its size after
 * a burst of readers or writers is its caches' and not the burst's
 * (measured: 380-540 MB resident after bench/storage's 8 readers and 8
 * writers, 25-32 MB with the trim). Not at once: the next file would fault
 * its memory in again (some 3% of a 1 GiB write). */
#define HEAVY_BYTES (16ull << 20)
#define TRIM_IDLE_MS 5000

/* After an exclusive create that was tried again (the first try got no
 * answer) found the name taken: whether it is the empty file of our first
 * try, owned by whom we act for. If so its handle and attributes go to a. */
static bool created_by_us(struct op *op, struct open_args *a, const struct fhbuf *dir, const char *name)
{
	struct call call;

	if (rpc_lookup(op, dir, name, &call) < 0 || !call.have_fh || !call.have_attr ||
	    call.attr.type != NF3REG || call.attr.uid != op->cred.uid || call.attr.size != 0) {
		errno = EEXIST;
		return false;
	}
	a->fh = call.fh;
	a->attr = call.attr;
	return true;
}

static int open_found(struct op *op, struct open_args *a, bool size_known);

static int do_open(struct op *op, void *arg)
{
	struct open_args *a = arg;
	bool found = false, size_known = true;
	struct fhbuf dir;
	const char *name;
	struct call call;

	if (!(a->flags & O_CREAT)) {
		switch (dcache_lookup(op->nb, a->path, &a->fh, &a->attr)) {
		case DCACHE_ABSENT:
			errno = ENOENT;
			return -1;
		case DCACHE_HANDLE_ONLY:
			size_known = false;
			/* fall through */
		case DCACHE_FULL:
			return open_found(op, a, size_known);
		}
	}
	if (lookup_parent(op, a->path, &dir, &name) < 0)
		return -1;
	for (int tries = 0; tries < 3 && !found; tries++) {
		/* Creating: try it first (a new file costs one request), and open
		 * what is there only when it exists already. */
		if ((a->flags & O_CREAT) && tries == 0) {
			if (do_create(op, a, &dir, name) == 0)
				return 0;
			if (errno == EEXIST && (a->flags & O_EXCL) && op->retried &&
			    created_by_us(op, a, &dir, name))
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
	return open_found(op, a, true);
}

/* An existing file opened: its type checked, and truncated for O_TRUNC
 * (size_known false: a->attr holds only its type and fileid). */
static int open_found(struct op *op, struct open_args *a, bool size_known)
{
	int acc = a->flags & O_ACCMODE;

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
	if ((a->flags & O_TRUNC) && acc != O_RDONLY && (a->attr.size > 0 || !size_known)) {
		sattr3 sa;

		memset(&sa, 0, sizeof sa);
		sa.size.set_it = 1;
		if (reg_wait_fileid(op->nb, a->attr.fileid) < 0 || rpc_setattr(op, &a->fh, &sa, NULL) < 0)
			return -1;
		a->attr.size = 0;
		reg_truncated(op->nb, a->attr.fileid, 0);
	}
	return 0;
}

/* A file just created: its attributes are the create's until something of
 * ours changes it (a write, a SETATTR, another open: nfs_dcache.c), for the
 * kernel's getattr that follows the create, by path and by handle. A write
 * by another open file cannot come before the stamp: nobody knew the file. */
static void created_attr(struct backend_file *f, const char *path, const struct open_args *a)
{
	f->attr = a->attr;
	f->attr_seq = dcache_put_mine(f->nb, path, &a->fh, &a->attr, dcache_stamp(f->nb));
	f->attr_expires = time_mono_ms() + ATTR_TTL_MS;
}

int vol_open(struct backend *b, const struct backend_cred *cred, const char *path,
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
	/* What another open file of the inode keeps goes to the server first:
	 * this one reads and writes as the server says (nfs_fattr.c). */
	if (reg_settle_others(nb, f->reg, f) < 0) {
		int saved = errno;

		reg_close(nb, f->reg);
		pthread_mutex_destroy(&f->lock);
		free(f);
		errno = saved;
		return -1;
	}
	/* Attributes cached before the open (nfs_dcache.c) are not the open
	 * file's: theirs come from the server and the writes in flight. */
	dcache_changed(nb, a.attr.fileid);
	if (a.created) {
		/* attr before created: a chmod by path may use it from then on. */
		created_attr(f, path, &a);
		f->path = xstrdup(path);
		f->created = true;
		reg_set_creator(nb, f, true);
	}
	f->eof_at = UINT64_MAX;
	f->pump_fd = -1;
	*file = f;
	return 0;
}

static void read_cb(struct rpc_context *rpc, int status, void *data, void *arg)
{
	struct chunk *ch = arg;
	READ3res *res = data;

	(void)rpc;
	if (ch->orphan) {
		ch->f->orphans--;
		chunk_free(ch);
		return;
	}
	if (status != RPC_STATUS_SUCCESS) {
		ch->err = status == RPC_STATUS_TIMEOUT ? ETIMEDOUT : EIO;
		/* No answer: the connection is no good (a patient reader tries
		 * again on a new one). */
		if (ch->f->c)
			ch->f->c->broken = true;
	} else if (res->status != NFS3_OK) {
		nfs_reachable(ch->f->nb);
		ch->err = nfs_errno(res->status);
	} else {
		nfs_reachable(ch->f->nb);
		READ3resok *ok = &res->READ3res_u.resok;
		uint32_t n = ok->data.data_len < ch->len ? ok->data.data_len : ch->len;

		memcpy(ch->buf, ok->data.data_val, n);
		ch->got = n;
		ch->eof = ok->eof || n < ch->len;
	}
	ch->pending = 0;
}

/* Let go of one chunk of f (already out of f->ra): freed now, or, while its
 * READ is in flight, left to read_cb as an orphan. */
static void ra_let_go(struct backend_file *f, struct chunk *ch)
{
	if (!ch->pending) {
		chunk_free(ch);
	} else {
		ch->orphan = true;
		f->orphans++;
	}
}

/* Forget the read-ahead: chunks in flight finish as orphans. */
void ra_drop(struct backend_file *f)
{
	for (int i = 0; i < f->nra; i++)
		ra_let_go(f, f->ra[i]);
	f->nra = 0;
	f->eof_at = UINT64_MAX;
}

void nfs_trim_idle(struct nfs_backend *nb)
{
	int64_t at = atomic_load(&nb->trim_at);

	if (at == 0 || time_mono_ms() < at || atomic_load(&nb->heavy_open) > 0 ||
	    !atomic_compare_exchange_strong(&nb->trim_at, &at, 0))
		return;
	malloc_trim(0);
}

/* Under f->lock: n more bytes moved by f (see HEAVY_BYTES). */
static void file_moved(struct backend_file *f, uint64_t n)
{
	if (f->heavy)
		return;
	f->moved += n;
	if (f->moved >= HEAVY_BYTES) {
		f->heavy = true;
		atomic_fetch_add(&f->nb->heavy_open, 1);
	}
}

ssize_t vol_pwrite(struct backend_file *f, const void *buf, size_t size, off_t off)
{
	uint64_t start = (uint64_t)off, end = start + size;
	struct patience pat = { 0 };
	bool keep = nfs_patient(f->nb);
	ssize_t ret = -1;
	size_t done = 0;

	dcache_changed(f->nb, f->reg->fileid);
	/* Another open file's write of these bytes goes first... */
	if (reg_wait(f->nb, f->reg, f, start, end) < 0)
		return -1;
	pthread_mutex_lock(&f->lock);
	if (f->werr) {
		errno = f->werr;
		goto out;
	}
	/* Kept times would undo the mtime this write moves. */
	if (file_settle_attrs(f) < 0)
		goto out;
	if (f->nra)
		ra_drop(f);
	/* ...and so does our own: only a writer going back over what it just
	 * wrote waits here, a sequential one never does. */
	if (f->inflight > 0 && reg_mine_overlap(f, start, end) && file_wait(f, &f->inflight, 0) < 0)
		goto fail;
	while (file_conn(f) < 0) {
		if (!file_retry(f, &pat))
			goto out;
	}
	if (f->resend && file_resend(f) < 0 && file_wait(f, &f->inflight, f->inflight - 1) < 0)
		goto fail;
	/* What is kept uncommitted is bounded: past the bound, the writer waits
	 * for the COMMIT behind it, or sends one and waits (as a kernel client
	 * under dirty-page pressure). */
	if (kept_over(f) && f->committing > 0 && file_wait(f, &f->committing, 0) < 0)
		f->committing = 0;
	if (kept_over(f)) {
		if (file_commit(f) < 0)
			goto fail;
		while (file_conn(f) < 0) {
			if (!file_retry(f, &pat))
				goto fail;
		}
	}
	while (done < size) {
		uint32_t n = (uint32_t)(size - done < f->c->wmax ? size - done : f->c->wmax);
		struct wreq *w;

		/* Write-behind: wait only when the window is full. */
		while (f->inflight > 0 && f->inflight_bytes + n > WB_WINDOW) {
			if (file_wait(f, &f->inflight, f->inflight - 1) < 0)
				goto fail;
		}
		if (f->werr || !f->c)
			goto fail;
		w = xcalloc(1, sizeof *w);
		w->f = f;
		w->off = (uint64_t)off + done;
		w->len = n;
		w->seq = ++f->wseq;
		/* With patience the bytes are kept until answered: a connection
		 * that dies takes libnfs's copy with it. */
		if (keep) {
			w->data = xmalloc(n);
			memcpy(w->data, (const char *)buf + done, n);
		}
		w->range = reg_write_sent(f, w->off, n);
		if (queue_write(f, w, (const char *)buf + done) < 0) {
			reg_write_done(f, w->range);
			free(w->data);
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
	file_moved(f, size);
	if (f->kept_bytes >= KEEP_COMMIT_AT && !f->committing)
		commit_behind(f);
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
	/* Again once its requests are in reg: attributes asked after the
	 * first move but answered before the write are not kept. */
	dcache_changed(f->nb, f->reg->fileid);
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
	ch->pfd[0] = ch->pfd[1] = -1;
	ch->pending = 1;
	if (f->rs) {
		if (rsock_read(f->rs, ch, &f->fh, &f->cred) < 0) {
			chunk_free(ch);
			errno = EIO;
			return -1;
		}
		f->ra[f->nra++] = ch;
		return 0;
	}
	ch->buf = xmalloc(csize);
	memset(&args, 0, sizeof args);
	set_fh(&args.file, &f->fh);
	args.offset = off;
	args.count = csize;
	rpc_count(f->nb, NFS3_READ);
	if (rpc_nfs3_read_async(f->c->rpc, read_cb, &args, ch) < 0) {
		chunk_free(ch);
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

		if (ch->off + ch->len <= keep_from)
			ra_let_go(f, ch);
		else
			f->ra[j++] = ch;
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
	chunk_free(ch);
}

/* What a read hands over instead of copying into the caller's buffer: a
 * malloc'ed buffer, or the bytes moved into the caller's pipe. */
struct taken {
	char *buf;
	struct backend_pipe *pipe;      /* NULL: the caller has none */
};

/* Forget what a read that is tried again had handed over. */
static void taken_drop(struct taken *t)
{
	if (!t)
		return;
	free(t->buf);
	t->buf = NULL;
	if (t->pipe && t->pipe->used) {
		pipe_empty(t->pipe->rfd);
		t->pipe->used = false;
	}
}

/* Read into buf; or, with buf NULL, into what is handed over in *take: a
 * chunk read ahead that is exactly what was asked for is handed over as it
 * is (its pipe, or its buffer). */
static ssize_t file_read_once(struct backend_file *f, char *buf, size_t size, off_t off, struct taken *take,
			      uint64_t *gen_seen, bool *lost)
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
	if (file_conn(f) < 0) {
		*lost = true;
		goto out;
	}
	csize = f->c->rmax < READ_CHUNK ? f->c->rmax : READ_CHUNK;
	/* The kernel sends a stream's reads from several threads, a little out
	 * of order: near the last end counts as sequential. */
	sequential = start + 2 * csize >= f->last_end && start <= f->last_end + 2 * csize &&
		     (start > 0 || f->last_end == 0);
	file_rsock(f, sequential && start >= csize);
	if (f->c->broken)
		goto lost;      /* no answer to what was asked before it */
	if (!sequential)
		ra_drop(f);
	ra_trim(f, start >= csize ? (start / csize - 1) * csize : 0);
	ahead = sequential ? RA_WINDOW : 0;
	for (pos = start / csize * csize; pos < end + ahead; pos += csize)
		if (ra_issue(f, pos, (uint32_t)csize) < 0)
			goto fail;
	if (f->rs)
		rsock_pump(f->rs);
	else
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
		if (ch->pending && chunk_wait(f, ch) < 0)
			goto lost;
		if (ch->err) {
			errno = ch->err;
			if (file_io_broken(f))
				goto lost;
			goto fail;
		}
		if (ch->eof && ch->off + ch->got < f->eof_at)
			f->eof_at = ch->off + ch->got;
		if (pos >= ch->off + ch->got)
			break;
		if (!buf && copied == 0 && pos == ch->off && ch->got == end - pos) {
			/* The kernel asked for this chunk exactly: no copy. */
			if (take->pipe && ch->pfd[0] >= 0 && ch->in_pipe == ch->got &&
			    chunk_move_pipe(ch, take->pipe) == 0) {
				take->pipe->used = true;
			} else {
				if (chunk_to_memory(ch) < 0) {
					errno = ch->err;
					goto fail;
				}
				take->buf = ch->buf;
				ch->buf = NULL;
			}
			copied = ch->got;
			pos = end;
			ra_remove(f, ch);
			break;
		}
		if (chunk_to_memory(ch) < 0) {
			errno = ch->err;
			goto fail;
		}
		if (!buf)
			buf = take->buf = xmalloc(size ? size : 1);
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
	file_moved(f, copied);
	ret = (ssize_t)copied;
	goto out;
lost:
	/* The server did not answer: the read may be tried again. */
	*lost = true;
	{
		int saved = errno;
		char *why = saved == ETIMEDOUT ?
			xasprintf("no answer within %.1f s", f->nb->timeout_ms / 1000.0) :
			conn_error(f->c, "the connection failed");

		nfs_unreachable(f->nb, why);
		free(why);
		if (f->c)
			f->c->broken = true;
		errno = saved;
	}
fail:
	{
		int saved = errno;

		ra_drop(f);
		if (f->rs && rsock_broken(f->rs)) {
			rsock_close(f->rs);
			f->rs = NULL;
		}
		if (f->c && f->c->broken)
			file_drop_conn(f);
		errno = saved;
		/* FUSE takes a short read as the end: report the error instead. */
	}
out:
	file_unlock(f);
	return ret;
}

/* A read sees every write that returned before it, through any open file of
 * this mount: those of the bytes asked for are waited for first. One beyond
 * them may still make the file longer than the server says: a read that
 * comes back short while such a write is (or was, during the read) in
 * flight waits for the writes past its end and reads again. */
/* file_read_once, tried again with the backend's patience while the server
 * does not answer. */
static ssize_t file_read_patient(struct backend_file *f, char *buf, size_t size, off_t off,
				 struct taken *take, uint64_t *gen_seen)
{
	struct patience pat = { 0 };

	for (;;) {
		bool lost = false;
		ssize_t n = file_read_once(f, buf, size, off, take, gen_seen, &lost);

		if (n >= 0 || !lost || !patience_wait(f->nb, &pat))
			return n;
		taken_drop(take);
	}
}

static ssize_t file_read(struct backend_file *f, char *buf, size_t size, off_t off, struct taken *take)
{
	uint64_t start = (uint64_t)off, gen;
	ssize_t n;

	if (reg_wait(f->nb, f->reg, f, start, start + size) < 0)
		return -1;
	n = file_read_patient(f, buf, size, off, take, &gen);
	if (n < 0 || (size_t)n == size)
		return n;
	if (!reg_others_past(f, start + (uint64_t)n) && reg_gen(f->nb, f->reg) == gen)
		return n;
	if (reg_wait(f->nb, f->reg, f, start + (uint64_t)n, UINT64_MAX) < 0)
		return -1;
	taken_drop(take);
	return file_read_patient(f, buf, size, off, take, &gen);
}

ssize_t vol_pread(struct backend_file *f, void *buf, size_t size, off_t off)
{
	return file_read(f, buf, size, off, NULL);
}

ssize_t vol_pread_take(struct backend_file *f, size_t size, off_t off, char **buf, struct backend_pipe *pipe)
{
	struct taken take = { .pipe = pipe };
	ssize_t n;

	n = file_read(f, NULL, size, off, &take);
	if (n < 0) {
		int saved = errno;

		taken_drop(&take);
		errno = saved;
	} else if (!take.buf && !(pipe && pipe->used)) {
		take.buf = xmalloc(1);  /* nothing read: the end of the file */
	}
	*buf = take.buf;
	return n;
}

int vol_fsync(struct backend_file *f, int datasync)
{
	int ret = -1;

	(void)datasync;
	/* The file's data, whichever open file wrote it. */
	if (reg_wait(f->nb, f->reg, f, 0, UINT64_MAX) < 0)
		return -1;
	pthread_mutex_lock(&f->lock);
	if (file_drain(f) < 0 || file_settle_attrs(f) < 0)
		goto out;
	ret = f->unstable ? file_commit(f) : 0;
out:
	file_unlock(f);
	return ret;
}

/* Whether f's connection may have seen the server restart: lost, or, with
 * nothing asked, readable or hung up (the server closed it). A reply to a
 * read ahead also reads so: a COMMIT too many, not a loss. */
static bool file_conn_dropped(const struct backend_file *f)
{
	struct pollfd p;

	if (!f->c || f->c->broken)
		return true;
	p.fd = nfs_get_fd(f->c->nfs);
	p.events = POLLIN;
	p.revents = 0;
	return poll(&p, 1, 0) != 0;
}

int vol_flush(struct backend_file *f)
{
	int ret;

	pthread_mutex_lock(&f->lock);
	ret = file_drain(f);
	if (ret == 0)
		ret = file_settle_attrs(f);
	/* The server may have restarted since it answered what f keeps (a
	 * verifier changed, a connection was lost): then it may have lost it,
	 * and a close that says all is well commits first, sending again what
	 * needs it. Otherwise close does not commit (one COMMIT behind the
	 * writes may still be on its way: its answer tells). */
	if (ret == 0 && f->kept && f->committing > 0 && file_wait(f, &f->committing, 0) < 0)
		f->committing = 0;
	if (ret == 0 && f->kept &&
	    (f->kept_stale || atomic_load(&f->nb->breaks) != f->kept_breaks || file_conn_dropped(f)))
		ret = file_commit(f);
	file_unlock(f);
	return ret;
}

int vol_close(struct backend_file *f)
{
	uint64_t fileid = f->reg->fileid;
	int ret, saved;

	pthread_mutex_lock(&f->lock);
	ret = file_drain(f);
	/* Flush sent what f kept, unless it failed first: sent now or let go. */
	if (file_settle_attrs(f) < 0)
		ret = -1;
	reg_set_creator(f->nb, f, false);
	saved = errno;
	file_fail_resends(f, EIO);
	if (f->committing > 0 && file_wait(f, &f->committing, 0) < 0)
		file_drop_conn(f);
	kept_drop(f);
	ra_drop(f);
	rsock_close(f->rs);     /* its orphans go with it */
	f->rs = NULL;
	if (f->orphans > 0 && file_wait(f, &f->orphans, 0) < 0)
		file_drop_conn(f);
	conn_put(f->nb, f->c);
	f->c = NULL;
	pthread_mutex_unlock(&f->lock);
	reg_unpinned_wait(f->nb, f);
	pump_forget(f);
	pthread_mutex_destroy(&f->lock);
	reg_close(f->nb, f->reg);
	/* What its writes changed is for the server to say from now on. */
	dcache_changed(f->nb, fileid);
	if (f->heavy && atomic_fetch_sub(&f->nb->heavy_open, 1) == 1)
		atomic_store(&f->nb->trim_at, time_mono_ms() + TRIM_IDLE_MS);
	free(f->path);
	free(f);
	errno = saved;
	return ret;
}
