/* The API's ctl routes, one per kind of thing a command acts on: a job's
 * (cancel, hold, ...), a host's (drain, resume, remove) and a schedule's
 * (pause, resume, run-now). Each takes {"command": "..."} and answers
 * {"ok": true}; the commands themselves are the engine's and schedules'. */
#ifndef PARSA_API_CTL_H
#define PARSA_API_CTL_H

#include "api_call.h"

void api_ctl_job(struct call *c);                /* POST /v1/jobs/<id>/ctl */
void api_ctl_host(struct call *c);               /* POST /v1/hosts/<h>/ctl */
void api_ctl_schedule(struct call *c);           /* POST /v1/schedules/<name>/ctl */

#endif
