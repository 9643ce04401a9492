/* The API's routes for runners (docs/api.md, "Hosts and runners"; trusted
 * callers only): registering a host, heartbeats, leaving, the work long-poll,
 * and an instance's state and progress reports. Bodies are read with
 * lib/proto.h, the one home of these messages. */
#ifndef PARSA_API_RUNNERS_H
#define PARSA_API_RUNNERS_H

#include "api_call.h"

void api_runners_register(struct call *c);       /* POST /v1/hosts */
void api_runners_heartbeat(struct call *c);      /* POST /v1/hosts/<h>/heartbeat */
void api_runners_leave(struct call *c);          /* POST /v1/hosts/<h>/leave */
/* GET /v1/hosts/<h>/work; a non-empty answer is left in c->work. */
void api_runners_work(struct call *c);
void api_runners_report(struct call *c);         /* POST /v1/instances/<id>/state */
void api_runners_progress(struct call *c);       /* POST /v1/instances/<id>/progress */

#endif
