/* SPDX-License-Identifier: MIT */
/*
 * The fanotify marks on the covering stubs, and the thread that refuses and reports
 * the opens of them (stubwatch.h says why and when).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "audit.h"
#include "cleanup.h"
#include "clock.h"
#include "creds.h"
#include "ctx.h"
#include "dispatch.h"
#include "log.h"
#include "macros.h"
#include "moat-config.h"
#include "proctrack.h"
#include "spawn.h"
#include "stubwatch.h"

int stubwatch_open(struct stubwatch *w)
{
#if MOAT_TEST_HOOKS
	/* The fallback (opens trapped and continued) as a run without root gets it. */
	if (getenv("MOAT_TEST_NO_FANOTIFY"))
		return -EPERM;
#endif
	/* FAN_CLASS_CONTENT: permission events. FAN_REPORT_TID: the opening thread, whose
	 * /proc/<tid>/syscall names the call while it waits for our answer.
	 * FAN_UNLIMITED_QUEUE: a permission event that meets a full queue is dropped and
	 * the open let through (to an empty stub, but unreported); each queued event holds
	 * a waiting thread of the sandbox, so its pids bound the queue. */
	w->fan = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_TID |
				       FAN_UNLIMITED_QUEUE,
			       O_RDONLY | O_CLOEXEC | O_LARGEFILE);
	return w->fan < 0 ? negative_errno() : 0;
}

int stubwatch_mark(struct stubwatch *w, int dirfd)
{
	/* Inode marks: every bind of the stub, in every mount, is the same inode. An
	 * inode mark needs no capability once the group is a privileged one. */
	if (fanotify_mark(w->fan, FAN_MARK_ADD | FAN_MARK_INODE, FAN_OPEN_PERM, dirfd,
			  SPAWN_STUB_FILE) < 0 ||
	    fanotify_mark(w->fan, FAN_MARK_ADD | FAN_MARK_INODE | FAN_MARK_ONLYDIR,
			  FAN_OPEN_PERM | FAN_ONDIR, dirfd, SPAWN_STUB_DIR) < 0)
		return negative_errno();
	return 0;
}

/* The syscall the thread waits in (the first field of /proc/<tid>/syscall), its
 * user-space sp and pc (the last two); openat and 0 when it cannot be read: gone, or
 * "running" (a killed thread on its way out). A thread waiting for our answer to its
 * permission event reads as "running" too while it is awake: between queueing the event
 * and going to sleep (we may read the event first, the more so when it is preempted
 * there), and when any answer written to the group wakes all its waiters, each looking
 * for its own. It cannot leave the call before we answer, so "running" is asked again
 * for up to STUBWATCH_RUNNING_NS (10 ms left 2 of 600 such denials without a stack on a
 * loaded machine), and the stack is taken with this read's sp, not a read of its own. */
static const struct sc_entry *syscall_of(const struct stubwatch *w, pid_t tid, uint64_t *sp,
					 uint64_t *pc)
{
	uint64_t give_up = now_mono_ns() + STUBWATCH_RUNNING_NS;
	const struct sc_entry *e = NULL;
	long nr = -1;
	int r;

	for (int attempt = 0;; attempt++) {
		struct pollfd stop = { .fd = w->stop, .events = POLLIN };

		r = audit_thread_syscall(tid, &nr, sp, pc);
		/* preempted on its way to sleep, on a loaded machine: the run's end (its
		 * threads killed, maybe this one) does not wait */
		if (r != -EAGAIN || now_mono_ns() > give_up || poll(&stop, 1, 0) > 0)
			break;
		if (attempt < 5)
			sched_yield();
		else
			usleep(200);
	}
	if (r == 0 && nr >= 0)
		e = sc_lookup(w->s->arch, (int)nr);
	else
		*sp = *pc = 0;
	return e ? e : sc_by_id(w->s->arch, SC_openat);
}

/* A slot per thread, found by a scan: a full table only means a second report. */
static bool take_expected(struct sup_ctx *s, pid_t tid)
{
	for (size_t i = 0; i < ELEMENTSOF(s->stub_expected); i++) {
		int t = tid;

		if (atomic_load_explicit(&s->stub_expected[i], memory_order_relaxed) == tid &&
		    atomic_compare_exchange_strong(&s->stub_expected[i], &t, 0))
			return true;
	}
	return false;
}

