/* The NFS backend's volume URL: server, export, our own options taken out,
 * libnfs's passed on, bad ones refused with a message. Also that a backend
 * is made whatever the server's state, says it is unreachable and why, and
 * that a call fails at once without patience and after it with one. With PARSA_TEST_NFS_URL
 * set to a volume on a real server (t0208 starts nfs-ganesha and runs this
 * binary so), the ops NFSv3 cannot do as POSIX says too (special_ops.h),
 * and that its cache of names keeps up with its own changes;
 * the rest of the backend runs in the storage tests, t02NN. */
#include "backend.h"
#include "special_ops.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TAP_STATE;

static void parse_ok(const char *url, const char *server, const char *export, const char *libnfs,
		     int timeout_ms, int64_t patience_ms, int spin_us)
{
	char *s = NULL, *e = NULL, *l = NULL, *err = NULL;
	struct nfs_url_opts o = { 0 };

	ok(backend_nfs_parse_url(url, &s, &e, &l, &o, &err) == 0, "%s parses", url);
	is_str(s, server, "%s: server", url);
	is_str(e, export, "%s: export", url);
	is_str(l, libnfs, "%s: what libnfs gets", url);
	is_int(o.timeout_ms, timeout_ms, "%s: timeout", url);
	is_int(o.patience_ms, patience_ms, "%s: patience", url);
	is_int(o.spin_us, spin_us, "%s: spin", url);
	free(s);
	free(e);
	free(l);
	free(err);
}

static void parse_bad(const char *url, const char *why)
{
	char *s = NULL, *e = NULL, *l = NULL, *err = NULL;
	struct nfs_url_opts o;
	int rc;

	rc = backend_nfs_parse_url(url, &s, &e, &l, &o, &err);
	ok(rc < 0 && errno == EINVAL && err, "%s refused (%s): %s", url, why, err ? err : "no message");
	free(s);
	free(e);
	free(l);
	free(err);
}

/* What NFSv3 cannot do fails with Linux's errno (docs/filesystem.md). */
static void test_special(void)
{
	const struct special_caps caps = { .fallocate = false, .long_target = false, .wide_times = false };
	const char *url = getenv("PARSA_TEST_NFS_URL");
	char *err = NULL;
	struct backend *b;

	if (!url || !*url) {
		diag("PARSA_TEST_NFS_URL not set: the ops against a server are skipped (t0208 runs them)");
		return;
	}
	b = backend_create(url, &err);
	ok(b != NULL, "%s opens", url);
	if (!b) {
		diag("%s", err ? err : "");
		free(err);
		return;
	}
	check_special_ops(b, "unit-special", &caps);
	backend_destroy(b);
}

/* With patience, answered writes are kept until committed, 64 MiB at most
 * per file (nfs_commit.c): 100 MiB written through the bound, one piece
 * written again, fsync, every byte read back; ftruncate after more kept
 * writes; close. (The restart of the server itself is t0217's.) */
static void test_kept(void)
{
	const char *url = getenv("PARSA_TEST_NFS_URL");
	struct backend_cred me = { geteuid(), getegid() };
	const size_t piece = 1 << 20;
	const int pieces = 100;
	struct backend_file *f = NULL;
	struct backend *b;
	char *err = NULL, *buf, *got;
	struct stat st;
	int bad = 0, failed = 0;
	bool rc;

	if (!url || !*url)
		return;
	b = backend_create(url, &err);
	if (!b) {
		ok(0, "%s opens: %s", url, err ? err : "");
		free(err);
		return;
	}
	backend_set_patience(b, 30000);
	buf = xmalloc(piece);
	got = xmalloc(piece);
	ok(backend_open(b, &me, "unit-kept", O_RDWR | O_CREAT | O_TRUNC, 0644, &f) == 0, "a file opens");
	for (int i = 0; f && i < pieces; i++) {
		memset(buf, 'a' + i % 26, piece);
		if (backend_pwrite(b, f, buf, piece, (off_t)i * piece) != (ssize_t)piece)
			failed++;
	}
	ok(f && failed == 0, "100 MiB written, past what a file keeps (%d failed)", failed);
	memset(buf, 'Z', piece);
	ok(f && backend_pwrite(b, f, buf, piece, 3 * (off_t)piece) == (ssize_t)piece, "a piece written again");
	ok(f && backend_fsync(b, f, 0) == 0, "fsync");
	for (int i = 0; f && i < pieces; i++) {
		memset(buf, i == 3 ? 'Z' : 'a' + i % 26, piece);
		if (backend_pread(b, f, got, piece, (off_t)i * piece) != (ssize_t)piece || memcmp(buf, got, piece) != 0)
			bad++;
	}
	ok(f && bad == 0, "every byte reads back, the piece written again last (%d pieces bad)", bad);
	st.st_size = -1;
	rc = f && backend_pwrite(b, f, buf, piece, 60 * (off_t)piece) == (ssize_t)piece &&
	     backend_ftruncate(b, f, 50 * (off_t)piece) == 0 && backend_fstat(b, f, &st) == 0;
	ok(rc && st.st_size == 50 * (off_t)piece, "ftruncate after a kept write: %lld", (long long)st.st_size);
	st.st_size = -1;
	rc = f && backend_fsync(b, f, 0) == 0 && backend_fstat(b, f, &st) == 0;
	ok(rc && st.st_size == 50 * (off_t)piece, "fsync after it sends nothing over the truncate (%lld)",
	   (long long)st.st_size);
	ok(f && backend_close(b, f) == 0, "close");
	ok(backend_unlink(b, "unit-kept") == 0, "unlink");
	free(buf);
	free(got);
	backend_destroy(b);
}

