#include "timing.h"

#include "timewin.h"
#include "units.h"
#include "util.h"

#include <stdio.h>

int64_t timing_job_start_ms(const struct job *job)
{
	const struct spec *spec = job->spec;

	if (spec->start_at_s > 0)
		return spec->start_at_s * 1000;
	if (spec->start_in_s > 0)
		return job->submitted_ms + spec->start_in_s * 1000;
	return 0;
}

const struct timewin *timing_stage_window(const struct stage *stage)
{
	if (stage->spec->win)
		return stage->spec->win;
	return stage->job->spec->win;
}

void timing_when(int64_t at, int64_t now, char *buf, size_t len)
{
	char iso[64], in[64];

	time_format_iso(at, iso, sizeof iso);
	if (at > now) {
		/* Whole seconds, rounded up: "in 0s" would read as "now". */
		format_duration((uint64_t)((at - now + 999) / 1000), in, sizeof in);
		snprintf(buf, len, "%.32s (in %.20s)", iso, in);
	} else {
		snprintf(buf, len, "%s", iso);
	}
}

int timing_stage_open(const struct stage *stage, int64_t now, char *buf, size_t len)
{
	const struct timewin *w = timing_stage_window(stage);
	int64_t start = timing_job_start_ms(stage->job), opens;
	char when[128];

	if (start > now) {
		if (buf) {
			timing_when(start, now, when, sizeof when);
			/* The window that blocks it next is worth saying too. */
			if (w && !timewin_contains(w, start) && (opens = timewin_next_change(w, start)) > 0) {
				char then[128];

				timing_when(opens, now, then, sizeof then);
				snprintf(buf, len, "starts at %s, then waits for its window (%s) until %s",
					 when, timewin_text(w), then);
			} else {
				snprintf(buf, len, "starts at %s", when);
			}
		}
		return 0;
	}
	if (!w || timewin_contains(w, now))
		return 1;
	if (buf) {
		opens = timewin_next_change(w, now);
		if (opens > 0) {
			timing_when(opens, now, when, sizeof when);
			snprintf(buf, len, "outside its window (%s) until %s", timewin_text(w), when);
		} else {
			snprintf(buf, len, "outside its window (%s)", timewin_text(w));
		}
	}
	return 0;
}

int timing_host_closed(const struct host *h, int64_t now)
{
	return h->win && !timewin_contains(h->win, now);
}

void timing_host_fill(const struct host *h, int64_t now, struct placement_host *ph)
{
	int64_t change;

	ph->closed = 0;
	ph->window = h->window;
	ph->opens_ms = -1;
	ph->closes_in_ms = 0;
	if (!h->win)
		return;
	change = timewin_next_change(h->win, now);
	if (!timewin_contains(h->win, now)) {
		ph->closed = 1;
		ph->opens_ms = change;
	} else if (!h->window_drain && change > now) {
		/* Work that would outlast the window is stopped at its end: place
		 * only what its walltime says will be done by then. */
		ph->closes_in_ms = change - now;
	}
}
