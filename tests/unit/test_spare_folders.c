/* Spare job folders (sched/engine/spare_folders.h) on a real local volume: the
 * thread fills the pool, a take renames one into place with its out/ and
 * gives it to the job's owner, a take onto an existing folder consumes
 * nothing, the pool refills after takes, an earlier run's leftovers are
 * removed at start, and an empty pool answers EAGAIN so that the caller makes
 * the folders itself; stage folders the same way; a pool that runs low in a
 * burst is made up to half at once, not one spare per take; a volume away at
 * start is tried again until it answers. Then the name cache (sched/api/ident.h): the same answers
 * as the name service, and a change of /etc/group seen at once. */
#include "backend.h"
#include "ident.h"
#include "spare_folders.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

TAP_STATE;

#define KEEP 4

static char root[] = "/tmp/parsa-test-spare.XXXXXX";

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Waits up to 10 s for the pool to hold want spares. */
static size_t wait_ready(struct spare_folders *sp, size_t want)
{
	size_t ready = 0, taken;

	for (int i = 0; i < 1000; i++) {
		spare_folders_counts(sp, SPARE_JOB, &ready, &taken);
		if (ready >= want)
			break;
		sleep_ms(10);
	}
	return ready;
}

static int is_dir(const char *rel, struct stat *st)
{
	char *path = xasprintf("%s/%s", root, rel);
	int rc = stat(path, st);

	free(path);
	return rc == 0 && S_ISDIR(st->st_mode);
}

static size_t entries(const char *rel)
{
	char *cmd = xasprintf("ls -A '%s/%s' | wc -l", root, rel);
	FILE *p = popen(cmd, "r");
	unsigned long n = 0;

	if (p && fscanf(p, "%lu", &n) != 1)
		n = 0;
	if (p)
		pclose(p);
	free(cmd);
	return (size_t)n;
}

