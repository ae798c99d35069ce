/* SPDX-License-Identifier: MIT */
/*
 * The notifier thread's credentials: its own, or its caller's (see creds.h).
 *
 * Where the caller's credentials come from. /proc/<tid>/status holds all of them (Uid and
 * Gid: real, effective, saved, fs; Groups; Umask; CapPrm and CapEff), printed in the
 * reader's user namespace: the supervisor reads them in its own, so in namespaced mode
 * the sandbox's ids arrive already mapped to host ids through the sandbox's uid_map and
 * gid_map. They are read on every call, through an fd kept per recent thread (bound to
 * its task, like the tracee cache's: a reused tid is opened afresh). A cache per caller
 * would need an invalidation rule that is never late, and none is cheap enough:
 *   - ids, groups and capabilities change by the thread's own syscalls (the setuid
 *     family, setgroups, capset, prctl's capability options, and exec); a CONTINUE
 *     lets the change happen after the answer, so a sibling's call read in between
 *     would store the old values as new;
 *   - the umask belongs to the fs_struct that all the threads of a process (and vfork
 *     children) share: any of them changes it for the others with a native umask();
 *   - a stale value may grant more (an id or group the caller dropped, a smaller umask).
 * The read costs about as much as six trivial syscalls (pread of a generated file).
 * The exception is a run in which no thread holds other credentials than the first
 * (creds.h, CREDS_FIXED): started with one uid and one gid, and either no capability
 * left to change them with, or (the namespaced root) every change notified, the first
 * one ending the exception for the whole run before it happens. There a call that sets
 * no mode takes the ids, groups and capabilities of the status this thread read last,
 * any caller's, since they are all the same; the umask, which still changes, is read
 * for every create.
 *
 * Capabilities: the caller's effective set (or, for access(2), what the kernel would use)
 * intersected with the ones that govern file access, and never more than we hold.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "creds.h"
#include "log.h"
#include "macros.h"

#define CAP_BIT(c) (1ull << (c))
/* The capabilities that the kernel checks against an inode (capable_wrt_inode_uidgid):
 * with the full id map of a root-started sandbox they mean the same in its user
 * namespace as in ours, and with a one-id map the sandbox holds none. And
 * CAP_SYS_PTRACE: a caller's own /proc/<pid>/fd, cwd and the like are opened by us, and
 * the kernel lets another process in only if its effective set covers the caller's
 * permitted one (cap_ptrace_access_check) or with CAP_SYS_PTRACE; a caller that holds
 * it could reach them natively anyway. */
#define FILE_CAPS                                                                                  \
	(CAP_BIT(CAP_CHOWN) | CAP_BIT(CAP_DAC_OVERRIDE) | CAP_BIT(CAP_DAC_READ_SEARCH) |           \
	 CAP_BIT(CAP_FOWNER) | CAP_BIT(CAP_FSETID) | CAP_BIT(CAP_SYS_PTRACE))

#define MAX_GROUPS 2048 /* more than this: refuse to act (the kernel allows 65536) */
#define STATUS_FDS 32

struct idset {
	uid_t fsuid;
	gid_t fsgid;
	mode_t umask;
	uint64_t caps;
	int ngroups;
	gid_t groups[MAX_GROUPS];
};

/* One notification's worth of /proc/<tid>/status. */
struct status {
	uid_t uid[4]; /* real, effective, saved, fs */
	gid_t gid[4];
	mode_t umask;
	uint64_t cap_prm, cap_eff, cap_inh, cap_bnd, cap_amb;
	bool no_new_privs;
	int ngroups;
	gid_t groups[MAX_GROUPS];
};

/* A notifier thread's state, about 33 KiB with its buffers: allocated by
 * creds_thread_init(), so that the other threads (the loop, the exec tracer, the stub
 * watcher, the relay) do not each get it zeroed in their TLS at creation, page by page
 * (a fault each, about 10 us on a paravirtualised VM, on a cold start's path). */
struct creds_thread {
	bool ready;
	bool acting;            /* effective capabilities are the caller's, not ours */
	/* the effective set the thread holds, when known: a capset that would not change
	 * it is left out (a supervisor started by a user who is not root holds none, as its
	 * callers do); a change of fsuid across 0 changes it behind our back */
	bool eff_known;
	uint64_t eff;
	uint32_t self_eff[2], self_prm[2], self_inh[2];
	struct idset cur;       /* what the thread holds (caps: the caller's, while acting) */
	struct {
		pid_t tid;
		int fd;
		unsigned used;
	} fds[STATUS_FDS];
	unsigned clock;
	uint64_t last_id;       /* the notification whose status is in st */
	pid_t last_tid;
	/* CREDS_FIXED: st holds credentials that cannot change (fixed_shape()), and every
	 * status read so far had the same ids; broken once one did not */
	bool fixed_ok, fixed_broken;
	uid_t fixed_uid;
	gid_t fixed_gid;
	struct status st;
	char buf[16384];
};
static __thread struct creds_thread *T;

