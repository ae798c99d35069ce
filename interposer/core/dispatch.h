/* SPDX-License-Identifier: MIT */
/*
 * dispatch: one notification -> decode -> copy -> re-validate -> decide -> emulate/deny/
 * continue -> reply -> account. Handlers fill a struct sup_call; dispatch_one() replies
 * and records.
 */
#pragma once

#include <limits.h>
#include <pthread.h>
#include <linux/seccomp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "audit.h"
#include "sc.h"
#include "sup.h"
#include "vfs.h"

enum call_outcome {
	CALL_REPLY,      /* reply with result / err */
	CALL_ADDFD,      /* install fd (O_CLOEXEC per fd_flags) and return its number */
	CALL_CONTINUE,   /* let the kernel run it (exec, chdir, personality, pids: see each) */
	CALL_REPLIED,    /* the handler already replied (e.g. SETFD + reply) */
};

struct sup_counters {
	atomic_uint_fast64_t notified, emulated, denied, continued, errors, gone;
};

/* Per recent caller thread: its pidfd (for pidfd_getfd) and its open /proc/<tid>/comm
 * (the audit's comm field), so that neither is opened again on every call. Both stay
 * bound to the task they were opened for: once it is gone they answer ESRCH, never for
 * another task that reuses the tid, and are opened again. -1 = not open yet. */
#define TRACEE_CACHE 32
struct tracee_cache {
	struct {
		pid_t tid;      /* 0: empty slot */
		int pidfd, comm_fd;
		uint32_t used;
		char comm[16];  /* TASK_COMM_LEN; "" until read (see read_comm()) */
		unsigned comm_gen;
		uint64_t comm_ns;
	} e[TRACEE_CACHE];
	uint32_t clock;
	/* the path of a cwd or dirfd deeper than procfs prints (VFS_DEEP_MAX bytes each,
	 * allocated on first use; two, for the two bases of a rename or link) */
	char *deep[2];
	unsigned deep_next;
};

/* State shared by the notifier threads and the main loop (sup.c). Read-only once the
 * listener has arrived, except: the counters (atomic), the vfs and net layers (their
 * own locks), the audit writer (its own lock), and netst, which is used under lock only
 * (by handle_net() and by the main loop's net events and sync messages). */
struct sup_ctx {
	pthread_mutex_t lock;
	int listener;
	uint32_t arch;
	bool namespaced;
	bool verbose;
	/* the kernel's view covers hidden content (namespaced, not --strict-hide, no broad
	 * mapping of /dev's parent): a read-only open is continued after the check */
	bool continue_ro_opens;
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
	struct vfs_verdict verdict;
};

/* Answer one notification; tc is the calling notifier thread's own cache. */
void dispatch_one(struct sup_ctx *s, const struct seccomp_notif *req, struct tracee_cache *tc);
/* Whether a notification for this syscall reaches a handler (a row of dispatch.c's table or
 * the filter's list of calls naming a pid) rather than the fail-closed ENOSYS. Pure. */
bool dispatch_handles(const struct sc_entry *e);
/* Close what a tracee cache holds open. */
void tracee_cache_free(struct tracee_cache *tc);
/* The calling thread's fd as one of ours (same open file description), or -errno. */
int tracee_getfd(struct sup_call *c, int fd);
uint64_t now_mono_ns(void);

/* exectrace.c: the tracer thread that checks, at the stop after a continued exec and
 * before the new program's first instruction, that the file the kernel executed (and its
 * ELF interpreter) is what the policy allowed, and kills the process otherwise. */
int exectrace_start(struct sup_ctx *s);
void exectrace_stop(struct sup_ctx *s);
/* Seize tid (about to be continued into an exec of checked, or NULL when no file was
 * checked); 0 and a token to pass to exectrace_armed() once the continue is answered. */
struct stat;
int exectrace_watch(struct sup_ctx *s, pid_t tid, const struct stat *checked,
		    uint64_t *ret_token);
void exectrace_armed(struct sup_ctx *s, pid_t tid, uint64_t token);

/* sock.c: socket syscalls (connect, bind, sendto, sendmsg, sendmmsg). */
void handle_net(struct sup_call *c);
/* sock.c, for the loop: an event on an fd that sock.c added to the epoll set (a deferred
 * connect, the DNS socket); false when fd is not sock.c's. */
bool sup_net_event(struct sup_ctx *s, int fd, uint32_t events);
/* Takes ownership of the sandbox's DNS socket (namespaced mode) and serves it. */
int sup_net_dns_fd(struct sup_ctx *s, int fd);
void sup_net_free(struct sup_ctx *s);
