/* SPDX-License-Identifier: MIT */
/*
 * Dispatch: the handlers for every notified syscall.
 *
 * The rule that governs this file (docs/architecture.md invariants 1 and 2): a handler copies what
 * it needs out of the tracee exactly once, re-validates the notification id after the
 * last read (the tracee may have died and its pid been reused), and from then on acts
 * only on its own copy. Results are produced by the supervisor itself (vfs_* on host
 * fds) and handed back: an fd through ADDFD, a struct by writing it into the tracee, or
 * a plain return value. CONTINUE is answered for a read-only open in namespaced mode,
 * or unnamespaced inside Landlock's carved read set (may_continue_open()), for exec
 * (what the kernel then executes is checked before it runs, see exectrace.c; native
 * where creates are), for creates, write opens, mkdir, rmdir, unlink and exec under
 * --audit where they would be native without it (continue_writes), chdir (grants nothing by
 * itself: every later relative path is resolved from the canonical cwd again),
 * personality and the syscalls that name a pid (decided on registers, not on memory).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/ioprio.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include "cleanup.h"
#include "clock.h"
#include "creds.h"
#include "dispatch.h"
#include "exectrace.h"
#include "firstexec.h"
#include "proctrack.h"
#include "stubwatch.h"
#include "events.h"
#include "hash.h"
#include "landlock.h"
#include "log.h"
#include "macros.h"
#include "missing-seccomp.h"
#include "moat-config.h"

#define ARG(c, i) ((c)->req->data.args[i])

/* --- argument helpers --------------------------------------------------------------- */

/* Copy a path argument; -errno for the program on failure. */
static int copy_path(struct sup_call *c, uint64_t addr, char *buf)
{
	int r = mem_read_string(c->tid, addr, buf, PATH_MAX);

	if (r < 0)
		return r;
	if (buf == c->path)
		c->has_path = true;
	else
		c->has_path2 = true;
	return 0;
}

/* After the last read of tracee memory and before acting on it (invariant 2). */
static bool still_valid(struct sup_call *c)
{
#if MOAT_TEST_HOOKS
	/* The escape test for invariant 2 kills the caller inside this window and checks
	 * that nothing was done on its behalf. */
	if (c->s->test_delay_ms > 0) {
		char name[72];

		snprintf(name, sizeof(name), ",%s,", c->e->name);
		if (strstr(c->s->test_delay_syscalls, name)) {
			struct timespec d = { c->s->test_delay_ms / 1000,
					      (c->s->test_delay_ms % 1000) * 1000000L };
			nanosleep(&d, NULL);
		}
	}
#endif
	return notify_id_valid(c->s->listener, c->req->id);
}

/* The procfs link of a dirfd argument as the supervisor can follow it: the thread's
 * cwd for AT_FDCWD, its fd link otherwise. */
static int fd_proc_path(const struct sup_call *c, int64_t fd, char *buf, size_t len)
{
	if ((int)fd == AT_FDCWD)
		snprintf(buf, len, "/proc/%d/cwd", c->tid);
	else if ((int)fd < 0)
		return -EBADF;
	else
		snprintf(buf, len, "/proc/%d/fd/%d", c->tid, (int)fd);
	return 0;
}

/*
 * The canonical virtual path of the directory a relative path starts from: the
 * thread's cwd (AT_FDCWD) or the directory behind dirfd, as procfs prints it to the
 * supervisor. In unnamespaced mode that is the host path, which is the virtual path.
 * In namespaced mode every object the sandbox can hold lives on the sandbox's own
 * mounts (the vfs resolves through the sandbox's root, see vfs_rebase()), none of which
 * is reachable from the supervisor's root, so the kernel prints the path relative to
 * the sandbox's root: the virtual path again.
 */
static int dir_base(struct sup_call *c, int64_t dirfd, char *buf, size_t len)
{
	char proc[64];
	struct stat st;
	ssize_t n;

	if (fd_proc_path(c, dirfd, proc, sizeof(proc)) < 0)
		return -EBADF;
	n = readlink(proc, buf, len - 1);
	if (n < 0)
		return errno == ENOENT ? -EBADF : -errno;
	buf[n] = '\0';
	if (buf[0] != '/')
		return -ENOTDIR; /* socket:[..], pipe:[..], anon_inode:... */
	if ((int)dirfd == AT_FDCWD)
		return 0; /* a cwd is a directory: no need to ask */
	if (stat(proc, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	return 0;
}

/*
 * A cwd or dirfd deeper than procfs prints (dir_base() says ENAMETOOLONG): the directory
 * itself, opened through the caller's link, is named component by component
 * (vfs_dir_vpath()), into one of the notifier thread's two buffers for it. The walk
 * from that path decides the policy on each of its components again.
 */
static int deep_base(struct sup_call *c, int64_t dirfd, const char **ret)
{
	struct tracee_cache *tc = c->tc;
	char proc[64], **buf = &tc->deep[tc->deep_next];
	_cleanup_close_ int fd = -1;
	int r;

	tc->deep_next ^= 1;
	if (fd_proc_path(c, dirfd, proc, sizeof(proc)) < 0)
		return -EBADF;
	fd = open(proc, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -EBADF : negative_errno();
	if (!*buf && !(*buf = malloc(VFS_DEEP_MAX)))
		return -ENOMEM;
	r = vfs_dir_vpath(fd, *buf, VFS_DEEP_MAX);
	if (r < 0)
		return r;
	*ret = *buf;
	return 0;
}

/* CREDS_FIXED where the run's credentials cannot change (sup_ctx.creds_fixed) and the
 * caller's umask, the one credential it may still change, plays no part: every call by
 * name that gives no new inode a mode (the stat family, access, readlink, statfs, links,
 * symlinks, which the kernel makes 0777 whatever the umask, renames, removals, and the
 * changes of mode, owner, times, size and xattrs, by name or by fd), and opens without
 * O_CREAT or O_TMPFILE. Not mkdir, mknod, creat, openat2 (its flags are in memory) or bind. */
static unsigned fixed_creds(const struct sup_call *c)
{
	int flags;

	if (!atomic_load(&c->s->creds_fixed))
		return 0;
	switch (c->e->id) {
	case SC_stat: case SC_lstat: case SC_newfstatat: case SC_statx:
	case SC_access: case SC_faccessat: case SC_faccessat2:
	case SC_readlink: case SC_readlinkat: case SC_statfs:
	case SC_link: case SC_linkat: case SC_symlink: case SC_symlinkat:
	case SC_rename: case SC_renameat: case SC_renameat2:
	case SC_unlink: case SC_unlinkat: case SC_rmdir:
	case SC_chmod: case SC_fchmodat: case SC_fchmodat2:
	case SC_chown: case SC_lchown: case SC_fchownat:
	case SC_utime: case SC_utimes: case SC_futimesat: case SC_utimensat:
	case SC_truncate:
	case SC_getxattr: case SC_lgetxattr: case SC_listxattr: case SC_llistxattr:
	case SC_setxattr: case SC_lsetxattr: case SC_removexattr: case SC_lremovexattr:
	case SC_fchmod: case SC_fchown: case SC_fsetxattr: case SC_fremovexattr:
		return CREDS_FIXED;
	case SC_open:
		flags = (int)ARG(c, 1);
		break;
	case SC_openat:
		flags = (int)ARG(c, 2);
		break;
	default:
		return 0;
	}
	return (flags & (O_CREAT | O_TMPFILE)) ? 0 : CREDS_FIXED;
}

/* Fill a vfs_caller for dirfd-relative path resolution. base_buf must outlive it.
 * From here on the thread acts with the caller's credentials (creds.h): the vfs
 * operation that follows is the caller's, and the kernel checks it as such. */
static int make_caller(struct sup_call *c, int64_t dirfd, const char *path, char *base_buf,
		       struct vfs_caller *ret)
{
	const char *base = base_buf;
	int r;

	*ret = (struct vfs_caller){ .pid = c->tid, .tgid = c->tid, .base = NULL };
	if (path[0] == '/') {
		ret->base = "/";
	} else {
		/* /proc/<tid> is ours to read. A thread still acting for a caller (the second
		 * path of a rename or link, or an open after a continued one: see
		 * dispatch_one()) holds a subset of our authority, so only a refusal needs
		 * the read again as ourselves. */
		r = dir_base(c, dirfd, base_buf, PATH_MAX);
		if ((r == -EACCES || r == -EPERM) && creds_self())
			r = dir_base(c, dirfd, base_buf, PATH_MAX);
		if (r == -ENAMETOOLONG) {
			creds_self();
			r = deep_base(c, dirfd, &base);
		}
		if (r < 0 && r != -ENOTDIR)
			return r;
		/* ENOTDIR: base NULL, and the vfs answers ENOTDIR for relative paths */
		ret->base = r < 0 ? NULL : base;
	}
	return creds_caller(c->tid, c->req->id, fixed_creds(c));
}

static void set_result(struct sup_call *c, int r)
{
	if (r < 0) {
		c->err = -r;
		c->policy_denied = c->verdict.denied;
	} else {
		c->result = r;
	}
	c->outcome = CALL_REPLY;
}

static void deny(struct sup_call *c, int err, const char *rule)
{
	c->err = err;
	c->policy_denied = true;
	str_copy(c->verdict.rule, sizeof(c->verdict.rule), rule);
	c->verdict.err = err;
	c->verdict.denied = true;
	c->outcome = CALL_REPLY;
}

/* --- the caller's thread: pidfd and comm, cached ----------------------------------- */

/* The cache slot of the calling thread: its own, else the least recently used one,
 * emptied. */
static int tracee_slot(struct sup_call *c)
{
	struct tracee_cache *tc = c->tc;
	size_t slot = 0;

	for (size_t i = 0; i < TRACEE_CACHE; i++) {
		if (tc->e[i].tid == c->tid) {
			slot = i;
			goto found;
		}
		if (tc->e[i].used < tc->e[slot].used)
			slot = i; /* least recently used, or never (0) */
	}
	if (tc->e[slot].tid) {
		safe_close(tc->e[slot].pidfd);
		safe_close(tc->e[slot].comm_fd);
	}
	tc->e[slot].tid = c->tid;
	tc->e[slot].pidfd = tc->e[slot].comm_fd = -1;
	tc->e[slot].comm[0] = '\0';
found:
	tc->e[slot].used = ++tc->clock;
	return (int)slot;
}

/* PIDFD_THREAD (6.9) lets a non-leader thread name itself; older kernels take the
 * thread-group leader's. */
static int open_pidfd(pid_t tid)
{
	int pidfd = (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD);

	if (pidfd < 0 && errno == EINVAL)
		pidfd = (int)syscall(SYS_pidfd_open, tid, 0);
	return pidfd;
}

int tracee_getfd(struct sup_call *c, int fd)
{
	struct tracee_cache *tc = c->tc;
	int slot = tracee_slot(c), r = -1;
	bool acting = creds_self(); /* pidfd_getfd checks ptrace access: ours */

	for (int attempt = 0; attempt < 2; attempt++) {
		int *pidfd = &tc->e[slot].pidfd;

		if (*pidfd < 0 && (*pidfd = open_pidfd(c->tid)) < 0)
			return -ESRCH;
		r = (int)syscall(SYS_pidfd_getfd, *pidfd, fd, 0);
		if (r >= 0 || errno != ESRCH)
			break;
		/* a pidfd of a task that is gone, whose tid is now another's: reopen */
		*pidfd = safe_close(*pidfd);
	}
	if (r < 0)
		r = errno == EBADF ? -EBADF : negative_errno();
	if (creds_resume(acting) < 0) {
		safe_close(r);
		return -EACCES;
	}
	return r;
}

/*
 * The caller's comm ("" if it is gone), for its audit record. Reading /proc/<tid>/comm costs about as much as
 * the rest of the record (1.2 us of 2.4 here), so the text is kept per thread while
 * nothing can have changed it: a thread's comm changes on exec and on PR_SET_NAME, both of
 * which come here (the filter notifies prctl(PR_SET_NAME)) and bump comm_gen, and by a
 * write to a /proc/.../comm file, whose opening for writing turns the cache off for the
 * rest of the run. COMM_TTL_NS bounds what is left: a tid reused by a new thread, or a
 * non-leader's exec racing with its leader's own calls.
 */
#define COMM_TTL_NS (50 * 1000 * 1000)

static void read_comm(struct sup_call *c, char *buf, size_t len)
{
	struct tracee_cache *tc = c->tc;
	int slot = tracee_slot(c);
	unsigned gen = atomic_load(&c->s->comm_gen);
	bool keep = !c->comm_changing && !atomic_load(&c->s->comm_nocache);
	ssize_t n = -1;

	if (keep && tc->e[slot].comm[0] && tc->e[slot].comm_gen == gen &&
	    c->t0 - tc->e[slot].comm_ns < COMM_TTL_NS) {
		str_copy(buf, len, tc->e[slot].comm);
		return;
	}
	for (int attempt = 0; attempt < 2 && n <= 0; attempt++) {
		int *fd = &tc->e[slot].comm_fd;

		if (*fd < 0) {
			char p[32];

			snprintf(p, sizeof(p), "/proc/%d/comm", c->tid);
			*fd = open(p, O_RDONLY | O_CLOEXEC);
			/* after a continued open or a change the thread may still act for
			 * its caller (keeps_caller()), whose authority may fall short of /proc
			 * here */
			if (*fd < 0 && (errno == EACCES || errno == EPERM) && creds_self())
				*fd = open(p, O_RDONLY | O_CLOEXEC);
		}
		n = *fd >= 0 ? pread(*fd, buf, len - 1, 0) : -1;
		if (n <= 0)
			*fd = safe_close(*fd); /* the task is gone: maybe a reused tid */
	}
	buf[n > 0 ? n - 1 : 0] = '\0'; /* drop the newline */
	tc->e[slot].comm[0] = '\0';
	if (keep && n > 0) {
		str_copy(tc->e[slot].comm, sizeof(tc->e[slot].comm), buf);
		tc->e[slot].comm_gen = gen;
		tc->e[slot].comm_ns = c->t0;
	}
}

/* /proc/<pid>/comm, /proc/<pid>/task/<tid>/comm, or any other file of that name: writing
 * one may rename a thread behind the cache's back. */
static bool names_comm(const char *vpath)
{
	const char *s = strrchr(vpath, '/');

	return s && streq(s + 1, "comm");
}

/* Called before an exec or a PR_SET_NAME is let through. */
static void comm_changes(struct sup_call *c)
{
	atomic_fetch_add(&c->s->comm_gen, 1);
	c->comm_changing = true;
}

/* --- open family ---------------------------------------------------------------------- */

/*
 * A FIFO open that waits for its other end (vfs_open_nowait()) runs on a thread of its
 * own, which answers the notification itself, so that the notifier goes on answering
 * every other call meanwhile. The thread holds only what it was given: a copy of the
 * listener, the FIFO's O_PATH fd and the flags (the vfs may be gone before it ends). A
 * timer interrupts its open every FIFO_POLL_MS (the notifier threads' SIGUSR2, no
 * SA_RESTART) to see whether the caller is still there; a caller that died ends it.
 * At most FIFO_WAITERS wait at once; beyond that the open fails with EAGAIN.
 */
#define FIFO_WAITERS 64
#define FIFO_POLL_MS 250
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid /* glibc before 2.39 */
#endif

struct fifo_wait {
	int listener, fd, flags;
	unsigned fd_flags;
	uint64_t id;
};

static atomic_int fifo_waiting;

static void *fifo_wait_main(void *arg)
{
	struct fifo_wait *fw = arg;
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGUSR2 };
	struct itimerspec its = { { 0, FIFO_POLL_MS * 1000000L }, { 0, FIFO_POLL_MS * 1000000L } };
	char proc[64];
	timer_t timer;
	bool have_timer;
	int fd;

	sev.sigev_notify_thread_id = gettid();
	have_timer = timer_create(CLOCK_MONOTONIC, &sev, &timer) == 0 &&
		     timer_settime(timer, 0, &its, NULL) == 0;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fw->fd);
	for (;;) {
		fd = open(proc, (fw->flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW)) | O_CLOEXEC);
		if (fd < 0)
			fd = -errno;
		if (fd != -EINTR || !notify_id_valid(fw->listener, fw->id))
			break; /* opened, failed, or the caller is gone: nobody to answer */
	}
	if (have_timer)
		timer_delete(timer);
	if (fd >= 0) {
		int r = notify_addfd_send(fw->listener, fw->id, fd, fw->fd_flags);

		if (r < 0 && r != -ENOENT)
			notify_reply(fw->listener, fw->id, 0, r == -EMFILE ? EMFILE : EIO);
		close(fd);
	} else if (fd != -EINTR) {
		notify_reply(fw->listener, fw->id, 0, -fd);
	}
	close(fw->fd);
	close(fw->listener);
	free(fw);
	atomic_fetch_sub(&fifo_waiting, 1);
	return NULL;
}

