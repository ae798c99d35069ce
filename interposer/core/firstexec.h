/* SPDX-License-Identifier: MIT */
/*
 * firstexec: a warm start's first exec by the checked file's fd, without an exec stop.
 *
 *   firstexec_open()  sup.c's main thread, when the request arrives (--start-fd)
 *   firstexec_take()  a notifier thread, on the command's first execve/execveat
 *   firstexec_drop()  sup.c, at teardown
 *
 * One entry per run, under sup_ctx.lock.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

struct stat;
struct sup_ctx;
struct vfs_verdict;

/*
 * Find argv[0] as the command's execvp() would (PATH of envp, relative to the virtual
 * cwd), check it and its ELF interpreter as its exec would be checked, and open it.
 * Returns the fd (close-on-exec) to hand to the command pid, whose execveat() on it
 * firstexec_take() will then let through; or -errno when the exec is to go by name as
 * usual: the fast way does not apply (a #! script, a static check of the interpreter
 * that fails, a run whose kernel view does not cover hidden content) or would leave
 * another trace than the exec by name (a candidate before it refused by a rule, or any
 * candidate before it under --audit).
 */
int firstexec_open(struct sup_ctx *s, pid_t pid, char *const *argv, char *const *envp,
		   const char *cwd);
/*
 * The command's first exec: true when tid is the command, st is the file of the fd its
 * execveat() runs and that is the file firstexec_open() checked: then path is the name
 * checked (as the exec by name would have named it) and *verdict its verdict. Any exec
 * of tid ends the entry, whatever the answer: it is good for one attempt.
 */
bool firstexec_take(struct sup_ctx *s, pid_t tid, const struct stat *st, char *path,
		    size_t path_len, struct vfs_verdict *verdict);
/* The entry, if still there: no notifier works any more. */
void firstexec_drop(struct sup_ctx *s);
