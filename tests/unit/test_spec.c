/* The spec parser: the lab pipeline of issue 2 field by field, every error a
 * user can make (test_spec_errors.c), ${vars}, line layout
 * (continuations, comments, long lines, CRLF, BOM), the stage order, and the
 * JSON form's round trip. */
#include "spec.h"
#include "spec_check.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

TAP_STATE;

#define K (UINT64_C(1) << 10)
#define M (UINT64_C(1) << 20)
#define G (UINT64_C(1) << 30)
#define T (UINT64_C(1) << 40)

/* The pipeline exactly as the issue shows it. */
static const char lab_spec[] =
	"[job]\n"
	"name     = web-sampling          ; default: the file name\n"
	"team     = arch                  ; default: submitter's primary group\n"
	"priority = 0\n"
	"after    = 41                    ; other jobs this one waits for (optional)\n"
	"\n"
	"[vars]\n"
	"samples = 200                    ; ${samples} expands anywhere below\n"
	"\n"
	"[stage warm]\n"
	"run      = qflex-warm --samples ${samples} --out \"$PARSA_OUT\"\n"
	"cpus     = 8\n"
	"mem      = 32G\n"
	"disk     = 3T                    ; free space needed where the stage writes\n"
	"instances = 1                    ; N copies, $PARSA_INDEX = 0..N-1 (parallel warming)\n"
	"\n"
	"[stage timing]\n"
	"after    = warm\n"
	"foreach  = warm/*                ; one instance per entry of warm's output folder\n"
	"run      = flexus --ckpt \"$PARSA_ITEM\" > \"$PARSA_OUT/$PARSA_INDEX.csv\"\n"
	"cpus     = 1\n"
	"mem      = 6G\n"
	"scratch  = 20G                   ; free local disk needed on the host\n"
	"\n"
	"[stage gather]\n"
	"after    = timing\n"
	"run      = cat \"$PARSA_JOBDIR\"/out/timing/*.csv > \"$PARSA_OUT/results.csv\"\n";

/* A minimal valid stage, to build error cases around. */

static void test_lab_pipeline(void)
{
	struct spec *spec = expect_ok(lab_spec, "the issue's lab pipeline");
	const struct spec_stage *st;

	if (!spec)
		return;
	is_str(spec->name, "web-sampling", "job name");
	is_str(spec->team, "arch", "team");
	is_int(spec->priority, 0, "priority");
	is_int(spec->nafter_jobs, 1, "one job in after");
	is_int(spec->after_jobs[0], 41, "after = 41");
	is_int(spec->nstages, 3, "three stages");

	st = &spec->stages[0];
	is_str(st->name, "warm", "stage 0 is warm");
	is_int(st->line, 10, "warm's header line");
	is_str(st->run, "qflex-warm --samples 200 --out \"$PARSA_OUT\"", "warm run, ${samples} expanded");
	is_int(st->cpus, 8, "warm cpus");
	ok(st->mem == 32 * G, "warm mem = 32G");
	ok(st->disk == 3 * T, "warm disk = 3T");
	ok(st->scratch == 0, "warm scratch default 0");
	is_int(st->instances, 1, "warm instances");
	is_int(st->nafter, 0, "warm waits for nothing");
	ok(st->foreach_stage == NULL && st->foreach_glob == NULL, "warm has no foreach");
	ok(st->walltime == 0, "warm walltime default 0");
	is_int(st->retries, 0, "warm retries default 0");
	is_int(st->nhosts, 0, "warm hosts default empty");
	is_int(st->nenv, 0, "warm env default empty");

	st = &spec->stages[1];
	is_str(st->name, "timing", "stage 1 is timing");
	is_int(st->line, 17, "timing's header line");
	is_str(st->run, "flexus --ckpt \"$PARSA_ITEM\" > \"$PARSA_OUT/$PARSA_INDEX.csv\"", "timing run");
	is_int(st->cpus, 1, "timing cpus");
	ok(st->mem == 6 * G, "timing mem = 6G");
	ok(st->disk == 0, "timing disk default 0");
	ok(st->scratch == 20 * G, "timing scratch = 20G");
	is_int(st->instances, 1, "timing instances default");
	is_int(st->nafter, 1, "timing waits for one stage");
	is_str(st->after[0], "warm", "timing after warm");
	is_str(st->foreach_stage, "warm", "timing foreach stage");
	is_str(st->foreach_glob, "*", "timing foreach glob");
	ok(st->walltime == 0, "timing walltime");
	is_int(st->retries, 0, "timing retries");

	st = &spec->stages[2];
	is_str(st->name, "gather", "stage 2 is gather");
	is_int(st->line, 25, "gather's header line");
	is_str(st->run, "cat \"$PARSA_JOBDIR\"/out/timing/*.csv > \"$PARSA_OUT/results.csv\"", "gather run");
	is_int(st->cpus, 1, "gather cpus default 1");
	ok(st->mem == 0 && st->disk == 0 && st->scratch == 0, "gather sizes default 0");
	is_int(st->nafter, 1, "gather waits for one stage");
	is_str(st->after[0], "timing", "gather after timing");
	ok(st->foreach_stage == NULL, "gather has no foreach");

	is_int(spec_stage_index(spec, "warm"), 0, "spec_stage_index(warm)");
	is_int(spec_stage_index(spec, "gather"), 2, "spec_stage_index(gather)");
	is_int(spec_stage_index(spec, "nope"), -1, "spec_stage_index(unknown) = -1");
	spec_destroy(spec);
}