/* Takes fd (the FIFO's O_PATH fd). */
static void defer_fifo_open(struct sup_call *c, int fd, int flags)
{
	struct fifo_wait *fw = NULL;
	pthread_attr_t attr;
	pthread_t t;
	bool started = false;

	if (atomic_fetch_add(&fifo_waiting, 1) < FIFO_WAITERS && (fw = calloc(1, sizeof(*fw)))) {
		*fw = (struct fifo_wait){ .fd = fd, .flags = flags, .id = c->req->id,
					  .fd_flags = (flags & O_CLOEXEC) ? O_CLOEXEC : 0 };
		fw->listener = fcntl(c->s->listener, F_DUPFD_CLOEXEC, 3);
		if (fw->listener >= 0 && pthread_attr_init(&attr) == 0) {
			pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
			/* it starts with this thread's credentials and umask, which are the
			 * caller's now (creds.h): its open is the caller's too */
			started = pthread_create(&t, &attr, fifo_wait_main, fw) == 0;
			pthread_attr_destroy(&attr);
		}
	}
	if (started) {
		c->outcome = CALL_REPLIED;
		return;
	}
	if (fw && fw->listener >= 0)
		close(fw->listener);
	free(fw);
	close(fd);
	atomic_fetch_sub(&fifo_waiting, 1);
	deny(c, EAGAIN, "too many FIFO opens waiting for their other end");
}

/*
 * Whether an open may be answered CONTINUE after the check instead of handing over our
 * fd: the kernel then opens the path again, from the caller's memory, in the caller's
 * mount namespace and with its credentials (which also make the permission check the
 * supervisor would have made). That reaches the same file unless the path was swapped
 * since our copy, and a swapped path reaches only what the namespace holds, in which
 * every hidden or read-denied path is covered by an empty stub (spawn.c cover_one()).
 * Unnamespaced, the kernel opens in the host's tree, and Landlock is the wall: its read
 * set is carved to hold nothing hidden or read-denied (landlock.h, ctx.readset), and an
 * open is continued only when its object lies in that set, so a swapped path reaches
 * what the policy shows or meets Landlock's EACCES. So: read-only opens that create
 * nothing (vfs_open_decide() checks the flags), of a regular file or a directory (a
 * device, a FIFO or a socket may mean something else to the caller than to us, /dev/tty
 * above all), and only where the namespace covers (continue_ro_opens), or in the read
 * set. And O_PATH opens of any object, which open nothing (no device acts, no FIFO
 * waits), but only namespaced: Landlock never sees an O_PATH open, so unnamespaced a
 * swapped path would reach any host file; in the namespace it reaches at most a stub,
 * unseen by its fanotify mark, whose fd reopened meets the stub's refusal like any open
 * of it. Moat itself could give no O_PATH fd (ADDFD refuses them: vfs/ops.c). openat2's
 * flags live in memory (struct open_how), where a thread could turn them into
 * O_RDWR|O_CREAT after the check; open and openat pass them in a register, which
 * cannot change. creat() never gets here read-only.
 */
static bool may_continue_open(const struct sup_call *c, int flags)
{
	if (!c->s->continue_ro_opens || c->e->id == SC_openat2)
		return false;
	/* Landlock does not see an O_PATH open: only a covering namespace backs it. Nor
	 * does fanotify, so it leaves no event to tell apart (below). */
	if (flags & O_PATH)
		return c->s->namespaced;
	/* Native opens recorded from the kernel's events: the filter traps only what moat
	 * opens itself (ADDFD), creates included. A continued open's event could not be
	 * told apart from one that follows: a create the kernel then refuses (the
	 * directory's mode, a name taken meanwhile under O_EXCL) has no event, and an
	 * expectation left for it would swallow the thread's next read-only open of that
	 * path. So every event in the sandbox's mounts is a native open. */
	return !c->s->record_native_opens;
}

/* With continue_writes, an open of any flags is decided and continued as a read-only
 * one is, but for a create asking for a set-id mode, which moat makes without those bits
 * (vfs.c CREATE_MODE_MASK): the kernel would keep them. */
static bool may_continue_write(const struct sup_call *c, int flags, mode_t mode)
{
	return c->s->continue_writes &&
	       !((flags & (O_CREAT | O_TMPFILE)) && (mode & (S_ISUID | S_ISGID)));
}

/*
 * A denied read-only open, continued (continue_denied_opens): the kernel answers it in
 * the sandbox's view, as it answers the native open of a run without -v, and this is
 * its errno for the report. A hidden or read-denied object is covered by a stub whose
 * fanotify mark refuses the open (EPERM; stubwatch.c leaves the report to us); a name
 * below a hidden or denied directory is not in its empty stub (ENOENT); below the
 * keeper's /proc/1, a tmpfs of mode 000, the lookup is refused (EACCES). A path the
 * sandbox swapped meanwhile may fail otherwise: the kernel's answer, never ours, is
 * what the program gets.
 */
static int native_open_errno(const struct vfs_verdict *v)
{
	if (streq(v->vpath, "/proc/1") || !strncmp(v->vpath, "/proc/1/", 8))
		return EACCES;
	/* only hide and deny rules ("hide GLOB (ORIGIN)") are covered */
	if (strncmp(v->rule, "hide ", 5) && strncmp(v->rule, "deny ", 5))
		return (int)v->err;
	return v->below ? ENOENT : EPERM;
}

