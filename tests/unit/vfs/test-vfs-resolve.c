/* SPDX-License-Identifier: MIT */
/*
 * Table-driven resolution tests: a temporary tree, a vfs over it in both modes, and one
 * row per path trick. No sandbox: the vfs is a library that acts on host fds.
 *
 * Tree (T = a fresh directory under /tmp):
 *   T/ws/a.txt "A"            T/ws/.env "SECRET"          T/ws/key.pem "PEM"
 *   T/ws/sub/b.txt "B"        T/ws/sub/.env "SUBSECRET"   T/ws/sub/deep/c.txt "C"
 *   T/ws/ro/r.txt "R"         T/ws/deny/d.txt "D"         T/ws/star/x1.log "L"
 *   T/ws/lrel -> sub/b.txt    T/ws/labs -> W/a.txt        T/ws/lenv -> .env
 *   T/ws/lenvabs -> W/sub/.env T/ws/loop1 -> loop2 -> loop1  T/ws/lself -> lself
 *   T/ws/ldir -> sub          T/ws/lup -> ../../..         T/ws/lout -> ../out/o.txt
 *   T/ws/ldot -> .            T/ws/lpem -> key.pem         T/ws/lchain -> lrel
 *   T/ws/ldangle -> nothere   T/ws/lroot -> /              T/ws/lproc -> /proc/self/root
 *   T/out/o.txt "O"           (never mapped in unnamespaced mode)
 *   T/ws/j1/j2/j3/f.txt "J"   T/ws/j1/j2/lsub -> ../../sub  T/ws/j1/hj/j3/f.txt "H"
 *   T/ws/j1/j2/r2/r.txt "R2"  T/ws/j1/j2/dn/in/x "X"
 *   (hj hidden by a glob, r2 a read-only mapping of its own, dn denied by name: each
 *    stops a row of directories that one openat2() may take)
 * W stands for the virtual path of T/ws (T/ws itself unnamespaced, /ws namespaced).
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

static char T[PATH_MAX];

enum op { OPEN_R, STAT, LSTAT, OPEN_W, CREATE, MKDIR, READLINK, CHDIR };

struct row {
	const char *path;   /* "W" expands to the workspace's virtual path, "P" to our pid */
	const char *base;   /* cwd, same expansion; NULL = W */
	enum op op;
	int err;            /* expected errno, 0 = success */
	const char *content; /* OPEN_R: expected first bytes; READLINK: expected text */
};

static void put(const char *rel, const char *content)
{
	char p[PATH_MAX];
	FILE *f;

	assert_true(snprintf(p, sizeof(p), "%s/%s", T, rel) < (int)sizeof(p));
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static void dir(const char *rel)
{
	char p[PATH_MAX];

	assert_true(snprintf(p, sizeof(p), "%s/%s", T, rel) < (int)sizeof(p));
	assert_int_equal(mkdir(p, 0755), 0);
}

static void lnk(const char *rel, const char *target)
{
	char p[PATH_MAX], t[PATH_MAX];

	assert_true(snprintf(p, sizeof(p), "%s/%s", T, rel) < (int)sizeof(p));
	if (strncmp(target, "W/", 2) == 0)
		assert_true(snprintf(t, sizeof(t), "%s/ws/%s", T, target + 2) < (int)sizeof(t));
	else
		snprintf(t, sizeof(t), "%s", target);
	assert_int_equal(symlink(t, p), 0);
}

static int setup_tree(void **state)
{
	char tmpl[] = "/tmp/vfs-test-XXXXXX";

	assert_non_null(mkdtemp(tmpl));
	snprintf(T, sizeof(T), "%s", tmpl);
	dir("ws");
	dir("ws/sub");
	dir("ws/sub/deep");
	dir("ws/ro");
	dir("ws/deny");
	dir("ws/star");
	dir("out");
	dir("ws/j1");
	dir("ws/j1/j2");
	dir("ws/j1/j2/j3");
	dir("ws/j1/j2/r2");
	dir("ws/j1/hj");
	dir("ws/j1/hj/j3");
	dir("ws/j1/j2/dn");
	dir("ws/j1/j2/dn/in");
	put("ws/j1/j2/dn/in/x", "X");
	put("ws/j1/j2/j3/f.txt", "J");
	put("ws/j1/j2/r2/r.txt", "R2");
	put("ws/j1/hj/j3/f.txt", "H");
	lnk("ws/j1/j2/lsub", "../../sub");
	put("ws/a.txt", "A");
	put("ws/.env", "SECRET");
	put("ws/key.pem", "PEM");
	put("ws/sub/b.txt", "B");
	put("ws/sub/.env", "SUBSECRET");
	put("ws/sub/deep/c.txt", "C");
	put("ws/ro/r.txt", "R");
	put("ws/deny/d.txt", "D");
	put("ws/star/x1.log", "L");
	put("out/o.txt", "O");
	lnk("ws/lrel", "sub/b.txt");
	lnk("ws/labs", "W/a.txt");
	lnk("ws/lenv", ".env");
	lnk("ws/lenvabs", "W/sub/.env");
	lnk("ws/loop1", "loop2");
	lnk("ws/loop2", "loop1");
	lnk("ws/lself", "lself");
	lnk("ws/ldir", "sub");
	lnk("ws/lup", "../../..");
	lnk("ws/lout", "../out/o.txt");
	lnk("ws/ldot", ".");
	lnk("ws/lpem", "key.pem");
	lnk("ws/lchain", "lrel");
	lnk("ws/ldangle", "nothere");
	lnk("ws/lroot", "/");
	lnk("ws/lproc", "/proc/self/root");
	(void)state;
	return 0;
}

static int teardown_tree(void **state)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", T);
	(void)state;
	if (chdir("/") < 0)
		return -1;
	return system(cmd) == 0 ? 0 : -1;
}

