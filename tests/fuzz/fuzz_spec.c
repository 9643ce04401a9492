/* libFuzzer harness for the spec parser (and the size and duration parsers
 * it calls). Besides "no crash, no leak, no undefined behaviour" it checks
 * the parser's promises: a refused spec comes with EINVAL or EFBIG and
 * "file:line:" messages; an accepted one has its stages in a topological
 * order and survives the JSON round trip unchanged. Any broken promise aborts,
 * which libFuzzer reports as a crash. */
#include "spec.h"
#include "units.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every line of err names the file. */
static void check_errors(const char *err)
{
	const char *line = err;

	if (!err || !*err)
		abort();
	while (line) {
		if (strncmp(line, "fuzz.conf:", 10) != 0)
			abort();
		line = strchr(line, '\n');
		if (line)
			line++;
	}
}

static void check_spec(const struct spec *spec)
{
	json_t *json, *again;
	struct spec *back;

	if (spec->nstages < 1 || spec->nstages > SPEC_MAX_STAGES || !spec->name)
		abort();
	for (size_t i = 0; i < spec->nstages; i++) {
		const struct spec_stage *st = &spec->stages[i];

		if (!st->run || st->cpus < 1 || st->instances < 1 || st->retries < 0)
			abort();
		/* Topological: what a stage waits for comes before it. */
		for (size_t a = 0; a < st->nafter; a++) {
			int up = spec_stage_index(spec, st->after[a]);

			if (up < 0 || (size_t)up >= i)
				abort();
		}
		if (st->foreach_stage && (spec_stage_index(spec, st->foreach_stage) < 0 ||
					  (size_t)spec_stage_index(spec, st->foreach_stage) >= i))
			abort();
	}
	json = spec_to_json(spec);
	if (!json)
		abort();
	back = spec_from_json(json, NULL);
	if (!back)
		abort();
	again = spec_to_json(back);
	if (!again || !json_equal(json, again))
		abort();
	json_decref(again);
	json_decref(json);
	spec_destroy(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *err = NULL;
	struct spec *spec;

	errno = 0;
	spec = spec_parse((const char *)data, size, "fuzz.conf", &err);
	if (spec) {
		if (err)
			abort();
		check_spec(spec);
		spec_destroy(spec);
	} else {
		if (errno != EINVAL && errno != EFBIG)
			abort();
		check_errors(err);
		free(err);
	}
	/* The unit parsers on their own, with short inputs as in a spec. */
	if (size < 64) {
		char text[64];
		uint64_t v;

		memcpy(text, data, size);
		text[size] = '\0';
		if (parse_size(text, &v) < 0 && errno != EINVAL && errno != ERANGE)
			abort();
		if (parse_duration(text, &v) < 0 && errno != EINVAL && errno != ERANGE)
			abort();
	}
	return 0;
}