static void do_open(struct sup_call *c, int64_t dirfd, uint64_t path_addr, int flags,
		    mode_t mode, uint64_t resolve)
{
	char base[PATH_MAX];
	struct vfs_caller caller;
	bool wait, continuing = may_continue_open(c, flags), validated = false;
	int r;

	if (c->s->audit) /* the flags are for the record only */
		sc_format_oflags((uint64_t)(unsigned)flags, c->flags_text, sizeof(c->flags_text));
	if (c->s->continue_denied_opens) /* its previous open's path may have been swapped */
		stubwatch_forget(c->s, c->tid);
	r = copy_path(c, path_addr, c->path);
	/* still acting for the previous caller (dispatch_one()): a subset of our authority,
	 * which process_vm_readv() may find short (EPERM, which mem.c reports as EFAULT);
	 * then read as ourselves */
	if (r == -EFAULT && creds_self())
		r = copy_path(c, path_addr, c->path);
	if (r < 0)
		return set_result(c, r);
	/*
	 * Invariant 2 for a continued open: the SEND of the CONTINUE is itself the
	 * re-validation (the kernel refuses an id whose thread no longer waits in this call,
	 * and while it waits its tid cannot be another's), and the decision before it acts
	 * on nothing. So ID_VALID is asked here only when the supervisor may answer itself;
	 * a decision that does not end in CONTINUE asks it before its answer. The --audit
	 * record, made after the SEND, names the path only if the SEND succeeded
	 * (dispatch_one()): a path read from a tid reused meanwhile is never recorded.
	 */
	if (!continuing) {
		if (!still_valid(c))
			return set_result(c, -ESRCH);
		validated = true;
	}
	/* RESOLVE_IN_ROOT and RESOLVE_BENEATH scope even an absolute path to dirfd */
	r = make_caller(c, dirfd, (resolve & (RESOLVE_IN_ROOT | RESOLVE_BENEATH)) ? "." : c->path,
			base, &caller);
	if (r >= 0 && continuing) {
		/* decided without opening: the kernel opens it (or creates it) */
		r = may_continue_write(c, flags, mode) ?
			    vfs_open_decide_write(c->s->vfs, &caller, c->path, flags, &c->verdict) :
			    vfs_open_decide(c->s->vfs, &caller, c->path, flags, &c->verdict);
		/* unnamespaced: only where Landlock grants reads, none of them hidden */
		if (r == VFS_OPEN_KERNEL && c->s->readset &&
		    !ll_readset_has(c->s->readset, c->verdict.vpath))
			r = VFS_OPEN_SUPERVISOR;
		if (r == VFS_OPEN_KERNEL) {
			if ((flags & O_ACCMODE) != O_RDONLY && names_comm(c->verdict.vpath))
				atomic_store(&c->s->comm_nocache, true); /* see read_comm() */
			c->outcome = CALL_CONTINUE;
			c->id_unchecked = true;
			return;
		}
		/* an O_PATH open of a stub passes no fanotify mark: refused here */
		if (r < 0 && c->verdict.denied && c->s->continue_denied_opens && !(flags & O_PATH)) {
			/* A hidden symlink is followed by the kernel, to a target it decides
			 * by its own path (the stub watcher reports a stub there). Anything
			 * else is reported (dispatch_one()) with the errno the kernel gives,
			 * and a stub's refusal is not reported a second time. */
			if (!c->verdict.link) {
				c->err = native_open_errno(&c->verdict);
				c->policy_denied = true;
				if (c->err == EPERM)
					stubwatch_expect(c->s, c->tid);
			}
			c->outcome = CALL_CONTINUE;
			return;
		}
	}
	if (!validated && !still_valid(c))
		return set_result(c, -ESRCH);
	if (r < 0)
		return set_result(c, r);
	r = vfs_open_nowait(c->s->vfs, &caller, c->path, flags, mode, resolve, &wait, &c->verdict);
	if (r < 0)
		return set_result(c, r);
	if (wait)
		return defer_fifo_open(c, r, flags);
	if (c->s->hide_mount_table) {
		enum mounttab_kind k = mounttab_kind(c->verdict.vpath);

		/* the stubs' mount points are the hidden paths (mounttab.h); without
		 * the stubs' filesystem known, nothing of the table is shown */
		if (k != MOUNTTAB_NONE && !c->s->stub_mounts.known) {
			close(r);
			return set_result(c, -EACCES);
		}
		if (k != MOUNTTAB_NONE &&
		    (r = mounttab_filtered(r, k, c->tid, &c->s->stub_mounts)) < 0)
			return set_result(c, r);
	}
	if ((flags & O_ACCMODE) != O_RDONLY && names_comm(c->verdict.vpath))
		atomic_store(&c->s->comm_nocache, true); /* see read_comm() */
	c->fd = r;
	c->fd_flags = (flags & O_CLOEXEC) ? O_CLOEXEC : 0;
	c->outcome = CALL_ADDFD;
}

static void handle_openat2(struct sup_call *c)
{
	struct open_how how = { 0 };
	size_t size = (size_t)ARG(c, 3);
	int r;

	if (size < sizeof(uint64_t) * 3 - 0 || size > 4096)
		return set_result(c, size < sizeof(how) ? -EINVAL : -E2BIG);
	if (size > sizeof(how)) {
		/* Larger structs are fine as long as the extension is all zero. */
		char extra[4096 - sizeof(how)];
		r = mem_read(c->tid, ARG(c, 2) + sizeof(how), extra, size - sizeof(how));
		if (r < 0)
			return set_result(c, r);
		for (size_t i = 0; i < size - sizeof(how); i++)
			if (extra[i])
				return set_result(c, -E2BIG);
		size = sizeof(how);
	}
	r = mem_read(c->tid, ARG(c, 2), &how, size);
	if (r < 0)
		return set_result(c, r);
	if (how.flags >> 32)
		return set_result(c, -EINVAL);
	/* The kernel's own check of flags, mode and resolve bits (unknown bits, BENEATH
	 * with IN_ROOT, a mode without O_CREAT, ...), which comes before it reads the path:
	 * asked with an empty path, it answers that error, or ENOENT for the empty name,
	 * never touching a file. */
	r = (int)syscall(SYS_openat2, AT_FDCWD, "", &how, sizeof(how));
	if (r >= 0)
		close(r);
	else if (errno != ENOENT)
		return set_result(c, negative_errno());
	do_open(c, (int64_t)ARG(c, 0), ARG(c, 1), (int)how.flags, (mode_t)how.mode, how.resolve);
}

/* --- stat family ---------------------------------------------------------------------- */

/* process_vm_writev checks ptrace access. Still acting for the caller, the thread holds a
 * subset of our authority, which suffices unless the caller changed its ids or made
 * itself non-dumpable (EPERM, which mem.c reports as EFAULT): then as ourselves. */
static int write_back(struct sup_call *c, uint64_t addr, const void *buf, size_t len)
{
	int r = mem_write(c->tid, addr, buf, len);

	if (r == -EFAULT && creds_self())
		r = mem_write(c->tid, addr, buf, len);
	return r;
}

/* A path argument read while the thread may still act for an earlier caller
 * (keeps_caller()): a refusal of that subset of our authority is read again as ourselves. */
static int copy_path_lazy(struct sup_call *c, uint64_t addr, char *buf)
{
	int r = copy_path(c, addr, buf);

	if (r == -EFAULT && creds_self())
		r = copy_path(c, addr, buf);
	return r;
}

/* fstat(fd)-style requests: AT_EMPTY_PATH with "" (or NULL for statx) name an fd, not a
 * path. Stat it through the thread's /proc fd link, which reaches the very object. */
static int stat_fd(struct sup_call *c, int64_t fd, struct stat *st)
{
	char proc[64];

	if (fd_proc_path(c, fd, proc, sizeof(proc)) < 0)
		return -EBADF;
	/* /proc/<tid>/fd is ours to read: a refusal of an earlier caller's authority that the
	 * thread still acts with (keeps_caller()) is asked again as ourselves */
	if (stat(proc, st) < 0 && (!(errno == EACCES || errno == EPERM) || !creds_self() ||
				   stat(proc, st) < 0))
		return errno == ENOENT ? -EBADF : negative_errno();
	return 0;
}

static void do_stat(struct sup_call *c, int64_t dirfd, uint64_t path_addr, uint64_t buf_addr,
		    int flags)
{
	char base[PATH_MAX];
	struct vfs_caller caller;
	struct stat st;
	int r;

	if (c->s->audit)
		sc_format_atflags((uint64_t)(unsigned)flags, c->flags_text, sizeof(c->flags_text));
	r = copy_path_lazy(c, path_addr, c->path);
	if (r < 0)
		return set_result(c, r);
	if (!still_valid(c))
		return set_result(c, -ESRCH);
	if (c->path[0] == '\0') {
		if (!(flags & AT_EMPTY_PATH))
			return set_result(c, -ENOENT);
		r = stat_fd(c, dirfd, &st);
	} else {
		r = make_caller(c, dirfd, c->path, base, &caller);
		if (r >= 0)
			r = vfs_stat(c->s->vfs, &caller, c->path, flags & ~AT_EMPTY_PATH, &st,
				     &c->verdict);
	}
	if (r >= 0)
		r = write_back(c, buf_addr, &st, sizeof(st));
	set_result(c, r < 0 ? r : 0);
}

static void handle_statx(struct sup_call *c)
{
	int64_t dirfd = (int64_t)ARG(c, 0);
	int flags = (int)ARG(c, 2);
	unsigned mask = (unsigned)ARG(c, 3);
	char base[PATH_MAX];
	struct vfs_caller caller;
	struct statx stx;
	int r;

	if (c->s->audit)
		sc_format_atflags((uint64_t)(unsigned)flags, c->flags_text, sizeof(c->flags_text));
	if (ARG(c, 1) == 0) {
		c->path[0] = '\0'; /* Linux 6.11: statx(fd, NULL, AT_EMPTY_PATH) */
	} else {
		r = copy_path_lazy(c, ARG(c, 1), c->path);
		if (r < 0)
			return set_result(c, r);
	}
	if (!still_valid(c))
		return set_result(c, -ESRCH);
	memset(&stx, 0, sizeof(stx));
	if (c->path[0] == '\0') {
		char proc[64];

		if (!(flags & AT_EMPTY_PATH))
			return set_result(c, -ENOENT);
		if (fd_proc_path(c, dirfd, proc, sizeof(proc)) < 0)
			return set_result(c, -EBADF);
		/* ours to read, as in stat_fd() */
		creds_self();
		r = RET_NERRNO(statx(AT_FDCWD, proc, flags & ~(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW),
				     mask, &stx));
		if (r == -ENOENT)
			r = -EBADF;
	} else {
		r = make_caller(c, dirfd, c->path, base, &caller);
		if (r >= 0)
			r = vfs_statx(c->s->vfs, &caller, c->path, flags & ~AT_EMPTY_PATH, mask, &stx,
				      &c->verdict);
	}
	if (r >= 0)
		r = write_back(c, ARG(c, 4), &stx, sizeof(stx));
	set_result(c, r < 0 ? r : 0);
}

unsigned call_want(const struct sup_call *c)
{
	int i = sc_object_arg(c->e, 0);

	return i < 0 ? VFS_WANT_WRITE : vfs_want_of((enum sc_access)c->e->access[i], 0);
}

/* --- generic one-path operations ------------------------------------------------------ */

/* For a path already copied: re-validate and build the caller. Returns <0 when the
 * call is already answered. */
static int prep_copied_path(struct sup_call *c, int64_t dirfd, const char *path, char *base,
			    struct vfs_caller *caller)
{
	int r;

	if (!still_valid(c)) {
		set_result(c, -ESRCH);
		return -ESRCH;
	}
	r = make_caller(c, dirfd, path, base, caller);
	if (r < 0) {
		set_result(c, r);
		return r;
	}
	return 0;
}

/* Copy the path at args[path_arg], relative to dirfd (AT_FDCWD for the old syscalls),
 * re-validate and build the caller. Returns <0 when the call is already answered. */
static int prep_path(struct sup_call *c, int64_t dirfd, uint64_t path_addr, char *path,
		     char *base, struct vfs_caller *caller)
{
	int r = copy_path_lazy(c, path_addr, path);

	if (r < 0) {
		set_result(c, r);
		return r;
	}
	return prep_copied_path(c, dirfd, path, base, caller);
}

static void handle_access(struct sup_call *c, int64_t dirfd, uint64_t path, int mode, int flags)
{
	char base[PATH_MAX];
	struct vfs_caller caller;
	int r;

	if (prep_path(c, dirfd, path, c->path, base, &caller) < 0)
		return;
	/* access(2) asks for the real ids unless AT_EACCESS */
	if (!(flags & AT_EACCESS) && (r = creds_caller(c->tid, c->req->id,
						  CREDS_REAL | fixed_creds(c))) < 0)
		return set_result(c, r);
	r = vfs_access(c->s->vfs, &caller, c->path, mode, flags, &c->verdict);
	set_result(c, r);
}

static void handle_readlink(struct sup_call *c, int64_t dirfd, uint64_t path, uint64_t buf,
			    int64_t size)
{
	char base[PATH_MAX], out[PATH_MAX];
	struct vfs_caller caller;
	int r;

	if (size <= 0)
		return set_result(c, -EINVAL);
	if (prep_path(c, dirfd, path, c->path, base, &caller) < 0)
		return;
	r = vfs_readlink(c->s->vfs, &caller, c->path, out, sizeof(out), &c->verdict);
	if (r >= 0) {
		size_t n = MIN((size_t)r, (size_t)size);
		int w = write_back(c, buf, out, n);
		r = w < 0 ? w : (int)n;
	}
	set_result(c, r);
}

