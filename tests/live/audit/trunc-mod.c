/* SPDX-License-Identifier: MIT */
/* A library whose own code makes a call the default profile denies, so that the call's
 * stack has a frame in this module (see trunc-fix.c). */
#include <fcntl.h>
#include <unistd.h>

int mod_deny(void);

__attribute__((noinline, visibility("default"))) int mod_deny(void)
{
	int fd = open("/etc/shadow", O_RDONLY | O_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return fd;
}
