/* lib/proto.c: every runner<->scheduler message survives its way through
 * *_to_json() and *_from_json(), and its body keeps the field names and JSON
 * types of docs/api.md (older runners and schedulers read them). */
#include "proto.h"
#include "tap.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

TAP_STATE;

/* The member's JSON type, for the wire checks. */
static int type_of(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);

	return v ? (int)json_typeof(v) : -1;
}

/* Through the text on the wire, as the other side receives it. */
static json_t *over_the_wire(json_t *body)
{
	char *text = proto_encode(body);
	json_t *back = text ? json_loads(text, 0, NULL) : NULL;

	free(text);
	return back;
}

static void test_registration(void)
{
	const char *features[] = { "gpu", "ssd" };
	struct host_info in = {
		.name = "h1", .cpus = 8, .mem = 64ULL << 30, .scratch_total = 1ULL << 40,
		.scratch_free = 1ULL << 39, .cpu_limit = 92, .mem_limit = 80,
		.features = features, .nfeatures = 2, .mount = "/parsa",
		.window = "mon-fri 20:00-08:00", .window_drain = true,
	}, out;
	struct registration_answer answer = { .name = "h1", .lease_ms = 30000 }, got;
	json_t *json = over_the_wire(host_info_to_json(&in));

	host_info_from_json(json, &out);
	is_str(out.name, "h1", "registration: name");
	ok(out.cpus == 8 && out.mem == in.mem && out.scratch_total == in.scratch_total &&
	   out.scratch_free == in.scratch_free, "registration: capacity");
	ok(out.cpu_limit == 92 && out.mem_limit == 80, "registration: limits");
	ok(out.nfeatures == 2 && strcmp(out.features[0], "gpu") == 0 &&
	   strcmp(out.features[1], "ssd") == 0, "registration: features");
	is_str(out.mount, "/parsa", "registration: mount");
	is_str(out.window, "mon-fri 20:00-08:00", "registration: window");
	ok(out.window_drain, "registration: drain at the window's end");
	ok(type_of(json, "cpus") == JSON_INTEGER && type_of(json, "mem") == JSON_INTEGER &&
	   type_of(json, "cpu_limit") == JSON_REAL && type_of(json, "mem_limit") == JSON_REAL &&
	   type_of(json, "features") == JSON_ARRAY && type_of(json, "drain_at_window_end") == JSON_TRUE,
	   "registration: the wire's types");
	host_info_clear(&out);
	json_decref(json);

	in.window = NULL;
	json = over_the_wire(host_info_to_json(&in));
	ok(!json_object_get(json, "window") && !json_object_get(json, "drain_at_window_end"),
	   "registration: no window, no window keys");
	json_decref(json);
	json = json_loads("{\"name\": \"h2\", \"scratch_total\": 100}", 0, NULL);
	host_info_from_json(json, &out);
	ok(out.scratch_free == 100 && out.nfeatures == 0 && !out.window && !out.mount,
	   "registration: scratch_free defaults to scratch_total, the rest to nothing");
	host_info_clear(&out);
	json_decref(json);

	json = over_the_wire(registration_answer_to_json(&answer));
	registration_answer_from_json(json, &got);
	ok(got.lease_ms == 30000 && strcmp(got.name, "h1") == 0, "registration answer: name and lease");
	json_decref(json);
	registration_answer_from_json(NULL, &got);
	ok(got.lease_ms == 0, "registration answer: none, no lease");
}

