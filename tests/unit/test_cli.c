/* Unit tests for the parsa command's pure helpers: default paths, the mount
 * pointer key, path cleaning, mountinfo parsing, endpoint precedence, job ids,
 * URL escaping, log tails, /proc stat parsing, the run file and its locks.
 * The tools are one executable, not a library, so the sources are compiled
 * in here directly. */
#include "tap.h"
#include "util.h"

#include "client.h"
#include "defaults.h"
#include "paths.h"
#include "proc.h"
#include "runfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TAP_STATE;

static void test_path_absolute(void)
{
	char *p;

	p = path_absolute("/a/b/../c", "/x");
	is_str(p, "/a/c", "'..' removes a component");
	free(p);
	p = path_absolute("mnt", "/home/u");
	is_str(p, "/home/u/mnt", "relative paths join the cwd");
	free(p);
	p = path_absolute("../../..", "/a");
	is_str(p, "/", "'..' stops at the root");
	free(p);
	p = path_absolute("//a//./b/", "/x");
	is_str(p, "/a/b", "doubled slashes, '.' and a trailing slash go");
	free(p);
	p = path_absolute(".", "/");
	is_str(p, "/", "'.' in / is /");
	free(p);
}

static void test_defaults(void)
{
	struct up_env root = { .uid = 0, .home = "/root", .cwd = "/" };
	struct up_env user = { .uid = 1000, .home = "/home/u", .cwd = "/home/u" };
	struct up_env xdg = { .uid = 1000, .home = "/home/u", .xdg_state = "/st", .xdg_runtime = "/run/user/1000", .cwd = "/" };
	char *s;

	s = paths_default_mount(&root);
	is_str(s, "/parsa", "root mounts /parsa");
	free(s);
	s = paths_default_state(&root);
	is_str(s, "/var/lib/parsa", "root keeps state in /var/lib/parsa");
	free(s);
	s = paths_default_endpoint(&root);
	is_str(s, "unix:/var/lib/parsa/sched.sock", "root's default endpoint");
	free(s);
	s = paths_runtime_dir(&root);
	is_str(s, "/run/parsa", "root's runtime folder");
	free(s);

	s = paths_default_mount(&user);
	is_str(s, "/home/u/parsa", "a user mounts ~/parsa");
	free(s);
	s = paths_default_state(&user);
	is_str(s, "/home/u/.local/state/parsa", "a user's state without XDG_STATE_HOME");
	free(s);
	s = paths_runtime_dir(&user);
	is_str(s, "/tmp/parsa-1000", "a user's runtime folder without XDG_RUNTIME_DIR");
	free(s);

	s = paths_default_state(&xdg);
	is_str(s, "/st/parsa", "XDG_STATE_HOME is honoured");
	free(s);
	s = paths_default_endpoint(&xdg);
	is_str(s, "unix:/st/parsa/sched.sock", "the endpoint follows the state");
	free(s);
	s = paths_runtime_dir(&xdg);
	is_str(s, "/run/user/1000/parsa", "XDG_RUNTIME_DIR is honoured");
	free(s);
}

/* A user without a parsa of their own falls back to the machine's socket, and
 * only to the one they are told about: whatever runs in /var/lib/parsa on
 * the test machine (an installed package) changes nothing here. */
