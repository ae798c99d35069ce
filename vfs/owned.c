/* SPDX-License-Identifier: MIT */
/*
 * Unnamespaced mode has no mount namespace, so virtual paths equal host paths and /tmp
 * and /dev/shm cannot be private directories at their own names. Programs hard-code
 * both (/tmp/x, SQLite journals, glibc's sem_open and shm_open in /dev/shm), so there
 * they are the host's directories, writable, showing only the entries this run made:
 * the names it created directly in them (with everything below those) are listed and
 * reachable; every other entry is hidden, as if absent. An entry counts as the run's
 * while its name holds the inode the run created there, owned by our uid: a name the
 * run deleted, or an inode a host process put in its place, is not the run's any more.
 * Both directories are world-writable and sticky, so no other user can rename or remove
 * the run's entries (same-uid processes can, as they could anything of the run's). At
 * the end (vfs_free()) the run's entries are removed, as a private /tmp goes away; a
 * supervisor killed by SIGKILL leaves them, as a native program would.
 *
 * The record is kept by virtual path (the host path, in this mode) under the vfs lock,
 * fed by the change set's notes (vfs__change_note()), so every operation that creates,
 * renames or deletes a name keeps it current.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hash.h"
#include "macros.h"
#include "vfs-internal.h"

#define OWN_BUCKETS 256u /* chained; a run making more names only walks longer chains */

struct vfs__own {
	char *vpath;
	ino_t ino;
	bool pending;   /* a name the sandbox binds a unix socket at: the kernel creates it
	                   after the vfs resolved it, so its inode is taken at first sight */
	struct vfs__own *next;
};

static size_t bucket(const char *vpath)
{
	return fnv1a(vpath, strlen(vpath)) & (OWN_BUCKETS - 1);
}

/* The shared root vpath's parent is, or NULL. */
static const struct vfs__rule *own_root_of(const struct vfs *v, const char *vpath)
{
	const char *s = strrchr(vpath, '/');
	size_t n;

	if (!s || !s[1])
		return NULL;
	n = (size_t)(s - vpath);
	for (size_t i = 0; i < v->n_mounts; i++) {
		const struct vfs__rule *m = v->mounts[i];

		if (m->own_only && strlen(m->virt) == n && strncmp(m->virt, vpath, n) == 0)
			return m;
	}
	return NULL;
}

bool vfs__own_root(const struct vfs *v, const char *dir_vpath)
{
	for (size_t i = 0; i < v->n_mounts; i++)
		if (v->mounts[i]->own_only && streq(v->mounts[i]->virt, dir_vpath))
			return true;
	return false;
}

/* Whether a mapping lies strictly below vpath: the way to it stays visible (the
 * private home lives in the run's private directory under the host's /tmp), as an
 * implicit directory that shows only the way on (vfs_finalize()). */
static bool leads_to_mapping(const struct vfs *v, const char *vpath)
{
	for (size_t i = 0; i < v->n_mounts; i++)
		if (!streq(v->mounts[i]->virt, vpath) && vfs__path_under(v->mounts[i]->virt, vpath))
			return true;
	return false;
}

static struct vfs__own **find(struct vfs *v, const char *vpath)
{
	struct vfs__own **p;

	for (p = &v->own[bucket(vpath)]; *p; p = &(*p)->next)
		if (streq((*p)->vpath, vpath))
			return p;
	return p;
}

bool vfs__own_visible(const struct vfs *cv, const char *vpath, ino_t ino, uid_t uid)
{
	struct vfs *v = (struct vfs *)cv;
	struct vfs__own **p;
	bool r;

	if (leads_to_mapping(v, vpath))
		return true;
	if (uid != (uid_t)-1 && uid != geteuid())
		return false;
	pthread_mutex_lock(&v->lock);
	r = v->own && (p = find(v, vpath)) && *p &&
	    ((*p)->ino == ino || ((*p)->pending && uid != (uid_t)-1));
	if (r && (*p)->pending) {
		(*p)->ino = ino;
		(*p)->pending = false;
	}
	pthread_mutex_unlock(&v->lock);
	return r;
}

