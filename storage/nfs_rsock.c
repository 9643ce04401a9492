/* An open file's read socket in the NFS backend: its read-ahead READs go out
 * on a TCP connection of its own, to the server its libnfs connection
 * mounted, and the data of each reply is spliced from the socket into the
 * chunk's pipe instead of being copied twice (into libnfs's buffer, then into
 * ours). A chunk the kernel asks for whole leaves as that pipe, which libfuse
 * splices into its reply: the mount copies the data once (into the kernel's
 * page cache), where it copied it three times (measured in docs/design.md).
 * Only READ is spoken here (NFSv3 over ONC RPC, AUTH_SYS, record marking);
 * everything else stays on libnfs. A chunk whose pipe cannot be had (no
 * descriptors, a pipe too small for the reply's pieces) takes its data into
 * memory instead, as before. Used under the file's lock, and by the pump. */
#include "nfs_internal.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define NFS_PROGRAM 100003
#define NFS_V3 3
#define RPC_CALL 0
#define RPC_REPLY 1
#define AUTH_SYS_FLAVOR 1
#define FATTR3_SIZE 84              /* the XDR of fattr3 */
#define VERF_MAX 400                /* an RPC verifier's body, at most */
#define SCRATCH 65536               /* bytes thrown away at a time */

/* Where the reply being received stands. */
enum rs_step { ST_HDR, ST_VERF, ST_ACCEPT, ST_STATUS, ST_RESOK, ST_DATA, ST_REST };

struct rsock {
	struct nfs_backend *nb;
	int fd;
	bool broken;
	uint32_t next_xid;
	char host[64];                  /* AUTH_SYS machine name */
	char *out;                      /* requests not yet sent */
	size_t out_len, out_off, out_cap;
	struct chunk *asked;            /* requests in flight (chunk.rs_next) */
	/* The record being read: its fragment, and the reply in it. */
	uint32_t frag_left;
	bool frag_last, in_record;
	unsigned char mark[4];
	int mark_got;
	enum rs_step step;
	unsigned char h[16];
	uint32_t need, got;             /* header bytes of the step */
	uint32_t discard;               /* bytes to throw away before the step */
	struct chunk *cur;              /* whose reply (NULL: nobody's, thrown away) */
	int cur_err;
	uint32_t data_left;
	char *scratch;
};

static void rs_expect(struct rsock *rs, enum rs_step step, uint32_t need);

static void put32(struct rsock *rs, uint32_t v)
{
	v = htonl(v);
	if (rs->out_len + 4 > rs->out_cap) {
		rs->out_cap = rs->out_cap ? rs->out_cap * 2 : 1024;
		rs->out = xrealloc(rs->out, rs->out_cap);
	}
	memcpy(rs->out + rs->out_len, &v, 4);
	rs->out_len += 4;
}

static void put_opaque(struct rsock *rs, const void *p, uint32_t len)
{
	uint32_t padded = (len + 3) & ~3u;

	put32(rs, len);
	while (rs->out_len + padded > rs->out_cap) {
		rs->out_cap *= 2;
		rs->out = xrealloc(rs->out, rs->out_cap);
	}
	memcpy(rs->out + rs->out_len, p, len);
	memset(rs->out + rs->out_len + len, 0, padded - len);
	rs->out_len += padded;
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

/* The in_pipe bytes in ch's pipe into ch->buf at at. */
static int chunk_to_memory_at(struct chunk *ch, uint32_t at)
{
	uint32_t done = 0;

	if (!ch->buf)
		ch->buf = xmalloc(ch->len);
	while (done < ch->in_pipe) {
		ssize_t n = read(ch->pfd[0], ch->buf + at + done, ch->in_pipe - done);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			ch->err = EIO;
			break;
		}
		done += (uint32_t)n;
	}
	if (ch->err)
		pipe_empty(ch->pfd[0]);
	ch->in_pipe = 0;
	chunk_close_pipe(ch);
	return ch->err ? -1 : 0;
}

/* The chunk's bytes so far move from its pipe into memory (ch->buf), and
 * the rest of its reply goes there too. */
int chunk_to_memory(struct chunk *ch)
{
	if (ch->pfd[0] < 0)
		return ch->err ? -1 : 0;
	return chunk_to_memory_at(ch, 0);
}

