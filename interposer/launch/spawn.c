/* SPDX-License-Identifier: MIT */
/*
 * Launching the sandbox: namespaces, the mount namespace built from the vfs table,
 * limits, a scrubbed process state, and finally the filter and exec.
 *
 * Everything after fork runs in a child of a (then) single-threaded supervisor, so
 * libc is safe to call; failures end with _exit() after telling the supervisor which
 * stage failed (STYLE.md §5: fatal exits only in main.c and in children before exec).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"
#include "macros.h"
#include "missing-seccomp.h"
#include "moat-config.h"
#include "netns.h"
#include "spawn.h"
#include "cgroup.h"
#include "landlock.h"
#include "vfs.h"

extern char **environ;

enum stage {
	STAGE_SYNC = 1,
	STAGE_MOUNT,
	STAGE_PIVOT,
	STAGE_PROC,
	STAGE_CHDIR,
	STAGE_RLIMIT,
	STAGE_NNP,
	STAGE_CAPS,
	STAGE_LANDLOCK,
	STAGE_FILTER,
	STAGE_FORK,
	STAGE_SETSID,
	STAGE_FDS,
	_STAGE_MAX,
};

static const char *const stage_names[_STAGE_MAX] = {
	[STAGE_SYNC] = "waiting for the supervisor",
	[STAGE_MOUNT] = "building the mount namespace",
	[STAGE_PIVOT] = "pivot_root into the sandbox's root",
	[STAGE_PROC] = "mounting /proc",
	[STAGE_CHDIR] = "changing to the working directory",
	[STAGE_RLIMIT] = "setting resource limits",
	[STAGE_NNP] = "setting no_new_privs",
	[STAGE_CAPS] = "dropping capabilities",
	[STAGE_LANDLOCK] = "applying the Landlock ruleset",
	[STAGE_FILTER] = "installing the seccomp filter",
	[STAGE_FORK] = "forking the command",
	[STAGE_SETSID] = "starting a new session",
	[STAGE_FDS] = "setting up file descriptors",
};

const char *spawn_stage_name(int stage)
{
	if (stage <= 0 || stage >= _STAGE_MAX)
		return "setup";
	return stage_names[stage];
}

int sync_send(int fd, int type, int value, int value2)
{
	struct sync_msg m = { .type = type, .value = value, .value2 = value2 };
	ssize_t n;

	do
		n = write(fd, &m, sizeof(m));
	while (n < 0 && errno == EINTR);
	return n == sizeof(m) ? 0 : -EIO;
}

/* One message of n parts, with passfd attached (SCM_RIGHTS) unless it is negative. */
static int send_parts(int fd, struct iovec *iov, size_t n, int passfd)
{
	char ctl[CMSG_SPACE(sizeof(int))] = { 0 };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = n };
	size_t len = 0;

	for (size_t i = 0; i < n; i++)
		len += iov[i].iov_len;
	if (passfd >= 0) {
		struct cmsghdr *h;

		mh.msg_control = ctl;
		mh.msg_controllen = sizeof(ctl);
		h = CMSG_FIRSTHDR(&mh);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &passfd, sizeof(int));
	}
	return sendmsg(fd, &mh, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -EIO;
}

int sync_send_fd(int fd, int type, int value, int passfd)
{
	struct sync_msg m = { .type = type, .value = value };
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };

	return send_parts(fd, &iov, 1, passfd);
}

/* SYNC_CREATED: the header, the object's identity, its path; the fd of the directory it
 * was made in. */
static int sync_send_created(int fd, bool dir, int dirfd, const struct stat *st,
			     const char *vpath)
{
	struct sync_msg m = { .type = SYNC_CREATED, .value = dir };
	struct sync_created c = { .dev = st->st_dev, .ino = st->st_ino };
	struct iovec iov[3] = { { .iov_base = &m, .iov_len = sizeof(m) },
				{ .iov_base = &c, .iov_len = sizeof(c) },
				{ .iov_base = (void *)vpath, .iov_len = strlen(vpath) + 1 } };

	return send_parts(fd, iov, ELEMENTSOF(iov), dirfd);
}

_noreturn_ static void child_fail(int sync_fd, int stage, int err)
{
	sync_send(sync_fd, SYNC_SETUP_FAILED, err > 0 ? err : EIO, stage);
	_exit(MOAT_EXIT_FAILURE);
}

static int write_file(const char *path, const char *content)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	size_t len = strlen(content);

	if (fd < 0)
		return negative_errno();
	if (write(fd, content, len) != (ssize_t)len)
		return negative_errno();
	return 0;
}

int spawn_write_idmaps(pid_t pid, uid_t uid, gid_t gid)
{
	char path[64], map[64];
	int r;

	/* Root maps every id to itself, as container runtimes do, and leaves setgroups
	 * allowed: the sandbox's root can then run programs as other users and set their
	 * groups (it keeps CAP_SETUID, CAP_SETGID and CAP_KILL for that, see
	 * drop_capabilities()), and every file keeps its owner. What it does with those ids is checked by the
	 * kernel, since the supervisor acts with the caller's credentials (creds.h). An
	 * unprivileged writer may only map its own ids, and only after setgroups has been
	 * denied (user_namespaces(7)): its sandbox has that one id. */
	bool full_uid = false;

	snprintf(path, sizeof(path), "/proc/%d/uid_map", pid);
	/* (root without CAP_SETUID, in a container say, falls back to the one id) */
	if (uid == 0 && write_file(path, "0 0 4294967295\n") == 0) {
		full_uid = true;
		snprintf(path, sizeof(path), "/proc/%d/gid_map", pid);
		if (write_file(path, "0 0 4294967295\n") == 0)
			return 0;
	}
	snprintf(path, sizeof(path), "/proc/%d/setgroups", pid);
	r = write_file(path, "deny");
	if (r < 0 && r != -ENOENT)
		return r;
	if (!full_uid) {
		snprintf(path, sizeof(path), "/proc/%d/uid_map", pid);
		snprintf(map, sizeof(map), "%u %u 1\n", uid, uid);
		r = write_file(path, map);
		if (r < 0)
			return r;
	}
	snprintf(path, sizeof(path), "/proc/%d/gid_map", pid);
	snprintf(map, sizeof(map), "%u %u 1\n", gid, gid);
	return write_file(path, map);
}

