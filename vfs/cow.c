/* SPDX-License-Identifier: MIT */
/*
 * The copy-on-write workspace: an overlayfs whose lower layer is the host's workspace
 * and whose upper layer is a private directory of the run, and what to do with the
 * upper layer once the sandbox is gone (its change set, applied to the host directory,
 * or written as a tar).
 *
 * The upper layer was written by the sandbox: everything in it is hostile input. It is
 * read only through fds, every name opened O_NOFOLLOW below an fd of the layer; anything
 * overlayfs itself would not have made (a device other than a whiteout, a FIFO, a
 * socket, a redirect) is refused and reported; a hard link is copied as a file of its
 * own; a file larger than the limit is refused. The host directory is written only
 * below an fd opened before the overlay was mounted, every path resolved with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
 * RESOLVE_NO_XDEV), and every name replaced with renameat() of a new file made
 * O_EXCL beside it, so a symlink, a mount point or a hard link already there is never
 * followed or written through.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <assert.h>
#include <unistd.h>

#include "cleanup.h"
#include "error.h"
#include "io.h"
#include "macros.h"
#include "vfs-internal.h"
#include "vfs.h"

#define COW_MAX_DEPTH 256
#define OVL_XATTR "trusted.overlay."

/* --- the overlay ------------------------------------------------------------------- */

_public_ int vfs_set_cow(struct vfs *v, const char *upper_dir)
{
	if (v->finalized)
		return -EBUSY;
	v->cow = true;
	free(v->cow_dir);
	v->cow_dir = NULL;
	if (upper_dir && !(v->cow_dir = strdup(upper_dir)))
		return -ENOMEM;
	return 0;
}

/* The workspace: the last live writable bind covering where the sandbox starts. */
static struct vfs__rule *workspace_rule(struct vfs *v)
{
	const char *cands[] = { v->chdir, v->profile_cwd, v->cwd };

	for (size_t c = 0; c < ELEMENTSOF(cands); c++) {
		if (!cands[c])
			continue;
		for (size_t i = v->n_rules; i-- > 0;) {
			struct vfs__rule *a = &v->rules[i];

			if (a->kind == VFS__BIND && !a->dead && a->writable && !a->own_only &&
			    !streq(a->virt, "/") && vfs__path_under(cands[c], a->virt))
				return a;
		}
	}
	return NULL;
}

_public_ const char *vfs_workspace_host(const struct vfs *v)
{
	const struct vfs__rule *a = workspace_rule((struct vfs *)v);

	return a ? a->host : NULL;
}

static int mkdir_p0700(const char *p)
{
	if (mkdir(p, 0700) < 0 && errno != EEXIST)
		return negative_errno();
	return 0;
}

_public_ int vfs_cow_mount_overlay(const char *target, int lower_fd, const char *upper,
                                   const char *work)
{
	char opts[3 * PATH_MAX];

	/* The lower layer by fd: a path with ',' or ':' would split the options. Plain
	 * layers only (no redirects, metacopy or index), so that the upper holds whole
	 * files, whiteouts and opaque directories, and nothing else. */
	if (strpbrk(upper, ",:\\") || strpbrk(work, ",:\\"))
		return -EINVAL;
	if ((size_t)snprintf(opts, sizeof(opts),
	                     "lowerdir=/proc/self/fd/%d,upperdir=%s,workdir=%s,redirect_dir=off,"
	                     "index=off,metacopy=off,xino=off",
	                     lower_fd, upper, work) >= sizeof(opts))
		return -ENAMETOOLONG;
	return RET_NERRNO(mount("overlay", target, "overlay", MS_NOSUID | MS_NODEV, opts));
}