static void test_heartbeat(void)
{
	const struct heartbeat_entry entries[] = {
		{ .id = 17, .attempt = 2, .pid = 4242, .progress_done = 37, .progress_total = 200,
		  .usage = { .cpu_ms = 1500, .rss = 4096, .max_rss = 8192 } },
		{ .id = 18, .attempt = 1, .pid = 4243, .usage = INSTANCE_USAGE_UNKNOWN },
	};
	struct heartbeat in = { .cpu_pct = 12.5, .mem_pct = 40.25, .load1 = 0.5,
				.scratch_free = 1 << 30, .parsa_cpu_pct = 10, .outside_cpu_pct = 2.5,
				.parsa_mem_pct = 30, .outside_mem_pct = 10.25, .outside_cores = 0.1,
				.outside_mem = 1 << 20, .instances = entries, .ninstances = 2 }, out;
	json_t *json = over_the_wire(heartbeat_to_json(&in)), *first, *second;
	char *text;

	heartbeat_from_json(json, &out);
	ok(out.cpu_pct == 12.5 && out.mem_pct == 40.25 && out.load1 == 0.5, "heartbeat: live usage");
	ok(out.scratch_free == 1 << 30, "heartbeat: scratch_free");
	is_int(out.ninstances, 2, "heartbeat: two instances");
	ok(out.instances[0].id == 17 && out.instances[0].attempt == 2 && out.instances[0].pid == 4242 &&
	   out.instances[0].progress_done == 37 && out.instances[0].progress_total == 200,
	   "heartbeat: the first with its progress");
	ok(out.instances[1].id == 18 && out.instances[1].progress_total == 0, "heartbeat: the second without");
	ok(out.instances[0].usage.cpu_ms == 1500 && out.instances[0].usage.rss == 4096 &&
	   out.instances[0].usage.max_rss == 8192 && out.instances[1].usage.cpu_ms == -1 &&
	   out.instances[1].usage.max_rss == -1, "heartbeat: each instance's usage, when measured");
	ok(out.parsa_cpu_pct == 10 && out.outside_cpu_pct == 2.5 && out.parsa_mem_pct == 30 &&
	   out.outside_mem_pct == 10.25 && out.outside_cores == 0.1 && out.outside_mem == 1 << 20,
	   "heartbeat: live use split into parsa's and outside");
	first = json_array_get(json_object_get(json, "instances"), 0);
	second = json_array_get(json_object_get(json, "instances"), 1);
	ok(type_of(json, "cpu_pct") == JSON_REAL && type_of(json, "scratch_free") == JSON_INTEGER &&
	   type_of(first, "id") == JSON_INTEGER && type_of(first, "progress") == JSON_OBJECT &&
	   !json_object_get(second, "progress"), "heartbeat: the wire's types; progress only when reported");
	heartbeat_clear(&out);
	json_decref(json);

	text = proto_encode(heartbeat_instances_to_json(entries + 1, 1));
	is_str(text, "[{\"id\":18,\"attempt\":1,\"pid\":4243}]", "heartbeat: the instances list alone");
	free(text);

	in.scratch_free = -1;
	in.ninstances = 0;
	in.parsa_cpu_pct = in.outside_cpu_pct = in.parsa_mem_pct = in.outside_mem_pct = -1;
	in.outside_cores = -1;
	in.outside_mem = -1;
	json = over_the_wire(heartbeat_to_json(&in));
	heartbeat_from_json(json, &out);
	ok(out.scratch_free == -1 && out.ninstances == 0 && json_is_array(json_object_get(json, "instances")),
	   "heartbeat: scratch_free not given stays so; an empty list");
	ok(out.outside_cpu_pct == -1 && out.outside_cores == -1 && out.outside_mem == -1 &&
	   !json_object_get(json, "outside_cores"), "heartbeat: an old runner's, without the split");
	ok(out.storage_down_since == 0 && !out.storage_reason && !json_object_get(json, "storage_down_since"),
	   "heartbeat: storage reachable: no storage fields, and none read (an old runner's too)");
	heartbeat_clear(&out);
	json_decref(json);

	/* The volume does not answer on the host: since when and why, both ways. */
	in.storage_down_since = 1796700001;
	in.storage_reason = "cannot mount nfs://127.0.0.1/export: Connection refused";
	json = over_the_wire(heartbeat_to_json(&in));
	heartbeat_from_json(json, &out);
	ok(out.storage_down_since == 1796700001 && out.storage_reason &&
	   strcmp(out.storage_reason, "cannot mount nfs://127.0.0.1/export: Connection refused") == 0 &&
	   type_of(json, "storage_down_since") == JSON_INTEGER && type_of(json, "storage_reason") == JSON_STRING,
	   "heartbeat: storage_down_since and storage_reason round-trip");
	heartbeat_clear(&out);
	json_decref(json);
	json = json_loads("{\"cpu_pct\": 1, \"storage_down_since\": -5, \"storage_reason\": 7}", 0, NULL);
	heartbeat_from_json(json, &out);
	ok(out.storage_down_since == 0 && !out.storage_reason, "heartbeat: a negative since is reachable");
	heartbeat_clear(&out);
	json_decref(json);
	json = json_loads("{\"storage_down_since\": 1796700001}", 0, NULL);
	heartbeat_from_json(json, &out);
	ok(out.storage_down_since == 1796700001 && out.storage_reason && !*out.storage_reason,
	   "heartbeat: down without a reason reads as an empty reason");
	heartbeat_clear(&out);
	json_decref(json);
}

