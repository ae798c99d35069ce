/* SPDX-License-Identifier: MIT */
/*
 * proc.c through proc_map_init()'s ops, on real processes: the test forks a keeper,
 * which forks a grandchild (with a thread) and a great-grandchild. The sandbox is the
 * keeper's descendants, never the keeper itself (a fork of the supervisor: docs/architecture.md)
 * and never anything outside.
 */
#include <errno.h>
#include <pthread.h>
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
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "log.h"
#include "pipe-io.h"
#include "proc-ops.h"


static int report_fd;

static void *thread_main(void *arg)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);

	(void)arg;
	write_all(report_fd, &tid, sizeof(tid));
	for (;;)
		pause();
	return NULL;
}

/* Die with our parent so that nothing outlives a failed test. */
static void die_with_parent(pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
}

struct tree {
	pid_t keeper, child, thread, grandchild;
};

/*
 * keeper -> child (+ a second thread) -> grandchild. Reports, in order, the child's pid,
 * its thread's tid and the grandchild's pid.
 */
static void fork_tree(struct tree *t)
{
	int fds[2];
	pid_t test = getpid();

	assert_int_equal(pipe(fds), 0);
	t->keeper = fork();
	assert_true(t->keeper >= 0);
	if (t->keeper == 0) {
		pid_t keeper = getpid(), child;

		die_with_parent(test);
		close(fds[0]);
		report_fd = fds[1];
		child = fork();
		if (child < 0)
			_exit(98);
		if (child == 0) {
			pthread_t th;
			pid_t me = getpid(), gc;

			die_with_parent(keeper);
			write_all(report_fd, &me, sizeof(me));
			if (pthread_create(&th, NULL, thread_main, NULL) != 0)
				_exit(97);
			/* Wait for the thread's report to go out first. */
			usleep(50 * 1000);
			gc = fork();
			if (gc < 0)
				_exit(96);
			if (gc == 0) {
				die_with_parent(me);
				for (;;)
					pause();
			}
			write_all(report_fd, &gc, sizeof(gc));
		}
		for (;;)
			pause();
	}
	close(fds[1]);
	read_all(fds[0], &t->child, sizeof(pid_t));
	read_all(fds[0], &t->thread, sizeof(pid_t));
	read_all(fds[0], &t->grandchild, sizeof(pid_t));
	close(fds[0]);
}

static void kill_tree(struct tree *t)
{
	kill(t->grandchild, SIGKILL);
	kill(t->child, SIGKILL);
	kill(t->keeper, SIGKILL);
	waitpid(t->keeper, NULL, 0);
}

/* What a failed assertion leaves behind, killed by the teardown. */
static pid_t live[4];

static int teardown(void **state)
{
	(void)state;
	for (size_t i = 0; i < 4; i++)
		if (live[i] > 0)
			kill(live[i], SIGKILL);
	for (size_t i = 0; i < 4; i++)
		if (live[i] > 0)
			waitpid(live[i], NULL, 0); /* only our own child, the keeper, is reaped */
	memset(live, 0, sizeof(live));
	return 0;
}

static void test_unnamespaced(void **state)
{
	struct proc_map m;
	const struct vfs_proc_ops *ops = proc_map_init(&m);
	struct tree t;
	void *ud = ops->userdata;

	(void)state;
	assert_ptr_equal(ud, &m);
	fork_tree(&t);
	live[0] = t.keeper;
	live[1] = t.child;
	live[2] = t.grandchild;
	assert_true(t.thread != t.child);

	/* Before launch (keeper 0) nothing belongs to the sandbox. */
	assert_int_equal(ops->to_host(ud, t.child), -ESRCH);
	assert_int_equal(ops->to_sandbox(ud, t.child), -ESRCH);

	m.keeper = t.keeper;
	m.namespaced = false;

	/* Descendants are in the sandbox, at any depth, threads included. */
	assert_int_equal(ops->to_host(ud, t.child), t.child);
	assert_int_equal(ops->to_sandbox(ud, t.child), t.child);
	assert_int_equal(ops->to_host(ud, t.grandchild), t.grandchild);
	assert_int_equal(ops->to_sandbox(ud, t.grandchild), t.grandchild);
	assert_int_equal(ops->to_host(ud, t.thread), t.thread);
	assert_int_equal(ops->to_sandbox(ud, t.thread), t.thread);

	/* Security property: the keeper is a fork of the supervisor, not the sandbox. */
	assert_int_equal(ops->to_host(ud, t.keeper), -ESRCH);
	assert_int_equal(ops->to_sandbox(ud, t.keeper), -ESRCH);

	/* Nothing outside: the test itself (the keeper's parent), init, bogus pids. */
	assert_int_equal(ops->to_host(ud, getpid()), -ESRCH);
	assert_int_equal(ops->to_sandbox(ud, getpid()), -ESRCH);
	assert_int_equal(ops->to_host(ud, getppid()), -ESRCH);
	assert_int_equal(ops->to_host(ud, 1), -ESRCH);
	assert_int_equal(ops->to_sandbox(ud, 1), -ESRCH);
	assert_int_equal(ops->to_host(ud, 0), -ESRCH);
	assert_int_equal(ops->to_sandbox(ud, 0), -ESRCH);
	assert_int_equal(ops->to_host(ud, -1), -ESRCH);
	assert_int_equal(ops->to_sandbox(ud, -1), -ESRCH);
	assert_int_equal(ops->to_host(ud, 0x7fffffff), -ESRCH);

	/* A keeper of a different tree owns nothing of this one. */
	m.keeper = t.grandchild;
	assert_int_equal(ops->to_host(ud, t.child), -ESRCH);
	assert_int_equal(ops->to_host(ud, t.grandchild), -ESRCH);
	m.keeper = t.child;
	assert_int_equal(ops->to_host(ud, t.grandchild), t.grandchild);
	assert_int_equal(ops->to_host(ud, t.child), -ESRCH);
	/* The child's own thread is the keeper's process, not a descendant of it. */
	assert_int_equal(ops->to_host(ud, t.thread), -ESRCH);
	m.keeper = t.keeper;

	/* Once a process is gone it is no longer in the sandbox. */
	kill(t.grandchild, SIGKILL);
	for (int i = 0; i < 500 && ops->to_host(ud, t.grandchild) != -ESRCH; i++)
		usleep(2000); /* a zombie of the child keeps its /proc entry and its parent */
	kill_tree(&t);
	memset(live, 0, sizeof(live));
	assert_int_equal(ops->to_host(ud, t.child), -ESRCH);
}

