/* SPDX-License-Identifier: MIT */
/*
 * The covering's memory across runs (vfs_foreach_cover()'s cache).
 *
 * Reading every tree a "**" glob can match in costs about 0.6 µs an entry at every
 * start: a workspace holding a node_modules of 200 000 entries makes `moat run` 8x
 * bubblewrap's start-up. What the walk does in one directory (which entries it covers,
 * which it goes down into) follows from the table and from that directory's entries
 * alone, and a directory's entries cannot change without its ctime changing: every
 * create, link, unlink and rename into or out of it sets the directory's ctime to the
 * current time, and no program can set a ctime (only moving the clock does,
 * CAP_SYS_TIME). So a record "directory (device, inode, ctime) at this virtual path:
 * these entries covered, these gone down into" replays the walk's work there for one
 * stat instead of a read of every entry. What keeps that true:
 * - a directory is recorded only if its ctime, taken before the read, is more than
 *   COVER_CACHE_SETTLE_S older than the start of the walk: a change during or after the
 *   read gets a later ctime, even on a file system that keeps whole seconds (git's
 *   racy-index rule);
 * - only on local file systems whose directories keep ctime so (ext4, xfs, btrfs,
 *   tmpfs): a network file system's attribute cache can show an old ctime for a changed
 *   directory;
 * - the whole table that decides the walk is the key (vfs_cover_cache_key()), compared
 *   in full: another policy reads from scratch;
 * - the file is written whole and renamed into place by the caller, carries a BLAKE2b
 *   checksum, and one that does not parse, check or match the key is not used at all.
 * The caller keeps the file where the sandbox cannot see it (sup.c: cover_cache_dir()).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "hash.h"
#include "io.h"
#include "macros.h"
#include "moat-config.h"
#include "vfs-internal.h"

#define MAGIC "MOATCVR1"
#define MAGIC_LEN 8
#define SUM_LEN crypto_generichash_BYTES /* 32 */
#define FILE_MAX (16u << 20)             /* bigger files are ignored, and not written: the
                                            keeper's memory counts in the run's limit */
#define COVER_CACHE_SETTLE_S 2
/* A walk of fewer entries costs less than a millisecond: no file is written for it. */
#define WORTH_ENTRIES 1000u

/* A record: this header, the virtual path, then n_children of (u8 flags, u8 0, u16 name
 * length, name). Native byte order: the file never leaves the machine. */
struct rec_head {
	uint8_t cover_all;
	uint8_t pad[3];
	uint32_t vpath_len;
	uint64_t dev, ino;
	int64_t ctime_s, ctime_ns;
	uint32_t n_entries, n_children;
};

struct vfs__cc_rec {
	struct rec_head h;
	const char *vpath;           /* in the old file, not NUL-ended */
	const uint8_t *children;     /* in the old file */
	const uint8_t *raw;          /* the whole record, to copy into the new file */
	size_t raw_len;
};

struct vfs_cover_cache {
	char *key;
	uint8_t *old;                /* the file as read */
	struct vfs__cc_rec *recs;
	size_t n_recs;
	uint32_t *slots;             /* open addressing on (cover_all, vpath): index + 1 */
	size_t n_slots;

	struct vfs__bytes out;       /* the new file's records (bound: FILE_MAX) */
	size_t n_new;
	bool fresh;                  /* a record in the new file came from a read */
	unsigned hits, reads;
	unsigned entries;            /* the walk's, every directory's counted */
	struct timespec start;
	struct { dev_t dev; bool ok; } devs[16];
	size_t n_devs;
};

static uint64_t hash_of(bool cover_all, const char *s, size_t n)
{
	return fnv1a64(s, n, FNV1A64_INIT ^ cover_all);
}

static bool bytes_add(struct vfs__bytes *b, const void *p, size_t n, size_t max)
{
	if (b->failed)
		return false;
	if (n == 0)
		return true;
	if (b->len + n > max) {
		b->failed = true;
		return false;
	}
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;
		uint8_t *q;

		while (cap < b->len + n)
			cap *= 2;
		q = realloc(b->p, cap);
		if (!q) {
			b->failed = true;
			return false;
		}
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return true;
}

