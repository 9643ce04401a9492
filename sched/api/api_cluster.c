#include "api_cluster.h"
#include "api_reply.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>

void api_cluster_hosts(struct call *c)
{
	reply_json(c, MHD_HTTP_OK, json_pack("{s:o}", "hosts", engine_hosts_json(c->engine)));
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
	char *err = NULL, *text = engine_cluster_status(c->engine, &err);

	if (text)
		reply_text(c, text);
	else
		reply_errno(c, EIO, err);
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
