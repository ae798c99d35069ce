/* SPDX-License-Identifier: MIT */
/*
 * vfs: the virtual filesystem the sandbox sees.
 *
 * Lifecycle: vfs_new() -> vfs_add_directive()... (or vfs_add_default_profile()) ->
 * vfs_finalize() -> the operations below, from any supervisor thread -> vfs_free().
 * After vfs_finalize() the mount table is immutable; the only mutable state is the
 * change set (files the run wrote), guarded by an internal mutex.
 *
 * Paths: every operation takes the path exactly as the sandboxed program gave it
 * (already copied out of the tracee by the interposer; vfs never reads tracee memory)
 * plus a struct vfs_caller saying where relative paths start. Resolution happens inside
 * the virtual root, component by component, on host O_PATH fds: ".." stops at "/",
 * symlinks are followed inside the view, and the policy is evaluated on the canonical
 * virtual path, so every alias of a hidden file is hidden too. Host operations are done
 * relative to an O_PATH fd of the resolved parent with O_NOFOLLOW on the last component,
 * so a symlink swapped in after resolution cannot redirect them.
 *
 * Results: functions return 0 (or a non-negative value such as an fd or a length) when
 * the operation was performed, or -errno to deliver to the sandboxed program (EACCES,
 * ENOENT, EROFS, ...). The errno of vfs's own failures (ENOMEM) is never mixed with that:
 * vfs returns -ENOMEM only when it could not decide, and the interposer then denies.
 * Every call fills *verdict (may be NULL) with the rule that decided it.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/statfs.h>
#include <time.h>

#include "sc.h"

struct moat_error;   /* error.h: the message for the operator */

struct vfs;
struct statx;

enum vfs_mode {
	VFS_MODE_NAMESPACED,   /* the tracee has its own mount ns built from the same table */
	VFS_MODE_UNNAMESPACED, /* virtual paths equal host paths; DST != SRC refused */
};

/* How the caller's /proc pids map to host pids (the sandbox may have its own pid ns). */
struct vfs_proc_ops {
	void *userdata;
	/* Host pid for a pid as the sandbox sees it, or -ESRCH when it is not one of the
	 * sandbox's processes (so /proc/<pid> of every host process stays hidden). */
	pid_t (*to_host)(void *userdata, pid_t sandbox_pid);
	/* The sandbox's view of a host pid (for /proc/self), or -ESRCH. */
	pid_t (*to_sandbox)(void *userdata, pid_t host_pid);
	/* The host tgid of a host tid (for /proc/self of a thread), or -ESRCH; NULL: the
	 * caller's tgid field is right. */
	pid_t (*tgid_of)(void *userdata, pid_t host_tid);
	/* The controlling terminal of a host tid (st_rdev form; 0: none), or (dev_t)-1 when
	 * unknown; NULL: /dev/tty is opened as the supervisor's own (tests only). */
	dev_t (*ctty_of)(void *userdata, pid_t host_tid);
};

/* Who is asking, and where its relative paths start. */
struct vfs_caller {
	pid_t pid;          /* host tid of the calling thread */
	pid_t tgid;         /* host tgid (the proc ops' tgid_of, when set, is asked instead) */
	const char *base;   /* canonical virtual path of the cwd or of the dirfd's directory;
	                       NULL when the dirfd is not a directory (relative path -> ENOTDIR) */
};

/* Why a decision was taken: what the operator and the audit stream see. */
struct vfs_verdict {
	int err;                   /* 0 = allowed, else the errno given to the program */
	bool denied;               /* err came from a rule (hide, deny, ro, unmapped), not from
	                              the host (a file that simply does not exist) */
	bool below;                /* the rule took away a directory the path goes on below
	                              (namespaced, the lookup then fails in its empty stub) */
	bool link;                 /* the hidden name is a symlink, which no stub covers
	                              (namespaced, the kernel follows it) */
	bool creates;              /* vfs_open_decide_write(): the name did not exist, the
	                              kernel is to create it */
	char rule[160];            /* "hide GLOB (policy.moat:4)", "ro-bind /usr", ... */
	char vpath[PATH_MAX];      /* canonical virtual path (as far as resolution got) */
};

