/* The fault-injecting backend (storage/backend_fault.c) over a local folder:
 * the URL's options, chosen ops failing with the chosen errno and nothing
 * else, path=, after=, the delay, and every other call passed through. */
#include "backend.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

TAP_STATE;

static char root[] = "/tmp/parsa-test-fault.XXXXXX";

static struct backend *open_url(const char *opts)
{
	char *url = xasprintf("fault:%s:%s", opts, root), *err = NULL;
	struct backend *b = backend_create(url, &err);

	if (!b)
		diag("%s: %s", url, err ? err : "?");
	free(url);
	free(err);
	return b;
}

static bool exists(const char *rel)
{
	char *p = xasprintf("%s/%s", root, rel);
	struct stat st;
	bool ret = lstat(p, &st) == 0;

	free(p);
	return ret;
}

static void bad_url(const char *url, const char *says)
{
	char *err = NULL;
	struct backend *b = backend_create(url, &err);

	ok(!b && errno == EINVAL, "%s is refused", url);
	ok(err && strstr(err, says), "%s: the message says '%s' (%s)", url, says, err ? err : "none");
	backend_destroy(b);
	free(err);
}

static void test_urls(void)
{
	char *u;

	bad_url("fault:", "expected fault:OPTIONS:URL");
	bad_url("fault:eio=mkdir", "expected fault:OPTIONS:URL");
	bad_url("fault:eio=mkdir:", "expected fault:OPTIONS:URL");
	u = xasprintf("fault:eio=mkdr:%s", root);
	bad_url(u, "no op 'mkdr'");
	free(u);
	u = xasprintf("fault:ebogus=mkdir:%s", root);
	bad_url(u, "unknown fault option 'ebogus'");
	free(u);
	u = xasprintf("fault:delay_ms=-1:%s", root);
	bad_url(u, "delay_ms must be a whole number");
	free(u);
	u = xasprintf("fault:eio:%s", root);
	bad_url(u, "is not NAME=VALUE");
	free(u);
	/* The inner URL's own errors come through. */
	bad_url("fault:eio=mkdir:relative/path", "neither /path");
}

static void test_fail_chosen_ops(void)
{
	struct backend_cred me = { getuid(), getgid() };
	struct backend *b = open_url("eio=mkdir,enospc=open+rename");
	struct backend_file *f = NULL;
	struct stat st;

	if (!ok(b != NULL, "fault:eio=mkdir,enospc=open+rename opens"))
		return;
	is_str(b->ops->name, "fault", "it is the fault backend");
	errno = 0;
	ok(backend_mkdir(b, &me, "d", 0755) < 0 && errno == EIO, "mkdir fails with EIO");
	ok(!exists("d"), "and makes nothing");
	ok(backend_mkdir_p(b, &me, "jobs/1/out/s", 0755) < 0 && errno == EIO, "mkdir -p fails with EIO");
	ok(!exists("jobs"), "and makes nothing either");
	errno = 0;
	ok(backend_open(b, &me, "f", O_WRONLY | O_CREAT, 0644, &f) < 0 && errno == ENOSPC && !f,
	   "open fails with ENOSPC");
	ok(!exists("f"), "and creates no file");
	ok(backend_symlink(b, &me, "target", "l") == 0 && exists("l"), "symlink passes");
	ok(backend_rename(b, "l", "m", 0) < 0 && errno == ENOSPC && exists("l"), "rename fails, l stays");
	ok(backend_getattr(b, "l", &st) == 0 && S_ISLNK(st.st_mode), "getattr passes");
	ok(backend_unlink(b, "l") == 0 && !exists("l"), "unlink passes");
	ok(backend_can_fchmod(b), "the local folder's fchmod is there through the wrapper");
	backend_destroy(b);
}

static void test_files(void)
{
	struct backend_cred me = { getuid(), getgid() };
	struct backend *b = open_url("eio=pwrite+close,path=*.bad");
	struct backend_file *f = NULL;
	char buf[8] = { 0 };

	if (!ok(b != NULL, "fault:eio=pwrite+close,path=*.bad opens"))
		return;
	ok(backend_open(b, &me, "x.good", O_RDWR | O_CREAT, 0644, &f) == 0, "x.good opens");
	ok(backend_splice_fd(b, f, 4, 0) >= 0, "x.good has a descriptor to splice");
	is_int(backend_pwrite(b, f, "abcd", 4, 0), 4, "x.good is written");
	is_int(backend_pread(b, f, buf, sizeof buf, 0), 4, "and read back");
	is_str(buf, "abcd", "the same bytes");
	ok(backend_close(b, f) == 0, "x.good closes");
	ok(backend_open(b, &me, "x.bad", O_RDWR | O_CREAT, 0644, &f) == 0, "x.bad opens (open not chosen)");
	ok(backend_splice_fd(b, f, 4, 0) < 0, "x.bad has no descriptor: its data must come through pwrite");
	ok(backend_pwrite(b, f, "abcd", 4, 0) < 0 && errno == EIO, "x.bad's pwrite fails with EIO");
	errno = 0;
	ok(backend_close(b, f) < 0 && errno == EIO, "x.bad's close fails with EIO (and closes)");
	ok(backend_remove_tree(b, "x.bad") == 0 && backend_remove_tree(b, "x.good") == 0, "both removed");
	backend_destroy(b);
}