/* continue_writes: an allowed call is the kernel's to perform in the caller's view,
 * which refuses whatever a path swapped since the check could name and the policy
 * refuses (ctx.h); a refused one is answered here. */
static void continue_if_allowed(struct sup_call *c, int r)
{
	if (r < 0)
		return set_result(c, r);
	c->outcome = CALL_CONTINUE;
}

static void handle_mkdir(struct sup_call *c, int64_t dirfd, uint64_t path, mode_t mode)
{
	char base[PATH_MAX];
	struct vfs_caller caller;

	if (prep_path(c, dirfd, path, c->path, base, &caller) < 0)
		return;
	if (c->s->continue_writes)
		return continue_if_allowed(c, vfs_mkdir_decide(c->s->vfs, &caller, c->path,
								&c->verdict));
	set_result(c, vfs_mkdir(c->s->vfs, &caller, c->path, mode, &c->verdict));
}

static void handle_mknod(struct sup_call *c, int64_t dirfd, uint64_t path, mode_t mode, dev_t dev)
{
	char base[PATH_MAX];
	struct vfs_caller caller;

	if (prep_path(c, dirfd, path, c->path, base, &caller) < 0)
		return;
	set_result(c, vfs_mknod(c->s->vfs, &caller, c->path, mode, dev, &c->verdict));
}

static void handle_unlink(struct sup_call *c, int64_t dirfd, uint64_t path, int flags)
{
	char base[PATH_MAX];
	struct vfs_caller caller;

	if (prep_path(c, dirfd, path, c->path, base, &caller) < 0)
		return;
	if (c->s->continue_writes)
		return continue_if_allowed(c, vfs_unlink_decide(c->s->vfs, &caller, c->path, flags,
								 &c->verdict));
	set_result(c, vfs_unlink(c->s->vfs, &caller, c->path, flags, &c->verdict));
}

/* linkat(fd, "", newdirfd, newpath, AT_EMPTY_PATH), as for O_TMPFILE: the caller's fd is
 * taken once, and the decision (where its link says it is) and the link are on that
 * copy. */
static int link_fd(struct sup_call *c, int64_t fd, const struct vfs_caller *nc)
{
	_cleanup_close_ int copy = -1;
	char proc[64];
	ssize_t n;

	if ((int)fd == AT_FDCWD)
		return -EPERM; /* the cwd: a directory */
	copy = tracee_getfd(c, (int)fd);
	if (copy < 0)
		return copy;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", copy);
	n = readlink(proc, c->path, PATH_MAX - 1);
	if (n < 0)
		return -EBADF;
	c->path[n] = '\0';
	return vfs_link_fd(c->s->vfs, copy, c->path, nc, c->path2, &c->verdict);
}

enum two_paths_op { TWO_PATHS_RENAME, TWO_PATHS_LINK };

/* rename/link: two paths, each with its own dirfd. */
static void handle_two_paths(struct sup_call *c, int64_t olddirfd, uint64_t oldpath,
			     int64_t newdirfd, uint64_t newpath, unsigned flags, enum two_paths_op op)
{
	char obase[PATH_MAX], nbase[PATH_MAX];
	bool is_link = op == TWO_PATHS_LINK;
	struct vfs_caller oc, nc;
	int r;

	r = copy_path_lazy(c, oldpath, c->path);
	if (r >= 0)
		r = copy_path_lazy(c, newpath, c->path2);
	if (r < 0)
		return set_result(c, r);
	if (!still_valid(c))
		return set_result(c, -ESRCH);
	/* AT_EMPTY_PATH: the old "path" is the fd itself, whatever it is */
	bool empty_old = is_link && (flags & AT_EMPTY_PATH) && c->path[0] == '\0';

	r = empty_old ? 0 : make_caller(c, olddirfd, c->path, obase, &oc);
	/* Both relative to one directory (git's link(tmp, name), mv in place): the base
	 * read once serves both, and both paths are then resolved from the same directory
	 * even if the caller changes its cwd or that fd meanwhile. */
	if (r >= 0 && !empty_old && (int)newdirfd == (int)olddirfd && c->path[0] != '/' &&
	    c->path2[0] != '/')
		nc = oc;
	else if (r >= 0)
		r = make_caller(c, newdirfd, c->path2, nbase, &nc);
	if (r < 0)
		return set_result(c, r);
	if (empty_old)
		r = link_fd(c, olddirfd, &nc);
	else if (is_link)
		r = vfs_link(c->s->vfs, &oc, c->path, &nc, c->path2, (int)flags, &c->verdict);
	else
		r = vfs_rename(c->s->vfs, &oc, c->path, &nc, c->path2, flags, &c->verdict);
	set_result(c, r);
}

static void handle_symlink(struct sup_call *c, uint64_t target, int64_t newdirfd, uint64_t linkpath)
{
	char base[PATH_MAX];
	struct vfs_caller caller;
	int r;

	/* The target is stored text, never resolved now: copy it and decide on the link. */
	r = copy_path_lazy(c, target, c->path2);
	if (r < 0)
		return set_result(c, r);
	if (prep_path(c, newdirfd, linkpath, c->path, base, &caller) < 0)
		return;
	set_result(c, vfs_symlink(c->s->vfs, c->path2, &caller, c->path, &c->verdict));
}

static void fd_meta(struct sup_call *c, int tfd, const struct timespec *times);

/*
 * prep_path() for fchmodat2 and fchownat, whose AT_EMPTY_PATH with an empty name acts on
 * dirfd's own file, as fchmod and fchown do (any fd, an O_PATH one too: answered here by
 * fd_meta()), or on the cwd for AT_FDCWD (named "."). With a name the flag means
 * nothing; *flags loses it either way. Returns <0 when the call is already answered.
 */
static int prep_meta_path(struct sup_call *c, int64_t dirfd, uint64_t path, int *flags,
			  char *base, struct vfs_caller *caller)
{
	bool empty_ok = *flags & AT_EMPTY_PATH;
	int r;

	*flags &= ~AT_EMPTY_PATH;
	if (!empty_ok)
		return prep_path(c, dirfd, path, c->path, base, caller);
	/* copied before the caller is built: a file's fd is no directory to start from */
	r = copy_path_lazy(c, path, c->path);
	if (r < 0) {
		set_result(c, r);
		return r;
	}
	if (!c->path[0] && (int)dirfd != AT_FDCWD) {
		fd_meta(c, (int)dirfd, NULL);
		return -1;
	}
	if (!c->path[0])
		str_copy(c->path, PATH_MAX, ".");
	return prep_copied_path(c, dirfd, c->path, base, caller);
}

static void handle_chmod(struct sup_call *c, int64_t dirfd, uint64_t path, mode_t mode, int flags)
{
	char base[PATH_MAX];
	struct vfs_caller caller;

	if (prep_meta_path(c, dirfd, path, &flags, base, &caller) < 0)
		return;
	set_result(c, vfs_chmod(c->s->vfs, &caller, c->path, mode, flags, &c->verdict));
}

static void handle_chown(struct sup_call *c, int64_t dirfd, uint64_t path, uid_t uid, gid_t gid,
			 int flags)
{
	char base[PATH_MAX];
	struct vfs_caller caller;

	if (prep_meta_path(c, dirfd, path, &flags, base, &caller) < 0)
		return;
	set_result(c, vfs_chown(c->s->vfs, &caller, c->path, uid, gid, flags, &c->verdict));
}

static void handle_truncate(struct sup_call *c)
{
	char base[PATH_MAX];
	struct vfs_caller caller;

	if (prep_path(c, AT_FDCWD, ARG(c, 0), c->path, base, &caller) < 0)
		return;
	set_result(c, vfs_truncate(c->s->vfs, &caller, c->path, (off_t)ARG(c, 1), &c->verdict));
}

/* utime, utimes, futimesat, utimensat: normalise to utimensat's timespec pair. A NULL
 * path (futimens) names the fd: decided by its /proc link and performed on a copy of it,
 * as fchmod is (fd_meta(): an fd opened read-only on a ro mapping must not set times). */
enum times_layout {
	TIMES_TIMESPEC, /* utimensat: struct timespec[2] */
	TIMES_TIMEVAL,  /* utimes/futimesat: struct timeval[2] */
	TIMES_UTIMBUF,  /* utime: struct utimbuf */
};

static void handle_utimes(struct sup_call *c, int64_t dirfd, uint64_t path_addr, uint64_t times_addr,
			  enum times_layout kind, int flags)
{
	struct timespec ts[2], *tsp = NULL;
	char base[PATH_MAX];
	struct vfs_caller caller;
	int r;

	if (times_addr) {
		if (kind == TIMES_TIMESPEC) { /* utimensat: struct timespec[2] */
			r = mem_read(c->tid, times_addr, ts, sizeof(ts));
		} else if (kind == TIMES_TIMEVAL) { /* utimes/futimesat: struct timeval[2] */
			struct timeval tv[2];
			r = mem_read(c->tid, times_addr, tv, sizeof(tv));
			for (int i = 0; i < 2 && r >= 0; i++)
				ts[i] = (struct timespec){ tv[i].tv_sec, tv[i].tv_usec * 1000 };
		} else { /* utime: struct utimbuf */
			struct utimbuf ub;
			r = mem_read(c->tid, times_addr, &ub, sizeof(ub));
			ts[0] = (struct timespec){ ub.actime, 0 };
			ts[1] = (struct timespec){ ub.modtime, 0 };
		}
		if (r < 0)
			return set_result(c, r);
		tsp = ts;
	}
	if (path_addr == 0 && kind == TIMES_TIMESPEC) {
		/* futimens: the fd's file, as fchmod's (the kernel's do_utimes(): no flags, and
		 * AT_FDCWD takes the path form, whose NULL name faults) */
		if (dirfd == AT_FDCWD)
			return set_result(c, -EFAULT);
		if (flags)
			return set_result(c, -EINVAL);
		return fd_meta(c, (int)dirfd, tsp);
	}
	if (prep_path(c, dirfd, path_addr, c->path, base, &caller) < 0)
		return;
	set_result(c, vfs_utimensat(c->s->vfs, &caller, c->path, tsp, flags, &c->verdict));
}

static void handle_statfs(struct sup_call *c)
{
	char base[PATH_MAX];
	struct vfs_caller caller;
	struct statfs sf;
	int r;

	if (prep_path(c, AT_FDCWD, ARG(c, 0), c->path, base, &caller) < 0)
		return;
	r = vfs_statfs(c->s->vfs, &caller, c->path, &sf, &c->verdict);
	if (r >= 0)
		r = write_back(c, ARG(c, 1), &sf, sizeof(sf));
	set_result(c, r < 0 ? r : 0);
}

/* --- metadata through an fd ------------------------------------------------------- */

#define XATTR_PRIV_RULE "security.* and trusted.* xattrs need capabilities the sandbox lacks"
#define DEVICE_META_RULE "a device node's metadata is the host's: not changed"

/* security.* (file capabilities, LSM labels) and trusted.* need CAP_SETFCAP or
 * CAP_SYS_ADMIN, which the sandbox never has: the kernel would refuse the caller, so the
 * supervisor, which has them, must refuse on its behalf. */
static bool privileged_xattr(const char *name)
{
	return strncmp(name, "security.", 9) == 0 || strncmp(name, "trusted.", 8) == 0;
}

/* Device nodes are the host's (mknod of one is refused): their mode, owner, times and
 * ACLs are the host's /dev, whatever mapping shows them. */
static bool is_device(mode_t m)
{
	return S_ISCHR(m) || S_ISBLK(m);
}

/* A memfd's link reads "/memfd:NAME (deleted)": an object of the sandbox's own, on the
 * kernel's internal shm mount, with no place in the view to protect. */
static bool is_memfd(int fd, const char *link, const struct stat *st)
{
	struct statfs sf;

	return strncmp(link, "/memfd:", 7) == 0 && st->st_nlink == 0 && fstatfs(fd, &sf) == 0 &&
	       (sf.f_type == TMPFS_MAGIC || sf.f_type == HUGETLBFS_MAGIC);
}

