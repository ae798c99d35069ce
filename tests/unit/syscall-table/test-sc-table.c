/* SPDX-License-Identifier: MIT */
/*
 * The generated tables: sorted, lookups by number / name / id agree, entries are well
 * formed, and moat's handling policy holds for the syscalls it matters most for.
 */
#include <errno.h>
#include <linux/audit.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sc.h"

static const uint32_t arches[] = { AUDIT_ARCH_X86_64, AUDIT_ARCH_AARCH64 };
#define N_ARCHES (sizeof(arches) / sizeof(arches[0]))

static void test_arch_names(void **state)
{
	assert_string_equal(sc_arch_name(AUDIT_ARCH_X86_64), "x86_64");
	assert_string_equal(sc_arch_name(AUDIT_ARCH_AARCH64), "aarch64");
	assert_null(sc_arch_name(AUDIT_ARCH_I386)); /* not tabulated: the filter kills it */
	assert_int_equal(sc_arch_by_name("x86_64"), AUDIT_ARCH_X86_64);
	assert_int_equal(sc_arch_by_name("aarch64"), AUDIT_ARCH_AARCH64);
	assert_int_equal(sc_arch_by_name("arm64"), AUDIT_ARCH_AARCH64);
	assert_int_equal(sc_arch_by_name("i386"), 0);
	assert_int_equal(sc_arch_by_name(NULL), 0);
#if defined(__x86_64__) && !defined(__ILP32__)
	assert_int_equal(sc_native_arch(), AUDIT_ARCH_X86_64);
#elif defined(__aarch64__)
	assert_int_equal(sc_native_arch(), AUDIT_ARCH_AARCH64);
#endif
}

static void test_sorted_and_consistent(void **state)
{
	for (size_t a = 0; a < N_ARCHES; a++) {
		size_t n = sc_count(arches[a]);
		int prev = -1;

		assert_true(n > 250);
		assert_null(sc_at(arches[a], n));
		for (size_t i = 0; i < n; i++) {
			const struct sc_entry *e = sc_at(arches[a], i);

			assert_non_null(e);
			assert_true(e->nr > prev); /* strictly ascending: sorted, no duplicates */
			prev = e->nr;
			assert_ptr_equal(sc_lookup(arches[a], e->nr), e);
			assert_ptr_equal(sc_by_name(arches[a], e->name), e);
			assert_ptr_equal(sc_by_id(arches[a], e->id), e);
			assert_string_equal(sc_id_name(e->id), e->name);
		}
	}
}

static void test_entries_well_formed(void **state)
{
	for (size_t a = 0; a < N_ARCHES; a++)
		for (size_t i = 0; i < sc_count(arches[a]); i++) {
			const struct sc_entry *e = sc_at(arches[a], i);

			assert_true(e->nargs <= SC_MAX_ARGS);
			for (size_t k = 0; k < SC_MAX_ARGS; k++) {
				if (k < e->nargs)
					assert_true(e->arg[k] > SC_ARG_NONE &&
						    e->arg[k] < _SC_ARG_KIND_MAX);
				else
					assert_int_equal(e->arg[k], SC_ARG_NONE);
			}
			assert_true(e->category != 0);
			assert_true(e->handling < _SC_HANDLING_MAX);
			assert_non_null(sc_handling_name(e->handling));
			if (e->handling == SC_DENY ||
			    (e->handling == SC_ARGS && e->deny_errno != 0)) {
				assert_true(e->deny_errno > 0);
				assert_non_null(sc_errno_name(e->deny_errno));
			} else if (e->handling != SC_ARGS) {
				assert_int_equal(e->deny_errno, 0);
			}
			assert_non_null(e->note);
			assert_true(e->note[0] != '\0');
		}
}

/* The supervisor must have something to act on: a name, an address or an fd, but for a
 * call it only lets through, notified for its own bookkeeping (the setuid family). */
