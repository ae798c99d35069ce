/* SPDX-License-Identifier: MIT */
/*
 * The change set (what the run created, wrote, renamed, deleted) and the getdents64
 * filter. The change set is the one mutable part of a frozen struct vfs; it is keyed by
 * the current virtual path so that a file created and then deleted leaves no trace and
 * a renamed file is reported once, under its final name.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "cleanup.h"
#include "clock.h"
#include "hash.h"
#include "macros.h"
#include "vfs-internal.h"

/*
 * The change set is indexed by vpath (chained hash, indices into v->changes): a run that
 * creates 100 000 files must not compare each new name with every earlier one. Without
 * the index (its allocation failed), find() scans, which is slower but as correct.
 */
#define NO_CHANGE SIZE_MAX

static size_t *bucket_of(struct vfs *v, const char *vpath)
{
	return &v->change_buckets[fnv1a(vpath, strlen(vpath)) & (v->n_change_buckets - 1)];
}

static void index_link(struct vfs *v, size_t i)
{
	size_t *b;

	if (!v->n_change_buckets)
		return;
	b = bucket_of(v, v->changes[i].vpath);
	v->changes[i].next = *b;
	*b = i;
}

static void index_unlink(struct vfs *v, size_t i)
{
	size_t *p;

	if (!v->n_change_buckets)
		return;
	for (p = bucket_of(v, v->changes[i].vpath); *p != NO_CHANGE; p = &v->changes[*p].next)
		if (*p == i) {
			*p = v->changes[i].next;
			return;
		}
}

/* Chains anew, into at least twice as many buckets as the array holds entries. */
static void index_rebuild(struct vfs *v)
{
	size_t want = 128;

	while (want < 2 * v->cap_changes)
		want *= 2;
	if (want != v->n_change_buckets) {
		size_t *b = malloc(want * sizeof(*b));

		if (b) {
			free(v->change_buckets);
			v->change_buckets = b;
			v->n_change_buckets = want;
		}
	}
	for (size_t i = 0; i < v->n_change_buckets; i++)
		v->change_buckets[i] = NO_CHANGE;
	for (size_t i = 0; i < v->n_changes; i++)
		index_link(v, i);
}

static struct vfs__change *find(struct vfs *v, const char *vpath)
{
	if (!v->n_change_buckets) {
		for (size_t i = 0; i < v->n_changes; i++)
			if (streq(v->changes[i].vpath, vpath))
				return &v->changes[i];
		return NULL;
	}
	for (size_t i = *bucket_of(v, vpath); i != NO_CHANGE; i = v->changes[i].next)
		if (streq(v->changes[i].vpath, vpath))
			return &v->changes[i];
	return NULL;
}

/* Removes ch; the last entry takes its place. */
static void drop(struct vfs *v, struct vfs__change *ch)
{
	size_t i = (size_t)(ch - v->changes), last = v->n_changes - 1;

	index_unlink(v, i);
	free(ch->vpath);
	free(ch->old_vpath);
	if (i != last) {
		index_unlink(v, last);
		*ch = v->changes[last];
		index_link(v, i);
	}
	v->n_changes--;
}

static struct vfs__change *append(struct vfs *v, enum vfs_change_kind kind, const char *vpath)
{
	struct vfs__change *ch;

	if (v->n_changes == v->cap_changes) {
		size_t cap = v->cap_changes ? v->cap_changes * 2 : 64;
		struct vfs__change *n = realloc(v->changes, cap * sizeof(*n));

		if (!n)
			return NULL;
		v->changes = n;
		v->cap_changes = cap;
		index_rebuild(v);
	}
	ch = &v->changes[v->n_changes];
	ch->kind = kind;
	ch->old_vpath = NULL;
	ch->vpath = strdup(vpath);
	if (!ch->vpath)
		return NULL;
	index_link(v, v->n_changes);
	v->n_changes++;
	return ch;
}

/* Move every entry below old_dir to new_dir (a renamed directory). */
static void move_children(struct vfs *v, const char *old_dir, const char *new_dir)
{
	size_t lo = strlen(old_dir);

	for (size_t i = 0; i < v->n_changes; i++) {
		struct vfs__change *ch = &v->changes[i];
		char *n;

		if (strncmp(ch->vpath, old_dir, lo) != 0 || ch->vpath[lo] != '/')
			continue;
		if (asprintf(&n, "%s%s", new_dir, ch->vpath + lo) < 0)
			continue;
		index_unlink(v, i);
		free(ch->vpath);
		ch->vpath = n;
		index_link(v, i);
	}
}

