/* Background checkpoints (see checkpointer.h). */
#include "checkpointer.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct checkpointer {
	sqlite3 *writer;
	sqlite3 *db;                  /* the thread's own connection */
	char *path;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool wanted;                  /* protected by lock */
	int next_at;                  /* the log's size in pages that asks for the next copy; writer's */
	int last_pages;               /* the log's size at the last commit; writer's */
	bool stopping;                /* protected by lock */
	size_t copies;                /* protected by lock */
	pthread_t thread;
};

/* In the writer's thread, after each commit, with its connection in hand. */
static int on_commit(void *arg, sqlite3 *db, const char *name, int pages)
{
	struct checkpointer *cp = arg;

	/* A smaller log than at the last commit: it was reset (every page
	 * copied, and written again from its start). */
	if (pages < cp->last_pages)
		cp->next_at = CHECKPOINT_PAGES;
	cp->last_pages = pages;
	if (pages >= CHECKPOINT_PAGES_INLINE) {
		sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	} else if (pages >= cp->next_at) {
		cp->next_at = pages + CHECKPOINT_PAGES_AGAIN;
		pthread_mutex_lock(&cp->lock);
		cp->wanted = true;
		pthread_cond_signal(&cp->wake);
		pthread_mutex_unlock(&cp->lock);
	}
	return SQLITE_OK;
}

static void *checkpointer_main(void *arg)
{
	struct checkpointer *cp = arg;

	pthread_setname_np(pthread_self(), "checkpoints");
	pthread_mutex_lock(&cp->lock);
	for (;;) {
		int rc;

		while (!cp->stopping && !cp->wanted)
			pthread_cond_wait(&cp->wake, &cp->lock);
		if (cp->stopping)
			break;
		cp->wanted = false;
		pthread_mutex_unlock(&cp->lock);
		/* PASSIVE: never waits for the writer nor the readers; what
		 * it could not copy is copied next time. */
		rc = sqlite3_wal_checkpoint_v2(cp->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
		if (rc != SQLITE_OK && rc != SQLITE_BUSY)
			log_warnx("%s: checkpoint: %s", cp->path, sqlite3_errmsg(cp->db));
		pthread_mutex_lock(&cp->lock);
		cp->copies++;
	}
	pthread_mutex_unlock(&cp->lock);
	return NULL;
}

struct checkpointer *checkpointer_create(sqlite3 *writer, const char *path, char **err)
{
	struct checkpointer *cp = xcalloc(1, sizeof *cp);
	int rc;

	cp->writer = writer;
	cp->next_at = CHECKPOINT_PAGES;
	cp->path = xstrdup(path);
	pthread_mutex_init(&cp->lock, NULL);
	pthread_cond_init(&cp->wake, NULL);
	rc = sqlite3_open_v2(path, &cp->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		errno = EIO;
		errprintf(err, "%s: cannot open a connection for checkpoints: %s", path,
			  cp->db ? sqlite3_errmsg(cp->db) : sqlite3_errstr(rc));
		goto fail;
	}
	sqlite3_busy_timeout(cp->db, 1000);
	/* A connection opens the log only with its first read: until then its
	 * checkpoints do nothing. */
	rc = sqlite3_exec(cp->db, "PRAGMA schema_version", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		errno = EIO;
		errprintf(err, "%s: cannot read it for checkpoints: %s", path, sqlite3_errmsg(cp->db));
		goto fail;
	}
	rc = pthread_create(&cp->thread, NULL, checkpointer_main, cp);
	if (rc != 0) {
		errno = rc;
		errprintf(err, "cannot start the checkpoint thread: %s", strerror(rc));
		goto fail;
	}
	sqlite3_wal_hook(writer, on_commit, cp);
	return cp;
fail:
	sqlite3_close(cp->db);
	pthread_cond_destroy(&cp->wake);
	pthread_mutex_destroy(&cp->lock);
	free(cp->path);
	free(cp);
	return NULL;
}

void checkpointer_destroy(struct checkpointer *cp)
{
	if (!cp)
		return;
	/* Back to sqlite's own: the writer's last close copies the rest. */
	sqlite3_wal_autocheckpoint(cp->writer, CHECKPOINT_PAGES);
	pthread_mutex_lock(&cp->lock);
	cp->stopping = true;
	pthread_cond_signal(&cp->wake);
	pthread_mutex_unlock(&cp->lock);
	pthread_join(cp->thread, NULL);
	sqlite3_close(cp->db);
	pthread_cond_destroy(&cp->wake);
	pthread_mutex_destroy(&cp->lock);
	free(cp->path);
	free(cp);
}

size_t checkpointer_copies(struct checkpointer *cp)
{
	size_t n;

	pthread_mutex_lock(&cp->lock);
	n = cp->copies;
	pthread_mutex_unlock(&cp->lock);
	return n;
}
