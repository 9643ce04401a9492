/* What the kernel's request said, for the few handlers that need more than
 * libfuse's high-level API passes on: the node id of the folder a CREATE
 * makes its file in, so that the name can be dropped from the kernel's cache
 * later (fuse_lowlevel_notify_inval_entry() wants that id, and the high-level
 * API hands handlers only paths). fs_wire_attach() puts a read through
 * libfuse's custom I/O hook that notes each request's header; a worker thread
 * reads its request and runs its handler before it reads the next one, so the
 * header noted on a thread is the one of the request it is serving. */
#ifndef PARSA_FS_WIRE_H
#define PARSA_FS_WIRE_H

#include <stdint.h>

struct fuse;

/* After fuse_mount(): read the mount's requests through the tap. 0, or -1
 * with errno (then fs_wire_create_parent() answers 0 and callers do without). */
int fs_wire_attach(struct fuse *fuse);

/* In a handler serving the kernel's CREATE: the node id of the folder the
 * file is created in. 0 anywhere else (another request, no tap, a thread
 * that serves no request). */
uint64_t fs_wire_create_parent(void);

#endif
