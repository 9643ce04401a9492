/* A stage's failure rules in the engine: on_failure (finish, stop, ignore),
 * max_failed and max_running, and a failure, cancel and restart together. */
#include "engine_world.h"

TAP_STATE;

/* The default: index 1 fails, the other three run to the end, then the stage
 * and the job fail, next never starts; retry reruns only index 1. */
static void test_finish(struct world *w)
{
	int64_t ids[8], id;
	int att[8];
	size_t n, nc;
	char *text;

	id = fail_one(w, "", ids, "finish");
	n = work(w, "h1", ids + 2, att + 2, 6, &nc);
	is_int(nc, 0, "finish: instance 0 is not cancelled");
	ok(n == 1 && index_of(w, ids[2]) == 2, "the queued instance 2 still starts");
	text = job_text(w, id, 0);
	has(text, "state: running", "the job runs on");
	has(text, "stage next: cancelled", "next will never start");
	free(text);
	text = job_text(w, id, 1);
	has(text, "  instance 1 failed (exit code 3), more than max_failed = 0: the others run to the end "
	    "(on_failure = finish), then the stage fails", "why says what comes");
	free(text);
	is_str(wait_job(w, id, NULL, 100), "not done", "the job does not end while the others run");
	run_to(w, ids[0], 1, 0);
	run_to(w, ids[2], 1, 0);
	is_int(run_stage(w, id, "s", -1), 1, "and instance 3 after them");
	is_str(wait_job(w, id, NULL, 2000), "failed", "then the job fails");
	text = job_text(w, id, 0);
	has(text, "reason: stage s failed: instance 1 failed (exit code 3)", "its reason names index 1");
	has(text, "stage s: failed (0 running, 3 done, 0 queued, 1 failed of 4)", "three succeeded");
	free(text);
	text = stage_text(w, id, "s");
	has(text, "failures: instance 1 failed (exit code 3)\n", "the stage's status names index 1");
	has(text, "on_failure: finish\nmax_failed: 0\nmax_running: none\n", "and its keys");
	free(text);
	text = events_text(w, id);
	has(text, "stage s will fail: 1 of 4 instances failed (max_failed = 0); the others run to the end "
	    "(on_failure = finish)", "events: what happens now");
	has(text, "stage next not started: stage s failed", "events: next never starts");
	has(text, "stage s failed: instance 1 failed (exit code 3)", "events: the stage's end");
	lacks(text, "cancelled on", "nothing was cancelled");
	free(text);

	is_int(engine_ctl(w->engine, &w->me, id, "retry", NULL), 0, "retry");
	text = events_text(w, id);
	has(text, "2 instances requeued", "retry requeues index 1 and next's instance, not the succeeded ones");
	free(text);
	is_int(run_stage(w, id, "s", -1), 1, "only index 1 runs again");
	is_int(run_stage(w, id, NULL, -1), 1, "then next");
	is_str(wait_job(w, id, NULL, 2000), "succeeded", "after retry: succeeded");
}

/* on_failure = stop: today's behaviour, the running ones are cancelled. */
static void test_stop(struct world *w)
{
	int64_t ids[8], id;
	int att[8];
	size_t nc;
	char *text;

	id = fail_one(w, "on_failure = stop\n", ids, "stop");
	work(w, "h1", ids + 2, att + 2, 6, &nc);
	is_int(nc, 1, "stop: instance 0 is cancelled at once");
	report(w, ids[0], 1, REPORT_EXITED, -1, 15);
	is_str(wait_job(w, id, NULL, 2000), "failed", "the job fails");
	text = job_text(w, id, 0);
	has(text, "reason: stage s failed: instance 1 failed (exit code 3)", "naming index 1");
	has(text, "stage s: failed (0 running, 0 done, 0 queued, 1 failed, 3 cancelled of 4)",
	    "the queued ones never started");
	free(text);
	text = events_text(w, id);
	has(text, "stage s instance 0 cancelled on h1 (killed by signal 15", "instance 0 was cancelled");
	lacks(text, "will fail", "no 'others run to the end'");
	free(text);
}

/* on_failure = ignore: counted, the stage succeeds, next runs; max_failed
 * caps it. */
