/* fscheck random: a seeded stream of writes, reads, truncations, fsyncs,
 * reopens and stats on one file of the mount, each checked against an
 * in-memory model of what the file must hold; a mismatch prints the last
 * operations and the bytes that differ. */
#include "fscheck.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_OP (4 * MIB)
#define HISTORY 20

/* splitmix64: both the random stream and the data pattern. */
uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

struct rng {
	uint64_t state;
};

static uint64_t rng_next(struct rng *r)
{
	r->state += 0x9e3779b97f4a7c15ULL;
	return mix64(r->state);
}

/* Uniform in [0, n) (n > 0; the bias of the modulo is irrelevant here). */
static uint64_t rng_below(struct rng *r, uint64_t n)
{
	return rng_next(r) % n;
}

/* The byte that write number op puts at file offset off: every write's data
 * is its own, so a wrong byte read back tells which write it came from. */
unsigned char pattern_byte(uint64_t seed, long op, off_t off)
{
	uint64_t w = mix64(seed ^ ((uint64_t)op << 40) ^ (uint64_t)(off >> 3));

	return (unsigned char)(w >> ((off & 7) * 8));
}

void pattern_fill(unsigned char *buf, uint64_t seed, long op, off_t off, size_t len)
{
	size_t i = 0;

	/* Whole words at once where the offset is aligned: 4 MiB writes stay cheap. */
	while (i < len && ((off + (off_t)i) & 7))
		buf[i] = pattern_byte(seed, op, off + i), i++;
	for (; i + 8 <= len; i += 8) {
		uint64_t w = mix64(seed ^ ((uint64_t)op << 40) ^ (uint64_t)((off + (off_t)i) >> 3));
		memcpy(buf + i, &w, 8); /* little-endian, as pattern_byte reads it */
	}
	for (; i < len; i++)
		buf[i] = pattern_byte(seed, op, off + i);
}

/* ---- random ---- */

enum op_kind {
	OP_PWRITE, OP_PREAD, OP_FTRUNCATE, OP_TRUNCATE, OP_FSYNC, OP_REOPEN, OP_FSTAT, OP_STAT,
};

static const char *const op_names[] = {
	[OP_PWRITE] = "pwrite", [OP_PREAD] = "pread", [OP_FTRUNCATE] = "ftruncate",
	[OP_TRUNCATE] = "truncate", [OP_FSYNC] = "fsync", [OP_REOPEN] = "reopen",
	[OP_FSTAT] = "fstat", [OP_STAT] = "stat",
};

/* Percent of each operation (they add up to 100). */
static const struct { enum op_kind kind; int percent; } op_mix[] = {
	{ OP_PWRITE, 42 }, { OP_PREAD, 38 }, { OP_FTRUNCATE, 3 }, { OP_TRUNCATE, 2 },
	{ OP_FSYNC, 2 }, { OP_REOPEN, 3 }, { OP_FSTAT, 5 }, { OP_STAT, 5 },
};

struct op_rec {
	long n;                 /* operation number, from 0 */
	enum op_kind kind;
	int fd_index;
	off_t off;              /* offset, or new size for the truncates */
	size_t len;
	off_t size_after;       /* the model's size once it was done */
};

struct random_opts {
	uint64_t seed;
	long ops;
	off_t max_size;
	bool two_fds;
	bool skip[OP_STAT + 1];  /* kinds left out (--skip), to narrow a failure down */
	const char *path;
};

struct random_ctx {
	struct random_opts o;
	struct rng rng;
	int fd[2];
	int nfd;
	unsigned char *model;   /* o.max_size bytes; beyond size they are zero */
	off_t size;
	unsigned char *buf;     /* MAX_OP bytes for a write's data or a read */
	struct op_rec hist[HISTORY];
	long done;              /* operations done so far */
	double t0;              /* when the first began (now_s) */
	long count[OP_STAT + 1];
	uint64_t bytes_written, bytes_read;
};

/* A length from 1 byte to 4 MiB: mostly small, a minority large (see the
 * report of the commit that chose it: 200,000 of them take about a minute
 * through the ASan mount on NFS). Within a class lengths are log-uniform, so
 * 1-, 7- and 100-byte operations all occur. */
