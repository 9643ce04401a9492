/* The runners' side of the engine: a host registers, sends heartbeats (live
 * use, what it runs, progress) and reports on instances, long-polls for work
 * and leaves when its runner stops; an instance posts its progress. */
#include "engine_internal.h"
#include "escape.h"
#include "proto.h"
#include "api_client.h"
#include "log.h"
#include "timewin.h"
#include "util.h"
#include "views.h"

#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The host a runner names (lock held); NULL with ENOENT and *err, which adds
 * hint to "no host 'NAME'". */
static struct host *named_host(struct engine *e, const char *name, const char *hint, char **err)
{
	struct host *h = model_host(e->model, name);

	if (!h) {
		errno = ENOENT;
		errprintf(err, "no host '%s'%s", name, hint);
	}
	return h;
}

/* Write what a runner's news changed; a failure is only logged (what, then
 * why): the objects stay dirty and the next pass writes them. */
__attribute__((format(printf, 2, 3)))
static void flush_or_warn(struct engine *e, const char *what, ...)
{
	char *ferr = NULL, context[256];
	va_list ap;

	if (engine_flush(e, &ferr) == 0)
		return;
	va_start(ap, what);
	vsnprintf(context, sizeof context, what, ap);
	va_end(ap);
	log_warnx("%s: cannot write the state (will retry): %s", context, ferr ? ferr : "?");
	free(ferr);
}

int engine_register_host(struct engine *e, const struct host_info *info, char **err)
{
	struct timewin *win = NULL;
	struct host *h;
	char *why = NULL, shown[8];
	int ret = -1;

	/* The name is a folder of hosts/ and a field of every view that
	 * mentions the host: no '/' and no control character. */
	if (!info->name || !*info->name || strchr(info->name, '/') ||
	    escape_find_control(info->name, shown, sizeof shown) || info->cpus <= 0) {
		errno = EINVAL;
		return errprintf(err, "a host needs a name (no '/', no control character) and cpus > 0");
	}
	if (info->window && *info->window && !(win = timewin_parse(info->window, &why))) {
		errno = EINVAL;
		errprintf(err, "window '%s': %s", info->window, why ? why : "not a window");
		free(why);
		return -1;
	}
	pthread_mutex_lock(&e->lock);
	h = model_host(e->model, info->name);
	if (!h)
		h = model_add_host(e->model, info->name);
	h->cpus = info->cpus;
	h->mem = info->mem;
	h->scratch_total = info->scratch_total;
	h->scratch_free = info->scratch_free;
	h->cpu_limit = info->cpu_limit > 0 ? info->cpu_limit : 90;
	h->mem_limit = info->mem_limit > 0 ? info->mem_limit : 90;
	for (size_t i = 0; i < h->nfeatures; i++)
		free(h->features[i]);
	free(h->features);
	h->features = xcalloc(info->nfeatures ? info->nfeatures : 1, sizeof *h->features);
	h->nfeatures = info->nfeatures;
	for (size_t i = 0; i < info->nfeatures; i++)
		h->features[i] = xstrdup(info->features[i]);
	free(h->mount);
	h->mount = xstrdup(info->mount ? info->mount : "");
	free(h->window);
	timewin_destroy(h->win);
	h->win = win;
	h->window = win ? xstrdup(timewin_text(win)) : NULL;
	h->window_drain = info->window_drain;
	h->gpus = info->gpus;
	h->registered_ms = engine_now(e);
	/* Registering is the first sign of life: the host is up from now on. */
	h->last_heartbeat_ms = h->registered_ms;
	h->last_heartbeat_mono = time_mono_ms();
	/* Assignments not yet confirmed go out again to the (new) runner. */
	for (size_t i = 0; i < h->nactive; i++) {
		h->active[i]->start_sent = false;
		h->active[i]->cancel_sent = false;
	}
	model_dirty_host(e->model, h);
	if (engine_flush(e, err) < 0)
		goto out;
	log_info("host %s registered: %d cpus", h->name, h->cpus);
	engine_kick(e);
	ret = 0;
out:
	engine_unlock(e);
	return ret;
}

/* What the host's heartbeat says runs there outside parsa. A runner too old
 * to split its live use has it all counted as outside, as it was before. */
static void host_outside_use(struct host *h, const struct heartbeat *hb)
{
	double mem_bytes;

	h->outside_cpu_pct = hb->outside_cpu_pct >= 0 ? hb->outside_cpu_pct : hb->cpu_pct;
	h->outside_mem_pct = hb->outside_mem_pct >= 0 ? hb->outside_mem_pct : hb->mem_pct;
	h->outside_cores = hb->outside_cores >= 0 ? hb->outside_cores : hb->cpu_pct / 100.0 * h->cpus;
	mem_bytes = hb->outside_mem >= 0 ? (double)hb->outside_mem : hb->mem_pct / 100.0 * (double)h->mem;
	h->outside_mem = mem_bytes > 0 && mem_bytes < 1e19 ? (uint64_t)mem_bytes : 0;
}

