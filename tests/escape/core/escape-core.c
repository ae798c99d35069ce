/* Escape attempts against the core sandbox (issue 2), one per subcommand.
 *
 *   escape-core CASE [ARG...]
 *
 * Each case tries one way out and prints a single line starting with
 * "HELD" (the attempt failed the way the sandbox promises), "ESCAPED" (it
 * worked: the invariant is broken) or "SKIP" (the kernel lacks what the case
 * needs), followed by what was observed. The driver script
 * (escape-core.sh) runs every case under `moat run`, in both modes, and reads
 * these lines from outside; cases whose effect is visible on the host (files,
 * processes) are checked there as well.
 *
 * The fixture is deliberately plain C with raw syscall() calls: libc wrappers
 * may fall back or retry in ways that hide what the filter did.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif
#ifndef __NR_clone3
#define __NR_clone3 435
#endif
#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef TIOCSTI
#define TIOCSTI 0x5412
#endif
#define X32_SYSCALL_BIT 0x40000000

static int say(const char *verdict, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int say(const char *verdict, const char *fmt, ...)
{
	va_list ap;

	printf("%s ", verdict);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	return strcmp(verdict, "ESCAPED") == 0 ? 1 : 0;
}

/* Runs fn in a forked child and describes how the child ended: a killed child
 * is what the filter's KILL actions produce, so the parent must survive. */
static int run_child(void (*fn)(void), int *ret_sig, int *ret_code)
{
	int st;
	pid_t p = fork();

	if (p < 0)
		return -errno;
	if (p == 0) {
		fn();
		_exit(0);
	}
	if (waitpid(p, &st, 0) < 0)
		return -errno;
	*ret_sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
	*ret_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return 0;
}

/* io_uring executes syscalls from a kernel worker the filter never sees: any
 * valid ring fd is an escape. */
static int case_io_uring(void)
{
	unsigned char params[120] = { 0 }; /* struct io_uring_params, zeroed */
	long fd = syscall(__NR_io_uring_setup, 8, params);

	if (fd >= 0 && fcntl((int)fd, F_GETFD) >= 0)
		return say("ESCAPED", "io_uring_setup returned a valid fd %ld", fd);
	if (fd >= 0)
		return say("ESCAPED", "io_uring_setup returned %ld", fd);
	return say("HELD", "io_uring_setup: %s", strerrorname_np(errno));
}

/* The pid of the nearest ancestor whose comm is "moat" (the supervisor in
 * unnamespaced mode, where the sandbox shares the host's pid namespace), or 0. */
static pid_t find_supervisor(void)
{
	pid_t pid = getppid();

	for (int depth = 0; pid > 1 && depth < 64; depth++) {
		char path[64], buf[512], comm[32] = "";
		FILE *f;
		size_t n;
		char *rp;

		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
		f = fopen(path, "re");
		if (f) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
		}
		if (strcmp(comm, "moat") == 0)
			return pid;
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		f = fopen(path, "re");
		if (!f)
			return 0;
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		rp = strrchr(buf, ')');
		if (!rp || sscanf(rp + 2, "%*c %d", &pid) != 1)
			return 0;
	}
	return 0;
}

static int tracer_of(pid_t pid)
{
	char path[64], line[256];
	int tracer = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "TracerPid: %d", &tracer) == 1)
			break;
	fclose(f);
	return tracer;
}

/* After an attach that should never have worked: reap the stop and let the
 * target go, so a failing test does not leave a stopped process behind. */
static void undo_attach(pid_t target)
{
	waitpid(target, NULL, __WALL);
	ptrace(PTRACE_DETACH, target, 0, 0);
	kill(target, SIGCONT);
}

/* ptrace of anything: the parent (from a forked child, so the target is a
 * real process in every pid namespace) and, with "supervisor", the moat
 * supervisor found by walking up the ppid chain. */
