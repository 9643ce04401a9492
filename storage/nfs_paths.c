/* The NFS backend's operations by path: getattr, readdir, mkdir, unlink,
 * rmdir, rename, symlink, readlink, link, the SETATTRs (chmod, chown,
 * truncate, utimens), statfs and mknod, each one run_op() of a do_*()
 * callback. Entries are created with AUTH_SYS of the person acting; the
 * scheduler may create one as root for its owner (may_create_for). */
#include "nfs_internal.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READDIR_DIRCOUNT 65536
#define READDIR_MAXCOUNT (1u << 20)
/* libnfs 4.0 encodes each call into a buffer of about ZDR_ENCODEBUF_MINSIZE
 * (4096) bytes (lib/pdu.c, rpc_allocate_pdu) and fails to queue one that
 * does not fit; only WRITE carries its data outside. A call starts with 68
 * bytes: six words of header, the AUTH_SYS credential libnfs builds on
 * rpc_set_uid (machine name "libnfs", no groups: 36 bytes) and an AUTH_NONE
 * verifier. Measured against ganesha: a SYMLINK call of 4,092 bytes so
 * counted is sent, one of 4,096 is not. */
#define RPC_CALL_MAX 4092
#define RPC_CALL_HEADER 68

struct path_args {
	const char *path;
	const char *path2;
	struct stat *st;
	mode_t mode;
	backend_dirent_fn fn;
	void *fn_arg;
	char *buf;
	size_t size;
	ssize_t len;
	unsigned int flags;
	uid_t uid;
	gid_t gid;
	off_t off;
	const struct timespec *tv;
	struct statvfs *vfs;
	bool trusted;           /* may create as root for cred (the scheduler) */
	size_t delivered;       /* readdir: entries handed to fn by earlier tries */
};

static int do_getattr(struct op *op, void *arg)
{
	struct path_args *a = arg;
	struct fhbuf fh;
	fattr3 attr;

	/* A file whose open keeps tar's changes (nfs_fattr.c) shows them. */
	switch (dcache_lookup(op->nb, a->path, &fh, &attr)) {
	case DCACHE_HANDLE_ONLY:
	case DCACHE_FULL:
		if (attr.type == NF3REG && reg_kept_stat(op->nb, attr.fileid, a->st))
			return 0;
	}
	if (lookup_path(op, a->path, &fh, &attr, true) < 0)
		return -1;
	attr_to_stat_floor(op->nb, &attr, a->st);
	return 0;
}

int vol_getattr(struct backend *b, const char *path, struct stat *st)
{
	struct path_args a = { .path = path, .st = st };

	return run_op(nfsb(b), NULL, do_getattr, &a);
}

/* A listing tried again (its connection died midway) starts over from the
 * first entry: those its earlier tries handed over are skipped, so that the
 * caller sees each once (in a folder nobody changed meanwhile). */
struct readdir_skip {
	struct path_args *a;
	size_t skip, seen;
};

static int readdir_once(void *arg, const char *name, const struct stat *st)
{
	struct readdir_skip *r = arg;

	if (r->seen++ < r->skip)
		return 0;
	r->a->delivered++;
	return r->a->fn(r->a->fn_arg, name, st);
}

static int do_readdir(struct op *op, void *arg)
{
	struct path_args *a = arg;
	struct readdir_skip skip = { .a = a, .skip = a->delivered };
	READDIRPLUS3args args;
	struct fhbuf dir;
	struct call call;

	if (check_path(a->path) < 0 || lookup_dir(op, a->path, &dir) < 0)
		return -1;
	memset(&args, 0, sizeof args);
	set_fh(&args.dir, &dir);
	args.dircount = READDIR_DIRCOUNT;
	args.maxcount = READDIR_MAXCOUNT;
	for (;;) {
		call_init(&call, take_readdir);
		call.fn = readdir_once;
		call.fn_arg = &skip;
		call.nb = op->nb;
		call.dir = a->path;
		call.at = dcache_stamp(op->nb);
		conn_as(op->c, &op->cred);
		rpc_count(op->nb, NFS3_READDIRPLUS);
		if (call_finish(op, &call, rpc_nfs3_readdirplus_async(op->c->rpc, call_cb, &args, &call)) < 0)
			return -1;
		if (call.stop || call.eof)
			return 0;
		args.cookie = call.cookie;
		memcpy(args.cookieverf, call.cookieverf, sizeof args.cookieverf);
	}
}

