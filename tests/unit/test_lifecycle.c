/* Job outputs over time (sched/engine/lifecycle.c) on a real local volume, with the
 * engine's side played by the test: `purge` empties every out/<stage>/ (the
 * stage folders and the logs stay), in batches, and says what it did in the
 * job's events; `keep` and `unkeep` leave .keep on the volume; retention
 * deletes the outputs of jobs that ended before now minus the limit, except
 * those kept (now, or before a restart: .keep) and those already purged
 * (.purged), and `purge` still works on a kept job. --retention parses. */
#include "backend.h"
#include "lifecycle.h"
#include "tap.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TAP_STATE;

#define HOUR_MS (3600 * 1000LL)
#define WAIT_MS 5000

/* What the engine would answer and what it was told; filled by the
 * lifecycle's thread through the hooks. */
struct engine_side {
	pthread_mutex_t lock;
	const int64_t *ended;    /* the jobs that ended long ago */
	size_t nended;
	int64_t cutoff_ms;       /* what ended_before was asked last; protected by lock */
	int64_t note_id[16];     /* protected by lock */
	char note[16][256];
	size_t nnotes;
};

static size_t ended_before(void *arg, int64_t cutoff_ms, int64_t **ids)
{
	struct engine_side *e = arg;

	pthread_mutex_lock(&e->lock);
	e->cutoff_ms = cutoff_ms;
	pthread_mutex_unlock(&e->lock);
	*ids = xcalloc(e->nended ? e->nended : 1, sizeof **ids);
	memcpy(*ids, e->ended, e->nended * sizeof **ids);
	return e->nended;
}

static void note(void *arg, int64_t id, const char *text)
{
	struct engine_side *e = arg;

	pthread_mutex_lock(&e->lock);
	if (e->nnotes < ARRAY_LEN(e->note)) {
		e->note_id[e->nnotes] = id;
		snprintf(e->note[e->nnotes], sizeof e->note[0], "%s", text);
		e->nnotes++;
	}
	pthread_mutex_unlock(&e->lock);
}

/* The history line job id got, waiting for it up to WAIT_MS; "" if none. */
static const char *noted(struct engine_side *e, int64_t id)
{
	static char text[256];
	int64_t deadline = time_mono_ms() + WAIT_MS;

	do {
		text[0] = '\0';
		pthread_mutex_lock(&e->lock);
		for (size_t i = 0; i < e->nnotes; i++)
			if (e->note_id[i] == id)
				snprintf(text, sizeof text, "%s", e->note[i]);
		pthread_mutex_unlock(&e->lock);
	} while (!text[0] && time_mono_ms() < deadline && usleep(5000) == 0);
	return text;
}

static char root[] = "/tmp/parsa-test-lifecycle.XXXXXX";

/* Make root/rel with its parent folders: a file holding text, or a folder. */
static void put(const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", root, rel);
	for (char *s = path + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(path, 0755);
		*s = '/';
	}
	if (!text) {
		mkdir(path, 0755);
		return;
	}
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static int there(const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof path, "%s/%s", root, rel);
	return access(path, F_OK) == 0;
}

/* Entries in folder root/rel, -1 when it is not there. */
static int entries(const char *rel)
{
	char path[PATH_MAX];
	struct dirent *d;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof path, "%s/%s", root, rel);
	dir = opendir(path);
	if (!dir)
		return -1;
	while ((d = readdir(dir)))
		n += strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0;
	closedir(dir);
	return n;
}

static char *contents(const char *rel)
{
	char path[PATH_MAX], *text = xcalloc(1, 512);
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", root, rel);
	f = fopen(path, "r");
	if (f) {
		if (!fgets(text, 512, f))
			text[0] = '\0';
		fclose(f);
	}
	return text;
}

/* Wait up to WAIT_MS until root/rel is there (or, with gone, is not). */
static int becomes(const char *rel, bool gone)
{
	int64_t deadline = time_mono_ms() + WAIT_MS;

	while (there(rel) == gone && time_mono_ms() < deadline)
		usleep(5000);
	return there(rel) != gone;
}

