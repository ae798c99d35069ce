/* SPDX-License-Identifier: MIT */
/*
 * The emulated path syscalls. Each one walks the path, applies the policy to the
 * canonical virtual path, then acts on the host relative to the walked fds: on the
 * object's own O_PATH fd, or on the parent's fd plus the last name with no following,
 * so that a symlink swapped in after the walk cannot redirect the operation.
 *
 * Error order follows the kernel where it matters to programs: ENOENT for what is
 * hidden, then EEXIST/ENOTDIR/EISDIR from the namespace, then EROFS, then EACCES.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cleanup.h"
#include "macros.h"
#include "vfs-internal.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
#ifndef RENAME_WHITEOUT
#define RENAME_WHITEOUT (1 << 2)
#endif
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452 /* Linux 6.6, the one number of every architecture */
#endif

#define _cleanup_walk_ _cleanup_(vfs__walk_done)

/* The mapping that holds the directory entry (not the object, for a mount root). */
static const struct vfs__rule *entry_mount(const struct vfs__walk *w)
{
	return w->mount_root ? w->pmount : w->mount;
}

/* procfs looks every name up itself and makes none: a create of a name it does not
 * have fails in the lookup (ENOENT), before the mount's writability is asked. */
static bool proc_no_such_name(const struct vfs__walk *w)
{
	const struct vfs__rule *m = entry_mount(w);

	return !w->exists && m && m->is_proc;
}

/* The mount of the directory the kernel looks the last name up in: for "." or ".."
 * (no name) that directory is the object itself. */
static const struct vfs__rule *parent_mount(const struct vfs__walk *w)
{
	return w->dot_last ? w->mount : entry_mount(w);
}

static void proc_fd_path(char *buf, size_t len, int fd)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

static int ret_err(struct vfs_verdict *verdict, int err)
{
	if (verdict && err < 0)
		verdict->err = -err;
	return err;
}

/* Walk to an object that must exist: the prologue of every operation on one. */
static int walk_existing(const struct vfs *v, const struct vfs_caller *c, const char *path,
                         unsigned flags, uint64_t resolve, struct vfs__walk *w,
                         struct vfs_verdict *verdict)
{
	int r = vfs__walk(v, c, path, flags, resolve, w, verdict);

	if (r < 0)
		return ret_err(verdict, r);
	if (!w->exists)
		return ret_err(verdict, -ENOENT);
	return 0;
}

/* Walk to a name that must not exist yet, in a place the policy lets us create in: the
 * prologue of mkdir (dir), mknod, symlink and link's new name. As the kernel's
 * filename_create(): whatever is at the name, a symlink too, is EEXIST; a trailing slash
 * on a name that does not exist asks for a directory, which only mkdir makes (ENOENT). */
static int walk_new_entry(const struct vfs *v, const struct vfs_caller *c, const char *path,
                          bool dir, struct vfs__walk *w, struct vfs_verdict *verdict)
{
	int r = vfs__walk(v, c, path, VFS__NOFOLLOW | VFS__CREATE | VFS__NAMEOP, 0, w, verdict);

	if (r < 0)
		return ret_err(verdict, r);
	if (w->exists || w->dot_last || w->dirfd < 0)
		return ret_err(verdict, -EEXIST);
	if ((w->must_dir && !dir) || proc_no_such_name(w))
		return ret_err(verdict, -ENOENT);
	return vfs__walk_policy(v, w, VFS_WANT_CREATE, verdict);
}

/* Kernel rule (may_open): only regular files and directories care about a read-only
 * mount; a device node or FIFO on it can still be opened for writing. */
static bool ro_applies(mode_t m)
{
	return !(S_ISCHR(m) || S_ISBLK(m) || S_ISFIFO(m) || S_ISSOCK(m));
}

/* A write to an object a read-only mapping does not protect is decided as a use. */
static unsigned ro_relax(unsigned want, mode_t m)
{
	if ((want & VFS_WANT_WRITE) && !ro_applies(m))
		return (want & ~VFS_WANT_WRITE) | VFS_WANT_READ;
	return want;
}

/* /dev/ptmx (char 5:2) finds its devpts instance as "pts" beside itself, in the same
 * mount (the kernel's devpts_acquire()). A --bind /dev/ptmx is a mount of that one file,
 * with no beside: rebased into the sandbox's tree, ptmx would fail with ENOENT. So a mapped
 * ptmx is opened through the host's own /dev, the fd from before vfs_rebase(); its ptys
 * are the host devpts's, which a --bind /dev/pts shows the sandbox. */
static int open_source(const struct vfs__walk *w)
{
	if (S_ISCHR(w->st.st_mode) && w->st.st_rdev == makedev(5, 2) && w->mount_root &&
	    w->mount && w->fd == w->mount->root_fd && w->mount->host_fd >= 0)
		return w->mount->host_fd;
	return w->fd;
}

/*
 * /dev/tty is "the caller's controlling terminal", but the supervisor opens it: as is,
 * that would be the supervisor's terminal, handed to a command that was started in a new
 * session precisely to have none (it could read what you type, or write fake prompts,
 * even with its stdio redirected). So it is opened the way the kernel would for the
 * caller: ENXIO without a controlling terminal; the supervisor's terminal only when it is
 * the caller's too (--tty); a pty the sandbox made its own through /dev/pts/N, subject to
 * the policy like any path. Returns 0 to open w's object, -errno, or an fd.
 */
static int open_ctty(const struct vfs *v, const struct vfs_caller *c, const struct vfs__walk *w,
                     int flags, mode_t mode, struct vfs_verdict *verdict)
{
	dev_t want, mine;
	char pts[32];

	if (!S_ISCHR(w->st.st_mode) || w->st.st_rdev != makedev(5, 0) || !v->has_proc_ops ||
	    !v->proc.ctty_of)
		return 0;
	want = v->proc.ctty_of(v->proc.userdata, c->pid);
	if (want == 0 || want == (dev_t)-1) {
		vfs__verdict(verdict, -ENXIO, "/dev/tty: the caller has no controlling terminal",
		             w->vpath);
		return -ENXIO;
	}
	mine = v->proc.ctty_of(v->proc.userdata, getpid());
	if (want == mine)
		return 0;
	if (major(want) >= 136 && major(want) <= 143) { /* UNIX98_PTY_SLAVE_MAJOR.. */
		snprintf(pts, sizeof(pts), "/dev/pts/%u", (major(want) - 136) * 256 + minor(want));
		return vfs_open(v, c, pts, flags, mode, 0, verdict);
	}
	vfs__verdict(verdict, -ENXIO, "/dev/tty: the caller's terminal is not in the view",
	             w->vpath);
	return -ENXIO;
}

/*
 * O_PATH. seccomp's ADDFD cannot install an O_PATH file in the caller (the kernel's fget()
 * refuses them, EBADF), so the caller gets an ordinary read-only fd on the same object:
 * the same for fstat, fchdir, *at() and AT_EMPTY_PATH calls, and readable as the policy's
 * read permission (which it is checked for) allows. Only directories and regular files
 * can be opened so without side effects (a FIFO's writer would wake, a device would
 * act); O_PATH of anything else, a symlink included, is refused.
 */
