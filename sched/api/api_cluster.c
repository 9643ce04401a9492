#include "api_cluster.h"
#include "api_reply.h"
#include "store.h"
#include "util.h"
#include "views.h"

#include <errno.h>
#include <stdlib.h>

void api_cluster_hosts(struct call *c)
{
	struct engine *e = c->engine;
	struct model *m = engine_model(e);
	json_t *hosts = json_array();

	engine_lock(e);
	for (size_t i = 0; i < model_nhosts(m); i++) {
		struct host *h = model_host_at(m, i);

		json_array_append_new(hosts, views_host_json(h, engine_host_up(e, h)));
	}
	engine_unlock(e);
	reply_json(c, MHD_HTTP_OK, json_pack("{s:o}", "hosts", hosts));
}

void api_cluster_host_status(struct call *c)
{
	char *text = engine_host_status(c->engine, c->args[0]);

	if (text)
		reply_text(c, text);
	else
		reply_error(c, MHD_HTTP_NOT_FOUND, "no such host");
}

void api_cluster_status(struct call *c)
{
	struct engine *e = c->engine;
	struct model *m = engine_model(e);
	int64_t jobs[5];
	int *up;
	char *text, *fair, *full, *err = NULL;

	engine_lock(e);
	up = xcalloc(model_nhosts(m) + 1, sizeof *up);
	for (size_t i = 0; i < model_nhosts(m); i++)
		up[i] = engine_host_up(e, model_host_at(m, i));
	/* Every job the store has, not only those in memory. */
	if (store_job_counts(engine_store(e), jobs, &err) < 0) {
		engine_unlock(e);
		free(up);
		reply_errno(c, EIO, err);
		return;
	}
	text = views_cluster_status(m, jobs, up, engine_now_ms(e));
	fair = engine_fairshare_text(e);
	engine_unlock(e);
	free(up);
	full = xasprintf("%s%s", text, fair);
	free(text);
	free(fair);
	reply_text(c, full);
}

/* The durations of the last scheduling passes (bench/placement reads them),
 * and how many submissions went in how many transactions (bench/submit) and
 * how many bursts of them were placed together. */
void api_cluster_stats(struct call *c)
{
	enum { MAX_PASSES = 4096 };
	double *ms = xcalloc(MAX_PASSES, sizeof *ms);
	json_t *list = json_array();
	uint64_t total = 0;
	size_t n = engine_pass_stats(c->engine, ms, MAX_PASSES, &total), groups, submitted;
	struct engine_spare_stats spares;

	engine_submit_stats(c->engine, &groups, &submitted);
	engine_spare_stats(c->engine, &spares);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(list, json_real(ms[i]));
	free(ms);
	reply_json(c, MHD_HTTP_OK,
		   json_pack("{s:I,s:o,s:I,s:I,s:I,s:{s:I,s:I,s:I,s:I}}", "passes", (json_int_t)total,
			     "pass_ms", list, "submitted", (json_int_t)submitted, "submit_groups",
			     (json_int_t)groups, "bursts", (json_int_t)engine_bursts(c->engine),
			     "spare_folders", "jobs_ready",
			     (json_int_t)spares.ready[0], "jobs_taken", (json_int_t)spares.taken[0],
			     "stages_ready", (json_int_t)spares.ready[1], "stages_taken",
			     (json_int_t)spares.taken[1]));
}
