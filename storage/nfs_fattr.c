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
	if (file_settle_attrs(f) < 0 || file_drain(f) < 0)
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

/* ---- attribute changes kept for one SETATTR ----
 *
 * tar sets a file's times, owner and mode (futimens, fchown, fchmod) after
 * writing it and before closing it: three SETATTRs, each after the writes.
 * A file this open made, that no other open file of the mount has, keeps
 * them instead, merged, and sends them in one SETATTR after its writes at
 * flush (close), fsync, a truncate or a write, or when anything else of the
 * mount touches the inode: another open (vol_open), a SETATTR by path
 * (reg_wait_fileid). Meanwhile the mount shows them (attr_to_stat_floor),
 * and the kernel (default_permissions) has checked each call already; only
 * changes the server will take are kept: the owner's chmod and times, or
 * root's (and chown) where root is not squashed (the create left the file
 * root's). A SETATTR by the server's clock (UTIME_NOW), a size, a mode with
 * set-id bits or a chown after a chmod (the server may apply the owner after
 * the mode, and a chown clears set-id bits) is sent at once, after what is
 * kept. An error of the late SETATTR is the close's
 * (as a write's), or fsync's. */

void sattr_apply(fattr3 *a, const sattr3 *sa)
{
	if (sa->mode.set_it)
		a->mode = sa->mode.set_mode3_u.mode;
	if (sa->uid.set_it)
		a->uid = sa->uid.set_uid3_u.uid;
	if (sa->gid.set_it)
		a->gid = sa->gid.set_gid3_u.gid;
	if (sa->atime.set_it == SET_TO_CLIENT_TIME)
		a->atime = sa->atime.set_atime_u.atime;
	if (sa->mtime.set_it == SET_TO_CLIENT_TIME)
		a->mtime = sa->mtime.set_mtime_u.mtime;
}

static void sattr_merge(sattr3 *into, const sattr3 *sa)
{
	if (sa->mode.set_it)
		into->mode = sa->mode;
	if (sa->uid.set_it)
		into->uid = sa->uid;
	if (sa->gid.set_it)
		into->gid = sa->gid;
	if (sa->atime.set_it != DONT_CHANGE)
		into->atime = sa->atime;
	if (sa->mtime.set_it != DONT_CHANGE)
		into->mtime = sa->mtime;
}

/* Under f->lock: keep sa (acting as who) if it may wait; true if kept. */
static bool attrs_keep(struct backend_file *f, const struct backend_cred *who, const sattr3 *sa)
{
	struct nfs_backend *nb = f->nb;
	struct reg_entry *r = f->reg;
	bool root = who->uid == 0 && f->attr.uid == 0;
	bool chown = sa->uid.set_it || sa->gid.set_it;
	bool kept = false;

	if (!f->created || f->werr || sa->size.set_it || sa->atime.set_it == SET_TO_SERVER_TIME ||
	    sa->mtime.set_it == SET_TO_SERVER_TIME)
		return false;
	if (!root && (chown || who->uid != f->attr.uid))
		return false;
	/* The server may apply a SETATTR's mode before its owner, and a chown
	 * clears set-id bits: those go out in a SETATTR of their own. */
	if (sa->mode.set_it && (sa->mode.set_mode3_u.mode & (S_ISUID | S_ISGID)))
		return false;
	pthread_mutex_lock(&nb->reg_lock);
	if (r->refs == 1 && (!r->pend_file || (who->uid == f->pend_cred.uid && who->gid == f->pend_cred.gid &&
					       !(chown && r->pend_sa.mode.set_it)))) {
		if (!r->pend_file) {
			memset(&r->pend_sa, 0, sizeof r->pend_sa);
			f->pend_cred = *who;
		}
		sattr_merge(&r->pend_sa, sa);
		r->pend_file = f;
		kept = true;
	}
	pthread_mutex_unlock(&nb->reg_lock);
	return kept;
}