void stubwatch_expect(struct sup_ctx *s, pid_t tid)
{
	for (size_t i = 0; i < ELEMENTSOF(s->stub_expected); i++) {
		int t = 0;

		if (atomic_compare_exchange_strong(&s->stub_expected[i], &t, tid))
			return;
	}
}

void stubwatch_forget(struct sup_ctx *s, pid_t tid)
{
	(void)take_expected(s, tid);
}

/* The start of a sys record of an open by thread tid: its ids (the host's pid stays
 * the tid when they cannot be read, a thread gone). */
static struct audit_sys open_record_of(const struct sup_ctx *s, pid_t tid)
{
	struct audit_sys a = { .mono_ns = now_mono_ns(), .pid = tid, .tid = tid };

	proctrack_ids(s->proctrack, tid, &a.pid, &a.sandbox_pid, &a.sandbox_tid);
	return a;
}

/* The rest of a sys record of an open the kernel performed or the stubs refused (the
 * opener has moved on: no flags of its own, no arguments), and the record written. */
static void record_open(struct sup_ctx *s, struct audit_sys *a, const struct sc_entry *e,
			const char *vpath, enum audit_decision dec, const char *rule, int err,
			const struct audit_frame *stack, size_t n_stack)
{
	char p[48], comm[32] = "";
	_cleanup_close_ int fd = -1;
	ssize_t n;

	a->syscall = e ? e->name : "openat";
	a->nr = e ? e->nr : -1;
	a->path = a->resolved = vpath[0] ? vpath : NULL;
	a->flags = "O_RDONLY";
	a->decision = dec;
	a->rule = rule && rule[0] ? rule : NULL;
	a->err = err;
	a->stack = n_stack ? stack : NULL;
	a->n_stack = n_stack;
	snprintf(p, sizeof(p), "/proc/%d/comm", a->tid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, comm, sizeof(comm) - 1) : -1;
	comm[n > 0 ? n - 1 : 0] = '\0';
	a->comm = comm;
	audit_sys(s->audit, a);
}

/*
 * One event. The call is read while the opener still waits in it (microseconds: only a
 * denied open waits on this), then the answer, then the report. The event's fd is
 * the stub as the opener reached it: its path, printed relative to the root of the
 * mount namespace that holds it (the sandbox's, whose root is the virtual root), is the
 * covered virtual path, whatever name, /proc/<pid>/fd link or /proc/<pid>/root detour
 * led there; the rule is the vfs's for that path.
 */
static void on_event(struct stubwatch *w, const struct fanotify_event_metadata *md)
{
	struct fanotify_response resp = { .fd = md->fd, .response = FAN_DENY };
	struct vfs_verdict verdict = { 0 };
	const struct sc_entry *e = NULL;
	char link[64], vpath[PATH_MAX];
	struct audit_frame frames[32];
	char strings[8192];
	uint64_t sp = 0, pc = 0;
	size_t n_stack = 0;
	ssize_t n;

	if (md->fd < 0)
		return; /* FAN_Q_OVERFLOW: nothing waits on it */
	if (w->s)
		e = syscall_of(w, md->pid, &sp, &pc);
	/* With -v the supervisor reported it before it continued the open. Asked while
	 * the opener waits: its next open, trapped, clears what is left. */
	if (e && w->s->continue_denied_opens && take_expected(w->s, md->pid))
		e = NULL;
	/* --audit: the denied call's stack, while the opener still waits for the answer
	 * (SCHEMA.md: stacks of denied calls). Not while permission events of the open
	 * group may be queued (pace()): the capture takes the symbol cache's lock, which a
	 * notifier may hold while its own open of a mapped file in the sandbox's mounts
	 * waits in one of them for this very thread; such a denial has no stack. */
	if (e && pc && w->s->audit && (md->mask & FAN_ALL_PERM_EVENTS) && !w->perm_left &&
	    audit_wants_stacks(w->s->audit, AUDIT_DENIED)) {
		int k = audit_stack_capture(md->pid, md->pid, pc, sp, AUDIT_STACK_SCAN, frames,
					    ELEMENTSOF(frames), strings, sizeof(strings));

		n_stack = k > 0 ? (size_t)k : 0;
	}
	if (md->mask & FAN_ALL_PERM_EVENTS)
		(void)!write(w->fan, &resp, sizeof(resp));
	snprintf(link, sizeof(link), "/proc/self/fd/%d", md->fd);
	n = readlink(link, vpath, sizeof(vpath) - 1);
	vpath[n > 0 ? n : 0] = '\0';
	if ((md->mask & FAN_ALL_PERM_EVENTS) && e) {
		if (vpath[0] == '/')
			(void)vfs_decide(w->s->vfs, vpath, VFS_WANT_READ, &verdict);
		if (!verdict.rule[0])
			str_copy(verdict.rule, sizeof(verdict.rule), "a stub covering a hidden path");
		sup_report_denial(w->s, md->pid, e, vpath[0] ? vpath : NULL, NULL, verdict.rule,
				  EPERM);
		if (w->s->audit) {
			struct audit_sys a = open_record_of(w->s, md->pid);

			record_open(w->s, &a, e, vpath, AUDIT_DENIED, verdict.rule, EPERM,
				    frames, n_stack);
		}
	}
	close(md->fd);
}

