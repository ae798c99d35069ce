/* SPDX-License-Identifier: MIT */
/*
 * Lookups over the generated tables (sc-table.c), argument formatters and the
 * `moat syscalls` printer. Everything but sc_print_table() is pure and allocation-free,
 * so the notification path may call it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <linux/audit.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macros.h"
#include "sc-internal.h"
#include "sc.h"

/*
 * The kernel's O_LARGEFILE. glibc defines O_LARGEFILE as 0 for 64-bit programs
 * because the kernel forces it there, but a tracee can still pass the raw bit.
 */
#if defined(__x86_64__)
#define SC__O_LARGEFILE 0100000
#elif defined(__aarch64__)
#define SC__O_LARGEFILE 0400000
#else
#define SC__O_LARGEFILE 0
#endif

#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef AT_STATX_FORCE_SYNC
#define AT_STATX_FORCE_SYNC 0x2000
#endif
#ifndef AT_STATX_DONT_SYNC
#define AT_STATX_DONT_SYNC 0x4000
#endif

static const struct sc__abi *abi_find(uint32_t audit_arch)
{
	for (size_t i = 0; i < sc__n_abis; i++)
		if (sc__abis[i].audit_arch == audit_arch)
			return &sc__abis[i];
	return NULL;
}

uint32_t sc_native_arch(void)
{
#if defined(__x86_64__) && !defined(__ILP32__)
	return AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
	return AUDIT_ARCH_AARCH64;
#else
	return 0; /* not a tabulated ABI: the filter builder must refuse to run */
#endif
}

const char *sc_arch_name(uint32_t audit_arch)
{
	const struct sc__abi *abi = abi_find(audit_arch);

	return abi ? abi->name : NULL;
}

uint32_t sc_arch_by_name(const char *name)
{
	/* Debian's and Go's spellings too, as users type them on the command line. */
	static const struct {
		const char *alias;
		uint32_t arch;
	} aliases[] = {
		{ "amd64", AUDIT_ARCH_X86_64 },
		{ "arm64", AUDIT_ARCH_AARCH64 },
	};

	if (!name)
		return 0;
	for (size_t i = 0; i < sc__n_abis; i++)
		if (streq(sc__abis[i].name, name))
			return sc__abis[i].audit_arch;
	for (size_t i = 0; i < ELEMENTSOF(aliases); i++)
		if (streq(aliases[i].alias, name))
			return aliases[i].arch;
	return 0;
}

const struct sc_entry *sc_lookup(uint32_t audit_arch, int nr)
{
	const struct sc__abi *abi = abi_find(audit_arch);
	int idx;

	/* nr comes straight from seccomp_data: check both ends before indexing. */
	if (!abi || nr < 0 || (size_t)nr >= abi->nr_count)
		return NULL;
	idx = abi->by_nr[nr];
	return idx < 0 ? NULL : &abi->table[idx];
}

static int cmp_id_name(const void *key, const void *elem)
{
	return strcmp(key, *(const char *const *)elem);
}

/* sc__id_names is sorted by name (the generator sorts the enum), so bsearch works. */
static enum sc_id id_by_name(const char *name)
{
	const char *const *p;

	if (!name)
		return _SC_ID_INVALID;
	p = bsearch(name, sc__id_names, _SC_ID_MAX, sizeof(sc__id_names[0]), cmp_id_name);
	return p ? (enum sc_id)(p - sc__id_names) : _SC_ID_INVALID;
}

const struct sc_entry *sc_by_id(uint32_t audit_arch, enum sc_id id)
{
	const struct sc__abi *abi = abi_find(audit_arch);
	int idx;

	if (!abi || (int)id < 0 || id >= _SC_ID_MAX)
		return NULL;
	idx = abi->by_id[id];
	return idx < 0 ? NULL : &abi->table[idx];
}

const struct sc_entry *sc_by_name(uint32_t audit_arch, const char *name)
{
	return sc_by_id(audit_arch, id_by_name(name));
}

const char *sc_id_name(enum sc_id id)
{
	if ((int)id < 0 || id >= _SC_ID_MAX)
		return NULL;
	return sc__id_names[id];
}

size_t sc_count(uint32_t audit_arch)
{
	const struct sc__abi *abi = abi_find(audit_arch);

	return abi ? abi->count : 0;
}

const struct sc_entry *sc_at(uint32_t audit_arch, size_t i)
{
	const struct sc__abi *abi = abi_find(audit_arch);

	return abi && i < abi->count ? &abi->table[i] : NULL;
}

