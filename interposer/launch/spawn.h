/* SPDX-License-Identifier: MIT */
/*
 * spawn: start the command in the sandbox.
 *
 * Namespaced:   supervisor --clone(user,pid,mnt,net,ipc,uts)--> init (pid 1, unfiltered,
 *               builds the mount namespace from the vfs table, reaps) --fork--> command
 * Unnamespaced: supervisor --fork--> command
 *
 * The command installs the filter last, just before exec. It cannot pass the listener
 * with SCM_RIGHTS (sendmsg is notified by then), so it writes the fd number on the sync
 * socket; SO_PASSCRED gives the supervisor its host pid, and pidfd_getfd() the listener.
 */
#pragma once

#include <linux/filter.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "launch.h"

enum sync_type {
	SYNC_GO = 1,          /* supervisor -> child: uid maps and cgroups are in place */
	SYNC_LISTENER,        /* command -> supervisor: value = listener fd number */
	SYNC_EXEC_FAILED,     /* command -> supervisor: value = errno of the last execve */
	SYNC_SETUP_FAILED,    /* child -> supervisor: value = errno, value2 = stage */
	SYNC_STATUS,          /* init -> supervisor: value = the command's wait status */
	SYNC_MOUNTS_READY,    /* keeper -> supervisor: the sandbox's root is built (namespaced);
	                         value: SPAWN_COVER_* bits */
	SYNC_DNS,             /* init -> supervisor: SCM_RIGHTS = the sandbox's DNS socket,
	                         or none and value = errno (netns.c) */
	SYNC_ARGV,            /* supervisor -> command (--start-fd): value = the length of
	                         the next message, the command's argv packed NUL-separated;
	                         or the same bytes from moat serve on --argv-fd */
	SYNC_STUBS,           /* keeper -> supervisor: SCM_RIGHTS = an O_PATH fd of the
	                         directory holding SPAWN_STUB_FILE and SPAWN_STUB_DIR, the
	                         inodes every covering stub is a bind of (namespaced) */
	SYNC_EXEC_FD,         /* supervisor -> command (exec_fd): after the argv, SCM_RIGHTS =
	                         the program the supervisor resolved and checked, to run with
	                         execveat(AT_EMPTY_PATH); or none: exec by name */
	SYNC_CREATED,         /* keeper -> supervisor (namespaced): a mount point it made in a
	                         mapping of a host directory, to be removed when the run ends;
	                         SCM_RIGHTS = an O_PATH fd of the directory it was made in,
	                         value = 1 for a directory, and the message goes on with a
	                         struct sync_created and its path in the sandbox, NUL-ended */
	SYNC_COVER_CACHE,     /* keeper -> supervisor (namespaced): SCM_RIGHTS = a memfd
	                         holding the covering's records for the next run
	                         (vfs_cover_cache_write()), sent only when they changed */
};

#define SPAWN_ARGV_MAX (128 * 1024) /* the packed argv of SYNC_ARGV, NULs included */

struct sync_msg {
	int type;
	int value;
	int value2;
};

/* SYNC_CREATED's object as the keeper made it: a lookup through the directory's fd finds
 * the mount the keeper puts on it next, until the namespace is gone. */
struct sync_created {
	uint64_t dev;
	uint64_t ino;
};

#define SPAWN_STUB_FILE "cover-stub"
#define SPAWN_STUB_DIR "cover-dir"

/* SYNC_MOUNTS_READY's value */
#define SPAWN_COVER_INCOMPLETE 1u /* the covering went over its budget */
#define SPAWN_COVER_LINKS 2u      /* a hidden path is a symlink, which no bind can cover:
                                     removals must stay with moat */

struct spawn_plan {
	const struct sup_opts *opts;
	const struct sup_features *features;
	bool namespaced;
	bool cover_globs;       /* cover what glob rules hide or deny (the fast path needs it) */
	const struct ll_readset *readset; /* unnamespaced: Landlock's read set is carved so
	                           (landlock.h), and read-only opens in it are continued */
	bool cover_incomplete;  /* the keeper: the covering went over its budget, so the
	                           command gets the --strict-hide filter instead of prog */
	enum sup_filter_kind kind; /* prog's */
	bool cover_links;       /* the keeper: a hidden path is a symlink (cover_path()), so
	                           a native-writes prog gives way to
	                           sup_filter_writes_trapped() */
	struct sock_fprog prog;
	int stubs_fd;           /* the keeper: for SYNC_STUBS */
	const char *cover_cache_key; /* the covering's records across runs (vfs.h), or NULL */
	int cover_cache_fd;     /* the records of an earlier run, or -1 */
	char **envp;            /* built before fork: no allocation in the child */
	bool wait_argv;         /* --start-fd: the command, its filter installed and its
	                           listener handed over, waits for SYNC_ARGV before it execs
	                           (the sandbox is built first: a warm start) */
	char **argv;            /* the command: opts->argv, or what SYNC_ARGV brought */
	int argv_fd;            /* --argv-fd: where SYNC_ARGV comes from instead of sync_fd
	                           (straight from moat serve), or -1 */
	bool exec_fd;           /* wait for SYNC_EXEC_FD on sync_fd (after the argv with
	                           wait_argv; or the word that the listener is taken, where
	                           execs are native and would not wait for it) */
	const char *cwd;        /* where the command starts (virtual path) */
	int devnull_fd;
	int stdio[3];           /* the command's fd 0-2 if >= 0 (term.c's ptys), else inherited */
	int sync_fd;            /* child's end of the socketpair */
	uid_t uid;
	gid_t gid;
};

/* Fork (and clone namespaces). Returns the direct child's pid; *ret_pidfd its pidfd. */
pid_t spawn_start(struct spawn_plan *p, int *ret_pidfd);

/* Write the child's uid/gid maps (namespaced mode). */
int spawn_write_idmaps(pid_t pid, uid_t uid, gid_t gid);

/* Supervisor -> the waiting command: its argv, once known (--start-fd). */
int spawn_send_argv(int fd, char *const *argv);
/* The bytes of that message, for a writer of --argv-fd: SYNC_ARGV and its length, then
 * the strings, NUL-ended (malloc'ed into *ret, its size in *ret_len). -E2BIG past
 * SPAWN_ARGV_MAX or for an empty argv, -ENOMEM. */
int spawn_pack_argv(char *const *argv, char **ret, size_t *ret_len);

/* Stage names for SYNC_SETUP_FAILED. */
const char *spawn_stage_name(int stage);

int sync_send(int fd, int type, int value, int value2);
/* The same with an fd attached (SCM_RIGHTS; none when passfd < 0): only the unfiltered
 * keeper may use it. */
int sync_send_fd(int fd, int type, int value, int passfd);
