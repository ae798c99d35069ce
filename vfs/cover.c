/* SPDX-License-Identifier: MIT */
/*
 * Covering: the paths of the assembled mount namespace that the policy hides or denies
 * for reading, so that the namespace can hold an empty stub over each of them.
 *
 * Literal hide rules are covered from the table alone (vfs_foreach_mount()). A glob
 * names paths only once a tree is read, so the namespace's tree is read at set-up:
 * wholly wherever a "**" glob can match (writable mappings and tmpfs, the home,
 * read-only mappings other than system trees, and a system tree a glob is anchored in)
 * and in the directories on the way to those; elsewhere only as deep as a glob's
 * components before its first "**" reach ("/etc/shadow*" reads /etc). A "**" glob
 * anchored above a system tree does not reach into it, in the decision as here
 * (vfs__glob_reaches()), so nothing it could match is left unread. The reading has a
 * budget: over it the covering is incomplete, and the caller must not rely on it.
 * docs/threat-model.md ("Hidden content and the kernel's view") says what this leaves
 * out. What the sandbox creates later under a hidden name is refused by the
 * supervisor: creates, renames and links stay emulated in every mode.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "macros.h"
#include "vfs-internal.h"

struct cover {
	const struct vfs *v;
	const char *root;  /* host path of the namespace's "/" */
	int (*fn)(const char *vpath, bool dir, void *ud);
	void *ud;
	unsigned entries;  /* read so far, for the budget */
	unsigned budget;
	struct vfs_cover_cache *cc; /* or NULL */
};

/* Components of a glob before its first "**": how deep it can reach in a tree that is
 * read only as far as the globs name it. */
static unsigned fixed_depth(const char *pat)
{
	unsigned n = 0;

	for (const char *p = pat; *p;) {
		const char *e;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		e = strchrnul(p, '/');
		if (e - p == 2 && p[0] == '*' && p[1] == '*')
			break;
		n++;
		p = e;
	}
	return n;
}

static unsigned depth_of(const char *vpath)
{
	unsigned n = 0;

	for (const char *p = vpath; *p; p++)
		if (*p == '/' && p[1])
			n++;
	return n;
}

/* The sandbox can put files at or below vpath: a writable mapping or tmpfs covers it,
 * or it is in the home. */
static bool writable_at(const struct vfs *v, const char *vpath)
{
	const struct vfs__rule *m = vfs__mount_covering(v, vpath);

	if (m && (m->writable || m->kind == VFS__TMPFS) && !m->is_proc)
		return true;
	return (v->home_dir && vfs__path_under(vpath, v->home_dir)) ||
	       (v->home && !streq(v->home, "/") && vfs__path_under(vpath, v->home));
}

/* vpath is on the way to a place the sandbox can write. */
static bool writable_below(const struct vfs *v, const char *vpath)
{
	for (size_t i = 0; i < v->n_mounts; i++) {
		const struct vfs__rule *m = v->mounts[i];

		if ((m->writable || m->kind == VFS__TMPFS) && !m->is_proc &&
		    vfs__path_under(m->virt, vpath))
			return true;
	}
	return false;
}

/* A mapping in which the "**" glob g can match: any but the sandbox's procfs (whose
 * entries are its processes) and a system tree g does not reach. */
static bool glob_reaches_mapping(const struct vfs__rule *g, const struct vfs__rule *m)
{
	return !m->is_proc && (!m->system || vfs__glob_reaches(g, m));
}

/* The "**" glob g can match at or below vpath, in the mapping there or one below it. */
static bool glob_reaches_below(const struct vfs *v, const struct vfs__rule *g, const char *vpath)
{
	const struct vfs__rule *m = vfs__mount_covering(v, vpath);

	if (m && glob_reaches_mapping(g, m))
		return true;
	for (size_t i = 0; i < v->n_mounts; i++)
		if (!streq(v->mounts[i]->virt, vpath) && vfs__path_under(v->mounts[i]->virt, vpath) &&
		    glob_reaches_mapping(g, v->mounts[i]))
			return true;
	return false;
}