static const char *const handling_names[_SC_HANDLING_MAX] = {
	[SC_NATIVE] = "native", [SC_NOTIFY] = "notify", [SC_DENY] = "deny",
	[SC_KILL] = "kill",     [SC_ARGS] = "args",
};

/* The name of value i of an enum, or NULL when i is none of its values. */
static const char *enum_name(const char *const *names, size_t n, int i)
{
	return i >= 0 && (size_t)i < n ? names[i] : NULL;
}

const char *sc_handling_name(enum sc_handling h)
{
	return enum_name(handling_names, _SC_HANDLING_MAX, (int)h);
}

/* The same spellings as the CSV's access column (gen-table.py's ACCESS). */
static const char *const access_names[_SC_ACCESS_MAX] = {
	[SC_ACCESS_NONE] = "-",         [SC_ACCESS_LOOK] = "look",   [SC_ACCESS_READ] = "read",
	[SC_ACCESS_WRITE] = "write",    [SC_ACCESS_CREATE] = "create", [SC_ACCESS_EXEC] = "exec",
	[SC_ACCESS_OPEN] = "open",      [SC_ACCESS_AMODE] = "amode", [SC_ACCESS_CONNECT] = "connect",
	[SC_ACCESS_SEND] = "send",      [SC_ACCESS_BIND] = "bind",
};

const char *sc_access_name(enum sc_access a)
{
	return enum_name(access_names, _SC_ACCESS_MAX, (int)a);
}

int sc_object_arg(const struct sc_entry *e, unsigned nth)
{
	for (unsigned i = 0; e && i < e->nargs && i < SC_MAX_ARGS; i++)
		if (e->access[i] != SC_ACCESS_NONE && nth-- == 0)
			return (int)i;
	return -1;
}

/* The same spellings as the CSV's args column (gen-table.py's KINDS). */
static const char *const kind_names[_SC_ARG_KIND_MAX] = {
	[SC_ARG_NONE] = "none",       [SC_ARG_INT] = "int",         [SC_ARG_UINT] = "uint",
	[SC_ARG_FD] = "fd",           [SC_ARG_DIRFD] = "dirfd",     [SC_ARG_PATH] = "path",
	[SC_ARG_STRING] = "string",   [SC_ARG_OFLAGS] = "oflags",   [SC_ARG_ATFLAGS] = "atflags",
	[SC_ARG_FLAGS] = "flags",     [SC_ARG_MODE] = "mode",       [SC_ARG_SOCKADDR] = "sockaddr",
	[SC_ARG_SOCKLEN] = "socklen", [SC_ARG_BUF] = "buf",         [SC_ARG_STRUCT] = "struct",
	[SC_ARG_PTR] = "ptr",         [SC_ARG_ARGV] = "argv",       [SC_ARG_PID] = "pid",
	[SC_ARG_SIGNAL] = "signal",
};

const char *sc_arg_kind_name(enum sc_arg_kind k)
{
	return enum_name(kind_names, _SC_ARG_KIND_MAX, (int)k);
}

/* Bit i of enum sc_category; the same spellings as the CSV's categories column. */
static const char *const category_names[] = {
	"fs", "net", "exec", "proc", "mem", "time", "ipc", "signal", "fd", "sys", "security", "other",
};

/*
 * A bounded appender with snprintf semantics: pos counts what would have been written,
 * the buffer always ends in NUL when len > 0.
 */
struct sbuf {
	char *buf;
	size_t len;
	size_t pos;
};

_printf_(2, 3) static void sbuf_printf(struct sbuf *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(s->pos < s->len ? s->buf + s->pos : NULL, s->pos < s->len ? s->len - s->pos : 0,
		      fmt, ap);
	va_end(ap);
	if (n > 0)
		s->pos += (size_t)n;
}

static int sbuf_done(struct sbuf *s)
{
	if (s->len > 0 && s->pos == 0)
		s->buf[0] = '\0';
	return s->pos > INT32_MAX ? INT32_MAX : (int)s->pos;
}

const char *sc_category_names(uint16_t cats, char *buf, size_t len)
{
	struct sbuf s = { buf, len, 0 };

	for (size_t i = 0; i < ELEMENTSOF(category_names); i++)
		if (cats & (1u << i))
			sbuf_printf(&s, "%s%s", s.pos ? "," : "", category_names[i]);
	cats &= (uint16_t) ~((1u << ELEMENTSOF(category_names)) - 1);
	if (cats)
		sbuf_printf(&s, "%s0x%x", s.pos ? "," : "", cats);
	sbuf_done(&s);
	return buf;
}

