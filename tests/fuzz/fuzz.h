/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the libFuzzer targets (tests/fuzz/run builds and runs them).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a file the code under test opens by name: a memfd, named through
 * /proc/self/fd. Returns the fd (the caller closes it) and writes the name to path. */
static inline int fuzz_memfile(const uint8_t *data, size_t size, char *path, size_t len)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);

	if (fd < 0)
		abort();
	for (size_t o = 0; o < size;) {
		ssize_t n = write(fd, data + o, size - o);

		if (n <= 0)
			abort();
		o += (size_t)n;
	}
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}

/* The input as a NUL-terminated string (a copy; the caller frees it). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}