static bool worth_reading(const struct vfs *v, const char *vpath)
{
	unsigned d = depth_of(vpath);

	if (writable_at(v, vpath) || writable_below(v, vpath))
		return true;
	for (size_t i = 0; i < v->n_globs; i++) {
		const struct vfs__rule *g = v->globs[i];

		if (!vfs__glob_may_match_below(g->virt, vpath))
			continue;
		if (fixed_depth(g->virt) > d || (g->dstar && glob_reaches_below(v, g, vpath)))
			return true;
	}
	return false;
}

static bool mapping_below(const struct vfs *v, const char *vpath)
{
	for (size_t i = 0; i < v->n_mounts; i++)
		if (!streq(v->mounts[i]->virt, vpath) && vfs__path_under(v->mounts[i]->virt, vpath))
			return true;
	return false;
}

static bool refused(const struct vfs *v, const char *vpath)
{
	struct vfs_verdict verdict;
	int r = vfs_decide(v, vpath, VFS_WANT_READ, &verdict);

	return r == -ENOENT || r == -EACCES;
}

/* scan(): vdir is looked at as vdir + off beneath the directory bfd (a directory above
 * it, open), or by its host path when bfd is -1. */
static int scan(struct cover *c, const char *vdir, bool cover_all, int bfd, size_t off);

/* vpath is refused: cover it, unless a mapping below it is still shown (a workspace
 * inside a hidden home), in which case the refused entries beside the way to it are. */
static int cover_one(struct cover *c, const char *vpath, bool dir)
{
	if (dir && mapping_below(c->v, vpath))
		return scan(c, vpath, true, -1, 0);
	return c->fn(vpath, dir, c->ud);
}

struct replay {
	struct cover *c;
	const char *vdir;
	int bfd;
	size_t off;
};

static int replay_one(void *ud, const char *name, size_t len, unsigned flags)
{
	struct replay *rp = ud;
	char vpath[PATH_MAX];
	size_t dl = streq(rp->vdir, "/") ? 0 : strlen(rp->vdir);

	if (dl + 1 + len >= sizeof(vpath))
		return -E2BIG;
	memcpy(vpath, rp->vdir, dl);
	vpath[dl] = '/';
	memcpy(vpath + dl + 1, name, len);
	vpath[dl + 1 + len] = '\0';
	if (flags & VFS__CC_COVER)
		return cover_one(rp->c, vpath, flags & VFS__CC_DIR);
	return scan(rp->c, vpath, false, rp->bfd, rp->off);
}

/* Replays rec's work in vdir, whose children are looked at beneath bfd (from off). */
static int replay(struct cover *c, const struct vfs__cc_rec *rec, const char *vdir, int bfd,
		  size_t off)
{
	struct replay rp = { c, vdir, bfd, off };

	c->entries += vfs__cc_entries(rec);
	if (c->entries > c->budget)
		return -E2BIG;
	vfs__cc_keep(c->cc, rec);
	return vfs__cc_children(rec, replay_one, &rp);
}

/* cover_all: vdir itself is refused, so is every entry the table does not rescue.
 * What this does in a directory must follow from the table, vdir, cover_all and the
 * directory's entries (names and whether each is a directory) alone: the cache
 * (covercache.c) replays it from a record of those. A change to that logic changes
 * the version in vfs_cover_cache_key(). */