static int count_entry(void *arg, const char *name, const struct stat *st)
{
	(void)name;
	(void)st;
	(*(int *)arg)++;
	return 0;
}

static int stat_err(struct backend *b, const char *path)
{
	struct stat st;

	return backend_getattr(b, path, &st) == 0 ? 0 : errno;
}

/* The cache of names (nfs_dcache.c) never shows this mount's own changes
 * late: a name it just missed once made, a listed name once removed, a
 * change through one hard link under the other, a write once the file is
 * closed, a SETATTR, a rename, a folder's link count, a name made in a
 * folder it made; and another mount's new file once the cache's second is
 * up. */
static void test_cache(void)
{
	const char *url = getenv("PARSA_TEST_NFS_URL");
	struct backend_cred me = { geteuid(), getegid() };
	struct timespec tv[2] = { { 1000, 0 }, { 2000, 0 } };
	struct backend_file *f = NULL;
	struct backend *b, *other;
	char *err = NULL;
	struct stat st;
	nlink_t links;
	int n = 0;

	if (!url || !*url)
		return;
	b = backend_create(url, &err);
	other = b ? backend_create(url, &err) : NULL;
	if (!b || !other) {
		ok(0, "%s opens twice: %s", url, err ? err : "");
		free(err);
		if (b)
			backend_destroy(b);
		return;
	}
	backend_remove_tree(b, "unit-cache");
	ok(backend_mkdir(b, &me, "unit-cache", 0755) == 0, "cache: a folder");
	is_int(stat_err(b, "unit-cache/x"), ENOENT, "cache: a name missing");
	ok(backend_open(b, &me, "unit-cache/x", O_WRONLY | O_CREAT, 0644, &f) == 0 && backend_close(b, f) == 0,
	   "cache: made");
	is_int(stat_err(b, "unit-cache/x"), 0, "cache: the miss is forgotten at once");
	ok(backend_readdir(b, "unit-cache", count_entry, &n) == 0 && n == 1, "cache: listed (%d)", n);
	ok(backend_unlink(b, "unit-cache/x") == 0, "cache: a listed name removed");
	is_int(stat_err(b, "unit-cache/x"), ENOENT, "cache: and gone at once");

	ok(backend_open(b, &me, "unit-cache/a", O_WRONLY | O_CREAT, 0644, &f) == 0 &&
	   backend_pwrite(b, f, "abc", 3, 0) == 3 && backend_close(b, f) == 0, "cache: a file of 3 bytes");
	ok(backend_getattr(b, "unit-cache/a", &st) == 0 && st.st_size == 3 && st.st_nlink == 1,
	   "cache: its size once closed (%lld)", (long long)st.st_size);
	ok(backend_link(b, "unit-cache/a", "unit-cache/b") == 0, "cache: a hard link");
	ok(backend_getattr(b, "unit-cache/a", &st) == 0 && st.st_nlink == 2, "cache: nlink 2 under the first name");
	ok(backend_chmod(b, "unit-cache/b", 0600) == 0, "cache: chmod through the link");
	ok(backend_getattr(b, "unit-cache/a", &st) == 0 && (st.st_mode & 07777) == 0600,
	   "cache: the mode under the first name (%o)", st.st_mode & 07777);
	ok(backend_open(b, &me, "unit-cache/b", O_WRONLY, 0, &f) == 0 &&
	   backend_pwrite(b, f, "x", 1, 100) == 1 && backend_getattr(b, "unit-cache/a", &st) == 0 &&
	   st.st_size == 101, "cache: a write in flight shows under the other name (%lld)", (long long)st.st_size);
	ok(f && backend_close(b, f) == 0 && backend_getattr(b, "unit-cache/a", &st) == 0 && st.st_size == 101,
	   "cache: and once closed (%lld)", (long long)st.st_size);
	ok(backend_utimens(b, "unit-cache/a", tv) == 0 && backend_getattr(b, "unit-cache/b", &st) == 0 &&
	   st.st_mtim.tv_sec == 2000, "cache: times set through one name show under the other");
	ok(backend_truncate(b, "unit-cache/b", 1) == 0 && backend_getattr(b, "unit-cache/a", &st) == 0 &&
	   st.st_size == 1, "cache: a truncate too");
	ok(backend_rename(b, "unit-cache/a", "unit-cache/z", 0) == 0, "cache: renamed");
	is_int(stat_err(b, "unit-cache/a"), ENOENT, "cache: the old name gone");
	ok(backend_getattr(b, "unit-cache/z", &st) == 0 && st.st_size == 1, "cache: the new name there");
	ok(backend_unlink(b, "unit-cache/z") == 0 && backend_getattr(b, "unit-cache/b", &st) == 0 &&
	   st.st_nlink == 1, "cache: removing one link shows under the other (nlink %d)", (int)st.st_nlink);

	ok(backend_getattr(b, "unit-cache", &st) == 0, "cache: the folder");
	links = st.st_nlink;
	ok(backend_mkdir(b, &me, "unit-cache/d", 0755) == 0 && backend_getattr(b, "unit-cache", &st) == 0 &&
	   st.st_nlink == links + 1, "cache: its nlink after a mkdir (%d, was %d)", (int)st.st_nlink, (int)links);
	ok(backend_rmdir(b, "unit-cache/d") == 0 && backend_getattr(b, "unit-cache", &st) == 0 &&
	   st.st_nlink == links, "cache: and after the rmdir (%d)", (int)st.st_nlink);

	ok(backend_mkdir(b, &me, "unit-cache/k", 0755) == 0, "cache: a folder made here");
	is_int(stat_err(b, "unit-cache/k/x"), ENOENT, "cache: a name in it missing");
	ok(backend_open(b, &me, "unit-cache/k/y", O_WRONLY | O_CREAT, 0644, &f) == 0 && backend_close(b, f) == 0 &&
	   stat_err(b, "unit-cache/k/y") == 0, "cache: a name made in it there at once");
	ok(backend_mkdir(other, &me, "unit-cache/k/z", 0755) == 0, "cache: another made by another mount");
	usleep(1100 * 1000);
	is_int(stat_err(b, "unit-cache/k/z"), 0, "cache: seen here after a second");
	ok(backend_rename(b, "unit-cache/k/y", "unit-cache/k/w", 0) == 0 && stat_err(b, "unit-cache/k/w") == 0 &&
	   stat_err(b, "unit-cache/k/y") == ENOENT, "cache: a rename in it");
	is_int(stat_err(b, "unit-cache/late"), ENOENT, "cache: missing here");
	ok(backend_open(other, &me, "unit-cache/late", O_WRONLY | O_CREAT, 0644, &f) == 0 &&
	   backend_close(other, f) == 0, "cache: made by another mount");
	usleep(1100 * 1000);
	is_int(stat_err(b, "unit-cache/late"), 0, "cache: seen here after a second");
	ok(backend_remove_tree(b, "unit-cache") == 0, "cache: cleaned up");
	backend_destroy(other);
	backend_destroy(b);
}

