/* SPDX-License-Identifier: MIT */
/*
 * Whole-buffer pipe I/O between a unit test and the processes it forks (include after
 * <cmocka.h>). A child that cannot write exits 99; the test asserts what it reads.
 */
#pragma once

#include <errno.h>
#include <unistd.h>

static inline void write_all(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n)
		_exit(99);
}

static inline void read_all(int fd, void *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t k = read(fd, (char *)p + got, n - got);
		if (k < 0 && errno == EINTR)
			continue;
		assert_true(k > 0);
		got += (size_t)k;
	}
}
