/* This host's window (parsa-runner --window "mon-fri 20:00-08:00"): when the
 * scheduler may give it work, sent with the registration so that placement
 * keeps to it. At the window's end, --drain-at-window-end yes lets running
 * work finish; no (the default) stops it, and the scheduler requeues what was
 * stopped without using a retry. Decided on the runner's clock (lib/clock.h). */
#ifndef PARSA_RUNNER_HOSTWIN_H
#define PARSA_RUNNER_HOSTWIN_H

#include "proto.h"

#include <stdbool.h>
#include <stdint.h>

struct clock;
struct hostwin;

/* NULL with errno EINVAL and *err when text is not a window. */
struct hostwin *hostwin_create(const char *text, bool drain, struct clock *clock, char **err);
void hostwin_destroy(struct hostwin *w);

/* Fill in the registration's window and drain_at_window_end (the window's
 * text stays w's). w may be NULL: no window. */
void hostwin_describe(const struct hostwin *w, struct host_info *info);

/* Is the host outside its window now? false for NULL. */
bool hostwin_closed(struct hostwin *w);

/* Must what runs be stopped now (outside the window, drain = no)? Logs the
 * window's closing once each time. false for NULL. */
bool hostwin_must_stop(struct hostwin *w);

#endif
