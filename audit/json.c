/* SPDX-License-Identifier: MIT */
/*
 * Records as JSON objects for `dump --json` and the filter language: short schema keys
 * become the long names listed in SCHEMA.md, values that JSON cannot carry exactly
 * (64-bit addresses, binary hashes) become hex strings, and every timed record gains
 * "time_ns" (integer) and "time" (RFC 3339, UTC, ns) so jq users need no arithmetic.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit-internal.h"

enum {
	KM_HEX = 1 << 0,        /* integers (or arrays of them) as "0x..." */
	KM_JSON = 1 << 1,       /* a string holding JSON: embed it parsed */
};

struct keymap {
	const char *s, *l;
	unsigned flags;
	const struct keymap *child;     /* for maps, and arrays of maps */
};

static const struct keymap km_feat[] = {
	{ "n", "name" }, { "ok", "present" }, { "d", "detail" }, {},
};

static const struct keymap km_hdr[] = {
	{ "t", "type" }, { "seq", "seq" }, { "v", "schema" }, { "mv", "moat_version" },
	{ "run", "run_id" }, { "ses", "session" }, { "ten", "tenant" }, { "argv", "argv" },
	{ "cwd", "cwd" }, { "env", "env_names" }, { "pol", "policy", KM_JSON },
	{ "ph", "policy_hash" }, { "mode", "mode" }, { "kern", "kernel" }, { "arch", "arch" },
	{ "feat", "features", 0, km_feat }, { "wall", "start_wall_ns" },
	{ "mono", "start_mono_ns" }, { "stk", "stacks" }, {},
};

static const struct keymap km_frame[] = {
	{ "ip", "ip", KM_HEX }, { "mod", "module" }, { "bid", "build_id" },
	{ "sym", "symbol" }, { "off", "offset" }, {},
};

static const struct keymap km_sys[] = {
	{ "t", "type" }, { "seq", "seq" }, { "ts", "mono_ns" }, { "pid", "pid" },
	{ "tid", "tid" }, { "spid", "sandbox_pid" }, { "stid", "sandbox_tid" },
	{ "comm", "comm" }, { "sc", "syscall" }, { "nr", "nr" }, { "args", "args", KM_HEX },
	{ "path", "path" }, { "res", "resolved" }, { "path2", "path2" }, { "addr", "addr" },
	{ "flags", "flags" }, { "dec", "decision" }, { "rule", "rule" }, { "ret", "result" },
	{ "err", "errno" }, { "lat", "latency_ns" }, { "stk", "stack", 0, km_frame }, {},
};

static const struct keymap km_proc[] = {
	{ "t", "type" }, { "seq", "seq" }, { "ev", "event" }, { "ts", "mono_ns" },
	{ "pid", "pid" }, { "ppid", "ppid" }, { "path", "path" }, { "sha", "sha256" },
	{ "st", "status" }, { "sig", "signal" }, {},
};

static const struct keymap km_ckpt[] = {
	{ "t", "type" }, { "n", "records" }, { "frame", "frame" }, { "ts", "mono_ns" },
	{ "drop", "dropped" }, { "sys", "sys_records" }, { "proc", "proc_records" },
	{ "dec", "decisions" }, { "h", "chain" }, {},
};

static const struct keymap km_chg[] = {
	{ "k", "kind" }, { "p", "path" }, { "op", "old_path" }, { "sz", "size" },
	{ "sha", "sha256" }, { "hs", "hash_skipped" }, {},
};

static const struct keymap km_tot[] = {
	{ "sc", "syscall" }, { "dec", "decision" }, { "n", "count" }, {},
};

static const struct keymap km_ftr[] = {
	{ "t", "type" }, { "seq", "seq" }, { "exit", "exit_status" }, { "why", "reason" },
	{ "wall", "wall_ns" }, { "cpu", "cpu_ns" }, { "mem", "peak_memory" },
	{ "chg", "changes", 0, km_chg }, { "tot", "totals", 0, km_tot }, { "n", "records" },
	{ "drop", "dropped" }, {},
};

static const struct keymap km_sig[] = {
	{ "t", "type" }, { "alg", "alg" }, { "h", "chain" }, { "pk", "public_key" },
	{ "s", "signature" }, {},
};

static const struct keymap *const km_by_type[_AUDIT_REC_MAX] = {
	[AUDIT_REC_HDR] = km_hdr,   [AUDIT_REC_SYS] = km_sys, [AUDIT_REC_PROC] = km_proc,
	[AUDIT_REC_CKPT] = km_ckpt, [AUDIT_REC_FTR] = km_ftr, [AUDIT_REC_SIG] = km_sig,
};

/* Long name of a schema key for the filter language: any record type will do, since a
 * short key means the same thing wherever it appears (except "stk", which the filter
 * never needs). */
const char *audit__long_name(const char *s)
{
	for (unsigned t = 1; t < _AUDIT_REC_MAX; t++)
		for (const struct keymap *k = km_by_type[t]; k->s; k++)
			if (streq(k->s, s))
				return k->l;
	return NULL;
}