static void test_notify_has_object(void **state)
{
	size_t notified = 0;

	for (size_t a = 0; a < N_ARCHES; a++)
		for (size_t i = 0; i < sc_count(arches[a]); i++) {
			const struct sc_entry *e = sc_at(arches[a], i);
			bool found = false;

			if (e->handling != SC_NOTIFY)
				continue;
			notified++;
			for (size_t k = 0; k < e->nargs; k++)
				found |= e->arg[k] == SC_ARG_PATH || e->arg[k] == SC_ARG_SOCKADDR ||
					 e->arg[k] == SC_ARG_FD || e->arg[k] == SC_ARG_DIRFD;
			if (!found && !e->continues)
				print_error("%s: notify without path/sockaddr/fd\n", e->name);
			assert_true(found || e->continues);
		}
	assert_true(notified > 50);
}

static void test_ids_sorted(void **state)
{
	for (int id = 1; id < _SC_ID_MAX; id++)
		assert_true(strcmp(sc_id_name((enum sc_id)(id - 1)), sc_id_name((enum sc_id)id)) < 0);
	assert_string_equal(sc_id_name(SC_openat), "openat");
	assert_null(sc_id_name(_SC_ID_MAX));
	assert_null(sc_id_name(_SC_ID_INVALID));
}

static void test_lookup_misses(void **state)
{
	assert_null(sc_lookup(AUDIT_ARCH_X86_64, -1));
	assert_null(sc_lookup(AUDIT_ARCH_X86_64, 400)); /* the hole between 334 and 424 */
	assert_null(sc_lookup(AUDIT_ARCH_X86_64, 1 << 30));
	assert_null(sc_lookup(AUDIT_ARCH_X86_64, 0x40000000 + 2)); /* x32 bit: not this ABI */
	assert_null(sc_lookup(AUDIT_ARCH_I386, 5));
	assert_null(sc_by_name(AUDIT_ARCH_X86_64, "nosuchcall"));
	assert_null(sc_by_name(AUDIT_ARCH_X86_64, NULL));
	assert_null(sc_by_name(AUDIT_ARCH_AARCH64, "open")); /* aarch64 only has openat */
	assert_null(sc_by_id(AUDIT_ARCH_AARCH64, SC_open));
	assert_null(sc_by_id(AUDIT_ARCH_X86_64, _SC_ID_MAX));
	assert_null(sc_by_id(AUDIT_ARCH_X86_64, _SC_ID_INVALID));
	assert_null(sc_at(AUDIT_ARCH_I386, 0));
	assert_int_equal(sc_count(AUDIT_ARCH_I386), 0);
}

static void expect(uint32_t arch, const char *name, enum sc_handling h, int err)
{
	const struct sc_entry *e = sc_by_name(arch, name);

	if (!e)
		fail_msg("%s missing on %s", name, sc_arch_name(arch));
	if (e->handling != h || e->deny_errno != err)
		fail_msg("%s on %s: %s/%d, want %s/%d", name, sc_arch_name(arch),
			 sc_handling_name(e->handling), e->deny_errno, sc_handling_name(h), err);
}

