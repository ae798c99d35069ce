/* SPDX-License-Identifier: MIT */
/*
 * Confining the supervisor once the sandbox is set up (docs/architecture.md invariant 7).
 *
 * After the keeper is forked, its id maps written and its cgroup joined, the supervisor
 * only answers notifications, waits, kills and accounts. What it still needs:
 *   - CAP_SETUID, CAP_SETGID: a notifier thread takes any caller's fs ids and groups
 *     (creds.c); the permitted set bounds what it can take;
 *   - CAP_SYS_PTRACE: process_vm_readv, pidfd_getfd and /proc/<tid>/{cwd,fd,syscall}
 *     of a caller that changed its ids or made itself non-dumpable;
 *   - CAP_KILL: the tree may hold processes of other uids (full id map);
 *   - CAP_DAC_READ_SEARCH, CAP_DAC_OVERRIDE, CAP_FOWNER: at teardown, hashing the files
 *     the run changed and removing its private directories, whose entries the sandbox's
 *     users may have made unreadable or put under a sticky /tmp;
 *   - CAP_SYS_ADMIN, in the permitted set only (not effective, not bounding): a program
 *     that sends its own credentials (SCM_CREDENTIALS) through the supervisor names its
 *     own pid, which the kernel accepts from another sender only with CAP_SYS_ADMIN over
 *     its pid namespace; a notifier raises it around that one sendmsg, after checking
 *     the claim as the kernel would check the program (creds_send_claim(), sock.c).
 *     With a sized tmpfs it stays effective as well (teardown unmounts it).
 * Every other capability goes, from the permitted and bounding sets too: threads started
 * later inherit the reduced sets. Capabilities are per thread, so this runs on the main
 * thread before the notifier threads and the audit writer exist.
 *
 * Then a seccomp filter of its own (sup_confine_build() in filter.c, compiled at build
 * time), on every thread (TSYNC), refuses with EPERM what it
 * never does once running: exec, mounts and namespaces (only unshare(CLONE_FS), which
 * a notifier thread makes for its own umask), changing its real or effective ids,
 * kernel modules, kexec, bpf, perf, keyrings, userfaultfd, io_uring (whose operations
 * no filter sees), open_by_handle_at, clock and host-name changes, swap, reboot. ptrace
 * stays allowed (an exec tracer may use PTRACE_SEIZE). clone3 gets ENOSYS, so glibc
 * falls back to clone, whose namespace flags are in a register and refused.
 */
#include <errno.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "launch.h"
#include "log.h"
#include "macros.h"

#define CAP_BIT(c) (1ull << (c))
#define SUPERVISOR_CAPS                                                                            \
	(CAP_BIT(CAP_SETUID) | CAP_BIT(CAP_SETGID) | CAP_BIT(CAP_SYS_PTRACE) | CAP_BIT(CAP_KILL) |  \
	 CAP_BIT(CAP_DAC_READ_SEARCH) | CAP_BIT(CAP_DAC_OVERRIDE) | CAP_BIT(CAP_FOWNER))

/* Keep keep_prm in the permitted set, of it keep_eff in the effective one, and only
 * keep_eff in the bounding set. */
static int drop_supervisor_caps(uint64_t keep_prm, uint64_t keep_eff)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	uint64_t prm, eff;

	if (syscall(SYS_capget, &h, d) < 0)
		return negative_errno();
	prm = ((uint64_t)d[1].permitted << 32 | d[0].permitted) & keep_prm;
	eff = ((uint64_t)d[1].effective << 32 | d[0].effective) & keep_eff & keep_prm;
	if (prm == ((uint64_t)d[1].permitted << 32 | d[0].permitted) &&
	    eff == ((uint64_t)d[1].effective << 32 | d[0].effective))
		return 0; /* nothing to drop (an unprivileged supervisor has none) */
	/* The bounding set needs CAP_SETPCAP, which goes with the rest just after. */
	for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
		if (!(keep_eff & CAP_BIT(cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 &&
		    errno != EINVAL)
			return negative_errno();
	for (int i = 0; i < 2; i++) {
		d[i].permitted = (uint32_t)(prm >> (32 * i));
		d[i].effective = (uint32_t)(eff >> (32 * i));
		d[i].inheritable = 0;
	}
	return RET_NERRNO(syscall(SYS_capset, &h, d));
}

/* On every thread (TSYNC). no_new_privs first: the effective set no longer holds
 * CAP_SYS_ADMIN, without which the kernel takes a filter only from a process that
 * cannot gain privileges (libseccomp's seccomp_load() set it the same way). */
static int install_filter(bool unmount)
{
	struct sock_fprog prog;
	long r;

	sup_confine_precompiled(unmount, &prog);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return negative_errno();
	r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
	if (r < 0)
		return negative_errno();
	/* TSYNC's other failure: the id of a thread that could not take it */
	return r > 0 ? -EAGAIN : 0;
}

int sup_confine(bool unmount)
{
	int r;

	/* A sized tmpfs is mounted in a mount namespace of our own, and unmounted at
	 * teardown so that its directory can go: that takes CAP_SYS_ADMIN and umount2. */
	r = drop_supervisor_caps(SUPERVISOR_CAPS | CAP_BIT(CAP_SYS_ADMIN),
				 SUPERVISOR_CAPS | (unmount ? CAP_BIT(CAP_SYS_ADMIN) : 0));
	if (r < 0)
		return log_error_errno(r, "cannot drop the supervisor's capabilities: %s",
				       strerror(-r));
	r = install_filter(unmount);
	if (r < 0)
		return log_error_errno(r, "cannot install the supervisor's seccomp filter: %s",
				       strerror(-r));
	return 0;
}