static void test_retention_parse(void)
{
	int64_t ms = 0;
	char *err = NULL;

	ok(lifecycle_parse_retention("30d", &ms, &err) == 0 && ms == 30 * 24 * HOUR_MS, "30d");
	ok(lifecycle_parse_retention("1h30m", &ms, &err) == 0 && ms == 90 * 60 * 1000, "1h30m");
	is_int(lifecycle_parse_retention("0", &ms, &err), -1, "0 is refused: it would delete at once");
	is_int(errno, EINVAL, "with EINVAL");
	ok(err && strstr(err, "'0'") && strstr(err, "such as 30d"), "the message says what to write: %s",
	   err ? err : "(none)");
	free(err);
	err = NULL;
	is_int(lifecycle_parse_retention("soon", &ms, &err), -1, "words are refused");
	free(err);
	err = NULL;
	is_int(lifecycle_parse_retention("6000w", &ms, &err), -1, "more than a century is refused");
	free(err);
}

static void test_purge_keep(struct backend *b)
{
	struct engine_side e = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct lifecycle_hooks hooks = { .ended_before = ended_before, .note = note, .arg = &e };
	struct lifecycle *l = lifecycle_create(b, 0, &hooks);
	char *err = NULL, *marker, name[PATH_MAX];
	const char *text;

	put("jobs/1/out/warm/a", "a");
	put("jobs/1/out/warm/sub/b", "b");
	put("jobs/1/out/warm/sub/c", "c");
	put("jobs/1/out/gather/results.csv", "1,2\n");
	put("jobs/1/out/stray", "not a stage folder");
	put("jobs/1/log/warm.log", "log");
	put("jobs/2/out/ckpt", NULL);
	/* More than a batch of names (1024), not many more: a file costs ~1 ms to make. */
	for (int i = 0; i < 1100; i++) {
		snprintf(name, sizeof name, "%s/jobs/2/out/ckpt/%04d", root, i);
		close(open(name, O_WRONLY | O_CREAT, 0644));
	}
	is_int(lifecycle_start(l, &err), 0, "the clean-up thread starts");

	lifecycle_purge(l, 1, "alice");
	text = noted(&e, 1);
	is_str(text, "outputs purged by alice (4 entries)", "purge says who and how much in the events");
	ok(entries("jobs/1/out/warm") == 0 && entries("jobs/1/out/gather") == 0,
	   "every stage folder is empty");
	ok(!there("jobs/1/out/stray"), "what is not a stage folder goes as a whole");
	ok(there("jobs/1/log/warm.log"), "the logs stay");
	marker = contents("jobs/1/.purged");
	is_str(marker, text, "jobs/1/.purged records it on the volume");
	free(marker);

	lifecycle_purge(l, 2, "bob");
	is_str(noted(&e, 2), "outputs purged by bob (1100 entries)",
	       "a folder larger than a batch is emptied whole");
	is_int(entries("jobs/2/out/ckpt"), 0, "nothing is left in it");

	put("jobs/3/out/warm", NULL);
	lifecycle_keep(l, 3, true);
	ok(becomes("jobs/3/.keep", false), "keep leaves jobs/3/.keep on the volume");
	lifecycle_keep(l, 3, false);
	ok(becomes("jobs/3/.keep", true), "unkeep removes it");
	lifecycle_destroy(l);
	free(err);
	backend_remove_tree(b, "jobs");
}

