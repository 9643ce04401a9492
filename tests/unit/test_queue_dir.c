/* queue/ without a scheduler: text kept per open file and listed while open,
 * the creator's close submits and fails with ENOTCONN, the errors land in
 * <name>.rejected (read-only, removable), the size limit is EFBIG, binary text
 * is refused before anything is sent, and the clone file fails its first read
 * and then serves the errors. Also the job cache's fallback to the storage. */
#include "backend.h"
#include "job_cache.h"
#include "ops.h"
#include "queue_dir.h"
#include "sched_link.h"
#include "spec.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TAP_STATE;

struct listing {
	char names[16][64];
	int n;
};

static int add(void *arg, const char *name, const struct stat *st)
{
	struct listing *l = arg;

	(void)st;
	if (l->n < 16)
		snprintf(l->names[l->n++], sizeof l->names[0], "%s", name);
	return 0;
}

static int listed(struct fs_ctx *fs, const char *name)
{
	struct listing l = { 0 };
	struct fs_path p;

	fs_match("/queue", &p);
	p.ops->readdir(fs, &p, add, &l);
	for (int i = 0; i < l.n; i++)
		if (strcmp(l.names[i], name) == 0)
			return 1;
	return 0;
}

static struct fs_file *create(struct fs_ctx *fs, const char *path)
{
	struct fs_file *f = NULL;
	struct fs_path p;

	if (fs_match(path, &p) < 0 || !p.ops->create || p.ops->create(fs, &p, O_WRONLY, 0644, &f) < 0)
		return NULL;
	return f;
}

static char *read_all_of(struct fs_ctx *fs, const char *path)
{
	struct fs_file *f = NULL;
	struct fs_path p;
	char *buf = xcalloc(1, 4096);

	if (fs_match(path, &p) == 0 && p.ops->open(fs, &p, O_RDONLY, &f) == 0) {
		f->ops->read(f, buf, 4095, 0);
		f->ops->release(f);
	}
	return buf;
}

static void test_submit_while_down(struct fs_ctx *fs)
{
	const char text[] = "[stage a]\nrun = true\n";
	struct fs_file *f, *g = NULL;
	struct fs_path p;
	struct stat st;
	char *errors;

	f = create(fs, "/queue/lab.conf");
	ok(f != NULL, "create queue/lab.conf");
	is_int(f->ops->write(f, text, sizeof text - 1, 0), (long long)(sizeof text - 1), "write the spec");
	ok(listed(fs, "lab.conf"), "the entry is listed while open");
	fs_match("/queue/lab.conf", &p);
	ok(p.ops->getattr(fs, &p, &st) == 0 && st.st_size == (off_t)(sizeof text - 1), "with its size");
	is_int(f->ops->flush(f), -1, "close fails with the scheduler down");
	is_int(errno, ENOTCONN, "with ENOTCONN");
	is_int(f->ops->flush(f), 0, "a second close has nothing left to say");
	is_int(f->ops->write(f, "x", 1, 0), -1, "writing after the submission fails");
	f->ops->release(f);
	ok(!listed(fs, "lab.conf"), "the entry left queue/");
	ok(listed(fs, "lab.conf.rejected"), "lab.conf.rejected appeared");
	fs_match("/queue/lab.conf.rejected", &p);
	ok(p.ops->getattr(fs, &p, &st) == 0 && (st.st_mode & 0777) == 0444, "read-only");
	errors = read_all_of(fs, "/queue/lab.conf.rejected");
	errors[strcspn(errors, "\n")] = '\0';
	ok(strstr(errors, "lab.conf: ") && strstr(errors, "not running"), "it says why: %s", errors);
	free(errors);
	is_int(p.ops->open(fs, &p, O_WRONLY, &g), -1, "it cannot be written");
	is_int(errno, EACCES, "with EACCES");
	is_int(p.ops->unlink(fs, &p), 0, "it can be removed");
	ok(!listed(fs, "lab.conf.rejected"), "and is gone");
	is_int(p.ops->getattr(fs, &p, &st), -1, "getattr says so");
	is_int(create(fs, "/queue/x.rejected") == NULL ? errno : 0, EACCES, "a .rejected name cannot be created");
	fs_match("/queue/nothing", &p);
	is_int(p.ops->unlink(fs, &p), -1, "rm of a missing entry fails");
	is_int(errno, ENOENT, "with ENOENT");
}

