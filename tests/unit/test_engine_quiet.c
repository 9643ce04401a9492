/* The engine's pass at rest and in bursts: admission of a spec, a queued job
 * nothing changes rests and wakes at any change, bursts of submissions start
 * together, and a job whose folders the volume refused waits for them (a
 * retry makes missing ones again). */
#include "engine_world.h"

TAP_STATE;

/* spec is taken from who as file (what), its status holds shown, it runs. */
static void accepted(struct world *w, const struct caller *who, const char *file, const char *spec,
		     const char *what, const char *shown)
{
	char *err = NULL, *text;
	int64_t id = 0;

	if (!ok(engine_submit(w->engine, who, file, NULL, spec, strlen(spec), &id, NULL, &err) == 0, "%s", what))
		diag("%s", err ? err : "?");
	free(err);
	text = job_text(w, id, 0);
	has(text, shown, "its status shows it as it should");
	free(text);
	wait_job(w, id, "a", 10000);
}

/* Whether the pass has let job id rest (job->quiet), waiting up to ms. */
static bool quiet_within(struct world *w, int64_t id, int ms)
{
	bool quiet = false;

	for (int waited = 0; !quiet && waited <= ms; waited += 10) {
		struct job *job;

		engine_test_hold(w->engine);
		job = model_job(engine_test_model(w->engine), id);
		quiet = job && job->quiet;
		engine_test_release(w->engine);
		if (!quiet)
			usleep(10 * 1000);
	}
	return quiet;
}

/* Issue 16: a queued job that nothing changes rests (the pass skips its
 * roll-up), and every change to it wakes it up again. */
static void test_quiet(struct world *w)
{
	const char *later = "[job]\nstart = +1h\n[stage a]\nrun = true\n[stage b]\nafter = a\nrun = true\n";
	const char *soon = "[job]\nstart = +2s\n[stage a]\nrun = true\n";
	int64_t id, dep, ids[4];
	int att[4];
	size_t nc, n = 0;
	char *text, spec[96];

	/* What earlier tests left queued runs to its end first (on a host
	 * that is up: its last heartbeat may have timed out meanwhile). */
	for (int round = 0; round < 20; round++) {
		host_up(w, "h1", 2, 1);
		n = work(w, "h1", ids, att, 4, &nc);
		for (size_t i = 0; i < n; i++)
			report(w, ids[i], att[i], REPORT_EXITED, 0, 0);
		if (n == 0)
			break;
	}
	id = submit(w, later, NULL);
	ok(quiet_within(w, id, 2000), "a job waiting for its start time rests after a pass");
	text = job_text(w, id, 0);
	has(text, "stage a: queued", "its first roll-up was made all the same");
	free(text);
	is_int(engine_ctl(w->engine, &w->me, id, "hold", NULL), 0, "hold");
	text = job_text(w, id, 0);
	has(text, "held: yes", "held");
	free(text);
	ok(quiet_within(w, id, 2000), "a held job rests too");
	is_int(engine_ctl(w->engine, &w->me, id, "release", NULL), 0, "release");
	is_int(engine_ctl(w->engine, &w->me, id, "priority 3", NULL), 0, "priority 3");
	ok(quiet_within(w, id, 2000), "and again after the changes");
	snprintf(spec, sizeof spec, "[job]\nafter = %lld\n[stage s]\nrun = x\n", (long long)id);
	dep = submit(w, spec, NULL);
	ok(dep > 0, "a job that waits for the resting one");
	usleep(300 * 1000);
	ok(!quiet_within(w, dep, 0), "a job waiting for another job is rolled up every pass");
	is_int(engine_ctl(w->engine, &w->me, id, "cancel", NULL), 0, "cancel of the resting job");
	is_str(wait_job(w, id, NULL, 2000), "cancelled", "the next pass cancels it");
	is_str(wait_job(w, id, "b", 100), "cancelled", "with its waiting stage");
	is_str(wait_job(w, dep, NULL, 2000), "failed", "and the job that waited for it fails");

	host_up(w, "h1", 2, 1);
	id = submit(w, soon, NULL);
	/* Two seconds: room for a slow (sanitized, loaded) machine to look
	 * before the start. */
	ok(quiet_within(w, id, 500), "a job starting in two seconds rests meanwhile");
	text = job_text(w, id, 0);
	has(text, "stage a: queued (0 running", "nothing is placed before its start");
	free(text);
	/* One long poll (2 s) may end just before the start time. */
	n = 0;
	for (int tries = 0; tries < 3 && n == 0; tries++) {
		host_up(w, "h1", 2, 1);
		n = work(w, "h1", ids, att, 4, &nc);
	}
	if (!ok(n == 1, "its instance is placed once the time has come")) {
		text = job_text(w, id, 1);
		diag("%s", text);
		free(text);
	}
	is_int(report(w, ids[0], att[0], REPORT_RUNNING, 0, 0), 0, "it runs");
	is_int(report(w, ids[0], att[0], REPORT_EXITED, 0, 0), 0, "it ends");
	is_str(wait_job(w, id, NULL, 2000), "succeeded", "and its end is rolled up");
}

