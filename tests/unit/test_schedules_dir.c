/* schedules/ (fs/schedules_dir.c) against a real scheduler in this process,
 * as docs/filesystem.md describes it: a spec with every written there becomes
 * schedules/<name>/ (its writer's, 0755) holding spec (byte for byte, its
 * real size), status, status.json and ctl, all read-only but ctl; ctl takes
 * pause, resume and run-now; a schedule's name is a folder (EISDIR for a file
 * of that name); a name made elsewhere is found at once even while the list
 * is cached; rm -r and rmdir remove the schedule at once, and the jobs it
 * submitted stay. */
#include "ctl_file.h"
#include "sched_world.h"
#include "paths_pool.h"
#include "tap.h"

#include <fcntl.h>
#include <jansson.h>

TAP_STATE;

static const char nightly[] = "[job]\nevery = 0 2 * * *\n\n[stage a]\nrun = true\n";

static int find(struct fs_path *p, const char *path)
{
	return fs_match(path, p);
}

struct listing {
	char text[256];
};

static int add(void *arg, const char *name, const struct stat *st)
{
	struct listing *l = arg;
	size_t used = strlen(l->text);

	(void)st;
	snprintf(l->text + used, sizeof l->text - used, "%s ", name);
	return 0;
}

/* The names in folder path, each followed by a blank; "" on failure. */
static char *list(struct sched_world *w, const char *path)
{
	static struct listing l;
	struct fs_path p;

	l.text[0] = '\0';
	if (find(&p, path) < 0 || !p.ops->readdir || p.ops->readdir(&w->fs, &p, add, &l) < 0)
		l.text[0] = '\0';
	return l.text;
}

/* The text a reader of path gets; NULL with errno when it cannot be opened. */
static char *slurp(struct sched_world *w, const char *path)
{
	struct fs_file *f = NULL;
	struct fs_path p;
	char *text;
	ssize_t n;

	if (find(&p, path) < 0 || p.ops->open(&w->fs, &p, O_RDONLY, &f) < 0)
		return NULL;
	text = xcalloc(1, 4096);
	n = f->ops->read(f, text, 4095, 0);
	f->ops->release(f);
	if (n < 0)
		text[0] = '\0';
	return text;
}

/* Write text to path as cp does: create, write, close. 0 or -1 with errno. */
static int copy_in(struct sched_world *w, const char *path, const char *text)
{
	struct fs_file *f = NULL;
	struct fs_path p;
	int ret;

	if (find(&p, path) < 0 || p.ops->create(&w->fs, &p, O_WRONLY | O_TRUNC, 0644, &f) < 0)
		return -1;
	ret = f->ops->write(f, text, strlen(text), 0) < 0 ? -1 : f->ops->flush(f);
	f->ops->release(f);
	return ret;
}

static int ctl(struct sched_world *w, const char *name, const char *command)
{
	struct fs_file *f = NULL;
	struct fs_path p;
	char path[128];
	ssize_t n;

	snprintf(path, sizeof path, "/schedules/%s/ctl", name);
	if (find(&p, path) < 0 || p.ops->open(&w->fs, &p, O_WRONLY, &f) < 0)
		return -1;
	n = f->ops->write(f, command, strlen(command), 0);
	f->ops->release(f);
	return n < 0 ? -1 : 0;
}

static size_t jobs(struct sched_world *w)
{
	size_t n = 0;

	engine_test_hold(w->engine);
	for (size_t i = 0; i < model_njobs(w->model); i++)
		n += model_job_at(w->model, i) != NULL;
	engine_test_release(w->engine);
	return n;
}