static int case_ptrace(const char *which, const char *pid_arg)
{
	pid_t target;
	long r;

	if (strcmp(which, "supervisor") == 0) {
		/* The driver passes the supervisor's host pid; in a pid namespace
		 * that number names nothing or some other sandbox process, and
		 * the attempt must fail all the same. */
		target = pid_arg ? (pid_t)atoi(pid_arg) : find_supervisor();
		if (target <= 0)
			return say("SKIP", "no moat ancestor visible (pid namespace hides it)");
		r = ptrace(PTRACE_ATTACH, target, 0, 0);
		if (r == 0) {
			say("ESCAPED", "PTRACE_ATTACH to the supervisor (pid %d) succeeded, TracerPid %d",
			    target, tracer_of(target));
			undo_attach(target);
			return 1;
		}
		int e = errno;
		r = ptrace(PTRACE_SEIZE, target, 0, 0);
		if (r == 0) {
			ptrace(PTRACE_DETACH, target, 0, 0);
			return say("ESCAPED", "PTRACE_SEIZE of the supervisor (pid %d) succeeded", target);
		}
		return say("HELD", "PTRACE_ATTACH supervisor pid %d: %s, SEIZE: %s", target,
			   strerrorname_np(e), strerrorname_np(errno));
	}

	/* getppid() itself first: in a pid namespace it may be 0 (parent outside). */
	pid_t pp = getppid();
	int e_pp = 0;
	if (pp > 0) {
		r = ptrace(PTRACE_ATTACH, pp, 0, 0);
		if (r == 0) {
			undo_attach(pp);
			return say("ESCAPED", "PTRACE_ATTACH getppid()=%d succeeded", pp);
		}
		e_pp = errno;
	}
	/* A child attaching to us: a target that is certainly visible. */
	int pipefd[2];
	if (pipe(pipefd) < 0)
		return say("SKIP", "pipe: %s", strerror(errno));
	pid_t c = fork();
	if (c == 0) {
		int e = 0;
		if (ptrace(PTRACE_ATTACH, getppid(), 0, 0) == 0)
			undo_attach(getppid());
		else
			e = errno ? errno : -1;
		if (write(pipefd[1], &e, sizeof(e)) < 0)
			_exit(2);
		_exit(0);
	}
	close(pipefd[1]);
	int ce = -1;
	ssize_t n = read(pipefd[0], &ce, sizeof(ce));
	/* If the attach worked we are now stopped-traced; the child's exit
	 * detaches us. */
	waitpid(c, NULL, 0);
	if (n != sizeof(ce))
		return say("SKIP", "the attaching child died before reporting");
	if (ce == 0)
		return say("ESCAPED", "a child's PTRACE_ATTACH to its parent succeeded");
	return say("HELD", "PTRACE_ATTACH getppid()=%d: %s; child->parent: %s", pp,
		   pp > 0 ? strerrorname_np(e_pp) : "(no visible parent)", strerrorname_np(ce));
}

/* int 0x80 with eax = 20 (i386 getpid). The i386 ABI is not the filter's
 * native architecture, so the filter kills it; with IA-32 emulation off, the
 * kernel raises SIGSEGV before the filter runs. */
static void do_int80(void)
{
	long ret;

	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
	/* Reached only if the syscall returned: report the value. */
	printf("int80-returned %ld\n", ret);
	fflush(stdout);
	_exit(ret > 0 ? 42 : 43);
}

static int case_int80(void)
{
	int sig, code;

	if (run_child(do_int80, &sig, &code) < 0)
		return say("SKIP", "fork: %s", strerror(errno));
	if (sig)
		return say(sig == SIGSYS ? "HELD" : "HELD-SIG", "int 0x80 killed by %s", sigabbrev_np(sig));
	return say("ESCAPED", "int 0x80 returned (child exit %d)", code);
}

static void do_x32(void)
{
	long r = syscall(X32_SYSCALL_BIT | 39); /* x32 getpid */

	printf("x32-returned %ld errno %d\n", r, r < 0 ? errno : 0);
	fflush(stdout);
	_exit(r > 0 ? 42 : 43);
}

