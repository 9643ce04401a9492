/* How far a stage has got, from its instances' progress reports: DONE/TOTAL
 * (a percentage counts as DONE of 100), summed over a fan-out, or with
 * `progress = files:N` the count of its output folder's entries out of N; the
 * rate since the stage started (until it ended, for one that has), and the
 * end that rate gives. Pure functions
 * of the model and a time, for status, status.json and the stage's status. */
#ifndef PARSA_STAGE_PROGRESS_H
#define PARSA_STAGE_PROGRESS_H

#include "model.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct stage_progress {
	bool known;          /* an instance has reported */
	double done, total;
	double percent;
	double rate_per_s;   /* done per second from the stage's start to now or its end; 0 = unknown */
	int64_t eta_ms;      /* the estimated end; 0 = unknown */
	int reporting;       /* instances that reported */
};

void stage_progress_get(const struct stage *stage, int64_t now, struct stage_progress *out);

/* "37/200 (18%), 1.2/s, estimated end 2026-11-30T14:05:00 (in 2m28s)";
 * "" when nothing is known. */
/* A rate as "320", "8.5" or "0.05" (per second, without the unit). */
const char *stage_progress_rate(double per_s, char *buf, size_t len);
void stage_progress_format(const struct stage_progress *p, int64_t now, char *buf, size_t len);

/* {"done", "total", "percent", "rate_per_s", "eta_ms"}, or null. */
json_t *stage_progress_json(const struct stage_progress *p);

/* One instance's: "37/200 (18%)", "" when it has not reported. */
void instance_progress_format(const struct instance *inst, char *buf, size_t len);

#endif
