/* SPDX-License-Identifier: MIT */
/*
 * Live events: `moat run --events FILE|fd:N` writes one JSON object per line as things
 * happen (a denial with its rule and a hint, limit hits, the final result), for a
 * platform that wants to see a run while it runs (moat serve forwards them).
 *
 * Lifecycle: events_open() before the sandbox starts (a path is created with O_NOFOLLOW
 * and O_EXCL semantics of the caller's choosing, never through anything the sandbox can
 * reach later) -> events_*() from any supervisor thread (one mutex; a line is one write)
 * -> events_close().
 *
 * Rate limit: at most EVENTS_BURST denial events at once and EVENTS_PER_SEC per second
 * after that; what is dropped is counted and reported in a {"event":"dropped"} line
 * before the next event that passes, and at the end. The result line is never dropped.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

struct events;

#define EVENTS_BURST 200
#define EVENTS_PER_SEC 100

/* spec: "fd:N" (an inherited fd, which is made close-on-exec) or a path, created with
 * mode 0600 (an existing file is refused unless it is a FIFO or character device, so
 * no file the caller did not mean is truncated). -errno with a message logged. */
int events_open(const char *spec, struct events **ret);

/* A denied call. path or addr may be NULL; rule is the verdict's text. */
void events_denial(struct events *e, pid_t tid, const char *syscall, const char *path,
		   const char *addr, const char *rule, int err);

/* A limit the run hit (kind: "memory", "pids", "timeout", "cpu", "disk"). */
void events_limit(struct events *e, const char *kind, const char *detail);

/* The last line: how the run ended. */
void events_result(struct events *e, int exit_status, const char *reason, uint64_t wall_ns,
		   uint64_t cpu_ns, uint64_t denials);

/* Reports what is still pending of the dropped count, closes. Accepts NULL. */
void events_close(struct events *e);