int spawn_pack_argv(char *const *argv, char **ret, size_t *ret_len)
{
	struct sync_msg m = { .type = SYNC_ARGV };
	size_t len = 0, off = sizeof(m);
	char *buf;

	for (char *const *a = argv; *a; a++)
		len += strlen(*a) + 1;
	if (len == 0 || len > SPAWN_ARGV_MAX)
		return -E2BIG;
	buf = malloc(sizeof(m) + len);
	if (!buf)
		return -ENOMEM;
	m.value = (int)len;
	memcpy(buf, &m, sizeof(m));
	for (char *const *a = argv; *a; a++) {
		size_t l = strlen(*a) + 1;

		memcpy(buf + off, *a, l);
		off += l;
	}
	*ret = buf;
	*ret_len = off;
	return 0;
}

int spawn_send_argv(int fd, char *const *argv)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r = spawn_pack_argv(argv, &buf, &len);

	if (r < 0)
		return r;
	/* Two messages on the seqpacket socket: the header, then the strings. */
	if (send(fd, buf, sizeof(struct sync_msg), MSG_NOSIGNAL) != sizeof(struct sync_msg) ||
	    send(fd, buf + sizeof(struct sync_msg), len - sizeof(struct sync_msg), MSG_NOSIGNAL) !=
		    (ssize_t)(len - sizeof(struct sync_msg)))
		return -EIO;
	return 0;
}

/* len bytes, or false: from the sync socket (one message per read) or a pipe (as many
 * reads as it takes). */
static bool read_full(int fd, void *buf, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t got = read(fd, (char *)buf + off, len - off);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return false;
		off += (size_t)got;
	}
	return true;
}

/*
 * The waiting command's side: the argv the supervisor (or moat serve, on --argv-fd)
 * sent, as a NULL-ended array in memory of its own. mmap rather than malloc: this
 * process descends by raw clones from one with threads, so a malloc arena lock another
 * thread held then is held for good.
 */
static char **recv_argv(int fd)
{
	struct sync_msg m;
	size_t len, k = 0;
	char *blob, **argv;
	void *mem;

	if (!read_full(fd, &m, sizeof(m)) || m.type != SYNC_ARGV || m.value <= 0 ||
	    m.value > SPAWN_ARGV_MAX)
		return NULL;
	len = (size_t)m.value;
	/* at most one string per byte: the pointers fit behind the strings */
	mem = mmap(NULL, len + (len + 1) * sizeof(char *), PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return NULL;
	argv = mem;
	blob = (char *)(argv + len + 1);
	if (!read_full(fd, blob, len) || blob[len - 1] != '\0')
		return NULL;
	for (size_t off = 0; off < len; off += strlen(blob + off) + 1)
		argv[k++] = blob + off;
	argv[k] = NULL;
	return argv;
}

/* SYNC_EXEC_FD: the fd it carries (close-on-exec), or -1 for none. */
static int recv_exec_fd(int sync_fd)
{
	struct sync_msg m;
	char ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			     .msg_controllen = sizeof(ctl) };
	struct cmsghdr *h;
	ssize_t n;
	int fd = -1;

	do
		n = recvmsg(sync_fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	h = n == sizeof(m) ? CMSG_FIRSTHDR(&mh) : NULL;
	if (h && h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS &&
	    h->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(h), sizeof(int));
	if (n != sizeof(m) || m.type != SYNC_EXEC_FD) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int wait_go(int sync_fd)
{
	struct sync_msg m;
	ssize_t n;

	do
		n = read(sync_fd, &m, sizeof(m));
	while (n < 0 && errno == EINTR);
	if (n != sizeof(m) || m.type != SYNC_GO)
		return -EPIPE;
	return 0;
}

/* ---- the mount namespace (layer 1 of docs/architecture.md, same table as the vfs) ---- */

struct mount_ctx {
	int err;
	bool links; /* a hidden path was a symlink, left uncovered */
	/* /newroot/proc is the sandbox's own procfs, on top (build_mount_ns() mounts it
	 * read-only; a mapping of "/" covers it and mounts it again, read-write) */
	bool proc_rw;
	/* the table maps "/" read-write: the root mount is that mapping, not the skeleton */
	bool root_rw;
	char failed[PATH_MAX + 32];
	int sync_fd;   /* for SYNC_CREATED */
	dev_t own_dev; /* the keeper's tmpfs at /newroot */
	/* read-write mappings of host directories mounted so far (their virtual paths):
	 * what an earlier run may have left symlinks in (confine_dst()) */
	const char *rw[16];
	size_t n_rw;
	/* the stubs (COVER_STUB, COVER_DIR): a path that shows one is covered already */
	dev_t stub_dev;
	ino_t stub_ino, dir_ino;
};

/*
 * A mount point the keeper makes outside its own tmpfs lies in a mapping of a host
 * directory (a writable one: a read-only one refuses the mkdir), where it would outlive
 * the run: the root mount itself under a read-write "/", or a workspace that holds the
 * destination of --tmpfs or --bind. The supervisor removes it when the run ends
 * (SYNC_CREATED), through the directory it was made in, held since; what the keeper
 * makes in its own tmpfs goes with the namespace. mc NULL: nothing to note.
 */
static int note_created(const struct mount_ctx *mc, const char *path, bool dir)
{
	_cleanup_close_ int fd = -1;
	const char *slash = strrchr(path, '/');
	char parent[PATH_MAX];
	struct stat st;

	if (!mc || !slash || lstat(path, &st) < 0 || st.st_dev == mc->own_dev)
		return 0;
	snprintf(parent, sizeof(parent), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	fd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	if (strncmp(path, "/newroot/", 9) == 0)
		path += strlen("/newroot");
	return sync_send_created(mc->sync_fd, dir, fd, &st, path);
}

/* The deepest directory first, its parents only when it says ENOENT: most mount points
 * sit in a directory that exists already (the tmpfs root, /dev, a mapping's tree), so
 * this is one mkdir() where a walk from the top would fail with EEXIST at each level. */
static int mkdir_p(const struct mount_ctx *mc, const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);
	char *slash;
	int r;

	if (mkdir(path, mode) == 0)
		return note_created(mc, path, true);
	if (errno == EEXIST)
		return 0;
	if (errno != ENOENT)
		return negative_errno();
	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	slash = strrchr(buf, '/');
	if (!slash || slash == buf)
		return -ENOENT;
	*slash = '\0';
	r = mkdir_p(mc, buf, mode);
	if (r < 0)
		return r;
	if (mkdir(path, mode) == 0)
		return note_created(mc, path, true);
	return errno == EEXIST ? 0 : negative_errno();
}

/* The directory that will hold path. */
static int mkdir_parent(const struct mount_ctx *mc, const char *path)
{
	char parent[PATH_MAX];
	char *slash;

	if ((size_t)snprintf(parent, sizeof(parent), "%s", path) >= sizeof(parent))
		return -ENAMETOOLONG;
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return 0;
	*slash = '\0';
	return mkdir_p(mc, parent, 0755);
}

/*
 * A listing reads the type of the mount point (d_type), not of what is bound on it:
 * a character device's mount point in the keeper's own tmpfs is a character device
 * too, the whiteout (0:0), which needs no CAP_MKNOD and opens nothing (the tmpfs is
 * nodev) if its bind is ever gone, so that "find /dev -type c" finds /dev/null. Outside
 * that tmpfs (a mapping of a host directory, where it would outlive the run until the
 * supervisor removes it) a mount point is always an empty file.
 */
static int make_file_point(const struct mount_ctx *mc, const char *path, mode_t type)
{
	char parent[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;
	int fd;

	if (S_ISCHR(type) && mc && slash && slash > path &&
	    snprintf(parent, sizeof(parent), "%.*s", (int)(slash - path), path) < (int)sizeof(parent) &&
	    stat(parent, &st) == 0 && st.st_dev == mc->own_dev)
		return RET_NERRNO(mknod(path, S_IFCHR | 0644, makedev(0, 0)));
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return negative_errno();
	safe_close(fd);
	return 0;
}

static int make_mountpoint(const struct mount_ctx *mc, const char *path, mode_t type)
{
	int r;

	if (S_ISDIR(type))
		return mkdir_p(mc, path, 0755);
	/* O_EXCL: a file that is there already (a synthetic /etc/resolv.conf inside
	 * ro-bind /etc: the mapping shows one) is the mount point as it is; the kernel
	 * says EEXIST for it before it would say EROFS for the read-only mapping. The
	 * parent is made only when the create says it is missing. */
	for (int again = 0;; again++) {
		r = make_file_point(mc, path, type);
		if (r == 0 || r == -EEXIST)
			break;
		if (r != -ENOENT || again)
			return r;
		r = mkdir_parent(mc, path);
		if (r < 0)
			return r;
	}
	if (r < 0)
		return 0;
	return note_created(mc, path, false);
}

static int set_readonly(const char *path)
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };

	/* mount_setattr (5.12) changes only the bit we name, so the flags the kernel
	 * locked on mounts inherited from a more privileged namespace (nosuid, nodev)
	 * cannot make a remount fail with EPERM. */
	if (syscall(SYS_mount_setattr, AT_FDCWD, path, AT_RECURSIVE, &attr, sizeof(attr)) == 0)
		return 0;
	return RET_NERRNO(mount(NULL, path, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL));
}

/* No device node opens through a mapping of a parent of /dev, as the vfs decides
 * (vfs__hides_devices()): the kernel's view says the same, for whatever the kernel
 * resolves itself. */
static int set_nodev(const char *path)
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_NODEV };

	return RET_NERRNO(syscall(SYS_mount_setattr, AT_FDCWD, path, AT_RECURSIVE, &attr,
				  sizeof(attr)));
}