/* Spot checks of the policy in the brief; the CSV note says why for each. */
static void test_policy(void **state)
{
	const uint32_t x = AUDIT_ARCH_X86_64;

	for (size_t a = 0; a < N_ARCHES; a++) {
		uint32_t arch = arches[a];

		expect(arch, "openat", SC_NOTIFY, 0);
		expect(arch, "openat2", SC_NOTIFY, 0);
		expect(arch, "execve", SC_NOTIFY, 0);
		expect(arch, "execveat", SC_NOTIFY, 0);
		expect(arch, "connect", SC_NOTIFY, 0);
		expect(arch, "sendmsg", SC_NOTIFY, 0);
		expect(arch, "getdents64", SC_NOTIFY, 0);
		expect(arch, "fchmodat2", SC_NOTIFY, 0);
		expect(arch, "read", SC_NATIVE, 0);
		expect(arch, "mmap", SC_NATIVE, 0);
		expect(arch, "prctl", SC_ARGS, 0); /* PR_SET_NAME notified, for the audit */
		expect(arch, "landlock_restrict_self", SC_NATIVE, 0);
		expect(arch, "io_uring_setup", SC_DENY, ENOSYS);
		expect(arch, "io_uring_enter", SC_DENY, ENOSYS);
		expect(arch, "clone3", SC_DENY, ENOSYS);
		expect(arch, "keyctl", SC_DENY, ENOSYS);
		expect(arch, "bpf", SC_DENY, EPERM);
		expect(arch, "perf_event_open", SC_DENY, EACCES);
		expect(arch, "ptrace", SC_DENY, EPERM);
		expect(arch, "process_vm_writev", SC_DENY, EPERM);
		expect(arch, "pidfd_getfd", SC_DENY, EPERM);
		expect(arch, "userfaultfd", SC_DENY, EPERM);
		expect(arch, "mount", SC_DENY, EPERM);
		expect(arch, "move_mount", SC_DENY, EPERM);
		expect(arch, "unshare", SC_DENY, EPERM);
		expect(arch, "setns", SC_DENY, EPERM);
		expect(arch, "open_by_handle_at", SC_DENY, EPERM);
		expect(arch, "fanotify_mark", SC_DENY, EPERM);
		expect(arch, "kcmp", SC_DENY, EPERM);
		expect(arch, "clone", SC_ARGS, EPERM);
		expect(arch, "ioctl", SC_ARGS, EPERM);
		expect(arch, "fcntl", SC_ARGS, EACCES);
		expect(arch, "personality", SC_ARGS, EPERM);
		expect(arch, "seccomp", SC_ARGS, EPERM);
		expect(arch, "socket", SC_ARGS, EACCES);
		/* pid 0 native, another pid decided by the supervisor */
		expect(arch, "prlimit64", SC_ARGS, EPERM);
		expect(arch, "setpriority", SC_ARGS, EPERM);
		expect(arch, "sched_setscheduler", SC_ARGS, EPERM);
		expect(arch, "sched_setaffinity", SC_ARGS, EPERM);
		expect(arch, "sched_setattr", SC_ARGS, EPERM);
		expect(arch, "ioprio_set", SC_ARGS, EPERM);
		expect(arch, "move_pages", SC_ARGS, EPERM);
	}
	expect(x, "open", SC_NOTIFY, 0);
	expect(x, "stat", SC_NOTIFY, 0);
	expect(x, "creat", SC_NOTIFY, 0);
	expect(x, "iopl", SC_DENY, EPERM);
	expect(x, "ioperm", SC_DENY, EPERM);
	expect(x, "uselib", SC_DENY, EPERM);
}

static enum sc_fast fast_of(uint32_t arch, const char *name)
{
	const struct sc_entry *e = sc_by_name(arch, name);

	assert_non_null(e);
	return (enum sc_fast)e->fast;
}

/* The namespaced fast path: what leaves the notify set, what is continued when
 * read-only, which creates go native where no change set is asked for, and that renames
 * (a moved directory would carry a hidden path out from under its rule) and the calls
 * Landlock does not govern stay emulated. */
