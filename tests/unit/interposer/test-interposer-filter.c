/* SPDX-License-Identifier: MIT */
/*
 * sup_filter_notifies() against the filters themselves: each of the filters is
 * built as moat builds it (sup_filter_build()) and its classic BPF program is run here,
 * in a small interpreter, over every row of the syscall table with a few argument
 * vectors. A row the program sends to the supervisor for some vector must be one the
 * predicate names (else dispatch's check that every such row has a handler would miss
 * it), and a row the predicate names must reach the supervisor for some vector.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <cmocka.h>

#include "launch.h"
#include "sc.h"

/* The classic BPF a seccomp filter may hold (the kernel's seccomp_check_filter()). An
 * instruction outside it fails the test: the interpreter must never guess. */
static uint32_t run_bpf(const struct sock_fprog *prog, const struct seccomp_data *d)
{
	uint32_t A = 0, X = 0, M[BPF_MEMWORDS] = { 0 };

	for (unsigned pc = 0; pc < prog->len; pc++) {
		const struct sock_filter *f = &prog->filter[pc];
		uint32_t src = BPF_SRC(f->code) == BPF_X ? X : f->k;
		bool jump;

		switch (BPF_CLASS(f->code)) {
		case BPF_LD:
			if (f->code == (BPF_LD | BPF_W | BPF_ABS)) {
				assert_true(f->k % 4 == 0 && f->k < sizeof(*d));
				memcpy(&A, (const char *)d + f->k, sizeof(A));
			} else if (f->code == (BPF_LD | BPF_IMM)) {
				A = f->k;
			} else if (f->code == (BPF_LD | BPF_MEM)) {
				assert_true(f->k < BPF_MEMWORDS);
				A = M[f->k];
			} else {
				fail_msg("BPF_LD code %#x", f->code);
			}
			break;
		case BPF_LDX:
			if (f->code == (BPF_LDX | BPF_IMM))
				X = f->k;
			else if (f->code == (BPF_LDX | BPF_MEM) && f->k < BPF_MEMWORDS)
				X = M[f->k];
			else
				fail_msg("BPF_LDX code %#x", f->code);
			break;
		case BPF_ST:
		case BPF_STX:
			assert_true(f->k < BPF_MEMWORDS);
			M[f->k] = BPF_CLASS(f->code) == BPF_ST ? A : X;
			break;
		case BPF_ALU:
			switch (BPF_OP(f->code)) {
			case BPF_AND: A &= src; break;
			case BPF_OR: A |= src; break;
			case BPF_ADD: A += src; break;
			case BPF_SUB: A -= src; break;
			case BPF_LSH: A = src < 32 ? A << src : 0; break;
			case BPF_RSH: A = src < 32 ? A >> src : 0; break;
			case BPF_NEG: A = -A; break;
			default: fail_msg("BPF_ALU code %#x", f->code);
			}
			break;
		case BPF_JMP:
			if (BPF_OP(f->code) == BPF_JA) {
				pc += f->k;
				break;
			}
			switch (BPF_OP(f->code)) {
			case BPF_JEQ: jump = A == src; break;
			case BPF_JGT: jump = A > src; break;
			case BPF_JGE: jump = A >= src; break;
			case BPF_JSET: jump = (A & src) != 0; break;
			default: fail_msg("BPF_JMP code %#x", f->code); return 0;
			}
			pc += jump ? f->jt : f->jf;
			break;
		case BPF_RET:
			return BPF_RVAL(f->code) == BPF_A ? A : f->k;
		case BPF_MISC:
			if (BPF_MISCOP(f->code) == BPF_TAX)
				X = A;
			else
				A = X;
			break;
		default:
			fail_msg("BPF code %#x", f->code);
		}
	}
	fail_msg("the program ran off its end");
	return 0;
}

/* Argument vectors that reach every argument rule add_arg_rules() writes: all zero (the
 * caller's own pid, send() without an address), all one (another pid, an address,
 * PRIO_PGRP), all PR_SET_NAME (prctl's one notified option), all O_PATH (the one open
 * flag that keeps an open trapped where creates are native), all S_ISUID (a set-id
 * create mode, which does too). */
static const uint64_t vectors[] = { 0, 1, PR_SET_NAME, O_PATH, S_ISUID };