/* --- building the table ------------------------------------------------------------ */

int vfs_new(const struct vfs_proc_ops *proc, struct vfs **ret);
struct vfs *vfs_free(struct vfs *v);   /* accepts NULL, returns NULL */

/*
 * One directive, as a policy file line or a CLI option: word is "ro-bind", "bind",
 * "tmpfs", "hide", "deny", "file", "chdir"; arg is the rest of the line. origin names
 * where it came from ("policy.moat:4" or "--hide") for verdicts and errors.
 * Returns -EINVAL with the message in e on a bad directive, -ENOENT for an unknown word
 * (e untouched, so the caller can try the network layer's words).
 */
int vfs_add_directive(struct vfs *v, const char *word, const char *arg, const char *origin,
                      struct moat_error *e);

/* The built-in profile (system dirs ro, secrets hidden, cwd rw, private /tmp, minimal
 * /dev and /proc). home is the invoking user's home, cwd the workspace. */
int vfs_add_default_profile(struct vfs *v, const char *home, const char *cwd);

/* The secrets the default profile hides: `hide` globs ("~" is the home directory, a
 * pattern starting "**" matches at any depth), NULL-terminated. */
extern const char *const vfs_default_secrets[];
/* The entry of vfs_default_secrets that hides path (absolute) or a directory above it,
 * with "~" read as home; NULL when none does. Matched as the vfs matches hide rules. */
const char *vfs_default_secret_of(const char *home, const char *path);

/*
 * A regular file the command gets from outside the view as one of its standard fds
 * (`moat run ... > out.log`): a reopen of it through a magic link (/dev/stdout,
 * /proc/self/fd/1) may do what that fd does (its O_ACCMODE), as natively, and as the
 * Landlock rule sandbox_landlock() gives it lets the kernel. Any other object outside
 * the view reached through a magic link is EACCES. Up to three files; -ENOSPC beyond.
 */
int vfs_allow_handed_file(struct vfs *v, int fd);

/* The entries of procfs (names below /proc, NULL-terminated) that stay read-only where
 * /proc is mapped read-write: the kernel's settings and devices, which the sandbox's
 * root (the host's uid 0 when root starts moat) could otherwise write, e.g.
 * kernel.core_pattern. The vfs refuses writes there with EROFS and the mounts agree. */
extern const char *const vfs_proc_readonly[];

/*
 * Bounds on what the run can write. With a disk quota (bytes, 0 = none) the private
 * directory holding every tmpfs's backing (the sandbox's /tmp, /dev/shm, home, and any
 * tmpfs of the policy) is itself a tmpfs of that size; a tmpfs directive with a SIZE gets
 * a tmpfs of that size as its backing. Both are mounted by vfs_finalize() on the host
 * paths the supervisor and the sandbox share, and only once the caller says it is in a
 * mount namespace of its own where it may mount (vfs_allow_mounts(); vfs_needs_mounts()
 * says whether it must): a vfs built only to check or replay a policy mounts nothing.
 */
int vfs_set_disk_quota(struct vfs *v, uint64_t bytes);
bool vfs_needs_mounts(const struct vfs *v);
void vfs_allow_mounts(struct vfs *v);
/* The disk quota's use at the end of the run: false without a quota. */
bool vfs_disk_usage(const struct vfs *v, uint64_t *ret_used, uint64_t *ret_size);

/*
 * Copy-on-write workspace (cow.c). The workspace (the writable bind covering where the
 * sandbox starts: the current directory, or the one mapped and chdir'ed to) becomes an
 * overlayfs: lower = the host directory, upper and work = upper_dir/upper and
 * upper_dir/work when given (kept across runs), else in the private directory (so on
 * the --disk tmpfs). vfs_finalize() mounts it on the workspace's host path, which needs
 * vfs_allow_mounts() (vfs_needs_mounts() says so): in namespaced mode the sandbox's bind
 * of the workspace is the overlay, unnamespaced every path, cwd and fd of the workspace
 * the supervisor or the sandbox takes is. vfs_free() unmounts it.
 */
