/* The FUSE side of parsafs: the fuse_operations table and the dispatch of a
 * path to the kind of node it names, through one static table of
 * {pattern, node ops}. This is the one place where -1/errno becomes -errno. */
#ifndef PARSA_OPS_H
#define PARSA_OPS_H

#include "fs_node.h"

struct fuse_operations;

/* The operations for fuse_new(); private_data must be a struct fs_ctx. */
const struct fuse_operations *fs_operations(void);

/* Match path against the tree; 0 with p filled, or -1/ENOENT. */
int fs_match(const char *path, struct fs_path *p);

#endif
