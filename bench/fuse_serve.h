/* What the floor benchmarks' FUSE file systems share: mounted as fs/main.c
 * mounts parsafs (allow_other where root may, its multi-threaded loop) and
 * served in the foreground until unmounted or signalled. */
#ifndef PARSA_BENCH_FUSE_SERVE_H
#define PARSA_BENCH_FUSE_SERVE_H

#define FUSE_USE_VERSION 312
#include <fuse.h>

/* Serve ops (data: their private data) on mountpoint with the mount options
 * opts (NULL-terminated "-o..." words); 0 once unmounted, 1 on failure. */
int fuse_serve(const char *name, const struct fuse_operations *ops, void *data, const char *mountpoint,
	       const char *const *opts);

#endif
