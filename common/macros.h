/* SPDX-License-Identifier: MIT */
/*
 * Small macros shared by every module. Header-only; depends on nothing.
 */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <string.h>

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

#define _unused_ __attribute__((unused))
#define _public_ __attribute__((visibility("default")))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_ __attribute__((noreturn))
#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Turn libc's "-1 and errno" into the "-errno" convention used on every hot path. */
static inline int negative_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

#define RET_NERRNO(expr)                                                                           \
	({                                                                                         \
		long _r = (long)(expr);                                                            \
		_r < 0 ? negative_errno() : (int)_r;                                               \
	})

#define streq(a, b) (strcmp((a), (b)) == 0)

/* snprintf(dst, size, "%s", src) without the printf machinery, for the notification
 * path (a walk copies names and paths several times per call): copies, truncating, and
 * always terminates when size > 0. Returns strlen(src), as snprintf would. */
static inline size_t str_copy(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);

	if (size) {
		size_t c = n < size ? n : size - 1;

		memcpy(dst, src, c);
		dst[c] = '\0';
	}
	return n;
}