static void test_defaults_and_keys(void)
{
	struct spec *spec;
	const struct spec_stage *st;
	char *err = NULL;

	spec = parse_as(STAGE_OK, "queue/sub/my-job.conf", &err);
	ok(spec != NULL, "a one-stage spec parses");
	if (spec) {
		is_str(spec->name, "my-job", "job name defaults to the file name without folder and .conf");
		ok(spec->team == NULL, "team defaults to NULL");
		is_int(spec->priority, 0, "priority defaults to 0");
		is_int(spec->nafter_jobs, 0, "no job after");
		st = &spec->stages[0];
		is_int(st->cpus, 1, "cpus default 1");
		is_int(st->instances, 1, "instances default 1");
		ok(st->mem == 0 && st->disk == 0 && st->scratch == 0 && st->walltime == 0,
		   "sizes and walltime default 0");
		is_int(st->retries, 0, "retries default 0");
	}
	spec_destroy(spec);

	static const struct {
		const char *file, *name;
	} names[] = {
		{ "lab.ini", "lab" }, { "lab.spec", "lab" }, { "/a/b/lab.txt", "lab.txt" },
		{ "x.conf.conf", "x.conf" }, { ".conf", ".conf" }, { NULL, "spec" },
	};
	for (size_t i = 0; i < ARRAY_LEN(names); i++) {
		spec = spec_parse(STAGE_OK, strlen(STAGE_OK), names[i].file, NULL);
		is_str(spec ? spec->name : NULL, names[i].name, "default name for %s",
		       names[i].file ? names[i].file : "(null)");
		spec_destroy(spec);
	}

	spec = expect_ok("[job]\npriority = -1000\nafter = 7, 3 7,,12\n"
			 "[stage a]\nrun = x\ncpus = 4096\nmem = 1.5T\ndisk = 512M\nscratch = 20GiB\n"
			 "instances = 1000000\nwalltime = 1h30m\nretries = 100\n"
			 "hosts = node1, gpu-*  node[2-3]\nenv.OMP_NUM_THREADS = 4\nenv.EMPTY =\n"
			 "env.LONG = a\n  b\n", "every key at its limit");
	if (spec) {
		st = &spec->stages[0];
		is_int(spec->priority, -1000, "priority -1000");
		is_int(spec->nafter_jobs, 3, "job after: repeats dropped");
		if (spec->nafter_jobs == 3)
			ok(spec->after_jobs[0] == 3 && spec->after_jobs[1] == 7 && spec->after_jobs[2] == 12,
			   "job after sorted: 3 7 12");
		is_int(st->cpus, 4096, "cpus 4096");
		ok(st->mem == T + T / 2, "mem 1.5T");
		ok(st->disk == 512 * M, "disk 512M");
		ok(st->scratch == 20 * G, "scratch 20GiB");
		is_int(st->instances, SPEC_MAX_INSTANCES, "instances at the limit");
		ok(st->walltime == 5400, "walltime 1h30m = 5400 s");
		is_int(st->retries, 100, "retries 100");
		is_int(st->nhosts, 3, "three hosts");
		if (st->nhosts == 3) {
			is_str(st->hosts[0], "node1", "host 0");
			is_str(st->hosts[1], "gpu-*", "host 1, a glob");
			is_str(st->hosts[2], "node[2-3]", "host 2, a glob");
		}
		is_int(st->nenv, 3, "three env entries");
		if (st->nenv == 3) {
			is_str(st->env[0], "OMP_NUM_THREADS=4", "env entry");
			is_str(st->env[1], "EMPTY=", "an empty env value is allowed");
			is_str(st->env[2], "LONG=a b", "env continuation joined with a space");
		}
	}
	spec_destroy(spec);

	spec = expect_ok("[stage a]\nrun = x\nforeach = b/ckpt-*.tar\nafter = b\n[stage b]\nrun = y\n",
			 "foreach with a glob");
	if (spec) {
		st = &spec->stages[spec_stage_index(spec, "a")];
		is_str(st->foreach_stage, "b", "foreach stage");
		is_str(st->foreach_glob, "ckpt-*.tar", "foreach glob");
	}
	spec_destroy(spec);
}

