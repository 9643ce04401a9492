/* Write-behind of large aligned writes to a local file (see local_wb.h). */
#include "local_wb.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Four 1 MiB buffers (one FUSE request each): the disk writes one while FUSE
 * brings the next. Each costs memory per open file being written; writing
 * the queued ones with one pwritev was no faster. */
#define WB_SLOTS 4
#define WB_SLOT_SIZE (1u << 20)

struct wb_slot {
	char *buf;              /* WB_SLOT_SIZE bytes, aligned */
	size_t len;
	off_t off;
};

struct local_wb {
	int direct_fd;
	int fd;
	unsigned int align;
	pthread_t thread;
	/* One queuing caller at a time: it fills the free slot after the queue
	 * without holding lock, so only it may touch that slot. */
	pthread_mutex_t queue_lock;
	pthread_mutex_t lock;   /* guards the fields below */
	pthread_cond_t work;    /* queued grew, or stop */
	pthread_cond_t done;    /* queued shrank */
	struct wb_slot slots[WB_SLOTS];
	unsigned int head;      /* the oldest queued slot */
	unsigned int queued;    /* slots queued or being written */
	bool stop;
	int error;              /* first errno of a failed write, kept */
};

/* Write one slot; the file's own descriptor takes what O_DIRECT refuses or
 * leaves over (a short write at the end of the space). 0 or an errno value. */
static int write_slot(struct local_wb *wb, const struct wb_slot *s)
{
	size_t done = 0;
	bool direct = true;

	while (done < s->len) {
		int fd = direct ? wb->direct_fd : wb->fd;
		ssize_t n = pwrite(fd, s->buf + done, s->len - done, s->off + (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && direct && errno == EINVAL) {
			direct = false;
			continue;
		}
		if (n < 0)
			return errno;
		if (n == 0)
			return EIO;
		done += (size_t)n;
		if (done % wb->align)
			direct = false;
	}
	return 0;
}

static void *writer(void *arg)
{
	struct local_wb *wb = arg;

	pthread_mutex_lock(&wb->lock);
	for (;;) {
		struct wb_slot *s;
		int err;

		while (!wb->queued && !wb->stop)
			pthread_cond_wait(&wb->work, &wb->lock);
		if (!wb->queued)
			break;
		s = &wb->slots[wb->head];
		pthread_mutex_unlock(&wb->lock);
		err = write_slot(wb, s);
		pthread_mutex_lock(&wb->lock);
		if (err && !wb->error)
			wb->error = err;
		wb->head = (wb->head + 1) % WB_SLOTS;
		wb->queued--;
		pthread_cond_broadcast(&wb->done);
	}
	pthread_mutex_unlock(&wb->lock);
	return NULL;
}

struct local_wb *local_wb_create(int direct_fd, int fd, unsigned int align)
{
	struct local_wb *wb = xcalloc(1, sizeof *wb);
	int i, err;

	wb->direct_fd = direct_fd;
	wb->fd = fd;
	wb->align = align;
	for (i = 0; i < WB_SLOTS; i++) {
		void *p;

		if (posix_memalign(&p, align > 4096 ? align : 4096, WB_SLOT_SIZE) != 0) {
			errno = ENOMEM;
			goto fail;
		}
		wb->slots[i].buf = p;
	}
	pthread_mutex_init(&wb->queue_lock, NULL);
	pthread_mutex_init(&wb->lock, NULL);
	pthread_cond_init(&wb->work, NULL);
	pthread_cond_init(&wb->done, NULL);
	err = pthread_create(&wb->thread, NULL, writer, wb);
	if (err) {
		pthread_cond_destroy(&wb->done);
		pthread_cond_destroy(&wb->work);
		pthread_mutex_destroy(&wb->lock);
		pthread_mutex_destroy(&wb->queue_lock);
		errno = err;
		goto fail;
	}
	return wb;
fail:
	err = errno;
	for (i = 0; i < WB_SLOTS; i++)
		free(wb->slots[i].buf);
	free(wb);
	errno = err;
	return NULL;
}

int local_wb_fits(const struct local_wb *wb, size_t size, off_t off)
{
	return size > 0 && size % wb->align == 0 && off >= 0 && (size_t)off % wb->align == 0;
}

ssize_t local_wb_write(struct local_wb *wb, const void *buf, size_t size, off_t off)
{
	size_t done = 0;
	ssize_t ret = -1;

	pthread_mutex_lock(&wb->queue_lock);
	while (done < size) {
		size_t n = size - done < WB_SLOT_SIZE ? size - done : WB_SLOT_SIZE;
		struct wb_slot *s;

		pthread_mutex_lock(&wb->lock);
		while (wb->queued == WB_SLOTS && !wb->error)
			pthread_cond_wait(&wb->done, &wb->lock);
		if (wb->error) {
			errno = wb->error;
			pthread_mutex_unlock(&wb->lock);
			goto out;
		}
		s = &wb->slots[(wb->head + wb->queued) % WB_SLOTS];
		pthread_mutex_unlock(&wb->lock);
		memcpy(s->buf, (const char *)buf + done, n);
		s->len = n;
		s->off = off + (off_t)done;
		pthread_mutex_lock(&wb->lock);
		wb->queued++;
		pthread_cond_signal(&wb->work);
		pthread_mutex_unlock(&wb->lock);
		done += n;
	}
	ret = (ssize_t)size;
out:
	pthread_mutex_unlock(&wb->queue_lock);
	return ret;
}

int local_wb_drain(struct local_wb *wb)
{
	int err;

	pthread_mutex_lock(&wb->lock);
	while (wb->queued)
		pthread_cond_wait(&wb->done, &wb->lock);
	err = wb->error;
	pthread_mutex_unlock(&wb->lock);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

int local_wb_destroy(struct local_wb *wb)
{
	int ret, saved;

	if (!wb)
		return 0;
	ret = local_wb_drain(wb);
	saved = errno;
	pthread_mutex_lock(&wb->lock);
	wb->stop = true;
	pthread_cond_signal(&wb->work);
	pthread_mutex_unlock(&wb->lock);
	pthread_join(wb->thread, NULL);
	pthread_cond_destroy(&wb->done);
	pthread_cond_destroy(&wb->work);
	pthread_mutex_destroy(&wb->lock);
	pthread_mutex_destroy(&wb->queue_lock);
	close(wb->direct_fd);
	for (int i = 0; i < WB_SLOTS; i++)
		free(wb->slots[i].buf);
	free(wb);
	errno = saved;
	return ret;
}
