#include "report.h"
#include "api_paths.h"
#include "log.h"
#include "util.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct report {
	uint64_t seq;
	int64_t id;       /* the instance's */
	char *path;       /* api_path_id(API_INSTANCE_STATE, id) */
	char *body;
	char *file;       /* its copy in the state folder, or NULL */
};

struct report_queue {
	char *dir;        /* <state>/reports, or NULL */
	struct report *items;
	size_t head, n, cap;   /* a FIFO: items[head .. head + n) */
	uint64_t next_seq;
};

static void report_clear(struct report *r)
{
	free(r->path);
	free(r->body);
	free(r->file);
}

static void append(struct report_queue *q, struct report r)
{
	if (q->head + q->n == q->cap) {
		if (q->head > 0) {
			memmove(q->items, q->items + q->head, q->n * sizeof *q->items);
			q->head = 0;
		}
		if (q->n == q->cap) {
			q->cap = q->cap ? q->cap * 2 : 16;
			q->items = xrealloc(q->items, q->cap * sizeof *q->items);
		}
	}
	q->items[q->head + q->n++] = r;
}

/* Write the report as <dir>/<seq>-<id>.json, through a temporary name so a
 * crash never leaves half a report to send. */
static void persist(struct report_queue *q, struct report *r, int64_t id)
{
	char *tmp;
	FILE *f;

	if (!q->dir)
		return;
	r->file = xasprintf("%s/%020" PRIu64 "-%" PRId64 ".json", q->dir, r->seq, id);
	tmp = xasprintf("%s.tmp", r->file);
	f = fopen(tmp, "we");
	if (!f || fputs(r->body, f) == EOF || fclose(f) == EOF || rename(tmp, r->file) < 0) {
		/* Not fatal: the report is still in memory, it only would not
		 * survive a runner restart. */
		log_warn("cannot keep report in %s", tmp);
		if (f)
			unlink(tmp);
		free(r->file);
		r->file = NULL;
	}
	free(tmp);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int load(struct report_queue *q, char **err)
{
	DIR *dir = opendir(q->dir);
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;

	if (!dir)
		return errprintf(err, "cannot open %s: %s", q->dir, strerror(errno));
	while ((de = readdir(dir)) != NULL) {
		size_t len = strlen(de->d_name);

		if (de->d_name[0] == '.')
			continue;
		if (len > 4 && strcmp(de->d_name + len - 4, ".tmp") == 0) {
			unlinkat(dirfd(dir), de->d_name, 0);
			continue;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			names = xrealloc(names, cap * sizeof *names);
		}
		names[n++] = xstrdup(de->d_name);
	}
	closedir(dir);
	if (n)
		qsort(names, n, sizeof *names, by_name);
	for (size_t i = 0; i < n; i++) {
		struct report r = { 0 };
		unsigned long long seq;
		long long id;
		char *file = xasprintf("%s/%s", q->dir, names[i]);

		if (sscanf(names[i], "%llu-%lld.json", &seq, &id) != 2 ||
		    !(r.body = read_file(file, 1 << 20, NULL))) {
			log_warnx("ignoring %s: not a pending report", file);
			free(file);
			free(names[i]);
			continue;
		}
		r.seq = seq;
		r.id = id;
		r.path = api_path_id(API_INSTANCE_STATE, id);
		r.file = file;
		append(q, r);
		if (r.seq >= q->next_seq)
			q->next_seq = r.seq + 1;
		free(names[i]);
	}
	free(names);
	if (q->n)
		log_info("%zu state reports from an earlier run are waiting to be sent", q->n);
	return 0;
}

struct report_queue *report_queue_create(const char *state_dir, char **err)
{
	struct report_queue *q = xcalloc(1, sizeof *q);

	q->next_seq = 1;
	if (state_dir) {
		q->dir = xasprintf("%s/reports", state_dir);
		if (mkdir_p(q->dir, 0700) < 0) {
			errprintf(err, "cannot create %s: %s", q->dir, strerror(errno));
			goto fail;
		}
		if (load(q, err) < 0)
			goto fail;
	}
	return q;
fail:
	{
		int saved = errno;

		report_queue_destroy(q);
		errno = saved;
	}
	return NULL;
}

void report_queue_destroy(struct report_queue *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < q->n; i++)
		report_clear(&q->items[q->head + i]);
	free(q->items);
	free(q->dir);
	free(q);
}

static void push(struct report_queue *q, int64_t id, json_t *body, bool now)
{
	struct report r = { 0 };

	r.seq = q->next_seq++;
	r.id = id;
	r.path = api_path_id(API_INSTANCE_STATE, id);
	r.body = json_dumps(body, JSON_COMPACT);
	if (!r.body)
		fatalx("cannot encode a state report");
	json_decref(body);
	if (now)
		persist(q, &r, id);
	append(q, r);
}

void report_queue_push(struct report_queue *q, int64_t id, json_t *body)
{
	push(q, id, body, true);
}

void report_queue_push_later(struct report_queue *q, int64_t id, json_t *body)
{
	push(q, id, body, false);
}

void report_queue_keep(struct report_queue *q)
{
	for (size_t i = 0; i < q->n; i++) {
		struct report *r = &q->items[q->head + i];

		if (!r->file)
			persist(q, r, r->id);
	}
}

size_t report_queue_pending(const struct report_queue *q)
{
	return q->n;
}

size_t report_queue_flush(struct report_queue *q, report_send_fn send, void *arg)
{
	while (q->n > 0) {
		struct report *r = &q->items[q->head];
		char *why = NULL;
		enum report_result res = send(arg, r->path, r->body, &why);

		if (res == REPORT_RETRY) {
			free(why);
			break;
		}
		if (res == REPORT_REFUSED)
			log_warnx("scheduler refused report %s %s: %s", r->path, r->body, why ? why : "");
		else
			log_debug("reported %s %s", r->path, r->body);
		free(why);
		if (r->file)
			unlink(r->file);
		report_clear(r);
		q->head++;
		q->n--;
	}
	if (q->n == 0)
		q->head = 0;
	return q->n;
}

void report_queue_each(const struct report_queue *q,
		       void (*fn)(void *arg, int64_t id, int64_t attempt), void *arg)
{
	for (size_t i = 0; i < q->n; i++) {
		const struct report *r = &q->items[q->head + i];
		json_t *body = json_loads(r->body, 0, NULL);

		fn(arg, r->id, json_integer_value(json_object_get(body, "attempt")));
		json_decref(body);
	}
}