/*
 * Best effort by design: running out of memory here loses a line of the report, never a
 * decision. The const is cast away because the change set is the documented mutable
 * part of a frozen vfs, guarded by its mutex.
 */
void vfs__change_note(const struct vfs *cv, enum vfs_change_kind kind, const char *vpath,
                      const char *old_vpath)
{
	struct vfs *v = (struct vfs *)cv;
	struct vfs__change *ch, *prev;

	vfs__own_note(cv, kind, vpath, old_vpath);
	pthread_mutex_lock(&v->lock);
	ch = find(v, vpath);
	switch (kind) {
	case VFS_CHANGE_CREATED:
		if (ch)
			ch->kind = ch->kind == VFS_CHANGE_DELETED ? VFS_CHANGE_WRITTEN : ch->kind;
		else
			append(v, VFS_CHANGE_CREATED, vpath);
		break;
	case VFS_CHANGE_WRITTEN:
		if (ch && ch->kind == VFS_CHANGE_DELETED)
			ch->kind = VFS_CHANGE_WRITTEN;
		else if (!ch)
			append(v, VFS_CHANGE_WRITTEN, vpath);
		break;
	case VFS_CHANGE_DELETED:
		if (ch && ch->kind == VFS_CHANGE_CREATED)
			drop(v, ch);
		else if (ch)
			ch->kind = VFS_CHANGE_DELETED;
		else
			append(v, VFS_CHANGE_DELETED, vpath);
		break;
	case VFS_CHANGE_RENAMED: {
		char *origin = NULL;
		enum vfs_change_kind k = VFS_CHANGE_RENAMED;

		prev = find(v, old_vpath);
		if (prev && prev->kind == VFS_CHANGE_CREATED) {
			k = VFS_CHANGE_CREATED;
		} else if (prev && prev->kind == VFS_CHANGE_RENAMED && prev->old_vpath) {
			origin = strdup(prev->old_vpath);
		} else {
			origin = strdup(old_vpath);
		}
		if (prev)
			drop(v, prev);
		/* the name that was overwritten, if tracked, is now this file */
		ch = find(v, vpath);
		if (ch)
			drop(v, ch);
		move_children(v, old_vpath, vpath);
		if (k == VFS_CHANGE_RENAMED && origin && streq(origin, vpath)) {
			/* renamed back where it came from */
			free(origin);
			append(v, VFS_CHANGE_WRITTEN, vpath);
			break;
		}
		ch = append(v, k, vpath);
		if (ch && k == VFS_CHANGE_RENAMED)
			ch->old_vpath = origin;
		else
			free(origin);
		if (k == VFS_CHANGE_RENAMED) {
			/* the old name is gone, which a reviewer wants to see only as the
			 * rename itself */
		}
		break;
	}
	default:
		break;
	}
	pthread_mutex_unlock(&v->lock);
}

void vfs__changes_done(struct vfs *v)
{
	for (size_t i = 0; i < v->n_changes; i++) {
		free(v->changes[i].vpath);
		free(v->changes[i].old_vpath);
	}
	free(v->changes);
	free(v->change_buckets);
	v->changes = NULL;
	v->change_buckets = NULL;
	v->n_changes = v->cap_changes = v->n_change_buckets = 0;
}

static int cmp_change(const void *a, const void *b)
{
	return strcmp(((const struct vfs__change *)a)->vpath, ((const struct vfs__change *)b)->vpath);
}

static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* NULL when hashed, else why not. deadline 0: none. */
static const char *hash_fd(int fd, uint64_t deadline, int cancel_fd, uint8_t out[32])
{
	crypto_hash_sha256_state st;
	uint8_t buf[65536];

	crypto_hash_sha256_init(&st);
	for (;;) {
		ssize_t n;

		/* Checked per 64 KiB: a few hundred microseconds of hashing at most. */
		if (deadline && now_mono_ns() >= deadline)
			return "time";
		if (readable(cancel_fd))
			return "signal";
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return "error";
		if (n == 0)
			break;
		crypto_hash_sha256_update(&st, buf, n);
	}
	crypto_hash_sha256_final(&st, out);
	return NULL;
}