struct flag_name {
	uint64_t mask;
	const char *name;
};

/* Print the named masks found in flags (table order decides: wider masks first), then
 * whatever is left in hex. */
static void format_flags(struct sbuf *s, uint64_t flags, const struct flag_name *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].mask && (flags & t[i].mask) == t[i].mask) {
			sbuf_printf(s, "%s%s", s->pos ? "|" : "", t[i].name);
			flags &= ~t[i].mask;
		}
	if (flags)
		sbuf_printf(s, "%s0x%" PRIx64, s->pos ? "|" : "", flags);
}

/*
 * Flag values are the build host's, which are the tracee's: the filter kills every ABI
 * but the native one.
 */
int sc_format_oflags(uint64_t flags, char *buf, size_t len)
{
	/* O_TMPFILE contains O_DIRECTORY and O_SYNC contains O_DSYNC: the wider first. */
	static const struct flag_name t[] = {
		{ O_CREAT, "O_CREAT" },
		{ O_EXCL, "O_EXCL" },
		{ O_NOCTTY, "O_NOCTTY" },
		{ O_TRUNC, "O_TRUNC" },
		{ O_APPEND, "O_APPEND" },
		{ O_NONBLOCK, "O_NONBLOCK" },
		{ O_SYNC, "O_SYNC" },
		{ O_DSYNC, "O_DSYNC" },
		{ O_ASYNC, "O_ASYNC" },
		{ O_DIRECT, "O_DIRECT" },
		{ SC__O_LARGEFILE, "O_LARGEFILE" },
		{ O_TMPFILE, "O_TMPFILE" },
		{ O_DIRECTORY, "O_DIRECTORY" },
		{ O_NOFOLLOW, "O_NOFOLLOW" },
		{ O_NOATIME, "O_NOATIME" },
		{ O_CLOEXEC, "O_CLOEXEC" },
		{ O_PATH, "O_PATH" },
	};
	static const char *const acc[] = { "O_RDONLY", "O_WRONLY", "O_RDWR", "O_ACCMODE" };
	struct sbuf s = { buf, len, 0 };

	sbuf_printf(&s, "%s", acc[flags & O_ACCMODE]);
	format_flags(&s, flags & ~(uint64_t)O_ACCMODE, t, ELEMENTSOF(t));
	return sbuf_done(&s);
}

int sc_format_atflags(uint64_t flags, char *buf, size_t len)
{
	/* 0x200 is AT_REMOVEDIR for unlinkat and AT_EACCESS for faccessat*: without the
	 * syscall we print the unlinkat meaning, the one that destroys something. */
	static const struct flag_name t[] = {
		{ AT_SYMLINK_NOFOLLOW, "AT_SYMLINK_NOFOLLOW" },
		{ AT_REMOVEDIR, "AT_REMOVEDIR" },
		{ AT_SYMLINK_FOLLOW, "AT_SYMLINK_FOLLOW" },
		{ AT_NO_AUTOMOUNT, "AT_NO_AUTOMOUNT" },
		{ AT_EMPTY_PATH, "AT_EMPTY_PATH" },
		{ AT_STATX_FORCE_SYNC, "AT_STATX_FORCE_SYNC" },
		{ AT_STATX_DONT_SYNC, "AT_STATX_DONT_SYNC" },
		{ AT_RECURSIVE, "AT_RECURSIVE" },
	};
	struct sbuf s = { buf, len, 0 };

	if (flags == 0)
		sbuf_printf(&s, "0");
	else
		format_flags(&s, flags, t, ELEMENTSOF(t));
	return sbuf_done(&s);
}

int sc_format_dirfd(int64_t fd, char *buf, size_t len)
{
	/* The kernel reads dirfd as an int: the upper half of the register is ignored. */
	int32_t v = (int32_t)(uint32_t)(uint64_t)fd;

	if (v == AT_FDCWD)
		return snprintf(buf, len, "AT_FDCWD");
	return snprintf(buf, len, "%" PRId32, v);
}

