#include "stage_progress.h"

#include "timing.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* "37", or "37.5" when it is not whole. */
static void number(double v, char *buf, size_t len)
{
	if (fabs(v - round(v)) < 1e-9)
		snprintf(buf, len, "%.0f", v);
	else
		snprintf(buf, len, "%.1f", v);
}

void stage_progress_get(const struct stage *stage, int64_t now, struct stage_progress *out)
{
	double done = 0, total = 0, max_done = 0, avg;
	int unreported = 0, unreported_done = 0;
	int64_t until;
	bool ended;

	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < stage->ninst; i++) {
		const struct instance *inst = stage->inst[i];

		if (inst->progress_total <= 0) {
			if (inst->state == INST_SUCCEEDED)
				unreported_done++;
			else if (inst->state != INST_FAILED && inst->state != INST_CANCELLED)
				unreported++;
			continue;
		}
		out->reporting++;
		if (inst->progress_done > max_done)
			max_done = inst->progress_done;
		/* A succeeded instance has done all of its work, whatever it said last. */
		done += inst->state == INST_SUCCEEDED ? inst->progress_total : inst->progress_done;
		total += inst->progress_total;
	}
	if (stage->spec->progress_files > 0) {
		/* Every instance counts the same folder: the stage's count is the
		 * largest seen, out of N for the whole stage. */
		if (!out->reporting)
			return;
		done = max_done;
		total = (double)stage->spec->progress_files;
	} else {
		if (!out->reporting)
			return;
		/* Instances that have not reported yet are assumed to be as large
		 * as the average of those that have. */
		avg = total / out->reporting;
		total += avg * (unreported + unreported_done);
		done += avg * unreported_done;
	}
	out->known = true;
	out->done = done;
	out->total = total;
	out->percent = total > 0 ? 100.0 * done / total : 0;
	if (out->percent > 100)
		out->percent = 100;
	/* A stage that has ended did its work between its start and its end:
	 * its rate stays what it was, however long ago that was. */
	ended = stage_ended(stage);
	until = ended && stage->ended_ms > 0 ? stage->ended_ms : now;
	if (stage->started_ms > 0 && until > stage->started_ms && done > 0) {
		out->rate_per_s = done / ((double)(until - stage->started_ms) / 1000.0);
		if (done < total && !ended)
			out->eta_ms = now + (int64_t)((total - done) / out->rate_per_s * 1000.0);
	}
}

const char *stage_progress_rate(double per_s, char *buf, size_t len)
{
	/* Plain decimals a person reads at a glance: 320, 8.5, 0.05 (never 3.2e+02). */
	if (per_s >= 100)
		snprintf(buf, len, "%.0f", per_s);
	else if (per_s >= 1)
		snprintf(buf, len, "%.1f", per_s);
	else
		snprintf(buf, len, "%.2g", per_s);
	return buf;
}

void stage_progress_format(const struct stage_progress *p, int64_t now, char *buf, size_t len)
{
	char d[32], t[32], when[128], rate[32];
	int n;

	buf[0] = '\0';
	if (!p->known)
		return;
	number(p->done, d, sizeof d);
	number(p->total, t, sizeof t);
	n = snprintf(buf, len, "%s/%s (%.0f%%)", d, t, floor(p->percent));
	if (n < 0 || (size_t)n >= len || p->rate_per_s <= 0)
		return;
	n += snprintf(buf + n, len - (size_t)n, ", %s/s", stage_progress_rate(p->rate_per_s, rate, sizeof rate));
	if (n < 0 || (size_t)n >= len || p->eta_ms <= 0)
		return;
	timing_when(p->eta_ms, now, when, sizeof when);
	snprintf(buf + n, len - (size_t)n, ", estimated end %s", when);
}

json_t *stage_progress_json(const struct stage_progress *p)
{
	if (!p->known)
		return json_null();
	return json_pack("{s:f,s:f,s:f,s:f,s:I,s:i}", "done", p->done, "total", p->total,
			 "percent", p->percent, "rate_per_s", p->rate_per_s,
			 "eta_ms", (json_int_t)p->eta_ms, "reporting", p->reporting);
}

void instance_progress_format(const struct instance *inst, char *buf, size_t len)
{
	char d[32], t[32];

	buf[0] = '\0';
	if (inst->progress_total <= 0)
		return;
	number(inst->progress_done, d, sizeof d);
	number(inst->progress_total, t, sizeof t);
	snprintf(buf, len, "%s/%s (%.0f%%)", d, t,
		 floor(100.0 * inst->progress_done / inst->progress_total));
}
