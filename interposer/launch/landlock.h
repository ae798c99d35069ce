/* SPDX-License-Identifier: MIT */
#pragma once

struct vfs;
struct ll_readset;

#include <stdbool.h>

/* Restrict the calling process (the command, just before its filter) with a Landlock
 * ruleset built from the vfs table, as paths appear inside the sandbox. list_all: every
 * directory may be listed (namespaced fast path: continued opens of the skeleton's
 * directories). Needs no_new_privs. Returns 0, or -errno (-EOPNOTSUPP when abi is 0). */
int sandbox_landlock(const struct vfs *v, int abi, bool list_all, const struct ll_readset *rs);

/*
 * Unnamespaced mode's read set: where Landlock lets the sandbox read (READ_FILE,
 * READ_DIR, EXECUTE) built so that it holds no path the policy hides or denies for
 * reading. A read-only mapping holding a refused path (a literal rule, or a glob match
 * found by reading the trees a glob can match in, vfs_foreach_cover()) is carved: the
 * directories on the way to it get no read rights, each of their other entries gets a
 * rule of its own; procfs gets none (the vfs shows only the sandbox's pids). A
 * read-only open the supervisor allowed may then be continued when its object lies in
 * the set: whatever a swap after the check reaches outside it, Landlock refuses.
 *
 * ll_readset_build(): the supervisor, before the sandbox is spawned (the child reads
 * the result it inherits). Returns 0, or -EXDEV when the set cannot be had without
 * taking something from the sandbox (the host's shared /tmp or /dev/shm, whose other
 * entries are hidden; a refused path in a tree the sandbox writes, where what the run
 * creates beside it could not be executed), -E2BIG over the reading budget or the rule
 * budget (LL_READSET_MAX_RULES), -ENOMEM. ll_readset_has(): any thread, read-only.
 */
#define LL_READSET_MAX_RULES 4096u
int ll_readset_build(const struct vfs *v, unsigned budget, struct ll_readset **ret);
bool ll_readset_has(const struct ll_readset *rs, const char *vpath);
unsigned ll_readset_rules(const struct ll_readset *rs);
struct ll_readset *ll_readset_free(struct ll_readset *rs); /* accepts NULL, returns NULL */
