/* fscheck: data-path checks the shell cannot do well, for the integration
 * tests of a mount (local or NFS storage): a seeded random-operation checker
 * against an in-memory model, the overwrite regression, and small POSIX cases
 * (an unlinked open file, a unix socket, set-uid cleared by a write). */
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

#define KIB (1024L)
#define MIB (1024L * 1024L)
#define MAX_OP (4 * MIB)
#define HISTORY 20

/* ---- small helpers ---- */

/* TAP-like output: a numbered ok / not ok line per check. */
struct tap {
	int run;
	int failed;
};

__attribute__((format(printf, 3, 4)))
static bool tap_ok(struct tap *t, bool cond, const char *fmt, ...)
{
	va_list ap;

	t->run++;
	if (!cond)
		t->failed++;
	printf("%s %d - ", cond ? "ok" : "not ok", t->run);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	return cond;
}

static int tap_done(const struct tap *t)
{
	printf("1..%d\n", t->run);
	if (t->failed)
		printf("# %d of %d checks failed\n", t->failed, t->run);
	return t->failed ? 1 : 0;
}

/* A size with an optional K, M or G suffix; -1 with errno EINVAL if it is not one. */
static long long parse_size(const char *s)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || v < 0)
		goto bad;
	switch (*end) {
	case 'k': case 'K': v *= KIB; end++; break;
	case 'm': case 'M': v *= MIB; end++; break;
	case 'g': case 'G': v *= 1024 * MIB; end++; break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	if (*end)
		goto bad;
	return v;
bad:
	errno = EINVAL;
	return -1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* splitmix64: both the random stream and the data pattern. */
static uint64_t mix64(uint64_t x)
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
static unsigned char pattern_byte(uint64_t seed, long op, off_t off)
{
	uint64_t w = mix64(seed ^ ((uint64_t)op << 40) ^ (uint64_t)(off >> 3));

	return (unsigned char)(w >> ((off & 7) * 8));
}

static void pattern_fill(unsigned char *buf, uint64_t seed, long op, off_t off, size_t len)
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

static int usage(void)
{
	fprintf(stderr,
		"usage: fscheck random [--seed N] [--ops N] [--max-size SIZE] [--two-fds]\n"
		"                      [--skip pread,ftruncate,truncate,fsync,reopen,fstat,stat] FILE\n"
		"       fscheck overwrite SIZE N FILE\n"
		"       fscheck unlinked [--rmdir] FILE\n"
		"       fscheck socket PATH\n"
		"       fscheck setuid FILE UID [GID]\n");
	return 2;
}

static int cmd_random(int argc, char **argv)
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
				return usage();
			c.o.ops = (long)v;
			break;
		case 'm':
			if ((v = parse_size(optarg)) < 1)
				return usage();
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
					return usage();
				}
				c.o.skip[k] = true;
			}
			break;
		default:
			return usage();
		}
	}
	if (optind != argc - 1)
		return usage();
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
static bool all_are(const unsigned char *p, size_t n, unsigned char b)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != b)
			return false;
	return true;
}

/* The regression of writes reordered on their way: region i written with As
 * then at once with Bs must read Bs, right away and after a reopen. */
