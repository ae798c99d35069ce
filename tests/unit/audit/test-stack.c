/* SPDX-License-Identifier: MIT */
/*
 * audit_stack_capture() against a child of our own that blocks in read(2) three named
 * calls deep: both methods must name those functions and the module they live in.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "audit.h"

__attribute__((noinline)) int stack_leaf(int fd);
__attribute__((noinline)) int stack_middle(int fd);
__attribute__((noinline)) int stack_top(int fd);

__attribute__((noinline)) int stack_leaf(int fd)
{
	char c;

	return (int)read(fd, &c, 1) + 1;
}

__attribute__((noinline)) int stack_middle(int fd)
{
	return stack_leaf(fd) * 3;
}

__attribute__((noinline)) int stack_top(int fd)
{
	return stack_middle(fd) + 7;
}

/* The child's pc and sp once it sleeps in read(2). */
static int wait_blocked(pid_t pid, uint64_t *ip, uint64_t *sp)
{
	char path[64], line[512];

	snprintf(path, sizeof(path), "/proc/%d/syscall", pid);
	for (int i = 0; i < 500; i++) {
		FILE *f = fopen(path, "r");
		long nr = -1;

		if (f && fgets(line, sizeof(line), f) && sscanf(line, "%ld", &nr) == 1 && nr >= 0) {
			char *last = strrchr(line, ' '), *prev;

			*last = '\0';
			prev = strrchr(line, ' ');
			*ip = strtoull(last + 1, NULL, 16);
			*sp = strtoull(prev + 1, NULL, 16);
			fclose(f);
			return 0;
		}
		if (f)
			fclose(f);
		usleep(2000);
	}
	return -ETIMEDOUT;
}

static void check(enum audit_stack_method method)
{
	int p[2];
	pid_t pid;
	uint64_t ip = 0, sp = 0;
	struct audit_frame frames[64];
	char strs[16384];
	bool leaf = false, middle = false, top = false, bid = false;
	struct timespec t0, t1;
	int n;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[1]);
		_exit(stack_top(p[0]));
	}
	close(p[0]);
	assert_int_equal(wait_blocked(pid, &ip, &sp), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	n = audit_stack_capture(pid, pid, ip, method == AUDIT_STACK_SCAN ? 0 : sp, method, frames,
				64, strs, sizeof(strs));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* The cost SCHEMA.md quotes; informative, never asserted. */
	print_message("# %s: %d frames in %ld us\n", method == AUDIT_STACK_SCAN ? "scan" : "ptrace",
		      n, (long)((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000));
	if (n == -EPERM) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		skip(); /* ptrace refused here (yama, container) */
	}
	for (int i = 0; i < n; i++) {
		const char *s = frames[i].symbol;

		if (i < 8)
			print_message("# %2d 0x%016" PRIx64 " %s+0x%" PRIx64 " %s %s\n", i, frames[i].ip,
			      s ? s : "?", frames[i].offset,
			      frames[i].module ? frames[i].module : "?",
			      frames[i].build_id ? frames[i].build_id : "-");
		leaf |= s && strcmp(s, "stack_leaf") == 0;
		middle |= s && strcmp(s, "stack_middle") == 0;
		top |= s && strcmp(s, "stack_top") == 0;
		bid |= frames[i].build_id != NULL;
		if (s && strcmp(s, "stack_leaf") == 0)
			assert_non_null(strstr(frames[i].module, "test-audit-stack"));
	}
	close(p[1]);
	waitpid(pid, NULL, 0);
	assert_true(n >= 4);
	assert_true(leaf && middle && top);
	assert_true(bid);
}

static void test_scan(void **state)
{
	check(AUDIT_STACK_SCAN);
}

static void test_ptrace(void **state)
{
	check(AUDIT_STACK_PTRACE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scan),
		cmocka_unit_test(test_ptrace),
	};

	return cmocka_run_group_tests_name("audit-stack", tests, NULL, NULL);
}