int vfs_set_cow(struct vfs *v, const char *upper_dir);
/* Mount that overlay on target (the same options; for moat serve's own). -errno. */
int vfs_cow_mount_overlay(const char *target, int lower_fd, const char *upper,
                          const char *work);
/* The workspace's host path (see above), or NULL when there is none. */
const char *vfs_workspace_host(const struct vfs *v);
/* After vfs_finalize() with cow: an fd of the host directory under the overlay, of the
 * upper layer (both the vfs's), and the workspace's host path. -ENOENT without cow. */
int vfs_cow_dirs(const struct vfs *v, int *ret_lower, int *ret_upper, const char **ret_host);
/* Take the overlay down (once nothing of the sandbox is left), so that the host
 * directory is written with no overlay over it; the fds above stay valid. */
void vfs_cow_unmount(struct vfs *v);

/* What an upper layer holds, in walk order (a directory before what is in it). */
enum vfs_cow_kind {
	VFS_COW_WRITE,    /* a regular file, new or changed: its whole content */
	VFS_COW_DIR,      /* a directory, new or merged with the host's */
	VFS_COW_OPAQUE,   /* a directory replacing the host's (whose entries all go) */
	VFS_COW_SYMLINK,
	VFS_COW_DELETE,   /* a whiteout: the host's entry (file or tree) goes */
	VFS_COW_REFUSED,  /* not applied nor exported: why says why */
};
struct vfs_cow_entry {
	enum vfs_cow_kind kind;
	char *path;               /* relative to the workspace, no leading "/" */
	mode_t mode;
	uid_t uid;
	gid_t gid;
	uint64_t size;            /* WRITE: bytes; SYMLINK: the target's length */
	struct timespec mtime;
	char sha256[65];          /* WRITE: of the content, hex */
	char *target;             /* SYMLINK */
	bool hardlink;            /* WRITE: the upper file had other names (copied alone) */
	bool setid_dropped;       /* WRITE: it was set-uid or set-gid; mode has neither bit */
	const char *why;          /* REFUSED: a device node, a FIFO, larger than the limit... */
	int err;                  /* after vfs_cow_commit(): the errno of this entry, or 0 */
};
struct vfs_cow_set {
	struct vfs_cow_entry *e;
	size_t n, cap;
	uint64_t bytes;           /* of the WRITE entries */
};
/* Walk an upper layer (an fd of its root; nothing may write it meanwhile). Files larger
 * than max_file are refused. -errno on failure to read it or ENOMEM. */
int vfs_cow_scan(int upper_fd, uint64_t max_file, struct vfs_cow_set *ret);
void vfs_cow_set_done(struct vfs_cow_set *s);
const char *vfs_cow_kind_name(enum vfs_cow_kind k);
/* Apply the set to the directory lower_fd (never following a link nor crossing a mount
 * in it, nor writing outside it); each entry's err says how it went. Returns the number
 * of entries that failed. */
int vfs_cow_commit(struct vfs_cow_set *s, int upper_fd, int lower_fd);
/* A tar (ustar, pax headers for long names) of the set, in the OCI image layer
 * convention: deletions as empty "DIR/.wh.NAME" entries, a replaced directory as its
 * entry followed by "DIR/.wh..wh..opq". Returns the number of entries left out because
 * their own name starts with ".wh." (which would read as a deletion), or -errno. */
int vfs_cow_export(const struct vfs_cow_set *s, int upper_fd, int out_fd);
/* Remove everything in an upper layer (kept across runs, once applied or dropped). */
int vfs_cow_clear(int upper_fd);
/* The WRITE entries' sha256 in sha256sum(1)'s format, "HEX  PATH" per line. */
int vfs_cow_write_sums(const struct vfs_cow_set *s, int out_fd);

