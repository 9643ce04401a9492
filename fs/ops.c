/* The fuse_operations of parsafs (see ops.h): every callback matches its path
 * to a node kind, calls the handler, and converts -1/errno to -errno. */
#include "ops.h"
#include "backend.h"
#include "data_dir.h"
#include "dir_listing.h"
#include "hosts_dir.h"
#include "inode_map.h"
#include "jobs_dir.h"
#include "out_dir.h"
#include "queue_dir.h"
#include "read_pipe.h"
#include "route.h"
#include "schedules_dir.h"
#include "storage_watch.h"
#include "util.h"

#include <errno.h>
#include <fuse.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- the root folder ---- */

static const char *const root_entries[] = { "status", "usage", "storage", "queue", "jobs", "hosts",
	"data", "schedules" };

static int root_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	(void)p;
	fs_stat_dir(fs, st, 0555, fs->uid, fs->gid);
	return 0;
}

static int root_readdir(struct fs_ctx *fs, const struct fs_path *p, fs_fill_fn fill, void *arg)
{
	(void)fs;
	(void)p;
	for (size_t i = 0; i < ARRAY_LEN(root_entries); i++)
		if (fill(arg, root_entries[i], NULL))
			break;
	return 0;
}

static const struct node_ops root_ops = {
	.getattr = root_getattr,
	.readdir = root_readdir,
};

/* The tree, matched by lib/route.h as the scheduler's API is. '*' is one
 * component, '**' (last) any number; first match wins, so fixed names come
 * before the '*' beside them. */
static const struct route {
	const char *pattern;
	const struct node_ops *ops;
} routes[] = {
	{ "/", &root_ops },
	{ "/status", &cluster_status_ops },
	{ "/usage", &cluster_usage_ops },
	{ "/storage", &storage_file_ops },
	{ "/queue", &queue_root_ops },
	{ "/queue/.clone", &queue_clone_ops },
	{ "/queue/*", &queue_entry_ops },
	{ "/schedules", &schedules_root_ops },
	{ "/schedules/*", &schedule_entry_ops },
	{ "/schedules/*/spec", &schedule_view_ops },
	{ "/schedules/*/status", &schedule_view_ops },
	{ "/schedules/*/status.json", &schedule_view_ops },
	{ "/schedules/*/ctl", &schedule_ctl_ops },
	{ "/jobs", &jobs_root_ops },
	{ "/jobs/last", &jobs_last_ops },
	{ "/jobs/*", &job_dir_ops },
	{ "/jobs/*/stages", &stages_dir_ops },
	{ "/jobs/*/stages/*", &stage_dir_ops },
	{ "/jobs/*/stages/*/status", &stage_status_ops },
	{ "/jobs/*/stages/*/wait", &stage_wait_ops },
	{ "/jobs/*/stages/*/log", &stage_log_ops },
	{ "/jobs/*/stages/*/instances", &instances_dir_ops },
	{ "/jobs/*/stages/*/instances/*", &instance_dir_ops },
	{ "/jobs/*/stages/*/instances/*/status", &instance_status_ops },
	{ "/jobs/*/stages/*/instances/*/status.json", &instance_status_ops },
	{ "/jobs/*/stages/*/instances/*/log", &instance_log_ops },
	{ "/jobs/*/out/**", &out_dir.node },
	/* The files of jobs/<id>/, one row each in lib/api_paths.c. */
	{ "/jobs/*/*", &job_file_family },
	{ "/data/**", &data_dir.node },
	{ "/hosts", &hosts_root_ops },
	{ "/hosts/*", &host_dir_ops },
	{ "/hosts/*/status", &host_status_ops },
	{ "/hosts/*/ctl", &host_ctl_ops },
};

/* Whether path matches pattern, with p's args and rest set when it does. */
static bool match_one(const char *pattern, const char *path, struct fs_path *p)
{
	struct route_span spans[FS_PATH_ARGS];
	const char *rest = "";
	int n = route_match_spans(pattern, path, spans, FS_PATH_ARGS, &rest);

	if (n < 0)
		return false;
	for (int i = 0; i < n; i++)
		if (spans[i].len > NAME_MAX)
			return false;
	for (int i = 0; i < n; i++) {
		memcpy(p->arg[i], spans[i].start, spans[i].len);
		p->arg[i][spans[i].len] = '\0';
	}
	p->rest = rest;
	return true;
}