static int opath_refused(const struct vfs__walk *w, struct vfs_verdict *verdict)
{
	vfs__verdict(verdict, -EOPNOTSUPP,
	             "O_PATH of a symlink, FIFO, socket or device: seccomp cannot hand it over",
	             w->vpath);
	return -EOPNOTSUPP;
}

/*
 * Opening a FIFO for reading only or writing only waits for the other end, and the
 * supervisor must never wait for the sandbox. A writer is tried without waiting first
 * (a reader is there: done, and O_NONBLOCK, which the program did not ask for, is cleared
 * on the file description it will share). A reader, or a writer with no reader yet, gets
 * a copy of the FIFO's O_PATH fd instead, for the caller to open through
 * /proc/self/fd/N where waiting is harmless: the fd pins the very FIFO that was decided
 * on, so a path swapped in the meantime changes nothing. Returns 0 when the open does not wait (open it now), an
 * fd, or -errno.
 */
static int open_fifo_nowait(const struct vfs *v, const struct vfs__walk *w, int flags,
                            bool *ret_wait, struct vfs_verdict *verdict)
{
	int fd, fl;

	if (!ret_wait || !S_ISFIFO(w->st.st_mode) || (flags & (O_NONBLOCK | O_PATH)) ||
	    (flags & O_ACCMODE) == O_RDWR)
		return 0;
	if ((flags & O_ACCMODE) == O_WRONLY) {
		fd = vfs__reopen(v, w->fd, flags | O_NONBLOCK);
		if (fd >= 0) {
			fl = fcntl(fd, F_GETFL);
			if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
				fl = negative_errno();
				close(fd);
				return ret_err(verdict, fl);
			}
			return fd;
		}
		if (fd != -ENXIO)
			return ret_err(verdict, fd);
	}
	fd = fcntl(w->fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return ret_err(verdict, negative_errno());
	*ret_wait = true;
	return fd;
}

/*
 * A file the sandbox creates never carries S_ISUID or S_ISGID: it runs as root's uid
 * when root starts moat, and an empty set-id file left in a shared tree becomes a set-id
 * program on the host as soon as a host root process writes into it (cp keeps the mode,
 * CAP_FSETID keeps the bits). The filter sends native creates asking for them here. A
 * chmod of a file it owns drops them too (vfs_chmod_mode()), or they would come back
 * one call later.
 */
#define CREATE_MODE_MASK ((mode_t) ~(S_ISUID | S_ISGID))

/* decide_only: stop once the policy allowed it, answering VFS_OPEN_KERNEL for a regular
 * file or a directory (vfs_open_decide()); other objects go on to be opened. A decision
 * needs the last object's type, not an fd of it (the kernel opens it after the
 * CONTINUE, by the caller's path): so its walk is VFS__STATONLY, one fstatat() of the
 * name in the parent instead of an O_PATH open, an fstat() and a close(). */
static int open_once(const struct vfs *v, const struct vfs_caller *c, const char *path,
                     int flags, mode_t mode, uint64_t resolve, struct vfs_verdict *verdict,
                     bool *ret_retry, bool *ret_wait, bool decide_only)
{
	_cleanup_walk_ struct vfs__walk w = { .dirfd = -1, .fd = -1 };
	int acc, r, fd;
	unsigned wflags;
	bool tmpfile, writes, nofollow;

	if (flags & O_PATH) /* the kernel ignores the rest (open, openat) */
		flags &= O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	acc = flags & O_ACCMODE;
	tmpfile = (flags & O_TMPFILE) == O_TMPFILE;
	writes = acc != O_RDONLY || (flags & O_TRUNC) || tmpfile;
	nofollow = (flags & O_NOFOLLOW) || ((flags & O_CREAT) && (flags & O_EXCL));

	*ret_retry = false;
	if (verdict)
		verdict->creates = false;
	/* build_open_flags(), before any lookup: O_TMPFILE's own bit comes with O_DIRECTORY
	 * (glibc's __O_TMPFILE holds both), without O_CREAT, and for writing */
	if ((flags & O_TMPFILE & ~O_DIRECTORY) &&
	    ((flags & (O_TMPFILE | O_CREAT)) != O_TMPFILE || acc == O_RDONLY))
		return ret_err(verdict, -EINVAL);
	wflags = (nofollow ? VFS__NOFOLLOW : 0) | (decide_only ? VFS__STATONLY : 0) |
	         ((flags & O_CREAT) ? VFS__CREATE | VFS__NAMEOP : 0);
	r = vfs__walk(v, c, path, wflags, resolve, &w, verdict);
	if (r < 0)
		return ret_err(verdict, r);
	/* O_CREAT and "name/": the kernel looks no further than the parent */
	if ((flags & O_CREAT) && w.must_dir)
		return ret_err(verdict, -EISDIR);

	if (!w.exists) {
		if (!(flags & O_CREAT) || tmpfile || proc_no_such_name(&w))
			return ret_err(verdict, -ENOENT);
		r = vfs__walk_policy(v, &w, VFS_WANT_CREATE, verdict);
		if (r < 0)
			return r;
		if (decide_only) { /* the kernel creates it (vfs_open_decide_write()) */
			if (verdict)
				verdict->creates = true;
			vfs__change_note(v, VFS_CHANGE_CREATED, w.vpath, NULL);
			return VFS_OPEN_KERNEL;
		}
		/* O_EXCL always: if a name appeared since the walk (maybe a symlink), walk
		 * again rather than open whatever it is */
		fd = openat(w.dirfd, w.hname,
		            (flags & ~O_NOFOLLOW) | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		            mode & CREATE_MODE_MASK);
		if (fd < 0) {
			if (errno == EEXIST && !(flags & O_EXCL))
				*ret_retry = true;
			return ret_err(verdict, negative_errno());
		}
		vfs__change_note(v, VFS_CHANGE_CREATED, w.vpath, NULL);
		return fd;
	}

	if ((flags & O_CREAT) && (flags & O_EXCL))
		return ret_err(verdict, -EEXIST);
	/* only reached with O_NOFOLLOW: open(2) fails unless O_PATH asks for the link */
	if (S_ISLNK(w.st.st_mode) && !(flags & O_PATH))
		return ret_err(verdict, -ELOOP);
	if ((flags & O_DIRECTORY) && !S_ISDIR(w.st.st_mode))
		return ret_err(verdict, -ENOTDIR);
	if (S_ISDIR(w.st.st_mode) && (acc != O_RDONLY || (flags & O_TRUNC)) && !tmpfile)
		return ret_err(verdict, -EISDIR);
	/* the kernel's own O_PATH open of any object has no side effects (decide_only) */
	if ((flags & O_PATH) && !decide_only && !S_ISDIR(w.st.st_mode) && !S_ISREG(w.st.st_mode))
		return opath_refused(&w, verdict);
	r = vfs__walk_policy(v, &w, ro_relax(vfs_want_of(SC_ACCESS_OPEN, (unsigned)flags), w.st.st_mode),
	                     verdict);
	if (r < 0)
		return r;
	/* a file handed in reopens for what its fd does, as Landlock's rule for it says */
	if (w.handed_acc && w.handed_acc - 1 != O_RDWR &&
	    (acc != w.handed_acc - 1 || (acc == O_RDONLY && (flags & O_TRUNC)))) {
		vfs__verdict(verdict, -EACCES, "a file handed in from outside the view, beyond "
		             "its fd's access mode", w.vpath);
		return -EACCES;
	}
	if (decide_only && !(flags & O_PATH) && !S_ISREG(w.st.st_mode) && !S_ISDIR(w.st.st_mode))
		return VFS_OPEN_SUPERVISOR;
	if (decide_only) {
		/* the note vfs_open_nowait() leaves below, for the open the kernel makes */
		if (writes && S_ISREG(w.st.st_mode) && w.st.st_nlink > 0 && !w.own_object &&
		    !w.handed_acc)
			vfs__change_note(v, VFS_CHANGE_WRITTEN, w.vpath, NULL);
		return VFS_OPEN_KERNEL;
	}
	if (!(flags & O_PATH) && (r = open_ctty(v, c, &w, flags, mode, verdict)) != 0)
		return r;
	if ((r = open_fifo_nowait(v, &w, flags, ret_wait, verdict)) != 0)
		return r;
	if (flags & O_PATH)
		fd = vfs__reopen(v, w.fd, O_RDONLY | (S_ISDIR(w.st.st_mode) ? O_DIRECTORY : 0));
	else if (tmpfile)
		/* in the directory itself ("." of its fd: no name to swap), with the mode the
		 * program gave (a reopen through /proc would take none); O_EXCL kept: with
		 * O_TMPFILE it means the file may never get a name (linkat refuses it) */
		fd = RET_NERRNO(openat(w.fd, ".", (flags & ~(O_CREAT | O_NOFOLLOW)) | O_CLOEXEC,
		                       mode & CREATE_MODE_MASK));
	else
		fd = vfs__reopen(v, open_source(&w), flags);
	if (fd < 0)
		return ret_err(verdict, fd);
	/* a memfd or an unlinked file (reopened through /proc/self/fd) leaves nothing */
	if (writes && !tmpfile && S_ISREG(w.st.st_mode) && w.st.st_nlink > 0 && !w.own_object &&
		    !w.handed_acc)
		vfs__change_note(v, VFS_CHANGE_WRITTEN, w.vpath, NULL);
	return fd;
}

