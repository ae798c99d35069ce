/* SPDX-License-Identifier: MIT */
/*
 * sup_run(): one sandboxed run from start to exit status.
 *
 * Threads. The notifiers (one unless asked, see struct notifier) block in NOTIF_RECV on the
 * seccomp listener and each answers the notifications it receives (dispatch_one);
 * blocking there rather than in epoll lets the kernel hand the CPU straight from the
 * trapped thread to us and back (SYNC_WAKE_UP), which is most of a notification's cost
 * on a small VM. The main loop is epoll over the sync socket (listener hand-over, exec
 * and setup failures, the command's status), a signalfd (SIGCHLD and the signals that
 * stop us), a timerfd (--timeout), the pidfd of the sandbox's init, and the sockets
 * sock.c waits on (deferred connects, DNS). What they share is listed at struct sup_ctx.
 * Whatever ends the run, teardown is the same: kill the whole tree (pid namespace,
 * cgroup, and a sweep of our own descendants as a subreaper), then account.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "cgroup.h"
#include "cleanup.h"
#include "clock.h"
#include "cow.h"
#include "creds.h"
#include "dispatch.h"
#include "error.h"
#include "events.h"
#include "exectrace.h"
#include "firstexec.h"
#include "log.h"
#include "macros.h"
#include "missing-seccomp.h"
#include "moat-config.h"
#include "output.h"
#include "proc-ops.h"
#include "proctrack.h"
#include "netns.h"
#include "receipt.h"
#include "landlock.h"
#include "spawn.h"
#include "lastclose.h"
#include "stubwatch.h"
#include "sup.h"
#include "term.h"
#include "net.h"
#include "vfs.h"

static const char *const reason_names[_SUP_REASON_MAX] = {
	[SUP_REASON_EXITED] = "exited",
	[SUP_REASON_SIGNALED] = "signaled",
	[SUP_REASON_TIMEOUT] = "timeout",
	[SUP_REASON_MEMORY] = "memory",
	[SUP_REASON_PIDS] = "pids",
	[SUP_REASON_CPU] = "cpu",
	[SUP_REASON_SUPERVISOR_SIGNAL] = "supervisor-signal",
	[SUP_REASON_SETUP_FAILED] = "setup-failed",
	[SUP_REASON_EXEC_FAILED] = "exec-failed",
};

const char *sup_reason_name(enum sup_reason r)
{
	return (unsigned)r < _SUP_REASON_MAX ? reason_names[r] : "unknown";
}

/* ---- kernel features ---- */

static long read_sysctl(const char *path, long dflt)
{
	char buf[32];
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (n <= 0)
		return dflt;
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

/*
 * Whether we may create a user namespace, from the knobs that decide it rather than by
 * trying: a throwaway clone costs a whole process lifetime (about 12 ms on a small VM),
 * on every run. Root needs only max_user_namespaces; others also Debian's
 * unprivileged_userns_clone and Ubuntu's AppArmor restriction. If a restriction we do
 * not know of refuses the clone later, the launch says so (exit 125).
 */
static bool can_create_userns(void)
{
	if (read_sysctl("/proc/sys/user/max_user_namespaces", 1) <= 0)
		return false;
	if (geteuid() == 0)
		return true;
	return read_sysctl("/proc/sys/kernel/unprivileged_userns_clone", 1) != 0 &&
	       read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", 0) == 0;
}

void sup_probe_features(struct sup_features *f)
{
	struct utsname u;
	long abi;

	memset(f, 0, sizeof(*f));
	if (uname(&u) == 0)
		snprintf(f->kernel, sizeof(f->kernel), "%s", u.release);
	f->user_ns = can_create_userns();
	abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	f->landlock_abi = abi > 0 ? (int)abi : 0;
#if MOAT_TEST_HOOKS
	/* MOAT_TEST_LANDLOCK_ABI=N: at most ABI N, as an older kernel has it (5: no signal
	 * scoping, as before 6.12), for the escape tests of what the next barrier holds */
	{
		const char *e = getenv("MOAT_TEST_LANDLOCK_ABI");

		if (e && e[0])
			f->landlock_abi = MIN(f->landlock_abi, (int)strtol(e, NULL, 10));
	}
#endif
	f->pidfd = syscall(SYS_pidfd_open, getpid(), 0xffffffff) < 0 && errno == EINVAL;
	f->pidfd_getfd = f->pidfd;
	/* The listener flags are probed on the real listener (see the loop); the filter
	 * flag is retried without it in the child if the kernel refuses it. */
	f->wait_killable = true;
	f->addfd_send = true;
}

/* ---- environment ---- */

static char **build_env(const struct sup_opts *o, const char *tmpdir)
{
	/* the run's private home when the policy has one (vfs_home()), else the caller's */
	const char *home = vfs_home(o->vfs) ? vfs_home(o->vfs) : getenv("HOME");
	const char *term = getenv("TERM");
	size_t cap = 8 + o->n_env + o->n_keep_env, n = 0;
	char **envp = calloc(cap + 1, sizeof(char *));

	if (!envp)
		return NULL;
	/* Nothing of the host's environment unless asked for (docs/architecture.md invariant 4):
	 * a minimal, predictable set, then --keep-env, then --setenv (which wins). */
	if (asprintf(&envp[n++], "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin") < 0 ||
	    asprintf(&envp[n++], "HOME=%s", home ? home : "/") < 0 ||
	    asprintf(&envp[n++], "LANG=C.UTF-8") < 0 ||
	    asprintf(&envp[n++], "TERM=%s", term && o->tty ? term : "dumb") < 0)
		goto fail;
	if (tmpdir && asprintf(&envp[n++], "TMPDIR=%s", tmpdir) < 0)
		goto fail;
	for (size_t i = 0; i < o->n_keep_env; i++) {
		const char *v = getenv(o->keep_env[i]);
		if (v && asprintf(&envp[n++], "%s=%s", o->keep_env[i], v) < 0)
			goto fail;
	}
	for (size_t i = 0; i < o->n_env; i++) {
		size_t nl = strlen(o->env[i].name);
		/* Replace an earlier entry of the same name. */
		for (size_t j = 0; j < n; j++)
			if (strncmp(envp[j], o->env[i].name, nl) == 0 && envp[j][nl] == '=') {
				free(envp[j]);
				envp[j] = envp[--n];
				envp[n] = NULL;
				break;
			}
		if (asprintf(&envp[n++], "%s=%s", o->env[i].name, o->env[i].value) < 0)
			goto fail;
	}
	envp[n] = NULL;
	return envp;
fail:
	envp[n - 1] = NULL; /* the asprintf() that failed: its pointer is undefined */
	strv_free(envp);
	return NULL;
}

/* ---- the loop ---- */

/*
 * Notifier threads, all blocked in NOTIF_RECV on the one listener; each notification
 * goes to one of them. One by default: with more, the kernel hands successive
 * notifications of even a single process to the threads in turn (its wait is FIFO),
 * and on the 2-CPU VM we measure on that costs more than it saves (MOAT_NOTIFIERS=2:
 * /bin/true 1.19x, 200 fork+exec 1.17x, find 1.08x slower; two concurrent stat loops no
 * faster, the CPUs being the limit). MOAT_NOTIFIERS=N (1..MAX_NOTIFIERS, ctx.h) asks for more,
 * for hosts where several sandboxed processes notify at once.
 */
struct notifier {
	struct run *R;
	pthread_t thread;
	struct seccomp_notif *req;
	struct tracee_cache tracees;
};

struct run {
	struct sup_ctx ctx;
	const char *proctrack_why;      /* why there are no fork/exit records, or NULL */
	struct sup_opts *o;
	struct sup_features feat;
	struct stubwatch stubs;     /* native read-only opens: the stubs' fanotify marks */
	struct lastclose lastclose; /* holds the stubs' groups for their last close (lastclose.h) */
	const char *open_path;      /* how read-only opens are handled, for -v and --report */
	struct ll_readset *readset; /* unnamespaced: Landlock's carved read set (ctx.readset) */
	struct cgroup cg;
	bool have_cg;
	char cg_why[256];
	int epfd, sigfd, timerfd, syncfd, pidfd;
	pid_t keeper;
	bool keeper_done;
	int keeper_status;
	bool have_cmd_status;
	int cmd_status;
	bool sweep_pending;             /* vfs_sweep_stale() still to run (sup_run() only) */
	enum sup_reason reason;
	int stop_signal;
	int exec_errno;
	int setup_errno, setup_stage;
	struct cgroup_stats cgs;        /* read once at teardown */
	uint64_t disk_used, disk_size;  /* --disk, read once at teardown */
	struct rusage ru;               /* of every reaped descendant, at teardown */
	json_t *git;                    /* the workspace's commit when the run started */
	json_t *cow;                    /* --cow: what became of the changes */
	struct term_relay term;         /* ptys between the command and our terminal */
	struct vfs_change *changes;     /* owned copies, hashed once for report and audit */
	size_t n_changes;
	bool sync_wake_up;
	bool audit_hdr_done;
	/* Whether this run's filter traps the metadata calls by name (the stream then
	 * records them): known once the filter is chosen, not for a container's profile. */
	bool meta_known, meta_trapped;
	uint64_t start_wall_ns;
	struct notifier notifiers[MAX_NOTIFIERS];
	unsigned n_notifiers;           /* started */
	atomic_bool notifier_stop;
	sem_t listener_ready;           /* posted per notifier when ctx.listener is set (or to stop) */
	size_t req_size;                /* the kernel's struct seccomp_notif */
	uint64_t t_start, t_end;
	char *not_enforced[8];
	size_t n_not_enforced;
	char run_id[AUDIT_RUN_ID_MAX];  /* --run-id, or random: in the report and the header */
	struct out_file report_out, audit_out; /* opened before the sandbox exists */
	char setup_msg[PATH_MAX + 1024]; /* why moat failed before the sandbox ran */
	const char *teardown_signal;    /* a signal cut the teardown's hashing short */
	/* --start-fd: the request read so far, and whether the command was given */
	char *start_buf;
	size_t start_len;
	bool started;
	/* spawn_plan.exec_fd: the command waits for its program's fd after its argv
	 * (hand_over_exec()); its environment and cwd, to find the program as it would;
	 * its pidfd, kept from the listener's arrival to seize it when no fd is given */
	bool exec_fd, exec_handed;
	/* SUP_FILTER_NATIVE_WRITE(_UNMARKED): no exec is trapped, so nothing holds the command at
	 * its first one while we take its listener: it waits for SYNC_EXEC_FD instead. */
	bool native_exec;
	char **cmd_envp;
	const char *cmd_cwd;
	int cmd_pidfd;
	bool external;                  /* sup_serve(): the process tree is not ours to reap */
	/* Mount points the keeper made in mappings of host directories (SYNC_CREATED),
	 * in the order it made them: removed when the run ends (remove_made()). */
	struct made_mountpoint {
		int dirfd;              /* the directory it was made in */
		char *vpath;            /* its path in the sandbox, for messages */
		dev_t dev;
		ino_t ino;
		bool dir;
	} *made;
	size_t n_made;
	/* The covering's records across runs (cover_cache_open()): the directory they are
	 * kept in, this run's file name, the key, and the keeper's new records. */
	int cc_dir;
	int state_fd;                   /* the same directory for vfs_note_made(), -2 unopened */
	char cc_name[64];
	char *cc_key;
	int cc_new;
};

static void stop(struct run *R, enum sup_reason reason, int sig);
static void hand_over_exec(struct run *R, char *const *argv);
static uint64_t wall_ns(void);
static void audit_header(struct run *R);
static void start_proctrack(struct run *R);
static bool kernel_at_least(const char *release, int major, int minor);
static int run_state_dir(struct run *R, bool make);

/* ---- the notifier thread ---- */

/* SIGUSR2 only interrupts the notifier's RECV (no SA_RESTART); see notifier_stop(). */
static void on_wake(int sig)
{
	(void)sig;
}

/* No task uses the filter any more (and none can again: a filter is only inherited). */
static bool listener_orphaned(int listener)
{
	struct pollfd p = { .fd = listener, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLHUP) && !(p.revents & POLLIN);
}

static void *notifier_main(void *arg)
{
	struct notifier *nt = arg;
	struct run *R = nt->R;
	sigset_t wake;
	int r;

	sigemptyset(&wake);
	sigaddset(&wake, SIGUSR2);
	pthread_sigmask(SIG_UNBLOCK, &wake, NULL);
	/* Every emulated call acts with its caller's credentials (creds.h); a thread that
	 * cannot take them serves nothing (its calls would fail with EACCES). */
	if ((r = creds_thread_init()) < 0)
		log_error("the notifier cannot act with the caller's credentials: %s", strerror(-r));
	for (size_t i = 0; i < ELEMENTSOF(R->ctx.notifier_tids); i++) {
		int none = 0;

		if (atomic_compare_exchange_strong(&R->ctx.notifier_tids[i], &none, (int)gettid()))
			break;
	}
	while (sem_wait(&R->listener_ready) < 0)
		;
	while (!atomic_load(&R->notifier_stop)) {
		r = notify_recv(R->ctx.listener, nt->req);

		if (r == -ENOENT && listener_orphaned(R->ctx.listener)) {
			/* Every filtered task is gone, and RECV now fails at once: wait for
			 * notifier_stop()'s signal instead of spinning through teardown. */
			sigset_t only_wake;

			sigfillset(&only_wake);
			sigdelset(&only_wake, SIGUSR2);
			while (!atomic_load(&R->notifier_stop))
				sigsuspend(&only_wake);
			break;
		}
		if (r == -EINTR || r == -ENOENT)
			continue; /* woken to stop, or the caller went away before we read it */
		if (r < 0) {
			log_error("notification receive failed: %s", strerror(-r));
			break;
		}
		dispatch_one(&R->ctx, nt->req, &nt->tracees);
	}
	creds_thread_done();
	return NULL;
}

static unsigned notifier_count(void)
{
	const char *e = getenv("MOAT_NOTIFIERS");
	long n = e ? strtol(e, NULL, 10) : 1;

	return (unsigned)MAX(1, MIN(n, MAX_NOTIFIERS));
}

/* Started once the keeper is forked (spawn.c relies on forking a single-threaded
 * process) and told to go, so that their cost overlaps the sandbox's own start-up; they
 * wait for the listener (take_listener()). */
static int notifier_start(struct run *R)
{
	struct sigaction sa = { .sa_handler = on_wake }; /* no SA_RESTART */
	unsigned want = notifier_count();
	sigset_t all, old;
	int r = 0;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, NULL);
	sem_init(&R->listener_ready, 0, 0);
	/* The threads start with every signal blocked and unblock only SIGUSR2: the
	 * process's signals stay with the main loop's signalfd. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (unsigned i = 0; i < want && r == 0; i++) {
		struct notifier *nt = &R->notifiers[i];

		nt->R = R;
		nt->req = calloc(1, R->req_size);
		r = nt->req ? -pthread_create(&nt->thread, NULL, notifier_main, nt) : -ENOMEM;
		if (r == 0)
			R->n_notifiers++;
		else {
			free(nt->req);
			nt->req = NULL;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return R->n_notifiers > 0 ? 0 : r;
}

/* Tell every notifier to stop without waiting: at teardown all threads are told first
 * and joined after (notifier_stop()), so that their wake-ups overlap instead of adding
 * up. A semaphore post too, for those still waiting for a listener. */
static void notifier_wake(struct run *R)
{
	atomic_store(&R->notifier_stop, true);
	for (unsigned i = 0; i < R->n_notifiers; i++) {
		sem_post(&R->listener_ready);
		pthread_kill(R->notifiers[i].thread, SIGUSR2);
	}
}

/* RECV does not return when the last filtered task is gone, and a signal sent just
 * before a thread enters it would be lost: signal each until it has left. */
static void notifier_stop(struct run *R)
{
	notifier_wake(R);
	for (unsigned i = 0; i < R->n_notifiers; i++) {
		struct notifier *nt = &R->notifiers[i];

		for (;;) {
			struct timespec ts;

			pthread_kill(nt->thread, SIGUSR2);
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 2000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			if (pthread_timedjoin_np(nt->thread, NULL, &ts) == 0)
				break;
		}
		tracee_cache_free(&nt->tracees);
		free(nt->req);
	}
	R->n_notifiers = 0;
}

static int ep_add(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	return RET_NERRNO(epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev));
}