int fs_match(const char *path, struct fs_path *p)
{
	const char *slash;

	memset(p, 0, sizeof *p);
	if (!path || path[0] != '/') {
		errno = ENOENT;
		return -1;
	}
	p->path = path;
	slash = strrchr(path, '/');
	p->name = slash + 1;
	p->rest = "";
	for (size_t i = 0; i < ARRAY_LEN(routes); i++) {
		if (match_one(routes[i].pattern, path, p)) {
			p->ops = routes[i].ops->by_name ? routes[i].ops->by_name(p->name) : routes[i].ops;
			if (!p->ops)
				break;
			return 0;
		}
	}
	errno = ENOENT;
	return -1;
}

/* ---- the FUSE edge ---- */

static struct fs_ctx *ctx(void)
{
	return fuse_get_context()->private_data;
}

/* -1/errno -> -errno; a handler that forgot errno still fails. */
static int edge(int rc)
{
	if (rc >= 0)
		return rc;
	return errno > 0 ? -errno : -EIO;
}

static struct fs_file *file_of(const struct fuse_file_info *fi)
{
	return fi ? (struct fs_file *)(uintptr_t)fi->fh : NULL;
}

/* data/ and out/: their nodes are the backend's files and folders. */
static bool on_volume(const struct fs_path *p)
{
	return p->ops == &out_dir.node || p->ops == &data_dir.node;
}

/* Names starting with FS_HIDDEN_PREFIX are libfuse's for open files it
 * unlinked: nobody else may make one (fs_node.h). */
static int refuse_reserved(const struct fs_path *p)
{
	return fs_is_hidden_name(p->name) ? -EINVAL : 0;
}

/* ret of a change of mode, owner, size or times made through path, or
 * through the open file f when path is NULL (nullpath_ok): once it succeeded,
 * the file's other names (each its own kernel inode) hold stale attributes,
 * and a mode that now shuts someone out would still let them in there:
 * drop them (fs_invalidate_others). Returns ret. */
static int attrs_changed(struct fs_ctx *fs, const char *path, struct fs_file *f, int ret)
{
	if (ret != 0)
		return ret;
	if (!path && f && f->ops->path)
		path = f->ops->path(f);
	fs_invalidate_others(fs, path, false);
	return ret;
}

/* Writes change the size and times: they only mark the file, and its flush,
 * fsync or release drops the other names' attributes. A write handler may
 * not: under --page-cache the kernel holds the written pages locked while it
 * waits, and two writers through two names, each dropping the other's pages,
 * would wait for each other. */
static void mark_written(struct fs_file *f)
{
	if (!atomic_load_explicit(&f->written, memory_order_relaxed))
		atomic_store(&f->written, true);
}

static void written_settled(struct fs_ctx *fs, struct fs_file *f)
{
	if (atomic_load_explicit(&f->written, memory_order_relaxed) && atomic_exchange(&f->written, false))
		attrs_changed(fs, NULL, f, 0);
}

/* use_ino: volume nodes keep the backend's inode number (local st_ino, NFS
 * fileid), so hard links share one; made-up nodes get fs_virtual_ino. */
static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);
	struct fs_ctx *fs = ctx();
	struct fs_path p;

	if (f && f->ops->getattr)
		return edge(f->ops->getattr(f, st));
	if (fs_match(path, &p) < 0)
		return -ENOENT;
	if (fs_is_hidden_name(p.name) && !on_volume(&p))
		return -ENOENT;
	if (p.ops->getattr(fs, &p, st) < 0)
		return edge(-1);
	if (st->st_ino == 0)
		st->st_ino = fs_virtual_ino(path);
	if (on_volume(&p) && !S_ISDIR(st->st_mode)) {
		/* The hidden name is no name to the user: an unlinked file has
		 * one link fewer (0 unless hard links remain). */
		if (fs_is_hidden_name(p.name) && st->st_nlink > 0)
			st->st_nlink--;
		else if (fs->inodes && st->st_nlink > 1)
			inode_map_seen(fs->inodes, path, st->st_ino, st->st_nlink);
	}
	return 0;
}

