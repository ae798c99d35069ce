/* SPDX-License-Identifier: MIT */
/*
 * vfs internals, shared by the files of the module only (STYLE.md §2).
 *
 * The table is a list of rules in the order they were given (seq). Mappings (bind,
 * tmpfs, file) attach a host object to a virtual path; hide and deny rules are globs
 * evaluated on every canonical prefix of a path at each call, so files created after the
 * start are covered too. After vfs_finalize() nothing here changes except the change set,
 * which has its own mutex; everything else is read concurrently by supervisor threads.
 *
 * Precedence: the mapping with the longest virtual path covering a path decides where it
 * lives and whether it is writable (same path: the later one replaced the earlier). A
 * hide/deny rule matching a prefix Q of the path blocks it, unless a mapping given after
 * the rule has its virtual path at or below Q (a later, more specific mapping wins).
 */
#pragma once

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "macros.h"
#include "vfs.h"

enum vfs__rule_kind {
	VFS__BIND,
	VFS__TMPFS,
	VFS__FILE,
	VFS__HIDE,
	VFS__DENY,
};

struct vfs__rule {
	enum vfs__rule_kind kind;
	unsigned seq;
	char *virt;        /* mappings: canonical virtual path; hide/deny: absolute glob */
	char *host;        /* bind: host source; tmpfs: backing dir; file: host file */
	char *content;     /* file with inline content (written to a host file at finalize) */
	char *size;        /* tmpfs SIZE: its backing is a tmpfs of that size (see
	                      vfs_needs_mounts()), and the JSON shows it */
	bool mounted;      /* that tmpfs is mounted on host, to unmount at vfs_free() */
	char *given;       /* tmpfs DST as given (virt becomes the host dir when unnamespaced) */
	char *desc;        /* "ro-bind /usr (policy.moat:3)", for verdicts */
	char *word, *arg;  /* as given, for the JSON */
	bool writable;
	bool is_proc;      /* host source is /proc: pid filtering and magic links apply */
	bool dead;         /* replaced by a later mapping of the same virtual path */
	int root_fd;       /* O_PATH|O_NOFOLLOW fd of host, opened at finalize; after
	                      vfs_rebase() the same mapping inside the sandbox */
	int host_fd;       /* the host fd while rebased, else -1 */
	mode_t root_type;  /* S_IFMT of root_fd's object: an inode never changes type, so
	                      the walker needs no fstat to pass through a mapping root */
	char *root_link;   /* root_type is a symlink: its target, read once (a symlink's
	                      text never changes and root_fd pins it), else NULL */
	bool root_is_link; /* host source is a symlink (e.g. /bin -> usr/bin) */
	dev_t root_dev;    /* root_fd's object (not a link's target), from finalize */
	ino_t root_ino;
	bool own_only;     /* unnamespaced /tmp, /dev/shm: the host's directory, showing only
	                      the entries the run created in it (owned.c) */
	bool system;       /* a read-only system tree ("system" directive): a "**" glob
	                      anchored above it does not reach into it (vfs__glob_latest()) */
	/* hide/deny: what a path's last component must start with, end with (or be, when
	 * tail_whole) for the glob to match it at all: a quick reject, see vfs__glob_tail() */
	const char *head, *tail;
	size_t head_len, tail_len;
	bool tail_whole;
	/* hide/deny with a "**": the length of its anchor, the literal directories before
	 * its first wildcard (0 for "/"); a glob without "**" has dstar false */
	bool dstar;
	size_t anchor_len;
};

struct vfs__change {
	enum vfs_change_kind kind;
	char *vpath;
	char *old_vpath;
	size_t next;               /* next index in vpath's hash chain, or NO_CHANGE */
};

struct vfs {
	struct vfs_proc_ops proc;
	bool has_proc_ops;

	struct vfs__rule *rules;
	size_t n_rules, cap_rules;

	/* built by vfs_finalize() */
	bool finalized;
	bool defer_sweep; /* vfs_defer_sweep(): the caller runs vfs_sweep_stale() itself */
	enum vfs_mode mode;
	struct vfs__rule **mounts; /* live mappings, sorted by virt (parents first) */
	size_t n_mounts;
	struct vfs__rule **globs;  /* hide/deny, in seq order */
	size_t n_globs;
	char **implicit;           /* unmapped ancestors of mount points, sorted */
	int *implicit_fd;          /* their O_PATH fds, pinned at vfs_finalize() (or -1) */
	size_t n_implicit;
	int root_fd;               /* host fd for "/" (skeleton or host root) */
	mode_t root_type;          /* S_IFMT of root_fd's object (see vfs__rule.root_type) */
	struct vfs__dcache *dcache; /* directories of ro mappings (dcache.c), own lock */
	int host_root_fd;          /* while rebased: the host root_fd, else -1 */
	int proc_self_fd;          /* /proc/self/fd of this process, for vfs__reopen() */
	bool rebased;              /* walking through the sandbox's own mounts */
	struct vfs__rule *root_mount;
	struct vfs__handed {       /* vfs_allow_handed_file() */
		dev_t dev;
		ino_t ino;
		int acc;
	} handed[3];
	size_t n_handed;

