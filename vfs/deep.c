/* SPDX-License-Identifier: MIT */
/*
 * The path of a directory deeper than procfs prints. A program that reaches a directory
 * by relative steps (mkdir d; chdir d; ...) can stand deeper than PATH_MAX: the kernel
 * resolves its relative paths from the directory itself, but readlink of its cwd or of a
 * dirfd says ENAMETOOLONG, and the supervisor names the place a relative path starts by
 * that path. Here the part procfs cannot print is read name by name: climb ".." from
 * the directory until procfs prints the ancestor reached, and find each child's name in
 * its parent by its inode, as getcwd() did before the kernel had a syscall for it.
 *
 * The result names a place to start the walk from, nothing more: vfs__walk() decides the
 * policy on every component of it again (hide and deny globs see every name), so a
 * directory renamed while this climbs can make the path lead elsewhere or nowhere, never
 * past a rule.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "macros.h"
#include "vfs-internal.h"

/* The name of the entry of dir whose inode is st's, into name; -ENOENT when none. The
 * inode in a directory entry can differ from the object's (a mount point, an overlay
 * without xino), so an entry is taken only once fstatat() confirms it, and when no entry
 * has the number every directory entry is stat'ed. */
static int child_name(int dir, const struct stat *st, char name[NAME_MAX + 1])
{
	char buf[8192];

	for (int pass = 0; pass < 2; pass++) {
		if (lseek(dir, 0, SEEK_SET) < 0)
			return negative_errno();
		for (;;) {
			ssize_t n = syscall(SYS_getdents64, dir, buf, sizeof(buf));

			if (n < 0)
				return negative_errno();
			if (n == 0)
				break;
			for (ssize_t off = 0; off < n;) {
				const struct linux_dirent64 *d = (const void *)(buf + off);
				struct stat cst;

				off += d->d_reclen;
				if (streq(d->d_name, ".") || streq(d->d_name, ".."))
					continue;
				if (pass == 0 ? d->d_ino != st->st_ino :
				                (d->d_type != DT_DIR && d->d_type != DT_UNKNOWN))
					continue;
				if (fstatat(dir, d->d_name, &cst, AT_SYMLINK_NOFOLLOW) == 0 &&
				    cst.st_dev == st->st_dev && cst.st_ino == st->st_ino) {
					str_copy(name, NAME_MAX + 1, d->d_name);
					return 0;
				}
			}
		}
	}
	return -ENOENT;
}

/* readlink of our own fd: its path as procfs prints it to us */
static ssize_t fd_path(int fd, char *buf, size_t len)
{
	char proc[64];
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, buf, len - 1);
	if (n < 0)
		return negative_errno();
	buf[n] = '\0';
	return n;
}

_public_ int vfs_dir_vpath(int fd, char *buf, size_t len)
{
	char head[PATH_MAX], name[NAME_MAX + 1];
	_cleanup_close_ int cur = -1;
	size_t pos, nl;
	ssize_t n;

	if (len < 2)
		return -ENAMETOOLONG;
	/* the names below the ancestor procfs prints, gathered from the end of buf */
	pos = len - 1;
	buf[pos] = '\0';
	cur = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (cur < 0)
		return negative_errno();
	for (;;) {
		struct stat st, pst;
		int parent;
		int r;

		n = fd_path(cur, head, sizeof(head));
		if (n >= 0)
			break;
		if (n != -ENAMETOOLONG)
			return (int)n;
		if (fstat(cur, &st) < 0)
			return negative_errno();
		if (!S_ISDIR(st.st_mode))
			return -ENOTDIR;
		parent = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (parent < 0)
			return negative_errno();
		safe_close(cur);
		cur = parent;
		if (fstat(cur, &pst) < 0)
			return negative_errno();
		if (pst.st_dev == st.st_dev && pst.st_ino == st.st_ino)
			return -ENOENT; /* a root that procfs cannot print: not ours to name */
		r = child_name(cur, &st, name);
		if (r < 0)
			return r;
		nl = strlen(name);
		if (nl + 1 > pos)
			return -ENAMETOOLONG;
		pos -= nl;
		memcpy(buf + pos, name, nl);
		buf[--pos] = '/';
	}
	if (head[0] != '/' || strstr(head, " (deleted)"))
		return -ENOENT; /* not a path (an anonymous object), or an unlinked directory */
	if (streq(head, "/"))
		n = 0; /* "/" + "/name..." */
	if ((size_t)n > pos)
		return -ENAMETOOLONG;
	if (pos == len - 1) {
		/* procfs printed it whole after all: nothing was climbed */
		memcpy(buf, head, (size_t)n + 1);
		return (int)n;
	}
	memmove(buf + n, buf + pos, len - pos);
	memcpy(buf, head, (size_t)n);
	return (int)(n + (len - 1 - pos));
}