static void test_work(void)
{
	struct attempt_ref ref = { .id = 17, .attempt = 3 }, got;
	struct work_answer work;
	json_t *json = over_the_wire(attempt_ref_to_json(&ref)), *answer;

	ok(attempt_ref_from_json(json, &got) == 0 && got.id == 17 && got.attempt == 3, "cancel: id and attempt");
	json_decref(json);
	json = json_loads("{\"id\": 17}", 0, NULL);
	ok(attempt_ref_from_json(json, &got) < 0, "cancel: without an attempt it is refused");
	json_decref(json);

	answer = over_the_wire(work_answer_to_json(json_array(), json_array()));
	ok(!work_answer_has_items(answer), "work: an empty answer has nothing");
	json_array_append_new((json_t *)json_object_get(answer, "cancel"), attempt_ref_to_json(&ref));
	ok(work_answer_has_items(answer), "work: a cancel is something");
	work_answer_from_json(answer, &work);
	ok(json_array_size(work.start) == 0 && json_array_size(work.cancel) == 1, "work: its two lists");
	json_decref(answer);
	answer = json_object();
	work_answer_from_json(answer, &work);
	ok(!work.start && !work.cancel && !work_answer_has_items(answer), "work: lists missing");
	json_decref(answer);
}

static void test_assignment(void)
{
	char *env[] = { "A=1", "B=two" };
	gid_t groups[] = { 1001, 27 };
	struct assignment in = {
		.id = 17, .attempt = 1, .job = 42, .stage = "timing", .index = 3,
		.item = "warm/ckpt-0003", .run = "flexus \"$PARSA_ITEM\"", .cpus = 1,
		.mem = 6ULL << 30, .scratch = 20ULL << 30, .walltime_s = 3600, .progress_files = 5,
		.env = env, .nenv = 2, .uid = 1001, .gid = 1001, .user = "alice",
		.groups = groups, .ngroups = 2,
	}, *out;
	json_t *json = over_the_wire(assignment_to_json(&in));
	char *err = NULL;

	out = assignment_from_json(json, &err);
	ok(out != NULL, "assignment: parsed back (%s)", err ? err : "");
	if (out) {
		ok(out->id == 17 && out->attempt == 1 && out->job == 42 && out->index == 3,
		   "assignment: which instance");
		ok(strcmp(out->stage, "timing") == 0 && strcmp(out->item, "warm/ckpt-0003") == 0 &&
		   strcmp(out->run, in.run) == 0, "assignment: stage, item, run");
		ok(out->cpus == 1 && out->mem == in.mem && out->scratch == in.scratch &&
		   out->walltime_s == 3600 && out->progress_files == 5, "assignment: resources");
		ok(out->nenv == 2 && strcmp(out->env[1], "B=two") == 0, "assignment: env");
		ok(out->uid == 1001 && out->gid == 1001 && strcmp(out->user, "alice") == 0 &&
		   out->ngroups == 2 && out->groups[1] == 27, "assignment: identity");
	}
	assignment_destroy(out);
	json_decref(json);

	in.slurm = (struct spec_slurm){ .partition = "gpu", .qos = "long" };
	json = over_the_wire(assignment_to_json(&in));
	out = assignment_from_json(json, &err);
	ok(out && out->slurm.partition && strcmp(out->slurm.partition, "gpu") == 0 && !out->slurm.account &&
	   out->slurm.qos && strcmp(out->slurm.qos, "long") == 0, "assignment: the stage's slurm keys");
	assignment_destroy(out);
	json_decref(json);
	in.slurm.partition = "a\nb";
	json = assignment_to_json(&in);
	ok(!assignment_from_json(json, &err) && err && strstr(err, "slurm.partition"),
	   "assignment: a partition sbatch would misread is refused");
	json_decref(json);
	in.slurm = (struct spec_slurm){ 0 };

	in.stage = "../etc";
	json = assignment_to_json(&in);
	ok(!assignment_from_json(json, &err) && err && strstr(err, "stage"), "assignment: unsafe stage refused");
	json_decref(json);
	in.stage = "timing";
	json = assignment_to_json(&in);
	json_object_del(json, "uid");
	ok(!assignment_from_json(json, &err) && err && strstr(err, "uid"), "assignment: no uid, no start");
	json_decref(json);
	free(err);
	ok(proto_safe_name("h1.lab-2_x") && !proto_safe_name(".hidden") && !proto_safe_name("a/b") &&
	   !proto_safe_name(""), "safe names");
}

