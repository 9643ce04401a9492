/* Scratch folders: made empty and owned by the instance's user, emptied and
 * pooled when it ends (the same inode comes back, so ext4 allocates nothing),
 * never following a link the user planted, and taken from the user before
 * they are emptied. Run as root, also the ownership changes. */
#include "assign.h"
#include "scratch.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TAP_STATE;

static void touch(const char *dir, const char *name)
{
	char *p = xasprintf("%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd >= 0)
		close(fd);
	free(p);
}

static int entries(const char *dir)
{
	char *cmd = xasprintf("ls -A '%s' | wc -l", dir);
	FILE *f = popen(cmd, "r");
	int n = -1;

	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = -1;
		pclose(f);
	}
	free(cmd);
	return n;
}

int main(void)
{
	char tmpl[] = "/tmp/parsa-test-scratch.XXXXXX";
	char *root = mkdtemp(tmpl), *pool_dir, *a_path, *b_path, *victim, *sub, *link_path;
	struct assignment a = { .job = 7, .stage = "timing", .index = 3 };
	struct scratch_pool *pool;
	struct stat st, st2;
	char *err = NULL, *p;
	uid_t uid = geteuid() == 0 ? 1234 : geteuid();
	gid_t gid = geteuid() == 0 ? 4321 : getegid();

	if (!root) {
		perror("mkdtemp");
		return 1;
	}
	pool_dir = xasprintf("%s/.pool", root);
	a_path = scratch_path(root, &a);
	is_str(a_path + strlen(root), "/7.timing.3", "scratch folder named job.stage.index");
	p = progress_path("/run/x", &a);
	is_str(p, "/run/x/7.timing.3.progress", "progress file named after the instance");
	free(p);

	/* A leftover pool from a crashed runner is cleared. */
	mkdir(pool_dir, 0700);
	touch(pool_dir, "stale");
	pool = scratch_pool_create(root, &err);
	ok(pool != NULL, "pool created (%s)", err ? err : "");
	is_int(entries(pool_dir), 0, "what an earlier runner left in the pool is gone");

	ok(scratch_prepare(pool, a_path, uid, gid, &err) == 0, "prepare (%s)", err ? err : "");
	ok(stat(a_path, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700,
	   "an empty 0700 folder");
	ok(st.st_uid == uid && st.st_gid == gid, "owned by the instance's user");

	/* What the instance leaves: files, a nested folder, a link to outside. */
	victim = xasprintf("%s/victim", root);
	touch(root, "victim");
	touch(a_path, "f1");
	sub = xasprintf("%s/d", a_path);
	mkdir(sub, 0755);
	touch(sub, "f2");
	link_path = xasprintf("%s/l", a_path);
	ok(symlink(root, link_path) == 0, "a link planted in scratch");
	ok(scratch_release(pool, a_path, &err) == 0, "release (%s)", err ? err : "");
	ok(access(a_path, F_OK) < 0 && errno == ENOENT, "the folder left its place");
	is_int(entries(pool_dir), 1, "it waits in the pool");
	ok(access(victim, F_OK) == 0, "the link was removed, not followed");

	/* The next instance gets the same folder back, empty, and its own. */
	a.index = 4;
	b_path = scratch_path(root, &a);
	ok(scratch_prepare(pool, b_path, uid + 1, gid + 1, &err) == 0, "prepare again (%s)",
	   err ? err : "");
	ok(stat(b_path, &st2) == 0 && st2.st_ino == st.st_ino, "the pooled folder is reused");
	is_int(entries(b_path), 0, "empty");
	ok((st2.st_mode & 0777) == 0700, "mode 0700");
	if (geteuid() == 0)
		ok(st2.st_uid == uid + 1 && st2.st_gid == gid + 1, "given to the new user");
	is_int(entries(pool_dir), 0, "the pool gave it away");

	/* A leftover at the instance's path is replaced. */
	ok(scratch_release(pool, b_path, &err) == 0, "release the second");
	mkdir(b_path, 0755);
	touch(b_path, "old");
	ok(scratch_prepare(pool, b_path, uid, gid, &err) == 0 && entries(b_path) == 0,
	   "a leftover folder at the path is replaced by an empty one");
	ok(scratch_release(pool, b_path, &err) == 0, "release it");

	/* Without a pool: made and removed. */
	ok(scratch_prepare(NULL, a_path, uid, gid, &err) == 0 && access(a_path, F_OK) == 0,
	   "prepare without a pool");
	ok(scratch_release(NULL, a_path, &err) == 0 && access(a_path, F_OK) < 0,
	   "release without a pool removes it");
	is_int(scratch_release(pool, a_path, &err), 0, "releasing what is gone is fine");

	scratch_pool_destroy(pool);
	ok(access(pool_dir, F_OK) < 0, "the pool folder goes with the pool");
	unlink(victim);
	ok(rmdir(root) == 0, "nothing else left behind");
	free(err);
	free(victim);
	free(sub);
	free(link_path);
	free(a_path);
	free(b_path);
	free(pool_dir);
	return done_testing();
}
