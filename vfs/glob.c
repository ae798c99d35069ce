/* SPDX-License-Identifier: MIT */
/*
 * Paths and globs: normalisation, "under", and the glob matcher the rules, the walker and
 * the default profile's secrets share. Pure: no I/O, no state.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "macros.h"
#include "vfs-internal.h"

/* --- paths and globs ---------------------------------------------------------------- */

/* A mapping of a parent of /dev ("/") shows none of the host's device nodes: /dev holds
 * only the devices the policy names (a mapping at or below /dev, or of a directory
 * elsewhere that holds one). */
bool vfs__hides_devices(const struct vfs__rule *m)
{
	return m && !streq(m->virt, "/dev") && vfs__path_under("/dev", m->virt);
}

bool vfs_path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (streq(dir, "/"))
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/*
 * Lexical normalization: make path absolute against base, drop "." and empty components,
 * apply ".." (stopping at "/"). Only for table paths and canonical bases, where no
 * symlink can sit between the components; the walker does the real thing.
 */
int vfs_normalize(const char *base, const char *path, char *buf, size_t len)
{
	char tmp[PATH_MAX * 2 + 2];
	size_t o = 0;
	const char *p;
	int n;

	if (path[0] == '/')
		n = snprintf(tmp, sizeof(tmp), "%s", path);
	else
		n = snprintf(tmp, sizeof(tmp), "%s/%s", base ? base : "/", path);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -ENAMETOOLONG;
	if (len < 2)
		return -ENAMETOOLONG;
	buf[0] = '/';
	o = 1;
	for (p = tmp; *p;) {
		const char *e;
		size_t cl;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		e = strchrnul(p, '/');
		cl = e - p;
		if (cl == 1 && p[0] == '.') {
			/* nothing */
		} else if (cl == 2 && p[0] == '.' && p[1] == '.') {
			if (o > 1) {
				o--;
				while (o > 1 && buf[o - 1] != '/')
					o--;
				if (o > 1)
					o--;
			}
		} else {
			if (o > 1)
				buf[o++] = '/';
			if (o + cl + 1 > len)
				return -ENAMETOOLONG;
			memcpy(buf + o, p, cl);
			o += cl;
		}
		p = e;
	}
	buf[o] = '\0';
	return 0;
}

/* One component of a glob against one component of a path: '*', '?', '\' escapes. */
static bool match_comp(const char *p, const char *pe, const char *s, const char *se)
{
	const char *star_p = NULL, *star_s = NULL;

	while (s < se) {
		if (p < pe && *p == '*') {
			star_p = ++p;
			star_s = s;
			continue;
		}
		if (p < pe && *p == '\\' && p + 1 < pe) {
			if (p[1] == *s) {
				p += 2;
				s++;
				continue;
			}
		} else if (p < pe && (*p == '?' || *p == *s)) {
			p++;
			s++;
			continue;
		}
		if (!star_p)
			return false;
		p = star_p;
		s = ++star_s;
	}
	while (p < pe && *p == '*')
		p++;
	return p == pe;
}

/* The component after the one at c, or NULL after the last; "" (the root) has none. */
static const char *next_comp(const char *c)
{
	const char *e = strchrnul(c, '/');

	return *e ? e + 1 : NULL;
}

static bool is_globstar(const char *c)
{
	return c[0] == '*' && c[1] == '*' && (c[2] == '/' || c[2] == '\0');
}

/*
 * pat and path both point just after a '/'. Components are matched in order; "**" spans
 * zero or more whole components. Like '*' in match_comp(), only the latest "**" is ever
 * retried (an earlier one could only absorb what the later one can), so a pattern with
 * many "**" costs components(pat) x components(path) at worst, never exponential time
 * on a deep path from the sandbox.
 */