int vfs__cow_mount(struct vfs *v, struct moat_error *e)
{
	struct vfs__rule *ws = workspace_rule(v);
	char base[PATH_MAX], upper[PATH_MAX + 8], work[PATH_MAX + 8];
	struct stat st;
	int r;

	if (!ws) {
		return moat_error_set(e, EINVAL, "--cow: no writable workspace (the current "
		                      "directory or the one bound where the sandbox starts)");
	}
	if (!v->may_mount) {
		return moat_error_set(e, EPERM, "--cow needs moat to run as root: it mounts an "
		                      "overlay on the workspace in a mount namespace of its own");
	}
	/* Before the overlay exists: this fd is, and stays, the host directory itself. */
	v->cow_lower_fd = open(ws->host, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (v->cow_lower_fd < 0 || fstat(v->cow_lower_fd, &st) < 0) {
		return moat_error_set(e, errno, "--cow: %s: %s", ws->host, strerror(errno));
	}
	if (v->cow_dir)
		snprintf(base, sizeof(base), "%s", v->cow_dir);
	else
		snprintf(base, sizeof(base), "%s/cow", v->private_dir);
	/* Two overlays on one upper layer at once are undefined: one run at a time. */
	if (v->cow_dir && ((r = mkdir_p0700(base)) < 0 ||
	                   (v->cow_lock = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	                   flock(v->cow_lock, LOCK_EX | LOCK_NB) < 0)) {
		r = r < 0 ? r : -errno;
		return moat_error_set(e, r, "--cow-dir %s: %s", base,
		                      r == -EWOULDBLOCK ? "another run is using it" : strerror(-r));
	}
	snprintf(upper, sizeof(upper), "%s/upper", base);
	snprintf(work, sizeof(work), "%s/work", base);
	if ((r = mkdir_p0700(base)) < 0 || (r = mkdir_p0700(upper)) < 0 ||
	    (r = mkdir_p0700(work)) < 0) {
		return moat_error_set(e, r, "--cow: cannot make %s: %s", base, strerror(-r));
	}
	/* The upper layer starts as the workspace's root: same mode and owner. */
	if (chmod(upper, st.st_mode & 07777) < 0 || chown(upper, st.st_uid, st.st_gid) < 0) {
		return moat_error_set(e, errno, "--cow: %s: %s", upper, strerror(errno));
	}
	v->cow_upper_fd = open(upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (v->cow_upper_fd < 0) {
		return moat_error_set(e, errno, "--cow: %s: %s", upper, strerror(errno));
	}
	r = vfs_cow_mount_overlay(ws->host, v->cow_lower_fd, upper, work);
	if (r < 0) {
		return moat_error_set(e, r, "--cow: cannot mount an overlay on %s: %s", ws->host,
		                      strerror(-r));
	}
	v->cow_mounted = strdup(ws->host);
	if (!v->cow_mounted)
		return -ENOMEM;
	return 0;
}

_public_ void vfs_cow_unmount(struct vfs *v)
{
	if (v->cow_mounted && !v->cow_down)
		umount2(v->cow_mounted, MNT_DETACH);
	v->cow_down = true;
}

void vfs__cow_done(struct vfs *v)
{
	vfs_cow_unmount(v);
	free(v->cow_mounted);
	free(v->cow_dir);
	safe_close(v->cow_lower_fd);
	safe_close(v->cow_upper_fd);
	safe_close(v->cow_lock);
}

_public_ int vfs_cow_dirs(const struct vfs *v, int *ret_lower, int *ret_upper,
                          const char **ret_host)
{
	if (!v->cow_mounted)
		return -ENOENT;
	*ret_lower = v->cow_lower_fd;
	*ret_upper = v->cow_upper_fd;
	*ret_host = v->cow_mounted;
	return 0;
}

/* --- the change set of an upper layer ---------------------------------------------- */

static int push(struct vfs_cow_set *s, const struct vfs_cow_entry *e)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 32;
		struct vfs_cow_entry *n = realloc(s->e, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->e = n;
		s->cap = cap;
	}
	s->e[s->n++] = *e;
	return 0;
}

_public_ void vfs_cow_set_done(struct vfs_cow_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->e[i].path);
		free(s->e[i].target);
	}
	free(s->e);
	*s = (struct vfs_cow_set){ 0 };
}

static int hash_file(int fd, char hex[65])
{
	crypto_hash_sha256_state st;
	uint8_t buf[65536], out[32];
	ssize_t n;

	crypto_hash_sha256_init(&st);
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return negative_errno();
		crypto_hash_sha256_update(&st, buf, (size_t)n);
	}
	crypto_hash_sha256_final(&st, out);
	sodium_bin2hex(hex, 65, out, sizeof(out));
	return 0;
}

