/* jobs/<id>/out/...: a job's output folders, straight from the storage
 * backend with full POSIX behaviour for their owner (the kernel checks modes
 * from the backend's own attributes). Also the open-file type for any backend
 * file, which the instance logs use too. */
#ifndef PARSA_OUT_DIR_H
#define PARSA_OUT_DIR_H

#include "fs_node.h"

struct backend;
struct backend_file;

extern const struct node_ops out_ops;   /* jobs/<id>/out and everything below */

/* An open file of the backend; takes ownership of bf. direct_io for files
 * whose size others change behind the kernel's back (logs). */
struct fs_file *backend_fs_file_create(struct backend *b, struct backend_file *bf, bool direct_io);

#endif