static bool match_from(const char *pat, const char *path)
{
	const char *p = *pat ? pat : NULL, *s = *path ? path : NULL;
	const char *star_p = NULL, *star_s = NULL;

	if (!s) {
		/* "/" itself: only a pattern of "**" components matches it */
		while (p && is_globstar(p))
			if ((p = next_comp(p)) && !*p)
				return true;
		return !p;
	}
	while (s) {
		if (p && is_globstar(p)) {
			/* a "**" that ends the pattern (a slash after it or not) takes
			 * whatever is left */
			if (!(p = next_comp(p)) || !*p)
				return true;
			star_p = p;
			star_s = s;
			continue;
		}
		if (p && match_comp(p, strchrnul(p, '/'), s, strchrnul(s, '/'))) {
			p = next_comp(p);
			s = next_comp(s);
			continue;
		}
		if (!star_s)
			return false;
		/* the latest "**" takes one more component */
		p = star_p;
		s = star_s = next_comp(star_s);
	}
	while (p && is_globstar(p))
		p = next_comp(p);
	return !p;
}

/* Both absolute; the path is canonical ("/" or no trailing slash). */
bool vfs__glob_match(const char *pat, const char *path)
{
	if (pat[0] != '/' || path[0] != '/')
		return false;
	return match_from(pat + 1, path + 1);
}

/*
 * Whether pat could match a path strictly below dir (both absolute, dir canonical): dir's
 * components match the glob's first ones and the glob goes on, or a "**" is reached,
 * which may span anything. A glob that ends within dir's components matches dir or an
 * ancestor of it, which the walker stops at before anything below.
 */
bool vfs__glob_may_match_below(const char *pat, const char *dir)
{
	const char *p = pat + 1, *d = dir + 1;

	if (pat[0] != '/' || dir[0] != '/')
		return false;
	if (!*d)
		return *p != '\0';
	for (;;) {
		const char *pe = strchrnul(p, '/'), *de = strchrnul(d, '/');

		if (pe - p == 2 && p[0] == '*' && p[1] == '*')
			return true;
		if (p == pe || !match_comp(p, pe, d, de))
			return false;
		if (!*de)
			return *pe != '\0';
		if (!*pe)
			return false;
		p = pe + 1;
		d = de + 1;
	}
}

/* Whether the first n components of the glob tail sfx can match the last n components
 * of path (a match of sfx that begins in path's own components). */
static bool head_fits_end(const char *sfx, size_t n, const char *path)
{
	const char *s = path + strlen(path);

	for (size_t i = 0; i < n; i++) {
		while (s > path && s[-1] != '/')
			s--;
		if (s <= path + 1)
			return false; /* fewer than n components */
		s--;
	}
	for (size_t i = 0; i < n; i++) {
		const char *pe = strchrnul(sfx, '/'), *se = strchrnul(s + 1, '/');

		if (!match_comp(sfx, pe, s + 1, se))
			return false;
		sfx = pe + 1;
		s = se;
	}
	return true;
}

/*
 * Whether what pat matches below dir is the same below newdir: pat is a literal prefix
 * (no wildcard), then "**", then a tail of components with no "**", and both
 * directories lie strictly below that prefix. "**" then spans the directory's own
 * components whatever its name, and whether a path below it matches (or lies below a
 * match) is decided by the path's components below the directory alone, unless a match
 * of the tail could begin in the directory's own last components (a tail "a/b" and a
 * directory named "a"): that is checked for both names. So the default profile's rule
 * for .env files anywhere follows a renamed directory, and the literal
 * "~/.config/gcloud" does not follow "~/.config" renamed.
 */
bool vfs__glob_moves_with(const char *pat, const char *dir, const char *newdir)
{
	const char *dstar = strstr(pat, "/**/");
	const char *sfx = dstar ? dstar + 4 : NULL;
	char prefix[PATH_MAX];
	size_t plen, n = 1;

	if (!dstar || !*sfx || strstr(sfx, "**"))
		return false;
	plen = (size_t)(dstar - pat);
	if (plen >= sizeof(prefix))
		return false;
	memcpy(prefix, pat, plen);
	prefix[plen] = '\0';
	if (strpbrk(prefix, "*?\\[")) /* the prefix must be literal */
		return false;
	if (plen && !(vfs__path_under(dir, prefix) && !streq(dir, prefix) &&
	              vfs__path_under(newdir, prefix) && !streq(newdir, prefix)))
		return false;
	for (const char *c = sfx; (c = strchr(c, '/')); c++)
		n++;
	for (size_t j = 1; j < n; j++)
		if (head_fits_end(sfx, j, dir) || head_fits_end(sfx, j, newdir))
			return false;
	return true;
}
