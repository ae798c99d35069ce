/* SPDX-License-Identifier: MIT */
/*
 * The seccomp filter, built from the syscall table with libseccomp.
 *
 * Compiled once, at build time (gen-filter.c runs sup_filter_build() and moat links the
 * result), so a run pays nothing for libseccomp's compiler and the child makes one
 * seccomp(2) call. Layout:
 *   - any architecture but the native one, and x32 numbers on x86_64, kill the process
 *     (libseccomp's bad-arch action; i386 `int 0x80` lands here);
 *   - SC_DENY rows return their errno, SC_KILL rows kill;
 *   - SC_NOTIFY rows go to the supervisor;
 *   - SC_ARGS rows get argument checks on register values only (never on memory, which
 *     the tracee could change after the check);
 *   - numbers the table does not know (newer syscalls) fail with ENOSYS;
 *   - everything else runs natively (the default action).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/fs.h>
#include <linux/ioprio.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include "cleanup.h"
#include "launch.h"
#include "log.h"
#include "macros.h"
#include "missing-seccomp.h"
#include "sc.h"

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

DEFINE_TRIVIAL_CLEANUP_FUNC(scmp_filter_ctx, seccomp_release)

/* Namespace flags that clone() must not carry: a new namespace is a place the
 * supervisor's view does not describe. (clone3 is refused outright with ENOSYS because
 * its flags live in memory; libc then falls back to clone.) */
static const uint64_t clone_ns_flags[] = {
	CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
	CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
};

/*
 * ioctls refused on every fd: terminal injection (TIOCSTI, TIOCLINUX), and the inode
 * flag ioctls. Those need only ownership of the file (or CAP_LINUX_IMMUTABLE for
 * immutable and append-only), not an fd open for writing: an unnamespaced sandbox run
 * by root owns /usr, and read-only fds of it are what a read-only mapping hands out.
 */
static const uint32_t ioctl_denied[] = {
	/* FS_IOC32_* are the 32-bit ABI's numbers (int-sized); a 64-bit kernel answers
	 * them for native callers as well. */
	TIOCSTI, TIOCLINUX,
	FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS, FS_IOC_FSSETXATTR,
	FS_IOC_SETVERSION, FS_IOC32_SETVERSION,
};

/*
 * Syscalls that name a process, from the table: those checked in the filter (args) whose
 * argument 0 is a pid, and the (which, who) pairs whose who may be a pid. Pid 0 is the
 * caller (a register value, checked here); any other pid goes to the supervisor, which
 * lets the call through only for the sandbox's own processes (dispatch.c,
 * handle_pid_arg()).
 */
static bool pid_in_arg0(const struct sc_entry *e)
{
	return e->handling == SC_ARGS && e->nargs > 0 && e->arg[0] == SC_ARG_PID;
}

bool sup_filter_names_pid(const struct sc_entry *e)
{
	switch (e->id) {
	case SC_setpriority:
	case SC_getpriority:
	case SC_ioprio_set:
	case SC_ioprio_get:
		return e->handling == SC_ARGS;
	default:
		return pid_in_arg0(e);
	}
}

/* Rows checked in the filter (args) that add_arg_rules() sends to the supervisor on
 * some arguments: PR_SET_NAME, personality, and the calls naming another process. */
static bool args_notify(const struct sc_entry *e)
{
	return e->handling == SC_ARGS &&
	       (e->id == SC_prctl || e->id == SC_personality || sup_filter_names_pid(e));
}

/* In this filter, the syscall is refused with ENOSYS (the host's IPC, unnamespaced). */
static bool refused_in(const struct sc_entry *e, enum sup_filter_kind kind)
{
	return kind == SUP_FILTER_UNNAMESPACED && e->unns_enosys;
}

/* In this filter, a notify row runs natively: the mount namespace covers every hidden
 * or read-denied path (spawn.c), so the kernel's answer to a metadata call by name is
 * the policy's. */