/* The stubs hidden objects are covered with, on the staging tmpfs (the binds keep them
 * alive after the staging root is dropped): an empty file of mode 0444 and an empty
 * directory of mode 0555, one inode each, so that one fanotify mark on each (the
 * supervisor's, SPAWN_STUB_FILE and SPAWN_STUB_DIR below the fd of SYNC_STUBS) sees
 * every open of every stub, through whatever path, /proc/<pid>/fd and /proc/<pid>/root
 * included. Openable, so that the kernel's refusal comes from the mark (EPERM) and the
 * supervisor learns of it; without marks (moat not started by root) opens stay trapped
 * and an open of a stub finds an empty file, never hidden content. */
#define COVER_STUB "/" SPAWN_STUB_FILE
#define COVER_DIR "/" SPAWN_STUB_DIR

/*
 * Cover a hidden or read-denied path with an empty read-only stub: the directory stub
 * for a directory, the file stub for anything else that can be opened (a regular file,
 * a FIFO a host writer feeds, a device, a socket). Not /dev/null: a stub that is a
 * character device would tell stat (which the kernel answers itself in namespaced mode)
 * more than the name. A symlink cannot be covered (a bind follows it): a native open
 * through it reaches its target, decided by the target's own path (threat model).
 */
/* Whether the directory holding path is on a read-only mount (EROFS for its entries). */
static bool parent_readonly(const char *path)
{
	char parent[PATH_MAX + 16];
	struct statvfs sv;
	char *slash;

	snprintf(parent, sizeof(parent), "%s", path);
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return false;
	*slash = '\0';
	return statvfs(parent, &sv) == 0 && (sv.f_flag & ST_RDONLY);
}

static int cover_path(struct mount_ctx *mc, const char *dst, const struct stat *st)
{
	int r;

	/* A bind onto a symlink follows it: the link stays, and where its directory is
	 * writable nothing in the kernel's view refuses its removal (the caller keeps
	 * removals with moat, mc->links). */
	if (S_ISLNK(st->st_mode)) {
		if (!parent_readonly(dst))
			mc->links = true;
		return 0;
	}
	r = RET_NERRNO(mount(S_ISDIR(st->st_mode) ? COVER_DIR : COVER_STUB, dst, NULL, MS_BIND,
			     NULL));
	return r < 0 ? r : set_readonly(dst);
}

/* vfs_foreach_cover(): a path a glob hides or denies, found in the assembled tree. The
 * walk meets the literal hides too, which mount_one() covered: one stub is enough (a
 * second bind on the first would only be another mount to make and to list). */
static int cover_one(const char *vpath, bool dir, void *ud)
{
	struct mount_ctx *mc = ud;
	char dst[PATH_MAX + 16];
	struct stat st;
	int r;

	(void)dir;
	snprintf(dst, sizeof(dst), "/newroot%s", vpath);
	if (lstat(dst, &st) < 0)
		return 0;
	if (st.st_dev == mc->stub_dev && (st.st_ino == mc->stub_ino || st.st_ino == mc->dir_ino))
		return 0;
	r = cover_path(mc, dst, &st);
	if (r < 0) {
		mc->err = r;
		snprintf(mc->failed, sizeof(mc->failed), "%s", vpath);
	}
	return r;
}

