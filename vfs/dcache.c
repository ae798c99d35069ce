/* SPDX-License-Identifier: MIT */
/*
 * The directory cache: canonical virtual path of a directory inside a read-only mapping
 * -> an O_PATH fd of that directory (and its device and inode numbers). It saves the
 * walker an openat() + close() per directory component; what it never saves is a
 * decision: the policy (hide, deny, read-only, unmapped, /proc pids) is evaluated by the
 * walker on every canonical path of every call before the cache is even asked.
 *
 * Why it is safe, and why it changes no answer:
 *
 * - Only directories of read-only bind mappings are cached, never anything under a
 *   writable mapping (the sandbox renames directories there all the time), never /proc
 *   (pids come and go and the walker renames pids on the way), and never a mapping root
 *   or an implicit directory (the table pins those itself, see pin_implicit()).
 * - A hit is revalidated before use: the walker looks the name up once in the parent it
 *   holds in this very walk (fstatat(parent, name, AT_SYMLINK_NOFOLLOW), one syscall) and
 *   uses the cached fd only when that name still is the same device and inode. The
 *   cached fd pins the inode, so no other live directory can carry its numbers; the fd
 *   then is the object a fresh openat() would have returned at that instant, and the
 *   stat is fresh too. A directory renamed, removed or replaced on the host (the host
 *   tree of a ro mapping can still change under us, and another writable alias of the
 *   same host tree can be renamed by the sandbox itself) fails the check: the entry is
 *   dropped and the walker looks the name up as if there were no cache.
 * - Even a stale entry could only ever point at a directory that was reached through
 *   the same mapping's root fd, i.e. one inside that mapping's mount; the revalidation
 *   keeps it from being used under a name that no longer leads to it.
 *
 * Bounded (DCACHE_SLOTS fds), evicted by the clock algorithm. Thread-safe: one mutex,
 * held for a hash lookup and a reference count change, never across a syscall. Entries
 * are reference counted so that an entry evicted (or flushed by vfs_rebase()) while a
 * walk still uses its fd is closed only when that walk is done.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hash.h"
#include "macros.h"
#include "vfs-internal.h"

#define DCACHE_SLOTS 256
#define DCACHE_BUCKETS 512 /* power of two */

struct vfs__dent {
	struct vfs__dent *hnext;    /* bucket chain */
	unsigned refs;              /* one for the table while in it, one per walk using it */
	unsigned slot;              /* index in slots[] while in the table */
	bool in_table;
	bool recent;                /* clock bit: used since the hand last passed */
	uint32_t hash;
	int fd;                     /* O_PATH fd of the directory, owned */
	dev_t dev;
	ino_t ino;
	size_t vlen;
	char vpath[];
};

struct vfs__dcache {
	pthread_mutex_t lock;
	struct vfs__dent *buckets[DCACHE_BUCKETS];
	struct vfs__dent *slots[DCACHE_SLOTS];
	unsigned hand;
	unsigned long hits, misses, stale;
};

int vfs__dcache_new(struct vfs__dcache **ret)
{
	struct vfs__dcache *dc = calloc(1, sizeof(*dc));

	if (!dc)
		return -ENOMEM;
	pthread_mutex_init(&dc->lock, NULL);
	*ret = dc;
	return 0;
}

static void dent_free(struct vfs__dent *e)
{
	if (!e)
		return;
	close(e->fd);
	free(e);
}

/* Take e out of the table (lock held). Returns e when nobody uses it any more, for the
 * caller to free after unlocking (close() is a syscall: not under the lock). */
static struct vfs__dent *unlink_locked(struct vfs__dcache *dc, struct vfs__dent *e)
{
	struct vfs__dent **pp = &dc->buckets[e->hash & (DCACHE_BUCKETS - 1)];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	dc->slots[e->slot] = NULL;
	e->in_table = false;
	return --e->refs == 0 ? e : NULL;
}