static bool native_writes_in(enum sup_filter_kind kind)
{
	return kind == SUP_FILTER_NATIVE_WRITE || kind == SUP_FILTER_NATIVE_WRITE_UNMARKED;
}

static bool native_in(const struct sc_entry *e, enum sup_filter_kind kind)
{
	/* creat() always creates: its set-id modes still go to the supervisor */
	if (native_writes_in(kind) && e->fast == SC_FAST_NATIVE_W)
		return e->id != SC_creat;
	return (kind == SUP_FILTER_NAMESPACED || kind == SUP_FILTER_NATIVE_OPEN ||
		native_writes_in(kind)) && e->fast == SC_FAST_NATIVE;
}

/*
 * The open flags that keep an open (or openat) trapped when read-only opens are native:
 * whatever vfs_open_decide() sends to the supervisor. Writes and creates feed the
 * change set; O_PATH of a stub would not pass fsnotify (the stub's mark would not see
 * it, and the fd would name the hidden path to fstat and *at calls); O_TMPFILE's own
 * bit, as O_TMPFILE includes O_DIRECTORY. O_WRONLY | O_RDWR (access mode 3) carries
 * both bits. The kernel reads the flags as an int: only these low bits matter.
 */
static const uint64_t open_trapped_bits[] = {
	O_PATH, O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_TMPFILE & ~O_DIRECTORY,
};
/* Where creates are native too (SUP_FILTER_NATIVE_WRITE), only O_PATH stays: the first
 * entry above. A write lands only where a read-write mount and Landlock let it. */
#define OPEN_TRAPPED_BITS_WRITE 1

static int arg_of_kind(const struct sc_entry *e, unsigned kind)
{
	for (unsigned i = 0; i < e->nargs && i < SC_MAX_ARGS; i++)
		if (e->arg[i] == kind)
			return (int)i;
	return -1;
}

/* Notified when any one of bits[] is set in the argument of that kind: one NOTIFY rule
 * per bit (libseccomp ORs the rules of one action); native otherwise. */
static int notify_on_bits(scmp_filter_ctx ctx, const struct sc_entry *e, unsigned kind,
			  const uint64_t *bits, size_t n)
{
	int a = arg_of_kind(e, kind), r = 0;

	if (a < 0)
		return -EINVAL;
	for (size_t i = 0; i < n && r >= 0; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, e->nr, 1,
				     (struct scmp_arg_cmp){ .arg = (unsigned)a,
							    .op = SCMP_CMP_MASKED_EQ,
							    .datum_a = bits[i], .datum_b = bits[i] });
	return r;
}

/* Where opens and creates are native, one that asks for S_ISUID or S_ISGID still comes
 * to the supervisor, which creates the file without them (vfs/ops.c CREATE_MODE_MASK).
 * The mode is read whatever the flags (the kernel ignores it without O_CREAT or
 * O_TMPFILE): a stray mode only costs a round trip. */
static int add_setid_mode_rules(scmp_filter_ctx ctx, const struct sc_entry *e)
{
	static const uint64_t setid[] = { S_ISUID, S_ISGID };

	return notify_on_bits(ctx, e, SC_ARG_MODE, setid, ELEMENTSOF(setid));
}

/* Native unless one of the open flags above is set. */
static int add_native_ro_rules(scmp_filter_ctx ctx, const struct sc_entry *e,
				enum sup_filter_kind kind)
{
	return notify_on_bits(ctx, e, SC_ARG_OFLAGS, open_trapped_bits,
			      native_writes_in(kind) ? OPEN_TRAPPED_BITS_WRITE
						     : ELEMENTSOF(open_trapped_bits));
}

/* SUP_FILTER_NATIVE_WRITE_UNMARKED: a read-only open, none of the write bits above set,
 * is trapped as well, to be checked and continued (no fanotify mark would report an
 * open of a stub). */
