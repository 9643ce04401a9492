/* Each FUSE thread's pipe for the replies to reads: the NFS backend moves a
 * chunk it spliced from the server's socket into it, and libfuse splices it
 * into the reply (ops.c read_buf), so the data is copied once, by the kernel.
 * A thread-specific key of the mount (fs_ctx.read_pipe) holds it. */
#ifndef PARSA_FS_READ_PIPE_H
#define PARSA_FS_READ_PIPE_H

#include "fs_node.h"

/* Before the loop starts; -1 with errno (reads then answer from memory). */
int read_pipes_init(struct fs_ctx *fs);
/* This thread's pipe, empty; NULL where none can be had. */
struct backend_pipe *read_pipe_get(struct fs_ctx *fs);

#endif
