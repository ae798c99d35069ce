/* SPDX-License-Identifier: MIT */
/*
 * Directories deeper than PATH_MAX (deep.c, and the walker's long paths): procfs cannot
 * print them, so vfs_dir_vpath() names them by climbing; relative paths from them are
 * then walked with the policy decided on every component. A cwd left inside hidden
 * content (as a continued chdir whose path the sandbox swapped after the check would
 * leave it) must give nothing there: the climb names the hidden component, and the walk
 * refuses it.
 *
 * Tree (T = a fresh directory under /tmp), unnamespaced (virtual path = host path):
 *   T/ws/A/A/.../A (DEPTH levels, A = 100 x 'a')/ visible.txt, .env, vault/secret,
 *                                                 vault/B/B/B (B = 100 x 'b')
 *   bind T/ws; hide **\/.env; hide **\/vault
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "error.h"
#include "vfs.h"

#define DEPTH 45
static char T[256], ws[300];
static char A[101], B[101];
static char deep[VFS_DEEP_MAX]; /* T/ws/A/.../A, as the host names it */

/* the fd of rel (components joined by '/') below dirfd, followed name by name */
static int descend(int dirfd, int levels, const char *name, bool make)
{
	int fd = dup(dirfd);

	assert_true(fd >= 0);
	for (int i = 0; i < levels; i++) {
		int nfd;

		if (make)
			assert_int_equal(mkdirat(fd, name, 0755), 0);
		nfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		assert_true(nfd >= 0);
		close(fd);
		fd = nfd;
	}
	return fd;
}