_public_ int vfs_open_nowait(const struct vfs *v, const struct vfs_caller *c, const char *path,
                             int flags, mode_t mode, uint64_t resolve, bool *ret_wait,
                             struct vfs_verdict *verdict)
{
	bool retry;
	int r;

	if (ret_wait)
		*ret_wait = false;
	/* a racing creator can make O_CREAT without O_EXCL meet an existing name; the
	 * kernel retries the lookup too (in open_last_lookups) */
	for (int i = 0; i < 4; i++) {
		r = open_once(v, c, path, flags, mode, resolve, verdict, &retry, ret_wait, false);
		if (!retry)
			return r;
	}
	return r;
}

_public_ int vfs_open_decide(const struct vfs *v, const struct vfs_caller *c, const char *path,
                             int flags, struct vfs_verdict *verdict)
{
	bool retry;

	if (!(flags & O_PATH) && ((flags & O_ACCMODE) != O_RDONLY ||
	                          (flags & (O_CREAT | O_TRUNC)) || (flags & O_TMPFILE) == O_TMPFILE))
		return VFS_OPEN_SUPERVISOR;
	return open_once(v, c, path, flags, 0, 0, verdict, &retry, NULL, true);
}

_public_ int vfs_open_decide_write(const struct vfs *v, const struct vfs_caller *c,
                                   const char *path, int flags, struct vfs_verdict *verdict)
{
	bool retry;

	if (flags & O_PATH) /* writes nothing, whatever else is set */
		return vfs_open_decide(v, c, path, flags, verdict);
	if ((flags & O_TMPFILE) == O_TMPFILE)
		return VFS_OPEN_SUPERVISOR;
	return open_once(v, c, path, flags, 0, 0, verdict, &retry, NULL, true);
}

_public_ int vfs_open(const struct vfs *v, const struct vfs_caller *c, const char *path, int flags,
                      mode_t mode, uint64_t resolve, struct vfs_verdict *verdict)
{
	return vfs_open_nowait(v, c, path, flags, mode, resolve, NULL, verdict);
}

/* The walk's own stat of the last object is the answer: taken on the object's O_PATH fd,
 * or with VFS__STATONLY by fstatat(parent, name, AT_SYMLINK_NOFOLLOW), which is what
 * that fd would have been opened on; a followed symlink was resolved by the walk. */
_public_ int vfs_stat(const struct vfs *v, const struct vfs_caller *c, const char *path, int flags,
                      struct stat *ret_st, struct vfs_verdict *verdict)
{
	_cleanup_walk_ struct vfs__walk w = { .dirfd = -1, .fd = -1 };
	int r;

	r = vfs__walk(v, c, path,
	              ((flags & AT_SYMLINK_NOFOLLOW) ? VFS__NOFOLLOW : 0) | VFS__STATONLY, 0, &w,
	              verdict);
	if (r < 0)
		return ret_err(verdict, r);
	if (!w.exists)
		return ret_err(verdict, -ENOENT);
	r = vfs__walk_policy(v, &w, 0, verdict);
	if (r < 0)
		return r;
	*ret_st = w.st;
	return 0;
}

static int statx_once(const struct vfs *v, const struct vfs_caller *c, const char *path,
                      int flags, unsigned mask, unsigned wflags, struct statx *ret_stx,
                      struct vfs_verdict *verdict)
{
	_cleanup_walk_ struct vfs__walk w = { .dirfd = -1, .fd = -1 };
	int r;

	r = vfs__walk(v, c, path, ((flags & AT_SYMLINK_NOFOLLOW) ? VFS__NOFOLLOW : 0) | wflags, 0,
	              &w, verdict);
	if (r < 0)
		return ret_err(verdict, r);
	if (!w.exists)
		return ret_err(verdict, -ENOENT);
	r = vfs__walk_policy(v, &w, 0, verdict);
	if (r < 0)
		return r;
	if (w.fd >= 0)
		r = statx(w.fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW |
		          (flags & AT_STATX_SYNC_TYPE), mask, ret_stx);
	else
		r = statx(w.dirfd, w.hname, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT |
		          (flags & AT_STATX_SYNC_TYPE), mask, ret_stx);
	if (r < 0)
		return ret_err(verdict, negative_errno());
	/* by name, the entry may have changed since the walk stat'ed it (even into a
	 * symlink, which a following statx never returns): then do it on an fd */
	if (w.fd < 0 && (ret_stx->stx_mask & STATX_TYPE) &&
	    (ret_stx->stx_mode & S_IFMT) != (w.st.st_mode & S_IFMT))
		return -EAGAIN;
	return 0;
}