static void test_ignore(struct world *w)
{
	int64_t id;
	char *text;

	id = submit_two(w, "on_failure = ignore\n");
	is_int(run_stage(w, id, "s", 1), 4, "ignore: all four ran");
	is_str(wait_job(w, id, "s", 2000), "succeeded", "the stage succeeds");
	text = job_text(w, id, 0);
	has(text, "stage s: succeeded, 1 of 4 failed\n", "with its failure counted");
	free(text);
	text = stage_text(w, id, "s");
	has(text, "failures: instance 1 failed (exit code 3)\n", "the stage's status names it");
	has(text, "max_failed: all\n", "ignore tolerates all");
	free(text);
	is_int(run_stage(w, id, NULL, -1), 1, "next runs");
	is_str(wait_job(w, id, NULL, 2000), "succeeded", "and the job succeeds");
	text = events_text(w, id);
	has(text, "stage s succeeded, 1 of 4 failed (on_failure = ignore): instance 1 failed (exit code 3)",
	    "events say so");
	free(text);
	is_int(engine_ctl(w->engine, &w->me, id, "retry", NULL), -1, "a job that succeeded is not retried");

	id = submit_two(w, "on_failure = ignore\nmax_failed = 0\n");
	is_int(run_stage(w, id, "s", 1), 4, "ignore, max_failed = 0: the others still run");
	is_str(wait_job(w, id, NULL, 2000), "failed", "one failure too many: the job fails");
	text = job_text(w, id, 0);
	has(text, "reason: stage s failed: instance 1 failed (exit code 3)", "naming index 1");
	has(text, "stage next: cancelled", "next never ran");
	free(text);

	id = submit_two(w, "on_failure = ignore\nmax_failed = 25%\n");
	is_int(run_stage(w, id, "s", 1), 4, "ignore, max_failed = 25%%: all ran");
	is_str(wait_job(w, id, "s", 2000), "succeeded", "one of four is 25%%: it succeeds");
	text = stage_text(w, id, "s");
	has(text, "max_failed: 25% (1 of 4)\n", "its status says how many it tolerates");
	free(text);
	run_stage(w, id, NULL, -1);
	is_str(wait_job(w, id, NULL, 2000), "succeeded", "the job succeeds");
}

/* max_running: at most N assigned or running at once. */
static void test_max_running(struct world *w)
{
	int64_t ids[8], id;
	int att[8];
	size_t n, nc;
	char *text;

	id = submit(w, "[stage s]\ninstances = 3\nmax_running = 1\nrun = x\n", NULL);
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 1, "max_running = 1: one starts on two free cpus");
	n = work(w, "h1", ids + 1, att + 1, 7, &nc);
	ok(n == 1 && ids[1] == ids[0], "an assigned one counts: only it is sent again");
	text = job_text(w, id, 1);
	has(text, "  max_running = 1: the next starts when one of those running ends", "why says so");
	lacks(text, "h1: fits", "rather than that the host fits");
	free(text);
	run_to(w, ids[0], 1, 0);
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 1, "once it ended, the next");
	run_to(w, ids[0], 1, 0);
	is_int(run_stage(w, id, NULL, -1), 1, "and the last");
	is_str(wait_job(w, id, NULL, 2000), "succeeded", "the job succeeds");
}

/* A cancel while a finish stage runs on stops everything; a restart keeps
 * a failing stage failing, and says so once. */
static void test_failure_cancel_restart(struct world *w)
{
	int64_t ids[8], id;
	int att[8];
	size_t n, nc;
	char *text;

	id = fail_one(w, "", ids, "cancel");
	n = work(w, "h1", ids + 2, att + 2, 6, &nc);
	ok(n == 1 && ids[2] == inst_id(w, id, 2), "instance 2 starts after the failure");
	report(w, ids[2], 1, REPORT_RUNNING, 0, 0);
	is_int(engine_ctl(w->engine, &w->me, id, "cancel", NULL), 0, "cancel while the others finish");
	work(w, "h1", ids + 3, att + 3, 5, &nc);
	is_int(nc, 2, "both running ones get a cancel");
	report(w, ids[0], 1, REPORT_EXITED, -1, 15);
	report(w, ids[2], 1, REPORT_EXITED, -1, 15);
	is_str(wait_job(w, id, NULL, 2000), "cancelled", "the job is cancelled");
	text = job_text(w, id, 0);
	has(text, "stage s: failed (0 running, 0 done, 0 queued, 1 failed, 3 cancelled of 4)",
	    "the queued one never started");
	free(text);

	id = fail_one(w, "", ids, "restart");
	wait_job(w, id, NULL, 200);
	world_stop(w);
	world_start(w);
	host_up(w, "h1", 2, 1);
	confirm(w, ids[0], 1);
	n = work(w, "h1", ids + 2, att + 2, 6, &nc);
	ok(n >= 1 && nc == 0, "after a restart the failing stage goes on");
	for (size_t i = 2; i < 2 + n; i++)
		run_to(w, ids[i], att[i], 0);
	report(w, ids[0], 1, REPORT_EXITED, 0, 0);
	run_stage(w, id, "s", -1);
	is_str(wait_job(w, id, NULL, 2000), "failed", "and fails at the end");
	text = job_text(w, id, 0);
	has(text, "reason: stage s failed: instance 1 failed (exit code 3)", "for index 1");
	has(text, "stage s: failed (0 running, 3 done, 0 queued, 1 failed of 4)", "the others succeeded");
	free(text);
	text = events_text(w, id);
	ok(text && strstr(text, "will fail") && !strstr(strstr(text, "will fail") + 1, "will fail"),
	   "'will fail' once");
	free(text);
}

int main(void)
{
	struct world w = { 0 };

	if (world_begin(&w, "/tmp/parsa-test-engine-failure.XXXXXX") < 0)
		return 1;
	test_finish(&w);
	test_stop(&w);
	test_ignore(&w);
	test_max_running(&w);
	test_failure_cancel_restart(&w);
	world_stop(&w);
	world_remove(&w);
	return done_testing();
}
