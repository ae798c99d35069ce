/* SPDX-License-Identifier: MIT */
/*
 * The two context types of the core: struct sup_ctx, one run (made by sup.c before the
 * listener arrives, shared by the notifier threads, the loop and the tracer threads),
 * and struct sup_call, one notification on the notifier thread answering it (filled by
 * the handlers of dispatch.c and sock.c, read by the records of proctrack.c). Types
 * only: the files that use a context include this, not the code that fills it.
 */
#pragma once

#include <limits.h>
#include <pthread.h>
#include <linux/seccomp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "mounttab.h"
#include "sc.h"
#include "vfs.h"

struct audit_writer;
struct events;
struct exectrace;
struct firstexec;
struct net;
struct proctrack;
struct sup_net;
struct tracee_cache;
struct vfs_proc_ops;

enum call_outcome {
	CALL_REPLY,      /* reply with result / err */
	CALL_ADDFD,      /* install fd (O_CLOEXEC per fd_flags) and return its number */
	CALL_CONTINUE,   /* let the kernel run it (exec, chdir, personality, pids: see each) */
	CALL_REPLIED,    /* the handler already replied (e.g. SETFD + reply) */
};

struct sup_counters {
	atomic_uint_fast64_t notified, emulated, denied, continued, errors, gone;
};

/* State shared by the notifier threads and the main loop (sup.c). Read-only once the
 * listener has arrived, except: the counters (atomic), the vfs and net layers (their
 * own locks), the audit writer (its own lock), and netst, which is used under lock only
 * (by handle_net() and by the main loop's net events and sync messages). */
/* Notifier threads at most (sup.c, notifier_count()). */
#define MAX_NOTIFIERS 8

