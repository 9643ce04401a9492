/* Finished jobs leave memory and come back (sched/engine/engine_history.c,
 * sched/store/store_history.c): a job that ended longer ago than keep_finished is
 * no longer in the model, every view of it reads the same from the store
 * (outside the engine's lock, without bringing it back), commands and the
 * listing still find it, a restart loads only what is
 * resident (the next id still comes after every row), and record retention
 * deletes the records of jobs older than record_retention. Time moves
 * through a clock file (lib/clock.h). */
#include "api_answers.h"
#include "api_paths.h"
#include "clock.h"
#include "sched_world.h"
#include "tap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TAP_STATE;

static void set_clock(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fprintf(f, "%s\n", text);
		fclose(f);
	}
}

static char *get(struct sched_world *w, const char *path)
{
	struct fs_identity me = { .uid = geteuid(), .gid = getegid() };
	size_t len;

	return sched_link_get_text(w->fs.link, &me, path, false, &len);
}

/* get() of route's path for ref (lib/api_paths.h). */
static char *get_route(struct sched_world *w, enum api_route route, const struct api_ref *ref)
{
	char *path = api_path(route, ref), *text = get(w, path);

	free(path);
	return text;
}

static bool resident(struct sched_world *w, int64_t id)
{
	bool in;

	engine_test_hold(w->engine);
	in = model_job(w->model, id) != NULL;
	engine_test_release(w->engine);
	return in;
}

/* Up to 10 s for job id's status to hold text. */
static bool wait_status(struct sched_world *w, int64_t id, const char *text)
{
	for (int i = 0; i < 100; i++) {
		char *s = get_route(w, API_JOB_STATUS, &(struct api_ref){ .id = id });
		bool found = s && strstr(s, text);

		free(s);
		if (found)
			return true;
		usleep(100000);
	}
	return false;
}

/* Up to 10 s for job id to leave memory (or, gone = false, to be in it). */
static bool wait_resident(struct sched_world *w, int64_t id, bool want)
{
	for (int i = 0; i < 100; i++) {
		if (resident(w, id) == want)
			return true;
		usleep(100000);
	}
	return false;
}

static int64_t submit(struct sched_world *w, const char *spec)
{
	struct caller me = { .uid = geteuid(), .gid = getegid() };
	int64_t id = 0;
	char *err = NULL;

	if (engine_submit(w->engine, &me, "h.conf", NULL, spec, strlen(spec), &id, NULL, &err) < 0)
		diag("submit: %s", err);
	free(err);
	return id;
}