static uint64_t caps64(const uint32_t v[2])
{
	return (uint64_t)v[0] | ((uint64_t)v[1] << 32);
}

static int set_effective(uint64_t eff)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (T->eff_known && T->eff == eff)
		return 0;
	for (int i = 0; i < 2; i++)
		d[i] = (struct __user_cap_data_struct){
			.effective = (uint32_t)(eff >> (32 * i)),
			.permitted = T->self_prm[i],
			.inheritable = T->self_inh[i],
		};
	if (syscall(SYS_capset, &h, d) < 0) {
		T->eff_known = false;
		return negative_errno();
	}
	T->eff = eff;
	T->eff_known = true;
	return 0;
}

int creds_thread_init(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	long n;

	if (!T && !(T = calloc(1, sizeof(*T))))
		return -ENOMEM;
	/* A umask of our own: the process's is shared with the main loop and the other
	 * notifier threads. This also gives the thread its own cwd, which nothing uses. */
	if (unshare(CLONE_FS) < 0)
		return negative_errno();
	if (syscall(SYS_capget, &h, d) < 0)
		return negative_errno();
	for (int i = 0; i < 2; i++) {
		T->self_eff[i] = d[i].effective;
		T->self_prm[i] = d[i].permitted;
		T->self_inh[i] = d[i].inheritable;
	}
	/* setfsuid/setfsgid with an invalid id change nothing and return the current one */
	T->cur.fsuid = (uid_t)syscall(SYS_setfsuid, -1);
	T->cur.fsgid = (gid_t)syscall(SYS_setfsgid, -1);
	n = syscall(SYS_getgroups, MAX_GROUPS, T->cur.groups);
	if (n < 0)
		return negative_errno();
	T->cur.ngroups = (int)n;
	T->cur.umask = umask(0);
	umask(T->cur.umask);
	T->cur.caps = caps64(T->self_eff);
	T->eff = caps64(T->self_eff);
	T->eff_known = true;
	for (size_t i = 0; i < STATUS_FDS; i++)
		T->fds[i].fd = -1;
	T->ready = true;
	return 0;
}

void creds_thread_done(void)
{
	if (!T)
		return;
	for (size_t i = 0; i < STATUS_FDS; i++)
		if (T->fds[i].fd >= 0)
			close(T->fds[i].fd);
	free(T);
	T = NULL;
}

/* The status fd slot of tid: its own, else the least recently used one, emptied. */
static int status_slot(pid_t tid)
{
	size_t slot = 0;

	for (size_t i = 0; i < STATUS_FDS; i++) {
		if (T->fds[i].tid == tid) {
			slot = i;
			goto found;
		}
		if (T->fds[i].used < T->fds[slot].used)
			slot = i;
	}
	if (T->fds[slot].fd >= 0)
		close(T->fds[slot].fd);
	T->fds[slot].tid = tid;
	T->fds[slot].fd = -1;
found:
	T->fds[slot].used = ++T->clock;
	return (int)slot;
}

static int read_status(pid_t tid, size_t *ret_len)
{
	int slot = status_slot(tid);
	ssize_t n = -1;

	for (int attempt = 0; attempt < 2 && n <= 0; attempt++) {
		int *fd = &T->fds[slot].fd;

		if (*fd < 0) {
			char p[40];

			snprintf(p, sizeof(p), "/proc/%d/status", tid);
			*fd = open(p, O_RDONLY | O_CLOEXEC);
			if (*fd < 0)
				return -ESRCH;
		}
		n = pread(*fd, T->buf, sizeof(T->buf) - 1, 0);
		if (n <= 0) {
			/* the task is gone: the tid may be another's now */
			close(*fd);
			*fd = -1;
		}
	}
	if (n <= 0)
		return -ESRCH;
	if ((size_t)n >= sizeof(T->buf) - 1)
		return -E2BIG; /* a list of groups this long: refuse rather than guess */
	T->buf[n] = '\0';
	*ret_len = (size_t)n;
	return 0;
}

static const char *field(const char *key)
{
	const char *p = strstr(T->buf, key);

	return p ? p + strlen(key) : NULL;
}

static int parse_ids(const char *p, unsigned out[4])
{
	char *end;

	for (int i = 0; i < 4; i++) {
		if (!p)
			return -EINVAL;
		out[i] = (unsigned)strtoul(p, &end, 10);
		if (end == p)
			return -EINVAL;
		p = end;
	}
	return 0;
}

