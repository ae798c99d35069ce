/* SPDX-License-Identifier: MIT */
/*
 * The table around the walker: directive parsing and its messages, glob matching, the
 * default profile, vfs_decide(), the entry operations, getdents filtering, the change
 * set with its sha256 (checked against a hash the test computes itself), the JSON.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <sodium.h>

#include "error.h"
#include "macros.h"
#include "vfs-internal.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#define RENAME_EXCHANGE (1 << 1)
#endif

static char T[PATH_MAX];

static void put(const char *rel, const char *content)
{
	char p[PATH_MAX + 64];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", T, rel);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static void mk(const char *rel)
{
	char p[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s/%s", T, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static int setup(void **state)
{
	char tmpl[] = "/tmp/vfs-table-XXXXXX";

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	snprintf(T, sizeof(T), "%s", tmpl);
	mk("ws");
	mk("ws/sub");
	mk("ws/deny");
	mk("other");
	mk("home");
	mk("home/me");
	mk("home/me/.ssh");
	put("ws/a.txt", "A");
	put("ws/.env", "SECRET");
	put("ws/sub/b.txt", "B");
	put("ws/deny/d.txt", "D");
	put("other/o.txt", "O");
	put("home/me/.ssh/id_rsa", "KEY");
	put("home/me/notes", "N");
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	if (chdir("/") < 0)
		return -1;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", T);
	return system(cmd) == 0 ? 0 : -1;
}

static char *tp(const char *rel)
{
	static char bufs[8][PATH_MAX + 64];
	static int i;
	char *b = bufs[i++ % 8];

	snprintf(b, sizeof(bufs[0]), "%s%s%s", T, rel[0] ? "/" : "", rel);
	return b;
}

static void add(struct vfs *v, const char *word, const char *arg)
{
	struct moat_error err = { 0 };
	int r = vfs_add_directive(v, word, arg, "test", &err);

	if (r < 0)
		print_error("%s %s: %s\n", word, arg, err.msg);
	assert_int_equal(r, 0);
}

/* --- directive errors ------------------------------------------------------------------- */

static void test_directive_errors(void **state)
{
	static const struct {
		const char *word, *arg;
		int ret;
		const char *msg; /* substring of the message */
	} rows[] = {
		{ "mount", "/x", -ENOENT, "" },
		{ "allow", "example.com:443", -ENOENT, "" },
		{ "bind", "", -EINVAL, "bind: missing SRC" },
		{ "ro-bind", "   ", -EINVAL, "ro-bind: missing SRC" },
		{ "bind", "/nonexistent-moat-dir", -EINVAL, "No such file or directory" },
		{ "bind", "/nonexistent-moat-parent/x:/y", -EINVAL, "No such file or directory" },
		{ "ro-bind", "/proc/1", -EINVAL, "only /proc as a whole" },
		{ "tmpfs", "", -EINVAL, "tmpfs: missing DST" },
		{ "tmpfs", "/scratch 12Q", -EINVAL, "bad SIZE" },
		{ "file", "", -EINVAL, "file: missing DST" },
		{ "file", "/etc/hosts", -EINVAL, "missing CONTENT" },
		{ "file", "/etc/hosts @/nonexistent-moat-file", -EINVAL, "/nonexistent-moat-file" },
		{ "file", "/etc/hosts @/proc", -EINVAL, "not a regular file" },
		{ "hide", "", -EINVAL, "hide: missing GLOB" },
		{ "deny", "\t", -EINVAL, "deny: missing GLOB" },
		{ "chdir", "", -EINVAL, "chdir: missing DIR" },
	};
	struct vfs *v;

	(void)state;
	assert_int_equal(vfs_new(NULL, &v), 0);
	for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
		struct moat_error err = { 0 };
		int r = vfs_add_directive(v, rows[i].word, rows[i].arg, "p.moat:3", &err);

		if (r != rows[i].ret || !strstr(err.msg, rows[i].msg)) {
			print_error("%s '%s': got %d '%s', want %d '%s'\n", rows[i].word,
			            rows[i].arg, r, err.msg, rows[i].ret, rows[i].msg);
			fail();
		}
	}
	/* good ones, including an escaped colon and a remap */
	add(v, "tmpfs", "/scratch 64m");
	add(v, "file", "/etc/motd hello\\nworld");
	add(v, "chdir", "/scratch");
	vfs_free(v);
}

static void test_colon_escape(void **state)
{
	struct vfs *v;
	struct moat_error err = { 0 };
	char arg[PATH_MAX * 2];
	const struct vfs__rule *r;

	(void)state;
	mk("ws/a:b");
	assert_int_equal(vfs_new(NULL, &v), 0);
	snprintf(arg, sizeof(arg), "%s/ws/a\\:b:/x\\:y", T);
	add(v, "bind", arg);
	r = &v->rules[0];
	assert_string_equal(r->host, tp("ws/a:b"));
	assert_string_equal(r->virt, "/x:y");
	assert_int_equal(vfs_finalize(v, VFS_MODE_NAMESPACED, &err), 0);
	vfs_free(v);
}

/* unnamespaced mode: virtual paths are host paths, so no remap and no tmpfs but /tmp */
static void test_unnamespaced_refusals(void **state)
{
	struct vfs *v;
	struct moat_error err = { 0 };
	char arg[PATH_MAX * 2];

	(void)state;
	assert_int_equal(vfs_new(NULL, &v), 0);
	snprintf(arg, sizeof(arg), "%s:/workspace", tp("ws"));
	add(v, "bind", arg);
	assert_int_equal(vfs_finalize(v, VFS_MODE_UNNAMESPACED, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "namespaced mode"));
	assert_non_null(strstr(err.msg, "/workspace"));
	vfs_free(v);

	assert_int_equal(vfs_new(NULL, &v), 0);
	add(v, "tmpfs", "/var/tmp");
	assert_int_equal(vfs_finalize(v, VFS_MODE_UNNAMESPACED, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "namespaced mode"));
	vfs_free(v);
}

/* --- globs -------------------------------------------------------------------------------- */

/* Many "**" against a deep path from the sandbox: components x components work, not
 * exponential (this took longer than the test's timeout before). */
static void test_glob_deep(void **state)
{
	static char path[PATH_MAX];
	size_t o = 0;

	(void)state;
	while (o + 3 < sizeof(path) - 2) {
		path[o++] = '/';
		path[o++] = 'a';
	}
	memcpy(path + o, "/b", 3);
	assert_false(vfs__glob_match("/**/**/**/**/**/**/**/**/c", path));
	assert_true(vfs__glob_match("/**/**/**/**/**/**/**/**/b", path));
	assert_true(vfs__glob_match("/**/a/**/a/**/a/**/b", path));
}