/* A notifier thread of ours (ctx.h, notifier_tids). */
static bool own_thread(struct sup_ctx *s, pid_t tid)
{
	for (size_t i = 0; i < ELEMENTSOF(s->notifier_tids); i++)
		if (atomic_load(&s->notifier_tids[i]) == tid)
			return true;
	return false;
}

/* Any thread of ours, a FIFO's waiter (dispatch.c) included: asked only of a tid whose ids
 * proctrack could not tell, which is rare (a status read that failed). */
static bool own_task(pid_t tid)
{
	char p[48];

	snprintf(p, sizeof(p), "/proc/self/task/%d", tid);
	return access(p, F_OK) == 0;
}

/*
 * An open the kernel performed in the sandbox's mounts. The event's fd is the object the
 * kernel opened (not a name a racing thread could change), its path the virtual one
 * (printed from the root of the sandbox's mount namespace); the rule is the vfs's for it.
 */
static void on_open_event(struct stubwatch *w, const struct fanotify_event_metadata *md)
{
	struct vfs_verdict verdict = { 0 };
	char link[64], vpath[PATH_MAX];
	struct audit_sys a;
	struct stat st;
	bool gone;
	ssize_t n;

	if (md->fd < 0) {
		if (md->mask & FAN_Q_OVERFLOW)
			log_warning("the kernel's queue of open events overflowed: opens are "
				    "missing from the audit stream");
		return;
	}
	if (md->mask & FAN_OPEN_PERM) {
		/* pacing (pace()): the opener waited for its turn; the open's own event,
		 * once it succeeds, is what is recorded */
		struct fanotify_response resp = { .fd = md->fd, .response = FAN_ALLOW };

		(void)!write(w->opens, &resp, sizeof(resp));
		close(md->fd);
		return;
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%d", md->fd);
	n = readlink(link, vpath, sizeof(vpath) - 1);
	/* asked only of a name that ends so: no fstat() for every other open event */
	gone = n > 10 && !memcmp(vpath + n - 10, " (deleted)", 10) && !fstat(md->fd, &st) &&
	       st.st_nlink == 0;
	close(md->fd);
	/* an exec's open is recorded as the exec */
	if (!w->s || n <= 0 || (md->mask & FAN_OPEN_EXEC))
		return;
	vpath[n] = '\0';
	/* A file no name leads to (unlinked, reopened through its /proc fd link) reads
	 * "PATH (deleted)": where it was. A file that holds a link is recorded whatever
	 * its name ends with, " (deleted)" included. */
	if (vpath[0] != '/')
		return;
	if (gone)
		vpath[n - 10] = '\0';
	if (own_thread(w->s, md->pid))
		return;
	a = open_record_of(w->s, md->pid);
	if (a.pid == getpid() || (w->keeper > 0 && a.pid == w->keeper) ||
	    (!a.sandbox_pid && own_task(md->pid)))
		return;
	(void)vfs_decide(w->s->vfs, vpath, VFS_WANT_READ, &verdict);
	record_open(w->s, &a, sc_by_id(w->s->arch, SC_openat), vpath, AUDIT_NATIVE,
		    verdict.rule, 0, NULL, 0);
}

/* Everything queued now in group fd (the stubs' or the opens'); false once it has
 * nothing more (EAGAIN), failed, or is not open. */
static bool drain(struct stubwatch *w, int fd)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct fanotify_event_metadata))));
	const struct fanotify_event_metadata *md;
	ssize_t len = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;

	if (len <= 0)
		return false;
	if (fd == w->opens && w->perm_left != SIZE_MAX)
		w->perm_left -= MIN(w->perm_left, (size_t)len);
	for (md = (const void *)buf; FAN_EVENT_OK(md, len); md = FAN_EVENT_NEXT(md, len))
		if (fd == w->fan)
			on_event(w, md);
		else
			on_open_event(w, md);
	return true;
}

