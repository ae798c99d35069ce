/* SPDX-License-Identifier: MIT */
/*
 * The backing store: the run's private directories (made, flock()ed for as long as the
 * run lives, swept when their run died without removing them), the namespaced mode's
 * skeleton tree of mount points, and the sized tmpfs mounts. Everything here touches the
 * host filesystem; nothing here decides.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "io.h"
#include "macros.h"
#include "vfs-internal.h"

void vfs__rm_rf_at(int dfd, const char *name)
{
	DIR *d;
	struct dirent *de;
	int fd;

	/* An empty directory (most of a run's: a home or /dev/shm nothing wrote to, a
	 * mount point's parents) goes in one call, a file or a symlink in two; only a
	 * directory with entries is opened and read. Nothing here follows a symlink. */
	if (unlinkat(dfd, name, AT_REMOVEDIR) == 0)
		return;
	if (errno == ENOTDIR) {
		unlinkat(dfd, name, 0);
		return;
	}
	if (errno == ENOENT)
		return;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		unlinkat(dfd, name, 0);
		return;
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d)))
		if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
			vfs__rm_rf_at(dirfd(d), de->d_name);
	closedir(d);
	unlinkat(dfd, name, AT_REMOVEDIR);
}

/*
 * A run's private directories (/tmp/moat-vfs-*, /dev/shm/moat-root-*) are removed by
 * vfs_free(), which a supervisor killed by SIGKILL (the OOM killer, a CI timeout) never
 * reaches; what its sandbox wrote to /tmp would stay on the host for good. So each
 * directory is flock()ed for as long as its run lives, through an fd the vfs keeps (and
 * the keeper inherits), and every vfs_finalize() first removes the directories of its
 * kind that nobody holds any more (after vfs_defer_sweep(), vfs_sweep_stale() does,
 * later). Only directories of our own user are touched, never through a symlink, and
 * none younger than SWEEP_GRACE_S: its creator may be between mkdtemp() and flock().
 */
#define SWEEP_GRACE_S 10

/* An fd of dfd/name holding its exclusive lock, or -errno (-EWOULDBLOCK: a run holds it). */
int vfs__lock_private(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return negative_errno();
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int r = negative_errno();

		close(fd);
		return r;
	}
	return fd;
}

/*
 * Mount points the keeper made on the host (in a mapped host directory: a workspace that
 * holds a --bind's destination) outlive a run killed before its teardown. The run lists
 * them (vfs_note_made()) in the caller's state directory, as "made-" and its private
 * directory's name: records "d|f DEV INO BTIME HOSTPATH", each ended by a NUL (a path
 * may hold a newline). The sweep that removes a dead run's private directory undoes its
 * list first: each object goes only while it is still the very one made (device, inode,
 * birth time, our uid), and empty, the last made first, so a parent made for a child
 * goes after it. Not in /tmp beside the private directory: a sandbox given the host's
 * /tmp could make a directory of that name with a list of its own, and have the sweep,
 * run by root, remove empty files of its choosing; the state directory is one that this
 * run's sandbox does not see (the caller checks, as for the covering's records). Another
 * run's sandbox that is given it could still write a list; what such a list can name is
 * then bounded by the checks of undo_one(): an empty object of ours, born within
 * MADE_WINDOW_NS after a private directory that the forger made itself.
 */
#define MADE_PREFIX "made-"
#define MADE_MAX (1u << 20)
/* The keeper makes its mount points while it sets the sandbox up, seconds after the
 * private directory; an object born outside that window is not one of them, whatever a
 * list says (a list is only as trustworthy as the state directory: see undo_one()). */
#define MADE_WINDOW_NS (120 * 1000000000ull)

static uint64_t statx_ns(const struct statx_timestamp *t)
{
	return (uint64_t)t->tv_sec * 1000000000u + t->tv_nsec;
}

/* "made-moat-vfs-XXXXXX" for a private directory path or name */
static int made_name(const char *private_dir, char *buf, size_t len)
{
	const char *base = strrchr(private_dir, '/');

	base = base ? base + 1 : private_dir;
	return (size_t)snprintf(buf, len, MADE_PREFIX "%s", base) < len ? 0 : -ENAMETOOLONG;
}