static int case_x32(void)
{
	int sig, code;

	if (run_child(do_x32, &sig, &code) < 0)
		return say("SKIP", "fork: %s", strerror(errno));
	if (sig == SIGSYS)
		return say("HELD", "x32 getpid killed by SIGSYS");
	if (sig)
		return say("ESCAPED", "x32 getpid killed by %s, not SIGSYS", sigabbrev_np(sig));
	return say("ESCAPED", "x32 getpid returned (child exit %d): the filter let it through", code);
}

/* A second seccomp listener: the sandbox could answer its own notifications
 * with CONTINUE and bypass the supervisor for every later filter match. */
static int case_listener(void)
{
	/* Notify only getppid(), which this process never calls, so a filter
	 * that does get installed cannot deadlock us on our own listener. */
	struct sock_filter insns[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = 4, .filter = insns };
	long fd;

	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (fd >= 0)
		return say("ESCAPED", "seccomp(NEW_LISTENER) returned listener fd %ld", fd);
	if (errno != EPERM)
		return say("ESCAPED", "seccomp(NEW_LISTENER) failed with %s, not the filter's EPERM",
			   strerrorname_np(errno));
	return say("HELD", "seccomp(NEW_LISTENER): EPERM");
}

/* TIOCSTI pushes bytes into a terminal's input queue: from a sandbox holding
 * the user's terminal, that is typing commands into the user's shell. The
 * filter must refuse it whatever the upper 32 bits of the request word hold
 * (the kernel ignores them). The check is the effect: after the ioctl, the
 * injected byte must not be readable from the terminal. */
static int case_tiocsti(int garbage)
{
	unsigned long req = TIOCSTI | (garbage ? 0xdeadbeef00000000UL : 0);
	int m = posix_openpt(O_RDWR | O_NOCTTY);

	if (m < 0)
		return say("SKIP", "posix_openpt: %s", strerror(errno));
	if (grantpt(m) < 0 || unlockpt(m) < 0)
		return say("SKIP", "grantpt/unlockpt: %s", strerror(errno));
	const char *sn = ptsname(m);
	if (!sn)
		return say("SKIP", "ptsname: %s", strerror(errno));

	int pfd[2];
	if (pipe(pfd) < 0)
		return say("SKIP", "pipe: %s", strerror(errno));
	pid_t c = fork();
	if (c == 0) {
		/* A new session whose controlling terminal is the pty slave, so
		 * the kernel's own "not your terminal" check does not interfere:
		 * only the filter stands between us and the input queue. */
		char msg[200];
		int s, r, e;
		struct termios t;
		char ch = 0;

		close(pfd[0]);
		setsid();
		s = open(sn, O_RDWR);
		if (s < 0) {
			snprintf(msg, sizeof(msg), "SKIP open %s: %s", sn, strerror(errno));
			goto out;
		}
		ioctl(s, TIOCSCTTY, 0);
		if (tcgetattr(s, &t) == 0) {
			cfmakeraw(&t);
			tcsetattr(s, TCSANOW, &t);
		}
		r = (int)syscall(SYS_ioctl, s, req, "Z");
		e = errno;
		fcntl(s, F_SETFL, O_NONBLOCK);
		usleep(50000);
		ssize_t n = read(s, &ch, 1);
		if (n == 1 && ch == 'Z')
			snprintf(msg, sizeof(msg), "ESCAPED ioctl(0x%lx) returned %d and 'Z' was injected",
				 req, r);
		else if (r == 0)
			snprintf(msg, sizeof(msg), "ESCAPED ioctl(0x%lx) returned 0", req);
		else if (e != EPERM)
			snprintf(msg, sizeof(msg), "ESCAPED ioctl(0x%lx) failed with %s, not the filter's EPERM",
				 req, strerrorname_np(e));
		else
			snprintf(msg, sizeof(msg), "HELD ioctl(0x%lx): EPERM, nothing injected", req);
out:
		if (write(pfd[1], msg, strlen(msg)) < 0)
			_exit(2);
		_exit(0);
	}
	close(pfd[1]);
	char buf[256];
	ssize_t n = read(pfd[0], buf, sizeof(buf) - 1);
	waitpid(c, NULL, 0);
	if (n <= 0)
		return say("SKIP", "the tty child reported nothing");
	buf[n] = 0;
	printf("%s\n", buf);
	fflush(stdout);
	return strncmp(buf, "ESCAPED", 7) == 0;
}

