/* jobs/<id>/ctl (fs/jobs_dir.c) against a real scheduler in this process: the
 * node is a file 0644 of the job's owner (group-writable by the admin group
 * when there is one); opening it reaches that job, whose commands a read
 * shows as the scheduler's table has them (lib/ctl_commands.h), and a write of
 * each kind of command acts on the job; a job that does not exist is ENOENT.
 * The same for hosts/<h>/ctl's help (fs/hosts_dir.c). The lines of a write,
 * the refusals and their errnos are test_ctl_file's. */
#include "ctl_file.h"
#include "sched_world.h"
#include "tap.h"

#include <fcntl.h>

TAP_STATE;

/* The text a read of path's ctl shows; "" when it cannot be opened. */
static char *read_ctl(struct sched_world *w, const char *path)
{
	static char text[1024];
	struct fs_file *f = NULL;
	struct fs_path p;
	ssize_t n = -1;

	text[0] = '\0';
	if (fs_match(path, &p) == 0 && p.ops->open(&w->fs, &p, O_RDONLY, &f) == 0) {
		n = f->ops->read(f, text, sizeof text - 1, 0);
		f->ops->release(f);
	}
	text[n > 0 ? n : 0] = '\0';
	return text;
}

/* Write command to path's ctl as `echo command > ctl` does: 0 or -1 with errno. */
static int write_ctl(struct sched_world *w, const char *path, const char *command)
{
	struct fs_file *f = NULL;
	struct fs_path p;
	ssize_t n;

	if (fs_match(path, &p) < 0 || p.ops->open(&w->fs, &p, O_WRONLY | O_TRUNC, &f) < 0)
		return -1;
	n = f->ops->write(f, command, strlen(command), 0);
	f->ops->release(f);
	return n < 0 ? -1 : 0;
}

static struct job job_copy(struct sched_world *w, int64_t id)
{
	struct job copy;

	engine_test_hold(w->engine);
	copy = *model_job(w->model, id);
	engine_test_release(w->engine);
	return copy;
}

static void job_ctl(struct sched_world *w, int64_t id)
{
	char path[64], *help = ctl_help(&ctl_job_table);
	struct fs_path p;
	struct stat st;

	snprintf(path, sizeof path, "/jobs/%lld/ctl", (long long)id);
	ok(fs_match(path, &p) == 0 && p.ops->getattr(&w->fs, &p, &st) == 0 && S_ISREG(st.st_mode) &&
	   (st.st_mode & 0777) == 0644 && st.st_uid == geteuid(), "a job's ctl is a file 0644 of its owner");
	w->fs.admin_set = true;
	w->fs.admin_gid = 4242;
	ok(p.ops->getattr(&w->fs, &p, &st) == 0 && st.st_gid == 4242 && (st.st_mode & 0777) == 0664,
	   "the admin group may write it");
	w->fs.admin_set = false;

	is_str(read_ctl(w, path), "commands: cancel | hold | release | retry | priority N | purge | keep"
	       " | unkeep\n", "reading it shows the job commands (as docs/filesystem.md does)");
	is_str(read_ctl(w, path), help, "which is the scheduler's table");
	is_int(write_ctl(w, path, "hold\n"), 0, "hold");
	ok(job_copy(w, id).held, "holds that job");
	is_int(write_ctl(w, path, "priority 7\n"), 0, "priority 7 (a command with its argument)");
	is_int(job_copy(w, id).priority, 7, "sets it");
	is_int(write_ctl(w, path, "release\n"), 0, "release");
	ok(!job_copy(w, id).held, "releases it");
	is_int(write_ctl(w, path, "drain\n"), -1, "a host's command");
	is_int(errno, EINVAL, "is EINVAL on a job");
	ok(strstr(read_ctl(w, path), "last refused: 'drain'") != NULL, "and the next read says so");
	is_int(write_ctl(w, path, "cancel\n"), 0, "cancel");
	is_int(job_copy(w, id).state, JOB_CANCELLED, "cancels it");

	snprintf(path, sizeof path, "/jobs/%lld/ctl", (long long)id + 100);
	ok(fs_match(path, &p) == 0 && p.ops->getattr(&w->fs, &p, &st) == -1 && errno == ENOENT,
	   "the ctl of a job that does not exist: ENOENT");
	{
		struct fs_file *f = NULL;

		ok(p.ops->open(&w->fs, &p, O_WRONLY, &f) == -1 && errno == ENOENT && !f,
		   "and it cannot be opened");
	}
	free(help);
}

static void host_ctl(struct sched_world *w)
{
	struct host_info info = { .name = "h1", .cpus = 1, .mem = 1ULL << 30, .cpu_limit = 90,
				  .mem_limit = 90, .mount = "/parsa" };
	char *help = ctl_help(&ctl_host_table);

	engine_register_host(w->engine, &info, NULL);
	is_str(read_ctl(w, "/hosts/h1/ctl"), "commands: drain | resume | remove\n",
	       "a host's ctl shows the host commands");
	is_str(read_ctl(w, "/hosts/h1/ctl"), help, "from the scheduler's table");
	free(help);
}

int main(void)
{
	struct sched_world w;
	int64_t id;

	if (sched_world_start(&w, 0) < 0)
		return 1;
	w.fs.ctl_notes = ctl_notes_create();
	id = sched_world_submit(&w, "[stage a]\nrun = true\n");
	ok(id > 0, "a queued job (no host to run it)");
	job_ctl(&w, id);
	host_ctl(&w);
	ctl_notes_destroy(w.fs.ctl_notes);
	w.fs.ctl_notes = NULL;
	is_int(sched_world_stop(&w), 0, "nothing is left behind");
	return done_testing();
}
