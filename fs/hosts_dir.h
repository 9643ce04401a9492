/* hosts/<h>/status and the cluster's status and usage files at the top of the mount:
 * views of the scheduler fetched at open; hosts/<h>/ctl takes drain, resume and
 * remove from root and the admin group. The host names are cached for about a
 * second so that walking hosts/ costs one request. */
#ifndef PARSA_HOSTS_DIR_H
#define PARSA_HOSTS_DIR_H

#include "fs_node.h"

struct hosts_dir;

struct hosts_dir *hosts_dir_create(struct fs_ctx *fs, int64_t ttl_ms);
void hosts_dir_destroy(struct hosts_dir *h);

extern const struct node_ops hosts_root_ops;    /* hosts/ */
extern const struct node_ops host_dir_ops;      /* hosts/<h> */
extern const struct node_ops host_status_ops;   /* hosts/<h>/status */
extern const struct node_ops host_ctl_ops;      /* hosts/<h>/ctl */
extern const struct node_ops cluster_status_ops;/* status */
extern const struct node_ops cluster_usage_ops; /* usage: cpu-hours of the last 30 days */

#endif
