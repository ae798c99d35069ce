/* SPDX-License-Identifier: MIT */
/*
 * stubwatch: denials of native read-only opens, learnt from the stubs themselves.
 *
 * Namespaced, every hidden or read-denied path is covered by a bind of one of two stub
 * inodes (launch/spawn.c, cover_path()). With read-only opens native
 * (SUP_FILTER_NATIVE_OPEN), an open of a hidden path is an open of a stub: a fanotify
 * FAN_OPEN_PERM mark on each stub inode has the kernel ask us, and a thread of its own
 * answers FAN_DENY (the open fails with EPERM) and reports the denial as a trapped one
 * is (sup_report_denial()): the rule, found by the virtual path, which is the stub's
 * mount point in the sandbox's namespace. With -v the opens stay trapped and a denied
 * one is continued after the supervisor reported it (continue_denied_opens): the marks
 * still refuse it (EPERM, as without -v), and that event is not reported again.
 *
 * Lifecycle, on the supervisor's main thread: stubwatch_open() before the supervisor
 * confines itself (fanotify permission events need CAP_SYS_ADMIN in the initial user
 * namespace; -errno when it cannot be had: opens then stay trapped and continued),
 * stubwatch_mark() when the keeper passes the stubs (SYNC_STUBS), stubwatch_start()
 * once the context is complete, stubwatch_stop() at teardown, after the sandbox is
 * killed (answers whatever is still queued, removes the marks), stubwatch_release() at
 * the end of it (closes the groups). Every event is answered and
 * its fd closed, on every path. The marks are for the report only: a stub holds nothing,
 * so an open the kernel let through (the group closed, say) finds an empty file.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct sup_ctx;

struct stubwatch {
	int fan;     /* the fanotify group, or -1 */
	int opens;   /* --audit: the notification group that reports native opens, or -1 */
	pid_t keeper; /* its opens are not the sandbox's */
	int mntns;   /* the sandbox's mount namespace, held until the last event is read */
	int *mounts; /* O_PATH fds of the mounts opens has marks on */
	size_t n_mounts;
	bool paced;  /* those marks ask FAN_OPEN_PERM too: every open waits for its turn */
	bool overrun; /* past STUBWATCH_BACKLOG_MAX: the run was stopped */
	size_t perm_left; /* bytes of opens' queue that may hold permission events */
	int stop;    /* eventfd: the thread ends when it is written */
	bool started;
	pthread_t thread;
	struct sup_ctx *s;
};

#define STUBWATCH_INIT { .fan = -1, .opens = -1, .mntns = -1, .stop = -1 }

/* 0, or -errno (EPERM: not root; MOAT_TEST_NO_FANOTIFY in test_hooks builds). */
int stubwatch_open(struct stubwatch *w);
/* Marks SPAWN_STUB_FILE and SPAWN_STUB_DIR below dirfd (an O_PATH fd). 0 or -errno. */
int stubwatch_mark(struct stubwatch *w, int dirfd);
int stubwatch_start(struct stubwatch *w, struct sup_ctx *s);
/* With -v (continue_denied_opens) the supervisor reports a denied open itself and
 * continues it: stubwatch_expect(tid) before the CONTINUE of one that is to meet a stub,
 * whose event is then answered but not reported again. stubwatch_forget(tid) when the
 * thread's next open is trapped: a path swapped meanwhile may have met no stub. */
void stubwatch_expect(struct sup_ctx *s, pid_t tid);
void stubwatch_forget(struct sup_ctx *s, pid_t tid);
void stubwatch_stop(struct stubwatch *w);
/* After stubwatch_stop(), as late in the teardown as may be: our fds of the groups closed
 * (their marks went in stubwatch_stop()). Where lastclose.h's helper holds the groups too,
 * the last close, which waits for the grace period that follows, is its, after our exit. */
void stubwatch_release(struct stubwatch *w);

/*
 * --audit with read-only opens native (root only, as the marks on the stubs): a second
 * group, of notification events, with a mount mark (FAN_OPEN) on every mount of the
 * sandbox's namespace, so that each open the kernel performs there is recorded in the
 * stream (`openat`, `O_RDONLY`, decision `native`, the rule the path falls under)
 * without a round trip: the opener does not wait. Nothing trapped is continued as an
 * open (creates and write opens are opened by moat itself, ADDFD, and recorded by
 * their handler), so every event is one the sandbox made natively; a backlog of
 * unread events past STUBWATCH_PACE_HIGH bytes adds FAN_OPEN_PERM to the marks until it
 * falls below STUBWATCH_PACE_LOW, so that a program opening faster than its opens are
 * recorded waits for the recorder instead of growing the kernel's queue (the group is
 * of the content class for that, its events of both kinds in one queue, in order);
 * exec opens are recorded as execs; the supervisor's and
 * the keeper's own opens are not the sandbox's. A denied open of a stub is recorded
 * as denied. stubwatch_open_recorder() with stubwatch_open(), before the supervisor
 * confines itself (FAN_UNLIMITED_QUEUE: no event lost); stubwatch_mark_mounts() when
 * the keeper's mounts are ready (SYNC_MOUNTS_READY, before the command exists: no
 * open of the sandbox's goes unseen), which raises CAP_SYS_ADMIN from the permitted set
 * for the marks; stubwatch_close_recorder() if the run traps its opens after all.
 */
#define STUBWATCH_PACE_HIGH (256u << 10) /* bytes of queued events: about 10 000 opens */
#define STUBWATCH_PACE_LOW (32u << 10)
/* how long a denied opener that reads as "running" is asked again (stubwatch.c) */
#define STUBWATCH_RUNNING_NS (100ull * 1000 * 1000)
/* how long the recorder lets open events gather while they keep coming (stubwatch.c) */
#define STUBWATCH_BATCH_MS 2
/* Opens of procfs, which takes no permission mark, are not paced: a backlog past this
 * (about 170 000 events) stops the run. */
#define STUBWATCH_BACKLOG_MAX (4u << 20)
int stubwatch_open_recorder(struct stubwatch *w);
int stubwatch_mark_mounts(struct stubwatch *w, pid_t keeper, int rootfd);
void stubwatch_close_recorder(struct stubwatch *w);
