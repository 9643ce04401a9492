/* The names of multiply-linked files (fs/inode_map.h), the inode numbers of
 * made-up nodes and the reserved .fuse_hidden names (fs/fs_node.h), and a
 * volume folder keeping libfuse's hidden names in the unlinked folder. */
#include "backend.h"
#include "data_dir.h"
#include "fs_node.h"
#include "inode_map.h"
#include "ops.h"
#include "tap.h"
#include "unlinked.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TAP_STATE;

static size_t count(char **names)
{
	size_t n = 0;

	for (; names && names[n]; n++)
		;
	return n;
}

static void test_map(void)
{
	struct inode_map *m = inode_map_create();
	char **names;

	ok(inode_map_others(m, "/data/a", 0) == NULL, "an empty map knows no names");
	inode_map_seen(m, "/data/a", 7, 1);
	ok(inode_map_others(m, "/data/a", 0) == NULL, "nlink 1 is not remembered");
	inode_map_seen(m, "/data/a", 7, 2);
	inode_map_seen(m, "/data/b", 7, 2);
	inode_map_seen(m, "/data/b", 7, 2);
	names = inode_map_others(m, "/data/a", 0);
	ok(count(names) == 1 && strcmp(names[0], "/data/b") == 0, "a's other name is b, once");
	inode_map_free_names(names);
	inode_map_renamed(m, "/data/b", "/data/c");
	names = inode_map_others(m, "/data/a", 0);
	ok(count(names) == 1 && strcmp(names[0], "/data/c") == 0, "a rename moves the name");
	inode_map_free_names(names);
	names = inode_map_others(m, "/data/c", 1);
	ok(count(names) == 1 && strcmp(names[0], "/data/a") == 0, "unlink of c: a is to invalidate");
	inode_map_free_names(names);
	ok(inode_map_others(m, "/data/a", 0) == NULL, "and c is forgotten");
	inode_map_seen(m, "/data/x", 8, 3);
	inode_map_seen(m, "/data/a", 8, 3);
	names = inode_map_others(m, "/data/x", 0);
	ok(count(names) == 1 && strcmp(names[0], "/data/a") == 0, "a name now of another file moves with it");
	inode_map_free_names(names);
	for (uint64_t i = 100; i < 1100; i++) {
		char p[32];

		snprintf(p, sizeof p, "/data/n%llu", (unsigned long long)i);
		inode_map_seen(m, p, i, 2);
	}
	inode_map_seen(m, "/data/last2", 1099, 2);
	names = inode_map_others(m, "/data/last2", 0);
	ok(count(names) == 1, "a thousand files later the map still works (bounded)");
	inode_map_free_names(names);
	is_int(inode_map_privs_gen(m), 0, "no set-uid chmod yet");
	inode_map_privs_changed(m);
	is_int(inode_map_privs_gen(m), 1, "one counted");
	inode_map_destroy(m);
}

static void test_names(void)
{
	ok(fs_virtual_ino("/status") >= (1ULL << 63), "made-up inode numbers are above 2^63");
	ok(fs_virtual_ino("/status") == fs_virtual_ino("/status"), "and stable");
	ok(fs_virtual_ino("/status") != fs_virtual_ino("/queue"), "and differ by path");
	ok(fs_is_hidden_name(".fuse_hidden"), "the bare prefix is reserved");
	ok(fs_is_hidden_name(".fuse_hiddenfoo"), "so is anything after it");
	ok(!fs_is_hidden_name("fuse_hidden"), "not without the dot");
	ok(fs_is_hide_name(".fuse_hidden0000000a00000003"), "libfuse's own form");
	ok(!fs_is_hide_name(".fuse_hidden0000000A00000003"), "upper case is not libfuse's");
	ok(!fs_is_hide_name(".fuse_hidden0000000a0000003"), "nor 15 digits");
}

/* data/ on a local volume with an unlinked folder: a .fuse_hidden name, in
 * whatever folder, lives in that folder, out of the listing. */
static void test_volume(void)
{
	char root[] = "/tmp/parsa-test-inode-map.XXXXXX", disk[512];
	struct fs_ctx fs = { 0 };
	struct fs_file *file = NULL;
	struct fs_path p, z;
	struct stat st;
	char *err = NULL, *dir;

	if (!mkdtemp(root)) {
		ok(0, "mkdtemp");
		return;
	}
	fs.backend = backend_local_create(root, &err);
	ok(fs.backend != NULL, "a local volume");
	if (!fs.backend)
		return;
	fs.uid = geteuid();
	fs.gid = getegid();
	ok(data_dir_prepare(&fs) == 0, "data/ made");
	dir = unlinked_prepare(fs.backend);
	ok(dir != NULL, "the unlinked folder made");
	fs.unlinked_dir = dir;
	fs_match("/data/f", &p);
	ok(p.ops->create(&fs, &p, O_RDWR, 0644, &file) == 0, "data/f created");
	fs_match("/data/.fuse_hidden0000000200000001", &z);
	ok(p.ops->getattr(&fs, &z, &st) < 0 && errno == ENOENT, "the hidden name is free");
	ok(p.ops->rename(&fs, &p, &z, 0) == 0, "libfuse hides data/f");
	snprintf(disk, sizeof disk, "%s/data/f", root);
	ok(stat(disk, &st) < 0, "it left data/");
	snprintf(disk, sizeof disk, "%s/%s/.fuse_hidden0000000200000001", root, dir);
	ok(stat(disk, &st) == 0, "it is in the unlinked folder");
	ok(z.ops->getattr(&fs, &z, &st) == 0, "and found by its hidden name");
	ok(file->ops->write(file, "x", 1, 0) == 1, "the open file writes on");
	file->ops->release(file);
	ok(z.ops->unlink(&fs, &z) == 0, "the last close removes it");
	ok(stat(disk, &st) < 0, "gone from the disk");
	unlinked_finish(fs.backend, dir);
	snprintf(disk, sizeof disk, "%s/%s", root, dir);
	ok(stat(disk, &st) < 0, "the unmount removes the folder");
	free(dir);
	backend_destroy(fs.backend);
	snprintf(disk, sizeof disk, "rm -rf '%s'", root);
	if (system(disk) != 0)
		diag("cannot remove %s", root);
}

int main(void)
{
	test_map();
	test_names();
	test_volume();
	return done_testing();
}
