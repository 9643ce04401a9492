/* Telling people a job ended (sched/engine/notify.c) with real programs: exec: runs
 * as the job's owner (uid, gid, their groups only, in /, a clean environment
 * with PARSA_JOB*) with the final status on stdin; mail: hands "To:" and
 * "Subject: parsa: job N (name) state" and the status to sendmail as the
 * owner; a failing target (missing program, no sendmail, a program that does
 * not read its input) leaves the next one to run; root's powers are not lent
 * to a job that claims uid 0 without being root's; every failure is told to
 * the job's events through the note hook, with the target and why; and
 * stopping lets the notification in progress finish and drops the queued
 * ones. */
#include "model.h"
#include "notify.h"
#include "spec.h"
#include "tap.h"
#include "util.h"

#include <ftw.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TAP_STATE;

static char root[] = "/tmp/parsa-test-notify.XXXXXX";
static char out[sizeof root + 8];

/* Whom the jobs belong to: nobody when we are root (to see the switch),
 * else ourselves. */
struct owner {
	uid_t uid;
	gid_t gid;
	char name[64];
	char home[PATH_MAX];
};

static void script(const char *name, const char *body)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", root, name);
	f = fopen(path, "w");
	if (!f)
		return;
	fprintf(f, "#!/bin/sh\nOUT=%s\n%s", out, body);
	fclose(f);
	chmod(path, 0755);
}

/* A job of who's that has succeeded, with notify = notify (which it frees);
 * user NULL: who's name. */
static struct job *job_of(int64_t id, char *notify, const struct owner *who, const char *user)
{
	char *text = xasprintf("[job]\nname = lab\nnotify = %s\n[stage a]\nrun = true\n", notify);
	char *err = NULL;
	struct spec *spec = spec_parse(text, strlen(text), "lab.conf", &err);
	struct job *job;

	if (!spec) {
		diag("spec: %s", err ? err : "?");
		exit(1);
	}
	job = model_job_new(id, spec);
	job->name = xstrdup(spec->name);
	job->user = xstrdup(user ? user : who->name);
	job->uid = who->uid;
	job->gid = who->gid;
	job->state = JOB_SUCCEEDED;
	free(text);
	free(notify);
	return job;
}

/* Queue job's notifications and wait until they ran. */
static void notify_now(struct notify *n, struct job *job, const char *status)
{
	notify_job(n, job, status);
	notify_drain(n);
	model_job_free(job);
}

/* What the program left in OUT/name ("" when nothing); malloc'ed. */
static char *left(const char *name, size_t *len)
{
	char path[PATH_MAX], *text = NULL;
	size_t got = 0;
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", out, name);
	f = fopen(path, "r");
	text = xcalloc(1, 2u << 20);
	if (f) {
		got = fread(text, 1, (2u << 20) - 1, f);
		fclose(f);
	}
	if (len)
		*len = got;
	return text;
}

static int there(const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof path, "%s/%s", out, name);
	return access(path, F_OK) == 0;
}

static void test_exec(struct notify *n, const struct owner *who)
{
	char want[PATH_MAX * 2];
	char *got;

	notify_now(n, job_of(7, xasprintf("exec:%s/tell.sh", root), who, NULL), "state: succeeded\n");
	got = left("7", NULL);
	snprintf(want, sizeof want, "%u\n", (unsigned)who->uid);
	ok(strncmp(got, want, strlen(want)) == 0, "exec: runs as the job's owner (uid %u)",
	   (unsigned)who->uid);
	if (geteuid() == 0) {
		snprintf(want, sizeof want, "\n%u\n/\n", (unsigned)who->gid);
		ok(strstr(got, want) != NULL, "with the owner's groups only, none of root's");
	}
	ok(strstr(got, "\n/\n7 lab succeeded\n") != NULL, "in /, with PARSA_JOB, _NAME and _STATE");
	snprintf(want, sizeof want, "\nPATH=/usr/local/bin:/usr/bin:/bin HOME=%s USER=%s LOGNAME=%s\n",
		 who->home, who->name, who->name);
	ok(strstr(got, want) != NULL, "and the owner's HOME, USER and LOGNAME");
	ok(strlen(got) > 18 && strcmp(got + strlen(got) - 18, "\nstate: succeeded\n") == 0,
	   "the status is its standard input");
	if (tap.failed)
		diag("it wrote: %s", got);
	free(got);
}

static void test_mail(const struct owner *who)
{
	char *sendmail = xasprintf("%s/sendmail", root);
	struct notify *n = notify_create(sendmail, NULL, NULL);
	char want[512], *got;

	notify_now(n, job_of(8, xstrdup("mail:alice@example.org"), who, NULL), "state: succeeded\n");
	got = left("mail-8", NULL);
	snprintf(want, sizeof want, "args: -i -- alice@example.org\n%u\nTo: alice@example.org\n"
		 "Subject: parsa: job 8 (lab) succeeded\n\nstate: succeeded\n", (unsigned)who->uid);
	is_str(got, want, "mail: sendmail -i -- ADDRESS as the owner, with To, Subject and the status");
	free(got);
	notify_destroy(n);
	free(sendmail);
}

/* What the note hook was told, one "job N: text" line each. */
struct notes {
	char text[4096];
	size_t len;
};