/* "W" -> the workspace's virtual path, "P" -> our pid, where a whole component */
static void expand(const char *in, const char *ws, char *out, size_t len)
{
	size_t o = 0;

	for (const char *p = in; *p && o + 1 < len; p++) {
		bool comp = (p == in || p[-1] == '/') && (p[1] == '/' || p[1] == '\0');

		if (comp && *p == 'W')
			o += snprintf(out + o, len - o, "%s", ws);
		else if (comp && *p == 'P')
			o += snprintf(out + o, len - o, "%d", getpid());
		else
			out[o++] = *p;
		if (o >= len)
			o = len - 1;
	}
	out[o] = '\0';
}

static const char *op_name[] = { "open", "stat", "lstat", "open-w", "create", "mkdir",
                                 "readlink", "chdir" };

static void run_row(struct vfs *v, const char *ws, const struct row *r, int idx)
{
	char path[PATH_MAX * 2], base[PATH_MAX], buf[256];
	struct vfs_caller c = { .pid = getpid(), .tgid = getpid(), .base = base };
	struct vfs_verdict vd;
	struct stat st;
	int ret = 0, fd;

	expand(r->path, ws, path, sizeof(path));
	expand(r->base ? r->base : "W", ws, base, sizeof(base));
	switch (r->op) {
	case OPEN_R:
		ret = vfs_open(v, &c, path, O_RDONLY, 0, 0, &vd);
		break;
	case OPEN_W:
		ret = vfs_open(v, &c, path, O_WRONLY, 0, 0, &vd);
		break;
	case CREATE:
		ret = vfs_open(v, &c, path, O_WRONLY | O_CREAT, 0644, 0, &vd);
		break;
	case STAT:
		ret = vfs_stat(v, &c, path, 0, &st, &vd);
		break;
	case LSTAT:
		ret = vfs_stat(v, &c, path, AT_SYMLINK_NOFOLLOW, &st, &vd);
		break;
	case MKDIR:
		ret = vfs_mkdir(v, &c, path, 0755, &vd);
		break;
	case READLINK:
		ret = vfs_readlink(v, &c, path, buf, sizeof(buf) - 1, &vd);
		break;
	case CHDIR:
		ret = vfs_check_chdir(v, &c, path, &vd);
		break;
	default:
		fail();
	}
	if ((r->err == 0 && ret < 0) || (r->err && ret != -r->err)) {
		print_error("row %d: %s %s (base %s): got %d (%s), want %s [rule: %s, vpath %s]\n",
		            idx, op_name[r->op], path, base, ret, ret < 0 ? strerror(-ret) : "ok",
		            r->err ? strerror(r->err) : "success", vd.rule, vd.vpath);
		fail();
	}
	if (ret >= 0 && r->op == READLINK && r->content) {
		char want[256];

		buf[ret] = '\0';
		expand(r->content, ws, want, sizeof(want));
		assert_string_equal(buf, want);
	}
	if (ret >= 0 && (r->op == OPEN_R || r->op == OPEN_W || r->op == CREATE)) {
		fd = ret;
		if (r->op == OPEN_R && r->content) {
			ssize_t n = read(fd, buf, sizeof(buf) - 1);

			assert_true(n >= 0);
			buf[n] = '\0';
			if (strcmp(buf, r->content) != 0) {
				print_error("row %d: %s read '%s', want '%s'\n", idx, path, buf,
				            r->content);
				fail();
			}
		}
		close(fd);
	}
}

