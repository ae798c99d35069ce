/* SPDX-License-Identifier: MIT */
/*
 * Lookups in the finalized mount table and vfs_decide(): which rule covers a path, the
 * implicit directories, the latest glob that matches, and the verdict. Pure: no I/O
 * beyond the fds the table already holds; only vfs__glob_tail(), run once per glob by
 * finalize, writes (into the rule it is given).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "macros.h"
#include "vfs-internal.h"

/* --- lookups (after finalize) ---------------------------------------------------------- */

const struct vfs__rule *vfs__mount_exact(const struct vfs *v, const char *vpath)
{
	size_t lo = 0, hi = v->n_mounts;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int r = strcmp(v->mounts[mid]->virt, vpath);

		if (r == 0)
			return v->mounts[mid];
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const struct vfs__rule *vfs__mount_covering(const struct vfs *v, const char *vpath)
{
	const struct vfs__rule *best = NULL;

	for (size_t i = 0; i < v->n_mounts; i++)
		if (vfs__path_under(vpath, v->mounts[i]->virt) &&
		    (!best || strlen(v->mounts[i]->virt) > strlen(best->virt)))
			best = v->mounts[i];
	return best;
}

static ssize_t implicit_index(const struct vfs *v, const char *vpath)
{
	for (size_t i = 0; i < v->n_implicit; i++)
		if (streq(v->implicit[i], vpath))
			return (ssize_t)i;
	return -1;
}

bool vfs__is_implicit(const struct vfs *v, const char *vpath)
{
	return implicit_index(v, vpath) >= 0;
}

/* The pinned fd of an implicit directory, or -1 (not implicit, or not pinned). */
int vfs__implicit_fd(const struct vfs *v, const char *vpath)
{
	ssize_t i = implicit_index(v, vpath);

	return i >= 0 && v->implicit_fd ? v->implicit_fd[i] : -1;
}

/*
 * A glob's last component, unless it is "**", is matched against a path's last
 * component (glob.c match_from(): a pattern left over when the path ends may only be "**"). The
 * characters after its last '*', '?' or '\' are matched one for one at that component's
 * end, those before its first one at its start. So the default profile's rule for .env
 * files needs a last component ".env", its rule for id_rsa* files one starting with
 * "id_rsa": most paths fail that with a memcmp or two, before the full match. Every walk
 * step asks every glob (the default profile has thirty), so it shows.
 */
void vfs__glob_tail(struct vfs__rule *g)
{
	const char *slash = strrchr(g->virt, '/'), *last, *e, *t;
	size_t w = strcspn(g->virt, "*?[\\");

	/* the anchor: up to the last '/' before the first wildcard */
	g->dstar = strstr(g->virt, "**") != NULL;
	while (w > 0 && g->virt[w] != '/')
		w--;
	g->anchor_len = w;
	g->head = g->tail = "";
	g->head_len = g->tail_len = 0;
	g->tail_whole = false;
	if (!slash || streq(slash + 1, "**"))
		return; /* no filter (and no path matches a glob that is not absolute) */
	last = slash + 1;
	e = t = last + strlen(last);
	while (t > last && !strchr("*?\\", t[-1]))
		t--;
	g->tail = t;
	g->tail_len = (size_t)(e - t);
	g->tail_whole = t == last;
	/* the same from the front: "id_rsa*" needs a component starting with "id_rsa" */
	if (!g->tail_whole)
		g->head_len = strcspn(last, "*?\\");
	g->head = last;
}

static bool tail_fits(const struct vfs__rule *g, const char *last, size_t llen)
{
	if (g->tail_whole ? llen != g->tail_len : llen < g->tail_len + g->head_len)
		return false;
	return memcmp(last + llen - g->tail_len, g->tail, g->tail_len) == 0 &&
	       memcmp(last, g->head, g->head_len) == 0;
}

/* The system mapping vpath lies in, if the mapping covering it is one. */
const struct vfs__rule *vfs__system_covering(const struct vfs *v, const char *vpath)
{
	const struct vfs__rule *m = vfs__mount_covering(v, vpath);

	return m && m->system ? m : NULL;
}

/* A "**" glob reaches into a system tree only from an anchor at or inside it: "**" from
 * the root means "wherever the sandbox's own files are", not the distribution's files
 * (docs/threat-model.md, "System trees"); "/etc/shadow*" has no "**" and applies. */
bool vfs__glob_reaches(const struct vfs__rule *g, const struct vfs__rule *sys)
{
	size_t n = strlen(sys->virt);

	if (!g->dstar || streq(sys->virt, "/"))
		return true;
	return g->anchor_len >= n && strncmp(g->virt, sys->virt, n) == 0 &&
	       (g->virt[n] == '/' || g->virt[n] == '\0');
}

/* The latest hide/deny rule whose glob matches vpath itself. */
const struct vfs__rule *vfs__glob_latest(const struct vfs *v, const char *vpath)
{
	const struct vfs__rule *sys = NULL;
	const char *last = strrchr(vpath, '/');
	bool sys_known = false;
	size_t llen;

	if (!last)
		return NULL; /* not absolute: no glob matches */
	last++;
	llen = strlen(last);
	for (size_t i = v->n_globs; i-- > 0;) {
		const struct vfs__rule *g = v->globs[i];

		if (!tail_fits(g, last, llen))
			continue;
		if (g->dstar) {
			/* looked up once, and only for a glob that could match */
			if (!sys_known)
				sys = vfs__system_covering(v, vpath);
			sys_known = true;
			if (sys && !vfs__glob_reaches(g, sys))
				continue;
		}
		if (vfs__glob_match(g->virt, vpath))
			return g;
	}
	return NULL;
}

/* Whether a mapping given after block lies strictly below vpath, so that walking through
 * the blocked directory can still lead to a visible path. */
bool vfs__rescuable(const struct vfs *v, const struct vfs__rule *block, const char *vpath)
{
	for (size_t i = 0; i < v->n_mounts; i++) {
		const struct vfs__rule *m = v->mounts[i];

		if (m->seq > block->seq && !streq(m->virt, vpath) && vfs__path_under(m->virt, vpath))
			return true;
	}
	return false;
}

void vfs__verdict(struct vfs_verdict *verdict, int err, const char *rule, const char *vpath)
{
	if (!verdict)
		return;
	verdict->err = err < 0 ? -err : err;
	verdict->denied = err != 0;
	verdict->below = verdict->link = false;
	str_copy(verdict->rule, sizeof(verdict->rule), rule ? rule : "");
	if (vpath)
		str_copy(verdict->vpath, sizeof(verdict->vpath), vpath);
}

/*
 * The rules applied to an already-canonical path, with no host access (audit replay).
 * /proc pid visibility is not decided here: it depends on the live process tree.
 */
_public_ int vfs_decide(const struct vfs *v, const char *vpath, unsigned want,
                        struct vfs_verdict *verdict)
{
	char buf[PATH_MAX];
	const struct vfs__rule *block = NULL, *mount = v->root_mount;
	bool implicit = !mount;
	size_t n;
	int r;

	r = vfs__normalize("/", vpath, buf, sizeof(buf));
	if (r < 0) {
		vfs__verdict(verdict, r, "path too long", vpath);
		return r;
	}
	n = strlen(buf);
	block = vfs__glob_latest(v, "/");
	if (block && mount && mount->seq > block->seq)
		block = NULL;
	/* walk the prefixes: "/a", "/a/b", ... exactly as the walker does */
	for (size_t i = 1; i <= n; i++) {
		const struct vfs__rule *ex, *h;

		if (i < n && buf[i] != '/')
			continue;
		if (i == 1 && n == 1)
			break;
		buf[i] = '\0';
		ex = vfs__mount_exact(v, buf);
		if (block && ex && ex->seq > block->seq)
			block = NULL;
		if (!block) {
			h = vfs__glob_latest(v, buf);
			if (h && !(ex && ex->seq > h->seq))
				block = h;
		}
		if (ex) {
			mount = ex;
			implicit = false;
		} else if (implicit || !mount) {
			if (!vfs__is_implicit(v, buf)) {
				vfs__verdict(verdict, -ENOENT, "unmapped", buf);
				return -ENOENT;
			}
			implicit = true;
		}
		if (block && i < n && !vfs__rescuable(v, block, buf)) {
			r = block->kind == VFS__HIDE ? -ENOENT : -EACCES;
			vfs__verdict(verdict, r, block->desc, buf);
			return r;
		}
		if (i < n)
			buf[i] = '/';
	}
	if (block && (block->kind == VFS__HIDE || want)) {
		r = block->kind == VFS__HIDE ? -ENOENT : -EACCES;
		vfs__verdict(verdict, r, block->desc, buf);
		return r;
	}
	if ((want & (VFS_WANT_WRITE | VFS_WANT_CREATE)) &&
	    (implicit || !mount || !mount->writable)) {
		vfs__verdict(verdict, -EROFS, mount && !implicit ? mount->desc : "unmapped parent",
		             buf);
		return -EROFS;
	}
	vfs__verdict(verdict, 0, mount && !implicit ? mount->desc : "implicit directory", buf);
	return 0;
}

unsigned vfs_want_of(enum sc_access access, uint64_t how)
{
	switch (access) {
	case SC_ACCESS_READ:
	case SC_ACCESS_CONNECT:
	case SC_ACCESS_SEND:
		return VFS_WANT_READ;
	case SC_ACCESS_WRITE:
		return VFS_WANT_WRITE;
	case SC_ACCESS_CREATE:
		return VFS_WANT_CREATE;
	case SC_ACCESS_EXEC:
		return VFS_WANT_EXEC;
	case SC_ACCESS_BIND:
		return VFS_WANT_CREATE | VFS_WANT_WRITE;
	case SC_ACCESS_OPEN:
		if (how & O_PATH) /* handed over as a read-only fd */
			return VFS_WANT_READ;
		if ((how & O_TMPFILE) == O_TMPFILE)
			return VFS_WANT_WRITE;
		if ((how & O_ACCMODE) != O_RDONLY || (how & O_TRUNC))
			return VFS_WANT_WRITE | VFS_WANT_READ;
		return VFS_WANT_READ;
	case SC_ACCESS_AMODE:
		return ((how & R_OK) ? VFS_WANT_READ : 0u) | ((how & X_OK) ? VFS_WANT_EXEC : 0u) |
		       ((how & W_OK) ? VFS_WANT_WRITE : 0u);
	case SC_ACCESS_LOOK:
	case SC_ACCESS_NONE:
	case _SC_ACCESS_MAX:
	default:
		return 0;
	}
}