int vol_readdir(struct backend *b, const char *path, backend_dirent_fn fn, void *arg)
{
	struct path_args a = { .path = path, .fn = fn, .fn_arg = arg };

	return run_op(nfsb(b), NULL, do_readdir, &a);
}

static void sattr_owner(sattr3 *sa, const struct backend_cred *cred)
{
	sa->uid.set_it = 1;
	sa->uid.set_uid3_u.uid = cred->uid;
	sa->gid.set_it = 1;
	sa->gid.set_gid3_u.gid = cred->gid;
}

/* Create with AUTH_SYS of the person acting, so the server checks and owns
 * the entry to them. The scheduler (no identity hook, running as root) makes
 * a user's job folder inside its own: that one is created as root with the
 * owner set in the same request. */
static bool may_create_for(struct op *op, const struct path_args *a)
{
	return a->trusted && geteuid() == 0 && op->cred.uid != 0 && (errno == EACCES || errno == EPERM);
}

static int do_mkdir(struct op *op, void *arg)
{
	struct path_args *a = arg;
	struct backend_cred cred = op->cred;
	MKDIR3args args;
	bool made = true;
	struct dcache_stamp at;
	struct fhbuf dir;
	const char *name;
	struct call call;
	int rc;

	if (lookup_parent(op, a->path, &dir, &name) < 0)
		return -1;
	at = dcache_stamp(op->nb);
	memset(&args, 0, sizeof args);
	set_fh(&args.where.dir, &dir);
	args.where.name = (char *)name;
	args.attributes.mode.set_it = 1;
	args.attributes.mode.set_mode3_u.mode = a->mode & 07777;
	call_init(&call, take_mkdir);
	conn_as(op->c, &op->cred);
	rpc_count(op->nb, NFS3_MKDIR);
	rc = call_finish(op, &call, rpc_nfs3_mkdir_async(op->c->rpc, call_cb, &args, &call));
	if (rc < 0 && may_create_for(op, a)) {
		struct backend_cred root = { 0, 0 };

		sattr_owner(&args.attributes, &cred);
		call_init(&call, take_mkdir);
		conn_as(op->c, &root);
		rpc_count(op->nb, NFS3_MKDIR);
		rc = call_finish(op, &call, rpc_nfs3_mkdir_async(op->c->rpc, call_cb, &args, &call));
	}
	if (rc < 0 && errno == EEXIST && op->retried) {
		/* Our earlier try got no answer but was carried out: the folder
		 * is there, owned by whom we act for. */
		struct call look;

		if (rpc_lookup(op, &dir, name, &look) == 0 && look.have_fh && look.have_attr &&
		    look.attr.type == NF3DIR && look.attr.uid == cred.uid) {
			call = look;
			rc = 0;
			made = false;
		} else {
			errno = EEXIST;
		}
	}
	dcache_forget(op->nb, a->path, &dir, call.have_dir_attr ? &call.dir_attr : NULL, at);
	if (rc == 0 && call.have_fh && call.have_attr)
		dcache_put_mine(op->nb, a->path, &call.fh, &call.attr, at);
	else if (rc == 0 && call.have_fh)
		dcache_put(op->nb, a->path, &call.fh);
	/* Made by this request, so empty: tar's creates in it need no LOOKUP. */
	if (rc == 0 && made && call.have_fh)
		dcache_made_folder(op->nb, a->path);
	return rc;
}

int vol_mkdir(struct backend *b, const struct backend_cred *cred, const char *path, mode_t mode)
{
	struct path_args a = { .path = path, .mode = mode, .trusted = b->who == NULL };

	return run_op(nfsb(b), cred, do_mkdir, &a);
}

