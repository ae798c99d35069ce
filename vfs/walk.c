/* SPDX-License-Identifier: MIT */
/*
 * The resolution walker: one component at a time on host O_PATH|O_NOFOLLOW fds, keeping
 * the canonical virtual path, so that the policy is decided on the path the kernel would
 * really reach and never on the string the program wrote.
 *
 * Symlinks and ".." restart the walk from the virtual root with the rest of the path
 * rewritten (target + rest, or canonical parent + rest). That costs a few extra lookups
 * but leaves a single state to get right: there is no stack of directory fds to keep
 * consistent, and a symlink can never be followed relative to a host directory that is
 * not the one the canonical path names.
 *
 * Where the policy has nothing to say about several directories in a row, they are one
 * openat2() that refuses symlinks (jump_dirs()): the same lookups by the kernel, and the
 * one-at-a-time walk whenever that call fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "macros.h"
#include "vfs-internal.h"

#define MAX_SYMLINKS 40 /* the kernel's limit (MAXSYMLINKS), so ELOOP comes at the same depth */
#define REM_MAX (PATH_MAX * 2 + 2)

/* Let go of one of the walk's two fds: ours to close, a cache entry's to unpin, or the
 * table's (a mapping root, the root) to leave alone. */
static void fd_put(struct vfs__walk *w, int *fd, bool *owned, struct vfs__dent **ent)
{
	if (*ent)
		vfs__dcache_release(w->dc, *ent, false);
	else if (*owned && *fd >= 0)
		close(*fd);
	*fd = -1;
	*owned = false;
	*ent = NULL;
}

static void walk_close(struct vfs__walk *w)
{
	fd_put(w, &w->dirfd, &w->dirfd_owned, &w->dirfd_ent);
	fd_put(w, &w->fd, &w->fd_owned, &w->fd_ent);
}

void vfs__walk_done(struct vfs__walk *w)
{
	walk_close(w);
	free(w->long_buf);
	w->long_buf = NULL;
}

/* The root's type is known (root_type); its full stat is taken at the end of the walk
 * only if the path ends there. */
static int walk_reset(const struct vfs *v, struct vfs__walk *w)
{
	walk_close(w);
	w->vpath[0] = '/';
	w->vpath[1] = '\0';
	w->vlen = 1;
	w->fd = v->root_fd;
	w->mount = w->pmount = v->root_mount;
	w->mount_root = v->root_mount != NULL;
	w->hname[0] = '.';
	w->hname[1] = '\0';
	w->synth[0] = '\0';
	w->proc_depth = v->root_mount && v->root_mount->is_proc ? 0 : -1;
	w->proc_task = false;
	w->block = vfs__glob_latest(v, "/");
	if (w->block && v->root_mount && v->root_mount->seq > w->block->seq)
		w->block = NULL;
	w->st.st_mode = v->root_type;
	w->st_full = false;
	w->exists = true;
	return 0;
}

static bool is_pid(const char *s)
{
	size_t n = strspn(s, "0123456789");

	return n > 0 && n < 10 && s[n] == '\0' && s[0] != '0';
}

/* Host pid of a pid as the sandbox names it; without proc ops only the caller itself. */
static pid_t proc_to_host(const struct vfs *v, const struct vfs_caller *c, pid_t p)
{
	if (v->has_proc_ops && v->proc.to_host)
		return v->proc.to_host(v->proc.userdata, p);
	return (p == c->tgid || p == c->pid) ? p : -ESRCH;
}

static pid_t proc_to_sandbox(const struct vfs *v, pid_t p)
{
	if (v->has_proc_ops && v->proc.to_sandbox)
		return v->proc.to_sandbox(v->proc.userdata, p);
	return p;
}

static pid_t caller_tgid(const struct vfs *v, const struct vfs_caller *c)
{
	if (v->has_proc_ops && v->proc.tgid_of)
		return v->proc.tgid_of(v->proc.userdata, c->pid);
	return c->tgid;
}

/* Concatenate the la bytes of a, "/", b into rem of cap bytes (b may be empty, and may
 * be the rest of rem itself; a never lies in rem). */
static int rem_join(char *rem, size_t cap, const char *a, size_t la, const char *b)
{
	size_t lb = strlen(b);

	if (la + lb + 2 > cap)
		return -ENAMETOOLONG;
	memmove(rem + la + 1, b, lb + 1);
	memcpy(rem, a, la);
	rem[la] = '/';
	return 0;
}

/* An O_PATH lookup of one name in w->fd; on running out of fds, the directory cache
 * gives its idle ones back and the lookup is tried once more. */
static int open_name(const struct vfs__walk *w, const char *hn, int flags)
{
	int fd = openat(w->fd, hn, O_PATH | O_NOFOLLOW | O_CLOEXEC | flags);

	if (fd < 0 && (errno == EMFILE || errno == ENFILE) && w->dc) {
		vfs__dcache_flush(w->dc);
		fd = openat(w->fd, hn, O_PATH | O_NOFOLLOW | O_CLOEXEC | flags);
	}
	return fd;
}

struct found {
	bool exists;
	int fd;                 /* -1: none (not found, or a STATONLY last component) */
	bool owned;             /* fd is ours to close */
	struct vfs__dent *ent;  /* fd belongs to this pinned cache entry */
	struct stat st;         /* full when full, else only the S_IFMT bits */
	bool full;
};

/*
 * Look hn (the host name of the component whose canonical path is p) up in w->fd, with
 * as few syscalls as give the same answer as openat(O_PATH|O_NOFOLLOW) + fstat:
 * - cacheable (a directory of a ro mapping, see dcache.c): a cached fd is used once one
 *   fstatat() shows the name still leads to that very inode; a directory found is
 *   given to the cache instead of being closed after the walk;
 * - statonly (the last component, for a stat): fstatat() alone, no fd;
 * - a component that is not the last only matters as a directory (or a symlink): an
 *   O_DIRECTORY open tells "directory" without an fstat, ENOTDIR sends it the long way.
 * Returns 0 (f->exists false for ENOENT, as openat would say) or -errno.
 */