/*
 * A unix connect continued after its check reaches whatever socket the kernel finds by
 * the name at that moment: one of the sandbox's view, unless the name goes through
 * /proc/self/fd/N/ of a directory from outside it. The sandbox's fds all come from its
 * view (or from a peer that chose to pass one), except the standard ones it inherits:
 * a directory there keeps unix connects performed by us.
 */
static bool stdio_is_dir(void)
{
	struct stat st;

	for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++)
		if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
			return true;
	return false;
}

/* A mapped /dev/ptmx opens through the host's /dev (vfs/ops.c open_source()): the kernel
 * finds no devpts beside a lone bind of it and answers ENOENT, so write opens (a pty is
 * opened O_RDWR) stay with moat where the table maps one. */
static int maps_ptmx_one(const struct vfs_mount_info *m, void *ud)
{
	struct stat st;

	if ((m->kind == VFS_MOUNT_BIND || m->kind == VFS_MOUNT_FILE) && m->host &&
	    stat(m->host, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(5, 2))
		*(bool *)ud = true;
	return 0;
}

static bool maps_ptmx(const struct vfs *v)
{
	bool found = false;

	vfs_foreach_mount(v, maps_ptmx_one, &found);
	return found;
}

/* The native-creates conditions but for --audit (docs/threat-model.md, "Native
 * creates"): nothing else asks for moat's own creates (the change set, every denial
 * named) and the kernel's view refuses every write the policy refuses. Then creates are
 * native, or with --audit checked, recorded and continued. */
static bool kernel_decides_writes(const struct run *R)
{
	const struct sup_opts *o = R->o;

	return !o->report_path && !o->cow && !o->verbose && R->feat.landlock_abi > 0 &&
	       !maps_ptmx(o->vfs);
}

/* --audit's native opens are recorded from a mark on each of the sandbox's mounts, in
 * place before the command exists (the keeper sends its listener after this). A covering
 * over its budget traps every open again (the keeper's filter): then no events. Without
 * the marks the opens would go unrecorded: the run does not start. */
static void mark_mounts(struct run *R, int root, bool trapped)
{
	int r;

	if (trapped) {
		R->ctx.record_native_opens = false;
		stubwatch_close_recorder(&R->stubs);
		return;
	}
	r = root < 0 ? -EBADF : stubwatch_mark_mounts(&R->stubs, R->keeper, root);
	if (r > 0) {
		log_debug("open events: %d mounts marked", r);
		return;
	}
	R->setup_errno = r < 0 ? -r : ENOENT;
	R->setup_stage = 0;
	log_error("cannot watch the sandbox's mounts for the audit stream's opens: %s",
		  strerror(R->setup_errno));
	stop(R, SUP_REASON_SETUP_FAILED, 0);
}

static void take_listener(struct run *R, pid_t from, int remote_fd)
{
	_cleanup_close_ int pidfd = -1;
	int fd, r;

	if (R->ctx.listener >= 0)
		return; /* only the first, from our own command, is trusted */
	pidfd = (int)syscall(SYS_pidfd_open, from, 0);
	fd = pidfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd, remote_fd, 0);
	if (fd < 0) {
		/* Without the listener the command's first exec would wait forever. */
		R->setup_errno = errno ? errno : EIO;
		R->setup_stage = 0;
		log_error("cannot take the seccomp listener from the command (pid %d): %s", from,
			  strerror(R->setup_errno));
		stop(R, SUP_REASON_SETUP_FAILED, 0);
		return;
	}
	R->ctx.listener = fd;
	R->ctx.cmd_host_pid = from;
	/* Linux 6.6: wake the tracee on the CPU that answered it; absent is only slower. */
	R->sync_wake_up = notify_set_sync_wake_up(fd) >= 0;
	/* Before any notifier may answer it: the command still runs moat's code (it waits
	 * for its argv, or for its first exec's answer), so its exec needs no seize later,
	 * on a warm start's request path. Failing that, the exec seizes it as usual. A
	 * command that may get its program's fd is seized only if it gets none: an exec
	 * by fd must not stop (hand_over_exec()). */
	if (R->exec_fd && !R->exec_handed) {
		R->cmd_pidfd = TAKE_FD(pidfd);
		if (R->started) /* the request came first */
			hand_over_exec(R, R->o->argv);
	} else if (R->native_exec) {
		/* No exec stop to seize it for; the listener is ours, it may go on. */
		if (sync_send_fd(R->syncfd, SYNC_EXEC_FD, 0, -1) < 0)
			log_debug("cannot let the command go on: %s", strerror(errno));
	} else if (R->ctx.continue_writes) {
		/* its execs are checked and continued with no exec stop (ctx.h) */
	} else {
		r = exectrace_seize_early(&R->ctx, from, pidfd);
		if (r < 0)
			log_debug("the command (pid %d) is seized at its exec instead: %s", from,
				  strerror(-r));
	}
	for (unsigned i = 0; i < R->n_notifiers; i++)
		sem_post(&R->listener_ready);
}

/* Namespaced: resolve through the sandbox's own root from now on (vfs_rebase()). The
 * keeper passes an fd of it; only the keeper's word counts. */
static void rebase_vfs(struct run *R, pid_t from, int root)
{
	int r;

	r = from != R->keeper || root < 0 ? -EPERM : vfs_rebase(R->ctx.vfs, root);
	if (r < 0) {
		/* Without it, fds would carry host paths: refuse to run rather than leak. */
		log_error("cannot enter the sandbox's root: %s", strerror(-r));
		R->setup_errno = -r;
		R->setup_stage = 0;
		stop(R, SUP_REASON_SETUP_FAILED, 0);
	}
}

/* SYNC_CREATED: what the keeper made, its identity and its path after the header. */
static void note_made(struct run *R, int dirfd, bool dir, const char *buf, size_t len)
{
	struct sync_created c;
	struct made_mountpoint *a;
	const char *vpath = buf + sizeof(c), *slash;
	char *copy = NULL;
	int sd;

	if (len <= sizeof(c) || buf[len - 1] != '\0' || !(slash = strrchr(vpath, '/')) ||
	    !slash[1]) {
		close(dirfd);
		return;
	}
	if (!(copy = strdup(vpath)) || !(a = realloc(R->made, (R->n_made + 1) * sizeof(*a)))) {
		log_warning("%s: made on the host for a mount point, will be left there: %s",
			    vpath, strerror(ENOMEM));
		free(copy);
		close(dirfd);
		return;
	}
	memcpy(&c, buf, sizeof(c));
	R->made = a;
	a[R->n_made] = (struct made_mountpoint){ .dirfd = dirfd, .vpath = copy,
						 .dev = (dev_t)c.dev, .ino = (ino_t)c.ino,
						 .dir = dir };
	R->n_made++;
	/* for a sweep by a later run, should this one be killed before remove_made() */
	sd = run_state_dir(R, true);
	if (sd < 0 && R->n_made == 1)
		log_info("mount points made on the host: not listed for a later run to remove "
			 "should this one be killed (no state directory of ours alone that the "
			 "sandbox does not see)");
	vfs_note_made(R->o->vfs, sd, copy, (dev_t)c.dev, (ino_t)c.ino, dir);
}

static void on_sync(struct run *R)
{
	struct {
		struct sync_msg m;
		char more[sizeof(struct sync_created) + PATH_MAX];
	} b;
	struct sync_msg m;
	char ctl[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &b, .iov_len = sizeof(b) };
	_cleanup_close_ int passed = -1;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			     .msg_controllen = sizeof(ctl) };
	struct ucred cred = { 0 };
	ssize_t n;

	n = recvmsg(R->syncfd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n == 0) {
		epoll_ctl(R->epfd, EPOLL_CTL_DEL, R->syncfd, NULL);
		return;
	}
	if (n < (ssize_t)sizeof(m))
		return;
	m = b.m;
	if (n != sizeof(m) && m.type != SYNC_CREATED)
		return;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); h; h = CMSG_NXTHDR(&mh, h))
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_CREDENTIALS)
			memcpy(&cred, CMSG_DATA(h), sizeof(cred));
		else if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS &&
			 h->cmsg_len == CMSG_LEN(sizeof(int)) && passed < 0)
			memcpy(&passed, CMSG_DATA(h), sizeof(int));
	switch (m.type) {
	case SYNC_LISTENER:
		take_listener(R, cred.pid, m.value);
		break;
	case SYNC_EXEC_FAILED:
		R->exec_errno = m.value;
		break;
	case SYNC_CREATED:
		if (cred.pid == R->keeper && passed >= 0)
			note_made(R, TAKE_FD(passed), m.value, b.more, (size_t)n - sizeof(m));
		break;
	case SYNC_SETUP_FAILED:
		R->setup_errno = m.value;
		R->setup_stage = m.value2;
		break;
	case SYNC_DNS:
		/* The keeper's DNS socket inside the sandbox's network namespace. */
		if (cred.pid == R->keeper && passed >= 0) {
			pthread_mutex_lock(&R->ctx.lock); /* sock.c's state: see struct sup_ctx */
			sup_net_dns_fd(&R->ctx, TAKE_FD(passed));
			pthread_mutex_unlock(&R->ctx.lock);
		} else if (cred.pid == R->keeper)
			log_warning("the sandbox has no DNS: %s", strerror(m.value));
		break;
	case SYNC_COVER_CACHE:
		if (cred.pid == R->keeper && passed >= 0 && R->cc_dir >= 0 && R->cc_new < 0)
			R->cc_new = TAKE_FD(passed);
		break;
	case SYNC_STATUS:
		R->have_cmd_status = true;
		R->cmd_status = m.value;
		break;
	case SYNC_STUBS:
		/* The filesystem that holds the stubs, whose mounts the mount table's copies
		 * leave out under --strict-hide (mounttab.h). Before the command exists. */
		if (cred.pid == R->keeper && passed >= 0 && R->ctx.hide_mount_table) {
			struct stat st;

			if (fstat(passed, &st) == 0) {
				R->ctx.stub_mounts.dev = st.st_dev;
				R->ctx.stub_mounts.known = true;
			}
		}
		/* Before the command's listener, which the keeper sends after this: no
		 * native open happens before the marks are in place. */
		if (cred.pid == R->keeper && passed >= 0 && R->stubs.fan >= 0) {
			int r = stubwatch_mark(&R->stubs, passed);

			if (r < 0)
				log_warning("cannot watch the stubs over hidden paths (%s): an open "
					    "of one finds an empty file and is not reported",
					    strerror(-r));
		}
		break;
	case SYNC_MOUNTS_READY:
		/* No notifier is working yet: the keeper sends this before it forks the
		 * command, whose listener arrives after it on this socket. */
		rebase_vfs(R, cred.pid, passed);
		if (cred.pid == R->keeper && R->stubs.opens >= 0)
			mark_mounts(R, passed, m.value & SPAWN_COVER_INCOMPLETE);
		if (cred.pid == R->keeper && (m.value & SPAWN_COVER_INCOMPLETE)) {
			/* An incomplete covering may have left a glob match in the
			 * namespace: a path swapped after a CONTINUE could reach it. */
			R->ctx.continue_ro_opens = false;
			R->ctx.continue_unix = false;
			R->ctx.continue_denied_opens = false;
			R->ctx.continue_writes = false;
			R->ctx.kernel_binds = false;
			R->ctx.hidden_names_shown = false;
			R->open_path = "emulated";
			log_info("every call by name is emulated in this run: the trees the hide "
				 "rules' globs can match in hold more than %u entries, or a path "
				 "longer than PATH_MAX, so they could not be covered at start-up",
				 VFS_COVER_BUDGET);
		} else if (cred.pid == R->keeper && (m.value & SPAWN_COVER_LINKS) &&
			   (R->ctx.continue_writes || R->native_exec)) {
			/* A hidden symlink, which no stub covers: a continued unlink whose
			 * path was swapped after the check, or a native one, would remove
			 * it. The keeper gave the command the filter that traps them. */
			R->ctx.continue_writes = false;
			log_info("creates, removes and write opens: performed by moat (a hidden "
				 "path is a symlink, which no stub covers)");
		}
		break;
	default:
		break;
	}
}

