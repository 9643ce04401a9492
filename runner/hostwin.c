#include "hostwin.h"
#include "clock.h"
#include "log.h"
#include "timewin.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>

struct hostwin {
	struct timewin *win;
	bool drain;
	struct clock *clock;
	bool was_closed;   /* for logging each change once */
};

struct hostwin *hostwin_create(const char *text, bool drain, struct clock *clock, char **err)
{
	struct hostwin *w;
	char *why = NULL;
	struct timewin *win = timewin_parse(text, &why);

	if (!win) {
		errprintf(err, "--window '%s': %s", text, why ? why : "not a window");
		free(why);
		errno = EINVAL;
		return NULL;
	}
	w = xcalloc(1, sizeof *w);
	w->win = win;
	w->drain = drain;
	w->clock = clock;
	w->was_closed = !timewin_contains(win, clock_now_ms(clock));
	return w;
}

void hostwin_destroy(struct hostwin *w)
{
	if (!w)
		return;
	timewin_destroy(w->win);
	free(w);
}

void hostwin_describe(const struct hostwin *w, struct host_info *info)
{
	if (!w)
		return;
	info->window = timewin_text(w->win);
	info->window_drain = w->drain;
}

bool hostwin_closed(struct hostwin *w)
{
	bool closed;

	if (!w)
		return false;
	closed = !timewin_contains(w->win, clock_now_ms(w->clock));
	if (closed != w->was_closed)
		log_info("this host's window (%s) %s%s", timewin_text(w->win), closed ? "closed" : "opened",
			 closed ? (w->drain ? ": running work may finish" : ": stopping what runs") : "");
	w->was_closed = closed;
	return closed;
}

bool hostwin_must_stop(struct hostwin *w)
{
	return w && hostwin_closed(w) && !w->drain;
}
