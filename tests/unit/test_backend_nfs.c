/* The NFS backend's volume URL: server, export, our own options taken out,
 * libnfs's passed on, bad ones refused with a message. (The backend itself
 * runs against a real nfs-ganesha in the storage tests, t02NN.) Also that an
 * unreachable server fails within the URL's timeout. */
#include "backend.h"
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
	return done_testing();
}