/* The one list of secrets, matched as hide rules are. */
static void test_default_secrets(void **state)
{
	(void)state;
	assert_string_equal(vfs_default_secret_of("/home/u", "/home/u/.ssh/id_x"), "~/.ssh");
	assert_string_equal(vfs_default_secret_of("/home/u", "/home/u/.ssh"), "~/.ssh");
	assert_string_equal(vfs_default_secret_of("/home/u", "/w/sub/.env"), "**/.env");
	assert_string_equal(vfs_default_secret_of("/home/u", "/etc/shadow-"), "/etc/shadow*");
	assert_string_equal(vfs_default_secret_of("/home/u", "/root/x"), "/root");
	assert_null(vfs_default_secret_of("/home/u", "/home/u/.sshx"));
	assert_null(vfs_default_secret_of("/home/u", "/usr/bin/ls"));
	assert_null(vfs_default_secret_of("/home/u", "/w/cacert.pem"));
}

static void test_glob(void **state)
{
	static const struct {
		const char *pat, *path;
		bool match;
	} rows[] = {
		{ "/**/.env", "/.env", true },
		{ "/**/.env", "/a/.env", true },
		{ "/**/.env", "/a/b/c/.env", true },
		{ "/**/.env", "/a/b/.envrc", false },
		{ "/**/.env", "/a/.env/x", false },
		{ "/**/*.pem", "/w/key.pem", true },
		{ "/**/*.pem", "/w/key.pem.bak", false },
		{ "/**/*.pem", "/w/.pem", true },
		{ "/**/id_rsa*", "/home/u/.ssh/id_rsa.pub", true },
		{ "/etc/shadow*", "/etc/shadow", true },
		{ "/etc/shadow*", "/etc/shadow-", true },
		{ "/etc/shadow*", "/etc/shadow/x", false },
		{ "/home/*", "/home/u", true },
		{ "/home/*", "/home/u/x", false },
		{ "/home/*", "/home", false },
		{ "/a/*/c", "/a/b/c", true },
		{ "/a/*/c", "/a/b/x/c", false },
		{ "/a/**/c", "/a/c", true },
		{ "/a/**/c", "/a/b/x/c", true },
		{ "/a/**", "/a", true },
		{ "/a/**", "/a/b/c", true },
		{ "/a/**", "/ab", false },
		{ "/a?c", "/abc", true },
		{ "/a?c", "/a/c", false },
		{ "/*", "/", false },
		{ "/**", "/", true },
		{ "/x/a\\*b", "/x/a*b", true },
		{ "/x/a\\*b", "/x/aXb", false },
		{ "/x/*.*", "/x/a.b", true },
		{ "/x/**/y/**/z", "/x/1/y/2/3/z", true },
		{ "/x/**/y/**/z", "/x/1/2/z", false },
		{ "/**/id_rsa*", "/k/id_rsa", true },
		{ "/**/id_rsa*", "/k/my_id_rsa", false },
		{ "/x/a*a", "/x/a", false },
		{ "/x/a*a", "/x/aa", true },
		{ "/x/ab?", "/x/abc", true },
		{ "/x/ab?", "/x/ab", false },
		{ "/**/**/x", "/a/x", true },
		{ "/**/a/**/b", "/a/a/c/b", true },
		{ "/**/a/**/b", "/b/a", false },
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(rows); i++)
		if (vfs__glob_match(rows[i].pat, rows[i].path) != rows[i].match) {
			print_error("glob %s vs %s: want %d\n", rows[i].pat, rows[i].path,
			            rows[i].match);
			fail();
		}

	/* The walker's quick reject (glob_tail() in table.c) never changes an answer:
	 * every pattern above against every path above, as a hide rule seen through
	 * vfs_decide(), hides exactly when the full matcher matches the path or one of
	 * its parents. */
	for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
		struct vfs *v;
		struct moat_error err = { 0 };
		char arg[PATH_MAX + 8];

		assert_int_equal(vfs_new(NULL, &v), 0);
		snprintf(arg, sizeof(arg), "%s:/", tp("other"));
		add(v, "ro-bind", arg);
		add(v, "hide", rows[i].pat);
		assert_int_equal(vfs_finalize(v, VFS_MODE_NAMESPACED, &err), 0);
		for (size_t j = 0; j < ELEMENTSOF(rows); j++) {
			const char *path = rows[j].path;
			struct vfs_verdict vd;
			char prefix[PATH_MAX];
			bool want = vfs__glob_match(rows[i].pat, "/"), got;

			for (size_t k = 1; path[k - 1]; k++)
				if (path[k] == '/' || !path[k]) {
					snprintf(prefix, sizeof(prefix), "%.*s", (int)k, path);
					want |= vfs__glob_match(rows[i].pat, prefix);
				}
			got = vfs_decide(v, path, VFS_WANT_READ, &vd) == -ENOENT &&
			      strstr(vd.rule, "hide");
			if (got != want) {
				print_error("hide %s, decide %s: hidden %d, want %d\n",
				            rows[i].pat, path, got, want);
				fail();
			}
		}
		vfs_free(v);
	}
}

/* --- the default profile -------------------------------------------------------------------- */