int main(void)
{
	struct sched_world w;
	struct engine_config cfg = { .keep_finished_ms = 60000, .record_retention_ms = 48LL * 3600000 };
	struct caller me = { .uid = geteuid(), .gid = getegid() };
	char clock_path[] = "/tmp/parsa-test-history-clock.XXXXXX";
	const char *views[] = { "status", "", "events", "spec", "why",
		"stages/s/status", "stages/s/instances/0/status" };
	const enum api_route view_routes[] = { API_JOB_STATUS, API_JOB, API_JOB_EVENTS, API_JOB_SPEC,
		API_JOB_WHY, API_STAGE_STATUS, API_INSTANCE_STATUS };
	struct api_owner *owners = NULL;
	size_t nowners = 0;
	char *before[7] = { 0 }, *after, *err = NULL, *path, *list;
	int64_t a, b, state_id;
	int fd = mkstemp(clock_path);

	if (fd >= 0)
		close(fd);
	set_clock(clock_path, "+0s");
	cfg.clock = clock_create(clock_path);
	if (sched_world_start_with(&w, 1000, &cfg) < 0) {
		ok(0, "a scheduler for the test");
		return done_testing();
	}
	a = submit(&w, "[job]\nname = old\n[stage s]\nrun = true\n");
	b = submit(&w, "[stage s]\nrun = true\n");
	ok(a > 0 && b == a + 1, "two jobs (%lld, %lld)", (long long)a, (long long)b);
	ok(engine_ctl(w.engine, &me, a, "cancel", &err) == 0, "cancel the first (%s)", err ? err : "ok");
	ok(wait_status(&w, a, "state: cancelled"), "it ends");
	for (size_t i = 0; i < 7; i++)
		before[i] = get_route(&w, view_routes[i], &(struct api_ref){ .id = a, .name = "s" });
	ok(resident(&w, a), "within keep_finished it stays in memory");

	set_clock(clock_path, "+2h");
	ok(wait_resident(&w, a, false), "past keep_finished it leaves memory");
	ok(resident(&w, b), "the unfinished job stays");
	for (size_t i = 0; i < 7; i++) {
		after = get_route(&w, view_routes[i], &(struct api_ref){ .id = a, .name = "s" });
		ok(before[i] && after && strcmp(before[i], after) == 0, "%s reads the same from the store",
		   *views[i] ? views[i] : "the job's JSON");
		if (!before[i] || !after || strcmp(before[i], after) != 0)
			diag("before: %s\n# after: %s", before[i] ? before[i] : "?", after ? after : "?");
		free(after);
	}
	ok(!resident(&w, a), "views read it outside the engine: it does not come back into memory");
	{
		const char *state = "?";
		int done = 0, rc;

		rc = engine_wait(w.engine, a, "s", 1000, &done, &state, &err);
		ok(rc == 0 && done && strcmp(state, "cancelled") == 0 && !resident(&w, a),
		   "waiting for it answers at once from the store (%s)", state);
		rc = engine_wait(w.engine, a, "nope", 1000, &done, &state, &err);
		ok(rc < 0 && errno == ENOENT && err && strstr(err, "has no stage 'nope'"),
		   "a stage it lacks is named (%s)", err ? err : "?");
		free(err);
		err = NULL;
	}
	path = api_path_owners();
	list = get(&w, path);
	free(path);
	ok(list && api_read_owners(list, strlen(list), &owners, &nowners, NULL) == 0 && nowners &&
	   owners[0].id == a && owners[0].uid == geteuid(), "jobs/ still lists it (%s)", list ? list : "?");
	free(owners);
	free(list);
	ok(engine_ctl(w.engine, &me, a, "retry", &err) == 0, "a command reaches it (retry: %s)",
	   err ? err : "ok");
	ok(wait_status(&w, a, "state: queued") || wait_status(&w, a, "state: running"),
	   "retried, it is live again");
	ok(engine_ctl(w.engine, &me, a, "cancel", &err) == 0 && wait_status(&w, a, "state: cancelled"),
	   "and ends again");
	/* Out of memory again: its views are read anew, not the copy read
	 * before the retry (the history reader's). */
	set_clock(clock_path, "+3h");
	ok(wait_resident(&w, a, false), "it leaves memory again");
	after = get_route(&w, API_JOB_EVENTS, &(struct api_ref){ .id = a });
	ok(after && before[2] && strlen(after) > strlen(before[2]) && strstr(after, before[2]) == after,
	   "its events read from the store have the retry's (%zu bytes, %zu before)",
	   after ? strlen(after) : 0, before[2] ? strlen(before[2]) : 0);
	free(after);

	/* Record retention: over two days on, the cancelled job's records go. */
	state_id = a;
	set_clock(clock_path, "+60h");
	/* By the counts of every job, which the store has. */
	for (int i = 0; i < 150; i++) {
		bool gone;

		after = get_route(&w, API_STATUS, NULL);
		gone = after && strstr(after, " 0 cancelled");
		free(after);
		if (gone)
			break;
		usleep(100000);
	}
	after = get_route(&w, API_JOB_STATUS, &(struct api_ref){ .id = state_id });
	ok(!after && errno == ENOENT, "past record_retention its records are deleted");
	if (after) {
		char *st = get_route(&w, API_STATUS, NULL);

		diag("%s\n# resident: %d", st ? st : "?", resident(&w, state_id));
		free(st);
	}
	free(after);
	ok(resident(&w, b), "the unfinished job is untouched");
	ok(submit(&w, "[stage s]\nrun = true\n") == b + 1, "ids go on after the deleted ones");

	for (size_t i = 0; i < 7; i++)
		free(before[i]);
	free(err);
	ok(sched_world_stop(&w) == 0, "stopped, nothing left behind");
	clock_destroy(cfg.clock);
	unlink(clock_path);
	return done_testing();
}
