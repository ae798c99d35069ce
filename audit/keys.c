/* SPDX-License-Identifier: MIT */
/*
 * Ed25519 key files for signed audit streams. One line of text each, a tag then hex, so a
 * key can be pasted into a CI secret and a public key into a review:
 *   OUT      "moat-audit-ed25519-secret <128 hex digits>\n"   (mode 0600)
 *   OUT.pub  "moat-audit-ed25519-public <64 hex digits>\n"
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit-internal.h"
#include "cleanup.h"

#define SECRET_TAG "moat-audit-ed25519-secret"
#define PUBLIC_TAG "moat-audit-ed25519-public"

static int read_key(const char *path, const char *tag, uint8_t *out, size_t n)
{
	_cleanup_close_ int fd = -1;
	char buf[512];
	size_t tl = strlen(tag), hl;
	ssize_t len;
	const char *hex;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	if (len < 0)
		return -errno;
	buf[len] = '\0';
	if ((size_t)len < tl + 1 || memcmp(buf, tag, tl) != 0 || buf[tl] != ' ')
		return -EBADMSG;
	hex = buf + tl + 1;
	hl = strcspn(hex, "\r\n");
	if (sodium_hex2bin(out, n, hex, hl, NULL, NULL, NULL) != 0 || hl != 2 * n)
		return -EBADMSG;
	sodium_memzero(buf, sizeof(buf));
	return 0;
}

int audit__key_read_secret(const char *path, uint8_t sk[crypto_sign_SECRETKEYBYTES])
{
	return read_key(path, SECRET_TAG, sk, crypto_sign_SECRETKEYBYTES);
}

int audit_key_read_public(const char *path, uint8_t ret[32])
{
	if (sodium_init() < 0)
		return -EIO;
	return read_key(path, PUBLIC_TAG, ret, crypto_sign_PUBLICKEYBYTES);
}

static int write_key(const char *path, mode_t mode, const char *tag, const uint8_t *k, size_t n)
{
	_cleanup_close_ int fd = -1;
	char line[300];
	int len;

	/* O_EXCL: never overwrite a key that may already sign streams elsewhere. */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	len = snprintf(line, sizeof(line), "%s ", tag);
	audit_hex(line + len, k, n);
	len += (int)(2 * n);
	line[len++] = '\n';
	if (write(fd, line, (size_t)len) != len) {
		sodium_memzero(line, sizeof(line));
		return errno ? -errno : -EIO;
	}
	sodium_memzero(line, sizeof(line));
	if (fsync(fd) < 0)
		return -errno;
	return 0;
}

int audit_keygen(const char *out)
{
	uint8_t pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
	_cleanup_free_ char *pub = NULL;
	int r;

	if (sodium_init() < 0)
		return -EIO;
	if (asprintf(&pub, "%s.pub", out) < 0)
		return -ENOMEM;
	crypto_sign_keypair(pk, sk);
	r = write_key(out, 0600, SECRET_TAG, sk, sizeof(sk));
	sodium_memzero(sk, sizeof(sk));
	if (r < 0)
		return r;
	r = write_key(pub, 0644, PUBLIC_TAG, pk, sizeof(pk));
	if (r < 0)
		unlink(out);
	return r;
}