void vfs__dcache_flush(struct vfs__dcache *dc)
{
	struct vfs__dent *gone[DCACHE_SLOTS];
	size_t n = 0;

	if (!dc)
		return;
	pthread_mutex_lock(&dc->lock);
	for (size_t i = 0; i < DCACHE_SLOTS; i++) {
		struct vfs__dent *e = dc->slots[i];

		if (e && (e = unlink_locked(dc, e)))
			gone[n++] = e;
	}
	pthread_mutex_unlock(&dc->lock);
	for (size_t i = 0; i < n; i++)
		dent_free(gone[i]);
}

struct vfs__dcache *vfs__dcache_free(struct vfs__dcache *dc)
{
	if (!dc)
		return NULL;
	vfs__dcache_flush(dc);
	pthread_mutex_destroy(&dc->lock);
	free(dc);
	return NULL;
}

struct vfs__dent *vfs__dcache_get(struct vfs__dcache *dc, const char *vpath, size_t vlen)
{
	uint32_t h = fnv1a(vpath, vlen);
	struct vfs__dent *e;

	pthread_mutex_lock(&dc->lock);
	for (e = dc->buckets[h & (DCACHE_BUCKETS - 1)]; e; e = e->hnext)
		if (e->hash == h && e->vlen == vlen && memcmp(e->vpath, vpath, vlen) == 0)
			break;
	if (e) {
		e->refs++;
		e->recent = true;
		dc->hits++;
	} else {
		dc->misses++;
	}
	pthread_mutex_unlock(&dc->lock);
	return e;
}

int vfs__dent_fd(const struct vfs__dent *e)
{
	return e->fd;
}

bool vfs__dent_same(const struct vfs__dent *e, const struct stat *st)
{
	return S_ISDIR(st->st_mode) && e->dev == st->st_dev && e->ino == st->st_ino;
}

struct vfs__dent *vfs__dcache_put(struct vfs__dcache *dc, const char *vpath, size_t vlen,
                                  int fd, const struct stat *st)
{
	uint32_t h = fnv1a(vpath, vlen);
	struct vfs__dent *e, *old, *victim = NULL;

	e = malloc(sizeof(*e) + vlen + 1);
	if (!e)
		return NULL;
	memcpy(e->vpath, vpath, vlen);
	e->vpath[vlen] = '\0';
	e->vlen = vlen;
	e->hash = h;
	e->fd = fd;
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	e->refs = 2; /* the table's and the caller's */
	e->recent = true;
	e->in_table = true;

	pthread_mutex_lock(&dc->lock);
	/* another walk may have put the same path meanwhile: replace it (ours is newer) */
	for (old = dc->buckets[h & (DCACHE_BUCKETS - 1)]; old; old = old->hnext)
		if (old->hash == h && old->vlen == vlen && memcmp(old->vpath, vpath, vlen) == 0)
			break;
	if (old) {
		victim = unlink_locked(dc, old);
	} else {
		/* clock: the first slot that is free or not used since the hand passed */
		for (;;) {
			struct vfs__dent *s = dc->slots[dc->hand];

			if (!s)
				break;
			if (!s->recent) {
				victim = unlink_locked(dc, s);
				break;
			}
			s->recent = false;
			dc->hand = (dc->hand + 1) % DCACHE_SLOTS;
		}
	}
	/* the replaced entry's slot, else the one under the hand (now free) */
	e->slot = old ? old->slot : dc->hand;
	dc->slots[e->slot] = e;
	if (!old)
		dc->hand = (dc->hand + 1) % DCACHE_SLOTS;
	e->hnext = dc->buckets[h & (DCACHE_BUCKETS - 1)];
	dc->buckets[h & (DCACHE_BUCKETS - 1)] = e;
	pthread_mutex_unlock(&dc->lock);
	dent_free(victim);
	return e;
}

void vfs__dcache_release(struct vfs__dcache *dc, struct vfs__dent *e, bool stale)
{
	struct vfs__dent *gone = NULL;

	if (!e)
		return;
	pthread_mutex_lock(&dc->lock);
	/* the caller's reference keeps e alive across the table's own going away */
	if (stale && e->in_table) {
		dc->stale++;
		unlink_locked(dc, e);
	}
	if (--e->refs == 0)
		gone = e;
	pthread_mutex_unlock(&dc->lock);
	dent_free(gone);
}
