/* Volume folders (fs/volume_dir.c) on a real local volume, through two kinds
 * defined here with the hooks out/ and data/ use: files made, written, read,
 * truncated and touched through the backend; open never creates; the folder
 * itself refuses unlink, rmdir and symlink (EPERM) before the removal rule is
 * asked, and mkdir, chmod and chown too when its top is fixed; the removal
 * rule guards unlink, rmdir and (first of all) rename; rename and link stay
 * within one kind (EXDEV, so mv copies); a path with no place on the volume
 * fails with its errno and touches nothing. */
#include "backend.h"
#include "volume_dir.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TAP_STATE;

static int removal_asked;

/* rest below vol/; "nowhere..." has no place on the volume. */
static char *fixed_path(const struct fs_path *p)
{
	if (strncmp(p->rest, "nowhere", 7) == 0) {
		errno = ENOENT;
		return NULL;
	}
	return xasprintf("vol%s%s", *p->rest ? "/" : "", p->rest);
}

static char *loose_path(const struct fs_path *p)
{
	return xasprintf("loose%s%s", *p->rest ? "/" : "", p->rest);
}

/* Names starting with "locked" may not be removed or renamed away. */
static int may_remove(struct fs_ctx *fs, const struct fs_path *p)
{
	(void)fs;
	removal_asked++;
	if (strncmp(p->rest, "locked", 6) == 0) {
		errno = EACCES;
		return -1;
	}
	return 0;
}

