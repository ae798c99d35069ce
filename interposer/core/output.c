/* SPDX-License-Identifier: MIT */
/*
 * moat's own output files: see output.h for the rule they follow.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "error.h"
#include "macros.h"
#include "io.h"
#include "output.h"
#include "vfs.h"

/* A private file in the output's directory, created now: no one else's file, link or
 * directory can be behind the name (O_EXCL fails on any existing entry, links included). */
static int create_private(struct out_file *of, char name[32], mode_t mode)
{
	for (int tries = 0; tries < 16; tries++) {
		uint8_t rnd[6];
		char hex[2 * sizeof(rnd) + 1];
		int fd;

		randombytes_buf(rnd, sizeof(rnd));
		sodium_bin2hex(hex, sizeof(hex), rnd, sizeof(rnd));
		snprintf(name, 32, ".moat-%s.tmp", hex);
		fd = openat(of->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd >= 0 || errno != EEXIST)
			return fd < 0 ? -errno : fd;
	}
	return -EEXIST;
}

int out_open(struct out_file *of, const char *path, struct moat_error *e)
{
	_cleanup_free_ char *dir = NULL;
	char link[64], canon[PATH_MAX];
	const char *slash;
	struct stat st;
	ssize_t n;
	int r;

	*of = (struct out_file)OUT_FILE_INIT;
	of->path = path;
	if (!path || !path[0]) {
		return moat_error_set(e, EINVAL, "an empty file name");
	}
	if (streq(path, "-")) {
		/* stdout and stderr are the command's: moat's JSON or stream mixed into them
		 * would corrupt both. */
		return moat_error_set(e, EINVAL,
				      "'-': stdout and stderr belong to the command; name a file");
	}
	slash = strrchr(path, '/');
	of->base = strdup(slash ? slash + 1 : path);
	dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
	if (!of->base || !dir)
		return moat_error_errno(e, ENOMEM);
	if (!of->base[0] || streq(of->base, ".") || streq(of->base, "..")) {
		return moat_error_set(e, EISDIR, "%s: names a directory, not a file", path);
	}
	of->dirfd = open(dir[0] ? dir : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (of->dirfd < 0) {
		return moat_error_set(e, errno, "%s: cannot open its directory: %s", path,
				      strerror(errno));
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%d", of->dirfd);
	n = readlink(link, canon, sizeof(canon) - 1);
	if (n <= 0) {
		r = n < 0 ? -errno : -EIO;
		return moat_error_set(e, r, "%s: cannot name its directory: %s", path,
				      strerror(-r));
	}
	canon[n] = '\0';
	of->dir = strdup(canon);
	if (!of->dir)
		return moat_error_errno(e, ENOMEM);

	if (fstatat(of->dirfd, of->base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(st.st_mode)) {
			return moat_error_set(e, ELOOP, "%s is a symbolic link: moat does not "
					      "follow links for its own outputs (remove it, or name "
					      "the file it points to)", path);
		}
		if (!S_ISREG(st.st_mode)) {
			return moat_error_set(e, EEXIST, "%s exists and is not a regular file",
					      path);
		}
	} else if (errno != ENOENT) {
		return moat_error_set(e, errno, "%s: %s", path, strerror(errno));
	}

	{
		/* Whether it can be written at all: find out before the run, not after. */
		char probe[32];
		int fd = create_private(of, probe, 0600);

		if (fd < 0) {
			return moat_error_set(e, fd, "cannot create files in the directory of "
					      "%s: %s", path, strerror(-fd));
		}
		close(fd);
		unlinkat(of->dirfd, probe, 0);
	}
	return 0;
}

int out_create(struct out_file *of, struct moat_error *e)
{
	struct stat st;

	/* Replace, never truncate: an older file of that name may have other links. */
	if (unlinkat(of->dirfd, of->base, 0) < 0 && errno != ENOENT) {
		return moat_error_set(e, errno, "cannot replace %s: %s", of->path,
				      strerror(errno));
	}
	of->fd = openat(of->dirfd, of->base, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			0640);
	if (of->fd < 0 || fstat(of->fd, &st) < 0) {
		return moat_error_set(e, errno, "cannot create %s: %s", of->path,
				      strerror(errno));
	}
	of->dev = st.st_dev;
	of->ino = st.st_ino;
	return 0;
}

struct inside {
	const char *file;
	char *what;
	size_t whatlen;
};

static bool below(const char *path, const char *top)
{
	size_t n = strlen(top);

	if (n > 1 && top[n - 1] == '/')
		n--;
	return strncmp(path, top, n) == 0 && (path[n] == '/' || path[n] == '\0' || streq(top, "/"));
}

static int check_mapping(const struct vfs_mount_info *m, void *ud)
{
	struct inside *in = ud;
	char canon[PATH_MAX];

	if (!m->writable || !m->host || m->kind == VFS_MOUNT_SYMLINK || m->kind == VFS_MOUNT_HIDE)
		return 0;
	if (!realpath(m->host, canon))
		snprintf(canon, sizeof(canon), "%s", m->host);
	if (!below(in->file, canon))
		return 0;
	snprintf(in->what, in->whatlen, "%s", m->host);
	return 1;
}

bool out_in_writable_mapping(const struct out_file *of, const struct vfs *v, char *what,
			     size_t whatlen)
{
	_cleanup_free_ char *file = NULL;
	struct inside in = { .what = what, .whatlen = whatlen };

	if (asprintf(&file, "%s/%s", streq(of->dir, "/") ? "" : of->dir, of->base) < 0)
		return true; /* cannot tell: refuse rather than guess */
	in.file = file;
	return vfs_foreach_mount(v, check_mapping, &in) == 1;
}

static int put_in_place(struct out_file *of, int fd, const char *tmp)
{
	if (fsync(fd) < 0 && errno != EINVAL && errno != EROFS)
		return -errno;
	if (renameat(of->dirfd, tmp, of->dirfd, of->base) < 0) {
		int r = -errno;

		unlinkat(of->dirfd, tmp, 0);
		return r;
	}
	return 0;
}

int out_commit(struct out_file *of, const void *buf, size_t len)
{
	_cleanup_close_ int fd = -1;
	char tmp[32];
	int r;

	fd = create_private(of, tmp, 0666); /* the umask applies, as to any new file */
	if (fd < 0)
		return fd;
	r = write_all(fd, buf, len);
	if (r < 0) {
		unlinkat(of->dirfd, tmp, 0);
		return r;
	}
	return put_in_place(of, fd, tmp);
}

int out_settle_stream(struct out_file *of)
{
	_cleanup_close_ int fd = -1;
	char tmp[32], buf[65536];
	struct stat st;
	off_t off = 0;
	int r;

	if (of->fd < 0)
		return -EBADF;
	if (fstatat(of->dirfd, of->base, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == of->dev &&
	    st.st_ino == of->ino)
		return 0;
	fd = create_private(of, tmp, 0640);
	if (fd < 0)
		return fd;
	for (;;) {
		ssize_t n = pread(of->fd, buf, sizeof(buf), off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : 0;
			break;
		}
		r = write_all(fd, buf, (size_t)n);
		if (r < 0)
			break;
		off += n;
	}
	if (r == 0)
		r = put_in_place(of, fd, tmp);
	else
		unlinkat(of->dirfd, tmp, 0);
	return r < 0 ? r : 1;
}

void out_discard(struct out_file *of)
{
	struct stat st;

	if (of->fd >= 0 && fstatat(of->dirfd, of->base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    st.st_dev == of->dev && st.st_ino == of->ino)
		unlinkat(of->dirfd, of->base, 0);
	out_close(of);
}

void out_close(struct out_file *of)
{
	safe_close(of->fd);
	safe_close(of->dirfd);
	of->fd = of->dirfd = -1;
	free(of->dir);
	free(of->base);
	of->dir = of->base = NULL;
}