static void test_report(void)
{
	struct report running = { .attempt = 2, .kind = REPORT_RUNNING, .pid = 4242,
				  .usage = INSTANCE_USAGE_UNKNOWN };
	struct report exited = { .attempt = 2, .kind = REPORT_EXITED, .exit_code = 4,
				 .usage = INSTANCE_USAGE_UNKNOWN };
	struct report killed = { .attempt = 2, .kind = REPORT_EXITED, .pid = 4242, .signal = 9,
				 .reason = "walltime", .usage = INSTANCE_USAGE_UNKNOWN };
	struct report failed = { .attempt = 1, .kind = REPORT_FAILED, .reason = "cannot start: x",
				 .usage = INSTANCE_USAGE_UNKNOWN };
	struct report stamped = { .attempt = 1, .kind = REPORT_EXITED, .exit_code = 0,
				  .started_ms = 1764633600123, .ended_ms = 1764633600456,
				  .usage = { .cpu_ms = 300, .rss = 0, .max_rss = 1 << 20 },
				  .cpu_list = "1", .gpu_list = "0,1" };
	struct report out;
	char *text, *err = NULL;
	json_t *json;

	json = over_the_wire(report_to_json(&running));
	ok(report_from_json(json, &out, NULL) == 0 && out.kind == REPORT_RUNNING && out.attempt == 2 &&
	   out.pid == 4242 && out.exit_code == -1 && !out.reason, "report: running with its pid");
	json_decref(json);
	text = proto_encode(report_to_json(&exited));
	is_str(text, "{\"attempt\":2,\"state\":\"exited\",\"exit_code\":4}",
	       "report: exited, no pid when its start was reported");
	json = json_loads(text, 0, NULL);
	ok(report_from_json(json, &out, NULL) == 0 && out.kind == REPORT_EXITED && out.exit_code == 4 &&
	   out.signal == 0 && out.pid == 0, "report: exit code back");
	json_decref(json);
	free(text);
	json = over_the_wire(report_to_json(&killed));
	ok(report_from_json(json, &out, NULL) == 0 && out.signal == 9 && out.exit_code == -1 &&
	   out.pid == 4242 && strcmp(out.reason, "walltime") == 0, "report: a signal and a reason");
	json_decref(json);
	json = over_the_wire(report_to_json(&failed));
	ok(report_from_json(json, &out, NULL) == 0 && out.kind == REPORT_FAILED &&
	   strcmp(out.reason, "cannot start: x") == 0 && !json_object_get(json, "pid"), "report: failed");
	json_decref(json);
	json = over_the_wire(report_to_json(&stamped));
	ok(report_from_json(json, &out, NULL) == 0 && out.started_ms == 1764633600123 &&
	   out.ended_ms == 1764633600456 && out.usage.cpu_ms == 300 && out.usage.max_rss == 1 << 20 &&
	   strcmp(out.cpu_list, "1") == 0 && strcmp(out.gpu_list, "0,1") == 0,
	   "report: stamped on the host, with its usage, cores and GPUs");
	json_decref(json);
	json = over_the_wire(report_to_json(&exited));
	ok(report_from_json(json, &out, NULL) == 0 && out.started_ms == 0 && out.ended_ms == 0 &&
	   out.usage.cpu_ms == -1 && !out.cpu_list, "report: an old runner's, without stamps");
	json_decref(json);
	json = json_loads("{\"attempt\": 1, \"state\": \"gone\"}", 0, NULL);
	ok(report_from_json(json, &out, &err) < 0 && err && strstr(err, "running, exited or failed"),
	   "report: an unknown state is refused");
	json_decref(json);
	free(err);
}

static void test_progress(void)
{
	struct progress_report in = { .attempt = 3, .done = 37, .total = 200 }, out;
	json_t *json = over_the_wire(progress_report_to_json(&in));

	progress_report_from_json(json, &out);
	ok(out.attempt == 3 && out.done == 37 && out.total == 200, "progress: done of total");
	ok(type_of(json, "attempt") == JSON_INTEGER && type_of(json, "done") == JSON_REAL,
	   "progress: the wire's types");
	json_decref(json);
	json = json_loads("{\"attempt\": 1, \"percent\": 18.5}", 0, NULL);
	progress_report_from_json(json, &out);
	ok(out.attempt == 1 && out.done == 18.5 && out.total == 100, "progress: a percentage is of 100");
	json_decref(json);
}