/* Rows valid in both modes: they only name the workspace through W. */
static const struct row common_rows[] = {
	{ "W/a.txt", NULL, OPEN_R, 0, "A" },
	{ "W//a.txt", NULL, OPEN_R, 0, "A" },
	{ "W/./a.txt", NULL, OPEN_R, 0, "A" },
	{ "W/sub/../a.txt", NULL, OPEN_R, 0, "A" },
	{ "W/sub/deep/../../a.txt", NULL, OPEN_R, 0, "A" },
	{ "W/sub/deep/../../../ws/a.txt", NULL, OPEN_R, 0, "A" },
	{ "W/../ws/a.txt", NULL, OPEN_R, 0, "A" },
	{ "/../../..//W/a.txt", NULL, OPEN_R, 0, "A" },
	{ "W/a.txt/", NULL, OPEN_R, ENOTDIR, NULL },
	{ "W/sub/", NULL, STAT, 0, NULL },
	{ "W/sub//", NULL, STAT, 0, NULL },
	{ "W/sub/b.txt/.", NULL, STAT, ENOTDIR, NULL },
	{ "W/sub/b.txt/..", NULL, STAT, ENOTDIR, NULL },
	{ "a.txt", NULL, OPEN_R, 0, "A" },
	{ "./sub/b.txt", NULL, OPEN_R, 0, "B" },
	{ "sub/../a.txt", NULL, OPEN_R, 0, "A" },
	{ "b.txt", "W/sub", OPEN_R, 0, "B" },
	{ "../a.txt", "W/sub", OPEN_R, 0, "A" },
	{ "../.env", "W/sub", OPEN_R, ENOENT, NULL },
	{ "", NULL, STAT, ENOENT, NULL },
	{ "W/nothere", NULL, OPEN_R, ENOENT, NULL },
	{ "W/nothere/x", NULL, STAT, ENOENT, NULL },
	/* the hidden .env and .pem files, and every alias of them */
	{ "W/.env", NULL, OPEN_R, ENOENT, NULL },
	{ "W/.env", NULL, STAT, ENOENT, NULL },
	{ "W/sub/.env", NULL, OPEN_R, ENOENT, NULL },
	{ ".env", NULL, OPEN_R, ENOENT, NULL },
	{ "sub/../.env", NULL, OPEN_R, ENOENT, NULL },
	{ "W/sub/./../.env", NULL, OPEN_R, ENOENT, NULL },
	{ "W/../ws/.env", NULL, OPEN_R, ENOENT, NULL },
	{ "W/ldir/.env", NULL, OPEN_R, ENOENT, NULL },
	{ "W/lenv", NULL, OPEN_R, ENOENT, NULL },
	{ "W/lenv", NULL, LSTAT, 0, NULL },
	{ "W/lenv", NULL, READLINK, 0, ".env" },
	{ "W/lenvabs", NULL, OPEN_R, ENOENT, NULL },
	{ "W/key.pem", NULL, OPEN_R, ENOENT, NULL },
	{ "W/lpem", NULL, OPEN_R, ENOENT, NULL },
	{ "W/.env", NULL, MKDIR, EACCES, NULL },
	{ "W/.env", NULL, CREATE, EACCES, NULL },
	{ "W/new.pem", NULL, CREATE, EACCES, NULL },
	{ "W/sub/nodir/.env", NULL, STAT, ENOENT, NULL },
	{ "W/star/x1.log", NULL, OPEN_R, ENOENT, NULL },
	{ "W/star", NULL, STAT, 0, NULL },
	{ "W/tilde.txt", NULL, OPEN_R, ENOENT, NULL },
	/* directories in a row (jump_dirs()): each stop gives the one-by-one answer */
	{ "W/j1/j2/j3/f.txt", NULL, OPEN_R, 0, "J" },
	{ "j1//j2/./j3/f.txt", NULL, OPEN_R, 0, "J" },
	{ "f.txt", "W/j1/j2/j3", OPEN_R, 0, "J" },
	{ "W/j1/j2/j3/", NULL, STAT, 0, NULL },
	{ "W/j1/j2/j3/.", NULL, STAT, 0, NULL },
	{ "W/j1/j2/j3/..", NULL, STAT, 0, NULL },
	{ "W/j1/j2/../j2/j3/f.txt", NULL, OPEN_R, 0, "J" },
	{ "W/j1/j2/lsub/b.txt", NULL, OPEN_R, 0, "B" },
	{ "W/j1/j2/lsub/.env", NULL, OPEN_R, ENOENT, NULL },
	{ "W/j1/j2/lsub/deep/c.txt", NULL, OPEN_R, 0, "C" },
	{ "W/j1/j2/j3/f.txt/x", NULL, STAT, ENOTDIR, NULL },
	{ "W/j1/nothere/j3/f.txt", NULL, STAT, ENOENT, NULL },
	{ "W/j1/hj/j3/f.txt", NULL, OPEN_R, ENOENT, NULL },
	{ "W/j1/hj/j3/new", NULL, CREATE, EACCES, NULL },
	{ "W/j1/j2/dn/in/x", NULL, OPEN_R, EACCES, NULL },
	{ "W/j1/j2/dn/in/x", NULL, STAT, EACCES, NULL },
	{ "W/j1/j2/r2/r.txt", NULL, OPEN_R, 0, "R2" },
	{ "W/j1/j2/r2/r.txt", NULL, OPEN_W, EROFS, NULL },
	{ "W/j1/j2/j3/new.txt", NULL, CREATE, 0, NULL },
	{ "W/j1/j2/j3/newdir", NULL, MKDIR, 0, NULL },
	{ "W/j1/j2/j3/newdir/x/y", NULL, STAT, ENOENT, NULL },
	/* symlinks inside the view */
	{ "W/lrel", NULL, OPEN_R, 0, "B" },
	{ "W/lchain", NULL, OPEN_R, 0, "B" },
	{ "W/ldir/b.txt", NULL, OPEN_R, 0, "B" },
	{ "W/ldir/../a.txt", NULL, OPEN_R, 0, "A" },
	{ "W/ldot/ldot/ldot/a.txt", NULL, OPEN_R, 0, "A" },
	{ "W/ldir/", NULL, LSTAT, 0, NULL },
	{ "W/loop1", NULL, OPEN_R, ELOOP, NULL },
	{ "W/lself", NULL, STAT, ELOOP, NULL },
	{ "W/loop1/x", NULL, STAT, ELOOP, NULL },
	{ "W/loop1", NULL, LSTAT, 0, NULL },
	{ "W/loop1", NULL, READLINK, 0, "loop2" },
	{ "W/ldangle", NULL, OPEN_R, ENOENT, NULL },
	{ "W/ldangle", NULL, LSTAT, 0, NULL },
	{ "W/lup", NULL, STAT, 0, NULL },
	{ "W/lup/etc/passwd", NULL, STAT, ENOENT, NULL },
	{ "W/lup/W/a.txt", NULL, OPEN_R, 0, "A" },
	{ "W/lroot/W/a.txt", NULL, OPEN_R, 0, "A" },
	{ "W/lroot/W/.env", NULL, OPEN_R, ENOENT, NULL },
	{ "W/a.txt", NULL, READLINK, EINVAL, NULL },
	/* read-only, deny, unmapped */
	{ "W/ro/r.txt", NULL, OPEN_R, 0, "R" },
	{ "W/ro/r.txt", NULL, OPEN_W, EROFS, NULL },
	{ "W/ro/new", NULL, CREATE, EROFS, NULL },
	{ "W/ro/newdir", NULL, MKDIR, EROFS, NULL },
	{ "W/ro", NULL, MKDIR, EEXIST, NULL },
	{ "W/a.txt", NULL, MKDIR, EEXIST, NULL },
	{ "W/sub/made", NULL, MKDIR, 0, NULL },
	{ "W/sub/made/", NULL, STAT, 0, NULL },
	{ "W/created", NULL, CREATE, 0, NULL },
	{ "W/ldangle", NULL, CREATE, 0, NULL },
	{ "W/nothere", NULL, STAT, 0, NULL },
	{ "W/a.txt", NULL, OPEN_W, 0, NULL },
	{ "W/deny/d.txt", NULL, OPEN_R, EACCES, NULL },
	{ "W/deny", NULL, STAT, 0, NULL },
	{ "W/deny", NULL, OPEN_R, EACCES, NULL },
	{ "W/deny", NULL, CHDIR, EACCES, NULL },
	{ "W/sub", NULL, CHDIR, 0, NULL },
	{ "W/a.txt", NULL, CHDIR, ENOTDIR, NULL },
	{ "W/.env", NULL, CHDIR, ENOENT, NULL },
	{ "/nonexistent", NULL, STAT, ENOENT, NULL },
	{ "/sys", NULL, STAT, ENOENT, NULL },
	{ "/sys/kernel", NULL, STAT, ENOENT, NULL },
	{ "/", NULL, STAT, 0, NULL },
	{ "/..", NULL, STAT, 0, NULL },
	/* /proc: the caller's own entries only; magic links re-enter the view */
	{ "/proc/self", NULL, READLINK, 0, "P" },
	{ "/proc/thread-self", NULL, READLINK, 0, "P/task/P" },
	{ "/proc/self/root", NULL, READLINK, 0, "/" },
	{ "/proc/1/root", NULL, STAT, ENOENT, NULL },
	{ "/proc/1/environ", NULL, OPEN_R, ENOENT, NULL },
	{ "/proc/1", NULL, STAT, ENOENT, NULL },
	{ "/proc/kcore", NULL, STAT, ENOENT, NULL },
};

