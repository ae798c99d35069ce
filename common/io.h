/* SPDX-License-Identifier: MIT */
/*
 * Whole writes, for the files moat writes itself (outputs, the audit stream, tar
 * exports, the covering's records).
 */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <unistd.h>

/* write() until all of buf is written, EINTR retried: 0 or -errno. */
static inline int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
