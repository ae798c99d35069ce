/* SPDX-License-Identifier: MIT */
/*
 * cgroup.c's kill_descendants(): the test process becomes a child subreaper (as the
 * supervisor does), forks a tree with a setsid'ed double-forked orphan that is
 * re-parented to it, and checks from outside that every process is gone afterwards.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "cgroup.h"
#include "log.h"
#include "pipe-io.h"


static void sleep_forever(void)
{
	for (;;)
		pause();
}

static pid_t ppid_of(pid_t pid)
{
	char p[64], buf[512], *rp;
	FILE *f;
	size_t n;

	snprintf(p, sizeof(p), "/proc/%d/stat", pid);
	f = fopen(p, "re");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	rp = strrchr(buf, ')');
	return rp ? (pid_t)atoi(rp + 4) : -1;
}

/* Gone: after reaping what is ours, the pid does not exist. */
static void assert_gone(pid_t pid)
{
	while (waitpid(pid, NULL, WNOHANG) > 0)
		;
	errno = 0;
	if (kill(pid, 0) == 0 || errno != ESRCH)
		fail_msg("pid %d still exists after kill_descendants()", pid);
}

static void assert_alive(pid_t pid)
{
	assert_int_equal(kill(pid, 0), 0);
}

enum { N_PIDS = 5 };

/*
 * child C: forks grandchild G (sleeps), great-grandchild GG under G, and X, which setsid()s,
 * forks the orphan O and exits; C reaps X, so O is re-parented to the subreaper (us).
 * Reports C, G, GG, X, O.
 */
static void fork_tree(pid_t pids[N_PIDS])
{
	int fds[2];

	assert_int_equal(pipe(fds), 0);
	pids[0] = fork();
	assert_true(pids[0] >= 0);
	if (pids[0] == 0) {
		pid_t g, x, o;
		int ofd[2];

		close(fds[0]);
		if (pipe(ofd) < 0)
			_exit(98);
		g = fork();
		if (g == 0) {
			pid_t gg = fork();

			if (gg == 0)
				sleep_forever();
			write_all(ofd[1], &gg, sizeof(gg));
			sleep_forever();
		}
		x = fork();
		if (x == 0) {
			setsid();
			o = fork();
			if (o == 0)
				sleep_forever();
			write_all(ofd[1], &o, sizeof(o));
			_exit(0);
		}
		{
			pid_t me = getpid(), gg, got;

			/* Order of the two reports is not fixed: tell them apart by parent. */
			read_all(ofd[0], &gg, sizeof(gg));
			read_all(ofd[0], &got, sizeof(got));
			if (waitpid(x, NULL, 0) != x)
				_exit(97);
			if (ppid_of(gg) != g) {
				pid_t t = gg;
				gg = got;
				got = t;
			}
			o = got;
			write_all(fds[1], &me, sizeof(me));
			write_all(fds[1], &g, sizeof(g));
			write_all(fds[1], &gg, sizeof(gg));
			write_all(fds[1], &x, sizeof(x));
			write_all(fds[1], &o, sizeof(o));
		}
		sleep_forever();
	}
	close(fds[1]);
	read_all(fds[0], pids, N_PIDS * sizeof(pid_t));
	close(fds[0]);
}

static void test_tree_with_orphan(void **state)
{
	pid_t pids[N_PIDS];

	(void)state;
	fork_tree(pids);
	/* Preconditions: all but X alive, O re-parented to us, GG under G. */
	assert_alive(pids[0]);
	assert_alive(pids[1]);
	assert_alive(pids[2]);
	assert_alive(pids[4]);
	assert_int_equal(ppid_of(pids[1]), pids[0]);
	assert_int_equal(ppid_of(pids[2]), pids[1]);
	for (int i = 0; i < 500 && ppid_of(pids[4]) != getpid(); i++)
		usleep(2000);
	assert_int_equal(ppid_of(pids[4]), getpid());

	kill_descendants(getpid());

	assert_gone(pids[0]);
	assert_gone(pids[1]);
	assert_gone(pids[2]);
	assert_gone(pids[4]);
	/* Nothing at all is left under us. */
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

/* A child that keeps forking while it is being killed. */
static void test_forking_tree(void **state)
{
	int fds[2];
	pid_t c, first[64];
	int n = 0;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	c = fork();
	assert_true(c >= 0);
	if (c == 0) {
		close(fds[0]);
		for (int i = 0;; i++) {
			pid_t k = fork();

			if (k == 0) {
				/* Each child forks one more, then sleeps. */
				if (fork() == 0)
					sleep_forever();
				sleep_forever();
			}
			if (k > 0 && i < 64)
				write_all(fds[1], &k, sizeof(k));
			if (i == 63)
				close(fds[1]);
			if (i >= 64)
				usleep(1000);
		}
	}
	close(fds[1]);
	while (n < 64 && read(fds[0], &first[n], sizeof(pid_t)) == sizeof(pid_t))
		n++;
	close(fds[0]);
	assert_int_equal(n, 64);

	kill_descendants(getpid());

	assert_gone(c);
	for (int i = 0; i < n; i++)
		assert_gone(first[i]);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

/* Nothing to kill: returns at once. */
static void test_no_children(void **state)
{
	struct timespec a, b;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &a);
	kill_descendants(getpid());
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(b.tv_sec - a.tv_sec < 2);
}

/* After a failed assertion: leave nothing behind (with the function under test, for want
 * of another way to find re-parented orphans). */
static int teardown(void **state)
{
	(void)state;
	kill_descendants(getpid());
	return 0;
}

static int setup(void **state)
{
	(void)state;
	return prctl(PR_SET_CHILD_SUBREAPER, 1) == 0 ? 0 : -1;
}

int main(void)
{
	moat_log_level = LOG_LEVEL_ERR; /* errors only: the output is TAP */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_tree_with_orphan, teardown),
		cmocka_unit_test_teardown(test_forking_tree, teardown),
		cmocka_unit_test_teardown(test_no_children, teardown),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