/*
 * fchmod, fchown, futimens, fsetxattr, fremovexattr need only ownership of the file (or,
 * for futimens setting the time now, write permission), not a fd
 * opened for writing, so a file opened read-only from a read-only mapping could be
 * changed on the host in unnamespaced mode (no read-only mount in the way, and Landlock
 * has no right for it). The fd is taken from the caller once, and both the decision
 * and the act are on that copy: the fd number is the caller's to dup2() another file
 * onto at any moment, the copy is ours. Its /proc link names where it is (the policy's
 * path), the copy what it is.
 */
static void fd_meta(struct sup_call *c, int tfd, const struct timespec *times)
{
	char proc[64], name[XATTR_NAME_MAX + 1], value[65536];
	_cleanup_close_ int fd = -1;
	struct stat st;
	size_t size = 0;
	ssize_t n;
	int r;

	if (c->e->id == SC_fsetxattr || c->e->id == SC_fremovexattr) {
		r = mem_read_string(c->tid, ARG(c, 1), name, sizeof(name));
		if (r < 0)
			return set_result(c, r == -ENAMETOOLONG ? -ERANGE : r);
	}
	if (c->e->id == SC_fsetxattr) {
		size = (size_t)ARG(c, 3);
		if (size > sizeof(value))
			return set_result(c, -E2BIG);
		r = mem_read(c->tid, ARG(c, 2), value, size);
		if (r < 0)
			return set_result(c, r);
	}
	if (!still_valid(c))
		return set_result(c, -ESRCH);
	fd = tracee_getfd(c, tfd);
	if (fd < 0)
		return set_result(c, fd);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, c->path, PATH_MAX - 1);
	if (n < 0 || fstat(fd, &st) < 0)
		return set_result(c, -EBADF);
	c->path[n] = '\0';
	c->has_path = true;
	if ((c->e->id == SC_fsetxattr || c->e->id == SC_fremovexattr) && privileged_xattr(name))
		return deny(c, EPERM, XATTR_PRIV_RULE);
	if (is_device(st.st_mode))
		return deny(c, EPERM, DEVICE_META_RULE);
	/* Pipes, sockets and anonymous inodes have no place in the view to protect. */
	if (c->path[0] == '/' && !is_memfd(fd, c->path, &st)) {
		char vpath[PATH_MAX];
		size_t len = (size_t)n;

		/* an unlinked file reads "PATH (deleted)": decided where it was */
		str_copy(vpath, sizeof(vpath), c->path);
		if (st.st_nlink == 0 && len > 10 && streq(vpath + len - 10, " (deleted)"))
			vpath[len - 10] = '\0';
		r = vfs_decide(c->s->vfs, vpath, call_want(c), &c->verdict);
		if (r < 0)
			return set_result(c, r);
	}
	/* the act itself is the caller's: the kernel checks ownership and capabilities */
	if ((r = creds_caller(c->tid, c->req->id, fixed_creds(c))) < 0)
		return set_result(c, r);
	switch (c->e->id) {
	case SC_fchmod:
		r = RET_NERRNO(fchmod(fd, vfs_chmod_mode(st.st_mode, (mode_t)ARG(c, 1))));
		break;
	case SC_fchown:
		r = RET_NERRNO(fchown(fd, (uid_t)ARG(c, 1), (gid_t)ARG(c, 2)));
		break;
	/* by AT_EMPTY_PATH (prep_meta_path()): through the copy's /proc link, which an
	 * O_PATH fd allows as the kernel allows it by the caller's fd */
	case SC_fchmodat2:
		r = RET_NERRNO(fchmodat(AT_FDCWD, proc, vfs_chmod_mode(st.st_mode, (mode_t)ARG(c, 2)),
					0));
		break;
	case SC_fchownat:
		r = RET_NERRNO(fchownat(AT_FDCWD, proc, (uid_t)ARG(c, 2), (gid_t)ARG(c, 3), 0));
		break;
	case SC_fsetxattr:
		r = RET_NERRNO(fsetxattr(fd, name, value, size, (int)ARG(c, 4)));
		break;
	case SC_utimensat:
		r = RET_NERRNO(futimens(fd, times));
		break;
	default:
		r = RET_NERRNO(fremovexattr(fd, name));
		break;
	}
	set_result(c, r);
}

static void handle_fd_meta(struct sup_call *c)
{
	fd_meta(c, (int)ARG(c, 0), NULL);
}

/* --- xattrs and inotify: resolved by the vfs, performed here on its O_PATH fd ------- */

/* The four path xattr calls; the last two change the file. */
enum xattr_op { XATTR_GET, XATTR_LIST, XATTR_SET, XATTR_REMOVE };
/* The l* variants act on a symlink itself. */
enum xattr_follow { XATTR_FOLLOW, XATTR_NOFOLLOW };

static void handle_xattr(struct sup_call *c, enum xattr_follow follow, enum xattr_op op)
{
	char base[PATH_MAX], name[XATTR_NAME_MAX + 1], name_unused[NAME_MAX + 1], proc[64];
	char value[XATTR_SIZE_MAX > 65536 ? 65536 : XATTR_SIZE_MAX];
	struct vfs_caller caller;
	struct stat st;
	unsigned want;
	size_t size;
	int r, fd;

	if (op != XATTR_LIST) {
		r = mem_read_string(c->tid, ARG(c, 1), name, sizeof(name));
		if (r < 0)
			return set_result(c, r == -ENAMETOOLONG ? -ERANGE : r);
	}
	size = (size_t)(op == XATTR_REMOVE ? 0 : ARG(c, op == XATTR_LIST ? 2 : 3));
	/* the kernel's setxattr() refuses a value past XATTR_SIZE_MAX; a get or list
	 * buffer past it is only clamped (as here) */
	if (op == XATTR_SET && size > sizeof(value))
		return set_result(c, -E2BIG);
	if (size > sizeof(value))
		size = sizeof(value);
	if (op == XATTR_SET) {
		r = mem_read(c->tid, ARG(c, 2), value, size);
		if (r < 0)
			return set_result(c, r);
	}
	if (prep_path(c, AT_FDCWD, ARG(c, 0), c->path, base, &caller) < 0)
		return;
	want = call_want(c) | (follow == XATTR_NOFOLLOW ? VFS_WANT_NOFOLLOW : 0);
	fd = vfs_resolve(c->s->vfs, &caller, c->path, want, name_unused, &c->verdict);
	if (fd < 0)
		return set_result(c, fd);
	if (op >= XATTR_SET && (privileged_xattr(name) || (fstat(fd, &st) == 0 && is_device(st.st_mode)))) {
		safe_close(fd);
		return deny(c, EPERM, privileged_xattr(name) ? XATTR_PRIV_RULE : DEVICE_META_RULE);
	}
	/* The O_PATH fd is the object itself; its /proc link lands on it without any
	 * further lookup of a name the sandbox could swap. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	switch (op) {
	case XATTR_GET:
		r = RET_NERRNO(getxattr(proc, name, size ? value : NULL, size));
		if (r > 0 && size)
			r = write_back(c, ARG(c, 2), value, (size_t)r) < 0 ? -EFAULT : r;
		break;
	case XATTR_LIST:
		r = RET_NERRNO(listxattr(proc, size ? value : NULL, size));
		if (r > 0 && size)
			r = write_back(c, ARG(c, 1), value, (size_t)r) < 0 ? -EFAULT : r;
		break;
	case XATTR_SET:
		r = RET_NERRNO(setxattr(proc, name, value, size, (int)ARG(c, 4)));
		break;
	case XATTR_REMOVE:
	default:
		r = RET_NERRNO(removexattr(proc, name));
		break;
	}
	safe_close(fd);
	set_result(c, r);
}

/*
 * The notifier's buffer for directory reads, allocated at its first use. As a static
 * thread-local array it was part of the process's static TLS, which the loader zeroes
 * for every thread created (the notifiers, the exec tracer, the stub watcher) at the
 * start of every run, whether or not a directory is ever read.
 */
#define DIR_BUF_SIZE 65536

static char *get_dir_buf(struct tracee_cache *tc)
{
	if (!tc->dir_buf)
		tc->dir_buf = malloc(DIR_BUF_SIZE);
	return tc->dir_buf;
}

/*
 * Whether the directory (an O_PATH fd, at vpath in the view) holds an entry the view
 * hides: its events would carry that entry's name, and the inotify fd is read natively,
 * where nothing can filter them. -errno when it cannot be read.
 */
static int holds_hidden(struct sup_call *c, int fd, const char *vpath)
{
	_cleanup_close_ int dfd = -1;
	char proc[64], *buf;
	ssize_t n;

	if (!vfs_dir_needs_filter(c->s->vfs, vpath))
		return 0;
	if (!(buf = get_dir_buf(c->tc)))
		return -ENOMEM;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	dfd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return negative_errno();
	while ((n = syscall(SYS_getdents64, dfd, buf, DIR_BUF_SIZE)) > 0)
		if (vfs_filter_dirents(c->s->vfs, vpath, buf, (size_t)n) != (size_t)n)
			return 1;
	return n < 0 ? negative_errno() : 0;
}

/*
 * A watch is added by the supervisor on the object the vfs resolved, to the caller's
 * inotify instance. Its events are read natively and name the directory's entries,
 * hidden ones too: where a hidden name is absent (--strict-hide, unnamespaced, a view
 * the kernel cannot answer for) a watch on a directory that holds a hidden entry is
 * refused (EACCES, as for a directory one may not read). Where the covered view lists
 * the name already (an empty stub: hidden_names_shown) the watch is let be, so that a
 * project's watcher (a dev server, a test runner) works beside its .env; its events
 * name the entry and say when a process outside touches it, never what it holds. The
 * sandbox cannot create a hidden name itself; a hidden name that a process outside
 * creates later in a watched directory does show in its events.
 */
static void handle_inotify_add_watch(struct sup_call *c)
{
	char base[PATH_MAX], name[NAME_MAX + 1], proc[64];
	_cleanup_close_ int ino = -1, fd = -1;
	struct vfs_caller caller;
	uint32_t mask = (uint32_t)ARG(c, 2);
	struct stat st;
	int r;

	if (prep_path(c, AT_FDCWD, ARG(c, 1), c->path, base, &caller) < 0)
		return;
	fd = vfs_resolve(c->s->vfs, &caller, c->path,
			 call_want(c) | ((mask & IN_DONT_FOLLOW) ? VFS_WANT_NOFOLLOW : 0), name,
			 &c->verdict);
	if (fd < 0)
		return set_result(c, fd);
	if (fstat(fd, &st) < 0)
		return set_result(c, negative_errno());
	if (S_ISDIR(st.st_mode) && !c->s->hidden_names_shown &&
	    (r = holds_hidden(c, fd, c->verdict.vpath)) != 0) {
		if (r < 0)
			return set_result(c, r);
		return deny(c, EACCES, "inotify: the directory holds hidden entries, whose names "
				       "its events would show");
	}
	ino = tracee_getfd(c, (int)ARG(c, 0));
	if (ino < 0)
		return set_result(c, ino);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	set_result(c, RET_NERRNO(inotify_add_watch(ino, proc, mask & ~IN_DONT_FOLLOW)));
}

/* --- directories -------------------------------------------------------------------- */

static void handle_getdents64(struct sup_call *c)
{
	char proc[64], vdir[PATH_MAX];
	const char *dir = vdir;
	_cleanup_close_ int fd = -1;
	size_t count = (size_t)ARG(c, 2);
	char *buf = get_dir_buf(c->tc);
	bool filter;
	ssize_t n;

	/* Emulated, not continued: the fd number is a register, but the fd table is not,
	 * and another thread could dup2() a directory that needs filtering onto it. */
	fd = tracee_getfd(c, (int)ARG(c, 0));
	if (fd < 0)
		return set_result(c, fd);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, vdir, sizeof(vdir) - 1);
	vdir[n > 0 ? n : 0] = '\0';
	if (n < 0 && errno == ENAMETOOLONG) {
		/* deeper than procfs prints: named as for a relative path (deep_base()),
		 * so that its hidden entries stay filtered */
		char **deep = &c->tc->deep[0];

		if (!*deep && !(*deep = malloc(VFS_DEEP_MAX)))
			return set_result(c, -ENOMEM);
		n = vfs_dir_vpath(fd, *deep, VFS_DEEP_MAX);
		if (n < 0)
			return set_result(c, (int)n);
		dir = *deep;
	}
	snprintf(c->path, sizeof(c->path), "%s", dir);
	c->has_path = n > 0;
	filter = n > 0 && dir[0] == '/' && vfs_dir_needs_filter(c->s->vfs, dir);
	if (!buf)
		return set_result(c, -ENOMEM);
	count = MIN(count, DIR_BUF_SIZE);
	for (;;) {
		size_t len;

		/* Same open file description as the tracee's: the offset advances for it. */
		n = syscall(SYS_getdents64, fd, buf, count);
		if (n <= 0)
			return set_result(c, n < 0 ? negative_errno() : 0);
		len = filter ? vfs_filter_dirents(c->s->vfs, dir, buf, (size_t)n) : (size_t)n;
		/* An all-hidden batch must not look like the end of the directory. */
		if (len == 0)
			continue;
		if (write_back(c, ARG(c, 1), buf, len) < 0)
			return set_result(c, -EFAULT);
		return set_result(c, (int)len);
	}
}

