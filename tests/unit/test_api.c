/* The scheduler's HTTP API on a real unix socket, through the shared client:
 * routes, statuses, identity headers, the socket's mode and readiness. */
#include "api.h"
#include "api_client.h"
#include "tap.h"
#include "paths_pool.h"
#include "util.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TAP_STATE;

static long call(struct api_client *cl, const char *method, const char *path, const char *body,
		 const struct api_identity *as, char **out)
{
	struct api_reply r = { 0 };
	long status;

	if (api_call(cl, method, path, body, body ? strlen(body) : 0, as, 5000, &r, NULL) < 0) {
		diag("%s %s: %s", method, path, strerror(errno));
		return -1;
	}
	status = r.status;
	if (out)
		*out = r.body ? xstrdup(r.body) : xstrdup("");
	api_reply_clear(&r);
	return status;
}

int main(void)
{
	char dir[] = "/tmp/parsa-test-api.XXXXXX";
	struct engine_config cfg = { 0 };
	struct api_identity other = { .uid = 4242, .gid = 4242 };
	char *db, *vol, *sock, *endpoint, *err = NULL, *out = NULL, *cmd;
	struct store *store;
	struct backend *storage;
	struct model *model;
	struct engine *engine;
	struct api *api, *second;
	struct api_client *cl;
	struct stat st;
	json_t *json;

	if (!mkdtemp(dir))
		return 1;
	db = xasprintf("%s/parsa.db", dir);
	vol = xasprintf("%s/storage", dir);
	sock = xasprintf("%s/sched.sock", dir);
	endpoint = xasprintf("unix:%s", sock);
	mkdir(vol, 0755);
	store = store_open(db, &err);
	storage = backend_create(vol, &err);
	model = model_create();
	store_load(store, model, 0, &err);
	engine = engine_create(&cfg, store, storage, model, &err);
	engine_start(engine, &err);
	api = api_create(sock, engine, &err);
	ok(api != NULL, "the API listens (%s)", err ? err : "");
	ok(stat(sock, &st) == 0 && S_ISSOCK(st.st_mode), "the socket exists once it answers");
	is_int(st.st_mode & 0777, geteuid() == 0 ? 0666 : 0600, "its mode");
	second = api_create(sock, engine, &err);
	ok(second == NULL && err && strstr(err, "another scheduler"), "a second one is refused");
	api_destroy(second);

	cl = api_client_create(endpoint, &err);
	is_int(call(cl, "GET", TP(API_STATUS), NULL, NULL, &out), 200, "GET /v1/status");
	ok(strstr(out, "hosts: 0") != NULL, "the cluster view");
	free(out);
	is_int(call(cl, "GET", TP(API_JOBS_LAST), NULL, NULL, NULL), 404, "no job yet");
	is_int(call(cl, "POST", TP(API_JOBS_SUBMIT), "{\"name\":\"a.conf\",\"spec\":\"[stage s]\\nrun = true\\n\"}",
		    NULL, &out), 201, "submit");
	json = json_loads(out, 0, NULL);
	is_int(json_integer_value(json_object_get(json, "id")), 1, "job 1");
	json_decref(json);
	free(out);
	is_int(call(cl, "POST", TP(API_JOBS_SUBMIT), "{\"name\":\"b.conf\",\"spec\":\"[stage s]\\ncpus = -1\\n\"}",
		    NULL, &out), 400, "a bad spec is 400");
	ok(strstr(out, "b.conf:") != NULL, "with file:line errors: %s", out);
	free(out);
	is_int(call(cl, "POST", TP(API_JOBS_SUBMIT), "not json", NULL, NULL), 400, "a body that is not JSON");
	/* A NUL byte reaches the spec parser: its file:line answer, not jansson's. */
	is_int(call(cl, "POST", TP(API_JOBS_SUBMIT), "{\"name\":\"n.conf\",\"spec\":\"[stage s]\\nrun = a\\u0000b\\n\"}",
		    NULL, &out), 400, "a spec with a NUL byte is 400");
	ok(strstr(out, "n.conf:2: is not a text file") != NULL && !strstr(out, "JSON_ALLOW_NUL"),
	   "with the spec parser's file:line: %s", out);
	free(out);
	is_int(call(cl, "POST", TP(API_JOBS_SUBMIT), "{\"name\":\"n\\u0000.conf\",\"spec\":\"[stage s]\\nrun = a\\n\"}",
		    NULL, NULL), 400, "a name with a NUL byte is 400");
	is_int(call(cl, "POST", TP_PATH(API_JOB_CTL, 1), "{\"check\":\"hold\"}", NULL, &out), 200, "check of hold");
	ok(strstr(out, "\"ok\":true") != NULL, "is a command: %s", out);
	free(out);
	is_int(call(cl, "POST", TP_PATH(API_JOB_CTL, 1), "{\"check\":\"bogus\"}", NULL, &out), 200, "check of bogus");
	ok(strstr(out, "\"ok\":false") && strstr(out, "unknown command 'bogus'"), "is not: %s", out);
	free(out);
	is_int(call(cl, "GET", TP(API_JOBS_LAST), NULL, NULL, &out), 200, "last");
	ok(strstr(out, "\"id\":1") != NULL, "is job 1");
	free(out);
	is_int(call(cl, "GET", TP_PATH(API_JOB_STATUS, 1), NULL, NULL, &out), 200, "status");
	ok(strstr(out, "state: queued") != NULL, "text status");
	free(out);
	is_int(call(cl, "GET", TP_PATH(API_JOB, 1), NULL, NULL, &out), 200, "status.json");
	json = json_loads(out, 0, NULL);
	is_str(json_string_value(json_object_get(json, "state")), "queued", "JSON state");
	json_decref(json);
	free(out);
	is_int(call(cl, "GET", TP_PATH(API_JOB_SPEC, 1), NULL, NULL, &out), 200, "spec");
	is_str(out, "[stage s]\nrun = true\n", "byte for byte");
	free(out);
	/* Until the scheduler's first pass over the job (its folders are made
	 * first), why says the stage waits for that pass. */
	for (int tries = 0;; tries++) {
		long code;

		out = NULL;
		code = call(cl, "GET", TP_PATH(API_JOB_WHY, 1), NULL, NULL, &out);
		if (code != 200 || strstr(out, "no host is registered") || tries == 100) {
			is_int(code, 200, "why");
			if (!ok(out && strstr(out, "no host is registered"), "why without hosts"))
				diag("why said: %s", out ? out : "(nothing)");
			break;
		}
		free(out);
		usleep(20000);
	}
	free(out);
	is_int(call(cl, "GET", TP_PATH(API_JOB_EVENTS, 1), NULL, NULL, &out), 200, "events");
	ok(strstr(out, "  submitted by ") != NULL, "the submission event");
	free(out);
	is_int(call(cl, "GET", tp_path(API_STAGE_STATUS, 1, "s", 0, NULL), NULL, NULL, NULL), 200, "stage status");
	is_int(call(cl, "GET", tp_path(API_INSTANCE_STATUS, 1, "s", 0, NULL), NULL, NULL, NULL), 200,
	       "instance status");
	is_int(call(cl, "GET", tp_path(API_STAGE_STATUS, 1, "x", 0, NULL), NULL, NULL, NULL), 404, "no stage x");
	is_int(call(cl, "GET", tp_path(API_INSTANCE_STATUS, 1, "s", 1, NULL), NULL, NULL, NULL), 404,
	       "no instance 1");
	is_int(call(cl, "GET", TP_PATH(API_JOB_STATUS, 99), NULL, NULL, NULL), 404, "no job 99");
	is_int(call(cl, "GET", tp_path(API_JOB_WAIT, 1, NULL, 0, "timeout_ms=50"), NULL, NULL, &out), 200, "wait");
	ok(strstr(out, "\"done\":false") != NULL, "not done after 50 ms");
	free(out);
	is_int(call(cl, "GET", "/nothing", NULL, NULL, NULL), 404, "unknown path");
	is_int(call(cl, "DELETE", TP(API_JOBS_SUBMIT), NULL, NULL, NULL), 405, "wrong method");

	/* Acting for another user (this process is trusted: it runs the scheduler). */
	is_int(call(cl, "POST", TP_PATH(API_JOB_CTL, 1), "{\"command\":\"hold\"}", &other, &out), 403,
	       "another user may not hold the job");
	free(out);
	is_int(call(cl, "GET", TP(API_JOBS_LAST), NULL, &other, NULL), 404, "last is per user");
	is_int(call(cl, "POST", TP(API_HOSTS_REGISTER), "{\"name\":\"h1\",\"cpus\":1}", &other, NULL), 403,
	       "runner endpoints are not for other users");
	is_int(call(cl, "POST", TP_PATH(API_JOB_CTL, 1), "{\"command\":\"dance\"}", NULL, NULL), 400,
	       "an unknown command is 400");
	is_int(call(cl, "POST", TP_PATH(API_JOB_CTL, 1), "{\"command\":\"release\"}", NULL, NULL), 409,
	       "release of a job not held is 409");
	is_int(call(cl, "POST", TP_PATH(API_JOB_CTL, 1), "{\"command\":\"hold\"}", NULL, NULL), 200, "hold");

	/* The runner's side. */
	is_int(call(cl, "POST", TP_NAME(API_HOST_HEARTBEAT, "h1"), "{\"cpu_pct\":1}", NULL, NULL), 404,
	       "heartbeat of an unknown host");
	is_int(call(cl, "POST", TP(API_HOSTS_REGISTER), "{\"name\":\"h1\",\"cpus\":2,\"mem\":1073741824}", NULL,
		    NULL), 200, "register");
	is_int(call(cl, "POST", TP_NAME(API_HOST_HEARTBEAT, "h1"),
		    "{\"cpu_pct\":1,\"mem_pct\":2,\"load1\":0.1,\"instances\":[]}", NULL, NULL), 200,
	       "heartbeat");
	is_int(call(cl, "GET", tp_path(API_HOST_WORK, 0, "h1", 0, "timeout_ms=50"), NULL, NULL, &out), 200,
	       "work while held");
	ok(strstr(out, "\"start\":[]") != NULL, "nothing to start");
	free(out);
	is_int(call(cl, "POST", TP_PATH(API_JOB_CTL, 1), "{\"command\":\"release\"}", NULL, NULL), 200,
	       "release");
	is_int(call(cl, "GET", tp_path(API_HOST_WORK, 0, "h1", 0, "timeout_ms=5000"), NULL, NULL, &out), 200, "work");
	ok(strstr(out, "\"id\":1,\"attempt\":1") != NULL, "the assignment: %s", out);
	free(out);
	is_int(call(cl, "POST", TP_PATH(API_INSTANCE_STATE, 1), "{\"attempt\":1,\"state\":\"dancing\"}", NULL,
		    NULL), 400, "an unknown state is 400");
	is_int(call(cl, "POST", TP_PATH(API_INSTANCE_STATE, 1), "{\"attempt\":1,\"state\":\"running\",\"pid\":9}",
		    NULL, NULL), 200, "running");
	is_int(call(cl, "POST", TP_PATH(API_INSTANCE_STATE, 1), "{\"attempt\":1,\"state\":\"exited\",\"exit_code\":0}",
		    NULL, NULL), 200, "exited");
	is_int(call(cl, "POST", TP_PATH(API_INSTANCE_STATE, 9), "{\"attempt\":1,\"state\":\"running\"}", NULL,
		    NULL), 404, "no instance 9");
	is_int(call(cl, "GET", tp_path(API_JOB_WAIT, 1, NULL, 0, "timeout_ms=5000"), NULL, NULL, &out), 200, "wait");
	is_str(out, "{\"done\":true,\"state\":\"succeeded\"}", "the job succeeded");
	free(out);
	is_int(call(cl, "GET", TP(API_HOSTS_LIST), NULL, NULL, &out), 200, "hosts");
	ok(strstr(out, "\"name\":\"h1\"") && strstr(out, "\"state\":\"up\""), "h1 is up");
	free(out);
	is_int(call(cl, "GET", TP_NAME(API_HOST_STATUS, "h1"), NULL, NULL, &out), 200, "host status");
	ok(strstr(out, "live cpu: 1%") != NULL, "live cpu line");
	free(out);
	is_int(call(cl, "GET", tp_path(API_JOBS_LIST, 0, NULL, 0, "uid=4242"), NULL, NULL, &out), 200, "jobs of uid 4242");
	is_str(out, "{\"jobs\":[]}", "none");
	free(out);

	api_client_destroy(cl);
	engine_stop(engine);
	api_destroy(api);
	ok(access(sock, F_OK) < 0, "the socket is gone after the stop");
	engine_destroy(engine);
	model_destroy(model);
	backend_destroy(storage);
	store_close(store);
	cmd = xasprintf("rm -rf '%s'", dir);
	if (system(cmd) != 0)
		diag("cannot remove %s", dir);
	free(cmd);
	free(db);
	free(vol);
	free(sock);
	free(endpoint);
	free(err);
	tp_free();
	return done_testing();
}