/* The directory part of an absolute path ("/" for "/x") into parent; its last
 * component, or NULL when there is none or the directory does not fit. */
static const char *split_parent(const char *path, char *parent, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (!slash || !slash[1] || (size_t)(slash - path) >= len)
		return NULL;
	snprintf(parent, len, "%.*s", slash == path ? 1 : (int)(slash - path), path);
	return slash + 1;
}

_public_ void vfs_note_made(struct vfs *v, int state_fd, const char *vpath, dev_t dev,
			    ino_t ino, bool dir)
{
	const struct vfs__rule *m;
	char parent[PATH_MAX], name[64], *host = NULL, *rec = NULL;
	const char *rest;
	struct statx stx;
	uint64_t btime = 0;
	int n;

	if (!v->private_dir || !split_parent(vpath, parent, sizeof(parent)))
		return;
	/* made in its parent, so in the mapping that shows the parent: only a mapping of a
	 * host directory counts (a tmpfs's backing is in the private directory, which the
	 * sweep removes as a whole) */
	m = vfs__mount_covering(v, parent);
	if (!m || m->kind != VFS__BIND)
		return;
	if (v->made_fd < 0) {
		if (state_fd < 0 || made_name(v->private_dir, name, sizeof(name)) < 0)
			return;
		v->made_fd = openat(state_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND |
				    O_NOFOLLOW | O_CLOEXEC, 0600);
		if (v->made_fd < 0)
			return;
		v->made_dir = fcntl(state_fd, F_DUPFD_CLOEXEC, 3);
	}
	rest = streq(m->virt, "/") ? vpath : vpath + strlen(m->virt);
	if (asprintf(&host, "%s%s", streq(m->host, "/") ? "" : m->host, rest) < 0)
		return;
	/* its birth time, where the file system keeps one: an inode number is handed out
	 * again after a removal, on ext4 often at once */
	if (statx(AT_FDCWD, host, AT_SYMLINK_NOFOLLOW, STATX_INO | STATX_BTIME, &stx) == 0 &&
	    makedev(stx.stx_dev_major, stx.stx_dev_minor) == dev && stx.stx_ino == ino &&
	    (stx.stx_mask & STATX_BTIME))
		btime = statx_ns(&stx.stx_btime);
	n = asprintf(&rec, "%c %llu %llu %llu %s", dir ? 'd' : 'f', (unsigned long long)dev,
		     (unsigned long long)ino, (unsigned long long)btime, host);
	if (n > 0)
		(void)write_all(v->made_fd, rec, (size_t)n + 1); /* with its NUL */
	free(rec);
	free(host);
}

/* The run ended and removed what it made (or said what it left): its list goes. */
void vfs__made_done(struct vfs *v)
{
	char name[64];

	if (v->made_fd < 0)
		return;
	if (v->made_dir >= 0 && made_name(v->private_dir, name, sizeof(name)) == 0)
		(void)unlinkat(v->made_dir, name, 0);
	v->made_fd = safe_close(v->made_fd);
	v->made_dir = safe_close(v->made_dir);
}

/* One record of a list, removed if it is still what was made, made while its run set
 * up (born from the private directory's birth to MADE_WINDOW_NS later), and empty. */
static void undo_one(const char *rec, uint64_t since)
{
	unsigned long long dev, ino, btime;
	char type, parent[PATH_MAX];
	const char *path, *name;
	_cleanup_close_ int pfd = -1;
	struct statx stx;
	int used = 0;

	if (sscanf(rec, "%c %llu %llu %llu %n", &type, &dev, &ino, &btime, &used) != 4 || !used ||
	    (type != 'd' && type != 'f'))
		return;
	path = rec + used;
	if (path[0] != '/' || !(name = split_parent(path, parent, sizeof(parent))))
		return;
	pfd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
	/* whatever the way to it, only the very object made is removed */
	if (pfd < 0 ||
	    statx(pfd, name, AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_INO | STATX_UID |
		  STATX_SIZE | STATX_BTIME, &stx) < 0 ||
	    makedev(stx.stx_dev_major, stx.stx_dev_minor) != (dev_t)dev ||
	    stx.stx_ino != ino || stx.stx_uid != geteuid() || !(stx.stx_mask & STATX_BTIME) ||
	    statx_ns(&stx.stx_btime) != btime || btime < since || btime - since > MADE_WINDOW_NS)
		return;
	if (type == 'd' && S_ISDIR(stx.stx_mode))
		(void)unlinkat(pfd, name, AT_REMOVEDIR); /* refused unless empty */
	else if (type == 'f' && S_ISREG(stx.stx_mode) && stx.stx_size == 0)
		(void)unlinkat(pfd, name, 0);
}

