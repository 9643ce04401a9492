/* parsa-supervise DIR: the supervisor of one stage instance (supervise.h),
 * started by parsa-runner; also reachable as `parsa-runner --supervise DIR`. */
#include "supervise.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: parsa-supervise DIR (started by parsa-runner, not by hand)\n");
		return 2;
	}
	return supervise_main(argv[1]);
}
