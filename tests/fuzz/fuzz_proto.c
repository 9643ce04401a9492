/* libFuzzer harness for every reader of the messages between runners and the
 * scheduler (lib/proto.c), fed as the network gives them: any bytes, read
 * by jansson as the API reads a body (sched/api/api_args.c). Besides no crash:
 * the readers that can refuse say why with EINVAL, and what an assignment
 * or a report reader accepts survives its writer and reader again unchanged,
 * so both sides of the wire agree on it. */
#include "fuzz.h"
#include "proto.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check_assignment(const json_t *json)
{
	struct assignment *a, *back;
	json_t *out, *again;
	char *err = NULL;

	errno = 0;
	a = assignment_from_json(json, &err);
	if (!a) {
		fuzz_refused(err);
		return;
	}
	if (!proto_safe_name(a->stage) || a->id < 1 || a->job < 1)
		abort();
	out = assignment_to_json(a);
	back = out ? assignment_from_json(out, NULL) : NULL;
	again = back ? assignment_to_json(back) : NULL;
	if (!again || !json_equal(out, again))
		abort();
	json_decref(again);
	json_decref(out);
	assignment_destroy(back);
	assignment_destroy(a);
}

static void check_report(const json_t *json)
{
	struct report r, back;
	json_t *out, *again;
	char *err = NULL;

	errno = 0;
	if (report_from_json(json, &r, &err) < 0) {
		fuzz_refused(err);
		return;
	}
	out = report_to_json(&r);
	if (!out || report_from_json(out, &back, NULL) < 0)
		abort();
	again = report_to_json(&back);
	if (!json_equal(out, again))
		abort();
	json_decref(again);
	json_decref(out);
}

/* The readers that never refuse: no crash, and what they give is usable
 * (a host_info's writer takes it back when it has a name and a mount). */
static void check_lenient(const json_t *json)
{
	struct host_info info;
	struct heartbeat hb;
	struct registration_answer reg;
	struct progress_report p;
	struct work_answer work;
	struct attempt_ref ref;
	const json_t *item;
	size_t i;

	host_info_from_json(json, &info);
	if (info.name && info.mount)
		json_decref(host_info_to_json(&info));
	host_info_clear(&info);
	heartbeat_from_json(json, &hb);
	json_decref(heartbeat_to_json(&hb));
	heartbeat_clear(&hb);
	registration_answer_from_json(json, &reg);
	progress_report_from_json(json, &p);
	attempt_ref_from_json(json, &ref);
	/* A work answer as the runner walks it. */
	work_answer_from_json(json, &work);
	(void)work_answer_has_items(json);
	json_array_foreach(work.start, i, item)
		check_assignment(item);
	json_array_foreach(work.cancel, i, item)
		attempt_ref_from_json(item, &ref);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *json;

	/* The API's two ways of reading a body (a submission allows NULs). */
	json = json_loadb((const char *)data, size, 0, NULL);
	if (!json)
		json = json_loadb((const char *)data, size, JSON_ALLOW_NUL, NULL);
	if (!json)
		return 0;
	check_lenient(json);
	check_assignment(json);
	check_report(json);
	json_decref(json);
	return 0;
}