/* --- exec, chdir, personality: checked, then continued ------------------------------- */

/*
 * The kernel resolves the path again after the continue, and the sandbox can change what
 * it names in between (a thread rewriting the path buffer, a symlink swapped in a
 * writable directory): the thread is seized before the continue, and the file executed
 * is compared with the one checked before the new program runs (exectrace.c).
 */
static void handle_exec(struct sup_call *c, int64_t dirfd, uint64_t path, int flags)
{
	char base[PATH_MAX];
	struct vfs_caller caller;
	struct stat st;
	bool have_st = false;
	int r;

	if ((flags & AT_EMPTY_PATH) && path) {
		/* fexecve: the fd was opened through the vfs, whose rules already applied;
		 * the exec stop checks that the file run is the one behind it now. */
		r = copy_path(c, path, c->path);
		if (r >= 0 && c->path[0] == '\0') {
			_cleanup_close_ int fd = tracee_getfd(c, (int)dirfd);

			r = fd < 0 ? fd : fstat(fd, &st) < 0 ? negative_errno() : 0;
			/* A warm start's command on the fd of the file firstexec.c checked: the
			 * kernel runs that file, so there is nothing for an exec stop to see.
			 * Taken on every path: the entry is good for one attempt. */
			if (firstexec_take(c->s, c->tid, r < 0 ? NULL : &st, c->path,
					   sizeof(c->path), &c->verdict)) {
				if (!still_valid(c))
					return set_result(c, -ESRCH);
				c->exec_by_fd = true;
				comm_changes(c);
				c->outcome = CALL_CONTINUE;
				return;
			}
			if (r < 0)
				return set_result(c, r);
			have_st = true;
			goto watch;
		}
	}
	firstexec_take(c->s, c->tid, NULL, NULL, 0, NULL); /* one attempt only */
	if (prep_path(c, dirfd, path, c->path, base, &caller) < 0)
		return;
	r = vfs_check_exec_file(c->s->vfs, &caller, c->path, &c->verdict, &st);
	if (r < 0)
		return set_result(c, r);
	have_st = true;
watch:
	if (c->s->continue_writes) {
		/* as a native exec: the kernel resolves the program and its interpreters in
		 * the covered view, under Landlock's execute right, so an exec stop has
		 * nothing to catch (docs/threat-model.md, "Native creates") */
		if (!still_valid(c))
			return set_result(c, -ESRCH);
		comm_changes(c);
		c->outcome = CALL_CONTINUE;
		return;
	}
	r = exectrace_watch(c->s, c->tid, have_st ? &st : NULL, &c->exec_token);
	if (r == -ESRCH)
		return set_result(c, r);
	if (r < 0) {
		log_warning("exec refused: cannot watch pid %d's exec: %s", c->tid, strerror(-r));
		return deny(c, EPERM, "exec: the supervisor cannot watch the exec (ptrace refused)");
	}
	if (!still_valid(c)) {
		/* The caller was gone before the seize, so its tid may name another task by
		 * now: let that one go at once (the interrupt's stop detaches it). */
		exectrace_armed(c->s, c->tid, c->exec_token);
		c->exec_token = 0;
		return set_result(c, -ESRCH);
	}
	comm_changes(c);
	c->outcome = CALL_CONTINUE;
}

static void handle_chdir(struct sup_call *c)
{
	char base[PATH_MAX];
	struct vfs_caller caller;
	int r;

	if (prep_path(c, AT_FDCWD, ARG(c, 0), c->path, base, &caller) < 0)
		return;
	r = vfs_check_chdir(c->s->vfs, &caller, c->path, &c->verdict);
	if (r < 0)
		return set_result(c, r);
	c->outcome = CALL_CONTINUE;
}

static void handle_personality(struct sup_call *c)
{
	uint32_t persona = (uint32_t)ARG(c, 0);

	if (persona == 0 || persona == 0xffffffffu) {
		c->outcome = CALL_CONTINUE;
		return;
	}
	deny(c, EPERM, "personality other than PER_LINUX is refused");
}

/*
 * The setuid family and setgroups: the caller changes its own ids or groups, which only
 * the namespaced root may (it keeps CAP_SETUID and CAP_SETGID). From now on every call
 * reads its caller's credentials (creds.h, CREDS_FIXED): the flag goes before the call
 * is let through, so any call of this thread after the change, which can only come after
 * this answer, finds it cleared. The other threads keep what they hold until they change
 * it themselves (a thread's credentials are its own; libc's setuid() has each thread
 * make the call).
 */
static void handle_setid(struct sup_call *c)
{
	atomic_store(&c->s->creds_fixed, false);
	c->outcome = CALL_CONTINUE;
}

/* The filter notifies prctl only for PR_SET_NAME (register values, nothing to decide):
 * it is let through, and the audit reads the thread's comm afresh from now on. */
static void handle_prctl(struct sup_call *c)
{
	comm_changes(c);
	c->outcome = CALL_CONTINUE;
}

/* --- syscalls that name a process: checked, then continued --------------------------- */

/*
 * prlimit64, sched_*, setpriority, ioprio_*, migrate_pages and move_pages with a pid
 * other than the caller's 0 (the filter keeps that one native). The kernel lets a
 * process of the same uid renice, pin, reschedule or limit another; only the sandbox's
 * own processes may be named: not a host process, not the supervisor (an RLIMIT_FSIZE
 * on it kills it at its next write), not the keeper, which is a fork of the supervisor.
 * A process group or a user names processes outside the sandbox as well: refused.
 *
 * The pid is a register value, so the kernel acts on the pid checked here. What can
 * change is the process behind it: a sandbox process that exits and is reaped frees its
 * pid, and the kernel then acts on whoever takes the pid next. In a pid namespace only
 * the sandbox's own processes can take it. Unnamespaced, a host process could, but only
 * by forking in the few microseconds before the kernel runs the call, when the pid
 * allocator, having gone once round the whole pid space (pid_max), lands on that pid.
 * A thread naming itself or its own process has no such window: neither can be reaped
 * while it waits here.
 */
static void handle_pid_arg(struct sup_call *c)
{
	const struct vfs_proc_ops *ops = c->s->proc;
	int pid = (int)ARG(c, 0);

	switch (c->e->id) {
	case SC_setpriority:
	case SC_getpriority:
	case SC_ioprio_set:
	case SC_ioprio_get: {
		bool io = c->e->id == SC_ioprio_set || c->e->id == SC_ioprio_get;
		int which = (int)ARG(c, 0);

		pid = (int)ARG(c, 1);
		if (io ? which == IOPRIO_WHO_PGRP || which == IOPRIO_WHO_USER
		       : which == PRIO_PGRP || which == PRIO_USER)
			return deny(c, EPERM, "a process group or user reaches beyond the sandbox");
		if (which != (io ? IOPRIO_WHO_PROCESS : PRIO_PROCESS))
			pid = 0; /* not a valid which: the kernel answers EINVAL */
		break;
	}
	default:
		break;
	}
	/* 0 is the caller (here with bits above the int that the filter saw); a negative
	 * pid names no process, and the kernel says so. */
	if (pid <= 0 || (ops && ops->to_host && ops->to_host(ops->userdata, pid) > 0)) {
		c->outcome = CALL_CONTINUE;
		return;
	}
	deny(c, ESRCH, "the pid is not one of the sandbox's processes");
}

/* --- the handler table ------------------------------------------------------------------
 * One row per notified syscall, indexed by its id: a row places the call's arguments for
 * the handler it shares with its siblings (the *at form, the l* form), so adding a syscall
 * is a row here after its CSV row. A notified syscall without a row falls to the filter's
 * list of calls naming a pid, then fails closed (handle()); dispatch_handles() says which
 * ids reach a handler, for the unit check that every notified row of the table has one.
 */

typedef void sc_handler(struct sup_call *c);