	char *home;
	char *cwd;                 /* supervisor cwd at vfs_new(), for relative sources */
	char *profile_cwd;         /* workspace of the default profile */
	char *chdir;               /* chdir directive */
	char *initial_cwd;
	char *private_dir;         /* host dir holding tmpfs backings, skeleton, files */
	char *skeleton;            /* namespaced: host dir standing for the unmapped tree */
	char *skeleton_dir;        /* its own private dir when on /dev/shm, else NULL; also
	                              the namespaced /dev/shm backing and inline files */
	int private_lock, skeleton_lock; /* flock()ed fds of those two (see lock_private()) */
	int made_fd, made_dir;     /* the list of mount points the keeper made on the host
	                              (vfs_note_made()) and the directory it is in, or -1 */
	char *tmpdir;              /* what the sandbox should use as TMPDIR */
	char *home_dir;            /* the private home's virtual path (the sandbox's HOME) */
	struct vfs__own **own;     /* owned.c: the run's entries in own_only mappings, by
	                              vpath hash; guarded by lock */
	unsigned n_private;
	unsigned n_shm;            /* entries made in skeleton_dir besides "root" */
	uint64_t disk_quota;       /* --disk: private_dir is a tmpfs of this size, or 0 */
	bool private_mounted;
	bool may_mount;            /* vfs_allow_mounts(): the sizes are mounted, not just checked */
	bool cow;                  /* vfs_set_cow(): the workspace is an overlay (cow.c) */
	char *cow_dir;             /* its upper and work dirs' parent when given, else private */
	char *cow_mounted;         /* the host path the overlay is mounted on, or NULL */
	int cow_lower_fd, cow_upper_fd; /* the host workspace under the overlay; the upper */
	int cow_lock;              /* flock()ed fd of cow_dir: one run at a time uses it */
	bool cow_down;             /* vfs_cow_unmount(): cow_mounted is the path it was on */

	pthread_mutex_t lock;      /* guards changes and own */
	struct vfs__change *changes;
	size_t n_changes, cap_changes;
	size_t *change_buckets;    /* vpath hash -> first index of its chain (changes.c) */
	size_t n_change_buckets;   /* a power of two, or 0: no index, find() scans */
};

/* glob.c and lookup.c: pure */
bool vfs__glob_match(const char *pat, const char *path);
bool vfs__glob_may_match_below(const char *pat, const char *dir);
bool vfs__glob_moves_with(const char *pat, const char *dir, const char *newdir);
const struct vfs__rule *vfs__mount_exact(const struct vfs *v, const char *vpath);
const struct vfs__rule *vfs__mount_covering(const struct vfs *v, const char *vpath);
bool vfs__is_implicit(const struct vfs *v, const char *vpath);
int vfs__implicit_fd(const struct vfs *v, const char *vpath);
const struct vfs__rule *vfs__glob_latest(const struct vfs *v, const char *vpath);
const struct vfs__rule *vfs__system_covering(const struct vfs *v, const char *vpath);

/* covercache.c: vfs_foreach_cover()'s records across runs. A record found is valid for
 * the directory fd (its device, inode and ctime, on a file system that keeps ctime);
 * the walk replays its children (flags: VFS__CC_DIR, VFS__CC_COVER, else gone down
 * into) and keeps it. A directory read is recorded if vfs__cc_settled(). */
#define VFS__CC_DIR 1u
#define VFS__CC_COVER 2u
struct vfs__cc_rec;
/* A growing byte buffer: failed once out of memory or past its bound. */
struct vfs__bytes {
	uint8_t *p;
	size_t len, cap;
	bool failed;
};
struct vfs__cc_pending {
	struct vfs__bytes b;    /* the children, as a record holds them */
	uint32_t n;
};
/* the record of that path, if any; vfs__cc_check(): the directory opened as fd (or -1:
 * looked at with a stat only) is the one recorded, st its stat */
const struct vfs__cc_rec *vfs__cc_lookup(const struct vfs_cover_cache *cc, const char *vdir,
					 bool cover_all);
bool vfs__cc_check(struct vfs_cover_cache *cc, const struct vfs__cc_rec *r, int fd,
		   const struct stat *st);
size_t vfs__cc_count(const struct vfs_cover_cache *cc);
uint32_t vfs__cc_entries(const struct vfs__cc_rec *r);
bool vfs__cc_leaf(const struct vfs__cc_rec *r); /* nothing to replay below it */
/* fn for each child until it returns non-zero, which is returned */
int vfs__cc_children(const struct vfs__cc_rec *r,
		     int (*fn)(void *ud, const char *name, size_t len, unsigned flags), void *ud);
