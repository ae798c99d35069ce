/* SPDX-License-Identifier: MIT */
/*
 * The copy-on-write workspace's pure parts (vfs/cow.c), on upper layers made by hand
 * the way overlayfs makes them (whiteouts are 0/0 character devices, an opaque
 * directory has trusted.overlay.opaque=y) and the way a hostile sandbox might (devices,
 * FIFOs, hard links, huge sparse files, a host symlink where the upper has a directory):
 * the change set's walk, the commit (never following a link, never leaving the
 * directory) and the export's tar format (ustar headers with valid checksums, pax for
 * long names, the OCI whiteout names).
 *
 * Whiteouts and trusted xattrs need root: without it, the tests that need them skip.
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
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmocka.h>

#include "vfs.h"

static char T[256];
static int upper_fd = -1, lower_fd = -1;

static void put(const char *rel, const char *content)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", T, rel);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static char *get(const char *rel)
{
	static char buf[256];
	char p[PATH_MAX];
	FILE *f;
	size_t n;

	snprintf(p, sizeof(p), "%s/%s", T, rel);
	f = fopen(p, "r");
	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void mk(const char *rel)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", T, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static bool whiteout(const char *rel)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", T, rel);
	return mknod(p, S_IFCHR | 0600, makedev(0, 0)) == 0;
}

static bool exists(const char *rel)
{
	char p[PATH_MAX];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", T, rel);
	return lstat(p, &st) == 0;
}

static int setup(void **state)
{
	char p[PATH_MAX];

	(void)state;
	snprintf(T, sizeof(T), "/tmp/test-vfs-cow-XXXXXX");
	assert_non_null(mkdtemp(T));
	mk("upper");
	mk("lower");
	mk("outside");
	snprintf(p, sizeof(p), "%s/upper", T);
	upper_fd = open(p, O_RDONLY | O_DIRECTORY);
	snprintf(p, sizeof(p), "%s/lower", T);
	lower_fd = open(p, O_RDONLY | O_DIRECTORY);
	assert_true(upper_fd >= 0 && lower_fd >= 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	close(upper_fd);
	close(lower_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", T);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static const struct vfs_cow_entry *find(const struct vfs_cow_set *s, const char *path)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->e[i].path, path))
			return &s->e[i];
	fail_msg("%s is not in the change set", path);
	abort();
}

/* The walk: kinds, order (a directory before what is in it), hashes. */
static void test_scan_kinds(void **state)
{
	struct vfs_cow_set s;
	const struct vfs_cow_entry *e;
	char p[PATH_MAX];

	(void)state;
	put("upper/f", "hello\n");
	mk("upper/d");
	put("upper/d/g", "x");
	snprintf(p, sizeof(p), "%s/upper/ln", T);
	assert_int_equal(symlink("../elsewhere", p), 0);
	assert_int_equal(vfs_cow_scan(upper_fd, 1 << 20, &s), 0);
	assert_int_equal(s.n, 4);
	e = find(&s, "f");
	assert_int_equal(e->kind, VFS_COW_WRITE);
	/* sha256("hello\n") */
	assert_string_equal(e->sha256,
	                    "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
	assert_int_equal(find(&s, "d")->kind, VFS_COW_DIR);
	assert_true(find(&s, "d") < find(&s, "d/g"));
	assert_int_equal(find(&s, "ln")->kind, VFS_COW_SYMLINK);
	assert_string_equal(find(&s, "ln")->target, "../elsewhere");
	assert_int_equal(s.bytes, 7);
	vfs_cow_set_done(&s);
}

/* What overlayfs never makes is refused; a hard link is a file of its own. */
static void test_scan_hostile(void **state)
{
	struct vfs_cow_set s;
	char p[PATH_MAX], q[PATH_MAX];

	(void)state;
	snprintf(p, sizeof(p), "%s/upper/fifo", T);
	assert_int_equal(mkfifo(p, 0600), 0);
	put("upper/a", "a");
	snprintf(p, sizeof(p), "%s/upper/a", T);
	snprintf(q, sizeof(q), "%s/upper/b", T);
	assert_int_equal(link(p, q), 0);
	snprintf(p, sizeof(p), "%s/upper/huge", T);
	assert_int_equal(truncate(p, 0) == 0 || errno == ENOENT, 1);
	put("upper/huge", "");
	assert_int_equal(truncate(p, 2 << 20), 0); /* sparse: costs nothing */
	assert_int_equal(vfs_cow_scan(upper_fd, 1 << 20, &s), 0);
	assert_int_equal(find(&s, "fifo")->kind, VFS_COW_REFUSED);
	assert_int_equal(find(&s, "huge")->kind, VFS_COW_REFUSED);
	assert_int_equal(find(&s, "a")->kind, VFS_COW_WRITE);
	assert_true(find(&s, "a")->hardlink);
	/* a set-uid file is committed without the bit */
	put("upper/suid", "#!/bin/sh\n");
	snprintf(p, sizeof(p), "%s/upper/suid", T);
	assert_int_equal(chmod(p, 04755), 0);
	vfs_cow_set_done(&s);
	assert_int_equal(vfs_cow_scan(upper_fd, 1 << 20, &s), 0);
	assert_true(find(&s, "suid")->setid_dropped);
	if (geteuid() == 0) {
		snprintf(p, sizeof(p), "%s/upper/null", T);
		assert_int_equal(mknod(p, S_IFCHR | 0666, makedev(1, 3)), 0);
		vfs_cow_set_done(&s);
		assert_int_equal(vfs_cow_scan(upper_fd, 1 << 20, &s), 0);
		assert_int_equal(find(&s, "null")->kind, VFS_COW_REFUSED);
		assert_string_equal(find(&s, "null")->why, "a device node");
	}
	/* refused entries are neither applied nor exported */
	assert_int_equal(vfs_cow_commit(&s, upper_fd, lower_fd), 0);
	assert_false(exists("lower/fifo"));
	assert_false(exists("lower/huge"));
	assert_false(exists("lower/null"));
	assert_string_equal(get("lower/b"), "a");
	{
		struct stat st;

		snprintf(p, sizeof(p), "%s/lower/suid", T);
		assert_int_equal(stat(p, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0755);
	}
	vfs_cow_set_done(&s);
}

/* Whiteouts delete files and whole trees; an opaque directory replaces the host's. */
static void test_whiteouts_and_opaque(void **state)
{
	struct vfs_cow_set s;
	char p[PATH_MAX];

	(void)state;
	if (!whiteout("upper/gone")) {
		skip();
		return;
	}
	mk("lower/tree");
	mk("lower/tree/deep");
	put("lower/tree/deep/x", "x");
	assert_true(whiteout("upper/tree"));
	put("lower/gone", "g");
	mk("lower/op");
	put("lower/op/old", "o");
	mk("upper/op");
	snprintf(p, sizeof(p), "%s/upper/op", T);
	if (setxattr(p, "trusted.overlay.opaque", "y", 1, 0) < 0) {
		skip();
		return;
	}
	put("upper/op/new", "n");
	assert_int_equal(vfs_cow_scan(upper_fd, 1 << 20, &s), 0);
	assert_int_equal(find(&s, "gone")->kind, VFS_COW_DELETE);
	assert_int_equal(find(&s, "tree")->kind, VFS_COW_DELETE);
	assert_int_equal(find(&s, "op")->kind, VFS_COW_OPAQUE);
	assert_int_equal(vfs_cow_commit(&s, upper_fd, lower_fd), 0);
	assert_false(exists("lower/gone"));
	assert_false(exists("lower/tree"));
	assert_false(exists("lower/op/old"));
	assert_string_equal(get("lower/op/new"), "n");
	vfs_cow_set_done(&s);
}

/* A symlink of the host where the upper has a directory is replaced, never followed;
 * a hard link of the host is replaced, never written through. */
static void test_commit_never_follows(void **state)
{
	struct vfs_cow_set s;
	char p[PATH_MAX], q[PATH_MAX];

	(void)state;
	snprintf(p, sizeof(p), "%s/lower/esc", T);
	snprintf(q, sizeof(q), "%s/outside", T);
	assert_int_equal(symlink(q, p), 0);
	mk("upper/esc");
	put("upper/esc/planted", "p");
	put("outside/hl", "outside");
	snprintf(p, sizeof(p), "%s/outside/hl", T);
	snprintf(q, sizeof(q), "%s/lower/hl", T);
	assert_int_equal(link(p, q), 0);
	put("upper/hl", "changed");
	/* a file whose upper name is a symlink to outside: the link is made, nothing
	 * is written where it points */
	snprintf(p, sizeof(p), "%s/upper/sl", T);
	snprintf(q, sizeof(q), "%s/outside/target", T);
	assert_int_equal(symlink(q, p), 0);
	assert_int_equal(vfs_cow_scan(upper_fd, 1 << 20, &s), 0);
	assert_int_equal(vfs_cow_commit(&s, upper_fd, lower_fd), 0);
	assert_false(exists("outside/planted"));
	assert_false(exists("outside/target"));
	assert_string_equal(get("lower/esc/planted"), "p");
	assert_string_equal(get("outside/hl"), "outside");
	assert_string_equal(get("lower/hl"), "changed");
	vfs_cow_set_done(&s);
}

/* A path that climbs out of the directory is refused by the resolution itself. */
static void test_commit_stays_beneath(void **state)
{
	struct vfs_cow_set s = { 0 };
	struct vfs_cow_entry e = { .kind = VFS_COW_SYMLINK, .mode = S_IFLNK | 0777 };

	(void)state;
	e.path = strdup("../outside/evil");
	e.target = strdup("x");
	s.e = &e;
	s.n = s.cap = 1;
	assert_int_equal(vfs_cow_commit(&s, upper_fd, lower_fd), 1);
	assert_int_equal(e.err, EXDEV);
	assert_false(exists("outside/evil"));
	free(e.path);
	free(e.target);
}

static unsigned sum_of(const unsigned char *h)
{
	unsigned sum = 0;

	for (int i = 0; i < 512; i++)
		sum += i >= 148 && i < 156 ? ' ' : h[i];
	return sum;
}

/* The export: one header per entry with a valid checksum, whiteout names, a pax
 * header before a long name, content padded to blocks, two zero blocks at the end. */
static void test_export_format(void **state)
{
	struct vfs_cow_set s;
	char p[PATH_MAX], longname[200];
	unsigned char buf[1 << 16];
	char names[16][256];
	int n = 0, out;
	ssize_t len;
	size_t off = 0;
	bool wh = geteuid() == 0;

	(void)state;
	put("upper/f", "hello\n");
	mk("upper/d");
	memset(longname, 'l', 150);
	longname[150] = '\0';
	snprintf(p, sizeof(p), "upper/d/%s", longname);
	put(p, "L");
	if (wh) {
		assert_true(whiteout("upper/d/old"));
		/* an id past ustar's 7 octal digits goes in a pax record */
		snprintf(p, sizeof(p), "%s/upper/f", T);
		assert_int_equal(chown(p, 3000000, 3000001), 0);
	}
	put("upper/.wh.sneaky", "not a deletion");
	assert_int_equal(vfs_cow_scan(upper_fd, 1 << 20, &s), 0);
	snprintf(p, sizeof(p), "%s/out.tar", T);
	out = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(out >= 0);
	assert_int_equal(vfs_cow_export(&s, upper_fd, out), 1); /* .wh.sneaky left out */
	len = pread(out, buf, sizeof(buf), 0);
	close(out);
	assert_true(len > 0 && len % 512 == 0);
	while (off + 512 <= (size_t)len && n < 16) {
		unsigned char *h = buf + off;
		unsigned long size;
		char chk[9];

		if (!h[0])
			break;
		memcpy(chk, h + 148, 8);
		chk[8] = '\0';
		assert_int_equal(strtoul(chk, NULL, 8), sum_of(h));
		assert_memory_equal(h + 257, "ustar", 6);
		size = strtoul((char *)h + 124, NULL, 8);
		if (h[156] == 'x') {
			/* the pax record names the long path */
			char rec[512];

			memcpy(rec, h + 512, size < sizeof(rec) - 1 ? size : sizeof(rec) - 1);
			rec[size < sizeof(rec) - 1 ? size : sizeof(rec) - 1] = '\0';
			if (strstr(rec, " uid=")) {
				assert_non_null(strstr(rec, " uid=3000000\n"));
				assert_non_null(strstr(rec, " gid=3000001\n"));
				snprintf(names[n++], 256, "pax-ids");
			} else {
				assert_non_null(strstr(rec, longname));
				snprintf(names[n++], 256, "pax");
			}
		} else {
			snprintf(names[n++], 256, "%.100s", (char *)h);
		}
		off += 512 + (size + 511) / 512 * 512;
	}
	/* the end: two zero blocks */
	assert_true(off + 1024 == (size_t)len);
	for (size_t i = off; i < (size_t)len; i++)
		assert_int_equal(buf[i], 0);
	assert_string_equal(names[0], "d/");
	assert_string_equal(names[1], "pax");
	assert_int_equal(strncmp(names[2], "d/lll", 5), 0);
	if (wh) {
		assert_string_equal(names[3], "d/.wh.old");
		assert_string_equal(names[4], "pax-ids");
		assert_string_equal(names[5], "f");
		assert_int_equal(n, 6);
	} else {
		assert_string_equal(names[3], "f");
		assert_int_equal(n, 4);
	}
	vfs_cow_set_done(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_scan_kinds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scan_hostile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_whiteouts_and_opaque, setup, teardown),
		cmocka_unit_test_setup_teardown(test_commit_never_follows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_commit_stays_beneath, setup, teardown),
		cmocka_unit_test_setup_teardown(test_export_format, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
