/* The floor under parsa's parallel-read figures on this machine: a FUSE file
 * system of read-only files whose reads hand out a buffer of the size asked
 * for and do nothing else (no storage, no copy into it), mounted with
 * parsafs's settings (its request sizes, its multi-threaded loop, the same
 * malloc tuning). bench/storage-par.sh reads its files with the same 8 `dd`
 * as parsa's mount: what that costs is FUSE's own share, which no file
 * system on FUSE can go below.
 *
 *   bench_read_floor MOUNTPOINT FILES SIZE   serve FILES files r0.. of SIZE
 *                                            bytes in the foreground until unmounted */
#include "fuse_serve.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What the handlers share: how many files, how large. */
struct floor_read {
	long files;
	off_t size;
};

static struct floor_read *floor_of_context(void)
{
	return fuse_get_context()->private_data;
}

/* "/rN" with N below the number of files: its index, else -1. */
static long file_index(const char *path)
{
	struct floor_read *fs = floor_of_context();
	char *end;
	long i;

	if (path[0] != '/' || path[1] != 'r' || path[2] < '0' || path[2] > '9')
		return -1;
	i = strtol(path + 2, &end, 10);
	return *end == '\0' && i < fs->files ? i : -1;
}

static int floor_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	memset(st, 0, sizeof *st);
	if (strcmp(path, "/") == 0) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	if (file_index(path) < 0)
		return -ENOENT;
	st->st_mode = S_IFREG | 0444;
	st->st_nlink = 1;
	st->st_size = floor_of_context()->size;
	return 0;
}

static int floor_open(const char *path, struct fuse_file_info *fi)
{
	if (file_index(path) < 0)
		return -ENOENT;
	return (fi->flags & O_ACCMODE) == O_RDONLY ? 0 : -EACCES;
}

/* As parsafs's NFS reads (fs/ops.c read_buf): a malloc'ed buffer handed to
 * libfuse, which writes it to the kernel and frees it. */
static int floor_read_buf(const char *path, struct fuse_bufvec **bufp, size_t size, off_t off,
			  struct fuse_file_info *fi)
{
	off_t end = floor_of_context()->size;
	struct fuse_bufvec *bv = malloc(sizeof *bv);
	size_t n = off >= end ? 0 : (size_t)(end - off) < size ? (size_t)(end - off) : size;

	(void)path;
	(void)fi;
	if (!bv)
		return -ENOMEM;
	*bv = (struct fuse_bufvec)FUSE_BUFVEC_INIT(n);
	bv->buf[0].mem = malloc(n ? n : 1);
	if (!bv->buf[0].mem) {
		free(bv);
		return -ENOMEM;
	}
	*bufp = bv;
	return 0;
}

static void *floor_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	/* parsa's own settings (fs/ops.c), so that the same requests come. */
	conn->max_write = 1u << 20;
	conn->max_readahead = 1u << 20;
	conn->max_read = 512u << 10;
	cfg->entry_timeout = 1.0;
	cfg->attr_timeout = 1.0;
	return fuse_get_context()->private_data;
}

static const struct fuse_operations floor_ops = {
	.init = floor_init,
	.getattr = floor_getattr,
	.open = floor_open,
	.read_buf = floor_read_buf,
};

int main(int argc, char **argv)
{
	/* parsafs's read size (fs/main.c FS_READ_MAX), as an option and from init. */
	static const char *const opts[] = { "-omax_read=524288", NULL };
	struct floor_read fs = { 0 };

	if (argc != 4 || (fs.files = strtol(argv[2], NULL, 10)) <= 0 ||
	    (fs.size = (off_t)strtoll(argv[3], NULL, 10)) < 0) {
		fprintf(stderr, "usage: bench_read_floor MOUNTPOINT FILES SIZE\n");
		return 2;
	}
	/* parsafs's malloc (fs/main.c, mem_one_arena): its blocks reused. */
	mallopt(M_ARENA_MAX, 1);
	mallopt(M_MMAP_THRESHOLD, 2 << 20);
	mallopt(M_TRIM_THRESHOLD, 8 << 20);
	return fuse_serve("bench_read_floor", &floor_ops, &fs, argv[1], opts);
}