static void test_layout(void)
{
	struct spec *spec;
	char *err = NULL;
	char line[256];

	spec = expect_ok("[stage a]\nrun = set -e\n    echo one \\\n      two\n\n    echo three\n"
			 "cpus = 2\n", "a multi-line run");
	if (spec)
		is_str(spec->stages[0].run, "set -e\necho one \\\ntwo\necho three",
		       "run lines joined with newlines, indentation dropped");
	spec_destroy(spec);

	spec = expect_ok("[stage a]\nrun =\n  first\n  second\n", "run starting on the next line");
	if (spec)
		is_str(spec->stages[0].run, "first\nsecond", "no leading newline");
	spec_destroy(spec);

	spec = expect_ok("[stage a]\nrun = a; b && c\n", "';' not after a space");
	if (spec)
		is_str(spec->stages[0].run, "a; b && c", "a ';' not after a space is shell");
	spec_destroy(spec);
	spec = expect_ok("[stage a]\nrun = echo x ;\n", "a lone ' ;' at the end");
	spec_destroy(spec);

	spec = expect_ok("# comment\n; comment\n[stage a] ; the first stage\n  # indented comment\n"
			 "run = x\n", "comments everywhere");
	spec_destroy(spec);

	spec = expect_ok("\xEF\xBB\xBF[stage a]\r\nrun = echo hi\r\ncpus = 2\r\n", "a BOM and CRLF line ends");
	if (spec) {
		is_str(spec->stages[0].run, "echo hi", "no CR in the value");
		is_int(spec->stages[0].cpus, 2, "CRLF value parsed");
	}
	spec_destroy(spec);

	spec = expect_ok("[stage a]\nrun: echo\ncpus: 3\n", "KEY: VALUE (inih allows ':')");
	if (spec)
		is_int(spec->stages[0].cpus, 3, "cpus: 3");
	spec_destroy(spec);

	spec = expect_ok("[ stage   a ]\nrun = x", "spaces inside the header, no final newline");
	if (spec)
		is_str(spec->stages[0].name, "a", "stage name trimmed");
	spec_destroy(spec);

	/* 198 characters fit inih's buffer; 199 do not. */
	memset(line, 'x', sizeof line);
	memcpy(line, "run = ", 6);
	line[198] = '\0';
	{
		char *text = NULL;

		if (asprintf(&text, "[stage a]\n%s\n", line) > 0) {
			spec = expect_ok(text, "a 198-character line");
			if (spec)
				is_int(strlen(spec->stages[0].run), 192, "all of it kept");
			spec_destroy(spec);
			free(text);
		}
		line[198] = 'x';
		line[199] = '\0';
		if (asprintf(&text, "[stage a]\nrun = x\n  %s\ncpus = 2\n", line + 2) > 0) {
			expect_error(text, "t.conf:3: line too long (max 198 characters); "
				     "continue it on the next line, indented");
			spec = parse_as(text, "t.conf", &err);
			is_int(count_lines(err), 1, "a long line is one error, nothing else");
			spec_destroy(spec);
			free(err);
			err = NULL;
			free(text);
		}
		/* A run line too long to read is that one error: not also a
		 * false "has no run" for its stage (issue 35). */
		if (asprintf(&text, "[stage f]\n%s\n", line) > 0) {
			expect_error(text, "t.conf:2: line too long (max 198 characters); "
				     "continue it on the next line, indented");
			spec = parse_as(text, "t.conf", &err);
			is_int(count_lines(err), 1, "a too long run line is one error, no 'has no run'");
			if (count_lines(err) != 1)
				diag("got: %s", err);
			spec_destroy(spec);
			free(err);
			err = NULL;
			free(text);
		}
		if (asprintf(&text, "[stage f]\ncpus = 2\n") > 0) {
			expect_error(text, "t.conf:1: [stage f] has no run: add run = COMMAND");
			free(text);
		}
		/* What a message quotes is escaped: an ESC in a name never
		 * reaches the reader's terminal (issue 35). */
		expect_error("[job]\nname = x\033[31mred\n[stage s]\nrun = a\n",
			     "t.conf:2: name = x\\x1b[31mred: control characters are not allowed");
		expect_error("[stage s\033x]\nrun = a\n",
			     "t.conf:1: bad stage name 's\\x1bx': use 1 to 64 letters, digits, '_', '.' or '-'");
		/* CRLF does not count against the limit. */
		line[198] = '\0';
		if (asprintf(&text, "[stage a]\r\n%s\r\n", line) > 0) {
			spec = expect_ok(text, "a 198-character line ending in CRLF");
			spec_destroy(spec);
			free(text);
		}
	}

	/* Stage names at the limits. */
	memset(line, 'n', 64);
	line[64] = '\0';
	{
		char *text = NULL;

		if (asprintf(&text, "[stage %s]\nrun = x\n[stage a.b-c_D9]\nrun = y\n", line) > 0) {
			spec = expect_ok(text, "a 64-character stage name (inih cuts sections at 49)");
			if (spec)
				is_str(spec->stages[0].name, line, "the whole name kept");
			spec_destroy(spec);
			free(text);
		}
		if (asprintf(&text, "[stage %sn]\nrun = x\n", line) > 0) {
			/* Names are quoted cut to 60 bytes. */
			expect_error(text, "t.conf:1: bad stage name 'nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"
				     "...': use 1 to 64 letters, digits, '_', '.' or '-'");
			free(text);
		}
	}
}

