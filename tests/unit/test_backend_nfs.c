/* The NFS backend's volume URL: server, export, our own options taken out,
 * libnfs's passed on, bad ones refused with a message. Also that an
 * unreachable server fails within the URL's timeout. With PARSA_TEST_NFS_URL
 * set to a volume on a real server (t0208 starts nfs-ganesha and runs this
 * binary so), the ops NFSv3 cannot do as POSIX says too (special_ops.h);
 * the rest of the backend runs in the storage tests, t02NN. */
#include "backend.h"
#include "special_ops.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>

TAP_STATE;

static void parse_ok(const char *url, const char *server, const char *export, const char *libnfs,
		     int timeout_ms)
{
	char *s = NULL, *e = NULL, *l = NULL, *err = NULL;
	int t = 0;

	ok(backend_nfs_parse_url(url, &s, &e, &l, &t, &err) == 0, "%s parses", url);
	is_str(s, server, "%s: server", url);
	is_str(e, export, "%s: export", url);
	is_str(l, libnfs, "%s: what libnfs gets", url);
	is_int(t, timeout_ms, "%s: timeout", url);
	free(s);
	free(e);
	free(l);
	free(err);
}

static void parse_bad(const char *url, const char *why)
{
	char *s = NULL, *e = NULL, *l = NULL, *err = NULL;
	int t = 0, rc;

	rc = backend_nfs_parse_url(url, &s, &e, &l, &t, &err);
	ok(rc < 0 && errno == EINVAL && err, "%s refused (%s): %s", url, why, err ? err : "no message");
	free(s);
	free(e);
	free(l);
	free(err);
}

/* What NFSv3 cannot do fails with Linux's errno (docs/filesystem.md). */
static void test_special(void)
{
	const struct special_caps caps = { .fallocate = false, .long_target = false, .wide_times = false };
	const char *url = getenv("PARSA_TEST_NFS_URL");
	char *err = NULL;
	struct backend *b;

	if (!url || !*url) {
		diag("PARSA_TEST_NFS_URL not set: the ops against a server are skipped (t0208 runs them)");
		return;
	}
	b = backend_create(url, &err);
	ok(b != NULL, "%s opens", url);
	if (!b) {
		diag("%s", err ? err : "");
		free(err);
		return;
	}
	check_special_ops(b, "unit-special", &caps);
	backend_destroy(b);
}

int main(void)
{
	char *err = NULL;
	struct backend *b;
	int64_t t0;

	parse_ok("nfs://fs1/export/parsa", "fs1", "/export/parsa", "nfs://fs1/export/parsa", 30000);
	parse_ok("nfs://10.0.0.5/srv/", "10.0.0.5", "/srv", "nfs://10.0.0.5/srv", 30000);
	parse_ok("nfs://127.0.0.1/x?timeout=2.5&nfsport=12049&mountport=12048", "127.0.0.1", "/x",
		 "nfs://127.0.0.1/x?nfsport=12049&mountport=12048", 2500);
	parse_ok("nfs://h/x?mountport=1", "h", "/x", "nfs://h/x?mountport=1", 30000);
	parse_bad("nfs://", "no server");
	parse_bad("nfs://server", "no export");
	parse_bad("nfs:///export", "empty server");
	parse_bad("nfs://h/x?timeout=0", "timeout too small");
	parse_bad("nfs://h/x?timeout=soon", "timeout not a number");
	parse_bad("nfs://h/x?version=4", "unknown option");
	parse_bad("nfs://h/x/../etc", "'..'");

	/* Nobody listens on this port: a clear error at once, no hang. */
	t0 = time_mono_ms();
	b = backend_create("nfs://127.0.0.1/nothing?nfsport=1&mountport=1&timeout=3", &err);
	ok(!b && err, "an unreachable server is an error at start: %s", err ? err : "");
	ok(time_mono_ms() - t0 < 3500, "within the timeout (%lld ms)", (long long)(time_mono_ms() - t0));
	free(err);
	test_special();
	return done_testing();
}
