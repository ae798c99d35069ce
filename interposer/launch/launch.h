/* SPDX-License-Identifier: MIT */
/*
 * launch/: what the supervisor starts and how, below the notification core.
 *
 * The CLI fills struct sup_opts; core/sup.c probes struct sup_features and hands both to
 * spawn.c (spawn.h), which builds the keeper and the command. Nothing here knows the
 * notification loop: launch/ includes no header of core/ or cli/.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct vfs;
struct net;
struct proc_map;
struct sup_cow;

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
	struct sup_cow *cow;          /* --cow (cow.h), or NULL: the workspace written in place */
	struct sup_env *env;          /* --setenv, in order */
	size_t n_env;
	char **keep_env;              /* --keep-env NAME */
	size_t n_keep_env;
	const char *report_path;
	const char *events_spec;       /* --events FILE|fd:N (events.h) */
	int start_fd;                 /* --start-fd N: the command arrives here later, or -1 */
	int argv_fd;                  /* --argv-fd N: and the waiting command reads its argv
	                                 here itself (spawn_pack_argv()), or -1 */
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

/* confine.c: once set up, the supervisor drops the capabilities it no longer needs and
 * installs its own seccomp filter. Before any thread is started. unmount: it has mounts
 * of its own to take down at teardown (--disk, a sized tmpfs). */
int sup_confine(bool unmount);
/* Its seccomp filter, compiled at build time by gen-filter.c (filter.c) and handed out
 * from what moat links (filter-prog.c). */
struct sock_fprog;
int sup_confine_build(bool unmount, struct sock_fprog *ret_prog);
void sup_confine_precompiled(bool unmount, struct sock_fprog *ret_prog);

/* filter.c: compiled at build time (gen-filter.c), installed in the child. */
struct sock_fprog;
/* Which filter: the notify set depends on what the kernel's view can decide. */
enum sup_filter_kind {
	SUP_FILTER_NAMESPACED,   /* hidden content covered in the mount namespace: the
	                            syscall table's "fast" column applies */
	SUP_FILTER_STRICT_HIDE,  /* namespaced, every path syscall emulated (--strict-hide) */
	SUP_FILTER_NATIVE_OPEN,  /* SUP_FILTER_NAMESPACED, and read-only opens native: the
	                            stubs are marked with fanotify (the supervisor reports
	                            an open of one, refused) */
	SUP_FILTER_UNNAMESPACED,
	SUP_FILTER_NATIVE_WRITE, /* SUP_FILTER_NATIVE_OPEN, and opens of any flags but O_PATH,
	                            creates, removes and links native: the
	                            kernel's read-only mounts, the stubs' read-only binds and
	                            Landlock decide them; for runs that ask for no change set */
	SUP_FILTER_NATIVE_WRITE_UNMARKED, /* SUP_FILTER_NATIVE_WRITE where the stubs cannot be
	                            marked (moat not started by root): read-only opens and
	                            O_PATH stay trapped, checked and continued, so that an open
	                            of a hidden path is still refused and reported */
	_SUP_FILTER_MAX,
};
int sup_filter_build(uint32_t arch, enum sup_filter_kind kind, struct sock_fprog *ret_prog);
int sup_filter_precompiled(enum sup_filter_kind kind, struct sock_fprog *ret_prog);
enum sup_filter_kind sup_filter_kind_of(bool namespaced, bool strict_hide, const struct vfs *v);
/* The filter a native-writes one gives way to where creates and removals must stay
 * with moat (a hidden symlink, which no stub covers), its opens as they were: the kind
 * itself for the others. */
enum sup_filter_kind sup_filter_writes_trapped(enum sup_filter_kind kind);
int sup_filter_install(const struct sock_fprog *prog, bool wait_killable);
/* The syscalls whose pid argument the filter sends to the supervisor when it is not the
 * caller's own (derived from the table's argument kinds): dispatch's handle_pid_arg()
 * answers exactly these. */
struct sc_entry;
bool sup_filter_names_pid(const struct sc_entry *e);
/* Whether the filter of this kind may send a call of this syscall to the supervisor
 * (always, or on some arguments, as add_arg_rules() does): dispatch must handle every
 * such row. Pure. */
bool sup_filter_notifies(const struct sc_entry *e, enum sup_filter_kind kind);
