/* slurm_batch.h: grouping queued starts into submissions, and the ids and
 * answers those submissions are known by afterwards. */
#include "slurm_batch.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int slurm_plan(const struct slurm_plan_item *items, size_t n, const struct slurm_limits *lim,
	       size_t max_script, struct slurm_plan_batch *batches, size_t max_batches, long *batch_of)
{
	long room = lim && lim->submit_room >= 0 ? lim->submit_room : LONG_MAX;
	size_t nb = 0;

	for (size_t i = 0; i < n; i++) {
		if (!items[i].key) {
			errno = EINVAL;
			return -1;
		}
		batch_of[i] = -2; /* not looked at yet */
	}
	if (n > 0 && max_batches == 0) {
		errno = EINVAL;
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		struct slurm_chunk chunk;
		struct slurm_limits group_lim = { .max_array_size = lim ? lim->max_array_size : 0 };
		size_t biggest = 0;
		long count = 0, left, done = 0;

		if (batch_of[i] != -2)
			continue;
		/* The group of items[i]: every later item with its key. */
		for (size_t k = i; k < n; k++) {
			if (batch_of[k] == -2 && strcmp(items[k].key, items[i].key) == 0) {
				batch_of[k] = -1;
				count++;
				if (items[k].script_len > biggest)
					biggest = items[k].script_len;
			}
		}
		/* No more tasks than the script size allows (Slurm refuses a
		 * script over max_script_size, 4 MB by default). */
		if (max_script > 0) {
			size_t fit = max_script / (biggest + SLURM_ARRAY_BRANCH_BYTES);
			long size = group_lim.max_array_size > 0 ? group_lim.max_array_size : 1001;

			if ((long)fit < size)
				group_lim.max_array_size = fit > 0 ? (long)fit : 1;
		}
		/* One chunk at a time: each becomes a batch while there are
		 * batches and room left. */
		while (done < count && nb < max_batches && room > 0) {
			long taken = 0;

			group_lim.submit_room = room;
			if (slurm_split(0, count - done, &group_lim, 0, &chunk, 1, &left) != 1)
				break;
			batches[nb].count = chunk.count;
			if (chunk.count == 1)
				batches[nb].spec[0] = '\0';
			else
				snprintf(batches[nb].spec, sizeof batches[nb].spec, "%s", chunk.spec);
			/* The group's members not placed yet, in order. */
			for (size_t k = i; k < n && taken < chunk.count; k++) {
				if (batch_of[k] == -1 && strcmp(items[k].key, items[i].key) == 0) {
					batch_of[k] = (long)nb;
					taken++;
				}
			}
			done += chunk.count;
			room -= chunk.count;
			nb++;
		}
	}
	return (int)nb;
}

void slurm_format_ref(uint64_t job_id, long task, char *buf, size_t len)
{
	if (task < 0)
		snprintf(buf, len, "%" PRIu64, job_id);
	else
		snprintf(buf, len, "%" PRIu64 "_%ld", job_id, task);
}

int slurm_parse_ref(const char *text, uint64_t *job_id, long *task)
{
	unsigned long long id;
	long t = -1;
	char *end;

	if (!text || !isdigit((unsigned char)*text))
		goto bad;
	errno = 0;
	id = strtoull(text, &end, 10);
	if (errno || id == 0)
		goto bad;
	if (*end == '_') {
		const char *p = end + 1;

		if (!isdigit((unsigned char)*p))
			goto bad;
		t = strtol(p, &end, 10);
		if (errno || t < 0)
			goto bad;
	}
	while (*end && isspace((unsigned char)*end))
		end++;
	if (*end)
		goto bad;
	*job_id = id;
	*task = t;
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

const struct slurm_job *slurm_find_ref(const struct slurm_job *jobs, size_t n, uint64_t job_id, long task)
{
	for (size_t i = 0; i < n; i++) {
		if (task < 0) {
			if (jobs[i].job_id == job_id && jobs[i].array_job_id == 0)
				return &jobs[i];
		} else if (jobs[i].array_job_id == job_id && slurm_job_has_task(&jobs[i], task)) {
			return &jobs[i];
		}
	}
	return NULL;
}

int slurm_config_long(const char *text, const char *key, long *value)
{
	size_t klen = strlen(key);

	for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		const char *p = line + klen;
		char *end;
		long v;

		if (strncmp(line, key, klen) != 0 || (*p != ' ' && *p != '='))
			continue;
		while (*p == ' ')
			p++;
		if (*p++ != '=')
			continue;
		errno = 0;
		v = strtol(p, &end, 10);
		if (errno || end == p || (*end && !isspace((unsigned char)*end))) {
			errno = EINVAL;
			return -1;
		}
		*value = v;
		return 0;
	}
	errno = ENOENT;
	return -1;
}
