/* SPDX-License-Identifier: MIT */
/*
 * Logging for the CLI and the supervisor loop. Modules do not log above debug: they
 * return -errno and let interposer/ decide what the operator sees. The only mutable
 * global state in moat is the log level below (STYLE.md §11), defined in log.c.
 */
#pragma once

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macros.h"

enum log_level {
	LOG_LEVEL_ERR = 3,
	LOG_LEVEL_WARNING = 4,
	LOG_LEVEL_NOTICE = 5,
	LOG_LEVEL_INFO = 6,
	LOG_LEVEL_DEBUG = 7,
};

/* Defined once, in common/log.c (linked through common_dep). */
extern int moat_log_level;

_printf_(2, 3) static inline void moat_log(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > moat_log_level)
		return;
	fputs("moat: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

#define log_error(...) moat_log(LOG_LEVEL_ERR, __VA_ARGS__)
#define log_warning(...) moat_log(LOG_LEVEL_WARNING, __VA_ARGS__)
#define log_notice(...) moat_log(LOG_LEVEL_NOTICE, __VA_ARGS__)
#define log_info(...) moat_log(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) moat_log(LOG_LEVEL_DEBUG, __VA_ARGS__)

/* Log, then hand back the negative errno (systemd's log_*_errno). */
#define log_error_errno(err, ...) ({ log_error(__VA_ARGS__); -abs(err); })