static int add_ro_open_rule(scmp_filter_ctx ctx, const struct sc_entry *e)
{
	uint64_t writes = 0;
	int a = arg_of_kind(e, SC_ARG_OFLAGS);

	if (a < 0)
		return -EINVAL;
	for (size_t i = OPEN_TRAPPED_BITS_WRITE; i < ELEMENTSOF(open_trapped_bits); i++)
		writes |= open_trapped_bits[i];
	return seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, e->nr, 1,
				(struct scmp_arg_cmp){ .arg = (unsigned)a, .op = SCMP_CMP_MASKED_EQ,
						       .datum_a = writes, .datum_b = 0 });
}

bool sup_filter_notifies(const struct sc_entry *e, enum sup_filter_kind kind)
{
	if (refused_in(e, kind) || native_in(e, kind))
		return false;
	return e->handling == SC_NOTIFY || args_notify(e);
}

/* Internet socket types other than SOCK_STREAM (1), SOCK_DGRAM (2), SOCK_SEQPACKET (5)
 * and SOCK_RAW (3, refused for every family but netlink), as (type & mask) == value
 * over the type's low four bits (SOCK_TYPE_MASK): 0, 4, 6, 7 and 8-15. */
static const int inet_families[] = { AF_INET, AF_INET6 };
static const struct { uint64_t mask, value; } inet_bad_types[] = {
	{ 0xf, 0 }, { 0xf, 4 }, { 0xf, 6 }, { 0xf, 7 }, { 0x8, 0x8 },
};

static int add_arg_rules(scmp_filter_ctx ctx, const struct sc_entry *e)
{
	int err = e->deny_errno ? e->deny_errno : EPERM;
	int r = 0;

	switch (e->id) {
	case SC_clone:
		for (size_t i = 0; i < ELEMENTSOF(clone_ns_flags) && r >= 0; i++)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), e->nr, 1,
					     SCMP_A0(SCMP_CMP_MASKED_EQ, clone_ns_flags[i],
						     clone_ns_flags[i]));
		return r;
	case SC_ioctl:
		/* The kernel compares the command as a 32-bit int: mask the upper half so
		 * TIOCSTI | (1ul << 32) cannot slip past a 64-bit compare. */
		for (size_t i = 0; i < ELEMENTSOF(ioctl_denied) && r >= 0; i++)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), e->nr, 1,
					     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu,
						     ioctl_denied[i]));
		return r;
	case SC_fcntl:
		/* A lease needs only ownership of the file, not an fd open for writing (a
		 * sandbox run by root owns /etc), and holds every host writer of it for
		 * lease-break-time: refused as the kernel refuses a file one does not own.
		 * The command is an int to the kernel: the upper half is masked. */
		return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), e->nr, 1,
					SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, F_SETLEASE));
	case SC_seccomp:
		/* A second listener would let the sandbox answer its own notifications with
		 * CONTINUE: the most recently installed filter's USER_NOTIF wins. */
		return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), e->nr, 1,
					SCMP_A1(SCMP_CMP_MASKED_EQ, SECCOMP_FILTER_FLAG_NEW_LISTENER,
						SECCOMP_FILTER_FLAG_NEW_LISTENER));
	case SC_socket:
		/* The kernel reads the three arguments as ints, the filter sees 64-bit
		 * registers: with bits above 31 set, AF_NETLINK | 1ul << 32 would miss every
		 * compare below and still be AF_NETLINK to the kernel. No valid call has
		 * them (a negative int fails natively too). */
		for (unsigned i = 0; i < 3 && r >= 0; i++)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EINVAL), e->nr, 1,
					     (struct scmp_arg_cmp){ .arg = i, .op = SCMP_CMP_GT,
								    .datum_a = 0x7fffffffu });
		if (r >= 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), e->nr, 1,
					     SCMP_A0(SCMP_CMP_EQ, AF_PACKET));
		/* Internet sockets: stream, datagram and seqpacket only. Others carry
		 * frames past the network layer (AF_INET + SOCK_PACKET is a packet socket,
		 * SOCK_RAW is refused below); the type's flag bits are masked off. */
		for (size_t i = 0; i < ELEMENTSOF(inet_families) && r >= 0; i++)
			for (size_t j = 0; j < ELEMENTSOF(inet_bad_types) && r >= 0; j++)
				r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), e->nr, 2,
						     SCMP_A0(SCMP_CMP_EQ, inet_families[i]),
						     SCMP_A1(SCMP_CMP_MASKED_EQ, inet_bad_types[j].mask,
							     inet_bad_types[j].value));
		/* Raw IP sockets craft packets; netlink sockets are SOCK_RAW by convention
		 * and are judged by family and protocol below. */
		if (r >= 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), e->nr, 2,
					     SCMP_A0(SCMP_CMP_NE, AF_NETLINK),
					     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, SOCK_RAW));
		/* libc needs NETLINK_ROUTE (getifaddrs); other netlink families reach
		 * kernel subsystems the sandbox has no business with (audit, netfilter...).
		 * They fail as on a kernel built without them: programs take that for
		 * "not here" and go on (PAM, so su and login tools, treats any other
		 * error of its audit socket as a system error). */
		if (r >= 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPROTONOSUPPORT), e->nr, 2,
					     SCMP_A0(SCMP_CMP_EQ, AF_NETLINK),
					     SCMP_A2(SCMP_CMP_NE, 0));
		return r;
	case SC_prctl:
		/* PR_SET_NAME renames the thread, whose comm the audit caches: notified
		 * (and let through) so the cache learns of it. The kernel reads the
		 * option as an int: mask the upper half, as for ioctl. */
		return seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, e->nr, 1,
					SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, PR_SET_NAME));
	case SC_setpriority:
	case SC_getpriority:
	case SC_ioprio_set:
	case SC_ioprio_get: {
		/* (which, who): only one process, the caller, is native; other processes,
		 * and whole process groups and users, go to the supervisor. Both are ints to
		 * the kernel: a full 64-bit zero is an int zero. */
		bool io = e->id == SC_ioprio_set || e->id == SC_ioprio_get;

		r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, e->nr, 1,
				     SCMP_A0(SCMP_CMP_NE, io ? IOPRIO_WHO_PROCESS : PRIO_PROCESS));
		if (r >= 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, e->nr, 1,
					     SCMP_A1(SCMP_CMP_NE, 0));
		return r;
	}
	case SC_personality:
		/* Only PER_LINUX and the 0xffffffff query are allowed; libseccomp cannot
		 * express "neither of two values" in one rule, so the supervisor decides on
		 * the register value (no tracee memory involved, so CONTINUE is safe). */
		return seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, e->nr, 0);
	default:
		if (pid_in_arg0(e))
			return seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, e->nr, 1,
						SCMP_A0(SCMP_CMP_NE, 0));
		log_debug("no argument rules for %s; left native", e->name);
		return 0;
	}
}