/* Unnamespaced: W is T/ws, virtual == host. */
static const struct row unns_rows[] = {
	{ "W/labs", NULL, OPEN_R, 0, "A" },
	{ "W/lout", NULL, OPEN_R, ENOENT, NULL },
	{ "W/../out/o.txt", NULL, OPEN_R, ENOENT, NULL },
	{ "W/..", NULL, STAT, 0, NULL },
	{ "W/../newfile", NULL, CREATE, EROFS, NULL },
	{ "/proc/self/cwd/a.txt", NULL, OPEN_R, 0, "A" },
	{ "/proc/self/cwd/.env", NULL, OPEN_R, ENOENT, NULL },
	{ "/etc/passwd", NULL, STAT, ENOENT, NULL },
	/* the caller's root is the view's: its magic links re-enter the view */
	{ "/proc/self/root", NULL, STAT, 0, NULL },
	{ "/proc/self/root/W/a.txt", NULL, OPEN_R, 0, "A" },
	{ "/proc/self/root/W/.env", NULL, OPEN_R, ENOENT, NULL },
	{ "/proc/self/root/../../W/a.txt", NULL, OPEN_R, 0, "A" },
	{ "/proc/P/root/W/a.txt", NULL, OPEN_R, 0, "A" },
	{ "/proc/P/root/W/key.pem", NULL, OPEN_R, ENOENT, NULL },
	{ "/proc/thread-self/root/W/a.txt", NULL, OPEN_R, 0, "A" },
	{ "/proc/self/task/P/root/W/a.txt", NULL, OPEN_R, 0, "A" },
	{ "W/lproc/W/a.txt", NULL, OPEN_R, 0, "A" },
	{ "W/lproc/W/sub/.env", NULL, OPEN_R, ENOENT, NULL },
};