_public_ int vfs_statx(const struct vfs *v, const struct vfs_caller *c, const char *path,
                       int flags, unsigned mask, struct statx *ret_stx,
                       struct vfs_verdict *verdict)
{
	int r = statx_once(v, c, path, flags, mask, VFS__STATONLY, ret_stx, verdict);

	if (r == -EAGAIN)
		r = statx_once(v, c, path, flags, mask, 0, ret_stx, verdict);
	return r;
}

_public_ int vfs_statfs(const struct vfs *v, const struct vfs_caller *c, const char *path,
                        struct statfs *ret, struct vfs_verdict *verdict)
{
	_cleanup_walk_ struct vfs__walk w = { .dirfd = -1, .fd = -1 };
	int r;

	r = walk_existing(v, c, path, 0, 0, &w, verdict);
	if (r < 0)
		return r;
	r = vfs__walk_policy(v, &w, VFS_WANT_READ, verdict);
	if (r < 0)
		return r;
	return ret_err(verdict, fstatfs(w.fd, ret) < 0 ? negative_errno() : 0);
}

/*
 * The permission bits are checked with the supervisor's credentials on the object (the
 * caller's uid is not known here); the view's rules come first: EROFS for W_OK on a
 * read-only mapping, as access(2) on a read-only mount.
 */
_public_ int vfs_access(const struct vfs *v, const struct vfs_caller *c, const char *path, int mode,
                        int flags, struct vfs_verdict *verdict)
{
	_cleanup_walk_ struct vfs__walk w = { .dirfd = -1, .fd = -1 };
	char p[64];
	unsigned want;
	int r;

	if (mode & ~(R_OK | W_OK | X_OK))
		return ret_err(verdict, -EINVAL);
	r = vfs__walk(v, c, path, (flags & AT_SYMLINK_NOFOLLOW) ? VFS__NOFOLLOW : 0, 0, &w,
	              verdict);
	if (r < 0)
		return ret_err(verdict, r);
	if (!w.exists)
		return ret_err(verdict, -ENOENT);
	want = ro_relax(vfs_want_of(SC_ACCESS_AMODE, (unsigned)mode), w.st.st_mode);
	r = vfs__walk_policy(v, &w, want, verdict);
	if (r < 0 || mode == F_OK || S_ISLNK(w.st.st_mode))
		return r;
	proc_fd_path(p, sizeof(p), w.fd);
	return ret_err(verdict, faccessat(AT_FDCWD, p, mode, AT_EACCESS) < 0 ? negative_errno() : 0);
}

_public_ int vfs_readlink(const struct vfs *v, const struct vfs_caller *c, const char *path,
                          char *buf, size_t len, struct vfs_verdict *verdict)
{
	_cleanup_walk_ struct vfs__walk w = { .dirfd = -1, .fd = -1 };
	ssize_t n;
	int r;

	if (len == 0 || len > INT_MAX)
		return ret_err(verdict, -EINVAL);
	r = walk_existing(v, c, path, VFS__NOFOLLOW, 0, &w, verdict);
	if (r < 0)
		return r;
	r = vfs__walk_policy(v, &w, 0, verdict);
	if (r < 0)
		return r;
	if (!S_ISLNK(w.st.st_mode))
		return ret_err(verdict, -EINVAL);
	if (w.synth[0]) {
		n = MIN(strlen(w.synth), len);
		memcpy(buf, w.synth, n);
		return n;
	}
	/* Magic links under /proc/<pid>/ read as the object's path from the sandbox's root
	 * (see link_target() in walk.c), which is the virtual path already. */
	n = readlinkat(w.fd, "", buf, len);
	return ret_err(verdict, n < 0 ? negative_errno() : (int)n);
}

_public_ int vfs_check_exec_file(const struct vfs *v, const struct vfs_caller *c,
                                 const char *path, struct vfs_verdict *verdict,
                                 struct stat *ret_st)
{
	_cleanup_walk_ struct vfs__walk w = { .dirfd = -1, .fd = -1 };
	char p[64];
	int r;

	r = walk_existing(v, c, path, 0, 0, &w, verdict);
	if (r < 0)
		return r;
	r = vfs__walk_policy(v, &w, VFS_WANT_EXEC, verdict);
	if (r < 0)
		return r;
	if (!S_ISREG(w.st.st_mode))
		return ret_err(verdict, -EACCES);
	proc_fd_path(p, sizeof(p), w.fd);
	if (faccessat(AT_FDCWD, p, X_OK, AT_EACCESS) < 0)
		return ret_err(verdict, -EACCES);
	/* the very inode checked, for comparing with what the kernel then executes */
	if (ret_st && fstat(w.fd, ret_st) < 0)
		return ret_err(verdict, negative_errno());
	return 0;
}

_public_ int vfs_check_exec(const struct vfs *v, const struct vfs_caller *c, const char *path,
                            struct vfs_verdict *verdict)
{
	return vfs_check_exec_file(v, c, path, verdict, NULL);
}

_public_ int vfs_check_chdir(const struct vfs *v, const struct vfs_caller *c, const char *path,
                             struct vfs_verdict *verdict)
{
	_cleanup_walk_ struct vfs__walk w = { .dirfd = -1, .fd = -1 };
	char p[64];
	int r;

	r = walk_existing(v, c, path, 0, 0, &w, verdict);
	if (r < 0)
		return r;
	if (!S_ISDIR(w.st.st_mode))
		return ret_err(verdict, -ENOTDIR);
	r = vfs__walk_policy(v, &w, VFS_WANT_EXEC, verdict);
	if (r < 0)
		return r;
	proc_fd_path(p, sizeof(p), w.fd);
	return ret_err(verdict, faccessat(AT_FDCWD, p, X_OK, AT_EACCESS) < 0 ? -EACCES : 0);
}

/* --- entry operations ---------------------------------------------------------------- */

_public_ int vfs_mkdir(const struct vfs *v, const struct vfs_caller *c, const char *path,
                       mode_t mode, struct vfs_verdict *verdict)
{
	_cleanup_walk_ struct vfs__walk w = { .dirfd = -1, .fd = -1 };
	int r;

	r = walk_new_entry(v, c, path, true, &w, verdict);
	if (r < 0)
		return r;
	if (mkdirat(w.dirfd, w.hname, mode) < 0)
		return ret_err(verdict, negative_errno());
	vfs__change_note(v, VFS_CHANGE_CREATED, w.vpath, NULL);
	return 0;
}