static int export_bpf(scmp_filter_ctx ctx, struct sock_fprog *ret)
{
	_cleanup_close_ int fd = -1;
	struct sock_filter *insns;
	off_t size;
	int r;

	/* libseccomp 2.5 exports only to an fd; a memfd keeps it off the filesystem. */
	fd = memfd_create("moat-bpf", MFD_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return r;
	size = lseek(fd, 0, SEEK_END);
	if (size <= 0 || size % sizeof(struct sock_filter))
		return -EINVAL;
	insns = malloc((size_t)size);
	if (!insns)
		return -ENOMEM;
	if (pread(fd, insns, (size_t)size, 0) != size) {
		free(insns);
		return -EIO;
	}
	ret->len = (unsigned short)(size / sizeof(struct sock_filter));
	ret->filter = insns;
	return 0;
}

/*
 * What the table does not describe fails with ENOSYS: a syscall newer than the table
 * (say, a new *xattrat taking a path) must not run natively just because nobody
 * classified it yet. Tested as ranges of numbers ahead of libseccomp's program, not as a
 * rule per number: x86_64 leaves some 650 numbers below 1024 unknown, and their rules
 * made the program three times as long, and its load (the kernel converts and compiles
 * it, on the command's way to its exec) 0.6 ms instead of 0.2. Another architecture, and
 * x86_64's x32 numbers, go on to libseccomp's program, whose bad-arch action kills.
 */
#define UNKNOWN_RANGES_MAX 16
#define X32_BIT 0x40000000u /* __X32_SYSCALL_BIT */

static int prepend_unknown(uint32_t arch, struct sock_fprog *prog)
{
	struct { uint32_t lo, hi; } hole[UNKNOWN_RANGES_MAX];
	unsigned n_holes = 0, n, i = 0, top = 0;
	struct sock_filter *f;
	bool x32 = arch == AUDIT_ARCH_X86_64;

	/* the holes below the highest known number; from top on, nothing is known */
	for (size_t k = 0; k < sc_count(arch); k++)
		top = MAX(top, (unsigned)sc_at(arch, k)->nr + 1);
	for (unsigned nr = 0; nr < top; nr++) {
		if (sc_lookup(arch, (int)nr))
			continue;
		if (n_holes && hole[n_holes - 1].hi == nr - 1)
			hole[n_holes - 1].hi = nr;
		else if (n_holes == UNKNOWN_RANGES_MAX)
			return -E2BIG;
		else
			hole[n_holes++] = (typeof(hole[0])){ nr, nr };
	}
	/* ld arch, jeq, ld nr, [jge x32], per hole jge+jgt (a hole from 0: jgt), the top's
	 * jge, ret ENOSYS */
	n = 3 + x32 + 1 + 1;
	for (unsigned k = 0; k < n_holes; k++)
		n += hole[k].lo ? 2 : 1;
	if (n + prog->len > BPF_MAXINSNS)
		return -E2BIG;
	f = malloc((n + prog->len) * sizeof(*f));
	if (!f)
		return -ENOMEM;
	/* jump offsets count from the next instruction; n - 1 is the ret, n the rest */
#define TO(t) ((__u8)((t) - (i + 1)))
	f[i] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					    offsetof(struct seccomp_data, arch));
	i++;
	f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 0, TO(n));
	i++;
	f[i] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					    offsetof(struct seccomp_data, nr));
	i++;
	if (x32) {
		f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_BIT,
						    TO(n), 0);
		i++;
	}
	for (unsigned k = 0; k < n_holes; k++) {
		unsigned next = i + (hole[k].lo ? 2 : 1);

		if (hole[k].lo) {
			f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, hole[k].lo, 0,
							    TO(next));
			i++;
		}
		f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, hole[k].hi, TO(next),
						    TO(n - 1));
		i++;
	}
	f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, top, TO(n - 1), TO(n));
	i++;
	f[i] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS);
	i++;