/* The list of the dead run whose private directory is name in dfd (its lock held),
 * undone, then removed. */
static void undo_made(int state_fd, int dfd, const char *name)
{
	_cleanup_close_ int fd = -1;
	struct statx dir;
	char list[64];
	struct stat st;
	char *buf;
	ssize_t n;

	if (state_fd < 0 || made_name(name, list, sizeof(list)) < 0)
		return;
	fd = openat(state_fd, list, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	if (statx(dfd, name, AT_SYMLINK_NOFOLLOW, STATX_BTIME, &dir) == 0 &&
	    (dir.stx_mask & STATX_BTIME) &&
	    fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	    st.st_size > 0 && (uint64_t)st.st_size <= MADE_MAX &&
	    (buf = malloc((size_t)st.st_size))) {
		n = read(fd, buf, (size_t)st.st_size);
		/* a record cut short (killed mid-write) has no NUL yet: left out */
		while (n > 0 && buf[n - 1] != '\0')
			n--;
		for (ssize_t end = n; end > 0;) {
			ssize_t b = end - 1; /* the NUL that ends this record */

			while (b > 0 && buf[b - 1] != '\0')
				b--;
			undo_one(buf + b, statx_ns(&dir.stx_btime));
			end = b;
		}
		free(buf);
	}
	(void)unlinkat(state_fd, list, 0);
}

void vfs__sweep_stale(const char *parent, const char *prefix, int state_fd)
{
	size_t pl = strlen(prefix);
	DIR *d = opendir(parent);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		struct stat st;
		int fd;

		/* mkdtemp's names: the prefix and six characters */
		if (strncmp(de->d_name, prefix, pl) != 0 || strlen(de->d_name) != pl + 6)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
		    time(NULL) - st.st_mtime < SWEEP_GRACE_S)
			continue;
		fd = vfs__lock_private(dirfd(d), de->d_name);
		if (fd < 0)
			continue;
		undo_made(state_fd, dirfd(d), de->d_name);
		vfs__rm_rf_at(dirfd(d), de->d_name);
		close(fd);
	}
	closedir(d);
}

_public_ void vfs_defer_sweep(struct vfs *v)
{
	v->defer_sweep = true;
}

/* The same sweeps as vfs_finalize()'s, later: the run's own directories are locked
 * already, so they are left alone like any other live run's. */
_public_ void vfs_sweep_stale(const struct vfs *v, int state_fd)
{
	vfs__sweep_stale("/tmp", "moat-vfs-", state_fd);
	if (v->skeleton_dir)
		vfs__sweep_stale("/dev/shm", "moat-root-", -1);
}

int vfs__private_path(struct vfs *v, const char *prefix, char **ret)
{
	if (asprintf(ret, "%s/%s%u", v->private_dir, prefix, v->n_private++) < 0)
		return -ENOMEM;
	return 0;
}

/*
 * Where the namespaced skeleton goes. It is dozens of empty directories and mount points
 * made and removed on every run, holding nothing of the sandbox's: on a disk-backed /tmp
 * that costs milliseconds each way (ext4 journals every rmdir; about 3 ms of a 30 ms
 * /bin/true here), on a tmpfs microseconds. So /dev/shm when it is a tmpfs we may write
 * to; next to the other private files otherwise. (The sandbox's /tmp and home stay in
 * the private dir: they can be large, and /dev/shm is often small. Its /dev/shm and the
 * inline files go beside the skeleton: vfs__shm_path().)
 */