/* A read-write /proc keeps the kernel's settings read-only (vfs_proc_readonly, as the
 * table answers): started by root, the sandbox's root is the host's uid 0, which procfs
 * lets write a sysctl such as kernel.core_pattern with no capability at all. */
static int proc_settings_readonly(const char *proc)
{
	char path[PATH_MAX + 32];

	for (size_t i = 0; vfs_proc_readonly[i]; i++) {
		int r;

		snprintf(path, sizeof(path), "%s/%s", proc, vfs_proc_readonly[i]);
		r = RET_NERRNO(mount(path, path, NULL, MS_BIND | MS_REC, NULL));
		if (r == -ENOENT)
			continue; /* not in this kernel's procfs */
		if (r >= 0)
			r = set_readonly(path);
		if (r < 0)
			return r;
	}
	return 0;
}

/* dst, a mapping's destination, lies strictly below a read-write host mapping mounted
 * before it (or below more of them than mc remembers). */
static bool below_rw(const struct mount_ctx *mc, const char *virt)
{
	if (mc->n_rw > ELEMENTSOF(mc->rw))
		return true;
	for (size_t i = 0; i < mc->n_rw; i++)
		if (strcmp(virt, mc->rw[i]) != 0 && vfs_path_under(virt, mc->rw[i]))
			return true;
	return false;
}

/*
 * Where a destination really is. Below a read-write mapping of a host directory (a
 * workspace) an earlier run may have left a symlink, which the keeper would follow from
 * its own root, whose /oldroot is the host's: the mount point would be made on the
 * host, as the keeper (the host's root, when root started moat), wherever the link
 * says (an empty /etc/nologin), and the mount would miss the view. Resolved instead as
 * the sandbox will see it, with /newroot as the root (RESOLVE_IN_ROOT), from the
 * deepest part that exists; a component after it that is there but leads nowhere in
 * the view (a symlink to /oldroot/...) is refused (ELOOP). dst is rewritten to the
 * resolved path and what is still to be made.
 */
static int confine_dst(char *dst, size_t size)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	_cleanup_close_ int root = open("/newroot", O_PATH | O_DIRECTORY | O_CLOEXEC);
	char rel[PATH_MAX], real[PATH_MAX], link[64], *missing = NULL;
	struct stat st;
	size_t len;
	ssize_t n;
	int fd;

	if (root < 0)
		return negative_errno();
	if ((size_t)snprintf(rel, sizeof(rel), "%s", dst + strlen("/newroot")) >= sizeof(rel))
		return -ENAMETOOLONG;
	len = strlen(rel);
	for (;;) {
		fd = (int)syscall(SYS_openat2, root, len ? rel + 1 : ".", &how, sizeof(how));
		if (fd >= 0)
			break;
		if (errno != ENOENT || !len)
			return negative_errno();
		missing = strrchr(rel, '/');
		*missing++ = '\0';
		len = strlen(rel);
	}
	/* the first missing component must be missing indeed, not a symlink that leads
	 * out of the view */
	if (missing && fstatat(fd, missing, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		close(fd);
		return -ELOOP;
	}
	/* the staging root has no /proc: the sandbox's own, mounted first, names it */
	snprintf(link, sizeof(link), "/newroot/proc/self/fd/%d", fd);
	n = readlink(link, real, sizeof(real) - 1);
	close(fd);
	if (n < 0)
		return negative_errno();
	real[n] = '\0';
	if (strncmp(real, "/newroot", 8) != 0 || (real[8] != '/' && real[8] != '\0'))
		return -EXDEV; /* RESOLVE_IN_ROOT keeps it below: never expected */
	/* what exists, resolved, then the rest of the destination as it was asked */
	if ((size_t)snprintf(rel, sizeof(rel), "%s", dst + strlen("/newroot") + len) >= sizeof(rel) ||
	    (size_t)snprintf(dst, size, "%s%s", real, rel) >= size)
		return -ENAMETOOLONG;
	return 0;
}

