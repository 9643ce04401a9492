/* parsa.conf: every section and kind of value, errors with file:line and the
 * fix, and the refusal of files and keys with unsafe modes or owners. */
#include "config.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TAP_STATE;

static char *dir;

static char *write_conf(const char *name, const char *text, mode_t mode)
{
	char *path = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(path, "w");

	fputs(text, f);
	fclose(f);
	chmod(path, mode);
	return path;
}

static void test_parse(void)
{
	char *path = write_conf("good.conf",
		"; the lab's cluster\n"
		"[cluster]\nsched = head:7070\nmunge_socket = /run/munge/munge.socket.2\n"
		"admin_group = parsa-admin\nstorage_patience = 5m\n\n"
		"[sched]\nlisten = :7070\nlease = 1m\nhost_timeout = 15s\nfair_share_half_life = 12h\n"
		"defer_bursts = no\n\n"
		"[web]\nlisten = 127.0.0.1:8470\n\n"
		"[host]\nname = node7\nfeatures = avx512, bigmem\ncpus = 32\nmem = 256G\n"
		"cpu_limit = 95\nmount = /parsa\ngpus = 4\n", 0644);
	struct parsa_conf c;
	char *err = NULL;

	is_int(parsa_conf_load(path, 0, &c, &err), 0, "a full file loads");
	is_str(c.sched, "head:7070", "sched");
	is_str(c.admin_group, "parsa-admin", "admin_group");
	is_int(c.storage_patience_ms, 300000, "storage_patience in ms");
	is_str(c.listen, ":7070", "listen");
	is_str(c.web_listen, "127.0.0.1:8470", "[web] listen");
	is_int(c.lease_ms, 60000, "lease in ms");
	is_int(c.host_timeout_ms, 15000, "host_timeout");
	is_int(c.half_life_ms, 12 * 3600 * 1000LL, "fair_share_half_life");
	is_int(c.defer_bursts, 0, "defer_bursts = no");
	is_str(c.name, "node7", "name");
	is_int(c.nfeatures, 2, "two features");
	is_str(c.nfeatures == 2 ? c.features[1] : NULL, "bigmem", "trimmed");
	is_int(c.cpus, 32, "cpus");
	is_int(c.mem, 256ULL << 30, "mem");
	ok(c.cpu_limit == 95, "cpu_limit");
	is_str(c.mount, "/parsa", "mount");
	is_int(c.gpus, 4, "gpus");
	parsa_conf_free(&c);
	free(path);
	path = write_conf("nogpus.conf", "[host]\ngpus = 0\n", 0644);
	is_int(parsa_conf_load(path, 0, &c, &err), 0, "gpus = 0 loads");
	is_int(c.gpus, 0, "gpus = 0: none, even if the host has some");
	parsa_conf_free(&c);
	free(path);
	path = write_conf("unset.conf", "[host]\ncpus = 2\n", 0644);
	is_int(parsa_conf_load(path, 0, &c, &err), 0, "a file without gpus loads");
	is_int(c.gpus, -1, "gpus unset: -1, detect");
	is_int(c.defer_bursts, -1, "defer_bursts unset: -1, the default (yes)");
	is_int(c.storage_patience_ms, -1, "storage_patience unset: -1, parsafs's default");
	parsa_conf_free(&c);
	free(path);
	path = write_conf("nowait.conf", "[cluster]\nstorage_patience = 0\n", 0644);
	is_int(parsa_conf_load(path, 0, &c, &err), 0, "storage_patience = 0 loads");
	is_int(c.storage_patience_ms, 0, "storage_patience = 0: fail at once");
	parsa_conf_free(&c);
	free(path);
	free(err);
}