static bool has_xattr(int fd, const char *name, const char *want)
{
	char val[8];
	ssize_t n = fgetxattr(fd, name, val, sizeof(val));

	return n >= 0 && (!want || ((size_t)n == strlen(want) && !memcmp(val, want, (size_t)n)));
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of a directory (an fd of ours), sorted so the change set is stable. */
static int list_dir(int dfd, char ***ret, size_t *ret_n)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		return negative_errno();
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	while ((de = readdir(d))) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? 2 * cap : 16) * sizeof(*nn));

			if (!nn)
				goto oom;
			names = nn;
		}
		if (!(names[n] = strdup(de->d_name)))
			goto oom;
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_name);
	*ret = names;
	*ret_n = n;
	return 0;
oom:
	closedir(d);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return -ENOMEM;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static int scan_dir(int dfd, const char *rel, unsigned depth, uint64_t max_file,
                    struct vfs_cow_set *s);

static int scan_one(int dfd, const char *rel, const char *name, unsigned depth,
                    uint64_t max_file, struct vfs_cow_set *s)
{
	struct vfs_cow_entry e = { 0 };
	struct stat st;
	int r;

	if (asprintf(&e.path, "%s%s%s", rel, rel[0] ? "/" : "", name) < 0)
		return -ENOMEM;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		r = negative_errno();
		free(e.path);
		return r;
	}
	e.mode = st.st_mode;
	e.uid = st.st_uid;
	e.gid = st.st_gid;
	e.mtime = st.st_mtim;

	if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) {
		e.kind = VFS_COW_DELETE;
	} else if (S_ISDIR(st.st_mode)) {
		_cleanup_close_ int fd = -1;

		if (depth >= COW_MAX_DEPTH) {
			e.kind = VFS_COW_REFUSED;
			e.why = "nested deeper than 256 directories";
			return push(s, &e) < 0 ? (free(e.path), -ENOMEM) : 0;
		}
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			r = negative_errno();
			free(e.path);
			return r;
		}
		if (has_xattr(fd, OVL_XATTR "redirect", NULL)) {
			e.kind = VFS_COW_REFUSED;
			e.why = "a directory renamed by redirect (not made by this overlay)";
			return push(s, &e) < 0 ? (free(e.path), -ENOMEM) : 0;
		}
		e.kind = has_xattr(fd, OVL_XATTR "opaque", "y") ? VFS_COW_OPAQUE : VFS_COW_DIR;
		if ((r = push(s, &e)) < 0) {
			free(e.path);
			return r;
		}
		return scan_dir(fd, s->e[s->n - 1].path, depth + 1, max_file, s);
	} else if (S_ISLNK(st.st_mode)) {
		char buf[PATH_MAX];
		ssize_t n = readlinkat(dfd, name, buf, sizeof(buf) - 1);

		if (n < 0) {
			r = negative_errno();
			free(e.path);
			return r;
		}
		buf[n] = '\0';
		e.kind = VFS_COW_SYMLINK;
		e.size = (uint64_t)n;
		if (!(e.target = strdup(buf))) {
			free(e.path);
			return -ENOMEM;
		}
	} else if (S_ISREG(st.st_mode)) {
		_cleanup_close_ int fd = -1;
		struct stat fst;

		e.size = (uint64_t)st.st_size;
		e.hardlink = st.st_nlink > 1;
		/* A set-id file of the sandbox's would run with its owner's ids on the host,
		 * for whoever runs it there: the bits are not carried over. */
		e.setid_dropped = (st.st_mode & (S_ISUID | S_ISGID)) != 0;
		e.mode &= ~(mode_t)(S_ISUID | S_ISGID);
		if ((uint64_t)st.st_size > max_file) {
			e.kind = VFS_COW_REFUSED;
			e.why = "larger than the limit for one file";
			return push(s, &e) < 0 ? (free(e.path), -ENOMEM) : 0;
		}
		fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &fst) < 0 || fst.st_ino != st.st_ino ||
		    !S_ISREG(fst.st_mode) || (r = hash_file(fd, e.sha256)) < 0) {
			e.kind = VFS_COW_REFUSED;
			e.why = "unreadable";
		} else {
			e.kind = VFS_COW_WRITE;
		}
	} else {
		e.kind = VFS_COW_REFUSED;
		e.why = S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device node"
		        : S_ISFIFO(st.st_mode)                     ? "a FIFO"
		                                                   : "a socket";
	}
	if ((r = push(s, &e)) < 0) {
		free(e.path);
		free(e.target);
	}
	return r;
}