/* Namespaced: W is /ws; T/out is mapped read-only at /out. */
static const struct row ns_rows[] = {
	{ "W/lout", NULL, OPEN_R, 0, "O" },
	{ "/out/o.txt", NULL, OPEN_W, EROFS, NULL },
	{ "W/labs", NULL, OPEN_R, ENOENT, NULL },
	{ "/tmp/scratch", NULL, CREATE, 0, NULL },
	{ "/tmp/scratch", NULL, OPEN_R, 0, "" },
	{ "/newroot", NULL, CREATE, EROFS, NULL },
	{ "/ws", NULL, MKDIR, EEXIST, NULL },
	/* This test's process is no sandbox: its root and its cwd (test_namespaced() makes
	 * it /) are the host's /, which is not the view's / (a skeleton), so a magic link to
	 * either names an object outside the view. */
	{ "/proc/self/cwd/a.txt", NULL, OPEN_R, EACCES, NULL },
	{ "/proc/self/root", NULL, STAT, EACCES, NULL },
	{ "/proc/self/root/W/a.txt", NULL, OPEN_R, EACCES, NULL },
	{ "/proc/P/root/W/a.txt", NULL, OPEN_R, EACCES, NULL },
	{ "W/lproc/W/a.txt", NULL, OPEN_R, EACCES, NULL },
};