static int shm_dir(struct vfs *v)
{
	char tmpl[] = "/dev/shm/moat-root-XXXXXX";
	struct statfs sf;

	if (v->skeleton_dir)
		return 0;
	if (statfs("/dev/shm", &sf) < 0 || sf.f_type != TMPFS_MAGIC)
		return -EOPNOTSUPP;
	if (!v->defer_sweep)
		vfs__sweep_stale("/dev/shm", "moat-root-", -1);
	if (!mkdtemp(tmpl))
		return -EOPNOTSUPP;
	v->skeleton_dir = strdup(tmpl);
	if (!v->skeleton_dir)
		return -ENOMEM;
	v->skeleton_lock = vfs__lock_private(AT_FDCWD, tmpl);
	return v->skeleton_lock < 0 ? v->skeleton_lock : 0;
}

int vfs__skeleton_path(struct vfs *v, char **ret)
{
	int r = shm_dir(v);

	if (r == -EOPNOTSUPP)
		return vfs__private_path(v, "root", ret);
	if (r < 0)
		return r;
	return asprintf(ret, "%s/root", v->skeleton_dir) < 0 ? -ENOMEM : 0;
}

/*
 * A host path for a namespaced backing that belongs in memory anyway: the sandbox's
 * /dev/shm (a tmpfs natively, bounded as the host's is) and the inline files (a few
 * bytes, a synthetic /etc/resolv.conf). Beside the skeleton on the host's /dev/shm, so
 * that a run makes and removes no inode for them on a disk-backed /tmp (ext4 without a
 * journal scans past every recently deleted inode to allocate one); in the private dir
 * where /dev/shm is no tmpfs. Removed by vfs__shm_remove(), through the directory fd
 * held since mkdtemp().
 */
int vfs__shm_path(struct vfs *v, const char *prefix, char **ret)
{
	int r = shm_dir(v);

	if (r == -EOPNOTSUPP)
		return vfs__private_path(v, prefix, ret);
	if (r < 0)
		return r;
	return asprintf(ret, "%s/shm%u", v->skeleton_dir, v->n_shm++) < 0 ? -ENOMEM : 0;
}

void vfs__shm_remove(const struct vfs *v)
{
	if (v->skeleton_lock < 0)
		return;
	for (unsigned i = 0; i < v->n_shm; i++) {
		char name[32];

		snprintf(name, sizeof(name), "shm%u", i);
		vfs__rm_rf_at(v->skeleton_lock, name);
	}
}

/*
 * unlinkat() of rel below root, never through a symlink: the skeleton lies in a shared
 * /dev/shm, where a process of our user (another run's sandbox given the host's
 * /dev/shm) can put a symlink in place of one of its directories, and the kernel
 * follows one in any but the last component. The parent is opened beneath root with
 * no symlink on the way; without openat2 nothing is removed here (the walk does it).
 */
struct skel_parent {
	char path[PATH_MAX]; /* the last parent opened, and its fd (or -1) */
	int fd;
};

static void skel_unlink(int root, struct skel_parent *last, const char *rel, int flags)
{
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
		           RESOLVE_NO_XDEV,
	};
	const char *s = strrchr(rel, '/'), *name = s ? s + 1 : rel;
	int dfd = root;

	if (s) {
		size_t len = (size_t)(s - rel);

		if (len >= sizeof(last->path))
			return;
		/* siblings come one after another (/dev's nodes): their parent is opened once */
		if (last->fd < 0 || strlen(last->path) != len || memcmp(last->path, rel, len)) {
			last->fd = safe_close(last->fd);
			snprintf(last->path, sizeof(last->path), "%.*s", (int)len, rel);
			last->fd = (int)syscall(SYS_openat2, root, last->path, &how, sizeof(how));
			if (last->fd < 0)
				return;
		}
		dfd = last->fd;
	}
	/* the table says what each mount point is; a wrong guess costs one call more */
	if (unlinkat(dfd, name, flags) < 0) {
		if (errno == ENOTDIR && flags)
			(void)unlinkat(dfd, name, 0);
		else if (errno == EISDIR && !flags)
			(void)unlinkat(dfd, name, AT_REMOVEDIR);
	}
}