static int scan_dir(int dfd, const char *rel, unsigned depth, uint64_t max_file,
                    struct vfs_cow_set *s)
{
	char **names = NULL;
	size_t n = 0;
	int r = list_dir(dfd, &names, &n);

	for (size_t i = 0; r >= 0 && i < n; i++)
		r = scan_one(dfd, rel, names[i], depth, max_file, s);
	free_names(names, n);
	return r;
}

_public_ int vfs_cow_scan(int upper_fd, uint64_t max_file, struct vfs_cow_set *ret)
{
	struct vfs_cow_set s = { 0 };
	int r = scan_dir(upper_fd, "", 0, max_file, &s);

	if (r < 0) {
		vfs_cow_set_done(&s);
		return r;
	}
	for (size_t i = 0; i < s.n; i++)
		if (s.e[i].kind == VFS_COW_WRITE)
			s.bytes += s.e[i].size;
	*ret = s;
	return 0;
}

_public_ const char *vfs_cow_kind_name(enum vfs_cow_kind k)
{
	switch (k) {
	case VFS_COW_WRITE:
		return "write";
	case VFS_COW_DIR:
		return "dir";
	case VFS_COW_OPAQUE:
		return "replace-dir";
	case VFS_COW_SYMLINK:
		return "symlink";
	case VFS_COW_DELETE:
		return "delete";
	case VFS_COW_REFUSED:
	default:
		return "refused";
	}
}

/* --- commit ------------------------------------------------------------------------ */

static int open_beneath(int root, const char *rel, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
		           RESOLVE_NO_XDEV,
	};

	if (!rel[0])
		rel = ".";
	return RET_NERRNO(syscall(SYS_openat2, root, rel, &how, sizeof(how)));
}

