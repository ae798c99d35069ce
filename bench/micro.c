/* SPDX-License-Identifier: MIT */
/*
 * bench/micro: what one syscall costs on this machine, and what the seccomp
 * user-notification mechanism adds to it, measured without moat.
 *
 *   micro native  [N] [REPS]   getppid, openat+close, newfstatat, natively
 *   micro raw     [N] [REPS]   the mechanism with a minimal supervisor *process*:
 *                               getppid answered CONTINUE (with/without SYNC_WAKE_UP),
 *                               getppid answered by the supervisor (pure round trip),
 *                               openat emulated with ADDFD|SEND, newfstatat emulated
 *                               (path copied out, stat written back)
 *   micro loop    [N] [REPS]   the same three calls as `native`; run it under
 *                               `moat run` to get moat's own cost per notified call
 *
 * Output: one line per measurement, "name ns_per_call", the median over REPS
 * repetitions of N calls each. bench/run parses it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"           /* common/ */
#include "missing-seccomp.h" /* interposer/launch/: what older kernel headers lack */

#define TARGET_PATH "/usr/include/stdio.h"
#define MAX_REPS 64

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what)
{
	fprintf(stderr, "micro: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* ---- the measured calls ---- */

enum op { OP_GETPPID, OP_OPENAT, OP_STAT };

static const char *const op_name[] = { "getppid", "openat", "newfstatat" };
static const int op_nr[] = { SYS_getppid, SYS_openat, SYS_newfstatat };

/* One call of OP; returns -1 (and sets errno) when it failed. */
static int do_op(enum op op)
{
	struct stat st;
	long r;

	switch (op) {
	case OP_GETPPID:
		return syscall(SYS_getppid) < 0 ? -1 : 0;
	case OP_OPENAT:
		r = syscall(SYS_openat, AT_FDCWD, TARGET_PATH, O_RDONLY | O_CLOEXEC);
		if (r < 0)
			return -1;
		close((int)r);
		return 0;
	case OP_STAT:
		return syscall(SYS_newfstatat, AT_FDCWD, TARGET_PATH, &st, 0) < 0 ? -1 : 0;
	default:
		return -1;
	}
}

/* Median ns per call of OP over REPS runs of N calls, after one warm-up run. */
static double time_op(enum op op, long n, int reps)
{
	double v[MAX_REPS];

	for (long i = 0; i < n / 10 + 1; i++)
		if (do_op(op) < 0)
			die(op_name[op]);
	for (int r = 0; r < reps; r++) {
		uint64_t t0 = now_mono_ns();
		for (long i = 0; i < n; i++)
			do_op(op);
		v[r] = (double)(now_mono_ns() - t0) / (double)n;
	}
	return median(v, reps);
}

static void run_native(long n, int reps)
{
	for (int op = 0; op < 3; op++)
		printf("%s %.1f\n", op_name[op], time_op((enum op)op, n, reps));
}

/* ---- the raw mechanism: a child behind a filter, the parent as supervisor ---- */

enum answer {
	ANS_CONTINUE,   /* SECCOMP_USER_NOTIF_FLAG_CONTINUE: the kernel runs the call */
	ANS_VALUE,      /* the supervisor answers with a value: the pure round trip */
	ANS_ADDFD,      /* openat: supervisor opens, ADDFD with SEND */
	ANS_STAT,       /* newfstatat: supervisor copies the path, stats, writes back */
};

static int send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	char b = 0;
	struct iovec iov = { .iov_base = &b, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) < 0 ? -1 : 0;
}

static int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	char b;
	struct iovec iov = { .iov_base = &b, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &msg, 0) <= 0)
		return -1;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

static int install_filter(int nr)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			    SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
}

/* Copy a NUL-terminated path out of the tracee, as a real supervisor must. */
static int read_path(pid_t pid, uint64_t addr, char *buf, size_t len)
{
	struct iovec l = { .iov_base = buf, .iov_len = len };
	struct iovec r = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);

	/* A read across the end of a mapping comes back short; the path is short. */
	if (got <= 0)
		return -1;
	if (!memchr(buf, 0, (size_t)got))
		return -1;
	return 0;
}

/* Set by SIGUSR1: the timed child has written its result. */
static volatile sig_atomic_t child_done;

static void on_usr1(int sig)
{
	(void)sig;
	child_done = 1;
}

/*
 * The supervisor loop, blocked in NOTIF_RECV as a minimal supervisor is (no
 * poll in between). RECV does not return when the filter loses its last user,
 * so the child, once done, signals us until we kill it.
 */