/*
 * Take the skeleton down without reading it back: what finalize made in it is known
 * from the table (a mount point for each mapping whose parent is unmapped, the unmapped
 * directories, deepest first since a child sorts after its parent), and nothing else
 * writes there but a process of our user with the host's /dev/shm (skel_unlink()). One
 * unlinkat() per entry instead of an open, a read of the directory and a close for each. Whatever is left (a
 * skeleton only half built) makes the last rmdir() fail: the caller then removes the
 * tree by walking it.
 */
void vfs__skel_remove(const struct vfs *v)
{
	struct skel_parent last = { .fd = -1 };
	_cleanup_close_ int root = -1;

	if (!v->skeleton)
		return;
	/* Through the fd held since mkdtemp(): a symlink put in place of its directory
	 * in /dev/shm would lead the name elsewhere. */
	root = v->skeleton_lock >= 0
		       ? openat(v->skeleton_lock, "root", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
		       : open(v->skeleton, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (root < 0)
		return;
	for (size_t i = 0; i < v->n_mounts; i++) {
		const char *virt = v->mounts[i]->virt;
		char parent[PATH_MAX];

		/* exactly the mount points finalize made: below a mapping there are none,
		 * and every directory on the way is one finalize made, never a symlink */
		if (!split_parent(virt, parent, sizeof(parent)) || !vfs__is_implicit(v, parent))
			continue;
		skel_unlink(root, &last, virt + 1,
			    S_ISDIR(v->mounts[i]->root_type) ? AT_REMOVEDIR : 0);
	}
	for (size_t i = v->n_implicit; i-- > 0;)
		if (!streq(v->implicit[i], "/"))
			skel_unlink(root, &last, v->implicit[i] + 1, AT_REMOVEDIR);
	safe_close(last.fd);
	(void)rmdir(v->skeleton);
}

/* mkdir -p of rel (absolute, "/a/b") below base, a private directory of ours. */
int vfs__skel_mkdirs(const char *base, const char *rel)
{
	char p[PATH_MAX];

	if ((size_t)snprintf(p, sizeof(p), "%s%s", base, rel) >= sizeof(p))
		return -ENAMETOOLONG;
	for (char *s = p + strlen(base) + 1; ; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;

			*s = '\0';
			if (mkdir(p, 0755) < 0 && errno != EEXIST)
				return -errno;
			*s = c;
			if (!c)
				break;
		}
	}
	return 0;
}

/* A mount point in the skeleton: same type as the source, so a bind mount fits on it;
 * symlink sources become the same symlink (a symlink cannot be bind-mounted). */
int vfs__skel_mountpoint(const char *base, const char *rel, const struct vfs__rule *m,
                           const struct stat *st)
{
	char p[PATH_MAX], target[PATH_MAX];
	ssize_t n;
	int fd;

	if ((size_t)snprintf(p, sizeof(p), "%s%s", base, rel) >= sizeof(p))
		return -ENAMETOOLONG;
	if (m->root_is_link) {
		n = readlinkat(m->root_fd, "", target, sizeof(target) - 1);
		if (n < 0)
			return -errno;
		target[n] = '\0';
		if (symlink(target, p) < 0 && errno != EEXIST)
			return -errno;
	} else if (S_ISDIR(st->st_mode)) {
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -errno;
	} else {
		fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			return -errno;
		close(fd);
	}
	return 0;
}

int vfs__write_file(const char *path, const char *data, size_t n)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);

	if (fd < 0)
		return -errno;
	while (n) {
		ssize_t w = write(fd, data, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		data += w;
		n -= w;
	}
	return 0;
}

/* A tmpfs of the directive's SIZE over its backing directory (SIZE as tmpfs reads it:
 * bytes, k, m, g or a % of memory). */
int vfs__mount_sized(struct vfs__rule *a)
{
	char opts[96];

	if ((size_t)snprintf(opts, sizeof(opts), "size=%s,mode=1777", a->size) >= sizeof(opts))
		return -EINVAL;
	if (mount("tmpfs", a->host, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return negative_errno();
	a->mounted = true;
	return 0;
}