_public_ int vfs_mkdir_decide(const struct vfs *v, const struct vfs_caller *c, const char *path,
                              struct vfs_verdict *verdict)
{
	_cleanup_walk_ struct vfs__walk w = { .dirfd = -1, .fd = -1 };
	int r;

	r = walk_new_entry(v, c, path, true, &w, verdict);
	if (r < 0)
		return r;
	vfs__change_note(v, VFS_CHANGE_CREATED, w.vpath, NULL);
	return 0;
}

_public_ int vfs_mknod(const struct vfs *v, const struct vfs_caller *c, const char *path,
                       mode_t mode, dev_t dev, struct vfs_verdict *verdict)
{
	_cleanup_walk_ struct vfs__walk w = { .dirfd = -1, .fd = -1 };
	mode_t type = mode & S_IFMT;
	int r;

	/* device nodes would be a way around every mapping: never */
	if (type == S_IFCHR || type == S_IFBLK) {
		vfs__verdict(verdict, -EPERM, "mknod: device nodes are not allowed", path);
		return -EPERM;
	}
	if (type != 0 && type != S_IFREG && type != S_IFIFO && type != S_IFSOCK)
		return ret_err(verdict, -EINVAL);
	r = walk_new_entry(v, c, path, false, &w, verdict);
	if (r < 0)
		return r;
	if (mknodat(w.dirfd, w.hname, mode & CREATE_MODE_MASK, 0) < 0)
		return ret_err(verdict, negative_errno());
	vfs__change_note(v, VFS_CHANGE_CREATED, w.vpath, NULL);
	return 0;
}

/*
 * What a directory's entries say of its removal: 0 when it has none, ENOTEMPTY when one
 * shows in the view, and EACCES, naming the rule that hides the first, when every one is
 * hidden: such a directory lists empty wherever the view leaves hidden names out
 * (--strict-hide, unnamespaced, every emulated lookup), and ENOTEMPTY would tell that
 * something is there, so its removal is refused as a place the caller may not change is
 * refused, and nothing is removed. A failed reopen gives its errno; a read that fails
 * midway ends the listing there (entries seen until then count; none seen, none), and
 * the kernel's own removal then answers for the rest.
 */
static int entries_errno(const struct vfs *v, const struct vfs__walk *w,
                         struct vfs_verdict *verdict)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct linux_dirent64))));
	char first[NAME_MAX + 1] = "", p[PATH_MAX];
	const struct vfs__rule *ex, *h;
	bool visible = false;
	long n;
	int fd = vfs__reopen(v, w->fd, O_RDONLY | O_DIRECTORY);

	if (fd < 0)
		return fd;
	while (!visible && (n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		size_t kept;

		for (long off = 0; off < n && !first[0];) {
			const struct linux_dirent64 *d = (const void *)(buf + off);

			if (!streq(d->d_name, ".") && !streq(d->d_name, ".."))
				str_copy(first, sizeof(first), d->d_name);
			off += d->d_reclen;
		}
		kept = vfs_filter_dirents(v, w->vpath, buf, (size_t)n);
		for (size_t off = 0; off < kept && !visible;) {
			const struct linux_dirent64 *d = (const void *)(buf + off);

			visible = !streq(d->d_name, ".") && !streq(d->d_name, "..");
			off += d->d_reclen;
		}
	}
	close(fd);
	if (!first[0])
		return 0;
	if (visible ||
	    (size_t)snprintf(p, sizeof(p), "%s/%s", streq(w->vpath, "/") ? "" : w->vpath, first) >=
	            sizeof(p))
		return -ENOTEMPTY;
	ex = vfs__mount_exact(v, p);
	h = vfs__glob_latest(v, p);
	vfs__verdict(verdict, -EACCES,
	             ex && ex->kind == VFS__HIDE ? ex->desc : h ? h->desc : "its entries are hidden",
	             w->vpath);
	return -EACCES;
}

/* A removal the kernel is to make, decided here: the errors it would give on the walk's
 * object that no rule gives (a directory unlinked, a file rmdir'ed, a directory with
 * entries: entries_errno()), so that the change set is not told of a removal that fails.
 * A directory filled after this check fails in the kernel after all, and stays in the
 * change set as removed: only the run's own race does that. */
static int removal_errno(const struct vfs *v, const struct vfs__walk *w, int flags,
                         struct vfs_verdict *verdict)
{
	if (!(flags & AT_REMOVEDIR))
		return S_ISDIR(w->st.st_mode) ? -EISDIR : 0;
	if (!S_ISDIR(w->st.st_mode))
		return -ENOTDIR;
	return entries_errno(v, w, verdict);
}

static int unlink_once(const struct vfs *v, const struct vfs_caller *c, const char *path,
                       int flags, struct vfs_verdict *verdict, bool decide_only)
{
	_cleanup_walk_ struct vfs__walk w = { .dirfd = -1, .fd = -1 };
	int r;

	if (flags & ~AT_REMOVEDIR)
		return ret_err(verdict, -EINVAL);
	r = vfs__walk(v, c, path, VFS__NOFOLLOW | VFS__NAMEOP, 0, &w, verdict);
	if (r < 0)
		return ret_err(verdict, r);
	if (w.dot_last && (flags & AT_REMOVEDIR)) {
		/* rmdir(2): "." is EINVAL, ".." ENOTEMPTY */
		const char *e = path + strlen(path);

		while (e > path && e[-1] == '/')
			e--;
		return ret_err(verdict, e[-1] == '.' && e - path >= 2 && e[-2] == '.' ?
		                                -ENOTEMPTY : -EINVAL);
	}
	/* A path without a last name ("/", ".", ".."; rmdir's "." and ".." are above):
	 * do_unlinkat() says a directory, do_rmdir() busy. Then, as there, the mount's
	 * writability (the policy) before the object. */
	if (w.dot_last || streq(w.vpath, "/"))
		return ret_err(verdict, (flags & AT_REMOVEDIR) ? -EBUSY : -EISDIR);
	r = vfs__walk_policy(v, &w, VFS_WANT_CREATE, verdict);
	if (r < 0)
		return r;
	if (!w.exists)
		return ret_err(verdict, -ENOENT);
	/* "name/" is a directory: unlink refuses one as ever, and a symlink is none */
	if (w.must_dir && !S_ISDIR(w.st.st_mode))
		return ret_err(verdict, -ENOTDIR);
	if (w.must_dir && !(flags & AT_REMOVEDIR))
		return ret_err(verdict, -EISDIR);
	if (w.mount_root || w.dirfd < 0)
		return ret_err(verdict, -EBUSY);
	if (decide_only && (r = removal_errno(v, &w, flags, verdict)) < 0)
		return ret_err(verdict, r);
	if (!decide_only && unlinkat(w.dirfd, w.hname, flags) < 0) {
		r = negative_errno();
		/* the host's "not empty" of a directory the view shows empty */
		if ((flags & AT_REMOVEDIR) && (r == -ENOTEMPTY || r == -EEXIST) &&
		    entries_errno(v, &w, verdict) == -EACCES)
			r = -EACCES;
		return ret_err(verdict, r);
	}
	vfs__change_note(v, VFS_CHANGE_DELETED, w.vpath, NULL);
	return 0;
}

