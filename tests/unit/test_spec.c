/* The spec parser: the lab pipeline of issue 2 field by field, every error a
 * user can make (each with its file:line and its fix), ${vars}, line layout
 * (continuations, comments, long lines, CRLF, BOM), the stage order, and the
 * JSON form's round trip. */
#include "spec.h"
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
#define STAGE_OK "[stage s]\nrun = true\n"

static struct spec *parse_as(const char *text, const char *file, char **err)
{
	return spec_parse(text, strlen(text), file, err);
}

/* Does err hold want as one whole line? */
static bool has_line(const char *err, const char *want)
{
	size_t n = strlen(want);

	for (const char *p = err; p && (p = strstr(p, want)); p++)
		if ((p == err || p[-1] == '\n') && (p[n] == '\0' || p[n] == '\n'))
			return true;
	return false;
}

static size_t count_lines(const char *s)
{
	size_t n = s && *s ? 1 : 0;

	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

/* text must be refused with EINVAL and with want among the error lines. */
static void expect_error(const char *text, const char *want)
{
	char *err = NULL;
	struct spec *spec;

	errno = 0;
	spec = parse_as(text, "t.conf", &err);
	ok(!spec && errno == EINVAL && err && has_line(err, want), "error: %s", want);
	if (!has_line(err, want))
		diag("got: %s", err ? err : "(null)");
	spec_destroy(spec);
	free(err);
}

static struct spec *expect_ok(const char *text, const char *what)
{
	char *err = NULL;
	struct spec *spec = parse_as(text, "t.conf", &err);

	ok(spec != NULL, "parses: %s", what);
	if (!spec)
		diag("got: %s", err ? err : "(null)");
	free(err);
	return spec;
}

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

	spec = expect_ok("[stage a]\nrun = a; b && c ;comment\n", "inline comment after ' ;'");
	if (spec)
		is_str(spec->stages[0].run, "a; b && c", "a ';' not after a space is shell");
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

static void test_errors(void)
{
	char *err = NULL;
	struct spec *spec;

	/* The file as a whole. */
	expect_error("", "t.conf:1: is empty: a spec needs at least one [stage NAME] with run = COMMAND");
	expect_error(" \n\t\n", "t.conf:1: is empty: a spec needs at least one [stage NAME] with run = COMMAND");
	expect_error("; only a comment\n",
		     "t.conf:1: has no stage: a spec needs at least one [stage NAME] with run = COMMAND");
	expect_error("[job]\nname = x\n",
		     "t.conf:1: has no stage: a spec needs at least one [stage NAME] with run = COMMAND");
	{
		static const char bin[] = "[stage a]\nrun = x\n\0\x01\x02";

		errno = 0;
		spec = spec_parse(bin, sizeof bin - 1, "t.conf", &err);
		ok(!spec && errno == EINVAL, "a NUL byte: EINVAL");
		ok(has_line(err, "t.conf:3: is not a text file (a NUL byte or invalid UTF-8 here): "
			    "a spec is UTF-8 text, e.g. written with a text editor"), "a NUL byte: message");
		free(err);
		err = NULL;
	}
	expect_error("[stage a]\nrun = caf\xC3\n", "t.conf:2: is not a text file (a NUL byte or invalid UTF-8 here): "
		     "a spec is UTF-8 text, e.g. written with a text editor");
	expect_error("[stage a]\nrun = \xC0\xAF\n", "t.conf:2: is not a text file (a NUL byte or invalid UTF-8 here): "
		     "a spec is UTF-8 text, e.g. written with a text editor");
	expect_error("[stage a]\nrun = \xED\xA0\x80\n", "t.conf:2: is not a text file (a NUL byte or invalid UTF-8 here): "
		     "a spec is UTF-8 text, e.g. written with a text editor");
	spec = expect_ok("[job]\nname = caf\xC3\xA9\n[stage cafe]\nrun = echo \xE2\x82\xAC \xF0\x9F\x98\x80\n",
			 "UTF-8 text");
	if (spec)
		is_str(spec->name, "caf\xC3\xA9", "a UTF-8 job name");
	spec_destroy(spec);
	spec = parse_as("[stage caf\xC3\xA9]\nrun = x\n", "t.conf", &err);
	is_str(err, "t.conf:1: bad stage name 'caf\xC3\xA9': use 1 to 64 letters, digits, '_', '.' or '-'",
	       "stage names are ASCII, and a bad header is the only error");
	free(err);
	err = NULL;
	{
		size_t big = 100 * 1024 * 1024;
		char *text = malloc(big);

		if (text) {
			memset(text, 'a', big);
			errno = 0;
			spec = spec_parse(text, big, "big.conf", &err);
			ok(!spec && errno == EFBIG, "a 100 MB spec: EFBIG");
			ok(has_line(err, "big.conf:1: is larger than 1024 KiB (104857600 bytes): a spec is text a "
				    "person writes; put data in files that the stages read"), "a 100 MB spec: message");
			free(err);
			err = NULL;
			errno = 0;
			spec = spec_parse(text, SPEC_MAX_BYTES + 1, "big.conf", NULL);
			ok(!spec && errno == EFBIG, "one byte past SPEC_MAX_BYTES: EFBIG");
			free(text);
		}
	}

	/* Sections. */
	expect_error("[stages warm]\nrun = x\n", "t.conf:1: unknown section [stages warm] (did you mean [stage warm]?)");
	expect_error("[jobs]\n" STAGE_OK, "t.conf:1: unknown section [jobs] (did you mean [job]?)");
	expect_error("[output]\n" STAGE_OK, "t.conf:1: unknown section [output]: sections are [job], [vars] and [stage NAME]");
	expect_error("[stage]\n" STAGE_OK, "t.conf:1: [stage] needs a name: write [stage NAME], e.g. [stage warm]");
	expect_error("[stage my warm]\nrun = x\n",
		     "t.conf:1: bad stage name 'my warm': use 1 to 64 letters, digits, '_', '.' or '-'");
	expect_error("[stage ..]\nrun = x\n", "t.conf:1: bad stage name '..': use 1 to 64 letters, digits, '_', '.' or '-'");
	expect_error("[stage .]\nrun = x\n", "t.conf:1: bad stage name '.': use 1 to 64 letters, digits, '_', '.' or '-'");
	expect_error("[stage a/b]\nrun = x\n", "t.conf:1: bad stage name 'a/b': use 1 to 64 letters, digits, '_', '.' or '-'");
	expect_error("[stage a]\nrun = x\n[stage a]\nrun = y\n",
		     "t.conf:3: stage 'a' is defined twice (first at line 1): rename one");
	expect_error("[job]\n[job]\n" STAGE_OK, "t.conf:2: [job] appears twice (first at line 1): put all its keys in one section");
	expect_error("[stage a\nrun = x\n", "t.conf:1: no ']' on this section line: write [job], [vars] or [stage NAME]");
	expect_error("[stage a] junk\nrun = x\n", "t.conf:1: unexpected text after ']': put comments after ' ;'");
	{
		char text[16384] = "";

		for (int i = 0; i <= SPEC_MAX_STAGES; i++) {
			size_t n = strlen(text);

			snprintf(text + n, sizeof text - n, "[stage s%d]\nrun = x\n", i);
		}
		expect_error(text, "t.conf:513: more than 256 stages: split the job into several jobs "
			     "(a job's after = waits for other jobs)");
	}

	/* Lines and keys. */
	expect_error("cpus = 2\n" STAGE_OK, "t.conf:1: 'cpus' is outside any section: put it under [job] or [stage NAME]");
	expect_error(STAGE_OK "just words\n", "t.conf:3: expected KEY = VALUE, a [section] header or a ; comment");
	expect_error(STAGE_OK "cpus ;x = 2\n", "t.conf:3: expected KEY = VALUE, but ' ;' starts a comment before any '='");
	expect_error(STAGE_OK "= 2\n", "t.conf:3: no key before '=': write KEY = VALUE");
	expect_error("[stage warm]\nrun = x\ncpu = 4\n", "t.conf:3: unknown key 'cpu' in [stage warm] (did you mean 'cpus'?)");
	expect_error("[stage warm]\nrun = x\nwalltme = 4\n",
		     "t.conf:3: unknown key 'walltme' in [stage warm] (did you mean 'walltime'?)");
	expect_error("[stage warm]\nrun = x\nCPUS = 4\n", "t.conf:3: unknown key 'CPUS' in [stage warm] (did you mean 'cpus'?)");
	expect_error("[stage warm]\nrun = x\nenvironment.X = 4\n",
		     "t.conf:3: unknown key 'environment.X' in [stage warm]: a stage takes run, cpus, mem, disk, "
		     "scratch, instances, after, foreach, walltime, retries, hosts, window, progress, on_failure, "
		     "max_failed, max_running, env.NAME and slurm.partition/account/qos");
	expect_error("[stage warm]\nrun = x\nenvs.X = 4\n", "t.conf:3: unknown key 'envs.X' in [stage warm] (did you mean 'env.X'?)");
	expect_error("[stage warm]\nrun = x\nname = w\n",
		     "t.conf:3: unknown key 'name' in [stage warm]: a stage's name is in its header, [stage NAME]");
	expect_error("[stage warm]\nrun = x\nteam = w\n", "t.conf:3: unknown key 'team' in [stage warm]: it belongs in [job]");
	expect_error("[job]\nprio = 1\n" STAGE_OK, "t.conf:2: unknown key 'prio' in [job] (did you mean 'priority'?)");
	expect_error("[job]\ncpus = 1\n" STAGE_OK, "t.conf:2: unknown key 'cpus' in [job]: it belongs in a [stage NAME] section");
	expect_error("[job]\nowner = me\n" STAGE_OK,
		     "t.conf:2: unknown key 'owner' in [job]: [job] takes name, team, priority, after, start, window, every and notify");
	expect_error("[stage a]\nrun = x\ncpus = 2\ncpus = 3\n", "t.conf:4: 'cpus' is set twice in [stage a] (first at line 3): keep one");
	expect_error("[stage a]\nrun = x\nrun = y\n", "t.conf:3: 'run' is set twice in [stage a] (first at line 2): keep one");

	/* Values. */
	expect_error("[stage a]\ncpus = 2\n", "t.conf:1: [stage a] has no run: add run = COMMAND");
	expect_error("[stage a]\nrun =\n", "t.conf:2: run is empty: write the command after run = (or on indented lines below it)");
	expect_error(STAGE_OK "cpus = -1\n", "t.conf:3: cpus = -1: want a whole number of cores from 1 to 4096");
	expect_error(STAGE_OK "cpus = 0\n", "t.conf:3: cpus = 0: want a whole number of cores from 1 to 4096");
	expect_error(STAGE_OK "cpus = 4097\n", "t.conf:3: cpus = 4097: want a whole number of cores from 1 to 4096");
	expect_error(STAGE_OK "cpus = 1.5\n", "t.conf:3: cpus = 1.5: want a whole number of cores from 1 to 4096");
	expect_error(STAGE_OK "cpus = 99999999999999999999\n",
		     "t.conf:3: cpus = 99999999999999999999: want a whole number of cores from 1 to 4096");
	expect_error(STAGE_OK "cpus =\n", "t.conf:3: cpus has no value: give one or remove the line");
	expect_error(STAGE_OK "mem = lots\n", "t.conf:3: mem = lots: not a size; write a number with an optional unit "
		     "K, M, G, T or P, e.g. 512M, 32G, 1.5T");
	expect_error(STAGE_OK "disk = -1G\n", "t.conf:3: disk = -1G: not a size; write a number with an optional unit "
		     "K, M, G, T or P, e.g. 512M, 32G, 1.5T");
	expect_error(STAGE_OK "scratch = 20 gigs\n", "t.conf:3: scratch = 20 gigs: not a size; write a number with an "
		     "optional unit K, M, G, T or P, e.g. 512M, 32G, 1.5T");
	expect_error(STAGE_OK "mem = 8192P\n", "t.conf:3: mem = 8192P: too large (the limit is 8191P)");
	expect_error(STAGE_OK "mem = 99999999999999999999999\n",
		     "t.conf:3: mem = 99999999999999999999999: too large (the limit is 8191P)");
	expect_error(STAGE_OK "instances = 0\n", "t.conf:3: instances = 0: want a whole number from 1 to 1000000");
	expect_error(STAGE_OK "instances = 1000001\n", "t.conf:3: instances = 1000001: want a whole number from 1 to 1000000");
	expect_error(STAGE_OK "retries = -1\n", "t.conf:3: retries = -1: want a whole number from 0 to 100");
	expect_error(STAGE_OK "retries = 101\n", "t.conf:3: retries = 101: want a whole number from 0 to 100");
	expect_error(STAGE_OK "walltime = soon\n",
		     "t.conf:3: walltime = soon: not a duration; write e.g. 90s, 45m, 12h, 1h30m or 2d");
	expect_error(STAGE_OK "walltime = 1h30\n",
		     "t.conf:3: walltime = 1h30: not a duration; write e.g. 90s, 45m, 12h, 1h30m or 2d");
	expect_error(STAGE_OK "walltime = 99999999999999999999w\n", "t.conf:3: walltime = 99999999999999999999w: too large");
	expect_error(STAGE_OK "hosts = a, b/c\n", "t.conf:3: hosts: 'b/c' is not a host name or glob");
	expect_error("[job]\npriority = 1001\n" STAGE_OK,
		     "t.conf:2: priority = 1001: want a whole number from -1000 to 1000 (higher runs first)");
	expect_error("[job]\npriority = high\n" STAGE_OK,
		     "t.conf:2: priority = high: want a whole number from -1000 to 1000 (higher runs first)");
	expect_error("[job]\nafter = 41, job7\n" STAGE_OK,
		     "t.conf:2: after = 41, job7: want ids of other jobs, whole numbers from 1 up, separated by commas "
		     "or spaces ('job7' is not one)");
	expect_error("[job]\nafter = 0\n" STAGE_OK,
		     "t.conf:2: after = 0: want ids of other jobs, whole numbers from 1 up, separated by commas "
		     "or spaces ('0' is not one)");
	expect_error("[job]\nafter = -4\n" STAGE_OK,
		     "t.conf:2: after = -4: want ids of other jobs, whole numbers from 1 up, separated by commas "
		     "or spaces ('-4' is not one)");
	expect_error("[job]\nteam = two words\n" STAGE_OK,
		     "t.conf:2: team = two words: want a group name (letters, digits, '_', '.', '-', at most 64)");
	expect_error("[job]\nname = a\x01b\n" STAGE_OK, "t.conf:2: name = a\\x1b: control characters are not allowed");
	expect_error(STAGE_OK "env.1X = 3\n",
		     "t.conf:3: env.1X: bad variable name '1X': use letters, digits and '_', not starting with a digit");
	expect_error(STAGE_OK "env.A-B = 3\n",
		     "t.conf:3: env.A-B: bad variable name 'A-B': use letters, digits and '_', not starting with a digit");
	expect_error(STAGE_OK "env. = 3\n",
		     "t.conf:3: env.: bad variable name '': use letters, digits and '_', not starting with a digit");
	expect_error(STAGE_OK "env.PARSA_OUT = /tmp\n",
		     "t.conf:3: env.PARSA_OUT: parsa sets PARSA_ variables for each instance: choose another name");

	/* Layout mistakes get a hint. */
	expect_error(STAGE_OK "cpus = 2\n  mem = 3G\n",
		     "t.conf:3: cpus = 2 mem = 3G: want a whole number of cores from 1 to 4096 (the indented line "
		     "below it continues this value: start keys at the beginning of a line)");
	expect_error(STAGE_OK "walltime = 1h # an hour\n",
		     "t.conf:3: walltime = 1h # an hour: not a duration; write e.g. 90s, 45m, 12h, 1h30m or 2d "
		     "(comments after a value start with ' ;', not '#')");

	/* The DAG. */
	expect_error("[stage warm]\nrun = x\n[stage timing]\nafter = wram\nrun = y\n",
		     "t.conf:4: after: unknown stage 'wram' (did you mean 'warm'?)");
	expect_error("[stage warm]\nrun = x\n[stage timing]\nafter = gather\nrun = y\n",
		     "t.conf:4: after: unknown stage 'gather' (stages are: warm, timing)");
	expect_error("[stage warm]\nrun = x\nafter = warm\n", "t.conf:3: stage 'warm' cannot come after itself: remove it from after");
	expect_error("[stage warm]\nrun = x\nafter = timing\n[stage timing]\nrun = y\nafter = warm\n",
		     "t.conf:3: cycle: warm -> timing -> warm; remove one of these after = entries");
	expect_error("[stage a]\nrun = x\nafter = c\n[stage b]\nrun = y\nafter = a\n[stage c]\nrun = z\nafter = b\n"
		     "[stage d]\nrun = w\nafter = a\n",
		     "t.conf:3: cycle: a -> b -> c -> a; remove one of these after = entries");
	expect_error("[stage a]\nrun = x\nafter = b\n[stage b]\nrun = y\nafter = a\n"
		     "[stage c]\nrun = x\nafter = d\n[stage d]\nrun = y\nafter = c\n",
		     "t.conf:9: cycle: c -> d -> c; remove one of these after = entries");
	expect_error("[stage warm]\nrun = x\n[stage timing]\nforeach = warm\nrun = y\n",
		     "t.conf:4: foreach: stage 'warm' is not upstream of 'timing': add after = warm");
	spec = expect_ok("[stage warm]\nrun = x\n[stage timing]\nforeach = warm/*\nafter = gather\nrun = y\n"
			 "[stage gather]\nrun = z\nafter = warm\n[stage late]\nrun = l\nafter = timing\n"
			 "foreach = gather/*\n", "foreach over stages upstream through after chains");
	if (spec) {
		is_str(spec->stages[0].name, "warm", "warm first");
		is_str(spec->stages[1].name, "gather", "gather before timing, which waits for it");
	}
	spec_destroy(spec);
	expect_error("[stage warm]\nrun = x\n[stage timing]\nforeach = wram/*\nafter = warm\nrun = y\n",
		     "t.conf:4: foreach: unknown stage 'wram' (did you mean 'warm'?)");
	expect_error("[stage warm]\nrun = x\nforeach = warm\n",
		     "t.conf:3: foreach: stage 'warm' cannot go over its own output");
	expect_error("[stage warm]\nrun = x\n[stage timing]\nafter = warm\nforeach = warm/a/b\nrun = y\n",
		     "t.conf:5: foreach = warm/a/b: want STAGE or STAGE/GLOB, e.g. warm or warm/ckpt-* "
		     "(GLOB matches names in STAGE's output folder, without '/')");
	expect_error("[stage warm]\nrun = x\n[stage timing]\nafter = warm\nforeach = warm/\nrun = y\n",
		     "t.conf:5: foreach = warm/: want STAGE or STAGE/GLOB, e.g. warm or warm/ckpt-* "
		     "(GLOB matches names in STAGE's output folder, without '/')");
	expect_error("[stage warm]\nrun = x\n[stage timing]\nafter = warm\nforeach = warm/*\ninstances = 4\nrun = y\n",
		     "t.conf:6: instances cannot be used with foreach (foreach makes one instance per entry): "
		     "remove instances");
	spec = expect_ok("[stage a]\nrun = x\n[stage b]\nrun = y\nafter = a\n[stage c]\nrun = z\nafter = b\n"
			 "foreach = a/*\n", "foreach over a stage upstream through another");
	spec_destroy(spec);

	/* Every error at once, sorted by line. */
	spec = parse_as("[job]\npriority = 5000\n[stage a]\ncpus = -1\nmem = lots\n[stage b]\nrun = x\nafter = zz\n"
			"bogus = 1\n", "t.conf", &err);
	ok(!spec, "a spec with six errors is refused");
	is_str(err, "t.conf:2: priority = 5000: want a whole number from -1000 to 1000 (higher runs first)\n"
	       "t.conf:3: [stage a] has no run: add run = COMMAND\n"
	       "t.conf:4: cpus = -1: want a whole number of cores from 1 to 4096\n"
	       "t.conf:5: mem = lots: not a size; write a number with an optional unit K, M, G, T or P, "
	       "e.g. 512M, 32G, 1.5T\n"
	       "t.conf:8: after: unknown stage 'zz' (stages are: a, b)\n"
	       "t.conf:9: unknown key 'bogus' in [stage b]: a stage takes run, cpus, mem, disk, scratch, "
	       "instances, after, foreach, walltime, retries, hosts, window, progress, on_failure, "
	       "max_failed, max_running, env.NAME and slurm.partition/account/qos",
	       "all six errors, one per line, in line order");
	free(err);
	err = NULL;

	/* A file of nothing but errors is cut at 100 lines, the first ones. */
	{
		size_t n = 5000, len = 0;
		char *text = malloc(16 + n * 8);

		len += (size_t)sprintf(text, "[stage a]\n");
		for (size_t i = 0; i < n; i++)
			len += (size_t)sprintf(text + len, "junk\n");
		spec = spec_parse(text, len, "t.conf", &err);
		ok(!spec, "5000 bad lines refused");
		is_int(count_lines(err), 101, "100 errors and a count of the rest");
		ok(has_line(err, "t.conf:2: expected KEY = VALUE, a [section] header or a ; comment"), "the first one kept");
		ok(has_line(err, "t.conf: 4901 more errors not shown"), "the rest counted");
		free(err);
		err = NULL;
		free(text);
	}
	/* err may be NULL, and an old *err is replaced. */
	errno = 0;
	ok(!parse_as("", "t.conf", NULL) && errno == EINVAL, "err may be NULL");
	err = strdup("old");
	spec = parse_as("", "t.conf", &err);
	ok(err && strncmp(err, "t.conf:1: is empty", 18) == 0, "an old *err is replaced");
	free(err);
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
		    !strings_equal(x->env, x->nenv, y->env, y->nenv))
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
		     "after, start, window, every and notify");

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

int main(void)
{
	test_lab_pipeline();
	test_defaults_and_keys();
	test_layout();
	test_vars();
	test_errors();
	test_order();
	test_json();
	test_slurm_keys();
	return done_testing();
}
