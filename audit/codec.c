/* SPDX-License-Identifier: MIT */
/*
 * Encoding and lookup helpers shared by the writer and the reader: a byte sink for
 * msgpack_packer, maps with patched counts, the hash chain, typed map lookups.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "audit-internal.h"

int audit__enc_write(void *data, const char *buf, size_t len)
{
	struct audit__enc *e = data;

	if (e->overflow)
		return -1;
	if (len > e->cap - e->len) {
		size_t ncap;
		uint8_t *nbuf;

		if (!e->grow) {
			e->overflow = true;
			return -1;
		}
		ncap = MAX(e->cap * 2, e->len + len + 256);
		nbuf = realloc(e->buf, ncap);
		if (!nbuf) {
			e->overflow = true;
			return -1;
		}
		e->buf = nbuf;
		e->cap = ncap;
	}
	memcpy(e->buf + e->len, buf, len);
	e->len += len;
	return 0;
}

void audit__map_begin(msgpack_packer *pk, struct audit__map *m)
{
	static const char hdr[3] = { (char)0xde, 0, 0 };
	struct audit__enc *e = pk->data;

	m->off = e->len;
	m->n = 0;
	audit__enc_write(e, hdr, sizeof(hdr));
}

void audit__map_end(msgpack_packer *pk, const struct audit__map *m)
{
	struct audit__enc *e = pk->data;

	if (e->overflow)
		return;
	e->buf[m->off + 1] = (uint8_t)(m->n >> 8);
	e->buf[m->off + 2] = (uint8_t)m->n;
}

void audit__pack_cstr(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);

	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

void audit__key(msgpack_packer *pk, struct audit__map *m, const char *key)
{
	audit__pack_cstr(pk, key);
	m->n++;
}

void audit__kv_str(msgpack_packer *pk, struct audit__map *m, const char *key, const char *val)
{
	/* Absent rather than nil: a reader treats both as NULL, and absent costs nothing. */
	if (!val)
		return;
	audit__key(pk, m, key);
	audit__pack_cstr(pk, val);
}

void audit__kv_u64(msgpack_packer *pk, struct audit__map *m, const char *key, uint64_t val)
{
	audit__key(pk, m, key);
	msgpack_pack_uint64(pk, val);
}

void audit__kv_i64(msgpack_packer *pk, struct audit__map *m, const char *key, int64_t val)
{
	audit__key(pk, m, key);
	msgpack_pack_int64(pk, val);
}

void audit__kv_bin(msgpack_packer *pk, struct audit__map *m, const char *key, const void *p,
		   size_t n)
{
	if (!p)
		return;
	audit__key(pk, m, key);
	msgpack_pack_bin(pk, n);
	msgpack_pack_bin_body(pk, p, n);
}

void audit__chain(uint8_t chain[AUDIT_HASH_BYTES], const void *rec, size_t len)
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, NULL, 0, AUDIT_HASH_BYTES);
	crypto_generichash_update(&st, chain, AUDIT_HASH_BYTES);
	crypto_generichash_update(&st, rec, len);
	crypto_generichash_final(&st, chain, AUDIT_HASH_BYTES);
}

void audit__sig_message(uint8_t msg[sizeof(AUDIT_SIG_CONTEXT) - 1 + AUDIT_HASH_BYTES],
			const uint8_t chain[AUDIT_HASH_BYTES])
{
	memcpy(msg, AUDIT_SIG_CONTEXT, sizeof(AUDIT_SIG_CONTEXT) - 1);
	memcpy(msg + sizeof(AUDIT_SIG_CONTEXT) - 1, chain, AUDIT_HASH_BYTES);
}

bool audit__str_eq(const msgpack_object *o, const char *s)
{
	size_t n = strlen(s);

	return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size == n &&
	       memcmp(o->via.str.ptr, s, n) == 0;
}

const msgpack_object *audit__get(const msgpack_object *map, const char *key)
{
	if (!map || map->type != MSGPACK_OBJECT_MAP)
		return NULL;
	for (uint32_t i = 0; i < map->via.map.size; i++)
		if (audit__str_eq(&map->via.map.ptr[i].key, key))
			return &map->via.map.ptr[i].val;
	return NULL;
}

bool audit__get_u64(const msgpack_object *map, const char *key, uint64_t *ret)
{
	const msgpack_object *o = audit__get(map, key);

	if (!o)
		return false;
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
		*ret = o->via.u64;
	else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		*ret = (uint64_t)o->via.i64;
	else
		return false;
	return true;
}

bool audit__get_i64(const msgpack_object *map, const char *key, int64_t *ret)
{
	uint64_t v;

	if (!audit__get_u64(map, key, &v))
		return false;
	*ret = (int64_t)v;
	return true;
}

bool audit_rec_u64(const struct audit_rec *rec, const char *key, uint64_t *ret)
{
	return audit__get_u64(rec->obj, key, ret);
}

void audit_hex(char *out, const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

static const char *const decision_names[_AUDIT_DECISION_MAX] = {
	[AUDIT_NATIVE] = "native",     [AUDIT_EMULATED] = "emulated", [AUDIT_DENIED] = "denied",
	[AUDIT_CONTINUED] = "continued", [AUDIT_KILLED] = "killed",
};

const char *audit_decision_name(enum audit_decision d)
{
	if ((unsigned)d >= _AUDIT_DECISION_MAX)
		return "unknown";
	return decision_names[d];
}

int audit_decision_from_name(const char *s, size_t n)
{
	for (unsigned i = 0; i < _AUDIT_DECISION_MAX; i++)
		if (strlen(decision_names[i]) == n && memcmp(decision_names[i], s, n) == 0)
			return (int)i;
	return -EINVAL;
}

static const char *const proc_event_names[] = {
	[AUDIT_PROC_FORK] = "fork",
	[AUDIT_PROC_EXEC] = "exec",
	[AUDIT_PROC_EXIT] = "exit",
};

const char *audit_proc_event_name(enum audit_proc_event e)
{
	if ((unsigned)e >= ELEMENTSOF(proc_event_names))
		return "unknown";
	return proc_event_names[e];
}

int audit_proc_event_from_name(const char *s, size_t n)
{
	for (unsigned i = 0; i < ELEMENTSOF(proc_event_names); i++)
		if (strlen(proc_event_names[i]) == n && memcmp(proc_event_names[i], s, n) == 0)
			return (int)i;
	return -EINVAL;
}