int sc_format_arg(enum sc_arg_kind k, uint64_t v, char *buf, size_t len)
{
	switch (k) {
	case SC_ARG_NONE:
		return snprintf(buf, len, "%s", "");
	case SC_ARG_INT:
		return snprintf(buf, len, "%" PRId64, (int64_t)v);
	case SC_ARG_UINT:
	case SC_ARG_SOCKLEN:
		return snprintf(buf, len, "%" PRIu64, v);
	case SC_ARG_FD:
	case SC_ARG_PID:
		return snprintf(buf, len, "%" PRId32, (int32_t)(uint32_t)v);
	case SC_ARG_DIRFD:
		return sc_format_dirfd((int64_t)v, buf, len);
	case SC_ARG_OFLAGS:
		return sc_format_oflags(v, buf, len);
	case SC_ARG_ATFLAGS:
		return sc_format_atflags(v, buf, len);
	case SC_ARG_MODE:
		return snprintf(buf, len, "0%" PRIo64, v);
	case SC_ARG_SIGNAL: {
		const char *abbrev = v > 0 && v < 65 ? sigabbrev_np((int)v) : NULL;

		if (abbrev)
			return snprintf(buf, len, "SIG%s", abbrev);
		return snprintf(buf, len, "%" PRId64, (int64_t)v);
	}
	case SC_ARG_FLAGS:
		return v ? snprintf(buf, len, "0x%" PRIx64, v) : snprintf(buf, len, "0");
	case SC_ARG_PATH:
	case SC_ARG_STRING:
	case SC_ARG_SOCKADDR:
	case SC_ARG_BUF:
	case SC_ARG_STRUCT:
	case SC_ARG_PTR:
	case SC_ARG_ARGV:
		return v ? snprintf(buf, len, "0x%" PRIx64, v) : snprintf(buf, len, "NULL");
	case _SC_ARG_KIND_MAX:
	default:
		return snprintf(buf, len, "0x%" PRIx64, v);
	}
}

const char *sc_errno_name(int err)
{
	if (err <= 0)
		return NULL;
	return strerrorname_np(err);
}

int sc_errno_by_name(const char *name)
{
	/* Spellings glibc folds into another name, which strerrorname_np never returns. */
	static const struct {
		const char *alias;
		int err;
	} aliases[] = {
		{ "EWOULDBLOCK", EWOULDBLOCK },
		{ "EDEADLOCK", EDEADLOCK },
		{ "ENOTSUP", ENOTSUP },
	};

	if (!name || name[0] != 'E')
		return 0;
	for (size_t i = 0; i < ELEMENTSOF(aliases); i++)
		if (streq(aliases[i].alias, name))
			return aliases[i].err;
	/* Linux errno values stay below 4096 (MAX_ERRNO); user-visible ones below 256. */
	for (int e = 1; e < 256; e++) {
		const char *n = strerrorname_np(e);

		if (n && streq(n, name))
			return e;
	}
	return 0;
}

const char *sc_mode_name(enum sc_mode m)
{
	static const char *const names[_SC_MODE_MAX] = {
		[SC_MODE_NAMESPACED] = "namespaced",
		[SC_MODE_NAMESPACED_NATIVE_WRITES] = "namespaced-native-writes",
		[SC_MODE_NAMESPACED_NATIVE_WRITES_UNMARKED] = "namespaced-native-writes-unmarked",
		[SC_MODE_NAMESPACED_CONTINUED] = "namespaced-continued-opens",
		[SC_MODE_STRICT_HIDE] = "namespaced-strict-hide",
		[SC_MODE_UNNAMESPACED] = "unnamespaced",
	};

	return (unsigned)m < _SC_MODE_MAX ? names[m] : NULL;
}

/* The class of one row in one mode (native, continue-after-check, emulated, denied,
 * killed, register-checked) and why, as the filter (interposer/filter.c) and the
 * dispatcher read the same columns. */