static void add(struct vfs *v, const char *word, const char *arg)
{
	struct moat_error err = { 0 };
	int r = vfs_add_directive(v, word, arg, "test", &err);

	if (r < 0)
		print_error("%s %s: %s\n", word, arg, err.msg);
	assert_int_equal(r, 0);
}

static void run_rows(struct vfs *v, const char *ws, const struct row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		run_row(v, ws, &rows[i], (int)i);
}

/* Paths near the limits: the kernel's PATH_MAX and NAME_MAX and its 40 links. */
static void run_long(struct vfs *v, const char *ws)
{
	static char path[PATH_MAX * 2];
	struct vfs_caller c = { .pid = getpid(), .tgid = getpid(), .base = ws };
	struct stat st;
	size_t n;
	int fd;

	n = snprintf(path, sizeof(path), "%s/", ws);
	memset(path + n, 'x', NAME_MAX + 1);
	path[n + NAME_MAX + 1] = '\0';
	assert_int_equal(vfs_stat(v, &c, path, 0, &st, NULL), -ENAMETOOLONG);
	path[n + NAME_MAX] = '\0';
	assert_int_equal(vfs_stat(v, &c, path, 0, &st, NULL), -ENOENT);

	n = snprintf(path, sizeof(path), "%s", ws);
	while (n < PATH_MAX + 8)
		n += snprintf(path + n, sizeof(path) - n, "/.");
	assert_int_equal(vfs_stat(v, &c, path, 0, &st, NULL), -ENAMETOOLONG);

	/* just under PATH_MAX is fine */
	n = snprintf(path, sizeof(path), "%s", ws);
	while (n < PATH_MAX - 40)
		n += snprintf(path + n, sizeof(path) - n, "/sub/..");
	snprintf(path + n, sizeof(path) - n, "/a.txt");
	fd = vfs_open(v, &c, path, O_RDONLY, 0, 0, NULL);
	assert_true(fd >= 0);
	close(fd);

	/* every link counts, even one to ".": 40 are fine, the 41st is ELOOP */
	n = snprintf(path, sizeof(path), "%s", ws);
	for (int i = 0; i < 40; i++)
		n += snprintf(path + n, sizeof(path) - n, "/ldot");
	snprintf(path + n, sizeof(path) - n, "/a.txt");
	assert_int_equal(vfs_stat(v, &c, path, 0, &st, NULL), 0);
	snprintf(path + n, sizeof(path) - n, "/ldot/a.txt");
	assert_int_equal(vfs_stat(v, &c, path, 0, &st, NULL), -ELOOP);

	/* 40 links are followed, the 41st is ELOOP: chain c0 -> c1 -> ... -> c40 -> a.txt */
	assert_int_equal(vfs_stat(v, &c, "c1", 0, &st, NULL), 0);
	assert_int_equal(vfs_stat(v, &c, "c0", 0, &st, NULL), -ELOOP);
}

