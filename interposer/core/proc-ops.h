/* SPDX-License-Identifier: MIT */
/*
 * The sandbox's process ids as the vfs needs them for /proc: which host pids belong to
 * the run (descendants of the keeper) and how sandbox pids map to host pids (the NSpid
 * line of /proc/<pid>/status in namespaced mode). The keeper is known only after the
 * launch; the vfs holds a pointer to the map, which sup_run() fills in.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "vfs.h"

struct proc_map {
	pid_t keeper;       /* host pid of the sandbox's init/keeper, 0 before launch */
	bool namespaced;
	struct vfs_proc_ops ops;
};

/* Initialise m and return its ops (userdata = m). */
const struct vfs_proc_ops *proc_map_init(struct proc_map *m);