/* Check the table for the mode (unnamespaced refuses remaps and tmpfs) and freeze it.
 * 0, or -errno with the message in e (strerror() of the errno where nothing more is known:
 * an allocation). */
int vfs_finalize(struct vfs *v, enum vfs_mode mode, struct moat_error *e);
/* vfs_finalize() removes the private directories of runs that died (store.c) before it
 * makes its own. After vfs_defer_sweep() (called before vfs_finalize()) it does not, and
 * the caller calls vfs_sweep_stale() once it has time to spare (sup_run(): while the
 * keeper exits): it reads the whole of the host's /tmp, which need not delay the
 * sandbox's start. */
void vfs_defer_sweep(struct vfs *v);
/* state_fd: where vfs_note_made() keeps its lists (or -1: no list is undone). */
void vfs_sweep_stale(const struct vfs *v, int state_fd);
/* What the keeper made on the host for a mount point (vpath in the sandbox, the made
 * object's identity), listed in state_fd (a directory of ours that no sandbox sees), so
 * that the sweep of a run killed before its teardown removes it as the teardown would
 * have (store.c). */
void vfs_note_made(struct vfs *v, int state_fd, const char *vpath, dev_t dev, ino_t ino,
		   bool dir);

/* Namespaced mode, once the sandbox's mount namespace exists: resolve through root (an
 * O_PATH fd of the sandbox's root directory) so every fd lives on the sandbox's mounts.
 * root < 0 switches back to the host (before vfs_changes_foreach at the end). */
int vfs_rebase(struct vfs *v, int root);

/* Working directory the sandbox starts in (chdir directive, else the cwd). */
const char *vfs_initial_cwd(const struct vfs *v);

/* "~" in directives expands to this (default: $HOME at vfs_new()); call before them. */
int vfs_set_home(struct vfs *v, const char *home);

/* The sandbox's temporary directory, to export as TMPDIR: the virtual path of "tmpfs /tmp"
 * (unnamespaced, the host's /tmp, showing only the entries the run made in it), else
 * of the first other tmpfs. NULL without tmpfs. */
const char *vfs_tmpdir(const struct vfs *v);

/* The sandbox's home, to export as HOME: the virtual path of a tmpfs at the home "~"
 * stands for (the default profile makes one), namespaced at the home's own path,
 * unnamespaced a private host dir at its own host path. NULL without one. */
const char *vfs_home(const struct vfs *v);

/* Namespaced mode, "/" unmapped: a host dir holding the unmapped part of the tree (empty
 * directories and mount points for every mapping whose parent is unmapped, and symlink
 * sources such as /bin -> usr/bin, which vfs_foreach_mount() skips since a symlink cannot
 * be bind-mounted). Use it as the sandbox's root. NULL otherwise. */
const char *vfs_skeleton(const struct vfs *v);

/*
 * Pure decision for audit replay: the table's rules (hide, deny, read-only, unmapped)
 * applied to an already-canonical virtual path, with no host access; /proc pid
 * visibility is not decided (it depends on the live process tree). want: VFS_WANT_*
 * bits, 0 for a stat. Returns 0 or -ENOENT / -EACCES / -EROFS, and fills *verdict.
 */
int vfs_decide(const struct vfs *v, const char *canonical_vpath, unsigned want,
               struct vfs_verdict *verdict);

/* Path helpers, pure, for whoever reasons about virtual paths outside a walk (replay):
 * lexical normalization against base, no symlinks followed ("/a/./b/../c" -> "/a/c";
 * 0 or -ENAMETOOLONG), and whether path is dir or below it. */
int vfs_normalize(const char *base, const char *path, char *buf, size_t len);
bool vfs_path_under(const char *path, const char *dir);

/* Canonical JSON of the resolved table (a jansson json_t *, caller decrefs). */
void *vfs_to_json(const struct vfs *v);

/*
 * The mount table for layer 1: call fn for each mapping in mount order (parents first),
 * so the interposer can build the mount namespace and Landlock rules from the same data.
 */