static void supervise(int lfd, enum answer ans)
{
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	char path[4096];

	for (;;) {
		memset(&req, 0, sizeof(req));
		if (child_done)
			return;
		if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		memset(&resp, 0, sizeof(resp));
		resp.id = req.id;
		switch (ans) {
		case ANS_CONTINUE:
			resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
			break;
		case ANS_VALUE:
			resp.val = getpid();
			break;
		case ANS_ADDFD: {
			struct seccomp_notif_addfd a = { 0 };
			int fd, r;

			if (read_path(req.pid, req.data.args[1], path, sizeof(path)) < 0 ||
			    ioctl(lfd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req.id) < 0) {
				resp.error = -EFAULT;
				break;
			}
			fd = openat(AT_FDCWD, path, (int)req.data.args[2] | O_CLOEXEC);
			if (fd < 0) {
				resp.error = -errno;
				break;
			}
			a.id = req.id;
			a.flags = SECCOMP_ADDFD_FLAG_SEND;
			a.srcfd = (unsigned)fd;
			a.newfd_flags = O_CLOEXEC;
			r = ioctl(lfd, SECCOMP_IOCTL_NOTIF_ADDFD, &a);
			close(fd);
			if (r >= 0)
				continue; /* SEND answered the notification */
			resp.error = -errno;
			break;
		}
		case ANS_STAT: {
			struct stat st;
			struct iovec l = { .iov_base = &st, .iov_len = sizeof(st) };
			struct iovec rm;

			if (read_path(req.pid, req.data.args[1], path, sizeof(path)) < 0 ||
			    ioctl(lfd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req.id) < 0) {
				resp.error = -EFAULT;
				break;
			}
			if (fstatat(AT_FDCWD, path, &st, (int)req.data.args[3]) < 0) {
				resp.error = -errno;
				break;
			}
			rm.iov_base = (void *)(uintptr_t)req.data.args[2];
			rm.iov_len = sizeof(st);
			if (process_vm_writev(req.pid, &l, 1, &rm, 1, 0) != (ssize_t)sizeof(st))
				resp.error = -EFAULT;
			break;
		}
		default:
			resp.error = -ENOSYS;
			break;
		}
		if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT)
			die("SECCOMP_IOCTL_NOTIF_SEND");
	}
}

/*
 * One raw measurement: fork a child that installs a filter notifying OP's
 * syscall and times it; the parent supervises. Prints "NAME ns" or "NAME n/a: why".
 */
static void raw_one(const char *name, enum op op, enum answer ans, int sync_wake, long n,
		    int reps)
{
	int sv[2], res[2], lfd;
	pid_t pid;
	double ns = -1;
	int status;

	pid_t parent = getpid();
	struct sigaction sa = { .sa_handler = on_usr1 };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL); /* no SA_RESTART: RECV must return EINTR */
	child_done = 0;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
	    pipe2(res, O_CLOEXEC) < 0)
		die("socketpair");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int fd;

		close(sv[0]);
		close(res[0]);
		fd = install_filter(op_nr[op]);
		if (fd < 0 || send_fd(sv[1], fd) < 0)
			_exit(3);
		close(fd);
		/* Wait for the supervisor to be ready (flags set) before timing. */
		if (read(sv[1], &(char){ 0 }, 1) != 1)
			_exit(4);
		ns = time_op(op, n, reps);
		if (write(res[1], &ns, sizeof(ns)) != sizeof(ns))
			_exit(5);
		for (;;) { /* until the parent kills us */
			kill(parent, SIGUSR1);
			usleep(10000);
		}
	}
	close(sv[1]);
	close(res[1]);
	lfd = recv_fd(sv[0]);
	if (lfd < 0) {
		printf("%s n/a: the child could not install a listener\n", name);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return;
	}
	if (sync_wake) {
		uint64_t flags = SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP;
		if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, flags) < 0) {
			printf("%s n/a: SECCOMP_IOCTL_NOTIF_SET_FLAGS: %s\n", name, strerror(errno));
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			close(lfd);
			close(sv[0]);
			close(res[0]);
			return;
		}
	}
	if (write(sv[0], "g", 1) != 1)
		die("write");
	supervise(lfd, ans);
	close(lfd);
	if (read(res[0], &ns, sizeof(ns)) != sizeof(ns))
		ns = -1;
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	close(sv[0]);
	close(res[0]);
	if (ns < 0)
		printf("%s n/a: the timed child failed (status %d)\n", name, status);
	else
		printf("%s %.1f\n", name, ns);
	fflush(stdout);
}

static void run_raw(long n, int reps)
{
	raw_one("notify_continue_getppid", OP_GETPPID, ANS_CONTINUE, 0, n, reps);
	raw_one("notify_continue_getppid_sync", OP_GETPPID, ANS_CONTINUE, 1, n, reps);
	raw_one("notify_value_getppid", OP_GETPPID, ANS_VALUE, 0, n, reps);
	raw_one("notify_value_getppid_sync", OP_GETPPID, ANS_VALUE, 1, n, reps);
	raw_one("emulated_openat_addfd", OP_OPENAT, ANS_ADDFD, 0, n, reps);
	raw_one("emulated_openat_addfd_sync", OP_OPENAT, ANS_ADDFD, 1, n, reps);
	raw_one("emulated_newfstatat", OP_STAT, ANS_STAT, 0, n, reps);
	raw_one("emulated_newfstatat_sync", OP_STAT, ANS_STAT, 1, n, reps);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "native";
	long n = argc > 2 ? atol(argv[2]) : 20000;
	int reps = argc > 3 ? atoi(argv[3]) : 7;

	if (n <= 0 || reps <= 0 || reps > MAX_REPS) {
		fprintf(stderr, "usage: micro native|raw|loop [N] [REPS<=%d]\n", MAX_REPS);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "native") || !strcmp(mode, "loop"))
		run_native(n, reps);
	else if (!strcmp(mode, "raw"))
		run_raw(n, reps);
	else {
		fprintf(stderr, "micro: unknown mode '%s'\n", mode);
		return 2;
	}
	return 0;
}