static int mount_one(const struct vfs_mount_info *m, void *ud)
{
	struct mount_ctx *mc = ud;
	char src[PATH_MAX + 16], dst[PATH_MAX + 16];
	struct stat st;
	int r;

	snprintf(dst, sizeof(dst), "/newroot%s", m->virt);
	/* /proc is the sandbox's own procfs, mounted before the table; only hides apply.
	 * A mapping above it (ro-bind /) has since covered it with the host's procfs, so a
	 * mapping of /proc itself (the vfs adds one below such a mapping) mounts the
	 * sandbox's own again on top. */
	if (m->kind != VFS_MOUNT_HIDE && strcmp(m->virt, "/proc") == 0 &&
	    m->host && strcmp(m->host, "/proc") == 0) {
		/* The procfs on top is ours already (mappings come parents first, hides
		 * after): only its read-only bit may have to change, as the mapping says
		 * (ro-bind /proc: a native write open of /proc/sys/... or /proc/self/...
		 * meets EROFS, as the table answers). A read-write mapping over the
		 * read-only mount gets a procfs of its own, as before. */
		if (!m->writable)
			return mc->proc_rw ? set_readonly(dst) : 0;
		if (!mc->proc_rw) {
			r = RET_NERRNO(mount("proc", dst, "proc",
					     MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL));
			if (r < 0)
				return r;
			mc->proc_rw = true;
		}
		return proc_settings_readonly(dst);
	}
	if (m->kind != VFS_MOUNT_HIDE &&
	    (strcmp(m->virt, "/proc") == 0 || strncmp(m->virt, "/proc/", 6) == 0))
		return 0;
	if (m->kind != VFS_MOUNT_HIDE && below_rw(mc, m->virt) &&
	    (r = confine_dst(dst, sizeof(dst))) < 0) {
		if (r == -ELOOP)
			log_error("%s: a symlink on the way leads out of the sandbox's view: no "
				  "mount point is made through it", m->virt);
		goto fail;
	}
	switch (m->kind) {
	case VFS_MOUNT_SYMLINK: {
		char target[PATH_MAX];
		ssize_t n;

		if (lstat(dst, &st) == 0)
			return 0; /* already there through a mapping of a parent */
		snprintf(src, sizeof(src), "/oldroot%s", m->host);
		n = readlink(src, target, sizeof(target) - 1);
		if (n < 0)
			return 0;
		target[n] = '\0';
		/* The parent is made only when the symlink says it is missing. */
		r = RET_NERRNO(symlink(target, dst));
		if (r == -ENOENT) {
			r = mkdir_parent(mc, dst);
			if (r >= 0)
				r = RET_NERRNO(symlink(target, dst));
		}
		if (r == 0)
			r = note_created(mc, dst, false);
		if (r == -EEXIST)
			r = 0;
		if (r < 0)
			goto fail;
		return 0;
	}
	case VFS_MOUNT_BIND:
	case VFS_MOUNT_TMPFS:
	case VFS_MOUNT_FILE:
		if (!m->host)
			return 0;
		snprintf(src, sizeof(src), "/oldroot%s", m->host);
		if (stat(src, &st) < 0)
			/* A mapping of a host path that does not exist (an optional /lib64,
			 * say) is simply absent from the view, as it is in the vfs. */
			return 0;
		r = make_mountpoint(mc, dst, st.st_mode);
		if (r < 0)
			goto fail;
		r = RET_NERRNO(mount(src, dst, NULL, MS_BIND | MS_REC, NULL));
		if (r < 0)
			goto fail;
		if (m->writable && m->kind == VFS_MOUNT_BIND && mc->n_rw++ < ELEMENTSOF(mc->rw))
			mc->rw[mc->n_rw - 1] = m->virt;
		if (!m->writable) {
			r = set_readonly(dst);
			if (r < 0)
				goto fail;
		} else if (strcmp(m->host, "/sys") != 0 && vfs_path_under("/sys", m->host)) {
			/* the host's sysfs below a read-write parent ("/"): read-only, as the
			 * table answers (the kernel's settings) */
			char sys[PATH_MAX + 32];

			snprintf(sys, sizeof(sys), "%s%s", dst, "/sys" + strlen(m->host) -
				 (strcmp(m->host, "/") == 0));
			if (stat(sys, &st) == 0 && (r = set_readonly(sys)) < 0)
				goto fail;
		}
		if (strcmp(m->virt, "/") == 0) {
			r = set_nodev(dst);
			if (r < 0)
				goto fail;
			mc->root_rw = m->writable;
		}
		/* A mapping of "/" brought the host's /proc along and covered ours: the
		 * sandbox's own goes on top again (the vfs maps /proc whatever covers it). */
		if (strcmp(m->virt, "/") == 0 && stat("/newroot/proc", &st) == 0 &&
		    S_ISDIR(st.st_mode)) {
			r = RET_NERRNO(mount("proc", "/newroot/proc", "proc",
					     MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL));
			if (r < 0)
				goto fail;
			mc->proc_rw = true;
		}
		return 0;
	case VFS_MOUNT_HIDE:
		/* Concrete hidden paths under a mapping: cover them so that even a bug in
		 * the supervisor cannot show their content. Globs: vfs_foreach_cover() below. */
		if (lstat(dst, &st) < 0)
			return 0;
		r = cover_path(mc, dst, &st);
		if (r < 0)
			goto fail;
		return 0;
	default:
		return 0;
	}
fail:
	mc->err = r;
	snprintf(mc->failed, sizeof(mc->failed), "%s", m->virt);
	return r;
}

/* vfs_foreach_cover() with the records of earlier runs, and this run's records to the
 * supervisor when they changed (it keeps them: sup.c, cover_cache_open()). */
static int cover_globs(struct spawn_plan *p, unsigned budget, struct mount_ctx *mc)
{
	struct vfs_cover_cache *cc = NULL;
	unsigned hits, reads;
	int r;

	if (p->cover_cache_key)
		cc = vfs_cover_cache_new(p->cover_cache_key, p->cover_cache_fd);
	if (p->cover_cache_fd >= 0)
		p->cover_cache_fd = safe_close(p->cover_cache_fd);
	r = vfs_foreach_cover(p->opts->vfs, "/newroot", budget, cc, cover_one, mc);
	if (!cc)
		return r;
	vfs_cover_cache_stats(cc, &hits, &reads);
	log_info("covering: %u directories as recorded by an earlier run, %u read", hits, reads);
	if (r == 0 && mc->err == 0 && vfs_cover_cache_changed(cc)) {
		int fd = memfd_create("moat-cover", MFD_CLOEXEC);

		/* A cache that cannot be handed over is only a slower next start. */
		if (fd >= 0 && vfs_cover_cache_write(cc, fd) == 0)
			(void)sync_send_fd(p->sync_fd, SYNC_COVER_CACHE, 0, fd);
		safe_close(fd);
	}
	vfs_cover_cache_free(cc);
	return r;
}

