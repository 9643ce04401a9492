/* The HTTP contract (lib/api_paths.h, lib/api_answers.h): every route's path
 * built and matched back to the same route with the same segments (names
 * escaped, and decoded as the server's HTTP library decodes them), every
 * route served by the scheduler's table and nothing more, the files of
 * jobs/<id>/ naming routes that exist, and each answer's reader taking what
 * its writer (or the scheduler) writes and refusing a malformed one with
 * EPROTO and a sentence; each request read back as written. */
#include "api.h"
#include "api_answers.h"
#include "api_paths.h"
#include "api_requests.h"
#include "route.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TAP_STATE;

/* A literal answer and its length. */
#define LIT(text) text, strlen(text)

/* Percent-decoding in place, as libmicrohttpd hands the server its path. */
static void decode(char *s)
{
	char *out = s;

	for (; *s; s++) {
		unsigned int byte;

		if (*s == '%' && sscanf(s + 1, "%2x", &byte) == 1) {
			*out++ = (char)byte;
			s += 2;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

static void round_trip(void)
{
	const char *name = "warm up%&?=é";
	bool ok_all = true;

	for (int r = 0; r < API_ROUTE_COUNT; r++) {
		struct api_ref ref = { .id = 42, .name = name, .index = 3 };
		const char *pattern = api_route_pattern(r), *args[ROUTE_MAX_ARGS] = { 0 };
		char *path = api_path(r, &ref), buf[256];
		size_t stars = 0;
		bool known = false;
		int found;

		for (const char *p = pattern; *p; p++)
			stars += *p == '*';
		ok_all &= strchr(path, ' ') == NULL && strchr(path, '?') == NULL;
		decode(path);
		found = api_route_find(api_route_method(r), path, buf, sizeof buf, args, ROUTE_MAX_ARGS,
				       &known);
		if (found != r) {
			ok(0, "%s %s comes back as route %d, not %d", api_route_method(r), path, found, r);
			ok_all = false;
		}
		/* Each segment is the id, the name or the index it was made from. */
		for (size_t i = 0; i < stars; i++) {
			if (!args[i] || (strcmp(args[i], "42") != 0 && strcmp(args[i], name) != 0 &&
					 strcmp(args[i], "3") != 0)) {
				ok(0, "route %d's segment %zu is '%s'", r, i, args[i] ? args[i] : "(none)");
				ok_all = false;
			}
		}
		free(path);
	}
	ok(ok_all, "each of the %d routes is built and found again with its segments", API_ROUTE_COUNT);
	ok(api_path(API_ROUTE_COUNT, NULL) == NULL && api_route_method(API_ROUTE_COUNT) == NULL,
	   "past the table: nothing");
}

static void server_table(void)
{
	bool all = true;

	for (int r = 0; r < API_ROUTE_COUNT; r++) {
		if (!api_serves(r)) {
			ok(0, "the scheduler serves %s %s", api_route_method(r), api_route_pattern(r));
			all = false;
		}
	}
	ok(all, "the scheduler has a handler for every route of the contract");
	ok(!api_serves(API_ROUTE_COUNT) && !api_serves(-1), "and for nothing else");
}

/* path is the route's path for ref followed by query. */
static bool is_route_query(const char *path, enum api_route route, const struct api_ref *ref,
			   const char *query)
{
	char *base = api_path(route, ref);
	bool same = strncmp(path, base, strlen(base)) == 0 && strcmp(path + strlen(base), query) == 0;

	if (!same)
		diag("got %s, want %s%s", path, base, query);
	free(base);
	return same;
}

static void builders(void)
{
	char *p, buf[64];
	const char *args[2];
	bool known;

	p = api_path_wait(7, "a b", 500);
	ok(is_route_query(p, API_JOB_WAIT, &(struct api_ref){ .id = 7 }, "?timeout_ms=500&stage=a%20b"),
	   "a stage's wait, its name escaped");
	free(p);
	p = api_path_wait(7, NULL, 0);
	ok(is_route_query(p, API_JOB_WAIT, &(struct api_ref){ .id = 7 }, "?timeout_ms=0"), "a job's wait");
	free(p);
	p = api_path_work("n1", 1000);
	ok(is_route_query(p, API_HOST_WORK, &(struct api_ref){ .name = "n1" }, "?timeout_ms=1000"),
	   "a runner's poll");
	free(p);
	p = api_path_owners();
	ok(is_route_query(p, API_JOBS_LIST, NULL, "?view=owners&format=json"), "the mount's listing");
	free(p);
	p = api_path_usage("a&b", 5, "csv");
	ok(is_route_query(p, API_USAGE, NULL, "?by=a%26b&since_ms=5&format=csv"), "usage, values escaped");
	free(p);
	p = api_path(API_JOBS_LIST, NULL);
	is_int(api_route_find("DELETE", p, buf, sizeof buf, args, 2, &known), -1,
	       "a path with another method: none");
	ok(known, "... but the path is known (405)");
	free(p);
	is_int(api_route_find("GET", "/nothing", buf, sizeof buf, args, 2, &known), -1,
	       "an unknown path: none");
	ok(!known, "... and unknown (404)");
}

static void job_files(void)
{
	size_t n;
	const struct api_job_file *f = api_job_files(&n);
	bool good = n > 0;

	for (size_t i = 0; i < n; i++) {
		bool dir = f[i].kind == API_FILE_DIR;

		good &= api_job_file(f[i].name) == &f[i];
		good &= dir ? f[i].route == API_ROUTE_COUNT : f[i].route < API_ROUTE_COUNT;
		/* A file's route is about one job: its path is the job's id alone. */
		if (!dir) {
			char *p = api_path_id(f[i].route, 5), *job = api_path_id(API_JOB, 5);

			const char *rest = p + strlen(job);

			good &= strncmp(p, job, strlen(job)) == 0 &&
				(!*rest || (*rest == '/' && !strchr(rest + 1, '/')));
			good &= strcmp(api_route_method(f[i].route), f[i].kind == API_FILE_CTL ? "POST" : "GET") == 0;
			free(p);
			free(job);
		}
	}
	ok(good, "each of the %zu entries of jobs/<id>/ is found by name and names a route of one job", n);
	ok(api_job_file("status.json") && api_job_file("status.json")->route == API_JOB,
	   "status.json is the job as JSON");
	ok(api_job_file("nothing") == NULL, "an unknown name is none");
}

/* A reader's refusal: -1, EPROTO, a sentence. */
#define refused(call, what) do { \
		char *err_ = NULL; \
		int rc_, errno_; \
		errno = 0; \
		rc_ = (call); \
		errno_ = errno; \
		ok(rc_ < 0 && errno_ == EPROTO && err_ && *err_, "refused: %s (%s)", what, \
		   err_ ? err_ : "no message"); \
		free(err_); \
	} while (0)

/* What a writer of the scheduler writes, as text (j is released). */
static char *written(json_t *j)
{
	char *text = json_dumps(j, JSON_COMPACT);

	json_decref(j);
	return text;
}

static void answers(void)
{
	struct api_owner rows[] = { { 1, 1000, 100, 5 }, { 3, 0, 0, 4000000000000LL } };
	struct api_owner *back = NULL;
	struct api_host *hosts = NULL;
	struct api_schedule_owner *sched = NULL;
	struct api_job_meta job;
	struct api_stats stats;
	struct api_history_job *history = NULL;
	bool has_job = false;
	char *text = NULL, *state = NULL;
	size_t len = 0, n = 0;
	int64_t id = 0;
	bool done = false;
	FILE *f = open_memstream(&text, &len);

	api_owners_begin(f, API_OWNERS_JSON);
	for (size_t i = 0; i < ARRAY_LEN(rows); i++)
		api_owners_row(f, API_OWNERS_JSON, &rows[i], i == 0);
	api_owners_end(f, API_OWNERS_JSON);
	fclose(f);
	ok(api_read_owners(text, len, &back, &n, NULL) == 0 && n == 2 &&
	   memcmp(back, rows, sizeof rows) == 0, "the owners read back as written (%s)", text);
	free(back);
	free(text);
	ok(api_owners_form("owners", "json") == API_OWNERS_JSON && api_owners_form("owners", NULL) ==
	   API_OWNERS_LINES && api_owners_form(NULL, "json") == API_OWNERS_NONE, "the forms asked for");
	f = open_memstream(&text, &len);
	api_owners_row(f, API_OWNERS_LINES, &rows[0], true);
	fclose(f);
	is_str(text, "1 1000 100 5\n", "0.1.0's mounts still get their lines without format=json");
	free(text);
	ok(api_read_owners(LIT("{\"owners\":[]}"), &back, &n, NULL) == 0 && n == 0 && back,
	   "no jobs: an empty list");
	free(back);
	refused(api_read_owners(LIT("1 1000 100 5\n"), &back, &n, &err_), "the old text lines");
	refused(api_read_owners(LIT("{\"owners\":[[1,2,3]]}"), &back, &n, &err_), "a short row");
	refused(api_read_owners(LIT("{\"owners\":[[0,2,3,4]]}"), &back, &n, &err_), "job id 0");

	text = written(api_id_json(17));
	ok(api_read_id(text, strlen(text), &id, NULL) == 0 && id == 17, "an id (%s)", text);
	free(text);
	refused(api_read_id(LIT("{\"id\":\"17\"}"), &id, &err_), "an id that is text");
	refused(api_read_id(LIT("<html>"), &id, &err_), "a proxy's page");

	text = written(api_wait_json(true, "failed"));
	ok(api_read_wait(text, strlen(text), &done, &state, NULL) == 0 && done &&
	   strcmp(state, "failed") == 0, "a wait's answer (%s)", text);
	free(text);
	free(state);
	refused(api_read_wait(LIT("{\"done\":1,\"state\":\"x\"}"), &done, &state, &err_), "done as a number");

	text = "{\"hosts\":[{\"name\":\"n1\",\"state\":\"up\",\"cpus\":8,\"mem\":1024,"
	       "\"reserved\":{\"cpus\":2,\"mem\":512},\"live\":{\"cpu_pct\":50.5,\"mem_pct\":1,\"load1\":0.5},"
	       "\"running\":[{},{}],\"last_heartbeat_ms\":99,\"scratch_free\":7}]}";
	ok(api_read_hosts(text, strlen(text), &hosts, &n, NULL) == 0 && n == 1 &&
	   strcmp(hosts[0].name, "n1") == 0 && hosts[0].cpus == 8 && hosts[0].reserved_mem == 512 &&
	   hosts[0].running == 2 && hosts[0].cpu_pct == 50.5 && hosts[0].last_heartbeat_ms == 99,
	   "a host");
	api_hosts_free(hosts, n);
	refused(api_read_hosts(LIT("{\"hosts\":[{\"name\":\"n1\"}]}"), &hosts, &n, &err_), "a host without its numbers");
	refused(api_read_hosts(LIT("[]"), &hosts, &n, &err_), "a list where an object belongs");

	text = "{\"id\":9,\"job\":{\"uid\":1,\"gid\":2,\"submitted_ms\":3,\"stages\":"
	       "[{\"name\":\"a\",\"instances\":4}],\"state\":\"queued\"}}";
	ok(api_read_submitted(text, strlen(text), &id, &job, &has_job, NULL) == 0 && id == 9 && has_job &&
	   job.uid == 1 && job.nstages == 1 && strcmp(job.stages[0].name, "a") == 0 &&
	   job.stages[0].instances == 4, "a submission's answer with its job");
	api_job_meta_clear(&job);
	ok(api_read_submitted(LIT("{\"id\":9,\"job\":{}}"), &id, &job, &has_job, NULL) == 0 && !has_job,
	   "a job that does not read is no refusal of the id");
	refused(api_read_job(LIT("{\"uid\":1,\"gid\":2,\"submitted_ms\":3,\"stages\":[{\"name\":\"a\"}]}"),
			     &job, &err_), "a stage without its instances");
	text = written(api_check_json("no such command"));
	ok(api_read_check(text, strlen(text), &done, &state, NULL) == 0 && !done &&
	   strcmp(state, "no such command") == 0, "a refused check (%s)", text);
	free(text);
	free(state);
	text = written(api_check_json(NULL));
	ok(api_read_check(text, strlen(text), &done, &state, NULL) == 0 && done && !state,
	   "a check that passed (%s)", text);
	free(text);
	refused(api_read_check(LIT("{}"), &done, &state, &err_), "a check without ok");
	ok(api_read_stats(LIT("{\"passes\":9,\"pass_ms\":[0.5,2],\"submitted\":3,\"submit_groups\":2}"), &stats,
			  NULL) == 0 && stats.passes == 9 && stats.npass_ms == 2 && stats.pass_ms[1] == 2 &&
	   stats.submit_groups == 2, "the scheduler's stats");
	api_stats_clear(&stats);
	refused(api_read_stats(LIT("{\"passes\":1,\"pass_ms\":[1,2]}"), &stats, &err_),
		"more passes listed than there were");

	text = "{\"total\":1,\"jobs\":[{\"id\":5,\"name\":\"a\",\"user\":\"u\",\"state\":\"running\","
	       "\"max_rss\":-1,\"stages\":[{\"counts\":{\"succeeded\":2,\"failed\":1,\"running\":3}},"
	       "{\"counts\":{\"queued\":4}}]}]}";
	ok(api_read_history(text, strlen(text), &history, &n, NULL) == 0 && n == 1 && history[0].id == 5 &&
	   strcmp(history[0].team, "") == 0 && history[0].max_rss == -1 && history[0].done == 3 &&
	   history[0].total == 10, "a job of the history: absent text is empty, done and total counted");
	api_history_free(history, n);
	refused(api_read_history(LIT("{\"jobs\":[{\"name\":\"a\"}]}"), &history, &n, &err_), "a job without its id");

	text = "{\"schedules\":[{\"name\":\"nightly\",\"uid\":1000,\"gid\":100,\"cron\":\"0 3 * * *\"}]}";
	ok(api_read_schedules(text, strlen(text), &sched, &n, NULL) == 0 && n == 1 &&
	   strcmp(sched[0].name, "nightly") == 0 && sched[0].uid == 1000, "a schedule's owner");
	api_schedules_free(sched, n);
	refused(api_read_schedules(LIT("{\"schedules\":[{\"name\":\"x\",\"uid\":-1,\"gid\":0}]}"), &sched, &n,
				   &err_), "a negative uid");
}

static void requests(void)
{
	struct api_submission s;
	json_t *body, *back;
	char *text, *err = NULL;
	bool bad = true;
	const char *command, *check;
	static const char spec[] = "[stage s]\nrun = true\n";

	body = api_submission_json("a.conf", spec, strlen(spec), "t-1", "/home/a", &bad);
	text = json_dumps(body, JSON_COMPACT);
	back = json_loads(text, 0, NULL);
	ok(!bad && api_read_submission(back, &s, &err) == 0 && strcmp(s.name, "a.conf") == 0 &&
	   s.len == strlen(spec) && memcmp(s.spec, spec, s.len) == 0 && strcmp(s.token, "t-1") == 0 &&
	   strcmp(s.workdir, "/home/a") == 0,
	   "a submission reads back as written (%s)", text);
	json_decref(back);
	json_decref(body);
	free(text);
	ok(api_submission_json("a.conf", "a\0b", 3, NULL, NULL, &bad) == NULL && bad && errno == EINVAL,
	   "a spec with a NUL byte is not sent: the spec parser says where");
	ok(api_submission_json("a\xff", "x", 1, NULL, NULL, &bad) == NULL && !bad, "nor a name that is not UTF-8");
	back = json_pack("{s:s,s:s}", "spec", "x", "token", "no spaces");
	errno = 0;
	ok(api_read_submission(back, &s, &err) < 0 && errno == EINVAL && err && strstr(err, "token"),
	   "the scheduler refuses a token that is not plain (%s)", err ? err : "no message");
	json_decref(back);
	free(err);
	err = NULL;
	back = json_pack("{s:s,s:s}", "spec", "x", "workdir", "relative/dir");
	ok(api_read_submission(back, &s, &err) < 0 && err && strstr(err, "workdir"),
	   "or a workdir that is not absolute (%s)", err ? err : "no message");
	json_decref(back);
	free(err);
	err = NULL;
	back = json_pack("{s:s}", "name", "x");
	ok(api_read_submission(back, &s, &err) < 0 && err && strstr(err, "\"spec\""), "or no spec (%s)",
	   err ? err : "no message");
	json_decref(back);
	free(err);
	body = api_check_request_json("hold", 4);
	api_read_ctl_request(body, &command, &check);
	ok(!command && check && strcmp(check, "hold") == 0, "a check request");
	json_decref(body);
	body = api_command_json("priority 5", 10);
	api_read_ctl_request(body, &command, &check);
	ok(command && strcmp(command, "priority 5") == 0 && !check, "a command request");
	json_decref(body);
}

int main(void)
{
	round_trip();
	server_table();
	builders();
	job_files();
	answers();
	requests();
	return done_testing();
}
