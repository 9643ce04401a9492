/* Telling people a job has ended ([job] notify): exec:/path runs that program
 * as the job's owner, on this (the head) node, with the job's final status on
 * its standard input; mail:user@host hands the same text to sendmail, also as
 * the owner. Notifications run on their own thread, one at a time and each
 * with a deadline, so a slow script never holds up scheduling; a failure is
 * logged and told to the job's events, and never changes the job. */
#ifndef PARSA_NOTIFY_H
#define PARSA_NOTIFY_H

#include "model.h"

/* How long a notification may take before it is killed. */
#define NOTIFY_DEADLINE_MS 60000

struct notify;

/* Adds text to job's events (the engine's lock is not held: it takes it).
 * Called on the notification thread. */
typedef void (*notify_note_fn)(void *arg, int64_t job, const char *text);

/* sendmail: the program for mail: targets (default /usr/sbin/sendmail).
 * note (may be NULL) is told of every notification that failed. */
struct notify *notify_create(const char *sendmail, notify_note_fn note, void *arg);
/* Lets the notification in progress finish (briefly) and drops the rest. */
void notify_destroy(struct notify *n);

/* Queue the notifications of a job that has just ended; status is the text
 * for their standard input. Everything is copied. */
void notify_job(struct notify *n, const struct job *job, const char *status);

/* Wait until every queued notification has run (tests). */
void notify_drain(struct notify *n);

#endif
