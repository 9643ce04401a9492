/* The local-folder backend's open files with a write-behind (local_wb.h), in a
 * list by inode: a write through the page cache, a read, a stat or a change
 * by path waits first for what is written behind through other descriptors
 * of the same file (settle, settle_at), so the mount stays as coherent as the
 * disk. The list is guarded by lb->track_lock. */
#include "local_internal.h"
#include "slist.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Put f in the list of tracked files (once) as the file (dev, ino).
 * Called with f->lock and lb->track_lock held. */
static void track(struct backend_file *f, dev_t dev, ino_t ino)
{
	if (f->tracked)
		return;
	f->dev = dev;
	f->ino = ino;
	f->track_next = f->lb->tracked;
	f->lb->tracked = f;
	f->tracked = true;
}

void untrack(struct backend_file *f)
{
	struct local_backend *lb = f->lb;

	pthread_mutex_lock(&lb->track_lock);
	SLIST_UNLINK(struct backend_file, &lb->tracked, f, track_next);
	pthread_mutex_unlock(&lb->track_lock);
}

/* Start writing f behind once it has had DIRECT_AFTER bytes of large writes
 * (this one of size bytes counts). Files opened for appending keep to their
 * one descriptor (O_APPEND decides the offset there), and so does a file
 * O_DIRECT is not for. Returns f's write-behind or NULL. */
struct local_wb *wb_start(struct backend_file *f, size_t size)
{
	struct local_backend *lb = f->lb;
	struct local_wb *wb;
	struct statx stx;
	char proc[64];
	int fd = -1;

	pthread_mutex_lock(&f->lock);
	if (f->direct != HELPER_UNTRIED)
		goto out;
	if (f->big_written < DIRECT_AFTER) {
		f->big_written += size;
		goto out;
	}
	f->direct = HELPER_OFF;
	if ((f->flags & O_APPEND) || (f->flags & O_ACCMODE) == O_RDONLY)
		goto out;
	if (statx(f->fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_INO | STATX_DIOALIGN, &stx) < 0 ||
	    !S_ISREG(stx.stx_mode) || !(stx.stx_mask & STATX_DIOALIGN) ||
	    !stx.stx_dio_mem_align || !stx.stx_dio_offset_align ||
	    stx.stx_dio_mem_align > 4096 || stx.stx_dio_offset_align > 4096)
		goto out;
	/* The same open file, not the same name: a rename meanwhile cannot matter. */
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", f->fd);
	fd = open(proc, O_WRONLY | O_DIRECT | O_CLOEXEC | (f->flags & (O_SYNC | O_DSYNC)));
	if (fd < 0)
		goto out;
	pthread_mutex_lock(&lb->track_lock);
	f->wb = local_wb_create(fd, f->fd, stx.stx_dio_offset_align);
	if (f->wb) {
		track(f, makedev(stx.stx_dev_major, stx.stx_dev_minor), stx.stx_ino);
		f->direct = HELPER_ON;
	}
	pthread_mutex_unlock(&lb->track_lock);
	if (!f->wb)
		close(fd);
out:
	wb = f->wb;
	pthread_mutex_unlock(&f->lock);
	return wb;
}

/* f's write-behind if it has one. */
struct local_wb *wb_of(struct backend_file *f)
{
	struct local_wb *wb;

	pthread_mutex_lock(&f->lock);
	wb = f->wb;
	pthread_mutex_unlock(&f->lock);
	return wb;
}

bool tracked_any(struct local_backend *lb)
{
	bool any;

	pthread_mutex_lock(&lb->track_lock);
	any = lb->tracked != NULL;
	pthread_mutex_unlock(&lb->track_lock);
	return any;
}

/* The identity of f's file for the tracked list: 0, or -1 when it cannot be
 * among them (not a regular file). */
static int file_id(struct backend_file *f, dev_t *dev, ino_t *ino)
{
	struct stat st;
	bool tracked;

	pthread_mutex_lock(&f->lock);
	tracked = f->tracked;
	pthread_mutex_unlock(&f->lock);
	if (tracked) {
		*dev = f->dev;
		*ino = f->ino;
		return 0;
	}
	if (fstat(f->fd, &st) < 0 || !S_ISREG(st.st_mode))
		return -1;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

/* What is written behind through other descriptors of the file (dev, ino)
 * lands before anything looks at or changes the file through this mount:
 * as on a local disk, a write that returned is seen by everybody. Their
 * errors stay theirs. The lock is held while waiting: writer threads never
 * take it, and a close cannot free a write-behind under us. */
void drain_others(struct local_backend *lb, const struct backend_file *self,
			 dev_t dev, ino_t ino)
{
	int saved = errno;

	pthread_mutex_lock(&lb->track_lock);
	for (struct backend_file *o = lb->tracked; o; o = o->track_next)
		if (o != self && o->ino == ino && o->dev == dev)
			local_wb_drain(o->wb);
	pthread_mutex_unlock(&lb->track_lock);
	errno = saved;
}

/* Everything written to f through this mount is in the file; 0, or -1 with
 * the error of f's own write-behind. */
int settle(struct backend_file *f)
{
	struct local_wb *wb = wb_of(f);
	dev_t dev;
	ino_t ino;

	if (tracked_any(f->lb) && file_id(f, &dev, &ino) == 0)
		drain_others(f->lb, f, dev, ino);
	return wb ? local_wb_drain(wb) : 0;
}

/* The same for a path, before a call that goes by name. */
void settle_at(struct local_backend *lb, const struct at *at)
{
	struct stat st;
	int saved = errno;

	if (tracked_any(lb) && fstatat(at->dirfd, at->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode))
		drain_others(lb, NULL, st.st_dev, st.st_ino);
	errno = saved;
}
