/* See unix_socket.h. */
#include "unix_socket.h"

#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int unix_socket_answers(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd, answers;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	snprintf(sun.sun_path, sizeof sun.sun_path, "%s", path);
	answers = connect(fd, (struct sockaddr *)&sun, sizeof sun) == 0;
	close(fd);
	return answers;
}
