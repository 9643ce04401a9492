/* The runner's report queue: order, retry until acknowledged, refused reports
 * dropped, and pending reports surviving a restart through the state folder,
 * every field of an exited report (host stamps, usage, cores, GPUs) with them. */
#include "api_paths.h"
#include "log.h"
#include "proto.h"
#include "report.h"
#include "tap.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TAP_STATE;

/* A fake scheduler: answers from a script, records what it acknowledged. */
struct fake {
	const enum report_result *script;
	size_t nscript, calls;
	char sent[16][128];
	size_t nsent;
	char last[1024];    /* the whole body of the last one answered */
};

static enum report_result fake_send(void *arg, const char *path, const char *body, char **err)
{
	struct fake *f = arg;
	enum report_result r = f->calls < f->nscript ? f->script[f->calls] : REPORT_ACKED;

	f->calls++;
	if (r == REPORT_REFUSED) {
		free(*err);
		*err = xstrdup("no such instance");
	}
	/* "<instance id> <body>" of a POST to the instance's state. */
	if (r != REPORT_RETRY && f->nsent < 16) {
		char buf[64];
		const char *args[1] = { "?" };
		bool known;

		if (api_route_find("POST", path, buf, sizeof buf, args, 1, &known) != API_INSTANCE_STATE)
			args[0] = path;
		snprintf(f->sent[f->nsent++], sizeof f->sent[0], "%s %s", args[0], body);
	}
	if (r != REPORT_RETRY)
		snprintf(f->last, sizeof f->last, "%s", body);
	return r;
}

static json_t *state(int attempt, const char *s)
{
	return json_pack("{s:i, s:s}", "attempt", attempt, "state", s);
}

/* A runner restart: the queue dropped, a new one loaded from dir. */
static struct report_queue *restart(struct report_queue *q, const char *dir)
{
	char *err = NULL;

	report_queue_destroy(q);
	q = report_queue_create(dir, &err);
	if (!q)
		diag("cannot reopen %s: %s", dir, err);
	free(err);
	return q;
}