/* The same through the terminal moat was given with --tty (fd 0): the real
 * threat, a sandbox typing into the user's shell. tty-inject.py checks from
 * outside whether the byte reached the terminal's input queue. */
static int case_tiocsti_fd0(int garbage)
{
	unsigned long req = TIOCSTI | (garbage ? 0xdeadbeef00000000UL : 0);
	long r;

	if (!isatty(0))
		return say("SKIP", "fd 0 is not a terminal (run with --tty under a pty)");
	r = syscall(SYS_ioctl, 0, req, "Z");
	if (r == 0)
		return say("ESCAPED", "ioctl(0, 0x%lx) returned 0", req);
	return say(errno == EPERM ? "HELD" : "ESCAPED", "ioctl(0, 0x%lx): %s", req, strerrorname_np(errno));
}

/* New namespaces: a user namespace gives the sandbox CAP_SYS_ADMIN over a view
 * the supervisor does not model. */
static int case_namespaces(void)
{
	int bad = 0;
	char out[512] = "";
	size_t o = 0;
	struct {
		const char *name;
		long r;
		int e;
	} t[4];

	t[0].name = "unshare(CLONE_NEWUSER)";
	t[0].r = syscall(SYS_unshare, CLONE_NEWUSER);
	t[0].e = errno;
	t[1].name = "unshare(CLONE_NEWNS)";
	t[1].r = syscall(SYS_unshare, CLONE_NEWNS);
	t[1].e = errno;
	t[2].name = "clone(CLONE_NEWUSER)";
	t[2].r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	if (t[2].r == 0)
		_exit(0);
	t[2].e = errno;
	if (t[2].r > 0)
		waitpid((pid_t)t[2].r, NULL, 0);
	/* clone3 carries its flags in memory the filter cannot read: it must be
	 * refused outright (ENOSYS so libc falls back to clone). */
	struct {
		uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	} ca = { .flags = CLONE_NEWUSER, .exit_signal = SIGCHLD };
	t[3].name = "clone3(CLONE_NEWUSER)";
	t[3].r = syscall(__NR_clone3, &ca, sizeof(ca));
	if (t[3].r == 0)
		_exit(0);
	t[3].e = errno;
	if (t[3].r > 0)
		waitpid((pid_t)t[3].r, NULL, 0);

	for (int i = 0; i < 4; i++) {
		int want = i == 3 ? ENOSYS : EPERM;
		int good = t[i].r < 0 && t[i].e == want;
		if (!good)
			bad = 1;
		o += snprintf(out + o, sizeof(out) - o, "%s%s=%s", i ? ", " : "", t[i].name,
			      t[i].r < 0 ? strerrorname_np(t[i].e) : "OK");
	}
	return say(bad ? "ESCAPED" : "HELD", "%s", out);
}

/* Reading another process's memory: a forked child reads its parent. */
static int case_pvm_read(void)
{
	static char secret[32] = "parent-memory";
	int pfd[2];

	if (pipe(pfd) < 0)
		return say("SKIP", "pipe: %s", strerror(errno));
	pid_t c = fork();
	if (c == 0) {
		char buf[32] = "";
		struct iovec l = { buf, sizeof(buf) }, r = { secret, sizeof(secret) };
		long n = syscall(SYS_process_vm_readv, getppid(), &l, 1, &r, 1, 0);
		int res[2] = { (int)n, errno };
		if (write(pfd[1], res, sizeof(res)) < 0)
			_exit(2);
		_exit(0);
	}
	/* Only the parent's copy holds this value after the fork. */
	strcpy(secret, "parent-changed");
	close(pfd[1]);
	int res[2] = { 0, 0 };
	ssize_t n = read(pfd[0], res, sizeof(res));
	waitpid(c, NULL, 0);
	if (n != sizeof(res))
		return say("SKIP", "child reported nothing");
	/* Any byte read is an escape, whether or not the parent had already
	 * changed the string when the child read it. */
	if (res[0] >= 0)
		return say("ESCAPED", "process_vm_readv of the parent read %d bytes", res[0]);
	return say("HELD", "process_vm_readv of the parent: %s", strerrorname_np(res[1]));
}