_public_ int vfs_unlink(const struct vfs *v, const struct vfs_caller *c, const char *path,
                        int flags, struct vfs_verdict *verdict)
{
	return unlink_once(v, c, path, flags, verdict, false);
}

_public_ int vfs_unlink_decide(const struct vfs *v, const struct vfs_caller *c, const char *path,
                               int flags, struct vfs_verdict *verdict)
{
	return unlink_once(v, c, path, flags, verdict, true);
}

/*
 * The rules are by path. A directory that moves takes everything below it along, out of
 * the reach of a rule that named a path below it, unless the rule matches there wherever
 * the directory is (vfs__glob_moves_with()): renaming ~/.config would unhide
 * ~/.config/gcloud, or make a read-only mapping below it writable in unnamespaced mode
 * (where a mapping is no mount). Such a rename fails with EXDEV, as Landlock answers a
 * rename that would change what a file is allowed: programs fall back to copying, and
 * a copy reads through the view, where the hidden files are not.
 */
static int moves_out_of_rules(const struct vfs *v, const char *dir, const char *newdir,
                              struct vfs_verdict *verdict)
{
	char why[sizeof(verdict->rule)];

	for (size_t i = 0; i < v->n_globs; i++) {
		const struct vfs__rule *g = v->globs[i];

		if (vfs__glob_may_match_below(g->virt, dir) &&
		    !vfs__glob_moves_with(g->virt, dir, newdir)) {
			snprintf(why, sizeof(why), "rename: %s names paths below, which would not move",
			         g->desc);
			vfs__verdict(verdict, -EXDEV, why, dir);
			return -EXDEV;
		}
	}
	for (size_t i = 0; i < v->n_mounts; i++) {
		const struct vfs__rule *m = v->mounts[i];

		if (vfs__path_under(m->virt, dir) && !streq(m->virt, dir)) {
			snprintf(why, sizeof(why), "rename: %s lies below, and would not move", m->desc);
			vfs__verdict(verdict, -EXDEV, why, dir);
			return -EXDEV;
		}
	}
	return 0;
}

_public_ int vfs_rename(const struct vfs *v, const struct vfs_caller *oldc, const char *oldpath,
                        const struct vfs_caller *newc, const char *newpath, unsigned flags,
                        struct vfs_verdict *verdict)
{
	_cleanup_walk_ struct vfs__walk o = { .dirfd = -1, .fd = -1 }, n = { .dirfd = -1, .fd = -1 };
	int r;

	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT))
		return ret_err(verdict, -EINVAL);
	if ((flags & RENAME_EXCHANGE) && (flags & (RENAME_NOREPLACE | RENAME_WHITEOUT)))
		return ret_err(verdict, -EINVAL);
	/* a whiteout is a device node (0:0) */
	if (flags & RENAME_WHITEOUT)
		return ret_err(verdict, -EPERM);
	r = vfs__walk(v, oldc, oldpath, VFS__NOFOLLOW | VFS__NAMEOP, 0, &o, verdict);
	if (r < 0)
		return ret_err(verdict, r);
	r = vfs__walk(v, newc, newpath, VFS__NOFOLLOW | VFS__CREATE | VFS__NAMEOP, 0, &n, verdict);
	if (r < 0)
		return ret_err(verdict, r);
	/* In do_renameat2()'s order: the two parents' mounts (each mapping is its own mount
	 * in the sandbox), names that are no names, the mount's writability (the policy),
	 * and only then the objects themselves. */
	if (parent_mount(&o) != parent_mount(&n))
		return ret_err(verdict, -EXDEV);
	if (o.dot_last || n.dot_last || streq(o.vpath, "/") || streq(n.vpath, "/"))
		return ret_err(verdict, -EBUSY);
	r = vfs__walk_policy(v, &o, VFS_WANT_CREATE, verdict);
	if (r < 0)
		return r;
	r = vfs__walk_policy(v, &n, VFS_WANT_CREATE, verdict);
	if (r < 0)
		return r;
	if (!o.exists)
		return ret_err(verdict, -ENOENT);
	if ((flags & RENAME_NOREPLACE) && n.exists)
		return ret_err(verdict, -EEXIST);
	if ((flags & RENAME_EXCHANGE) && !n.exists)
		return ret_err(verdict, -ENOENT);
	/* a trailing slash names a directory: on either name unless the source is one, on
	 * an exchanged target unless that is one */
	if ((flags & RENAME_EXCHANGE) && n.must_dir && !S_ISDIR(n.st.st_mode))
		return ret_err(verdict, -ENOTDIR);
	if (!S_ISDIR(o.st.st_mode) && (o.must_dir || (n.must_dir && !(flags & RENAME_EXCHANGE))))
		return ret_err(verdict, -ENOTDIR);
	/* a mount point moves nowhere */
	if (o.mount_root || n.mount_root || o.dirfd < 0 || n.dirfd < 0)
		return ret_err(verdict, -EBUSY);
	if (S_ISDIR(o.st.st_mode) && (r = moves_out_of_rules(v, o.vpath, n.vpath, verdict)) < 0)
		return r;
	if ((flags & RENAME_EXCHANGE) && S_ISDIR(n.st.st_mode) &&
	    (r = moves_out_of_rules(v, n.vpath, o.vpath, verdict)) < 0)
		return r;
	if (renameat2(o.dirfd, o.hname, n.dirfd, n.hname, flags) < 0)
		return ret_err(verdict, negative_errno());
	vfs__change_note(v, VFS_CHANGE_RENAMED, n.vpath, o.vpath);
	if (flags & RENAME_EXCHANGE)
		vfs__change_note(v, VFS_CHANGE_RENAMED, o.vpath, n.vpath);
	return 0;
}

_public_ int vfs_link(const struct vfs *v, const struct vfs_caller *oldc, const char *oldpath,
                      const struct vfs_caller *newc, const char *newpath, int flags,
                      struct vfs_verdict *verdict)
{
	_cleanup_walk_ struct vfs__walk o = { .dirfd = -1, .fd = -1 }, n = { .dirfd = -1, .fd = -1 };
	int r;

