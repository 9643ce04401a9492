/* Group commit: the queue alone (every caller returns after the group that
 * held its item, callers that arrive during a commit share the next one),
 * then the engine's submissions through it with a real store: many threads
 * each get an id of their own and every row is in the database; a refused
 * submission (a bad `after`, a row the database refuses, a token sent twice
 * in one group) leaves the rest of its group committed; a commit that fails
 * (sqlite's commit hook refuses it) fails the whole group and writes none. */
#include "engine_internal.h"
#include "group_commit.h"
#include "sched_world.h"
#include "store_internal.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TAP_STATE;

/* ---- the queue alone ---- */

#define QUEUE_THREADS 8

struct queue_test {
	struct group_commit *g;
	atomic_int arrived;        /* threads about to queue */
	atomic_int committed;      /* items the callback saw */
	atomic_int largest;        /* the largest group */
	atomic_int in_fn;          /* callbacks running at once: must stay 0 or 1 */
	atomic_int overlap;        /* a second callback ran during one */
};

struct queue_item {
	struct group_item item;
	struct queue_test *t;
	bool seen;                 /* set by the callback */
	bool seen_at_return;       /* seen when group_commit_run returned */
};

static void sleep_ms(int ms)
{
	usleep((useconds_t)ms * 1000);
}

static void count_group(void *arg, struct group_item *const *items, size_t n)
{
	struct queue_test *t = arg;

	if (atomic_fetch_add(&t->in_fn, 1) != 0)
		atomic_store(&t->overlap, 1);
	/* The first group waits for everyone to be at the door: the next
	 * group is then all of them but the first. */
	while (atomic_load(&t->arrived) < QUEUE_THREADS)
		sleep_ms(1);
	sleep_ms(50);
	for (size_t i = 0; i < n; i++)
		((struct queue_item *)items[i])->seen = true;
	atomic_fetch_add(&t->committed, (int)n);
	if ((int)n > atomic_load(&t->largest))
		atomic_store(&t->largest, (int)n);
	atomic_fetch_sub(&t->in_fn, 1);
}

static void *queue_thread(void *arg)
{
	struct queue_item *it = arg;

	atomic_fetch_add(&it->t->arrived, 1);
	group_commit_run(it->t->g, &it->item);
	it->seen_at_return = it->seen;
	return NULL;
}

static void test_queue(void)
{
	struct queue_test t = { 0 };
	struct queue_item items[QUEUE_THREADS];
	pthread_t th[QUEUE_THREADS];
	size_t groups = 0, nitems = 0;
	bool all = true;

	t.g = group_commit_create(count_group, &t);
	memset(items, 0, sizeof items);
	for (int i = 0; i < QUEUE_THREADS; i++) {
		items[i].t = &t;
		pthread_create(&th[i], NULL, queue_thread, &items[i]);
	}
	for (int i = 0; i < QUEUE_THREADS; i++) {
		pthread_join(th[i], NULL);
		all = all && items[i].seen_at_return;
	}
	group_commit_counts(t.g, &groups, &nitems);
	ok(all, "every caller returned after the group that held its item");
	is_int(atomic_load(&t.committed), QUEUE_THREADS, "every item was committed once");
	is_int((int)nitems, QUEUE_THREADS, "the queue counted them");
	ok(groups < QUEUE_THREADS && atomic_load(&t.largest) > 1,
	   "callers that came during a commit shared a group (%zu groups, the largest of %d)",
	   groups, atomic_load(&t.largest));
	ok(!atomic_load(&t.overlap), "one group at a time");
	group_commit_destroy(t.g);
}

/* ---- the engine's submissions ---- */

/* The scheduler's half of a test world (sched_world.h), the database's path,
 * and this process as the caller. */
struct world {
	struct sched_world sw;
	char *db;
	struct engine *engine;
	struct model *model;
	struct store *store;
	struct caller me;
};

static int world_start(struct world *w)
{
	if (sched_world_start(&w->sw, 1000) < 0)
		return -1;
	w->db = xasprintf("%s/parsa.db", w->sw.dir);
	w->engine = w->sw.engine;
	w->model = w->sw.model;
	w->store = w->sw.store;
	w->me.uid = getuid();
	w->me.gid = getgid();
	return 0;
}

static void world_stop(struct world *w)
{
	if (sched_world_stop(&w->sw) != 0)
		diag("cannot remove %s", w->sw.dir);
	free(w->db);
}