/* A chunk's pipe let go of: back to the pool when nothing is in it (and
 * never a reply half spliced: in_pipe counts what went in), else closed. */
void chunk_close_pipe(struct chunk *ch)
{
	struct nfs_backend *nb = ch->f->nb;

	if (ch->pfd[0] < 0)
		return;
	if (ch->in_pipe == 0 && !ch->pending) {
		pthread_mutex_lock(&nb->pipe_lock);
		if (nb->npipe_pool < PIPE_POOL) {
			nb->pipe_pool[nb->npipe_pool][0] = ch->pfd[0];
			nb->pipe_pool[nb->npipe_pool++][1] = ch->pfd[1];
			ch->pfd[0] = ch->pfd[1] = -1;
		}
		pthread_mutex_unlock(&nb->pipe_lock);
		if (ch->pfd[0] < 0)
			return;
	}
	atomic_fetch_sub(&nb->pipes, 1);
	close(ch->pfd[0]);
	close(ch->pfd[1]);
	ch->pfd[0] = ch->pfd[1] = -1;
}

void pipe_pool_clear(struct nfs_backend *nb)
{
	while (nb->npipe_pool > 0) {
		nb->npipe_pool--;
		close(nb->pipe_pool[nb->npipe_pool][0]);
		close(nb->pipe_pool[nb->npipe_pool][1]);
	}
}

void pipe_empty(int rfd)
{
	char scratch[4096];

	while (read(rfd, scratch, sizeof scratch) > 0)
		;
}