	/* AT_EMPTY_PATH with a name is a plain link (the empty name is vfs_link_fd()'s) */
	if (flags & ~(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH))
		return ret_err(verdict, -EINVAL);
	r = vfs__walk(v, oldc, oldpath, (flags & AT_SYMLINK_FOLLOW) ? 0 : VFS__NOFOLLOW, 0, &o,
	              verdict);
	if (r < 0)
		return ret_err(verdict, r);
	if (!o.exists)
		return ret_err(verdict, -ENOENT);
	/* the rules are by path: a new name for a denied file would be an open door */
	r = vfs__walk_policy(v, &o, VFS_WANT_READ, verdict);
	if (r < 0)
		return r;
	r = walk_new_entry(v, newc, newpath, false, &n, verdict);
	if (r < 0)
		return r;
	if (o.mount_root || o.dirfd < 0 || entry_mount(&o) != entry_mount(&n))
		return ret_err(verdict, -EXDEV);
	/* do_linkat(): a directory is refused last, after the new name and the mount */
	if (S_ISDIR(o.st.st_mode))
		return ret_err(verdict, -EPERM);
	if (linkat(o.dirfd, o.hname, n.dirfd, n.hname, 0) < 0)
		return ret_err(verdict, negative_errno());
	vfs__change_note(v, VFS_CHANGE_CREATED, n.vpath, NULL);
	return 0;
}

_public_ int vfs_link_fd(const struct vfs *v, int fd, const char *fd_path,
                         const struct vfs_caller *newc, const char *newpath,
                         struct vfs_verdict *verdict)
{
	_cleanup_walk_ struct vfs__walk n = { .dirfd = -1, .fd = -1 };
	const struct vfs__rule *m;
	char where[PATH_MAX];
	size_t len = strlen(fd_path);
	struct stat st;
	int r;

	if (fstat(fd, &st) < 0)
		return ret_err(verdict, negative_errno());
	if (S_ISDIR(st.st_mode))
		return ret_err(verdict, -EPERM);
	/* a pipe, socket or memfd lives on a mount of the kernel's own */
	if (fd_path[0] != '/' || len >= sizeof(where))
		return ret_err(verdict, -EXDEV);
	/* an O_TMPFILE or unlinked file reads "PATH (deleted)": it is where PATH was */
	memcpy(where, fd_path, len + 1);
	if (st.st_nlink == 0 && len > 10 && streq(where + len - 10, " (deleted)"))
		where[len - 10] = '\0';
	m = vfs__mount_covering(v, where);
	if (!m)
		return ret_err(verdict, -EXDEV);
	/* the rules are by path: a new name for a denied file would be an open door */
	r = vfs_decide(v, where, VFS_WANT_READ, verdict);
	if (r < 0)
		return r;
	r = walk_new_entry(v, newc, newpath, false, &n, verdict);
	if (r < 0)
		return r;
	/* each mapping is its own mount in the sandbox: no links across them */
	if (entry_mount(&n) != m)
		return ret_err(verdict, -EXDEV);
	/* Through the fd's /proc link rather than AT_EMPTY_PATH: the kernel lets only the
	 * opener itself (the same credentials) or CAP_DAC_READ_SEARCH link an fd by
	 * AT_EMPTY_PATH, and we act with the caller's credentials, not as the opener. An
	 * O_TMPFILE or a linked file gets its name either way; an unlinked one ENOENT. */
	proc_fd_path(where, sizeof(where), fd);
	if (linkat(AT_FDCWD, where, n.dirfd, n.hname, AT_SYMLINK_FOLLOW) < 0)
		return ret_err(verdict, negative_errno());
	vfs__change_note(v, VFS_CHANGE_CREATED, n.vpath, NULL);
	return 0;
}

_public_ int vfs_symlink(const struct vfs *v, const char *target, const struct vfs_caller *c,
                         const char *linkpath, struct vfs_verdict *verdict)
{
	_cleanup_walk_ struct vfs__walk w = { .dirfd = -1, .fd = -1 };
	int r;

	/* the target is only text: it is resolved inside the view whenever it is used */
	if (!target[0])
		return ret_err(verdict, -ENOENT);
	if (strlen(target) >= PATH_MAX)
		return ret_err(verdict, -ENAMETOOLONG);
	r = walk_new_entry(v, c, linkpath, false, &w, verdict);
	if (r < 0)
		return r;
	if (symlinkat(target, w.dirfd, w.hname) < 0)
		return ret_err(verdict, negative_errno());
	vfs__change_note(v, VFS_CHANGE_CREATED, w.vpath, NULL);
	return 0;
}

/* --- metadata -------------------------------------------------------------------------- */

static int meta_walk(const struct vfs *v, const struct vfs_caller *c, const char *path,
                     int flags, struct vfs__walk *w, struct vfs_verdict *verdict)
{
	int r;

	r = vfs__walk(v, c, path, (flags & AT_SYMLINK_NOFOLLOW) ? VFS__NOFOLLOW : 0, 0, w,
	              verdict);
	if (r < 0)
		return ret_err(verdict, r);
	if (!w->exists)
		return ret_err(verdict, -ENOENT);
	r = vfs__walk_policy(v, w, VFS_WANT_WRITE, verdict);
	if (r < 0)
		return r;
	/* mknod of a device is refused, so every device node in the view is the host's own,
	 * bound in (/dev): its mode, owner and times are the host's to keep, whatever the
	 * mapping that shows it allows for writing to it */
	if (S_ISCHR(w->st.st_mode) || S_ISBLK(w->st.st_mode)) {
		vfs__verdict(verdict, -EPERM, "a device node's metadata is the host's: not changed",
		             w->vpath);
		return -EPERM;
	}
	return 0;
}

_public_ mode_t vfs_chmod_mode(mode_t file_mode, mode_t mode)
{
	return S_ISDIR(file_mode) ? mode : mode & CREATE_MODE_MASK;
}

_public_ int vfs_chmod(const struct vfs *v, const struct vfs_caller *c, const char *path,
                       mode_t mode, int flags, struct vfs_verdict *verdict)
{
	_cleanup_walk_ struct vfs__walk w = { .dirfd = -1, .fd = -1 };
	char p[64];
	int r;

	if (flags & ~AT_SYMLINK_NOFOLLOW)
		return ret_err(verdict, -EINVAL);
	r = meta_walk(v, c, path, flags, &w, verdict);
	if (r < 0)
		return r;
	/* symlinks have no mode of their own (fchmodat2(2) says EOPNOTSUPP) */
	if (S_ISLNK(w.st.st_mode))
		return ret_err(verdict, -EOPNOTSUPP);
	mode = vfs_chmod_mode(w.st.st_mode, mode);
	/* fchmodat2() changes the mode through the O_PATH fd itself (Linux 6.6); before it
	 * only a path could, the fd's own /proc/self/fd link, a lookup in procfs that was a
	 * seventh of the supervisor's time in an emulated chmod */
	if (syscall(__NR_fchmodat2, w.fd, "", mode, AT_EMPTY_PATH) == 0)
		return ret_err(verdict, 0);
	if (errno != ENOSYS && errno != EINVAL)
		return ret_err(verdict, negative_errno());
	proc_fd_path(p, sizeof(p), w.fd);
	return ret_err(verdict, fchmodat(AT_FDCWD, p, mode, 0) < 0 ? negative_errno() : 0);
}