/* With nullpath_ok, readdir gets no path: opendir keeps it in fh, with the
 * entries once read (fs/dir_listing.h). */
static int op_opendir(const char *path, struct fuse_file_info *fi)
{
	struct fs_path p;

	if (fs_match(path, &p) < 0)
		return -ENOENT;
	if (!p.ops->readdir)
		return -ENOTDIR;
	fi->fh = (uintptr_t)dir_listing_create(path);
	return 0;
}

static int op_releasedir(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	dir_listing_destroy((struct dir_listing *)(uintptr_t)fi->fh);
	return 0;
}

/* The entries are read at offset 0 (the first readdir, or a rewinddir) and
 * handed out by offset: entry i has offset i + 1. */
static int op_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	struct dir_listing *l = fi ? (struct dir_listing *)(uintptr_t)fi->fh : NULL;
	struct fs_path p;
	struct stat st;
	bool has_st;

	(void)flags;
	if (!l)
		return -EBADF;
	path = dir_listing_path(l);
	if (off == 0) {
		int ret;

		if (fs_match(path, &p) < 0)
			return -ENOENT;
		if (!p.ops->readdir)
			return -ENOTDIR;
		dir_listing_clear(l);
		dir_listing_add(l, ".", NULL);
		dir_listing_add(l, "..", NULL);
		ret = p.ops->readdir(ctx(), &p, dir_listing_add, l);
		if (ret < 0)
			return edge(ret);
	}
	for (size_t i = (size_t)off; i < dir_listing_count(l); i++) {
		const char *name = dir_listing_entry(l, i, &st, &has_st);

		if (filler(buf, name, has_st ? &st : NULL, (off_t)(i + 1), 0))
			break;
	}
	return 0;
}

static void attach(struct fuse_file_info *fi, struct fs_file *f)
{
	fi->fh = (uintptr_t)f;
	fi->direct_io = f->direct_io;
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
	struct fs_file *f = NULL;
	struct fs_path p;

	if (fs_match(path, &p) < 0)
		return -ENOENT;
	if (!p.ops->open)
		return -EACCES;
	if (p.ops->open(ctx(), &p, fi->flags, &f) < 0)
		return edge(-1);
	attach(fi, f);
	/* O_TRUNC (FUSE_CAP_ATOMIC_O_TRUNC): the open set the size. */
	if (fi->flags & O_TRUNC)
		attrs_changed(ctx(), path, f, 0);
	return 0;
}

static int op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct fs_file *f = NULL;
	struct fs_path p;

	if (fs_match(path, &p) < 0 || !p.ops->create)
		return -EACCES;
	if (refuse_reserved(&p) < 0)
		return -EINVAL;
	if (p.ops->create(ctx(), &p, fi->flags, mode, &f) < 0)
		return edge(-1);
	attach(fi, f);
	return 0;
}

static int op_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);
	ssize_t n;

	(void)path;
	if (!f->ops->read)
		return -EACCES;
	n = f->ops->read(f, buf, size, off);
	return n < 0 ? edge(-1) : (int)n;
}

/* The data path without a copy where it can: a file of a local folder is
 * spliced from its descriptor straight into the reply; NFS read-ahead hands
 * over the pipe it spliced the server's reply into, or the buffer it read
 * into. libfuse frees the memory buffers. */