static int lookup(struct vfs__walk *w, const char *hn, const char *p, size_t plen, bool last,
                  bool cacheable, bool statonly, struct found *f)
{
	struct vfs__dent *e = NULL;
	bool dir_hint;
	int fd;

	f->exists = f->owned = f->full = false;
	f->fd = -1;
	f->ent = NULL;
	if (cacheable)
		e = vfs__dcache_get(w->dc, p, plen);
	if (e || statonly) {
		if (fstatat(w->fd, hn, &f->st, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT) < 0) {
			int err = errno;

			vfs__dcache_release(w->dc, e, err == ENOENT || err == ENOTDIR);
			return err == ENOENT ? 0 : -err;
		}
		f->exists = f->full = true;
		if (e && vfs__dent_same(e, &f->st)) {
			f->fd = vfs__dent_fd(e);
			f->ent = e;
			return 0;
		}
		if (e)
			vfs__dcache_release(w->dc, e, true);
		if (statonly)
			return 0;
		/* a stale entry: look the name up afresh, and stat what that gives */
		f->exists = f->full = false;
	}

	dir_hint = !last && !cacheable;
	fd = open_name(w, hn, dir_hint ? O_DIRECTORY : 0);
	if (fd < 0 && dir_hint && errno == ENOTDIR) {
		dir_hint = false;
		fd = open_name(w, hn, 0);
	}
	if (fd < 0)
		return errno == ENOENT ? 0 : negative_errno();
	if (dir_hint) {
		f->st.st_mode = S_IFDIR;
	} else if (fstat(fd, &f->st) < 0) {
		int err = errno;

		close(fd);
		return -err;
	} else {
		f->full = true;
	}
	f->exists = true;
	f->fd = fd;
	f->owned = true;
	if (cacheable && S_ISDIR(f->st.st_mode) && (f->ent = vfs__dcache_put(w->dc, p, plen, fd,
	                                                                    &f->st)))
		f->owned = false;
	return 0;
}

/*
 * Would the lookup the walk refused have failed natively as well? A name that does not
 * exist on the host is no policy decision: the verdict then says so (denied false), so
 * that -v and the report count only what the policy took away, not every missing
 * config file a program probes for. Natively the program would look the name up where
 * it is on the host: in the mapped directory the walk stands in (dirfd), or, for an
 * unmapped parent, at the same path on the host. Only the verdict changes, never what
 * the program gets.
 */
/* A followed symlink leaves a '/' after its target (walk()): the name itself is asked. */
static char *strip_slashes(char *path)
{
	size_t n = strlen(path);

	while (n > 1 && path[n - 1] == '/')
		path[--n] = '\0';
	return path;
}

static void verdict_native(struct vfs_verdict *verdict, const struct vfs__walk *w, int dirfd,
                           const char *name, const char *p, const char *rest)
{
	char path[REM_MAX + NAME_MAX + 2];
	struct stat st;
	int r;

	if (!verdict || !verdict->denied || verdict->err != ENOENT)
		return;
	/* the whole rest of the path, as the native lookup would go on with it (past
	 * PATH_MAX it stays counted as denied: a guess is no answer) */
	while (rest && *rest == '/')
		rest++;
	if (w->mount && w->mount->host_fd >= 0 && !w->mount->is_proc) {
		/* Rebased, dirfd is in the sandbox's view, where a hidden or denied
		 * directory is an empty stub that holds no name: the host's tree of the
		 * mapping says whether the name is there. */
		const char *rel = vfs__below(w->mount, p);

		rel += *rel == '/';

		if ((size_t)snprintf(path, sizeof(path), "%s%s%s", *rel ? rel : ".",
		                     rest && *rest ? "/" : "", rest ? rest : "") >= PATH_MAX)
			return;
		r = fstatat(w->mount->host_fd, strip_slashes(path), &st,
		            AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT);
	} else if (w->mount && dirfd >= 0 && !w->mount->is_proc) {
		if ((size_t)snprintf(path, sizeof(path), "%s%s%s", name, rest && *rest ? "/" : "",
		                     rest ? rest : "") >= PATH_MAX)
			return;
		r = fstatat(dirfd, strip_slashes(path), &st, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT);
	} else if (!w->mount) {
		if ((size_t)snprintf(path, sizeof(path), "%s%s%s", p, rest && *rest ? "/" : "",
		                     rest ? rest : "") >= PATH_MAX)
			return;
		r = fstatat(AT_FDCWD, strip_slashes(path), &st,
		            AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT);
	} else {
		return;
	}
	if (r < 0 && (errno == ENOENT || errno == ENOTDIR))
		verdict->denied = false;
}

/* An entry of an own_only mapping's root (owned.c) that the run did not create is
 * hidden, exactly as a hide rule hides. */
