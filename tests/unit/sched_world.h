/* A real scheduler for unit tests of the mount's modules: an sqlite store, a
 * local storage volume, the engine and the HTTP API on a unix socket, all in
 * one temporary folder, and a mount context (struct fs_ctx) whose link, job
 * cache, queue/, hosts/ and schedules/ talk to it as parsafs's main sets
 * them up. The calls act as this process, as a mount outside a request does. */
#ifndef PARSA_TEST_SCHED_WORLD_H
#define PARSA_TEST_SCHED_WORLD_H

#include "api.h"
#include "backend.h"
#include "engine.h"
#include "engine_test.h"
#include "hosts_dir.h"
#include "job_cache.h"
#include "model.h"
#include "ops.h"
#include "queue_dir.h"
#include "sched_link.h"
#include "schedules_dir.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct sched_world {
	char dir[64];
	char *endpoint;          /* "unix:DIR/sched.sock" */
	struct store *store;
	struct backend *storage; /* the scheduler's */
	struct model *model;
	struct engine *engine;
	struct api *api;
	struct fs_ctx fs;        /* the mount's, with a backend of its own */
};

/* Start it all with the engine's settings cfg (NULL: the defaults); the
 * mount caches names for ttl_ms. 0, or -1 after a diag. */
static inline int sched_world_start_with(struct sched_world *w, int64_t ttl_ms,
					 const struct engine_config *with)
{
	struct engine_config cfg = { 0 };
	char *db, *vol, *sock, *err = NULL;
	int ret = -1;

	if (with)
		cfg = *with;
	memset(w, 0, sizeof *w);
	snprintf(w->dir, sizeof w->dir, "/tmp/parsa-test-world.XXXXXX");
	if (!mkdtemp(w->dir))
		return -1;
	/* Other users reach the socket (mode 0666 under root) for tests that
	 * act as them. */
	chmod(w->dir, 0755);
	db = xasprintf("%s/parsa.db", w->dir);
	vol = xasprintf("%s/storage", w->dir);
	sock = xasprintf("%s/sched.sock", w->dir);
	mkdir(vol, 0755);
	w->store = store_open(db, &err);
	w->storage = w->store ? backend_create(vol, &err) : NULL;
	w->model = model_create();
	if (!w->storage || store_load(w->store, w->model, 0, &err) < 0)
		goto out;
	w->engine = engine_create(&cfg, w->store, w->storage, w->model, &err);
	if (!w->engine || engine_start(w->engine, &err) < 0)
		goto out;
	w->api = api_create(sock, w->engine, &err);
	if (!w->api)
		goto out;
	w->endpoint = xasprintf("unix:%s", sock);
	w->fs.uid = geteuid();
	w->fs.gid = getegid();
	w->fs.backend = backend_create(vol, &err);
	w->fs.link = w->fs.backend ? sched_link_create(w->endpoint, &err) : NULL;
	if (!w->fs.link)
		goto out;
	w->fs.jobs = job_cache_create(w->fs.link, w->fs.backend, ttl_ms);
	w->fs.queue = queue_dir_create(&w->fs);
	w->fs.hosts = hosts_dir_create(&w->fs, ttl_ms);
	w->fs.schedules_queue = queue_dir_create_at(&w->fs, "schedules", API_SCHEDULES_PUT);
	w->fs.schedules = schedules_dir_create(&w->fs, ttl_ms);
	ret = 0;
out:
	if (ret < 0)
		printf("# a scheduler for the test: %s\n", err ? err : strerror(errno));
	free(err);
	free(db);
	free(vol);
	free(sock);
	return ret;
}

static inline int sched_world_start(struct sched_world *w, int64_t ttl_ms)
{
	return sched_world_start_with(w, ttl_ms, NULL);
}

static inline int sched_world_remove(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Stop it all, in the reverse order, and remove the folder. 0 when nothing is
 * left behind. */
static inline int sched_world_stop(struct sched_world *w)
{
	schedules_dir_destroy(w->fs.schedules);
	queue_dir_destroy(w->fs.schedules_queue);
	hosts_dir_destroy(w->fs.hosts);
	queue_dir_destroy(w->fs.queue);
	job_cache_destroy(w->fs.jobs);
	sched_link_destroy(w->fs.link);
	backend_destroy(w->fs.backend);
	if (w->engine)
		engine_stop(w->engine);
	api_destroy(w->api);
	engine_destroy(w->engine);
	model_destroy(w->model);
	backend_destroy(w->storage);
	store_close(w->store);
	free(w->endpoint);
	return nftw(w->dir, sched_world_remove, 8, FTW_DEPTH | FTW_PHYS);
}

/* Submit a spec as this process; the job's id, or -1. */
static inline int64_t sched_world_submit(struct sched_world *w, const char *text)
{
	struct caller me = { .uid = geteuid(), .gid = getegid() };
	char *err = NULL;
	int64_t id = -1;

	if (engine_submit(w->engine, &me, "test.conf", NULL, text, strlen(text), &id, NULL, &err) < 0) {
		printf("# submit: %s\n", err ? err : strerror(errno));
		id = -1;
	}
	free(err);
	return id;
}

#endif