static int op_read_buf(const char *path, struct fuse_bufvec **bufp, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);
	struct fuse_bufvec *bv;
	char *mem = NULL;
	ssize_t n;
	int fd;

	(void)path;
	if (!f->ops->read)
		return -EACCES;
	bv = xmalloc(sizeof *bv);
	fd = f->ops->splice_fd ? f->ops->splice_fd(f, size, off) : -1;
	if (fd >= 0) {
		*bv = FUSE_BUFVEC_INIT(size);
		bv->buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
		bv->buf[0].fd = fd;
		bv->buf[0].pos = off;
		*bufp = bv;
		return 0;
	}
	if (f->ops->read_take) {
		struct backend_pipe *pipe = read_pipe_get(ctx());

		n = f->ops->read_take(f, size, off, &mem, pipe);
		if (n >= 0 && pipe && pipe->used) {
			*bv = FUSE_BUFVEC_INIT((size_t)n);
			bv->buf[0].flags = FUSE_BUF_IS_FD;
			bv->buf[0].fd = pipe->rfd;
			*bufp = bv;
			return 0;
		}
	} else {
		mem = xmalloc(size ? size : 1);
		n = f->ops->read(f, mem, size, off);
	}
	if (n < 0) {
		int rc = edge(-1);

		free(mem);
		free(bv);
		return rc;
	}
	*bv = FUSE_BUFVEC_INIT((size_t)n);
	bv->buf[0].mem = mem;
	*bufp = bv;
	return 0;
}

static int op_write_buf(const char *path, struct fuse_bufvec *buf, off_t off, struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);
	size_t size = fuse_buf_size(buf);
	ssize_t n;
	int fd;

	(void)path;
	if (!f->ops->write)
		return -EACCES;
	mark_written(f);
	/* Data already in memory goes through the backend's write, which may
	 * send it to the disk directly; only spliced data goes fd to fd. */
	fd = f->ops->splice_fd && (buf->buf[0].flags & FUSE_BUF_IS_FD) ? f->ops->splice_fd(f, size, off) : -1;
	if (fd >= 0) {
		struct fuse_bufvec dst = FUSE_BUFVEC_INIT(size);

		dst.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
		dst.buf[0].fd = fd;
		dst.buf[0].pos = off;
		n = fuse_buf_copy(&dst, buf, FUSE_BUF_SPLICE_NONBLOCK);
		return (int)n;
	}
	if (buf->count == 1 && !(buf->buf[0].flags & FUSE_BUF_IS_FD)) {
		n = f->ops->write(f, buf->buf[0].mem, size, off);
	} else {
		struct fuse_bufvec mem = FUSE_BUFVEC_INIT(size);

		mem.buf[0].mem = xmalloc(size ? size : 1);
		n = fuse_buf_copy(&mem, buf, 0);
		if (n >= 0)
			n = f->ops->write(f, mem.buf[0].mem, (size_t)n, off);
		else
			errno = (int)-n;
		free(mem.buf[0].mem);
	}
	return n < 0 ? edge(-1) : (int)n;
}

static int op_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);
	ssize_t n;

	(void)path;
	if (!f->ops->write)
		return -EACCES;
	mark_written(f);
	n = f->ops->write(f, buf, size, off);
	return n < 0 ? edge(-1) : (int)n;
}

static int op_flush(const char *path, struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);
	int ret;

	(void)path;
	ret = f->ops->flush ? edge(f->ops->flush(f)) : 0;
	written_settled(ctx(), f);
	return ret;
}

static int op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);
	int ret;

	(void)path;
	ret = f->ops->fsync ? edge(f->ops->fsync(f, datasync)) : 0;
	written_settled(ctx(), f);
	return ret;
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);

	(void)path;
	written_settled(ctx(), f);
	f->ops->release(f);
	return 0;
}

static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);
	struct fs_path p;

	/* With nullpath_ok a file handle comes without a path. */
	if (f)
		return f->ops->truncate ? attrs_changed(ctx(), path, f, edge(f->ops->truncate(f, size)))
					: -EACCES;
	if (fs_match(path, &p) < 0)
		return -ENOENT;
	return p.ops->truncate ? attrs_changed(ctx(), path, NULL, edge(p.ops->truncate(ctx(), &p, size)))
			       : -EACCES;
}