/* FAN_OPEN_PERM added to, or taken from, every mount mark of the open events. The
 * kernel takes no permission mark on procfs (EINVAL, since 6.12): opens of the
 * sandbox's /proc are not paced, and bounded by STUBWATCH_BACKLOG_MAX alone. */
static int set_paced(struct stubwatch *w, bool on)
{
	struct creds_raised raised;
	int r = 0, queued;

	/* mount marks take CAP_SYS_ADMIN (stubwatch_mark_mounts()) */
	(void)creds_raise(1ull << CAP_SYS_ADMIN, &raised);
	for (size_t i = 0; i < w->n_mounts && r == 0; i++) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/self/fd/%d", w->mounts[i]);
		if (fanotify_mark(w->opens, (on ? FAN_MARK_ADD : FAN_MARK_REMOVE) | FAN_MARK_MOUNT,
				  FAN_OPEN_PERM, AT_FDCWD, path) < 0 && errno != EINVAL)
			r = negative_errno();
	}
	creds_lower(&raised, "the pacing marks");
	w->paced = on;
	/* Paced, any event may be a permission one; once not, only those already queued,
	 * which the next FIONREAD bytes hold (read after the marks changed). */
	w->perm_left = SIZE_MAX;
	if (!on && ioctl(w->opens, FIONREAD, &queued) == 0)
		w->perm_left = (size_t)queued;
	return r;
}

/*
 * Backpressure on the sandbox's native opens: past STUBWATCH_PACE_HIGH bytes of unread
 * open events, each further open waits in its permission event until this thread has
 * read everything queued before it; below STUBWATCH_PACE_LOW, they stop waiting. The
 * backlog, kernel memory charged to us, and the time teardown takes to read it stay
 * bounded, whatever pace the sandbox opens at, and no event is dropped.
 */
static void pace(struct stubwatch *w)
{
	unsigned max = STUBWATCH_BACKLOG_MAX;
	int queued = 0;

#if MOAT_TEST_HOOKS
	/* MOAT_TEST_BACKLOG_MAX=BYTES: the limit, low enough for a test to meet it */
	if (getenv("MOAT_TEST_BACKLOG_MAX"))
		max = (unsigned)strtoul(getenv("MOAT_TEST_BACKLOG_MAX"), NULL, 10);
#endif
	if (w->opens < 0 || !w->n_mounts || ioctl(w->opens, FIONREAD, &queued) < 0)
		return;
	if ((unsigned)queued > max && !w->overrun && w->keeper > 0) {
		/* Only opens that cannot be paced get here (procfs): the run ends rather
		 * than its records go missing or the queue takes the host's memory. The
		 * keeper is our child, not reaped before the main loop sees it exit. */
		w->overrun = true;
		log_error("the sandbox opened files faster than the audit stream records them, "
			  "where it cannot be made to wait (%u bytes of open events queued): the "
			  "run is stopped", (unsigned)queued);
		(void)kill(w->keeper, SIGKILL);
	}
	if (!w->paced && (unsigned)queued > STUBWATCH_PACE_HIGH) {
		int r = set_paced(w, true);

		if (r < 0)
			log_warning("cannot make the sandbox's opens wait for the audit recorder "
				    "(%s): its backlog of open events may grow without bound",
				    strerror(-r));
	} else if (w->paced && (unsigned)queued < STUBWATCH_PACE_LOW) {
		(void)set_paced(w, false);
	}
}