/* What the host's mount says of the volume: while it is unreachable the host
 * takes no new work (placement_host_open). Changes are logged once. */
static void host_storage(struct host *h, const struct heartbeat *hb)
{
	if (hb->storage_down_since > 0) {
		const char *reason = hb->storage_reason && *hb->storage_reason ? hb->storage_reason :
				     "no reason given";

		if (h->storage_down_since <= 0)
			log_warnx("host %s: storage unreachable: %s", h->name, reason);
		h->storage_down_since = hb->storage_down_since;
		model_set_text(&h->storage_reason, reason);
	} else if (h->storage_down_since > 0) {
		log_info("host %s: storage reachable again", h->name);
		h->storage_down_since = 0;
		free(h->storage_reason);
		h->storage_reason = NULL;
	}
}

/* What a runner that hands its instances to Slurm says of it (shown in the
 * views; nothing is placed by it). A heartbeat without it: a local host. */
static void host_executor(struct host *h, const struct heartbeat_executor *x)
{
	if (!x->kind) {
		model_host_executor_free(h->exec);
		h->exec = NULL;
		return;
	}
	if (!h->exec)
		h->exec = xcalloc(1, sizeof *h->exec);
	model_set_short(&h->exec->kind, x->kind, 32);
	model_set_text(&h->exec->partition, "");
	model_set_short(&h->exec->partition, x->partition, 128);
	model_set_short(&h->exec->poll_error, x->poll_error, 512);
	h->exec->pending = x->pending;
	h->exec->running = x->running;
	h->exec->last_poll_ms = x->last_poll_ms;
	h->exec->cpus_up = x->cpus_up;
	h->exec->cpus_outside = x->cpus_outside;
	/* Static strings: proto's reader lets only these two through. */
	h->exec->accounting = !x->accounting ? NULL : strcmp(x->accounting, "on") == 0 ? "on" : "off";
}

int engine_heartbeat(struct engine *e, const char *name, const struct heartbeat *hb, char **err)
{
	int64_t now = engine_now(e), mono = time_mono_ms();
	struct host *h;
	int ret = -1;

	pthread_mutex_lock(&e->lock);
	h = named_host(e, name, ": register it first", err);
	if (!h)
		goto out;
	h->cpu_pct = hb->cpu_pct;
	h->mem_pct = hb->mem_pct;
	h->load1 = hb->load1;
	host_outside_use(h, hb);
	host_storage(h, hb);
	host_executor(h, &hb->executor);
	if (hb->scratch_free >= 0)
		h->scratch_free = (uint64_t)hb->scratch_free;
	h->last_heartbeat_ms = now;
	h->last_heartbeat_mono = mono;
	h->heartbeat_seq++;
	for (size_t i = 0; i < hb->ninstances; i++) {
		const struct heartbeat_entry *he = &hb->instances[i];
		struct instance *inst = model_instance(e->model, he->id);

		if (inst && inst->host == h && inst->attempt == he->attempt && inst_active(inst)) {
			inst->seen_seq = h->heartbeat_seq;
			/* Progress sent with heartbeats too: a restarted scheduler learns
			 * it without waiting for the next change. */
			if (he->progress_total > 0 && he->progress_total <= 1e15 &&
			    he->progress_done >= 0 && he->progress_done <= 1e15 && inst->progress_ms == 0) {
				inst->progress_done = he->progress_done;
				inst->progress_total = he->progress_total;
				inst->progress_ms = now;
			}
			inst->rss = he->usage.rss;
			if (he->slurm_job)
				model_set_short(&inst->slurm_job, he->slurm_job, 64);
			/* Only while it waits there: a heartbeat of it running says none. */
			model_set_short(&inst->slurm_reason, inst->state == INST_ASSIGNED && he->pid <= 0 ?
					he->slurm_reason : NULL, 256);
			if (he->usage.max_rss > inst->max_rss)
				inst->max_rss = he->usage.max_rss;
			if (he->usage.cpu_ms > inst->cpu_ms)
				inst->cpu_ms = he->usage.cpu_ms;
			/* Listed before it reached exec (no pid yet): its start report
			 * will say when it did. */
			if (he->pid > 0 || inst->state == INST_RUNNING)
				engine_mark_running(e, inst, he->pid, now, mono,
						    inst->state == INST_ASSIGNED ? " (from a heartbeat)" : "");
		} else {
			/* It runs there, but not for us (cancelled, lost and requeued, or
			 * an old attempt): make sure the runner stops it. */
			model_host_orphan(h, he->id, he->attempt);
		}
	}
	for (size_t i = 0; i < h->nactive; ) {
		struct instance *inst = h->active[i];

		/* Running instances that heartbeats stop listing are lost; an
		 * assignment cancelled before the runner started it is never listed
		 * and ends the same way (as cancelled), once the cancel went out. */
		bool watch = inst->state == INST_RUNNING ||
			     (inst->cancel_requested && inst->cancel_sent);

		if (!watch || inst->seen_seq == h->heartbeat_seq) {
			i++;
			continue;
		}
		if (!inst->missing_mono)
			inst->missing_mono = mono;
		if (mono - inst->missing_mono >= e->cfg.lost_after_ms &&
		    mono - inst->confirmed_mono >= e->cfg.lost_after_ms) {
			/* engine_end_attempt() takes it off h->active: do not advance i. */
			engine_end_attempt(e, inst, -1, 0, inst->state == INST_RUNNING ? "lost" :
				    "cancelled before it started", now);
			continue;
		}
		i++;
	}
	flush_or_warn(e, "heartbeat of %s", name);
	engine_kick(e);
	ret = 0;
out:
	pthread_mutex_unlock(&e->lock);
	return ret;
}

