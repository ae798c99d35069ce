/* SPDX-License-Identifier: MIT */
/*
 * mounttab.c: the mount table's copies under --strict-hide leave out the stubs' mounts
 * (their filesystem and root), every mount at or below a stub's mount point, and
 * nothing else; the copy is a sealed, read-only memfd.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

#include "mounttab.h"
#include "spawn.h"

/* The stubs live on 0:41; a host filesystem (0:29) has a directory of the same name. */
static const char mountinfo[] =
	"70 60 0:40 / / ro,nosuid - tmpfs tmpfs rw\n"
	"75 70 8:1 /usr /usr ro,relatime - ext4 /dev/vda rw\n"
	"79 70 8:1 /etc /etc ro,relatime - ext4 /dev/vda rw\n"
	"85 79 0:41 /" SPAWN_STUB_DIR " /etc/ssl/private ro,nosuid - tmpfs tmpfs rw\n"
	"86 79 0:41 /" SPAWN_STUB_FILE " /etc/shadow ro,nosuid - tmpfs tmpfs rw\n"
	"87 70 8:1 /tmp/ws /work\\040space rw,relatime - ext4 /dev/vda rw\n"
	"88 87 0:41 /" SPAWN_STUB_FILE " /work\\040space/.env ro - tmpfs tmpfs rw\n"
	"89 87 8:1 /srv/keys /work\\040space/keys rw - ext4 /dev/vda rw\n"
	"90 89 0:41 /" SPAWN_STUB_DIR " /work\\040space/keys ro - tmpfs tmpfs rw\n"
	"91 89 8:1 /srv/keys/sub /work\\040space/keys/sub rw - ext4 /dev/vda rw\n"
	"92 70 0:29 /" SPAWN_STUB_DIR " /etc/shadowed ro - tmpfs tmpfs rw\n"
	"93 79 8:1 /etc/ssl/private2 /etc/ssl/private2 ro - ext4 /dev/vda rw\n";

static struct mounttab_stubs stubs_at(unsigned maj, unsigned min)
{
	return (struct mounttab_stubs){ .known = true, .dev = makedev(maj, min) };
}

/* text of kind, filtered against the mountinfo above with the stubs on maj:min, is want */
static void expect(const char *text, enum mounttab_kind kind, unsigned min, const char *want)
{
	struct mounttab_stubs s = stubs_at(0, min);
	char *out = mounttab_filter_text(text, kind, mountinfo, &s);

	assert_non_null(out);
	assert_string_equal(out, want);
	free(out);
}

static void test_kind(void **state)
{
	(void)state;
	assert_int_equal(mounttab_kind("/proc/12/mountinfo"), MOUNTTAB_INFO);
	assert_int_equal(mounttab_kind("/proc/12/mounts"), MOUNTTAB_MOUNTS);
	assert_int_equal(mounttab_kind("/proc/12/mountstats"), MOUNTTAB_STATS);
	assert_int_equal(mounttab_kind("/proc/12/task/13/mountinfo"), MOUNTTAB_INFO);
	assert_int_equal(mounttab_kind("/proc/12/task/13/mounts"), MOUNTTAB_MOUNTS);
	assert_int_equal(mounttab_kind("/proc/12/mountinfo2"), MOUNTTAB_NONE);
	assert_int_equal(mounttab_kind("/proc/12/task/mountinfo"), MOUNTTAB_NONE);
	assert_int_equal(mounttab_kind("/proc/self/mountinfo"), MOUNTTAB_NONE);
	assert_int_equal(mounttab_kind("/proc/mounts"), MOUNTTAB_NONE);
	assert_int_equal(mounttab_kind("/proc//mounts"), MOUNTTAB_NONE);
	assert_int_equal(mounttab_kind("/tmp/12/mountinfo"), MOUNTTAB_NONE);
}

static void test_mountinfo(void **state)
{
	(void)state;
	expect(mountinfo, MOUNTTAB_INFO, 41, "70 60 0:40 / / ro,nosuid - tmpfs tmpfs rw\n"
				 "75 70 8:1 /usr /usr ro,relatime - ext4 /dev/vda rw\n"
				 "79 70 8:1 /etc /etc ro,relatime - ext4 /dev/vda rw\n"
				 "87 70 8:1 /tmp/ws /work\\040space rw,relatime - ext4 /dev/vda rw\n"
				 "92 70 0:29 /" SPAWN_STUB_DIR " /etc/shadowed ro - tmpfs tmpfs rw\n"
				 "93 79 8:1 /etc/ssl/private2 /etc/ssl/private2 ro - ext4 /dev/vda rw\n");
}

