/* SPDX-License-Identifier: MIT */
/*
 * interposer internals: the supervisor.
 *
 * Lifecycle: the CLI fills struct sup_opts (the vfs and net built from options and policy
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

#include "sc.h"

struct vfs;
struct net;
struct audit_writer;
struct sup;
struct proc_map;

enum sup_mode { SUP_MODE_AUTO, SUP_MODE_NAMESPACED, SUP_MODE_UNNAMESPACED };

/* What moat's own exit status means (the command's status otherwise). */
enum {
	MOAT_EXIT_TIMEOUT = 124,
	MOAT_EXIT_FAILURE = 125,  /* moat itself failed: bad flag, setup failure */
	MOAT_EXIT_NOEXEC = 126,   /* command not executable, or exec denied */
	MOAT_EXIT_NOTFOUND = 127,
};

struct sup_env {
	char *name;
	char *value;
};

struct sup_opts {
	char **argv;                  /* the command */
	enum sup_mode mode;
	bool tty, stdin_pass, strict, verbose, quiet;
	bool strict_hide;             /* --strict-hide: a hidden name must not even exist */
	double timeout;               /* seconds, 0 = none */
	uint64_t memory;              /* bytes, 0 = none */
	uint64_t pids;                /* 0 = none */
	uint64_t cpu;                 /* seconds, 0 = none */
	uint64_t nofile, fsize;       /* 0 = default */
	uint64_t disk;                /* --disk: bytes for everything private the run writes */
	struct sup_env *env;          /* --setenv, in order */
	size_t n_env;
	char **keep_env;              /* --keep-env NAME */
	size_t n_keep_env;
	const char *report_path;
	const char *events_spec;       /* --events FILE|fd:N (events.h) */
	int start_fd;                 /* --start-fd N: the command arrives here later, or -1 */
	const char *audit_path;
	bool output_in_workspace;     /* --report/--audit may be where the sandbox can write */
	const char *run_id;           /* --run-id, NULL: a random one */
	const char *audit_key;
	const char *session, *tenant;
	bool audit_stacks_all;
	bool profile_none;            /* --profile none */
	struct vfs *vfs;              /* built by the CLI from options and policy files */
	struct net *net;
	struct proc_map *pm;          /* the vfs's view of the sandbox's pids */
	char *policy_json;            /* canonical policy, for the report and audit header */
	char policy_hash[65];
};

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

/* Kernel features, probed once at start; recorded in --report and the audit header. */
struct sup_features {
	bool user_ns;                 /* we can create a user namespace */
	bool sync_wake_up;            /* SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP */
	bool wait_killable;           /* SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV */
	bool addfd_send;              /* SECCOMP_ADDFD_FLAG_SEND */
	bool pidfd;                   /* pidfd_open */
	bool pidfd_getfd;
	int landlock_abi;             /* 0 = none */
	int cgroup;                   /* 0 none, 1 v1, 2 v2 */
	char kernel[65];
};
void sup_probe_features(struct sup_features *f);

int sup_run(struct sup_opts *o);
/* moat failed before sup_run() could (a policy it cannot use): write --report, if asked
 * for, with reason setup-failed and why. */
void sup_report_failure(struct sup_opts *o, const char *why);

/* confine.c: once set up, the supervisor drops the capabilities it no longer needs and
 * installs its own seccomp filter. Before any thread is started. unmount: it has mounts
 * of its own to take down at teardown (--disk, a sized tmpfs). */
int sup_confine(bool unmount);

/* filter.c: compiled at build time (gen-filter.c), installed in the child. */
struct sock_fprog;
/* Which filter: the notify set depends on what the kernel's view can decide. */
enum sup_filter_kind {
	SUP_FILTER_NAMESPACED,   /* hidden content covered in the mount namespace: the
	                            syscall table's "fast" column applies */
	SUP_FILTER_STRICT_HIDE,  /* namespaced, every path syscall emulated (--strict-hide) */
	SUP_FILTER_UNNAMESPACED,
	_SUP_FILTER_MAX,
};
int sup_filter_build(uint32_t arch, enum sup_filter_kind kind, struct sock_fprog *ret_prog);
int sup_filter_precompiled(enum sup_filter_kind kind, struct sock_fprog *ret_prog);
enum sup_filter_kind sup_filter_kind_of(bool namespaced, bool strict_hide, bool audit,
					const struct vfs *v);
int sup_filter_install(const struct sock_fprog *prog, bool wait_killable);

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