/* Issue 15: names that could forge view lines, teams, limits at submission. */
static void test_admission(struct world *w)
{
	const char *ok_spec = "[stage a]\nrun = true\n";
	const char *team_spec = "[job]\nteam = not-my-team\n[stage a]\nrun = true\n";
	const char *big_spec = "[stage a]\ninstances = 100001\nrun = true\n";
	struct caller other = { .uid = 4242, .gid = getgid() };
	char *err = NULL;
	int64_t id = 0;

	errno = 0;
	is_int(engine_submit(w->engine, &w->me, "x\nstate: failed", NULL, ok_spec, strlen(ok_spec), &id, NULL, &err),
	       -1, "a file name with a newline is refused at the API's edge");
	is_int(errno, EINVAL, "EINVAL");
	has(err, "x\\nstate: failed: the file name holds a control character", "the name escaped in the reason");
	free(err);
	err = NULL;

	accepted(w, &w->me, "back\\slash.conf", ok_spec, "a backslash is a good file name",
		 "\nspec: back\\\\slash.conf\n");

	errno = 0;
	is_int(engine_submit(w->engine, &other, "t.conf", NULL, team_spec, strlen(team_spec), &id, NULL, &err), -1, "a team that is not the caller's is refused");
	is_int(errno, EACCES, "EACCES");
	has(err, "t.conf:2: team = not-my-team: 4242 may use the teams ", "with the spec's line and the user");
	free(err);
	err = NULL;
	accepted(w, &(struct caller){ .uid = 0, .gid = getgid() }, "t.conf", team_spec,
		 "root may name any team", "\nteam: not-my-team\n");

	errno = 0;
	is_int(engine_submit(w->engine, &other, "big.conf", NULL, big_spec, strlen(big_spec), &id, NULL, &err), -1, "more instances than the default instances_per_job");
	is_int(errno, EDQUOT, "EDQUOT");
	has(err, "more than instances_per_job = 100000 (the built-in default", "names the limit and where");
	free(err);
}

/* Collects the assignments of work answers for up to tries times 2 s (an
 * answer may come at once, empty, after any pass) until want came. The
 * heartbeats list running_id's attempt when it is > 0: an instance reported
 * running that they leave out is lost after lost_after_ms (300 ms here). */
static size_t work_until(struct world *w, int64_t *ids, int *att, size_t want, int tries,
			 int64_t running_id, int running_att)
{
	int64_t until = time_now_ms() + tries * 2000LL;
	size_t n = 0, nc;

	while (n < want && time_now_ms() < until) {
		host_up(w, "h1", 8, 1);
		if (running_id > 0)
			confirm(w, running_id, running_att);
		n += work(w, "h1", ids + n, att + n, want - n, &nc);
	}
	return n;
}