static void test_default_profile(void **state)
{
	struct vfs *v;
	struct vfs_caller c = { .pid = getpid(), .tgid = getpid() };
	struct vfs_verdict vd;
	struct stat st;
	struct moat_error err = { 0 };
	char p[PATH_MAX * 2];
	int fd;

	(void)state;
	assert_int_equal(vfs_new(NULL, &v), 0);
	assert_int_equal(vfs_add_default_profile(v, tp("home/me"), tp("home/me")), 0);
	assert_int_equal(vfs_finalize(v, VFS_MODE_UNNAMESPACED, &err), 0);
	c.base = vfs_initial_cwd(v);
	assert_string_equal(c.base, tp("home/me"));

	assert_int_equal(vfs_stat(v, &c, "/etc/shadow", 0, &st, &vd), -ENOENT);
	assert_non_null(strstr(vd.rule, "hide /etc/shadow*"));
	assert_int_equal(vfs_stat(v, &c, "/etc/gshadow", 0, &st, NULL), -ENOENT);
	assert_int_equal(vfs_stat(v, &c, "/etc/../etc/./shadow", 0, &st, NULL), -ENOENT);
	assert_int_equal(vfs_stat(v, &c, "/etc/passwd", 0, &st, NULL), 0);
	assert_int_equal(vfs_open(v, &c, "/etc/passwd", O_WRONLY, 0, 0, &vd), -EROFS);
	assert_int_equal(vd.err, EROFS);
	assert_int_equal(vfs_stat(v, &c, "/usr/bin/env", 0, &st, NULL), 0);
	/* /bin -> usr/bin stays a symlink in the view on merged-/usr hosts */
	assert_int_equal(vfs_check_exec(v, &c, "/bin/sh", NULL), 0);
	assert_int_equal(vfs_stat(v, &c, "/root", 0, &st, NULL), -ENOENT);
	assert_int_equal(vfs_stat(v, &c, "/sys/kernel", 0, &st, NULL), -ENOENT);
	assert_int_equal(vfs_stat(v, &c, "/var/log", 0, &st, NULL), -ENOENT);
	/* the workspace is the home here: readable, writable, secrets still hidden */
	assert_int_equal(vfs_stat(v, &c, "notes", 0, &st, NULL), 0);
	assert_int_equal(vfs_stat(v, &c, ".ssh", 0, &st, NULL), -ENOENT);
	assert_int_equal(vfs_stat(v, &c, ".ssh/id_rsa", 0, &st, NULL), -ENOENT);
	fd = vfs_open(v, &c, "new.txt", O_WRONLY | O_CREAT, 0644, 0, NULL);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(vfs_open(v, &c, ".env", O_WRONLY | O_CREAT, 0644, 0, NULL), -EACCES);
	/* other directories of the host are not there */
	assert_int_equal(vfs_stat(v, &c, tp("other/o.txt"), 0, &st, NULL), -ENOENT);
	assert_int_equal(vfs_stat(v, &c, tp("ws"), 0, &st, NULL), -ENOENT);
	/* unnamespaced /tmp: the host's, showing only what the run made in it */
	assert_string_equal(vfs_tmpdir(v), "/tmp");
	snprintf(p, sizeof(p), "/tmp/moat-unit-scratch-%d", (int)getpid());
	unlink(p);
	fd = vfs_open(v, &c, p, O_RDWR | O_CREAT, 0600, 0, NULL);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(vfs_stat(v, &c, p, 0, &st, NULL), 0);
	assert_int_equal(vfs_stat(v, &c, "/tmp", 0, &st, NULL), 0);
	{
		char host[] = "/tmp/moat-unit-host-XXXXXX";
		int hfd = mkstemp(host);

		assert_true(hfd >= 0);
		close(hfd);
		assert_int_equal(vfs_stat(v, &c, host, 0, &st, &vd), -ENOENT);
		assert_true(vd.denied);
		assert_int_equal(vfs_open(v, &c, host, O_WRONLY | O_CREAT, 0644, 0, NULL),
		                 -EACCES);
		assert_int_equal(vfs_unlink(v, &c, host, 0, NULL), -ENOENT);
		assert_int_equal(access(host, F_OK), 0);
		unlink(host);
	}
	/* a name that does not exist on the host either is no denial */
	assert_int_equal(vfs_stat(v, &c, "/var/moat-unit-nothing/x", 0, &st, &vd), -ENOENT);
	assert_false(vd.denied);
	assert_int_equal(vfs_stat(v, &c, "/etc/moat-unit-nothing", 0, &st, &vd), -ENOENT);
	assert_false(vd.denied);
	/* minimal /dev */
	fd = vfs_open(v, &c, "/dev/null", O_WRONLY, 0, 0, NULL);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(vfs_stat(v, &c, "/dev/sda", 0, &st, NULL), -ENOENT);
	assert_int_equal(vfs_stat(v, &c, "/dev/mem", 0, &st, NULL), -ENOENT);
	/* /proc for our own pids */
	assert_int_equal(vfs_stat(v, &c, "/proc/self/status", 0, &st, NULL), 0);
	assert_int_equal(vfs_stat(v, &c, "/proc/1/environ", 0, &st, NULL), getpid() == 1 ? 0 : -ENOENT);
	vfs_free(v);
	/* what the run made in the host's /tmp goes with it */
	assert_int_equal(access(p, F_OK), -1);
}

/* Namespaced: the same profile on a skeleton root; /bin is a symlink there too. */
/* A bind of "/" covers /proc and /dev, yet /proc is procfs as the vfs serves it (only
 * the caller's pid) and device nodes are only the harmless ones, mapped by name. */
static void test_broad_bind(void **state)
{
	struct vfs *v;
	struct vfs_caller c = { .pid = getpid(), .tgid = getpid(), .base = "/" };
	struct vfs_verdict vd;
	struct stat st;
	struct moat_error err = { 0 };
	char self[32];
	int fd;

	(void)state;
	assert_int_equal(vfs_new(NULL, &v), 0);
	assert_int_equal(vfs_add_directive(v, "ro-bind", "/", "test", &err), 0);
	assert_int_equal(vfs_add_directive(v, "hide", "/proc/keys", "test", &err), 0);
	assert_int_equal(vfs_finalize(v, VFS_MODE_UNNAMESPACED, &err), 0);

	snprintf(self, sizeof(self), "/proc/%d/status", (int)getpid());
	assert_int_equal(vfs_stat(v, &c, self, 0, &st, NULL), 0);
	assert_int_equal(vfs_stat(v, &c, "/proc/self/status", 0, &st, NULL), 0);
	if (getpid() != 1)
		assert_int_equal(vfs_stat(v, &c, "/proc/1/status", 0, &st, &vd), -ENOENT);
	assert_int_equal(vfs_stat(v, &c, "/proc/keys", 0, &st, NULL), -ENOENT);

	fd = vfs_open(v, &c, "/dev/null", O_WRONLY, 0, 0, NULL);
	assert_true(fd >= 0);
	close(fd);
	if (lstat("/dev/ptmx", &st) == 0 && S_ISCHR(st.st_mode)) {
		assert_int_equal(vfs_open(v, &c, "/dev/ptmx", O_RDWR, 0, 0, &vd), -ENOENT);
		assert_non_null(strstr(vd.rule, "device node"));
		assert_int_equal(vfs_stat(v, &c, "/dev/ptmx", 0, &st, NULL), -ENOENT);
	}
	vfs_free(v);
}

static void test_default_profile_namespaced(void **state)
{
	struct vfs *v;
	struct vfs_caller c = { .pid = getpid(), .tgid = getpid(), .base = "/" };
	struct stat st;
	struct moat_error err = { 0 };

	(void)state;
	assert_int_equal(vfs_new(NULL, &v), 0);
	assert_int_equal(vfs_add_default_profile(v, tp("home/me"), tp("ws")), 0);
	assert_int_equal(vfs_finalize(v, VFS_MODE_NAMESPACED, &err), 0);
	assert_non_null(vfs_skeleton(v));
	assert_string_equal(vfs_tmpdir(v), "/tmp");
	assert_int_equal(vfs_check_exec(v, &c, "/bin/sh", NULL), 0);
	assert_int_equal(vfs_stat(v, &c, "/etc/shadow", 0, &st, NULL), -ENOENT);
	assert_int_equal(vfs_stat(v, &c, tp("ws/a.txt"), 0, &st, NULL), 0);
	assert_int_equal(vfs_stat(v, &c, tp("ws/.env"), 0, &st, NULL), -ENOENT);
	assert_int_equal(vfs_stat(v, &c, tp("home/me/notes"), 0, &st, NULL), -ENOENT);
	assert_int_equal(vfs_mkdir(v, &c, "/tmp/d", 0700, NULL), 0);
	assert_int_equal(vfs_mkdir(v, &c, "/opt", 0700, NULL), -EROFS);
	vfs_free(v);
}

