/* SPDX-License-Identifier: MIT */
/*
 * The fanotify marks on the covering stubs, and the thread that refuses and reports
 * the opens of them (stubwatch.h says why and when).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <unistd.h>

#include "cleanup.h"
#include "ctx.h"
#include "dispatch.h"
#include "log.h"
#include "macros.h"
#include "moat-config.h"
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

/* The syscall the thread waits in (the first field of /proc/<tid>/syscall); openat when
 * it cannot be read: gone, or "running" (a killed thread on its way out). */
static const struct sc_entry *syscall_of(const struct sup_ctx *s, pid_t tid)
{
	char p[64], buf[64];
	_cleanup_close_ int fd = -1;
	const struct sc_entry *e = NULL;
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%d/syscall", tid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (n > 0 && buf[0] >= '0' && buf[0] <= '9') {
		buf[n] = '\0';
		e = sc_lookup(s->arch, (int)strtol(buf, NULL, 10));
	}
	return e ? e : sc_by_id(s->arch, SC_openat);
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
	ssize_t n;

	if (md->fd < 0)
		return; /* FAN_Q_OVERFLOW: nothing waits on it */
	if (w->s)
		e = syscall_of(w->s, md->pid);
	/* With -v the supervisor reported it before it continued the open. Asked while
	 * the opener waits: its next open, trapped, clears what is left. */
	if (e && w->s->continue_denied_opens && take_expected(w->s, md->pid))
		e = NULL;
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
	}
	close(md->fd);
}

/* Everything queued now; false once the group has nothing more (EAGAIN) or failed. */
static bool drain(struct stubwatch *w)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct fanotify_event_metadata))));
	const struct fanotify_event_metadata *md;
	ssize_t len = read(w->fan, buf, sizeof(buf));

	if (len <= 0)
		return false;
	for (md = (const void *)buf; FAN_EVENT_OK(md, len); md = FAN_EVENT_NEXT(md, len))
		on_event(w, md);
	return true;
}

static void *stubwatch_main(void *arg)
{
	struct stubwatch *w = arg;

	for (;;) {
		struct pollfd p[2] = { { .fd = w->fan, .events = POLLIN },
				       { .fd = w->stop, .events = POLLIN } };

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		while (drain(w))
			;
		if (p[1].revents)
			break;
	}
	return NULL;
}

int stubwatch_start(struct stubwatch *w, struct sup_ctx *s)
{
	int r;

	if (w->fan < 0)
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

void stubwatch_stop(struct stubwatch *w)
{
	if (w->started) {
		uint64_t one = 1;

		(void)!write(w->stop, &one, sizeof(one));
		pthread_join(w->thread, NULL);
		w->started = false;
	}
	/* Queued events a killed opener no longer waits on: answered all the same. */
	if (w->fan >= 0) {
		w->s = NULL;
		while (drain(w))
			;
	}
	w->fan = safe_close(w->fan);
	w->stop = safe_close(w->stop);
}
