/* SPDX-License-Identifier: MIT */
/*
 * The walker's shortcuts (dcache.c, VFS__STATONLY, the fixed types of mapping roots) must
 * not change a single answer: stats equal the host's, host changes under a read-only
 * mapping are seen at once, renames in a writable mapping too, the policy is decided on
 * every path whatever the cache holds, and the cache stays bounded and thread-safe.
 *
 * Tree (T = a fresh directory under /tmp), mapped namespaced-style (no sandbox needed):
 *   T/ro   -> /ro (ro-bind)  and  -> /alias (bind: a writable view of the same host dirs)
 *   T/rw   -> /rw (bind)
 *   hide /ro/a/hidden (and everything below it), hide /alias/a/hidden
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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

static char T[256];

static void hpath(char *buf, size_t len, const char *rel)
{
	snprintf(buf, len, "%s/%s", T, rel);
}

static void put(const char *rel, const char *content)
{
	char p[PATH_MAX];
	FILE *f;

	hpath(p, sizeof(p), rel);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static void dir(const char *rel)
{
	char p[PATH_MAX];

	hpath(p, sizeof(p), rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static void hrename(const char *from, const char *to)
{
	char a[PATH_MAX], b[PATH_MAX];

	hpath(a, sizeof(a), from);
	hpath(b, sizeof(b), to);
	assert_int_equal(rename(a, b), 0);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static int setup_tree(void **state)
{
	char tmpl[] = "/tmp/vfs-cache-XXXXXX";

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	snprintf(T, sizeof(T), "%s", tmpl);
	dir("ro");
	dir("ro/a");
	dir("ro/a/b");
	dir("ro/a/b/c");
	dir("ro/a/open");
	dir("ro/many");
	dir("rw");
	dir("rw/d");
	put("ro/a/b/c/f.txt", "F");
	put("ro/a/open/s.txt", "S");
	put("rw/d/e.txt", "E");
	{
		char p[PATH_MAX];

		hpath(p, sizeof(p), "ro/a/b/lnk");
		assert_int_equal(symlink("c/f.txt", p), 0);
		hpath(p, sizeof(p), "ro/a/b/ldir");
		assert_int_equal(symlink("c", p), 0);
	}
	for (int i = 0; i < 600; i++) {
		char p[64];

		snprintf(p, sizeof(p), "ro/many/%d", i);
		dir(p);
		snprintf(p, sizeof(p), "ro/many/%d/x", i);
		put(p, "X");
	}
	return 0;
}

static int teardown_tree(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", T);
	return system(cmd) == 0 ? 0 : -1;
}

static struct vfs *make_vfs(void)
{
	struct vfs *v;
	struct moat_error err = { 0 };
	char a[PATH_MAX * 2];

	assert_int_equal(vfs_new(NULL, &v), 0);
	snprintf(a, sizeof(a), "%s/ro:/ro", T);
	assert_int_equal(vfs_add_directive(v, "ro-bind", a, "test", &err), 0);
	snprintf(a, sizeof(a), "%s/ro:/alias", T);
	assert_int_equal(vfs_add_directive(v, "bind", a, "test", &err), 0);
	snprintf(a, sizeof(a), "%s/rw:/rw", T);
	assert_int_equal(vfs_add_directive(v, "bind", a, "test", &err), 0);
	assert_int_equal(vfs_add_directive(v, "hide", "/ro/a/hidden", "test", &err),
	                 0);
	assert_int_equal(vfs_add_directive(v, "hide", "/alias/a/hidden", "test", &err), 0);
	assert_int_equal(vfs_finalize(v, VFS_MODE_NAMESPACED, &err), 0);
	return v;
}

static const struct vfs_caller C = { .pid = 1, .tgid = 1, .base = "/" };

/* vfs_stat of vpath (flags) must equal the host's fstatat of hrel, or both fail alike */
static void same_stat(const struct vfs *v, const char *vpath, const char *hrel, int flags)
{
	struct stat a, b;
	struct statx ax, bx;
	char h[PATH_MAX];
	int ra, rb;

	hpath(h, sizeof(h), hrel);
	ra = vfs_stat(v, &C, vpath, flags, &a, NULL);
	rb = fstatat(AT_FDCWD, h, &b, flags) < 0 ? -errno : 0;
	assert_int_equal(ra, rb);
	if (ra == 0) {
		assert_int_equal(a.st_dev, b.st_dev);
		assert_int_equal(a.st_ino, b.st_ino);
		assert_int_equal(a.st_mode, b.st_mode);
		assert_int_equal(a.st_nlink, b.st_nlink);
		assert_int_equal(a.st_size, b.st_size);
		assert_int_equal(a.st_mtim.tv_sec, b.st_mtim.tv_sec);
		assert_int_equal(a.st_mtim.tv_nsec, b.st_mtim.tv_nsec);
		assert_int_equal(a.st_ctim.tv_nsec, b.st_ctim.tv_nsec);
	}
	ra = vfs_statx(v, &C, vpath, flags, STATX_BASIC_STATS | STATX_BTIME, &ax, NULL);
	rb = statx(AT_FDCWD, h, flags, STATX_BASIC_STATS | STATX_BTIME, &bx) < 0 ? -errno : 0;
	assert_int_equal(ra, rb);
	if (ra == 0) {
		assert_int_equal(ax.stx_ino, bx.stx_ino);
		assert_int_equal(ax.stx_mode, bx.stx_mode);
		assert_int_equal(ax.stx_nlink, bx.stx_nlink);
		assert_int_equal(ax.stx_size, bx.stx_size);
		assert_int_equal(ax.stx_mask, bx.stx_mask);
		assert_int_equal(ax.stx_mtime.tv_nsec, bx.stx_mtime.tv_nsec);
	}
}