static int cmd_overwrite(int argc, char **argv)
{
	struct tap t = { 0 };
	unsigned char *a = NULL, *b = NULL, *got = NULL;
	long long size, n, i, bad_now = 0, bad_after = 0, first_now = -1, first_after = -1;
	const char *path;
	int fd = -1, rc;
	ssize_t r;

	if (argc != 4 || (size = parse_size(argv[1])) < 1 || (n = parse_size(argv[2])) < 1)
		return usage();
	path = argv[3];
	a = malloc((size_t)size);
	b = malloc((size_t)size);
	got = malloc((size_t)size);
	if (!a || !b || !got) {
		tap_ok(&t, false, "memory for %lld-byte writes", size);
		goto out;
	}
	memset(a, 'A', (size_t)size);
	memset(b, 'B', (size_t)size);
	printf("# fscheck overwrite %lld %lld %s\n", size, n, path);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (!tap_ok(&t, fd >= 0, "open %s%s%s", path, fd < 0 ? ": " : "", fd < 0 ? strerror(errno) : ""))
		goto out;
	for (i = 0; i < n; i++) {
		off_t off = (off_t)(i * size);

		if (pwrite(fd, a, (size_t)size, off) != size || pwrite(fd, b, (size_t)size, off) != size) {
			tap_ok(&t, false, "pwrite of region %lld: %s", i, strerror(errno));
			goto out;
		}
		r = pread(fd, got, (size_t)size, off);
		if (r != size || !all_are(got, (size_t)size, 'B')) {
			if (first_now < 0)
				first_now = i;
			bad_now++;
		}
	}
	tap_ok(&t, bad_now == 0, "each of %lld regions of %lld bytes reads B right after A then B were written (%lld not, the first %lld)",
		n, size, bad_now, first_now);
	rc = fsync(fd);
	tap_ok(&t, rc == 0, "fsync%s%s", rc ? ": " : "", rc ? strerror(errno) : "");
	rc = close(fd);
	tap_ok(&t, rc == 0, "close%s%s", rc ? ": " : "", rc ? strerror(errno) : "");
	fd = open(path, O_RDONLY);
	if (!tap_ok(&t, fd >= 0, "reopen%s%s", fd < 0 ? ": " : "", fd < 0 ? strerror(errno) : ""))
		goto out;
	for (i = 0; i < n; i++) {
		r = pread(fd, got, (size_t)size, (off_t)(i * size));
		if (r != size || !all_are(got, (size_t)size, 'B')) {
			if (first_after < 0)
				first_after = i;
			bad_after++;
		}
	}
	tap_ok(&t, bad_after == 0, "after fsync, close and reopen, %lld of %lld regions are not all B (the first %lld)",
		bad_after, n, first_after);
out:
	if (fd >= 0)
		close(fd);
	free(a);
	free(b);
	free(got);
	return tap_done(&t);
}

/* ---- unlinked ---- */

/* An open file whose name is gone keeps working through its descriptor:
 * fstat, fchmod, pwrite, pread, ftruncate; with --rmdir its folder, empty
 * now, can be removed meanwhile (nothing like .fuse_hidden is left in it). */
static int cmd_unlinked(int argc, char **argv)
{
	struct tap t = { 0 };
	/* 64 KiB written first, a 4000-byte hole, then 1000 bytes written after the unlink */
	unsigned char want[65536 + 5000], tail[1000], got[sizeof(want) + 100];
	const char *path;
	char *dir = NULL;
	bool do_rmdir = false;
	struct stat st;
	int fd = -1, rc;
	ssize_t r;

	if (argc == 3 && !strcmp(argv[1], "--rmdir"))
		do_rmdir = true, path = argv[2];
	else if (argc == 2)
		path = argv[1];
	else
		return usage();
	memset(want, 0, sizeof(want));
	pattern_fill(want, 12, 1, 0, 65536);
	pattern_fill(tail, 12, 2, 65536 + 4000, sizeof(tail));
	memcpy(want + 65536 + 4000, tail, sizeof(tail));
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (!tap_ok(&t, fd >= 0, "open %s", path))
		goto out;
	tap_ok(&t, pwrite(fd, want, 65536, 0) == 65536, "write 64 KiB");
	rc = unlink(path);
	tap_ok(&t, rc == 0, "unlink while open%s%s", rc ? ": " : "", rc ? strerror(errno) : "");
	rc = stat(path, &st);
	tap_ok(&t, rc < 0 && errno == ENOENT, "the name is gone (stat: %s)", rc < 0 ? strerror(errno) : "it exists");
	if (do_rmdir) {
		dir = strdup(path);
		rc = dir ? rmdir(dirname(dir)) : -1;
		tap_ok(&t, rc == 0, "rmdir of its folder, now empty, while the file is open%s%s",
			rc ? ": " : "", rc ? strerror(errno) : "");
	}
	/* Once its folder is gone the mount can no longer name the file, and
	 * the kernel asks fstat and fchmod by name: ESTALE there, a limit
	 * docs/filesystem.md states. Reads and writes keep working. */
	if (!do_rmdir) {
		rc = fstat(fd, &st);
		tap_ok(&t, rc == 0 && st.st_size == 65536, "fstat works and says size 65536 (%s, size %lld)",
			rc ? strerror(errno) : "ok", rc ? -1LL : (long long)st.st_size);
		tap_ok(&t, rc == 0 && st.st_nlink == 0, "fstat says nlink 0 (%lld)", rc ? -1LL : (long long)st.st_nlink);
		rc = fchmod(fd, 0600);
		tap_ok(&t, rc == 0, "fchmod 0600%s%s", rc ? ": " : "", rc ? strerror(errno) : "");
		rc = fstat(fd, &st);
		tap_ok(&t, rc == 0 && (st.st_mode & 07777) == 0600, "fstat then says mode 0600 (%o)",
			rc ? 0 : (unsigned)(st.st_mode & 07777));
	}
	r = pwrite(fd, tail, sizeof(tail), 65536 + 4000);
	tap_ok(&t, r == 1000, "pwrite past the end, leaving a hole%s%s", r < 0 ? ": " : "", r < 0 ? strerror(errno) : "");
	if (!do_rmdir) {
		rc = fstat(fd, &st);
		tap_ok(&t, rc == 0 && st.st_size == 65536 + 5000, "fstat says size %d (%lld)", 65536 + 5000,
			rc ? -1LL : (long long)st.st_size);
	}
	memset(got, 0xee, sizeof(got));
	r = pread(fd, got, sizeof(got), 0);
	tap_ok(&t, r == (ssize_t)sizeof(want) && !memcmp(got, want, sizeof(want)), "pread reads back all of it, the hole zeros (%zd bytes)", r);
	rc = ftruncate(fd, 1000);
	tap_ok(&t, rc == 0, "ftruncate to 1000%s%s", rc ? ": " : "", rc ? strerror(errno) : "");
	if (!do_rmdir) {
		rc = fstat(fd, &st);
		tap_ok(&t, rc == 0 && st.st_size == 1000, "fstat says size 1000 (%lld)", rc ? -1LL : (long long)st.st_size);
	}
	r = pread(fd, got, sizeof(got), 0);
	tap_ok(&t, r == 1000 && !memcmp(got, want, 1000), "pread reads the first 1000 bytes only (%zd)", r);
	rc = close(fd);
	fd = -1;
	tap_ok(&t, rc == 0, "close%s%s", rc ? ": " : "", rc ? strerror(errno) : "");
out:
	if (fd >= 0)
		close(fd);
	free(dir);
	return tap_done(&t);
}

