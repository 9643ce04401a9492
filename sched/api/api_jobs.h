/* The API's job routes (docs/api.md, "Jobs"): submitting, listing, the views
 * of one job (status.json, status, why, events, spec), waiting for its end,
 * and the status of its stages and instances. A job's ctl is api_ctl.h. */
#ifndef PARSA_API_JOBS_H
#define PARSA_API_JOBS_H

#include "api_call.h"

void api_jobs_submit(struct call *c);            /* POST /v1/jobs */
void api_jobs_list(struct call *c);              /* GET /v1/jobs */
void api_jobs_last(struct call *c);              /* GET /v1/jobs/last */
void api_jobs_json(struct call *c);              /* GET /v1/jobs/<id> */
void api_jobs_status(struct call *c);            /* .../status */
void api_jobs_why(struct call *c);               /* .../why */
void api_jobs_events(struct call *c);            /* .../events */
void api_jobs_spec(struct call *c);              /* .../spec */
void api_jobs_wait(struct call *c);              /* .../wait */
void api_jobs_stage_status(struct call *c);      /* .../stages/<s>/status */
void api_jobs_instance_status(struct call *c);   /* .../stages/<s>/instances/<i>/status */
void api_jobs_instance_json(struct call *c);     /* .../stages/<s>/instances/<i> (status.json) */

#endif
