/* Control files (fs/ctl_file.c) against a real scheduler in this process:
 * reading shows the commands; each line written is one command, blank lines
 * and surrounding blanks aside, every line of a write checked to be a command
 * before any is sent; the scheduler's refusals become the write's
 * errno (EINVAL for an unknown command or text that is not UTF-8, EBUSY for
 * one not possible now, EACCES for another user's job) and the lines after a
 * refused one are not sent; with the scheduler gone the write fails with
 * ENOTCONN. The ctl nodes' shared truncate and utimens (`echo cmd > ctl`,
 * `touch ctl`) succeed for a job or host that exists and fail with ENOENT
 * otherwise. */
#include "api_paths.h"
#include "ctl_file.h"
#include "ops.h"
#include "sched_world.h"
#include "tap.h"

#include <grp.h>
#include <sys/wait.h>

TAP_STATE;

/* What a job's ctl shows, from the table the scheduler dispatches on. */
static const char help[] = "commands: cancel | hold | release | retry | priority N | purge | keep | unkeep\n";

/* The ctl file of job id's node ("/jobs/<id>/ctl"), as the node's open makes it. */
static struct fs_file *ctl_at(struct fs_ctx *fs, int64_t id, const char *what)
{
	struct fs_path p;
	char *node = xasprintf("/jobs/%lld/ctl", (long long)id), *url = api_path_id(API_JOB_CTL, id);
	struct fs_file *f = NULL;

	if (fs_match(node, &p) == 0)
		f = ctl_file_create(fs, &p, url, what, &ctl_job_table);
	free(url);
	free(node);
	return f;
}

static ssize_t say(struct fs_file *f, const char *text)
{
	return f->ops->write(f, text, strlen(text), 0);
}

static bool held(struct sched_world *w, int64_t id)
{
	bool ret;

	engine_test_hold(w->engine);
	ret = model_job(w->model, id)->held;
	engine_test_release(w->engine);
	return ret;
}

static enum job_state state_of(struct sched_world *w, int64_t id)
{
	enum job_state ret;

	engine_test_hold(w->engine);
	ret = model_job(w->model, id)->state;
	engine_test_release(w->engine);
	return ret;
}

/* The errno of a write of cancel to job id's ctl by uid 65534 (a process of
 * its own: the scheduler reads who writes from the socket). */