#undef TO
	memcpy(f + n, prog->filter, prog->len * sizeof(*f));
	free(prog->filter);
	prog->filter = f;
	prog->len = (unsigned short)(n + prog->len);
	return 0;
}

int sup_filter_build(uint32_t arch, enum sup_filter_kind kind, struct sock_fprog *ret_prog)
{
	_cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
	int r;

	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return -ENOMEM;
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (r < 0)
		return r;
	/* We set no_new_privs ourselves, earlier, for the whole launch sequence. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (r < 0)
		return r;
	/* Let libseccomp order rules by priority: the notify set is hot. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (r < 0)
		log_debug("binary-tree filter optimisation unavailable: %s", strerror(-r));

	for (size_t i = 0; i < sc_count(arch); i++) {
		const struct sc_entry *e = sc_at(arch, i);
		enum sc_handling h = (enum sc_handling)e->handling;

		/* SysV IPC and POSIX message queues live in the IPC namespace. Namespaced
		 * mode has one of its own; unnamespaced, they would be the host's. */
		if (refused_in(e, kind)) {
			/* As on a kernel built without System V IPC. */
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), e->nr, 0);
			if (r < 0)
				return log_error_errno(r, "seccomp rule for %s: %s", e->name,
						       strerror(-r));
			continue;
		}
		if (native_in(e, kind))
			h = SC_NATIVE;
		switch (h) {
		case SC_NATIVE:
			r = 0;
			break;
		case SC_NOTIFY:
			if ((kind == SUP_FILTER_NATIVE_OPEN || native_writes_in(kind)) &&
			    e->fast == SC_FAST_NATIVE_RO) {
				r = add_native_ro_rules(ctx, e, kind);
				if (r >= 0 && native_writes_in(kind))
					r = add_setid_mode_rules(ctx, e);
				if (r >= 0 && kind == SUP_FILTER_NATIVE_WRITE_UNMARKED)
					r = add_ro_open_rule(ctx, e);
			} else if (native_writes_in(kind) && e->id == SC_creat)
				r = add_setid_mode_rules(ctx, e);
			else if (e->id == SC_sendto)
				/* send() is sendto(fd, buf, len, flags, NULL, 0): with no
				 * address there is no name to decide on, and the register
				 * value cannot change after the check. Keep it native. */
				r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, e->nr, 1,
						     SCMP_A4(SCMP_CMP_NE, 0));
			else
				r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, e->nr, 0);
			break;
		case SC_DENY:
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(e->deny_errno ? e->deny_errno : EPERM),
					     e->nr, 0);
			break;
		case SC_KILL:
			r = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, e->nr, 0);
			break;
		case SC_ARGS:
			r = add_arg_rules(ctx, e);
			break;
		case _SC_HANDLING_MAX:
		default:
			r = -EINVAL;
			break;
		}
		if (r < 0)
			return log_error_errno(r, "seccomp rule for %s: %s", e->name, strerror(-r));
	}
	r = export_bpf(ctx, ret_prog);
	return r < 0 ? r : prepend_unknown(arch, ret_prog);
}

