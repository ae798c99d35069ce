/* SPDX-License-Identifier: MIT */
/*
 * exectrace: the tracer thread that checks, at the stop after a continued exec and
 * before the new program's first instruction, that the file the kernel executed (and its
 * ELF interpreter) is what the policy allowed, and kills the process otherwise.
 *
 *   exectrace_start()       sup.c, once per run before the sandbox's first exec is answered
 *   exectrace_seize_early() sup.c's main thread, for a command that waits for its argv
 *   exectrace_watch()       a notifier thread, before it continues an exec
 *   exectrace_armed()       the same thread, once the continue is answered
 *   exectrace_wake()        sup.c, at teardown: told to stop, not waited for
 *   exectrace_stop()        sup.c, at teardown, after the wake: joined
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

struct stat;
struct sup_ctx;

int exectrace_start(struct sup_ctx *s);
void exectrace_wake(struct sup_ctx *s);
void exectrace_stop(struct sup_ctx *s);
/* Seize tid (about to be continued into an exec of checked, or NULL when no file was
 * checked); 0 and a token to pass to exectrace_armed() once the continue is answered
 * (0 when there is nothing to arm: tid was seized early). -ESRCH: the run is ending. */
int exectrace_watch(struct sup_ctx *s, pid_t tid, const struct stat *checked,
		    uint64_t *ret_token);
void exectrace_armed(struct sup_ctx *s, pid_t tid, uint64_t token);
/*
 * A warm start's command, waiting for its argv with its filter installed: seize it now,
 * so that its exec costs no seize and no hand-over on the request's path. Only for a
 * process that runs moat's code until its exec (spawn.c's command_main()): a failed exec
 * there ends in another exec or in _exit(), so its attempts need no interrupt, and the
 * exec stop still checks what the kernel ran. pidfd: tid's, opened before the call.
 * 0, or -errno (not seized; the exec then seizes it as any other).
 */
int exectrace_seize_early(struct sup_ctx *s, pid_t tid, int pidfd);