static int own_check(const struct vfs *v, struct vfs__walk *w, const char *hn, const char *p,
                     unsigned flags, struct found *f, struct vfs_verdict *verdict)
{
	struct stat st;
	int r;

	if (f->full)
		st = f->st;
	else if (fstatat(w->fd, hn, &st, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT) < 0)
		memset(&st, 0, sizeof(st));
	if (vfs__own_visible(v, p, st.st_ino, st.st_uid))
		return 0;
	if (f->ent)
		vfs__dcache_release(w->dc, f->ent, false);
	else if (f->owned && f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	f->ent = NULL;
	f->owned = false;
	r = (flags & VFS__CREATE) ? -EACCES : -ENOENT;
	vfs__verdict(verdict, r, w->mount->desc, p);
	return r;
}

/*
 * One component. Returns 0 when done, 1 when the new last component is a symlink to
 * follow (w->synth or the host link gives the target), or -errno.
 */
static int walk_step(const struct vfs *v, const struct vfs_caller *c, struct vfs__walk *w,
                     const char *name, const char *rest, bool last, unsigned flags,
                     struct vfs_verdict *verdict)
{
	const struct vfs__rule *ex, *h;
	char pbuf[PATH_MAX], hbuf[16];
	/* a long walk builds the component's path in its own buffer, of vcap bytes */
	char *p = w->long_buf ? w->long_buf + w->vcap : pbuf;
	const char *hn = name;
	size_t nl = strlen(name), plen;
	struct found f = { .fd = -1 };
	bool to_implicit = false;
	int depth = -1, r;

	if (!w->exists)
		return -ENOENT;
	if (!S_ISDIR(w->st.st_mode))
		return -ENOTDIR;
	if (nl > NAME_MAX)
		return -ENAMETOOLONG;
	if (w->vlen + 1 + nl >= w->vcap)
		return -ENAMETOOLONG;
	memcpy(p, w->vpath, w->vlen);
	if (w->vlen > 1)
		p[w->vlen] = '/';
	memcpy(p + w->vlen + (w->vlen > 1), name, nl + 1);
	plen = w->vlen + (w->vlen > 1) + nl;

	/* the policy first: a hidden or denied name gives no hint of existence */
	ex = vfs__mount_exact(v, p);
	if (w->block && ex && ex->seq > w->block->seq)
		w->block = NULL;
	if (!w->block) {
		h = vfs__glob_latest(v, p);
		if (h && !(ex && ex->seq > h->seq))
			w->block = h;
	}
	if (w->block && (w->block->kind == VFS__HIDE || !last) &&
	    (last || !vfs__rescuable(v, w->block, p))) {
		/* Looking, a hidden name does not exist. Creating, ENOENT would be a lie
		 * programs act on (mkdir -p retries the parent for ever; mkdir("/root")
		 * cannot fail so natively): the place refuses, as one the caller may not
		 * write or search refuses, whether or not the name exists on the host. */
		r = w->block->kind == VFS__HIDE && !(flags & VFS__CREATE) ? -ENOENT : -EACCES;
		vfs__verdict(verdict, r, w->block->desc, p);
		if (verdict) {
			struct stat lst;

			verdict->below = !last;
			verdict->link = v->rebased &&
			                fstatat(w->fd, name, &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
			                S_ISLNK(lst.st_mode);
		}
		verdict_native(verdict, w, w->fd, name, p, rest);
		return r;
	}

	w->synth[0] = '\0';
	if (ex) {
		/* a mapping root: the table's fd, whose type never changes */
		f.exists = true;
		f.fd = ex->root_fd;
		f.st.st_mode = ex->root_type;
	} else if (!w->mount) {
		/* an unmapped directory that only leads to mount points */
		if (!vfs__is_implicit(v, p)) {
			vfs__verdict(verdict, -ENOENT, "unmapped", p);
			verdict_native(verdict, w, -1, name, p, rest);
			if (!last)
				return -ENOENT;
		} else if ((f.fd = vfs__implicit_fd(v, p)) >= 0) {
			/* pinned at vfs_finalize(), like a mapping root */
			f.exists = true;
			f.st.st_mode = S_IFDIR;
		} else if ((r = lookup(w, name, p, plen, last, false, false, &f)) < 0) {
			return r;
		}
	} else {
		if (w->mount->is_proc && w->proc_depth >= 0) {
			depth = w->proc_depth + 1;
			if (depth == 1 && (streq(name, "self") || streq(name, "thread-self"))) {
				/* /proc/self is the caller, as the sandbox numbers it */
				pid_t htg = caller_tgid(v, c);
				pid_t tg = htg < 0 ? htg : proc_to_sandbox(v, htg);
				pid_t t = proc_to_sandbox(v, c->pid);

				if (tg < 0 || t < 0)
					return -ENOENT;
				if (name[0] == 's')
					snprintf(w->synth, sizeof(w->synth), "%d", tg);
				else
					snprintf(w->synth, sizeof(w->synth), "%d/task/%d", tg, t);
			} else if ((depth == 1 || (depth == 3 && w->proc_task)) && is_pid(name)) {
				/* another process: only the sandbox's own are visible */
				pid_t hp = proc_to_host(v, c, atoi(name));

				if (hp < 0) {
					vfs__verdict(verdict, -ENOENT, "proc: not a sandbox process", p);
					return -ENOENT;
				}
				/* Rebased, /proc is the sandbox's own procfs: its names are
				 * already the sandbox's pids. */
				if (!v->rebased) {
					snprintf(hbuf, sizeof(hbuf), "%d", hp);
					hn = hbuf;
				}
			}
		}
		/* no shortcut under /proc: its names are pids and magic links */
		r = lookup(w, hn, p, plen, last,
		           w->dc && w->mount->kind == VFS__BIND && !w->mount->writable &&
		                   !w->mount->is_proc,
		           last && (flags & VFS__STATONLY) && !w->mount->is_proc, &f);
		if (r < 0)
			return r;
		if (f.exists && w->mount->own_only && w->mount_root) {
			if (vfs__is_implicit(v, p))
				to_implicit = true;
			else if ((r = own_check(v, w, hn, p, flags, &f, verdict)) < 0)
				return r;
		}
	}

	/* advance: the current directory becomes the parent */
	fd_put(w, &w->dirfd, &w->dirfd_owned, &w->dirfd_ent);
	w->dirfd = w->fd;
	w->dirfd_owned = w->fd_owned;
	w->dirfd_ent = w->fd_ent;
	w->fd = f.fd;
	w->fd_owned = f.owned;
	w->fd_ent = f.ent;
	w->pmount = w->mount;
	if (ex) {
		w->mount = ex;
		w->proc_depth = ex->is_proc ? 0 : -1;
		w->proc_task = false;
	} else if (depth >= 0) {
		w->proc_depth = depth;
		if (depth == 2)
			w->proc_task = streq(name, "task");
	}
	if (to_implicit)
		w->mount = NULL;
	w->mount_root = ex != NULL;
	str_copy(w->hname, sizeof(w->hname), hn);
	memcpy(w->vpath, p, plen + 1);
	w->vlen = plen;

	if (!f.exists) {
		w->exists = false;
		return last ? 0 : -ENOENT;
	}
	w->exists = true;
	if (f.full)
		w->st = f.st;
	else
		w->st.st_mode = f.st.st_mode & S_IFMT;
	w->st_full = f.full;
	if (S_ISLNK(w->st.st_mode))
		return 1;
	return 0;
}

/*
 * Symlink target in virtual terms. Links under /proc/<pid>/ are magic: the kernel would
 * jump to the object itself, wherever it is. Their readlink text is the object's path as
 * seen from the sandbox's root (unnamespaced, host == virtual; namespaced, d_path stops at
 * the sandbox's root mount), so it is used as an absolute path inside the view and walked
 * again: the policy applies to it as to any other path, never to the host object (and
 * magic_names_object() checks that the path names the object at all).
 */
static int link_target(const struct vfs *v, struct vfs__walk *w, char *buf, size_t len,
                       bool *ret_magic)
{
	ssize_t n;

	*ret_magic = false;
	if (w->synth[0]) {
		if ((size_t)snprintf(buf, len, "%s/%s", w->mount->virt, w->synth) >= len)
			return -ENAMETOOLONG;
		return 0;
	}
	if (w->mount_root && w->mount && w->mount->root_link && w->fd == w->mount->root_fd) {
		/* a mapping that is a symlink (/bin -> usr/bin): read at vfs_finalize() */
		n = strlen(w->mount->root_link);
		memcpy(buf, w->mount->root_link, MIN((size_t)n + 1, len));
	} else if (w->fd >= 0) {
		n = readlinkat(w->fd, "", buf, len);
	} else {
		/* VFS__STATONLY: the link was only stat'ed, read it by name; if it is no
		 * link any more, the walk is done again the long way (fds, no name reuse) */
		n = readlinkat(w->dirfd, w->hname, buf, len);
		if (n < 0 && (errno == EINVAL || errno == ENOENT)) {
			w->raced = true;
			return -EAGAIN;
		}
	}
	if (n < 0)
		return negative_errno();
	if ((size_t)n >= len)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	*ret_magic = w->mount && w->mount->is_proc && w->proc_depth >= 2;
	return 0;
}

/* Non-path magic links (pipes, sockets, anon inodes) grant nothing beyond the fd the
 * process already holds, so /dev/fd/N of a pipe works as on the host. */
static bool anon_object(const char *t)
{
	return strncmp(t, "pipe:", 5) == 0 || strncmp(t, "socket:", 7) == 0 ||
	       strncmp(t, "anon_inode:", 11) == 0;
}

/* An O_PATH fd of the object the magic link w stands on leads to (the open follows it),
 * its stat in st; or -errno. */
static int link_object(const struct vfs__walk *w, struct stat *st)
{
	int fd = openat(w->dirfd, w->hname, O_PATH | O_CLOEXEC);
	int r;

	if (fd < 0)
		return negative_errno();
	if (fstat(fd, st) < 0) {
		r = negative_errno();
		close(fd);
		return r;
	}
	return fd;
}

/* The walk ends on that object: fd (owned now) and its stat. */
static void end_on_object(struct vfs__walk *w, int fd, const struct stat *st)
{
	fd_put(w, &w->fd, &w->fd_owned, &w->fd_ent);
	w->fd = fd;
	w->fd_owned = true;
	w->st = *st;
	w->st_full = true;
}

/*
 * The magic link of an object that has no name in the view: a memfd ("/memfd:NAME
 * (deleted)") or an unlinked file or O_TMPFILE ("PATH (deleted)"). The kernel reopens the
 * object itself, and so does this: the walk ends on the object the link leads to. A
 * memfd is the caller's own (no mapping to protect, as for a pipe); an unlinked file is
 * decided where it was, by the rules and the mapping of PATH. Returns 1 when the walk
 * ends there, 0 when the object still has a name (walk the target as any other), or
 * -errno.
 */
static int deleted_target(const struct vfs *v, struct vfs__walk *w, const char *target,
                          bool last)
{
	size_t n = strlen(target);
	char where[PATH_MAX];
	struct statfs sf;
	struct stat st;
	bool memfd;
	int fd, r;

	if (n <= 10 || !streq(target + n - 10, " (deleted)"))
		return 0;
	fd = link_object(w, &st);
	if (fd < 0)
		return fd;
	if (st.st_nlink > 0 && !S_ISDIR(st.st_mode)) {
		close(fd); /* a live file that is only named so */
		return 0;
	}
	if (!last) {
		close(fd);
		return -ENOENT;
	}
	memfd = strncmp(target, "/memfd:", 7) == 0 && S_ISREG(st.st_mode) && fstatfs(fd, &sf) == 0 &&
	        (sf.f_type == TMPFS_MAGIC || sf.f_type == HUGETLBFS_MAGIC);
	if (!memfd) {
		memcpy(where, target, n - 10);
		where[n - 10] = '\0';
		r = vfs_decide(v, where, VFS_WANT_READ, NULL);
		if (r < 0) {
			close(fd);
			return r;
		}
		w->mount = w->pmount = vfs__mount_covering(v, where);
		w->mount_root = false;
		w->block = NULL;
		str_copy(w->vpath, w->vcap, where);
		w->vlen = strlen(w->vpath);
	}
	w->own_object = memfd;
	end_on_object(w, fd, &st);
	return 1;
}

_public_ int vfs_allow_handed_file(struct vfs *v, int fd)
{
	struct stat st;
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fstat(fd, &st) < 0)
		return negative_errno();
	if (!S_ISREG(st.st_mode))
		return 0;
	if (v->n_handed >= ELEMENTSOF(v->handed))
		return -ENOSPC;
	v->handed[v->n_handed++] = (struct vfs__handed){ st.st_dev, st.st_ino, fl & O_ACCMODE };
	return 0;
}

/* That file's O_ACCMODE + 1, or 0 when st is none of them. */
static int handed_acc(const struct vfs *v, const struct stat *st)
{
	for (size_t i = 0; S_ISREG(st->st_mode) && i < v->n_handed; i++)
		if (v->handed[i].dev == st->st_dev && v->handed[i].ino == st->st_ino)
			return v->handed[i].acc + 1;
	return 0;
}

/*
 * Whether a magic link's text names its object in the view. The text is the object's
 * path from the sandbox's root, but an object the sandbox cannot reach from there (a
 * host file handed in as stdout) is printed from the host's root, and that name may be
 * another object in the view (the sandbox's private /tmp): writing "there" would
 * misdirect the caller's data. Natively the kernel reopens the object itself, which
 * Landlock refuses outside the view: the same EACCES here, also where the name is free
 * in the view (an O_CREAT would make a new file there). A name the view refuses (hidden,
 * unmapped) is left to the walk, which refuses it by its rule. A file handed in as a
 * standard fd (vfs_allow_handed_file()) that the view does not name ends the walk on
 * itself: returns 1.
 */
static int magic_names_object(const struct vfs *v, const struct vfs_caller *c,
                              struct vfs__walk *w, const char *tgt, bool last,
                              struct vfs_verdict *verdict)
{
	struct vfs__walk *seen;
	struct stat real;
	bool same;
	int fd, r, acc;

	fd = link_object(w, &real);
	if (fd < 0)
		return fd;
	seen = malloc(sizeof(*seen));
	if (!seen) {
		close(fd);
		return -ENOMEM;
	}
	r = vfs__walk(v, c, tgt, VFS__NOFOLLOW | VFS__NOMAGIC, 0, seen, NULL);
	same = r == 0 && seen->exists && seen->st.st_dev == real.st_dev &&
	       seen->st.st_ino == real.st_ino;
	vfs__walk_done(seen);
	free(seen);
	if (!same && last && (acc = handed_acc(v, &real))) {
		/* A handed file the view does not name (Landlock's rule names the inode):
		 * the policy allows what its fd allows. One the view names is the view's. */
		end_on_object(w, fd, &real);
		w->handed_acc = acc;
		return 1;
	}
	close(fd);
	/* ELOOP: the name passes through a magic link (a symlink the sandbox made in its
	 * own /tmp, to /proc/self/fd/N), which no text of an object's path holds: the walk
	 * on would reach whatever that fd names, never this object */
	if ((r == 0 && !same) || r == -ELOOP) {
		vfs__verdict(verdict, -EACCES, "an object outside the view (a magic link)", tgt);
		return -EACCES;
	}
	return 0;
}

/* The walk's buffers, from here on room for paths up to VFS__LONG_MAX: vpath, a
 * component's path (walk_step()) or a long link target, and the rest to walk, in one
 * block, their contents kept. Only a walk that meets such a path pays for it. */
#define LONG_BUF_SIZE (VFS__LONG_MAX * 2 + (2 * VFS__LONG_MAX + 2))
static int go_long(struct vfs__walk *w, char **rem, size_t *remcap)
{
	char *b;

	if (w->long_buf)
		return 0;
	b = malloc(LONG_BUF_SIZE);
	if (!b)
		return -ENOMEM;
	memcpy(b, w->vpath, w->vlen + 1);
	memcpy(b + 2 * VFS__LONG_MAX, *rem, strlen(*rem) + 1);
	w->long_buf = b;
	w->vpath = b;
	w->vcap = VFS__LONG_MAX;
	*rem = b + 2 * VFS__LONG_MAX;
	*remcap = LONG_BUF_SIZE - 2 * VFS__LONG_MAX;
	return 0;
}

/*
 * A magic link (/proc/<pid>/fd/N, cwd) to a directory deeper than PATH_MAX, which readlink
 * cannot print: the directory is named by climbing (vfs_dir_vpath()) and the walk goes on
 * in long buffers, from that path, deciding every component as for any other target.
 * Other objects that deep have no name the walk could decide on: ENAMETOOLONG, as before.
 */
static int deep_link_target(struct vfs__walk *w, char **rem, size_t *remcap, const char **ret)
{
	int fd, r;

	if (!w->mount || !w->mount->is_proc || w->proc_depth < 2 || w->dirfd < 0)
		return -ENAMETOOLONG;
	fd = openat(w->dirfd, w->hname, O_PATH | O_DIRECTORY | O_CLOEXEC); /* follows it */
	if (fd < 0)
		return errno == ENOTDIR ? -ENAMETOOLONG : negative_errno();
	r = go_long(w, rem, remcap);
	if (r == 0)
		r = vfs_dir_vpath(fd, w->long_buf + w->vcap, w->vcap);
	close(fd);
	if (r < 0)
		return r;
	*ret = w->long_buf + w->vcap;
	return 0;
}

/* The length of the canonical parent of w->vpath ("/" for a top-level name). */
static size_t parent_len(const struct vfs__walk *w)
{
	const char *sl = strrchr(w->vpath, '/');

	return sl == w->vpath ? 1 : (size_t)(sl - w->vpath);
}

/* Whether the name s (nl bytes) is a plain name, neither "." nor "..". */
static bool plain_name(const char *s, size_t nl)
{
	return nl > 0 && nl <= NAME_MAX && !(s[0] == '.' && (nl == 1 || (nl == 2 && s[1] == '.')));
}

/*
 * Several directories in a row inside one mapping that the policy says nothing more
 * about (no exact rule and no glob on any of them, not /proc, not own_only, not a
 * cached read-only mapping) are looked up with one openat2() that refuses symlinks,
 * instead of one O_NOFOLLOW open each: what walk_step() would do for each of them is
 * that open and nothing else. A symlink, a missing name, a non-directory or any other
 * failure leaves the walk as it was, and walk_step() then takes the names one by one
 * for the same answer and verdict. The run stops before a name that is followed by
 * nothing, ".", or "..", so that walk_step() takes the path's last name itself and
 * dirfd is, as ever, that name's directory. Each emulated call by a deep path (git's
 * link of .git/objects/xx/tmp_obj_... to its object name) saves two syscalls per
 * directory. Returns the position in rem after the names taken, or 0.
 */
static size_t jump_dirs(const struct vfs *v, struct vfs__walk *w, const char *rem, size_t pos)
{
	const struct vfs__rule *m = w->mount;
	char p[PATH_MAX], rel[PATH_MAX];
	const char *last_name = NULL;
	size_t plen = w->vlen, pl_ok = 0, rlen = 0, end = 0, last_nl = 0;
	unsigned n = 0;
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	if (!m || w->block || w->long_buf || !w->exists || !S_ISDIR(w->st.st_mode) || m->is_proc ||
	    m->own_only || (w->dc && m->kind == VFS__BIND && !m->writable) ||
	    (w->resolve & RESOLVE_NO_XDEV) || plen >= sizeof(p))
		return 0;
	memcpy(p, w->vpath, plen + 1);
	for (;;) {
		const char *s = rem + pos + strspn(rem + pos, "/"), *e = strchrnul(s, '/');
		const char *ns = e + strspn(e, "/");
		size_t nl = (size_t)(e - s), nnl = strchrnul(ns, '/') - ns;

		if (!plain_name(s, nl) || !plain_name(ns, nnl))
			break;
		if (plen + 1 + nl >= sizeof(p) || rlen + 1 + nl >= sizeof(rel))
			break;
		if (plen > 1)
			p[plen++] = '/';
		memcpy(p + plen, s, nl);
		plen += nl;
		p[plen] = '\0';
		if (vfs__mount_exact(v, p) || vfs__glob_latest(v, p))
			break;
		if (rlen)
			rel[rlen++] = '/';
		memcpy(rel + rlen, s, nl);
		rlen += nl;
		rel[rlen] = '\0';
		last_name = s;
		last_nl = nl;
		pl_ok = plen;
		pos = end = (size_t)(e - rem);
		n++;
	}
	if (n < 2)
		return 0;
	fd = (int)syscall(SYS_openat2, w->fd, rel, &how, sizeof(how));
	if (fd < 0)
		return 0;
	fd_put(w, &w->dirfd, &w->dirfd_owned, &w->dirfd_ent);
	fd_put(w, &w->fd, &w->fd_owned, &w->fd_ent);
	w->fd = fd;
	w->fd_owned = true;
	w->pmount = m;
	w->mount_root = false;
	memcpy(w->hname, last_name, last_nl);
	w->hname[last_nl] = '\0';
	w->synth[0] = '\0';
	memcpy(w->vpath, p, pl_ok); /* p may hold the name that stopped the run */
	w->vpath[pl_ok] = '\0';
	w->vlen = pl_ok;
	w->st.st_mode = S_IFDIR;
	w->st_full = false;
	return end;
}

static int walk_once(const struct vfs *v, const struct vfs_caller *c, const char *path,
                     unsigned flags, uint64_t resolve, struct vfs__walk *w,
                     struct vfs_verdict *verdict)
{
	char rem_buf[REM_MAX], target[PATH_MAX], name[NAME_MAX + 2];
	char *rem = rem_buf;
	const char *root = "/";
	const struct vfs__rule *start_mount = NULL;
	size_t plen, pos = 0, remcap = sizeof(rem_buf);
	int budget = MAX_SYMLINKS, r;

	memset(w, 0, offsetof(struct vfs__walk, vbuf));
	memset(&w->long_buf, 0, sizeof(*w) - offsetof(struct vfs__walk, long_buf));
	w->vpath = w->vbuf;
	w->vcap = sizeof(w->vbuf);
	w->fd = w->dirfd = -1;
	w->dc = v->dcache;
	w->resolve = resolve;
	vfs__verdict(verdict, 0, NULL, path);
	if (!v->finalized)
		return -EINVAL;
	plen = strlen(path);
	if (plen == 0)
		return -ENOENT;
	if (plen >= PATH_MAX)
		return -ENAMETOOLONG;
	if (resolve & RESOLVE_CACHED)
		return -EAGAIN;

	/* trailing "/" asks for a directory; a trailing "." or ".." is not a name */
	{
		const char *e = path + plen;
		const char *s;

		while (e > path && e[-1] == '/')
			e--;
		w->must_dir = e > path && e < path + plen;
		for (s = e; s > path && s[-1] != '/'; s--)
			;
		w->dot_last = (e - s == 1 && s[0] == '.') ||
		              (e - s == 2 && s[0] == '.' && s[1] == '.');
	}

	if (path[0] != '/' || (resolve & (RESOLVE_IN_ROOT | RESOLVE_BENEATH))) {
		if (!c || !c->base)
			return -ENOTDIR;
		if (resolve & (RESOLVE_IN_ROOT | RESOLVE_BENEATH))
			root = c->base;
		if (path[0] == '/' && (resolve & RESOLVE_BENEATH))
			return -EXDEV;
	}
	if (!(path[0] == '/' && !(resolve & RESOLVE_IN_ROOT)) &&
	    strlen(c->base) + plen + 2 > PATH_MAX) {
		/* a base deeper than PATH_MAX (vfs_dir_vpath()) */
		if (strlen(c->base) + plen + 2 > VFS__LONG_MAX)
			return -ENAMETOOLONG;
		rem[0] = '\0';
		if ((r = go_long(w, &rem, &remcap)) < 0)
			return r;
	}
	if (resolve & RESOLVE_NO_XDEV)
		start_mount = vfs__mount_covering(v, path[0] == '/' ? root : c->base);
	if (path[0] == '/' && !(resolve & RESOLVE_IN_ROOT))
		str_copy(rem, remcap, path);
	else if ((r = rem_join(rem, remcap, c->base, strlen(c->base), path)) < 0)
		return r;
	w->root = root;
	if ((r = walk_reset(v, w)) < 0)
		return r;

	for (;;) {
		const char *s, *e;
		bool last, follow;
		size_t nl, jumped;

		while (rem[pos] == '/')
			pos++;
		if (!rem[pos])
			break;
		s = rem + pos;
		e = strchrnul(s, '/');
		nl = e - s;
		if (nl > NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(name, s, nl);
		name[nl] = '\0';
		pos = e - rem;
		last = rem[pos + strspn(rem + pos, "/")] == '\0';
		follow = !last || !(flags & VFS__NOFOLLOW) ||
		         (w->must_dir && !(flags & VFS__NAMEOP));

		if (!last && (jumped = jump_dirs(v, w, rem, (size_t)(s - rem))) > 0) {
			pos = jumped;
			continue;
		}
		if (streq(name, ".")) {
			if (!w->exists)
				return -ENOENT;
			if (!S_ISDIR(w->st.st_mode))
				return -ENOTDIR;
			continue;
		}
		if (streq(name, "..")) {
			if (!w->exists)
				return -ENOENT;
			if (!S_ISDIR(w->st.st_mode))
				return -ENOTDIR;
			/* ".." stops at the (virtual) root, as at a process's root dir */
			if (streq(w->vpath, root)) {
				if (resolve & RESOLVE_BENEATH)
					return -EXDEV;
				continue;
			}
			/* out of a mapping's root is out of its mount */
			if ((resolve & RESOLVE_NO_XDEV) && w->mount_root)
				return -EXDEV;
			if ((r = rem_join(rem, remcap, w->vpath, parent_len(w), rem + pos)) < 0)
				return r;
			pos = 0;
			if ((r = walk_reset(v, w)) < 0)
				return r;
			continue;
		}

		r = walk_step(v, c, w, name, rem + pos, last, flags, verdict);
		if (r < 0)
			return r;
		if (r == 0)
			continue;
		/* a symlink */
		if (!follow)
			break;
		{
			bool magic;
			const char *parent, *tgt = target;
			size_t lp, lt, lr;

			if (--budget < 0 || (resolve & RESOLVE_NO_SYMLINKS))
				return -ELOOP;
			r = link_target(v, w, target, sizeof(target), &magic);
			if (r == -ENAMETOOLONG) {
				r = deep_link_target(w, &rem, &remcap, &tgt);
				magic = r == 0;
			}
			if (r < 0)
				return r;
			if (magic && ((resolve & RESOLVE_NO_MAGICLINKS) || (flags & VFS__NOMAGIC)))
				return -ELOOP;
			/* the kernel's nd_jump_link(): not safe for scoped lookups */
			if (magic && (resolve & (RESOLVE_IN_ROOT | RESOLVE_BENEATH)))
				return -EXDEV;
			/* RESOLVE_NO_XDEV: a magic link lands on the mount of what it names, an
			 * absolute target on the root's (nd_jump_link(), nd_jump_root()) */
			if ((resolve & RESOLVE_NO_XDEV) &&
			    (magic ? tgt[0] != '/' || vfs__mount_covering(v, tgt) != w->mount
			           : tgt[0] == '/' && vfs__mount_covering(v, root) != w->mount))
				return -EXDEV;
			if (magic && (r = deleted_target(v, w, tgt, last)) != 0) {
				if (r < 0)
					return r;
				break;
			}
			if (magic && tgt[0] != '/') {
				struct stat st;
				int nfd;

				if (!last || !anon_object(tgt))
					return -ENOENT;
				nfd = link_object(w, &st);
				if (nfd < 0)
					return nfd;
				end_on_object(w, nfd, &st);
				break;
			}
			if (magic && tgt[0] == '/' &&
			    (r = magic_names_object(v, c, w, tgt, last, verdict)) != 0) {
				if (r < 0)
					return r;
				break;
			}
			if (tgt[0] == '\0')
				return -ENOENT;
			if (tgt[0] == '/' && (resolve & RESOLVE_BENEATH))
				return -EXDEV;
			if (tgt[0] == '/') {
				/* absolute means the virtual root (RESOLVE_IN_ROOT: the dirfd) */
				parent = streq(root, "/") ? "" : root;
				lp = strlen(parent);
			} else {
				parent = w->vpath;
				lp = parent_len(w);
			}
			/* rem = parent / target / rest (rest keeps a trailing slash), in place:
			 * the rest moves, parent and target lie outside rem */
			lt = strlen(tgt);
			lr = strlen(rem + pos);
			if (lp + lt + lr + 3 > remcap)
				return -ENAMETOOLONG;
			memmove(rem + lp + lt + 2, rem + pos, lr + 1);
			memcpy(rem, parent, lp);
			rem[lp] = '/';
			memcpy(rem + lp + 1, tgt, lt);
			rem[lp + 1 + lt] = '/';
			pos = 0;
			if ((r = walk_reset(v, w)) < 0)
				return r;
		}
	}

	if (w->exists && w->must_dir && !(flags & VFS__NAMEOP) && !S_ISDIR(w->st.st_mode) &&
	    !S_ISLNK(w->st.st_mode))
		return -ENOTDIR;
	/* RESOLVE_NO_XDEV: each mapping is a mount of the sandbox's (the view's, in either
	 * mode); ".." and jumps out of one are refused above, and a walk that ends in
	 * another mapping than it began in went down into it */
	if ((resolve & RESOLVE_NO_XDEV) && vfs__mount_covering(v, w->vpath) != start_mount)
		return -EXDEV;
	/* the path ended on a directory passed through by type only (the root, a mapping
	 * root, "." or ".."): its real stat now, fresh */
	if (w->exists && !w->st_full) {
		if (fstat(w->fd, &w->st) < 0)
			return negative_errno();
		w->st_full = true;
	}
	if (verdict) {
		str_copy(verdict->vpath, sizeof(verdict->vpath), w->vpath);
		str_copy(verdict->rule, sizeof(verdict->rule),
		         w->block ? w->block->desc : w->mount ? w->mount->desc :
		         vfs__is_implicit(v, w->vpath) ? "implicit directory" : "unmapped");
	}
	return 0;
}

int vfs__walk(const struct vfs *v, const struct vfs_caller *c, const char *path, unsigned flags,
              uint64_t resolve, struct vfs__walk *w, struct vfs_verdict *verdict)
{
	int r = walk_once(v, c, path, flags, resolve, w, verdict);

	if (r == -EAGAIN && w->raced) {
		vfs__walk_done(w);
		r = walk_once(v, c, path, flags & ~VFS__STATONLY, resolve, w, verdict);
	}
	return r;
}

/* procfs files uid 0 writes with no capability (their mode alone guards them): the
 * kernel's settings, and host-wide switches such as dynamic_debug/control (the kernel's
 * debug messages) and acpi/wakeup (the machine's wake-up sources); scsi and driver hold
 * drivers' own, whose checks vary. */
_public_ const char *const vfs_proc_readonly[] = {
	"sys", "sysrq-trigger", "irq", "bus", "fs", "dynamic_debug", "acpi", "scsi", "driver",
	NULL,
};

/* Whether vpath lies in one of vfs_proc_readonly below the procfs mapping m. */
static bool proc_readonly(const struct vfs__rule *m, const char *vpath)
{
	const char *rel;

	if (!m->is_proc || !vfs__path_under(vpath, m->virt))
		return false;
	rel = vfs__below(m, vpath);
	if (*rel++ != '/')
		return false;
	for (size_t i = 0; vfs_proc_readonly[i]; i++) {
		size_t n = strlen(vfs_proc_readonly[i]);

		if (strncmp(rel, vfs_proc_readonly[i], n) == 0 && (!rel[n] || rel[n] == '/'))
			return true;
	}
	return false;
}

/* Whether vpath lies in the host's /sys below the mapping m of a parent of it ("/"):
 * read-only there whatever m says (the mounts agree: spawn.c). */
static bool sys_readonly(const struct vfs__rule *m, const char *vpath)
{
	char host[PATH_MAX];

	if (!m->host || streq(m->host, "/sys") || !vfs__path_under("/sys", m->host) ||
	    !vfs__path_under(vpath, m->virt))
		return false;
	return !vfs__host_below(m, vpath, host, sizeof(host)) || vfs__path_under(host, "/sys");
}

/*
 * The decision on a finished walk. want: 0 = look (stat), else VFS_WANT_* bits. WRITE
 * asks for the object's mapping to be writable, CREATE for the directory holding the
 * name (entries are created, removed and renamed there).
 */
int vfs__walk_policy(const struct vfs *v, struct vfs__walk *w, unsigned want,
                     struct vfs_verdict *verdict)
{
	const struct vfs__rule *m;

	if (w->own_object) {
		vfs__verdict(verdict, 0, "the caller's own memfd", w->vpath);
		return 0;
	}
	if (w->handed_acc) {
		int acc = w->handed_acc - 1;

		/* (an open's own access mode is held to the fd's by vfs_open()) */
		if ((want & VFS_WANT_EXEC) || ((want & VFS_WANT_WRITE) && acc == O_RDONLY)) {
			vfs__verdict(verdict, -EACCES, "a file handed in from outside the view, "
			             "beyond what its fd allows", w->vpath);
			return -EACCES;
		}
		vfs__verdict(verdict, 0, "a file handed in from outside the view", w->vpath);
		return 0;
	}
	if (w->block && (w->block->kind == VFS__HIDE || (want & ~VFS_WANT_NOFOLLOW))) {
		int e = w->block->kind == VFS__HIDE && !(want & VFS_WANT_CREATE) ? -ENOENT : -EACCES;

		vfs__verdict(verdict, e, w->block->desc, w->vpath);
		return e;
	}
	if (w->exists && (S_ISCHR(w->st.st_mode) || S_ISBLK(w->st.st_mode)) &&
	    vfs__hides_devices(w->mount)) {
		vfs__verdict(verdict, -ENOENT, "a device node the policy does not name", w->vpath);
		return -ENOENT;
	}
	if (want & VFS_WANT_CREATE)
		m = w->mount_root ? w->pmount : w->mount;
	else
		m = w->mount;
	if ((want & (VFS_WANT_WRITE | VFS_WANT_CREATE)) && (!m || !m->writable)) {
		vfs__verdict(verdict, -EROFS, m ? m->desc : "unmapped (read-only)", w->vpath);
		return -EROFS;
	}
	if ((want & (VFS_WANT_WRITE | VFS_WANT_CREATE)) &&
	    (proc_readonly(m, w->vpath) || sys_readonly(m, w->vpath))) {
		vfs__verdict(verdict, -EROFS, "the kernel's settings (read-only)",
		             w->vpath);
		return -EROFS;
	}
	if (w->exists == false && !(want & VFS_WANT_CREATE) && !w->mount &&
	    !vfs__is_implicit(v, w->vpath)) {
		vfs__verdict(verdict, -ENOENT, "unmapped", w->vpath);
		verdict_native(verdict, w, -1, NULL, w->vpath, NULL);
		return -ENOENT;
	}
	vfs__verdict(verdict, 0, m ? m->desc : "implicit directory", w->vpath);
	return 0;
}

/* A real open of an O_PATH fd through /proc/self/fd: the kernel checks the access mode
 * against the inode as for any open, and no name is looked up again. The directory is
 * opened once, by vfs_finalize() (every thread of the process shares its fd table; the
 * vfs is the supervisor's, never used in a child): one component to look up instead of
 * three, on every open the sandbox makes. */
int vfs__reopen(const struct vfs *v, int fd, int flags)
{
	char p[64];
	int r;

	flags = (flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW)) | O_CLOEXEC;
	if (v->proc_self_fd >= 0) {
		snprintf(p, sizeof(p), "%d", fd);
		r = openat(v->proc_self_fd, p, flags);
	} else {
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		r = open(p, flags);
	}
	return r < 0 ? negative_errno() : r;
}