/* Paths are bytes, JSON strings are UTF-8: keep valid strings as they are and spell
 * the bytes of an invalid one as \xNN, so no path is ever lost or silently changed. */
static json_t *str_to_json(const char *p, size_t n)
{
	json_t *j = json_stringn(p, n);
	char *buf, *q;

	if (j)
		return j;
	buf = malloc(4 * n + 1);
	if (!buf)
		return NULL;
	q = buf;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c >= 0x80 || c == 0)
			q += sprintf(q, "\\x%02x", c);
		else
			*q++ = (char)c;
	}
	j = json_stringn(buf, (size_t)(q - buf));
	free(buf);
	return j;
}

static json_t *u64_to_json(uint64_t v, unsigned flags)
{
	char buf[32];

	if (flags & KM_HEX) {
		snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
		return json_string(buf);
	}
	if (v > INT64_MAX) {
		snprintf(buf, sizeof(buf), "%" PRIu64, v);
		return json_string(buf);
	}
	return json_integer((json_int_t)v);
}

static json_t *obj_to_json(const msgpack_object *o, const struct keymap *km, unsigned flags)
{
	json_t *j;

	switch (o->type) {
	case MSGPACK_OBJECT_NIL:
		return json_null();
	case MSGPACK_OBJECT_BOOLEAN:
		return json_boolean(o->via.boolean);
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		return u64_to_json(o->via.u64, flags);
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		return json_integer(o->via.i64);
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		return json_real(o->via.f64);
	case MSGPACK_OBJECT_STR:
		if (flags & KM_JSON) {
			j = json_loadb(o->via.str.ptr, o->via.str.size, JSON_DECODE_ANY, NULL);
			if (j)
				return j;
		}
		return str_to_json(o->via.str.ptr, o->via.str.size);
	case MSGPACK_OBJECT_BIN: {
		char *hex = malloc(2 * o->via.bin.size + 1);

		if (!hex)
			return NULL;
		audit__hex(hex, (const uint8_t *)o->via.bin.ptr, o->via.bin.size);
		j = json_string(hex);
		free(hex);
		return j;
	}
	case MSGPACK_OBJECT_ARRAY:
		j = json_array();
		for (uint32_t i = 0; j && i < o->via.array.size; i++)
			json_array_append_new(j, obj_to_json(&o->via.array.ptr[i], km, flags));
		return j;
	case MSGPACK_OBJECT_MAP:
		j = json_object();
		for (uint32_t i = 0; j && i < o->via.map.size; i++) {
			const msgpack_object_kv *kv = &o->via.map.ptr[i];
			const struct keymap *k = NULL;
			char key[128];

			if (kv->key.type != MSGPACK_OBJECT_STR)
				continue;
			snprintf(key, sizeof(key), "%.*s", (int)MIN(kv->key.via.str.size, 127u),
				 kv->key.via.str.ptr);
			for (const struct keymap *c = km; c && c->s; c++)
				if (streq(c->s, key)) {
					k = c;
					break;
				}
			/* Unknown keys (a newer writer) pass through under their own name:
			 * a dump hides nothing that is in the file. */
			json_object_set_new(j, k ? k->l : key,
					    obj_to_json(&kv->val, k ? k->child : NULL,
							k ? k->flags : 0));
		}
		return j;
	case MSGPACK_OBJECT_EXT:
	default:
		return json_null();
	}
}

static void set_time(json_t *j, uint64_t wall_ns)
{
	char buf[64];
	struct tm tm;
	time_t sec = (time_t)(wall_ns / 1000000000u);
	size_t n;

	json_object_set_new(j, "time_ns", u64_to_json(wall_ns, 0));
	gmtime_r(&sec, &tm);
	n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, sizeof(buf) - n, ".%09" PRIu64 "Z", wall_ns % 1000000000u);
	json_object_set_new(j, "time", json_string(buf));
}

json_t *audit_rec_to_json(const struct audit_rec *rec, const struct audit_timebase *tb)
{
	const struct keymap *km = NULL;
	json_t *j;
	uint64_t ts;
	int64_t err;

	if ((unsigned)rec->type < _AUDIT_REC_MAX)
		km = km_by_type[rec->type];
	j = obj_to_json(rec->obj, km, 0);
	if (!j || !json_is_object(j))
		return j;
	if (rec->type == AUDIT_REC_HDR && audit__get_u64(rec->obj, "wall", &ts))
		set_time(j, ts);
	else if (tb && tb->valid && audit__get_u64(rec->obj, "ts", &ts))
		set_time(j, tb->wall_ns + (ts - tb->mono_ns));
	if (rec->type == AUDIT_REC_SYS && audit__get_i64(rec->obj, "err", &err) && err > 0) {
		const char *name = strerrorname_np((int)err);

		if (name)
			json_object_set_new(j, "errno_name", json_string(name));
	}
	return j;
}
