/* The API's lists from the history (docs/api.md, "History and usage"):
 * GET /v1/history/jobs (filters and paging, sched/store/records.h) and GET
 * /v1/usage (cpu-hours and job counts per team or user, as JSON, text or
 * CSV). What `parsa jobs`, `parsa history`, `parsa usage` and the mount's
 * usage file print. */
#ifndef PARSA_API_RECORDS_H
#define PARSA_API_RECORDS_H

#include "api_call.h"

void api_records_jobs(struct call *c);
void api_records_usage(struct call *c);

#endif
