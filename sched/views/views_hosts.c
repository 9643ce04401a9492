/* The views of hosts and of the cluster: hosts/<h>/status and its JSON,
 * and the cluster's status (see views.h). Jobs, stages and instances are
 * in views.c. */
#include "views.h"
#include "views_exec.h"
#include "views_internal.h"
#include "timewin.h"
#include "timing.h"

#include <stdio.h>
#include <string.h>

/* "unreachable since 04:40:01 (cannot mount ...)", or "" while the
 * host's volume answers. */
static void storage_text(const struct host *h, int64_t now, char *buf, size_t len)
{
	char at[64];

	buf[0] = '\0';
	if (h->storage_down_since <= 0)
		return;
	snprintf(buf, len, "unreachable since %s (%s)",
		 clock_time(h->storage_down_since * 1000, now, at, sizeof at),
		 h->storage_reason && *h->storage_reason ? h->storage_reason : "no reason given");
}

static const char *host_state(const struct host *h, int up)
{
	if (!up)
		return "down";
	return h->draining ? "draining" : "up";
}

json_t *views_host_json(const struct host *h, int up)
{
	json_t *features = strings_json(h->features, h->nfeatures), *json;

	json = json_pack("{s:s,s:s,s:i,s:I,s:I,s:I,s:i,s:i,s:o,"
			 "s:{s:i,s:I,s:I},s:{s:f,s:f,s:f},s:I,s:I,s:s}",
			 "name", h->name, "state", host_state(h, up), "cpus", h->cpus,
			 "mem", (json_int_t)h->mem, "scratch_total", (json_int_t)h->scratch_total,
			 "scratch_free", (json_int_t)h->scratch_free,
			 "cpu_limit", h->cpu_limit, "mem_limit", h->mem_limit, "features", features,
			 "reserved", "cpus", h->reserved_cpus, "mem", (json_int_t)h->reserved_mem,
			 "scratch", (json_int_t)h->reserved_scratch,
			 "live", "cpu_pct", h->cpu_pct, "mem_pct", h->mem_pct, "load1", h->load1,
			 "last_heartbeat_ms", (json_int_t)h->last_heartbeat_ms,
			 "running", (json_int_t)h->nactive, "mount", h->mount);
	if (json) {
		json_t *live = json_object_get(json, "live");

		json_object_set_new(json, "window", h->window ? json_string(h->window) : json_null());
		json_object_set_new(json, "drain_at_window_end", json_boolean(h->window_drain));
		json_object_set_new(live, "parsa_cpu_pct", json_real(share(h->cpu_pct, h->outside_cpu_pct)));
		json_object_set_new(live, "outside_cpu_pct", json_real(h->outside_cpu_pct));
		json_object_set_new(live, "parsa_mem_pct", json_real(share(h->mem_pct, h->outside_mem_pct)));
		json_object_set_new(live, "outside_mem_pct", json_real(h->outside_mem_pct));
		json_object_set_new(live, "outside_cores", json_real(h->outside_cores));
		json_object_set_new(live, "outside_mem", json_integer((json_int_t)h->outside_mem));
		json_object_set_new(json, "gpus", json_integer(h->gpus));
		json_object_set_new(json, "executor", views_host_exec_json(h));
		json_object_set_new(json_object_get(json, "reserved"), "gpus", json_integer(h->reserved_gpus));
		json_object_set_new(json, "storage", json_pack("{s:s,s:I,s:o}", "state",
				    h->storage_down_since > 0 ? "unreachable" : "reachable",
				    "down_since", (json_int_t)h->storage_down_since, "reason",
				    h->storage_reason ? json_string(h->storage_reason) : json_null()));
	}
	return json;
}

json_t *views_host_running_json(const struct host *h)
{
	json_t *running = json_array();

	for (size_t i = 0; i < h->nactive; i++) {
		const struct instance *in = h->active[i];

		json_array_append_new(running, json_pack("{s:I,s:s,s:s,s:i,s:s,s:I}",
				"job", (json_int_t)in->job->id, "name", in->job->name,
				"stage", in->stage->spec->name, "index", in->index,
				"state", inst_state_name(in->state),
				"started_ms", (json_int_t)in->started_ms));
	}
	return running;
}

