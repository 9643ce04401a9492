/* The NFS backend's write requests (struct wreq) and what is kept of them.
 * With patience a WRITE's bytes are kept until it is answered, so that it is
 * sent again on a new connection when its own died (file_resend), and, once
 * answered UNSTABLE, until a COMMIT with its verifier (f->kept), so that it is
 * sent again when the server restarted in between (file_commit, kept_resend).
 * What is kept is bounded (kept_over): a COMMIT goes out behind the writes
 * (commit_behind), and a writer waits for one. Under nfs_files.c, which
 * sends the writes; every write keeps the order of writes (nfs_reg.c). */
#include "nfs_internal.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Under f->lock: w was answered UNSTABLE; keep it until a COMMIT with its
 * verifier says it is on the server's disk. */
static void kept_add(struct backend_file *f, struct wreq *w)
{
	if (!f->kept)
		f->kept_breaks = atomic_load(&f->nb->breaks);
	else if (memcmp(f->kept->verf, w->verf, sizeof w->verf) != 0)
		f->kept_stale = true;   /* the server restarted between the two */
	w->kseq = ++f->kept_seq;
	w->next = f->kept;
	f->kept = w;
	f->kept_bytes += w->len;
	atomic_fetch_add(&f->nb->kept_total, w->len);
}

static void kept_unlink(struct backend_file *f, struct wreq **pw)
{
	struct wreq *w = *pw;

	*pw = w->next;
	f->kept_bytes -= w->len;
	atomic_fetch_sub(&f->nb->kept_total, w->len);
}

/* A COMMIT answered verf: the kept writes answered before it was sent
 * (kseq <= upto) with the same verifier are on the server's disk. */
static void kept_committed(struct backend_file *f, const char *verf, uint64_t upto)
{
	struct wreq **pw = &f->kept;

	while (*pw) {
		struct wreq *w = *pw;

		if (w->kseq <= upto && memcmp(w->verf, verf, sizeof w->verf) == 0) {
			kept_unlink(f, pw);
			free(w->data);
			free(w);
		} else {
			pw = &w->next;
		}
	}
}

/* Let go of what is kept: closed without a COMMIT, as a kernel client's
 * writes are not on the server's disk either before one. */
void kept_drop(struct backend_file *f)
{
	while (f->kept) {
		struct wreq *w = f->kept;

		kept_unlink(f, &f->kept);
		free(w->data);
		free(w);
	}
}

static void write_cb(struct rpc_context *rpc, int status, void *data, void *arg)
{
	struct wreq *w = arg;
	struct backend_file *f = w->f;
	WRITE3res *res = data;

	(void)rpc;
	if (status != RPC_STATUS_SUCCESS && w->data) {
		/* Cut off with its connection, and we still hold the bytes: it
		 * stays in flight and goes out again (file_wait). */
		w->next = f->resend;
		f->resend = w;
		return;
	}
	if (status == RPC_STATUS_SUCCESS)
		nfs_reachable(f->nb);
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

		if (res->WRITE3res_u.resok.committed != FILE_SYNC && w->data) {
			memcpy(w->verf, verf, sizeof w->verf);
			kept_add(f, w);
			return;
		}
		if (res->WRITE3res_u.resok.committed != FILE_SYNC) {
			/* Not kept: a new verifier at the COMMIT can only be
			 * reported (vol_fsync). */
			if (f->have_verf && memcmp(f->verf, verf, sizeof f->verf) != 0)
				f->verf_changed = true;
			memcpy(f->verf, verf, sizeof f->verf);
			f->have_verf = true;
		}
	}
	free(w->data);
	free(w);
}

int queue_write(struct backend_file *f, struct wreq *w, const void *buf)
{
	WRITE3args args;

	memset(&args, 0, sizeof args);
	set_fh(&args.file, &f->fh);
	args.offset = w->off;
	args.count = w->len;
	args.stable = UNSTABLE;
	args.data.data_len = w->len;
	args.data.data_val = (char *)buf;
	/* libnfs copies the data into the request here. */
	rpc_count(f->nb, NFS3_WRITE);
	return rpc_nfs3_write_async(f->c->rpc, write_cb, &args, w);
}

/* Under f->lock, with a live f->c: send again the writes a dead connection
 * cut off. They kept their place in f->inflight and in the file's order
 * (reg), so nothing overtook them meanwhile. */
int file_resend(struct backend_file *f)
{
	int n = 0;

	/* Once per file and outage: worth a line in the operators' log. */
	for (const struct wreq *w = f->resend; w; w = w->next)
		n++;
	log_info("storage %s: %d writes of an open file cut off with their connection sent again",
		 f->nb->volume, n);
	while (f->resend) {
		struct wreq *w = f->resend;

		f->resend = w->next;
		w->next = NULL;
		if (queue_write(f, w, w->data) < 0) {
			w->next = f->resend;
			f->resend = w;
			f->c->broken = true;
			errno = EIO;
			return -1;
		}
	}
	conn_pump(f->c);
	return 0;
}

/* The patience is spent: the writes waiting to go again fail with err. */
void file_fail_resends(struct backend_file *f, int err)
{
	while (f->resend) {
		struct wreq *w = f->resend;

		f->resend = w->next;
		f->inflight--;
		f->inflight_bytes -= w->len;
		reg_write_done(f, w->range);
		if (!f->werr)
			f->werr = err;
		free(w->data);
		free(w);
	}
}