static size_t pick_len(struct rng *r, bool *large)
{
	uint64_t c = rng_below(r, 1000);
	size_t lo, hi;
	unsigned bits;

	if (c < 700)
		lo = 1, hi = 4 * KIB;
	else if (c < 960)
		lo = 4 * KIB, hi = 128 * KIB;
	else if (c < 996)
		lo = 128 * KIB, hi = 1 * MIB;
	else
		lo = 1 * MIB, hi = MAX_OP;
	*large = lo >= 128 * KIB;
	/* log-uniform between lo and hi */
	bits = 0;
	while (((size_t)1 << bits) < hi)
		bits++;
	for (;;) {
		unsigned b = (unsigned)rng_below(r, bits + 1);
		size_t top = (size_t)1 << b;
		size_t len = top / 2 + 1 + rng_below(r, top - top / 2);

		if (len >= lo && len <= hi)
			return len;
	}
}

/* An offset for an operation of len bytes: overlapping one of the last writes,
 * at or past the end of the file (a hole), or anywhere, always within
 * max_size. Large writes are sometimes 4 KiB aligned, as cp and dd do, which
 * is what a write-behind takes. */
static off_t pick_off(struct random_ctx *c, size_t *len, bool large)
{
	off_t max = c->o.max_size, off;
	uint64_t how = rng_below(&c->rng, 100);

	if ((off_t)*len > max)
		*len = (size_t)max;
	if (how < 35) {
		/* near one of the last writes: the newest first from a random
		 * point back, so that both the very last and older ones are hit */
		const struct op_rec *w = NULL;
		long back, start = (long)rng_below(&c->rng, 4);

		for (back = start; back < HISTORY && !w; back++) {
			long n = c->done - 1 - back;

			if (n >= 0 && c->hist[n % HISTORY].kind == OP_PWRITE)
				w = &c->hist[n % HISTORY];
		}
		off = w ? w->off - (off_t)(*len / 2) + (off_t)rng_below(&c->rng, w->len + *len / 2) : 0;
	} else if (how < 50) {
		/* at or past the end: a hole in between */
		off = c->size + (off_t)(rng_below(&c->rng, 4) ? rng_below(&c->rng, 256 * KIB) : 0);
	} else {
		off = (off_t)rng_below(&c->rng, (uint64_t)(max - (off_t)*len) + 1);
	}
	if (large && rng_below(&c->rng, 2)) {
		off &= ~(off_t)4095;
		if (*len >= 4096)
			*len &= ~(size_t)4095;
	}
	if (off < 0)
		off = 0;
	if (off + (off_t)*len > max)
		off = max - (off_t)*len;
	return off;
}

static off_t pick_size(struct random_ctx *c)
{
	uint64_t how = rng_below(&c->rng, 10);
	off_t s;

	if (how < 5)
		s = c->size ? (off_t)rng_below(&c->rng, (uint64_t)c->size + 1) : 0;
	else if (how < 8)
		s = c->size + (off_t)rng_below(&c->rng, 1 * MIB);
	else
		s = (off_t)rng_below(&c->rng, (uint64_t)c->o.max_size + 1);
	return s > c->o.max_size ? c->o.max_size : s;
}

/* " --skip a,b" for the options in effect, or "", in buf (128 bytes is enough
 * for every name); returns buf, for printing. */
static const char *skip_arg(const struct random_opts *o, char buf[static 128])
{
	size_t n = 0;
	int k;

	buf[0] = 0;
	for (k = 0; k <= OP_STAT; k++)
		if (o->skip[k])
			n += (size_t)snprintf(buf + n, 128 - n, "%s%s", n ? "," : " --skip ", op_names[k]);
	return buf;
}

static void print_op(const struct op_rec *h)
{
	printf("#   op %ld: %s", h->n, op_names[h->kind]);
	switch (h->kind) {
	case OP_PWRITE:
	case OP_PREAD:
		printf(" fd%d off %lld len %zu (to %lld)", h->fd_index, (long long)h->off, h->len,
			(long long)(h->off + (off_t)h->len));
		break;
	case OP_FTRUNCATE:
		printf(" fd%d to %lld", h->fd_index, (long long)h->off);
		break;
	case OP_TRUNCATE:
		printf(" path to %lld", (long long)h->off);
		break;
	case OP_REOPEN:
	case OP_FSYNC:
	case OP_FSTAT:
		printf(" fd%d", h->fd_index);
		break;
	case OP_STAT:
		break;
	}
	printf("; size then %lld\n", (long long)h->size_after);
}

static void print_bytes(const char *what, const unsigned char *p, size_t n)
{
	size_t i;

	printf("#   %s:", what);
	for (i = 0; i < n; i++)
		printf(" %02x", p[i]);
	printf("\n");
}

/* Report a failure of operation n with the seed, the last operations and,
 * for wrong data, where it went wrong and which earlier write it looks like. */
