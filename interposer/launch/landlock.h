/* SPDX-License-Identifier: MIT */
#pragma once

struct vfs;

/* Restrict the calling process (the command, just before its filter) with a Landlock
 * ruleset built from the vfs table, as paths appear inside the sandbox. Needs
 * no_new_privs. Returns 0, or -errno (-EOPNOTSUPP when abi is 0). */
int sandbox_landlock(const struct vfs *v, int abi);
