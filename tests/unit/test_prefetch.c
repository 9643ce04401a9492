/* Read-ahead from threads: a hinted range comes into the page cache after
 * the caller closed its descriptor, what lies before it does not, hints past
 * the end of a file or on a descriptor that cannot be read ahead (a pipe)
 * come back, and no descriptor is left behind, whether the hints were given,
 * given in place (queue full) or dropped by destroy. */
#include "prefetch.h"
#include "fds.h"
#include "tap.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

TAP_STATE;

#define MIB (1 << 20)
#define FILE_SIZE (16 * MIB)

/* Pages of [off, off + len) of the mapping in the page cache. */
static long resident(unsigned char *map, size_t off, size_t len)
{
	long page = sysconf(_SC_PAGESIZE), n = 0;
	size_t pages = len / (size_t)page;
	unsigned char *vec = calloc(pages, 1);

	if (mincore(map + off, len, vec) == 0)
		for (size_t i = 0; i < pages; i++)
			n += vec[i] & 1;
	free(vec);
	return n;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int main(void)
{
	char dir[] = "/var/tmp/parsa-prefetch.XXXXXX", path[64];
	long page = sysconf(_SC_PAGESIZE), want = 4 * MIB / page;
	char *buf = malloc(MIB);
	unsigned char *map;
	struct prefetch *p;
	long t0;
	int fd, fds, i;

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof path, "%s/f", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	memset(buf, 'x', MIB);
	for (i = 0; i < FILE_SIZE / MIB; i++)
		if (write(fd, buf, MIB) != MIB)
			return 1;
	fsync(fd);
	posix_fadvise(fd, 0, FILE_SIZE, POSIX_FADV_DONTNEED);
	map = mmap(NULL, FILE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return 1;
	if (resident(map, 0, FILE_SIZE) > FILE_SIZE / page / 4) {
		/* tmpfs, or a kernel that keeps them: nothing to observe. */
		printf("1..0 # SKIP %s keeps the file's pages in memory\n", dir);
		unlink(path);
		rmdir(dir);
		return 0;
	}

	fds = count_fds();
	p = prefetch_create();
	{
		int copy = dup(fd);

		prefetch_ask(p, copy, 4 * MIB, 4 * MIB);
		close(copy);    /* the queue keeps its own */
	}
	for (i = 0; i < 500 && resident(map, 4 * MIB, 4 * MIB) < want; i++)
		sleep_ms(10);
	is_int(resident(map, 4 * MIB, 4 * MIB), want, "the hinted 4 MiB come into the page cache");
	/* The kernel may read on past the range, as for any sequential reader. */
	ok(resident(map, 0, 4 * MIB) < want / 2, "the range before the hint does not");

	/* More hints than the queue holds: the rest are given in place. */
	for (i = 0; i < 200; i++)
		prefetch_ask(p, fd, (off_t)(i % 16) * MIB, MIB);
	for (i = 0; i < 500 && resident(map, 0, FILE_SIZE) < FILE_SIZE / page; i++)
		sleep_ms(10);
	is_int(resident(map, 0, FILE_SIZE), FILE_SIZE / page, "200 hints at once: all given");
	{
		int pipe_fds[2];

		if (pipe(pipe_fds) != 0)
			return 1;
		prefetch_ask(p, pipe_fds[0], 0, MIB);
		prefetch_ask(p, fd, 64 * MIB, 4 * MIB);
		sleep_ms(200);  /* the threads take them */
		t0 = now_ms();
		prefetch_destroy(p);
		/* A thread stuck in either would keep destroy waiting. */
		ok(now_ms() - t0 < 2000, "hints on a pipe and past the end of the file come back");
		close(pipe_fds[0]);
		close(pipe_fds[1]);
	}
	is_int(count_fds(), fds, "no descriptor left after destroy");

	/* Destroy right after queuing drops what was not given, and its copies. */
	p = prefetch_create();
	for (i = 0; i < 64; i++)
		prefetch_ask(p, fd, 0, MIB);
	prefetch_destroy(p);
	is_int(count_fds(), fds, "destroy closes the copies of hints not given");

	p = prefetch_create();
	prefetch_destroy(p);
	ok(1, "create and destroy without a hint");

	munmap(map, FILE_SIZE);
	close(fd);
	unlink(path);
	rmdir(dir);
	free(buf);
	return done_testing();
}