#define NOBODY "nfs://127.0.0.1/nothing?nfsport=1&mountport=1&timeout=3"

/* Nobody listens on this port: the backend is made all the same, at once,
 * and says the volume is unreachable, since when and why. */
static void test_unreachable(void)
{
	int64_t t0 = time_mono_ms(), since = 0, now = time_now_ms() / 1000;
	char *err = NULL, *reason = NULL;
	struct backend *b;

	b = backend_create(NOBODY, &err);
	ok(b != NULL, "a backend is made with the server down (%s)", err ? err : "no error");
	ok(time_mono_ms() - t0 < 3500, "at once (%lld ms)", (long long)(time_mono_ms() - t0));
	if (!b) {
		free(err);
		return;
	}
	ok(backend_health(b, &since, &reason) == 0, "health: unreachable");
	ok(since >= now - 60 && since <= now + 60, "since about now (%lld)", (long long)since);
	ok(reason && strstr(reason, "cannot mount 127.0.0.1:/nothing"), "reason: %s", reason ? reason : "none");
	free(reason);
	reason = NULL;
	ok(backend_probe(b, 2000) < 0, "a probe fails");
	ok(backend_health(b, NULL, NULL) == 0, "still unreachable");
	backend_destroy(b);
	b = backend_create("nfs://h/x?patience=soon", &err);
	ok(!b && errno == EINVAL && err, "a bad option is still an error at start: %s", err ? err : "");
	free(err);
}

/* A call with the server down: without patience (the default, and the URL's
 * patience=0 over backend_set_patience) it fails at once; with patience it
 * waits about that long, pausing, and then fails with EIO. Bounds are loose:
 * the machine may be busy. */
