/* SPDX-License-Identifier: MIT */
/*
 * Argument formatters, errno names and the `moat syscalls` printer (human and JSON).
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/audit.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sc.h"

#define FMT(fn, v, want)                                                                           \
	do {                                                                                       \
		char _b[256];                                                                      \
		int _n = fn((v), _b, sizeof(_b));                                                  \
		assert_string_equal(_b, (want));                                                   \
		assert_int_equal(_n, strlen(want));                                                \
	} while (0)

static void test_oflags(void **state)
{
	FMT(sc_format_oflags, O_RDONLY, "O_RDONLY");
	FMT(sc_format_oflags, O_RDONLY | O_CLOEXEC, "O_RDONLY|O_CLOEXEC");
	FMT(sc_format_oflags, O_WRONLY | O_CREAT | O_TRUNC, "O_WRONLY|O_CREAT|O_TRUNC");
	FMT(sc_format_oflags, O_RDWR | O_TMPFILE, "O_RDWR|O_TMPFILE");
	FMT(sc_format_oflags, O_RDONLY | O_DIRECTORY, "O_RDONLY|O_DIRECTORY");
	FMT(sc_format_oflags, O_PATH | O_NOFOLLOW | O_CLOEXEC, "O_RDONLY|O_NOFOLLOW|O_CLOEXEC|O_PATH");
	FMT(sc_format_oflags, O_WRONLY | O_SYNC, "O_WRONLY|O_SYNC");
	FMT(sc_format_oflags, O_WRONLY | O_DSYNC, "O_WRONLY|O_DSYNC");
	FMT(sc_format_oflags, O_RDWR | O_NONBLOCK | O_EXCL, "O_RDWR|O_EXCL|O_NONBLOCK");
	/* Unknown bits are kept, in hex, not dropped. */
	FMT(sc_format_oflags, O_RDONLY | O_CLOEXEC | 0x40000000, "O_RDONLY|O_CLOEXEC|0x40000000");
	FMT(sc_format_oflags, 1ULL << 40, "O_RDONLY|0x10000000000");
	FMT(sc_format_oflags, 3, "O_ACCMODE");
}

static void test_oflags_truncated(void **state)
{
	char b[8];
	int n = sc_format_oflags(O_RDONLY | O_CLOEXEC, b, sizeof(b));

	assert_int_equal(n, strlen("O_RDONLY|O_CLOEXEC"));
	assert_string_equal(b, "O_RDONL");
	assert_int_equal(sc_format_oflags(O_RDONLY | O_CLOEXEC, NULL, 0), n);
}

static void test_atflags(void **state)
{
	FMT(sc_format_atflags, 0, "0");
	FMT(sc_format_atflags, AT_SYMLINK_NOFOLLOW, "AT_SYMLINK_NOFOLLOW");
	FMT(sc_format_atflags, AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH,
	    "AT_SYMLINK_NOFOLLOW|AT_EMPTY_PATH");
	FMT(sc_format_atflags, AT_REMOVEDIR, "AT_REMOVEDIR");
	FMT(sc_format_atflags, AT_EMPTY_PATH | 0x1, "AT_EMPTY_PATH|0x1");
	FMT(sc_format_atflags, 0x80000000, "0x80000000");
}

static void test_dirfd(void **state)
{
	FMT(sc_format_dirfd, AT_FDCWD, "AT_FDCWD");
	/* The same int zero-extended in a 64-bit register: the kernel sees AT_FDCWD too. */
	FMT(sc_format_dirfd, (int64_t)0xffffff9cLL, "AT_FDCWD");
	FMT(sc_format_dirfd, 3, "3");
	FMT(sc_format_dirfd, -1, "-1");
}

#define ARG(kind, v, want)                                                                         \
	do {                                                                                       \
		char _b[128];                                                                      \
		int _n = sc_format_arg((kind), (v), _b, sizeof(_b));                               \
		assert_string_equal(_b, (want));                                                   \
		assert_int_equal(_n, strlen(want));                                                \
	} while (0)

static void test_format_arg(void **state)
{
	ARG(SC_ARG_NONE, 7, "");
	ARG(SC_ARG_INT, (uint64_t)-5, "-5");
	ARG(SC_ARG_UINT, 4096, "4096");
	ARG(SC_ARG_FD, 3, "3");
	ARG(SC_ARG_DIRFD, (uint64_t)(int64_t)AT_FDCWD, "AT_FDCWD");
	ARG(SC_ARG_PATH, 0, "NULL");
	ARG(SC_ARG_PATH, 0x7ffc1000, "0x7ffc1000");
	ARG(SC_ARG_OFLAGS, O_WRONLY | O_APPEND, "O_WRONLY|O_APPEND");
	ARG(SC_ARG_ATFLAGS, AT_EMPTY_PATH, "AT_EMPTY_PATH");
	ARG(SC_ARG_FLAGS, 0, "0");
	ARG(SC_ARG_FLAGS, 0x80800, "0x80800");
	ARG(SC_ARG_MODE, 0644, "0644");
	ARG(SC_ARG_SIGNAL, 9, "SIGKILL");
	ARG(SC_ARG_SIGNAL, 0, "0");
	ARG(SC_ARG_PID, (uint64_t)-1, "-1");
	ARG(SC_ARG_SOCKLEN, 16, "16");
}