static int same_kind(const struct fs_path *from, const struct fs_path *to)
{
	if (from->ops != to->ops) {
		errno = EXDEV;
		return -1;
	}
	if (!*from->rest || !*to->rest) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

static const struct volume_dir fixed = {
	.node = VOLUME_DIR_NODE, .path = fixed_path, .fixed_top = true,
	.may_remove = may_remove, .pair = same_kind,
};
static const struct volume_dir loose = { .node = VOLUME_DIR_NODE, .path = loose_path, .pair = same_kind };

static struct fs_path at(const struct volume_dir *v, const char *rest)
{
	struct fs_path p = { .path = rest, .name = rest, .rest = rest, .ops = &v->node };

	return p;
}

static char root[] = "/tmp/parsa-test-volume.XXXXXX";

static int stat_of(const char *rel, struct stat *st)
{
	char path[PATH_MAX];

	snprintf(path, sizeof path, "%s/%s", root, rel);
	return lstat(path, st);
}

static int there(const char *rel)
{
	struct stat st;

	return stat_of(rel, &st) == 0;
}

static void test_files(struct fs_ctx *fs)
{
	struct fs_path top = at(&fixed, ""), p = at(&fixed, "a");
	struct fs_file *f = NULL;
	struct timespec tv[2] = { { 1577836800, 0 }, { 1577836800, 0 } };
	struct stat st;
	char buf[16] = "";

	ok(volume_dir_getattr(fs, &top, &st) == 0 && S_ISDIR(st.st_mode),
	   "the folder itself is the backend's folder");
	is_int(volume_dir_create(fs, &p, O_WRONLY | O_TRUNC, 0640, &f), 0, "create a file");
	ok(f && f->direct_io, "without --page-cache, its I/O is direct");
	is_int(f->ops->write(f, "hello", 5, 0), 5, "write to it");
	is_int(f->ops->flush(f), 0, "close it");
	f->ops->release(f);
	ok(stat_of("vol/a", &st) == 0 && st.st_size == 5 && (st.st_mode & 07777) == 0640,
	   "it is on the volume with its size and mode");

	fs->page_cache = true;
	is_int(volume_dir_open(fs, &p, O_RDONLY, &f), 0, "open it again");
	ok(f && !f->direct_io, "with --page-cache, through the page cache");
	fs->page_cache = false;
	is_int(f->ops->read(f, buf, sizeof buf - 1, 0), 5, "read it");
	is_str(buf, "hello", "what was written");
	ok(f->ops->getattr(f, &st) == 0 && st.st_size == 5, "the open file's attributes");
	f->ops->release(f);

	p = at(&fixed, "missing");
	f = NULL;
	is_int(volume_dir_open(fs, &p, O_RDWR | O_CREAT, &f), -1, "open does not create");
	is_int(errno, ENOENT, "with ENOENT");
	ok(!there("vol/missing"), "and nothing was made");

	p = at(&fixed, "a");
	is_int(volume_dir_truncate(fs, &p, 2), 0, "truncate by path");
	is_int(volume_dir_utimens(fs, &p, tv), 0, "touch by path");
	is_int(volume_dir_chmod(fs, &p, 0600), 0, "chmod of an entry");
	is_int(volume_dir_chown(fs, &p, getuid(), getgid()), 0, "chown of an entry to its owner");
	ok(stat_of("vol/a", &st) == 0 && st.st_size == 2 && st.st_mtim.tv_sec == 1577836800 &&
	   (st.st_mode & 07777) == 0600, "size, time and mode stick");

	p = at(&fixed, "l");
	is_int(volume_dir_symlink(fs, "a", &p), 0, "symlink");
	memset(buf, 0, sizeof buf);
	ok(volume_dir_readlink(fs, &p, buf, sizeof buf) >= 0 && strcmp(buf, "a") == 0, "readlink");
	p = at(&fixed, "d");
	is_int(volume_dir_mkdir(fs, &p, 0755), 0, "mkdir");
	ok(stat_of("vol/d", &st) == 0 && S_ISDIR(st.st_mode), "a folder on the volume");
}

static void test_the_folder_itself(struct fs_ctx *fs)
{
	struct fs_path top = at(&fixed, ""), loose_top = at(&loose, "");
	int asked = removal_asked;
	struct stat st;

	is_int(volume_dir_unlink(fs, &top), -1, "unlink of the folder itself");
	is_int(errno, EPERM, "is EPERM");
	is_int(volume_dir_rmdir(fs, &top), -1, "rmdir of the folder itself");
	is_int(errno, EPERM, "is EPERM");
	is_int(removal_asked, asked, "before the removal rule is asked");
	is_int(volume_dir_symlink(fs, "x", &top), -1, "symlink at the folder itself");
	is_int(errno, EPERM, "is EPERM");
	is_int(volume_dir_mkdir(fs, &top, 0755), -1, "a fixed top refuses mkdir");
	is_int(errno, EPERM, "with EPERM");
	is_int(volume_dir_chmod(fs, &top, 0700), -1, "and chmod");
	is_int(errno, EPERM, "with EPERM");
	is_int(volume_dir_chown(fs, &top, getuid(), getgid()), -1, "and chown");
	is_int(errno, EPERM, "with EPERM");
	ok(stat_of("vol", &st) == 0 && (st.st_mode & 0777) == 0755, "its mode is the layout's");

	is_int(volume_dir_unlink(fs, &loose_top), -1, "a loose top refuses unlink too");
	is_int(errno, EPERM, "with EPERM");
	is_int(volume_dir_mkdir(fs, &loose_top, 0755), -1, "but mkdir goes to the backend");
	is_int(errno, EEXIST, "which says EEXIST");
	is_int(volume_dir_chmod(fs, &loose_top, 0750), 0, "and chmod is let through");
	ok(stat_of("loose", &st) == 0 && (st.st_mode & 0777) == 0750, "to the folder on the volume");
}

static void test_removal_and_pairs(struct fs_ctx *fs)
{
	struct fs_path a = at(&fixed, "a"), b = at(&fixed, "b"), c = at(&fixed, "c");
	struct fs_path locked = at(&fixed, "locked"), lockeddir = at(&fixed, "lockeddir");
	struct fs_path elsewhere = at(&loose, "b"), top = at(&fixed, ""), d = at(&fixed, "d");
	struct fs_file *f = NULL;
	struct stat st;

	volume_dir_create(fs, &locked, O_WRONLY, 0644, &f);
	f->ops->release(f);
	volume_dir_mkdir(fs, &lockeddir, 0755);
	is_int(volume_dir_unlink(fs, &locked), -1, "the removal rule refuses unlink");
	is_int(errno, EACCES, "with its errno");
	is_int(volume_dir_rmdir(fs, &lockeddir), -1, "and rmdir");
	ok(there("vol/locked") && there("vol/lockeddir"), "both are still there");
	is_int(volume_dir_rename(fs, &locked, &elsewhere, 0), -1, "rename away asks it first of all");
	is_int(errno, EACCES, "EACCES, not the EXDEV of another kind");

	is_int(volume_dir_rename(fs, &a, &b, 0), 0, "rename within the folder");
	ok(!there("vol/a") && there("vol/b"), "moved on the volume");
	is_int(volume_dir_rename(fs, &b, &elsewhere, 0), -1, "rename to another kind");
	is_int(errno, EXDEV, "is EXDEV, so that mv copies");
	is_int(volume_dir_rename(fs, &b, &top, 0), -1, "rename onto the folder itself");
	is_int(errno, EPERM, "is EPERM");
	is_int(volume_dir_link(fs, &b, &c), 0, "link within the folder");
	ok(stat_of("vol/c", &st) == 0 && st.st_nlink == 2, "a second name for the file");
	is_int(volume_dir_link(fs, &b, &elsewhere), -1, "link to another kind");
	is_int(errno, EXDEV, "is EXDEV");
	ok(!there("loose/b"), "and made nothing there");
	is_int(volume_dir_unlink(fs, &c), 0, "unlink below the folder");
	is_int(volume_dir_rmdir(fs, &d), 0, "rmdir below the folder");
	ok(!there("vol/c") && !there("vol/d"), "gone from the volume");
}

static void test_no_place(struct fs_ctx *fs)
{
	struct fs_path p = at(&fixed, "nowhere/x");
	struct fs_file *f = NULL;
	struct stat st;

	is_int(volume_dir_getattr(fs, &p, &st), -1, "a path with no place on the volume");
	is_int(errno, ENOENT, "fails with the hook's errno");
	is_int(volume_dir_create(fs, &p, O_WRONLY, 0644, &f), -1, "create there fails");
	is_int(volume_dir_mkdir(fs, &p, 0755), -1, "so does mkdir");
	ok(f == NULL && !there("vol/nowhere"), "and nothing was made");
}

int main(void)
{
	struct fs_ctx fs = { .uid = getuid(), .gid = getgid() };
	char *err = NULL, *vol, *other;

	umask(022);
	if (!mkdtemp(root))
		return 1;
	vol = xasprintf("%s/vol", root);
	other = xasprintf("%s/loose", root);
	mkdir(vol, 0755);
	mkdir(other, 0755);
	fs.backend = backend_local_create(root, &err);
	if (!fs.backend) {
		diag("%s", err);
		return 1;
	}
	test_files(&fs);
	test_the_folder_itself(&fs);
	test_removal_and_pairs(&fs);
	test_no_place(&fs);
	backend_remove_tree(fs.backend, "vol");
	backend_remove_tree(fs.backend, "loose");
	backend_destroy(fs.backend);
	ok(rmdir(root) == 0, "nothing is left behind");
	free(vol);
	free(other);
	free(err);
	return done_testing();
}
