/* SPDX-License-Identifier: MIT */
/*
 * The mount table's life: vfs_new()/vfs_free(), finalize (sorting the rules, covering
 * /proc and /dev, opening every mapping, building the skeleton), its JSON form and
 * rebase. Beside it: directives.c fills the table, glob.c and lookup.c read it (pure),
 * store.c keeps the host directories it needs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cleanup.h"
#include "error.h"
#include "macros.h"
#include "vfs-internal.h"

/* --- building -------------------------------------------------------------------------- */

_public_ int vfs_new(const struct vfs_proc_ops *proc, struct vfs **ret)
{
	pthread_mutexattr_t attr;
	struct vfs *v;
	char cwd[PATH_MAX];
	const char *home = getenv("HOME");

	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->root_fd = -1;
	v->host_root_fd = -1;
	v->private_lock = v->skeleton_lock = v->made_fd = v->made_dir = -1;
	v->cow_lower_fd = v->cow_upper_fd = v->cow_lock = -1;
	v->proc_self_fd = -1;
	/* Recursive: listing the change set holds it while it walks each path through
	 * the view, and the walk asks owned.c, which takes it too. */
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&v->lock, &attr);
	pthread_mutexattr_destroy(&attr);
	if (proc) {
		v->proc = *proc;
		v->has_proc_ops = true;
	}
	v->home = strdup(home && home[0] == '/' ? home : "/root");
	v->cwd = strdup(getcwd(cwd, sizeof(cwd)) ? cwd : "/");
	if (!v->home || !v->cwd) {
		vfs_free(v);
		return -ENOMEM;
	}
	*ret = v;
	return 0;
}

_public_ struct vfs *vfs_free(struct vfs *v)
{
	if (!v)
		return NULL;
	/* from the table, so before it goes; an open fd into the skeleton does not hold
	 * its directories */
	vfs__skel_remove(v);
	for (size_t i = 0; i < v->n_rules; i++) {
		struct vfs__rule *r = &v->rules[i];

		/* a sized tmpfs goes with its content; the empty backing dir is removed
		 * with the private dir below */
		if (r->mounted)
			umount2(r->host, MNT_DETACH);
		if (r->root_fd >= 0)
			close(r->root_fd);
		if (r->host_fd >= 0)
			close(r->host_fd);
		free(r->root_link);
		free(r->virt);
		free(r->host);
		free(r->content);
		free(r->size);
		free(r->given);
		free(r->desc);
		free(r->word);
		free(r->arg);
	}
	v->dcache = vfs__dcache_free(v->dcache);
	free(v->rules);
	free(v->mounts);
	free(v->globs);
	for (size_t i = 0; i < v->n_implicit; i++) {
		free(v->implicit[i]);
		if (v->implicit_fd && v->implicit_fd[i] >= 0)
			close(v->implicit_fd[i]);
	}
	free(v->implicit);
	free(v->implicit_fd);
	if (v->root_fd >= 0 && !v->root_mount)
		close(v->root_fd);
	if (v->host_root_fd >= 0 && !v->root_mount)
		close(v->host_root_fd);
	if (v->proc_self_fd >= 0)
		close(v->proc_self_fd);
	vfs__own_done(v, vfs__rm_rf_at);
	vfs__cow_done(v);
	vfs__made_done(v); /* named after private_dir */
	if (v->private_mounted)
		umount2(v->private_dir, MNT_DETACH);
	if (v->private_dir)
		vfs__rm_rf_at(AT_FDCWD, v->private_dir);
	free(v->private_dir);
	vfs__shm_remove(v);
	if (v->skeleton_dir && rmdir(v->skeleton_dir) < 0)
		vfs__rm_rf_at(AT_FDCWD, v->skeleton_dir);
	free(v->skeleton_dir);
	if (v->private_lock >= 0)
		close(v->private_lock);
	if (v->skeleton_lock >= 0)
		close(v->skeleton_lock);
	free(v->skeleton);
	free(v->tmpdir);
	free(v->home_dir);
	free(v->home);
	free(v->cwd);
	free(v->profile_cwd);
	free(v->chdir);
	free(v->initial_cwd);
	vfs__changes_done(v);
	pthread_mutex_destroy(&v->lock);
	free(v);
	return NULL;
}