static int parse_status(struct status *st)
{
	const char *p;
	char *end;

	if (parse_ids(field("\nUid:\t"), st->uid) < 0 || parse_ids(field("\nGid:\t"), st->gid) < 0)
		return -EINVAL;
	p = field("\nUmask:\t");
	if (!p)
		return -EINVAL;
	st->umask = (mode_t)strtoul(p, &end, 8) & 0777;
	if (end == p)
		return -EINVAL;
	p = field("\nCapPrm:\t");
	if (!p)
		return -EINVAL;
	st->cap_prm = strtoull(p, NULL, 16);
	p = field("\nCapEff:\t");
	if (!p)
		return -EINVAL;
	st->cap_eff = strtoull(p, NULL, 16);
	/* only CREDS_FIXED looks at these; a kernel that does not print one leaves it
	 * nonzero, which ends the shortcut */
	p = field("\nCapInh:\t");
	st->cap_inh = p ? strtoull(p, NULL, 16) : ~0ull;
	p = field("\nCapBnd:\t");
	st->cap_bnd = p ? strtoull(p, NULL, 16) : ~0ull;
	p = field("\nCapAmb:\t");
	st->cap_amb = p ? strtoull(p, NULL, 16) : ~0ull;
	p = field("\nNoNewPrivs:\t");
	st->no_new_privs = p && *p == '1';
	p = field("\nGroups:\t");
	if (!p)
		return -EINVAL;
	st->ngroups = 0;
	for (;;) {
		while (*p == ' ')
			p++;
		if (*p < '0' || *p > '9')
			break;
		if (st->ngroups == MAX_GROUPS)
			return -E2BIG;
		st->groups[st->ngroups++] = (gid_t)strtoul(p, &end, 10);
		p = end;
	}
	return *p == '\n' ? 0 : -EINVAL;
}

static bool same_groups(const struct status *st)
{
	return st->ngroups == T->cur.ngroups &&
	       memcmp(st->groups, T->cur.groups, (size_t)st->ngroups * sizeof(gid_t)) == 0;
}

/* The capabilities a CREDS_FIXED status may show: none, or the namespaced root's. */
static uint64_t fixed_allowed;

void creds_fixed_caps(uint64_t allowed)
{
	fixed_allowed = allowed & ~FILE_CAPS;
}

/* Credentials no thread can change unseen (creds.h, CREDS_FIXED): one uid, one gid, no
 * capability in any set but the allowed ones, no_new_privs. */
static bool fixed_shape(const struct status *st)
{
	return st->uid[0] == st->uid[1] && st->uid[0] == st->uid[2] && st->uid[0] == st->uid[3] &&
	       st->gid[0] == st->gid[1] && st->gid[0] == st->gid[2] && st->gid[0] == st->gid[3] &&
	       !(st->cap_prm & ~fixed_allowed) && !(st->cap_eff & ~fixed_allowed) &&
	       !st->cap_inh && !(st->cap_bnd & ~fixed_allowed) && !st->cap_amb &&
	       st->no_new_privs;
}

/* After a status read for a CREDS_FIXED run: may the next calls skip theirs? */
static void fixed_note(const struct status *st)
{
	if (T->fixed_broken)
		return;
	if (!fixed_shape(st) ||
	    (T->fixed_ok && (st->uid[0] != T->fixed_uid || st->gid[0] != T->fixed_gid))) {
		/* not what start-up promised: read every status from now on */
		T->fixed_broken = true;
		T->fixed_ok = false;
		return;
	}
	T->fixed_uid = st->uid[0];
	T->fixed_gid = st->gid[0];
	T->fixed_ok = true;
}