static bool append(struct vfs_cover_cache *cc, const void *p, size_t n)
{
	return bytes_add(&cc->out, p, n, FILE_MAX);
}

/* "NAME LEN:VALUE\n": a length first, so that no value can pass for another line */
static void key_field(struct vfs__bytes *k, const char *name, const char *value)
{
	char num[24];
	size_t n = value ? strlen(value) : 0;
	int w = snprintf(num, sizeof(num), " %zu:", n);

	bytes_add(k, name, strlen(name), SIZE_MAX);
	bytes_add(k, num, (size_t)w, SIZE_MAX);
	bytes_add(k, value, n, SIZE_MAX);
	bytes_add(k, "\n", 1, SIZE_MAX);
}

_public_ char *vfs_cover_cache_key(const struct vfs *v, const char *root)
{
	struct vfs__bytes k = { 0 };

	/* The version names the walk's own logic: cover.c's scan() bumps it. */
	bytes_add(&k, "moat cover 1\n", 13, SIZE_MAX);
	key_field(&k, "root", root);
	key_field(&k, "home", v->home);
	key_field(&k, "home_dir", v->home_dir);
	for (size_t i = 0; i < v->n_rules; i++) {
		const struct vfs__rule *r = &v->rules[i];
		/* kind, the flags the walk and the decisions read, the virtual path (the
		 * host side is checked by each directory's device and inode) */
		char what[8] = { (char)('0' + r->kind), (char)('0' + r->writable),
				 (char)('0' + r->is_proc), (char)('0' + r->dead),
				 (char)('0' + r->system), (char)('0' + r->own_only), 0 };

		key_field(&k, what, r->virt);
	}
	if (!bytes_add(&k, "", 1, SIZE_MAX)) {
		free(k.p);
		return NULL;
	}
	return (char *)k.p;
}

/* The file's name only: the key inside is compared in full, so a cheap hash does (a
 * BLAKE2b here cost 60 µs of a cold start, its code's first page faults). */
_public_ int vfs_cover_cache_name(const char *key, char *buf, size_t size)
{
	size_t n = strlen(key);

	if (size < 6 + 32 + 1)
		return -ENOSPC;
	snprintf(buf, size, "cover-%016llx%016llx",
		 (unsigned long long)fnv1a64(key, n, FNV1A64_INIT),
		 (unsigned long long)fnv1a64(key, n, FNV1A64_INIT ^ 1));
	return 0;
}

static bool take(const uint8_t **p, const uint8_t *end, void *out, size_t n)
{
	if ((size_t)(end - *p) < n)
		return false;
	if (out)
		memcpy(out, *p, n);
	*p += n;
	return true;
}

static bool name_ok(const uint8_t *s, size_t n)
{
	if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
		return false;
	return !memchr(s, '/', n) && !memchr(s, '\0', n);
}