#ifdef __NR_open
static void sc_open(struct sup_call *c)
{
	do_open(c, AT_FDCWD, ARG(c, 0), (int)ARG(c, 1), (mode_t)ARG(c, 2), 0);
}
static void sc_creat(struct sup_call *c)
{
	do_open(c, AT_FDCWD, ARG(c, 0), O_CREAT | O_WRONLY | O_TRUNC, (mode_t)ARG(c, 1), 0);
}
static void sc_stat(struct sup_call *c)
{
	do_stat(c, AT_FDCWD, ARG(c, 0), ARG(c, 1), 0);
}
static void sc_lstat(struct sup_call *c)
{
	do_stat(c, AT_FDCWD, ARG(c, 0), ARG(c, 1), AT_SYMLINK_NOFOLLOW);
}
static void sc_access(struct sup_call *c)
{
	handle_access(c, AT_FDCWD, ARG(c, 0), (int)ARG(c, 1), 0);
}
static void sc_readlink(struct sup_call *c)
{
	handle_readlink(c, AT_FDCWD, ARG(c, 0), ARG(c, 1), (int64_t)ARG(c, 2));
}
static void sc_mkdir(struct sup_call *c)
{
	handle_mkdir(c, AT_FDCWD, ARG(c, 0), (mode_t)ARG(c, 1));
}
static void sc_mknod(struct sup_call *c)
{
	handle_mknod(c, AT_FDCWD, ARG(c, 0), (mode_t)ARG(c, 1), (dev_t)ARG(c, 2));
}
static void sc_unlink(struct sup_call *c)
{
	handle_unlink(c, AT_FDCWD, ARG(c, 0), 0);
}
static void sc_rmdir(struct sup_call *c)
{
	handle_unlink(c, AT_FDCWD, ARG(c, 0), AT_REMOVEDIR);
}
static void sc_rename(struct sup_call *c)
{
	handle_two_paths(c, AT_FDCWD, ARG(c, 0), AT_FDCWD, ARG(c, 1), 0, TWO_PATHS_RENAME);
}
static void sc_link(struct sup_call *c)
{
	handle_two_paths(c, AT_FDCWD, ARG(c, 0), AT_FDCWD, ARG(c, 1), 0, TWO_PATHS_LINK);
}
static void sc_symlink(struct sup_call *c)
{
	handle_symlink(c, ARG(c, 0), AT_FDCWD, ARG(c, 1));
}
static void sc_chmod(struct sup_call *c)
{
	handle_chmod(c, AT_FDCWD, ARG(c, 0), (mode_t)ARG(c, 1), 0);
}
static void sc_chown(struct sup_call *c)
{
	handle_chown(c, AT_FDCWD, ARG(c, 0), (uid_t)ARG(c, 1), (gid_t)ARG(c, 2), 0);
}
static void sc_lchown(struct sup_call *c)
{
	handle_chown(c, AT_FDCWD, ARG(c, 0), (uid_t)ARG(c, 1), (gid_t)ARG(c, 2), AT_SYMLINK_NOFOLLOW);
}
static void sc_utime(struct sup_call *c)
{
	handle_utimes(c, AT_FDCWD, ARG(c, 0), ARG(c, 1), TIMES_UTIMBUF, 0);
}
static void sc_utimes(struct sup_call *c)
{
	handle_utimes(c, AT_FDCWD, ARG(c, 0), ARG(c, 1), TIMES_TIMEVAL, 0);
}
static void sc_futimesat(struct sup_call *c)
{
	handle_utimes(c, (int64_t)ARG(c, 0), ARG(c, 1), ARG(c, 2), TIMES_TIMEVAL, 0);
}
static void sc_getdents(struct sup_call *c)
{
	/* glibc uses getdents64 only; the legacy layout is not filtered. */
	deny(c, ENOSYS, "legacy getdents is not emulated (use getdents64)");
}
#endif
static void sc_openat(struct sup_call *c)
{
	do_open(c, (int64_t)ARG(c, 0), ARG(c, 1), (int)ARG(c, 2), (mode_t)ARG(c, 3), 0);
}
static void sc_newfstatat(struct sup_call *c)
{
	do_stat(c, (int64_t)ARG(c, 0), ARG(c, 1), ARG(c, 2), (int)ARG(c, 3));
}
static void sc_faccessat(struct sup_call *c)
{
	handle_access(c, (int64_t)ARG(c, 0), ARG(c, 1), (int)ARG(c, 2), 0);
}
static void sc_faccessat2(struct sup_call *c)
{
	handle_access(c, (int64_t)ARG(c, 0), ARG(c, 1), (int)ARG(c, 2), (int)ARG(c, 3));
}
static void sc_readlinkat(struct sup_call *c)
{
	handle_readlink(c, (int64_t)ARG(c, 0), ARG(c, 1), ARG(c, 2), (int64_t)ARG(c, 3));
}
static void sc_mkdirat(struct sup_call *c)
{
	handle_mkdir(c, (int64_t)ARG(c, 0), ARG(c, 1), (mode_t)ARG(c, 2));
}
static void sc_mknodat(struct sup_call *c)
{
	handle_mknod(c, (int64_t)ARG(c, 0), ARG(c, 1), (mode_t)ARG(c, 2), (dev_t)ARG(c, 3));
}
static void sc_unlinkat(struct sup_call *c)
{
	handle_unlink(c, (int64_t)ARG(c, 0), ARG(c, 1), (int)ARG(c, 2));
}
static void sc_renameat(struct sup_call *c)
{
	handle_two_paths(c, (int64_t)ARG(c, 0), ARG(c, 1), (int64_t)ARG(c, 2), ARG(c, 3), 0,
			 TWO_PATHS_RENAME);
}
static void sc_renameat2(struct sup_call *c)
{
	handle_two_paths(c, (int64_t)ARG(c, 0), ARG(c, 1), (int64_t)ARG(c, 2), ARG(c, 3),
			 (unsigned)ARG(c, 4), TWO_PATHS_RENAME);
}
static void sc_linkat(struct sup_call *c)
{
	handle_two_paths(c, (int64_t)ARG(c, 0), ARG(c, 1), (int64_t)ARG(c, 2), ARG(c, 3),
			 (unsigned)ARG(c, 4), TWO_PATHS_LINK);
}
static void sc_symlinkat(struct sup_call *c)
{
	handle_symlink(c, ARG(c, 0), (int64_t)ARG(c, 1), ARG(c, 2));
}
static void sc_fchmodat(struct sup_call *c)
{
	handle_chmod(c, (int64_t)ARG(c, 0), ARG(c, 1), (mode_t)ARG(c, 2), 0);
}
static void sc_fchmodat2(struct sup_call *c)
{
	handle_chmod(c, (int64_t)ARG(c, 0), ARG(c, 1), (mode_t)ARG(c, 2), (int)ARG(c, 3));
}
static void sc_fchownat(struct sup_call *c)
{
	handle_chown(c, (int64_t)ARG(c, 0), ARG(c, 1), (uid_t)ARG(c, 2), (gid_t)ARG(c, 3),
		     (int)ARG(c, 4));
}
static void sc_utimensat(struct sup_call *c)
{
	handle_utimes(c, (int64_t)ARG(c, 0), ARG(c, 1), ARG(c, 2), TIMES_TIMESPEC, (int)ARG(c, 3));
}
static void sc_execve(struct sup_call *c)
{
	handle_exec(c, AT_FDCWD, ARG(c, 0), 0);
}
static void sc_execveat(struct sup_call *c)
{
	handle_exec(c, (int64_t)ARG(c, 0), ARG(c, 1), (int)ARG(c, 4));
}

/* The path xattr calls; the fd forms go through handle_fd_meta(). */
#define XATTR_ROW(name, follow, op)                 \
	static void sc_##name(struct sup_call *c) \
	{                                         \
		handle_xattr(c, follow, op);      \
	}
XATTR_ROW(getxattr, XATTR_FOLLOW, XATTR_GET)
XATTR_ROW(lgetxattr, XATTR_NOFOLLOW, XATTR_GET)
XATTR_ROW(listxattr, XATTR_FOLLOW, XATTR_LIST)
XATTR_ROW(llistxattr, XATTR_NOFOLLOW, XATTR_LIST)
XATTR_ROW(setxattr, XATTR_FOLLOW, XATTR_SET)
XATTR_ROW(lsetxattr, XATTR_NOFOLLOW, XATTR_SET)
XATTR_ROW(removexattr, XATTR_FOLLOW, XATTR_REMOVE)
XATTR_ROW(lremovexattr, XATTR_NOFOLLOW, XATTR_REMOVE)
#undef XATTR_ROW

static void sc_net(struct sup_call *c)
{
	/* sock.c's state is shared with the main loop (deferred connects, DNS) */
	pthread_mutex_lock(&c->s->lock);
	handle_net(c);
	pthread_mutex_unlock(&c->s->lock);
}

static sc_handler *const handlers[_SC_ID_MAX] = {
#ifdef __NR_open
	[SC_open] = sc_open,
	[SC_creat] = sc_creat,
	[SC_stat] = sc_stat,
	[SC_lstat] = sc_lstat,
	[SC_access] = sc_access,
	[SC_readlink] = sc_readlink,
	[SC_mkdir] = sc_mkdir,
	[SC_mknod] = sc_mknod,
	[SC_unlink] = sc_unlink,
	[SC_rmdir] = sc_rmdir,
	[SC_rename] = sc_rename,
	[SC_link] = sc_link,
	[SC_symlink] = sc_symlink,
	[SC_chmod] = sc_chmod,
	[SC_chown] = sc_chown,
	[SC_lchown] = sc_lchown,
	[SC_utime] = sc_utime,
	[SC_utimes] = sc_utimes,
	[SC_futimesat] = sc_futimesat,
	[SC_getdents] = sc_getdents,
#endif
	[SC_openat] = sc_openat,
	[SC_openat2] = handle_openat2,
	[SC_newfstatat] = sc_newfstatat,
	[SC_statx] = handle_statx,
	[SC_faccessat] = sc_faccessat,
	[SC_faccessat2] = sc_faccessat2,
	[SC_readlinkat] = sc_readlinkat,
	[SC_mkdirat] = sc_mkdirat,
	[SC_mknodat] = sc_mknodat,
	[SC_unlinkat] = sc_unlinkat,
	[SC_renameat] = sc_renameat,
	[SC_renameat2] = sc_renameat2,
	[SC_linkat] = sc_linkat,
	[SC_symlinkat] = sc_symlinkat,
	[SC_fchmodat] = sc_fchmodat,
	[SC_fchmodat2] = sc_fchmodat2,
	[SC_fchownat] = sc_fchownat,
	[SC_truncate] = handle_truncate,
	[SC_utimensat] = sc_utimensat,
	[SC_statfs] = handle_statfs,
	[SC_getxattr] = sc_getxattr,
	[SC_lgetxattr] = sc_lgetxattr,
	[SC_listxattr] = sc_listxattr,
	[SC_llistxattr] = sc_llistxattr,
	[SC_setxattr] = sc_setxattr,
	[SC_lsetxattr] = sc_lsetxattr,
	[SC_removexattr] = sc_removexattr,
	[SC_lremovexattr] = sc_lremovexattr,
	[SC_fchmod] = handle_fd_meta,
	[SC_fchown] = handle_fd_meta,
	[SC_fsetxattr] = handle_fd_meta,
	[SC_fremovexattr] = handle_fd_meta,
	[SC_inotify_add_watch] = handle_inotify_add_watch,
	[SC_getdents64] = handle_getdents64,
	[SC_chdir] = handle_chdir,
	[SC_execve] = sc_execve,
	[SC_execveat] = sc_execveat,
	[SC_prctl] = handle_prctl,
	[SC_personality] = handle_personality,
	[SC_setuid] = handle_setid,
	[SC_setgid] = handle_setid,
	[SC_setreuid] = handle_setid,
	[SC_setregid] = handle_setid,
	[SC_setresuid] = handle_setid,
	[SC_setresgid] = handle_setid,
	[SC_setfsuid] = handle_setid,
	[SC_setfsgid] = handle_setid,
	[SC_setgroups] = handle_setid,
	[SC_connect] = sc_net,
	[SC_bind] = sc_net,
	[SC_listen] = sc_net,
	[SC_sendto] = sc_net,
	[SC_sendmsg] = sc_net,
	[SC_sendmmsg] = sc_net,
};

static sc_handler *handler_of(const struct sc_entry *e)
{
	return e->id >= 0 && e->id < _SC_ID_MAX ? handlers[e->id] : NULL;
}

bool dispatch_handles(const struct sc_entry *e)
{
	/* prlimit64, sched_*, ...: the filter's own list of calls naming a pid */
	return handler_of(e) != NULL || sup_filter_names_pid(e);
}

static void handle(struct sup_call *c)
{
	sc_handler *h = handler_of(c->e);

	if (h)
		return h(c);
	if (sup_filter_names_pid(c->e))
		return handle_pid_arg(c);
	/* A syscall the table notifies but no handler knows: fail closed. */
	deny(c, ENOSYS, "no handler for this notified syscall");
}

/* --- reply and account ---------------------------------------------------------------- */

static enum audit_decision audit_decision_of(const struct sup_call *c)
{
	if (c->policy_denied)
		return AUDIT_DENIED;
	if (c->outcome == CALL_CONTINUE)
		return AUDIT_CONTINUED;
	return AUDIT_EMULATED;
}

/*
 * -v prints a line per denial, but a program that retries a denied call in a loop would
 * flood the terminal and spend the supervisor's time on stderr. So per syscall and rule
 * (a hash of both; a collision only shares a budget) the first DENIAL_LINES of each
 * second are printed, then one line saying the rest of that second is not, and when the
 * key is next denied in a later second, how many were left out. The totals in the
 * summary and --report count every denial. DENIAL_KEYS slots: a key meeting a full
 * table takes the slot of the oldest second.
 */
#define DENIAL_LINES 10
#define DENIAL_KEYS 64
struct denial_rate {
	uint32_t key;
	time_t sec;
	unsigned shown;
	unsigned long held;
};