/* ---- socket ---- */

/* A unix socket bound at PATH: stat says socket, a client connects through
 * the name and a byte goes each way. Binds from the folder (chdir) so that a
 * long test path still fits sun_path. */
static int cmd_socket(int argc, char **argv)
{
	struct tap t = { 0 };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char *d = NULL, *b = NULL, c = 0;
	int srv = -1, cli = -1, con = -1, rc;
	struct stat st;

	if (argc != 2)
		return usage();
	d = strdup(argv[1]);
	b = strdup(argv[1]);
	if (!d || !b || chdir(dirname(d)) < 0 || strlen(basename(b)) >= sizeof(sa.sun_path)) {
		tap_ok(&t, false, "chdir to the folder of %s: %s", argv[1], strerror(errno));
		goto out;
	}
	strcpy(sa.sun_path, basename(b));
	srv = socket(AF_UNIX, SOCK_STREAM, 0);
	rc = srv < 0 ? -1 : bind(srv, (struct sockaddr *)&sa, sizeof(sa));
	if (!tap_ok(&t, rc == 0, "bind a unix socket at %s%s%s", argv[1], rc ? ": " : "", rc ? strerror(errno) : ""))
		goto out;
	rc = listen(srv, 1);
	tap_ok(&t, rc == 0, "listen");
	rc = stat(sa.sun_path, &st);
	tap_ok(&t, rc == 0 && S_ISSOCK(st.st_mode), "stat says it is a socket (%s, mode %o)",
		rc ? strerror(errno) : "ok", rc ? 0 : (unsigned)st.st_mode);
	cli = socket(AF_UNIX, SOCK_STREAM, 0);
	rc = cli < 0 ? -1 : connect(cli, (struct sockaddr *)&sa, sizeof(sa));
	if (!tap_ok(&t, rc == 0, "connect through the name%s%s", rc ? ": " : "", rc ? strerror(errno) : ""))
		goto out;
	con = accept(srv, NULL, NULL);
	tap_ok(&t, con >= 0 && write(cli, "x", 1) == 1 && read(con, &c, 1) == 1 && c == 'x' &&
		write(con, "y", 1) == 1 && read(cli, &c, 1) == 1 && c == 'y', "a byte passes each way");
	rc = unlink(sa.sun_path);
	tap_ok(&t, rc == 0, "unlink the socket%s%s", rc ? ": " : "", rc ? strerror(errno) : "");
out:
	if (con >= 0)
		close(con);
	if (cli >= 0)
		close(cli);
	if (srv >= 0)
		close(srv);
	free(d);
	free(b);
	return tap_done(&t);
}

/* ---- setuid ---- */

enum change { CH_WRITE, CH_FTRUNCATE, CH_TRUNCATE };