_public_ int vfs_changes_foreach(struct vfs *v, int (*fn)(const struct vfs_change *ch, void *ud),
                                 void *ud)
{
	const struct vfs_hash_limits none = { .cancel_fd = -1 };

	return vfs_changes_foreach_limited(v, &none, fn, ud);
}

_public_ int vfs_changes_foreach_limited(struct vfs *v, const struct vfs_hash_limits *lim,
                                         int (*fn)(const struct vfs_change *ch, void *ud), void *ud)
{
	uint64_t deadline = lim->max_ns ? now_mono_ns() + lim->max_ns : 0;
	const char *stopped = NULL; /* once time is up or a signal came, for every later file */
	int r = 0;

	if (sodium_init() < 0)
		return -EIO;
	pthread_mutex_lock(&v->lock);
	if (v->n_changes) /* qsort's array may not be NULL, even for zero elements */
		qsort(v->changes, v->n_changes, sizeof(*v->changes), cmp_change);
	index_rebuild(v); /* the sort moved every entry */
	for (size_t i = 0; i < v->n_changes && r == 0; i++) {
		const struct vfs__change *c = &v->changes[i];
		struct vfs_change out = {
			.kind = c->kind,
			.vpath = c->vpath,
			.old_vpath = c->old_vpath,
		};
		struct vfs_caller self = { .pid = getpid(), .tgid = getpid(), .base = "/" };
		struct vfs__walk w;

		/* look the file up through the view, as the sandbox would */
		if (vfs__walk(v, &self, c->vpath, VFS__NOFOLLOW, 0, &w, NULL) == 0 && w.exists) {
			out.exists = true;
			out.size = w.st.st_size;
			if (!S_ISREG(w.st.st_mode))
				;
			else if (stopped)
				out.hash_skipped = stopped;
			else if (lim->max_size && (uint64_t)w.st.st_size > lim->max_size)
				out.hash_skipped = "size";
			else {
				int fd = vfs__reopen(v, w.fd, O_RDONLY | O_NONBLOCK);

				out.hash_skipped = fd < 0 ? "error" : hash_fd(fd, deadline, lim->cancel_fd,
									     out.sha256);
				safe_close(fd);
				if (out.hash_skipped && !streq(out.hash_skipped, "error"))
					stopped = out.hash_skipped;
			}
		}
		vfs__walk_done(&w);
		r = fn(&out, ud);
	}
	pthread_mutex_unlock(&v->lock);
	return r;
}

/* --- getdents64 ------------------------------------------------------------------------ */

/*
 * Whether the entry name in directory dir (canonical) is visible, and for /proc pids the
 * name to show instead (sandbox numbering; out must hold it).
 */
static bool entry_visible(const struct vfs *v, const char *dir, const struct vfs__rule *dm,
                          bool implicit, const char *name, ino_t ino, char *out, size_t outlen)
{
	char pbuf[PATH_MAX];
	_cleanup_free_ char *heap = NULL;
	char *p = pbuf;
	size_t need = strlen(dir) + strlen(name) + 2;
	const struct vfs__rule *ex, *h;

	out[0] = '\0';
	if (streq(name, ".") || streq(name, ".."))
		return true;
	if (need > sizeof(pbuf)) {
		/* a directory deeper than PATH_MAX (vfs_dir_vpath()): its entries are
		 * matched whole as well, or hidden when that cannot be done */
		if (!(heap = malloc(need)))
			return false;
		p = heap;
	}
	snprintf(p, need, "%s/%s", streq(dir, "/") ? "" : dir, name);
	ex = vfs__mount_exact(v, p);
	if (implicit && !ex && !vfs__is_implicit(v, p))
		return false;
	h = vfs__glob_latest(v, p);
	if (h && h->kind == VFS__HIDE && !(ex && ex->seq > h->seq))
		return false;
	if (dm && dm->own_only && !ex && streq(dm->virt, dir) &&
	    !vfs__own_visible(v, p, ino, (uid_t)-1))
		return false;
	if (dm && dm->is_proc && streq(dm->virt, dir) && name[strspn(name, "0123456789")] == '\0') {
		pid_t sp;

		if (v->rebased) {
			/* the sandbox's own procfs: names are sandbox pids already, and the
			 * keeper (pid 1) is not one of the sandbox's processes */
			return v->has_proc_ops && v->proc.to_host &&
			       v->proc.to_host(v->proc.userdata, atoi(name)) > 0;
		}
		/* a host pid: shown only for the sandbox's own processes */
		sp = v->has_proc_ops && v->proc.to_sandbox ?
		             v->proc.to_sandbox(v->proc.userdata, atoi(name)) : -ESRCH;
		if (sp < 0)
			return false;
		if ((size_t)snprintf(out, outlen, "%d", sp) >= outlen)
			return false;
	}
	return true;
}