static int build_mount_ns(struct spawn_plan *p)
{
	struct mount_ctx mc = { 0 };
	struct stat st;
	int r;

	/* Nothing we mount may propagate back to the host. */
	r = RET_NERRNO(mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL));
	if (r < 0)
		return r;
	/* Stage on a tmpfs over /tmp, then pivot into it: the old root stays reachable
	 * under /oldroot (including the host's real /tmp below the staging mount) while
	 * the new root is assembled, as bubblewrap does. */
	r = RET_NERRNO(mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755"));
	if (r < 0)
		return r;
	if (mkdir("/tmp/oldroot", 0755) < 0 || mkdir("/tmp/newroot", 0755) < 0)
		return negative_errno();
	r = RET_NERRNO(syscall(SYS_pivot_root, "/tmp", "/tmp/oldroot"));
	if (r < 0)
		return r;
	if (chdir("/") < 0)
		return negative_errno();
	r = RET_NERRNO(mount("tmpfs", "/newroot", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755"));
	if (r < 0)
		return r;
	if (stat("/newroot", &st) < 0)
		return negative_errno();
	mc.own_dev = st.st_dev;
	mc.sync_fd = p->sync_fd;

	/* A /proc of the sandbox's own pid namespace, whatever the table says; the table's
	 * hide rules under /proc then cover parts of it. */
	r = mkdir_p(NULL, "/newroot/proc", 0555);
	if (r < 0)
		return r;
	r = RET_NERRNO(mount("proc", "/newroot/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
			     NULL));
	if (r < 0)
		return r;
	/* Read-only until a read-write mapping of /proc (mount_one()) covers it: where
	 * writes are native, the mount must refuse what the table refuses. */
	r = set_readonly("/newroot/proc");
	if (r < 0)
		return r;

	r = open(COVER_STUB, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0);
	if (r < 0)
		return negative_errno();
	if (fchmod(r, 0444) < 0) {
		close(r);
		return negative_errno();
	}
	close(r);
	if (mkdir(COVER_DIR, 0555) < 0 || chmod(COVER_DIR, 0555) < 0)
		return negative_errno();
	if (lstat(COVER_STUB, &st) < 0)
		return negative_errno();
	mc.stub_dev = st.st_dev;
	mc.stub_ino = st.st_ino;
	if (lstat(COVER_DIR, &st) < 0)
		return negative_errno();
	mc.dir_ino = st.st_ino;
	/* For the supervisor's marks (SYNC_STUBS): the staging root, which the second
	 * pivot takes out of every path. */
	p->stubs_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (p->stubs_fd < 0)
		return negative_errno();
	r = vfs_foreach_mount(p->opts->vfs, mount_one, &mc);
	if (r < 0 || mc.err < 0) {
		log_debug("mount of %s failed: %s", mc.failed, strerror(-(mc.err ? mc.err : r)));
		return mc.err ? mc.err : r;
	}
	/* Glob hides and denies, found in the tree just assembled: the kernel's view then
	 * holds no hidden content at all, which lets the supervisor continue read-only
	 * opens and leave metadata calls to the kernel (see may_continue_open()). */
	bool cover = p->cover_globs;
#if MOAT_TEST_HOOKS
	/* MOAT_TEST_SKIP_COVER=1 (escape tests only): the control run that shows what the
	 * covering protects against once read-only opens are continued. */
	if (getenv("MOAT_TEST_SKIP_COVER"))
		cover = false;
#endif
	if (cover) {
		unsigned budget = VFS_COVER_BUDGET;

#if MOAT_TEST_HOOKS
		if (getenv("MOAT_TEST_COVER_BUDGET"))
			budget = (unsigned)strtoul(getenv("MOAT_TEST_COVER_BUDGET"), NULL, 10);
#endif
		/* pid 1 is the keeper, a fork of the supervisor that the vfs never shows
		 * (its command line is moat's): the kernel's /proc must not either. */
		r = RET_NERRNO(mount("tmpfs", "/newroot/proc/1", "tmpfs",
				     MS_RDONLY | MS_NOSUID | MS_NODEV, "size=0,mode=000"));
		if (r < 0 && r != -ENOENT)
			return r;
		r = cover_globs(p, budget, &mc);
		if (r == -E2BIG && mc.err == 0) {
			/* Some glob match may be left uncovered: nothing may rely on the
			 * kernel's view then. Every call by name goes back to the supervisor
			 * (the --strict-hide filter) and no open is continued (the
			 * supervisor learns it from SYNC_MOUNTS_READY). */
			p->cover_globs = false;
			p->cover_incomplete = true;
			r = sup_filter_precompiled(SUP_FILTER_STRICT_HIDE, &p->prog);
		}
		if (r < 0 || mc.err < 0) {
			log_debug("covering %s failed: %s", mc.failed[0] ? mc.failed : "hidden paths",
				  strerror(-(mc.err ? mc.err : r)));
			return mc.err ? mc.err : r;
		}
	}
	/* A hidden symlink is left as it is (cover_path()), and no mount refuses its
	 * unlink: removals (and the creates that would take its name) go back to moat,
	 * which refuses the name. The supervisor learns it from SYNC_MOUNTS_READY. */
	if (mc.links && !p->cover_incomplete) {
		p->cover_links = true;
		if (sup_filter_writes_trapped(p->kind) != p->kind) {
			r = sup_filter_precompiled(sup_filter_writes_trapped(p->kind), &p->prog);
			if (r < 0)
				return r;
		}
	}

	/* Enter the new root and drop the old one entirely: pivot_root(".", ".") stacks
	 * the old root under the new one, and the lazy unmount takes it away. */
	if (chdir("/newroot") < 0)
		return negative_errno();
	r = RET_NERRNO(syscall(SYS_pivot_root, ".", "."));
	if (r < 0)
		return r;
	r = RET_NERRNO(umount2(".", MNT_DETACH));
	if (r < 0)
		return r;
	if (chdir("/") < 0)
		return negative_errno();
	/* The skeleton of mountpoints is not a place to write to (only the root mount:
	 * the writable mappings below it keep their own flags). A read-write mapping of
	 * "/" is the root mount itself and keeps its flags, as any writable mapping does. */
	if (mc.root_rw)
		return 0;
	return RET_NERRNO(mount(NULL, "/", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID |
				MS_NODEV, NULL));
}

/* ---- the command ---- */

static int set_rlimit(int res, uint64_t v)
{
	struct rlimit rl = { .rlim_cur = v, .rlim_max = v };

	return RET_NERRNO(setrlimit(res, &rl));
}

/*
 * The command needs no capability. Namespaced, root inside the user namespace holds
 * every capability there; unnamespaced, a supervisor run by root would pass on all of
 * the host's (netlink changes, chattr +i, SCHED_FIFO, raw sockets...). Both go, with
 * the bounding and ambient sets (bubblewrap does the same): exec of a uid-0 process
 * otherwise grants the whole bounding set again (no_new_privs holds that back too).
 * Dropping from the bounding set needs CAP_SETPCAP; an unprivileged supervisor has
 * nothing to drop there that no_new_privs and the empty permitted set do not already
 * keep out of reach, so EPERM is accepted only when CAP_SETPCAP was not ours.
 *
 * keep_setid: with the full id map (root started moat, namespaced) CAP_SETUID and
 * CAP_SETGID stay, so that the sandbox's root can become another user (setpriv, su, a
 * subprocess's user=), and CAP_KILL, so that it can still signal what it started as
 * that user (kill, and the parent-death signal, which the kernel sends with the dying
 * parent's credentials): in the sandbox's own user namespace CAP_KILL reaches only
 * processes of that namespace, and the pid namespace names no other. Nothing that
 * overrides file modes or ownership, since the files it sees are the host's. They stay
 * in the bounding set, so root regains them at exec; a process that leaves uid 0 loses
 * them, as everywhere.
 */
static int drop_capabilities(bool keep_setid)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };
	uint32_t keep = 0;
	bool setpcap;

	if (keep_setid)
		keep = CAP_TO_MASK(CAP_SETUID) | CAP_TO_MASK(CAP_SETGID) | CAP_TO_MASK(CAP_KILL);

	if (syscall(SYS_capget, &hdr, data) < 0)
		return negative_errno();
	setpcap = data[CAP_TO_INDEX(CAP_SETPCAP)].effective & CAP_TO_MASK(CAP_SETPCAP);
	for (int cap = 0; cap <= CAP_LAST_CAP; cap++) {
		if (cap < 32 && (keep & CAP_TO_MASK(cap)))
			continue;
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL &&
		    (errno != EPERM || setpcap))
			return negative_errno();
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return negative_errno();
	memset(data, 0, sizeof(data));
	data[0].effective = data[0].permitted = keep;
	if (syscall(SYS_capset, &hdr, data) < 0)
		return negative_errno();
	/* What the kernel now holds, not what we asked for. */
	if (syscall(SYS_capget, &hdr, data) < 0)
		return negative_errno();
	if (data[0].effective != keep || data[0].permitted != keep || data[0].inheritable ||
	    data[1].effective || data[1].permitted || data[1].inheritable)
		return -EPERM;
	return 0;
}

