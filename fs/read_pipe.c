/* Each FUSE thread's pipe for the replies to reads (read_pipe.h). */
#include "read_pipe.h"
#include "backend.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* Each FUSE thread has a pipe the backend may move a read's bytes into, for
 * libfuse to splice into the reply: libfuse answers on the thread that took
 * the request, before that thread takes another, so the pipe is free again
 * at the thread's next read (unless a reply failed: then it is made anew). */
static void close_read_pipe(void *v)
{
	struct backend_pipe *p = v;

	close(p->rfd);
	close(p->wfd);
	free(p);
}

int read_pipes_init(struct fs_ctx *fs)
{
	errno = pthread_key_create(&fs->read_pipe, close_read_pipe);
	fs->read_pipe_ok = errno == 0;
	return fs->read_pipe_ok ? 0 : -1;
}

struct backend_pipe *read_pipe_get(struct fs_ctx *fs)
{
	struct backend_pipe *p = fs->read_pipe_ok ? pthread_getspecific(fs->read_pipe) : NULL;
	int fd[2], left = 0;

	if (p && ioctl(p->rfd, FIONREAD, &left) == 0 && left == 0)
		return p;
	if (p) {
		(void)pthread_setspecific(fs->read_pipe, NULL);
		close_read_pipe(p);
	}
	/* 1 MiB, pipe-max-size unless raised: a whole chunk's pieces. */
	if (!fs->read_pipe_ok || pipe2(fd, O_CLOEXEC | O_NONBLOCK) < 0)
		return NULL;
	if (fcntl(fd[0], F_SETPIPE_SZ, 1 << 20) < 0) {
		close(fd[0]);
		close(fd[1]);
		return NULL;
	}
	p = xmalloc(sizeof *p);
	*p = (struct backend_pipe){ .rfd = fd[0], .wfd = fd[1] };
	if (pthread_setspecific(fs->read_pipe, p) != 0) {
		close_read_pipe(p);
		return NULL;
	}
	return p;
}