/* dir/name is itself a mapping (the devices a broad bind keeps, see cover_proc_dev()). */
static bool device_mapped(const struct vfs *v, const char *dir, const char *name)
{
	char p[PATH_MAX];

	if ((size_t)snprintf(p, sizeof(p), "%s/%s", streq(dir, "/") ? "" : dir, name) >= sizeof(p))
		return false;
	return vfs__mount_exact(v, p) != NULL;
}

_public_ size_t vfs_filter_dirents(const struct vfs *v, const char *dir_vpath, void *buf,
                                   size_t len)
{
	char *in = buf, *o = buf;
	const struct vfs__rule *dm = vfs__mount_covering(v, dir_vpath);
	bool implicit = !dm || (!vfs__mount_exact(v, dir_vpath) && vfs__is_implicit(v, dir_vpath));
	size_t pos = 0;

	if (dm && vfs__is_implicit(v, dir_vpath))
		implicit = true;
	while (pos + sizeof(struct linux_dirent64) <= len) {
		struct linux_dirent64 *d = (struct linux_dirent64 *)(in + pos);
		unsigned short rl = d->d_reclen;
		char rename_to[16];

		if (rl < sizeof(*d) || pos + rl > len)
			break;
		pos += rl;
		if (!entry_visible(v, dir_vpath, dm, implicit, d->d_name, d->d_ino, rename_to,
		                   sizeof(rename_to)))
			continue;
		if ((d->d_type == DT_CHR || d->d_type == DT_BLK) && vfs__hides_devices(dm) &&
		    !device_mapped(v, dir_vpath, d->d_name))
			continue; /* as the walker would refuse it */
		/* entries only ever move towards the start: memmove is enough */
		if ((char *)d != o)
			memmove(o, d, rl);
		if (rename_to[0]) {
			struct linux_dirent64 *od = (struct linux_dirent64 *)o;
			size_t room = rl - offsetof(struct linux_dirent64, d_name);

			if (strlen(rename_to) < room) {
				memset(od->d_name, 0, room);
				memcpy(od->d_name, rename_to, strlen(rename_to));
			}
		}
		o += rl;
	}
	return o - (char *)buf;
}

_public_ bool vfs_dir_needs_filter(const struct vfs *v, const char *dir_vpath)
{
	const struct vfs__rule *dm = vfs__mount_covering(v, dir_vpath);
	bool sys_dir;

	if (!dm || vfs__is_implicit(v, dir_vpath))
		return true;
	sys_dir = dm->system;
	if (dm->is_proc && streq(dm->virt, dir_vpath))
		return true;
	if (vfs__path_under(dir_vpath, "/dev") && vfs__hides_devices(dm))
		return true; /* device nodes a parent mapping covers are not listed */
	if (dm->own_only && streq(dm->virt, dir_vpath))
		return true;
	/* an entry of a system tree is out of reach of a "**" glob anchored above it,
	 * unless the entry is another mapping's mount point */
	for (size_t i = 0; sys_dir && i < v->n_mounts; i++)
		if (vfs__path_under(v->mounts[i]->virt, dir_vpath) &&
		    !streq(v->mounts[i]->virt, dir_vpath))
			sys_dir = false;
	for (size_t i = 0; i < v->n_globs; i++) {
		const struct vfs__rule *g = v->globs[i];
		char parent[PATH_MAX], *s;

		if (g->kind != VFS__HIDE)
			continue;
		if (g->dstar && sys_dir && !vfs__glob_reaches(g, dm))
			continue;
		if (g->dstar)
			return true;
		snprintf(parent, sizeof(parent), "%s", g->virt);
		s = strrchr(parent, '/');
		if (!s)
			continue;
		if (s == parent)
			s[1] = '\0';
		else
			*s = '\0';
		if (vfs__glob_match(parent, dir_vpath))
			return true;
	}
	return false;
}
