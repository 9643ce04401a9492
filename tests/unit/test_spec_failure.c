/* The stage keys of failure and concurrency: on_failure, max_failed and
 * max_running. What they parse to and the failures each stage tolerates
 * (spec_stage_max_failed), the file:line errors for bad values with their
 * fix, and the JSON form: it reads back what it wrote, reads specs stored
 * before these keys existed as the defaults, and refuses bad members. */
#include "spec.h"
#include "tap.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

TAP_STATE;

static struct spec *parse(const char *text, char **err)
{
	return spec_parse(text, strlen(text), "t.conf", err);
}

/* One stage s with the given extra lines; NULL (with a diag) when refused. */
static struct spec *stage_with(const char *lines)
{
	char text[512], *err = NULL;
	struct spec *spec;

	snprintf(text, sizeof text, "[stage s]\nrun = true\n%s", lines);
	spec = parse(text, &err);
	if (!spec)
		diag("refused: %s", err ? err : "?");
	free(err);
	return spec;
}

/* The stage's lines must be refused with exactly want among the errors. */
static void expect_error(const char *lines, const char *want)
{
	char text[512], *err = NULL;
	struct spec *spec;

	snprintf(text, sizeof text, "[stage s]\nrun = true\n%s", lines);
	errno = 0;
	spec = parse(text, &err);
	ok(!spec && errno == EINVAL && err && strstr(err, want), "refused: %s", want);
	if (!err || !strstr(err, want))
		diag("got: %s", err ? err : "(no message)");
	spec_destroy(spec);
	free(err);
}

static void test_values(void)
{
	struct spec *spec;
	const struct spec_stage *st;

	spec = stage_with("");
	st = spec ? &spec->stages[0] : NULL;
	ok(st && st->on_failure == ON_FAILURE_FINISH, "on_failure defaults to finish");
	ok(st && st->max_failed == -1 && !st->max_failed_pct, "max_failed defaults to on_failure's default");
	ok(st && st->max_running == 0, "max_running defaults to no limit");
	ok(st && spec_stage_max_failed(st, 200) == 0, "finish tolerates no failure");
	is_str(spec_on_failure_name(ON_FAILURE_FINISH), "finish", "the name of finish");
	spec_destroy(spec);

	spec = stage_with("on_failure = stop\n");
	st = spec ? &spec->stages[0] : NULL;
	ok(st && st->on_failure == ON_FAILURE_STOP, "on_failure = stop");
	ok(st && spec_stage_max_failed(st, 200) == 0, "stop tolerates no failure");
	spec_destroy(spec);

	spec = stage_with("on_failure = ignore\ninstances = 200\n");
	st = spec ? &spec->stages[0] : NULL;
	ok(st && st->on_failure == ON_FAILURE_IGNORE, "on_failure = ignore");
	ok(st && spec_stage_max_failed(st, 200) == SIZE_MAX, "ignore tolerates every failure");
	spec_destroy(spec);

	spec = stage_with("on_failure = ignore\nmax_failed = 5\n");
	st = spec ? &spec->stages[0] : NULL;
	ok(st && st->max_failed == 5 && !st->max_failed_pct, "max_failed = 5");
	ok(st && spec_stage_max_failed(st, 200) == 5, "ignore with max_failed = 5 tolerates 5");
	spec_destroy(spec);

	spec = stage_with("on_failure = ignore\nmax_failed = 10%\n");
	st = spec ? &spec->stages[0] : NULL;
	ok(st && st->max_failed == 10 && st->max_failed_pct, "max_failed = 10%%");
	ok(st && spec_stage_max_failed(st, 200) == 20, "10%% of 200 instances is 20");
	ok(st && spec_stage_max_failed(st, 15) == 1, "10%% of 15 rounds down to 1");
	ok(st && spec_stage_max_failed(st, 9) == 0, "10%% of 9 tolerates none");
	spec_destroy(spec);

	spec = stage_with("max_failed = 100%\n");
	st = spec ? &spec->stages[0] : NULL;
	ok(st && spec_stage_max_failed(st, 7) == 7, "100%% tolerates all, with finish too");
	spec_destroy(spec);

	spec = stage_with("on_failure = ignore\nmax_failed = 0\n");
	st = spec ? &spec->stages[0] : NULL;
	ok(st && spec_stage_max_failed(st, 4) == 0, "ignore with max_failed = 0 tolerates none");
	spec_destroy(spec);

	spec = stage_with("max_running = 2\ninstances = 6\n");
	st = spec ? &spec->stages[0] : NULL;
	ok(st && st->max_running == 2, "max_running = 2");
	spec_destroy(spec);

	spec = stage_with("[vars]\nn = 3\n[stage t]\nrun = x\nmax_running = ${n}\nmax_failed = ${n}%\n");
	st = spec ? &spec->stages[spec_stage_index(spec, "t")] : NULL;
	ok(st && st->max_running == 3 && st->max_failed == 3 && st->max_failed_pct, "${vars} expand in them");
	spec_destroy(spec);
}