/* Split e->path into the parent's fd (in root) and the last name. */
static int parent_of(int root, const char *path, int *ret_fd, const char **ret_name)
{
	char parent[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd;

	if (!slash) {
		parent[0] = '\0';
		*ret_name = path;
	} else {
		if ((size_t)(slash - path) >= sizeof(parent))
			return -ENAMETOOLONG;
		memcpy(parent, path, (size_t)(slash - path));
		parent[slash - path] = '\0';
		*ret_name = slash + 1;
	}
	fd = open_beneath(root, parent, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd;
	*ret_fd = fd;
	return 0;
}

/* Remove name in dfd, whatever it is, never following a link nor crossing a mount. */
static int remove_at(int dfd, const char *name, unsigned depth)
{
	_cleanup_close_ int fd = -1;
	char **names = NULL;
	size_t n = 0;
	int r;

	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return negative_errno();
	if (depth >= COW_MAX_DEPTH)
		return -ELOOP;
	fd = open_beneath(dfd, name, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd;
	if ((r = list_dir(fd, &names, &n)) < 0)
		return r;
	for (size_t i = 0; r >= 0 && i < n; i++)
		r = remove_at(fd, names[i], depth + 1);
	free_names(names, n);
	if (r < 0)
		return r;
	return RET_NERRNO(unlinkat(dfd, name, AT_REMOVEDIR));
}

static int empty_dir(int fd)
{
	char **names = NULL;
	size_t n = 0;
	int r = list_dir(fd, &names, &n);

	for (size_t i = 0; r >= 0 && i < n; i++)
		r = remove_at(fd, names[i], 1);
	free_names(names, n);
	return r;
}

_public_ int vfs_cow_clear(int upper_fd)
{
	return empty_dir(upper_fd);
}

static void tmp_name(char buf[64])
{
	uint8_t rnd[8];
	char hex[17];

	randombytes_buf(rnd, sizeof(rnd));
	sodium_bin2hex(hex, sizeof(hex), rnd, sizeof(rnd));
	snprintf(buf, 64, ".moat-cow-%s", hex);
}

/* Put the new name tmp in place of name, whatever name is now. */
static int replace_with(int pfd, const char *tmp, const char *name)
{
	if (renameat(pfd, tmp, pfd, name) == 0)
		return 0;
	if (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST) {
		int r = remove_at(pfd, name, 0);

		if (r == 0 && renameat(pfd, tmp, pfd, name) == 0)
			return 0;
	}
	int r = negative_errno();

	unlinkat(pfd, tmp, 0);
	return r;
}

static void set_meta(int fd, const struct vfs_cow_entry *e)
{
	struct timespec ts[2] = { e->mtime, e->mtime };

	/* The owner only where the caller could give it (root): never more authority. */
	if (geteuid() == 0)
		(void)!fchown(fd, e->uid, e->gid);
	fchmod(fd, e->mode & 07777);
	futimens(fd, ts);
}

static int copy_fd(int in, int out)
{
	char buf[65536];
	ssize_t n;

	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return negative_errno();
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return negative_errno();
			off += w;
		}
	}
	return 0;
}

static int commit_write(int upper, int pfd, const char *name, const struct vfs_cow_entry *e)
{
	_cleanup_close_ int in = open_beneath(upper, e->path, O_RDONLY | O_NONBLOCK);
	_cleanup_close_ int out = -1;
	struct stat st;
	char tmp[64];
	int r;

	if (in < 0)
		return in;
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != e->size)
		return -ESTALE;
	tmp_name(tmp);
	out = openat(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return negative_errno();
	if ((r = copy_fd(in, out)) < 0) {
		unlinkat(pfd, tmp, 0);
		return r;
	}
	set_meta(out, e);
	return replace_with(pfd, tmp, name);
}

static int commit_symlink(int pfd, const char *name, const struct vfs_cow_entry *e)
{
	char tmp[64];

	tmp_name(tmp);
	if (symlinkat(e->target, pfd, tmp) < 0)
		return negative_errno();
	if (geteuid() == 0)
		(void)!fchownat(pfd, tmp, e->uid, e->gid, AT_SYMLINK_NOFOLLOW);
	return replace_with(pfd, tmp, name);
}

static int commit_dir(int pfd, const char *name, const struct vfs_cow_entry *e)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) &&
	    (r = remove_at(pfd, name, 0)) < 0)
		return r;
	if (mkdirat(pfd, name, 0700) < 0 && errno != EEXIST)
		return negative_errno();
	fd = open_beneath(pfd, name, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd;
	if (e->kind == VFS_COW_OPAQUE && (r = empty_dir(fd)) < 0)
		return r;
	set_meta(fd, e);
	return 0;
}

_public_ int vfs_cow_commit(struct vfs_cow_set *s, int upper_fd, int lower_fd)
{
	int failed = 0;

	for (size_t i = 0; i < s->n; i++) {
		struct vfs_cow_entry *e = &s->e[i];
		_cleanup_close_ int pfd = -1;
		const char *name;
		int r;

		if (e->kind == VFS_COW_REFUSED)
			continue;
		r = parent_of(lower_fd, e->path, &pfd, &name);
		if (r == 0) {
			switch (e->kind) {
			case VFS_COW_WRITE:
				r = commit_write(upper_fd, pfd, name, e);
				break;
			case VFS_COW_SYMLINK:
				r = commit_symlink(pfd, name, e);
				break;
			case VFS_COW_DELETE:
				r = remove_at(pfd, name, 0);
				break;
			default:
				r = commit_dir(pfd, name, e);
				break;
			}
		}
		/* A directory's own times change with every entry made in it: set them again
		 * once its children are in (they follow it in the set). */
		e->err = r < 0 ? -r : 0;
		if (r < 0)
			failed++;
	}
	for (size_t i = s->n; i-- > 0;) {
		const struct vfs_cow_entry *e = &s->e[i];
		_cleanup_close_ int fd = -1;
		struct timespec ts[2] = { e->mtime, e->mtime };

		if ((e->kind != VFS_COW_DIR && e->kind != VFS_COW_OPAQUE) || e->err)
			continue;
		fd = open_beneath(lower_fd, e->path, O_RDONLY | O_DIRECTORY);
		if (fd >= 0)
			futimens(fd, ts);
	}
	return failed;
}