static void test_other_dev_keeps_all(void **state)
{
	(void)state;
	expect(mountinfo, MOUNTTAB_INFO, 77, mountinfo);
}

static void test_mounts(void **state)
{
	static const char mounts[] = "tmpfs / tmpfs ro,nosuid 0 0\n"
				     "/dev/vda /usr ext4 ro,relatime 0 0\n"
				     "/dev/vda /etc ext4 ro,relatime 0 0\n"
				     "tmpfs /etc/ssl/private tmpfs ro,nosuid 0 0\n"
				     "tmpfs /etc/shadow tmpfs ro,nosuid 0 0\n"
				     "/dev/vda /work\\040space ext4 rw,relatime 0 0\n"
				     "tmpfs /work\\040space/.env tmpfs ro 0 0\n"
				     "/dev/vda /work\\040space/keys ext4 rw 0 0\n"
				     "tmpfs /work\\040space/keys tmpfs ro 0 0\n"
				     "/dev/vda /work\\040space/keys/sub ext4 rw 0 0\n"
				     "tmpfs /etc/shadowed tmpfs ro 0 0\n"
				     "/dev/vda /etc/ssl/private2 ext4 ro 0 0\n";

	(void)state;
	expect(mounts, MOUNTTAB_MOUNTS, 41, "tmpfs / tmpfs ro,nosuid 0 0\n"
				 "/dev/vda /usr ext4 ro,relatime 0 0\n"
				 "/dev/vda /etc ext4 ro,relatime 0 0\n"
				 "/dev/vda /work\\040space ext4 rw,relatime 0 0\n"
				 "tmpfs /etc/shadowed tmpfs ro 0 0\n"
				 "/dev/vda /etc/ssl/private2 ext4 ro 0 0\n");
}

static void test_mountstats(void **state)
{
	static const char stats[] =
		"device tmpfs mounted on / with fstype tmpfs\n"
		"device tmpfs mounted on /etc/ssl/private with fstype tmpfs\n"
		"device srv:/x mounted on /etc/shadow with fstype nfs4 statvers=1.1\n"
		"\topts:\trw,vers=4.2\n"
		"\tage:\t12\n"
		"device srv:/y mounted on /usr with fstype nfs4 statvers=1.1\n"
		"\topts:\tro\n"
		"device tmpfs mounted on /work\\040space/keys/sub with fstype tmpfs\n";

	(void)state;
	expect(stats, MOUNTTAB_STATS, 41, "device tmpfs mounted on / with fstype tmpfs\n"
					  "device srv:/y mounted on /usr with fstype nfs4 statvers=1.1\n"
					  "\topts:\tro\n");
}

/* The copy: what the filter keeps, at offset 0, refusing writes, close-on-exec. */
static void test_sealed_copy(void **state)
{
	char path[] = "/tmp/moat-mounttab-XXXXXX", buf[4096];
	struct mounttab_stubs s = stubs_at(0, 41);
	int fd = mkstemp(path), out;
	ssize_t n;

	(void)state;
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(write(fd, mountinfo, strlen(mountinfo)), (ssize_t)strlen(mountinfo));
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	out = mounttab_filtered(fd, MOUNTTAB_INFO, getpid(), &s);
	assert_true(out >= 0);
	n = read(out, buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_null(strstr(buf, "/etc/shadow "));
	assert_non_null(strstr(buf, " /usr "));
	assert_int_equal(fcntl(out, F_GETFL) & O_ACCMODE, O_RDONLY);
	assert_true(fcntl(out, F_GETFD) & FD_CLOEXEC);
	assert_true(write(out, "x", 1) < 0);
	assert_true(fcntl(out, F_GET_SEALS) & F_SEAL_WRITE);
	close(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kind),
		cmocka_unit_test(test_mountinfo),
		cmocka_unit_test(test_other_dev_keeps_all),
		cmocka_unit_test(test_mounts),
		cmocka_unit_test(test_mountstats),
		cmocka_unit_test(test_sealed_copy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