/* The old file's records, every byte checked: false drops the whole file. */
static bool parse(struct vfs_cover_cache *cc, size_t size)
{
	const uint8_t *p = cc->old, *end = cc->old + size - SUM_LEN;
	unsigned char sum[SUM_LEN];
	uint32_t key_len, n;
	size_t klen = strlen(cc->key);

	if (size < MAGIC_LEN + 8 + SUM_LEN || memcmp(p, MAGIC, MAGIC_LEN) != 0)
		return false;
	crypto_generichash(sum, sizeof(sum), cc->old, size - SUM_LEN, NULL, 0);
	if (sodium_memcmp(sum, end, SUM_LEN) != 0)
		return false;
	p += MAGIC_LEN;
	if (!take(&p, end, &key_len, 4) || key_len != klen || (size_t)(end - p) < klen ||
	    memcmp(p, cc->key, klen) != 0)
		return false;
	p += klen;
	if (!take(&p, end, &n, 4) || n > (size_t)(end - p) / sizeof(struct rec_head))
		return false;
	cc->recs = calloc(n ? n : 1, sizeof(*cc->recs));
	cc->n_slots = 16;
	while (cc->n_slots < 2 * (size_t)n)
		cc->n_slots *= 2;
	cc->slots = calloc(cc->n_slots, sizeof(*cc->slots));
	if (!cc->recs || !cc->slots)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		struct vfs__cc_rec *r = &cc->recs[i];
		const uint8_t *start = p;
		uint64_t h;

		if (!take(&p, end, &r->h, sizeof(r->h)) || r->h.vpath_len == 0 ||
		    r->h.vpath_len >= PATH_MAX || r->h.cover_all > 1)
			return false;
		r->vpath = (const char *)p;
		if (!take(&p, end, NULL, r->h.vpath_len) || r->vpath[0] != '/' ||
		    memchr(r->vpath, '\0', r->h.vpath_len))
			return false;
		r->children = p;
		for (uint32_t j = 0; j < r->h.n_children; j++) {
			uint8_t flags, pad;
			uint16_t nl;

			if (!take(&p, end, &flags, 1) || !take(&p, end, &pad, 1) ||
			    !take(&p, end, &nl, 2) || (flags & ~3u) || pad ||
			    (size_t)(end - p) < nl || !name_ok(p, nl))
				return false;
			p += nl;
		}
		r->raw = start;
		r->raw_len = (size_t)(p - start);
		h = hash_of(r->h.cover_all, r->vpath, r->h.vpath_len);
		for (size_t s = h & (cc->n_slots - 1);; s = (s + 1) & (cc->n_slots - 1))
			if (!cc->slots[s]) {
				cc->slots[s] = i + 1;
				break;
			}
	}
	cc->n_recs = n;
	return p == end;
}

_public_ struct vfs_cover_cache *vfs_cover_cache_new(const char *key, int fd)
{
	struct vfs_cover_cache *cc = calloc(1, sizeof(*cc));
	struct stat st;

	if (!cc || !(cc->key = strdup(key))) {
		free(cc);
		return NULL;
	}
	clock_gettime(CLOCK_REALTIME, &cc->start);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (uint64_t)st.st_size > FILE_MAX)
		return cc;
	cc->old = malloc((size_t)st.st_size);
	if (!cc->old)
		return cc;
	if (pread(fd, cc->old, (size_t)st.st_size, 0) != st.st_size ||
	    !parse(cc, (size_t)st.st_size)) {
		free(cc->recs);
		free(cc->slots);
		cc->recs = NULL;
		cc->slots = NULL;
		cc->n_recs = cc->n_slots = 0;
	}
	return cc;
}

_public_ void vfs_cover_cache_free(struct vfs_cover_cache *cc)
{
	if (!cc)
		return;
	free(cc->key);
	free(cc->old);
	free(cc->recs);
	free(cc->slots);
	free(cc->out.p);
	free(cc);
}

/* The file system of fd (dev) keeps a directory's ctime as the header says. Without an
 * fd (-1) only a device seen before is known. */
static bool fs_ok(struct vfs_cover_cache *cc, int fd, dev_t dev)
{
	struct statfs sf;
	bool ok;

	for (size_t i = 0; i < cc->n_devs; i++)
		if (cc->devs[i].dev == dev)
			return cc->devs[i].ok;
	if (fd < 0 || fstatfs(fd, &sf) < 0)
		return false;
	ok = sf.f_type == EXT4_SUPER_MAGIC || sf.f_type == XFS_SUPER_MAGIC ||
	     sf.f_type == BTRFS_SUPER_MAGIC || sf.f_type == TMPFS_MAGIC;
	if (cc->n_devs < ELEMENTSOF(cc->devs))
		cc->devs[cc->n_devs++] = (typeof(cc->devs[0])){ dev, ok };
	return ok;
}

