/* SPDX-License-Identifier: MIT */
/*
 * dispatch: one notification -> decode -> copy -> re-validate -> decide -> emulate/deny/
 * continue -> reply -> account. Handlers fill a struct sup_call; dispatch_one() replies
 * and records.
 */
#pragma once

#include <linux/seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "audit.h"
#include "ctx.h"
#include "sc.h"
#include "sup.h"
#include "vfs.h"

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
	char *dir_buf;  /* directory reads (getdents64, inotify's check), on first use */
};

/* Answer one notification; tc is the calling notifier thread's own cache. */
void dispatch_one(struct sup_ctx *s, const struct seccomp_notif *req, struct tracee_cache *tc);
/* Whether a notification for this syscall reaches a handler (a row of dispatch.c's table or
 * the filter's list of calls naming a pid) rather than the fail-closed ENOSYS. Pure. */
bool dispatch_handles(const struct sc_entry *e);
/* Count and show one denial as every denied call is: the summary's count, the --events
 * line, and with -v a line naming the call, the object and the rule (rate-limited per
 * syscall and rule). path or addr names the object (NULL: none); rule may be NULL or
 * "". Any thread. */
void sup_report_denial(struct sup_ctx *s, pid_t tid, const struct sc_entry *e,
		       const char *path, const char *addr, const char *rule, int err);
/* Close what a tracee cache holds open. */
void tracee_cache_free(struct tracee_cache *tc);
/* The calling thread's fd as one of ours (same open file description), or -errno. */
int tracee_getfd(struct sup_call *c, int fd);
/* The VFS_WANT_* bits of what the syscall table says this call does with the first
 * object it names (its access column, vfs_want_of()); a row without one is asked for a
 * write, the most any caller of this needs. Pure. */
unsigned call_want(const struct sup_call *c);

/* sock.c: socket syscalls (connect, bind, sendto, sendmsg, sendmmsg). */
void handle_net(struct sup_call *c);
/* sock.c, for the loop: an event on an fd that sock.c added to the epoll set (a deferred
 * connect); false when fd is not sock.c's. */
bool sup_net_event(struct sup_ctx *s, int fd, uint32_t events);
/* Takes ownership of the sandbox's DNS socket (namespaced mode) and serves it from a
 * thread of its own, which sup_net_free() ends. */
int sup_net_dns_fd(struct sup_ctx *s, int fd);
void sup_net_free(struct sup_ctx *s);