static void test_stat_equivalence(void **state)
{
	struct vfs *v = make_vfs();

	(void)state;
	/* twice: the second round goes through the cache */
	for (int round = 0; round < 2; round++) {
		same_stat(v, "/ro/a/b/c/f.txt", "ro/a/b/c/f.txt", 0);
		same_stat(v, "/ro/a/b/c", "ro/a/b/c", 0);
		same_stat(v, "/ro/a/b/c/", "ro/a/b/c/", 0);
		same_stat(v, "/ro/a/b/c/.", "ro/a/b/c/.", 0);
		same_stat(v, "/ro/a/b/c/..", "ro/a/b/c/..", 0);
		same_stat(v, "/ro", "ro", 0);                   /* a mapping root */
		same_stat(v, "/ro/a/b/lnk", "ro/a/b/lnk", 0);   /* followed */
		same_stat(v, "/ro/a/b/lnk", "ro/a/b/lnk", AT_SYMLINK_NOFOLLOW);
		same_stat(v, "/ro/a/b/ldir", "ro/a/b/ldir", AT_SYMLINK_NOFOLLOW);
		same_stat(v, "/ro/a/b/ldir/", "ro/a/b/ldir/", AT_SYMLINK_NOFOLLOW);
		same_stat(v, "/ro/a/b/ldir/f.txt", "ro/a/b/ldir/f.txt", 0);
		same_stat(v, "/ro/a/b/c/f.txt/", "ro/a/b/c/f.txt/", 0); /* ENOTDIR */
		same_stat(v, "/ro/a/b/c/nope", "ro/a/b/c/nope", 0);    /* ENOENT */
		same_stat(v, "/ro/a/b/c/f.txt/x", "ro/a/b/c/f.txt/x", 0);
		same_stat(v, "/rw/d/e.txt", "rw/d/e.txt", 0);
	}
	/* a directory's own metadata changes are seen at once, cached or not */
	put("ro/a/b/c/new.txt", "N");
	same_stat(v, "/ro/a/b/c", "ro/a/b/c", 0);
	same_stat(v, "/ro", "ro", 0);
	vfs_free(v);
}

