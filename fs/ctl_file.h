/* The open control files of the mount (jobs/<id>/ctl, hosts/<h>/ctl,
 * schedules/<name>/ctl): each line written is one command, POSTed as
 * {"command": LINE} to the scheduler as the writer, and the scheduler's answer
 * becomes the write's errno; reading shows the commands, from the table the
 * scheduler dispatches on (lib/ctl_commands.h). */
#ifndef PARSA_FS_CTL_FILE_H
#define PARSA_FS_CTL_FILE_H

#include "ctl_commands.h"
#include "fs_node.h"

/* The last refusal of each recently refused ctl node (64 of them), which a
 * read of the node's ctl shows after its help: "last refused: 'bogus' (line
 * 2) by uid 0 refused: unknown command ...". One per mount, in fs_ctx. */
struct ctl_notes *ctl_notes_create(void);
void ctl_notes_destroy(struct ctl_notes *n);

/* p is the node being opened (its path is kept: fstat, ftruncate and
 * futimens come with the handle alone), url the route to POST to
 * (api_path_id(API_JOB_CTL, 42)), what names the target in the log ("job 42"); all are
 * copied. A read shows the commands of the table (ctl_job_table ...). */
struct fs_file *ctl_file_create(struct fs_ctx *fs, const struct fs_path *p, const char *url,
				const char *what, const struct ctl_table *commands);

/* The path handlers of every ctl node. `echo cancel > ctl` and `truncate -s 0
 * ctl` truncate it to 0 and `touch ctl` sets its times: none changes anything
 * (the kernel has checked that the caller may write), but each fails as the
 * node's getattr does when its job, host or schedule does not exist, and a
 * truncate to any other size is EINVAL. */
int ctl_node_truncate(struct fs_ctx *fs, const struct fs_path *p, off_t size);
int ctl_node_utimens(struct fs_ctx *fs, const struct fs_path *p, const struct timespec tv[2]);

#endif