/* Set the home "~" expands to (default: $HOME at vfs_new()). */
_public_ int vfs_set_home(struct vfs *v, const char *home)
{
	char *h;

	if (!home || home[0] != '/')
		return -EINVAL;
	h = strdup(home);
	if (!h)
		return -ENOMEM;
	free(v->home);
	v->home = h;
	return 0;
}

/* --- finalize ---------------------------------------------------------------------------- */

static int cmp_mount(const void *a, const void *b)
{
	const struct vfs__rule *x = *(struct vfs__rule *const *)a, *y = *(struct vfs__rule *const *)b;

	return strcmp(x->virt, y->virt);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_implicit(struct vfs *v, const char *path)
{
	char **n;

	if (vfs__is_implicit(v, path))
		return 0;
	n = realloc(v->implicit, (v->n_implicit + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	v->implicit = n;
	v->implicit[v->n_implicit] = strdup(path);
	if (!v->implicit[v->n_implicit])
		return -ENOMEM;
	v->n_implicit++;
	return 0;
}

static int refresh_fixed(struct vfs *v);

/* The live mapping with the longest virtual path at or above vpath, before finalize. */
static ssize_t covering_rule(const struct vfs *v, const char *vpath)
{
	ssize_t best = -1;

	for (size_t i = 0; i < v->n_rules; i++) {
		const struct vfs__rule *a = &v->rules[i];

		if (a->dead || a->kind > VFS__FILE || !vfs__path_under(vpath, a->virt))
			continue;
		if (best < 0 || strlen(a->virt) > strlen(v->rules[best].virt))
			best = (ssize_t)i;
	}
	return best;
}

/* An implicit mapping that takes the place of the one at index cover in the precedence:
 * hide and deny rules given after that mapping still apply to it. */
static int add_cover(struct vfs *v, const char *word, const char *arg, size_t cover,
                     struct moat_error *e)
{
	unsigned seq = v->rules[cover].seq;
	int r;

	r = vfs_add_directive(v, word, arg, "implicit", e);
	if (r < 0)
		return r;
	v->rules[v->n_rules - 1].seq = seq;
	return 0;
}

/*
 * Whatever a mapping of a parent (a bind of "/") covers: /proc is always the sandbox's
 * own procfs (only its pids; self is the caller, never the supervisor), and /dev shows only
 * the device nodes the policy names. The walker refuses a device node reached through a
 * mapping of a parent of /dev (vfs__hides_devices()); the harmless devices every program
 * expects are mapped here by name, as the default profile does.
 */
static int cover_proc_dev(struct vfs *v, struct moat_error *e)
{
	static const char *const devs[] = {
		"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
	};
	ssize_t c = covering_rule(v, "/proc");
	int r;

	if (c >= 0 && !(v->rules[c].is_proc && streq(v->rules[c].virt, "/proc"))) {
		if (streq(v->rules[c].virt, "/proc"))
			v->rules[c].dead = true; /* something else mapped at /proc: not a procfs */
		if ((r = add_cover(v, "ro-bind", "/proc", (size_t)c, e)) < 0)
			return r;
	}
	for (size_t i = 0; i < ELEMENTSOF(devs); i++) {
		const struct vfs__rule *m;
		char src[PATH_MAX];
		struct stat st;

		c = covering_rule(v, devs[i]);
		/* not covered, named already, or something else mapped at that very path */
		if (c < 0 || !vfs__hides_devices(&v->rules[c]) || streq(v->rules[c].virt, devs[i]))
			continue;
		/* only where the covering mapping has that device too (a bind of another
		 * root file system may have none, and a read-only one takes no mountpoint) */
		m = &v->rules[c];
		if (m->kind != VFS__BIND || !vfs__host_below(m, devs[i], src, sizeof(src)) ||
		    lstat(src, &st) < 0 || !S_ISCHR(st.st_mode) || lstat(devs[i], &st) < 0)
			continue;
		if ((r = add_cover(v, "bind", devs[i], (size_t)c, e)) < 0)
			return r;
	}
	return 0;
}

/* The world-writable, sticky directories programs name literally (/tmp/x, glibc's
 * sem_open and shm_open): a tmpfs there is, unnamespaced, the host's directory showing
 * only what the run made in it. */
static bool shared_dir(const char *vpath)
{
	return streq(vpath, "/tmp") || streq(vpath, "/dev/shm");
}

_public_ int vfs_set_disk_quota(struct vfs *v, uint64_t bytes)
{
	if (v->finalized)
		return -EBUSY;
	v->disk_quota = bytes;
	return 0;
}

_public_ void vfs_allow_mounts(struct vfs *v)
{
	v->may_mount = true;
}

_public_ bool vfs_needs_mounts(const struct vfs *v)
{
	if (v->disk_quota || v->cow)
		return true;
	for (size_t i = 0; i < v->n_rules; i++)
		if (v->rules[i].kind == VFS__TMPFS && v->rules[i].size && !v->rules[i].dead)
			return true;
	return false;
}

_public_ bool vfs_disk_usage(const struct vfs *v, uint64_t *ret_used, uint64_t *ret_size)
{
	struct statfs sf;

	if (!v->private_mounted || statfs(v->private_dir, &sf) < 0)
		return false;
	*ret_size = v->disk_quota;
	*ret_used = (uint64_t)(sf.f_blocks - sf.f_bfree) * (uint64_t)sf.f_bsize;
	return true;
}

static int finalize(struct vfs *v, enum vfs_mode mode, struct moat_error *e)
{
	char tmpl[] = "/tmp/moat-vfs-XXXXXX";
	size_t nm = 0, ng = 0;
	int r;

	if (v->finalized)
		return moat_error_set(e, EINVAL, "already finalized");
	v->mode = mode;

	/* the latest mapping of a virtual path replaces earlier ones */
	for (size_t i = 0; i < v->n_rules; i++) {
		struct vfs__rule *a = &v->rules[i];

		if (a->kind > VFS__FILE)
			continue;
		for (size_t j = i + 1; j < v->n_rules; j++)
			if (v->rules[j].kind <= VFS__FILE && streq(v->rules[j].virt, a->virt)) {
				a->dead = true;
				break;
			}
	}
	if ((r = cover_proc_dev(v, e)) < 0)
		return r;

	for (size_t i = 0; i < v->n_rules; i++) {
		struct vfs__rule *a = &v->rules[i];

		if (a->dead || a->kind > VFS__FILE || mode != VFS_MODE_UNNAMESPACED)
			continue;
		if (a->kind == VFS__BIND && !streq(a->host, a->virt))
			return moat_error_set(e, EINVAL,
			            "%s: unnamespaced mode cannot remap %s to %s (virtual paths "
			            "equal host paths); this needs the namespaced mode",
			            a->desc, a->host, a->virt);
		if (a->kind == VFS__TMPFS && !shared_dir(a->virt) && !streq(a->virt, v->home))
			return moat_error_set(e, EINVAL,
			            "%s: unnamespaced mode has no tmpfs (only /tmp and /dev/shm, "
			            "showing what the run made in them, and a private home); this "
			            "needs the namespaced mode", a->desc);
	}

	if (!v->defer_sweep)
		vfs__sweep_stale("/tmp", "moat-vfs-", -1);
	if (!mkdtemp(tmpl))
		return moat_error_set(e, EINVAL, "cannot create a private directory: %s",
		                 strerror(errno));
	v->private_dir = strdup(tmpl);
	if (!v->private_dir)
		return -ENOMEM;
	v->private_lock = vfs__lock_private(AT_FDCWD, tmpl);
	if (v->private_lock < 0)
		return moat_error_set(e, EINVAL, "cannot lock the private directory %s: %s", tmpl,
		                 strerror(-v->private_lock));
	/* After the lock: a sweeper of another run locks the directory underneath, which
	 * is the one the host sees, and so leaves it alone. */
	if (v->disk_quota && v->may_mount) {
		char opts[64];

		snprintf(opts, sizeof(opts), "size=%llu,mode=0700", (unsigned long long)v->disk_quota);
		if (mount("tmpfs", tmpl, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
			return moat_error_set(e, EINVAL, "--disk: cannot mount a tmpfs on %s: %s", tmpl,
			                 strerror(errno));
		v->private_mounted = true;
	}

	/* back tmpfs and inline files with host objects the supervisor can reach */
	for (size_t i = 0; i < v->n_rules; i++) {
		struct vfs__rule *a = &v->rules[i];

		if (a->dead)
			continue;
		if (a->kind == VFS__TMPFS) {
			bool home = streq(a->virt, v->home);
			struct stat st;

			/* the host's /tmp or /dev/shm cannot hold a SIZE or count towards
			 * --disk: then a private directory at its own path, as any other */
			if (mode == VFS_MODE_UNNAMESPACED && shared_dir(a->virt) && !a->size &&
			    !v->disk_quota) {
				/* no private directory can have this name: the host's,
				 * showing only what the run makes in it (owned.c) */
				if (stat(a->virt, &st) < 0 || !S_ISDIR(st.st_mode))
					return moat_error_set(e, EINVAL, "%s: the host has no %s directory",
					                 a->desc, a->virt);
				a->kind = VFS__BIND;
				a->own_only = true;
				a->host = strdup(a->virt);
				if (!a->host)
					return -ENOMEM;
			} else {
				/* the sandbox's /dev/shm is memory natively too */
				bool shm = mode == VFS_MODE_NAMESPACED && streq(a->virt, "/dev/shm") &&
					   !a->size && !v->disk_quota;

				if ((r = shm ? vfs__shm_path(v, "tmp", &a->host)
					     : vfs__private_path(v, "tmp", &a->host)) < 0)
					return r;
				if (mkdir(a->host, home ? 0700 : 01777) < 0 ||
				    chmod(a->host, home ? 0700 : 01777) < 0)
					return moat_error_set(e, EINVAL, "%s: %s", a->desc,
					                 strerror(errno));
				if (a->size && v->may_mount && (r = vfs__mount_sized(a)) < 0)
					return moat_error_set(e, EINVAL, "%s: cannot mount a tmpfs of %s: %s",
					                 a->desc, a->size, strerror(-r));
			}
			if (mode == VFS_MODE_UNNAMESPACED && !a->own_only) {
				/* a private directory lives at its own host path (the
				 * home is given to the sandbox as HOME, /tmp as TMPDIR) */
				free(a->virt);
				a->virt = strdup(a->host);
				if (!a->virt)
					return -ENOMEM;
			}
			if (home) {
				free(v->home_dir);
				if (!(v->home_dir = strdup(a->virt)))
					return -ENOMEM;
			} else if (streq(a->given, "/tmp") || (!v->tmpdir && !shared_dir(a->given))) {
				free(v->tmpdir);
				if (!(v->tmpdir = strdup(a->virt)))
					return -ENOMEM;
			}
		} else if (a->kind == VFS__FILE && a->content) {
			if ((r = mode == VFS_MODE_NAMESPACED ? vfs__shm_path(v, "file", &a->host)
							      : vfs__private_path(v, "file", &a->host)) < 0)
				return r;
			if ((r = vfs__write_file(a->host, a->content, strlen(a->content))) < 0)
				return moat_error_set(e, EINVAL, "%s: %s", a->desc, strerror(-r));
		}
	}

	/* the overlay before the mappings' fds: the workspace's must be the overlay's */
	if (v->cow && (r = vfs__cow_mount(v, e)) < 0)
		return r;

	v->mounts = calloc(v->n_rules + 1, sizeof(*v->mounts));
	v->globs = calloc(v->n_rules + 1, sizeof(*v->globs));
	if (!v->mounts || !v->globs)
		return -ENOMEM;
	for (size_t i = 0; i < v->n_rules; i++) {
		struct vfs__rule *a = &v->rules[i];
		struct stat st;

		if (a->kind == VFS__HIDE || a->kind == VFS__DENY) {
			vfs__glob_tail(a);
			v->globs[ng++] = a;
			continue;
		}
		if (a->dead)
			continue;
		/* Open every source now and keep the fd: a mapping is then pinned like a
		 * mount, and a later rename or symlink swap of a host ancestor (possibly by
		 * the sandbox itself, through another writable mapping) cannot move it. */
		a->root_fd = open(a->host, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (a->root_fd < 0 || fstat(a->root_fd, &st) < 0)
			return moat_error_set(e, EINVAL, "%s: %s: %s", a->desc, a->host, strerror(errno));
		a->root_is_link = S_ISLNK(st.st_mode);
		a->root_dev = st.st_dev;
		a->root_ino = st.st_ino;
		if (a->kind == VFS__FILE)
			a->writable = false;
		v->mounts[nm++] = a;
	}
	v->n_mounts = nm;
	v->n_globs = ng;
	qsort(v->mounts, nm, sizeof(*v->mounts), cmp_mount);

	/* unmapped ancestors of mount points must still be traversable */
	for (size_t i = 0; i < nm; i++) {
		char p[PATH_MAX];

		snprintf(p, sizeof(p), "%s", v->mounts[i]->virt);
		for (;;) {
			char *s = strrchr(p, '/');

			if (!s || streq(p, "/"))
				break;
			if (s == p)
				s[1] = '\0';
			else
				*s = '\0';
			/* below an own_only mapping (the private home in the run's
			 * private directory under the host's /tmp), the way to a mapping
			 * is implicit too: it shows that mapping and nothing else */
			const struct vfs__rule *cov = vfs__mount_covering(v, p);

			if (cov && (!cov->own_only || streq(cov->virt, p)))
				break;
			if ((r = add_implicit(v, p)) < 0)
				return r;
		}
	}
	if (v->n_implicit)
		qsort(v->implicit, v->n_implicit, sizeof(*v->implicit), cmp_str);

	/* A mapping nested in a tmpfs (the workspace under /tmp) needs its mount point in
	 * the tmpfs's backing dir: the walker passes through it, and the interposer's bind
	 * mount lands on it. Bind sources of the host are never modified. */
	for (size_t i = 0; i < nm; i++) {
		const struct vfs__rule *m = v->mounts[i], *pm;
		char parent[PATH_MAX], *s;
		const char *rel;
		struct stat st;

		snprintf(parent, sizeof(parent), "%s", m->virt);
		s = strrchr(parent, '/');
		if (!s || streq(m->virt, "/"))
			continue;
		if (s == parent)
			s[1] = '\0';
		else
			*s = '\0';
		pm = vfs__mount_covering(v, parent);
		if (!pm || pm->kind != VFS__TMPFS)
			continue;
		rel = vfs__below(pm, m->virt);
		snprintf(parent, sizeof(parent), "%s", rel);
		s = strrchr(parent, '/');
		if (s != parent) {
			*s = '\0';
			if ((r = vfs__skel_mkdirs(pm->host, parent)) < 0)
				return moat_error_set(e, EINVAL, "%s: mount point: %s", m->desc, strerror(-r));
		}
		if (fstat(m->root_fd, &st) < 0 || (r = vfs__skel_mountpoint(pm->host, rel, m, &st)) < 0)
			return moat_error_set(e, EINVAL, "%s: mount point: %s", m->desc, strerror(errno));
	}

	v->root_mount = (struct vfs__rule *)vfs__mount_exact(v, "/");
	if (v->root_mount) {
		v->root_fd = v->root_mount->root_fd;
	} else if (mode == VFS_MODE_UNNAMESPACED) {
		v->root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	} else {
		/* namespaced: the unmapped tree is a skeleton of empty directories and
		 * mount points, which the interposer can also use as the sandbox's root */
		if ((r = vfs__skeleton_path(v, &v->skeleton)) < 0)
			return moat_error_set(e, EINVAL, "skeleton: %s", strerror(-r));
		if (mkdir(v->skeleton, 0755) < 0)
			return moat_error_set(e, EINVAL, "skeleton: %s", strerror(errno));
		for (size_t i = 0; i < v->n_implicit; i++)
			if (!streq(v->implicit[i], "/") &&
			    (r = vfs__skel_mkdirs(v->skeleton, v->implicit[i])) < 0)
				return moat_error_set(e, EINVAL, "skeleton %s: %s", v->implicit[i],
				                 strerror(-r));
		for (size_t i = 0; i < nm; i++) {
			struct stat st;
			char parent[PATH_MAX], *s;

			snprintf(parent, sizeof(parent), "%s", v->mounts[i]->virt);
			s = strrchr(parent, '/');
			if (s == parent)
				s[1] = '\0';
			else
				*s = '\0';
			if (!vfs__is_implicit(v, parent))
				continue;
			if (fstat(v->mounts[i]->root_fd, &st) < 0 ||
			    (r = vfs__skel_mountpoint(v->skeleton, v->mounts[i]->virt, v->mounts[i],
			                         &st)) < 0)
				return moat_error_set(e, EINVAL, "skeleton %s: %s", v->mounts[i]->virt,
				                 strerror(errno));
		}
		v->root_fd = open(v->skeleton, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	if (v->root_fd < 0)
		return moat_error_set(e, EINVAL, "root: %s", strerror(errno));
	if ((r = vfs__dcache_new(&v->dcache)) < 0)
		return r;
	/* vfs__reopen()'s directory; the path is used when this fails */
	v->proc_self_fd = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if ((r = refresh_fixed(v)) < 0)
		return moat_error_set(e, EINVAL, "root: %s", strerror(-r));
	v->finalized = true;

	/* where the sandbox starts: chdir directive, else the workspace, else "/" */
	{
		const char *cands[] = { v->chdir, v->profile_cwd, v->cwd };

		for (size_t i = 0; i < ELEMENTSOF(cands) && !v->initial_cwd; i++) {
			struct vfs_caller c = { .pid = getpid(), .tgid = getpid(), .base = "/" };

			if (cands[i] && vfs_check_chdir(v, &c, cands[i], NULL) == 0)
				v->initial_cwd = strdup(cands[i]);
		}
		if (!v->initial_cwd && v->chdir)
			return moat_error_set(e, EINVAL, "chdir %s: not a visible directory", v->chdir);
		if (!v->initial_cwd)
			v->initial_cwd = strdup("/");
		if (!v->initial_cwd)
			return -ENOMEM;
	}
	return 0;
}

_public_ int vfs_finalize(struct vfs *v, enum vfs_mode mode, struct moat_error *e)
{
	struct moat_error mine = { 0 };
	int r = finalize(v, mode, &mine);

	/* The steps name what failed; an allocation that failed is still the operator's to
	 * read, as its errno. */
	if (r < 0 && !mine.err)
		moat_error_errno(&mine, r);
	if (r < 0 && e)
		*e = mine;
	return r;
}

_public_ const char *vfs_initial_cwd(const struct vfs *v)
{
	return v->initial_cwd ? v->initial_cwd : "/";
}

/*
 * The sandbox's temporary directory (export it as TMPDIR): the virtual path of the tmpfs
 * at /tmp (unnamespaced, the host's /tmp showing what the run made in it), else of the
 * first other tmpfs that is neither the home nor /dev/shm. NULL without one.
 */
_public_ const char *vfs_tmpdir(const struct vfs *v)
{
	return v->tmpdir;
}

/* The sandbox's HOME: the virtual path of the tmpfs at the home (namespaced, the home's
 * own path; unnamespaced, its private host directory), or NULL when there is none. */
_public_ const char *vfs_home(const struct vfs *v)
{
	return v->home_dir;
}

/* Namespaced mode: host directory with the unmapped tree (empty directories, mount
 * points, symlinks such as /bin -> usr/bin); NULL when "/" is mapped or unnamespaced. */
_public_ const char *vfs_skeleton(const struct vfs *v)
{
	return v->skeleton;
}

_public_ int vfs_foreach_mount(const struct vfs *v,
                               int (*fn)(const struct vfs_mount_info *m, void *ud), void *ud)
{
	int r;

	for (size_t i = 0; i < v->n_mounts; i++) {
		const struct vfs__rule *m = v->mounts[i];
		struct vfs_mount_info mi = {
			.kind = m->kind == VFS__TMPFS ? VFS_MOUNT_TMPFS :
			        m->kind == VFS__FILE ? VFS_MOUNT_FILE : VFS_MOUNT_BIND,
			.host = m->host,
			.virt = m->virt,
			.writable = m->writable,
			.own_only = m->own_only,
			.is_proc = m->is_proc,
		};

		/* a symlink cannot be bind-mounted: the mount namespace gets the same link */
		if (m->root_is_link)
			mi.kind = VFS_MOUNT_SYMLINK;
		if ((r = fn(&mi, ud)) != 0)
			return r;
	}
	/* literal hide rules can be enforced by the kernel layer too; globs need the tree
	 * read first (vfs_foreach_cover()) */
	for (size_t i = 0; i < v->n_globs; i++) {
		const struct vfs__rule *g = v->globs[i];
		struct vfs_mount_info mi = { .kind = VFS_MOUNT_HIDE, .virt = g->virt };

		const struct vfs__rule *ex = vfs__mount_exact(v, g->virt);

		if (g->kind != VFS__HIDE || strpbrk(g->virt, "*?\\"))
			continue;
		/* A later mapping of the path itself replaces what was hidden (the private
		 * home over "hide /root"), and one below an unmapped hidden path (the
		 * workspace in /root) needs the way to it, which holds only mount points
		 * of moat's own: covering either would cover the mapping too. */
		if ((ex && ex->seq > g->seq) ||
		    (!vfs__mount_covering(v, g->virt) && vfs__rescuable(v, g, g->virt)))
			continue;
		if ((r = fn(&mi, ud)) != 0)
			return r;
	}
	return 0;
}

/* Canonical JSON: jansson with JSON_SORT_KEYS|JSON_COMPACT gives the canonical text. */
_public_ void *vfs_to_json(const struct vfs *v)
{
	json_t *root = json_object(), *rules = json_array();

	if (!root || !rules) {
		json_decref(root);
		json_decref(rules);
		return NULL;
	}
	for (size_t i = 0; i < v->n_rules; i++) {
		const struct vfs__rule *r = &v->rules[i];
		json_t *o = json_object();

		if (!o)
			goto fail;
		json_object_set_new(o, "directive", json_string(r->word));
		json_object_set_new(o, "arg", json_string(r->arg));
		if (r->kind <= VFS__FILE) {
			/* the policy, not this run's private paths: the hash must be stable */
			json_object_set_new(o, "virtual", json_string(r->given ? r->given : r->virt));
			json_object_set_new(o, "writable", json_boolean(r->writable));
			json_object_set_new(o, "replaced", json_boolean(r->dead));
			if (r->kind == VFS__BIND)
				json_object_set_new(o, "host", json_string(r->host));
			if (r->kind == VFS__TMPFS && r->size)
				json_object_set_new(o, "size", json_string(r->size));
			if (r->kind == VFS__FILE && r->content)
				json_object_set_new(o, "content", json_string(r->content));
			if (r->kind == VFS__FILE && !r->content)
				json_object_set_new(o, "host", json_string(r->host));
		} else {
			json_object_set_new(o, "glob", json_string(r->virt));
		}
		json_array_append_new(rules, o);
	}
	json_object_set_new(root, "rules", rules);
	json_object_set_new(root, "chdir", v->chdir ? json_string(v->chdir) : json_null());
	if (v->finalized)
		json_object_set_new(root, "mode", json_string(v->mode == VFS_MODE_NAMESPACED ?
		                                              "namespaced" : "unnamespaced"));
	return root;
fail:
	json_decref(root);
	json_decref(rules);
	return NULL;
}

/*
 * Implicit directories only lead to mappings, and nothing the sandbox does can change
 * them: namespaced they are moat's own skeleton, unnamespaced the host's directories
 * above the mappings, which the view pins like the mappings' roots. The walker takes
 * their fds from here instead of opening and closing each one on every call. Each is
 * opened in its pinned parent without following anything; one that does not open so (a
 * symlink on the host, say) stays -1 and is looked up on every walk, as any other name.
 */
static int pin_implicit(struct vfs *v)
{
	if (!v->n_implicit)
		return 0;
	if (!v->implicit_fd) {
		v->implicit_fd = malloc(v->n_implicit * sizeof(*v->implicit_fd));
		if (!v->implicit_fd)
			return -ENOMEM;
	} else {
		for (size_t i = 0; i < v->n_implicit; i++)
			if (v->implicit_fd[i] >= 0)
				close(v->implicit_fd[i]);
	}
	for (size_t i = 0; i < v->n_implicit; i++)
		v->implicit_fd[i] = -1;
	/* sorted: a directory's parent (implicit too, or "/") comes before it */
	for (size_t i = 0; i < v->n_implicit; i++) {
		const char *p = v->implicit[i], *name = strrchr(p, '/') + 1;
		char parent[PATH_MAX];
		int pfd = v->root_fd;

		if (streq(p, "/"))
			continue;
		if (name - 1 > p) {
			snprintf(parent, sizeof(parent), "%.*s", (int)(name - 1 - p), p);
			pfd = vfs__implicit_fd(v, parent);
		}
		if (pfd >= 0)
			v->implicit_fd[i] = openat(pfd, name,
			                           O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	return 0;
}

/* The types of the fixed fds the walker passes through without an fstat (walk.c), and
 * a directory cache emptied of fds that belong to the other side of a vfs_rebase(). */
static int refresh_fixed(struct vfs *v)
{
	struct stat st;

	vfs__dcache_flush(v->dcache);
	for (size_t i = 0; i < v->n_mounts; i++) {
		struct vfs__rule *m = v->mounts[i];

		free(m->root_link);
		m->root_link = NULL;
		if (m->root_fd >= 0 && fstat(m->root_fd, &st) < 0)
			return negative_errno();
		m->root_type = m->root_fd >= 0 ? st.st_mode & S_IFMT : 0;
		if (S_ISLNK(m->root_type)) {
			char t[PATH_MAX];
			ssize_t n = readlinkat(m->root_fd, "", t, sizeof(t));

			/* unreadable or too long: the walker reads it as it always did */
			if (n > 0 && (size_t)n < sizeof(t)) {
				t[n] = '\0';
				m->root_link = strdup(t);
			}
		}
	}
	if (fstat(v->root_fd, &st) < 0)
		return negative_errno();
	v->root_type = st.st_mode & S_IFMT;
	return pin_implicit(v);
}

/*
 * Namespaced mode: once the sandbox's mount namespace exists (built from this very
 * table), walk through it rather than through the host paths. Every fd the vfs hands out
 * then lives on the sandbox's own mounts, so the kernel prints its path relative to the
 * sandbox's root: /proc/<pid>/fd links read as virtual paths, to the supervisor and to
 * the sandbox alike (no host path leaks through them), and /proc is the sandbox's own
 * procfs, numbered as the sandbox numbers its processes. The mounts mirror the table,
 * so every decision is the same. root < 0 switches back to the host fds: the mounts of
 * a namespace are detached when its last process exits, and the change set is read
 * after that.
 */
_public_ int vfs_rebase(struct vfs *v, int root)
{
	if (!v->finalized || v->mode != VFS_MODE_NAMESPACED)
		return -EINVAL;
	if (root < 0) {
		if (!v->rebased)
			return 0;
		for (size_t i = 0; i < v->n_mounts; i++) {
			struct vfs__rule *m = v->mounts[i];

			if (m->host_fd < 0)
				continue;
			if (m->root_fd >= 0)
				close(m->root_fd);
			m->root_fd = m->host_fd;
			m->host_fd = -1;
		}
		if (!v->root_mount) {
			close(v->root_fd);
			v->root_fd = v->host_root_fd;
		} else {
			v->root_fd = v->root_mount->root_fd;
		}
		v->host_root_fd = -1;
		v->rebased = false;
		return refresh_fixed(v);
	}
	if (v->rebased)
		return -EBUSY;
	for (size_t i = 0; i < v->n_mounts; i++) {
		struct vfs__rule *m = v->mounts[i];
		int fd;

		/* A mapping of a host path that does not exist is absent inside as well. */
		if (m->root_fd < 0)
			continue;
		fd = openat(root, streq(m->virt, "/") ? "." : m->virt + 1,
		            O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		m->host_fd = m->root_fd;
		m->root_fd = fd;
	}
	v->host_root_fd = v->root_fd;
	if (v->root_mount) {
		v->root_fd = v->root_mount->root_fd;
	} else {
		v->root_fd = fcntl(root, F_DUPFD_CLOEXEC, 3);
		if (v->root_fd < 0) {
			v->root_fd = v->host_root_fd;
			v->host_root_fd = -1;
			return negative_errno();
		}
	}
	v->rebased = true;
	return refresh_fixed(v);
}