static void test_a_schedule(struct sched_world *w)
{
	struct fs_file *f = NULL;
	struct fs_path p;
	struct stat st;
	char *text;
	json_t *json;

	ok(find(&p, "/schedules") == 0 && p.ops->getattr(&w->fs, &p, &st) == 0 &&
	   S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 01777, "schedules/ is a sticky folder for all");
	is_int(copy_in(w, "/schedules/nightly.conf", nightly), 0, "cp nightly.conf schedules/");
	ok(find(&p, "/schedules/nightly") == 0 && p.ops->getattr(&w->fs, &p, &st) == 0 &&
	   S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0755 && st.st_uid == geteuid(),
	   "schedules/nightly is a folder 0755 of its writer");
	/* Only now: the list the create looked at (without nightly) is cached,
	 * and the lookup above asked again. */
	is_str(list(w, "/schedules"), "nightly ", "schedules/ lists the schedule, not the file");
	is_str(list(w, "/schedules/nightly"), "spec status status.json ctl ", "with its four files");

	ok(find(&p, "/schedules/nightly/spec") == 0 && p.ops->getattr(&w->fs, &p, &st) == 0 &&
	   st.st_size == (off_t)strlen(nightly) && (st.st_mode & 0777) == 0444,
	   "spec is read-only with its real size (cmp trusts it)");
	text = slurp(w, "/schedules/nightly/spec");
	is_str(text, nightly, "and reads back byte for byte");
	free(text);
	is_int(p.ops->open(&w->fs, &p, O_WRONLY, &f), -1, "it cannot be opened for writing");
	is_int(errno, EACCES, "EACCES");
	is_int(p.ops->truncate(&w->fs, &p, 0), -1, "nor truncated");
	is_int(errno, EACCES, "EACCES");
	text = slurp(w, "/schedules/nightly/status");
	ok(text && strstr(text, "name: nightly\n") && strstr(text, "state: active\n") &&
	   strstr(text, "next run: "), "status says what and when");
	free(text);
	text = slurp(w, "/schedules/nightly/status.json");
	json = text ? json_loads(text, 0, NULL) : NULL;
	ok(json && json_integer_value(json_object_get(json, "next_ms")) > 0, "status.json has next_ms");
	json_decref(json);
	free(text);

	ok(find(&p, "/schedules/nightly/ctl") == 0 && p.ops->getattr(&w->fs, &p, &st) == 0 &&
	   (st.st_mode & 0777) == 0644, "ctl is 0644");
	text = slurp(w, "/schedules/nightly/ctl");
	is_str(text, "commands: pause | resume | run-now\n", "and reading it shows the commands");
	free(text);
	is_int(p.ops->truncate(&w->fs, &p, 0), 0, "`echo pause > ctl` may truncate it");
	ok(p.ops->truncate(&w->fs, &p, 3) == -1 && errno == EINVAL, "to another size: EINVAL");
	{
		struct fs_file *g = NULL;
		struct stat gst;

		/* `truncate -s 0 ctl`: the size set through the open file, then its
		 * attributes asked by handle, no path (issue 35: was ENOENT). */
		ok(p.ops->open(&w->fs, &p, O_WRONLY, &g) == 0 && g->ops->truncate(g, 0) == 0 &&
		   g->ops->getattr(g, &gst) == 0 && S_ISREG(gst.st_mode),
		   "ftruncate to 0 and fstat of an open schedule ctl");
		if (g)
			g->ops->release(g);
	}
	is_int(ctl(w, "nightly", "pause\n"), 0, "pause");
	text = slurp(w, "/schedules/nightly/status");
	ok(text && strstr(text, "state: paused\n"), "status says paused");
	free(text);
	is_int(ctl(w, "nightly", "pause\n"), -1, "pause again");
	is_int(errno, EBUSY, "is EBUSY");
	is_int(ctl(w, "nightly", "resume\nrun-now\n"), 0, "resume, run-now");
	is_int(jobs(w), 1, "run-now submitted a job");
	is_int(ctl(w, "nightly", "dance\n"), -1, "an unknown command");
	is_int(errno, EINVAL, "is EINVAL");

	ok(find(&p, "/schedules/nightly") == 0 && p.ops->create(&w->fs, &p, O_WRONLY, 0644, &f) == -1 &&
	   errno == EISDIR, "a file named like a schedule cannot be made: EISDIR");
	ok(p.ops->unlink(&w->fs, &p) == -1 && errno == EISDIR, "rm of the schedule's name: EISDIR");
}

static void test_names(struct sched_world *w)
{
	struct api_reply reply;
	struct fs_identity me = { .uid = geteuid(), .gid = getegid() };
	json_t *body = json_pack("{s:s,s:s}", "name", "weekly.conf", "spec",
				 "[job]\nevery = 0 3 * * 0\n[stage a]\nrun = true\n");
	char *dump = json_dumps(body, JSON_COMPACT);
	struct fs_path p;
	struct stat st;
	int ret;

	ok(strstr(list(w, "/schedules"), "weekly") == NULL, "the listing is cached without weekly");
	/* Made by another mount: straight to the scheduler. */
	ret = sched_link_call(w->fs.link, &me, "POST", TP(API_SCHEDULES_PUT), dump, strlen(dump), 5000, &reply);
	api_reply_clear(&reply);
	is_int(ret, 0, "weekly is made elsewhere");
	ok(find(&p, "/schedules/weekly") == 0 && p.ops->getattr(&w->fs, &p, &st) == 0 &&
	   S_ISDIR(st.st_mode), "a name not in the cached list is asked for again: there it is");
	ok(find(&p, "/schedules/monthly/ctl") == 0 && p.ops->truncate(&w->fs, &p, 0) == -1 &&
	   errno == ENOENT, "the ctl of a schedule that does not exist: ENOENT");
	ok(find(&p, "/schedules/monthly") == 0 && p.ops->getattr(&w->fs, &p, &st) == -1 &&
	   errno == ENOENT, "nor does its folder");
	free(dump);
	json_decref(body);
}

static void test_removal(struct sched_world *w)
{
	struct fs_path p;
	struct stat st;

	ok(find(&p, "/schedules/nightly/status") == 0 && p.ops->unlink(&w->fs, &p) == 0,
	   "rm -r first removes the files: let it");
	ok(find(&p, "/schedules/nightly") == 0 && p.ops->rmdir(&w->fs, &p) == 0,
	   "then rmdir removes the schedule");
	ok(p.ops->getattr(&w->fs, &p, &st) == -1 && errno == ENOENT, "it is gone at once");
	is_str(list(w, "/schedules"), "weekly ", "from the listing too");
	is_int(jobs(w), 1, "the job it submitted stays");
	ok(p.ops->rmdir(&w->fs, &p) == -1 && errno == ENOENT, "rmdir again: ENOENT");
}

int main(void)
{
	struct sched_world w;

	/* A long cache: names still have to show up and go away at once. */
	if (sched_world_start(&w, 60000) < 0)
		return 1;
	test_a_schedule(&w);
	test_names(&w);
	test_removal(&w);
	is_int(sched_world_stop(&w), 0, "nothing is left behind");
	tp_free();
	return done_testing();
}
