/* The path table of the mount: every kind of path lands on the right node
 * kind with the right captured components, and nothing else matches. */
#include "hosts_dir.h"
#include "jobs_dir.h"
#include "ops.h"
#include "out_dir.h"
#include "queue_dir.h"
#include "tap.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

TAP_STATE;

static void matches(const char *path, const struct node_ops *ops, const char *what)
{
	struct fs_path p;

	ok(fs_match(path, &p) == 0 && p.ops == ops, "%s is %s", path, what);
}

int main(void)
{
	struct fs_path p;

	matches("/status", &cluster_status_ops, "the cluster status");
	matches("/queue", &queue_root_ops, "queue/");
	matches("/queue/.clone", &queue_clone_ops, "the clone file");
	matches("/queue/lab.conf", &queue_entry_ops, "a queue entry");
	matches("/queue/lab.conf.rejected", &queue_entry_ops, "a queue entry");
	matches("/jobs", &jobs_root_ops, "jobs/");
	matches("/jobs/last", &jobs_last_ops, "jobs/last");
	matches("/jobs/42", &job_dir_ops, "a job");
	matches("/jobs/42/spec", &job_spec_ops, "the spec");
	matches("/jobs/42/status.json", &job_view_ops, "a view");
	matches("/jobs/42/events", &job_view_ops, "a view");
	matches("/jobs/42/wait", &job_wait_ops, "wait");
	matches("/jobs/42/ctl", &job_ctl_ops, "ctl");
	matches("/jobs/42/stages", &stages_dir_ops, "stages/");
	matches("/jobs/42/stages/warm", &stage_dir_ops, "a stage");
	matches("/jobs/42/stages/warm/log", &stage_log_ops, "a stage log");
	matches("/jobs/42/stages/warm/wait", &stage_wait_ops, "a stage wait");
	matches("/jobs/42/stages/warm/instances/3", &instance_dir_ops, "an instance");
	matches("/jobs/42/stages/warm/instances/3/log", &instance_log_ops, "an instance log");
	matches("/jobs/42/out", &out_dir.node, "out/");
	matches("/jobs/42/out/warm/a/b", &out_dir.node, "a file in out/");
	matches("/hosts/h1/status", &host_status_ops, "a host's status");

	ok(fs_match("/jobs/42/stages/warm/instances/3/log", &p) == 0, "instance log again");
	is_str(p.arg[0], "42", "first capture is the job");
	is_str(p.arg[1], "warm", "second is the stage");
	is_str(p.arg[2], "3", "third is the instance");
	is_str(p.name, "log", "name is the last component");
	ok(fs_match("/jobs/42/out/warm/a/b", &p) == 0, "deep out path");
	is_str(p.rest, "warm/a/b", "rest is everything below out/");
	is_str(p.arg[0], "42", "with the job id");
	ok(fs_match("/jobs/42/out", &p) == 0 && p.rest[0] == '\0', "out/ itself has an empty rest");
	ok(fs_match("/", &p) == 0 && p.name[0] == '\0', "the root matches");

	is_int(fs_match("/jobs/42/outx", &p), -1, "outx is not out");
	is_int(errno, ENOENT, "with ENOENT");
	is_int(fs_match("/jobs/42/stages/warm/nothing", &p), -1, "unknown stage file");
	is_int(fs_match("/nothing", &p), -1, "unknown top entry");
	is_int(fs_match("/queue/a/b", &p), -1, "no folders in queue/");
	is_int(fs_match("/hosts/h1/status/x", &p), -1, "nothing below a host's status");
	is_int(fs_match("relative", &p), -1, "a relative path");
	{
		char name[NAME_MAX + 16];

		memset(name, 'a', sizeof name);
		memcpy(name, "/jobs/", 6);
		name[sizeof name - 1] = '\0';
		is_int(fs_match(name, &p), -1, "a component longer than NAME_MAX matches nothing");
	}
	return done_testing();
}