static void test_patience(void)
{
	struct stat st;
	struct backend *b;
	char *err = NULL;
	int64_t t0, ms;
	int rc;

	b = backend_create(NOBODY, &err);
	if (!b) {
		ok(0, "no backend: %s", err ? err : "");
		free(err);
		return;
	}
	t0 = time_mono_ms();
	rc = backend_getattr(b, "x", &st);
	ms = time_mono_ms() - t0;
	ok(rc < 0 && errno == EIO, "no patience: EIO");
	ok(ms < 3000, "at once (%lld ms)", (long long)ms);

	is_int(backend_set_patience(b, 1500), 1500, "the patience set is in effect");
	t0 = time_mono_ms();
	rc = backend_getattr(b, "x", &st);
	ms = time_mono_ms() - t0;
	ok(rc < 0 && errno == EIO, "with 1.5 s of patience: EIO in the end");
	ok(ms >= 1400 && ms < 15000, "after the patience (%lld ms)", (long long)ms);
	t0 = time_mono_ms();
	rc = backend_mkdir(b, NULL, "d", 0755);
	ms = time_mono_ms() - t0;
	ok(rc < 0 && errno == EIO && ms >= 1400 && ms < 15000, "mkdir too (%lld ms)", (long long)ms);
	backend_destroy(b);

	b = backend_create(NOBODY "&patience=0", &err);
	ok(b != NULL, "patience=0 in the URL");
	if (b) {
		is_int(backend_set_patience(b, 5000), 0, "the URL's patience stays in effect");
		t0 = time_mono_ms();
		rc = backend_getattr(b, "x", &st);
		ms = time_mono_ms() - t0;
		ok(rc < 0 && errno == EIO && ms < 3000, "the URL's patience wins: fails at once (%lld ms)",
		   (long long)ms);
		backend_destroy(b);
	}
	b = backend_create(NOBODY "&patience=1", &err);
	ok(b != NULL, "patience=1 in the URL");
	if (b) {
		t0 = time_mono_ms();
		rc = backend_getattr(b, "x", &st);
		ms = time_mono_ms() - t0;
		ok(rc < 0 && errno == EIO && ms >= 900 && ms < 15000, "waits its second (%lld ms)", (long long)ms);
		backend_destroy(b);
	}
	free(err);
}

int main(void)
{

	parse_ok("nfs://fs1/export/parsa", "fs1", "/export/parsa", "nfs://fs1/export/parsa", 30000, -1, 100);
	parse_ok("nfs://10.0.0.5/srv/", "10.0.0.5", "/srv", "nfs://10.0.0.5/srv", 30000, -1, 100);
	parse_ok("nfs://127.0.0.1/x?timeout=2.5&nfsport=12049&mountport=12048", "127.0.0.1", "/x",
		 "nfs://127.0.0.1/x?nfsport=12049&mountport=12048", 2500, -1, 100);
	parse_ok("nfs://h/x?mountport=1", "h", "/x", "nfs://h/x?mountport=1", 30000, -1, 100);
	parse_ok("nfs://h/x?patience=0&mountport=1", "h", "/x", "nfs://h/x?mountport=1", 30000, 0, 100);
	parse_ok("nfs://h/x?patience=2.5", "h", "/x", "nfs://h/x", 30000, 2500, 100);
	parse_ok("nfs://h/x?patience=300&timeout=5", "h", "/x", "nfs://h/x", 5000, 300000, 100);
	parse_ok("nfs://h/x?spin=0", "h", "/x", "nfs://h/x", 30000, -1, 0);
	parse_ok("nfs://h/x?mountport=1&spin=250", "h", "/x", "nfs://h/x?mountport=1", 30000, -1, 250);
	parse_bad("nfs://h/x?spin=-5", "spin negative");
	parse_bad("nfs://h/x?spin=1e3", "spin not whole microseconds");
	parse_bad("nfs://h/x?spin=20000", "spin above 10 ms");
	parse_bad("nfs://h/x?patience=-1", "patience negative");
	parse_bad("nfs://h/x?patience=long", "patience not a number");
	parse_bad("nfs://h/x?patience=", "patience empty");
	parse_bad("nfs://", "no server");
	parse_bad("nfs://server", "no export");
	parse_bad("nfs:///export", "empty server");
	parse_bad("nfs://h/x?timeout=0", "timeout too small");
	parse_bad("nfs://h/x?timeout=soon", "timeout not a number");
	parse_bad("nfs://h/x?version=4", "unknown option");
	parse_bad("nfs://h/x/../etc", "'..'");

	test_unreachable();
	test_patience();
	test_special();
	test_kept();
	test_cache();
	return done_testing();
}