static json_t *mode_json(const struct sc_entry *e, enum sc_mode m)
{
	const char *cls, *why = e->note;

	if (m == SC_MODE_UNNAMESPACED && e->unns_enosys)
		return json_pack("{s:s, s:s, s:s}", "class", "denied", "errno", "ENOSYS", "why",
				 e->mode_note);
	switch ((enum sc_handling)e->handling) {
	case SC_NOTIFY: {
		/* a declaration may not follow a label before C23 (clang refuses it) */
		bool nwu = m == SC_MODE_NAMESPACED_NATIVE_WRITES_UNMARKED;
		bool nw = m == SC_MODE_NAMESPACED_NATIVE_WRITES || nwu;
		bool ns = m == SC_MODE_NAMESPACED || m == SC_MODE_NAMESPACED_CONTINUED || nw;

		if (ns && e->fast == SC_FAST_NATIVE)
			cls = "native", why = e->mode_note;
		else if (nw && e->fast == SC_FAST_NATIVE_W)
			cls = "native", why = e->mode_note;
		else if (e->continues)
			cls = "continue-after-check";
		else if (nwu && e->fast == SC_FAST_NATIVE_RO)
			cls = "native-when-writing", why = e->mode_note;
		else if (nw && e->fast == SC_FAST_NATIVE_RO)
			cls = "native-unless-O_PATH", why = e->mode_note;
		else if (m == SC_MODE_NAMESPACED && e->fast == SC_FAST_NATIVE_RO)
			cls = "native-when-read-only", why = e->mode_note;
		else if (ns && e->fast == SC_FAST_NATIVE_RO)
			cls = "continue-after-check", why = e->mode_note;
		else if (e->fast == SC_FAST_NATIVE_RO)
			/* unnamespaced: continued only where Landlock's read set is carved,
			 * which the default profile's shared /tmp rules out */
			cls = "emulated", why = e->mode_note;
		else
			cls = "emulated";
		break;
	}
	case SC_DENY:
		cls = "denied";
		break;
	case SC_KILL:
		cls = "killed";
		break;
	case SC_ARGS:
		cls = e->continues ? "continue-after-check" : "register-checked";
		break;
	case SC_NATIVE:
	case _SC_HANDLING_MAX:
	default:
		cls = "native";
		break;
	}
	return json_pack("{s:s, s:s}", "class", cls, "why", why);
}

static json_t *entry_json(const struct sc__abi *abi, const struct sc_entry *e)
{
	json_t *cats = json_array(), *args = json_array(), *modes = json_object(), *o;

	if (!cats || !args || !modes)
		goto fail;
	for (enum sc_mode m = 0; m < _SC_MODE_MAX; m++)
		if (json_object_set_new(modes, sc_mode_name(m), mode_json(e, m)) < 0)
			goto fail;
	for (size_t i = 0; i < ELEMENTSOF(category_names); i++)
		if (e->category & (1u << i))
			if (json_array_append_new(cats, json_string(category_names[i])) < 0)
				goto fail;
	for (size_t i = 0; i < e->nargs && i < SC_MAX_ARGS; i++)
		if (json_array_append_new(args, json_string(sc_arg_kind_name(e->arg[i]))) < 0)
			goto fail;
	o = json_pack("{s:s, s:i, s:s, s:s, s:o?, s:o, s:o, s:s, s:o}", "name", e->name, "nr",
		      e->nr, "arch", abi->name, "handling", sc_handling_name(e->handling), "errno",
		      e->deny_errno ? json_string(sc_errno_name(e->deny_errno)) : NULL,
		      "categories", cats, "args", args, "note", e->note, "modes", modes);
	/* json_pack steals the "o" references, even on failure (jansson >= 2.11). */
	return o;
fail:
	json_decref(cats);
	json_decref(args);
	json_decref(modes);
	return NULL;
}

/* audit_arch 0 means the build host's ABI. Returns 0, -EINVAL for an unknown ABI,
 * -ENOMEM or -EIO. */
int sc_print_table(uint32_t audit_arch, bool json, void *file)
{
	FILE *f = file ? file : stdout;
	const struct sc__abi *abi = abi_find(audit_arch ? audit_arch : sc_native_arch());

	if (!abi)
		return -EINVAL;

	if (json) {
		json_t *root = json_array();

		if (!root)
			return -ENOMEM;
		for (size_t i = 0; i < abi->count; i++) {
			json_t *o = entry_json(abi, &abi->table[i]);

			if (!o || json_array_append_new(root, o) < 0) {
				json_decref(root);
				return -ENOMEM;
			}
		}
		if (json_dumpf(root, f, JSON_INDENT(2)) < 0) {
			json_decref(root);
			return -EIO;
		}
		json_decref(root);
		fputc('\n', f);
	} else {
		fprintf(f, "# %s: %zu syscalls\n", abi->name, abi->count);
		fprintf(f, "%4s  %-24s %-7s %-8s %-18s %s\n", "NR", "NAME", "HANDLE", "ERRNO",
			"CATEGORIES", "NOTE");
		for (size_t i = 0; i < abi->count; i++) {
			const struct sc_entry *e = &abi->table[i];
			const char *en = e->deny_errno ? sc_errno_name(e->deny_errno) : NULL;
			const char *hn = sc_handling_name(e->handling);
			char cats[128];

			fprintf(f, "%4d  %-24s %-7s %-8s %-18s %s\n", e->nr, e->name,
				hn ? hn : "?", en ? en : "-",
				sc_category_names(e->category, cats, sizeof(cats)), e->note);
		}
	}
	return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}
