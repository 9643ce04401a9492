/* The tap on the mount's requests (see wire.h). */
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <sys/uio.h>
#include <unistd.h>

/* The header of the request this thread serves. Per thread, never shared:
 * libfuse gives its I/O callbacks its own userdata (the struct fuse), not
 * ours, and runs each request's handler on the thread that read it, so a
 * thread's own storage is where the header can wait for its handler. */
static _Thread_local struct {
	uint32_t opcode;
	uint64_t nodeid;
} current;

static ssize_t tap_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);

	(void)userdata;
	if (n >= (ssize_t)sizeof(struct fuse_in_header)) {
		const struct fuse_in_header *h = buf;

		current.opcode = h->opcode;
		current.nodeid = h->nodeid;
	} else {
		current.opcode = 0;
		current.nodeid = 0;
	}
	return n;
}

static ssize_t tap_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	(void)userdata;
	return writev(fd, iov, count);
}

/* Replies spliced from a descriptor (read_buf of local files) stay spliced.
 * No splice_receive: requests must come through tap_read (and ops.c's init
 * does not ask for spliced requests anyway). */
static ssize_t tap_splice_send(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
			       unsigned int flags, void *userdata)
{
	(void)userdata;
	return splice(fdin, offin, fdout, offout, len, flags);
}

int fs_wire_attach(struct fuse *fuse)
{
	static const struct fuse_custom_io io = {
		.read = tap_read,
		.writev = tap_writev,
		.splice_send = tap_splice_send,
	};
	struct fuse_session *se = fuse_get_session(fuse);
	int fd = se ? fuse_session_fd(se) : -1, rc;

	if (fd < 0) {
		errno = EBADF;
		return -1;
	}
	/* Same descriptor: libfuse only starts reading and writing it through io. */
	rc = fuse_session_custom_io(se, &io, fd);
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	return 0;
}

uint64_t fs_wire_create_parent(void)
{
	return current.opcode == FUSE_CREATE ? current.nodeid : 0;
}