void sup_report_denial(struct sup_ctx *s, pid_t tid, const struct sc_entry *e,
		       const char *path, const char *addr, const char *vrule, int err)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static struct denial_rate slots[DENIAL_KEYS];
	const char *en = sc_errno_name(err);
	const char *rule = vrule && vrule[0] ? vrule : "policy";
	struct denial_rate *d = NULL;
	unsigned long held = 0;
	struct timespec now;
	uint32_t key;
	bool print, first_held;

	atomic_fetch_add(&s->n.denied, 1);
	if ((unsigned)e->id < _SC_ID_MAX)
		atomic_fetch_add(&s->denials_by_id[e->id], 1);
	events_denial(s->events, tid, e->name, path, addr, vrule && vrule[0] ? vrule : NULL, err);
	if (!s->verbose)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	key = fnv1a(rule, strlen(rule)) ^ ((uint32_t)e->id * 2654435761u);
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < DENIAL_KEYS && !d; i++)
		if (slots[i].key == key && slots[i].sec)
			d = &slots[i];
	if (!d) {
		d = &slots[0];
		for (size_t i = 1; i < DENIAL_KEYS; i++)
			if (slots[i].sec < d->sec)
				d = &slots[i];
		*d = (struct denial_rate){ .key = key, .sec = now.tv_sec };
	}
	if (d->sec != now.tv_sec) {
		held = d->held;
		d->sec = now.tv_sec;
		d->shown = 0;
		d->held = 0;
	}
	print = d->shown < DENIAL_LINES;
	if (print)
		d->shown++;
	first_held = !print && ++d->held == 1;
	pthread_mutex_unlock(&lock);
	if (held)
		log_notice("%lu more denied %s (%s) were not shown", held, e->name, rule);
	if (first_held)
		log_notice("more denied %s (%s) this second are not shown; the summary counts "
			   "them", e->name, rule);
	if (!print)
		return;
	if (addr)
		log_notice("denied %s %s (%s): %s", e->name, addr, vrule ? vrule : "",
			   en ? en : "error");
	else
		log_notice("denied %s \"%s\" (%s): %s", e->name, path ? path : "", rule,
			   en ? en : "error");
}

static void report_denial(struct sup_call *c)
{
	sup_report_denial(c->s, c->tid, c->e, c->has_path ? c->path : NULL,
			  c->addr[0] ? c->addr : NULL, c->verdict.rule, c->err);
}

struct call_stack {
	struct audit_frame frames[32];
	size_t n;
	char strings[8192];
};

/* Stacks are taken while the thread still waits for our reply: only then does
 * /proc/<tid>/syscall hold its stack pointer. Denials only (or every notified call with
 * --audit-stacks all): a capture costs milliseconds (SCHEMA.md). */
static uint64_t capture_stack(struct sup_call *c, struct call_stack *st)
{
	uint64_t t;
	int n;

	st->n = 0;
	if (!c->s->audit || !audit_wants_stacks(c->s->audit, audit_decision_of(c)))
		return 0;
	t = now_mono_ns();
	n = audit_stack_capture(c->tid, c->tid, c->req->data.instruction_pointer, 0,
				AUDIT_STACK_SCAN, st->frames, ELEMENTSOF(st->frames), st->strings,
				sizeof(st->strings));
	st->n = n > 0 ? (size_t)n : 0;
	/* The capture is bookkeeping, not the decision: keep it out of the latency. */
	return now_mono_ns() - t;
}

void tracee_cache_free(struct tracee_cache *tc)
{
	for (size_t i = 0; i < TRACEE_CACHE; i++)
		if (tc->e[i].tid) {
			safe_close(tc->e[i].pidfd);
			safe_close(tc->e[i].comm_fd);
		}
	free(tc->deep[0]);
	free(tc->deep[1]);
	free(tc->dir_buf);
	memset(tc, 0, sizeof(*tc));
}

static void record(struct sup_call *c, uint64_t latency, const struct call_stack *st)
{
	const struct sc_entry *execve = c->exec_by_fd ? sc_by_id(c->s->arch, SC_execve) : NULL;
	struct audit_sys a;
	char comm[32];

	if (!c->s->audit)
		return;
	read_comm(c, comm, sizeof(comm));
	a = (struct audit_sys){
		.mono_ns = c->t0,
		.pid = c->tid,
		.tid = c->tid,
		.comm = comm,
		.syscall = c->exec_by_fd ? "execve" : c->e->name,
		.nr = c->exec_by_fd && execve ? execve->nr : (int)c->req->data.nr,
		.path = c->has_path ? c->path : NULL,
		.resolved = c->verdict.vpath[0] ? c->verdict.vpath : NULL,
		.path2 = c->has_path2 ? c->path2 : NULL,
		.addr = c->addr[0] ? c->addr : NULL,
		.flags = c->flags_text[0] ? c->flags_text : NULL,
		.decision = audit_decision_of(c),
		.rule = c->verdict.rule[0] ? c->verdict.rule : NULL,
		.result = c->result,
		.err = c->err,
		.latency_ns = latency,
		.stack = st->n ? st->frames : NULL,
		.n_stack = st->n,
	};
	memcpy(a.args, c->req->data.args, sizeof(a.args));
	if (c->exec_by_fd) {
		/* execve(name, argv, envp): the name was the supervisor's, not in its memory */
		a.args[0] = 0;
		a.args[1] = c->req->data.args[2];
		a.args[2] = c->req->data.args[3];
		a.args[3] = a.args[4] = 0;
	}
	proctrack_ids(c->s->proctrack, c->tid, &a.pid, &a.sandbox_pid, &a.sandbox_tid);
	audit_sys(c->s->audit, &a);
}

/* The stat family without --audit may start and end acting for a caller too: its handler
 * reads the path and writes the result as ourselves wherever the caller's authority falls
 * short (copy_path_lazy(), write_back(), stat_fd()), and after its answer nothing of ours
 * is left to do but the reply, which no credential governs (no record, no stack). Two
 * capset() calls saved of an emulated stat. */
static bool lazy_stat(const struct sup_call *c)
{
	switch (c->e->id) {
	case SC_stat: case SC_lstat: case SC_newfstatat: case SC_statx:
		return !c->s->audit;
	default:
		return false;
	}
}

/* The changes by name that read nothing of the caller's but their paths (copy_path_lazy())
 * and the directory they start from (make_caller(), which reads it again as ourselves
 * where the caller's authority falls short), and act as the caller (creds_caller(), which
 * takes a new caller's credentials in full): nothing of ours follows but the reply and,
 * with --audit, the record (the caller's ids and comm, read as ourselves where the
 * caller's authority falls short; a stack is ours: keeps_caller()). A run of git's links,
 * an unnamespaced run's creates and removals or --audit's continued removals then keeps
 * the caller's credentials from one call to the next: two capset() calls saved of each
 * (a link 5.5 us of about 31 over native here). Not a denial: its report may read more. */
static bool lazy_change(const struct sup_call *c)
{
	switch (c->e->id) {
	case SC_link: case SC_rename: case SC_renameat: case SC_renameat2:
	case SC_symlink: case SC_symlinkat: case SC_chmod: case SC_fchmodat: case SC_fchmodat2:
	case SC_mkdir: case SC_mkdirat: case SC_unlink: case SC_unlinkat: case SC_rmdir:
		return true;
	case SC_linkat: /* not by fd (AT_EMPTY_PATH): link_fd() takes the caller's fd */
		return !(ARG(c, 4) & AT_EMPTY_PATH);
	default:
		return false;
	}
}

/* The calls that may start still acting for a caller (see dispatch_one()): the stat
 * family and the changes by name (above), and open and openat, whose handler reads tracee
 * memory as ourselves whenever the caller's authority falls short. */
static bool lazy_creds(const struct sup_call *c)
{
	return c->e->id == SC_open || c->e->id == SC_openat || lazy_stat(c) || lazy_change(c);
}

/* Whether a call handled may end still acting for its caller: what --audit adds after it
 * reads nothing of the caller's but its comm (read_comm() retries that as ourselves) and
 * its ids (memory); a stack reads its memory and maps as ourselves, so a decision whose
 * stack is asked for takes our own authority first. */
static bool keeps_caller(const struct sup_call *c)
{
	if (!lazy_creds(c) ||
	    (c->s->audit && audit_wants_stacks(c->s->audit, audit_decision_of(c))))
		return false;
	return c->outcome == CALL_CONTINUE || lazy_stat(c) ||
	       (lazy_change(c) && c->outcome == CALL_REPLY && !c->policy_denied);
}

void dispatch_one(struct sup_ctx *s, const struct seccomp_notif *req, struct tracee_cache *tc)
{
	struct sup_call c;
	struct call_stack stack;
	uint64_t stack_ns;
	int r = 0;

	/* Only the fields that must start clean: the path buffers are written before use. */
	c.s = s;
	c.tc = tc;
	c.req = req;
	c.tid = (pid_t)req->pid;
	c.t0 = now_mono_ns();
	c.outcome = CALL_REPLY;
	c.result = 0;
	c.err = 0;
	c.policy_denied = false;
	c.fd = -1;
	c.fd_flags = 0;
	c.has_path = c.has_path2 = false;
	c.comm_changing = false;
	c.exec_token = 0;
	c.exec_by_fd = false;
	c.id_unchecked = false;
	c.path[0] = c.path2[0] = c.addr[0] = c.flags_text[0] = '\0';
	c.verdict.err = 0;
	c.verdict.denied = false;
	c.verdict.below = false;
	c.verdict.rule[0] = c.verdict.vpath[0] = '\0';

	atomic_fetch_add(&s->n.notified, 1);
	c.e = req->data.arch == s->arch ? sc_lookup(s->arch, req->data.nr) : NULL;
	if (!c.e) {
		/* The filter only notifies what the table lists, so this is a table bug or a
		 * foreign arch: deny rather than guess. */
		notify_reply(s->listener, req->id, 0, ENOSYS);
		return;
	}
	/* A container's process runs its runtime's code until its program is exec'd: the
	 * filter is installed before runc opens its exec fifo through /proc/self/fd, a host
	 * file outside the container's root. Nothing of the container runs in it yet. */
	if (atomic_load(&s->runtime_init) && c.e->id != SC_execve && c.e->id != SC_execveat) {
		atomic_fetch_add(&s->n.continued, 1);
		notify_continue(s->listener, req->id);
		return;
	}

	/* Every handler starts with our own authority, except open and openat, whose run of
	 * continued calls may keep acting for the caller (below), and the stat family
	 * (lazy_stat()): two capset() calls a call
	 * saved, about 4 us here. do_open() reads as ourselves wherever its caller's
	 * authority falls short, and creds_caller() takes the next caller's credentials in
	 * full whenever they differ from what the thread holds. */
	if (!lazy_creds(&c))
		creds_self();
	handle(&c);
	if (c.e->id == SC_execve || c.e->id == SC_execveat)
		atomic_store(&s->runtime_init, false);
	/* What follows is ours: the stack, the reply, the record. A continued open has
	 * nothing of ours left to do but the SEND, which no credential governs, and its
	 * record (keeps_caller()). */
	if (!keeps_caller(&c))
		creds_self();
	proctrack_call(&c); /* ids and an exec's argv, read while the caller still waits */
	stack_ns = capture_stack(&c, &stack);

	switch (c.outcome) {
	case CALL_ADDFD:
		r = notify_addfd_send(s->listener, req->id, c.fd, c.fd_flags);
		if (r >= 0)
			c.result = r;
		else if (r != -ENOENT)
			/* Not installed (RLIMIT_NOFILE, or a kernel without the send flag):
			 * the program gets the error rather than a wait that never ends. */
			notify_reply(s->listener, req->id, 0, r == -EMFILE ? EMFILE : EIO);
		safe_close(c.fd);
		break;
	case CALL_CONTINUE:
		atomic_fetch_add(&s->n.continued, 1);
		r = notify_continue(s->listener, req->id);
		if (c.exec_token)
			exectrace_armed(s, c.tid, c.exec_token);
		break;
	case CALL_REPLY:
		r = notify_reply(s->listener, req->id, c.result, c.err);
		break;
	case CALL_REPLIED:
	default:
		break;
	}
	if (r == -ENOENT)
		/* The thread died or was interrupted while we worked: not our failure. */
		atomic_fetch_add(&s->n.gone, 1);
	else if (r < 0)
		atomic_fetch_add(&s->n.errors, 1);
	if (c.outcome != CALL_CONTINUE)
		atomic_fetch_add(&s->n.emulated, 1);
	if (r < 0 && c.id_unchecked) {
		/* Not continued, and nothing vouches that the path we read was this caller's
		 * (its tid may be another's by now): the record names no path or rule. */
		c.outcome = CALL_REPLIED;
		c.err = ESRCH;
		c.has_path = false;
		c.verdict.vpath[0] = c.verdict.rule[0] = '\0';
	}
	if (c.policy_denied)
		report_denial(&c);
	record(&c, now_mono_ns() - c.t0 - stack_ns, &stack);
}