static void test_rw_rename_seen(void **state)
{
	struct vfs *v = make_vfs();
	struct stat st;

	(void)state;
	assert_int_equal(vfs_stat(v, &C, "/rw/d/e.txt", 0, &st, NULL), 0);
	assert_int_equal(vfs_rename(v, &C, "/rw/d", &C, "/rw/d2", 0, NULL), 0);
	assert_int_equal(vfs_stat(v, &C, "/rw/d/e.txt", 0, &st, NULL), -ENOENT);
	assert_int_equal(vfs_stat(v, &C, "/rw/d2/e.txt", 0, &st, NULL), 0);
	assert_int_equal(vfs_mkdir(v, &C, "/rw/d", 0755, NULL), 0);
	assert_int_equal(vfs_stat(v, &C, "/rw/d/e.txt", 0, &st, NULL), -ENOENT);
	/* the same through the writable alias of the ro tree: the ro view follows */
	assert_int_equal(vfs_stat(v, &C, "/ro/a/b/c/f.txt", 0, &st, NULL), 0);
	assert_int_equal(vfs_rename(v, &C, "/alias/a/b", &C, "/alias/a/b2", 0, NULL), 0);
	assert_int_equal(vfs_stat(v, &C, "/ro/a/b/c/f.txt", 0, &st, NULL), -ENOENT);
	assert_int_equal(vfs_stat(v, &C, "/ro/a/b2/c/f.txt", 0, &st, NULL), 0);
	assert_int_equal(vfs_rename(v, &C, "/alias/a/b2", &C, "/alias/a/b", 0, NULL), 0);
	same_stat(v, "/ro/a/b/c/f.txt", "ro/a/b/c/f.txt", 0);
	vfs_free(v);
}

static void test_ro_replaced_on_host(void **state)
{
	struct vfs *v = make_vfs();
	struct vfs_verdict vd;
	struct stat st;
	int fd;

	(void)state;
	/* warm the cache with /ro/a, /ro/a/b, /ro/a/b/c and /ro/a/open */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(vfs_stat(v, &C, "/ro/a/b/c/f.txt", 0, &st, NULL), 0);
		assert_int_equal(vfs_stat(v, &C, "/ro/a/open/s.txt", 0, &st, NULL), 0);
	}
	/* replaced: the old name leads to the new directory at once */
	hrename("ro/a/b/c", "ro/a/b/c.old");
	dir("ro/a/b/c");
	put("ro/a/b/c/g.txt", "G");
	assert_int_equal(vfs_stat(v, &C, "/ro/a/b/c/f.txt", 0, &st, NULL), -ENOENT);
	same_stat(v, "/ro/a/b/c/g.txt", "ro/a/b/c/g.txt", 0);
	same_stat(v, "/ro/a/b/c.old/f.txt", "ro/a/b/c.old/f.txt", 0);
	same_stat(v, "/ro/a/b/c", "ro/a/b/c", 0);

	/* a cached directory moved under a hidden name is hidden there, gone from its old
	 * name, and its old name can be a new directory */
	hrename("ro/a/open", "ro/a/hidden");
	assert_int_equal(vfs_stat(v, &C, "/ro/a/open/s.txt", 0, &st, &vd), -ENOENT);
	assert_false(vd.denied);
	assert_int_equal(vfs_stat(v, &C, "/ro/a/hidden/s.txt", 0, &st, &vd), -ENOENT);
	assert_true(vd.denied);
	assert_int_equal(vfs_stat(v, &C, "/ro/a/hidden", 0, &st, &vd), -ENOENT);
	assert_true(vd.denied);
	fd = vfs_open(v, &C, "/ro/a/hidden/s.txt", O_RDONLY, 0, 0, &vd);
	assert_int_equal(fd, -ENOENT);
	assert_true(vd.denied);
	dir("ro/a/open");
	put("ro/a/open/t.txt", "T");
	assert_int_equal(vfs_stat(v, &C, "/ro/a/open/s.txt", 0, &st, NULL), -ENOENT);
	same_stat(v, "/ro/a/open/t.txt", "ro/a/open/t.txt", 0);
	/* and back: the hidden directory returns under the visible name */
	hrename("ro/a/open", "ro/a/open2");
	hrename("ro/a/hidden", "ro/a/open");
	same_stat(v, "/ro/a/open/s.txt", "ro/a/open/s.txt", 0);
	/* replaced by a symlink to a hidden place: followed in the view, still hidden */
	hrename("ro/a/open", "ro/a/hidden");
	{
		char p[PATH_MAX];

		hpath(p, sizeof(p), "ro/a/open");
		assert_int_equal(symlink("hidden", p), 0);
	}
	assert_int_equal(vfs_stat(v, &C, "/ro/a/open/s.txt", 0, &st, &vd), -ENOENT);
	assert_true(vd.denied);
	/* writes stay refused in the ro view whatever the cache holds */
	assert_int_equal(vfs_mkdir(v, &C, "/ro/a/b/c/z", 0755, NULL), -EROFS);
	assert_int_equal(vfs_open(v, &C, "/ro/a/b/c/g.txt", O_WRONLY, 0, 0, NULL), -EROFS);
	vfs_free(v);
}