/* A number from the database through a connection of its own, as another
 * program would read it: -1 if it cannot be read. */
static long long db_count(struct world *w, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	long long n = -1;

	if (sqlite3_open_v2(w->db, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return n;
}

/* DDL through a second connection, as an operator's sqlite3 shell would. */
static int db_exec(struct world *w, const char *sql)
{
	sqlite3 *db = NULL;
	char *msg = NULL;
	int rc = sqlite3_open(w->db, &db);

	if (rc == SQLITE_OK) {
		sqlite3_busy_timeout(db, 5000);
		rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
	}
	if (rc != SQLITE_OK)
		diag("%s: %s", sql, msg ? msg : sqlite3_errmsg(db));
	sqlite3_free(msg);
	sqlite3_close(db);
	return rc == SQLITE_OK ? 0 : -1;
}

struct submitter {
	struct world *w;
	const char *spec;
	const char *token;
	int n;                     /* submissions, one after the other */
	int64_t *ids;              /* n of them; -1 for a refusal */
	int error;                 /* errno of the last refusal */
	char *err;                 /* its text */
};

static void *submit_thread(void *arg)
{
	struct submitter *s = arg;

	for (int i = 0; i < s->n; i++) {
		char *err = NULL;

		s->ids[i] = -1;
		if (engine_submit(s->w->engine, &s->w->me, "group.conf", s->token, s->spec,
				  strlen(s->spec), &s->ids[i], NULL, &err) < 0) {
			s->ids[i] = -1;
			s->error = errno;
			free(s->err);
			s->err = err ? err : xstrdup("");
		} else {
			free(err);
		}
	}
	return NULL;
}

static int cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

#define MANY_THREADS 16
#define MANY_EACH 25

static void test_many(struct world *w)
{
	static const char spec[] = "[job]\nstart = +1h\n[stage a]\nrun = true\ninstances = 2\n";
	struct submitter sub[MANY_THREADS];
	pthread_t th[MANY_THREADS];
	int64_t all[MANY_THREADS * MANY_EACH];
	size_t groups0, items0, groups, items, n = 0;
	long long before = db_count(w, "SELECT count(*) FROM jobs"), rows;
	bool distinct = true, known = true;
	char *sql;

	group_commit_counts(w->engine->submits, &groups0, &items0);
	for (int i = 0; i < MANY_THREADS; i++) {
		sub[i] = (struct submitter){ .w = w, .spec = spec, .n = MANY_EACH,
					     .ids = xcalloc(MANY_EACH, sizeof(int64_t)) };
		pthread_create(&th[i], NULL, submit_thread, &sub[i]);
	}
	for (int i = 0; i < MANY_THREADS; i++) {
		pthread_join(th[i], NULL);
		for (int j = 0; j < MANY_EACH; j++)
			all[n++] = sub[i].ids[j];
		if (sub[i].err)
			diag("thread %d: %s", i, sub[i].err);
		free(sub[i].err);
		free(sub[i].ids);
	}
	qsort(all, n, sizeof *all, cmp_id);
	for (size_t i = 0; i < n; i++) {
		if (all[i] <= 0 || (i > 0 && all[i] == all[i - 1]))
			distinct = false;
		engine_test_hold(w->engine);
		known = known && model_job(w->model, all[i]) != NULL;
		engine_test_release(w->engine);
	}
	ok(distinct, "%d threads x %d submissions: each got an id of its own", MANY_THREADS, MANY_EACH);
	ok(known, "every one is in the model");
	rows = db_count(w, "SELECT count(*) FROM jobs");
	is_int((int)(rows - before), MANY_THREADS * MANY_EACH, "every job's row is in the database");
	sql = xasprintf("SELECT count(*) FROM instances WHERE job_id BETWEEN %lld AND %lld",
			(long long)all[0], (long long)all[n - 1]);
	is_int((int)db_count(w, sql), 2 * MANY_THREADS * MANY_EACH, "and every instance's");
	free(sql);
	group_commit_counts(w->engine->submits, &groups, &items);
	is_int((int)(items - items0), MANY_THREADS * MANY_EACH, "all went through the group commit");
	ok(groups - groups0 < items - items0, "in fewer transactions than submissions (%zu for %zu)",
	   groups - groups0, items - items0);
}

/* Lock held by the test: one submitter leads and waits for the lock; the
 * others queue behind it; they form the next group once it is released. */
static void wait_queued(struct world *w, size_t want_items_queued)
{
	for (int i = 0; i < 5000; i++) {
		size_t queued = group_commit_queued(w->engine->submits);

		if (queued >= want_items_queued)
			return;
		sleep_ms(1);
	}
	diag("only %zu queued after 5 s", group_commit_queued(w->engine->submits));
}

struct group_case {
	const char *what;
	const char *spec;
	const char *token;
	bool refused;
};

/* Submit cases[] as one group (behind a leader, lead, that commits alone
 * while the engine's lock is held), then tell which ones were refused. */
static void run_group(struct world *w, const struct group_case *cases, size_t n, struct submitter *sub)
{
	pthread_t th[16], lead_th;
	struct submitter lead = { .w = w, .spec = "[stage a]\nrun = true\n", .n = 1 };
	int64_t lead_id;
	size_t groups0, items0, groups, items;

	lead.ids = &lead_id;
	engine_test_hold(w->engine);
	group_commit_counts(w->engine->submits, &groups0, &items0);
	pthread_create(&lead_th, NULL, submit_thread, &lead);
	/* The leader took its own item and waits for the lock. */
	while (!group_commit_leading(w->engine->submits))
		sleep_ms(1);
	for (size_t i = 0; i < n; i++) {
		sub[i] = (struct submitter){ .w = w, .spec = cases[i].spec, .token = cases[i].token,
					     .n = 1, .ids = xcalloc(1, sizeof(int64_t)) };
		pthread_create(&th[i], NULL, submit_thread, &sub[i]);
	}
	wait_queued(w, n);
	engine_test_release(w->engine);
	pthread_join(lead_th, NULL);
	for (size_t i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	free(lead.err);
	group_commit_counts(w->engine->submits, &groups, &items);
	is_int((int)(groups - groups0), 2, "the leader's group, then one group of the %zu others", n);
}

static void test_one_bad(struct world *w)
{
	static const char good[] = "[stage a]\nrun = true\n";
	static const struct group_case cases[] = {
		{ "a good one", good, NULL, false },
		{ "after = a job that does not exist", "[job]\nafter = 999999\n[stage a]\nrun = true\n",
		  NULL, true },
		{ "another good one", good, "tok-group-1", false },
		{ "a row the database refuses", "[job]\nname = poison\n[stage a]\nrun = true\n", NULL,
		  true },
		{ "a good one after it", good, NULL, false },
	};
	size_t n = sizeof cases / sizeof cases[0];
	struct submitter sub[sizeof cases / sizeof cases[0]];
	long long before = db_count(w, "SELECT count(*) FROM jobs"), good_n = 0;

	/* The database itself refuses one job's row: the savepoint's path. */
	db_exec(w, "CREATE TRIGGER poison BEFORE INSERT ON jobs WHEN NEW.name = 'poison' "
		   "BEGIN SELECT RAISE(ABORT, 'poisoned row'); END");
	run_group(w, cases, n, sub);
	for (size_t i = 0; i < n; i++) {
		if (cases[i].refused) {
			ok(sub[i].ids[0] < 0 && sub[i].err, "%s is refused: %s", cases[i].what,
			   sub[i].err ? sub[i].err : "(no error)");
		} else {
			good_n++;
			ok(sub[i].ids[0] > 0, "%s in the same group is committed (job %lld)%s%s",
			   cases[i].what, (long long)sub[i].ids[0], sub[i].err ? ": " : "",
			   sub[i].err ? sub[i].err : "");
		}
	}
	ok(sub[1].err && strstr(sub[1].err, "no such job"), "the bad after's own reason");
	ok(sub[3].err && strstr(sub[3].err, "poisoned row"), "the refused row's own reason");
	is_int((int)(db_count(w, "SELECT count(*) FROM jobs") - before), (int)good_n + 1,
	       "the good ones' rows are in the database, with the leader's");
	is_int((int)db_count(w, "SELECT count(*) FROM jobs WHERE name = 'poison'"), 0,
	       "not the refused row");
	for (size_t i = 0; i < n; i++) {
		free(sub[i].err);
		free(sub[i].ids);
	}
	db_exec(w, "DROP TRIGGER poison");
}

static void test_token_twice(struct world *w)
{
	static const char good[] = "[stage a]\nrun = true\n";
	static const struct group_case cases[] = {
		{ "the first of a token", good, "tok-twice", false },
		{ "the same token again in the group", good, "tok-twice", true },
	};
	struct submitter sub[2];
	int64_t again = -1;
	int first, rc;
	bool existed = false;
	char *err = NULL;

	run_group(w, cases, 2, sub);
	/* Which of the two came first in the group is the threads' race. */
	first = sub[0].ids[0] > 0 ? 0 : 1;
	ok(sub[first].ids[0] > 0, "the first of the token in the group is committed");
	ok(sub[1 - first].ids[0] < 0 && sub[1 - first].error == EAGAIN,
	   "its copy in the same group is told to ask again (EAGAIN): %s",
	   sub[1 - first].err ? sub[1 - first].err : "");
	rc = engine_submit(w->engine, &w->me, "group.conf", "tok-twice", good, strlen(good), &again,
			   &existed, &err);
	ok(rc == 0 && again == sub[first].ids[0] && existed, "asked again, it gets the same job (%lld)",
	   (long long)again);
	is_int((int)db_count(w, "SELECT count(*) FROM jobs WHERE token = 'tok-twice'"), 1,
	       "one row for the token");
	free(err);
	for (size_t i = 0; i < 2; i++) {
		free(sub[i].err);
		free(sub[i].ids);
	}
}

static int refuse_commit(void *arg)
{
	(void)arg;
	return 1;
}

/* Every case of a group that fails as a whole: refused, with reason's text. */
static void check_all_failed(struct world *w, struct submitter *sub, size_t n, long long before,
			     const char *reason, int error, const char *what)

{
	bool all_failed = true, said = true, code = true;

	for (size_t i = 0; i < n; i++) {
		all_failed = all_failed && sub[i].ids[0] < 0;
		said = said && sub[i].err && strstr(sub[i].err, reason);
		code = code && sub[i].error == error;
		if (!said)
			diag("%zu: %s", i, sub[i].err ? sub[i].err : "(no error)");
		free(sub[i].err);
		free(sub[i].ids);
	}
	ok(all_failed, "%s: every submission of the group is refused", what);
	ok(said, "%s: each with the reason (%s)", what, reason);
	ok(code, "%s: and errno %s", what, strerror(error));
	is_int((int)(db_count(w, "SELECT count(*) FROM jobs") - before), 0,
	       "%s: none of the group's rows is written (nor the leader's)", what);
}

static void test_commit_fails(struct world *w)
{
	static const char good[] = "[stage a]\nrun = true\n";
	static const struct group_case cases[] = {
		{ "one", good, NULL, true },
		{ "two", good, "tok-lost-1", true },
		{ "three", good, NULL, true },
	};
	size_t n = sizeof cases / sizeof cases[0];
	struct submitter sub[sizeof cases / sizeof cases[0]];
	long long before = db_count(w, "SELECT count(*) FROM jobs");
	size_t model_jobs;
	int64_t id = -1;
	char *err = NULL;
	int rc;

	/* The commit itself is refused (sqlite turns it into a rollback). The
	 * hook is set under the engine's lock: the connection is the engine's. */
	engine_test_hold(w->engine);
	sqlite3_commit_hook(w->store->db, refuse_commit, NULL);
	model_jobs = model_njobs(w->model);
	engine_test_release(w->engine);
	/* The leader's own commit (a group of one) is refused too. */
	run_group(w, cases, n, sub);
	engine_test_hold(w->engine);
	sqlite3_commit_hook(w->store->db, NULL, NULL);
	{
		bool none = true;

		for (size_t i = model_jobs; i < model_njobs(w->model); i++)
			none = none && model_job(w->model, (int64_t)i) == NULL;
		ok(none, "a refused commit: none of the group is left in the model");
	}
	engine_test_release(w->engine);
	check_all_failed(w, sub, n, before, "constraint failed", EIO, "a refused commit");
	is_int((int)db_count(w, "SELECT count(*) FROM jobs WHERE token = 'tok-lost-1'"), 0,
	       "a refused commit: its token is free for the retry");

	rc = engine_submit(w->engine, &w->me, "group.conf", "tok-lost-1", good, strlen(good), &id, NULL,
			   &err);
	ok(rc == 0 && id > 0, "once commits go through again, the retry commits (job %lld)",
	   (long long)id);
	free(err);
}

int main(void)
{
	struct world w = { 0 };

	test_queue();
	if (world_start(&w) < 0)
		return 1;
	test_many(&w);
	test_one_bad(&w);
	test_token_twice(&w);
	test_commit_fails(&w);
	world_stop(&w);
	return done_testing();
}