static void put_at(int dirfd, const char *name, const char *text)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static int setup(void **state)
{
	char tmpl[] = "/tmp/vfs-deep-XXXXXX";
	int wfd, dfd, vfd;
	size_t n;

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	snprintf(T, sizeof(T), "%s", tmpl);
	snprintf(ws, sizeof(ws), "%s/ws", T);
	assert_int_equal(mkdir(ws, 0755), 0);
	memset(A, 'a', 100);
	memset(B, 'b', 100);
	wfd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(wfd >= 0);
	dfd = descend(wfd, DEPTH, A, true);
	put_at(dfd, "visible.txt", "visible");
	put_at(dfd, ".env", "SECRET");
	assert_int_equal(mkdirat(dfd, "vault", 0755), 0);
	vfd = openat(dfd, "vault", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(vfd >= 0);
	put_at(vfd, "secret", "SECRET");
	close(descend(vfd, 3, B, true));
	close(vfd);
	close(dfd);
	close(wfd);
	n = (size_t)snprintf(deep, sizeof(deep), "%s", ws);
	for (int i = 0; i < DEPTH; i++)
		n += (size_t)snprintf(deep + n, sizeof(deep) - n, "/%s", A);
	assert_true(n > PATH_MAX);
	return 0;
}

static int teardown(void **state)
{
	char cmd[512];

	(void)state;
	/* rm -rf works relative to its fds, as natively */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", T);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static struct vfs *make_vfs(void)
{
	struct vfs *v;
	struct moat_error err = { 0 };

	assert_int_equal(vfs_new(NULL, &v), 0);
	assert_int_equal(vfs_add_directive(v, "bind", ws, "test", &err), 0);
	assert_int_equal(vfs_add_directive(v, "hide", "**/.env", "test", &err), 0);
	assert_int_equal(vfs_add_directive(v, "hide", "**/vault", "test", &err), 0);
	assert_int_equal(vfs_finalize(v, VFS_MODE_UNNAMESPACED, &err), 0);
	return v;
}

static int deep_fd(int extra_levels_in_vault)
{
	int wfd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC), dfd, r;

	assert_true(wfd >= 0);
	dfd = descend(wfd, DEPTH, A, false);
	close(wfd);
	if (extra_levels_in_vault < 0)
		return dfd;
	r = openat(dfd, "vault", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(r >= 0);
	close(dfd);
	dfd = descend(r, extra_levels_in_vault, B, false);
	close(r);
	return dfd;
}

static void read_is(int fd, const char *want)
{
	char buf[64];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);

	assert_true(n >= 0);
	buf[n] = '\0';
	assert_string_equal(buf, want);
}

/* procfs cannot print it; the climb names it exactly */
static void test_names_deep_dir(void **state)
{
	static char got[VFS_DEEP_MAX];
	char proc[64], link[PATH_MAX];
	int fd = deep_fd(-1);

	(void)state;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	assert_true(readlink(proc, link, sizeof(link)) < 0 && errno == ENAMETOOLONG);
	assert_int_equal(vfs_dir_vpath(fd, got, sizeof(got)), (int)strlen(deep));
	assert_string_equal(got, deep);
	/* too small a buffer says so, never a truncated path */
	assert_int_equal(vfs_dir_vpath(fd, got, PATH_MAX + 100), -ENAMETOOLONG);
	close(fd);
}

/* relative paths from it: visible ones work (read, create, remove), hidden ones do not */
static void test_relative_from_deep(void **state)
{
	static char base[VFS_DEEP_MAX];
	struct vfs *v = make_vfs();
	struct vfs_caller c = { .pid = getpid(), .tgid = getpid(), .base = base };
	struct vfs_verdict verdict;
	struct stat st;
	int fd = deep_fd(-1), f;

	(void)state;
	assert_true(vfs_dir_vpath(fd, base, sizeof(base)) > PATH_MAX);
	f = vfs_open(v, &c, "visible.txt", O_RDONLY, 0, 0, NULL);
	assert_true(f >= 0);
	read_is(f, "visible");
	close(f);
	assert_int_equal(vfs_open(v, &c, ".env", O_RDONLY, 0, 0, &verdict), -ENOENT);
	assert_true(verdict.denied);
	assert_int_equal(vfs_open(v, &c, "vault/secret", O_RDONLY, 0, 0, NULL), -ENOENT);
	assert_int_equal(vfs_stat(v, &c, "vault", 0, &st, NULL), -ENOENT);
	/* ".." and back down by name, and a symlink relative to the deep directory */
	f = vfs_open(v, &c, "../aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/visible.txt",
	             O_RDONLY, 0, 0, NULL);
	assert_true(f >= 0);
	close(f);
	assert_int_equal(vfs_open(v, &c, "../" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/.env",
	                          O_RDONLY, 0, 0, NULL), -ENOENT);
	assert_int_equal(symlinkat("vault/secret", fd, "lnk"), 0);
	assert_int_equal(vfs_open(v, &c, "lnk", O_RDONLY, 0, 0, NULL), -ENOENT);
	assert_int_equal(symlinkat("visible.txt", fd, "lnk2"), 0);
	f = vfs_open(v, &c, "lnk2", O_RDONLY, 0, 0, NULL);
	assert_true(f >= 0);
	read_is(f, "visible");
	close(f);
	/* creating: a visible name is made on the host, a hidden one is refused */
	assert_int_equal(vfs_mkdir(v, &c, "made", 0755, NULL), 0);
	assert_int_equal(fstatat(fd, "made", &st, 0), 0);
	assert_int_equal(vfs_unlink(v, &c, "made", AT_REMOVEDIR, NULL), 0);
	assert_int_equal(fstatat(fd, "made", &st, 0), -1);
	assert_int_equal(vfs_mkdir(v, &c, "vault/x", 0755, NULL), -EACCES);
	/* the directory's listing drops the hidden entries */
	assert_true(vfs_dir_needs_filter(v, base));
	close(fd);
	vfs_free(v);
}

/* a cwd inside hidden content, deeper than PATH_MAX: nothing there is reachable */
static void test_cwd_inside_hidden(void **state)
{
	static char base[VFS_DEEP_MAX];
	struct vfs *v = make_vfs();
	struct vfs_caller c = { .pid = getpid(), .tgid = getpid(), .base = base };
	struct stat st;
	int fd = deep_fd(3);

	(void)state;
	assert_true(vfs_dir_vpath(fd, base, sizeof(base)) > PATH_MAX);
	assert_non_null(strstr(base, "/vault/"));
	assert_int_equal(vfs_stat(v, &c, ".", 0, &st, NULL), -ENOENT);
	assert_int_equal(vfs_open(v, &c, "../../../secret", O_RDONLY, 0, 0, NULL), -ENOENT);
	assert_int_equal(vfs_open(v, &c, "new", O_WRONLY | O_CREAT, 0644, 0, NULL), -EACCES);
	assert_int_equal(vfs_mkdir(v, &c, "d", 0755, NULL), -EACCES);
	assert_int_equal(fstatat(fd, "new", &st, 0), -1);
	close(fd);
	vfs_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_names_deep_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_relative_from_deep, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cwd_inside_hidden, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