enum vfs_mount_kind { VFS_MOUNT_BIND, VFS_MOUNT_TMPFS, VFS_MOUNT_FILE, VFS_MOUNT_HIDE,
		      VFS_MOUNT_SYMLINK /* host is a symlink (merged /usr: /bin -> usr/bin) */ };
struct vfs_mount_info {
	enum vfs_mount_kind kind;
	const char *host;       /* host source; for TMPFS the private host dir backing it (bind-mount
	                           it so supervisor and sandbox see the same files); for FILE a
	                           host file with the content */
	const char *virt;       /* destination in the sandbox */
	bool writable;
	bool own_only;          /* unnamespaced /tmp, /dev/shm: the host's directory, of which
	                           the sandbox sees only what the run made (the rest is hidden) */
	bool is_proc;           /* the host's procfs: the vfs shows only the sandbox's pids */
};
int vfs_foreach_mount(const struct vfs *v, int (*fn)(const struct vfs_mount_info *m, void *ud),
                      void *ud);

/*
 * Namespaced mode: call fn for each path of the assembled tree (host path root + vpath)
 * that a glob rule hides or denies for reading, so that the kernel's view can cover it
 * (vfs/cover.c says how far the tree is read). Returns 0 once every place a glob can
 * match was read, fn's error, or -E2BIG when that took more than budget entries or a
 * path there is longer than PATH_MAX: the covering is then incomplete (what was covered
 * stays covered).
 */
#define VFS_COVER_BUDGET 500000u /* entries: about 2 s of start-up */
struct vfs_cover_cache;
int vfs_foreach_cover(const struct vfs *v, const char *root, unsigned budget,
                      struct vfs_cover_cache *cc,
                      int (*fn)(const char *vpath, bool dir, void *ud), void *ud);

/*
 * What vfs_foreach_cover() did in each directory, kept across runs (vfs/covercache.c
 * says why that is sound): with a cache, a directory whose device, inode and ctime match
 * its record is not read again. The key names the table and root (malloc'ed; NULL: out
 * of memory), _name() the file to keep it in ("cover-" and 32 hex digits). _new() takes
 * an earlier run's file (fd, or -1), used only if it parses, checks and has this key;
 * NULL: out of memory. After a walk that returned 0, _changed() says whether the file
 * should be replaced by what _write() writes to fd.
 */
char *vfs_cover_cache_key(const struct vfs *v, const char *root);
int vfs_cover_cache_name(const char *key, char *buf, size_t size);
struct vfs_cover_cache *vfs_cover_cache_new(const char *key, int fd);
void vfs_cover_cache_free(struct vfs_cover_cache *cc);
bool vfs_cover_cache_changed(const struct vfs_cover_cache *cc);
int vfs_cover_cache_write(const struct vfs_cover_cache *cc, int fd);
/* Whether the directory dirfd, or one above it, is mapped into the sandbox (shown, or
 * not known): a cache kept there could be read or written by the sandbox. */
bool vfs_shows_host_dir(const struct vfs *v, int dirfd);
/* Directories replayed from a record, and read. */
void vfs_cover_cache_stats(const struct vfs_cover_cache *cc, unsigned *ret_hits,
                           unsigned *ret_reads);

/* Whether a mount namespace built from the table shows what the vfs shows, hidden
 * content aside: not when a mapping of a parent of /dev brings the host's device nodes
 * along (the vfs neither opens nor lists them; the kernel would list them). */
bool vfs_kernel_view_exact(const struct vfs *v);

/* --- the emulated path syscalls ------------------------------------------------------ */

/* open/openat/openat2/creat: returns a host fd (O_CLOEXEC set; the interposer injects
 * it with the program's O_CLOEXEC). resolve = openat2 RESOLVE_* bits, 0 otherwise.
 * O_PATH gives a read-only fd on a directory or regular file (an O_PATH file cannot be
 * injected), EOPNOTSUPP for other types. */
