/* SPDX-License-Identifier: MIT */
/*
 * exectrace: the tracer thread that checks, at the stop after a continued exec and
 * before the new program's first instruction, that the file the kernel executed (and its
 * ELF interpreter) is what the policy allowed, and kills the process otherwise.
 *
 *   exectrace_start()  sup.c, once per run before the sandbox's first exec is answered
 *   exectrace_watch()  a notifier thread, before it continues an exec
 *   exectrace_armed()  the same thread, once the continue is answered
 *   exectrace_stop()   sup.c, at teardown
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

struct stat;
struct sup_ctx;

int exectrace_start(struct sup_ctx *s);
void exectrace_stop(struct sup_ctx *s);
/* Seize tid (about to be continued into an exec of checked, or NULL when no file was
 * checked); 0 and a token to pass to exectrace_armed() once the continue is answered. */
int exectrace_watch(struct sup_ctx *s, pid_t tid, const struct stat *checked,
		    uint64_t *ret_token);
void exectrace_armed(struct sup_ctx *s, pid_t tid, uint64_t token);