int creds_caller(pid_t tid, uint64_t id, unsigned flags)
{
	struct status *st;
	uid_t fsuid;
	gid_t fsgid;
	uint64_t caps;
	size_t len;
	int r;

	if (!T || !T->ready)
		return -EACCES;
	st = &T->st;
	if ((flags & CREDS_FIXED) && T->fixed_ok && !T->fixed_broken) {
		/* st is every caller's but for its umask, which this call does not use */
	} else if (T->last_id != id || T->last_tid != tid) {
		T->last_tid = 0;
		r = read_status(tid, &len);
		if (r < 0)
			return r == -ESRCH ? -ESRCH : -EACCES;
		if (parse_status(st) < 0)
			return -EACCES;
		T->last_id = id;
		T->last_tid = tid;
		if (flags & CREDS_FIXED)
			fixed_note(st);
	}
	if (flags & CREDS_REAL) {
		/* access(2): the real ids; the capabilities of the real uid (do_faccessat) */
		fsuid = st->uid[0];
		fsgid = st->gid[0];
		caps = st->uid[0] == 0 ? st->cap_prm : 0;
	} else {
		fsuid = st->uid[3];
		fsgid = st->gid[3];
		caps = st->cap_eff;
	}
	caps &= FILE_CAPS & caps64(T->self_prm);

	if (fsuid != T->cur.fsuid || fsgid != T->cur.fsgid || !same_groups(st)) {
		/* changing them takes CAP_SETUID/CAP_SETGID: our own set first */
		creds_self();
		if (!same_groups(st)) {
			if (syscall(SYS_setgroups, (size_t)st->ngroups, st->groups) < 0)
				return -EACCES;
			T->cur.ngroups = st->ngroups;
			memcpy(T->cur.groups, st->groups, (size_t)st->ngroups * sizeof(gid_t));
		}
		if (fsgid != T->cur.fsgid) {
			syscall(SYS_setfsgid, fsgid);
			T->cur.fsgid = (gid_t)syscall(SYS_setfsgid, -1);
			if (T->cur.fsgid != fsgid)
				return -EACCES;
		}
		if (fsuid != T->cur.fsuid) {
			/* (this also changes the effective set when it crosses 0: set below) */
			T->eff_known = false;
			syscall(SYS_setfsuid, fsuid);
			T->cur.fsuid = (uid_t)syscall(SYS_setfsuid, -1);
			if (T->cur.fsuid != fsuid)
				return -EACCES;
		}
		T->acting = false;
	}
	if (st->umask != T->cur.umask) {
		umask(st->umask);
		T->cur.umask = st->umask;
	}
	if (!T->acting || caps != T->cur.caps) {
		r = set_effective(caps);
		if (r < 0)
			return -EACCES;
		T->cur.caps = caps;
		T->acting = true;
	}
	return 0;
}

bool creds_self(void)
{
	if (!T || !T->acting)
		return false;
	/* Cannot fail: the set is our own permitted one. If it did, the thread would only
	 * hold less than it needs. */
	(void)set_effective(caps64(T->self_eff));
	T->acting = false;
	return true;
}

int creds_resume(bool was_caller)
{
	if (!was_caller || !T || T->acting)
		return 0;
	if (set_effective(T->cur.caps) < 0)
		return -EACCES;
	T->acting = true;
	return 0;
}

/* What the kernel's scm_check_creds() asks of a sender that names a pid, uid or gid other
 * than its own: CAP_SYS_ADMIN over its pid namespace, CAP_SETUID, CAP_SETGID. */
#define CLAIM_CAPS (CAP_BIT(CAP_SYS_ADMIN) | CAP_BIT(CAP_SETUID) | CAP_BIT(CAP_SETGID))

/* Whether msg passes fds: with CAP_SYS_ADMIN the kernel would not count them against
 * its limit of fds in flight (too_many_unix_fds()). */
static bool passes_fds(const struct msghdr *msg)
{
	const char *ctl = msg->msg_control;
	size_t off = 0;

	while (ctl && msg->msg_controllen - off >= sizeof(struct cmsghdr)) {
		const struct cmsghdr *c = (const void *)(ctl + off);

		if (c->cmsg_len < sizeof(*c))
			return true; /* malformed: the kernel refuses it; assume the worst */
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			return true;
		if (CMSG_ALIGN(c->cmsg_len) >= msg->msg_controllen - off)
			break;
		off += CMSG_ALIGN(c->cmsg_len);
	}
	return false;
}

int creds_raise(uint64_t want, struct creds_raised *r)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct raised[2];

	r->changed = false;
	if (syscall(SYS_capget, &h, r->was) < 0)
		return negative_errno();
	for (int i = 0; i < 2; i++) {
		raised[i] = r->was[i];
		raised[i].effective |= r->was[i].permitted & (uint32_t)(want >> (32 * i));
		r->changed |= raised[i].effective != r->was[i].effective;
	}
	if (r->changed && syscall(SYS_capset, &h, raised) < 0) {
		r->changed = false;
		return negative_errno();
	}
	return 0;
}

void creds_lower(const struct creds_raised *r, const char *what)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };

	/* Lowering the effective set to what it was cannot fail (it stays within the
	 * permitted one); if it did, this thread would go on serving the sandbox with
	 * the raised capabilities: stop the supervisor, and the sandbox with it, rather. */
	if (r->changed && syscall(SYS_capset, &h, r->was) < 0) {
		log_error("cannot lower the capabilities raised for %s: %s", what,
			  strerror(errno));
		abort();
	}
}

long creds_send_claim(int sock, const struct msghdr *msg, int flags)
{
	uint64_t want = CLAIM_CAPS & ~(passes_fds(msg) ? CAP_BIT(CAP_SYS_ADMIN) : 0);
	struct creds_raised raised;
	ssize_t n;
	int err;

	if (creds_raise(want, &raised) < 0)
		return -1;
	n = sendmsg(sock, msg, flags);
	err = errno;
	creds_lower(&raised, "a credentials send");
	errno = err;
	return n;
}
