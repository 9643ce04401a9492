/* The API's views of the cluster (docs/api.md, "Hosts and runners"): the
 * hosts as JSON, one host's and the whole cluster's status text, and the
 * durations of the scheduling passes. */
#ifndef PARSA_API_CLUSTER_H
#define PARSA_API_CLUSTER_H

#include "api_call.h"

void api_cluster_hosts(struct call *c);          /* GET /v1/hosts */
void api_cluster_host_status(struct call *c);    /* GET /v1/hosts/<h>/status */
void api_cluster_status(struct call *c);         /* GET /v1/status */
void api_cluster_stats(struct call *c);          /* GET /v1/stats */

#endif
