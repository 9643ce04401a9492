/* parsa-supervise DIR: the supervisor of one stage instance (supervise.h),
 * started by parsa-runner; also reachable as `parsa-runner --supervise DIR`. */
#include "supervise.h"
#include "version.h"

#include <stdio.h>
#include <string.h>

static const char usage_text[] =
	"usage: parsa-supervise DIR\n"
	"The supervisor of one stage instance: parsa-runner starts one per instance with\n"
	"the instance's folder DIR; it runs the instance in a session of its own, waits\n"
	"for it, kills what it leaves behind and keeps its exit status in DIR, so that the\n"
	"instance outlives a runner restart. Not meant to be started by hand.\n"
	"  -h, --help   this text\n"
	"  --version    the release\n";

int main(int argc, char **argv)
{
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		printf("parsa-supervise %s\n", PARSA_VERSION);
		return 0;
	}
	if (argc != 2 || argv[1][0] == '-') {
		fputs(usage_text, stderr);
		return 2;
	}
	return supervise_main(argv[1]);
}
