/* The spec parser's refusals: every error a user can make in a spec, each
 * with its file:line and its fix (the accepted forms are test_spec.c's). */
#include "spec.h"
#include "spec_check.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

TAP_STATE;

/* inih drops what follows ' ;', so in run it would silently drop commands. */
static void test_run_comment(void)
{
	expect_error("[stage a]\nrun = echo one > \"$PARSA_OUT/one\" ; echo two > \"$PARSA_OUT/two\"\n",
		     "t.conf:2: in run, ' ;' starts a comment, so 'echo two > \"$PARSA_OUT/two\"' would "
		     "never reach the shell: write 'a; b' (no space before ';') or 'a && b', or put the "
		     "next command on an indented line below; a note goes on a line of its own starting "
		     "with ';'");
	{
		char *err = NULL;
		struct spec *spec = parse_as("[stage a]\nrun = first\n  second ;third\n", "t.conf", &err);

		/* inih 55 keeps ' ;' on a continuation line: the shell sees it. */
		ok(spec && strcmp(spec->stages[0].run, "first\nsecond ;third") == 0,
		   "a continuation line keeps ' ;' and what follows");
		spec_destroy(spec);
		free(err);
	}
}

/* Another scheduler's word for a key gets the parsa key and how to write it. */
static void test_foreign_words(void)
{
	static const struct { const char *line, *want; } cases[] = {
		{ "memory = 4G", "unknown key 'memory' in [stage a]: parsa calls it 'mem': mem = 4G, the whole instance's memory" },
		{ "mem-per-cpu = 2G", "parsa calls it 'mem': mem = 4G, the whole instance's memory (there is no per-cpu form)" },
		{ "cpus-per-task = 4", "parsa calls it 'cpus': cpus = 8, the cores of one instance" },
		{ "ntasks = 4", "parsa calls it 'instances': instances = N runs N copies" },
		{ "time = 4:00:00", "parsa calls it 'walltime': walltime = 4h" },
		{ "gres = gpu:1", "parsa calls it 'gpus': gpus = 1" },
		{ "array = 0-99", "parsa calls it 'instances': instances = N ($PARSA_INDEX = 0..N-1)" },
		{ "dependency = afterok:41", "parsa calls it 'after': after = STAGE in a stage" },
		{ "depends_on = warm", "parsa calls it 'after'" },
		{ "retry = 2", "parsa calls it 'retries': retries = 2" },
		{ "nodelist = h1", "parsa calls it 'hosts': hosts = h1, h2 or hosts = feature:NAME" },
		{ "partition = long", "did you mean 'slurm.partition'?" },
		{ "begin = now+1hour", "unknown key 'begin' in [stage a]: parsa calls it 'start', a key of [job]" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *text = xasprintf("[stage a]\nrun = true\n%s\n", cases[i].line), *err = NULL;
		struct spec *spec = parse_as(text, "t.conf", &err);

		ok(!spec && err && strstr(err, cases[i].want), "%s: %s", cases[i].line, cases[i].want);
		if (!err || !strstr(err, cases[i].want))
			diag("got: %s", err ? err : "(null)");
		spec_destroy(spec);
		free(err);
		free(text);
	}
	expect_error("[job]\nmail-user = me@lab\n" STAGE_OK,
		     "t.conf:2: unknown key 'mail-user' in [job]: parsa calls it 'notify': notify = mail:you@lab");
	expect_error("[job]\nmemory = 4G\n" STAGE_OK,
		     "t.conf:2: unknown key 'memory' in [job]: parsa calls it 'mem', a key of a [stage NAME]: "
		     "mem = 4G, the whole instance's memory");
}

static void test_matrix_errors(void)
{
	expect_error("[stage a]\nrun = x\nmatrix.cache =\n",
		     "t.conf:3: matrix.cache has no value: give one or remove the line");
	expect_error("[stage a]\nrun = x\nmatrix.cache = 1M, , 2M\n",
		     "t.conf:3: matrix.cache: an empty value in the list: write v1, v2, ... with a value "
		     "between each two commas");
	expect_error("[stage a]\nrun = x\nmatrix.cache = 1M, 2M, 1M\n",
		     "t.conf:3: matrix.cache lists '1M' twice: keep one");
	expect_error("[stage a]\nrun = x\nmatrix.dir = a/b\n",
		     "t.conf:3: matrix.dir: value 'a/b': use letters, digits and . _ + - : @ % (at most 64; "
		     "it becomes part of the instance's folder name)");
	expect_error("[stage a]\nrun = x\nmatrix.2x = 1\n",
		     "t.conf:3: matrix.2x: bad name '2x': use letters, digits and '_', not starting with a "
		     "digit or PARSA_ (it is the instance's $2x)");
	expect_error("[vars]\ncache = 1\n[stage a]\nrun = x\nmatrix.cache = 1, 2\n",
		     "t.conf:5: matrix.cache has the name of a [vars] entry: ${cache} would mean both; rename one");
	expect_error("[stage a]\nrun = x\ninstances = 1001\nmatrix.a = 1,2,3,4,5,6,7,8,9,10\n"
		     "matrix.b = 1,2,3,4,5,6,7,8,9,10\nmatrix.c = 1,2,3,4,5,6,7,8,9,10\n",
		     "t.conf:4: matrix: 1000 points times instances is more than the 1000000 instances a "
		     "stage may have: sweep fewer values");
	expect_error("[stage a]\nrun = x\n[stage b]\nafter = a\nforeach = a/x*/y\nrun = y\n",
		     "t.conf:5: foreach = a/x*/y: want STAGE, STAGE/GLOB or STAGE/FOLDER/GLOB, e.g. warm, "
		     "warm/ckpt-* or sim/cache=2M,quantum=1000/* (GLOB matches names in STAGE's output "
		     "folder, or in one folder of it named without wildcards)");
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
		     "max_failed, max_running, env.NAME, matrix.NAME and slurm.partition/account/qos");
	expect_error("[stage warm]\nrun = x\nenvs.X = 4\n", "t.conf:3: unknown key 'envs.X' in [stage warm] (did you mean 'env.X'?)");
	expect_error("[stage warm]\nrun = x\nname = w\n",
		     "t.conf:3: unknown key 'name' in [stage warm]: a stage's name is in its header, [stage NAME]");
	expect_error("[stage warm]\nrun = x\nteam = w\n", "t.conf:3: unknown key 'team' in [stage warm]: it belongs in [job]");
	expect_error("[job]\nprio = 1\n" STAGE_OK, "t.conf:2: unknown key 'prio' in [job] (did you mean 'priority'?)");
	expect_error("[job]\ncpus = 1\n" STAGE_OK, "t.conf:2: unknown key 'cpus' in [job]: it belongs in a [stage NAME] section");
	expect_error("[job]\nowner = me\n" STAGE_OK,
		     "t.conf:2: unknown key 'owner' in [job]: [job] takes name, team, priority, after, start, window, every, notify and workdir");
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
	expect_error("[stage warm]\nrun = x\n[stage timing]\nafter = warm\nforeach = warm/a/b/c\nrun = y\n",
		     "t.conf:5: foreach = warm/a/b/c: want STAGE, STAGE/GLOB or STAGE/FOLDER/GLOB, e.g. warm, "
		     "warm/ckpt-* or sim/cache=2M,quantum=1000/* (GLOB matches names in STAGE's output "
		     "folder, or in one folder of it named without wildcards)");
	expect_error("[stage warm]\nrun = x\n[stage timing]\nafter = warm\nforeach = warm/\nrun = y\n",
		     "t.conf:5: foreach = warm/: want STAGE, STAGE/GLOB or STAGE/FOLDER/GLOB, e.g. warm, "
		     "warm/ckpt-* or sim/cache=2M,quantum=1000/* (GLOB matches names in STAGE's output "
		     "folder, or in one folder of it named without wildcards)");
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
	       "max_failed, max_running, env.NAME, matrix.NAME and slurm.partition/account/qos",
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

int main(void)
{
	test_errors();
	test_run_comment();
	test_foreign_words();
	test_matrix_errors();
	return done_testing();
}