/* vfs_resolve() of a name to create for the interposer (the bind of a unix socket). */
void vfs__own_pending(const struct vfs *cv, const char *vpath)
{
	struct vfs *v = (struct vfs *)cv;
	struct vfs__own **p, *e;

	if (!own_root_of(v, vpath))
		return;
	pthread_mutex_lock(&v->lock);
	if (!v->own)
		v->own = calloc(OWN_BUCKETS, sizeof(*v->own));
	if (v->own && !*(p = find(v, vpath)) && (e = calloc(1, sizeof(*e)))) {
		e->vpath = strdup(vpath);
		e->pending = true;
		if (e->vpath)
			*p = e;
		else
			free(e);
	}
	pthread_mutex_unlock(&v->lock);
}

static void forget(struct vfs *v, const char *vpath)
{
	struct vfs__own **p = find(v, vpath), *e = *p;

	if (!e)
		return;
	*p = e->next;
	free(e->vpath);
	free(e);
}

/* Record what vpath holds now, if it is ours to record; else forget the name. */
static void remember(struct vfs *v, const char *vpath)
{
	struct vfs__own **p, *e;
	struct stat st;

	if (lstat(vpath, &st) < 0 || st.st_uid != geteuid()) {
		forget(v, vpath);
		return;
	}
	p = find(v, vpath);
	if (*p) {
		(*p)->ino = st.st_ino;
		(*p)->pending = false;
		return;
	}
	e = calloc(1, sizeof(*e));
	if (!e || !(e->vpath = strdup(vpath))) {
		/* out of memory: the entry stays hidden from the run, never the reverse */
		free(e);
		return;
	}
	e->ino = st.st_ino;
	*p = e;
}

void vfs__own_note(const struct vfs *cv, enum vfs_change_kind kind, const char *vpath,
                   const char *old_vpath)
{
	struct vfs *v = (struct vfs *)cv;
	bool in_new = own_root_of(v, vpath) != NULL;
	bool in_old = old_vpath && own_root_of(v, old_vpath) != NULL;

	if (!in_new && !in_old)
		return;
	pthread_mutex_lock(&v->lock);
	if (!v->own)
		v->own = calloc(OWN_BUCKETS, sizeof(*v->own));
	if (v->own) {
		switch (kind) {
		case VFS_CHANGE_CREATED:
			if (in_new)
				remember(v, vpath);
			break;
		case VFS_CHANGE_DELETED:
			if (in_new)
				forget(v, vpath);
			break;
		case VFS_CHANGE_RENAMED:
			/* the old name may hold something again (RENAME_EXCHANGE) */
			if (in_old)
				remember(v, old_vpath);
			if (in_new)
				remember(v, vpath);
			break;
		default:
			break;
		}
	}
	pthread_mutex_unlock(&v->lock);
}

/* At the end of the run: remove what is still the run's, forget everything. */
void vfs__own_done(struct vfs *v, void (*rm_rf_at)(int dfd, const char *name))
{
	if (!v->own)
		return;
	for (size_t b = 0; b < OWN_BUCKETS; b++) {
		struct vfs__own *e = v->own[b], *next;

		for (; e; e = next) {
			char *slash = strrchr(e->vpath, '/');
			struct stat st;
			int dfd;

			next = e->next;
			*slash = '\0';
			dfd = open(e->vpath[0] ? e->vpath : "/",
			           O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (dfd >= 0 && fstatat(dfd, slash + 1, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    st.st_ino == e->ino && st.st_uid == geteuid())
				rm_rf_at(dfd, slash + 1);
			if (dfd >= 0)
				close(dfd);
			free(e->vpath);
			free(e);
		}
	}
	free(v->own);
	v->own = NULL;
}