/* --- vfs_decide ----------------------------------------------------------------------------- */

static void test_decide(void **state)
{
	static const struct {
		const char *path;
		unsigned want;
		int ret;
	} rows[] = {
		{ "/ws/a.txt", VFS_WANT_READ, 0 },
		{ "/ws/a.txt", VFS_WANT_WRITE, 0 },
		{ "/ws/.env", 0, -ENOENT },
		{ "/ws/sub/.env", VFS_WANT_READ, -ENOENT },
		{ "/ws/.env/x", 0, -ENOENT },
		{ "/ws/deny", 0, 0 },
		{ "/ws/deny", VFS_WANT_READ, -EACCES },
		{ "/ws/deny/x", 0, -EACCES },
		{ "/ro/x", VFS_WANT_READ, 0 },
		{ "/ro/x", VFS_WANT_WRITE, -EROFS },
		{ "/ro/x", VFS_WANT_CREATE, -EROFS },
		{ "/", 0, 0 },
		{ "/", VFS_WANT_CREATE, -EROFS },
		{ "/etc", 0, -ENOENT },
		{ "/hidden", 0, -ENOENT },
		{ "/hidden/shown", VFS_WANT_WRITE, 0 },
		{ "/hidden/shown/.env", 0, -ENOENT },
		{ "/hidden/other", 0, -ENOENT },
	};
	struct vfs *v;
	struct vfs_verdict vd;
	struct moat_error err = { 0 };
	char arg[PATH_MAX * 2];

	(void)state;
	assert_int_equal(vfs_new(NULL, &v), 0);
	snprintf(arg, sizeof(arg), "%s:/ws", tp("ws"));
	add(v, "bind", arg);
	snprintf(arg, sizeof(arg), "%s:/ro", tp("other"));
	add(v, "ro-bind", arg);
	add(v, "hide", "/hidden");
	snprintf(arg, sizeof(arg), "%s:/hidden/shown", tp("ws/sub"));
	add(v, "bind", arg);
	add(v, "hide", "**/.env");
	add(v, "deny", "/ws/deny");
	assert_int_equal(vfs_finalize(v, VFS_MODE_NAMESPACED, &err), 0);
	for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
		int r = vfs_decide(v, rows[i].path, rows[i].want, &vd);

		if (r != rows[i].ret) {
			print_error("decide %s want %u: got %d want %d (%s)\n", rows[i].path,
			            rows[i].want, r, rows[i].ret, vd.rule);
			fail();
		}
	}
	assert_int_equal(vfs_decide(v, "/ws/.env", 0, &vd), -ENOENT);
	assert_string_equal(vd.rule, "hide **/.env (test)");
	assert_int_equal(vd.err, ENOENT);
	vfs_free(v);
}

/* --- entry operations ------------------------------------------------------------------------ */

static struct vfs *ws_vfs(void)
{
	struct vfs *v;
	struct moat_error err = { 0 };
	char arg[PATH_MAX * 2];

	assert_int_equal(vfs_new(NULL, &v), 0);
	snprintf(arg, sizeof(arg), "%s:/ws", tp("ws"));
	add(v, "bind", arg);
	snprintf(arg, sizeof(arg), "%s:/ro", tp("other"));
	add(v, "ro-bind", arg);
	add(v, "tmpfs", "/tmp");
	add(v, "hide", "**/.env");
	add(v, "deny", "/ws/deny");
	add(v, "file", "/etc/hosts 127.0.0.1 localhost\\n");
	assert_int_equal(vfs_finalize(v, VFS_MODE_NAMESPACED, &err), 0);
	return v;
}

