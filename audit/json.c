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
	{ "pid", "pid" }, { "ppid", "ppid" }, { "tid", "tid" }, { "spid", "sandbox_pid" },
	{ "stid", "sandbox_tid" }, { "sppid", "sandbox_ppid" }, { "path", "path" },
	{ "sha", "sha256" }, { "argv", "argv" }, { "argvcut", "argv_truncated" },
	{ "dec", "decision" }, { "err", "errno" }, { "rule", "rule" }, { "st", "status" },
	{ "sig", "signal" }, { "core", "core_dumped" }, { "utime", "utime_ns" },
	{ "stime", "stime_ns" }, {},
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
		audit_hex(hex, (const uint8_t *)o->via.bin.ptr, o->via.bin.size);
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

/* ---- Elastic Common Schema (SCHEMA.md, "ECS") ---- */

#define ECS_VERSION "8.11.0"

static json_t *obj(json_t *parent, const char *key)
{
	json_t *o = json_object_get(parent, key);

	if (!o) {
		o = json_object();
		json_object_set_new(parent, key, o);
	}
	return o;
}

static void copy(json_t *to, const char *key, const json_t *from, const char *fkey)
{
	json_t *v = json_object_get(from, fkey);

	if (v && !json_is_null(v))
		json_object_set(to, key, v);
}

static bool in_list(const char *s, const char *const *list)
{
	for (; s && *list; list++)
		if (streq(s, *list))
			return true;
	return false;
}

/* event.category and event.type of a syscall record, as ECS allows them. */
static void sys_kind(const char *sc, const char *flags, const char **cat, const char **type)
{
	static const char *const net[] = { "connect", "bind", "sendto", "sendmsg", "sendmmsg",
					    NULL };
	static const char *const create[] = { "mkdir", "mkdirat", "mknod", "mknodat", "symlink",
					       "symlinkat", "link", "linkat", "creat", NULL };
	static const char *const del[] = { "unlink", "unlinkat", "rmdir", NULL };
	static const char *const change[] = {
		"rename", "renameat", "renameat2", "chmod", "fchmodat", "fchmodat2", "chown",
		"lchown", "fchownat", "truncate", "utime", "utimes", "futimesat", "utimensat",
		"setxattr", "lsetxattr", "removexattr", "lremovexattr", NULL,
	};
	static const char *const exec[] = { "execve", "execveat", NULL };

	*cat = "file";
	*type = "access";
	if (in_list(sc, net)) {
		*cat = "network";
		*type = "connection";
	} else if (in_list(sc, exec)) {
		*cat = "process";
		*type = "start";
	} else if (in_list(sc, create) || (flags && strstr(flags, "O_CREAT"))) {
		*type = "creation";
	} else if (in_list(sc, del)) {
		*type = "deletion";
	} else if (in_list(sc, change) || (flags && (strstr(flags, "O_WRONLY") ||
						    strstr(flags, "O_RDWR")))) {
		*type = "change";
	}
}

/* "10.0.0.1:443", "[::1]:53", "unix:/x" into destination.* */
static void set_destination(json_t *e, const char *addr)
{
	json_t *d = obj(e, "destination");
	const char *colon;

	if (strncmp(addr, "unix:", 5) == 0) {
		json_object_set_new(d, "address", json_string(addr));
		return;
	}
	colon = strrchr(addr, ':');
	if (!colon) {
		json_object_set_new(d, "address", json_string(addr));
		return;
	}
	if (addr[0] == '[' && colon > addr + 1 && colon[-1] == ']')
		json_object_set_new(d, "ip", json_stringn(addr + 1, (size_t)(colon - addr - 2)));
	else
		json_object_set_new(d, "ip", json_stringn(addr, (size_t)(colon - addr)));
	json_object_set(d, "address", json_object_get(d, "ip"));
	json_object_set_new(d, "port", json_integer(strtol(colon + 1, NULL, 10)));
}