/* --- export: a tar in the OCI layer convention ------------------------------------- */

struct tar_hdr {
	char name[100], mode[8], uid[8], gid[8], size[12], mtime[12], chksum[8], typeflag;
	char linkname[100], magic[6], version[2], uname[32], gname[32], devmajor[8];
	char devminor[8], prefix[155], pad[12];
};

static int pad_block(int fd, uint64_t size)
{
	static const char zero[512];
	size_t rest = (size_t)(size % 512);

	return rest ? write_all(fd, zero, 512 - rest) : 0;
}

/* v in len-1 octal digits and a NUL; the caller keeps v within them. */
static void octal(char *field, size_t len, uint64_t v)
{
	for (size_t i = len - 1; i-- > 0; v >>= 3)
		field[i] = (char)('0' + (v & 7));
	field[len - 1] = '\0';
}

static int raw_header(int fd, const char *name, char type, uint64_t size, mode_t mode,
                      const struct vfs_cow_entry *e, const char *link)
{
	struct tar_hdr h;
	unsigned sum = 0;

	static_assert(sizeof(h) == 512, "a tar header is one block");
	memset(&h, 0, sizeof(h));
	memcpy(h.name, name, strnlen(name, sizeof(h.name)));
	octal(h.mode, sizeof(h.mode), mode & 07777);
	/* an id past 7 octal digits is in the pax header; 0 here */
	octal(h.uid, sizeof(h.uid), e && e->uid <= 07777777 ? e->uid : 0);
	octal(h.gid, sizeof(h.gid), e && e->gid <= 07777777 ? e->gid : 0);
	octal(h.size, sizeof(h.size), size);
	octal(h.mtime, sizeof(h.mtime), e && e->mtime.tv_sec > 0 ? (uint64_t)e->mtime.tv_sec : 0);
	h.typeflag = type;
	if (link)
		memcpy(h.linkname, link, strnlen(link, sizeof(h.linkname)));
	memcpy(h.magic, "ustar", 6);
	memcpy(h.version, "00", 2);
	memset(h.chksum, ' ', sizeof(h.chksum));
	for (size_t i = 0; i < sizeof(h); i++)
		sum += ((unsigned char *)&h)[i];
	snprintf(h.chksum, sizeof(h.chksum), "%06o", sum);
	h.chksum[7] = ' ';
	return write_all(fd, &h, sizeof(h));
}

/* One pax record, "LEN key=value\n", LEN counting itself. */
static int pax_record(char *buf, size_t len, const char *key, const char *value)
{
	size_t body = strlen(key) + strlen(value) + 3, n = body + 1;

	while (n != body + (size_t)snprintf(NULL, 0, "%zu", n))
		n = body + (size_t)snprintf(NULL, 0, "%zu", n);
	if (n >= len)
		return -ENAMETOOLONG;
	snprintf(buf, len, "%zu %s=%s\n", n, key, value);
	return (int)n;
}