static void test_fast_path(void **state)
{
	static const char *const native[] = { "newfstatat", "statx", "getdents64", "readlinkat",
					       "faccessat", "faccessat2" };
	static const char *const native_w[] = { "mkdirat", "unlinkat", "execve", "execveat" };
	/* links and symlinks too: a second name planted for a hidden name that does not
	 * exist yet would show what the host writes there later */
	static const char *const emulated[] = { "renameat2", "linkat", "symlinkat",
						 "mknodat", "fchmodat", "utimensat",
						 "connect", "chdir", "inotify_add_watch",
						 "getxattr", "truncate" };

	(void)state;
	for (size_t a = 0; a < N_ARCHES; a++) {
		uint32_t arch = arches[a];

		for (size_t i = 0; i < sizeof(native) / sizeof(native[0]); i++)
			assert_int_equal(fast_of(arch, native[i]), SC_FAST_NATIVE);
		for (size_t i = 0; i < sizeof(native_w) / sizeof(native_w[0]); i++)
			assert_int_equal(fast_of(arch, native_w[i]), SC_FAST_NATIVE_W);
		for (size_t i = 0; i < sizeof(emulated) / sizeof(emulated[0]); i++)
			assert_int_equal(fast_of(arch, emulated[i]), SC_FAST_SAME);
		assert_int_equal(fast_of(arch, "openat"), SC_FAST_NATIVE_RO);
		/* its flags are in memory: never continued */
		assert_int_equal(fast_of(arch, "openat2"), SC_FAST_SAME);
		assert_true(sc_by_name(arch, "execve")->continues);
		assert_false(sc_by_name(arch, "openat")->continues);
		assert_true(sc_by_name(arch, "shmget")->unns_enosys);
		assert_false(sc_by_name(arch, "futex")->unns_enosys);
		for (size_t i = 0; i < sc_count(arch); i++) {
			const struct sc_entry *e = sc_at(arch, i);

			if (e->fast != SC_FAST_SAME)
				assert_int_equal(e->handling, SC_NOTIFY);
			if (e->fast != SC_FAST_SAME || e->unns_enosys)
				assert_non_null(e->mode_note);
		}
	}
	assert_int_equal(fast_of(AUDIT_ARCH_X86_64, "stat"), SC_FAST_NATIVE);
	assert_int_equal(fast_of(AUDIT_ARCH_X86_64, "open"), SC_FAST_NATIVE_RO);
	assert_int_equal(fast_of(AUDIT_ARCH_X86_64, "creat"), SC_FAST_NATIVE_W);
	assert_int_equal(fast_of(AUDIT_ARCH_X86_64, "unlinkat"), SC_FAST_NATIVE_W);
	/* Landlock does not govern these (through a dirfd or /proc/self/fd/N of a host
	 * file the command inherited they would reach past the view): kept trapped */
	assert_int_equal(fast_of(AUDIT_ARCH_X86_64, "fchmodat"), SC_FAST_SAME);
	assert_int_equal(fast_of(AUDIT_ARCH_X86_64, "utimensat"), SC_FAST_SAME);
	assert_int_equal(fast_of(AUDIT_ARCH_X86_64, "mknodat"), SC_FAST_SAME);
	assert_string_equal(sc_mode_name(SC_MODE_NAMESPACED_NATIVE_WRITES), "namespaced-native-writes");
	assert_string_equal(sc_mode_name(SC_MODE_NAMESPACED_NATIVE_WRITES_UNMARKED),
			    "namespaced-native-writes-unmarked");
	assert_string_equal(sc_mode_name(SC_MODE_STRICT_HIDE), "namespaced-strict-hide");
	assert_string_equal(sc_mode_name(SC_MODE_NAMESPACED_CONTINUED), "namespaced-continued-opens");
	assert_null(sc_mode_name(_SC_MODE_MAX));
}

/* The access column, as the handlers and replay read it: one word per named object,
 * on the argument that names it, and only for rows the supervisor sees. */