static void test_retention(struct backend *b)
{
	/* Job 14 last: its purge means the sweep has looked at all the others. */
	static const int64_t ended[] = { 10, 11, 12, 13, 14 };
	struct engine_side e = { .lock = PTHREAD_MUTEX_INITIALIZER, .ended = ended,
				 .nended = ARRAY_LEN(ended) };
	struct lifecycle_hooks hooks = { .ended_before = ended_before, .note = note, .arg = &e };
	struct lifecycle *l;
	int64_t before = time_now_ms(), after;
	char *err = NULL;

	put("jobs/10/out/warm/x", "kept before a restart");
	put("jobs/10/.keep", "kept");
	put("jobs/11/out/warm/x", "made after a purge before a restart");
	put("jobs/11/.purged", "outputs purged by alice (1 entries)");
	put("jobs/12/log/warm.log", "no outputs at all");
	put("jobs/13/out/warm/x", "kept now");
	put("jobs/14/out/warm/x", "old");

	l = lifecycle_create(b, HOUR_MS, &hooks);
	lifecycle_keep(l, 13, true);
	is_int(lifecycle_start(l, &err), 0, "a lifecycle with a retention starts");
	ok(strstr(noted(&e, 14), "outputs purged by retention") != NULL,
	   "an old job's outputs are purged by retention");
	after = time_now_ms();
	ok(there("jobs/14/out/warm") && entries("jobs/14/out/warm") == 0, "its stage folder stays, empty");
	pthread_mutex_lock(&e.lock);
	ok(e.cutoff_ms >= before - HOUR_MS && e.cutoff_ms <= after - HOUR_MS,
	   "the jobs asked for are those that ended over an hour ago");
	is_int(e.nnotes, 1, "no other job was touched");
	pthread_mutex_unlock(&e.lock);
	ok(there("jobs/10/out/warm/x"), "kept before a restart (.keep): untouched");
	ok(there("jobs/11/out/warm/x"), "purged before a restart (.purged): not purged again");
	ok(there("jobs/13/out/warm/x"), "kept now: untouched");
	ok(there("jobs/13/.keep"), "and kept on the volume too");

	lifecycle_purge(l, 10, "carol");
	ok(strstr(noted(&e, 10), "outputs purged by carol") != NULL, "purge still works on a kept job");
	ok(!there("jobs/10/out/warm/x"), "and empties it");
	lifecycle_destroy(l);
	free(err);
	backend_remove_tree(b, "jobs");
}

/* keep in an outage (a fault volume whose outage a file switches): the
 * marker is written once the volume is back, not lost; a retention sweep in
 * the outage decides nothing (the job is purged once the volume answers). */
static void test_outage(void)
{
	static const int64_t ended[] = { 21 };
	struct engine_side e = { .lock = PTHREAD_MUTEX_INITIALIZER, .ended = ended,
				 .nended = ARRAY_LEN(ended) };
	struct lifecycle_hooks hooks = { .ended_before = ended_before, .note = note, .arg = &e };
	char *down = xasprintf("%s.down", root), *url = xasprintf("fault:eio=all,while=%s:%s", down, root);
	char *err = NULL;
	struct backend *b;
	struct lifecycle *l;
	int fd;

	put("jobs/20/out/warm", NULL);
	put("jobs/21/out/warm/x", "old");
	fd = open(down, O_WRONLY | O_CREAT, 0644);
	if (fd >= 0)
		close(fd);
	b = backend_create(url, &err);
	ok(b != NULL, "a fault volume (%s)", err ? err : "made");
	if (!b)
		goto out;
	/* A retention of a second sweeps each second (the ended job is the hook's). */
	l = lifecycle_create(b, 1000, &hooks);
	is_int(lifecycle_start(l, &err), 0, "the clean-up thread starts in the outage");
	lifecycle_keep(l, 20, true);
	usleep(1500 * 1000);
	ok(!there("jobs/20/.keep"), "keep in the outage: no marker yet");
	ok(there("jobs/21/out/warm/x"), "the retention sweep purged nothing");
	unlink(down);
	ok(becomes("jobs/20/.keep", false), "the volume back: the marker is written");
	ok(strstr(noted(&e, 21), "outputs purged by retention") != NULL,
	   "and the old job is purged at a later sweep");
	lifecycle_destroy(l);
	backend_remove_tree(b, "jobs");
	backend_destroy(b);
out:
	unlink(down);
	free(down);
	free(url);
	free(err);
}

int main(void)
{
	struct lifecycle *none;
	struct backend *b;
	char *err = NULL;

	if (!mkdtemp(root))
		return 1;
	b = backend_local_create(root, &err);
	if (!b) {
		diag("%s", err);
		return 1;
	}
	test_retention_parse();
	none = lifecycle_create(NULL, HOUR_MS, NULL);
	is_int(lifecycle_start(none, &err), 0, "without a volume there is nothing to start");
	lifecycle_purge(none, 1, "alice");
	lifecycle_destroy(none);
	test_purge_keep(b);
	test_retention(b);
	test_outage();
	backend_destroy(b);
	ok(rmdir(root) == 0, "nothing is left behind");
	free(err);
	return done_testing();
}