_noreturn_ static void command_main(struct spawn_plan *p, pid_t keeper)
{
	const struct sup_opts *o = p->opts;
	sigset_t all;
	int r, listener;

	/* Fail closed: if the keeper dies, so does the command. The check after the prctl
	 * closes the race with a keeper that died before it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != keeper)
		_exit(MOAT_EXIT_FAILURE);

	/* The supervisor blocks signals for its signalfd; the command starts clean. */
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (int sig = 1; sig < _NSIG; sig++)
		signal(sig, SIG_DFL);

	/* A new session has no controlling terminal, which also closes TIOCSTI-style
	 * injection into the caller's terminal (the filter refuses TIOCSTI as well). */
	if (!o->tty && setsid() < 0)
		child_fail(p->sync_fd, STAGE_SETSID, errno);

	if (!o->stdin_pass && dup2(p->devnull_fd, STDIN_FILENO) < 0)
		child_fail(p->sync_fd, STAGE_FDS, errno);
	/* A terminal on stdout or stderr is replaced by the slave of a pty of the run's
	 * own (term.h says why). */
	for (int fd = STDOUT_FILENO; fd <= STDERR_FILENO; fd++)
		if (p->stdio[fd] >= 0 && dup2(p->stdio[fd], fd) < 0)
			child_fail(p->sync_fd, STAGE_FDS, errno);
	/* Every inherited fd but 0-2 disappears at exec; the sync socket stays open until
	 * then so exec failures can still be reported. */
	if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		child_fail(p->sync_fd, STAGE_FDS, errno);

	if (chdir(p->cwd) < 0)
		child_fail(p->sync_fd, STAGE_CHDIR, errno);

	r = set_rlimit(RLIMIT_CORE, 0);
	if (r >= 0 && o->cpu)
		r = set_rlimit(RLIMIT_CPU, o->cpu);
	if (r >= 0 && o->nofile)
		r = set_rlimit(RLIMIT_NOFILE, o->nofile);
	if (r >= 0 && o->fsize)
		r = set_rlimit(RLIMIT_FSIZE, o->fsize);
	if (r >= 0 && o->pids && !p->features->cgroup)
		/* Without a cgroup, the best we have (and the report says so): per-uid. */
		r = set_rlimit(RLIMIT_NPROC, o->pids);
	if (r >= 0 && o->memory && !p->features->cgroup)
		r = set_rlimit(RLIMIT_AS, o->memory);
	if (r < 0)
		child_fail(p->sync_fd, STAGE_RLIMIT, -r);

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail(p->sync_fd, STAGE_NNP, errno);
	r = drop_capabilities(p->namespaced && p->uid == 0);
	if (r < 0)
		child_fail(p->sync_fd, STAGE_CAPS, -r);
	if (p->features->landlock_abi > 0) {
		r = sandbox_landlock(o->vfs, p->features->landlock_abi, p->cover_globs,
				     p->readset);
		if (r < 0)
			child_fail(p->sync_fd, STAGE_LANDLOCK, -r);
	}

	/* Inherited from the supervisor, which hides itself from the sandbox; the command
	 * must be reachable by the supervisor (pidfd_getfd now, process_vm_readv later)
	 * without CAP_SYS_PTRACE. Exec would reset it anyway; ptrace itself is refused by
	 * the filter installed next. */
	if (prctl(PR_SET_DUMPABLE, 1) < 0)
		child_fail(p->sync_fd, STAGE_FILTER, errno);
	listener = sup_filter_install(&p->prog, p->features->wait_killable);
	if (listener < 0)
		child_fail(p->sync_fd, STAGE_FILTER, -listener);
	/* From here on every name-bearing syscall waits for the supervisor, which takes
	 * the listener (close-on-exec) out of this process with pidfd_getfd(). */
	if (sync_send(p->sync_fd, SYNC_LISTENER, listener, 0) < 0)
		_exit(MOAT_EXIT_FAILURE);
	/* A warm start: everything above is done before the command is known, so that a
	 * request costs one message and the exec. Nothing of the request changes what
	 * came before (the environment, the directory and the limits are the run's); the
	 * filter is already in place, and read and malloc are native under it. Only this
	 * process reads the sync socket now: the keeper waits for signals. With --argv-fd
	 * the argv comes from moat serve itself, one hop shorter than through the
	 * supervisor, which learns the command on --start-fd at the same time. */
	if (p->wait_argv && !(p->argv = recv_argv(p->argv_fd >= 0 ? p->argv_fd : p->sync_fd)))
		child_fail(p->sync_fd, STAGE_SYNC, EPROTO);

	environ = p->envp;
	/* The supervisor's answer to the same request: the program it found and checked,
	 * which runs as that very file (no exec stop needed, see firstexec.c), or nothing.
	 * Close-on-exec: a #! script fails with ENOENT then, and goes by name below. */
	if (p->exec_fd) {
		int fd = recv_exec_fd(p->sync_fd);

		if (fd >= 0) {
			syscall(SYS_execveat, fd, "", p->argv, p->envp, AT_EMPTY_PATH);
			close(fd);
		}
	}
	execvp(p->argv[0], p->argv);
	r = errno;
	sync_send(p->sync_fd, SYNC_EXEC_FAILED, r, 0);
	_exit(r == ENOENT || r == ENOTDIR ? MOAT_EXIT_NOTFOUND : MOAT_EXIT_NOEXEC);
}