static void test_vars(void)
{
	struct spec *spec;

	spec = expect_ok("[stage a]\nrun = ${cmd} ${n} ${PARSA_OUT} ${undefined} $n ${n\nafter = ${up}\n"
			 "[stage b]\nrun = true\n"
			 "[vars]\nn = 3\ncmd = echo ${n}${n}\nup = b\n", "[vars] after its use");
	if (spec) {
		const struct spec_stage *a = &spec->stages[spec_stage_index(spec, "a")];

		is_str(a->run, "echo 33 3 ${PARSA_OUT} ${undefined} $n ${n", "vars expanded, the rest kept");
		is_int(a->nafter, 1, "after from a var");
		if (a->nafter == 1)
			is_str(a->after[0], "b", "after = ${up}");
		is_str(spec->stages[0].name, "b", "b runs first");
	}
	spec_destroy(spec);

	spec = expect_ok("[vars]\nlater = ${early}x\nearly = e\n[job]\nname = job-${later}\n" STAGE_OK,
			 "a var using a var defined below it");
	if (spec)
		is_str(spec->name, "job-ex", "job name from vars");
	spec_destroy(spec);

	expect_error("[vars]\na = ${b}\nb = ${c}\nc = ${a}\n" STAGE_OK,
		     "t.conf:2: var 'a' refers to itself: a -> b -> c -> a; remove one of these ${...}");
	expect_error("[vars]\nx = ${x}\n" STAGE_OK,
		     "t.conf:2: var 'x' refers to itself: x -> x; remove one of these ${...}");
	expect_error("[vars]\nmy-var = 1\n" STAGE_OK,
		     "t.conf:2: bad var name 'my-var': use letters, digits and '_', not starting with a digit");
	expect_error("[vars]\nx = 1\nx = 2\n" STAGE_OK,
		     "t.conf:3: 'x' is set twice in [vars] (first at line 2): keep one");
	expect_error("[vars]\nm = lots\n[stage a]\nrun = x\nmem = ${m}\n",
		     "t.conf:5: mem = lots: not a size; write a number with an optional unit K, M, G, T or P, "
		     "e.g. 512M, 32G, 1.5T");

	/* Doubling vars: 2^40 bytes from a few lines must be refused, quickly. */
	{
		char text[4096] = "[vars]\nv0 = xxxxxxxxxxxxxxxx\n";

		for (int i = 1; i <= 40; i++) {
			size_t n = strlen(text);

			snprintf(text + n, sizeof text - n, "v%d = ${v%d}${v%d}\n", i, i - 1, i - 1);
		}
		strcat(text, "[stage a]\nrun = ${v40}\n");
		expect_error(text, "t.conf:20: ${vars} expand to more than 4 MiB of text: a spec is text a person reads");
	}
}

