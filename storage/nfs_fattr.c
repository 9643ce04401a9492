/* The NFS backend's calls on an open file's attributes: ftruncate, fchmod,
 * fchown, futimens (one SETATTR on the handle, after the writes on their
 * way), fallocate (none in NFSv3) and fstat (the server's, or what the
 * file's own create left while nothing changed it: nfs_dcache.c). */
#include "nfs_internal.h"
#include "util.h"

#include <errno.h>
#include <string.h>

int vol_ftruncate(struct backend_file *f, off_t size)
{
	struct op op = { .nb = f->nb, .cred = f->cred };
	struct patience pat = { 0 };
	sattr3 sa;
	int ret = -1;

	dcache_changed(f->nb, f->reg->fileid);
	if (reg_wait(f->nb, f->reg, f, 0, UINT64_MAX) < 0)
		return -1;
	pthread_mutex_lock(&f->lock);
	if (file_drain(f) < 0)
		goto out;
	/* Kept writes sent again after the truncate would undo it: commit
	 * them first (a kernel client writes back and commits too). */
	if (f->kept && file_commit(f) < 0)
		goto out;
	if (f->nra)
		ra_drop(f);
	memset(&sa, 0, sizeof sa);
	sa.size.set_it = 1;
	sa.size.set_size3_u.size = (uint64_t)size;
	do {
		if (file_conn(f) < 0)
			continue;
		op.c = f->c;
		op.deadline = time_mono_ms() + f->nb->timeout_ms;
		ret = rpc_setattr(&op, &f->fh, &sa, NULL);
	} while (ret < 0 && file_retry(f, &pat));
	if (ret == 0)
		reg_size(f->nb, f->reg, (uint64_t)size, true);
out:
	file_unlock(f);
	return ret;
}

/* chmod, chown, utimens of an open file: one SETATTR on its handle, after the
 * writes on their way (they would move mtime afterwards), acting as cred. */
static int file_setattr(struct backend_file *f, const struct backend_cred *cred, const sattr3 *sa)
{
	struct op op = { .nb = f->nb };
	struct patience pat = { 0 };
	int ret = -1;

	whoami(f->nb, cred, &op.cred);
	dcache_changed(f->nb, f->reg->fileid);
	if (reg_wait(f->nb, f->reg, f, 0, UINT64_MAX) < 0)
		return -1;
	pthread_mutex_lock(&f->lock);
	if (file_drain(f) < 0)
		goto out;
	do {
		if (file_conn(f) < 0)
			continue;
		op.c = f->c;
		op.deadline = time_mono_ms() + f->nb->timeout_ms;
		ret = rpc_setattr(&op, &f->fh, sa, NULL);
	} while (ret < 0 && file_retry(f, &pat));
out:
	file_unlock(f);
	return ret;
}

int vol_fchmod(struct backend_file *f, const struct backend_cred *cred, mode_t mode)
{
	sattr3 sa;

	memset(&sa, 0, sizeof sa);
	sa.mode.set_it = 1;
	sa.mode.set_mode3_u.mode = mode & 07777;
	return file_setattr(f, cred, &sa);
}

int vol_fchown(struct backend_file *f, uid_t uid, gid_t gid)
{
	sattr3 sa;

	memset(&sa, 0, sizeof sa);
	sa.uid.set_it = uid != (uid_t)-1;
	sa.uid.set_uid3_u.uid = uid;
	sa.gid.set_it = gid != (gid_t)-1;
	sa.gid.set_gid3_u.gid = gid;
	return file_setattr(f, NULL, &sa);
}

int vol_futimens(struct backend_file *f, const struct timespec tv[2])
{
	struct timespec now[2] = { { 0, UTIME_NOW }, { 0, UTIME_NOW } };
	sattr3 sa;

	if (!tv)
		tv = now;
	if (!nfs_time_fits(&tv[0]) || !nfs_time_fits(&tv[1])) {
		errno = EOVERFLOW;
		return -1;
	}
	memset(&sa, 0, sizeof sa);
	sattr_time(&sa.atime, &sa.mtime, tv);
	return file_setattr(f, NULL, &sa);
}

/* NFSv3 has no ALLOCATE (NFSv4.2 does): as Linux's NFSv3 client, which has
 * no fallocate for it, EOPNOTSUPP for every mode; posix_fallocate(3) then
 * writes zeros itself. */
int vol_fallocate(struct backend_file *f, int mode, off_t off, off_t len)
{
	(void)f;
	(void)mode;
	(void)off;
	(void)len;
	errno = EOPNOTSUPP;
	return -1;
}

int vol_fstat(struct backend_file *f, struct stat *st)
{
	struct op op = { .nb = f->nb, .cred = f->cred };
	struct patience pat = { 0 };
	struct call call;
	int ret = -1;

	if (f->attr_expires > time_mono_ms() && dcache_attr_holds(f->nb, f->reg->fileid, f->attr_seq)) {
		attr_to_stat_floor(f->nb, &f->attr, st);
		return 0;
	}
	pthread_mutex_lock(&f->lock);
	do {
		if (file_conn(f) < 0)
			continue;
		op.c = f->c;
		op.deadline = time_mono_ms() + f->nb->timeout_ms;
		ret = rpc_getattr(&op, &f->fh, &call);
	} while (ret < 0 && file_retry(f, &pat));
	if (ret == 0)
		attr_to_stat_floor(f->nb, &call.attr, st);
	file_unlock(f);
	return ret;
}