int engine_host_leave(struct engine *e, const char *name, char **err)
{
	int64_t now = engine_now(e);
	struct host *h;
	int ret = -1;

	pthread_mutex_lock(&e->lock);
	h = named_host(e, name, "", err);
	if (!h)
		goto out;
	/* Down until it registers again: nothing new goes there. */
	h->last_heartbeat_mono = 0;
	for (size_t i = 0; i < h->nactive; ) {
		struct instance *inst = h->active[i];

		/* Assignments it never started go back to the queue; engine_end_attempt()
		 * takes them off h->active, so do not advance i. Running ones were
		 * stopped and reported by the runner before it left. */
		if (inst->state == INST_ASSIGNED) {
			engine_end_attempt(e, inst, -1, 0, API_REASON_RUNNER_STOPPED, now);
			continue;
		}
		i++;
	}
	log_info("host %s left (its runner stopped)", name);
	flush_or_warn(e, "host %s left", name);
	engine_kick(e);
	ret = 0;
out:
	pthread_mutex_unlock(&e->lock);
	return ret;
}

static int host_has_news(const struct host *h)
{
	if (h->norphans)
		return 1;
	for (size_t i = 0; i < h->nactive; i++) {
		const struct instance *inst = h->active[i];

		if (inst->dirty)
			continue;
		if (inst->state == INST_ASSIGNED && !inst->start_sent)
			return 1;
		if (inst->cancel_requested && !inst->cancel_sent)
			return 1;
	}
	return 0;
}

json_t *engine_work(struct engine *e, const char *name, int64_t timeout_ms, char **err)
{
	struct timespec until = time_mono_deadline(timeout_ms > 0 ? timeout_ms : 0);
	json_t *answer = NULL, *start, *cancel;
	struct host *h;
	uint64_t seq;

	pthread_mutex_lock(&e->lock);
	h = named_host(e, name, ": register it first", err);
	if (!h)
		goto out;
	/* A runner polls once at a time: an older poll still waiting belongs to a
	 * connection that is gone (a restarted runner) and must not take the news. */
	seq = ++h->poll_seq;
	pthread_cond_broadcast(&e->changed);
	while (!e->stopping && !host_has_news(h) && h->poll_seq == seq) {
		int rc = pthread_cond_timedwait(&e->changed, &e->lock, &until);

		/* The host may have been removed (hosts/<h>/ctl) while we waited. */
		if (model_host(e->model, name) != h) {
			errno = ENOENT;
			errprintf(err, "host '%s' was removed", name);
			goto out;
		}
		if (rc == ETIMEDOUT)
			break;
	}
	start = json_array();
	cancel = json_array();
	if (h->poll_seq != seq) {
		/* Superseded. Answer empty, but not at once: two runners polling
		 * under one host name would otherwise keep superseding each other
		 * in a tight loop. */
		struct timespec brief = time_mono_deadline(1000);

		if (until.tv_sec < brief.tv_sec ||
		    (until.tv_sec == brief.tv_sec && until.tv_nsec < brief.tv_nsec))
			brief = until;
		log_debug("host %s: an older work poll was superseded", h->name);
		while (!e->stopping &&
		       pthread_cond_timedwait(&e->changed, &e->lock, &brief) != ETIMEDOUT)
			;
		answer = work_answer_to_json(start, cancel);
		goto out;
	}
	/* Everything not yet confirmed goes out again: the runner de-duplicates by
	 * id and attempt, and an answer lost on the way costs nothing. Objects not
	 * yet committed (dirty) wait for the commit. */
	for (size_t i = 0; i < h->nactive; i++) {
		struct instance *inst = h->active[i];

		if (inst->dirty)
			continue;
		if (inst->cancel_requested) {
			struct attempt_ref ref = { inst->id, inst->attempt };

			json_array_append_new(cancel, attempt_ref_to_json(&ref));
			inst->cancel_sent = true;
		} else if (inst->state == INST_ASSIGNED) {
			json_array_append_new(start, views_assignment_json(inst));
			inst->start_sent = true;
		}
	}
	for (size_t i = 0; i + 1 < h->norphans; i += 2) {
		struct attempt_ref ref = { h->orphans[i], (int)h->orphans[i + 1] };

		json_array_append_new(cancel, attempt_ref_to_json(&ref));
	}
	h->norphans = 0;
	answer = work_answer_to_json(start, cancel);
out:
	pthread_mutex_unlock(&e->lock);
	return answer;
}