/* Makes DIR/f.N for N = 0, 1, ... every 10 ms, forever, through a call every filter
 * notifies (symlink: a create by open is the kernel's where nothing asks for the change
 * set). Used to see from outside that no notified call goes through once the supervisor
 * is gone. The marker argument only makes this process easy to find with pgrep. */
static int case_loop_files(const char *dir, const char *marker)
{
	(void)marker;
	for (unsigned long i = 0;; i++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/f.%lu", dir, i);
		(void)symlink("target", path);
		usleep(10000);
	}
	return 0;
}

/* TOCTOU: one thread flips a path buffer between an allowed and a hidden name
 * while the main thread opens it in a loop. A supervisor that reads the path,
 * decides, and lets the kernel re-read it (CONTINUE) loses this race. */
static char race_path[64] = "allowed.txt";
static volatile int race_stop;

static void *flipper(void *arg)
{
	(void)arg;
	while (!race_stop) {
		/* The barriers keep the compiler from dropping the first
		 * store as dead: both names must really be in memory. */
		memcpy(race_path, "secret.txt", sizeof("secret.txt"));
		__asm__ volatile("" ::: "memory");
		memcpy(race_path, "allowed.txt", sizeof("allowed.txt"));
		__asm__ volatile("" ::: "memory");
	}
	return NULL;
}

static int case_toctou(long iters)
{
	pthread_t th;
	long allowed = 0, secret = 0, failed = 0, other = 0;

	if (pthread_create(&th, NULL, flipper, NULL) != 0)
		return say("SKIP", "pthread_create failed");
	for (long i = 0; i < iters; i++) {
		char buf[64];
		int fd = (int)syscall(SYS_openat, AT_FDCWD, race_path, O_RDONLY | O_CLOEXEC);
		ssize_t n;

		if (fd < 0) {
			failed++;
			continue;
		}
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = 0;
		if (strncmp(buf, "SECRET", 6) == 0)
			secret++;
		else if (strncmp(buf, "ALLOWED", 7) == 0)
			allowed++;
		else
			other++;
	}
	race_stop = 1;
	pthread_join(th, NULL);
	return say(secret ? "ESCAPED" : "HELD", "iterations=%ld allowed=%ld secret=%ld failed=%ld other=%ld",
		   iters, allowed, secret, failed, other);
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(c, "io_uring"))
		return case_io_uring();
	if (!strcmp(c, "ptrace"))
		return case_ptrace(argc > 2 ? argv[2] : "parent", argc > 3 ? argv[3] : NULL);
	if (!strcmp(c, "int80"))
		return case_int80();
	if (!strcmp(c, "x32"))
		return case_x32();
	if (!strcmp(c, "listener"))
		return case_listener();
	if (!strcmp(c, "tiocsti"))
		return case_tiocsti(argc > 2 && !strcmp(argv[2], "garbage"));
	if (!strcmp(c, "tiocsti_fd0"))
		return case_tiocsti_fd0(argc > 2 && !strcmp(argv[2], "garbage"));
	if (!strcmp(c, "namespaces"))
		return case_namespaces();
	if (!strcmp(c, "pvm_read"))
		return case_pvm_read();
	if (!strcmp(c, "loop_files") && argc > 3)
		return case_loop_files(argv[2], argv[3]);
	if (!strcmp(c, "toctou"))
		return case_toctou(argc > 2 ? atol(argv[2]) : 100000);
	fprintf(stderr, "usage: escape-core io_uring|ptrace [parent|supervisor [PID]]|int80|x32|listener|"
			"tiocsti [garbage]|tiocsti_fd0 [garbage]|namespaces|pvm_read|loop_files DIR MARKER|toctou [N]\n");
	return 2;
}