bool file_keeps_attrs(struct backend_file *f)
{
	bool keeps;

	pthread_mutex_lock(&f->nb->reg_lock);
	keeps = f->reg->pend_file == f;
	pthread_mutex_unlock(&f->nb->reg_lock);
	return keeps;
}

bool attrs_keep_by_fileid(struct nfs_backend *nb, uint64_t fileid, const struct backend_cred *who,
			  const sattr3 *sa)
{
	struct backend_file *g = reg_lock_creator(nb, fileid);
	bool kept;

	if (!g)
		return false;
	kept = attrs_keep(g, who, sa);
	reg_unlock_creator(nb, g);
	if (kept)
		dcache_changed(nb, fileid);
	return kept;
}

/* Under f->lock: one SETATTR of sa on f's handle, acting as who, after
 * f's writes; after: the attributes its reply carries (else type 0). */
static int file_send_setattr(struct backend_file *f, const struct backend_cred *who, const sattr3 *sa,
			     fattr3 *after)
{
	struct op op = { .nb = f->nb, .cred = *who };
	struct patience pat = { 0 };
	int ret = -1;

	memset(after, 0, sizeof *after);
	if (file_drain(f) < 0)
		return -1;
	do {
		if (file_conn(f) < 0)
			continue;
		op.c = f->c;
		op.deadline = time_mono_ms() + f->nb->timeout_ms;
		ret = rpc_setattr(&op, &f->fh, sa, after);
	} while (ret < 0 && file_retry(f, &pat));
	return ret;
}

int file_settle_attrs(struct backend_file *f)
{
	struct nfs_backend *nb = f->nb;
	struct dcache_stamp at;
	fattr3 after;
	sattr3 sa;
	int ret;

	if (!file_keeps_attrs(f))
		return 0;
	pthread_mutex_lock(&nb->reg_lock);
	sa = f->reg->pend_sa;
	pthread_mutex_unlock(&nb->reg_lock);
	at = dcache_stamp(nb);
	ret = file_send_setattr(f, &f->pend_cred, &sa, &after);
	if (ret < 0 && !f->werr)
		f->werr = errno ? errno : EIO;
	/* Shown until the server has them (or refused them). */
	pthread_mutex_lock(&nb->reg_lock);
	f->reg->pend_file = NULL;
	pthread_cond_broadcast(&f->reg->settled);
	pthread_mutex_unlock(&nb->reg_lock);
	/* The reply answers the kernel's getattr by name that follows, if
	 * nothing else of ours changed the file since it was sent. */
	if (ret < 0 || after.type != NF3REG || !f->path || !dcache_put_mine_named(nb, f->path, &after, at))
		dcache_changed(nb, f->reg->fileid);
	if (ret < 0)
		errno = f->werr;
	return ret;
}

/* chmod, chown, utimens of an open file: kept (above), or one SETATTR on its
 * handle after the writes on their way (they would move mtime afterwards)
 * and after what the file keeps, acting as cred. */
static int file_setattr(struct backend_file *f, const struct backend_cred *cred, const sattr3 *sa)
{
	struct backend_cred who;
	fattr3 after;
	int ret = -1;

	whoami(f->nb, cred, &who);
	dcache_changed(f->nb, f->reg->fileid);
	pthread_mutex_lock(&f->lock);
	if (attrs_keep(f, &who, sa)) {
		ret = 0;
		goto out;
	}
	if (file_settle_attrs(f) < 0)
		goto out;
	file_unlock(f);
	if (reg_settle_others(f->nb, f->reg, f) < 0 || reg_wait(f->nb, f->reg, f, 0, UINT64_MAX) < 0)
		return -1;
	pthread_mutex_lock(&f->lock);
	ret = file_send_setattr(f, &who, sa, &after);
out:
	file_unlock(f);
	/* Again: a getattr answered meanwhile is not kept. */
	dcache_changed(f->nb, f->reg->fileid);
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

	if (reg_kept_stat(f->nb, f->reg->fileid, st))
		return 0;
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