static void commit_cb(struct rpc_context *rpc, int status, void *data, void *arg)
{
	struct backend_file *f = arg;
	COMMIT3res *res = data;

	(void)rpc;
	f->committing = 0;
	/* A failure frees nothing: the writes stay kept, for the next COMMIT. */
	if (status != RPC_STATUS_SUCCESS)
		return;
	nfs_reachable(f->nb);
	if (res->status != NFS3_OK)
		return;
	kept_committed(f, res->COMMIT3res_u.resok.verf, f->commit_upto);
	/* What it covered and did not free has another verifier: the server
	 * restarted since it answered them. */
	for (const struct wreq *w = f->kept; w; w = w->next)
		if (w->kseq <= f->commit_upto)
			f->kept_stale = true;
}

/* Under f->lock, with a live f->c: a COMMIT behind the writes, so that what
 * is kept is let go of while the writer goes on. Kept writes it finds with
 * another verifier stay for file_commit. */
void commit_behind(struct backend_file *f)
{
	COMMIT3args args;

	memset(&args, 0, sizeof args);
	set_fh(&args.file, &f->fh);
	f->commit_upto = f->kept_seq;
	rpc_count(f->nb, NFS3_COMMIT);
	if (rpc_nfs3_commit_async(f->c->rpc, commit_cb, &args, f) == 0)
		f->committing = 1;
}

static int wreq_seq_cmp(const void *a, const void *b)
{
	const struct wreq *x = *(struct wreq *const *)a, *y = *(struct wreq *const *)b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Under f->lock, nothing in flight: send the kept writes again, in the order
 * they were first sent, each after the answer of any earlier one of the same
 * bytes (nfs_reg.c). They go back in flight; their answers keep them again
 * with the new verifier. */
static int kept_resend(struct backend_file *f)
{
	struct wreq **all, *w;
	size_t n = 0, i;
	int ret = 0;

	for (w = f->kept; w; w = w->next)
		n++;
	all = xmalloc(n * sizeof *all);
	for (i = 0; f->kept; i++) {
		all[i] = f->kept;
		kept_unlink(f, &f->kept);
	}
	qsort(all, n, sizeof *all, wreq_seq_cmp);
	for (i = 0; i < n; i++) {
		w = all[i];
		while (f->inflight > 0 && (f->inflight_bytes + w->len > WB_WINDOW ||
					   reg_mine_overlap(f, w->off, w->off + w->len))) {
			if (file_wait(f, &f->inflight, f->inflight - 1) < 0)
				goto fail;
		}
		if (f->werr) {
			errno = f->werr;
			goto fail;
		}
		w->next = NULL;
		w->range = reg_write_sent(f, w->off, w->len);
		f->inflight++;
		f->inflight_bytes += w->len;
		/* No connection now: it waits its turn on f->resend, as one a
		 * dead connection cut off (file_wait sends it). */
		if ((f->c && !f->c->broken) || file_conn(f) == 0) {
			if (queue_write(f, w, w->data) == 0)
				continue;
			f->c->broken = true;
		}
		w->next = f->resend;
		f->resend = w;
	}
	goto out;
fail:
	/* Those not sent stay kept: the next COMMIT tries them again. */
	ret = -1;
	for (; i < n; i++)
		kept_add(f, all[i]);
out:
	if (f->c && !f->c->broken)
		conn_pump(f->c);
	free(all);
	return ret;
}

/* Under f->lock: every write answered, then a COMMIT. Kept writes the server
 * answered with another verifier than the COMMIT's (it restarted since and
 * may have lost them) are sent again and committed again, within the
 * patience; writes not kept (no patience) whose verifier changed are lost:
 * EIO. 0: every write of f is on the server's disk. */
int file_commit(struct backend_file *f)
{
	struct op op = { .nb = f->nb, .cred = f->cred };
	int64_t give_up = time_mono_ms() + atomic_load(&f->nb->patience_ms);
	struct patience pat = { 0 };
	COMMIT3args args;
	struct call call;
	int ret;

	memset(&args, 0, sizeof args);
	set_fh(&args.file, &f->fh);
	for (;;) {
		if (file_drain(f) < 0)
			return -1;
		if (f->committing > 0 && file_wait(f, &f->committing, 0) < 0)
			f->committing = 0;      /* its connection is gone: ours is next */
		do {
			ret = -1;
			if (file_conn(f) < 0)
				continue;
			op.c = f->c;
			op.deadline = time_mono_ms() + f->nb->timeout_ms;
			call_init(&call, take_commit);
			rpc_count(f->nb, NFS3_COMMIT);
			ret = call_finish(&op, &call, rpc_nfs3_commit_async(f->c->rpc, call_cb, &args, &call));
		} while (ret < 0 && file_retry(f, &pat));
		if (ret < 0) {
			if (!f->werr)
				f->werr = errno;
			return -1;
		}
		kept_committed(f, call.verf, UINT64_MAX);
		/* A new verifier means the server restarted and may have lost
		 * unstable writes we no longer hold: say so. */
		if (f->verf_changed || (f->have_verf && memcmp(f->verf, call.verf, sizeof f->verf) != 0)) {
			f->werr = EIO;
			errno = EIO;
			return -1;
		}
		if (!f->kept)
			break;
		if (time_mono_ms() >= give_up) {
			f->werr = EIO;
			errno = EIO;
			return -1;
		}
		/* Rare (a restart since the answers): worth a line. */
		log_info("storage %s: the server restarted before %.1f MiB of an open file's writes were committed: sent again",
			 f->nb->volume, (double)f->kept_bytes / (1 << 20));
		if (kept_resend(f) < 0)
			return -1;
	}
	f->unstable = false;
	f->have_verf = f->verf_changed = false;
	f->kept_stale = false;
	return 0;
}

bool kept_over(const struct backend_file *f)
{
	return f->kept_bytes >= KEEP_FILE_MAX ||
	       (f->kept_bytes >= KEEP_SQUEEZE && atomic_load(&f->nb->kept_total) >= KEEP_TOTAL_MAX);
}