int vfs_open(const struct vfs *v, const struct vfs_caller *c, const char *path, int flags,
             mode_t mode, uint64_t resolve, struct vfs_verdict *verdict);
/* vfs_open(), except that an open that would wait for another process (a FIFO opened
 * for reading only or writing only, without O_NONBLOCK, with no partner yet) is not
 * performed: *ret_wait is set and an O_PATH fd of the FIFO returned, to be opened with
 * its flags through /proc/self/fd/N where waiting is harmless. */
int vfs_open_nowait(const struct vfs *v, const struct vfs_caller *c, const char *path, int flags,
                    mode_t mode, uint64_t resolve, bool *ret_wait, struct vfs_verdict *verdict);
/* The policy's decision on a read-only open that creates nothing, without opening: a
 * -errno (the open fails so), VFS_OPEN_KERNEL when it is allowed and names a regular
 * file or a directory, or any object for O_PATH (the kernel may perform it; its O_PATH
 * open acts on nothing), VFS_OPEN_SUPERVISOR for anything else (other flags or another
 * type of object: vfs_open_nowait() must do it). */
enum { VFS_OPEN_KERNEL = 0, VFS_OPEN_SUPERVISOR = 1 };
int vfs_open_decide(const struct vfs *v, const struct vfs_caller *c, const char *path, int flags,
                    struct vfs_verdict *verdict);
/* The same for an open of any flags but O_TMPFILE (which answers VFS_OPEN_SUPERVISOR;
 * O_PATH is decided as vfs_open_decide() decides it), where the kernel's own view refuses every write the policy refuses
 * (docs/threat-model.md, "Native creates"): VFS_OPEN_KERNEL for an allowed regular file or
 * directory, or a name to create, which the change set then holds as created or written
 * (noted at the decision: the kernel's open may still fail). */
int vfs_open_decide_write(const struct vfs *v, const struct vfs_caller *c, const char *path,
                          int flags, struct vfs_verdict *verdict);

/* stat family: flags are AT_SYMLINK_NOFOLLOW / AT_NO_AUTOMOUNT (AT_EMPTY_PATH with an
 * empty path is handled by the interposer on the tracee's fd, not here). */
int vfs_stat(const struct vfs *v, const struct vfs_caller *c, const char *path, int flags,
             struct stat *ret_st, struct vfs_verdict *verdict);
int vfs_statx(const struct vfs *v, const struct vfs_caller *c, const char *path, int flags,
              unsigned mask, struct statx *ret_stx, struct vfs_verdict *verdict);
int vfs_statfs(const struct vfs *v, const struct vfs_caller *c, const char *path,
               struct statfs *ret, struct vfs_verdict *verdict);
int vfs_access(const struct vfs *v, const struct vfs_caller *c, const char *path, int mode,
               int flags, struct vfs_verdict *verdict);
/* Returns the length written to buf (not NUL-terminated, as readlink(2)). */
int vfs_readlink(const struct vfs *v, const struct vfs_caller *c, const char *path, char *buf,
                 size_t len, struct vfs_verdict *verdict);

int vfs_mkdir(const struct vfs *v, const struct vfs_caller *c, const char *path, mode_t mode,
              struct vfs_verdict *verdict);
int vfs_mknod(const struct vfs *v, const struct vfs_caller *c, const char *path, mode_t mode,
              dev_t dev, struct vfs_verdict *verdict);
/* vfs_mkdir() and vfs_unlink() decided but not performed, for the kernel to perform in
 * a view that refuses what the policy refuses (vfs_open_decide_write()): 0 when
 * allowed, the change noted at the decision; -errno as those would answer. */
int vfs_mkdir_decide(const struct vfs *v, const struct vfs_caller *c, const char *path,
                     struct vfs_verdict *verdict);
int vfs_unlink_decide(const struct vfs *v, const struct vfs_caller *c, const char *path,
                      int flags, struct vfs_verdict *verdict);