static void report(struct random_ctx *c, const struct op_rec *cur, const char *fmt, ...)
{
	va_list ap;
	long i, first;
	char skips[128];

	printf("not ok 1 - op %ld (%s) of seed %" PRIu64 ": ", cur->n, op_names[cur->kind], c->o.seed);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n# replay: fscheck random --seed %" PRIu64 " --ops %ld --max-size %lld%s%s FILE\n",
		c->o.seed, c->o.ops, (long long)c->o.max_size, c->o.two_fds ? " --two-fds" : "", skip_arg(&c->o, skips));
	printf("# the last operations (the failing one last):\n");
	first = cur->n - HISTORY + 1 > 0 ? cur->n - HISTORY + 1 : 0;
	for (i = first; i < cur->n; i++)
		print_op(&c->hist[i % HISTORY]);
	print_op(cur);
	printf("# %ld operations done in %.1f s\n", cur->n, now_s() - c->t0);
	fflush(stdout);
}

/* Compare len bytes read at off with the model; on a difference report the
 * first bad byte, expected and got, and whether the bytes got are an earlier
 * write's or zeros. Returns false on a difference. */
static bool compare(struct random_ctx *c, const struct op_rec *cur, const unsigned char *got,
		    off_t off, size_t len)
{
	const unsigned char *want = c->model + off;
	size_t i, j, bad = 0, nbad = 0, last = 0, n;
	int h;

	if (!memcmp(got, want, len))
		return true;
	for (i = 0; i < len; i++) {
		if (got[i] != want[i]) {
			if (!nbad)
				bad = i;
			nbad++;
			last = i;
		}
	}
	report(c, cur, "wrong data at offset %lld (%zu of %zu bytes read at %lld differ, the last at %lld)",
		(long long)(off + (off_t)bad), nbad, len, (long long)off, (long long)(off + (off_t)last));
	n = len - bad < 16 ? len - bad : 16;
	print_bytes("expected", want + bad, n);
	print_bytes("got     ", got + bad, n);
	for (j = 0; j < n && !got[bad + j]; j++)
		;
	if (j == n)
		printf("#   the bytes got are zeros (a hole, or a write lost)\n");
	for (h = 0; h < HISTORY; h++) {
		const struct op_rec *w = &c->hist[h];
		off_t at = off + (off_t)bad;

		if (w->kind != OP_PWRITE || w->n >= cur->n || at < w->off ||
		    at + (off_t)n > w->off + (off_t)w->len)
			continue;
		for (j = 0; j < n && got[bad + j] == pattern_byte(c->o.seed, w->n, at + (off_t)j); j++)
			;
		if (j == n)
			printf("#   the bytes got are those op %ld wrote (a later write or truncate was lost or reordered)\n", w->n);
	}
	return false;
}

static int open_rw(const char *path)
{
	return open(path, O_RDWR | O_CREAT, 0644);
}

/* Check the size through fstat of a descriptor (fd >= 0) or stat of the path. */
static bool check_size(struct random_ctx *c, const struct op_rec *cur, int fd)
{
	struct stat st;
	int rc = fd >= 0 ? fstat(fd, &st) : stat(c->o.path, &st);

	if (rc < 0) {
		report(c, cur, "%s: %s", fd >= 0 ? "fstat" : "stat", strerror(errno));
		return false;
	}
	if (st.st_size != c->size) {
		report(c, cur, "%s says size %lld, the model %lld", fd >= 0 ? "fstat" : "stat",
			(long long)st.st_size, (long long)c->size);
		return false;
	}
	return true;
}

