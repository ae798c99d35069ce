/* SPDX-License-Identifier: MIT */
/*
 * The covering's records of an earlier run (vfs/covercache.c): the input is the body of
 * a records file (the count and the records), framed as the keeper would find it (the
 * magic, this key, a valid checksum), so that the parser of the records is what gets
 * fuzzed rather than the checksum. Checks what must hold for any input: parsing never
 * reads outside the file, a record found replays only children that are one plain name
 * each, and the records written back from a replay parse again, all of them.
 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "vfs-internal.h"

static int check_child(void *ud, const char *name, size_t len, unsigned flags)
{
	(void)ud;
	if (len == 0 || memchr(name, '/', len) || memchr(name, '\0', len) ||
	    (len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.') ||
	    (flags & ~(VFS__CC_DIR | VFS__CC_COVER)))
		abort();
	return 0;
}

static int framed(const uint8_t *body, size_t size, const char *key)
{
	unsigned char sum[crypto_generichash_BYTES];
	crypto_generichash_state st;
	uint32_t kl = (uint32_t)strlen(key);
	int fd = memfd_create("fuzz", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	crypto_generichash_init(&st, NULL, 0, sizeof(sum));
	crypto_generichash_update(&st, (const unsigned char *)"MOATCVR1", 8);
	crypto_generichash_update(&st, (const unsigned char *)&kl, 4);
	crypto_generichash_update(&st, (const unsigned char *)key, kl);
	crypto_generichash_update(&st, body, size);
	crypto_generichash_final(&st, sum, sizeof(sum));
	if (write(fd, "MOATCVR1", 8) != 8 || write(fd, &kl, 4) != 4 ||
	    write(fd, key, kl) != (ssize_t)kl || (size && write(fd, body, size) != (ssize_t)size) ||
	    write(fd, sum, sizeof(sum)) != (ssize_t)sizeof(sum)) {
		close(fd);
		return -1;
	}
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const probes[] = { "/", "/a", "/a/b", "/w/m/p1/lib" };
	struct vfs_cover_cache *cc;
	struct stat st;
	int fd = framed(data, size, "fuzz key");

	if (fd < 0)
		return 0;
	cc = vfs_cover_cache_new("fuzz key", fd);
	close(fd);
	if (!cc)
		return 0;
	size_t kept = 0;

	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
		for (int all = 0; all < 2; all++) {
			const struct vfs__cc_rec *r = vfs__cc_lookup(cc, probes[i], all);

			if (r) {
				(void)vfs__cc_children(r, check_child, NULL);
				vfs__cc_keep(cc, r);
				kept++;
			}
		}
	fd = memfd_create("fuzz-out", MFD_CLOEXEC);
	if (fd >= 0 && vfs_cover_cache_write(cc, fd) == 0 && fstat(fd, &st) == 0) {
		struct vfs_cover_cache *again = vfs_cover_cache_new("fuzz key", fd);

		/* what was kept parses again, every record of it */
		if (again && vfs__cc_count(again) != kept)
			abort();
		vfs_cover_cache_free(again);
	}
	if (fd >= 0)
		close(fd);
	vfs_cover_cache_free(cc);
	return 0;
}
