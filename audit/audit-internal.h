/* SPDX-License-Identifier: MIT */
/*
 * audit internals shared by writer.c, reader.c, json.c and verify.c. Not for other
 * modules: they use audit.h.
 */
#pragma once

#include <msgpack.h>
#include <sodium.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audit.h"
#include "macros.h"

#define AUDIT_SCHEMA_VERSION 1
#define AUDIT_HASH_BYTES 32

/* The signature covers this prefix and the final chain value, so a signature made by the
 * same key for some other purpose can never pass for an audit signature. */
#define AUDIT_SIG_CONTEXT "moat-audit-v1"

/*
 * An append-only byte sink for msgpack_packer. A fixed sink (grow == false) never
 * allocates: when a record does not fit it sets overflow and the caller rolls back, which
 * is how the hot path drops a record instead of waiting or allocating.
 */
struct audit__enc {
	uint8_t *buf;
	size_t len, cap;
	bool grow;
	bool overflow;
};

int audit__enc_write(void *data, const char *buf, size_t len);

/*
 * Maps are written with a map16 header whose count is patched when the map is closed, so
 * optional fields can be left out without counting them twice. msgpack allows a
 * non-minimal header; every decoder accepts it.
 */
struct audit__map {
	size_t off;
	unsigned n;
};

void audit__map_begin(msgpack_packer *pk, struct audit__map *m);
void audit__map_end(msgpack_packer *pk, const struct audit__map *m);
void audit__key(msgpack_packer *pk, struct audit__map *m, const char *key);
void audit__pack_cstr(msgpack_packer *pk, const char *s);
void audit__kv_str(msgpack_packer *pk, struct audit__map *m, const char *key, const char *val);
void audit__kv_u64(msgpack_packer *pk, struct audit__map *m, const char *key, uint64_t val);
void audit__kv_i64(msgpack_packer *pk, struct audit__map *m, const char *key, int64_t val);
void audit__kv_bin(msgpack_packer *pk, struct audit__map *m, const char *key, const void *p,
		   size_t n);

/* chain' = BLAKE2b-256(chain || record bytes). The chain starts as 32 zero bytes. */
void audit__chain(uint8_t chain[AUDIT_HASH_BYTES], const void *rec, size_t len);
void audit__sig_message(uint8_t msg[sizeof(AUDIT_SIG_CONTEXT) - 1 + AUDIT_HASH_BYTES],
			const uint8_t chain[AUDIT_HASH_BYTES]);

int audit__key_read_secret(const char *path, uint8_t sk[crypto_sign_SECRETKEYBYTES]);

/* Lookups in a decoded msgpack map. Absent or wrongly typed keys read as "not there". */
const msgpack_object *audit__get(const msgpack_object *map, const char *key);
bool audit__get_u64(const msgpack_object *map, const char *key, uint64_t *ret);
bool audit__get_i64(const msgpack_object *map, const char *key, int64_t *ret);
bool audit__str_eq(const msgpack_object *o, const char *s);


/* JSON name of a schema key ("sc" -> "syscall"), or NULL. */
const char *audit__long_name(const char *s);