static void test_errors(void)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "[cluster]\nshed = x:1\n", "bad.conf:2: unknown key 'shed' in [cluster]" },
		{ "[clusters]\nsched = x:1\n", "bad.conf:2: unknown section [clusters]" },
		{ "[sched]\nlease = soon\n", "bad.conf:2: lease = soon: expected a duration" },
		{ "[cluster]\nstorage_patience = long\n",
		  "bad.conf:2: storage_patience = long: expected a duration such as 0, 30s or 5m" },
		{ "[host]\ncpus = -1\n", "bad.conf:2: cpus = -1: expected a number" },
		{ "[sched]\ndefer_bursts = maybe\n", "bad.conf:2: defer_bursts = maybe: expected yes or no" },
		{ "[host]\ngpus = two\n", "bad.conf:2: gpus = two: expected a number from 0 to 1024" },
		{ "[host]\nfeatures = ok, b@d\n", "bad.conf:2: 'b@d' is not a name" },
		{ "[host]\nmount = parsa\n", "bad.conf:2: mount = parsa: give an absolute path" },
		{ "[host]\nthis is not ini\n", "bad.conf:2: not a KEY = VALUE line" },
	};

	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char *path = write_conf("bad.conf", cases[i].text, 0644);
		struct parsa_conf c;
		char *err = NULL;

		is_int(parsa_conf_load(path, 0, &c, &err), -1, "refused: %s", cases[i].want);
		ok(err && strstr(err, cases[i].want), "message: %s", err ? err : "(none)");
		free(err);
		free(path);
	}
}

static void test_safety(void)
{
	char *path = write_conf("loose.conf", "[cluster]\n", 0666), *key;
	struct parsa_conf c;
	char *err = NULL;

	is_int(parsa_conf_load(path, 0, &c, &err), -1, "a file others may write is refused");
	ok(err && strstr(err, "chmod go-w") && strstr(err, path), "naming the file and the fix: %s", err);
	free(path);
	path = xasprintf("%s/none.conf", dir);
	is_int(parsa_conf_load(path, 1, &c, &err), 0, "an optional file that is missing is fine");
	ok(c.path == NULL, "and nothing was read");
	is_int(parsa_conf_load(path, 0, &c, &err), -1, "a file named on the command line must exist");
	free(path);
	key = write_conf("munge.key", "0123456789abcdef0123456789abcdef", 0644);
	is_int(parsa_conf_check_key(key, 0, &err), -1, "a munge key others can read is refused");
	ok(err && strstr(err, "chmod 0400"), "with the fix: %s", err);
	chmod(key, 0400);
	is_int(parsa_conf_check_key(key, 0, &err), 0, "mode 0400 is fine");
	free(key);
	key = xasprintf("%s/nokey", dir);
	is_int(parsa_conf_check_key(key, 1, &err), 0, "an optional key that does not exist is fine");
	free(key);
	free(err);
}

static void test_endpoint(void)
{
	char *e;

	is_str(e = parsa_endpoint("head:7070"), "http://head:7070", "HOST:PORT is TCP");
	free(e);
	is_str(e = parsa_endpoint("/run/parsa/sched.sock"), "unix:/run/parsa/sched.sock", "a path is a socket");
	free(e);
	is_str(e = parsa_endpoint("unix:/x"), "unix:/x", "unix: stays");
	free(e);
}

/* $PARSA_CONFIG replaces the default file, "" leaves it out; --config (not
 * optional) is never replaced. */
static void test_env_override(void)
{
	struct parsa_conf c;
	char *path = write_conf("env.conf", "[host]\ncpus = 3\n", 0644), *err = NULL;

	setenv("PARSA_CONFIG", "", 1);
	ok(parsa_conf_load(path, 1, &c, &err) == 0 && !c.path && c.cpus == 0,
	   "PARSA_CONFIG= leaves the default file out");
	parsa_conf_free(&c);
	ok(parsa_conf_load(path, 0, &c, &err) == 0 && c.cpus == 3, "but not a file given with --config");
	parsa_conf_free(&c);
	setenv("PARSA_CONFIG", path, 1);
	ok(parsa_conf_load("/nonexistent/parsa.conf", 1, &c, &err) == 0 && c.cpus == 3,
	   "PARSA_CONFIG=FILE replaces the default file");
	parsa_conf_free(&c);
	unsetenv("PARSA_CONFIG");
	ok(parsa_conf_load("/nonexistent/parsa.conf", 1, &c, &err) == 0 && !c.path,
	   "without it, a missing default file is no error");
	parsa_conf_free(&c);
	free(err);
	free(path);
}

int main(void)
{
	char tmpl[] = "/tmp/parsa-test-config.XXXXXX";
	char *cmd;

	dir = mkdtemp(tmpl);
	test_parse();
	test_errors();
	test_safety();
	test_endpoint();
	test_env_override();
	cmd = xasprintf("rm -rf '%s'", dir);
	if (system(cmd) != 0)
		diag("cannot remove %s", dir);
	free(cmd);
	return done_testing();
}