struct sup_ctx {
	pthread_mutex_t lock;
	int listener;
	uint32_t arch;
	bool namespaced;
	bool verbose;
	/* the kernel's view covers hidden content (namespaced, not --strict-hide, no broad
	 * mapping of /dev's parent), or unnamespaced, Landlock's read set holds none
	 * (readset): a read-only open is continued after the check */
	bool continue_ro_opens;
	/* started with one uid and one gid (real, effective, saved): every thread the
	 * filter covers holds the same ids and groups and no capability that governs file
	 * access (creds.h, CREDS_FIXED), so a call that needs no umask takes them without
	 * reading its caller's status. For good where the command holds no capability;
	 * namespaced, started by root, until a thread asks to change its ids or groups
	 * (handle_setid() clears it before letting the call through) */
	atomic_bool creds_fixed;
	/* unnamespaced with continue_ro_opens: where Landlock grants reads (landlock.h); an
	 * open is continued only when its object lies there */
	const struct ll_readset *readset;
	/* and no socket of the sandbox's can reach the host's network (no allow rule, so
	 * none was ever made host-side): a unix connect or send is continued after the
	 * check, and listen is continued, so the kernel performs them as the caller and a
	 * peer reads the caller's credentials, not ours (sock.c) */
	bool continue_unix;
	/* -v where read-only opens could be native (the stubs carry fanotify marks): they
	 * stay trapped so that every denied one is named, and a denied one is continued
	 * too, so that the program gets the errno the kernel's view gives it natively (the
	 * stub's EPERM, ENOENT below a hidden directory), reported here once */
	bool continue_denied_opens;
	/* --audit where nothing else asks for moat's own creates (no --report, --cow or
	 * -v), with continue_ro_opens, Landlock and no /dev/ptmx mapped: the conditions in
	 * which the kernel's view refuses every write the policy refuses (docs/threat-model.md,
	 * "Native creates"). Creates, write opens, mkdir, rmdir, unlink and exec are then
	 * checked, recorded and continued instead of performed (or seized, for exec); with
	 * record_native_opens the opens among them are performed all the same. */
	bool continue_writes;
	/* namespaced, the stubs in place, Landlock: a unix bind, which creates a
	 * name, is checked and continued, so that the socket is named as the program named
	 * it (sock.c); moat, binding it itself, could give it only its last name */
	bool kernel_binds;
	/* the threads whose continued denied open was reported and is to meet a stub:
	 * the stub watcher leaves that event unreported (stubwatch_expect()) */
	atomic_int stub_expected[64];
	/* --audit with read-only opens native: the kernel reports each open in the
	 * sandbox's mounts (fanotify FAN_OPEN) and the stub watcher records it. No open
	 * is continued then (may_continue_open()): moat opens what it traps itself. */
	bool record_native_opens;
	/* namespaced where a hidden name is absent (--strict-hide, or a view the kernel
	 * cannot answer for): an open of the mount table gets a copy without the stubs'
	 * mounts, which are told apart by stub_mounts (mounttab.h) */
	bool hide_mount_table;
	/* namespaced where the kernel answers listings and stat in the covered view: a
	 * hidden name is there already, an empty stub, so an inotify watch on a directory
	 * that holds one is let be (its events name it too); elsewhere it is refused */
	bool hidden_names_shown;
	struct mounttab_stubs stub_mounts;
	/* the notifier threads' tids, which live as long as the run: their own opens in
	 * the sandbox's mounts (a create moat performs) are no open of the sandbox's, even
	 * when the kernel's event is read after the thread is gone and no lookup of its
	 * process answers any more (stubwatch.c) */
	atomic_int notifier_tids[MAX_NOTIFIERS];
	struct vfs *vfs;
	struct net *net;
	struct sup_net *netst;            /* sock.c: pending connects, the DNS socket */
	int epfd;                         /* the loop's epoll set (sock.c adds sockets to it) */
	struct audit_writer *audit;
	struct proctrack *proctrack;      /* process records and sandbox ids (proctrack.c) */
	struct events *events;            /* --events: live JSON lines, or NULL */
	const struct vfs_proc_ops *proc;  /* the sandbox's pids (proc.c); NULL: none known */
	pid_t init_host_pid;              /* namespaced: pid 1 of the sandbox, else 0 */
	pid_t cmd_host_pid;
	struct sup_counters n;
	/* audit: a thread's comm is cached while this stays the same (read_comm()) */
	atomic_uint comm_gen;
	atomic_bool comm_nocache;         /* a /proc/.../comm was opened for writing */
	/* per-syscall denial counts for the summary line */
	atomic_uint denials_by_id[_SC_ID_MAX];
	uint64_t start_mono_ns;
	struct exectrace *exectrace;      /* exectrace.c: checks what an exec really ran */
	struct firstexec *first_exec;     /* firstexec.c: the command's first exec, checked
	                                     and opened before it asks (under lock) */
	/* sup_serve(): the runtime's own code (runc init) runs until the container's program
	 * is exec'd; its calls before that are continued unexamined */
	atomic_bool runtime_init;
	/* test_hooks builds only: stretch the window before re-validation for these */
	int test_delay_ms;
	char test_delay_syscalls[128];
};

struct sup_call {
	struct sup_ctx *s;
	struct tracee_cache *tc;        /* the notifier thread's own */
	const struct seccomp_notif *req;
	const struct sc_entry *e;
	pid_t tid;
	uint64_t t0;

	enum call_outcome outcome;
	int64_t result;
	int err;                /* errno for the program */
	bool policy_denied;     /* err came from a rule, not from the host */
	int fd;                 /* CALL_ADDFD: our fd to install (closed by dispatch) */
	unsigned fd_flags;

	char path[PATH_MAX];
	char path2[PATH_MAX];
	char addr[128];
	char flags_text[128];
	bool has_path, has_path2;
	bool comm_changing;     /* an exec or PR_SET_NAME: the comm read now is not kept */
	uint64_t exec_token;    /* an exec continued under watch (exectrace_armed()), or 0 */
	bool exec_by_fd;        /* the command's first exec, by the fd of the file checked
	                           (firstexec.c): recorded as the execve it stands for */
	bool id_unchecked;      /* continued without NOTIF_ID_VALID: only the SEND of the
	                           CONTINUE vouches for the path read (do_open()) */
	struct vfs_verdict verdict;
};