static int tar_entry(int fd, const char *name, char type, uint64_t size,
                     const struct vfs_cow_entry *e, const char *link)
{
	mode_t mode = e ? e->mode : 0644;
	int r;

	/* Names, link targets and ids that ustar cannot hold go in a pax header first. */
	bool long_name = strlen(name) >= 100, long_link = link && strlen(link) >= 100;
	bool big_ids = e && (e->uid > 07777777 || e->gid > 07777777);

	if (long_name || long_link || big_ids) {
		char pax[2 * PATH_MAX + 128], num[24];
		int n = 0, k;

		if (long_name) {
			if ((k = pax_record(pax, sizeof(pax), "path", name)) < 0)
				return k;
			n += k;
		}
		if (long_link) {
			if ((k = pax_record(pax + n, sizeof(pax) - (size_t)n, "linkpath", link)) < 0)
				return k;
			n += k;
		}
		if (big_ids) {
			snprintf(num, sizeof(num), "%u", (unsigned)e->uid);
			if ((k = pax_record(pax + n, sizeof(pax) - (size_t)n, "uid", num)) < 0)
				return k;
			n += k;
			snprintf(num, sizeof(num), "%u", (unsigned)e->gid);
			if ((k = pax_record(pax + n, sizeof(pax) - (size_t)n, "gid", num)) < 0)
				return k;
			n += k;
		}
		if ((r = raw_header(fd, "././@PaxHeader", 'x', (uint64_t)n, 0644, NULL, NULL)) < 0 ||
		    (r = write_all(fd, pax, (size_t)n)) < 0 || (r = pad_block(fd, (uint64_t)n)) < 0)
			return r;
	}
	return raw_header(fd, name, type, size, mode, e, link);
}

static bool reserved_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return !strncmp(slash ? slash + 1 : path, ".wh.", 4);
}

_public_ int vfs_cow_export(const struct vfs_cow_set *s, int upper_fd, int out_fd)
{
	static const char zero[1024];
	int r = 0, skipped = 0;

	for (size_t i = 0; r >= 0 && i < s->n; i++) {
		const struct vfs_cow_entry *e = &s->e[i];
		char name[PATH_MAX + 16];

		if (e->kind == VFS_COW_REFUSED)
			continue;
		if (reserved_name(e->path)) {
			/* a name the format keeps for deletions: it would read as one */
			skipped++;
			continue;
		}
		switch (e->kind) {
		case VFS_COW_DELETE: {
			const char *slash = strrchr(e->path, '/');

			snprintf(name, sizeof(name), "%.*s%s.wh.%s",
			         slash ? (int)(slash - e->path) : 0, e->path, slash ? "/" : "",
			         slash ? slash + 1 : e->path);
			r = tar_entry(out_fd, name, '0', 0, NULL, NULL);
			break;
		}
		case VFS_COW_DIR:
		case VFS_COW_OPAQUE:
			snprintf(name, sizeof(name), "%s/", e->path);
			r = tar_entry(out_fd, name, '5', 0, e, NULL);
			if (r >= 0 && e->kind == VFS_COW_OPAQUE) {
				snprintf(name, sizeof(name), "%s/.wh..wh..opq", e->path);
				r = tar_entry(out_fd, name, '0', 0, NULL, NULL);
			}
			break;
		case VFS_COW_SYMLINK:
			r = tar_entry(out_fd, e->path, '2', 0, e, e->target);
			break;
		case VFS_COW_WRITE: {
			_cleanup_close_ int in = open_beneath(upper_fd, e->path, O_RDONLY | O_NONBLOCK);
			struct stat st;

			if (in < 0) {
				r = in;
				break;
			}
			if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode) ||
			    (uint64_t)st.st_size != e->size) {
				r = -ESTALE;
				break;
			}
			if ((r = tar_entry(out_fd, e->path, '0', e->size, e, NULL)) >= 0 &&
			    (r = copy_fd(in, out_fd)) >= 0)
				r = pad_block(out_fd, e->size);
			break;
		}
		default:
			break;
		}
	}
	if (r >= 0)
		r = write_all(out_fd, zero, sizeof(zero));
	return r < 0 ? r : skipped;
}

_public_ int vfs_cow_write_sums(const struct vfs_cow_set *s, int out_fd)
{
	int r = 0;

	for (size_t i = 0; r >= 0 && i < s->n; i++) {
		const struct vfs_cow_entry *e = &s->e[i];
		_cleanup_free_ char *line = NULL;

		/* sha256sum's format, so that `sha256sum -c` checks a tree the tar went into;
		 * a name with a newline could forge a line: such a name is left out */
		if (e->kind != VFS_COW_WRITE || strchr(e->path, '\n') || strchr(e->path, '\\'))
			continue;
		if (asprintf(&line, "%s  %s\n", e->sha256, e->path) < 0)
			return -ENOMEM;
		r = write_all(out_fd, line, strlen(line));
	}
	return r;
}
