/* SPDX-License-Identifier: MIT */
/*
 * The run receipt's workspace commit: which git commit the workspace was at when the
 * run started, read from its .git by hand. git itself is never run: the workspace is
 * untrusted, and a repository's config can make git run programs (core.fsmonitor,
 * core.hooksPath, filters), as the supervisor's user. Only HEAD, one loose ref and
 * packed-refs are read, each below the git directory's fd with openat2(RESOLVE_BENEATH
 * | RESOLVE_NO_SYMLINKS), bounded in size, and the answer is taken only when it is
 * well-formed hex.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "macros.h"
#include "receipt.h"

#define HEAD_MAX 4096
#define PACKED_MAX (16u << 20)

static int open_below(int dfd, const char *rel, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};

	return RET_NERRNO(syscall(SYS_openat2, dfd, rel, &how, sizeof(how)));
}

/* At most max bytes of a regular file, NUL-terminated; NULL if anything is off. */
static char *read_small(int dfd, const char *rel, size_t max)
{
	_cleanup_close_ int fd = open_below(dfd, rel, O_RDONLY | O_NONBLOCK);
	char *buf;
	size_t n = 0;
	ssize_t k;

	if (fd < 0)
		return NULL;
	buf = malloc(max + 1);
	if (!buf)
		return NULL;
	while (n < max && (k = read(fd, buf + n, max - n)) != 0) {
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			free(buf);
			return NULL;
		}
		n += (size_t)k;
	}
	buf[n] = '\0';
	return buf;
}

/* 40 (sha1) or 64 (sha256) lowercase hex digits, then the end or a space/newline. */
static bool object_id(const char *s, char out[65])
{
	size_t n = strspn(s, "0123456789abcdef");

	if ((n != 40 && n != 64) || (s[n] && s[n] != '\n' && s[n] != ' '))
		return false;
	memcpy(out, s, n);
	out[n] = '\0';
	return true;
}

/* A ref name we are willing to open: refs/..., plain characters, no "..". */
static bool plain_ref(const char *r)
{
	return !strncmp(r, "refs/", 5) && !strstr(r, "..") && !strstr(r, "//") &&
	       strlen(r) < 256 &&
	       !r[strspn(r, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-")];
}

static bool from_packed(int gfd, const char *ref, char out[65])
{
	_cleanup_free_ char *p = read_small(gfd, "packed-refs", PACKED_MAX);
	size_t rl = strlen(ref);

	for (char *line = p; line && *line;) {
		char *nl = strchr(line, '\n');

		if (nl)
			*nl = '\0';
		if (object_id(line, out) && line[strlen(out)] == ' ' &&
		    !strncmp(line + strlen(out) + 1, ref, rl) && !line[strlen(out) + 1 + rl])
			return true;
		line = nl ? nl + 1 : NULL;
	}
	return false;
}

json_t *receipt_git(const char *workspace)
{
	_cleanup_close_ int wfd = -1, gfd = -1;
	_cleanup_free_ char *head = NULL;
	char id[65], ref[256] = "";

	if (!workspace)
		return NULL;
	wfd = open(workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (wfd < 0)
		return NULL;
	/* .git as a directory only: a "gitdir:" file (worktrees, submodules) points
	 * anywhere, and is left alone */
	gfd = open_below(wfd, ".git", O_PATH | O_DIRECTORY);
	if (gfd < 0)
		return NULL;
	head = read_small(gfd, "HEAD", HEAD_MAX);
	if (!head)
		return NULL;
	if (!strncmp(head, "ref: ", 5)) {
		char *r = head + 5, *nl = strchr(r, '\n');
		_cleanup_free_ char *loose = NULL;

		if (nl)
			*nl = '\0';
		if (!plain_ref(r))
			return NULL;
		snprintf(ref, sizeof(ref), "%s", r);
		loose = read_small(gfd, ref, HEAD_MAX);
		if (!(loose && object_id(loose, id)) && !from_packed(gfd, ref, id))
			/* a branch with no commit yet */
			return json_pack("{s:n, s:s}", "commit", "ref", ref);
	} else if (!object_id(head, id)) {
		return NULL;
	}
	return ref[0] ? json_pack("{s:s, s:s}", "commit", id, "ref", ref)
		      : json_pack("{s:s, s:n}", "commit", id, "ref");
}