static void test_order(void)
{
	struct spec *spec;

	spec = expect_ok("[stage c]\nrun = 3\nafter = b\n[stage a]\nrun = 1\n[stage b]\nrun = 2\nafter = a\n"
			 "[stage z]\nrun = 4\n", "stages out of order");
	if (spec && spec->nstages == 4) {
		is_str(spec->stages[0].name, "a", "order 0: a");
		is_str(spec->stages[1].name, "b", "order 1: b");
		is_str(spec->stages[2].name, "c", "order 2: c");
		is_str(spec->stages[3].name, "z", "order 3: z (file order where free)");
		is_int(spec->stages[2].line, 1, "c keeps its header line");
	}
	spec_destroy(spec);

	spec = expect_ok("[stage x]\nrun = 1\n[stage y]\nrun = 2\nafter = x, x x\n[stage w]\nrun = 3\n",
			 "independent stages");
	if (spec && spec->nstages == 3) {
		is_str(spec->stages[0].name, "x", "x first");
		is_str(spec->stages[1].name, "y", "then y (file order)");
		is_str(spec->stages[2].name, "w", "then w");
		is_int(spec->stages[1].nafter, 1, "repeated after names dropped");
	}
	spec_destroy(spec);
}

static bool strings_equal(char **a, size_t na, char **b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return true;
}

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool specs_equal(const struct spec *a, const struct spec *b)
{
	if (!str_eq(a->name, b->name) || !str_eq(a->team, b->team) || a->priority != b->priority ||
	    a->nafter_jobs != b->nafter_jobs || a->nstages != b->nstages)
		return false;
	for (size_t i = 0; i < a->nafter_jobs; i++)
		if (a->after_jobs[i] != b->after_jobs[i])
			return false;
	for (size_t i = 0; i < a->nstages; i++) {
		const struct spec_stage *x = &a->stages[i], *y = &b->stages[i];

		if (!str_eq(x->name, y->name) || x->line != y->line || !str_eq(x->run, y->run) ||
		    x->cpus != y->cpus || x->mem != y->mem || x->disk != y->disk || x->scratch != y->scratch ||
		    x->instances != y->instances || !strings_equal(x->after, x->nafter, y->after, y->nafter) ||
		    !str_eq(x->foreach_stage, y->foreach_stage) || !str_eq(x->foreach_glob, y->foreach_glob) ||
		    x->walltime != y->walltime || x->retries != y->retries ||
		    !strings_equal(x->hosts, x->nhosts, y->hosts, y->nhosts) ||
		    !strings_equal(x->env, x->nenv, y->env, y->nenv) || x->nmatrix != y->nmatrix)
			return false;
		for (size_t m = 0; m < x->nmatrix; m++)
			if (!str_eq(x->matrix[m].name, y->matrix[m].name) ||
			    !strings_equal(x->matrix[m].values, x->matrix[m].nvalues, y->matrix[m].values,
					   y->matrix[m].nvalues))
				return false;
	}
	return true;
}