static void test_access(void **state)
{
	static const struct {
		const char *name;
		int arg[2];                 /* first and second object argument, or -1 */
		enum sc_access access[2];
	} want[] = {
		{ "openat", { 1, -1 }, { SC_ACCESS_OPEN } },
		{ "openat2", { 1, -1 }, { SC_ACCESS_OPEN } },
		{ "newfstatat", { 1, -1 }, { SC_ACCESS_LOOK } },
		{ "faccessat2", { 1, -1 }, { SC_ACCESS_AMODE } },
		{ "mkdirat", { 1, -1 }, { SC_ACCESS_CREATE } },
		{ "unlinkat", { 1, -1 }, { SC_ACCESS_CREATE } },
		{ "renameat2", { 1, 3 }, { SC_ACCESS_CREATE, SC_ACCESS_CREATE } },
		{ "linkat", { 1, 3 }, { SC_ACCESS_READ, SC_ACCESS_CREATE } },
		{ "symlinkat", { 2, -1 }, { SC_ACCESS_CREATE } }, /* the target is text */
		{ "fchmodat", { 1, -1 }, { SC_ACCESS_WRITE } },
		{ "fchmod", { 0, -1 }, { SC_ACCESS_WRITE } },     /* the fd's file */
		{ "getxattr", { 0, -1 }, { SC_ACCESS_READ } },
		{ "removexattr", { 0, -1 }, { SC_ACCESS_WRITE } },
		{ "inotify_add_watch", { 1, -1 }, { SC_ACCESS_READ } },
		{ "execveat", { 1, -1 }, { SC_ACCESS_EXEC } },
		{ "chdir", { 0, -1 }, { SC_ACCESS_EXEC } },
		{ "connect", { 1, -1 }, { SC_ACCESS_CONNECT } },
		{ "sendto", { 4, -1 }, { SC_ACCESS_SEND } },
		{ "sendmsg", { 1, -1 }, { SC_ACCESS_SEND } },      /* in the msghdr */
		{ "bind", { 1, -1 }, { SC_ACCESS_BIND } },
		{ "listen", { 0, -1 }, { SC_ACCESS_BIND } },       /* the socket's own address */
		{ "getdents64", { -1, -1 }, { SC_ACCESS_NONE } },
		{ "read", { -1, -1 }, { SC_ACCESS_NONE } },
	};

	(void)state;
	for (size_t a = 0; a < N_ARCHES; a++) {
		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			const struct sc_entry *e = sc_by_name(arches[a], want[i].name);

			assert_non_null(e);
			for (unsigned k = 0; k < 2; k++) {
				assert_int_equal(sc_object_arg(e, k), want[i].arg[k]);
				if (want[i].arg[k] >= 0)
					assert_int_equal(e->access[want[i].arg[k]], want[i].access[k]);
			}
			assert_int_equal(sc_object_arg(e, 2), -1);
		}
		for (size_t i = 0; i < sc_count(arches[a]); i++) {
			const struct sc_entry *e = sc_at(arches[a], i);

			for (unsigned k = 0; k < SC_MAX_ARGS; k++) {
				assert_true(e->access[k] < _SC_ACCESS_MAX);
				if (k >= e->nargs || e->handling != SC_NOTIFY)
					assert_int_equal(e->access[k], SC_ACCESS_NONE);
				else if (e->arg[k] == SC_ARG_PATH || e->arg[k] == SC_ARG_SOCKADDR)
					assert_int_not_equal(e->access[k], SC_ACCESS_NONE);
			}
		}
	}
	assert_string_equal(sc_access_name(SC_ACCESS_CREATE), "create");
	assert_string_equal(sc_access_name(SC_ACCESS_NONE), "-");
	assert_null(sc_access_name(_SC_ACCESS_MAX));
	assert_int_equal(sc_object_arg(NULL, 0), -1);
}

static void test_category_names(void **state)
{
	char buf[64], tiny[4];

	assert_string_equal(sc_category_names(SC_CAT_FS | SC_CAT_FD, buf, sizeof(buf)), "fs,fd");
	assert_string_equal(sc_category_names(0, buf, sizeof(buf)), "");
	assert_string_equal(sc_category_names(SC_CAT_OTHER | 0x8000, buf, sizeof(buf)),
			    "other,0x8000");
	assert_string_equal(sc_category_names(SC_CAT_SECURITY, tiny, sizeof(tiny)), "sec");
	assert_string_equal(sc_arg_kind_name(SC_ARG_SOCKADDR), "sockaddr");
	assert_null(sc_arg_kind_name(_SC_ARG_KIND_MAX));
	assert_string_equal(sc_handling_name(SC_NOTIFY), "notify");
	assert_null(sc_handling_name(_SC_HANDLING_MAX));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arch_names),
		cmocka_unit_test(test_sorted_and_consistent),
		cmocka_unit_test(test_entries_well_formed),
		cmocka_unit_test(test_notify_has_object),
		cmocka_unit_test(test_ids_sorted),
		cmocka_unit_test(test_lookup_misses),
		cmocka_unit_test(test_policy),
		cmocka_unit_test(test_fast_path),
		cmocka_unit_test(test_access),
		cmocka_unit_test(test_category_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