static void test_after(void)
{
	struct backend_cred me = { getuid(), getgid() };
	struct backend *b = open_url("eacces=mkdir,after=2");

	if (!ok(b != NULL, "fault:eacces=mkdir,after=2 opens"))
		return;
	ok(backend_mkdir(b, &me, "a1", 0755) == 0, "the first mkdir passes");
	ok(backend_mkdir(b, &me, "a2", 0755) == 0, "the second too");
	ok(backend_mkdir(b, &me, "a3", 0755) < 0 && errno == EACCES, "the third fails with EACCES");
	ok(backend_rmdir(b, "a1") == 0 && backend_rmdir(b, "a2") == 0, "rmdir passes");
	backend_destroy(b);
}

static void test_delay(void)
{
	struct backend *b = open_url("delay_ms=200");
	struct stat st;
	int64_t t0;

	if (!ok(b != NULL, "fault:delay_ms=200 opens"))
		return;
	t0 = time_mono_ms();
	ok(backend_getattr(b, "", &st) == 0 && S_ISDIR(st.st_mode), "getattr of the root passes");
	ok(time_mono_ms() - t0 >= 200, "after 200 ms (%lld)", (long long)(time_mono_ms() - t0));
	backend_destroy(b);
}

static void who_is_nobody(void *arg, struct backend_cred *cred)
{
	(void)arg;
	cred->uid = 65534;
	cred->gid = 65534;
}

static void test_pass_through(void)
{
	struct backend_cred me = { getuid(), getgid() };
	struct backend *b = open_url("");
	struct statvfs vfs;

	if (!ok(b != NULL, "fault::ROOT (no faults) opens"))
		return;
	backend_set_identity(b, who_is_nobody, NULL);
	ok(b->who == who_is_nobody, "the wrapper takes the identity hook (and hands it on)");
	ok(backend_mkdir_p(b, &me, "p/q", 0755) == 0 && exists("p/q"), "mkdir -p passes");
	ok(backend_statfs(b, "", &vfs) == 0 && vfs.f_blocks > 0, "statfs passes");
	ok(backend_remove_tree(b, "p") == 0 && !exists("p"), "rm -r passes");
	backend_destroy(b);
}

/* Patience, health and the probe are the inner volume's, passed through:
 * over a local folder always reachable; over an NFS server nobody runs,
 * unreachable, and a set patience makes its calls wait. */
static void test_health_through(void)
{
	struct backend *b = open_url("eio=mkdir");
	char *err = NULL, *reason = NULL;
	struct stat st;
	int64_t t0, ms;
	int rc;

	if (ok(b != NULL, "fault over a local folder opens")) {
		ok(backend_health(b, NULL, NULL) == 1, "reachable, as its folder");
		is_int(backend_probe(b, 1000), 0, "the probe passes");
		backend_destroy(b);
	}
	b = backend_create("fault:eio=mkdir:nfs://127.0.0.1/nothing?nfsport=1&mountport=1&timeout=3", &err);
	if (!ok(b != NULL, "fault over an NFS server that is down opens (%s)", err ? err : "")) {
		free(err);
		return;
	}
	ok(backend_health(b, NULL, &reason) == 0 && reason && strstr(reason, "cannot mount"),
	   "the inner volume's health: unreachable (%s)", reason ? reason : "none");
	ok(backend_probe(b, 1000) < 0, "the probe goes to the inner volume");
	backend_set_patience(b, 1000);
	t0 = time_mono_ms();
	rc = backend_getattr(b, "x", &st);
	ms = time_mono_ms() - t0;
	ok(rc < 0 && errno == EIO && ms >= 900 && ms < 15000,
	   "the patience reaches the inner volume (%lld ms, then EIO)", (long long)ms);
	free(reason);
	free(err);
	backend_destroy(b);
}

int main(void)
{
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	test_urls();
	test_fail_chosen_ops();
	test_files();
	test_after();
	test_delay();
	test_pass_through();
	test_health_through();
	rmdir(root);
	return done_testing();
}