static void test_errors(void)
{
	static const char on_failure_fix[] =
		"want finish (the default: the other instances run to the end, then the stage fails), "
		"stop (the others are cancelled at once) or ignore (failures are counted and the stage "
		"succeeds)";
	char want[512];

	snprintf(want, sizeof want, "t.conf:3: on_failure = abort: %s", on_failure_fix);
	expect_error("on_failure = abort\n", want);
	snprintf(want, sizeof want, "t.conf:3: on_failure = Stop: %s", on_failure_fix);
	expect_error("on_failure = Stop\n", want);
	expect_error("on_failure =\n", "t.conf:3: on_failure has no value: give one or remove the line");
	expect_error("on_failure = stop # at once\n", "(comments after a value start with ' ;', not '#')");

	static const char *const bad_max_failed[] = { "-1", "5.5", "101%", "10 %", "%", "1000001", "many", "5%%" };
	for (size_t i = 0; i < sizeof bad_max_failed / sizeof bad_max_failed[0]; i++) {
		snprintf(want, sizeof want, "t.conf:3: max_failed = %s: want how many instances may fail with "
			 "the stage still succeeding, a whole number from 0 to 1000000 (e.g. 5) or a percentage "
			 "of its instances from 0%% to 100%% (e.g. 10%%)", bad_max_failed[i]);
		char lines[64];

		snprintf(lines, sizeof lines, "max_failed = %s\n", bad_max_failed[i]);
		expect_error(lines, want);
	}

	static const char *const bad_max_running[] = { "0", "-2", "x", "1000001", "2%" };
	for (size_t i = 0; i < sizeof bad_max_running / sizeof bad_max_running[0]; i++) {
		char lines[64];

		snprintf(want, sizeof want, "t.conf:3: max_running = %s: want a whole number from 1 to 1000000, "
			 "the most instances of the stage that run at once (leave it out for no limit)",
			 bad_max_running[i]);
		snprintf(lines, sizeof lines, "max_running = %s\n", bad_max_running[i]);
		expect_error(lines, want);
	}

	expect_error("on_falure = stop\n", "t.conf:3: unknown key 'on_falure' in [stage s] (did you mean 'on_failure'?)");
	expect_error("max_runing = 2\n", "t.conf:3: unknown key 'max_runing' in [stage s] (did you mean 'max_running'?)");
	expect_error("max_failed = 1\nmax_failed = 2\n", "t.conf:4: 'max_failed' is set twice in [stage s]");
	/* Every error of a stage at once. */
	expect_error("on_failure = never\nmax_running = 0\n", "t.conf:4: max_running = 0:");
}

/* The JSON form reads back exactly what it wrote. */
static void round_trip(const char *lines, const char *what)
{
	struct spec *a = stage_with(lines), *b = NULL;
	json_t *ja = a ? spec_to_json(a) : NULL, *jb = NULL;
	char *err = NULL, *ta = NULL, *tb = NULL;

	b = ja ? spec_from_json(ja, &err) : NULL;
	jb = b ? spec_to_json(b) : NULL;
	ta = ja ? json_dumps(ja, JSON_SORT_KEYS) : NULL;
	tb = jb ? json_dumps(jb, JSON_SORT_KEYS) : NULL;
	ok(ta && tb && strcmp(ta, tb) == 0, "round trip: %s (%s)", what, err ? err : "ok");
	ok(b && a->stages[0].on_failure == b->stages[0].on_failure &&
	   a->stages[0].max_failed == b->stages[0].max_failed &&
	   a->stages[0].max_failed_pct == b->stages[0].max_failed_pct &&
	   a->stages[0].max_running == b->stages[0].max_running, "round trip: %s, the same fields", what);
	free(ta);
	free(tb);
	free(err);
	json_decref(ja);
	json_decref(jb);
	spec_destroy(a);
	spec_destroy(b);
}