/* One random operation; false (reported) when it failed or disagreed. */
static bool random_op(struct random_ctx *c)
{
	struct op_rec *cur = &c->hist[c->done % HISTORY];
	uint64_t total = 0, pick, acc = 0;
	size_t i;
	ssize_t r;
	bool large = false;
	int fd;

	memset(cur, 0, sizeof(*cur));
	cur->n = c->done;
	for (i = 0; i < sizeof(op_mix) / sizeof(op_mix[0]); i++)
		total += c->o.skip[op_mix[i].kind] ? 0 : (uint64_t)op_mix[i].percent;
	pick = rng_below(&c->rng, total);
	for (i = 0; i < sizeof(op_mix) / sizeof(op_mix[0]); i++) {
		if (c->o.skip[op_mix[i].kind])
			continue;
		acc += (uint64_t)op_mix[i].percent;
		if (pick < acc) {
			cur->kind = op_mix[i].kind;
			break;
		}
	}
	/* Alternate descriptors so that each reads what the other wrote. */
	cur->fd_index = c->nfd == 2 ? (int)(c->done & 1) : 0;
	fd = c->fd[cur->fd_index];
	c->count[cur->kind]++;

	switch (cur->kind) {
	case OP_PWRITE:
		cur->len = pick_len(&c->rng, &large);
		cur->off = pick_off(c, &cur->len, large);
		pattern_fill(c->buf, c->o.seed, cur->n, cur->off, cur->len);
		r = pwrite(fd, c->buf, cur->len, cur->off);
		if (r < 0) {
			cur->size_after = c->size;
			report(c, cur, "pwrite: %s", strerror(errno));
			return false;
		}
		/* the model follows what the file says it took */
		memcpy(c->model + cur->off, c->buf, (size_t)r);
		if (cur->off + r > c->size)
			c->size = cur->off + r;
		cur->size_after = c->size;
		c->bytes_written += (uint64_t)r;
		if ((size_t)r != cur->len) {
			report(c, cur, "short write: %zd of %zu bytes", r, cur->len);
			return false;
		}
		break;
	case OP_PREAD: {
		size_t want;

		cur->len = pick_len(&c->rng, &large);
		cur->off = pick_off(c, &cur->len, large);
		cur->size_after = c->size;
		want = cur->off >= c->size ? 0 :
			(c->size - cur->off < (off_t)cur->len ? (size_t)(c->size - cur->off) : cur->len);
		/* One call: a regular file reads short only at its end (POSIX), so a
		 * short read before it is a failure, not something to retry. */
		r = pread(fd, c->buf, cur->len, cur->off);
		if (r < 0) {
			report(c, cur, "pread: %s", strerror(errno));
			return false;
		}
		c->bytes_read += (uint64_t)r;
		if ((size_t)r != want) {
			report(c, cur, "pread returned %zd bytes, expected %zu (file size %lld)", r, want,
				(long long)c->size);
			if (r > 0)
				compare(c, cur, c->buf, cur->off, (size_t)r < want ? (size_t)r : want);
			return false;
		}
		if (!compare(c, cur, c->buf, cur->off, want))
			return false;
		break;
	}
	case OP_FTRUNCATE:
	case OP_TRUNCATE:
		cur->off = pick_size(c);
		if (cur->kind == OP_FTRUNCATE)
			r = ftruncate(fd, cur->off);
		else
			r = truncate(c->o.path, cur->off);
		if (r < 0) {
			cur->size_after = c->size;
			report(c, cur, "%s: %s", op_names[cur->kind], strerror(errno));
			return false;
		}
		if (cur->off < c->size)
			memset(c->model + cur->off, 0, (size_t)(c->size - cur->off));
		c->size = cur->off;
		cur->size_after = c->size;
		if (!check_size(c, cur, fd))
			return false;
		break;
	case OP_FSYNC:
		cur->size_after = c->size;
		if (fsync(fd) < 0) {
			report(c, cur, "fsync: %s", strerror(errno));
			return false;
		}
		break;
	case OP_REOPEN:
		cur->size_after = c->size;
		if (close(fd) < 0) {
			c->fd[cur->fd_index] = -1;
			report(c, cur, "close: %s", strerror(errno));
			return false;
		}
		c->fd[cur->fd_index] = fd = open_rw(c->o.path);
		if (fd < 0) {
			report(c, cur, "open: %s", strerror(errno));
			return false;
		}
		if (!check_size(c, cur, fd))
			return false;
		break;
	case OP_FSTAT:
		cur->size_after = c->size;
		if (!check_size(c, cur, fd))
			return false;
		break;
	case OP_STAT:
		cur->size_after = c->size;
		if (!check_size(c, cur, -1))
			return false;
		break;
	}
	return true;
}