static void make_chain(void)
{
	char name[32], target[32];

	for (int i = 0; i <= 40; i++) {
		snprintf(name, sizeof(name), "ws/c%d", i);
		if (i == 40)
			snprintf(target, sizeof(target), "a.txt");
		else
			snprintf(target, sizeof(target), "c%d", i + 1);
		lnk(name, target);
	}
	put("ws/tilde.txt", "T");
}

static void test_unnamespaced(void **state)
{
	struct vfs *v;
	struct moat_error err = { 0 };
	char ws[PATH_MAX], a[PATH_MAX * 2];

	(void)state;
	make_chain();
	assert_true(snprintf(ws, sizeof(ws), "%s/ws", T) < (int)sizeof(ws));
	assert_int_equal(chdir(ws), 0);
	assert_int_equal(vfs_new(NULL, &v), 0);
	assert_int_equal(vfs_set_home(v, ws), 0);
	add(v, "bind", ws);
	snprintf(a, sizeof(a), "%s/ro", ws);
	add(v, "ro-bind", a);
	add(v, "ro-bind", "/proc");
	add(v, "hide", "**/.env");
	add(v, "hide", "**/*.pem");
	add(v, "hide", "**/hj");
	snprintf(a, sizeof(a), "%s/j1/j2/r2", ws);
	add(v, "ro-bind", a);
	snprintf(a, sizeof(a), "%s/j1/j2/dn", ws);
	add(v, "deny", a);
	add(v, "hide", "/proc/kcore");
	add(v, "hide", "~/tilde.txt");
	snprintf(a, sizeof(a), "%s/star/*.log", ws);
	add(v, "hide", a);
	snprintf(a, sizeof(a), "%s/deny", ws);
	add(v, "deny", a);
	assert_int_equal(vfs_finalize(v, VFS_MODE_UNNAMESPACED, &err), 0);
	run_rows(v, ws, common_rows, sizeof(common_rows) / sizeof(common_rows[0]));
	run_rows(v, ws, unns_rows, sizeof(unns_rows) / sizeof(unns_rows[0]));
	run_long(v, ws);
	vfs_free(v);
}

static void test_namespaced(void **state)
{
	struct vfs *v;
	struct moat_error err = { 0 };
	char a[PATH_MAX * 2];

	(void)state;
	make_chain();
	assert_int_equal(chdir("/"), 0);
	assert_int_equal(vfs_new(NULL, &v), 0);
	assert_int_equal(vfs_set_home(v, "/ws"), 0);
	snprintf(a, sizeof(a), "%s/ws:/ws", T);
	add(v, "bind", a);
	snprintf(a, sizeof(a), "%s/ws/ro:/ws/ro", T);
	add(v, "ro-bind", a);
	snprintf(a, sizeof(a), "%s/out:/out", T);
	add(v, "ro-bind", a);
	add(v, "ro-bind", "/proc");
	add(v, "tmpfs", "/tmp");
	add(v, "hide", "**/.env");
	add(v, "hide", "*.pem");
	add(v, "hide", "**/hj");
	snprintf(a, sizeof(a), "%s/ws/j1/j2/r2:/ws/j1/j2/r2", T);
	add(v, "ro-bind", a);
	add(v, "deny", "/ws/j1/j2/dn");
	add(v, "hide", "/proc/kcore");
	add(v, "hide", "~/tilde.txt");
	add(v, "hide", "/ws/star/*.log");
	add(v, "deny", "/ws/deny");
	assert_int_equal(vfs_finalize(v, VFS_MODE_NAMESPACED, &err), 0);
	run_rows(v, "/ws", common_rows, sizeof(common_rows) / sizeof(common_rows[0]));
	run_rows(v, "/ws", ns_rows, sizeof(ns_rows) / sizeof(ns_rows[0]));
	run_long(v, "/ws");
	vfs_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_unnamespaced, setup_tree, teardown_tree),
		cmocka_unit_test_setup_teardown(test_namespaced, setup_tree, teardown_tree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