/* More directories than the cache holds: bounded fds, right answers, nothing leaked. */
static void test_bounded(void **state)
{
	int before = count_fds(), peak = 0;
	struct vfs *v = make_vfs();
	struct stat st;
	char p[64];

	(void)state;
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < 600; i++) {
			snprintf(p, sizeof(p), "/ro/many/%d/x", i);
			assert_int_equal(vfs_stat(v, &C, p, 0, &st, NULL), 0);
			assert_true(S_ISREG(st.st_mode));
			if (i % 50 == 0 && count_fds() > peak)
				peak = count_fds();
		}
	assert_true(peak - before < 300);
	vfs_free(v);
	assert_int_equal(count_fds(), before);
}

struct worker {
	struct vfs *v;
	int id;
	int bad;
};

static void *walker(void *arg)
{
	struct worker *w = arg;
	struct stat st;
	char p[64];

	for (int i = 0; i < 3000; i++) {
		int d = (i * 7 + w->id * 131) % 400;
		int r;

		snprintf(p, sizeof(p), "/ro/many/%d/x", d);
		r = vfs_stat(w->v, &C, p, 0, &st, NULL);
		/* 0..9 are being renamed back and forth by the host meanwhile */
		if (r != 0 && !(d < 10 && r == -ENOENT))
			w->bad++;
		if (r == 0 && !S_ISREG(st.st_mode))
			w->bad++;
		if (i % 3 == 0) {
			int fd = vfs_open(w->v, &C, p, O_RDONLY, 0, 0, NULL);

			if (fd >= 0)
				close(fd);
			else if (!(d < 10 && fd == -ENOENT))
				w->bad++;
		}
	}
	return NULL;
}

static void test_threads(void **state)
{
	int before = count_fds();
	struct vfs *v = make_vfs();
	struct worker ws[4];
	pthread_t th[4];

	(void)state;
	for (int i = 0; i < 4; i++) {
		ws[i] = (struct worker){ .v = v, .id = i };
		assert_int_equal(pthread_create(&th[i], NULL, walker, &ws[i]), 0);
	}
	for (int k = 0; k < 200; k++) {
		char a[64], b[64];

		snprintf(a, sizeof(a), "ro/many/%d", k % 10);
		snprintf(b, sizeof(b), "ro/many/%d.moved", k % 10);
		hrename(a, b);
		hrename(b, a);
	}
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(ws[i].bad, 0);
	}
	vfs_free(v);
	assert_int_equal(count_fds(), before);
}

