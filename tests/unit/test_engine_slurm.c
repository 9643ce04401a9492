/* A Slurm host as the scheduler keeps and shows it (sched/engine/engine_runners.c,
 * sched/views/views_exec.c), through the real engine: the facts of a runner's
 * heartbeat in hosts/<h>/status, gone when a heartbeat has none; each
 * instance's Slurm job id and pending reason from heartbeats, in its status
 * and grouped in `why`; the job id of the start report; the reason gone
 * once it runs; a local host's views unchanged. */
#include "sched_world.h"
#include "placement.h"
#include "proto.h"
#include "tap.h"
#include "views.h"

TAP_STATE;

/* ok() that text contains needle (or, with want false, does not). */
static void has(const char *text, const char *needle, bool want, const char *what)
{
	if (!ok(text && (strstr(text, needle) != NULL) == want, "%s", what))
		diag("%s'%s' in:\n%s", want ? "no " : "", needle, text ? text : "(null)");
}

static void host(struct sched_world *w, const char *name, const struct heartbeat_executor *x,
		 const struct heartbeat_entry *entries, size_t n)
{
	struct heartbeat hb = { .cpu_pct = 1, .mem_pct = 1, .scratch_free = -1, .parsa_cpu_pct = -1,
				.outside_cpu_pct = -1, .parsa_mem_pct = -1, .outside_mem_pct = -1,
				.outside_cores = -1, .outside_mem = -1, .instances = entries, .ninstances = n };

	if (x)
		hb.executor = *x;
	ok(engine_heartbeat(w->engine, name, &hb, NULL) == 0, "heartbeat of %s", name);
}

static char *instance_text(struct sched_world *w, int64_t job, int index)
{
	char *text = NULL;

	engine_instance_views(w->engine, job, "a", index, &text, NULL, NULL);
	return text;
}

static char *why_text(struct sched_world *w, int64_t job)
{
	return engine_job_text(w->engine, job, JOB_VIEW_WHY, NULL);
}

int main(void)
{
	struct sched_world w;
	struct host_info s1 = { .name = "s1", .cpus = 4, .mem = 1ULL << 30, .cpu_limit = 99, .mem_limit = 100,
				.mount = "/parsa" };
	struct host_info h1 = s1;
	struct heartbeat_executor x = { .kind = "slurm", .partition = "debug", .pending = 3, .running = 0,
					.last_poll_ms = time_now_ms() - 1500, .cpus_up = 8, .cpus_outside = 2 };
	struct heartbeat_entry e[3] = { { 0 } };
	struct report r = { .kind = REPORT_RUNNING, .slurm_job = "10", .usage = INSTANCE_USAGE_UNKNOWN };
	json_t *work;
	int64_t job;
	char *text;

	if (sched_world_start(&w, 1000) < 0)
		return 1;
	h1.name = "h1";
	ok(engine_register_host(w.engine, &s1, NULL) == 0 && engine_register_host(w.engine, &h1, NULL) == 0,
	   "two hosts registered");
	host(&w, "s1", &x, NULL, 0);
	host(&w, "h1", NULL, NULL, 0);
	text = engine_host_status(w.engine, "s1");
	has(text, "executor: slurm\nslurm partition: debug\nslurm jobs: 3 pending, 0 running\n"
		  "slurm cpus: 8 up, 2 held by other users' jobs\nslurm last poll: 1.", true,
	    "hosts/s1/status: the Slurm facts of its heartbeat");
	free(text);
	text = engine_host_status(w.engine, "h1");
	has(text, "executor:", false, "hosts/h1/status: a local host has none");
	has(text, "slurm", false, "not a word of Slurm");
	free(text);

	job = sched_world_submit(&w, "[stage a]\nhosts = s1\ninstances = 3\nrun = true\n");
	work = engine_work(w.engine, "s1", 3000, NULL);
	ok(json_array_size(json_object_get(work, "start")) == 3, "three assignments for s1");
	for (size_t i = 0; i < 3; i++) {
		json_t *a = json_array_get(json_object_get(work, "start"), i);

		e[i].id = json_integer_value(json_object_get(a, "id"));
		e[i].attempt = (int)json_integer_value(json_object_get(a, "attempt"));
		e[i].usage = INSTANCE_USAGE_UNKNOWN;
		e[i].slurm_job = i == 0 ? "10" : i == 1 ? "11" : "12_3";
		e[i].slurm_reason = i == 2 ? "Resources" : "Priority";
	}
	host(&w, "s1", &x, e, 3);
	text = why_text(&w, job);
	has(text, "  2 instances wait in Slurm on s1: Priority (Slurm's reason)\n"
		  "  1 instance waits in Slurm on s1: Resources (Slurm's reason)\n", true,
	    "why: the instances waiting in Slurm, by reason");
	free(text);
	text = instance_text(&w, job, 0);
	has(text, "host: s1\nslurm job: 10\nslurm reason: Priority\n", true, "an instance's job id and reason");
	has(text, "state: assigned\n", true, "assigned while it waits in Slurm");
	free(text);
	text = instance_text(&w, job, 2);
	has(text, "slurm job: 12_3\nslurm reason: Resources\n", true, "an array task's id");
	free(text);

	/* The first runs: its start report carries its id; no reason any more. */
	r.attempt = e[0].attempt;
	ok(engine_report(w.engine, e[0].id, &r, NULL) == 0, "instance 0 reported running");
	text = instance_text(&w, job, 0);
	has(text, "slurm job: 10\n", true, "a running instance keeps its job id");
	has(text, "slurm reason", false, "and has no reason");
	free(text);
	e[0].slurm_reason = NULL;
	host(&w, "s1", &x, e, 3);
	text = why_text(&w, job);
	has(text, "  1 instance waits in Slurm on s1: Priority (Slurm's reason)\n", true, "why: one less");
	free(text);

	host(&w, "s1", NULL, e, 3);
	text = engine_host_status(w.engine, "s1");
	has(text, "executor:", false, "a heartbeat without facts: a local host again");
	free(text);
	json_decref(work);
	is_int(sched_world_stop(&w), 0, "nothing is left behind");
	return done_testing();
}