int main(void)
{
	char tmpl[] = "/tmp/parsa-test-report.XXXXXX";
	char *dir = mkdtemp(tmpl), *err = NULL, *cmd;
	struct report_queue *q;
	struct fake f;
	static const enum report_result down_then_up[] = { REPORT_RETRY, REPORT_RETRY, REPORT_ACKED, REPORT_REFUSED };

	log_init("test_report", 1, LOG_LEVEL_WARN);
	if (!dir) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}

	/* In memory. */
	q = report_queue_create(NULL, &err);
	ok(q != NULL, "a queue without a state folder");
	report_queue_push(q, 17, state(1, "running"));
	report_queue_push(q, 17, state(1, "exited"));
	report_queue_push(q, 18, state(2, "failed"));
	report_queue_push(q, 19, state(1, "running"));
	is_int(report_queue_pending(q), 4, "four pending");
	memset(&f, 0, sizeof f);
	f.script = down_then_up;
	f.nscript = ARRAY_LEN(down_then_up);
	is_int(report_queue_flush(q, fake_send, &f), 4, "scheduler down: all four kept");
	is_int(f.calls, 1, "and the first failure stops the flush");
	is_int(report_queue_flush(q, fake_send, &f), 4, "still down");
	is_int(report_queue_flush(q, fake_send, &f), 0, "scheduler back: all delivered or refused");
	is_int(f.nsent, 4, "four answered");
	is_str(f.sent[0], "17 {\"attempt\":1,\"state\":\"running\"}", "in order: first");
	is_str(f.sent[1], "17 {\"attempt\":1,\"state\":\"exited\"}", "second (refused, dropped)");
	is_str(f.sent[2], "18 {\"attempt\":2,\"state\":\"failed\"}", "third");
	is_str(f.sent[3], "19 {\"attempt\":1,\"state\":\"running\"}", "fourth");
	/* Many pushes and partial flushes keep the FIFO straight. */
	for (int i = 0; i < 100; i++)
		report_queue_push(q, 1000 + i, state(1, "running"));
	memset(&f, 0, sizeof f);
	is_int(report_queue_flush(q, fake_send, &f), 0, "a hundred more delivered");
	is_str(f.sent[15], "1015 {\"attempt\":1,\"state\":\"running\"}", "in order");
	report_queue_destroy(q);

	/* Persisted: reports left by a runner that stopped come back, in order. */
	q = report_queue_create(dir, &err);
	ok(q != NULL, "a queue with a state folder: %s", err ? err : "ok");
	report_queue_push(q, 21, state(1, "running"));
	report_queue_push(q, 21, state(1, "exited"));
	report_queue_push(q, 22, state(3, "running"));
	memset(&f, 0, sizeof f);
	f.script = down_then_up;
	f.nscript = 1;
	report_queue_flush(q, fake_send, &f);
	report_queue_destroy(q);
	q = report_queue_create(dir, &err);
	ok(q != NULL, "reopened");
	is_int(q ? report_queue_pending(q) : 0, 3, "the three undelivered reports are back");
	memset(&f, 0, sizeof f);
	is_int(report_queue_flush(q, fake_send, &f), 0, "and are delivered");
	is_str(f.sent[0], "21 {\"attempt\":1,\"state\":\"running\"}", "in their order: first");
	is_str(f.sent[2], "22 {\"attempt\":3,\"state\":\"running\"}", "last");
	report_queue_push(q, 23, state(1, "running"));
	report_queue_destroy(q);
	q = report_queue_create(dir, &err);
	is_int(q ? report_queue_pending(q) : 0, 1, "acknowledged reports are not sent again; new ones follow");
	memset(&f, 0, sizeof f);
	report_queue_flush(q, fake_send, &f);
	is_str(f.sent[0], "23 {\"attempt\":1,\"state\":\"running\"}", "the new one");
	report_queue_destroy(q);

	/* Pushed for later: no file until kept, the order the same. */
	q = report_queue_create(dir, &err);
	report_queue_push_later(q, 25, state(1, "exited"));
	report_queue_push(q, 26, state(1, "failed"));
	report_queue_push_later(q, 27, state(1, "exited"));
	q = restart(q, dir);
	is_int(q ? report_queue_pending(q) : 0, 1, "reports pushed for later are not on disk before keep");
	memset(&f, 0, sizeof f);
	report_queue_flush(q, fake_send, &f);
	report_queue_push_later(q, 28, state(1, "exited"));
	report_queue_push(q, 29, state(1, "failed"));
	report_queue_push_later(q, 30, state(2, "exited"));
	f.script = down_then_up;
	f.nscript = 1;
	f.calls = 0;
	report_queue_flush(q, fake_send, &f);
	report_queue_keep(q);
	report_queue_keep(q);
	q = restart(q, dir);
	is_int(q ? report_queue_pending(q) : 0, 3, "kept, the undelivered ones survive a restart, once each");
	memset(&f, 0, sizeof f);
	report_queue_flush(q, fake_send, &f);
	is_str(f.sent[0], "28 {\"attempt\":1,\"state\":\"exited\"}", "in their order: first");
	is_str(f.sent[1], "29 {\"attempt\":1,\"state\":\"failed\"}", "second");
	is_str(f.sent[2], "30 {\"attempt\":2,\"state\":\"exited\"}", "third");
	report_queue_push_later(q, 31, state(1, "exited"));
	report_queue_flush(q, fake_send, &f);
	report_queue_keep(q);
	q = restart(q, dir);
	is_int(q ? report_queue_pending(q) : 0, 0, "one delivered before keep leaves nothing behind");
	report_queue_destroy(q);

	/* An exited report with everything the runner measured, kept on disk. */
	{
		struct report r = {
			.attempt = 2, .kind = REPORT_EXITED, .pid = 4242, .signal = 9,
			.reason = "out of memory: used 1.2G of mem = 1G", .started_ms = 1796000000123,
			.ended_ms = 1796000004567, .usage = { 3210, -1, 1288490188 },
			.cpu_list = "0-1,4", .gpu_list = "0,1",
		}, back;
		json_t *json;

		q = report_queue_create(dir, &err);
		report_queue_push(q, 24, report_to_json(&r));
		report_queue_destroy(q);
		q = report_queue_create(dir, &err);
		memset(&f, 0, sizeof f);
		is_int(report_queue_flush(q, fake_send, &f), 0, "a full exited report survives a restart");
		json = json_loads(f.last, 0, NULL);
		ok(json && report_from_json(json, &back, NULL) == 0, "and parses: %s", f.last);
		ok(json && back.kind == REPORT_EXITED && back.signal == 9 && back.pid == 4242 &&
		   back.started_ms == r.started_ms && back.ended_ms == r.ended_ms, "its kind, signal and stamps");
		ok(json && back.usage.cpu_ms == 3210 && back.usage.max_rss == 1288490188 && back.usage.rss == -1,
		   "its usage");
		ok(json && back.reason && strcmp(back.reason, r.reason) == 0 && back.cpu_list &&
		   strcmp(back.cpu_list, "0-1,4") == 0 && back.gpu_list && strcmp(back.gpu_list, "0,1") == 0,
		   "its reason, cores and GPUs");
		json_decref(json);
		report_queue_destroy(q);
	}

	cmd = xasprintf("rm -rf '%s'", dir);
	if (system(cmd) != 0)
		diag("cannot remove %s", dir);
	free(cmd);
	free(err);
	return done_testing();
}