json_t *audit_json_to_ecs(const json_t *rec, const json_t *hdr)
{
	const char *type = json_string_value(json_object_get(rec, "type"));
	json_t *e, *ev, *moat, *proc;

	if (!type || !(streq(type, "hdr") || streq(type, "sys") || streq(type, "proc") ||
		       streq(type, "ftr")))
		return NULL;
	e = json_object();
	if (!e)
		return NULL;
	copy(e, "@timestamp", rec, "time");
	json_object_set_new(obj(e, "ecs"), "version", json_string(ECS_VERSION));
	ev = obj(e, "event");
	json_object_set_new(ev, "kind", json_string("event"));
	json_object_set_new(ev, "module", json_string("moat"));
	json_object_set_new(ev, "dataset", json_string("moat.audit"));
	copy(ev, "sequence", rec, "seq");
	moat = obj(e, "moat");
	json_object_set_new(moat, "record_type", json_string(type));
	if (hdr) {
		json_t *host = obj(e, "host"), *labels = json_object();

		copy(moat, "run_id", hdr, "run_id");
		copy(moat, "mode", hdr, "mode");
		copy(moat, "policy_hash", hdr, "policy_hash");
		copy(obj(host, "os"), "kernel", hdr, "kernel");
		copy(host, "architecture", hdr, "arch");
		copy(labels, "session", hdr, "session");
		copy(labels, "tenant", hdr, "tenant");
		if (json_object_size(labels))
			json_object_set(e, "labels", labels);
		json_decref(labels);
		copy(obj(e, "agent"), "version", hdr, "moat_version");
		json_object_set_new(obj(e, "agent"), "type", json_string("moat"));
	}
	proc = obj(e, "process");

	if (streq(type, "hdr")) {
		json_t *args = json_object_get(rec, "argv");

		json_object_set_new(ev, "category", json_pack("[s]", "process"));
		json_object_set_new(ev, "type", json_pack("[s]", "start"));
		json_object_set_new(ev, "action", json_string("moat-run-start"));
		if (args) {
			json_object_set(proc, "args", args);
			json_object_set_new(proc, "args_count", json_integer((json_int_t)json_array_size(args)));
		}
		copy(proc, "working_directory", rec, "cwd");
		copy(moat, "features", rec, "features");
	} else if (streq(type, "ftr")) {
		json_int_t wall = json_integer_value(json_object_get(rec, "wall_ns"));

		json_object_set_new(ev, "category", json_pack("[s]", "process"));
		json_object_set_new(ev, "type", json_pack("[s]", "end"));
		json_object_set_new(ev, "action", json_string("moat-run-end"));
		json_object_set_new(ev, "duration", json_integer(wall));
		/* the footer has no time of its own: the run's start plus its duration */
		if (json_integer_value(json_object_get(hdr, "time_ns")) > 0 && wall >= 0) {
			json_t *t = json_object();

			set_time(t, (uint64_t)json_integer_value(json_object_get(hdr, "time_ns")) +
					    (uint64_t)wall);
			copy(e, "@timestamp", t, "time");
			json_decref(t);
		}
		copy(proc, "exit_code", rec, "exit_status");
		copy(ev, "reason", rec, "reason");
		copy(moat, "changes", rec, "changes");
		copy(moat, "dropped", rec, "dropped");
	} else if (streq(type, "sys")) {
		const char *sc = json_string_value(json_object_get(rec, "syscall"));
		const char *flags = json_string_value(json_object_get(rec, "flags"));
		const char *dec = json_string_value(json_object_get(rec, "decision"));
		const char *addr = json_string_value(json_object_get(rec, "addr"));
		const char *cat, *ty;
		json_int_t err = json_integer_value(json_object_get(rec, "errno"));
		bool denied = dec && (streq(dec, "denied") || streq(dec, "killed"));

		sys_kind(sc, flags, &cat, &ty);
		json_object_set_new(ev, "category", json_pack("[s]", cat));
		json_object_set_new(ev, "type", json_pack("[ss]", ty, denied ? "denied" : "allowed"));
		copy(ev, "action", rec, "syscall");
		json_object_set_new(ev, "outcome", json_string(denied || err ? "failure" : "success"));
		copy(ev, "duration", rec, "latency_ns");
		copy(proc, "pid", rec, "pid");
		copy(obj(proc, "thread"), "id", rec, "tid");
		copy(proc, "name", rec, "comm");
		if (json_object_get(rec, "resolved") || json_object_get(rec, "path")) {
			json_t *f = obj(e, "file");

			copy(f, "path", rec, json_object_get(rec, "resolved") ? "resolved" : "path");
		}
		if (addr)
			set_destination(e, addr);
		copy(obj(e, "rule"), "name", rec, "rule");
		if (err) {
			copy(obj(e, "error"), "code", rec, "errno_name");
			if (!json_object_get(json_object_get(e, "error"), "code"))
				json_object_set_new(obj(e, "error"), "code", json_integer(err));
		}
		copy(moat, "decision", rec, "decision");
		copy(moat, "path", rec, "path");
		copy(moat, "path2", rec, "path2");
		copy(moat, "flags", rec, "flags");
		copy(moat, "result", rec, "result");
		copy(moat, "syscall_nr", rec, "nr");
		copy(moat, "sandbox_pid", rec, "sandbox_pid");
		copy(moat, "sandbox_tid", rec, "sandbox_tid");
		copy(moat, "stack", rec, "stack");
	} else {
		const char *pev = json_string_value(json_object_get(rec, "event"));
		const char *dec = json_string_value(json_object_get(rec, "decision"));
		json_t *args = json_object_get(rec, "argv");

		json_object_set_new(ev, "category", json_pack("[s]", "process"));
		copy(ev, "action", rec, "event");
		copy(proc, "pid", rec, "pid");
		copy(obj(proc, "thread"), "id", rec, "tid");
		if (json_integer_value(json_object_get(rec, "ppid")))
			copy(obj(proc, "parent"), "pid", rec, "ppid");
		copy(moat, "sandbox_pid", rec, "sandbox_pid");
		copy(moat, "sandbox_tid", rec, "sandbox_tid");
		copy(moat, "sandbox_ppid", rec, "sandbox_ppid");
		if (pev && streq(pev, "exec")) {
			bool ok = dec && !streq(dec, "denied") && !json_integer_value(json_object_get(rec, "errno"));

			json_object_set_new(ev, "type", json_pack("[ss]", "start",
								   dec && streq(dec, "denied") ? "denied" : "allowed"));
			json_object_set_new(ev, "outcome", json_string(ok ? "success" : "failure"));
			copy(proc, "executable", rec, "path");
			if (args) {
				json_t *a0 = json_array_get(args, 0);
				const char *s0 = json_string_value(a0), *b = s0 ? strrchr(s0, '/') : NULL;

				json_object_set(proc, "args", args);
				json_object_set_new(proc, "args_count", json_integer((json_int_t)json_array_size(args)));
				if (s0)
					json_object_set_new(proc, "name", json_string(b ? b + 1 : s0));
			}
			copy(obj(e, "rule"), "name", rec, "rule");
			copy(moat, "decision", rec, "decision");
			copy(moat, "argv_truncated", rec, "argv_truncated");
			if (json_integer_value(json_object_get(rec, "errno"))) {
				int en = (int)json_integer_value(json_object_get(rec, "errno"));
				const char *name = strerrorname_np(en);

				json_object_set_new(obj(e, "error"), "code",
						    name ? json_string(name) : json_integer(en));
			}
		} else if (pev && streq(pev, "exit")) {
			json_int_t st = json_integer_value(json_object_get(rec, "status"));
			json_int_t sig = json_integer_value(json_object_get(rec, "signal"));

			json_object_set_new(ev, "type", json_pack("[s]", "end"));
			/* ECS wants one exit code: a signal's death reads as the shell says it */
			json_object_set_new(proc, "exit_code", json_integer(sig ? 128 + sig : st));
			copy(moat, "signal", rec, "signal");
			copy(moat, "core_dumped", rec, "core_dumped");
			copy(moat, "utime_ns", rec, "utime_ns");
			copy(moat, "stime_ns", rec, "stime_ns");
		} else {
			json_object_set_new(ev, "type", json_pack("[s]", "start"));
		}
	}
	if (json_object_size(proc) == 0)
		json_object_del(e, "process");
	return e;
}
