/* SPDX-License-Identifier: MIT */
/*
 * Path normalization and glob matching (vfs/glob.c): the input is split at its first
 * two NUL bytes into base, path and pattern (missing parts are empty). Checks what must
 * hold for any input: a normalized path is absolute, has no "." or ".." component, no
 * "//" and no trailing "/"; normalizing it again changes nothing; a pattern without
 * wildcards matches exactly itself.
 */
#include <errno.h>
#include <limits.h>

#include "fuzz.h"
#include "vfs-internal.h"

static bool clean(const char *p)
{
	if (p[0] != '/')
		return false;
	if (p[1] == '\0')
		return true;
	for (const char *c = p; *c; c++) {
		if (c[0] == '/' && (c[1] == '/' || c[1] == '\0'))
			return false;
		if (c[0] == '/' && c[1] == '.' && (c[2] == '/' || c[2] == '\0'))
			return false;
		if (c[0] == '/' && c[1] == '.' && c[2] == '.' && (c[3] == '/' || c[3] == '\0'))
			return false;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = fuzz_cstr(data, size), *parts[3] = { in, "", "" };
	char buf[PATH_MAX], again[PATH_MAX], small[8];
	size_t np = 1;

	for (size_t i = 0; i < size && np < 3; i++)
		if (in[i] == '\0')
			parts[np++] = in + i + 1;
	if (vfs__normalize(parts[0][0] == '/' ? parts[0] : NULL, parts[1], buf, sizeof(buf)) ==
	    0) {
		if (!clean(buf))
			abort();
		if (vfs__normalize(NULL, buf, again, sizeof(again)) != 0 || strcmp(buf, again))
			abort();
	}
	(void)vfs__normalize(parts[0][0] == '/' ? parts[0] : NULL, parts[1], small, sizeof(small));
	(void)vfs__glob_match(parts[2], parts[1]);
	(void)vfs__glob_match(parts[1], parts[2]);
	if (clean(parts[1]) && !strpbrk(parts[1], "*?\\") && !vfs__glob_match(parts[1], parts[1]))
		abort();
	free(in);
	return 0;
}