static void test_pool(struct backend *b)
{
	struct backend_cred self = { geteuid(), getegid() }, alice = { 4242, 4343 };
	struct spare_folders *sp;
	struct stat st;
	size_t ready, taken;
	char *err = NULL;

	/* What a crashed run left: removed before the first spare is made. */
	ok(backend_mkdir_p(b, &self, ".spare/old/out", 0755) == 0, "an earlier run's spare is there");
	ok(backend_mkdir(b, &self, "jobs", 0755) == 0, "jobs/ is made");

	sp = spare_folders_create(b, ".spare", KEEP);
	errno = 0;
	is_int(spare_folders_take(sp, SPARE_JOB, "jobs/1", &self), -1, "before the thread starts: no spare");
	is_int(errno, EAGAIN, "... EAGAIN, so that the caller makes the folders itself");
	is_int(spare_folders_start(sp, &err), 0, "the thread starts");
	is_int(wait_ready(sp, KEEP), KEEP, "it makes %d spares", KEEP);
	ok(!is_dir(".spare/old", &st), "the earlier run's spare is gone");
	is_int(entries(".spare"), 16, "the folder holds the 16 buckets of spares and nothing else");
	{
		size_t stages = 0, t;

		for (int i = 0; i < 1000 && stages < KEEP; i++) {
			spare_folders_counts(sp, SPARE_STAGE, &stages, &t);
			sleep_ms(10);
		}
		is_int(stages, KEEP, "and %d spare stage folders", KEEP);
	}

	is_int(spare_folders_take(sp, SPARE_JOB, "jobs/1", &self), 0, "a take");
	ok(is_dir("jobs/1", &st) && is_dir("jobs/1/out", &st), "jobs/1 and its out/ are there");
	is_int(entries("jobs/1/out"), 0, "out/ is empty");
	is_int(spare_folders_take(sp, SPARE_STAGE, "jobs/1/out/warm", &self), 0, "a stage's folder");
	ok(is_dir("jobs/1/out/warm", &st), "jobs/1/out/warm is there");
	is_int(entries("jobs/1/out/warm"), 0, "and empty");
	is_int(wait_ready(sp, KEEP), KEEP, "the pool is full again");

	/* A burst's takes are not refilled while it lasts, unless the pool runs
	 * low; a lone take was, above. */
	{
		int64_t t0 = time_mono_ms(), t1;

		is_int(spare_folders_take(sp, SPARE_JOB, "jobs/q1", &self), 0, "a take from a full pool");
		is_int(spare_folders_take(sp, SPARE_JOB, "jobs/q2", &self), 0, "and another at once");
		/* Time enough for a refill (a few mkdirs), less than the quiet time. */
		sleep_ms(SPARE_FOLDERS_QUIET_MS / 4);
		spare_folders_counts(sp, SPARE_JOB, &ready, &taken);
		t1 = time_mono_ms();
		if (t1 - t0 < SPARE_FOLDERS_QUIET_MS)
			ok(ready < KEEP, "the pool is not made full again before the quiet time is over "
			   "(%zu of %d, %lld ms later)", ready, KEEP, (long long)(t1 - t0));
		else
			diag("not checked: this thread was away for %lld ms, the quiet time is over",
			     (long long)(t1 - t0));
		for (int i = 3; i <= KEEP; i++) {
			char *path = xasprintf("jobs/q%d", i);

			spare_folders_take(sp, SPARE_JOB, path, &self);
			free(path);
		}
		spare_folders_counts(sp, SPARE_JOB, &ready, &taken);
		ok(ready < KEEP, "takes in a row leave the pool short (%zu left)", ready);
		is_int(wait_ready(sp, KEEP), KEEP, "which is full again once they stop");
	}

	errno = 0;
	is_int(spare_folders_take(sp, SPARE_JOB, "jobs/1", &self), -1, "a take onto an existing folder fails");
	is_int(errno, EEXIST, "... with EEXIST");
	spare_folders_counts(sp, SPARE_JOB, &ready, &taken);
	is_int(ready, KEEP, "and consumes no spare");
	is_int(taken, 1 + KEEP, "1 + KEEP taken so far");
	errno = 0;
	is_int(spare_folders_take(sp, SPARE_JOB, "nowhere/1", &self), -1, "a take into a missing folder fails");
	is_int(errno, ENOENT, "... with ENOENT");

	for (int i = 2; i < 2 + 3 * KEEP; i++) {
		char *path = xasprintf("jobs/%d", i);

		if (wait_ready(sp, 1) < 1 || spare_folders_take(sp, SPARE_JOB, path, &self) < 0)
			diag("take %d: %s", i, strerror(errno));
		free(path);
	}
	spare_folders_counts(sp, SPARE_JOB, &ready, &taken);
	is_int(taken, 1 + KEEP + 3 * KEEP, "takes beyond the pool's size are served as it refills");

	if (geteuid() == 0) {
		wait_ready(sp, 1);
		is_int(spare_folders_take(sp, SPARE_JOB, "jobs/alice", &alice), 0, "a take for another user");
		ok(is_dir("jobs/alice", &st) && st.st_uid == 4242 && st.st_gid == 4343,
		   "the job's folder is theirs (%u:%u)", (unsigned)st.st_uid, (unsigned)st.st_gid);
		ok(is_dir("jobs/alice/out", &st) && st.st_uid == 4242 && st.st_gid == 4343,
		   "and so is its out/");
		wait_ready(sp, 1);
		is_int(spare_folders_take(sp, SPARE_STAGE, "jobs/alice/out/s", &alice), 0,
		       "a stage's folder for them");
		ok(is_dir("jobs/alice/out/s", &st) && st.st_uid == 4242 && st.st_gid == 4343,
		   "is theirs too");
	} else {
		diag("not root: giving folders away is not tried");
	}
	spare_folders_destroy(sp);
	ok(is_dir(".spare", &st), "the spares stay on the volume for the next start");
	free(err);
	backend_remove_tree(b, ".spare");
	backend_remove_tree(b, "jobs");
}

/* A burst that runs the pool low: the thread makes it up to half at once and
 * then waits for the quiet again, instead of making one spare per take (and
 * being woken for each). */
static void test_refill_in_one_go(struct backend *b)
{
	enum { keep = 16 };
	struct backend_cred self = { geteuid(), getegid() };
	struct spare_folders *sp = spare_folders_create(b, ".spare-burst", keep);
	size_t ready = 0, taken;
	char *err = NULL;
	int64_t last;

	ok(backend_mkdir(b, &self, "burst", 0755) == 0, "burst/ is made");
	is_int(spare_folders_start(sp, &err), 0, "a pool of %d starts", keep);
	is_int(wait_ready(sp, keep), keep, "and fills");
	/* Takes in a row until under a quarter is left (the thread may make a
	 * spare or two meanwhile, before it sees the burst). */
	for (int i = 1; i <= 2 * keep; i++) {
		char *path = xasprintf("burst/%d", i);

		if (spare_folders_take(sp, SPARE_JOB, path, &self) < 0)
			diag("take %d: %s", i, strerror(errno));
		free(path);
		spare_folders_counts(sp, SPARE_JOB, &ready, &taken);
		if (ready < keep / 4)
			break;
	}
	/* Five spares take about a millisecond; half the quiet time is ample,
	 * and a pool still short then stopped at the low mark. */
	last = time_mono_ms();
	do {
		sleep_ms(1);
		spare_folders_counts(sp, SPARE_JOB, &ready, &taken);
	} while (ready < keep / 2 && time_mono_ms() - last < SPARE_FOLDERS_QUIET_MS / 2);
	if (time_mono_ms() - last < SPARE_FOLDERS_QUIET_MS)
		ok(ready >= keep / 2 && ready < keep, "within the quiet time it is made up to half "
		   "(%zu of %d), not full", ready, keep);
	else
		diag("not checked: the quiet time is over (%zu ready)", ready);
	is_int(wait_ready(sp, keep), keep, "and full once the burst is over");
	spare_folders_destroy(sp);
	free(err);
	backend_remove_tree(b, ".spare-burst");
	backend_remove_tree(b, "burst");
}