/* The whole file through a new descriptor, against the model. */
static bool random_final(struct random_ctx *c)
{
	struct op_rec cur = { .n = c->done, .kind = OP_PREAD, .size_after = c->size };
	off_t off = 0;
	ssize_t r;
	int fd = open(c->o.path, O_RDONLY);
	bool ok = false;

	if (fd < 0) {
		report(c, &cur, "open for the final read: %s", strerror(errno));
		return false;
	}
	if (!check_size(c, &cur, fd) || !check_size(c, &cur, -1))
		goto out;
	for (;;) {
		cur.off = off;
		cur.len = MIB;
		r = pread(fd, c->buf, MIB, off);
		if (r < 0) {
			report(c, &cur, "final read: %s", strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		if (off + r > c->size) {
			report(c, &cur, "the final read finds %lld bytes, the model %lld",
				(long long)(off + r), (long long)c->size);
			goto out;
		}
		if (!compare(c, &cur, c->buf, off, (size_t)r))
			goto out;
		off += r;
	}
	if (off != c->size) {
		report(c, &cur, "the final read ends at %lld, the model at %lld", (long long)off,
			(long long)c->size);
		goto out;
	}
	ok = true;
out:
	close(fd);
	return ok;
}


int cmd_random(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "ops", required_argument, NULL, 'n' },
		{ "max-size", required_argument, NULL, 'm' },
		{ "two-fds", no_argument, NULL, '2' },
		{ "skip", required_argument, NULL, 'x' },
		{ NULL, 0, NULL, 0 },
	};
	struct random_ctx c = { .fd = { -1, -1 } };
	int ch, i, rc = 1, k;
	double t0, secs;
	long long v;
	char *name, *save, skips[128];

	c.o.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	c.o.ops = 100000;
	c.o.max_size = 16 * MIB;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "s:n:m:2", longopts, NULL)) != -1) {
		switch (ch) {
		case 's':
			c.o.seed = strtoull(optarg, NULL, 10);
			break;
		case 'n':
			if ((v = parse_size(optarg)) < 0)
				return fscheck_usage();
			c.o.ops = (long)v;
			break;
		case 'm':
			if ((v = parse_size(optarg)) < 1)
				return fscheck_usage();
			c.o.max_size = (off_t)v;
			break;
		case '2':
			c.o.two_fds = true;
			break;
		case 'x':
			for (name = strtok_r(optarg, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
				for (k = 0; k <= OP_STAT && strcmp(name, op_names[k]); k++)
					;
				if (k > OP_STAT || k == OP_PWRITE) {
					fprintf(stderr, "fscheck: --skip: '%s' is not an operation one can leave out\n", name);
					return fscheck_usage();
				}
				c.o.skip[k] = true;
			}
			break;
		default:
			return fscheck_usage();
		}
	}
	if (optind != argc - 1)
		return fscheck_usage();
	c.o.path = argv[optind];
	c.rng.state = c.o.seed;
	c.nfd = c.o.two_fds ? 2 : 1;
	printf("# fscheck random --seed %" PRIu64 " --ops %ld --max-size %lld%s%s %s\n", c.o.seed, c.o.ops,
		(long long)c.o.max_size, c.o.two_fds ? " --two-fds" : "", skip_arg(&c.o, skips), c.o.path);
	fflush(stdout);
	c.model = calloc(1, (size_t)c.o.max_size);
	c.buf = malloc(MAX_OP);
	if (!c.model || !c.buf) {
		printf("not ok 1 - out of memory for a model of %lld bytes\n", (long long)c.o.max_size);
		goto out;
	}
	for (i = 0; i < c.nfd; i++) {
		c.fd[i] = open(c.o.path, O_RDWR | O_CREAT | (i ? 0 : O_TRUNC), 0644);
		if (c.fd[i] < 0) {
			printf("not ok 1 - open %s: %s\n", c.o.path, strerror(errno));
			goto out;
		}
	}
	c.t0 = t0 = now_s();
	for (c.done = 0; c.done < c.o.ops; c.done++)
		if (!random_op(&c))
			goto out;
	for (i = 0; i < c.nfd; i++) {
		struct op_rec cur = { .n = c.done, .kind = OP_REOPEN, .fd_index = i, .size_after = c.size };

		if (close(c.fd[i]) < 0) {
			c.fd[i] = -1;
			report(&c, &cur, "the last close: %s", strerror(errno));
			goto out;
		}
		c.fd[i] = -1;
	}
	if (!random_final(&c))
		goto out;
	secs = now_s() - t0;
	printf("ok 1 - %ld random operations on %d descriptor%s match the model (seed %" PRIu64 ")\n",
		c.o.ops, c.nfd, c.nfd > 1 ? "s" : "", c.o.seed);
	printf("# %.1f s, %.0f ops/s; %.1f MiB written, %.1f MiB read; final size %lld\n", secs,
		c.o.ops / (secs > 0 ? secs : 1), c.bytes_written / (double)MIB, c.bytes_read / (double)MIB,
		(long long)c.size);
	printf("# ops:");
	for (i = 0; i <= OP_STAT; i++)
		printf(" %s %ld", op_names[i], c.count[i]);
	printf("\n1..1\n");
	rc = 0;
out:
	for (i = 0; i < 2; i++)
		if (c.fd[i] >= 0)
			close(c.fd[i]);
	free(c.model);
	free(c.buf);
	fflush(stdout);
	return rc;
}

/* ---- overwrite ---- */

/* True if all n bytes of p are b. */