/* Does the job's why say it waits for a burst's end? */
static bool burst_waits(struct world *w, int64_t id)
{
	char *why = job_text(w, id, 1);
	bool waits = why && strstr(why, "\nburst: ");

	free(why);
	return waits;
}

/* A burst of submissions is placed at its end; a lone submission at once.
 * The burst's times are widened (a second between submissions begins one,
 * 1.5 s without one ends it) so that a slow sanitized run is still inside. */
static void test_burst(struct world *w)
{
	const char *spec = "[stage a]\nrun = true\n";
	int64_t id[3], ids[8];
	int att[8];
	char *text;
	size_t n;

	world_stop(w);
	w->burst = (struct engine_config){ .burst_gap_ms = 1000, .burst_quiet_ms = 1500,
					   .burst_max_ms = 4000 };
	world_start(w);
	n = work_until(w, ids, att, 8, 1, 0, 0);
	for (size_t i = 0; i < n; i++)
		report(w, ids[i], att[i], REPORT_EXITED, 0, 0);
	is_int((int)engine_bursts(w->engine), 0, "no burst yet");
	for (int i = 0; i < 3; i++)
		id[i] = submit(w, spec, NULL);
	ok(!burst_waits(w, id[0]), "the first of three quick submissions is placed at once");
	ok(burst_waits(w, id[1]) && burst_waits(w, id[2]), "the next two wait for the burst's end");
	text = job_text(w, id[2], 1);
	has(text, "placed when the burst ends (1.5 s without a new job, at most 4 s)",
	    "why gives the burst's configured times");
	free(text);
	is_int((int)engine_bursts(w->engine), 1, "one burst");
	n = work_until(w, ids, att, 1, 1, 0, 0);
	ok(n == 1 && ids[0] > 0, "the first is assigned");
	ok(burst_waits(w, id[2]), "while the others still wait");
	/* Started: the next answers do not send it again. */
	report(w, ids[0], att[0], REPORT_RUNNING, 0, 0);
	n += work_until(w, ids + 1, att + 1, 2, 4, ids[0], att[0]);
	is_int((int)n, 3, "all three assigned once the burst is over");
	ok(!burst_waits(w, id[1]) && !burst_waits(w, id[2]), "and none waits any more");
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			report(w, ids[i], att[i], REPORT_RUNNING, 0, 0);
		report(w, ids[i], att[i], REPORT_EXITED, 0, 0);
	}
	for (int i = 0; i < 3; i++)
		is_str(wait_job(w, id[i], NULL, 2000), "succeeded", "job %d of the burst succeeded", i);

	/* defer_bursts = no */
	world_stop(w);
	w->burst.start_bursts_at_once = true;
	world_start(w);
	for (int i = 0; i < 3; i++)
		id[i] = submit(w, spec, NULL);
	ok(!burst_waits(w, id[1]) && !burst_waits(w, id[2]), "defer_bursts = no: nothing waits");
	is_int((int)engine_bursts(w->engine), 0, "and there is no burst");
	n = work_until(w, ids, att, 3, 3, 0, 0);
	is_int((int)n, 3, "all three assigned");
	for (size_t i = 0; i < n; i++)
		report(w, ids[i], att[i], REPORT_EXITED, 0, 0);
	world_stop(w);
	w->burst = (struct engine_config){ 0 };
	world_start(w);
}

/* Up to want distinct assignments (an unconfirmed one comes again), each
 * reported running at once; within tries times 2 s. */
static size_t start_distinct(struct world *w, int64_t *ids, int *att, size_t want, int tries)
{
	int64_t until = time_now_ms() + tries * 2000LL;
	size_t n = 0, got, nc;
	int64_t one[4];
	int one_att[4];

	while (n < want && time_now_ms() < until) {
		host_up(w, "h1", 8, 1);
		got = work(w, "h1", one, one_att, 4, &nc);
		for (size_t i = 0; i < got && n < want; i++) {
			bool seen = false;

			for (size_t k = 0; k < n; k++)
				seen |= ids[k] == one[i];
			if (seen)
				continue;
			report(w, one[i], one_att[i], REPORT_RUNNING, 0, 0);
			ids[n] = one[i];
			att[n++] = one_att[i];
		}
	}
	return n;
}