/* The volume away at start (a fault volume whose outage a file switches):
 * nothing is ready and a take answers EAGAIN; once the volume is back the
 * thread makes its folder and fills the pool by itself. */
static void test_volume_away_at_start(void)
{
	char *down = xasprintf("%s.down", root);
	char *url = xasprintf("fault:eio=all,while=%s:%s", down, root), *err = NULL;
	struct backend_cred self = { geteuid(), getegid() };
	struct spare_folders *sp;
	struct backend *b;
	struct stat st;
	size_t ready, taken;
	FILE *f = fopen(down, "w");

	if (f)
		fclose(f);
	b = backend_create(url, &err);
	ok(b != NULL, "a fault volume (%s)", err ? err : "made");
	if (!b)
		goto out;
	sp = spare_folders_create(b, ".spare-away", KEEP);
	is_int(spare_folders_start(sp, &err), 0, "the thread starts with the volume away");
	sleep_ms(300);
	spare_folders_counts(sp, SPARE_JOB, &ready, &taken);
	is_int((int)ready, 0, "nothing is ready while the volume is away");
	is_int(spare_folders_take(sp, SPARE_JOB, "jobs-away", &self), -1, "a take fails");
	is_int(errno, EAGAIN, "with EAGAIN: the caller makes its folders itself");
	unlink(down);
	/* Tried again after 1 s, then 2 s: within 10 s. */
	is_int((int)wait_ready(sp, KEEP), KEEP, "the volume back: the pool fills by itself");
	ok(is_dir(".spare-away", &st), "its folder was made");
	spare_folders_destroy(sp);
	backend_remove_tree(b, ".spare-away");
	backend_destroy(b);
out:
	unlink(down);
	free(down);
	free(url);
	free(err);
}

static void test_ident_cache(void)
{
	struct ident_cache *c = ident_cache_create();
	gid_t groups[64], direct[64];
	int n = 64;
	char *a = ident_cache_user_name(c, 0), *bname = ident_cache_user_name(c, 0);
	char *want = ident_user_name(0), *g = ident_cache_group_name(c, 0), *gwant = ident_group_name(0);
	char *unknown = ident_cache_user_name(c, 987654);
	size_t got;

	is_str(a, want, "uid 0's name is the name service's");
	is_str(bname, want, "and the same from the cache");
	is_str(g, gwant, "gid 0's name too");
	is_str(unknown, "987654", "a uid without a name is its number");
	got = ident_cache_groups(c, 0, 0, groups, 64);
	if (getgrouplist(want, 0, direct, &n) < 0)
		n = 1;
	is_int(got, n, "root's groups: as many as getgrouplist's");
	is_int(groups[0], 0, "the primary first");
	is_int(ident_cache_groups(c, 0, 0, groups, 64), got, "the same again from the cache");
	is_int(ident_cache_groups(c, 987654, 5, groups, 64), 1, "a uid without a name: its gid only");
	is_int(groups[0], 5, "... which is the one given");
	free(a);
	free(bname);
	free(want);
	free(g);
	free(gwant);
	free(unknown);
	ident_cache_destroy(c);
}

/* A full cache starts over (as an edit of /etc/passwd makes it do): the places
 * it then reuses held names and groups that were freed already. Under ASan a
 * second free of them aborts (the scheduler did, at a submission after a
 * useradd). */
static void test_ident_cache_starts_over(void)
{
	struct ident_cache *c = ident_cache_create();
	gid_t groups[8];
	char want[32];
	bool same = true;

	/* Two kinds per uid: 300 uids fill the cache's 512 places on the way. */
	for (uid_t uid = 900000; uid < 900300; uid++) {
		char *name = ident_cache_user_name(c, uid);

		snprintf(want, sizeof want, "%u", (unsigned)uid);
		same = same && strcmp(name, want) == 0;
		free(name);
		ident_cache_groups(c, uid, 7, groups, 8);
		same = same && groups[0] == 7;
	}
	ok(same, "names and groups stay right when the full cache starts over");
	ident_cache_destroy(c);
}

int main(void)
{
	struct backend *b;
	char *err = NULL;

	if (!mkdtemp(root))
		return 1;
	b = backend_local_create(root, &err);
	if (!b) {
		diag("%s", err);
		return 1;
	}
	test_pool(b);
	test_refill_in_one_go(b);
	test_volume_away_at_start();
	test_ident_cache();
	test_ident_cache_starts_over();
	backend_destroy(b);
	ok(rmdir(root) == 0, "nothing is left behind");
	free(err);
	return done_testing();
}