static void reap(struct run *R)
{
	int st;
	pid_t w;

	/* __WNOTHREAD: the stops of the exec tracer's tracees are its own (exectrace.c) */
	while ((w = waitpid(-1, &st, WNOHANG | __WNOTHREAD)) > 0)
		if (w == R->keeper) {
			R->keeper_done = true;
			R->keeper_status = st;
		}
}

/* Through the pidfd: once the keeper is reaped, its pid may be another process's. */
static void signal_keeper(struct run *R, int sig)
{
	if (R->pidfd >= 0)
		(void)syscall(SYS_pidfd_send_signal, R->pidfd, sig, NULL, 0);
	else if (!R->keeper_done)
		kill(R->keeper, sig);
}

#if MOAT_TEST_HOOKS
/* test_hooks builds: MOAT_TEST_DNS_DELAY=MS makes every host lookup of the DNS responder
 * take MS longer, as a name whose servers answer slowly does
 * (tests/escape/net/dns-slow.sh). */
static int test_slow_lookup(void *userdata, const char *name, int family,
                            struct net_ip *ret_ips, size_t max)
{
	int ms = *(const int *)userdata;
	struct timespec t = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
	return net_lookup_getaddrinfo(NULL, name, family, ret_ips, max);
}
#endif

/* test_hooks builds: MOAT_TEST_TEARDOWN_NOFILE=N leaves the supervisor with no fd to
 * open beyond N when the run ends, as a sandbox that exhausted them would. */
static void test_hook_nofile(void)
{
#if MOAT_TEST_HOOKS
	const char *e = getenv("MOAT_TEST_TEARDOWN_NOFILE");

	if (e) {
		rlim_t n = strtoul(e, NULL, 10);
		struct rlimit rl = { .rlim_cur = n, .rlim_max = n };

		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
#endif
}

/*
 * How long the keeper may take to kill the tree when asked. Unnamespaced, the keeper is
 * the subreaper of the whole tree and, on SIGTERM from us, kills its descendants before
 * it exits. Its limits and fd table are out of the sandbox's reach (it is not one of
 * the sandbox's pids, see handle_pid_arg()), ours may not be: a supervisor left without
 * a free fd cannot walk /proc. Namespaced, SIGKILL of pid 1 is enough.
 */
#define KEEPER_SWEEP_MS 2000

static void stop(struct run *R, enum sup_reason reason, int sig)
{
	if (R->reason == SUP_REASON_EXITED) {
		R->reason = reason;
		R->stop_signal = sig;
	}
	test_hook_nofile();
	/* Before the listener came, the command has not exec'd and forked nothing: there
	 * is no tree to sweep (and a keeper waiting for --start-fd's command would not
	 * see the SIGTERM). */
	if (!R->ctx.namespaced && !R->keeper_done && R->pidfd >= 0 && R->ctx.listener >= 0) {
		struct timespec pause = { 0, 1000 * 1000 };
		siginfo_t si;

		signal_keeper(R, SIGTERM);
		/* Not poll() on the pidfd: it fails with EINVAL when RLIMIT_NOFILE is below
		 * the number of fds it is given. WNOWAIT leaves the keeper to reap(). */
		for (int ms = 0; ms < KEEPER_SWEEP_MS; ms++) {
			si.si_pid = 0;
			if (waitid(P_PID, (id_t)R->keeper, &si, WEXITED | WNOHANG | WNOWAIT) < 0 ||
			    si.si_pid == R->keeper)
				break;
			nanosleep(&pause, NULL);
		}
	}
	signal_keeper(R, SIGKILL);
}

/*
 * The mount points the keeper made in mappings of host directories (SYNC_CREATED), once
 * every process of the sandbox is gone and with it the namespace whose mounts covered
 * them: each is removed, the deepest first, through the directory it was made in (held
 * since, so that a rename during the run steers nothing elsewhere) and only while it is
 * the object made then. What the run put in a directory the keeper made on the way to
 * one keeps that directory, and is said. remove: false (the sandbox may still run)
 * lets go of them, each named in a warning.
 */
static void remove_made(struct run *R, bool remove)
{
	for (size_t i = R->n_made; i-- > 0;) {
		struct made_mountpoint *mp = &R->made[i];
		const char *name = strrchr(mp->vpath, '/') + 1;
		struct stat st;

		if (!remove)
			log_warning("%s: made on the host for a mount point, left there: the "
				    "sandbox may still run", mp->vpath);
		else if (fstatat(mp->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			; /* gone already */
		else if (st.st_dev != mp->dev || st.st_ino != mp->ino)
			log_warning("%s: left on the host: it is no longer what moat made there "
				    "for a mount point", mp->vpath);
		else if (unlinkat(mp->dirfd, name, mp->dir ? AT_REMOVEDIR : 0) < 0)
			log_warning("%s: made on the host for a mount point, left there: %s",
				    mp->vpath, strerror(errno));
		safe_close(mp->dirfd);
		free(mp->vpath);
	}
	free(R->made);
	R->made = NULL;
	R->n_made = 0;
}

/*
 * The fd table grown to FD_TABLE_SLOTS now, while we are a single thread. Grown later,
 * with the notifier and the other threads sharing it, the kernel frees the old table only
 * after an RCU grace period and waits for it in the call that crossed the size
 * (expand_fdtable()): 12-15 ms on this VM, in whichever open or socket took the 65th fd
 * at start-up (a run whose environment gave it one fd more paid it: bench/RESULTS.md,
 * "The fd table grown before the threads"), and again at 128, 256 and so on. 1024 slots
 * are 8 KiB; past them each doubling still waits once.
 */
#define FD_TABLE_SLOTS 1024

static void presize_fd_table(void)
{
	struct rlimit rl;
	long last = FD_TABLE_SLOTS - 1;
	int fd, high;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (rlim_t)last >= rl.rlim_cur)
		last = (long)rl.rlim_cur - 1;
	fd = open("/", O_PATH | O_CLOEXEC);
	if (fd < 0)
		return;
	high = fcntl(fd, F_DUPFD_CLOEXEC, (int)last);
	if (high >= 0)
		close(high);
	close(fd);
}

/* The soft limit up to the hard one: the last sweep opens /proc files. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void on_signal(struct run *R)
{
	struct signalfd_siginfo si;

	while (read(R->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD)
			reap(R);
		else
			stop(R, SUP_REASON_SUPERVISOR_SIGNAL, (int)si.ssi_signo);
	}
}

static void start_timeout(struct run *R)
{
	struct itimerspec its = { 0 };
	double t = R->o->timeout;

	if (t <= 0)
		return;
	its.it_value.tv_sec = (time_t)t;
	its.it_value.tv_nsec = (long)((t - (double)(time_t)t) * 1e9);
	R->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	timerfd_settime(R->timerfd, 0, &its, NULL);
	ep_add(R->epfd, R->timerfd);
}

/*
 * --start-fd: the sandbox is built and waits (a warm start, for moat serve's pool); the
 * command comes as one JSON object, {"argv": [...], "timeout": SECONDS}, ended by a
 * newline or EOF.
 * The run's clock and its timeout start then. EOF without a command ends the run
 * (reason setup-failed, ECANCELED): the pool discards a sandbox that way.
 */
#define START_REQ_MAX (256 * 1024)

/*
 * The command waits for SYNC_EXEC_FD after its argv: the program found and checked
 * (firstexec.c), which it runs by fd with no exec stop; or none, and it goes by name,
 * seized now as take_listener() seizes a command that never gets an fd.
 */
static void hand_over_exec(struct run *R, char *const *argv)
{
	_cleanup_close_ int fd = -1;
	int r;

	/* Before its listener, the command is not known yet: take_listener() calls again. */
	if (!R->exec_fd || R->exec_handed || R->ctx.listener < 0)
		return;
	R->exec_handed = true;
	fd = firstexec_open(&R->ctx, R->ctx.cmd_host_pid, argv, R->cmd_envp, R->cmd_cwd);
	if (fd < 0 && R->cmd_pidfd >= 0 && !R->ctx.continue_writes) {
		r = exectrace_seize_early(&R->ctx, R->ctx.cmd_host_pid, R->cmd_pidfd);
		if (r < 0)
			log_debug("the command (pid %d) is seized at its exec instead: %s",
				  R->ctx.cmd_host_pid, strerror(-r));
	}
	log_debug("the command's program: %s", fd >= 0 ? "by fd" : strerror(-fd));
	R->cmd_pidfd = safe_close(R->cmd_pidfd);
	if (sync_send_fd(R->syncfd, SYNC_EXEC_FD, 0, fd) < 0)
		log_debug("cannot hand the command its program: %s", strerror(errno));
}

static void on_start(struct run *R)
{
	struct sup_opts *o = R->o;
	char chunk[16384];
	ssize_t n = read(o->start_fd, chunk, sizeof(chunk));
	json_t *j, *a, *v;
	char **argv;
	size_t i;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0) {
		char *b = R->start_len + (size_t)n <= START_REQ_MAX ?
				  realloc(R->start_buf, R->start_len + (size_t)n + 1) : NULL;

		if (!b)
			goto bad;
		R->start_buf = b;
		memcpy(b + R->start_len, chunk, (size_t)n);
		R->start_len += (size_t)n;
		/* A newline ends the request as EOF does (JSON text has none unescaped):
		 * a warm start need not wait for the writer's close. */
		if (!memchr(chunk, '\n', (size_t)n))
			return;
	}
	epoll_ctl(R->epfd, EPOLL_CTL_DEL, o->start_fd, NULL);
	if (!R->start_len) {
		R->setup_errno = ECANCELED;
		stop(R, SUP_REASON_SETUP_FAILED, 0);
		return;
	}
	j = json_loadb(R->start_buf, R->start_len, 0, NULL);
	a = json_object_get(j, "argv");
	v = json_object_get(j, "timeout");
	if (!json_is_array(a) || !json_array_size(a) || (v && !(json_number_value(v) > 0))) {
		json_decref(j);
		goto bad;
	}
	argv = calloc(json_array_size(a) + 1, sizeof(char *));
	json_array_foreach(a, i, v)
		if (!argv || !json_is_string(v) || !(argv[i] = strdup(json_string_value(v)))) {
			json_decref(j);
			goto bad;
		}
	if ((v = json_object_get(j, "timeout")))
		o->timeout = json_number_value(v);
	json_decref(j);
	o->argv = argv; /* lives until exit, like the argv of the command line */
	/* With --argv-fd the command has its argv already (and there is no stream). */
	if (o->argv_fd >= 0)
		hand_over_exec(R, argv);
	R->started = true;
	R->t_start = now_mono_ns();
	R->start_wall_ns = wall_ns();
	audit_header(R);
	start_timeout(R);
	/* With --argv-fd the command has its argv from moat serve already, or has it
	 * soon: this one only tells the report and the timeout. */
	if (o->argv_fd < 0 && spawn_send_argv(R->syncfd, argv) < 0)
		goto bad;
	hand_over_exec(R, argv);
	return;
bad:
	log_error("--start-fd: expected {\"argv\": [...], \"timeout\": SECONDS}");
	R->setup_errno = EPROTO;
	stop(R, SUP_REASON_SETUP_FAILED, 0);
}

/*
 * --argv-fd: moat serve writes the command's argv before the run's line, so that the
 * command starts first. A command that made any call had its argv, so the server has
 * written the line as well, in the same turn of its loop; it may still be on its way
 * when the command has ended already. Wait for it, bounded: the report names the
 * command and its wall time starts there.
 */
#define START_LINE_WAIT_MS 2000
static void collect_start_line(struct run *R)
{
	const struct sup_opts *o = R->o;

	for (int i = 0; i < START_REQ_MAX / 4096 && o->start_fd >= 0 && o->argv_fd >= 0 &&
			!R->started && !R->setup_errno && atomic_load(&R->ctx.n.notified);
	     i++) {
		struct pollfd p = { .fd = o->start_fd, .events = POLLIN };

		if (poll(&p, 1, START_LINE_WAIT_MS) <= 0)
			break;
		on_start(R);
	}
}

static int loop(struct run *R)
{
	struct epoll_event evs[8];

	while (!R->keeper_done) {
		int n = epoll_wait(R->epfd, evs, ELEMENTSOF(evs), -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return negative_errno();
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;

			if (fd == R->syncfd)
				on_sync(R);
			else if (fd == R->sigfd)
				on_signal(R);
			else if (fd == R->pidfd && R->external)
				R->keeper_done = true; /* not our child: its pidfd says it is gone */
			else if (fd == R->pidfd)
				reap(R);
			else if (fd == R->o->start_fd && !R->started)
				on_start(R);
			else if (fd == R->timerfd) {
				uint64_t x;
				(void)!read(R->timerfd, &x, sizeof(x));
				stop(R, SUP_REASON_TIMEOUT, 0);
			} else {
				pthread_mutex_lock(&R->ctx.lock);
				sup_net_event(&R->ctx, fd, evs[i].events);
				pthread_mutex_unlock(&R->ctx.lock);
			}
		}
		/* The command's status came: the keeper is on its way out, which takes its
		 * namespaces down (a millisecond or so) before we can reap it. What dead
		 * runs left behind is swept meanwhile, on a CPU that would wait anyway. */
		if (R->have_cmd_status && R->sweep_pending) {
			vfs_sweep_stale(R->o->vfs, run_state_dir(R, false));
			R->sweep_pending = false;
		}
	}
	/* The keeper is gone; collect its last words (the command's status) if any. */
	while (R->syncfd >= 0) {
		struct sync_msg m;
		ssize_t k = recv(R->syncfd, &m, sizeof(m), MSG_DONTWAIT | MSG_PEEK);
		if (k != sizeof(m))
			break;
		on_sync(R);
	}
	return 0;
}

/* ---- exit status and report ---- */

static int exit_status(struct run *R)
{
	int st;

	if (R->setup_errno) {
		R->reason = SUP_REASON_SETUP_FAILED;
		return MOAT_EXIT_FAILURE;
	}
	if (R->reason == SUP_REASON_TIMEOUT)
		return MOAT_EXIT_TIMEOUT;
	if (R->reason == SUP_REASON_SUPERVISOR_SIGNAL)
		return 128 + R->stop_signal;
	st = R->have_cmd_status ? R->cmd_status : R->keeper_status;
	if (R->exec_errno) {
		R->reason = SUP_REASON_EXEC_FAILED;
		return R->exec_errno == ENOENT || R->exec_errno == ENOTDIR ? MOAT_EXIT_NOTFOUND
									   : MOAT_EXIT_NOEXEC;
	}
	if (WIFSIGNALED(st)) {
		R->reason = SUP_REASON_SIGNALED;
		if (WTERMSIG(st) == SIGKILL && R->cgs.oom_kills)
			R->reason = SUP_REASON_MEMORY;
		else if (WTERMSIG(st) == SIGXCPU)
			R->reason = SUP_REASON_CPU;
		R->stop_signal = WTERMSIG(st);
		return 128 + WTERMSIG(st);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : MOAT_EXIT_FAILURE;
}

static void denial_summary(struct run *R)
{
	uint64_t total = atomic_load(&R->ctx.n.denied);
	char line[1024];
	size_t off = 0;
	int shown = 0;

	if (!total || R->o->quiet)
		return;
	for (int id = 0; id < _SC_ID_MAX && off < sizeof(line) - 64; id++) {
		unsigned k = atomic_load(&R->ctx.denials_by_id[id]);
		if (!k)
			continue;
		off += (size_t)snprintf(line + off, sizeof(line) - off, "%s%s %u", shown++ ? ", " : "",
					sc_id_name((enum sc_id)id), k);
	}
	log_notice("%llu denied call%s (%s)%s", (unsigned long long)total, total == 1 ? "" : "s",
		   line, R->o->verbose ? "" : "; run with -v to see each");
}

static const char *const change_kinds[] = { "created", "written", "deleted", "renamed" };

static json_t *changes_to_json(const struct run *R)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < R->n_changes; i++) {
		const struct vfs_change *ch = &R->changes[i];
		json_t *o = json_object();
		char hex[65];

		json_object_set_new(o, "kind", json_string(change_kinds[ch->kind]));
		json_object_set_new(o, "path", json_string(ch->vpath));
		if (ch->old_vpath)
			json_object_set_new(o, "old_path", json_string(ch->old_vpath));
		json_object_set_new(o, "exists", json_boolean(ch->exists));
		if (ch->exists) {
			json_object_set_new(o, "size", json_integer((json_int_t)ch->size));
			sodium_bin2hex(hex, sizeof(hex), ch->sha256, 32);
			json_object_set_new(o, "sha256", ch->hash_skipped ? json_null() : json_string(hex));
			if (ch->hash_skipped)
				json_object_set_new(o, "hash_skipped", json_string(ch->hash_skipped));
		}
		json_array_append_new(arr, o);
	}
	return arr;
}