/* make_vfs(), with a FIFO at /rw/fifo */
static struct vfs *make_vfs_fifo(void)
{
	char h[PATH_MAX];

	hpath(h, sizeof(h), "rw/fifo");
	assert_int_equal(mkfifo(h, 0644), 0);
	return make_vfs();
}

/* A decision d (verdict vd) against the open o made (vo): the same refusal, or
 * VFS_OPEN_KERNEL exactly where the open handed over a regular file or a directory,
 * and for O_PATH also where moat could hand over nothing (EOPNOTSUPP: a symlink, a
 * FIFO), which the kernel's own O_PATH open reaches without acting on it. Closes o. */
static void same_open_answer(int o, const struct vfs_verdict *vo, int d,
                             const struct vfs_verdict *vd, int flags)
{
	struct stat st;

	if (o == -EOPNOTSUPP && (flags & O_PATH)) {
		assert_int_equal(d, VFS_OPEN_KERNEL);
		assert_false(vd->denied);
	} else if (o < 0) {
		assert_int_equal(d, o);
		assert_int_equal(vd->err, vo->err);
		assert_int_equal(vd->denied, vo->denied);
	} else {
		assert_int_equal(fstat(o, &st), 0);
		close(o);
		assert_int_equal(d, S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) || (flags & O_PATH)
		                            ? VFS_OPEN_KERNEL : VFS_OPEN_SUPERVISOR);
	}
	assert_string_equal(vd->vpath, vo->vpath);
}

/* vfs_open_decide() walks with VFS__STATONLY (no fd of the last object): for every path
 * and flag set it must give the answer vfs_open() gives, the same errno and verdict on a
 * refusal, VFS_OPEN_KERNEL exactly where vfs_open() would hand over a regular file or a
 * directory, and VFS_OPEN_SUPERVISOR for anything else; and leave no fd behind. */
static void test_open_decide_equivalence(void **state)
{
	static const char *const paths[] = {
		"/ro/a/b/c/f.txt", "/ro/a/b/c", "/ro/a/b/c/", "/ro/a/b/c/.", "/ro/a/b/c/..",
		"/ro/a/b/lnk", "/ro/a/b/ldir", "/ro/a/b/ldir/", "/ro/a/b/ldir/f.txt",
		"/ro/a/b/c/f.txt/", "/ro/a/b/c/nope", "/ro/a/b/c/f.txt/x", "/ro/a/hidden",
		"/ro/a/hidden/x", "/ro", "/", "/nope", "/rw/d/e.txt", "/rw/d", "/rw/fifo",
		"/alias/a/b/c/f.txt", "/alias/a/hidden",
	};
	static const int flags[] = {
		O_RDONLY, O_RDONLY | O_DIRECTORY, O_RDONLY | O_NOFOLLOW, O_RDONLY | O_CLOEXEC,
		O_PATH, O_PATH | O_NOFOLLOW, O_PATH | O_DIRECTORY | O_NOFOLLOW,
		O_PATH | O_CREAT | O_RDWR, /* the kernel ignores all but O_PATH's own flags */
	};
	int before = count_fds();
	struct vfs *v = make_vfs_fifo();

	(void)state;
	/* twice: the second round goes through the cache */
	for (int round = 0; round < 2; round++)
		for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
			for (size_t j = 0; j < sizeof(flags) / sizeof(flags[0]); j++) {
				struct vfs_verdict vo, vd;
				/* O_NONBLOCK: a FIFO's open must not wait for a writer here */
				int o = vfs_open(v, &C, paths[i], flags[j] | O_NONBLOCK, 0, 0, &vo);
				int d = vfs_open_decide(v, &C, paths[i], flags[j], &vd);

				same_open_answer(o, &vo, d, &vd, flags[j]);
			}
	vfs_free(v);
	assert_int_equal(count_fds(), before);
}