/* Each case: a mode set by root on a file of root's (group root, or the
 * writer's group), a change made by another user (or root), and the mode
 * ext4 leaves. The kernel's rule (Linux 6.x, setattr_should_drop_sgid):
 * S_ISUID goes on any change by a process without CAP_FSETID; S_ISGID goes
 * where group-exec is set, and without group-exec only if the writer is not
 * in the file's group. */
static const struct {
	mode_t mode;
	bool writers_group;     /* the file's group is the writer's */
	enum change how;
	bool by_root;
	mode_t want;
	const char *what;
} suid_cases[] = {
	{ 04777, false, CH_WRITE, false, 00777, "a write by another user clears S_ISUID" },
	{ 02777, false, CH_WRITE, false, 00777, "a write by another user clears S_ISGID (group-exec)" },
	{ 06777, false, CH_WRITE, false, 00777, "a write by another user clears both" },
	{ 02767, false, CH_WRITE, false, 00767, "a write by a user outside the group clears S_ISGID without group-exec" },
	{ 02767, true, CH_WRITE, false, 02767, "a write by a user of the group keeps S_ISGID without group-exec" },
	{ 06777, true, CH_WRITE, false, 00777, "a write by a user of the group clears both (group-exec)" },
	{ 04777, false, CH_FTRUNCATE, false, 00777, "ftruncate by another user clears S_ISUID" },
	{ 06777, false, CH_TRUNCATE, false, 00777, "truncate by path by another user clears both" },
	{ 06777, false, CH_WRITE, true, 06777, "a write by root keeps both" },
};

/* In a child as uid/gid (or root): make the change. Exit status 0 if it worked. */
static int suid_change(const char *path, enum change how, bool by_root, uid_t uid, gid_t gid)
{
	pid_t pid = fork();
	int status, fd;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (!by_root && (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(uid) < 0))
			_exit(3);
		if (how == CH_TRUNCATE)
			_exit(truncate(path, 3) == 0 ? 0 : 4);
		fd = open(path, O_WRONLY);
		if (fd < 0)
			_exit(5);
		if (how == CH_WRITE ? pwrite(fd, "data", 4, 1) != 4 : ftruncate(fd, 2) != 0)
			_exit(6);
		_exit(close(fd) == 0 ? 0 : 7);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static int cmd_setuid(int argc, char **argv)
{
	struct tap t = { 0 };
	const char *path;
	uid_t uid;
	gid_t gid;
	size_t i;

	if (argc != 3 && argc != 4)
		return usage();
	path = argv[1];
	uid = (uid_t)strtoul(argv[2], NULL, 10);
	gid = (gid_t)strtoul(argc == 4 ? argv[3] : argv[2], NULL, 10);
	if (geteuid() != 0) {
		printf("# SKIP: setuid needs root\n");
		return 77;
	}
	for (i = 0; i < sizeof(suid_cases) / sizeof(suid_cases[0]); i++) {
		struct stat st;
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), rc;

		/* chown before chmod: a chown clears the bits itself */
		if (fd < 0 || write(fd, "original", 8) != 8 || close(fd) < 0 ||
		    chown(path, 0, suid_cases[i].writers_group ? gid : 0) < 0 || chmod(path, suid_cases[i].mode) < 0 ||
		    stat(path, &st) < 0 || (st.st_mode & 07777) != suid_cases[i].mode) {
			tap_ok(&t, false, "%s: set up mode %04o: %s", suid_cases[i].what,
				(unsigned)suid_cases[i].mode, strerror(errno));
			continue;
		}
		rc = suid_change(path, suid_cases[i].how, suid_cases[i].by_root, uid, gid);
		if (rc != 0) {
			tap_ok(&t, false, "%s: the change as %s failed (child status %d)", suid_cases[i].what,
				suid_cases[i].by_root ? "root" : argv[2], rc);
			continue;
		}
		rc = stat(path, &st);
		tap_ok(&t, rc == 0 && (st.st_mode & 07777) == suid_cases[i].want, "%s (%04o -> %04o, want %04o)",
			suid_cases[i].what, (unsigned)suid_cases[i].mode, rc ? 0 : (unsigned)(st.st_mode & 07777),
			(unsigned)suid_cases[i].want);
	}
	unlink(path);
	return tap_done(&t);
}

/* ---- main ---- */

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "random", cmd_random },
	{ "overwrite", cmd_overwrite },
	{ "unlinked", cmd_unlinked },
	{ "socket", cmd_socket },
	{ "setuid", cmd_setuid },
};

int main(int argc, char **argv)
{
	size_t i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		return usage();
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	return usage();
}