/* ---- the supervisor's own filter ---- */

static const char *const denied_syscalls[] = {
	"execve", "execveat",
	"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
	"fsconfig", "fsmount", "fspick", "mount_setattr", "setns",
	"setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"bpf", "perf_event_open", "keyctl", "add_key", "request_key", "userfaultfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"open_by_handle_at", "name_to_handle_at",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"sethostname", "setdomainname", "swapon", "swapoff", "reboot", "acct",
	"iopl", "ioperm", "quotactl", "syslog", "vhangup", "uselib",
};

static const unsigned long confine_ns_flags[] = {
	CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWIPC, CLONE_NEWUTS,
	CLONE_NEWCGROUP, CLONE_NEWTIME,
};

/* The supervisor's own filter (confine.c), built once, at build time (gen-filter.c):
 * libseccomp's compiler cost every run about 0.4 ms of CPU on a small VM, taken from
 * the keeper building the sandbox on the other CPU. The native architecture's rules
 * only; any other architecture kills the thread, libseccomp's default. */
int sup_confine_build(bool unmount, struct sock_fprog *ret_prog)
{
	_cleanup_(seccomp_releasep) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r = ctx ? 0 : -ENOMEM;

	for (size_t i = 0; r == 0 && i < ELEMENTSOF(denied_syscalls); i++) {
		int nr = seccomp_syscall_resolve_name(denied_syscalls[i]);

		if (unmount && streq(denied_syscalls[i], "umount2"))
			continue;
		if (nr != __NR_SCMP_ERROR)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
	}
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (r == 0)
		/* unshare: its own fs_struct (umask) only */
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
				     SCMP_A0(SCMP_CMP_NE, CLONE_FS));
	for (size_t i = 0; r == 0 && i < ELEMENTSOF(confine_ns_flags); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, confine_ns_flags[i],
					     confine_ns_flags[i]));
	return r < 0 ? r : export_bpf(ctx, ret_prog);
}

int sup_filter_install(const struct sock_fprog *prog, bool wait_killable)
{
	unsigned flags = SECCOMP_FILTER_FLAG_NEW_LISTENER;
	long fd;

	if (wait_killable)
		flags |= SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
	fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, prog);
	if (fd < 0 && errno == EINVAL && wait_killable)
		fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			     SECCOMP_FILTER_FLAG_NEW_LISTENER, prog);
	return fd < 0 ? negative_errno() : (int)fd;
}