/* flags: 0 or AT_REMOVEDIR */
int vfs_unlink(const struct vfs *v, const struct vfs_caller *c, const char *path, int flags,
               struct vfs_verdict *verdict);
int vfs_rename(const struct vfs *v, const struct vfs_caller *oldc, const char *oldpath,
               const struct vfs_caller *newc, const char *newpath, unsigned flags,
               struct vfs_verdict *verdict);
int vfs_link(const struct vfs *v, const struct vfs_caller *oldc, const char *oldpath,
             const struct vfs_caller *newc, const char *newpath, int flags,
             struct vfs_verdict *verdict);
/* linkat(fd, "", ..., AT_EMPTY_PATH): a new name for the object of fd (one of ours: the
 * caller's fd taken with pidfd_getfd), whose /proc/self/fd link reads fd_path. The name
 * must be one the policy lets the caller create, in the mapping that holds the object
 * (an O_TMPFILE's "DIR/#N (deleted)" is in DIR's), and the object readable where it is. */
int vfs_link_fd(const struct vfs *v, int fd, const char *fd_path, const struct vfs_caller *newc,
                const char *newpath, struct vfs_verdict *verdict);
int vfs_symlink(const struct vfs *v, const char *target, const struct vfs_caller *c,
                const char *linkpath, struct vfs_verdict *verdict);
/* The mode a chmod of an object of type file_mode (st_mode) gets: S_ISUID and S_ISGID
 * dropped unless it is a directory, as for every create (no set-id program is left on
 * the host, whoever the sandbox's root became); a directory keeps S_ISGID. vfs_chmod()
 * applies it; fchmod's handler, which changes the caller's fd, applies it too. */
mode_t vfs_chmod_mode(mode_t file_mode, mode_t mode);
int vfs_chmod(const struct vfs *v, const struct vfs_caller *c, const char *path, mode_t mode,
              int flags, struct vfs_verdict *verdict);
int vfs_chown(const struct vfs *v, const struct vfs_caller *c, const char *path, uid_t uid,
              gid_t gid, int flags, struct vfs_verdict *verdict);
int vfs_truncate(const struct vfs *v, const struct vfs_caller *c, const char *path,
                 off_t length, struct vfs_verdict *verdict);
/* times NULL = now (utimensat semantics) */
int vfs_utimensat(const struct vfs *v, const struct vfs_caller *c, const char *path,
                  const struct timespec times[2], int flags, struct vfs_verdict *verdict);

/* Checks only: the interposer continues exec (and checks at the exec stop that the file
 * run is the one checked, or one the policy allows where the kernel found it) and chdir
 * (which grants nothing by itself: every later relative path is resolved from the
 * canonical cwd again). */
int vfs_check_exec(const struct vfs *v, const struct vfs_caller *c, const char *path,
                   struct vfs_verdict *verdict);
/* The same, and the checked file's stat (its st_dev/st_ino name the inode allowed). */
int vfs_check_exec_file(const struct vfs *v, const struct vfs_caller *c, const char *path,
                        struct vfs_verdict *verdict, struct stat *ret_st);
int vfs_check_chdir(const struct vfs *v, const struct vfs_caller *c, const char *path,
                    struct vfs_verdict *verdict);

/* Resolve for an operation the interposer performs itself (inotify_add_watch, xattrs,
 * bind/connect of AF_UNIX sockets). want: VFS_WANT_* bits. Returns an O_PATH fd of the
 * final object (or of its parent with VFS_WANT_PARENT, the last name in ret_name). */
enum {
	VFS_WANT_READ = 1u << 0,
	VFS_WANT_WRITE = 1u << 1,
	VFS_WANT_EXEC = 1u << 2,
	VFS_WANT_CREATE = 1u << 3,
	VFS_WANT_PARENT = 1u << 4,
	VFS_WANT_NOFOLLOW = 1u << 5,
};
int vfs_resolve(const struct vfs *v, const struct vfs_caller *c, const char *path, unsigned want,
                char ret_name[NAME_MAX + 1], struct vfs_verdict *verdict);