/*
 * Namespaced: the keeper unshares a user and pid namespace; its first child is pid 1
 * there, the grandchild pid 2. to_host maps namespace pids to host pids, to_sandbox back.
 */
static void test_namespaced(void **state)
{
	struct proc_map m;
	const struct vfs_proc_ops *ops = proc_map_init(&m);
	void *ud = ops->userdata;
	int fds[2];
	pid_t keeper, init = 0, second = 0, test = getpid();
	int status;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	keeper = fork();
	assert_true(keeper >= 0);
	if (keeper == 0) {
		pid_t c;

		die_with_parent(test);
		close(fds[0]);
		if (unshare(CLONE_NEWUSER | CLONE_NEWPID) < 0) {
			c = -errno;
			write_all(fds[1], &c, sizeof(c));
			_exit(0);
		}
		c = fork();
		if (c < 0)
			_exit(98);
		if (c == 0) {
			pid_t gc;

			/* The keeper's pid is 0 in here (getppid() outside the namespace): no
			 * check, just die with it; its namespace's processes die with init. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			gc = fork();

			if (gc == 0) {
				for (;;)
					pause();
			}
			for (;;)
				pause();
		}
		write_all(fds[1], &c, sizeof(c));
		for (;;)
			pause();
	}
	live[0] = keeper;
	close(fds[1]);
	read_all(fds[0], &init, sizeof(init));
	close(fds[0]);
	if (init < 0) {
		waitpid(keeper, &status, 0);
		live[0] = 0;
		skip(); /* no user namespaces here */
	}
	live[1] = init;
	/* The grandchild's host pid, from outside: the only child of init. */
	for (int i = 0; i < 500 && second <= 0; i++) {
		char p[64], buf[64] = "";
		FILE *f;

		snprintf(p, sizeof(p), "/proc/%d/task/%d/children", init, init);
		f = fopen(p, "re");
		if (f) {
			if (fgets(buf, sizeof(buf), f))
				second = (pid_t)atoi(buf);
			fclose(f);
		}
		if (second <= 0)
			usleep(2000);
	}
	assert_true(second > 0);

	m.keeper = keeper;
	m.namespaced = true;
	assert_int_equal(ops->to_host(ud, 1), init);
	assert_int_equal(ops->to_sandbox(ud, init), 1);
	assert_int_equal(ops->to_host(ud, 2), second);
	assert_int_equal(ops->to_sandbox(ud, second), 2);
	assert_int_equal(ops->to_host(ud, 3), -ESRCH);
	assert_int_equal(ops->to_host(ud, 0), -ESRCH);
	/* The keeper and the outside stay hidden in this mode too. */
	assert_int_equal(ops->to_sandbox(ud, keeper), -ESRCH);
	assert_int_equal(ops->to_sandbox(ud, getpid()), -ESRCH);
	assert_int_equal(ops->to_sandbox(ud, 1), -ESRCH);

	kill(keeper, SIGKILL); /* init dies with it (PDEATHSIG is not needed: pid ns) */
	kill(init, SIGKILL);
	waitpid(keeper, NULL, 0);
	memset(live, 0, sizeof(live));
}

int main(void)
{
	moat_log_level = LOG_LEVEL_ERR; /* errors only: the output is TAP */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_unnamespaced, teardown),
		cmocka_unit_test_teardown(test_namespaced, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
