/* SPDX-License-Identifier: MIT */
/*
 * interposer internals: the supervisor.
 *
 * Lifecycle: the CLI fills struct sup_opts (launch.h; the vfs and net built from options and policy
 * files) -> sup_run() (spawn, notification loop, limits, reaping, report; returns the
 * exit status moat should exit with). The filter is compiled at build time (filter.c).
 *
 * One notification makes exactly one pass: notify.c receives it, dispatch.c decodes it
 * with syscall-table, copies arguments with mem.c, re-validates the id, asks vfs (or the
 * network layer) for a decision and the emulated result, replies, and hands an audit
 * record to the audit writer.
 */
#pragma once

#include <linux/seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "launch.h"
#include "sc.h"

struct vfs;
struct net;
struct audit_writer;
struct sup;
struct proc_map;

/* Exit reasons, for --report and the audit footer. */
enum sup_reason {
	SUP_REASON_EXITED,
	SUP_REASON_SIGNALED,
	SUP_REASON_TIMEOUT,
	SUP_REASON_MEMORY,
	SUP_REASON_PIDS,
	SUP_REASON_CPU,
	SUP_REASON_SUPERVISOR_SIGNAL,
	SUP_REASON_SETUP_FAILED,
	SUP_REASON_EXEC_FAILED,
	_SUP_REASON_MAX,
};
const char *sup_reason_name(enum sup_reason r);

/* Fill struct sup_features (launch.h), once at start. */
void sup_probe_features(struct sup_features *f);

int sup_run(struct sup_opts *o);
/* moat failed before sup_run() could (a policy it cannot use): write --report, if asked
 * for, with reason setup-failed and why. */
void sup_report_failure(struct sup_opts *o, const char *why);

/*
 * notify.c, mem.c: the seam between the supervisor and the kernel. Unset, every call
 * below is the ioctl on the real listener or process_vm_readv/writev on the real
 * tracee. A simulation (tests/unit/interposer/test-interposer-dispatch.c) sets its own
 * ops to feed hand-made requests through dispatch_one() and read its answers without a
 * kernel round trip. Set before any notifier thread starts and never while one runs;
 * notify_set_ops(NULL) restores the kernel. Functions return as the ioctl would
 * (0 or -errno; addfd the new fd number), the memory ones the bytes copied or -errno.
 */
struct notify_ops {
	int (*recv)(void *userdata, struct seccomp_notif *req);
	bool (*id_valid)(void *userdata, uint64_t id);
	/* val or err; with cont the kernel runs the call itself (FLAG_CONTINUE) */
	int (*reply)(void *userdata, uint64_t id, int64_t val, int err, bool cont);
	/* install srcfd in the caller at newfd, or with newfd -1 at the lowest free number
	 * and answer the call with it */
	int (*addfd)(void *userdata, uint64_t id, int srcfd, int newfd, unsigned newfd_flags);
	ssize_t (*mem_read)(void *userdata, pid_t tid, uint64_t addr, void *buf, size_t len);
	ssize_t (*mem_write)(void *userdata, pid_t tid, uint64_t addr, const void *buf,
			     size_t len);
	void *userdata;
};
void notify_set_ops(const struct notify_ops *ops);
const struct notify_ops *notify_get_ops(void);   /* NULL: the kernel */

/* mem.c: bounded copies from and to the tracee. */
int mem_read(pid_t tid, uint64_t addr, void *buf, size_t len);
/* Copy a NUL-terminated string of at most len-1 bytes: -ENAMETOOLONG past that. */
int mem_read_string(pid_t tid, uint64_t addr, char *buf, size_t len);
int mem_write(pid_t tid, uint64_t addr, const void *buf, size_t len);

/* notify.c: the only file that issues SECCOMP_IOCTL_NOTIF_* ioctls. */
int notify_sizes(struct seccomp_notif_sizes *ret);
int notify_recv(int listener, struct seccomp_notif *req);
bool notify_id_valid(int listener, uint64_t id);
int notify_reply(int listener, uint64_t id, int64_t val, int err);
int notify_continue(int listener, uint64_t id);
/* Install srcfd in the tracee and make the syscall return the new fd number. */
int notify_addfd_send(int listener, uint64_t id, int srcfd, unsigned newfd_flags);
/* Install srcfd at exactly fd number newfd (replacing it), without replying. */
int notify_addfd_at(int listener, uint64_t id, int srcfd, int newfd, unsigned newfd_flags);
int notify_set_sync_wake_up(int listener);