char *views_host_status(const struct host *h, int up, int64_t now_ms)
{
	struct text t;
	char a[64], b[64], c[64];
	uint64_t free_mem = h->mem > h->reserved_mem ? h->mem - h->reserved_mem : 0;
	uint64_t free_scratch = h->scratch_free > h->reserved_scratch ?
				h->scratch_free - h->reserved_scratch : 0;

	text_open(&t);
	fprintf(t.f, "name: %s\nstate: %s\n", esc(&t, h->name), host_state(h, up));
	{
		char storage[600];

		storage_text(h, now_ms, storage, sizeof storage);
		if (*storage)
			fprintf(t.f, "storage: %s: nothing new starts here until it answers\n",
				esc(&t, storage));
		else
			fprintf(t.f, "storage: reachable\n");
	}
	fprintf(t.f, "capacity: %d cpus, %s mem, %s scratch\n", h->cpus, size(h->mem, a, sizeof a),
		size(h->scratch_total, b, sizeof b));
	fprintf(t.f, "reserved: %d cpus, %s mem, %s scratch\n", h->reserved_cpus,
		size(h->reserved_mem, a, sizeof a), size(h->reserved_scratch, b, sizeof b));
	fprintf(t.f, "free: %d cpus, %s mem, %s scratch\n",
		h->cpus > h->reserved_cpus ? h->cpus - h->reserved_cpus : 0,
		size(free_mem, a, sizeof a), size(free_scratch, b, sizeof b));
	fprintf(t.f, "live cpu: %.0f%% (parsa %.0f%%, outside %.0f%%: %.1f cores)\n", h->cpu_pct,
		share(h->cpu_pct, h->outside_cpu_pct), h->outside_cpu_pct, h->outside_cores);
	fprintf(t.f, "live mem: %.0f%% (parsa %.0f%%, outside %.0f%%: %s)\nlive load: %.2f\n",
		h->mem_pct, share(h->mem_pct, h->outside_mem_pct), h->outside_mem_pct,
		size(h->outside_mem, a, sizeof a), h->load1);
	views_host_exec_text(t.f, h, now_ms);
	if (h->gpus > 0)
		fprintf(t.f, "gpus: %d, %d reserved\n", h->gpus, h->reserved_gpus);
	fprintf(t.f, "cpu limit: %d%%\nmem limit: %d%%\n", h->cpu_limit, h->mem_limit);
	if (h->win) {
		int64_t change = timewin_next_change(h->win, now_ms);
		bool open = timewin_contains(h->win, now_ms);

		if (change > 0)
			timing_when(change, now_ms, c, sizeof c);
		fprintf(t.f, "window: %s (%s%s%s; at its end running work %s)\n", esc(&t, h->window),
			open ? "open" : "closed", change > 0 ? " until " : "",
			change > 0 ? c : "", h->window_drain ? "finishes" : "is stopped and requeued");
	}
	fprintf(t.f, "features:");
	for (size_t i = 0; i < h->nfeatures; i++)
		fprintf(t.f, " %s", esc(&t, h->features[i]));
	fprintf(t.f, "\n");
	if (h->last_heartbeat_ms)
		fprintf(t.f, "last heartbeat: %s (%.1f s ago)\n", iso_ms(h->last_heartbeat_ms, c, sizeof c),
			(double)(now_ms - h->last_heartbeat_ms) / 1000.0);
	else
		fprintf(t.f, "last heartbeat: none since the scheduler started\n");
	fprintf(t.f, "running: %zu\n", h->nactive);
	for (size_t i = 0; i < h->nactive; i++) {
		const struct instance *inst = h->active[i];

		fprintf(t.f, "instance %lld: job %lld stage %s index %d %s", (long long)inst->id,
			(long long)inst->job->id, esc(&t, inst->stage->spec->name), inst->index,
			inst_state_name(inst->state));
		if (inst->pid > 0)
			fprintf(t.f, " (pid %d)", inst->pid);
		fprintf(t.f, "\n");
	}
	return text_close(&t);
}