void engine_work_undelivered(struct engine *e, const char *name, const json_t *answer)
{
	struct work_answer work;
	struct host *h;

	work_answer_from_json(answer, &work);
	pthread_mutex_lock(&e->lock);
	h = model_host(e->model, name);
	for (int l = 0; l < 2 && h; l++) {
		const json_t *item;
		size_t i;

		json_array_foreach(l == 0 ? work.start : work.cancel, i, item) {
			struct attempt_ref ref;
			struct instance *inst;

			if (attempt_ref_from_json(item, &ref) < 0)
				continue;
			inst = model_instance(e->model, ref.id);
			if (!inst || inst->host != h || inst->attempt != ref.attempt)
				continue;
			if (l == 0)
				inst->start_sent = false;
			else
				inst->cancel_sent = false;
		}
	}
	pthread_cond_broadcast(&e->changed);
	pthread_mutex_unlock(&e->lock);
}

int engine_report(struct engine *e, int64_t id, const struct report *r, char **err)
{
	int64_t now = engine_now(e), mono = time_mono_ms();
	struct instance *inst;
	int ret = -1;

	pthread_mutex_lock(&e->lock);
	inst = model_instance(e->model, id);
	if (!inst) {
		errno = ENOENT;
		errprintf(err, "no instance %lld", (long long)id);
		goto out;
	}
	/* Reports about another attempt, or about an attempt that already ended
	 * (a report sent again), change nothing. */
	if (r->attempt != inst->attempt || !inst_active(inst)) {
		log_debug("instance %lld: ignoring a report for attempt %d (now %d, %s)",
			  (long long)id, r->attempt, inst->attempt, inst_state_name(inst->state));
		ret = 0;
		goto out;
	}
	switch (r->kind) {
	case REPORT_RUNNING:
		engine_record_report(e, inst, r);
		engine_mark_running(e, inst, r->pid, now, mono, "");
		/* A start frees nothing, so no placement pass: only its job's
		 * roll-up changes, and that is cheap to do here. */
		engine_update_job(e, inst->job, now);
		break;
	case REPORT_EXITED:
		engine_record_report(e, inst, r);
		/* A short instance's runner reports its start with its end. */
		if (inst->state == INST_ASSIGNED && (r->pid > 0 || r->started_ms > 0))
			engine_mark_running(e, inst, r->pid, now, mono, "");
		engine_end_attempt(e, inst, r->signal ? -1 : r->exit_code, r->signal, r->reason, now);
		break;
	case REPORT_FAILED:
		engine_end_attempt(e, inst, -1, 0, r->reason ? r->reason : "could not start", now);
		break;
	}
	if (engine_flush(e, err) < 0)
		goto out;
	if (r->kind == REPORT_RUNNING)
		pthread_cond_broadcast(&e->changed);
	else
		engine_kick(e);
	ret = 0;
out:
	engine_unlock(e);
	return ret;
}

int engine_progress(struct engine *e, int64_t id, int attempt, double done, double total,
		    char **err)
{
	struct instance *inst;
	int ret = -1;

	if (!(total > 0) || !(done >= 0) || total > 1e15 || done > 1e15) {
		errno = EINVAL;
		return errprintf(err, "progress needs 0 <= done and 0 < total");
	}
	pthread_mutex_lock(&e->lock);
	inst = model_instance(e->model, id);
	if (!inst) {
		errno = ENOENT;
		errprintf(err, "no instance %lld", (long long)id);
		goto out;
	}
	/* The last word of an attempt that has ended still counts (it may come
	 * after its end); an older attempt's does not. */
	if (attempt == inst->attempt) {
		inst->progress_done = done;
		inst->progress_total = total;
		inst->progress_ms = engine_now(e);
	}
	ret = 0;
out:
	pthread_mutex_unlock(&e->lock);
	return ret;
}