static void test_limits(struct fs_ctx *fs)
{
	struct fs_file *f = create(fs, "/queue/huge.conf");
	char *errors;

	ok(f != NULL, "create queue/huge.conf");
	is_int(f->ops->write(f, "x", 1, SPEC_MAX_BYTES), -1, "a write past the limit fails");
	is_int(errno, EFBIG, "with EFBIG");
	is_int(f->ops->flush(f), -1, "and so does close");
	is_int(errno, EFBIG, "with EFBIG");
	f->ops->release(f);
	errors = read_all_of(fs, "/queue/huge.conf.rejected");
	errors[strcspn(errors, "\n")] = '\0';
	ok(strstr(errors, "limit") != NULL, "the rejection names the limit: %s", errors);
	free(errors);

	f = create(fs, "/queue/junk.conf");
	f->ops->write(f, "\xff\xfe\x01junk", 7, 0);
	is_int(f->ops->flush(f), -1, "binary text is refused");
	is_int(errno, EINVAL, "with EINVAL, not a transport error");
	f->ops->release(f);
	errors = read_all_of(fs, "/queue/junk.conf.rejected");
	errors[strcspn(errors, "\n")] = '\0';
	ok(strstr(errors, "junk.conf:1: ") && strstr(errors, "not a text file"),
	   "by the spec parser: %s", errors);
	free(errors);
}

static void test_clone(struct fs_ctx *fs)
{
	const char text[] = "[stage a]\nrun = true\n";
	struct fs_file *f = NULL;
	struct fs_path p;
	char buf[256] = "";
	ssize_t n;

	fs_match("/queue/.clone", &p);
	is_int(p.ops->open(fs, &p, O_RDWR, &f), 0, "open queue/.clone");
	is_int(f->ops->write(f, text, sizeof text - 1, 0), (long long)(sizeof text - 1), "write the spec");
	is_int(f->ops->read(f, buf, sizeof buf, sizeof text - 1), -1, "the first read submits and fails");
	is_int(errno, ENOTCONN, "with ENOTCONN");
	n = f->ops->read(f, buf, sizeof buf - 1, sizeof text - 1);
	buf[strcspn(buf, "\n")] = '\0';
	ok(n > 0 && strstr(buf, "not running"), "the next read gives the errors: %s", buf);
	f->ops->release(f);
	ok(!listed(fs, "clone.rejected"), "the clone leaves no .rejected");
}

/* Past JOB_CACHE_MAX young entries the cache drops some: it is bounded. */
static void test_job_cache_bound(struct fs_ctx *fs)
{
	struct fs_identity who = { getuid(), getgid(), NULL, 0 };
	const struct job_meta *m;
	int64_t last = 100 + JOB_CACHE_MAX + 1000;

	for (int64_t id = 100; id <= last; id++) {
		struct api_job_meta job = { .uid = getuid(), .gid = getgid(), .submitted_ms = 1,
					    .stages = xcalloc(1, sizeof *job.stages) };

		job_cache_prime(fs->jobs, id, &job);
	}
	ok(job_cache_count(fs->jobs) <= JOB_CACHE_MAX, "%d entries primed, %zu kept (at most %d)",
	   JOB_CACHE_MAX + 1001, job_cache_count(fs->jobs), JOB_CACHE_MAX);
	m = job_cache_get(fs->jobs, &who, last, JOB_NEED_STAGES);
	ok(m && m->full && m->id == last, "the newest entry is kept");
	job_meta_put(m);
}