static int op_readlink(const char *path, char *buf, size_t size)
{
	struct fs_path p;
	ssize_t n;

	if (fs_match(path, &p) < 0)
		return -ENOENT;
	if (!p.ops->readlink)
		return -EINVAL;
	if (size == 0)
		return -EINVAL;
	n = p.ops->readlink(ctx(), &p, buf, size - 1);
	if (n < 0)
		return edge(-1);
	buf[n] = '\0';
	return 0;
}

static int op_mkdir(const char *path, mode_t mode)
{
	struct fs_path p;

	if (fs_match(path, &p) < 0 || !p.ops->mkdir)
		return -EPERM;
	if (refuse_reserved(&p) < 0)
		return -EINVAL;
	return edge(p.ops->mkdir(ctx(), &p, mode));
}

static int op_unlink(const char *path)
{
	struct fs_ctx *fs = ctx();
	struct fs_path p;

	if (fs_match(path, &p) < 0)
		return -ENOENT;
	/* The last close of a made-up file whose unlink op_rename already did. */
	if (fs_is_hidden_name(p.name) && !on_volume(&p))
		return 0;
	if (!p.ops->unlink)
		return -EPERM;
	if (p.ops->unlink(fs, &p) < 0)
		return edge(-1);
	fs_invalidate_others(fs, path, true);
	return 0;
}

static int op_rmdir(const char *path)
{
	struct fs_path p;

	if (fs_match(path, &p) < 0)
		return -ENOENT;
	return p.ops->rmdir ? edge(p.ops->rmdir(ctx(), &p)) : -EPERM;
}

static int op_symlink(const char *target, const char *path)
{
	struct fs_path p;

	if (fs_match(path, &p) < 0 || !p.ops->symlink)
		return -EPERM;
	if (refuse_reserved(&p) < 0)
		return -EINVAL;
	return edge(p.ops->symlink(ctx(), target, &p));
}

static int op_mknod(const char *path, mode_t mode, dev_t rdev)
{
	struct fs_path p;

	if (fs_match(path, &p) < 0 || !p.ops->mknod)
		return -EPERM;
	if (refuse_reserved(&p) < 0)
		return -EINVAL;
	return edge(p.ops->mknod(ctx(), &p, mode, rdev));
}

/* EOPNOTSUPP, not ENOSYS, for files that cannot: ENOSYS would make the
 * kernel stop asking for every file of the mount. */
static int op_fallocate(const char *path, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);

	if (!f || !f->ops->fallocate)
		return -EOPNOTSUPP;
	return attrs_changed(ctx(), path, f, edge(f->ops->fallocate(f, mode, off, len)));
}

/* Besides the user's renames, libfuse's hiding of an open file that is
 * unlinked or renamed over (hard_remove off): a rename to a .fuse_hidden name,
 * removed at the last close. A volume folder keeps the file in the unlinked
 * folder; a made-up node has no storage to keep it in, so hiding is its plain
 * unlink, as before (its open file carries its own state). */
static int op_rename(const char *from, const char *to, unsigned int flags)
{
	struct fs_ctx *fs = ctx();
	struct fs_path a, z;

	if (fs_match(from, &a) < 0)
		return -ENOENT;
	if (fs_match(to, &z) < 0)
		return -EPERM;
	if (fs_is_hidden_name(z.name)) {
		if (!fs_is_hide_name(z.name))
			return -EINVAL;
		if (!on_volume(&a))
			return a.ops->unlink ? edge(a.ops->unlink(fs, &a)) : -EPERM;
	}
	if (!a.ops->rename)
		return -EPERM;
	if (a.ops->rename(fs, &a, &z, flags) < 0)
		return edge(-1);
	if (fs->inodes && !(flags & RENAME_EXCHANGE)) {
		fs_invalidate_others(fs, to, true);   /* what to named lost a link */
		inode_map_renamed(fs->inodes, from, to);
	}
	return 0;
}