/*
 * The command, as a child of the keeper. Not fork(): the keeper came from a raw clone
 * of a process with threads (the audit writer, the notifiers), so a malloc arena another
 * thread held at that moment stays locked here forever, and glibc's fork() takes every
 * arena lock first: it would wait for good. A raw clone takes none, and nor does
 * vfork().
 *
 * When the command goes straight on to its exec, it is a vfork() child: it runs in the
 * keeper's memory, on the keeper's stack below this frame, until its exec (or _exit),
 * while the keeper waits: no copy of the keeper's page tables (the supervisor's whole
 * image) and no copy-on-write fault for each page the command's set-up touches. That
 * set-up never returns here, and what it changes is the command's own (fds, rlimits,
 * session, signal dispositions, credentials, filter: a vfork child shares the memory
 * alone), but for what it writes to memory (environ), which the keeper never reads
 * again. A warm command (wait_argv) waits for its request before the exec, which could
 * be long: it gets a copy as before, and the keeper goes on.
 */
static pid_t spawn_command(struct spawn_plan *p, pid_t self)
{
	pid_t cmd;

	if (p->wait_argv)
		cmd = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, 0);
	else
		cmd = vfork();
	if (cmd == 0)
		command_main(p, self);
	return cmd < 0 ? -errno : cmd;
}

/* ---- the keeper: pid 1 of the sandbox's pid namespace, or a subreaper without one ---- */

_noreturn_ static void keeper_main(struct spawn_plan *p)
{
	pid_t self = getpid(), supervisor = getppid(), cmd;
	int status = 0, r;
	bool finished = false;
	sigset_t set;

	/* Both modes: if the supervisor dies, the keeper ends the run. In a pid namespace
	 * its death alone makes the kernel kill every process in it; without one it is a
	 * subreaper (so double-forked, setsid'ed orphans come back to it) and kills all of
	 * its descendants first, which is why it asks for a catchable signal. */
	if (!p->namespaced && prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		_exit(MOAT_EXIT_FAILURE);
	if (prctl(PR_SET_PDEATHSIG, p->namespaced ? SIGKILL : SIGTERM) < 0)
		_exit(MOAT_EXIT_FAILURE);
	/* Inherited from the supervisor: SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT are
	 * blocked, and wait for sigwaitinfo() below. EOF here means the supervisor died
	 * before the prctl could take effect. */
	if (wait_go(p->sync_fd) < 0)
		_exit(MOAT_EXIT_FAILURE);
	/* A fork of the supervisor, with its memory: keep it out of reach as well. */
	prctl(PR_SET_DUMPABLE, 0);

	if (p->namespaced) {
		if (p->features->cgroup)
			/* Now that the supervisor moved us into the run's cgroup, make it the
			 * root of what the sandbox can see of cgroups. */
			(void)unshare(CLONE_NEWCGROUP);
		(void)sethostname("moat", 4);
		r = build_mount_ns(p);
		if (r < 0)
			child_fail(p->sync_fd, STAGE_MOUNT, -r);
		/* Before the command exists: the supervisor switches the vfs to this root
		 * before it can receive the command's first notification, which comes after
		 * this message on the same socket. */
		{
			/* Passed rather than opened through /proc/<keeper>/root, which an
			 * unprivileged supervisor may not open once we are non-dumpable. */
			int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

			/* First: the supervisor marks the stubs before it takes the
			 * command's listener, which comes after both. */
			if (sync_send_fd(p->sync_fd, SYNC_STUBS, 0, p->stubs_fd) < 0)
				child_fail(p->sync_fd, STAGE_MOUNT, EIO);
			close(p->stubs_fd);
			if (root < 0 || sync_send_fd(p->sync_fd, SYNC_MOUNTS_READY,
						     (p->cover_incomplete ? SPAWN_COVER_INCOMPLETE : 0) |
							     (p->cover_links ? SPAWN_COVER_LINKS : 0),
						     root) < 0)
				child_fail(p->sync_fd, STAGE_MOUNT, errno ? errno : EIO);
			close(root);
		}
		sup_netns_setup(p->sync_fd);
	}
	cmd = spawn_command(p, self);
	if (cmd < 0)
		child_fail(p->sync_fd, STAGE_FORK, -cmd);
	if (p->argv_fd >= 0)
		close(p->argv_fd); /* the command's alone */

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	while (!finished) {
		siginfo_t si;
		int sig = sigwaitinfo(&set, &si);

		if (sig < 0)
			continue;
		if (sig != SIGCHLD) {
			/* Only the supervisor or the kernel (PDEATHSIG) may stop us. The
			 * signals are blocked for sigwaitinfo(), and blocked signals get past
			 * pid 1's usual protection, so without this check a sandboxed process
			 * could end the keeper and have moat report exit status 0 for a
			 * command that never finished. Senders outside our pid namespace show
			 * as pid 0; the kernel's own signals carry pid 0 too. Only a kill()
			 * or the kernel's own signal (si_code SI_USER, SI_KERNEL) says who
			 * sent it: rt_sigqueueinfo() lets any sender write si_pid, 0 included,
			 * with a negative si_code, the only kind it may send another process,
			 * and an F_SETSIG signal of I/O (POLL_*) holds si_band where si_pid
			 * would be. */
			if ((si.si_code == SI_USER || si.si_code == SI_KERNEL) &&
			    (si.si_pid == 0 || (!p->namespaced && si.si_pid == supervisor)))
				break;
			continue;
		}
		for (;;) {
			int st;
			pid_t w = waitpid(-1, &st, WNOHANG);
			if (w <= 0)
				break;
			if (w == cmd) {
				status = st;
				finished = true;
			}
		}
	}
	/* When the command ends, the run ends: nothing it left behind survives it. */
	if (!p->namespaced)
		kill_descendants(self);
	if (finished)
		sync_send(p->sync_fd, SYNC_STATUS, status, 0);
	_exit(0);
}

pid_t spawn_start(struct spawn_plan *p, int *ret_pidfd)
{
	pid_t pid;

	if (p->namespaced) {
		/* A raw clone without a stack behaves like fork, with the new namespaces.
		 * The cgroup namespace comes later, once the keeper sits in the run's cgroup. */
		pid = (pid_t)syscall(SYS_clone,
				     CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET |
					     CLONE_NEWIPC | CLONE_NEWUTS | SIGCHLD,
				     NULL, NULL, NULL, 0);
	} else {
		pid = fork();
	}
	if (pid < 0)
		return negative_errno();
	if (pid == 0)
		keeper_main(p);
	*ret_pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	return pid;
}