static int scan(struct cover *c, const char *vdir, bool cover_all, int bfd, size_t off)
{
	_cleanup_(closedirp_) DIR *d = NULL;
	struct vfs__cc_pending pend = { 0 };
	const struct vfs__cc_rec *rec = NULL;
	size_t below = streq(vdir, "/") ? 1 : strlen(vdir) + 1; /* a child's name in its vpath */
	bool record = false;
	unsigned n_entries = 0;
	char host[PATH_MAX];
	struct dirent *de;
	struct stat st;
	int fd, r = 0;

	/* A directory the covering cannot name cannot be covered either: incomplete, as
	 * over the budget, rather than a glob match silently left in the kernel's view. */
	if ((size_t)snprintf(host, sizeof(host), "%s%s", c->root, vdir) >= sizeof(host))
		return -E2BIG;
	/* A recorded directory that did not change costs one stat beneath a directory
	 * above it, which its own children are then looked at beneath as well. */
	if (c->cc)
		rec = vfs__cc_lookup(c->cc, vdir, cover_all);
	if (rec && bfd >= 0) {
		if (fstatat(bfd, vdir + off, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			return 0; /* as the open below would find it */
		if (vfs__cc_check(c->cc, rec, -1, &st))
			return replay(c, rec, vdir, bfd, off);
	}
	fd = bfd >= 0 ? openat(bfd, vdir + off, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
		      : open(host, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0; /* gone, or not a directory: nothing to cover below it */
	if (c->cc && fstat(fd, &st) == 0) {
		if (rec && vfs__cc_check(c->cc, rec, fd, &st)) {
			r = replay(c, rec, vdir, fd, below);
			close(fd);
			return r;
		}
		vfs__cc_read(c->cc);
		/* the ctime before the read: a change during it makes a later one */
		record = vfs__cc_settled(c->cc, fd, &st);
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return negative_errno();
	}
	for (;;) {
		char vpath[PATH_MAX];
		bool dir;

		errno = 0;
		de = readdir(d);
		if (!de) {
			/* a failed read ends the walk here as before, but is not recorded */
			if (errno)
				record = false;
			break;
		}
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		n_entries++;
		if (++c->entries > c->budget) {
			r = -E2BIG;
			break;
		}
		if ((size_t)snprintf(vpath, sizeof(vpath), "%s/%s", streq(vdir, "/") ? "" : vdir,
				     de->d_name) >= sizeof(vpath)) {
			r = -E2BIG;
			break;
		}
		if (de->d_type == DT_UNKNOWN) {
			struct stat est;

			if (fstatat(dirfd(d), de->d_name, &est, AT_SYMLINK_NOFOLLOW) < 0) {
				/* gone meanwhile, or unreadable: the next run reads again */
				record = false;
				continue;
			}
			dir = S_ISDIR(est.st_mode);
		} else {
			dir = de->d_type == DT_DIR;
		}
		if ((cover_all || vfs__glob_latest(c->v, vpath)) && refused(c->v, vpath)) {
			if (record)
				vfs__cc_pending_add(&pend, de->d_name,
						    VFS__CC_COVER | (dir ? VFS__CC_DIR : 0));
			r = cover_one(c, vpath, dir);
			if (r < 0)
				break;
			continue;
		}
		if (dir && !streq(vpath, "/proc") && worth_reading(c->v, vpath)) {
			if (record)
				vfs__cc_pending_add(&pend, de->d_name, VFS__CC_DIR);
			r = scan(c, vpath, false, dirfd(d), below);
			if (r < 0)
				break;
		}
	}
	if (r == 0 && record)
		vfs__cc_put(c->cc, vdir, cover_all, &st, n_entries, &pend);
	free(pend.b.p);
	return r;
}

_public_ bool vfs_kernel_view_exact(const struct vfs *v)
{
	for (size_t i = 0; i < v->n_rules; i++) {
		const struct vfs__rule *m = &v->rules[i];

		if (m->kind != VFS__HIDE && m->kind != VFS__DENY && !m->dead && vfs__hides_devices(m))
			return false;
	}
	return true;
}

_public_ int vfs_foreach_cover(const struct vfs *v, const char *root, unsigned budget,
			       struct vfs_cover_cache *cc,
			       int (*fn)(const char *vpath, bool dir, void *ud), void *ud)
{
	struct cover c = { .v = v, .root = root, .fn = fn, .ud = ud, .budget = budget, .cc = cc };
	int r;

	if (v->n_globs == 0)
		return 0;
	r = scan(&c, "/", false, -1, 0);
	if (cc)
		vfs__cc_done(cc, c.entries);
	return r;
}
