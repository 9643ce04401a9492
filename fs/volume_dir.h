/* A folder of the storage volume passed straight through to the backend
 * (data/ and each job's out/): one set of handlers, told by a few hooks what
 * differs between the folders. Also the open-file type for any backend file,
 * which the instance logs use too. */
#ifndef PARSA_VOLUME_DIR_H
#define PARSA_VOLUME_DIR_H

#include "fs_node.h"

struct backend;
struct backend_file;

/* A kind of volume folder: a pattern ending in "**" routes to &x.node (in
 * ops.c), and the folder itself is the path whose rest is "". Write it as
 *   const struct volume_dir x = { .node = VOLUME_DIR_NODE, .path = ..., ... };
 * The folder itself is part of a fixed layout: unlink, rmdir, symlink and
 * mknod of it are refused (EPERM) before anything else is asked. */
struct volume_dir {
	struct node_ops node;   /* first: p->ops points here, so the handlers find their hooks */
	/* The backend path of p; NULL + errno where p has no place on the volume. */
	char *(*path)(const struct fs_path *p);
	/* mkdir, chmod and chown of the folder itself are refused too (EPERM):
	 * its mode and owner belong to the mount's layout, not to a user. */
	bool fixed_top;
	/* Optional: whether the caller may unlink, rmdir or rename p away;
	 * 0, or -1 + errno. Asked after the folder-itself check of unlink and
	 * rmdir, but first of all for rename, as the folders always did. */
	int (*may_remove)(struct fs_ctx *fs, const struct fs_path *p);
	/* Whether rename and link may go from from (a path of this folder) to to
	 * (any matched path): 0 only for a to of this same kind, else -1 with
	 * EXDEV (mv copies instead) or EPERM. It refuses the folder itself at
	 * either end too, because which errno comes first decides what mv does. */
	int (*pair)(const struct fs_path *from, const struct fs_path *to);
};

/* The shared handlers; only for VOLUME_DIR_NODE, they need p->ops to be the
 * node of a struct volume_dir. */
int volume_dir_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st);
int volume_dir_readdir(struct fs_ctx *fs, const struct fs_path *p, fs_fill_fn fill, void *arg);
int volume_dir_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file);
int volume_dir_create(struct fs_ctx *fs, const struct fs_path *p, int flags, mode_t mode,
		      struct fs_file **file);
ssize_t volume_dir_readlink(struct fs_ctx *fs, const struct fs_path *p, char *buf, size_t size);
int volume_dir_mkdir(struct fs_ctx *fs, const struct fs_path *p, mode_t mode);
int volume_dir_unlink(struct fs_ctx *fs, const struct fs_path *p);
int volume_dir_rmdir(struct fs_ctx *fs, const struct fs_path *p);
int volume_dir_symlink(struct fs_ctx *fs, const char *target, const struct fs_path *p);
int volume_dir_mknod(struct fs_ctx *fs, const struct fs_path *p, mode_t mode, dev_t rdev);
int volume_dir_rename(struct fs_ctx *fs, const struct fs_path *from, const struct fs_path *to,
		      unsigned int flags);
int volume_dir_link(struct fs_ctx *fs, const struct fs_path *from, const struct fs_path *to);
int volume_dir_chmod(struct fs_ctx *fs, const struct fs_path *p, mode_t mode);
int volume_dir_chown(struct fs_ctx *fs, const struct fs_path *p, uid_t uid, gid_t gid);
int volume_dir_truncate(struct fs_ctx *fs, const struct fs_path *p, off_t size);
int volume_dir_utimens(struct fs_ctx *fs, const struct fs_path *p, const struct timespec tv[2]);

#define VOLUME_DIR_NODE {                 \
	.getattr = volume_dir_getattr,     \
	.readdir = volume_dir_readdir,     \
	.open = volume_dir_open,           \
	.create = volume_dir_create,       \
	.readlink = volume_dir_readlink,   \
	.mkdir = volume_dir_mkdir,         \
	.unlink = volume_dir_unlink,       \
	.rmdir = volume_dir_rmdir,         \
	.symlink = volume_dir_symlink,     \
	.mknod = volume_dir_mknod,         \
	.rename = volume_dir_rename,       \
	.link = volume_dir_link,           \
	.chmod = volume_dir_chmod,         \
	.chown = volume_dir_chown,         \
	.truncate = volume_dir_truncate,   \
	.utimens = volume_dir_utimens,     \
}

/* An open file of the backend; takes ownership of bf. direct_io for files
 * whose size others change behind the kernel's back (logs). */
struct fs_file *backend_fs_file_create(struct backend *b, struct backend_file *bf, bool direct_io);

#endif