const struct vfs__cc_rec *vfs__cc_lookup(const struct vfs_cover_cache *cc, const char *vdir,
					 bool cover_all)
{
	size_t n = strlen(vdir);

	if (!cc->n_slots)
		return NULL;
	for (size_t s = hash_of(cover_all, vdir, n) & (cc->n_slots - 1); cc->slots[s];
	     s = (s + 1) & (cc->n_slots - 1)) {
		const struct vfs__cc_rec *r = &cc->recs[cc->slots[s] - 1];

		if (r->h.cover_all == cover_all && r->h.vpath_len == n &&
		    memcmp(r->vpath, vdir, n) == 0)
			return r;
	}
	return NULL;
}

bool vfs__cc_check(struct vfs_cover_cache *cc, const struct vfs__cc_rec *r, int fd,
		   const struct stat *st)
{
#if MOAT_TEST_HOOKS
	/* escape tests only: the control run that shows what the checks keep out */
	if (getenv("MOAT_TEST_COVER_CACHE_TRUST"))
		return true;
#endif
	return r->h.dev == (uint64_t)st->st_dev && r->h.ino == (uint64_t)st->st_ino &&
	       r->h.ctime_s == (int64_t)st->st_ctim.tv_sec &&
	       r->h.ctime_ns == (int64_t)st->st_ctim.tv_nsec && fs_ok(cc, fd, st->st_dev);
}

size_t vfs__cc_count(const struct vfs_cover_cache *cc)
{
	return cc->n_recs;
}

bool vfs__cc_leaf(const struct vfs__cc_rec *r)
{
	return r->h.n_children == 0;
}

uint32_t vfs__cc_entries(const struct vfs__cc_rec *r)
{
	return r->h.n_entries;
}

int vfs__cc_children(const struct vfs__cc_rec *r,
		     int (*fn)(void *ud, const char *name, size_t len, unsigned flags), void *ud)
{
	const uint8_t *p = r->children;

	for (uint32_t i = 0; i < r->h.n_children; i++) {
		uint16_t nl;
		int rr;

		memcpy(&nl, p + 2, 2);
		rr = fn(ud, (const char *)p + 4, nl, p[0]);
		if (rr)
			return rr;
		p += 4 + nl;
	}
	return 0;
}

void vfs__cc_keep(struct vfs_cover_cache *cc, const struct vfs__cc_rec *r)
{
	cc->hits++;
	if (append(cc, r->raw, r->raw_len))
		cc->n_new++;
}

void vfs__cc_read(struct vfs_cover_cache *cc)
{
	cc->reads++;
}

bool vfs__cc_settled(struct vfs_cover_cache *cc, int fd, const struct stat *st)
{
	return st->st_ctim.tv_sec < cc->start.tv_sec - COVER_CACHE_SETTLE_S &&
	       fs_ok(cc, fd, st->st_dev);
}

void vfs__cc_put(struct vfs_cover_cache *cc, const char *vdir, bool cover_all,
		 const struct stat *st, uint32_t n_entries, const struct vfs__cc_pending *pend)
{
	struct rec_head h = {
		.cover_all = cover_all,
		.vpath_len = (uint32_t)strlen(vdir),
		.dev = (uint64_t)st->st_dev,
		.ino = (uint64_t)st->st_ino,
		.ctime_s = (int64_t)st->st_ctim.tv_sec,
		.ctime_ns = (int64_t)st->st_ctim.tv_nsec,
		.n_entries = n_entries,
		.n_children = pend->n,
	};

	if (pend->b.failed) {
		cc->out.failed = true;
		return;
	}
	if (append(cc, &h, sizeof(h)) && append(cc, vdir, h.vpath_len) &&
	    append(cc, pend->b.p, pend->b.len)) {
		cc->n_new++;
		cc->fresh = true;
	}
}

void vfs__cc_pending_add(struct vfs__cc_pending *pend, const char *name, unsigned flags)
{
	size_t nl = strlen(name);
	uint8_t hd[4] = { (uint8_t)flags, 0 };
	uint16_t n16 = (uint16_t)nl;

	if (nl > UINT16_MAX) {
		pend->b.failed = true;
		return;
	}
	memcpy(hd + 2, &n16, 2);
	if (bytes_add(&pend->b, hd, 4, FILE_MAX) && bytes_add(&pend->b, name, nl, FILE_MAX))
		pend->n++;
}

