/* SPDX-License-Identifier: MIT */
/*
 * The numbers in data/syscalls.csv against two independent sources: libseccomp's
 * resolver (what the filter is built with) and the build host's <asm/unistd.h>
 * (what the kernel headers say), as strace's tests/ksysent.c does.
 */
#include <asm/unistd.h>
#include <linux/audit.h>
#include <seccomp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sc.h"

/* Every number libseccomp tabulates on x86_64 and aarch64 is below this. */
#define PROBE_MAX 1024

static const struct {
	uint32_t audit_arch;
	uint32_t scmp_arch;
} abis[] = {
	{ AUDIT_ARCH_X86_64, SCMP_ARCH_X86_64 },
	{ AUDIT_ARCH_AARCH64, SCMP_ARCH_AARCH64 },
};

/* Each table entry has libseccomp's number for its name, and the number maps back. */
static void check_against_libseccomp(uint32_t audit_arch, uint32_t scmp_arch)
{
	size_t n = sc_count(audit_arch), bad = 0;

	assert_true(n > 250);
	for (size_t i = 0; i < n; i++) {
		const struct sc_entry *e = sc_at(audit_arch, i);
		int nr = seccomp_syscall_resolve_name_arch(scmp_arch, e->name);
		char *back = seccomp_syscall_resolve_num_arch(scmp_arch, e->nr);

		if (nr != e->nr || !back || strcmp(back, e->name) != 0) {
			print_error("%s %s: table %d, libseccomp %d (%d -> %s)\n",
				    sc_arch_name(audit_arch), e->name, e->nr, nr, e->nr,
				    back ? back : "?");
			bad++;
		}
		free(back);
	}
	assert_int_equal(bad, 0);
}

/* And the other way: nothing libseccomp knows on the ABI is missing from the table. */
static void check_libseccomp_complete(uint32_t audit_arch, uint32_t scmp_arch)
{
	size_t bad = 0, seen = 0;

	for (int nr = 0; nr < PROBE_MAX; nr++) {
		char *name = seccomp_syscall_resolve_num_arch(scmp_arch, nr);
		const struct sc_entry *e;

		if (!name)
			continue;
		seen++;
		e = sc_lookup(audit_arch, nr);
		if (!e || strcmp(e->name, name) != 0) {
			print_error("%s nr %d: libseccomp %s, table %s\n", sc_arch_name(audit_arch),
				    nr, name, e ? e->name : "(none)");
			bad++;
		}
		free(name);
	}
	assert_int_equal(seen, sc_count(audit_arch));
	assert_int_equal(bad, 0);
}

static void test_x86_64_libseccomp(void **state)
{
	check_against_libseccomp(AUDIT_ARCH_X86_64, SCMP_ARCH_X86_64);
	check_libseccomp_complete(AUDIT_ARCH_X86_64, SCMP_ARCH_X86_64);
}

static void test_aarch64_libseccomp(void **state)
{
	check_against_libseccomp(AUDIT_ARCH_AARCH64, SCMP_ARCH_AARCH64);
	check_libseccomp_complete(AUDIT_ARCH_AARCH64, SCMP_ARCH_AARCH64);
}

/*
 * A name on no ABI is a row kept for its policy until libseccomp knows it. If
 * libseccomp does know it by now, gen/refresh-csv.py has not been run.
 */
static void test_numberless_rows_unknown_to_libseccomp(void **state)
{
	for (int id = 0; id < _SC_ID_MAX; id++) {
		bool anywhere = false;

		for (size_t a = 0; a < sizeof(abis) / sizeof(abis[0]); a++)
			anywhere |= sc_by_id(abis[a].audit_arch, (enum sc_id)id) != NULL;
		if (anywhere)
			continue;
		for (size_t a = 0; a < sizeof(abis) / sizeof(abis[0]); a++) {
			int nr = seccomp_syscall_resolve_name_arch(abis[a].scmp_arch,
								   sc_id_name((enum sc_id)id));
			if (nr >= 0)
				print_error("%s is known to libseccomp now: run gen/refresh-csv.py\n",
					    sc_id_name((enum sc_id)id));
			assert_true(nr < 0);
		}
	}
}

static const struct {
	const char *name;
	long nr;
} ksysent[] = {
#define SC_KSYSENT(n) { #n, __NR_##n },
#include "sc-ksysent.h"
#undef SC_KSYSENT
};

static void test_host_unistd(void **state)
{
	uint32_t arch = sc_native_arch();
	size_t bad = 0;

	if (!sc_arch_name(arch))
		skip(); /* the build host is not a tabulated ABI */
	/* A broad check, not a handful: the host header must know most of the table. */
	assert_true(sizeof(ksysent) / sizeof(ksysent[0]) > 250);
	for (size_t i = 0; i < sizeof(ksysent) / sizeof(ksysent[0]); i++) {
		const struct sc_entry *e = sc_by_name(arch, ksysent[i].name);

		if (!e || e->nr != ksysent[i].nr) {
			print_error("%s: <asm/unistd.h> %ld, table %d\n", ksysent[i].name,
				    ksysent[i].nr, e ? e->nr : -1);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_x86_64_libseccomp),
		cmocka_unit_test(test_aarch64_libseccomp),
		cmocka_unit_test(test_numberless_rows_unknown_to_libseccomp),
		cmocka_unit_test(test_host_unistd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