static bool notified_by(const struct sock_fprog *prog, uint32_t arch, const struct sc_entry *e)
{
	for (size_t v = 0; v < sizeof(vectors) / sizeof(vectors[0]); v++) {
		struct seccomp_data d = { .nr = e->nr, .arch = arch };

		for (unsigned i = 0; i < 6; i++)
			d.args[i] = vectors[v];
		if ((run_bpf(prog, &d) & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_USER_NOTIF)
			return true;
	}
	return false;
}

static void test_predicate_matches_filter(void **state)
{
	uint32_t arch = sc_native_arch();

	(void)state;
	for (enum sup_filter_kind k = 0; k < _SUP_FILTER_MAX; k++) {
		struct sock_fprog prog = { 0 };
		size_t notified = 0;

		assert_int_equal(sup_filter_build(arch, k, &prog), 0);
		assert_true(prog.len > 0);
		for (size_t i = 0; i < sc_count(arch); i++) {
			const struct sc_entry *e = sc_at(arch, i);
			bool filter = notified_by(&prog, arch, e), predicate = sup_filter_notifies(e, k);

			if (filter != predicate)
				fail_msg("filter %d, %s: the filter %s it, sup_filter_notifies() says %s",
					 (int)k, e->name, filter ? "notifies" : "does not notify",
					 predicate ? "yes" : "no");
			notified += filter;
		}
		assert_true(notified > 20);
		/* the interpreter itself: a native call runs, an unknown number is refused */
		{
			struct seccomp_data d = { .nr = sc_by_id(arch, SC_read)->nr, .arch = arch };

			assert_int_equal(run_bpf(&prog, &d), SECCOMP_RET_ALLOW);
			d.nr = 1023;
			assert_int_equal(run_bpf(&prog, &d), SECCOMP_RET_ERRNO | ENOSYS);
		}
		free(prog.filter);
	}
}

/* The modes differ where the table says they do. */
static void test_modes(void **state)
{
	uint32_t arch = sc_native_arch();
	const struct sc_entry *stat = sc_by_id(arch, SC_newfstatat),
			      *openat = sc_by_id(arch, SC_openat),
			      *shmget = sc_by_id(arch, SC_shmget),
			      *prctl = sc_by_id(arch, SC_prctl),
			      *read = sc_by_id(arch, SC_read);

	(void)state;
	assert_false(sup_filter_notifies(stat, SUP_FILTER_NAMESPACED));
	assert_true(sup_filter_notifies(stat, SUP_FILTER_STRICT_HIDE));
	assert_true(sup_filter_notifies(stat, SUP_FILTER_UNNAMESPACED));
	for (enum sup_filter_kind k = 0; k < _SUP_FILTER_MAX; k++) {
		assert_true(sup_filter_notifies(openat, k));
		assert_true(sup_filter_notifies(prctl, k));
		assert_false(sup_filter_notifies(read, k));
		assert_false(sup_filter_notifies(shmget, k));
	}
}

static uint32_t openat_action(const struct sock_fprog *prog, uint32_t arch, uint64_t flags)
{
	struct seccomp_data d = { .nr = sc_by_id(arch, SC_openat)->nr, .arch = arch };

	d.args[0] = (uint64_t)AT_FDCWD;
	d.args[2] = flags;
	return run_bpf(prog, &d) & SECCOMP_RET_ACTION_FULL;
}

/* With the stubs marked, a read-only openat runs natively; every flag that
 * vfs_open_decide() sends to the supervisor keeps it trapped, whatever else is set
 * (upper register bits included: the kernel reads an int). Without the marks every
 * openat is trapped, to be continued. */
static void test_native_ro_opens(void **state)
{
	uint32_t arch = sc_native_arch();
	struct sock_fprog fast = { 0 }, cont = { 0 };
	static const uint64_t native[] = { O_RDONLY, O_RDONLY | O_CLOEXEC | O_DIRECTORY,
					   O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_LARGEFILE,
					   O_EXCL | O_APPEND | O_DSYNC | O_NOATIME };
	static const uint64_t trapped[] = { O_WRONLY, O_RDWR, O_ACCMODE, O_CREAT, O_TRUNC,
					    O_TMPFILE, O_PATH, O_PATH | O_CLOEXEC,
					    O_CREAT | O_EXCL | O_CLOEXEC, (1ull << 32) | O_WRONLY };

	(void)state;
	assert_int_equal(sup_filter_build(arch, SUP_FILTER_NATIVE_OPEN, &fast), 0);
	assert_int_equal(sup_filter_build(arch, SUP_FILTER_NAMESPACED, &cont), 0);
	for (size_t i = 0; i < sizeof(native) / sizeof(native[0]); i++) {
		assert_int_equal(openat_action(&fast, arch, native[i]), SECCOMP_RET_ALLOW);
		assert_int_equal(openat_action(&cont, arch, native[i]), SECCOMP_RET_USER_NOTIF);
	}
	for (size_t i = 0; i < sizeof(trapped) / sizeof(trapped[0]); i++) {
		assert_int_equal(openat_action(&fast, arch, trapped[i]), SECCOMP_RET_USER_NOTIF);
		assert_int_equal(openat_action(&cont, arch, trapped[i]), SECCOMP_RET_USER_NOTIF);
	}
	/* openat2's flags are in memory: trapped whatever the registers say */
	{
		struct seccomp_data d = { .nr = sc_by_id(arch, SC_openat2)->nr, .arch = arch };

		assert_int_equal(run_bpf(&fast, &d) & SECCOMP_RET_ACTION_FULL, SECCOMP_RET_USER_NOTIF);
	}
	free(fast.filter);
	free(cont.filter);
}

/* A native create asking for a set-id mode goes to the supervisor, which drops the bits. */
static void setid_creates_trapped(const struct sock_fprog *prog, uint32_t arch)
{
	struct seccomp_data d = { .nr = sc_by_id(arch, SC_openat)->nr, .arch = arch };

	d.args[2] = O_WRONLY | O_CREAT;
	d.args[3] = 0755;
	assert_int_equal(run_bpf(prog, &d) & SECCOMP_RET_ACTION_FULL, SECCOMP_RET_ALLOW);
	d.args[3] = 04755;
	assert_int_equal(run_bpf(prog, &d) & SECCOMP_RET_ACTION_FULL, SECCOMP_RET_USER_NOTIF);
	d.args[3] = 02755;
	assert_int_equal(run_bpf(prog, &d) & SECCOMP_RET_ACTION_FULL, SECCOMP_RET_USER_NOTIF);
}

/* Where nothing asks for the change set, opens of any flags but O_PATH are native, and
 * so are mkdir, rmdir, unlink and exec; renames (they would carry a hidden path out from
 * under its rule), links and symlinks (a second name for a hidden name that does not
 * exist yet) and what Landlock does not govern (chmod, utimes, mknod) stay trapped. */
static void test_native_writes(void **state)
{
	uint32_t arch = sc_native_arch();
	struct sock_fprog w = { 0 }, o = { 0 };
	static const uint64_t native[] = { O_RDONLY, O_WRONLY, O_RDWR | O_CREAT | O_TRUNC,
					   O_CREAT | O_EXCL | O_CLOEXEC, O_TMPFILE | O_RDWR,
					   (1ull << 32) | O_WRONLY };
	static const uint64_t trapped[] = { O_PATH, O_PATH | O_CLOEXEC | O_DIRECTORY,
					    (1ull << 32) | O_PATH };
	static const int nat_ids[] = { SC_unlinkat, SC_mkdirat, SC_execve, SC_execveat };
	static const int kept_ids[] = { SC_renameat2, SC_linkat, SC_symlinkat, SC_fchmodat, SC_utimensat, SC_mknodat,
					SC_fchownat, SC_openat2, SC_chdir, SC_connect };

	(void)state;
	assert_int_equal(sup_filter_build(arch, SUP_FILTER_NATIVE_WRITE, &w), 0);
	assert_int_equal(sup_filter_build(arch, SUP_FILTER_NATIVE_OPEN, &o), 0);
	for (size_t i = 0; i < sizeof(native) / sizeof(native[0]); i++)
		assert_int_equal(openat_action(&w, arch, native[i]), SECCOMP_RET_ALLOW);
	for (size_t i = 0; i < sizeof(trapped) / sizeof(trapped[0]); i++)
		assert_int_equal(openat_action(&w, arch, trapped[i]), SECCOMP_RET_USER_NOTIF);
	setid_creates_trapped(&w, arch);
	for (size_t i = 0; i < sizeof(nat_ids) / sizeof(nat_ids[0]); i++) {
		const struct sc_entry *e = sc_by_id(arch, nat_ids[i]);

		assert_false(notified_by(&w, arch, e));
		assert_true(notified_by(&o, arch, e));
	}
	for (size_t i = 0; i < sizeof(kept_ids) / sizeof(kept_ids[0]); i++)
		assert_true(notified_by(&w, arch, sc_by_id(arch, kept_ids[i])));
	free(w.filter);
	free(o.filter);
}

/* Without the stubs' marks (moat not started by root) the writes are native as above,
 * but a read-only open (none of the write bits, whatever else is set) and O_PATH stay
 * trapped, to be checked and continued. A hidden symlink sends the command back to the
 * filter that traps the writes, opens as they were. */
static void test_native_writes_unmarked(void **state)
{
	uint32_t arch = sc_native_arch();
	struct sock_fprog u = { 0 }, w = { 0 };
	static const uint64_t native[] = { O_WRONLY, O_RDWR, O_RDWR | O_CREAT | O_TRUNC,
					   O_CREAT | O_EXCL | O_CLOEXEC, O_RDONLY | O_TRUNC,
					   O_RDONLY | O_CREAT, O_TMPFILE | O_RDWR,
					   (1ull << 32) | O_WRONLY };
	static const uint64_t trapped[] = { O_RDONLY, O_RDONLY | O_CLOEXEC | O_DIRECTORY,
					    O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_LARGEFILE,
					    O_EXCL | O_APPEND | O_DSYNC | O_NOATIME,
					    (1ull << 32) | O_RDONLY, O_PATH, O_PATH | O_WRONLY,
					    O_PATH | O_CLOEXEC | O_DIRECTORY };
	static const int nat_ids[] = { SC_unlinkat, SC_mkdirat, SC_execve, SC_execveat };
	static const int kept_ids[] = { SC_renameat2, SC_linkat, SC_symlinkat, SC_fchmodat,
					SC_utimensat, SC_mknodat, SC_fchownat, SC_openat2, SC_chdir,
					SC_connect };

	(void)state;
	assert_int_equal(sup_filter_build(arch, SUP_FILTER_NATIVE_WRITE_UNMARKED, &u), 0);
	assert_int_equal(sup_filter_build(arch, SUP_FILTER_NATIVE_WRITE, &w), 0);
	for (size_t i = 0; i < sizeof(native) / sizeof(native[0]); i++)
		assert_int_equal(openat_action(&u, arch, native[i]), SECCOMP_RET_ALLOW);
	for (size_t i = 0; i < sizeof(trapped) / sizeof(trapped[0]); i++)
		assert_int_equal(openat_action(&u, arch, trapped[i]), SECCOMP_RET_USER_NOTIF);
	setid_creates_trapped(&u, arch);
	for (size_t i = 0; i < sizeof(nat_ids) / sizeof(nat_ids[0]); i++)
		assert_false(notified_by(&u, arch, sc_by_id(arch, nat_ids[i])));
	for (size_t i = 0; i < sizeof(kept_ids) / sizeof(kept_ids[0]); i++)
		assert_true(notified_by(&u, arch, sc_by_id(arch, kept_ids[i])));
	/* where the marks are, the read-only opens are native instead */
	assert_int_equal(openat_action(&w, arch, O_RDONLY), SECCOMP_RET_ALLOW);
	assert_int_equal(sup_filter_writes_trapped(SUP_FILTER_NATIVE_WRITE_UNMARKED),
			 SUP_FILTER_NAMESPACED);
	assert_int_equal(sup_filter_writes_trapped(SUP_FILTER_NATIVE_WRITE), SUP_FILTER_NATIVE_OPEN);
	assert_int_equal(sup_filter_writes_trapped(SUP_FILTER_NAMESPACED), SUP_FILTER_NAMESPACED);
	free(u.filter);
	free(w.filter);
}

static uint32_t confine_action(const struct sock_fprog *p, long nr, uint64_t arg0)
{
	struct seccomp_data d = { .nr = (int)nr, .arch = sc_native_arch(), .args = { arg0 } };

	return run_bpf(p, &d);
}

/* The supervisor's own filter as moat links it (compiled at build time) is the one the
 * build function makes, and refuses what confine.c says it refuses. */
static void test_confine(void **state)
{
	(void)state;
	for (int unmount = 0; unmount <= 1; unmount++) {
		struct sock_fprog linked, built = { 0 };

		sup_confine_precompiled(unmount, &linked);
		assert_int_equal(sup_confine_build(unmount, &built), 0);
		assert_int_equal(linked.len, built.len);
		assert_memory_equal(linked.filter, built.filter, built.len * sizeof(*built.filter));
		free(built.filter);

		assert_int_equal(confine_action(&linked, SYS_getpid, 0), SECCOMP_RET_ALLOW);
		assert_int_equal(confine_action(&linked, SYS_execve, 0),
				 SECCOMP_RET_ERRNO | EPERM);
		assert_int_equal(confine_action(&linked, SYS_mount, 0), SECCOMP_RET_ERRNO | EPERM);
		assert_int_equal(confine_action(&linked, SYS_umount2, 0),
				 unmount ? SECCOMP_RET_ALLOW : SECCOMP_RET_ERRNO | EPERM);
		assert_int_equal(confine_action(&linked, SYS_clone3, 0),
				 SECCOMP_RET_ERRNO | ENOSYS);
		assert_int_equal(confine_action(&linked, SYS_clone, CLONE_NEWUSER | SIGCHLD),
				 SECCOMP_RET_ERRNO | EPERM);
		assert_int_equal(confine_action(&linked, SYS_clone, SIGCHLD), SECCOMP_RET_ALLOW);
		assert_int_equal(confine_action(&linked, SYS_unshare, CLONE_FS), SECCOMP_RET_ALLOW);
		assert_int_equal(confine_action(&linked, SYS_unshare, CLONE_NEWNS),
				 SECCOMP_RET_ERRNO | EPERM);
#if defined(__x86_64__)
		/* as libseccomp built it at run time: i386 calls (int 0x80) of the x86_64
		 * supervisor, whose numbers mean other calls, and x32 ones are killed */
		{
			struct seccomp_data d = { .nr = 11 /* i386 execve */,
						  .arch = AUDIT_ARCH_I386 };
			uint32_t a = run_bpf(&linked, &d) & SECCOMP_RET_ACTION_FULL;

			assert_true(a == SECCOMP_RET_KILL_PROCESS || a == SECCOMP_RET_KILL_THREAD);
			d = (struct seccomp_data){ .nr = (int)(0x40000000 | SYS_execve),
						   .arch = sc_native_arch() };
			a = run_bpf(&linked, &d) & SECCOMP_RET_ACTION_FULL;
			assert_true(a != SECCOMP_RET_ALLOW);
		}
#endif
	}
}

/* Every filter as moat links it is the one the build function makes; a number the table
 * does not know fails with ENOSYS wherever it lies (a hole in the numbering, past the
 * end, far past it), a known one never does but where the table refuses it so (SysV IPC
 * unnamespaced), and another architecture or x86_64's x32 numbers are killed. */
static void test_unknown_numbers(void **state)
{
	uint32_t arch = sc_native_arch();

	(void)state;
	for (enum sup_filter_kind k = 0; k < _SUP_FILTER_MAX; k++) {
		struct sock_fprog linked, built = { 0 };
		size_t unknown = 0;

		assert_int_equal(sup_filter_precompiled(k, &linked), 0);
		assert_int_equal(sup_filter_build(arch, k, &built), 0);
		assert_int_equal(linked.len, built.len);
		assert_memory_equal(linked.filter, built.filter, built.len * sizeof(*built.filter));
		free(built.filter);
		for (uint32_t nr = 0; nr < 4096; nr++) {
			struct seccomp_data d = { .nr = (int)nr, .arch = arch };
			const struct sc_entry *e = sc_lookup(arch, (int)nr);
			uint32_t a = run_bpf(&linked, &d);

			if (!e) {
				unknown++;
				if (a != (SECCOMP_RET_ERRNO | ENOSYS))
					fail_msg("filter %d: unknown number %u: %#x", (int)k, nr, a);
			} else if (a == (SECCOMP_RET_ERRNO | ENOSYS) && e->deny_errno != ENOSYS &&
				   !(k == SUP_FILTER_UNNAMESPACED && e->unns_enosys)) {
				fail_msg("filter %d: %s refused as unknown", (int)k, e->name);
			}
		}
		assert_true(unknown > 0);
		{
			struct seccomp_data d = { .nr = 0x3fffffff, .arch = arch }; /* below x32 */

			assert_int_equal(run_bpf(&linked, &d), SECCOMP_RET_ERRNO | ENOSYS);
		}
#if defined(__x86_64__)
		{
			struct seccomp_data d = { .nr = 11, .arch = AUDIT_ARCH_I386 };

			assert_int_equal(run_bpf(&linked, &d) & SECCOMP_RET_ACTION_FULL,
					 SECCOMP_RET_KILL_PROCESS);
			d = (struct seccomp_data){ .nr = (int)(0x40000000 | SYS_read), .arch = arch };
			assert_int_equal(run_bpf(&linked, &d) & SECCOMP_RET_ACTION_FULL,
					 SECCOMP_RET_KILL_PROCESS);
		}
#endif
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_predicate_matches_filter),
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_native_ro_opens),
		cmocka_unit_test(test_native_writes),
		cmocka_unit_test(test_native_writes_unmarked),
		cmocka_unit_test(test_confine),
		cmocka_unit_test(test_unknown_numbers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
