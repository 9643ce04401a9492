/* The database's whole-file check (PRAGMA quick_check) on a thread and a
 * read-only connection of its own, after the scheduler has started: on a
 * history of 100,000 jobs (340 MB) it takes 1.8 s with the file in the page
 * cache and 4.2 s without, which was nearly all of a restart. store_open still
 * refuses a file that is not a database (its first read). */
#include "store_internal.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct store_check {
	struct store st;              /* path and the thread's own connection only */
	atomic_bool stopping;
	pthread_t thread;
};

/* sqlite's progress handler: a check store_close stops ends with
 * SQLITE_INTERRUPT, however early (sqlite3_interrupt before the check's
 * statement has begun would be lost). */
static int stop_asked(void *arg)
{
	struct store_check *c = arg;

	return atomic_load(&c->stopping);
}

static void *check_main(void *arg)
{
	struct store_check *c = arg;
	struct timespec a, b;
	char *err = NULL;

	pthread_setname_np(pthread_self(), "db-check");
	/* Behind the threads that answer (Linux's nice is per thread): the
	 * first reads after a restart need the cores more than the check. */
	setpriority(PRIO_PROCESS, (id_t)gettid(), 10);
	clock_gettime(CLOCK_MONOTONIC, &a);
	if (store_quick_check(&c->st, &err) < 0) {
		/* Unless store_close interrupted it: then there is nothing to tell. */
		if (!atomic_load(&c->stopping))
			log_warnx("%s", err ? err : "quick_check failed");
	} else {
		clock_gettime(CLOCK_MONOTONIC, &b);
		log_info("%s: quick_check ok in %.0f ms", c->st.path,
			 (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6);
	}
	free(err);
	/* Its page cache goes with it: the check runs once. */
	sqlite3_close(c->st.db);
	c->st.db = NULL;
	return NULL;
}

int store_check_in_background(struct store *st, char **err)
{
	struct store_check *c;
	int rc;

	if (st->check)
		return 0;
	c = xcalloc(1, sizeof *c);
	c->st.path = st->path;
	atomic_init(&c->stopping, false);
	rc = sqlite3_open_v2(st->path, &c->st.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		store_db_error(&c->st, rc, "open for quick_check", err);
		goto fail;
	}
	sqlite3_busy_timeout(c->st.db, 5000);
	sqlite3_progress_handler(c->st.db, 1000, stop_asked, c);
	rc = pthread_create(&c->thread, NULL, check_main, c);
	if (rc != 0) {
		errno = rc;
		errprintf(err, "cannot start the database check: %s", strerror(rc));
		goto fail;
	}
	st->check = c;
	return 0;
fail:
	sqlite3_close(c->st.db);
	free(c);
	return -1;
}

void store_check_stop(struct store_check *c)
{
	if (!c)
		return;
	atomic_store(&c->stopping, true);
	pthread_join(c->thread, NULL);
	free(c);
}