int chunk_move_pipe(struct chunk *ch, const struct backend_pipe *to)
{
	uint32_t moved = 0;

	while (moved < ch->in_pipe) {
		ssize_t n = splice(ch->pfd[0], NULL, to->wfd, NULL, ch->in_pipe - moved,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

		if (n <= 0)
			break;
		moved += (uint32_t)n;
	}
	if (moved == ch->in_pipe) {
		ch->in_pipe = 0;
		chunk_close_pipe(ch);
		return 0;
	}
	/* More pieces than to holds: back into memory, in order. */
	if (!ch->buf)
		ch->buf = xmalloc(ch->len);
	for (uint32_t done = 0; done < moved; ) {
		ssize_t n = read(to->rfd, ch->buf + done, moved - done);

		if (n <= 0) {
			ch->err = EIO;
			break;
		}
		done += (uint32_t)n;
	}
	pipe_empty(to->rfd);
	if (!ch->err) {
		/* What stayed in ch's pipe goes after it. */
		ch->in_pipe -= moved;
		if (chunk_to_memory_at(ch, moved) < 0)
			ch->err = EIO;
	}
	return -1;
}

void chunk_free(struct chunk *ch)
{
	chunk_close_pipe(ch);
	free(ch->buf);
	free(ch);
}

int rsock_pipes_max(void)
{
	struct rlimit rl;

	/* A quarter of the descriptors, two per pipe; 1,024 pipes hold 512
	 * MiB of read-ahead, 64 files reading at full speed. */
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return 1024;
	return rl.rlim_cur / 8 < 1024 ? (int)(rl.rlim_cur / 8) : 1024;
}

/* A pipe for a chunk of len bytes: room for them in page-sized pieces and
 * more (the pieces a socket hands over may be smaller than a page), within
 * pipe-max-size (1 MiB unless raised). */
static void chunk_pipe(struct chunk *ch)
{
	int size = ch->len <= (512u << 10) ? (int)(2 * ch->len) : (int)ch->len;
	struct nfs_backend *nb = ch->f->nb;

	ch->pfd[0] = ch->pfd[1] = -1;
	pthread_mutex_lock(&nb->pipe_lock);
	if (nb->npipe_pool > 0) {
		nb->npipe_pool--;
		ch->pfd[0] = nb->pipe_pool[nb->npipe_pool][0];
		ch->pfd[1] = nb->pipe_pool[nb->npipe_pool][1];
	}
	pthread_mutex_unlock(&nb->pipe_lock);
	if (ch->pfd[0] >= 0)
		return;
	if (atomic_fetch_add(&nb->pipes, 1) >= nb->pipes_max) {
		atomic_fetch_sub(&nb->pipes, 1);
		return;
	}
	if (pipe2(ch->pfd, O_CLOEXEC | O_NONBLOCK) < 0) {
		ch->pfd[0] = ch->pfd[1] = -1;
		atomic_fetch_sub(&nb->pipes, 1);
		return;
	}
	if (fcntl(ch->pfd[0], F_SETPIPE_SZ, size) < size) {
		close(ch->pfd[0]);
		close(ch->pfd[1]);
		ch->pfd[0] = ch->pfd[1] = -1;
		atomic_fetch_sub(&nb->pipes, 1);
	}
}

struct rsock *rsock_open(struct nfs_backend *nb, struct conn *c, int64_t deadline)
{
	struct sockaddr_storage peer, self;
	socklen_t plen = sizeof peer, slen = sizeof self;
	int lfd = nfs_get_fd(c->nfs), one = 1, err = 0;
	socklen_t elen = sizeof err;
	struct rsock *rs;
	struct pollfd p;

	if (lfd < 0 || getpeername(lfd, (struct sockaddr *)&peer, &plen) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&self, &slen) < 0 ||
	    (peer.ss_family != AF_INET && peer.ss_family != AF_INET6))
		return NULL;
	rs = xcalloc(1, sizeof *rs);
	rs->nb = nb;
	rs->fd = socket(peer.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (rs->fd < 0)
		goto fail;
	(void)setsockopt(rs->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	/* From a reserved port when libnfs's is one (a server that insists
	 * on them, as a kernel server's "secure" export). */
	{
		in_port_t *port = peer.ss_family == AF_INET ? &((struct sockaddr_in *)&self)->sin_port :
				  &((struct sockaddr_in6 *)&self)->sin6_port;

		if (ntohs(*port) < 1024) {
			for (int try = 1023; try >= 600; try--) {
				*port = htons((in_port_t)try);
				if (bind(rs->fd, (struct sockaddr *)&self, slen) == 0)
					break;
			}
		}
	}
	if (connect(rs->fd, (struct sockaddr *)&peer, plen) < 0 && errno != EINPROGRESS)
		goto fail;
	p = (struct pollfd){ .fd = rs->fd, .events = POLLOUT };
	for (;;) {
		int64_t left = deadline - time_mono_ms();
		int rc;

		if (left <= 0) {
			errno = ETIMEDOUT;
			goto fail;
		}
		rc = poll(&p, 1, left > 1000 ? 1000 : (int)left);
		if (rc > 0)
			break;
		if (rc < 0 && errno != EINTR)
			goto fail;
	}
	if (getsockopt(rs->fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0 || err != 0) {
		errno = err ? err : EIO;
		goto fail;
	}
	if (gethostname(rs->host, sizeof rs->host - 1) < 0)
		strcpy(rs->host, "parsa");
	rs->next_xid = (uint32_t)time_mono_ms() * 2654435761u;
	rs_expect(rs, ST_HDR, 12);
	rs->scratch = xmalloc(SCRATCH);
	return rs;
fail:
	{
		int saved = errno;

		if (rs->fd >= 0)
			close(rs->fd);
		free(rs);
		errno = saved;
	}
	return NULL;
}

/* The answer of ch is in (or its error): its waiter may go on. */
static void chunk_done(struct rsock *rs, struct chunk *ch, int err)
{
	ch->pending = 0;
	if (ch->orphan) {
		ch->f->orphans--;
		chunk_free(ch);
		return;
	}
	if (err)
		ch->err = err;
	else
		nfs_reachable(rs->nb);
}

void rsock_close(struct rsock *rs)
{
	if (!rs)
		return;
	if (rs->cur)
		chunk_done(rs, rs->cur, EIO);
	while (rs->asked) {
		struct chunk *ch = rs->asked;

		rs->asked = ch->rs_next;
		chunk_done(rs, ch, EIO);
	}
	if (rs->fd >= 0)
		close(rs->fd);
	free(rs->scratch);
	free(rs->out);
	free(rs);
}

bool rsock_stale(const struct rsock *rs)
{
	struct pollfd p = { .fd = rs->fd, .events = POLLIN };

	return !rsock_busy(rs) && poll(&p, 1, 0) != 0;
}

bool rsock_broken(const struct rsock *rs)
{
	return rs->broken;
}

bool rsock_busy(const struct rsock *rs)
{
	return rs->asked || rs->cur || rs->out_off < rs->out_len;
}

int rsock_fd(const struct rsock *rs)
{
	return rs->fd;
}

short rsock_events(const struct rsock *rs)
{
	return (short)(POLLIN | (rs->out_off < rs->out_len ? POLLOUT : 0));
}

int rsock_read(struct rsock *rs, struct chunk *ch, const struct fhbuf *fh, const struct backend_cred *cred)
{
	size_t start = rs->out_len, body;
	uint32_t cred_len = 4 + 4 + ((uint32_t)strlen(rs->host) + 3) / 4 * 4 + 4 + 4 + 4;

	if (rs->broken) {
		errno = EIO;
		return -1;
	}
	chunk_pipe(ch);
	if (ch->pfd[0] < 0)
		ch->buf = xmalloc(ch->len);
	ch->xid = rs->next_xid++;
	put32(rs, 0);                   /* the record mark, below */
	put32(rs, ch->xid);
	put32(rs, RPC_CALL);
	put32(rs, 2);                   /* RPC version */
	put32(rs, NFS_PROGRAM);
	put32(rs, NFS_V3);
	put32(rs, NFS3_READ);
	put32(rs, AUTH_SYS_FLAVOR);
	put32(rs, cred_len);
	put32(rs, (uint32_t)time(NULL));
	put_opaque(rs, rs->host, (uint32_t)strlen(rs->host));
	put32(rs, cred->uid);
	put32(rs, cred->gid);
	put32(rs, 0);                   /* no other groups, as libnfs sends */
	put32(rs, 0);                   /* verifier: AUTH_NONE */
	put32(rs, 0);
	put_opaque(rs, fh->val, fh->len);
	put32(rs, (uint32_t)(ch->off >> 32));
	put32(rs, (uint32_t)ch->off);
	put32(rs, ch->len);
	body = rs->out_len - start - 4;
	{
		uint32_t mark = htonl(0x80000000u | (uint32_t)body);

		memcpy(rs->out + start, &mark, 4);
	}
	ch->rs_next = rs->asked;
	rs->asked = ch;
	rpc_count(rs->nb, NFS3_READ);
	return 0;
}

static int rs_send(struct rsock *rs)
{
	while (rs->out_off < rs->out_len) {
		ssize_t n = send(rs->fd, rs->out + rs->out_off, rs->out_len - rs->out_off, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			return -1;
		}
		rs->out_off += (size_t)n;
	}
	rs->out_off = rs->out_len = 0;
	return 0;
}

/* 1: the current fragment has bytes left; 0: wait for the socket; -1: lost. */
static int rs_fragment(struct rsock *rs)
{
	while (rs->frag_left == 0) {
		ssize_t n;

		if (rs->in_record && rs->frag_last) {
			errno = EPROTO;         /* the reply is shorter than it says */
			return -1;
		}
		n = recv(rs->fd, rs->mark + rs->mark_got, (size_t)(4 - rs->mark_got), 0);
		if (n == 0) {
			errno = ECONNRESET;
			return -1;
		}
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		rs->mark_got += (int)n;
		if (rs->mark_got < 4)
			continue;
		rs->mark_got = 0;
		rs->frag_left = get32(rs->mark) & 0x7fffffffu;
		rs->frag_last = (get32(rs->mark) & 0x80000000u) != 0;
		rs->in_record = true;
	}
	return 1;
}

/* Up to n bytes of the record into dst (NULL: thrown away): how many, 0 to
 * wait for the socket, -1 lost. */
static ssize_t rs_recv(struct rsock *rs, void *dst, size_t n)
{
	int ready = rs_fragment(rs);
	ssize_t got;

	if (ready <= 0)
		return ready;
	if (n > rs->frag_left)
		n = rs->frag_left;
	if (!dst && n > SCRATCH)
		n = SCRATCH;
	got = recv(rs->fd, dst ? dst : rs->scratch, n, 0);
	if (got == 0) {
		errno = ECONNRESET;
		return -1;
	}
	if (got < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	rs->frag_left -= (uint32_t)got;
	return got;
}

static struct chunk *rs_take_asked(struct rsock *rs, uint32_t xid)
{
	for (struct chunk **p = &rs->asked; *p; p = &(*p)->rs_next) {
		if ((*p)->xid == xid) {
			struct chunk *ch = *p;

			*p = ch->rs_next;
			return ch;
		}
	}
	return NULL;
}

static void rs_expect(struct rsock *rs, enum rs_step step, uint32_t need)
{
	rs->step = step;
	rs->need = need;
	rs->got = 0;
}

/* A step's header bytes are in rs->h: what they say. -1: not NFS as we know it. */
static int rs_parse(struct rsock *rs)
{
	switch (rs->step) {
	case ST_HDR:
		rs->cur = rs_take_asked(rs, get32(rs->h));
		rs->cur_err = 0;
		if (get32(rs->h + 4) != RPC_REPLY)
			return -1;
		if (get32(rs->h + 8) != 0) {            /* MSG_DENIED */
			rs->cur_err = EACCES;
			rs_expect(rs, ST_REST, 0);
		} else {
			rs_expect(rs, ST_VERF, 8);
		}
		return 0;
	case ST_VERF:
		if (get32(rs->h + 4) > VERF_MAX)
			return -1;
		rs->discard = (get32(rs->h + 4) + 3) & ~3u;
		rs_expect(rs, ST_ACCEPT, 4);
		return 0;
	case ST_ACCEPT:
		if (get32(rs->h) != 0) {                /* not SUCCESS */
			rs->cur_err = EIO;
			rs_expect(rs, ST_REST, 0);
		} else {
			rs_expect(rs, ST_STATUS, 8);
		}
		return 0;
	case ST_STATUS:
		rs->discard = get32(rs->h + 4) ? FATTR3_SIZE : 0;
		if (get32(rs->h) != NFS3_OK) {
			rs->cur_err = nfs_errno((int)get32(rs->h));
			rs_expect(rs, ST_REST, 0);
		} else {
			rs_expect(rs, ST_RESOK, 12);
		}
		return 0;
	case ST_RESOK: {
		uint32_t len = get32(rs->h + 8);

		if (rs->cur && len > rs->cur->len)
			return -1;
		rs->data_left = len;
		if (rs->cur) {
			rs->cur->got = len;
			rs->cur->eof = get32(rs->h + 4) != 0 || len < rs->cur->len;
		}
		rs_expect(rs, ST_DATA, 0);
		return 0;
	}
	default:
		return -1;
	}
}

/* The data of the reply: spliced into cur's pipe, else into its memory. */
static int rs_data(struct rsock *rs)
{
	struct chunk *ch = rs->cur;

	while (rs->data_left > 0) {
		uint32_t at = (ch ? ch->got : 0) - rs->data_left;
		ssize_t n;

		if (ch && ch->pfd[1] >= 0) {
			int ready = rs_fragment(rs);

			if (ready <= 0)
				return ready;
			n = splice(rs->fd, NULL, ch->pfd[1], NULL,
				   rs->data_left < rs->frag_left ? rs->data_left : rs->frag_left,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n == 0) {
				errno = ECONNRESET;
				return -1;
			}
			if (n < 0) {
				struct pollfd p = { .fd = rs->fd, .events = POLLIN };

				if (errno != EAGAIN && errno != EINTR)
					return -1;
				/* The socket has bytes, so the pipe is full: the
				 * reply came in more pieces than it holds. */
				if (poll(&p, 1, 0) > 0 && chunk_to_memory(ch) < 0)
					return -1;
				if (ch->pfd[1] >= 0)
					return 0;
				continue;
			}
			rs->frag_left -= (uint32_t)n;
			ch->in_pipe += (uint32_t)n;
		} else {
			n = rs_recv(rs, ch ? ch->buf + at : NULL, rs->data_left);
			if (n <= 0)
				return (int)n;
		}
		rs->data_left -= (uint32_t)n;
	}
	if (ch)
		rs->discard = (4 - ch->got % 4) % 4;
	else
		rs->discard = 0;
	rs_expect(rs, ST_REST, 0);
	return 1;
}

/* The usual reply, a READ answered with its attributes, in one piece: its
 * mark and header (132 bytes) are looked at in place and taken with one
 * call instead of one per field, and the data follows (ST_DATA). 1: so; 0:
 * another reply, or not all there yet (the field by field way takes it);
 * 2: nothing there (wait for the socket). */
#define FAST_HEADER (4 + 12 + 8 + 4 + 8 + FATTR3_SIZE + 12)
static int rs_fast_header(struct rsock *rs)
{
	unsigned char h[FAST_HEADER];
	uint32_t frag, len;
	ssize_t n = recv(rs->fd, h, sizeof h, MSG_PEEK);

	if (n < 0 && errno == EAGAIN)
		return 2;
	if (n < (ssize_t)sizeof h)
		return 0;
	frag = get32(h) & 0x7fffffffu;
	len = get32(h + 128);
	if (!(get32(h) & 0x80000000u) || get32(h + 8) != RPC_REPLY || get32(h + 12) != 0 ||
	    get32(h + 20) != 0 || get32(h + 24) != 0 || get32(h + 28) != NFS3_OK || get32(h + 32) != 1 ||
	    frag < FAST_HEADER - 4 || len > frag - (FAST_HEADER - 4))
		return 0;
	if (recv(rs->fd, h, sizeof h, 0) != (ssize_t)sizeof h)
		return -1;
	rs->in_record = true;
	rs->frag_last = true;
	rs->frag_left = frag - (FAST_HEADER - 4);
	rs->cur = rs_take_asked(rs, get32(h + 4));
	rs->cur_err = 0;
	memcpy(rs->h, h + 120, 12);
	rs->step = ST_RESOK;
	return rs_parse(rs) < 0 ? -1 : 1;
}

/* Take what the socket has: 0 (wait for more) or -1 (lost). */
static int rs_receive(struct rsock *rs)
{
	for (;;) {
		ssize_t n;

		while (rs->discard > 0) {
			n = rs_recv(rs, NULL, rs->discard);
			if (n <= 0)
				return (int)n;
			rs->discard -= (uint32_t)n;
		}
		if (rs->step == ST_DATA) {
			int rc = rs_data(rs);

			if (rc <= 0)
				return rc;
			continue;
		}
		if (rs->step == ST_REST) {
			/* Whatever the reply holds beyond what we read. */
			while (rs->frag_left > 0 || !rs->frag_last) {
				n = rs_recv(rs, NULL, SCRATCH);
				if (n <= 0)
					return (int)n;
			}
			if (rs->cur)
				chunk_done(rs, rs->cur, rs->cur_err);
			rs->cur = NULL;
			rs->in_record = false;
			rs->frag_last = false;
			rs_expect(rs, ST_HDR, 12);
			if (!rs->asked)
				return 0;
			continue;
		}
		if (rs->step == ST_HDR && rs->got == 0 && !rs->in_record && rs->mark_got == 0) {
			int fast = rs_fast_header(rs);

			if (fast < 0)
				return -1;
			if (fast == 2)
				return 0;
			if (fast > 0)
				continue;
		}
		while (rs->got < rs->need) {
			n = rs_recv(rs, rs->h + rs->got, rs->need - rs->got);
			if (n <= 0)
				return (int)n;
			rs->got += (uint32_t)n;
		}
		if (rs_parse(rs) < 0) {
			errno = EPROTO;
			return -1;
		}
	}
}

/* Send and take what can be, without waiting. */
void rsock_pump(struct rsock *rs)
{
	if (rs->broken)
		return;
	if (rs_send(rs) < 0 || rs_receive(rs) < 0)
		rs->broken = true;
}

int rsock_wait(struct rsock *rs, const int *count, int target, int64_t deadline)
{
	rsock_pump(rs);
	while (*count > target && !rs->broken) {
		int64_t left = deadline - time_mono_ms();
		struct pollfd p = { .fd = rs->fd, .events = rsock_events(rs) };
		int rc;

		if (left <= 0) {
			rs->broken = true;
			errno = ETIMEDOUT;
			return -1;
		}
		rc = poll(&p, 1, left > 1000 ? 1000 : (int)left);
		if (rc < 0 && errno != EINTR) {
			rs->broken = true;
			return -1;
		}
		if (rc > 0)
			rsock_pump(rs);
	}
	if (rs->broken) {
		if (!errno || errno == EAGAIN)
			errno = EIO;
		return -1;
	}
	return 0;
}
