/* A short-lived cache of job metadata (owner, state, stage names and instance
 * counts) so that `ls -l jobs/` or a walk of a job's folders costs one request,
 * not one per entry per stat. Entries live about a second; when the scheduler
 * cannot be reached an older entry is still used, and as a last resort the
 * owner of the job's folder on the storage stands in, so out/ keeps working
 * through an outage. Entries are immutable and reference-counted. */
#ifndef PARSA_JOB_CACHE_H
#define PARSA_JOB_CACHE_H

#include "api_answers.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct job_cache;
struct sched_link;
struct backend;
struct fs_identity;

struct job_stage_meta {
	char *name;
	int instances;
};

struct job_meta {
	int64_t id;
	uid_t uid;
	gid_t gid;
	int64_t submitted_ms;
	bool full;                   /* stages are known */
	size_t nstages;
	struct job_stage_meta *stages;
	/* private */
	atomic_int refs;
	int64_t fetched_ms;          /* monotonic; 0 for an owner taken from storage */
};

enum {
	JOB_NEED_STAGES = 1 << 0,    /* the stage list must be known */
	JOB_FRESH = 1 << 1,          /* ask the scheduler even if the entry is young */
};

struct job_cache *job_cache_create(struct sched_link *link, struct backend *backend, int64_t ttl_ms);
void job_cache_destroy(struct job_cache *cache);

/* The metadata of job id, asking the scheduler as who when the cached entry is
 * older than the lifetime (or JOB_FRESH). NULL with errno ENOENT for an unknown
 * job, ENOTCONN/EIO when the scheduler cannot be reached and nothing stands in.
 * Release with job_meta_put(). */
const struct job_meta *job_cache_get(struct job_cache *cache, const struct fs_identity *who,
				     int64_t id, int flags);
void job_meta_put(const struct job_meta *meta);

/* What the scheduler answered to a submission (the job of POST /v1/jobs,
 * api_read_submitted), so that the first look at the new job (its first
 * instance's log) needs no request. Takes job's stages and clears it. */
void job_cache_prime(struct job_cache *cache, int64_t id, struct api_job_meta *job);

/* Index of the stage called name in meta, or -1. */
int job_meta_stage(const struct job_meta *meta, const char *name);

/* The ids jobs/ lists, oldest first (GET /v1/jobs?view=owners: unfinished
 * jobs and those ended within the scheduler's list_finished); their owners
 * answer the stats that follow for a lifetime, from one array. When the
 * scheduler cannot be reached, the ids of the job folders on the storage.
 * *ids is malloc'ed. */
int job_cache_list(struct job_cache *cache, const struct fs_identity *who, int64_t **ids, size_t *n);

/* The most entries the cache holds, whatever the length of jobs/. */
enum { JOB_CACHE_MAX = 8192 };

/* How many entries the cache holds now. */
size_t job_cache_count(struct job_cache *cache);

#endif