static void note(void *arg, int64_t job, const char *text)
{
	struct notes *notes = arg;
	int n = snprintf(notes->text + notes->len, sizeof notes->text - notes->len, "job %lld: %s\n",
			 (long long)job, text);

	if (n > 0 && notes->len + (size_t)n < sizeof notes->text)
		notes->len += (size_t)n;
}

static void test_failures(const struct owner *who)
{
	struct notes notes = { .len = 0 };
	struct notify *n = notify_create("/nonexistent/sendmail", note, &notes);
	char *status = xcalloc(1, (1u << 20) + 1), *got;
	size_t len = 0;

	notify_now(n, job_of(9, xasprintf("exec:/nonexistent/tell | mail:a@b | exec:%s/tell.sh", root),
			     who, NULL), "state: failed\n");
	got = left("9", NULL);
	ok(strstr(got, "state: failed") != NULL,
	   "a missing program and a missing sendmail do not stop the next target");
	free(got);
	ok(strstr(notes.text, "job 9: notification exec:/nonexistent/tell failed: exit code 127 "
		  "(cannot execute it)\n") != NULL, "the job's events hear of the missing program");
	ok(strstr(notes.text, "job 9: notification to a@b failed: /nonexistent/sendmail is not there") != NULL,
	   "and of the missing sendmail, naming the address");
	ok(!strstr(notes.text, "tell.sh"), "but not of the target that worked");
	if (tap.failed)
		diag("notes:\n%s", notes.text);

	memset(status, 's', 1u << 20);
	notify_now(n, job_of(10, xasprintf("exec:%s/deaf.sh | exec:%s/tell.sh", root, root), who, NULL),
		   status);
	ok(there("deaf-10"), "a program that does not read a 1 MiB status ran");
	got = left("10", &len);
	ok(len > 1u << 20, "and did not hold up the next, which read all of it (%zu bytes)", len);
	free(got);

	if (geteuid() == 0 && who->uid != 0) {
		struct owner fake = *who;

		fake.uid = 0;
		notify_now(n, job_of(11, xasprintf("exec:%s/tell.sh", root), &fake, who->name), "x\n");
		ok(!there("11"), "uid 0 for a job not submitted by root: nothing runs");
	}
	notify_destroy(n);
	free(status);
}

static void test_stop(const struct owner *who)
{
	struct notify *n = notify_create(NULL, NULL, NULL);
	struct job *slow = job_of(12, xasprintf("exec:%s/slow.sh", root), who, NULL);
	struct job *next = job_of(13, xasprintf("exec:%s/tell.sh", root), who, NULL);
	int64_t deadline = time_mono_ms() + 5000;

	notify_job(n, slow, "state: succeeded\n");
	notify_job(n, next, "state: succeeded\n");
	model_job_free(slow);
	model_job_free(next);
	while (!there("slow-started-12") && time_mono_ms() < deadline)
		usleep(5000);
	ok(there("slow-started-12"), "a slow notification runs");
	notify_destroy(n);
	ok(there("slow-done-12"), "stopping lets it finish");
	ok(!there("13"), "and drops the one queued behind it");
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int main(void)
{
	struct owner who = { .uid = getuid(), .gid = getgid() };
	struct passwd *pw = geteuid() == 0 ? getpwnam("nobody") : NULL;
	struct notify *n;

	/* As in the scheduler: a program that does not read its input is no
	 * reason to die. */
	signal(SIGPIPE, SIG_IGN);
	if (!pw)
		pw = getpwuid(getuid());
	if (!pw || !mkdtemp(root))
		return 1;
	who.uid = pw->pw_uid;
	who.gid = pw->pw_gid;
	snprintf(who.name, sizeof who.name, "%s", pw->pw_name);
	snprintf(who.home, sizeof who.home, "%s", pw->pw_dir);
	snprintf(out, sizeof out, "%s/out", root);
	chmod(root, 0755);
	mkdir(out, 0755);
	chmod(out, 01777);
	/* Each writes a temporary file and renames it: what is there is whole. */
	script("tell.sh", "{ id -u; id -G; pwd; echo \"$PARSA_JOB $PARSA_JOB_NAME $PARSA_JOB_STATE\"; "
	       "echo \"PATH=$PATH HOME=$HOME USER=$USER LOGNAME=$LOGNAME\"; cat; } >$OUT/.$PARSA_JOB\n"
	       "mv $OUT/.$PARSA_JOB $OUT/$PARSA_JOB\n");
	script("sendmail", "{ echo \"args: $*\"; id -u; cat; } >$OUT/.mail-$PARSA_JOB\n"
	       "mv $OUT/.mail-$PARSA_JOB $OUT/mail-$PARSA_JOB\n");
	script("deaf.sh", "touch $OUT/deaf-$PARSA_JOB\n");
	script("slow.sh", "touch $OUT/slow-started-$PARSA_JOB\nsleep 0.5\ntouch $OUT/slow-done-$PARSA_JOB\n");

	n = notify_create(NULL, NULL, NULL);
	test_exec(n, &who);
	notify_destroy(n);
	test_mail(&who);
	test_failures(&who);
	test_stop(&who);
	ok(nftw(root, remove_entry, 8, FTW_DEPTH | FTW_PHYS) == 0, "nothing is left behind");
	return done_testing();
}