void vfs__cc_keep(struct vfs_cover_cache *cc, const struct vfs__cc_rec *r);
void vfs__cc_read(struct vfs_cover_cache *cc);
bool vfs__cc_settled(struct vfs_cover_cache *cc, int fd, const struct stat *st);
void vfs__cc_pending_add(struct vfs__cc_pending *pend, const char *name, unsigned flags);
void vfs__cc_put(struct vfs_cover_cache *cc, const char *vdir, bool cover_all,
		 const struct stat *st, uint32_t n_entries, const struct vfs__cc_pending *pend);
void vfs__cc_done(struct vfs_cover_cache *cc, unsigned entries);
bool vfs__glob_reaches(const struct vfs__rule *g, const struct vfs__rule *sys);
bool vfs__rescuable(const struct vfs *v, const struct vfs__rule *block, const char *vpath);
bool vfs__hides_devices(const struct vfs__rule *m);
void vfs__verdict(struct vfs_verdict *verdict, int err, const char *rule, const char *vpath);
/* Fill a glob rule's head and tail (its last component's literal ends). */
void vfs__glob_tail(struct vfs__rule *g);
/* The module's own spelling of the path helpers it exports (vfs.h). */
static inline int vfs__normalize(const char *base, const char *path, char *buf, size_t len)
{
	return vfs_normalize(base, path, buf, len);
}
static inline bool vfs__path_under(const char *path, const char *dir)
{
	return vfs_path_under(path, dir);
}
/* The part of vpath (at or under m's virtual path) below it: "" or "/REST". */
static inline const char *vfs__below(const struct vfs__rule *m, const char *vpath)
{
	return vpath + (streq(m->virt, "/") ? 0 : strlen(m->virt));
}
/* The host path of vpath (at or under m's virtual path) in m's host tree, in buf;
 * false when it does not fit. */
static inline bool vfs__host_below(const struct vfs__rule *m, const char *vpath, char *buf,
                                   size_t len)
{
	return (size_t)snprintf(buf, len, "%s%s", streq(m->host, "/") ? "" : m->host,
	                        vfs__below(m, vpath)) < len;
}

/* store.c: the private directories, their sweep, the skeleton, the sized tmpfs mounts */
void vfs__rm_rf_at(int dfd, const char *name);
/* An fd of dfd/name holding its exclusive lock, or -errno (-EWOULDBLOCK: a run holds it). */
int vfs__lock_private(int dfd, const char *name);
void vfs__sweep_stale(const char *parent, const char *prefix, int state_fd);
void vfs__made_done(struct vfs *v);
int vfs__private_path(struct vfs *v, const char *prefix, char **ret);
int vfs__skeleton_path(struct vfs *v, char **ret);
int vfs__shm_path(struct vfs *v, const char *prefix, char **ret);
void vfs__shm_remove(const struct vfs *v);
int vfs__skel_mkdirs(const char *base, const char *rel);
void vfs__skel_remove(const struct vfs *v);
int vfs__skel_mountpoint(const char *base, const char *rel, const struct vfs__rule *m,
                         const struct stat *st);
int vfs__write_file(const char *path, const char *data, size_t n);
int vfs__mount_sized(struct vfs__rule *a);

/* dcache.c: see the safety argument at its top */
struct vfs__dcache;
struct vfs__dent;
int vfs__dcache_new(struct vfs__dcache **ret);
struct vfs__dcache *vfs__dcache_free(struct vfs__dcache *dc);
void vfs__dcache_flush(struct vfs__dcache *dc);
/* A pinned entry for vpath, or NULL. Revalidate (vfs__dent_same) before use. */
struct vfs__dent *vfs__dcache_get(struct vfs__dcache *dc, const char *vpath, size_t vlen);
/* Give fd (an O_PATH fd of the directory st describes) to the cache; returns it pinned,
 * or NULL (fd still the caller's) when out of memory. */
struct vfs__dent *vfs__dcache_put(struct vfs__dcache *dc, const char *vpath, size_t vlen,
                                  int fd, const struct stat *st);
/* Unpin; stale also drops it from the table. */
void vfs__dcache_release(struct vfs__dcache *dc, struct vfs__dent *e, bool stale);
int vfs__dent_fd(const struct vfs__dent *e);
bool vfs__dent_same(const struct vfs__dent *e, const struct stat *st);

