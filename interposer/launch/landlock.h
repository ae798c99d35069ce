/* SPDX-License-Identifier: MIT */
#pragma once

struct vfs;

#include <stdbool.h>

/* Restrict the calling process (the command, just before its filter) with a Landlock
 * ruleset built from the vfs table, as paths appear inside the sandbox. list_all: every
 * directory may be listed (namespaced fast path: continued opens of the skeleton's
 * directories). Needs no_new_privs. Returns 0, or -errno (-EOPNOTSUPP when abi is 0). */
int sandbox_landlock(const struct vfs *v, int abi, bool list_all);