/* Removing path may change what another name of the file shows (nlink):
 * tell the cache, unless the file is known to have no other. */
static void removed_link(struct nfs_backend *nb, int known, const fattr3 *attr)
{
	if (known == DCACHE_FULL && attr->nlink <= 1)
		return;
	if (known == DCACHE_FULL || known == DCACHE_HANDLE_ONLY)
		dcache_changed(nb, attr->fileid);
	else
		dcache_changed_all(nb);
}

static int do_remove(struct op *op, void *arg)
{
	struct path_args *a = arg;
	struct dcache_stamp at;
	struct fhbuf dir, fh;
	const char *name;
	struct call call;
	fattr3 attr;
	int rc, known;

	if (lookup_parent(op, a->path, &dir, &name) < 0)
		return -1;
	known = dcache_lookup(op->nb, a->path, &fh, &attr);
	at = dcache_stamp(op->nb);
	call_init(&call, a->flags ? take_rmdir : take_remove);
	conn_as(op->c, &op->cred);
	if (a->flags) {
		RMDIR3args args;

		memset(&args, 0, sizeof args);
		set_fh(&args.object.dir, &dir);
		args.object.name = (char *)name;
		rpc_count(op->nb, NFS3_RMDIR);
		rc = call_finish(op, &call, rpc_nfs3_rmdir_async(op->c->rpc, call_cb, &args, &call));
		dcache_drop(op->nb, a->path, &dir, call.have_dir_attr ? &call.dir_attr : NULL, at);
	} else {
		REMOVE3args args;

		memset(&args, 0, sizeof args);
		set_fh(&args.object.dir, &dir);
		args.object.name = (char *)name;
		rpc_count(op->nb, NFS3_REMOVE);
		rc = call_finish(op, &call, rpc_nfs3_remove_async(op->c->rpc, call_cb, &args, &call));
		dcache_forget(op->nb, a->path, &dir, call.have_dir_attr ? &call.dir_attr : NULL, at);
		removed_link(op->nb, known, &attr);
	}
	/* Our earlier try got no answer but was carried out. */
	if (rc < 0 && errno == ENOENT && op->retried)
		rc = 0;
	return rc;
}

int vol_unlink(struct backend *b, const char *path)
{
	struct path_args a = { .path = path };

	return run_op(nfsb(b), NULL, do_remove, &a);
}

int vol_rmdir(struct backend *b, const char *path)
{
	struct path_args a = { .path = path, .flags = 1 };

	return run_op(nfsb(b), NULL, do_remove, &a);
}

static int do_rename(struct op *op, void *arg)
{
	struct path_args *a = arg;
	struct fhbuf from, to, fh;
	const char *fname, *tname;
	char *from_dir, *to_dir;
	struct dcache_stamp at;
	RENAME3args args;
	struct call call;
	fattr3 attr;
	int rc;

	if (a->flags & ~(unsigned int)RENAME_NOREPLACE) {
		errno = EINVAL;
		return -1;
	}
	if (lookup_parent(op, a->path, &from, &fname) < 0 || lookup_parent(op, a->path2, &to, &tname) < 0)
		return -1;
	/* NFSv3 has no "do not replace": check first (not atomic, the best it allows). */
	if (a->flags & RENAME_NOREPLACE) {
		if (lookup_path(op, a->path2, &fh, &attr, false) == 0) {
			errno = EEXIST;
			return -1;
		}
		if (errno != ENOENT)
			return -1;
	}
	memset(&args, 0, sizeof args);
	set_fh(&args.from.dir, &from);
	args.from.name = (char *)fname;
	set_fh(&args.to.dir, &to);
	args.to.name = (char *)tname;
	at = dcache_stamp(op->nb);
	call_init(&call, take_rename);
	conn_as(op->c, &op->cred);
	rpc_count(op->nb, NFS3_RENAME);
	rc = call_finish(op, &call, rpc_nfs3_rename_async(op->c->rpc, call_cb, &args, &call));
	dcache_drop_name(op->nb, a->path);
	dcache_drop_name(op->nb, a->path2);
	from_dir = xasprintf("%.*s", (int)(fname == a->path ? 0 : fname - 1 - a->path), a->path);
	to_dir = xasprintf("%.*s", (int)(tname == a->path2 ? 0 : tname - 1 - a->path2), a->path2);
	dcache_folder_changed(op->nb, from_dir, &from, call.have_dir_attr ? &call.dir_attr : NULL, at);
	if (strcmp(from_dir, to_dir) != 0)
		dcache_folder_changed(op->nb, to_dir, &to, call.have_dir2_attr ? &call.dir2_attr : NULL, at);
	free(from_dir);
	free(to_dir);
	/* The file renamed (ctime) and the one replaced (nlink) may have other names. */
	dcache_changed_all(op->nb);
	return rc;
}