static int cancel_as_nobody(struct sched_world *w, int64_t id)
{
	pid_t pid = fork();
	int status = 0;

	if (pid == 0) {
		struct fs_ctx fs = { .uid = 65534, .gid = 65534 };
		char *err = NULL;
		struct fs_file *f;

		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
			_exit(100);
		fs.link = sched_link_create(w->endpoint, &err);
		if (!fs.link)
			_exit(101);
		f = ctl_at(&fs, id, "job");
		_exit(say(f, "cancel\n") < 0 ? errno : 0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static void test_commands(struct sched_world *w, int64_t id)
{
	w->fs.ctl_notes = ctl_notes_create();
	struct fs_file *f = ctl_at(&w->fs, id, "job");
	char buf[128] = "";
	ssize_t n;

	ok(f->direct_io, "a ctl file is never cached");
	n = f->ops->read(f, buf, sizeof buf - 1, 0);
	is_str(n > 0 ? buf : "", help, "reading it shows the commands");
	is_int(f->ops->read(f, buf, sizeof buf, (off_t)strlen(help)), 0, "and then ends");
	is_int(f->ops->truncate(f, 0), 0, "the O_TRUNC of `echo cmd > ctl` is no error");
	ok(f->ops->truncate(f, 5) == -1 && errno == EINVAL, "ftruncate to another size: EINVAL");
	{
		struct stat st;
		struct timespec tv[2] = { { 0, UTIME_NOW }, { 0, UTIME_NOW } };

		/* `truncate -s 0 ctl` ends with a getattr by handle, no path. */
		ok(f->ops->getattr && f->ops->getattr(f, &st) == 0 && S_ISREG(st.st_mode) &&
		   st.st_size == 0 && st.st_ino != 0, "fstat of an open ctl: the node's attributes");
		ok(f->ops->utimens && f->ops->utimens(f, tv) == 0, "futimens of an open ctl: no error");
	}

	is_int(say(f, "hold\n"), 5, "hold: the write takes the whole line");
	ok(held(w, id), "the job is held");
	is_int(say(f, "\n  release \r\n\n"), 14, "blank lines and surrounding blanks do not count");
	ok(!held(w, id), "it was released");
	is_int(say(f, "release"), -1, "release of a job not held (no newline needed)");
	is_int(errno, EBUSY, "is EBUSY: not possible now");
	is_int(say(f, "hold\ndance\nrelease\n"), -1, "an unknown command");
	is_int(errno, EINVAL, "is EINVAL");
	ok(!held(w, id), "every line is checked before any is sent: the hold before it was not done");
	{
		/* A refusal is readable: the next open's read shows it after the help. */
		struct fs_file *g = ctl_at(&w->fs, id, "job");
		char text[512] = "";
		ssize_t got = g->ops->read(g, text, sizeof text - 1, 0);

		text[got > 0 ? got : 0] = '\0';
		ok(strstr(text, help) == text && strstr(text, "last refused: 'dance' (line 2) by uid ") &&
		   strstr(text, "unknown command 'dance'") &&
		   strstr(text, "none of the 3 lines of the write was applied"),
		   "a read of the ctl says which line was refused and that nothing was applied");
		if (!strstr(text, "last refused"))
			diag("got: %s", text);
		g->ops->release(g);
	}
	is_int(say(f, "hold\npriority\n"), -1, "a command without its argument among several");
	is_int(errno, EINVAL, "is EINVAL");
	ok(!held(w, id), "and nothing was done");
	is_int(say(f, "hold\nhold\nrelease\n"), -1, "a second hold: not possible once the first is done");
	is_int(errno, EBUSY, "is EBUSY");
	ok(held(w, id), "the line before it was done, the one after it was not sent");
	{
		struct fs_file *g = ctl_at(&w->fs, id, "job");
		char text[512] = "";
		ssize_t got = g->ops->read(g, text, sizeof text - 1, 0);

		text[got > 0 ? got : 0] = '\0';
		ok(strstr(text, "'hold' (line 2)") && strstr(text, "the 1 before it were applied, the 1 "
							      "after it not sent"),
		   "and the read says which lines were applied");
		ok(strstr(text, "after this open applied 'hold', 'release', 'hold'") != NULL,
		   "with what this open had applied in earlier writes (bash's printf writes a line at a time)");
		if (!strstr(text, "after this open applied"))
			diag("got: %s", text);
		g->ops->release(g);
	}
	is_int(say(f, "bo\033gus\n"), -1, "a command with an ESC");
	{
		struct fs_file *g = ctl_at(&w->fs, id, "job");
		char text[512] = "";
		ssize_t got = g->ops->read(g, text, sizeof text - 1, 0);

		text[got > 0 ? got : 0] = '\0';
		ok(strstr(text, "'bo\\x1bgus'") && !strchr(text, '\033'),
		   "the ctl's read quotes it escaped, no ESC reaches the reader");
		g->ops->release(g);
	}
	is_int(say(f, "\xff\xfe\n"), -1, "text that is not UTF-8");
	is_int(errno, EINVAL, "is EINVAL too");
	if (geteuid() == 0) {
		is_int(cancel_as_nobody(w, id), EACCES, "another user's cancel is EACCES");
		is_int(state_of(w, id), JOB_QUEUED, "and the job is not cancelled");
	}
	is_int(say(f, "release\ncancel\n"), 15, "two commands in one write");
	is_int(state_of(w, id), JOB_CANCELLED, "both were done");
	f->ops->release(f);
	ctl_notes_destroy(w->fs.ctl_notes);
	w->fs.ctl_notes = NULL;
}

static void test_nodes(struct sched_world *w, int64_t id)
{
	struct timespec tv[2] = { { 0, UTIME_NOW }, { 0, UTIME_NOW } };
	struct host_info info = { .name = "h1", .cpus = 1, .mem = 1ULL << 30, .cpu_limit = 90,
				  .mem_limit = 90, .mount = "/parsa" };
	char path[64];
	struct fs_path p;

	snprintf(path, sizeof path, "/jobs/%lld/ctl", (long long)id);
	ok(fs_match(path, &p) == 0 && p.ops->truncate(&w->fs, &p, 0) == 0, "truncate of a job's ctl");
	ok(p.ops->truncate(&w->fs, &p, 7) == -1 && errno == EINVAL, "truncate of it to 7 bytes: EINVAL");
	is_int(p.ops->utimens(&w->fs, &p, tv), 0, "touch of a job's ctl");
	ok(fs_match("/jobs/99/ctl", &p) == 0 && p.ops->truncate(&w->fs, &p, 0) == -1 && errno == ENOENT,
	   "truncate of the ctl of a job that does not exist: ENOENT");
	ok(p.ops->utimens(&w->fs, &p, tv) == -1 && errno == ENOENT, "touch of it: ENOENT");

	engine_register_host(w->engine, &info, NULL);
	ok(fs_match("/hosts/h1/ctl", &p) == 0 && p.ops->truncate(&w->fs, &p, 0) == 0,
	   "truncate of a host's ctl");
	is_int(p.ops->utimens(&w->fs, &p, tv), 0, "touch of a host's ctl");
	ok(fs_match("/hosts/h2/ctl", &p) == 0 && p.ops->truncate(&w->fs, &p, 0) == -1 && errno == ENOENT,
	   "truncate of the ctl of a host that does not exist: ENOENT");
	ok(p.ops->utimens(&w->fs, &p, tv) == -1 && errno == ENOENT, "touch of it: ENOENT");
}

static void test_scheduler_gone(void)
{
	struct fs_ctx fs = { .uid = geteuid(), .gid = getegid() };
	struct fs_file *f;
	char *err = NULL;

	fs.link = sched_link_create("unix:/nonexistent/parsa-test/sched.sock", &err);
	f = ctl_at(&fs, 1, "job 1");
	is_int(say(f, "cancel\n"), -1, "with no scheduler the write fails");
	is_int(errno, ENOTCONN, "with ENOTCONN");
	f->ops->release(f);
	sched_link_destroy(fs.link);
	free(err);
}

int main(void)
{
	struct sched_world w;
	int64_t id;

	if (sched_world_start(&w, 1000) < 0)
		return 1;
	id = sched_world_submit(&w, "[stage a]\nrun = true\n");
	ok(id > 0, "a queued job (no host to run it)");
	test_commands(&w, id);
	test_nodes(&w, id);
	test_scheduler_gone();
	is_int(sched_world_stop(&w), 0, "nothing is left behind");
	return done_testing();
}