char *views_cluster_status(struct model *m, const int64_t jobs[5], const int *up, int64_t now_ms)
{
	int insts[INST_NSTATES] = { 0 }, nup = 0, ndrain = 0, ndown = 0;
	int cpus = 0, reserved = 0, free_cpus = 0, held = 0;
	struct text t;
	char a[64], b[64];

	for (size_t j = 0; j < model_nactive(m); j++) {
		const struct job *job = model_active_at(m, j);

		for (size_t s = 0; s < job->nstages; s++)
			for (int k = 0; k < INST_NSTATES; k++)
				insts[k] += job->stages[s].counts[k];
	}
	for (size_t i = 0; i < model_nhosts(m); i++) {
		const struct host *h = model_host_at(m, i);

		if (!up[i])
			ndown++;
		else if (h->draining)
			ndrain++;
		else
			nup++;
		if (up[i]) {
			/* Free is what a new instance could get (placement's rule):
			 * not the cores outside load keeps busy, nothing on a host
			 * past its live limits or draining. */
			struct placement_host ph = {
				.up = 1, .draining = h->draining, .cpus = h->cpus,
				.reserved_cpus = h->reserved_cpus, .outside_cpus = (int)(h->outside_cores + 0.5),
				.outside_cpu_pct = h->outside_cpu_pct, .outside_mem_pct = h->outside_mem_pct,
				.cpu_limit = h->cpu_limit, .mem_limit = h->mem_limit,
			};
			int startable = placement_startable_cpus(&ph);

			cpus += h->cpus;
			reserved += h->reserved_cpus;
			free_cpus += startable;
			held += (h->cpus > h->reserved_cpus ? h->cpus - h->reserved_cpus : 0) - startable;
		}
	}
	text_open(&t);
	fprintf(t.f, "hosts: %zu (%d up, %d draining, %d down)\n", model_nhosts(m), nup, ndrain, ndown);
	fprintf(t.f, "cpus: %d total, %d reserved, %d free", cpus, reserved, free_cpus);
	if (held > 0)
		fprintf(t.f, " (%d held by load outside parsa, draining or past a host's limit)", held);
	fprintf(t.f, "\n");
	fprintf(t.f, "jobs: %lld queued, %lld running, %lld succeeded, %lld failed, %lld cancelled\n",
		(long long)jobs[JOB_QUEUED], (long long)jobs[JOB_RUNNING],
		(long long)jobs[JOB_SUCCEEDED], (long long)jobs[JOB_FAILED],
		(long long)jobs[JOB_CANCELLED]);
	fprintf(t.f, "instances: %d queued, %d assigned, %d running\n", insts[INST_QUEUED],
		insts[INST_ASSIGNED], insts[INST_RUNNING]);
	for (size_t i = 0; i < model_nhosts(m); i++) {
		const struct host *h = model_host_at(m, i);
		char seen[64] = "never", storage[600];

		if (h->last_heartbeat_ms)
			snprintf(seen, sizeof seen, "%.1f s ago",
				 (double)(now_ms - h->last_heartbeat_ms) / 1000.0);
		storage_text(h, now_ms, storage, sizeof storage);
		fprintf(t.f, "host %s: %s, cpus %d/%d reserved, mem %s/%s reserved, live cpu %.0f%% "
			"(outside %.0f%%) mem %.0f%% (outside %.0f%%) load %.2f, running %zu, last "
			"heartbeat %s%s%s\n", esc(&t, h->name), host_state(h, up[i]), h->reserved_cpus, h->cpus,
			size(h->reserved_mem, a, sizeof a), size(h->mem, b, sizeof b), h->cpu_pct,
			h->outside_cpu_pct, h->mem_pct, h->outside_mem_pct, h->load1, h->nactive, seen,
			*storage ? ", storage " : "", esc(&t, storage));
	}
	return text_close(&t);
}