/* vfs_open_decide_write(), vfs_mkdir_decide() and vfs_unlink_decide() (the checks of the
 * calls --audit continues, ctx.h continue_writes) decide as vfs_open(), vfs_mkdir() and
 * vfs_unlink() do, on the same tree, without touching it: each is asked first, then the
 * call is made, and the two answers compared (the same errno and verdict on a refusal,
 * VFS_OPEN_KERNEL or 0 where the call succeeds on a regular file or a directory). */
static void test_write_decide_equivalence(void **state)
{
	static const char *const paths[] = {
		"/ro/a/b/c/f.txt", "/ro/a/b/c/new", "/ro/a/hidden", "/ro/a/hidden/x", "/rw/d/e.txt",
		"/rw/d/new.txt", "/rw/d", "/rw/d/", "/rw/new2", "/rw/fifo", "/nope/x",
		"/rw/d/no/x", "/alias/a/hidden/x", "/alias/a/b/c/w.txt", "/ro/a/b/lnk", "/",
	};
	static const int flags[] = {
		O_WRONLY, O_RDWR, O_WRONLY | O_CREAT, O_WRONLY | O_CREAT | O_EXCL,
		O_RDWR | O_TRUNC, O_RDONLY | O_CREAT, O_WRONLY | O_CREAT | O_NOFOLLOW,
		O_WRONLY | O_APPEND, O_RDONLY | O_DIRECTORY | O_CREAT, O_PATH | O_RDWR | O_CREAT,
	};
	int before = count_fds();
	struct vfs *v = make_vfs_fifo();

	(void)state;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		for (size_t j = 0; j < sizeof(flags) / sizeof(flags[0]); j++) {
			struct vfs_verdict vo, vd;
			int d = vfs_open_decide_write(v, &C, paths[i], flags[j], &vd);
			int o = vfs_open(v, &C, paths[i], flags[j] | O_NONBLOCK, 0644, 0, &vo);

			/* a FIFO without a reader: ENXIO from the open, not a decision */
			if (o == -ENXIO)
				assert_int_equal(d, VFS_OPEN_SUPERVISOR);
			else
				same_open_answer(o, &vo, d, &vd, flags[j]);
		}
	/* mkdir, then unlink and rmdir of what exists now (rmdir of /rw/d: entries) */
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct vfs_verdict vo, vd;
		int d = vfs_mkdir_decide(v, &C, paths[i], &vd);
		int o = vfs_mkdir(v, &C, paths[i], 0755, &vo);

		assert_int_equal(d, o < 0 ? o : 0);
		assert_int_equal(vd.denied, vo.denied);
	}
	for (int f = 0; f <= AT_REMOVEDIR; f += AT_REMOVEDIR)
		for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
			struct vfs_verdict vo, vd;
			int d = vfs_unlink_decide(v, &C, paths[i], f, &vd);
			int o = vfs_unlink(v, &C, paths[i], f, &vo);

			assert_int_equal(d, o < 0 ? o : 0);
			assert_int_equal(vd.denied, vo.denied);
		}
	vfs_free(v);
	assert_int_equal(count_fds(), before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stat_equivalence, setup_tree, teardown_tree),
		cmocka_unit_test_setup_teardown(test_rw_rename_seen, setup_tree, teardown_tree),
		cmocka_unit_test_setup_teardown(test_ro_replaced_on_host, setup_tree,
		                                teardown_tree),
		cmocka_unit_test_setup_teardown(test_bounded, setup_tree, teardown_tree),
		cmocka_unit_test_setup_teardown(test_threads, setup_tree, teardown_tree),
		cmocka_unit_test_setup_teardown(test_open_decide_equivalence, setup_tree,
		                                teardown_tree),
		cmocka_unit_test_setup_teardown(test_write_decide_equivalence, setup_tree,
		                                teardown_tree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
