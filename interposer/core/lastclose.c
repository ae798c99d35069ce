/* SPDX-License-Identifier: MIT */
/*
 * lastclose: a process of ours that makes the last close of some files after our exit
 * (lastclose.h says why and what it may do).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lastclose.h"
#include "macros.h"

/* What the middle process and the helper read: written before the clone, never after
 * (both share our memory). keep[] is sorted. */
static struct {
	int keep[LASTCLOSE_MAX + 1];
	size_t n;
	int pipe_r;
} H;

/* Their stacks: the middle one's is used while we wait in clone(CLONE_VFORK), the
 * helper's by the helper alone. */
static char mid_stack[16384] __attribute__((aligned(64)));
static char helper_stack[16384] __attribute__((aligned(64)));

/*
 * The helper and the middle process run in our memory on their own stacks, with the
 * thread pointer of the thread that made them: only raw system calls (libc's syscall()
 * and clone() touch no thread state but errno, and only on an error: close_range() of
 * ranges of valid bounds and a read() that only blocked signals could interrupt return
 * none; the middle process's clone() may, and writes the errno of our thread, which
 * waits in clone(CLONE_VFORK) meanwhile and then reads its exit status instead), and
 * none of the compiler's instrumentation (the sanitizers' runtime and the stack
 * protector keep their state per thread).
 */
#define RAW_CHILD __attribute__((noinline, no_sanitize_address, no_sanitize_undefined, \
				 no_stack_protector))

static RAW_CHILD int helper_main(void *arg)
{
	char c;

	(void)arg;
	(void)syscall(SYS_prctl, PR_SET_NAME, "moat-lastclose", 0, 0, 0);
	/* read, write, exit: whatever it runs from here, it acts on its few fds only */
	(void)syscall(SYS_prctl, PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0);
	while (syscall(SYS_read, H.pipe_r, &c, 1) > 0)
		;
	return 0; /* clone()'s exit(2): the files' last close, and its wait, are ours */
}

static RAW_CHILD int mid_main(void *arg)
{
	unsigned lo = 0;

	(void)arg;
	for (size_t i = 0; i < H.n; i++) {
		if ((unsigned)H.keep[i] > lo)
			(void)syscall(SYS_close_range, lo, (unsigned)H.keep[i] - 1, 0);
		lo = (unsigned)H.keep[i] + 1;
	}
	(void)syscall(SYS_close_range, lo, ~0u, 0);
	/* Its parent is this process, which exits now: it goes to our subreaper or init. */
	return clone(helper_main, helper_stack + sizeof(helper_stack), CLONE_VM | SIGCHLD,
		     NULL) > 0 ? 0 : 1;
}

int lastclose_start(struct lastclose *lc, const int *fds, size_t n)
{
	static bool made;
	int p[2], subreaper = 0, st = 0, r = 0;
	uint64_t all = ~0ull, old;
	pid_t mid;

	if (made)
		return -EALREADY;
	if (n > LASTCLOSE_MAX)
		return -E2BIG;
	if (prctl(PR_GET_CHILD_SUBREAPER, &subreaper) < 0)
		return negative_errno();
	if (subreaper || getpid() == 1)
		return -EBUSY;
	if (pipe2(p, O_CLOEXEC) < 0)
		return negative_errno();
	H.n = 0;
	H.pipe_r = p[0];
	H.keep[H.n++] = p[0];
	for (size_t i = 0; i < n; i++) {
		size_t j;

		if (fds[i] < 0)
			continue;
		for (j = H.n++; j > 0 && H.keep[j - 1] > fds[i]; j--)
			H.keep[j] = H.keep[j - 1];
		H.keep[j] = fds[i];
	}

	/* Every signal blocked in both from their first instruction: they inherit this
	 * thread's mask (SIGKILL aside, which only ends the helper early). The raw call:
	 * libc's would leave its own two real-time signals open, whose handlers are ours. */
	(void)syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, sizeof(all));
	mid = clone(mid_main, mid_stack + sizeof(mid_stack), CLONE_VM | CLONE_VFORK | SIGCHLD,
		    NULL);
	if (mid < 0)
		r = negative_errno();
	(void)syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof(old));
	close(p[0]);
	if (mid > 0) {
		while (waitpid(mid, &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			r = -ECHILD;
	}
	if (r < 0) {
		close(p[1]);
		return r;
	}
	made = true;
	lc->pipe_w = p[1];
	return 0;
}

void lastclose_done(struct lastclose *lc)
{
	if (lc->pipe_w >= 0)
		close(lc->pipe_w);
	lc->pipe_w = -1;
}