/*
 * While open events keep coming, the recorder reads them every STUBWATCH_BATCH_MS
 * instead of waiting on the group: an event queued for a reader that waits costs the
 * opener a wake-up of the recorder (on this project's paravirtualised VM, an interrupt
 * to the other CPU or the recorder running in the opener's place); queued for no
 * waiter, nothing. The stubs' group is waited on throughout (an opener waits on each of
 * its events), and so are the opens while they are paced (each waits too).
 */
static void *stubwatch_main(void *arg)
{
	struct stubwatch *w = arg;
	bool batch = false;

	for (;;) {
		/* a negative fd is left alone by poll() */
		struct pollfd p[3] = { { .fd = w->fan, .events = POLLIN },
				       { .fd = w->stop, .events = POLLIN },
				       { .fd = batch ? -1 : w->opens, .events = POLLIN } };
		bool opened = false;

		if (poll(p, 3, batch ? STUBWATCH_BATCH_MS : -1) < 0 && errno != EINTR)
			break;
		/* the stubs' first, and again between reads of the open events: an opener
		 * waits on each of theirs, and a program that opens files faster than they
		 * are recorded would otherwise keep it waiting until the flood stops */
		do {
			while (drain(w, w->fan))
				;
			pace(w);
		} while (drain(w, w->opens) && (opened = true));
		if (p[1].revents)
			break;
		batch = opened && !w->paced;
	}
	return NULL;
}

int stubwatch_start(struct stubwatch *w, struct sup_ctx *s)
{
	int r;

	if (w->fan < 0 && w->opens < 0)
		return 0;
	w->s = s;
	w->stop = eventfd(0, EFD_CLOEXEC);
	if (w->stop < 0)
		return negative_errno();
	r = -pthread_create(&w->thread, NULL, stubwatch_main, w);
	if (r < 0)
		return r;
	w->started = true;
	return 0;
}

/* What the recorder holds but its group. */
static void recorder_forget(struct stubwatch *w)
{
	w->mntns = safe_close(w->mntns);
	for (size_t i = 0; i < w->n_mounts; i++)
		safe_close(w->mounts[i]);
	free(w->mounts);
	w->mounts = NULL;
	w->n_mounts = 0;
	w->paced = false;
	w->perm_left = 0;
}

/*
 * The last close of a fanotify group waits for a grace period after its marks are gone
 * (fsnotify_wait_marks_destroyed()): 10-20 ms on a paravirtualised VM, paid once per
 * group at the end of every run that has one. The marks are flushed first, at stop, so
 * that the grace period passes during the rest of the teardown. The stubs' group holds
 * inode marks; the opens' group mount marks, whose flush takes CAP_SYS_ADMIN as placing
 * them did (without it, EPERM: they stayed until the close, which then waited for all).
 */
static void flush_marks(struct stubwatch *w)
{
	struct creds_raised raised;

	if (w->fan >= 0)
		(void)fanotify_mark(w->fan, FAN_MARK_FLUSH, 0, AT_FDCWD, NULL);
	if (w->opens < 0)
		return;
	(void)creds_raise(1ull << CAP_SYS_ADMIN, &raised);
	if (fanotify_mark(w->opens, FAN_MARK_FLUSH | FAN_MARK_MOUNT, 0, AT_FDCWD, NULL) < 0)
		log_debug("open events: marks not flushed: %s", strerror(errno));
	creds_lower(&raised, "the flush of the open events' marks");
}

void stubwatch_stop(struct stubwatch *w)
{
	if (w->started) {
		uint64_t one = 1;

		(void)!write(w->stop, &one, sizeof(one));
		pthread_join(w->thread, NULL);
		w->started = false;
	}
	/* The opens the sandbox made before it was killed are still recorded (the writer
	 * is closed after this). */
	while (drain(w, w->opens))
		;
	/* Queued events a killed opener no longer waits on: answered all the same. */
	if (w->fan >= 0) {
		w->s = NULL;
		while (drain(w, w->fan))
			;
	}
	/* The groups themselves go in stubwatch_release(), at the end of the teardown (their
	 * last close, which waits for the grace period after the marks, is lastclose.h's
	 * helper's where it holds them). */
	flush_marks(w);
	recorder_forget(w);
	w->stop = safe_close(w->stop);
}