/* a getdents64 record (changes.c filters them, deep.c reads them) */
struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* walk.c */
enum {
	VFS__NOFOLLOW = 1u << 0, /* do not follow a symlink in the last component */
	VFS__STATONLY = 1u << 1, /* the caller needs the last object's stat, not an fd of it:
	                            w->fd may stay -1 although w->exists (w->dirfd and
	                            w->hname name it) */
	VFS__CREATE = 1u << 2,   /* the walk is for a name to create (mkdir, mknod, symlink,
	                            link's or rename's new name, O_CREAT): a hidden name, or
	                            one under a hidden directory, says EACCES, not ENOENT */
	VFS__NOMAGIC = 1u << 3,  /* a magic link is ELOOP (the walk that checks one's text) */
	VFS__NAMEOP = 1u << 4,   /* the operation acts on the last name itself (mkdir, mknod,
	                            symlink, link's new name, unlink, rmdir, rename, O_CREAT):
	                            as the kernel's parent lookups, a trailing slash neither
	                            follows a symlink there nor refuses a non-directory; the
	                            operation answers it (w->must_dir) */
};

/* A virtual path longer than PATH_MAX (a directory the caller reached by relative steps,
 * named from its cwd or a dirfd: vfs_dir_vpath()) is walked too, up to this length, in
 * buffers the walk allocates for that case only; past it the walk says ENAMETOOLONG. */
#define VFS__LONG_MAX VFS_DEEP_MAX

struct vfs__walk {
	char *vpath;                /* canonical virtual path of the last component: vbuf, or
	                               long_buf when it may grow past PATH_MAX */
	size_t vlen, vcap;          /* its length and the room it has */
	char vbuf[PATH_MAX];
	char *long_buf;             /* heap, a long walk only: vpath, a component's path and
	                               the rest of the path to walk (freed by vfs__walk_done()) */
	int dirfd;                  /* O_PATH fd of the directory holding it (-1 for a mount root) */
	bool dirfd_owned;
	struct vfs__dent *dirfd_ent; /* dirfd is this cache entry's (pinned), not ours */
	int fd;                     /* O_PATH fd of the object itself (-1 when it does not exist) */
	bool fd_owned;
	struct vfs__dent *fd_ent;
	struct vfs__dcache *dc;     /* where fd_ent / dirfd_ent go back to */
	char hname[NAME_MAX + 1];   /* last component as the host names it (in dirfd) */
	const struct vfs__rule *mount;  /* mapping covering vpath (NULL: an implicit directory) */
	const struct vfs__rule *pmount; /* mapping covering the parent directory */
	bool mount_root;            /* vpath is the root of a mapping */
	bool exists;
	bool must_dir;              /* the path had a trailing slash */
	bool dot_last;              /* the path ended in "." or ".." */
	struct stat st;             /* of the object, when it exists (complete once vfs__walk()
	                               returns; during the walk only the S_IFMT bits may be) */
	bool st_full;               /* st is a real stat, not just the file type */
	bool raced;                 /* VFS__STATONLY met a name changing under it: walk again */
	const struct vfs__rule *block; /* hide/deny rule in force */
	bool own_object;            /* ended on the caller's own memfd: no rule applies */
	int handed_acc;             /* ended on a file handed in from outside the view
	                               (vfs_allow_handed_file()): that fd's O_ACCMODE + 1 */
	int proc_depth;             /* components below a /proc mapping's root, -1 outside */
	bool proc_task;             /* inside /proc/<pid>/task */
	char synth[32];             /* target of a synthetic /proc/self link ("" when none) */
	const char *root;           /* RESOLVE_IN_ROOT: virtual root of the walk */
	uint64_t resolve;
};

int vfs__walk(const struct vfs *v, const struct vfs_caller *c, const char *path, unsigned flags,
              uint64_t resolve, struct vfs__walk *w, struct vfs_verdict *verdict);
void vfs__walk_done(struct vfs__walk *w);
int vfs__walk_policy(const struct vfs *v, struct vfs__walk *w, unsigned want,
                     struct vfs_verdict *verdict);
int vfs__reopen(const struct vfs *v, int fd, int flags);

/* owned.c */
struct vfs__own;
bool vfs__own_root(const struct vfs *v, const char *dir_vpath);
/* uid (uid_t)-1: not known (a directory entry), not checked */
bool vfs__own_visible(const struct vfs *v, const char *vpath, ino_t ino, uid_t uid);
void vfs__own_note(const struct vfs *v, enum vfs_change_kind kind, const char *vpath,
                   const char *old_vpath);
void vfs__own_pending(const struct vfs *v, const char *vpath);
void vfs__own_done(struct vfs *v, void (*rm_rf_at)(int dfd, const char *name));

/* cow.c: mount the overlay on the workspace (at vfs_finalize(), once the private dir
 * exists and before the mappings' fds are opened); take it down at vfs_free(). */
int vfs__cow_mount(struct vfs *v, struct moat_error *e);
void vfs__cow_done(struct vfs *v);

/* changes.c */
void vfs__change_note(const struct vfs *v, enum vfs_change_kind kind, const char *vpath,
                      const char *old_vpath);
void vfs__changes_done(struct vfs *v);