static void write_report(struct run *R, int status)
{
	json_t *j = json_object(), *f = json_object(), *missing = json_array(), *lim = json_object();
	json_t *den = json_object(), *by = json_object(), *ne = json_array();
	const struct cgroup_stats cs = R->cgs;
	const struct rusage ru = R->ru;
	uint64_t cpu_us = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
			  (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
	char *text;
	int r;

	json_object_set_new(j, "moat_version", json_string(MOAT_VERSION));
	json_object_set_new(j, "run_id", json_string(R->run_id));
	json_object_set_new(j, "exit_status", json_integer(status));
	json_object_set_new(j, "reason", json_string(sup_reason_name(R->reason)));
	if (R->stop_signal)
		json_object_set_new(j, "signal", json_integer(R->stop_signal));
	if (R->setup_errno) {
		char why[256];
		snprintf(why, sizeof(why), "%s: %s", spawn_stage_name(R->setup_stage),
			 strerror(R->setup_errno));
		json_object_set_new(j, "setup_error", json_string(why));
	} else if (R->setup_msg[0]) {
		json_object_set_new(j, "setup_error", json_string(R->setup_msg));
	}
	/* Whole microseconds, printed with 15 significant digits (below): a double holds
	 * them exactly, so 36.821 prints as 36.821, not 36.820999999999998. */
	json_object_set_new(j, "wall_ms", json_real((double)((R->t_end - R->t_start + 500) / 1000) / 1e3));
	json_object_set_new(j, "cpu_ms", json_real((double)cpu_us / 1e3));
	json_object_set_new(j, "peak_memory", json_integer(cs.peak_memory ? (json_int_t)cs.peak_memory
									  : (json_int_t)ru.ru_maxrss * 1024));
	json_object_set_new(j, "mode", json_string(R->ctx.namespaced ? "namespaced" : "unnamespaced"));
	json_object_set_new(f, "kernel", json_string(R->feat.kernel));
	json_object_set_new(f, "user_namespaces", json_boolean(R->feat.user_ns));
	json_object_set_new(f, "seccomp_sync_wake_up", json_boolean(R->sync_wake_up));
	json_object_set_new(f, "landlock_abi", json_integer(R->feat.landlock_abi));
	json_object_set_new(f, "cgroup", json_integer(R->have_cg ? R->cg.version : 0));
	json_object_set_new(f, "pidfd", json_boolean(R->feat.pidfd));
	/* read_only_opens: native (the stubs' fanotify marks report denied opens),
	 * continued or emulated; unix_sockets: continued (the kernel performs them as the
	 * program) or emulated (moat does) */
	if (R->open_path) {
		json_object_set_new(f, "read_only_opens", json_string(R->open_path));
		json_object_set_new(f, "unix_sockets",
				    json_string(R->ctx.continue_unix ? "continued" : "emulated"));
		/* which ones: unnamespaced, only those inside Landlock's carved read set */
		if (R->readset)
			json_object_set_new(f, "continued_opens", json_pack("{s:s, s:i}", "where",
					    "landlock-read-set", "carved_rules",
					    (int)ll_readset_rules(R->readset)));
	}
	if (!R->sync_wake_up)
		json_array_append_new(missing, json_string("SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP"));
	if (!R->feat.user_ns)
		json_array_append_new(missing, json_string("user namespaces"));
	if (!R->have_cg && (R->o->memory || R->o->pids))
		json_array_append_new(missing, json_string("cgroup"));
	if (!R->feat.landlock_abi)
		json_array_append_new(missing, json_string("landlock"));
	json_object_set_new(j, "features", f);
	json_object_set_new(j, "missing", missing);
	for (size_t i = 0; i < R->n_not_enforced; i++)
		json_array_append_new(ne, json_string(R->not_enforced[i]));
	json_object_set_new(lim, "not_enforced", ne);
	if (R->have_cg) {
		json_object_set_new(lim, "pids_limit_hits", json_integer((json_int_t)cs.pids_max_hits));
		json_object_set_new(lim, "oom_kills", json_integer((json_int_t)cs.oom_kills));
	}
	if (R->disk_size)
		/* full: the run met ENOSPC at its quota (tmpfs leaves no block free then) */
		json_object_set_new(lim, "disk", json_pack("{s:I, s:I, s:b}", "size",
							   (json_int_t)R->disk_size, "used",
							   (json_int_t)R->disk_used, "full",
							   R->disk_used + 65536 >= R->disk_size));
	json_object_set_new(j, "limits", lim);
	json_object_set_new(den, "total", json_integer((json_int_t)atomic_load(&R->ctx.n.denied)));
	for (int id = 0; id < _SC_ID_MAX; id++) {
		unsigned k = atomic_load(&R->ctx.denials_by_id[id]);
		if (k)
			json_object_set_new(by, sc_id_name((enum sc_id)id), json_integer(k));
	}
	json_object_set_new(den, "by_syscall", by);
	json_object_set_new(j, "denials", den);
	json_object_set_new(j, "notifications", json_integer((json_int_t)atomic_load(&R->ctx.n.notified)));
	json_object_set_new(j, "changes", changes_to_json(R));
	json_object_set(j, "workspace_git", R->git ? R->git : json_null());
	if (R->cow)
		json_object_set(j, "cow", R->cow);
	if (R->o->policy_json)
		json_object_set_new(j, "policy_sha256", json_string(R->o->policy_hash));

	if (R->teardown_signal)
		json_object_set_new(j, "teardown_interrupted", json_string(R->teardown_signal));

	text = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
	r = -ENOMEM;
	if (text) {
		char *line = NULL;
		int len = asprintf(&line, "%s\n", text);

		r = len < 0 ? -ENOMEM : out_commit(&R->report_out, line, (size_t)len);
		free(line);
	}
	if (r < 0)
		log_error("cannot write the report %s: %s", R->o->report_path, strerror(-r));
	free(text);
	json_decref(j);
}

static void not_enforced(struct run *R, const char *what)
{
	if (R->n_not_enforced < ELEMENTSOF(R->not_enforced))
		R->not_enforced[R->n_not_enforced++] = strdup(what);
	log_warning("%s", what);
}

/* ---- live events (events.h) ---- */

static void run_events(struct run *R, int status)
{
	const struct rusage *ru = &R->ru;
	uint64_t cpu_ns;

	if (!R->ctx.events)
		return;
	switch (R->reason) {
	case SUP_REASON_TIMEOUT:
	case SUP_REASON_MEMORY:
	case SUP_REASON_PIDS:
	case SUP_REASON_CPU:
		events_limit(R->ctx.events, sup_reason_name(R->reason), NULL);
		break;
	default:
		break;
	}
	cpu_ns = (uint64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000000ull +
		 (uint64_t)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) * 1000ull;
	events_result(R->ctx.events, status, sup_reason_name(R->reason), R->t_end - R->t_start,
		      cpu_ns, atomic_load(&R->ctx.n.denied));
	events_close(R->ctx.events);
	R->ctx.events = NULL;
}

/* ---- the audit stream ---- */

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Open the stream and write its header before the sandbox exists: whatever happens to
 * the run (or to moat) later, the stream says which run it is. The file was created by
 * out_create(); the writer gets its own fd of it. */
static int audit_start(struct run *R)
{
	struct sup_opts *o = R->o;
	struct audit_opts ao = {
		.session = o->session,
		.tenant = o->tenant,
		.key_path = o->audit_key,
		.stacks_all = o->audit_stacks_all,
	};
	int r, fd;

#if MOAT_TEST_HOOKS
	/* MOAT_TEST_AUDIT_BUFFER=BYTES: a pending-record buffer small enough to fill */
	if (getenv("MOAT_TEST_AUDIT_BUFFER"))
		ao.buffer_bytes = strtoul(getenv("MOAT_TEST_AUDIT_BUFFER"), NULL, 10);
#endif
	fd = fcntl(R->audit_out.fd, F_DUPFD_CLOEXEC, 3);
	r = fd < 0 ? -errno : audit_writer_open_fd(fd, &ao, &R->ctx.audit);
	if (r < 0) {
		snprintf(R->setup_msg, sizeof(R->setup_msg), "cannot open the audit stream %s: %s",
			 o->audit_path, r == -EBADMSG ? "--audit-key is not a moat secret key"
						      : strerror(-r));
		log_error("%s", R->setup_msg);
		return r;
	}
	/* With --start-fd the command is not known yet: its header is written when it
	 * arrives, before it runs (on_start()). */
	if (o->start_fd < 0)
		audit_header(R);
	return 0;
}

/* The header. SYNC_WAKE_UP is a flag of the listener, which does not exist yet: the
 * header says whether this kernel has it (6.6 and later); the report has the listener's
 * own answer. */
static void audit_header(struct run *R)
{
	struct sup_opts *o = R->o;
	struct audit_feature feats[] = {
		{ "user_namespaces", R->feat.user_ns, NULL },
		{ "SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP", kernel_at_least(R->feat.kernel, 6, 6),
		  "from the kernel version" },
		{ "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV", R->feat.wait_killable, NULL },
		{ "landlock", R->feat.landlock_abi > 0, NULL },
		{ "cgroup", R->have_cg, R->have_cg ? (R->cg.version == 2 ? "v2" : "v1") : R->cg_why },
		{ "pidfd_getfd", R->feat.pidfd_getfd, NULL },
		{ "proc_connector", proctrack_connected(R->ctx.proctrack), R->proctrack_why },
		{ "native_opens_from_fanotify", R->ctx.record_native_opens,
		  R->ctx.record_native_opens ? "read-only opens run natively and are recorded "
					       "from the kernel's open events (dec native)" : NULL },
		/* last: left out where unknown */
		{ "metadata_calls_recorded", R->meta_trapped,
		  R->meta_trapped ? NULL
				  : "stat, access, readlink and listings answered by the kernel "
				    "in the covered namespace (--strict-hide records them)" },
	};
	const char *names[256];
	char buf[256][128];
	char cwd[PATH_MAX];
	size_t n = 0;
	extern char **environ;

	if (!R->ctx.audit || R->audit_hdr_done)
		return;
	R->audit_hdr_done = true;
	/* Names only: values of the caller's environment never enter the stream. */
	for (char **e = environ; *e && n < ELEMENTSOF(names) - 1; e++) {
		size_t len = strcspn(*e, "=");
		snprintf(buf[n], sizeof(buf[n]), "%.*s", (int)MIN(len, 127), *e);
		names[n] = buf[n];
		n++;
	}
	names[n] = NULL;
	if (!getcwd(cwd, sizeof(cwd)))
		snprintf(cwd, sizeof(cwd), "?");
	struct audit_hdr h = {
		.moat_version = MOAT_VERSION,
		.run_id = R->run_id,
		.argv = (const char *const *)o->argv,
		.cwd = cwd,
		.env_names = names,
		.policy_json = o->policy_json,
		.policy_hash = o->policy_hash,
		.mode = R->ctx.namespaced ? "namespaced" : "unnamespaced",
		.kernel = R->feat.kernel,
		.arch = sc_arch_name(R->ctx.arch),
		.features = feats,
		.n_features = ELEMENTSOF(feats) - !R->meta_known,
		.start_wall_ns = R->start_wall_ns,
		.start_mono_ns = R->t_start,
	};
	if (audit_hdr(R->ctx.audit, &h) < 0)
		log_warning("the audit stream has no header: its buffer is full");
	start_proctrack(R);
}

/* Process records only after the header (the stream starts with it), and once the
 * sandbox's first process exists: whichever of the two comes last calls this. */
static void start_proctrack(struct run *R)
{
	if (!R->ctx.audit || !R->audit_hdr_done || R->keeper <= 0)
		return;
	if (proctrack_start(R->ctx.proctrack, R->ctx.audit, R->keeper) < 0)
		log_warning("no fork and exit records: cannot start their thread");
}

static int collect_change(const struct vfs_change *ch, void *ud)
{
	struct run *R = ud;
	struct vfs_change *v;

	v = realloc(R->changes, (R->n_changes + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	R->changes = v;
	v[R->n_changes] = *ch;
	v[R->n_changes].vpath = strdup(ch->vpath);
	v[R->n_changes].old_vpath = ch->old_vpath ? strdup(ch->old_vpath) : NULL;
	R->n_changes++;
	return 0;
}

/* Hashing the run's files may not hold moat up for ever: the sandbox chose them. */
#define HASH_MAX_SIZE ((uint64_t)1 << 30)
#define HASH_MAX_NS (5 * 1000000000ull)

/* Stat and hash every changed file once, for both the report and the audit footer. A
 * SIGINT/SIGTERM/SIGHUP/SIGQUIT meanwhile stops the hashing (they stay blocked for the
 * signalfd: this one sees those that arrive now). */
static void collect_changes(struct run *R)
{
	struct vfs_hash_limits lim = { .max_size = HASH_MAX_SIZE, .max_ns = HASH_MAX_NS };
	struct signalfd_siginfo si;
	sigset_t stops;

	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGHUP);
	sigaddset(&stops, SIGQUIT);
	lim.cancel_fd = signalfd(-1, &stops, SFD_CLOEXEC | SFD_NONBLOCK);
#if MOAT_TEST_HOOKS
	{
		/* MOAT_TEST_HASH_LIMITS=BYTES:MS (tests only): other bounds, 0 = none */
		const char *e = getenv("MOAT_TEST_HASH_LIMITS"), *colon = e ? strchr(e, ':') : NULL;

		if (colon) {
			lim.max_size = strtoull(e, NULL, 10);
			lim.max_ns = strtoull(colon + 1, NULL, 10) * 1000000ull;
			log_warning("test hook: hash limits %s", e);
		}
	}
#endif
	vfs_changes_foreach_limited(R->ctx.vfs, &lim, collect_change, R);
	if (lim.cancel_fd >= 0 && read(lim.cancel_fd, &si, sizeof(si)) == sizeof(si)) {
		R->teardown_signal = sigabbrev_np((int)si.ssi_signo);
		log_notice("SIG%s: stopped hashing the run's files; writing what is known",
			   R->teardown_signal ? R->teardown_signal : "?");
	}
	for (size_t i = 0; i < R->n_changes; i++)
		if (R->changes[i].hash_skipped && streq(R->changes[i].hash_skipped, "size"))
			log_notice("%s not hashed: larger than %llu MiB", R->changes[i].vpath,
				   (unsigned long long)(lim.max_size >> 20));
		else if (R->changes[i].hash_skipped && streq(R->changes[i].hash_skipped, "time")) {
			log_notice("hashing the run's files took more than %llu s: the rest are "
				   "not hashed", (unsigned long long)(lim.max_ns / 1000000000ull));
			break;
		}
	safe_close(lim.cancel_fd);
}

static void free_changes(struct run *R)
{
	for (size_t i = 0; i < R->n_changes; i++) {
		free((char *)R->changes[i].vpath);
		free((char *)R->changes[i].old_vpath);
	}
	free(R->changes);
	R->changes = NULL;
	R->n_changes = 0;
}

static bool kernel_at_least(const char *release, int major, int minor)
{
	int a = 0, b = 0;

	return sscanf(release, "%d.%d", &a, &b) == 2 && (a > major || (a == major && b >= minor));
}

static void audit_finish(struct run *R, int status)
{
	struct audit_change *l = calloc(R->n_changes ? R->n_changes : 1, sizeof(*l));
	const struct rusage *ru = &R->ru;
	uint64_t dropped;
	int r;

	for (size_t i = 0; l && i < R->n_changes; i++) {
		const struct vfs_change *ch = &R->changes[i];

		l[i] = (struct audit_change){
			.kind = change_kinds[ch->kind],
			.path = ch->vpath,
			.old_path = ch->old_vpath,
			.size = ch->size,
			.sha256 = ch->exists && !ch->hash_skipped ? ch->sha256 : NULL,
			.hash_skipped = ch->exists ? ch->hash_skipped : NULL,
		};
	}
	struct audit_ftr f = {
		.exit_status = status,
		.reason = sup_reason_name(R->reason),
		.wall_ns = R->t_end - R->t_start,
		.cpu_ns = (uint64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000000ull +
			  (uint64_t)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) * 1000ull,
		.peak_memory = R->cgs.peak_memory ? R->cgs.peak_memory
						  : (uint64_t)ru->ru_maxrss * 1024,
		.changes = l,
		.n_changes = l ? R->n_changes : 0,
	};
	dropped = audit_writer_dropped(R->ctx.audit);
	r = audit_writer_close(R->ctx.audit, &f);
	R->ctx.audit = NULL;
	/* The stream says so in its checkpoints and footer; whoever started the run
	 * should not have to dump it to learn that records are missing. */
	if (dropped)
		log_warning("the audit stream %s lacks %llu record%s: they came faster than it "
			    "was written, and its buffer was full", R->o->audit_path,
			    (unsigned long long)dropped, dropped == 1 ? "" : "s");
	if (r < 0)
		log_error("the audit stream %s is incomplete: %s", R->o->audit_path, strerror(-r));
	free(l);
	/* The sandbox may have renamed, removed or replaced the name while it ran. */
	r = out_settle_stream(&R->audit_out);
	if (r > 0)
		log_warning("the audit stream %s had been moved or replaced during the run; "
			    "moat put its own copy back", R->o->audit_path);
	else if (r < 0)
		log_error("cannot put the audit stream back at %s: %s", R->o->audit_path,
			  strerror(-r));
}

/* ---- setup ---- */

static int setup_limits(struct run *R)
{
	struct sup_opts *o = R->o;
	char msg[512];

	/* Only limits need a cgroup: the pid namespace, or the keeper as a subreaper,
	 * already kills the whole tree, and a cgroup costs a freeze and an rmdir that
	 * waits for the group to empty at exit (tens of milliseconds on v1). */
	if (!o->memory && !o->pids) {
		snprintf(R->cg_why, sizeof(R->cg_why), "not needed (no --memory or --pids)");
		return 0;
	}
	if (cg_create(&R->cg, o->memory, o->pids, R->cg_why, sizeof(R->cg_why)) >= 0) {
		R->have_cg = true;
		R->feat.cgroup = R->cg.version;
		return 0;
	}
	snprintf(msg, sizeof(msg),
		 "%s%s cannot be enforced for the whole run (%s); falling back to per-process %s",
		 o->memory ? "--memory" : "", o->pids ? (o->memory ? " and --pids" : "--pids") : "",
		 R->cg_why, o->memory && o->pids ? "RLIMIT_AS and per-user RLIMIT_NPROC"
						: o->memory ? "RLIMIT_AS" : "per-user RLIMIT_NPROC");
	if (o->strict)
		return log_error_errno(-EPERM, "%s; refusing (--strict)", msg);
	not_enforced(R, msg);
	return 0;
}

/* Before the sandbox exists: the run id, and the output files, opened now so that
 * nothing the sandbox does to their names later can redirect them. */
static int open_outputs(struct run *R)
{
	struct sup_opts *o = R->o;
	struct moat_error e = { 0 };

	if (o->run_id)
		snprintf(R->run_id, sizeof(R->run_id), "%s", o->run_id);
	else {
		unsigned char id[16];

		randombytes_buf(id, sizeof(id));
		sodium_bin2hex(R->run_id, sizeof(R->run_id), id, sizeof(id));
	}
	if (o->report_path && out_open(&R->report_out, o->report_path, &e) < 0) {
		/* Nowhere to report to: say it here, and only here. */
		log_error("--report: %s", moat_error_str(&e));
		o->report_path = NULL;
		return -EINVAL;
	}
	if (o->audit_path && out_open(&R->audit_out, o->audit_path, &e) < 0) {
		snprintf(R->setup_msg, sizeof(R->setup_msg), "--audit: %s", moat_error_str(&e));
		log_error("%s", R->setup_msg);
		return -EINVAL;
	}
	if (o->report_path && o->audit_path && streq(R->report_out.dir, R->audit_out.dir) &&
	    streq(R->report_out.base, R->audit_out.base)) {
		/* The report would be renamed over the stream at the end. */
		snprintf(R->setup_msg, sizeof(R->setup_msg), "--report and --audit name the same file");
		log_error("%s", R->setup_msg);
		o->report_path = NULL;
		return -EINVAL;
	}
	return 0;
}

/*
 * Once the table is final: refuse a stream the sandbox could reach, unless asked for. It
 * is written while the sandbox runs, which could read it or alter it. The report is not
 * refused: it is written once the sandbox is gone, as a new file renamed into the
 * directory held since before the run, so nothing the sandbox left there is followed.
 */
static int check_outputs(struct run *R)
{
	char where[PATH_MAX];

	if (R->audit_out.dirfd >= 0 && !R->o->output_in_workspace &&
	    out_in_writable_mapping(&R->audit_out, R->ctx.vfs, where, sizeof(where))) {
		snprintf(R->setup_msg, sizeof(R->setup_msg),
			 "--audit %s is inside %s, which the sandbox can write: it could read or "
			 "alter the stream while it runs. Name a file elsewhere, or pass "
			 "--output-in-workspace to accept that", R->audit_out.path, where);
		log_error("%s", R->setup_msg);
		return -EPERM;
	}
	if (R->audit_out.dirfd >= 0) {
		struct moat_error e = { 0 };

		if (out_create(&R->audit_out, &e) < 0) {
			snprintf(R->setup_msg, sizeof(R->setup_msg), "--audit: %s", moat_error_str(&e));
			log_error("%s", R->setup_msg);
			return -EIO;
		}
	}
	return 0;
}

/* moat failed before the command could run (exit 125): the report and the stream still
 * say so, with why. */
static int fail_early(struct run *R)
{
	R->reason = SUP_REASON_SETUP_FAILED;
	R->t_end = now_mono_ns();
	getrusage(RUSAGE_CHILDREN, &R->ru);
	if (R->o->report_path)
		write_report(R, MOAT_EXIT_FAILURE);
	if (R->ctx.audit) {
		audit_header(R);
		proctrack_stop(R->ctx.proctrack);
		audit_finish(R, MOAT_EXIT_FAILURE);
	} else {
		out_discard(&R->audit_out);
	}
	proctrack_free(R->ctx.proctrack);
	R->ctx.proctrack = NULL;
	R->ctx.readset = R->readset = ll_readset_free(R->readset);
	out_close(&R->report_out);
	out_close(&R->audit_out);
	return MOAT_EXIT_FAILURE;
}

#define SETUP_FAIL(R, ...)                                                                       \
	do {                                                                                     \
		snprintf((R)->setup_msg, sizeof((R)->setup_msg), __VA_ARGS__);                    \
		log_error("%s", (R)->setup_msg);                                                  \
		return fail_early(R);                                                            \
	} while (0)

/* The sandbox's keeper is started but the run cannot go on. */
static int fail_started(struct run *R)
{
	exectrace_stop(&R->ctx);
	kill(R->keeper, SIGKILL);
	waitpid(R->keeper, NULL, 0);
	return fail_early(R);
}

/* A run with nothing open yet (every fd -1), its clocks started and the kernel probed:
 * what both a run and a report of a failure before it start from. */
static struct run *run_new(struct sup_opts *o)
{
	struct run *R = calloc(1, sizeof(*R));

	if (!R)
		return NULL;
	R->o = o;
	R->ctx.listener = -1;
	R->stubs = (struct stubwatch)STUBWATCH_INIT;
	R->lastclose = (struct lastclose)LASTCLOSE_INIT;
	pthread_mutex_init(&R->ctx.lock, NULL);
	R->epfd = R->sigfd = R->timerfd = R->syncfd = R->pidfd = R->cmd_pidfd = -1;
	R->cc_dir = R->cc_new = -1;
	R->state_fd = -2;
	R->report_out = (struct out_file)OUT_FILE_INIT;
	R->audit_out = (struct out_file)OUT_FILE_INIT;
	R->t_start = now_mono_ns();
	R->start_wall_ns = wall_ns();
	sup_probe_features(&R->feat);
	return R;
}

void sup_report_failure(struct sup_opts *o, const char *why)
{
	_cleanup_free_ struct run *R = NULL;

	if (!o->report_path)
		return;
	o->audit_path = NULL; /* no stream: it would have nothing to record */
	R = run_new(o);
	if (!R || open_outputs(R) < 0)
		return;
	snprintf(R->setup_msg, sizeof(R->setup_msg), "%s", why);
	fail_early(R);
}

/*
 * --disk and sized tmpfs: the tmpfs that bound them are mounted over the private
 * directories the supervisor and the sandbox share (vfs_needs_mounts()), in a mount
 * namespace of the supervisor's own, so that the host's mount table never holds them
 * and they go with the supervisor, whatever ends it. Its children (the keeper, the
 * command) start in it. Still single-threaded here, as unshare(CLONE_NEWNS) needs.
 */
static int own_mount_ns(void)
{
	if (geteuid() != 0)
		return log_error_errno(-EPERM, "--disk, a tmpfs SIZE and --cow need moat to run as "
				       "root: they mount a tmpfs of that size or an overlay (omit "
				       "them to run unbounded, or in place)");
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return log_error_errno(-errno, "--disk: cannot make a mount namespace: %m");
	return 0;
}

/* The signals that end a run, and SIGCHLD, reach the loop through the fd returned. */
static int signals_to_loop(void)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* The run is over: the report and the stream's footer, then what they needed. */
static void write_outputs(struct run *R, int status)
{
	if (R->o->report_path)
		write_report(R, status);
	if (R->ctx.audit) {
		unsigned long lost;

		audit_header(R); /* --start-fd: the command never came; still say what ran */
		lost = proctrack_stop(R->ctx.proctrack);
		if (lost)
			log_warning("the kernel dropped process events %lu times: some fork or "
				    "exit records are missing", lost);
		audit_finish(R, status);
	}
	proctrack_free(R->ctx.proctrack);
	R->ctx.proctrack = NULL;
	free_changes(R);
	json_decref(R->git);
	json_decref(R->cow);
	out_close(&R->report_out);
	out_close(&R->audit_out);
}

/* Whether the command, which inherits our ids (unnamespaced, spawn.c changes none), starts
 * with one uid and one gid: then no thread of the run can ever hold another (creds.h,
 * CREDS_FIXED). */
static bool one_id(void)
{
	uid_t u[3];
	gid_t g[3];

	return getresuid(&u[0], &u[1], &u[2]) == 0 && getresgid(&g[0], &g[1], &g[2]) == 0 &&
	       u[0] == u[1] && u[0] == u[2] && g[0] == g[1] && g[0] == g[2];
}

/*
 * Unnamespaced mode has no namespace to cover hidden content with; its one kernel wall
 * is Landlock. Where Landlock's read set can be carved to hold nothing the policy hides
 * or denies for reading (landlock.h), a read-only open whose object lies in it is
 * continued after the check (do_open()): a path swapped after the check reaches only
 * what the policy shows, or meets Landlock's EACCES. Otherwise every open stays
 * emulated, and Landlock gets the rules it has always had.
 */
static void unnamespaced_reads(struct run *R, struct spawn_plan *plan)
{
	unsigned budget = VFS_COVER_BUDGET;
	int r;

#if MOAT_TEST_HOOKS
	/* MOAT_TEST_SKIP_COVER=1 (escape tests' control runs): the read set as wide as
	 * the mappings, hidden files in it, and opens continued all the same */
	if (getenv("MOAT_TEST_SKIP_COVER")) {
		R->ctx.continue_ro_opens = true;
		R->open_path = "continued";
		return;
	}
	if (getenv("MOAT_TEST_COVER_BUDGET"))
		budget = (unsigned)strtoul(getenv("MOAT_TEST_COVER_BUDGET"), NULL, 10);
#endif
	if (vfs_needs_mounts(R->o->vfs) || R->o->cow) {
		log_info("read-only opens: emulated (the view is not the host's at the same paths: "
			 "--cow, --disk or a tmpfs SIZE)");
		return;
	}
	r = ll_readset_build(R->o->vfs, budget, &R->readset);
	if (r < 0) {
		log_info("read-only opens: emulated (Landlock's read set cannot be kept free of "
			 "hidden files: %s)", r == -EXDEV ? "the host's shared /tmp or /dev/shm, or its "
			 "device nodes (a mapping of /dev's parent), are mapped, or a tree the "
			 "sandbox writes holds a hidden file" :
			 r == -E2BIG ? "too many entries to read or rules to add" : strerror(-r));
		return;
	}
	R->ctx.readset = plan->readset = R->readset;
	R->ctx.continue_ro_opens = true;
	log_info("read-only opens: checked, then continued where Landlock's read set (%u carved "
		 "rules) holds nothing hidden; elsewhere emulated", ll_readset_rules(R->readset));
}

/*
 * Where the covering's records are kept between runs (vfs/covercache.c): root's in
 * /var/cache/moat, a user's in $XDG_CACHE_HOME/moat or ~/.cache/moat; a directory of
 * ours that nobody else can write, and that no mapping shows the sandbox (it could
 * rewrite the records so that a hidden file goes uncovered, or read the names of hidden
 * files in trees this run does not map). MOAT_COVER_CACHE=off: none; =DIR: there.
 * The same directory holds the lists of mount points made on the host (vfs_note_made(),
 * records: false), which "off" does not turn off. make: create it if it is missing.
 */
static int state_dir(const struct vfs *v, bool records, bool make)
{
	const char *e = getenv("MOAT_COVER_CACHE"), *xdg = getenv("XDG_CACHE_HOME"),
		   *home = getenv("HOME");
	char path[PATH_MAX];
	struct stat st;
	int fd;

	if (records && e && streq(e, "off"))
		return -1;
	if (e && e[0] == '/')
		snprintf(path, sizeof(path), "%s", e);
	else if (geteuid() == 0)
		snprintf(path, sizeof(path), "/var/cache");
	else if (xdg && xdg[0] == '/')
		snprintf(path, sizeof(path), "%s", xdg);
	else if (home && home[0] == '/' && strlen(home) < PATH_MAX - 16)
		snprintf(path, sizeof(path), "%s/.cache", home);
	else
		return -1;
	if (!(e && e[0] == '/')) {
		if (strlen(path) + sizeof("/moat") > sizeof(path))
			return -1;
		strcat(path, "/moat");
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && make) {
		char *slash = strrchr(path, '/');

		/* ~/.cache too, if need be; the checks below hold for what is there */
		*slash = '\0';
		(void)mkdir(path, 0700);
		*slash = '/';
		(void)mkdir(path, 0700);
		fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
		if (records)
			log_info("covering: no records kept (%s is not ours alone)", path);
		return safe_close(fd);
	}
	if (vfs_shows_host_dir(v, fd)) {
		if (records)
			log_info("covering: no records kept (the sandbox would see %s)", path);
		return safe_close(fd);
	}
	return fd;
}

/* state_dir() for the lists of mount points, opened once, when first needed: made by
 * the first list (make), only looked for by a sweep. */
static int run_state_dir(struct run *R, bool make)
{
	if (R->state_fd == -2 || (R->state_fd == -1 && make))
		R->state_fd = R->cc_dir >= 0 ? fcntl(R->cc_dir, F_DUPFD_CLOEXEC, 3)
					     : state_dir(R->o->vfs, false, make);
	return R->state_fd;
}

/* The keeper reads the trees hide globs can match in (vfs_foreach_cover()); the
 * records of an earlier run with the same table spare it the directories that did not
 * change. */
static void cover_cache_open(struct run *R, struct spawn_plan *plan)
{
	plan->cover_cache_fd = -1;
	if (!plan->cover_globs || (R->cc_dir = state_dir(R->o->vfs, true, true)) < 0)
		return;
	R->cc_key = vfs_cover_cache_key(R->o->vfs, "/newroot");
	if (!R->cc_key || vfs_cover_cache_name(R->cc_key, R->cc_name, sizeof(R->cc_name)) < 0) {
		R->cc_dir = safe_close(R->cc_dir);
		return;
	}
	plan->cover_cache_key = R->cc_key;
	plan->cover_cache_fd = openat(R->cc_dir, R->cc_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
}

/* Keeps at most this many files of records, the least recently written go first; a
 * half-written one that a killed run left goes after an hour. */
#define COVER_CACHE_FILES 64
#define COVER_CACHE_NAME_LEN 38 /* "cover-" and 32 hex digits */

static void cover_cache_prune(int dir)
{
	_cleanup_(closedirp_) DIR *d = NULL;
	struct { char name[64]; time_t t; } old[COVER_CACHE_FILES + 1];
	size_t n = 0, total = 0;
	struct dirent *de;
	int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || !(d = fdopendir(fd))) {
		safe_close(fd);
		return;
	}
	/* old[] holds the COVER_CACHE_FILES + 1 oldest seen so far, newest last */
	while ((de = readdir(d))) {
		struct stat st;
		size_t i;

		if (strncmp(de->d_name, "cover-", 6) != 0 ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (strlen(de->d_name) != COVER_CACHE_NAME_LEN) {
			if (time(NULL) - st.st_mtime > 3600)
				(void)unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		total++;
		if (n == ELEMENTSOF(old) && st.st_mtime >= old[n - 1].t)
			continue;
		if (n < ELEMENTSOF(old))
			n++;
		for (i = n - 1; i > 0 && old[i - 1].t > st.st_mtime; i--)
			old[i] = old[i - 1];
		memcpy(old[i].name, de->d_name, strlen(de->d_name) + 1); /* checked above */
		old[i].t = st.st_mtime;
	}
	for (size_t i = 0; total > COVER_CACHE_FILES && i < n; i++, total--)
		(void)unlinkat(dirfd(d), old[i].name, 0);
}

/* The keeper's new records replace the file, whole (a reader never sees half of one).
 * Not out_commit(): its fsync() would be paid at the end of every run that changed a
 * directory, and a file torn by a crash fails its checksum, costing one slower start. */
static void cover_cache_save(struct run *R)
{
	char tmp[96];
	struct stat st;
	off_t off = 0;
	int fd;

	if (R->cc_new < 0 || fstat(R->cc_new, &st) < 0 || st.st_size <= 0 ||
	    st.st_size > (16 << 20))
		return;
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", R->cc_name, (int)getpid());
	(void)unlinkat(R->cc_dir, tmp, 0); /* left by a run of the same pid that died */
	fd = openat(R->cc_dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	while (off < st.st_size && sendfile(fd, R->cc_new, &off, (size_t)(st.st_size - off)) > 0)
		;
	if (close(fd) < 0 || off != st.st_size || renameat(R->cc_dir, tmp, R->cc_dir, R->cc_name) < 0) {
		(void)unlinkat(R->cc_dir, tmp, 0);
		return;
	}
	cover_cache_prune(R->cc_dir);
}

int sup_run(struct sup_opts *o)
{
	_cleanup_free_ struct run *R = run_new(o);
	_cleanup_strv_ char **envp = NULL;
	struct spawn_plan plan = { .cover_cache_fd = -1 };
	struct seccomp_notif_sizes sizes;
	int sv[2] = { -1, -1 }, r, status, one = 1;
	struct moat_error e = { 0 };

	if (!R)
		return log_error_errno(-ENOMEM, "out of memory");
	presize_fd_table(); /* before the audit writer, the first of our threads */
	if (open_outputs(R) < 0)
		return fail_early(R);

	switch (o->mode) {
	case SUP_MODE_NAMESPACED:
		if (!R->feat.user_ns)
			SETUP_FAIL(R, "--mode namespaced: this kernel or its configuration refuses "
				      "user namespaces (try --mode unnamespaced)");
		R->ctx.namespaced = true;
		break;
	case SUP_MODE_UNNAMESPACED:
		R->ctx.namespaced = false;
		break;
	case SUP_MODE_AUTO:
	default:
		R->ctx.namespaced = R->feat.user_ns;
		break;
	}
	R->ctx.arch = sc_native_arch();
	/* Credentials no thread of the run can change (creds.h, CREDS_FIXED): one id, and a
	 * command that holds no capability in any set, or, namespaced and started by root,
	 * only CAP_SETUID, CAP_SETGID and CAP_KILL (drop_capabilities() in spawn.c), until
	 * a thread changes its ids or groups (handle_setid()). */
	atomic_store(&R->ctx.creds_fixed, one_id());
	creds_fixed_caps(R->ctx.namespaced && getuid() == 0 ? CREDS_SETID_CAPS : 0);
#if MOAT_TEST_HOOKS
	{
		/* MOAT_TEST_NOTIFY_DELAY=MS:SYSCALL,SYSCALL (escape tests only) */
		const char *d = getenv("MOAT_TEST_NOTIFY_DELAY"), *colon = d ? strchr(d, ':') : NULL;

		if (colon) {
			R->ctx.test_delay_ms = atoi(d);
			snprintf(R->ctx.test_delay_syscalls, sizeof(R->ctx.test_delay_syscalls),
				 ",%s,", colon + 1);
			log_warning("test hook: %d ms before re-validating %s", R->ctx.test_delay_ms,
				    colon + 1);
		}
	}
#endif
#if MOAT_TEST_HOOKS
	{
		static int dns_delay_ms;
		const char *d = getenv("MOAT_TEST_DNS_DELAY");

		if (d && o->net && (dns_delay_ms = atoi(d)) > 0) {
			net_set_lookup(o->net, test_slow_lookup, &dns_delay_ms);
			log_warning("test hook: %d ms more for every DNS lookup", dns_delay_ms);
		}
	}
#endif
	R->ctx.verbose = o->verbose;
	R->ctx.vfs = o->vfs;
	R->ctx.net = o->net;
	o->pm->namespaced = R->ctx.namespaced;
	R->ctx.proc = &o->pm->ops;

	{
		char ne[512];

		r = sup_net_prepare(o->vfs, o->net, R->ctx.namespaced, ne, sizeof(ne), &e);
		if (r < 0)
			SETUP_FAIL(R, "network setup: %s", moat_error_str(&e));
		if (ne[0])
			not_enforced(R, ne);
	}
	if (o->disk)
		vfs_set_disk_quota(o->vfs, o->disk);
	if (vfs_needs_mounts(o->vfs)) {
		if (own_mount_ns() < 0) {
			/* own_mount_ns() said why on stderr */
			snprintf(R->setup_msg, sizeof(R->setup_msg),
				 "--disk, a tmpfs SIZE or --cow cannot be had: no mount namespace "
				 "of moat's own");
			return fail_early(R);
		}
		vfs_allow_mounts(o->vfs);
	}
	/* After the start: see sync_send(SYNC_GO) below. */
	vfs_defer_sweep(o->vfs);
	r = vfs_finalize(o->vfs, R->ctx.namespaced ? VFS_MODE_NAMESPACED : VFS_MODE_UNNAMESPACED,
			 &e);
	if (r < 0)
		SETUP_FAIL(R, "%s", moat_error_str(&e));
	/* Before the sandbox can touch the workspace's .git. */
	R->git = receipt_git(vfs_workspace_host(o->vfs));
	if (check_outputs(R) < 0)
		return fail_early(R);

	{
		enum sup_filter_kind fk = sup_filter_kind_of(R->ctx.namespaced, o->strict_hide,
							     o->vfs);
		bool audit_writes;

		/* Read-only opens are continued (recorded as such under --audit) where the
		 * namespace covers hidden content, as the metadata calls are native there. */
		R->ctx.continue_ro_opens = fk == SUP_FILTER_NAMESPACED;
		/* Over the covering's budget the keeper traps them after all: the header,
		 * written before, then says less is recorded than is. */
		R->meta_known = true;
		R->meta_trapped = fk != SUP_FILTER_NAMESPACED;
		/* A continued open swapped to a magic link (/proc/self/fd/N of a host file
		 * the command inherited) is refused by Landlock alone. */
		if (R->feat.landlock_abi <= 0)
			R->ctx.continue_ro_opens = false;
		R->ctx.continue_unix = R->ctx.continue_ro_opens && !net_allows_any(o->net) &&
				       !stdio_is_dir();
		if (!R->ctx.namespaced && R->feat.landlock_abi > 0)
			unnamespaced_reads(R, &plan);
		if (R->ctx.namespaced)
			log_info("unix connects, sends and listen: %s", R->ctx.continue_unix ?
				 "checked, then continued (the peer sees the program's "
				 "credentials)" : "performed by moat (the peer sees moat's "
				 "credentials): the policy allows network destinations, or "
				 "the kernel's view does not back the check");
		/* --audit where the kernel's view decides writes as the policy does: read-only
		 * opens native and recorded from the kernel's events, removals, mkdir and
		 * execs continued */
		audit_writes = o->audit_path && R->ctx.continue_ro_opens && R->ctx.namespaced &&
			       kernel_decides_writes(R);
		/* Read-only opens leave the notify set where the kernel reports an open of
		 * a stub to us (stubwatch.h): root only (fanotify permission events), and
		 * with --audit only where it records each from the kernel's open events.
		 * Nor with -v, which asks for every denial: an open below a hidden
		 * directory fails in the lookup (ENOENT in the empty stub), which no kernel
		 * hook reports. There
		 * they stay trapped, denied ones continued as well (the marks still give
		 * the stub's EPERM): the program sees what it sees without -v. */
		if (R->ctx.continue_ro_opens && R->ctx.namespaced && !o->audit_path) {
			r = stubwatch_open(&R->stubs);
			if (r >= 0 && o->verbose)
				R->ctx.continue_denied_opens = true;
			else if (r >= 0)
				fk = SUP_FILTER_NATIVE_OPEN;
		} else if (audit_writes) {
			/* --audit: native as well, each recorded from the kernel's open event
			 * (stubwatch.h); the opens still trapped (creates, write opens) are
			 * moat's own (may_continue_open()), the other writes continued (below) */
			r = stubwatch_open(&R->stubs);
			if (r >= 0)
				r = stubwatch_open_recorder(&R->stubs);
			if (r >= 0) {
				fk = SUP_FILTER_NATIVE_OPEN;
				R->ctx.record_native_opens = true;
			} else {
				stubwatch_close_recorder(&R->stubs);
				R->stubs.fan = safe_close(R->stubs.fan);
			}
		}
		/* The groups' last close may wait 12-22 ms for the kernel: made by a helper
		 * after our exit. Before we are a subreaper: it must not come back to us. */
		if (R->stubs.fan >= 0) {
			int groups[] = { R->stubs.fan, R->stubs.opens };
			int lr = lastclose_start(&R->lastclose, groups, ELEMENTSOF(groups));

			if (lr < 0)
				log_debug("the fanotify groups are closed by the run itself: %s",
					  strerror(-lr));
		}
		R->open_path = fk == SUP_FILTER_NATIVE_OPEN ? "native"
			       : R->ctx.continue_ro_opens ? "continued" : "emulated";
		/* Creates, removes and write opens feed the change set, which
		 * --report, --audit and --cow read after the run; -v names every denial,
		 * and the kernel's refusals (EROFS, Landlock's EACCES) reach no hook. With
		 * none of them the kernel decides those calls as the table would: writable
		 * only where a mount is read-write and Landlock grants it, the stubs bound
		 * read-only (docs/threat-model.md, "Native creates"). */
		if ((fk == SUP_FILTER_NATIVE_OPEN ||
		     (fk == SUP_FILTER_NAMESPACED && R->ctx.continue_ro_opens)) &&
		    !o->audit_path && kernel_decides_writes(R)) {
			/* Without the stubs' marks (not root) read-only opens stay trapped,
			 * to be checked and continued: the writes are the kernel's all the
			 * same, its read-only binds refusing them on a stub */
			fk = fk == SUP_FILTER_NATIVE_OPEN ? SUP_FILTER_NATIVE_WRITE
							  : SUP_FILTER_NATIVE_WRITE_UNMARKED;
			R->native_exec = true;
			/* execs too: the comm a record names is no longer known to change */
			atomic_store(&R->ctx.comm_nocache, true);
			log_info("creates, removes, write opens and execs: native, links "
				 "and renames checked (no change set asked for)");
		} else if ((fk == SUP_FILTER_NAMESPACED || R->ctx.record_native_opens) &&
			   audit_writes) {
			/* The same conditions, but --audit records every call: they stay
			 * trapped, and are checked, recorded and continued (ctx.h), but for
			 * the opens among them where open events are recorded. */
			R->ctx.continue_writes = true;
			if (R->ctx.record_native_opens)
				log_info("removes, mkdir and execs: checked, recorded and continued; "
					 "creates and write opens performed by moat (the kernel's "
					 "view refuses what the policy refuses)");
			else
				log_info("creates, removes, write opens and execs: checked, recorded "
					 "and continued (the kernel's view refuses what the policy "
					 "refuses)");
		} else if (R->ctx.namespaced) {
			log_info("creates, removes and write opens: performed by moat, "
				 "execs checked (%s)", fk == SUP_FILTER_NATIVE_OPEN ?
				 "they feed the change set, or /dev/ptmx is mapped" :
				 o->verbose && R->ctx.continue_denied_opens ?
				 "-v names every denial" : "the kernel's view does not decide them");
		}
		if (R->ctx.record_native_opens)
			log_info("read-only opens: native, each recorded from the kernel's open "
				 "event (fanotify); an open of a hidden path meets its stub, "
				 "refused (EPERM) and recorded");
		else if (fk == SUP_FILTER_NATIVE_OPEN || fk == SUP_FILTER_NATIVE_WRITE)
			log_info("read-only opens: native; an open of a hidden path meets its "
				 "stub, refused (EPERM) and reported through fanotify");
		else if (R->ctx.continue_denied_opens)
			log_info("read-only opens: checked, then continued, refused ones too "
				 "(-v names each: natively a failed lookup below a hidden "
				 "directory reaches no kernel hook; without -v they are native)");
		else if (R->ctx.continue_ro_opens && R->ctx.namespaced)
			log_info("read-only opens: checked, then continued (no fanotify marks on "
				 "the stubs: %s)", o->audit_path ? "--audit records every open"
				 : r == -EPERM ? "moat was not started by root" : strerror(-r));
		/* The covering reads every tree a glob can match in (vfs/cover.c); when
		 * that goes over its budget the keeper says so (SYNC_MOUNTS_READY) and
		 * opens stay emulated. */
		/* The metadata the kernel answers must not show a hidden file either. */
		plan.cover_globs = fk == SUP_FILTER_NAMESPACED || fk == SUP_FILTER_NATIVE_OPEN ||
				   fk == SUP_FILTER_NATIVE_WRITE ||
				   fk == SUP_FILTER_NATIVE_WRITE_UNMARKED;
		/* Where a hidden name is absent (--strict-hide, or a view the kernel cannot
		 * answer for), the stubs that still cover the literal hides are mounts the
		 * mount table would name: its copies leave them out (mounttab.h). Every open
		 * is moat's in those filters. */
		R->ctx.hide_mount_table = R->ctx.namespaced && !plan.cover_globs;
		R->ctx.hidden_names_shown = R->ctx.namespaced && plan.cover_globs;
		/* A unix bind creates a name, which the kernel refuses where the policy does
		 * once the stubs are in place (a hidden name exists: EADDRINUSE) and Landlock
		 * grants creates beneath the writable mappings only (a --cow workspace is an
		 * overlay: the socket lands in its upper layer, as moat's own bind put it):
		 * checked, then continued, so that the socket is named as the program named
		 * it (sock.c) */
		R->ctx.kernel_binds = R->ctx.namespaced && plan.cover_globs &&
				      R->feat.landlock_abi > 0;
		r = sup_filter_precompiled(fk, &plan.prog);
		plan.kind = fk;
	}
	if (r < 0)
		SETUP_FAIL(R, "cannot load the seccomp filter");
	if (notify_sizes(&sizes) < 0 || sizes.seccomp_notif < sizeof(struct seccomp_notif))
		sizes.seccomp_notif = sizeof(struct seccomp_notif);
	R->req_size = sizes.seccomp_notif;

	/* Orphans of the run are re-parented to us, so nothing escapes the final sweep. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);

	if (setup_limits(R) < 0) {
		snprintf(R->setup_msg, sizeof(R->setup_msg),
			 "a limit cannot be enforced for the whole run (--strict)");
		return fail_early(R);
	}
	if (!R->feat.landlock_abi)
		log_warning("no Landlock on this kernel: %s",
			    R->ctx.namespaced ? "the mount namespace alone backs up exec"
					      : "nothing in the kernel backs up the exec check (the "
						"supervisor's decision stands alone)");
	else if (R->feat.landlock_abi < 6 && !R->ctx.namespaced)
		log_warning("Landlock ABI %d cannot scope signals: the sandbox can signal other "
			    "processes of this uid", R->feat.landlock_abi);

	/* Subscribed before the sandbox exists, so that its first fork is seen; before the
	 * header, which says whether it is there. */
	if (o->audit_path)
		R->ctx.proctrack = proctrack_open(&R->proctrack_why);
	/* The stream and its header exist before the sandbox does. */
	if (o->audit_path && audit_start(R) < 0)
		return fail_early(R);

	plan.opts = o;
	plan.argv = o->argv;
	plan.wait_argv = o->start_fd >= 0;
	plan.argv_fd = plan.wait_argv && o->argv_fd >= 0 ? o->argv_fd : -1;
	if (plan.argv_fd >= 0) /* the waiting command's until its exec, nobody's after it */
		fcntl(plan.argv_fd, F_SETFD, FD_CLOEXEC);
	plan.features = &R->feat;
	plan.namespaced = R->ctx.namespaced;
	plan.cwd = vfs_initial_cwd(o->vfs);
	plan.envp = envp = build_env(o, vfs_tmpdir(o->vfs));
	/* A warm start's first exec by the checked file's fd (firstexec.c): where the
	 * kernel's view covers hidden content, as for continued opens. A covering that
	 * turns out incomplete later clears continue_ro_opens, and no fd is given. */
	R->exec_fd = plan.wait_argv && R->ctx.continue_ro_opens && R->ctx.namespaced;
	/* With native execs a cold command waits for the word that its listener is taken
	 * (take_listener()): its first exec would not wait for us. */
	plan.exec_fd = R->exec_fd || R->native_exec;
	R->cmd_envp = envp;
	R->cmd_cwd = plan.cwd;
	plan.uid = getuid();
	plan.gid = getgid();
	plan.devnull_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (!plan.envp || plan.devnull_fd < 0)
		SETUP_FAIL(R, "cannot prepare the environment: %s", strerror(ENOMEM));
	r = term_relay_prepare(&R->term, !o->tty, o->stdin_pass);
	if (r < 0)
		SETUP_FAIL(R, "cannot put a pty between the sandbox and the terminal: %s (redirect "
			   "its output, or share the terminal with --tty)", strerror(-r));
	memcpy(plan.stdio, R->term.slave, sizeof(plan.stdio));
	/* A regular file the command gets as a standard fd reopens through /dev/stdout
	 * as natively (sandbox_landlock() gives it the same rule). */
	for (int fd = o->stdin_pass ? 0 : 1; fd <= 2; fd++)
		if (plan.stdio[fd] < 0 && (r = vfs_allow_handed_file(o->vfs, fd)) < 0)
			SETUP_FAIL(R, "cannot inspect fd %d: %s", fd, strerror(-r));
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		SETUP_FAIL(R, "socketpair: %s", strerror(errno));
	/* The kernel stamps each message with the sender's pid in our namespace. */
	setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
	R->syncfd = sv[0];
	plan.sync_fd = sv[1];

	R->sigfd = signals_to_loop();

	/* Before the sandbox exists: its path is never one the sandbox could have planted. */
	if (o->events_spec && events_open(o->events_spec, &R->ctx.events) < 0) {
		/* events_open() said why on stderr */
		snprintf(R->setup_msg, sizeof(R->setup_msg), "--events %s cannot be opened",
			 o->events_spec);
		return fail_early(R);
	}

	cover_cache_open(R, &plan);
	R->keeper = spawn_start(&plan, &R->pidfd);
	safe_close(sv[1]);
	plan.cover_cache_fd = safe_close(plan.cover_cache_fd);
	if (plan.argv_fd >= 0)
		close(plan.argv_fd); /* the keeper passes it on; we never read it */
	r = R->keeper >= 0 ? term_relay_start(&R->term) : 0;
	if (r < 0)
		log_error("cannot copy the sandbox's output to the terminal: %s", strerror(-r));
	if (R->keeper < 0)
		SETUP_FAIL(R, "cannot start the sandbox: %s%s", strerror(-R->keeper),
			   R->ctx.namespaced ? " (user namespaces refused? try --mode unnamespaced)"
					     : "");
	o->pm->keeper = R->keeper;
	R->ctx.init_host_pid = R->keeper;
	start_proctrack(R);
	if (R->ctx.namespaced) {
		r = spawn_write_idmaps(R->keeper, plan.uid, plan.gid);
		if (r < 0) {
			snprintf(R->setup_msg, sizeof(R->setup_msg),
				 "cannot write the sandbox's uid map: %s", strerror(-r));
			log_error("%s", R->setup_msg);
			return fail_started(R);
		}
	}
	if (R->have_cg && cg_attach(&R->cg, R->keeper) < 0) {
		snprintf(R->setup_msg, sizeof(R->setup_msg),
			 "cannot move the sandbox into its cgroup: %s", strerror(errno));
		log_error("%s", R->setup_msg);
		return fail_started(R);
	}
	/* The sandbox may run as our uid: it must not ptrace us or read our memory. Not
	 * before now: a child inherits the flag, and the /proc files of a non-dumpable
	 * child (its uid_map) belong to root, which an unprivileged supervisor is not. */
	prctl(PR_SET_DUMPABLE, 0);
	sync_send(R->syncfd, SYNC_GO, 0, 0);
	/* The private directories that dead runs left behind, a walk of the host's whole
	 * /tmp: not now, when the keeper's mounts want both CPUs of a small machine, but
	 * while the keeper exits (loop()), or at teardown when no status came. */
	R->sweep_pending = true;
	/* Everything that needed more is done; the threads started next inherit this. */
	if (sup_confine(vfs_needs_mounts(o->vfs)) < 0) {
		kill(R->keeper, SIGKILL);
		waitpid(R->keeper, NULL, 0);
		return MOAT_EXIT_FAILURE;
	}
	/* While the keeper builds the sandbox. */
	r = exectrace_start(&R->ctx);
	if (r >= 0)
		r = notifier_start(R);
	if (r >= 0)
		r = stubwatch_start(&R->stubs, &R->ctx);
	if (r < 0) {
		snprintf(R->setup_msg, sizeof(R->setup_msg),
			 "cannot start the notifier thread: %s", strerror(-r));
		log_error("%s", R->setup_msg);
		return fail_started(R);
	}

	R->epfd = epoll_create1(EPOLL_CLOEXEC);
	R->ctx.epfd = R->epfd;
	ep_add(R->epfd, R->syncfd);
	ep_add(R->epfd, R->sigfd);
	if (R->pidfd >= 0)
		ep_add(R->epfd, R->pidfd);
	if (o->start_fd >= 0) {
		fcntl(o->start_fd, F_SETFD, FD_CLOEXEC);
		fcntl(o->start_fd, F_SETFL, fcntl(o->start_fd, F_GETFL) | O_NONBLOCK);
		ep_add(R->epfd, o->start_fd);
	} else {
		start_timeout(R);
	}

	r = loop(R);
	if (r < 0)
		log_error("supervisor loop failed: %s", strerror(-r));
	collect_start_line(R);

	/* Teardown: whatever ended the run, nothing of it survives. The keeper and the
	 * cgroup are killed through fds opened before the sandbox started; only the last
	 * sweep of our own descendants (orphans of a keeper that died) needs open(). */
	test_hook_nofile();
	signal_keeper(R, SIGKILL);
	if (R->have_cg)
		cg_kill(&R->cg);
	raise_nofile();
	kill_descendants(getpid());
	/* Every thread told first, then each joined: their wake-ups overlap. */
	notifier_wake(R);
	exectrace_wake(&R->ctx);
	stubwatch_stop(&R->stubs);
	notifier_stop(R);
	exectrace_stop(&R->ctx);
	firstexec_drop(&R->ctx);
	R->cmd_pidfd = safe_close(R->cmd_pidfd);
	if (!R->keeper_done && waitpid(R->keeper, &R->keeper_status, 0) == R->keeper)
		R->keeper_done = true;
	if (R->sweep_pending) {
		vfs_sweep_stale(o->vfs, run_state_dir(R, false));
		R->sweep_pending = false;
	}
	remove_made(R, R->keeper_done);
	cover_cache_save(R);
	R->cc_new = safe_close(R->cc_new);
	R->cc_dir = safe_close(R->cc_dir);
	if (R->state_fd >= 0)
		R->state_fd = safe_close(R->state_fd);
	free(R->cc_key);
	R->cc_key = NULL;
	/* Everything that held a pty slave is gone: its last output goes out before ours. */
	term_relay_finish(&R->term);
	R->t_end = now_mono_ns();
	/* The namespace's mounts went with its last process: what reads the vfs after the
	 * run (the change set, the copy-on-write's commit or export) reads it on the host.
	 * Nothing else does: vfs_free() closes the fds of either side, so the switch back
	 * (an fstat of every mapping and the skeleton's directories opened again) is only
	 * paid when something will read. */
	if (R->ctx.namespaced && (o->report_path || R->ctx.audit || o->cow))
		vfs_rebase(R->ctx.vfs, -1);
	if (R->have_cg)
		cg_stats(&R->cg, &R->cgs);
	vfs_disk_usage(R->ctx.vfs, &R->disk_used, &R->disk_size);
	getrusage(RUSAGE_CHILDREN, &R->ru);
	if (o->report_path || R->ctx.audit)
		collect_changes(R);

	status = exit_status(R);
	if (R->setup_errno)
		log_error("sandbox setup failed while %s: %s", spawn_stage_name(R->setup_stage),
			  strerror(R->setup_errno));
	else if (R->reason == SUP_REASON_EXEC_FAILED)
		log_error("cannot run %s: %s", o->argv[0], strerror(R->exec_errno));
	else if (R->reason == SUP_REASON_TIMEOUT)
		log_notice("timed out after %gs; the whole process tree was killed", o->timeout);
	else if (R->reason == SUP_REASON_MEMORY)
		log_notice("killed: the run exceeded its memory limit");
	/* Every process of the sandbox is gone: nothing writes the upper layer any more. */
	if (o->cow)
		R->cow = cow_finish(o->cow, o->vfs);
	denial_summary(R);
	run_events(R, status);
	write_outputs(R, status);
	if (R->have_cg)
		cg_destroy(&R->cg);
	sup_net_free(&R->ctx); /* first: its waiters answer on the listener */
	safe_close(R->ctx.listener);
	R->ctx.readset = R->readset = ll_readset_free(R->readset);
	stubwatch_release(&R->stubs);
	lastclose_done(&R->lastclose);

	return status;
}

/*
 * A process tree that someone else started (an OCI runtime: runc or crun), with its
 * seccomp listener handed over: serve it until its first process exits. Paths resolve
 * in that process's root (/proc/<pid>/root: the container's mounts), so the vfs is built
 * in namespaced mode and rebased there; sockets are acted on as the program made them,
 * in its own network namespace (ctx.namespaced stays false for net.c). A signal to us
 * (SIGTERM from a dying parent through PR_SET_PDEATHSIG included) kills that process
 * before we go: the tree is never left running unsupervised.
 */
int sup_serve(struct sup_opts *o, int listener, pid_t pid)
{
	_cleanup_free_ struct run *R = run_new(o);
	_cleanup_close_ int root = -1;
	struct seccomp_notif_sizes sizes;
	struct moat_error e = { 0 };
	char p[64];
	int r, status;

	if (!R)
		return log_error_errno(-ENOMEM, "out of memory");
	presize_fd_table();
	R->external = true;
	/* Our signals go to the loop from here on (those that came already are pending). */
	R->sigfd = signals_to_loop();
	R->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	R->keeper = pid;
	if (R->pidfd < 0 || R->sigfd < 0) {
		(void)!close(listener);
		SETUP_FAIL(R, "cannot watch process %d: %s", pid, strerror(errno));
	}
	if (open_outputs(R) < 0) {
		signal_keeper(R, SIGKILL);
		return fail_early(R);
	}
	R->ctx.namespaced = false;
	R->ctx.arch = sc_native_arch();
	R->ctx.verbose = o->verbose;
	R->ctx.vfs = o->vfs;
	R->ctx.net = o->net;
	o->pm->namespaced = true;
	o->pm->keeper = pid;
	o->pm->keeper_included = true;
	R->ctx.proc = &o->pm->ops;
	R->ctx.init_host_pid = pid;
	R->ctx.cmd_host_pid = pid;
	atomic_store(&R->ctx.runtime_init, true);

	/* The table was finalized on a copy of the container's mounts (runtime/agent.c):
	 * from now on it walks the container's own. */
	snprintf(p, sizeof(p), "/proc/%d/root", pid);
	root = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		r = moat_error_set(&e, errno, "cannot open %s: %s", p, strerror(errno));
	else if ((r = vfs_rebase(o->vfs, root)) < 0)
		moat_error_set(&e, r, "cannot enter the container's root: %s", strerror(-r));
	if (r >= 0 && check_outputs(R) < 0) {
		signal_keeper(R, SIGKILL);
		(void)!close(listener);
		return fail_early(R); /* check_outputs() said why */
	}
	if (r < 0) {
		/* Without a supervisor its notified calls would only fail: end it now. */
		signal_keeper(R, SIGKILL);
		(void)!close(listener);
		SETUP_FAIL(R, "%s", moat_error_str(&e));
	}
	if (notify_sizes(&sizes) < 0 || sizes.seccomp_notif < sizeof(struct seccomp_notif))
		sizes.seccomp_notif = sizeof(struct seccomp_notif);
	R->req_size = sizes.seccomp_notif;
	if (o->audit_path)
		R->ctx.proctrack = proctrack_open(&R->proctrack_why);
	if (o->audit_path && audit_start(R) < 0) {
		signal_keeper(R, SIGKILL);
		(void)!close(listener);
		return fail_early(R);
	}
	start_proctrack(R);
	r = sup_confine(false);
	if (r >= 0)
		r = exectrace_start(&R->ctx);
	if (r >= 0)
		r = notifier_start(R);
	if (r < 0) {
		signal_keeper(R, SIGKILL);
		(void)!close(listener);
		exectrace_stop(&R->ctx);
		SETUP_FAIL(R, "cannot start serving: %s", strerror(-r));
	}
	R->ctx.listener = listener;
	R->sync_wake_up = notify_set_sync_wake_up(listener) >= 0;
	for (unsigned i = 0; i < R->n_notifiers; i++)
		sem_post(&R->listener_ready);

	R->epfd = epoll_create1(EPOLL_CLOEXEC);
	R->ctx.epfd = R->epfd;
	ep_add(R->epfd, R->sigfd);
	ep_add(R->epfd, R->pidfd);
	start_timeout(R);
	r = loop(R);
	if (r < 0)
		log_error("supervisor loop failed: %s", strerror(-r));

	signal_keeper(R, SIGKILL);
	raise_nofile();
	kill_descendants(getpid());
	notifier_wake(R);
	exectrace_wake(&R->ctx);
	notifier_stop(R);
	exectrace_stop(&R->ctx);
	firstexec_drop(&R->ctx);
	R->cmd_pidfd = safe_close(R->cmd_pidfd);
	R->t_end = now_mono_ns();
	/* Still rebased: the root fd keeps the container's files reachable for hashing. */
	getrusage(RUSAGE_CHILDREN, &R->ru);
	if (o->report_path || R->ctx.audit)
		collect_changes(R);
	status = exit_status(R);
	denial_summary(R);
	write_outputs(R, status);
	sup_net_free(&R->ctx);
	safe_close(R->ctx.listener);
	safe_close(R->pidfd);
	safe_close(R->sigfd);
	safe_close(R->epfd);
	return status;
}