void vfs__cc_done(struct vfs_cover_cache *cc, unsigned entries)
{
	cc->entries = entries;
}

_public_ bool vfs_cover_cache_changed(const struct vfs_cover_cache *cc)
{
	return !cc->out.failed && cc->entries >= WORTH_ENTRIES &&
	       (cc->fresh || cc->n_new != cc->n_recs);
}

_public_ void vfs_cover_cache_stats(const struct vfs_cover_cache *cc, unsigned *ret_hits,
				    unsigned *ret_reads)
{
	*ret_hits = cc->hits;
	*ret_reads = cc->reads;
}

_public_ int vfs_cover_cache_write(const struct vfs_cover_cache *cc, int fd)
{
	crypto_generichash_state st;
	unsigned char sum[SUM_LEN];
	uint32_t key_len = (uint32_t)strlen(cc->key), n = (uint32_t)cc->n_new;
	int r;

	if (cc->out.failed)
		return -E2BIG;
	crypto_generichash_init(&st, NULL, 0, sizeof(sum));
	crypto_generichash_update(&st, (const unsigned char *)MAGIC, MAGIC_LEN);
	crypto_generichash_update(&st, (const unsigned char *)&key_len, 4);
	crypto_generichash_update(&st, (const unsigned char *)cc->key, key_len);
	crypto_generichash_update(&st, (const unsigned char *)&n, 4);
	crypto_generichash_update(&st, cc->out.p ? cc->out.p : (const uint8_t *)"", cc->out.len);
	crypto_generichash_final(&st, sum, sizeof(sum));
	if ((r = write_all(fd, MAGIC, MAGIC_LEN)) < 0 || (r = write_all(fd, &key_len, 4)) < 0 ||
	    (r = write_all(fd, cc->key, key_len)) < 0 || (r = write_all(fd, &n, 4)) < 0 ||
	    (r = write_all(fd, cc->out.p, cc->out.len)) < 0 || (r = write_all(fd, sum, sizeof(sum))) < 0)
		return r;
	return 0;
}

/* Whether dirfd's directory, or one above it, is the source of a mapping: then the
 * sandbox can see (and maybe write) what is kept there. Also when the way up cannot be
 * followed to "/". */
_public_ bool vfs_shows_host_dir(const struct vfs *v, int dirfd)
{
	struct { dev_t dev; ino_t ino; } up[256];
	char dots[3 * ELEMENTSOF(up)] = ".";
	size_t n = 0;
	bool top = false;

	/* ".", "..", "../..": each a stat, the way up as the kernel walks it (a ".." at a
	 * mount's root goes to where it is mounted) */
	while (n < ELEMENTSOF(up)) {
		struct stat st;

		if (fstatat(dirfd, dots, &st, 0) < 0)
			break;
		if (n && st.st_dev == up[n - 1].dev && st.st_ino == up[n - 1].ino) {
			top = true; /* "/.." is "/" */
			break;
		}
		up[n].dev = st.st_dev;
		up[n].ino = st.st_ino;
		strcpy(dots + (n ? 3 * n - 1 : 0), n ? "/.." : "..");
		n++;
	}
	if (!top)
		return true;
	for (size_t i = 0; i < v->n_mounts; i++) {
		const struct vfs__rule *m = v->mounts[i];
		struct stat st = { .st_dev = m->root_dev, .st_ino = m->root_ino };

		if (m->kind == VFS__TMPFS)
			continue; /* a private directory of the run's own */
		if (m->root_is_link && stat(m->host, &st) < 0)
			return true;
		for (size_t j = 0; j < n; j++)
			if (up[j].dev == st.st_dev && up[j].ino == st.st_ino)
				return true;
	}
	return false;
}