void stubwatch_release(struct stubwatch *w)
{
	w->fan = safe_close(w->fan);
	w->opens = safe_close(w->opens);
}

int stubwatch_open_recorder(struct stubwatch *w)
{
#if MOAT_TEST_HOOKS
	if (getenv("MOAT_TEST_NO_FANOTIFY"))
		return -EPERM;
#endif
	/* FAN_REPORT_TID: the opening thread, as a trapped call's record names it.
	 * FAN_UNLIMITED_QUEUE: an overflow would lose records. FAN_CLASS_CONTENT: the
	 * permission events that pace the opener (pace()), queued with the others. */
	w->opens = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC | FAN_NONBLOCK |
					 FAN_REPORT_TID | FAN_UNLIMITED_QUEUE,
				 O_RDONLY | O_CLOEXEC | O_LARGEFILE | O_NOATIME);
	return w->opens < 0 ? negative_errno() : 0;
}

void stubwatch_close_recorder(struct stubwatch *w)
{
	w->opens = safe_close(w->opens);
	recorder_forget(w);
}

/* mountinfo's octal escapes (\040 for a space), undone in place */
static void unescape(char *p)
{
	char *o = p;

	for (; *p; p++, o++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
		    p[3] >= '0' && p[3] <= '7') {
			*o = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
			p += 3;
		} else {
			*o = *p;
		}
	}
	*o = '\0';
}

int stubwatch_mark_mounts(struct stubwatch *w, pid_t keeper, int rootfd)
{
	char path[64], *line = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	struct creds_raised raised;
	size_t cap = 0;
	int r = 0, marked = 0;

	if (w->opens < 0)
		return -EBADF;
	w->keeper = keeper;
	/* An event's path is its fd's in the sandbox's namespace. Once that is gone (its
	 * processes killed at teardown, events still queued) the mounts are detached and a
	 * path would start at its mount's root: held until the last event is read. */
	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", keeper);
	w->mntns = open(path, O_RDONLY | O_CLOEXEC);
	if (w->mntns < 0)
		return negative_errno();
	/* the keeper's root is the sandbox's: its mount points are the virtual paths */
	snprintf(path, sizeof(path), "/proc/%d/mountinfo", keeper);
	f = fopen(path, "re");
	if (!f)
		return negative_errno();
	/* mount marks take CAP_SYS_ADMIN, which the confined supervisor keeps in its
	 * permitted set only; without it the first mark fails (EPERM) */
	(void)creds_raise(1ull << CAP_SYS_ADMIN, &raised);
	while (r >= 0 && getline(&line, &cap, f) > 0) {
		struct open_how how = { .flags = O_PATH | O_CLOEXEC,
					.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS |
						   RESOLVE_NO_MAGICLINKS };
		char mp[PATH_MAX];
		_cleanup_close_ int fd = -1;
		int *more;

		/* ID PARENT MAJOR:MINOR ROOT MOUNT-POINT ... */
		if (!mounttab_field(line, 4, mp, sizeof(mp)))
			continue;
		unescape(mp);
		fd = (int)syscall(SYS_openat2, rootfd, mp[1] ? mp + 1 : ".", &how, sizeof(how));
		if (fd < 0)
			continue; /* below a later mount, or no path the sandbox sees */
		/* named through the fd's magic link: fanotify_mark() takes no O_PATH fd
		 * alone, and the link is the mount RESOLVE_IN_ROOT reached */
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (fanotify_mark(w->opens, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_OPEN | FAN_OPEN_EXEC,
				  AT_FDCWD, path) < 0) {
			r = negative_errno();
		} else if (!(more = realloc(w->mounts, (w->n_mounts + 1) * sizeof(*more)))) {
			r = -ENOMEM;
		} else {
			/* kept: pacing adds to this mark and takes away again (pace()) */
			w->mounts = more;
			w->mounts[w->n_mounts++] = TAKE_FD(fd);
			marked++;
		}
	}
	free(line);
	creds_lower(&raised, "the mount marks");
	return r < 0 ? r : marked;
}