static void test_errno_names(void **state)
{
	int named = 0;

	assert_string_equal(sc_errno_name(EACCES), "EACCES");
	assert_string_equal(sc_errno_name(ENOSYS), "ENOSYS");
	assert_null(sc_errno_name(0));
	assert_null(sc_errno_name(-EPERM));
	assert_null(sc_errno_name(4000));
	assert_int_equal(sc_errno_by_name("EPERM"), EPERM);
	assert_int_equal(sc_errno_by_name("EWOULDBLOCK"), EAGAIN);
	assert_int_equal(sc_errno_by_name("ENOTSUP"), EOPNOTSUPP);
	assert_int_equal(sc_errno_by_name("EFOO"), 0);
	assert_int_equal(sc_errno_by_name(""), 0);
	assert_int_equal(sc_errno_by_name(NULL), 0);
	/* Round trip over every errno the C library names. */
	for (int e = 1; e < 256; e++) {
		const char *n = sc_errno_name(e);

		if (!n)
			continue;
		named++;
		assert_int_equal(sc_errno_by_name(n), e);
	}
	assert_true(named > 120);
}

static char *print_to_string(uint32_t arch, bool json, int *ret)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	assert_non_null(f);
	*ret = sc_print_table(arch, json, f);
	fclose(f);
	return s;
}

static json_t *find(json_t *arr, const char *name)
{
	size_t i;
	json_t *o;

	json_array_foreach(arr, i, o)
		if (strcmp(json_string_value(json_object_get(o, "name")), name) == 0)
			return o;
	return NULL;
}

static void test_json(void **state)
{
	const uint32_t arches[] = { AUDIT_ARCH_X86_64, AUDIT_ARCH_AARCH64 };

	for (size_t a = 0; a < 2; a++) {
		static const char *const notified[] = { "openat", "execve", "connect" };
		json_error_t err;
		int ret;
		char *s = print_to_string(arches[a], true, &ret);
		json_t *root = json_loads(s, 0, &err), *o;

		assert_int_equal(ret, 0);
		if (!root)
			fail_msg("JSON does not parse: %s at line %d", err.text, err.line);
		assert_true(json_is_array(root));
		assert_int_equal(json_array_size(root), sc_count(arches[a]));
		for (size_t i = 0; i < 3; i++) {
			o = find(root, notified[i]);
			assert_non_null(o);
			assert_string_equal(json_string_value(json_object_get(o, "handling")), "notify");
			assert_string_equal(json_string_value(json_object_get(o, "arch")),
					    sc_arch_name(arches[a]));
			assert_int_equal(json_integer_value(json_object_get(o, "nr")),
					 sc_by_name(arches[a], notified[i])->nr);
			assert_true(json_is_null(json_object_get(o, "errno")));
		}
		o = find(root, "openat");
		assert_string_equal(json_string_value(json_array_get(json_object_get(o, "args"), 1)),
				    "path");
		assert_string_equal(
			json_string_value(json_array_get(json_object_get(o, "categories"), 0)), "fs");
		o = find(root, "clone3");
		assert_string_equal(json_string_value(json_object_get(o, "handling")), "deny");
		assert_string_equal(json_string_value(json_object_get(o, "errno")), "ENOSYS");
		assert_non_null(json_string_value(json_object_get(o, "note")));
		json_decref(root);
		free(s);
	}
}

static void test_human(void **state)
{
	int ret;
	char *s = print_to_string(AUDIT_ARCH_X86_64, false, &ret);

	assert_int_equal(ret, 0);
	assert_non_null(strstr(s, "x86_64"));
	assert_non_null(strstr(s, " 257  openat "));
	assert_non_null(strstr(s, "io_uring_setup"));
	assert_non_null(strstr(s, "ENOSYS"));
	free(s);

	s = print_to_string(AUDIT_ARCH_I386, false, &ret);
	assert_int_equal(ret, -EINVAL);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_oflags),
		cmocka_unit_test(test_oflags_truncated),
		cmocka_unit_test(test_atflags),
		cmocka_unit_test(test_dirfd),
		cmocka_unit_test(test_format_arg),
		cmocka_unit_test(test_errno_names),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_human),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