/* Every name of the file gains a link: invalidate the source and the rest. */
static int op_link(const char *from, const char *to)
{
	struct fs_ctx *fs = ctx();
	struct fs_path a, z;

	if (fs_match(from, &a) < 0)
		return -ENOENT;
	if (!a.ops->link || fs_match(to, &z) < 0)
		return -EPERM;
	if (refuse_reserved(&z) < 0)
		return -EINVAL;
	if (a.ops->link(fs, &a, &z) < 0)
		return edge(-1);
	fs_invalidate(fs, from);
	return 0;
}

/* The attribute changes below may come with a file handle and no path
 * (nullpath_ok): then they go through the open file, which still works after
 * its name is gone. */
static int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);
	struct fs_path p;

	if (f && !path)
		return f->ops->chmod ? attrs_changed(ctx(), NULL, f, edge(f->ops->chmod(f, mode))) : -EPERM;
	if (fs_match(path, &p) < 0)
		return -ENOENT;
	return p.ops->chmod ? attrs_changed(ctx(), path, NULL, edge(p.ops->chmod(ctx(), &p, mode))) : -EPERM;
}

static int op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);
	struct fs_path p;

	if (f && !path)
		return f->ops->chown ? attrs_changed(ctx(), NULL, f, edge(f->ops->chown(f, uid, gid))) : -EPERM;
	if (fs_match(path, &p) < 0)
		return -ENOENT;
	return p.ops->chown ? attrs_changed(ctx(), path, NULL, edge(p.ops->chown(ctx(), &p, uid, gid))) : -EPERM;
}

static int op_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);
	struct fs_path p;

	if (f && !path)
		return f->ops->utimens ? attrs_changed(ctx(), NULL, f, edge(f->ops->utimens(f, tv))) : -EPERM;
	if (fs_match(path, &p) < 0)
		return -ENOENT;
	return p.ops->utimens ? attrs_changed(ctx(), path, NULL, edge(p.ops->utimens(ctx(), &p, tv))) : -EPERM;
}

static int op_statfs(const char *path, struct statvfs *st)
{
	struct backend *b = ctx()->backend;

	(void)path;
	return edge(backend_statfs(b, "", st));
}

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	/* Large requests for the data path; the kernel lowers them if it must. */
	conn->max_write = 1u << 20;
	conn->max_readahead = 1u << 20;
	conn->max_read = ((struct fs_ctx *)fuse_get_context()->private_data)->max_read;
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	/* read_buf may answer with a descriptor: let libfuse splice it. */
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE;
	/* Not the other way: the data of a write (direct I/O, the writer's own
	 * pages) is copied into the pipe anyway, and a backend wants it in
	 * memory (NFS requests, the local write-behind's buffers). libfuse asks
	 * for it whenever write_buf exists. */
	conn->want &= ~FUSE_CAP_SPLICE_READ;
	/* An open file that is unlinked or renamed over must stay usable until
	 * its last close, fstat and fchmod too, which the kernel sends by inode
	 * without a handle: let libfuse rename it to a .fuse_hidden name, which
	 * volume folders keep in the unlinked folder (volume_dir.c, unlinked.h),
	 * and remove it at the last release. */
	cfg->hard_remove = 0;
	cfg->nullpath_ok = 1;
	/* The backend's inode numbers, shared by hard links (op_getattr). */
	cfg->use_ino = 1;
	/* Names come and go (queue/, new jobs): never cache a miss. */
	cfg->negative_timeout = 0;
	cfg->entry_timeout = 1.0;
	cfg->attr_timeout = 1.0;
	return fuse_get_context()->private_data;
}

static const struct fuse_operations operations = {
	.init = op_init,
	.getattr = op_getattr,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.releasedir = op_releasedir,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.read_buf = op_read_buf,
	.write = op_write,
	.write_buf = op_write_buf,
	.flush = op_flush,
	.fsync = op_fsync,
	.release = op_release,
	.truncate = op_truncate,
	.readlink = op_readlink,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.mknod = op_mknod,
	.rename = op_rename,
	.link = op_link,
	.chmod = op_chmod,
	.chown = op_chown,
	.utimens = op_utimens,
	.statfs = op_statfs,
	.fallocate = op_fallocate,
};

const struct fuse_operations *fs_operations(void)
{
	return &operations;
}
