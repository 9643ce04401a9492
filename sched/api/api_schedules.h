/* The API's schedule routes (docs/api.md, "Schedules"): creating or replacing
 * a recurring pipeline, listing, its views (JSON, status, spec) and removing
 * it. A schedule's ctl is api_ctl.h. */
#ifndef PARSA_API_SCHEDULES_H
#define PARSA_API_SCHEDULES_H

#include "api_call.h"

void api_schedules_put(struct call *c);          /* POST /v1/schedules */
void api_schedules_list(struct call *c);         /* GET /v1/schedules */
void api_schedules_json(struct call *c);         /* GET /v1/schedules/<name> */
void api_schedules_status(struct call *c);       /* .../status */
void api_schedules_spec(struct call *c);         /* .../spec */
void api_schedules_delete(struct call *c);       /* DELETE /v1/schedules/<name> */

#endif
