/* SPDX-License-Identifier: MIT */
/*
 * The one formatter of struct moat_error (error.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

static int positive(int err)
{
	return err ? abs(err) : EINVAL;
}

int moat_error_set(struct moat_error *e, int err, const char *fmt, ...)
{
	va_list ap;

	err = positive(err);
	if (e) {
		e->err = err;
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
	}
	return -err;
}

int moat_error_errno(struct moat_error *e, int err)
{
	err = positive(err);
	if (e) {
		e->err = err;
		e->msg[0] = '\0';
	}
	return -err;
}

const char *moat_error_str(const struct moat_error *e)
{
	if (e->msg[0])
		return e->msg;
	return strerror(e->err ? e->err : EINVAL);
}