static bool is_dir(const char *vol, int64_t id, const char *stage)
{
	char *path = xasprintf("%s/jobs/%lld/out/%s", vol, (long long)id, stage);
	struct stat st;
	bool yes = stat(path, &st) == 0 && S_ISDIR(st.st_mode);

	free(path);
	return yes;
}

/* Folders pending: a job taken while the volume fails (a fault backend whose
 * outage a file switches on and off) waits for its folders, why says which
 * and why, nothing of it starts, also after a restart in the outage; once
 * the volume is back the storage thread makes them, the events say so and
 * the job runs. A retry makes a removed out/<stage> again before it runs. */
static void test_folders_wait(struct world *w)
{
	const char *spec = "[stage t]\nrun = true\n";
	char *down = xasprintf("%s/down", w->dir), *vol = w->vol, *err = NULL, *text, *want;
	int64_t id, id2, ids[4], *left;
	int att[4], fd;
	size_t n, nc, nleft;

	/* What earlier tests left unfinished would start with these. */
	engine_test_hold(w->engine);
	nleft = model_nactive(engine_test_model(w->engine));
	left = xcalloc(nleft ? nleft : 1, sizeof *left);
	for (size_t j = 0; j < nleft; j++)
		left[j] = model_active_at(engine_test_model(w->engine), j)->id;
	engine_test_release(w->engine);
	for (size_t j = 0; j < nleft; j++)
		engine_ctl(w->engine, &w->me, left[j], "cancel", NULL);
	free(left);
	world_stop(w);
	w->vol = xasprintf("fault:eio=all,while=%s:%s", down, vol);
	fd = open(down, O_WRONLY | O_CREAT, 0644);
	if (fd >= 0)
		close(fd);
	world_start(w);
	host_up(w, "h1", 8, 1);
	id = submit(w, spec, &err);
	ok(id > 0, "a job is taken while the volume fails (%s)", err ? err : "taken");
	free(err);
	err = NULL;
	text = job_text(w, id, 1);
	want = xasprintf("waiting for the storage volume: jobs/%lld/out/t not made yet (last error: "
			 "Input/output error)", (long long)id);
	has(text, want, "why says which folder waits, and why");
	free(text);
	free(want);
	text = job_text(w, id, 0);
	has(text, "folders: waiting for the storage volume: jobs/", "status says it too");
	free(text);
	n = work(w, "h1", ids, att, 4, &nc);
	is_int((int)n, 0, "nothing of it starts while its folders are missing");

	/* A restart in the outage: the start finds them missing again. */
	world_stop(w);
	world_start(w);
	host_up(w, "h1", 8, 1);
	id2 = submit(w, spec, NULL);
	ok(id2 > id, "another is taken after the restart");
	text = job_text(w, id, 1);
	has(text, "waiting for the storage volume: jobs/", "after the restart the first still waits");
	free(text);
	n = work(w, "h1", ids, att, 4, &nc);
	is_int((int)n, 0, "nothing starts after the restart either");
	ok(!is_dir(vol, id, "t") && !is_dir(vol, id2, "t"), "no folder was made");

	unlink(down);
	n = start_distinct(w, ids, att, 2, 10);
	is_int((int)n, 2, "the volume back: both jobs start");
	if (!ok(is_dir(vol, id, "t") && is_dir(vol, id2, "t"), "their out/t were made first"))
		diag("started %lld %lld (jobs %lld %lld); %d %d", (long long)ids[0], (long long)ids[1],
		     (long long)id, (long long)id2, is_dir(vol, id, "t"), is_dir(vol, id2, "t"));
	text = events_text(w, id);
	has(text, "waiting for the storage volume: jobs/", "the events say it waited");
	has(text, "the storage volume is back: its folders are made (out/t)", "and when they were made");
	free(text);
	text = job_text(w, id, 1);
	ok(text && !strstr(text, "waiting for the storage volume"), "why no longer says it waits");
	free(text);
	for (size_t i = 0; i < n; i++)
		report(w, ids[i], att[i], REPORT_EXITED, 0, 0);
	is_str(wait_job(w, id, NULL, 5000), "succeeded", "the first succeeds");
	is_str(wait_job(w, id2, NULL, 5000), "succeeded", "the second too");

	/* retry after rm -rf out/t of a failed job. */
	id = submit(w, "[stage t]\nrun = false\n", NULL);
	n = start_distinct(w, ids, att, 1, 5);
	is_int((int)n, 1, "a job that will fail starts");
	if (n == 1)
		report(w, ids[0], att[0], REPORT_EXITED, 1, 0);
	is_str(wait_job(w, id, NULL, 5000), "failed", "and fails");
	{
		char *cmd = xasprintf("rm -rf '%s/jobs/%lld/out/t'", vol, (long long)id);

		ok(system(cmd) == 0 && !is_dir(vol, id, "t"), "its out/t is removed");
		free(cmd);
	}
	is_int(engine_ctl(w->engine, &w->me, id, "retry", NULL), 0, "retry");
	n = start_distinct(w, ids, att, 1, 5);
	is_int((int)n, 1, "it runs again");
	ok(is_dir(vol, id, "t"), "with its out/t made again first");
	text = events_text(w, id);
	has(text, "missing folders made again: out/t", "the events say so");
	free(text);
	if (n == 1)
		report(w, ids[0], att[0], REPORT_EXITED, 0, 0);
	is_str(wait_job(w, id, NULL, 5000), "succeeded", "after the retry it succeeds");

	/* A foreach stage whose input cannot be listed in an outage waits and
	 * is listed once the volume is back, instead of failing. */
	id = submit(w, "[stage a]\nrun = x\n[stage b]\nafter = a\nforeach = a/*\nrun = y\n", NULL);
	n = start_distinct(w, ids, att, 1, 5);
	is_int((int)n, 1, "stage a of a foreach job starts");
	{
		char *item = xasprintf("%s/jobs/%lld/out/a/x1", vol, (long long)id);

		fd = open(item, O_WRONLY | O_CREAT, 0644);
		if (fd >= 0)
			close(fd);
		free(item);
	}
	fd = open(down, O_WRONLY | O_CREAT, 0644);
	if (fd >= 0)
		close(fd);
	if (n == 1)
		report(w, ids[0], att[0], REPORT_EXITED, 0, 0);
	n = start_distinct(w, ids, att, 1, 1);
	is_int((int)n, 0, "in the outage stage b does not start");
	text = job_text(w, id, 0);
	ok(text && !strstr(text, "state: failed"), "and the job has not failed");
	free(text);
	text = events_text(w, id);
	has(text, "stage b: waiting for the storage volume to list its input", "the events say it waits");
	free(text);
	unlink(down);
	n = start_distinct(w, ids, att, 1, 10);
	is_int((int)n, 1, "the volume back: stage b is listed and its instance starts");
	if (n == 1)
		report(w, ids[0], att[0], REPORT_EXITED, 0, 0);
	is_str(wait_job(w, id, NULL, 5000), "succeeded", "the foreach job succeeds");

	world_stop(w);
	free(w->vol);
	w->vol = vol;
	world_start(w);
	host_up(w, "h1", 2, 1);
	free(down);
}

int main(void)
{
	struct world w = { 0 };

	if (world_begin(&w, "/tmp/parsa-test-engine-quiet.XXXXXX") < 0)
		return 1;
	test_admission(&w);
	test_quiet(&w);
	test_burst(&w);
	test_folders_wait(&w);
	world_stop(&w);
	world_remove(&w);
	return done_testing();
}