static void round_trip(const char *text, const char *what)
{
	struct spec *a = parse_as(text, "rt.conf", NULL), *b = NULL;
	json_t *ja = NULL, *jb = NULL;
	char *err = NULL;

	ok(a != NULL, "round trip: %s parses", what);
	if (!a)
		return;
	ja = spec_to_json(a);
	ok(ja != NULL, "round trip: %s to JSON", what);
	b = spec_from_json(ja, &err);
	ok(b != NULL, "round trip: %s back from JSON", what);
	if (!b) {
		diag("%s", err ? err : "(null)");
		goto out;
	}
	ok(specs_equal(a, b), "round trip: %s struct equal", what);
	jb = spec_to_json(b);
	ok(json_equal(ja, jb), "round trip: %s JSON equal", what);
out:
	json_decref(ja);
	json_decref(jb);
	spec_destroy(a);
	spec_destroy(b);
	free(err);
}

static void expect_json_error(const char *json_text, const char *want)
{
	json_t *j = json_loads(json_text, 0, NULL);
	char *err = NULL;
	struct spec *spec;

	errno = 0;
	spec = spec_from_json(j, &err);
	ok(!spec && errno == EINVAL && err && strcmp(err, want) == 0, "from_json refuses: %s", want);
	if (!err || strcmp(err, want) != 0)
		diag("got: %s", err ? err : "(null)");
	spec_destroy(spec);
	free(err);
	json_decref(j);
}

static void test_json(void)
{
	json_t *j;
	struct spec *spec;

	round_trip(lab_spec, "the lab pipeline");
	round_trip("[job]\nteam = arch\npriority = -7\nafter = 9 3\n"
		   "[stage a]\nrun = echo \"h\xC3\xA9\"\n  echo 2\ncpus = 3\nmem = 1.5T\ndisk = 8191P\nscratch = 1\n"
		   "instances = 1000000\nwalltime = 1w\nretries = 100\nhosts = h1 h*\nenv.A = 1\nenv.B = x=y\n"
		   "[stage b]\nrun = y\nafter = a\nforeach = a/ckpt-[0-9]*\n", "every field set");
	round_trip(STAGE_OK, "a minimal spec");

	spec = parse_as(lab_spec, "lab.conf", NULL);
	j = spec ? spec_to_json(spec) : NULL;
	if (j) {
		json_t *st = json_array_get(json_object_get(j, "stages"), 1);

		is_str(json_string_value(json_object_get(st, "foreach")), "warm/*", "foreach is \"STAGE/GLOB\" in JSON");
		ok(json_integer_value(json_object_get(st, "mem")) == (json_int_t)(6 * G), "mem in bytes");
		ok(json_is_null(json_object_get(json_array_get(json_object_get(j, "stages"), 0), "foreach")),
		   "no foreach is null");
	}
	json_decref(j);
	spec_destroy(spec);

	expect_json_error("[]", "spec: want an object");
	expect_json_error("{\"name\": 3}", "spec.name: want a string");
	expect_json_error("{\"name\": \"x\", \"team\": null, \"priority\": 2000}",
			  "spec.priority: want an integer from -1000 to 1000");
	expect_json_error("{\"name\": \"x\", \"priority\": 0, \"after\": [0], \"stages\": []}",
			  "spec.after[0]: want a job id");
	expect_json_error("{\"name\": \"x\", \"priority\": 0, \"after\": [], \"stages\": []}",
			  "spec.stages: want an array of 1 to 256 stages");
	expect_json_error("{\"name\": \"x\", \"priority\": 0, \"after\": [], \"stages\": [{\"name\": \"a\"}]}",
			  "stages[0].run: want a string");
	expect_json_error("{\"name\": \"x\", \"priority\": 0, \"after\": [], \"stages\": [{\"name\": \"a\", "
			  "\"run\": \"x\", \"line\": 1, \"cpus\": 1, \"mem\": -1}]}",
			  "stages[0].mem: want an integer from 0 to 9223372036854775807");
	expect_json_error("{\"name\": \"x\", \"priority\": 0, \"after\": [], \"stages\": [{\"name\": \"a\", "
			  "\"run\": \"x\", \"line\": 1, \"cpus\": 1, \"mem\": 0, \"disk\": 0, \"scratch\": 0, "
			  "\"instances\": 1, \"walltime_s\": 0, \"retries\": 0, \"after\": [\"b\"], \"hosts\": [], "
			  "\"env\": [], \"foreach\": null}]}",
			  "stages[0].after: unknown stage 'b'");
	expect_json_error("{\"name\": \"x\", \"priority\": 0, \"after\": [], \"stages\": [{\"name\": \"a\", "
			  "\"run\": \"x\", \"line\": 1, \"cpus\": 1, \"mem\": 0, \"disk\": 0, \"scratch\": 0, "
			  "\"instances\": 1, \"walltime_s\": 0, \"retries\": 0, \"after\": [], \"hosts\": [], "
			  "\"env\": [\"NOEQUALS\"], \"foreach\": null}]}",
			  "stages[0].env[0]: want NAME=value");
	expect_json_error("{\"name\": \"x\", \"priority\": 0, \"after\": [], \"stages\": [{\"name\": \"a\", "
			  "\"run\": \"x\", \"line\": 1, \"cpus\": 1, \"mem\": 0, \"disk\": 0, \"scratch\": 0, "
			  "\"instances\": 1, \"walltime_s\": 0, \"retries\": 0, \"after\": [], \"hosts\": [], "
			  "\"env\": [], \"foreach\": \"a\"}]}",
			  "stages[0].foreach: want \"STAGE/GLOB\"");
}

