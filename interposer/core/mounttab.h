/* SPDX-License-Identifier: MIT */
/*
 * mounttab: the sandbox's mount table without the stubs, where a hidden name is absent.
 *
 * In namespaced mode every hidden or read-denied path that exists is covered by a bind
 * mount of an empty stub (spawn.c), and a mount point is a path the kernel prints:
 * /proc/<pid>/mountinfo, mounts and mountstats would name each hidden path, where
 * --strict-hide promises that a hidden name exists nowhere (so does a namespaced run whose
 * view the kernel cannot answer for: vfs_kernel_view_exact()). There every open is
 * moat's, so an open of one of those files gets a copy without the stubs' mounts, and
 * without any mount at or below a stub's mount point (a mapping a hide rule covers): a
 * sealed memfd, read-only, holding what the file held when it was opened.
 * What differs from the file itself: fstat() gives the copy's size where procfs says 0,
 * the fd's /proc link names a memfd, and poll() never reports a change of the table
 * (the sandbox cannot mount anything, so the table does not change during a run).
 * statmount() and listmount() are newer than the filter's syscall table and refused
 * by its default action (ENOSYS) in every mode.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

enum mounttab_kind {
	MOUNTTAB_NONE,
	MOUNTTAB_INFO,  /* mountinfo: "ID PARENT MAJ:MIN ROOT MOUNT-POINT ..." */
	MOUNTTAB_MOUNTS, /* mounts: "SOURCE MOUNT-POINT TYPE OPTIONS 0 0" */
	MOUNTTAB_STATS, /* mountstats: "device SOURCE mounted on MOUNT-POINT with fstype ..." */
};

/* Field n (from 0) of the mount-table line at line, as the kernel escapes it (a space
 * within a field is \040), into out; false if the line has none or it does not fit. */
bool mounttab_field(const char *line, unsigned n, char *out, size_t outlen);

/* Which mount-table file the canonical virtual path vpath is: /proc/<pid>/NAME or
 * /proc/<pid>/task/<tid>/NAME. */
enum mounttab_kind mounttab_kind(const char *vpath);

/* The stubs' mounts, told apart by their filesystem (the keeper's staging tmpfs, dev)
 * and their root in it (SPAWN_STUB_FILE, SPAWN_STUB_DIR). */
struct mounttab_stubs {
	bool known;
	dev_t dev;
};

/*
 * fd: the real file of kind, opened for the caller; closed here. tid: a thread of the
 * sandbox, whose /proc/<tid>/mountinfo lists the stubs (the sandbox has one mount
 * namespace, and its processes one root: they cannot make either). Returns the copy's
 * fd (O_RDONLY, close-on-exec) or -errno.
 */
int mounttab_filtered(int fd, enum mounttab_kind kind, pid_t tid,
		      const struct mounttab_stubs *stubs);

/* For tests: filter text of kind (NUL-terminated) against a mountinfo text that lists
 * the stubs; returns a malloc'ed string or NULL (ENOMEM). */
char *mounttab_filter_text(const char *text, enum mounttab_kind kind, const char *mountinfo,
			   const struct mounttab_stubs *stubs);