int vol_rename(struct backend *b, const char *from, const char *to, unsigned int flags)
{
	struct path_args a = { .path = from, .path2 = to, .flags = flags };

	return run_op(nfsb(b), NULL, do_rename, &a);
}

/* The XDR size of a string or opaque of n bytes. */
static size_t xdr_size(size_t n)
{
	return 4 + ((n + 3) & ~(size_t)3);
}

/* The bytes of the SYMLINK call do_symlink makes (RFC 1813: the folder's
 * handle, the name, a sattr3 with only the mode set, the target). A target
 * that makes it larger than libnfs can encode (RPC_CALL_MAX) would fail to be
 * queued, which looks like a broken connection (EIO): with a 4,095-byte
 * target, the longest Linux allows, it always does. */
static size_t symlink_call_size(const struct fhbuf *dir, const char *name, const char *target)
{
	const size_t sattr_mode_only = 8 + 5 * 4;

	return RPC_CALL_HEADER + xdr_size(dir->len) + xdr_size(strlen(name)) + sattr_mode_only +
	       xdr_size(strlen(target));
}

static int do_symlink(struct op *op, void *arg)
{
	struct path_args *a = arg;
	struct dcache_stamp at;
	SYMLINK3args args;
	struct fhbuf dir;
	const char *name;
	struct call call;
	int rc;

	if (lookup_parent(op, a->path, &dir, &name) < 0)
		return -1;
	if (symlink_call_size(&dir, name, a->path2) > RPC_CALL_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memset(&args, 0, sizeof args);
	set_fh(&args.where.dir, &dir);
	args.where.name = (char *)name;
	args.symlink.symlink_attributes.mode.set_it = 1;
	args.symlink.symlink_attributes.mode.set_mode3_u.mode = 0777;
	args.symlink.symlink_data = (char *)a->path2;
	at = dcache_stamp(op->nb);
	call_init(&call, take_symlink);
	conn_as(op->c, &op->cred);
	rpc_count(op->nb, NFS3_SYMLINK);
	rc = call_finish(op, &call, rpc_nfs3_symlink_async(op->c->rpc, call_cb, &args, &call));
	dcache_forget(op->nb, a->path, &dir, call.have_dir_attr ? &call.dir_attr : NULL, at);
	return rc;
}

int vol_symlink(struct backend *b, const struct backend_cred *cred, const char *target, const char *path)
{
	struct path_args a = { .path = path, .path2 = target };

	return run_op(nfsb(b), cred, do_symlink, &a);
}

static int do_readlink(struct op *op, void *arg)
{
	struct path_args *a = arg;
	READLINK3args args;
	struct call call;
	struct fhbuf fh;
	fattr3 attr;
	size_t n;

	if (lookup_path(op, a->path, &fh, &attr, false) < 0)
		return -1;
	if (attr.type != NF3LNK) {
		errno = EINVAL;
		return -1;
	}
	memset(&args, 0, sizeof args);
	set_fh(&args.symlink, &fh);
	call_init(&call, take_readlink);
	conn_as(op->c, &op->cred);
	rpc_count(op->nb, NFS3_READLINK);
	if (call_finish(op, &call, rpc_nfs3_readlink_async(op->c->rpc, call_cb, &args, &call)) < 0)
		return -1;
	/* readlink(2): at most size bytes, no terminating NUL. */
	n = strlen(call.text);
	if (n > a->size)
		n = a->size;
	memcpy(a->buf, call.text, n);
	free(call.text);
	a->len = (ssize_t)n;
	return 0;
}

ssize_t vol_readlink(struct backend *b, const char *path, char *buf, size_t size)
{
	struct path_args a = { .path = path, .buf = buf, .size = size };

	return run_op(nfsb(b), NULL, do_readlink, &a) < 0 ? -1 : a.len;
}

static int do_link(struct op *op, void *arg)
{
	struct path_args *a = arg;
	struct dcache_stamp at;
	struct fhbuf fh, dir;
	const char *name;
	LINK3args args;
	struct call call;
	fattr3 attr;
	int rc;

	if (lookup_path(op, a->path, &fh, &attr, false) < 0 || lookup_parent(op, a->path2, &dir, &name) < 0)
		return -1;
	/* Changes an open file keeps go first: they show its old nlink. */
	if (attr.type == NF3REG && reg_wait_fileid(op->nb, attr.fileid) < 0)
		return -1;
	memset(&args, 0, sizeof args);
	set_fh(&args.file, &fh);
	set_fh(&args.link.dir, &dir);
	args.link.name = (char *)name;
	at = dcache_stamp(op->nb);
	call_init(&call, take_link);
	conn_as(op->c, &op->cred);
	rpc_count(op->nb, NFS3_LINK);
	rc = call_finish(op, &call, rpc_nfs3_link_async(op->c->rpc, call_cb, &args, &call));
	dcache_forget(op->nb, a->path2, &dir, call.have_dir_attr ? &call.dir_attr : NULL, at);
	dcache_changed(op->nb, attr.fileid);    /* its nlink, under each of its names */
	return rc;
}

int vol_link(struct backend *b, const char *from, const char *to)
{
	struct path_args a = { .path = from, .path2 = to };

	return run_op(nfsb(b), NULL, do_link, &a);
}

/* chmod, chown, truncate, utimens: one SETATTR on the path's handle. */
static int do_setattr(struct op *op, void *arg)
{
	struct path_args *a = arg;
	struct dcache_stamp at;
	struct fhbuf fh;
	fattr3 attr, after;
	sattr3 sa;
	int rc;

	if (lookup_path(op, a->path, &fh, &attr, false) < 0)
		return -1;
	memset(&sa, 0, sizeof sa);
	switch (a->flags) {
	case 'm':
		sa.mode.set_it = 1;
		sa.mode.set_mode3_u.mode = a->mode & 07777;
		break;
	case 'o':
		sa.uid.set_it = a->uid != (uid_t)-1;
		sa.uid.set_uid3_u.uid = a->uid;
		sa.gid.set_it = a->gid != (gid_t)-1;
		sa.gid.set_gid3_u.gid = a->gid;
		break;
	case 's':
		if (attr.type == NF3DIR) {
			errno = EISDIR;
			return -1;
		}
		if (attr.type != NF3REG) {
			errno = EINVAL;
			return -1;
		}
		sa.size.set_it = 1;
		sa.size.set_size3_u.size = (uint64_t)a->off;
		break;
	case 't':
		/* On a symlink (touch -h, cp -a) nfs-ganesha's VFS backend
		 * answers NFS3_OK and keeps the link's times ("Setting time on
		 * symlinks is illegal"). Linux's NFS client reports that
		 * success, and so do we: an error here makes cp -a fail on
		 * every tree with a symlink (docs/filesystem.md). */
		sattr_time(&sa.atime, &sa.mtime, a->tv);
		break;
	}
	/* tar's times, owner and mode of the file it has open: kept by the
	 * open file that made it, for one SETATTR after its writes. */
	if (attr.type == NF3REG && a->flags != 's' && attrs_keep_by_fileid(op->nb, attr.fileid, &op->cred, &sa))
		return 0;
	/* Before the wait: a write it does not wait for moves the cache after. */
	at = dcache_stamp(op->nb);
	if (attr.type == NF3REG && reg_wait_fileid(op->nb, attr.fileid) < 0)
		return -1;
	rc = rpc_setattr(op, &fh, &sa, &after);
	if (rc == 0 && a->flags == 's')
		reg_truncated(op->nb, attr.fileid, (uint64_t)a->off);
	/* What the reply carries answers the stat that follows (the kernel's,
	 * after tar's utimens, chown and chmod); every name of the file shows
	 * the change. */
	if (rc == 0 && after.type)
		dcache_put_mine(op->nb, a->path, &fh, &after, at);
	else
		dcache_touch(op->nb, a->path, attr.fileid);
	return rc;
}

int vol_chmod(struct backend *b, const char *path, mode_t mode)
{
	struct path_args a = { .path = path, .mode = mode, .flags = 'm' };

	return run_op(nfsb(b), NULL, do_setattr, &a);
}

int vol_chown(struct backend *b, const char *path, uid_t uid, gid_t gid)
{
	struct path_args a = { .path = path, .uid = uid, .gid = gid, .flags = 'o' };

	return run_op(nfsb(b), NULL, do_setattr, &a);
}

int vol_truncate(struct backend *b, const char *path, off_t size)
{
	struct path_args a = { .path = path, .off = size, .flags = 's' };

	if (size < 0) {
		errno = EINVAL;
		return -1;
	}
	return run_op(nfsb(b), NULL, do_setattr, &a);
}

int vol_utimens(struct backend *b, const char *path, const struct timespec tv[2])
{
	struct timespec now[2] = { { 0, UTIME_NOW }, { 0, UTIME_NOW } };
	struct path_args a = { .path = path, .tv = tv ? tv : now, .flags = 't' };

	/* Before 1970 or from 2106 on the server would store the seconds cut
	 * to 32 bits (2^32 became 0): refuse, and change nothing. */
	if (!nfs_time_fits(&a.tv[0]) || !nfs_time_fits(&a.tv[1])) {
		errno = EOVERFLOW;
		return -1;
	}
	return run_op(nfsb(b), NULL, do_setattr, &a);
}

static int do_statfs(struct op *op, void *arg)
{
	struct path_args *a = arg;
	FSSTAT3args args;
	struct call call;
	const unsigned long bsize = 4096;

	memset(&args, 0, sizeof args);
	set_fh(&args.fsroot, &op->c->root);
	call_init(&call, take_fsstat);
	conn_as(op->c, &op->cred);
	rpc_count(op->nb, NFS3_FSSTAT);
	if (call_finish(op, &call, rpc_nfs3_fsstat_async(op->c->rpc, call_cb, &args, &call)) < 0)
		return -1;
	memset(a->vfs, 0, sizeof *a->vfs);
	a->vfs->f_bsize = 1 << 20;
	a->vfs->f_frsize = bsize;
	a->vfs->f_blocks = call.fsstat.tbytes / bsize;
	a->vfs->f_bfree = call.fsstat.fbytes / bsize;
	a->vfs->f_bavail = call.fsstat.abytes / bsize;
	a->vfs->f_files = call.fsstat.tfiles;
	a->vfs->f_ffree = call.fsstat.ffiles;
	a->vfs->f_favail = call.fsstat.afiles;
	a->vfs->f_namemax = NFS_NAME_MAX;
	return 0;
}

int vol_statfs(struct backend *b, const char *path, struct statvfs *st)
{
	struct path_args a = { .path = path, .vfs = st };

	/* The scheduler asks for space as itself: it must see the volume. */
	return run_op(nfsb(b), &(struct backend_cred){ geteuid(), getegid() }, do_statfs, &a);
}

int do_create(struct op *op, struct open_args *a, const struct fhbuf *dir, const char *name)
{
	struct backend_cred cred = op->cred;
	CREATE3args args;
	struct call call;
	int rc;

	memset(&args, 0, sizeof args);
	set_fh(&args.where.dir, dir);
	args.where.name = (char *)name;
	/* GUARDED: never touch a file somebody else created meanwhile. */
	args.how.mode = GUARDED;
	args.how.createhow3_u.obj_attributes.mode.set_it = 1;
	args.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = a->mode & 07777;
	a->at = dcache_stamp(op->nb);
	call_init(&call, take_create);
	conn_as(op->c, &op->cred);
	rpc_count(op->nb, NFS3_CREATE);
	rc = call_finish(op, &call, rpc_nfs3_create_async(op->c->rpc, call_cb, &args, &call));
	if (rc < 0 && may_create_for(op, &(struct path_args){ .trusted = a->trusted })) {
		struct backend_cred root = { 0, 0 };

		sattr_owner(&args.how.createhow3_u.obj_attributes, &cred);
		call_init(&call, take_create);
		conn_as(op->c, &root);
		rpc_count(op->nb, NFS3_CREATE);
		rc = call_finish(op, &call, rpc_nfs3_create_async(op->c->rpc, call_cb, &args, &call));
	}
	if (a->path)
		dcache_forget(op->nb, a->path, dir, call.have_dir_attr ? &call.dir_attr : NULL, a->at);
	if (rc < 0)
		return -1;
	if (!call.have_fh) {
		if (rpc_lookup(op, dir, name, &call) < 0)
			return -1;
		if (!call.have_fh) {
			errno = EIO;
			return -1;
		}
	}
	a->fh = call.fh;
	if (!call.have_attr && rpc_getattr(op, &a->fh, &call) < 0)
		return -1;
	a->attr = call.attr;
	a->created = true;
	return 0;
}

/* mknod: a FIFO or a socket with MKNOD, a regular file with CREATE (MKNOD
 * does not make those), as the person acting (or, for the scheduler, as root
 * for them, like mkdir). Devices are refused before asking (backend.h). */
static int do_mknod(struct op *op, void *arg)
{
	struct path_args *a = arg;
	struct backend_cred cred = op->cred;
	struct dcache_stamp at;
	MKNOD3args args;
	struct fhbuf dir;
	const char *name;
	struct call call;
	sattr3 *sa;
	int rc;

	if (lookup_parent(op, a->path, &dir, &name) < 0)
		return -1;
	memset(&args, 0, sizeof args);
	set_fh(&args.where.dir, &dir);
	args.where.name = (char *)name;
	switch (a->mode & S_IFMT) {
	case S_IFREG: {
		struct open_args oa = { .mode = a->mode, .path = a->path, .trusted = a->trusted };

		return do_create(op, &oa, &dir, name);
	}
	case S_IFIFO:
		args.what.type = NF3FIFO;
		sa = &args.what.mknoddata3_u.pipe_attributes;
		break;
	case S_IFSOCK:
		args.what.type = NF3SOCK;
		sa = &args.what.mknoddata3_u.sock_attributes;
		break;
	default:
		errno = EINVAL;
		return -1;
	}
	sa->mode.set_it = 1;
	sa->mode.set_mode3_u.mode = a->mode & 07777;
	at = dcache_stamp(op->nb);
	call_init(&call, take_mknod);
	conn_as(op->c, &op->cred);
	rpc_count(op->nb, NFS3_MKNOD);
	rc = call_finish(op, &call, rpc_nfs3_mknod_async(op->c->rpc, call_cb, &args, &call));
	if (rc < 0 && may_create_for(op, a)) {
		struct backend_cred root = { 0, 0 };

		sattr_owner(sa, &cred);
		call_init(&call, take_mknod);
		conn_as(op->c, &root);
		rpc_count(op->nb, NFS3_MKNOD);
		rc = call_finish(op, &call, rpc_nfs3_mknod_async(op->c->rpc, call_cb, &args, &call));
	}
	dcache_forget(op->nb, a->path, &dir, call.have_dir_attr ? &call.dir_attr : NULL, at);
	return rc;
}

int vol_mknod(struct backend *b, const struct backend_cred *cred, const char *path, mode_t mode)
{
	struct path_args a = { .path = path, .mode = mode, .trusted = b->who == NULL };

	if (S_ISCHR(mode) || S_ISBLK(mode)) {
		errno = EPERM;
		return -1;
	}
	return run_op(nfsb(b), cred, do_mknod, &a);
}