static void test_job_cache_fallback(struct fs_ctx *fs)
{
	struct backend_cred cred = { getuid(), getgid() };
	const struct job_meta *m;
	struct fs_identity who = { getuid(), getgid(), NULL, 0 };
	int64_t *ids = NULL;
	size_t n = 0;

	backend_mkdir_p(fs->backend, &cred, "jobs/5/out/warm", 0755);
	m = job_cache_get(fs->jobs, &who, 5, 0);
	ok(m && m->uid == getuid() && !m->full, "with the scheduler down, the owner comes from storage");
	job_meta_put(m);
	m = job_cache_get(fs->jobs, &who, 5, JOB_NEED_STAGES);
	ok(m == NULL && errno == ENOTCONN, "stages cannot be made up: ENOTCONN");
	m = job_cache_get(fs->jobs, &who, 6, 0);
	ok(m == NULL && errno == ENOTCONN, "an unknown job without a folder: ENOTCONN");
	is_int(job_cache_list(fs->jobs, &who, &ids, &n), 0, "the job list comes from storage");
	ok(n == 1 && ids[0] == 5, "and holds job 5");
	free(ids);
	backend_remove_tree(fs->backend, "jobs");
}

/* A name with a control character is refused at its creation, with the
 * reason in NAME.rejected. */
static void test_control_names(struct fs_ctx *fs)
{
	const char *name = "/queue/x\nstate: failed.conf";
	char *text;

	errno = 0;
	ok(create(fs, name) == NULL, "a name with a newline cannot be created");
	is_int(errno, EINVAL, "EINVAL");
	ok(!listed(fs, "x\nstate: failed.conf"), "and is not listed as being written");
	ok(listed(fs, "x\nstate: failed.conf.rejected"), "its .rejected is");
	text = read_all_of(fs, "/queue/x\nstate: failed.conf.rejected");
	ok(strstr(text, "x\\nstate: failed.conf: the file name holds a control character (\\n)") != NULL,
	   "which says why, the name escaped: %s", text);
	free(text);
}

/* Each user's names are their own: another user neither sees nor is
 * blocked by a name being written. Needs root to act as another uid. */
static void test_per_user_names(struct fs_ctx *fs)
{
	struct fs_file *mine, *theirs = NULL;
	struct fs_path p;
	struct stat st;

	if (geteuid() != 0) {
		diag("skipped the per-user names: not root");
		return;
	}
	mine = create(fs, "/queue/shared.conf");
	ok(mine != NULL, "root writes shared.conf");
	if (seteuid(4242) < 0) {
		diag("seteuid: %s", strerror(errno));
		goto out;
	}
	ok(!listed(fs, "shared.conf"), "another user does not see it");
	fs_match("/queue/shared.conf", &p);
	errno = 0;
	ok(p.ops->getattr(fs, &p, &st) < 0 && errno == ENOENT, "nor finds it");
	theirs = create(fs, "/queue/shared.conf");
	ok(theirs != NULL, "and writes a shared.conf of their own");
	ok(listed(fs, "shared.conf"), "which they see");
	if (seteuid(0) < 0)
		diag("seteuid(0): %s", strerror(errno));
	ok(p.ops->getattr(fs, &p, &st) == 0 && st.st_mode == (S_IFREG | 0666),
	   "a name being written is open to all (%o): the kernel's cached lookup must not refuse "
	   "another user's open", (unsigned)st.st_mode);
out:
	if (theirs)
		theirs->ops->release(theirs);
	if (mine)
		mine->ops->release(mine);
}

int main(void)
{
	char root[] = "/tmp/parsa-test-queue.XXXXXX";
	struct fs_ctx fs = { 0 };
	char *err = NULL;

	if (!mkdtemp(root))
		return 1;
	fs.uid = getuid();
	fs.gid = getgid();
	fs.backend = backend_local_create(root, &err);
	fs.link = sched_link_create("unix:/nonexistent/parsa-test/sched.sock", &err);
	if (!fs.backend || !fs.link) {
		diag("%s", err);
		return 1;
	}
	fs.jobs = job_cache_create(fs.link, fs.backend, 1000);
	fs.queue = queue_dir_create(&fs);
	test_submit_while_down(&fs);
	test_limits(&fs);
	test_clone(&fs);
	test_job_cache_bound(&fs);
	test_job_cache_fallback(&fs);
	test_control_names(&fs);
	test_per_user_names(&fs);
	queue_dir_destroy(fs.queue);
	job_cache_destroy(fs.jobs);
	sched_link_destroy(fs.link);
	backend_destroy(fs.backend);
	rmdir(root);
	free(err);
	return done_testing();
}