_public_ int vfs_chown(const struct vfs *v, const struct vfs_caller *c, const char *path, uid_t uid,
                       gid_t gid, int flags, struct vfs_verdict *verdict)
{
	_cleanup_walk_ struct vfs__walk w = { .dirfd = -1, .fd = -1 };
	int r;

	if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
		return ret_err(verdict, -EINVAL);
	r = meta_walk(v, c, path, flags, &w, verdict);
	if (r < 0)
		return r;
	r = fchownat(w.fd, "", uid, gid, AT_EMPTY_PATH);
	return ret_err(verdict, r < 0 ? negative_errno() : 0);
}

_public_ int vfs_truncate(const struct vfs *v, const struct vfs_caller *c, const char *path,
                          off_t length, struct vfs_verdict *verdict)
{
	_cleanup_walk_ struct vfs__walk w = { .dirfd = -1, .fd = -1 };
	_cleanup_close_ int fd = -1;
	int r;

	if (length < 0)
		return ret_err(verdict, -EINVAL);
	r = walk_existing(v, c, path, 0, 0, &w, verdict);
	if (r < 0)
		return r;
	if (S_ISDIR(w.st.st_mode))
		return ret_err(verdict, -EISDIR);
	if (!S_ISREG(w.st.st_mode))
		return ret_err(verdict, -EINVAL);
	r = vfs__walk_policy(v, &w, VFS_WANT_WRITE, verdict);
	if (r < 0)
		return r;
	fd = vfs__reopen(v, w.fd, O_WRONLY);
	if (fd < 0)
		return ret_err(verdict, fd);
	if (ftruncate(fd, length) < 0)
		return ret_err(verdict, negative_errno());
	vfs__change_note(v, VFS_CHANGE_WRITTEN, w.vpath, NULL);
	return 0;
}

_public_ int vfs_utimensat(const struct vfs *v, const struct vfs_caller *c, const char *path,
                           const struct timespec times[2], int flags,
                           struct vfs_verdict *verdict)
{
	_cleanup_walk_ struct vfs__walk w = { .dirfd = -1, .fd = -1 };
	int r;

	if (flags & ~AT_SYMLINK_NOFOLLOW)
		return ret_err(verdict, -EINVAL);
	r = meta_walk(v, c, path, flags, &w, verdict);
	if (r < 0)
		return r;
	r = utimensat(w.fd, "", times, AT_EMPTY_PATH);
	return ret_err(verdict, r < 0 ? negative_errno() : 0);
}

/* --- for the interposer's own operations --------------------------------------------- */

_public_ int vfs_resolve(const struct vfs *v, const struct vfs_caller *c, const char *path,
                         unsigned want, char ret_name[NAME_MAX + 1], struct vfs_verdict *verdict)
{
	_cleanup_walk_ struct vfs__walk w = { .dirfd = -1, .fd = -1 };
	bool creates = (want & VFS_WANT_CREATE) && (want & VFS_WANT_PARENT);
	int r, fd;

	/* a name to create is never followed, whatever is there (filename_create()) */
	r = vfs__walk(v, c, path, ((want & VFS_WANT_NOFOLLOW) ? VFS__NOFOLLOW : 0) |
	              (creates ? VFS__CREATE | VFS__NAMEOP | VFS__NOFOLLOW : 0), 0, &w, verdict);
	if (r < 0)
		return ret_err(verdict, r);
	if (want & VFS_WANT_PARENT) {
		if (w.dot_last || w.mount_root || w.dirfd < 0)
			return ret_err(verdict, -EBUSY);
		if (creates && w.exists)
			return ret_err(verdict, -EEXIST);
		if (creates && (w.must_dir /* "name/" would be a directory */ ||
		                proc_no_such_name(&w)))
			return ret_err(verdict, -ENOENT);
		r = vfs__walk_policy(v, &w, want & ~(VFS_WANT_PARENT | VFS_WANT_NOFOLLOW), verdict);
		if (r < 0)
			return r;
		if (ret_name)
			snprintf(ret_name, NAME_MAX + 1, "%s", w.hname);
		fd = fcntl(w.dirfd, F_DUPFD_CLOEXEC, 3);
		if (fd >= 0 && (want & VFS_WANT_CREATE))
			vfs__own_pending(v, w.vpath);
		return ret_err(verdict, fd < 0 ? negative_errno() : fd);
	}
	if (!w.exists)
		return ret_err(verdict, -ENOENT);
	r = vfs__walk_policy(v, &w, want & ~VFS_WANT_NOFOLLOW, verdict);
	if (r < 0)
		return r;
	if (ret_name)
		snprintf(ret_name, NAME_MAX + 1, "%s", w.hname);
	fd = fcntl(w.fd, F_DUPFD_CLOEXEC, 3);
	return ret_err(verdict, fd < 0 ? negative_errno() : fd);
}

_public_ int vfs_host_to_virtual(const struct vfs *v, const char *host, char *buf, size_t len)
{
	char h[PATH_MAX];
	const struct vfs__rule *best = NULL;
	const char *rest;
	int r;

	if (host[0] != '/')
		return -ENOENT;
	r = vfs__normalize("/", host, h, sizeof(h));
	if (r < 0)
		return r;
	for (size_t i = 0; i < v->n_mounts; i++) {
		const struct vfs__rule *m = v->mounts[i];

		if (m->root_is_link || !vfs__path_under(h, m->host))
			continue;
		if (!best || strlen(m->host) > strlen(best->host) ||
		    (strlen(m->host) == strlen(best->host) && m->seq > best->seq))
			best = m;
	}
	if (!best) {
		if (v->skeleton && vfs__path_under(h, v->skeleton)) {
			rest = h + strlen(v->skeleton);
			if ((size_t)snprintf(buf, len, "%s", rest[0] ? rest : "/") >= len)
				return -ENAMETOOLONG;
			return 0;
		}
		if (v->mode == VFS_MODE_UNNAMESPACED && (vfs__is_implicit(v, h) || streq(h, "/"))) {
			if ((size_t)snprintf(buf, len, "%s", h) >= len)
				return -ENAMETOOLONG;
			return 0;
		}
		return -ENOENT;
	}
	rest = streq(best->host, "/") ? h : h + strlen(best->host);
	if (best->is_proc && rest[0] == '/') {
		/* /proc/<host pid>/... -> /proc/<sandbox pid>/... */
		char *end;
		long hp = strtol(rest + 1, &end, 10);

		if (end != rest + 1 && (*end == '/' || *end == '\0')) {
			pid_t sp = v->has_proc_ops && v->proc.to_sandbox ?
			                   v->proc.to_sandbox(v->proc.userdata, hp) : hp;

			if (sp < 0)
				return -ENOENT;
			if ((size_t)snprintf(buf, len, "%s/%d%s", streq(best->virt, "/") ? "" :
			                     best->virt, sp, end) >= len)
				return -ENAMETOOLONG;
			return 0;
		}
	}
	if ((size_t)snprintf(buf, len, "%s%s", streq(best->virt, "/") && rest[0] ? "" : best->virt,
	                     rest) >= len)
		return -ENAMETOOLONG;
	return 0;
}