static void test_system_fallback(void)
{
	char dir[] = "/tmp/parsa-test-cli.XXXXXX", *sock, *s, *want;
	struct up_env user = { .uid = 1000, .home = "/nonexistent-home", .cwd = "/" };
	int fd;

	ok(mkdtemp(dir) != NULL, "a folder for the machine's parsa");
	sock = xasprintf("%s/sched.sock", dir);
	s = paths_default_endpoint(&user);
	is_str(s, "unix:/nonexistent-home/.local/state/parsa/sched.sock", "no machine's parsa: the user's own socket");
	free(s);
	user.system_state = dir;
	s = paths_default_endpoint(&user);
	is_str(s, "unix:/nonexistent-home/.local/state/parsa/sched.sock", "the machine's folder without a socket: still the user's own");
	free(s);
	fd = open(sock, O_CREAT | O_WRONLY, 0600);
	ok(fd >= 0, "the machine's socket appears");
	if (fd >= 0)
		close(fd);
	s = paths_default_endpoint(&user);
	want = xasprintf("unix:%s", sock);
	is_str(s, want, "then the user falls back to it");
	free(want);
	free(s);
	s = default_sched_endpoint(1000, "/nonexistent-home", NULL, "unix:/x.sock", dir);
	is_str(s, "unix:/x.sock", "PARSA_SCHED wins over the fallback");
	free(s);
	s = default_sched_endpoint(1000, "/nonexistent-home", NULL, NULL, "");
	is_str(s, "unix:/nonexistent-home/.local/state/parsa/sched.sock", "an empty PARSA_SYSTEM_STATE turns the fallback off");
	free(s);
	unlink(sock);
	rmdir(dir);
	free(sock);
}

static void test_up_paths(void)
{
	struct up_env user = { .uid = 1000, .home = "/home/u", .cwd = "/work" };
	struct up_paths p;
	char *err = NULL, longstate[200];

	ok(up_paths_init(&p, &user, "mnt", "st", NULL, &err) == 0, "paths from relative flags");
	is_str(p.mount, "/work/mnt", "mount is absolute");
	is_str(p.storage, "/work/st/storage", "storage defaults to STATE/storage");
	is_str(p.endpoint, "unix:/work/st/sched.sock", "the socket is in the state");
	is_str(p.logs, "/work/st/logs", "logs are in the state");
	is_str(p.pointer, "/tmp/parsa-1000/up/%work%mnt", "the pointer is named after the mount");
	up_paths_free(&p);

	ok(up_paths_init(&p, &user, NULL, NULL, "/data", &err) == 0, "paths from defaults");
	is_str(p.mount, "/home/u/parsa", "default mount");
	is_str(p.storage, "/data", "--storage is kept");
	up_paths_free(&p);

	memset(longstate, 'x', sizeof longstate - 1);
	longstate[0] = '/';
	longstate[sizeof longstate - 1] = '\0';
	errno = 0;
	ok(up_paths_init(&p, &user, NULL, longstate, NULL, &err) < 0 && errno == ENAMETOOLONG,
	   "a state too deep for a unix socket is refused");
	ok(err && strstr(err, "--state"), "and the message names the fix: %s", err ? err : "");
	free(err);
	err = NULL;
	ok(up_paths_init(&p, &user, "/", NULL, NULL, &err) < 0 && errno == EINVAL, "mounting on / is refused");
	free(err);
}

static void test_mount_key(void)
{
	char *k, big[400];

	k = paths_mount_key("/tmp/x/mnt");
	is_str(k, "%tmp%x%mnt", "slashes become %%");
	free(k);
	memset(big, 'a', sizeof big - 1);
	big[0] = '/';
	big[sizeof big - 1] = '\0';
	errno = 0;
	ok(paths_mount_key(big) == NULL && errno == ENAMETOOLONG, "a key longer than a file name is refused");
}

static void test_mountinfo(void)
{
	const char *text =
		"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
		"40 22 0:45 / /tmp/my\\040mnt rw,nosuid,nodev,relatime shared:2 - fuse.parsafs parsafs rw,user_id=0\n"
		"41 22 0:46 / /parsa rw,relatime - fuse.parsafs parsafs rw";
	char type[64];

	ok(mountinfo_find(text, "/", type, sizeof type) == 1, "finds /");
	is_str(type, "ext4", "with its type");
	ok(mountinfo_find(text, "/tmp/my mnt", type, sizeof type) == 1, "unescapes \\040");
	is_str(type, "fuse.parsafs", "fuse type after the optional fields");
	ok(mountinfo_find(text, "/parsa", NULL, 0) == 1, "the last line without a newline");
	ok(mountinfo_find(text, "/tmp", NULL, 0) == 0, "a parent of a mount is not a mount");
	ok(mountinfo_find("", "/", NULL, 0) == 0, "empty text");
}