/*
 * The VFS_WANT_* bits for a syscall table access (enum sc_access, the CSV's access
 * column): the one translation of "what the call does" into what the policy is asked.
 * how: the open flags for SC_ACCESS_OPEN (an existing object: O_PATH and plain reads
 * READ, O_TMPFILE WRITE, other writes WRITE|READ), access(2)'s mode for
 * SC_ACCESS_AMODE; ignored otherwise. A unix socket address is used as a read by
 * connect and send and created by bind. Pure; the vfs operations then relax WRITE to
 * READ on devices, fifos and sockets, which read-only mappings do not protect.
 */
unsigned vfs_want_of(enum sc_access access, uint64_t how);

/* getdents64: filter a buffer the interposer read from the tracee's directory fd
 * (dir_vpath is that directory's canonical virtual path). Removes hidden entries in
 * place and returns the new length. */
size_t vfs_filter_dirents(const struct vfs *v, const char *dir_vpath, void *buf, size_t len);
/* Whether a directory may contain hidden entries (so getdents64 needs the filter). */
bool vfs_dir_needs_filter(const struct vfs *v, const char *dir_vpath);

/* Map a host path (readlink of /proc/<pid>/cwd or fd/N) to the canonical virtual path.
 * Returns -ENOENT when it lies outside every mapping. */
int vfs_host_to_virtual(const struct vfs *v, const char *host, char *buf, size_t len);

/*
 * The path of a directory deeper than procfs prints (readlink of /proc/<pid>/cwd or
 * fd/N says ENAMETOOLONG past PATH_MAX), for a relative path the sandbox resolves from
 * it: fd is an O_PATH fd of that directory (opened through the caller's procfs link).
 * The directories below the deepest ancestor procfs can print are named by climbing ".."
 * and finding each child's name by its inode. The path is printed as procfs prints it
 * to the supervisor (the virtual path in either mode, see dir_base() in the interposer),
 * and it is only a starting point: the walk decides the policy on every component again,
 * so a rename while it climbs can make the path name another directory or none, never
 * let a rule be skipped. Returns the length (up to VFS_DEEP_MAX - 1), or -ENAMETOOLONG
 * (deeper than that), -ENOENT (unlinked, or a name not found), -errno.
 */
#define VFS_DEEP_MAX (8 * PATH_MAX)
int vfs_dir_vpath(int fd, char *buf, size_t len);

/* --- the change set ---------------------------------------------------------------- */

enum vfs_change_kind { VFS_CHANGE_CREATED, VFS_CHANGE_WRITTEN, VFS_CHANGE_DELETED,
                       VFS_CHANGE_RENAMED };
struct vfs_change {
	enum vfs_change_kind kind;
	const char *vpath;      /* where the file is now (RENAMED: the new name) */
	const char *old_vpath;  /* RENAMED only */
	bool exists;            /* still present at the end of the run */
	uint64_t size;
	uint8_t sha256[32];     /* valid when exists, a regular file and hash_skipped NULL */
	const char *hash_skipped; /* why sha256 is not known: "size", "time", "signal", "error",
	                             NULL when hashed (or not a regular file) */
};
/* Stat and hash every changed file now (call once, at the end of the run). */
int vfs_changes_foreach(struct vfs *v, int (*fn)(const struct vfs_change *ch, void *ud),
                        void *ud);
/* Bounds of that hashing: the sandbox chooses what it leaves behind (a 1 TiB sparse file
 * hashes for hours), and the run must still end. 0 = no bound. */
struct vfs_hash_limits {
	uint64_t max_size;      /* files larger than this are not hashed ("size") */
	uint64_t max_ns;        /* for all files together ("time") */
	int cancel_fd;          /* stop hashing once this fd is readable ("signal"); -1 none */
};
int vfs_changes_foreach_limited(struct vfs *v, const struct vfs_hash_limits *lim,
                                int (*fn)(const struct vfs_change *ch, void *ud), void *ud);