/* A Slurm runner's heartbeat: the executor object, each instance's job id
 * and pending reason; a local runner's has none of them; the start report
 * carries the job id. */
static void test_slurm_facts(void)
{
	const struct heartbeat_entry entries[] = {
		{ .id = 5, .attempt = 1, .slurm_job = "1234_7", .slurm_reason = "Priority",
		  .usage = INSTANCE_USAGE_UNKNOWN },
		{ .id = 6, .attempt = 1, .pid = 99, .usage = INSTANCE_USAGE_UNKNOWN },
	};
	struct heartbeat in = { .scratch_free = -1, .parsa_cpu_pct = -1, .outside_cpu_pct = -1,
				.parsa_mem_pct = -1, .outside_mem_pct = -1, .outside_cores = -1,
				.outside_mem = -1, .instances = entries, .ninstances = 2,
				.executor = { .kind = "slurm", .partition = "debug", .pending = 2, .running = 3,
					      .last_poll_ms = 1700000000123, .poll_error = "squeue: timed out",
					      .cpus_up = 8, .cpus_outside = 1, .accounting = "on" } }, out;
	struct report r = { .attempt = 1, .kind = REPORT_EXITED, .slurm_job = "1234_7",
			    .slurm_state = "CANCELLED by alice", .usage = INSTANCE_USAGE_UNKNOWN }, rout;
	json_t *json = over_the_wire(heartbeat_to_json(&in)), *bad;
	char *err = NULL;

	heartbeat_from_json(json, &out);
	ok(out.executor.kind && strcmp(out.executor.kind, "slurm") == 0 &&
	   strcmp(out.executor.partition, "debug") == 0 && out.executor.pending == 2 &&
	   out.executor.running == 3 && out.executor.last_poll_ms == 1700000000123 &&
	   out.executor.cpus_up == 8 && out.executor.cpus_outside == 1 &&
	   strcmp(out.executor.poll_error, "squeue: timed out") == 0 && out.executor.accounting &&
	   strcmp(out.executor.accounting, "on") == 0, "heartbeat: a Slurm host's facts");
	ok(strcmp(out.instances[0].slurm_job, "1234_7") == 0 &&
	   strcmp(out.instances[0].slurm_reason, "Priority") == 0, "heartbeat: an instance's job id and reason");
	ok(!out.instances[1].slurm_job && !out.instances[1].slurm_reason, "heartbeat: none for another");
	ok(!json_object_get(json_array_get(json_object_get(json, "instances"), 1), "slurm_job"),
	   "heartbeat: nothing on the wire for it");
	heartbeat_clear(&out);
	json_decref(json);

	in.executor = (struct heartbeat_executor){ 0 };
	json = over_the_wire(heartbeat_to_json(&in));
	heartbeat_from_json(json, &out);
	ok(!json_object_get(json, "executor") && !out.executor.kind && out.executor.pending == -1,
	   "heartbeat: a local host has no executor object");
	heartbeat_clear(&out);
	json_decref(json);
	bad = json_pack("{s:{s:s,s:s}}", "executor", "kind", "slurm", "accounting", "maybe");
	heartbeat_from_json(bad, &out);
	ok(out.executor.kind && !out.executor.accounting, "heartbeat: accounting other than on or off is ignored");
	heartbeat_clear(&out);
	json_decref(bad);
	bad = json_pack("{s:{s:s,s:i}}", "executor", "kind", "slurm\nx", "pending", 1);
	heartbeat_from_json(bad, &out);
	ok(!out.executor.kind, "heartbeat: a kind that is not one word is ignored");
	heartbeat_clear(&out);
	json_decref(bad);

	json = over_the_wire(report_to_json(&r));
	ok(report_from_json(json, &rout, &err) == 0 && rout.slurm_job && strcmp(rout.slurm_job, "1234_7") == 0,
	   "report: the Slurm job id");
	ok(rout.slurm_state && strcmp(rout.slurm_state, "CANCELLED by alice") == 0, "report: Slurm's end state");
	json_decref(json);
	r.slurm_state = NULL;
	json = over_the_wire(report_to_json(&r));
	ok(!json_object_get(json, "slurm_state") && report_from_json(json, &rout, &err) == 0 && !rout.slurm_state,
	   "report: none without accounting (an older runner's report reads the same)");
	json_decref(json);
	free(err);
}

int main(void)
{
	test_registration();
	test_heartbeat();
	test_work();
	test_assignment();
	test_report();
	test_progress();
	test_slurm_facts();
	return done_testing();
}
