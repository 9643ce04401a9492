/* queue/: where specs are submitted by writing a file. Each open file keeps
 * its text in memory and shows in `ls queue/` while open; the close by the
 * process that created it POSTs the text to the scheduler as that person. A
 * refusal leaves queue/<name>.rejected (the errors, owned by the submitter,
 * removable). queue/.clone gives concurrent scripts their job id through the
 * same descriptor: write the spec, then read "42\n". */
#ifndef PARSA_QUEUE_DIR_H
#define PARSA_QUEUE_DIR_H

#include "api_paths.h"
#include "fs_node.h"

struct queue_dir;

/* How many .rejected files are kept at most; the oldest go first. */
#include <sys/types.h>

#define QUEUE_MAX_REJECTED 1024
/* Every this many jobs submitted through queue/, the kernel is told to forget
 * the unused names below jobs/ (fs_forget_top_folder). */
#define QUEUE_FORGET_EVERY 512

struct queue_dir *queue_dir_create(struct fs_ctx *fs);
/* The same for another folder: specs written to /<folder>/ are POSTed to
 * route post (schedules/: API_SCHEDULES_PUT). folder must outlive it. */
struct queue_dir *queue_dir_create_at(struct fs_ctx *fs, const char *folder, enum api_route post);
void queue_dir_destroy(struct queue_dir *q);
/* Call fn(arg) after each accepted submission (schedules/: the list that
 * shows the new schedule is asked again). Set once, before the mount serves. */
void queue_dir_on_accepted(struct queue_dir *q, void (*fn)(void *arg), void *arg);

/* The names uid is writing (each user's names are their own) and the
 * .rejected reports (malloc'ed, with *out). */
void queue_dir_names(struct queue_dir *q, uid_t uid, char ***out, size_t *n);

extern const struct node_ops queue_root_ops;   /* queue/ */
extern const struct node_ops queue_clone_ops;  /* queue/.clone */
extern const struct node_ops queue_entry_ops;  /* queue/<name>, queue/<name>.rejected */

#endif