static void test_client_helpers(void)
{
	long long id = 0;
	char *s;

	s = client_pick_endpoint("unix:/f", "unix:/e", "unix:/d");
	is_str(s, "unix:/f", "--sched wins");
	free(s);
	s = client_pick_endpoint(NULL, "unix:/e", "unix:/d");
	is_str(s, "unix:/e", "then PARSA_SCHED");
	free(s);
	s = client_pick_endpoint(NULL, "", "unix:/d");
	is_str(s, "unix:/d", "an empty PARSA_SCHED is unset");
	free(s);

	ok(parse_job_id("42", &id) == 0 && id == 42, "42 is a job id");
	ok(parse_job_id("0", &id) < 0, "0 is not");
	ok(parse_job_id("-1", &id) < 0, "-1 is not");
	ok(parse_job_id("4x", &id) < 0, "4x is not");
	ok(parse_job_id(" 4", &id) < 0, "' 4' is not");
	ok(parse_job_id("", &id) < 0, "'' is not");

	s = url_escape("a b/c~d_e.f-g&h");
	is_str(s, "a%20b%2Fc~d_e.f-g%26h", "url_escape keeps unreserved characters only");
	free(s);
}

static void test_text_tail(void)
{
	const char *t = "a\nb\nc\n";

	is_str(text_tail(t, strlen(t), 2), "b\nc\n", "last 2 lines");
	is_str(text_tail(t, strlen(t), 10), t, "fewer lines than asked: all");
	is_str(text_tail("a\nb", 3, 1), "b", "a last line without a newline");
	is_str(text_tail("", 0, 3), "", "empty text");
}

static void test_proc_stat(void)
{
	char comm[64], state = 0;

	ok(proc_stat_parse("123 (parsa (x) y) S 1 2 3", comm, sizeof comm, &state) == 0, "parses a stat line");
	is_str(comm, "parsa (x) y", "the name runs to the last ')'");
	is_int(state, 'S', "the state letter");
	ok(proc_stat_parse("garbage", comm, sizeof comm, &state) < 0, "refuses garbage");
	ok(pid_is(getpid(), "test_cli"), "pid_is recognises this process");
	ok(!pid_is(getpid(), "parsa-sched"), "and not under another name");
}

static void test_runfile(void)
{
	char dir[] = "/tmp/test_cli.XXXXXX", *path, *lock;
	struct runinfo in = { .pid = 10, .sched = 11, .fs = 12, .runner = 13, .started_ms = 99 };
	struct runinfo out;
	int fd1 = -1, fd2 = -1;

	ok(mkdtemp(dir) != NULL, "temporary folder");
	path = xasprintf("%s/up.json", dir);
	lock = xasprintf("%s/up.lock", dir);
	in.mount = "/m";
	in.state = "/s";
	in.storage = "/s/storage";
	in.endpoint = "unix:/s/sched.sock";
	ok(runinfo_write(path, &in, NULL) == 0, "write the run file");
	ok(runinfo_read(path, &out, NULL) == 0, "read it back");
	is_int(out.pid, 10, "pid");
	is_int(out.runner, 13, "runner pid");
	is_str(out.mount, "/m", "mount");
	is_str(out.endpoint, "unix:/s/sched.sock", "endpoint");
	runinfo_free(&out);
	unlink(path);
	errno = 0;
	ok(runinfo_read(path, &out, NULL) < 0 && errno == ENOENT, "no run file is ENOENT");

	is_int(lock_try(lock, 1, &fd1), 0, "take a lock");
	is_int(lock_try(lock, 1, &fd2), 1, "a second open of it finds it busy");
	unlink(lock);
	close(fd1);
	is_int(lock_try(lock, 1, &fd2), 0, "after the holder unlinked and left, it is free");
	close(fd2);
	unlink(lock);
	rmdir(dir);
	free(path);
	free(lock);
}

int main(void)
{
	test_path_absolute();
	test_defaults();
	test_system_fallback();
	test_up_paths();
	test_mount_key();
	test_mountinfo();
	test_client_helpers();
	test_text_tail();
	test_proc_stat();
	test_runfile();
	return done_testing();
}