/* A stored stage with the given members added (or nothing). */
static struct spec *from_json(const char *extra, char **err)
{
	char text[1024];
	json_t *j;
	struct spec *spec;

	snprintf(text, sizeof text, "{\"name\": \"x\", \"priority\": 0, \"after\": [], \"stages\": [{\"name\": \"s\", "
		 "\"run\": \"x\", \"line\": 1, \"cpus\": 1, \"mem\": 0, \"disk\": 0, \"scratch\": 0, "
		 "\"instances\": 4, \"walltime_s\": 0, \"retries\": 0, \"after\": [], \"hosts\": [], "
		 "\"env\": [], \"foreach\": null%s}]}", extra);
	j = json_loads(text, 0, NULL);
	spec = spec_from_json(j, err);
	json_decref(j);
	return spec;
}

static void test_json(void)
{
	struct spec *spec;
	json_t *j;
	char *err = NULL;

	round_trip("", "the defaults");
	round_trip("on_failure = ignore\nmax_failed = 10%\nmax_running = 3\n", "ignore, 10%, max_running");
	round_trip("on_failure = stop\nmax_failed = 7\n", "stop, 7");

	spec = stage_with("on_failure = ignore\nmax_failed = 10%\nmax_running = 3\n");
	j = spec ? spec_to_json(spec) : NULL;
	if (j) {
		json_t *st = json_array_get(json_object_get(j, "stages"), 0);

		is_str(json_string_value(json_object_get(st, "on_failure")), "ignore", "on_failure is its name in JSON");
		is_str(json_string_value(json_object_get(st, "max_failed")), "10%", "a percentage is \"P%%\"");
		ok(json_integer_value(json_object_get(st, "max_running")) == 3, "max_running is a number");
	}
	json_decref(j);
	spec_destroy(spec);
	spec = stage_with("");
	j = spec ? spec_to_json(spec) : NULL;
	ok(j && json_is_null(json_object_get(json_array_get(json_object_get(j, "stages"), 0), "max_failed")),
	   "the default max_failed is null");
	json_decref(j);
	spec_destroy(spec);

	spec = from_json("", &err);
	ok(spec && spec->stages[0].on_failure == ON_FAILURE_FINISH && spec->stages[0].max_failed == -1 &&
	   spec->stages[0].max_running == 0, "a spec stored before these keys reads as finish, no limits (%s)",
	   err ? err : "ok");
	spec_destroy(spec);
	free(err);
	err = NULL;

	static const struct {
		const char *extra, *want;
	} bad[] = {
		{ ", \"on_failure\": \"abort\"", "stages[0].on_failure: want \"finish\", \"stop\" or \"ignore\"" },
		{ ", \"on_failure\": 1", "stages[0].on_failure: want \"finish\", \"stop\" or \"ignore\"" },
		{ ", \"max_failed\": -3", "stages[0].max_failed: want null, N or \"P%\"" },
		{ ", \"max_failed\": \"5\"", "stages[0].max_failed: want null, N or \"P%\"" },
		{ ", \"max_failed\": \"200%\"", "stages[0].max_failed: want null, N or \"P%\"" },
		{ ", \"max_running\": -1", "stages[0].max_running: want an integer from 0 to 1000000" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		errno = 0;
		spec = from_json(bad[i].extra, &err);
		ok(!spec && errno == EINVAL && err && strcmp(err, bad[i].want) == 0, "from_json refuses: %s",
		   bad[i].want);
		if (!err || strcmp(err, bad[i].want) != 0)
			diag("got: %s", err ? err : "(null)");
		spec_destroy(spec);
		free(err);
		err = NULL;
	}
}

int main(void)
{
	test_values();
	test_errors();
	test_json();
	return done_testing();
}
