/* SPDX-License-Identifier: MIT */
/* mounttab: the sandbox's mount table without the stubs (mounttab.h says why). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cleanup.h"
#include "io.h"
#include "macros.h"
#include "mounttab.h"
#include "spawn.h"

/* "<digits>/" at p: past it, or NULL. */
static const char *skip_number(const char *p)
{
	const char *s = p;

	while (isdigit((unsigned char)*p))
		p++;
	return p > s && *p == '/' ? p + 1 : NULL;
}

enum mounttab_kind mounttab_kind(const char *vpath)
{
	const char *p;

	if (strncmp(vpath, "/proc/", 6) != 0 || !(p = skip_number(vpath + 6)))
		return MOUNTTAB_NONE;
	if (strncmp(p, "task/", 5) == 0 && !(p = skip_number(p + 5)))
		return MOUNTTAB_NONE;
	if (streq(p, "mountinfo"))
		return MOUNTTAB_INFO;
	if (streq(p, "mounts"))
		return MOUNTTAB_MOUNTS;
	if (streq(p, "mountstats"))
		return MOUNTTAB_STATS;
	return MOUNTTAB_NONE;
}

/* The whole of a procfs file, NUL-terminated (a seq file gives it in several reads). */
static char *read_all(int fd)
{
	size_t len = 0, cap = 16384;
	char *buf = malloc(cap);

	if (!buf)
		return NULL;
	for (;;) {
		ssize_t n;

		if (cap - len < 4096) {
			char *b = realloc(buf, cap * 2);

			if (!b) {
				free(buf);
				return NULL;
			}
			buf = b;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return buf;
}

bool mounttab_field(const char *line, unsigned n, char *out, size_t outlen)
{
	const char *p = line, *e;

	for (unsigned i = 0; i < n; i++) {
		p = strpbrk(p, " \n");
		if (!p || *p == '\n')
			return false;
		p++;
	}
	e = strpbrk(p, " \n");
	if (!e)
		e = p + strlen(p);
	if ((size_t)(e - p) >= outlen)
		return false;
	memcpy(out, p, (size_t)(e - p));
	out[e - p] = '\0';
	return true;
}

/* "device SOURCE mounted on MOUNT-POINT with fstype ...": the mount point. */
static bool stats_mount_point(const char *line, char *out, size_t outlen)
{
	const char *p, *e;

	if (strncmp(line, "device ", 7) != 0 || !(p = strstr(line, " mounted on ")))
		return false;
	p += strlen(" mounted on ");
	e = strstr(p, " with fstype ");
	if (!e || (size_t)(e - p) >= outlen)
		return false;
	memcpy(out, p, (size_t)(e - p));
	out[e - p] = '\0';
	return true;
}

struct points {
	char **v;
	size_t n;
};

static void points_free(struct points *pts)
{
	for (size_t i = 0; i < pts->n; i++)
		free(pts->v[i]);
	free(pts->v);
}

/* The mount points of the stubs' mounts in a mountinfo text. */
static int stub_points(const char *mountinfo, const struct mounttab_stubs *stubs,
		       struct points *pts)
{
	char dev[32], f[PATH_MAX];

	snprintf(dev, sizeof(dev), "%u:%u", major(stubs->dev), minor(stubs->dev));
	for (const char *l = mountinfo; *l;) {
		const char *nl = strchr(l, '\n');

		if (mounttab_field(l, 2, f, sizeof(f)) && streq(f, dev) &&
		    mounttab_field(l, 3, f, sizeof(f)) &&
		    (streq(f, "/" SPAWN_STUB_FILE) || streq(f, "/" SPAWN_STUB_DIR)) &&
		    mounttab_field(l, 4, f, sizeof(f))) {
			char **v = realloc(pts->v, (pts->n + 1) * sizeof(*v));

			if (!v)
				return -ENOMEM;
			pts->v = v;
			if (!(v[pts->n] = strdup(f)))
				return -ENOMEM;
			pts->n++;
		}
		if (!nl)
			break;
		l = nl + 1;
	}
	return 0;
}

/* mp is a stub's mount point or lies below one (a mapping a hide rule covers). */
static bool under_stub(const struct points *pts, const char *mp)
{
	for (size_t i = 0; i < pts->n; i++) {
		size_t n = strlen(pts->v[i]);

		if (strncmp(mp, pts->v[i], n) == 0 && (mp[n] == '\0' || mp[n] == '/'))
			return true;
	}
	return false;
}

char *mounttab_filter_text(const char *text, enum mounttab_kind kind, const char *mountinfo,
			   const struct mounttab_stubs *stubs)
{
	struct points pts = { 0 };
	size_t len = 0;
	bool dropping = false;
	char *out, mp[PATH_MAX];

	if (stub_points(mountinfo, stubs, &pts) < 0 || !(out = malloc(strlen(text) + 1))) {
		points_free(&pts);
		return NULL;
	}
	for (const char *l = text; *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) + 1 : strlen(l);
		bool have;

		switch (kind) {
		case MOUNTTAB_INFO:
			dropping = mounttab_field(l, 4, mp, sizeof(mp)) && under_stub(&pts, mp);
			break;
		case MOUNTTAB_MOUNTS:
			dropping = mounttab_field(l, 1, mp, sizeof(mp)) && under_stub(&pts, mp);
			break;
		case MOUNTTAB_STATS:
			/* a mount's statistics follow its "device" line, indented */
			have = stats_mount_point(l, mp, sizeof(mp));
			if (have || (*l != ' ' && *l != '\t'))
				dropping = have && under_stub(&pts, mp);
			break;
		default:
			break;
		}
		if (!dropping) {
			memcpy(out + len, l, n);
			len += n;
		}
		l += n;
	}
	out[len] = '\0';
	points_free(&pts);
	return out;
}

/* The text in a sealed memfd, read-only and at offset 0. */
static int sealed_copy(const char *text)
{
	_cleanup_close_ int fd = memfd_create("moat-mounttab", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	char p[64];
	int r;

	if (fd < 0)
		return negative_errno();
	if ((r = write_all(fd, text, strlen(text))) < 0)
		return r;
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
		return negative_errno();
	/* a read-only open file description of its own, at offset 0 */
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	return RET_NERRNO(open(p, O_RDONLY | O_CLOEXEC));
}

int mounttab_filtered(int fd, enum mounttab_kind kind, pid_t tid,
		      const struct mounttab_stubs *stubs)
{
	_cleanup_free_ char *text = NULL, *info = NULL, *out = NULL;
	_cleanup_close_ int ifd = -1;
	char p[64];

	text = read_all(fd);
	close(fd);
	if (!text)
		return -EIO;
	if (kind == MOUNTTAB_INFO) {
		out = mounttab_filter_text(text, kind, text, stubs);
	} else {
		/* mountinfo is readable by whoever may read the others, the caller included */
		snprintf(p, sizeof(p), "/proc/%d/mountinfo", tid);
		ifd = open(p, O_RDONLY | O_CLOEXEC);
		if (ifd < 0 || !(info = read_all(ifd)))
			return -EIO;
		out = mounttab_filter_text(text, kind, info, stubs);
	}
	if (!out)
		return -ENOMEM;
	return sealed_copy(out);
}
