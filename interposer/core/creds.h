/* SPDX-License-Identifier: MIT */
/*
 * creds: a notifier thread acts with the authority of the caller it serves (docs/architecture.md
 * invariant 7), so that the kernel refuses what the caller could not do.
 *
 * Credentials are per thread at the syscall level (setfsuid, setfsgid, setgroups and
 * capset change the calling thread only; glibc's wrappers broadcast to every thread, so
 * the raw syscalls are used), and each notifier thread has its own umask (it unshares
 * CLONE_FS). A notifier thread is in one of two states:
 *
 *   - self: its own effective capabilities, which it needs to reach the tracee
 *     (process_vm_readv, pidfd_getfd and /proc/<tid>/{cwd,fd} check ptrace access,
 *     which a caller that changed its ids or made itself non-dumpable only grants to
 *     CAP_SYS_PTRACE); its fs ids, groups and umask are whatever they last were;
 *   - caller: the caller's fs ids (or real ids, for access(2)), supplementary groups
 *     and umask, and of its effective capabilities only those that govern file access
 *     (CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_FSETID): a
 *     sandbox that has them has them over every file it can see, and no other
 *     capability is ever used on its behalf, but for one: a send of credentials the
 *     caller may claim (creds_send_claim()), which the kernel checks against us.
 *
 * The caller's credentials are read afresh on every call from /proc/<tid>/status (see
 * creds.c for why they are not cached; CREDS_FIXED below for the one run where nothing
 * can change them), then applied only where they differ from what
 * the thread holds: a run of calls from the same caller costs one read and two capsets a
 * call, or the read alone for a run of continued opens, stats and changes by name (link,
 * rename, chmod, mkdir, unlink, ...; with --audit, those whose stack is not asked for),
 * where the thread stays the caller's from one call to the next (dispatch.c
 * keeps_caller()).
 */
#pragma once

#include <linux/capability.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* creds_caller() flags */
#define CREDS_REAL (1u << 0) /* the caller's real ids, as access(2) without AT_EACCESS */
/*
 * The run's credentials cannot change (the caller says so: sup_ctx.creds_fixed) and the
 * call needs no umask (it creates nothing): the ids, groups and capabilities of the last
 * status this thread read stand for this caller's, without a read (the pread of a generated
 * file and its parse: 3-5 us here, a quarter of the supervisor's time in an emulated chmod).
 * Why that holds. The command drops every capability (bounding, inheritable, permitted,
 * effective, ambient) but, namespaced and started by root, CAP_SETUID, CAP_SETGID and
 * CAP_KILL, and sets no_new_privs before it installs the filter; no thread the filter
 * covers can create a namespace (unshare, setns and CLONE_NEW* are refused). Without
 * CAP_SETUID or CAP_SETGID a thread may only move its ids among its real, effective and
 * saved ones, all one id when the run started with one (the supervisor's own, checked
 * at start-up), and it cannot set groups; with them (the namespaced root) it changes
 * its ids or groups only by the setuid family or setgroups, which the filter notifies:
 * the first one clears sup_ctx.creds_fixed before it is let through (dispatch.c
 * handle_setid()). No exec gives any id (no_new_privs), and none of the capabilities
 * that govern file access (FILE_CAPS below) can ever be held: they are in no bounding
 * set, so capset, which is not notified, changes nothing the supervisor would take. So
 * every thread that can notify holds, for what the supervisor takes of it, what the
 * first one held. Each status the thread does read is checked to match that shape and
 * the ids it read before; the first that does not ends the shortcut for the thread.
 */
#define CREDS_FIXED (1u << 1)
/* What the namespaced root keeps (spawn.c drop_capabilities()): a CREDS_FIXED status may
 * show these, and no other, when creds_fixed_caps() was given them. */
#define CREDS_SETID_CAPS                                                                      \
	((1ull << CAP_SETUID) | (1ull << CAP_SETGID) | (1ull << CAP_KILL))
/* Before any notifier thread starts: the capabilities a CREDS_FIXED status may hold. */
void creds_fixed_caps(uint64_t allowed);

/* Once per notifier thread, before it serves anything: own fs_struct (umask), own
 * credentials recorded. -errno: the thread must not serve (it could only act as us). */
int creds_thread_init(void);
/* Close what the thread keeps open and free its state. */
void creds_thread_done(void);
/* Act as the calling thread tid of notification id. -errno when its credentials cannot
 * be read or taken exactly: the operation must not run then. */
int creds_caller(pid_t tid, uint64_t id, unsigned flags);
/* Back to our own capabilities; returns whether the thread was acting for a caller. */
bool creds_self(void);
/* After creds_self() returned true: act for the same caller again. */
int creds_resume(bool was_caller);

struct msghdr;
/*
 * sendmsg() of a message whose SCM_CREDENTIALS the caller may claim (sock.c checks
 * that, as the kernel checks a sender without capabilities). The kernel checks the
 * claim against the sending thread, which is ours: naming another process's pid takes
 * CAP_SYS_ADMIN over our pid namespace, and ids that are not ours CAP_SETUID and
 * CAP_SETGID. Those of them in our permitted set are raised for this one call and the
 * effective set is put back as it was; CAP_SYS_ADMIN not for a message that also passes
 * fds (SCM_RIGHTS), which it would exempt from the kernel's limit of fds in flight. Any
 * thread may call it (a waiter as well as a notifier): it keeps no state. Returns what
 * sendmsg returns, errno set; without CAP_SYS_ADMIN (an unprivileged supervisor, or a
 * message with fds) the kernel refuses the pid with EPERM.
 */
long creds_send_claim(int sock, const struct msghdr *msg, int flags);

/*
 * Around one call that needs a capability the supervisor keeps in its permitted set
 * only: creds_raise() puts those of want (bit per capability number) that the
 * permitted set holds into this thread's effective set, creds_lower() puts the sets back
 * as they were. creds_raise() returns 0, or -errno with nothing raised. Lowering within
 * the permitted set cannot fail; if it did, the thread would go on with the raised
 * capabilities, so creds_lower() aborts, naming what they were raised for.
 */
struct creds_raised {
	struct __user_cap_data_struct was[2];
	bool changed;
};

int creds_raise(uint64_t want, struct creds_raised *r);
void creds_lower(const struct creds_raised *r, const char *what);