/* slurm.partition, slurm.account, slurm.qos: a Slurm runner's sbatch -p, -A
 * and --qos for the stage; every wrong form named with its line and fix. */
static void test_slurm_keys(void)
{
	struct spec *spec;
	json_t *j;

	spec = expect_ok("[stage a]\nrun = x\nslurm.partition = gpu\nslurm.account = lab-42\n"
			 "slurm.qos = long.v2\n[stage b]\nrun = y\n", "the three slurm keys");
	if (spec) {
		const struct spec_stage *a = &spec->stages[spec_stage_index(spec, "a")];
		const struct spec_stage *b = &spec->stages[spec_stage_index(spec, "b")];

		is_str(a->slurm.partition, "gpu", "slurm.partition");
		is_str(a->slurm.account, "lab-42", "slurm.account");
		is_str(a->slurm.qos, "long.v2", "slurm.qos");
		ok(!b->slurm.partition && !b->slurm.account && !b->slurm.qos, "none given: the runner's");
		j = spec_to_json(spec);
		ok(j && !json_object_get(json_array_get(json_object_get(j, "stages"),
							(size_t)spec_stage_index(spec, "b")), "slurm"),
		   "no slurm object in JSON without slurm keys");
		json_decref(j);
	}
	spec_destroy(spec);
	round_trip("[stage a]\nrun = x\nslurm.partition = gpu\nslurm.qos = q\n", "slurm keys");
	round_trip("[stage a]\nrun = x\nmatrix.cache = 1M, 2M\nmatrix.q = 10,100,1000\n", "a sweep");
	spec = expect_ok("[vars]\np = short\n[stage a]\nrun = x\nslurm.partition = ${p}\n", "a slurm key from a var");
	if (spec)
		is_str(spec->stages[0].slurm.partition, "short", "expanded");
	spec_destroy(spec);

	expect_error(STAGE_OK "slurm.partition = gpu,cpu\n",
		     "t.conf:3: slurm.partition = gpu,cpu: want one Slurm partition name: letters, digits, "
		     "'.', '_' and '-', at most 64, e.g. slurm.partition = gpu");
	expect_error(STAGE_OK "slurm.account = a b\n",
		     "t.conf:3: slurm.account = a b: want one Slurm account name: letters, digits, "
		     "'.', '_' and '-', at most 64, e.g. slurm.account = lab42");
	expect_error(STAGE_OK "slurm.qos = -x\n",
		     "t.conf:3: slurm.qos = -x: want one Slurm QOS name: letters, digits, "
		     "'.', '_' and '-', at most 64, e.g. slurm.qos = normal");
	expect_error(STAGE_OK "slurm.qos =\n", "t.conf:3: slurm.qos has no value: give one or remove the line");
	expect_error(STAGE_OK "slurm.partiton = gpu\n",
		     "t.conf:3: unknown key 'slurm.partiton' in [stage s] (did you mean 'slurm.partition'?)");
	expect_error(STAGE_OK "slurm.time = 10\n",
		     "t.conf:3: unknown key 'slurm.time' in [stage s]: a stage's Slurm keys are slurm.partition, "
		     "slurm.account and slurm.qos (its time, cpus, mem and gpus come from walltime, cpus, mem "
		     "and gpus)");
	expect_error(STAGE_OK "partition = gpu\n",
		     "t.conf:3: unknown key 'partition' in [stage s] (did you mean 'slurm.partition'?)");
	expect_error(STAGE_OK "slurm_qos = q\n",
		     "t.conf:3: unknown key 'slurm_qos' in [stage s] (did you mean 'slurm.qos'?)");
	expect_error("[job]\nslurm.partition = gpu\n" STAGE_OK,
		     "t.conf:2: unknown key 'slurm.partition' in [job]: [job] takes name, team, priority, "
		     "after, start, window, every, notify and workdir");

	expect_json_error("{\"name\": \"x\", \"priority\": 0, \"after\": [], \"stages\": [{\"name\": \"a\", "
			  "\"run\": \"x\", \"line\": 1, \"cpus\": 1, \"mem\": 0, \"disk\": 0, \"scratch\": 0, "
			  "\"instances\": 1, \"walltime_s\": 0, \"retries\": 0, \"after\": [], \"hosts\": [], "
			  "\"env\": [], \"foreach\": null, \"slurm\": {\"partition\": \"a\\nb\"}}]}",
			  "stages[0].slurm.partition: want a Slurm name");
	expect_json_error("{\"name\": \"x\", \"priority\": 0, \"after\": [], \"stages\": [{\"name\": \"a\", "
			  "\"run\": \"x\", \"line\": 1, \"cpus\": 1, \"mem\": 0, \"disk\": 0, \"scratch\": 0, "
			  "\"instances\": 1, \"walltime_s\": 0, \"retries\": 0, \"after\": [], \"hosts\": [], "
			  "\"env\": [], \"foreach\": null, \"slurm\": {\"nodes\": \"n1\"}}]}",
			  "stages[0].slurm.nodes: unknown key");
	ok(spec_slurm_value_ok("a.b_c-9") && !spec_slurm_value_ok("") && !spec_slurm_value_ok("a,b") &&
	   !spec_slurm_value_ok("a\n") && !spec_slurm_value_ok("-p") &&
	   !spec_slurm_value_ok("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
	   "Slurm names: no list, no newline, no option, at most 64");
}

/* A sweep's points: the product of its axes, the last varying fastest, each
 * instance's environment and folder name from its index alone. */
static void test_matrix(void)
{
	struct spec *spec = expect_ok("[stage s]\nmatrix.cache = 1M, 2M\nmatrix.quantum = 100,1000, 10000\n"
				      "instances = 2\nenv.L = ${cache}/${quantum}/${other}\nrun = sim ${cache}\n",
				      "a 2 x 3 sweep, twice");
	char *text, **env;

	if (!spec)
		return;
	is_int((int)spec_stage_points(&spec->stages[0]), 6, "six points");
	is_str(spec->stages[0].run, "sim ${cache}", "${NAME} of an axis stays for the shell in run");
	text = spec_point_text(&spec->stages[0], 4, ",");
	is_str(text, "cache=2M,quantum=1000", "index 4 is the fifth point");
	free(text);
	text = spec_point_text(&spec->stages[0], 10, " ");
	is_str(text, "cache=2M quantum=1000", "index 10: the same point, second copy");
	free(text);
	env = spec_point_env(&spec->stages[0], 1);
	is_str(env[0], "cache=1M", "env: the first axis");
	is_str(env[1], "quantum=1000", "env: the second axis");
	is_str(env[2], "PARSA_POINT=cache=1M quantum=1000", "env: PARSA_POINT");
	is_str(env[3], "L=1M/1000/${other}", "env.*: the axes' ${NAME} replaced, the rest kept");
	for (size_t i = 0; i < 4; i++)
		free(env[i]);
	free(env);
	spec_destroy(spec);
}

int main(void)
{
	test_lab_pipeline();
	test_defaults_and_keys();
	test_layout();
	test_vars();
	test_order();
	test_json();
	test_slurm_keys();
	test_matrix();
	return done_testing();
}
