/* O_DIRECT read-ahead of a local file: chunks come back in order with the
 * file's bytes, short at its end; another offset, a change of the file (a
 * write, a truncate) or a stop make take fail with EAGAIN instead of handing
 * over stale bytes, and reading goes on after them. */
#include "local_ra.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TAP_STATE;

#define CHUNK (256u << 10)
#define CHUNKS 12

/* Byte i of the file as written: which chunk and where in it. */
static char byte_at(off_t i)
{
	return (char)((i / CHUNK) * 31 + (i % 251));
}

static bool holds(const char *buf, size_t len, off_t off, char changed_to, off_t changed_at)
{
	for (size_t i = 0; i < len; i++) {
		off_t at = off + (off_t)i;
		char want = at == changed_at ? changed_to : byte_at(at);

		if (buf[i] != want)
			return false;
	}
	return true;
}

static struct local_ra *start(const char *path, int fd, off_t off)
{
	int direct = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);

	if (direct < 0)
		return NULL;
	return local_ra_create(direct, fd, CHUNK, 4096, off);
}

int main(void)
{
	char dir[] = "/var/tmp/parsa-local-ra.XXXXXX", path[64];
	size_t size = CHUNKS * CHUNK + 1000;   /* a short last chunk */
	char *data = malloc(size), *buf = NULL;
	struct local_ra *ra;
	int fd, writer, probe;
	ssize_t n;

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof path, "%s/f", dir);
	for (size_t i = 0; i < size; i++)
		data[i] = byte_at((off_t)i);
	writer = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (writer < 0 || write(writer, data, size) != (ssize_t)size)
		return 1;
	fsync(writer);
	fd = open(path, O_RDONLY);
	probe = open(path, O_RDONLY | O_DIRECT);
	if (probe < 0) {
		printf("1..0 # SKIP %s: no O_DIRECT here\n", dir);
		goto cleanup;
	}
	close(probe);

	ra = start(path, fd, 0);
	ok(ra != NULL, "a read-ahead starts");
	{
		bool all = true;

		for (int i = 0; i < CHUNKS; i++) {
			n = local_ra_take(ra, CHUNK, (off_t)i * CHUNK, &buf);
			if (n != (ssize_t)CHUNK || !holds(buf, CHUNK, (off_t)i * CHUNK, 0, -1))
				diag("chunk %d: %zd bytes (errno %d)", i, n, n < 0 ? errno : 0);
			all = all && n == (ssize_t)CHUNK && holds(buf, CHUNK, (off_t)i * CHUNK, 0, -1);
			free(buf);
			buf = NULL;
		}
		ok(all, "twelve chunks in order, each the file's bytes");
	}
	n = local_ra_take(ra, CHUNK, (off_t)CHUNKS * CHUNK, &buf);
	ok(n == 1000 && holds(buf, 1000, (off_t)CHUNKS * CHUNK, 0, -1), "the last chunk is short");
	free(buf);
	buf = NULL;
	n = local_ra_take(ra, CHUNK, (off_t)(CHUNKS + 1) * CHUNK, &buf);
	ok(n < 0 && errno == EAGAIN, "past the end: not read ahead (the caller reads 0 itself)");
	local_ra_destroy(ra);

	/* Another offset: EAGAIN, then it goes on from after that request. */
	ra = start(path, fd, 0);
	n = local_ra_take(ra, CHUNK, 5 * (off_t)CHUNK, &buf);
	ok(n < 0 && errno == EAGAIN, "a jump is not served");
	n = local_ra_take(ra, CHUNK, 6 * (off_t)CHUNK, &buf);
	ok(n == (ssize_t)CHUNK && holds(buf, CHUNK, 6 * (off_t)CHUNK, 0, -1),
	   "the request after the jump is read ahead");
	free(buf);
	buf = NULL;
	n = local_ra_take(ra, CHUNK / 2, 7 * (off_t)CHUNK, &buf);
	ok(n < 0 && errno == EAGAIN, "a request of another size is not served");

	/* A write behind its back, after chunks 9 and 10 were read ahead. */
	n = local_ra_take(ra, CHUNK, 8 * (off_t)CHUNK, &buf);
	free(buf);
	buf = NULL;
	ok(n < 0, "the chunk after the odd-sized request restarts it");
	n = local_ra_take(ra, CHUNK, 9 * (off_t)CHUNK, &buf);
	free(buf);
	buf = NULL;
	usleep(100000);         /* chunks 10.. are read ahead by now */
	if (pwrite(writer, "Z", 1, 10 * (off_t)CHUNK + 5) != 1)
		return 1;
	n = local_ra_take(ra, CHUNK, 10 * (off_t)CHUNK, &buf);
	ok(n < 0 && errno == EAGAIN, "a chunk read before a write to the file is not handed over");
	n = local_ra_take(ra, CHUNK, 11 * (off_t)CHUNK, &buf);
	ok(n == (ssize_t)CHUNK && holds(buf, CHUNK, 11 * (off_t)CHUNK, 0, -1), "then it goes on");
	free(buf);
	buf = NULL;
	local_ra_destroy(ra);

	ra = start(path, fd, 10 * (off_t)CHUNK);
	n = local_ra_take(ra, CHUNK, 10 * (off_t)CHUNK, &buf);
	ok(n == (ssize_t)CHUNK && holds(buf, CHUNK, 10 * (off_t)CHUNK, 'Z', 10 * (off_t)CHUNK + 5),
	   "read again, the chunk has the write");
	free(buf);
	buf = NULL;
	usleep(100000);
	if (ftruncate(writer, 11 * (off_t)CHUNK + 10) != 0)
		return 1;
	n = local_ra_take(ra, CHUNK, 11 * (off_t)CHUNK, &buf);
	ok(n < 0 && errno == EAGAIN, "a truncate after the chunk was read: not handed over");
	local_ra_destroy(ra);

	ra = start(path, fd, 0);
	usleep(50000);
	local_ra_stop(ra);
	n = local_ra_take(ra, CHUNK, 0, &buf);
	ok(n < 0 && errno == EAGAIN, "stopped: nothing is handed over");
	local_ra_destroy(ra);

	ra = start(path, fd, 0);
	local_ra_destroy(ra);   /* with reads in flight: nothing leaks (ASan) */
	ok(1, "destroy while reading ahead");

	errno = 0;
	ok(local_ra_create(-1, fd, 1000, 4096, 0) == NULL && errno == EINVAL,
	   "a chunk that is not a multiple of the alignment is refused");
cleanup:
	close(fd);
	close(writer);
	unlink(path);
	rmdir(dir);
	free(data);
	return done_testing();
}