static void test_entry_ops(void **state)
{
	struct vfs *v = ws_vfs();
	struct vfs_caller c = { .pid = getpid(), .tgid = getpid(), .base = "/ws" };
	struct stat st;
	char buf[64];
	int fd;

	(void)state;
	/* rename: plain, NOREPLACE, EXCHANGE, into a hidden name, across mappings */
	put("ws/r1", "one");
	put("ws/r2", "two");
	assert_int_equal(vfs_rename(v, &c, "r1", &c, "r3", 0, NULL), 0);
	assert_int_equal(vfs_stat(v, &c, "r1", 0, &st, NULL), -ENOENT);
	assert_int_equal(vfs_rename(v, &c, "r3", &c, "r2", RENAME_NOREPLACE, NULL), -EEXIST);
	assert_int_equal(vfs_rename(v, &c, "r3", &c, "r2", RENAME_EXCHANGE, NULL), 0);
	fd = vfs_open(v, &c, "r2", O_RDONLY, 0, 0, NULL);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 3);
	assert_memory_equal(buf, "one", 3);
	close(fd);
	assert_int_equal(vfs_rename(v, &c, "r3", &c, "x/.env", 0, NULL), -ENOENT);
	assert_int_equal(vfs_rename(v, &c, "r3", &c, ".env", 0, NULL), -EACCES);
	assert_int_equal(vfs_rename(v, &c, ".env", &c, "visible", 0, NULL), -ENOENT);
	assert_int_equal(vfs_rename(v, &c, "r3", &c, "/tmp/r3", 0, NULL), -EXDEV);
	/* the kernel's order: the parents' mounts, then the mount's writability, then the
	 * objects (a mount point is busy) */
	assert_int_equal(vfs_rename(v, &c, "r3", &c, "/ro/r3", 0, NULL), -EXDEV);
	assert_int_equal(vfs_rename(v, &c, "/ro/o.txt", &c, "/ro/o2", 0, NULL), -EROFS);
	assert_int_equal(vfs_rename(v, &c, "/ws", &c, "/ws2", 0, NULL), -EROFS);
	assert_int_equal(vfs_rename(v, &c, "/", &c, "/x", 0, NULL), -EBUSY);
	/* link: not to a denied file, not across mappings */
	assert_int_equal(vfs_link(v, &c, "deny/d.txt", &c, "d2", 0, NULL), -EACCES);
	assert_int_equal(vfs_link(v, &c, "a.txt", &c, "a2", 0, NULL), 0);
	assert_int_equal(vfs_link(v, &c, "a.txt", &c, "/tmp/a3", 0, NULL), -EXDEV);
	assert_int_equal(vfs_link(v, &c, "a.txt", &c, "a2", 0, NULL), -EEXIST);
	assert_int_equal(vfs_link(v, &c, "sub", &c, "sub2", 0, NULL), -EPERM);
	/* symlink: stored as given, resolved in the view when used */
	assert_int_equal(vfs_symlink(v, "/ws/.env", &c, "l1", NULL), 0);
	assert_int_equal(vfs_stat(v, &c, "l1", 0, &st, NULL), -ENOENT);
	assert_int_equal(vfs_symlink(v, "a.txt", &c, "l1", NULL), -EEXIST);
	assert_int_equal(vfs_symlink(v, "x", &c, "/ro/l", NULL), -EROFS);
	/* mknod: no device nodes; fifos are fine */
	assert_int_equal(vfs_mknod(v, &c, "dev", S_IFCHR | 0600, makedev(1, 3), NULL), -EPERM);
	assert_int_equal(vfs_mknod(v, &c, "blk", S_IFBLK | 0600, makedev(8, 0), NULL), -EPERM);
	assert_int_equal(vfs_mknod(v, &c, "fifo", S_IFIFO | 0600, 0, NULL), 0);
	/* unlink / rmdir */
	assert_int_equal(vfs_unlink(v, &c, "fifo", 0, NULL), 0);
	assert_int_equal(vfs_unlink(v, &c, "fifo", 0, NULL), -ENOENT);
	assert_int_equal(vfs_unlink(v, &c, ".env", 0, NULL), -ENOENT);
	assert_int_equal(vfs_unlink(v, &c, "/ws", AT_REMOVEDIR, NULL), -EROFS);
	assert_int_equal(vfs_unlink(v, &c, "/", AT_REMOVEDIR, NULL), -EBUSY);
	assert_int_equal(vfs_unlink(v, &c, "/ro/missing", 0, NULL), -EROFS);
	assert_int_equal(vfs_unlink(v, &c, "/ro/o.txt", 0, NULL), -EROFS);
	assert_int_equal(vfs_unlink(v, &c, ".", AT_REMOVEDIR, NULL), -EINVAL);
	assert_int_equal(vfs_mkdir(v, &c, "d", 0755, NULL), 0);
	assert_int_equal(vfs_unlink(v, &c, "d/", AT_REMOVEDIR, NULL), 0);
	/* metadata */
	assert_int_equal(vfs_chmod(v, &c, "a.txt", 0600, 0, NULL), 0);
	assert_int_equal(stat(tp("ws/a.txt"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	/* no set-id file: the bits are dropped from a file's mode, S_ISGID kept on a
	 * directory (a shared group directory makes no program) */
	assert_int_equal(vfs_chmod(v, &c, "a.txt", 06755, 0, NULL), 0);
	assert_int_equal(stat(tp("ws/a.txt"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(vfs_mkdir(v, &c, "gdir", 0755, NULL), 0);
	assert_int_equal(vfs_chmod(v, &c, "gdir", 02775, 0, NULL), 0);
	assert_int_equal(stat(tp("ws/gdir"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 02775);
	assert_int_equal(vfs_unlink(v, &c, "gdir", AT_REMOVEDIR, NULL), 0);
	assert_int_equal(vfs_chmod(v, &c, "a.txt", 0600, 0, NULL), 0);
	assert_int_equal(vfs_chmod(v, &c, "/ro/o.txt", 0600, 0, NULL), -EROFS);
	assert_int_equal(vfs_chmod(v, &c, ".env", 0600, 0, NULL), -ENOENT);
	assert_int_equal(vfs_chown(v, &c, "a.txt", (uid_t)-1, (gid_t)-1, 0, NULL), 0);
	assert_int_equal(vfs_truncate(v, &c, "a2", 0, NULL), 0);
	assert_int_equal(stat(tp("ws/a.txt"), &st), 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(vfs_truncate(v, &c, "/ro/o.txt", 0, NULL), -EROFS);
	assert_int_equal(vfs_utimensat(v, &c, "a.txt", NULL, 0, NULL), 0);
	assert_int_equal(vfs_utimensat(v, &c, "/etc/hosts", NULL, 0, NULL), -EROFS);
	/* the synthetic file */
	fd = vfs_open(v, &c, "/etc/hosts", O_RDONLY, 0, 0, NULL);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 20);
	assert_memory_equal(buf, "127.0.0.1 localhost\n", 20);
	close(fd);
	assert_int_equal(vfs_open(v, &c, "/etc/hosts", O_WRONLY, 0, 0, NULL), -EROFS);
	assert_int_equal(vfs_stat(v, &c, "/etc/passwd", 0, &st, NULL), -ENOENT);
	/* host <-> virtual */
	assert_int_equal(vfs_host_to_virtual(v, tp("ws/sub/b.txt"), buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/ws/sub/b.txt");
	assert_int_equal(vfs_host_to_virtual(v, tp("home"), buf, sizeof(buf)), -ENOENT);
	/* statfs, access */
	{
		struct statfs sfs;

		assert_int_equal(vfs_statfs(v, &c, "/ws", &sfs, NULL), 0);
		assert_int_equal(vfs_access(v, &c, "/ro/o.txt", W_OK, 0, NULL), -EROFS);
		assert_int_equal(vfs_access(v, &c, "/ro/o.txt", R_OK, 0, NULL), 0);
		assert_int_equal(vfs_access(v, &c, "deny/d.txt", F_OK, 0, NULL), -EACCES);
		assert_int_equal(vfs_access(v, &c, "deny", F_OK, 0, NULL), 0);
	}
	/* vfs_resolve for the interposer's own operations */
	{
		char name[NAME_MAX + 1];

		fd = vfs_resolve(v, &c, "sub/sock", VFS_WANT_PARENT | VFS_WANT_CREATE, name, NULL);
		assert_true(fd >= 0);
		assert_string_equal(name, "sock");
		close(fd);
		assert_int_equal(vfs_resolve(v, &c, ".env", VFS_WANT_READ, name, NULL), -ENOENT);
	}
	vfs_free(v);
}

/* --- getdents ------------------------------------------------------------------------------- */

/*
 * A trailing slash, as the kernel answers it (fs/namei.c): a lookup follows the last
 * symlink and wants a directory; an operation on the name itself (mkdir, mknod, symlink,
 * link's new name, unlink, rmdir, rename, O_CREAT) never follows it, and refuses with
 * its own error. Each row's errno is what the same call gives natively (the compat
 * case "slashes" compares them side by side); the host tree shows nothing was done.
 */
static void test_trailing_slash(void **state)
{
	struct vfs *v = ws_vfs();
	struct vfs_caller c = { .pid = getpid(), .tgid = getpid(), .base = "/ws" };
	char p[PATH_MAX + 64];
	struct stat st;

	(void)state;
	mk("ws/emp");
	snprintf(p, sizeof(p), "%s/ws/le", T);
	assert_int_equal(symlink("emp", p), 0);       /* to a directory */
	snprintf(p, sizeof(p), "%s/ws/lf", T);
	assert_int_equal(symlink("a.txt", p), 0);     /* to a file */
	snprintf(p, sizeof(p), "%s/ws/ld", T);
	assert_int_equal(symlink("nowhere", p), 0);   /* dangling */

	/* a new name with a slash is a directory to be: only mkdir makes one */
	assert_int_equal(vfs_link(v, &c, "a.txt", &c, "n1/", 0, NULL), -ENOENT);
	assert_int_equal(vfs_symlink(v, "x", &c, "n2/", NULL), -ENOENT);
	assert_int_equal(vfs_mknod(v, &c, "n3/", S_IFIFO | 0600, 0, NULL), -ENOENT);
	assert_int_equal(vfs_open(v, &c, "n4/", O_CREAT | O_WRONLY, 0600, 0, NULL), -EISDIR);
	assert_int_equal(vfs_mkdir(v, &c, "n5/", 0755, NULL), 0);
	/* whatever is at the name exists, a symlink too (not followed) */
	assert_int_equal(vfs_mkdir(v, &c, "ld/", 0755, NULL), -EEXIST);
	assert_int_equal(vfs_mkdir(v, &c, "a.txt/", 0755, NULL), -EEXIST);
	assert_int_equal(vfs_symlink(v, "x", &c, "ld/", NULL), -EEXIST);
	assert_int_equal(vfs_link(v, &c, "a.txt", &c, "ld/", 0, NULL), -EEXIST);
	assert_int_equal(vfs_open(v, &c, "a.txt/", O_CREAT | O_RDONLY, 0600, 0, NULL), -EISDIR);
	assert_int_equal(vfs_open(v, &c, "emp/", O_CREAT | O_RDONLY, 0600, 0, NULL), -EISDIR);
	/* removals: a symlink to a directory is no directory */
	assert_int_equal(vfs_unlink(v, &c, "le/", AT_REMOVEDIR, NULL), -ENOTDIR);
	assert_int_equal(vfs_unlink(v, &c, "le/", 0, NULL), -ENOTDIR);
	assert_int_equal(vfs_unlink(v, &c, "lf/", 0, NULL), -ENOTDIR);
	assert_int_equal(vfs_unlink(v, &c, "emp/", 0, NULL), -EISDIR);
	/* rename: a slash on either name is refused unless the source is a directory */
	assert_int_equal(vfs_rename(v, &c, "a.txt", &c, "n6/", 0, NULL), -ENOTDIR);
	assert_int_equal(vfs_rename(v, &c, "a.txt/", &c, "n6", 0, NULL), -ENOTDIR);
	assert_int_equal(vfs_rename(v, &c, "le/", &c, "n6", 0, NULL), -ENOTDIR);
	assert_int_equal(vfs_rename(v, &c, "n5", &c, "le/", 0, NULL), -ENOTDIR);
	assert_int_equal(vfs_rename(v, &c, "n5", &c, "ld/", 0, NULL), -ENOTDIR);
	assert_int_equal(vfs_rename(v, &c, "a.txt", &c, "ld/", RENAME_EXCHANGE, NULL), -ENOTDIR);
	assert_int_equal(vfs_rename(v, &c, "n5/", &c, "n7/", 0, NULL), 0);
	/* lookups still follow the slash */
	assert_int_equal(vfs_stat(v, &c, "le/", AT_SYMLINK_NOFOLLOW, &st, NULL), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(vfs_stat(v, &c, "lf/", AT_SYMLINK_NOFOLLOW, &st, NULL), -ENOTDIR);

	/* the host tree: nothing made, removed or moved but n5 -> n7 */
	const char *absent[] = { "n1", "n2", "n3", "n4", "n5", "n6", "nowhere", "emp/n5" };
	const char *present[] = { "a.txt", "emp", "le", "lf", "ld", "n7" };

	for (size_t i = 0; i < sizeof(absent) / sizeof(*absent); i++) {
		snprintf(p, sizeof(p), "%s/ws/%s", T, absent[i]);
		if (lstat(p, &st) == 0) {
			print_error("%s exists\n", absent[i]);
			fail();
		}
	}
	for (size_t i = 0; i < sizeof(present) / sizeof(*present); i++) {
		snprintf(p, sizeof(p), "%s/ws/%s", T, present[i]);
		if (lstat(p, &st) < 0) {
			print_error("%s is gone\n", present[i]);
			fail();
		}
	}
	vfs_free(v);
}

static void test_dirents(void **state)
{
	struct vfs *v = ws_vfs();
	struct vfs_caller c = { .pid = getpid(), .tgid = getpid(), .base = "/" };
	char buf[8192];
	long n;
	size_t m;
	int fd;
	bool saw_a = false, saw_env = false;

	(void)state;
	assert_true(vfs_dir_needs_filter(v, "/ws"));
	assert_true(vfs_dir_needs_filter(v, "/"));
	fd = vfs_open(v, &c, "/ws", O_RDONLY | O_DIRECTORY, 0, 0, NULL);
	assert_true(fd >= 0);
	n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
	assert_true(n > 0);
	m = vfs_filter_dirents(v, "/ws", buf, n);
	assert_true(m < (size_t)n);
	for (size_t pos = 0; pos < m;) {
		struct linux_dirent64 {
			uint64_t ino;
			int64_t off;
			unsigned short reclen;
			unsigned char type;
			char name[];
		} *d = (void *)(buf + pos);

		saw_a |= strcmp(d->name, "a.txt") == 0;
		saw_env |= strcmp(d->name, ".env") == 0;
		pos += d->reclen;
	}
	close(fd);
	assert_true(saw_a);
	assert_false(saw_env);
	vfs_free(v);
}

/* --- change set ------------------------------------------------------------------------------- */

struct seen {
	int n;
	char path[8][64];
	enum vfs_change_kind kind[8];
	bool exists[8];
	uint64_t size[8];
	uint8_t sha[8][32];
	char old[8][64];
};

static int collect(const struct vfs_change *ch, void *ud)
{
	struct seen *s = ud;

	assert_true(s->n < 8);
	snprintf(s->path[s->n], 64, "%s", ch->vpath);
	snprintf(s->old[s->n], 64, "%s", ch->old_vpath ? ch->old_vpath : "");
	s->kind[s->n] = ch->kind;
	s->exists[s->n] = ch->exists;
	s->size[s->n] = ch->size;
	memcpy(s->sha[s->n], ch->sha256, 32);
	s->n++;
	return 0;
}

/* The expected hash, computed from the bytes as the test reads them from the host file. */
static void sha_of_file(const char *host, uint8_t out[32])
{
	char buf[4096];
	FILE *f = fopen(host, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	crypto_hash_sha256(out, (unsigned char *)buf, n);
}

static void write_via(struct vfs *v, struct vfs_caller *c, const char *path, const char *data,
                      int flags)
{
	int fd = vfs_open(v, c, path, O_WRONLY | flags, 0644, 0, NULL);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, strlen(data)), (ssize_t)strlen(data));
	close(fd);
}

static void test_changes(void **state)
{
	struct vfs *v = ws_vfs();
	struct vfs_caller c = { .pid = getpid(), .tgid = getpid(), .base = "/ws" };
	struct seen s = { 0 };
	uint8_t want[32];

	(void)state;
	assert_int_equal(sodium_init() < 0, 0);
	put("ws/old.txt", "old");
	put("ws/gone.txt", "gone");
	write_via(v, &c, "new.txt", "hello, change set\n", O_CREAT | O_TRUNC);
	write_via(v, &c, "a.txt", "AAAA", O_TRUNC);
	assert_int_equal(vfs_rename(v, &c, "old.txt", &c, "renamed.txt", 0, NULL), 0);
	write_via(v, &c, "tmpfile", "x", O_CREAT);
	assert_int_equal(vfs_unlink(v, &c, "tmpfile", 0, NULL), 0);
	assert_int_equal(vfs_unlink(v, &c, "gone.txt", 0, NULL), 0);
	assert_int_equal(vfs_changes_foreach(v, collect, &s), 0);

	/* sorted by path; the created-then-deleted file left no trace */
	assert_int_equal(s.n, 4);
	assert_string_equal(s.path[0], "/ws/a.txt");
	assert_int_equal(s.kind[0], VFS_CHANGE_WRITTEN);
	sha_of_file(tp("ws/a.txt"), want);
	assert_memory_equal(s.sha[0], want, 32);
	assert_int_equal(s.size[0], 4);
	assert_string_equal(s.path[1], "/ws/gone.txt");
	assert_int_equal(s.kind[1], VFS_CHANGE_DELETED);
	assert_false(s.exists[1]);
	assert_string_equal(s.path[2], "/ws/new.txt");
	assert_int_equal(s.kind[2], VFS_CHANGE_CREATED);
	assert_true(s.exists[2]);
	assert_int_equal(s.size[2], 18);
	sha_of_file(tp("ws/new.txt"), want);
	assert_memory_equal(s.sha[2], want, 32);
	/* and against the digest `printf 'hello, change set\\n' | sha256sum` prints */
	{
		static const char hex[] = "572d5fd83e4154f1e0c18e7d9493622c72f5a20d425dce869753430dfecf4251";
		char got[65];

		sodium_bin2hex(got, sizeof(got), s.sha[2], 32);
		assert_string_equal(got, hex);
	}
	assert_string_equal(s.path[3], "/ws/renamed.txt");
	assert_int_equal(s.kind[3], VFS_CHANGE_RENAMED);
	assert_string_equal(s.old[3], "/ws/old.txt");
	vfs_free(v);
}

/* Every change of a run with thousands of them, through deletions that move entries, a
 * renamed directory that renames its children, and notes taken after a report sorted
 * the set: each path is reported once, with the right kind. */
struct tally {
	int n, created, other;
	bool f0, x5, odd;
};

static int count_change(const struct vfs_change *ch, void *ud)
{
	struct tally *t = ud;
	int i;

	t->n++;
	if (ch->kind == VFS_CHANGE_CREATED)
		t->created++;
	else
		t->other++;
	t->f0 |= streq(ch->vpath, "/ws/many/f0");
	t->x5 |= streq(ch->vpath, "/ws/many/e/x5");
	if (sscanf(ch->vpath, "/ws/many/f%d", &i) == 1 && i % 2)
		t->odd = true;
	return 0;
}

static void test_changes_many(void **state)
{
	struct vfs *v = ws_vfs();
	struct vfs_caller c = { .pid = getpid(), .tgid = getpid(), .base = "/ws/many" };
	struct tally t = { 0 };
	char name[32];

	(void)state;
	assert_int_equal(mkdir(tp("ws/many"), 0755), 0);
	for (int i = 0; i < 3000; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		write_via(v, &c, name, "x", O_CREAT | O_EXCL);
	}
	for (int i = 1; i < 3000; i += 2) {
		snprintf(name, sizeof(name), "f%d", i);
		assert_int_equal(vfs_unlink(v, &c, name, 0, NULL), 0);
	}
	assert_int_equal(vfs_mkdir(v, &c, "d", 0755, NULL), 0);
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "d/x%d", i);
		write_via(v, &c, name, "y", O_CREAT | O_EXCL);
	}
	assert_int_equal(vfs_rename(v, &c, "d", &c, "e", 0, NULL), 0);
	assert_int_equal(vfs_unlink(v, &c, "e/x7", 0, NULL), 0);
	write_via(v, &c, "f0", "z", O_TRUNC); /* still "created" */

	assert_int_equal(vfs_changes_foreach(v, count_change, &t), 0);
	/* 1500 even files, e, and 99 of its children, all new */
	assert_int_equal(t.n, 1600);
	assert_int_equal(t.created, 1600);
	assert_true(t.f0 && t.x5 && !t.odd);

	/* the report sorted the set: later notes still find their entries */
	assert_int_equal(vfs_unlink(v, &c, "f0", 0, NULL), 0);
	assert_int_equal(vfs_unlink(v, &c, "e/x5", 0, NULL), 0);
	t = (struct tally){ 0 };
	assert_int_equal(vfs_changes_foreach(v, count_change, &t), 0);
	assert_int_equal(t.n, 1598);
	assert_true(!t.f0 && !t.x5 && t.other == 0);
	vfs_free(v);
}

/* --- JSON and mount list ------------------------------------------------------------------------ */

static char *dump(struct vfs *v)
{
	json_t *j = vfs_to_json(v);
	char *s;

	assert_non_null(j);
	s = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(j);
	assert_non_null(s);
	return s;
}

static int count_mount(const struct vfs_mount_info *m, void *ud)
{
	int *n = ud;

	assert_non_null(m->virt);
	(*n)++;
	return 0;
}

static void test_json(void **state)
{
	struct vfs *a = ws_vfs(), *b = ws_vfs();
	char *sa = dump(a), *sb = dump(b);
	int n = 0;

	(void)state;
	/* two runs of the same table: same text, so the same policy hash */
	assert_string_equal(sa, sb);
	assert_non_null(strstr(sa, "\"directive\":\"hide\""));
	assert_non_null(strstr(sa, "\"glob\":\"/**/.env\""));
	assert_null(strstr(sa, "moat-vfs-"));
	assert_int_equal(vfs_foreach_mount(a, count_mount, &n), 0);
	assert_int_equal(n, 4);
	free(sa);
	free(sb);
	vfs_free(a);
	vfs_free(b);

	/* unnamespaced, /tmp is the host's; the JSON is the same as for a private one */
	{
		struct moat_error err = { 0 };

		assert_int_equal(vfs_new(NULL, &a), 0);
		assert_int_equal(vfs_new(NULL, &b), 0);
		add(a, "tmpfs", "/tmp");
		add(b, "tmpfs", "/tmp");
		assert_int_equal(vfs_finalize(a, VFS_MODE_UNNAMESPACED, &err), 0);
		assert_int_equal(vfs_finalize(b, VFS_MODE_UNNAMESPACED, &err), 0);
		assert_string_equal(vfs_tmpdir(a), "/tmp");
		assert_string_equal(vfs_tmpdir(b), "/tmp");
		sa = dump(a);
		sb = dump(b);
		assert_string_equal(sa, sb);
		free(sa);
		free(sb);
		vfs_free(a);
		vfs_free(b);
	}
}

/* The syscall table's access words as the decision's bits: what replay, the handlers and
 * the vfs operations all ask through vfs_want_of(). */
static void test_want_of(void **state)
{
	(void)state;
	assert_int_equal(vfs_want_of(SC_ACCESS_NONE, 0), 0);
	assert_int_equal(vfs_want_of(SC_ACCESS_LOOK, O_RDWR), 0);
	assert_int_equal(vfs_want_of(SC_ACCESS_READ, 0), VFS_WANT_READ);
	assert_int_equal(vfs_want_of(SC_ACCESS_WRITE, 0), VFS_WANT_WRITE);
	assert_int_equal(vfs_want_of(SC_ACCESS_CREATE, 0), VFS_WANT_CREATE);
	assert_int_equal(vfs_want_of(SC_ACCESS_EXEC, 0), VFS_WANT_EXEC);
	assert_int_equal(vfs_want_of(SC_ACCESS_CONNECT, 0), VFS_WANT_READ);
	assert_int_equal(vfs_want_of(SC_ACCESS_SEND, 0), VFS_WANT_READ);
	assert_int_equal(vfs_want_of(SC_ACCESS_BIND, 0), VFS_WANT_CREATE | VFS_WANT_WRITE);
	/* open: of an existing object; O_PATH hands over a read-only fd whatever else */
	assert_int_equal(vfs_want_of(SC_ACCESS_OPEN, O_RDONLY | O_CLOEXEC), VFS_WANT_READ);
	assert_int_equal(vfs_want_of(SC_ACCESS_OPEN, O_PATH | O_RDWR), VFS_WANT_READ);
	assert_int_equal(vfs_want_of(SC_ACCESS_OPEN, O_WRONLY), VFS_WANT_WRITE | VFS_WANT_READ);
	assert_int_equal(vfs_want_of(SC_ACCESS_OPEN, O_RDONLY | O_TRUNC), VFS_WANT_WRITE | VFS_WANT_READ);
	assert_int_equal(vfs_want_of(SC_ACCESS_OPEN, O_TMPFILE | O_RDWR), VFS_WANT_WRITE);
	/* O_DIRECTORY alone is not O_TMPFILE, which contains it */
	assert_int_equal(vfs_want_of(SC_ACCESS_OPEN, O_DIRECTORY), VFS_WANT_READ);
	assert_int_equal(vfs_want_of(SC_ACCESS_AMODE, F_OK), 0);
	assert_int_equal(vfs_want_of(SC_ACCESS_AMODE, R_OK | W_OK | X_OK),
			 VFS_WANT_READ | VFS_WANT_WRITE | VFS_WANT_EXEC);
	assert_int_equal(vfs_want_of(_SC_ACCESS_MAX, 0), 0);
}

/* T as a system tree at /sys, T/other mapped read-only inside it, then the hide rules
 * (NULL-terminated), namespaced. */
static struct vfs *system_vfs(const char *const *hides)
{
	struct vfs *v;
	struct moat_error err = { 0 };
	char arg[PATH_MAX + 64];

	assert_int_equal(vfs_new(NULL, &v), 0);
	snprintf(arg, sizeof(arg), "%s:/sys", T);
	assert_int_equal(vfs_add_directive(v, "system", arg, "test", &err), 0);
	snprintf(arg, sizeof(arg), "%s/other:/sys/other", T);
	assert_int_equal(vfs_add_directive(v, "ro-bind", arg, "test", &err), 0);
	for (size_t i = 0; hides[i]; i++)
		assert_int_equal(vfs_add_directive(v, "hide", hides[i], "test", &err), 0);
	assert_int_equal(vfs_finalize(v, VFS_MODE_NAMESPACED, &err), 0);
	return v;
}

/* A "**" glob anchored above a system mapping does not reach into it; one anchored in
 * it does, and so does a glob without "**"; a mapping inside the system tree is not
 * part of it. The decision and the listing filter agree. */
static void test_system_trees(void **state)
{
	static const char *const anchored[] = { "**/.env", "/sys/**/id_rsa", "/sys/ws/sub",
						"**/o.txt", NULL };
	static const char *const above[] = { "**/.env", "/sys/ws/sub", NULL };
	struct vfs_verdict vd;
	struct vfs *v;

	(void)state;
	v = system_vfs(anchored);
	assert_int_equal(vfs_decide(v, "/sys/ws/.env", VFS_WANT_READ, &vd), 0);
	assert_int_equal(vfs_decide(v, "/sys/home/me/.ssh/id_rsa", VFS_WANT_READ, &vd), -ENOENT);
	assert_int_equal(vfs_decide(v, "/sys/ws/sub/b.txt", VFS_WANT_READ, &vd), -ENOENT);
	/* another mapping inside the system tree: the globs reach it */
	assert_int_equal(vfs_decide(v, "/sys/other/o.txt", VFS_WANT_READ, &vd), -ENOENT);
	assert_true(vfs_dir_needs_filter(v, "/sys/home/me/.ssh"));
	assert_true(vfs_dir_needs_filter(v, "/sys/other"));
	vfs_free(v);

	/* without a glob anchored inside: only what a glob can still name is filtered */
	v = system_vfs(above);
	assert_false(vfs_dir_needs_filter(v, "/sys/home"));
	assert_true(vfs_dir_needs_filter(v, "/sys/ws"));    /* its sub is hidden by path */
	assert_true(vfs_dir_needs_filter(v, "/sys/other")); /* not a system tree */
	assert_true(vfs_dir_needs_filter(v, "/sys"));       /* /sys/other is below it */
	vfs_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_want_of),
		cmocka_unit_test_setup_teardown(test_directive_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_colon_escape, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unnamespaced_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_glob, setup, teardown),
		cmocka_unit_test(test_glob_deep),
		cmocka_unit_test(test_default_secrets),
		cmocka_unit_test_setup_teardown(test_default_profile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_default_profile_namespaced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_broad_bind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_decide, setup, teardown),
		cmocka_unit_test_setup_teardown(test_entry_ops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trailing_slash, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dirents, setup, teardown),
		cmocka_unit_test_setup_teardown(test_changes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_changes_many, setup, teardown),
		cmocka_unit_test_setup_teardown(test_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_system_trees, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
