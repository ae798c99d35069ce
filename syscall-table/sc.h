/* SPDX-License-Identifier: MIT */
/*
 * syscall-table: what moat knows about every system call, per architecture.
 *
 * The source of truth is data/syscalls.csv (one row per syscall, a column per ABI,
 * argument kinds, category and moat's handling). gen/gen-table.py turns it into C at
 * build time: sc-ids.h (the neutral enum, SC_openat ...) and sc-table.c. Handlers and
 * policy key on enum sc_id, never on raw numbers. Name <-> number lookups for arches
 * moat does not tabulate come from libseccomp.
 *
 * Everything here is pure: const tables and functions without I/O, safe from any thread.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sc-ids.h" /* generated: enum sc_id { SC_read, SC_write, ..., _SC_ID_MAX } */

/* What an argument word means. Decoders and the audit encoder switch on it. */
enum sc_arg_kind {
	SC_ARG_NONE = 0,
	SC_ARG_INT,      /* plain integer (signed) */
	SC_ARG_UINT,     /* plain unsigned integer, size, count */
	SC_ARG_FD,       /* file descriptor */
	SC_ARG_DIRFD,    /* file descriptor or AT_FDCWD */
	SC_ARG_PATH,     /* pointer to a NUL-terminated path */
	SC_ARG_STRING,   /* pointer to another NUL-terminated string (xattr name...) */
	SC_ARG_OFLAGS,   /* open(2) flags */
	SC_ARG_ATFLAGS,  /* AT_* flags */
	SC_ARG_FLAGS,    /* other flags word, printed in hex */
	SC_ARG_MODE,     /* mode_t */
	SC_ARG_SOCKADDR, /* pointer to struct sockaddr, the next argument is its length */
	SC_ARG_SOCKLEN,  /* socklen_t (by value) */
	SC_ARG_BUF,      /* pointer to a data buffer */
	SC_ARG_STRUCT,   /* pointer to a struct (stat, statx, open_how, msghdr, ...) */
	SC_ARG_PTR,      /* any other pointer */
	SC_ARG_ARGV,     /* pointer to a NULL-terminated array of string pointers */
	SC_ARG_PID,      /* process id */
	SC_ARG_SIGNAL,   /* signal number */
	_SC_ARG_KIND_MAX,
};

/* Category flags (a syscall may have several, like strace's TF/TN/TP classes). */
enum sc_category {
	SC_CAT_FS = 1u << 0,
	SC_CAT_NET = 1u << 1,
	SC_CAT_EXEC = 1u << 2,
	SC_CAT_PROC = 1u << 3,
	SC_CAT_MEM = 1u << 4,
	SC_CAT_TIME = 1u << 5,
	SC_CAT_IPC = 1u << 6,
	SC_CAT_SIGNAL = 1u << 7,
	SC_CAT_FD = 1u << 8,
	SC_CAT_SYS = 1u << 9, /* system administration: mount, reboot, modules, ... */
	SC_CAT_SECURITY = 1u << 10,
	SC_CAT_OTHER = 1u << 11,
};

/* What moat's seccomp filter does with the syscall. */
enum sc_handling {
	SC_NATIVE = 0, /* runs in the kernel at full speed */
	SC_NOTIFY,     /* sent to the supervisor, which emulates, denies or continues */
	SC_DENY,       /* refused in the filter with deny_errno */
	SC_KILL,       /* kills the process */
	SC_ARGS,       /* native, but with argument checks in the filter (clone flags, ioctl
	                  TIOCSTI, personality, seccomp NEW_LISTENER...): see note */
	_SC_HANDLING_MAX,
};

/* Namespaced mode without --strict-hide: the mount namespace holds the policy's view
 * with hidden content covered, so some notified rows can do with less. */
enum sc_fast {
	SC_FAST_SAME = 0,   /* as the handling column says */
	SC_FAST_NATIVE,     /* out of the notify set: the kernel's answer is the policy's */
	SC_FAST_NATIVE_RO,  /* a read-only open (flags in a register) is native where fanotify
	                       marks the stubs, else continued after the check; others notified,
	                       or native but for O_PATH where creates are native */
	SC_FAST_NATIVE_W,   /* creates or removes a name (not rename): native where nothing asked
	                       for the change set (the kernel's read-only mounts, the stubs'
	                       read-only binds and Landlock decide), else notified */
};

/*
 * What a notified call does with an object it names, per argument (the access column).
 * The one statement of each syscall's access: the supervisor's handlers, the socket
 * layer and `moat audit replay` read it here; vfs_want_of() (vfs.h) turns it into the
 * vfs's VFS_WANT_* bits.
 */
enum sc_access {
	SC_ACCESS_NONE = 0, /* the argument names nothing the policy decides */
	SC_ACCESS_LOOK,     /* metadata by name (stat, readlink): visibility only */
	SC_ACCESS_READ,
	SC_ACCESS_WRITE,    /* changes the object (chmod, truncate, setxattr ...) */
	SC_ACCESS_CREATE,   /* creates or removes the name */
	SC_ACCESS_EXEC,     /* runs it, or enters it (chdir) */
	SC_ACCESS_OPEN,     /* from the open flags (the flags argument, or open_how) */
	SC_ACCESS_AMODE,    /* from access(2)'s mode argument (R_OK, W_OK, X_OK) */
	SC_ACCESS_CONNECT,  /* a socket address connected to (stream) */
	SC_ACCESS_SEND,     /* a socket address sent to (datagram) */
	SC_ACCESS_BIND,     /* a socket address bound (bind, and listen's implicit bind) */
	_SC_ACCESS_MAX,
};

/* What happens to one syscall in one mode, for `moat syscalls --json`. */
/* namespaced: the stubs marked with fanotify (root started moat); native-writes: that,
 * and nothing asks for the change set (no --report, --audit, --cow, -v); continued-opens:
 * namespaced without those marks, or with --audit, where read-only opens are checked;
 * native-writes-unmarked: without the marks, nothing asking for the change set. */
enum sc_mode {
	SC_MODE_NAMESPACED,
	SC_MODE_NAMESPACED_NATIVE_WRITES,
	SC_MODE_NAMESPACED_NATIVE_WRITES_UNMARKED,
	SC_MODE_NAMESPACED_CONTINUED,
	SC_MODE_STRICT_HIDE,
	SC_MODE_UNNAMESPACED,
	_SC_MODE_MAX
};
const char *sc_mode_name(enum sc_mode m);

#define SC_MAX_ARGS 6

struct sc_entry {
	enum sc_id id;
	const char *name;
	int nr;                              /* number on this ABI */
	uint8_t nargs;
	uint8_t arg[SC_MAX_ARGS];            /* enum sc_arg_kind */
	uint16_t category;                   /* enum sc_category bits */
	uint8_t handling;                    /* enum sc_handling */
	int16_t deny_errno;                  /* for SC_DENY (and the refused case of SC_ARGS) */
	const char *note;                    /* one line: why this handling */
	bool unns_enosys;                    /* unnamespaced: refused with ENOSYS (host IPC) */
	uint8_t fast;                        /* enum sc_fast: namespaced unless --strict-hide */
	bool continues;                      /* notified, then CONTINUE after the check */
	const char *mode_note;               /* why a mode differs; NULL when none does */
	uint8_t access[SC_MAX_ARGS];         /* enum sc_access per argument */
};

/* AUDIT_ARCH_* values of the ABIs we tabulate. */
uint32_t sc_native_arch(void);
const char *sc_arch_name(uint32_t audit_arch);   /* "x86_64", "aarch64", NULL if unknown */
uint32_t sc_arch_by_name(const char *name);       /* 0 if unknown */

/*
 * Lookups; NULL when the arch or the syscall is unknown. O(1) by number. An id can be
 * absent on an ABI (open on aarch64) or on every ABI: CSV rows newer than the
 * libseccomp that numbered the table keep their policy but have no number yet. The
 * filter must treat a number sc_lookup() does not know as denied.
 */
const struct sc_entry *sc_lookup(uint32_t audit_arch, int nr);
const struct sc_entry *sc_by_name(uint32_t audit_arch, const char *name);
const struct sc_entry *sc_by_id(uint32_t audit_arch, enum sc_id id);
const char *sc_id_name(enum sc_id id);            /* "openat" */

/* Iterate an ABI's table in number order: for (i = 0; i < sc_count(a); i++) sc_at(a, i) */
size_t sc_count(uint32_t audit_arch);
const struct sc_entry *sc_at(uint32_t audit_arch, size_t i);

const char *sc_handling_name(enum sc_handling h);  /* "native", "notify", ... */
const char *sc_access_name(enum sc_access a);      /* "read", "create", ... ("-" for none) */
/* The index of the nth (from 0) argument that names an object (access not NONE), or -1:
 * the first and second path of rename, the address of connect or sendmsg. */
int sc_object_arg(const struct sc_entry *e, unsigned nth);
const char *sc_arg_kind_name(enum sc_arg_kind k);
/* Comma-separated category names into buf ("fs,fd"); returns buf. */
const char *sc_category_names(uint16_t cats, char *buf, size_t len);

/*
 * Decoders: render one argument value as text for the audit stream and the CLI.
 * Flag values are the build host's, which are the tracee's since every other ABI is
 * killed by the filter. Unknown bits are kept, printed in hex.
 * Return the number of bytes written (snprintf semantics, always NUL-terminated).
 * Pointers are printed as hex; strings must be copied by the caller first.
 */
int sc_format_oflags(uint64_t flags, char *buf, size_t len);   /* "O_RDONLY|O_CLOEXEC" */
int sc_format_atflags(uint64_t flags, char *buf, size_t len);  /* "AT_SYMLINK_NOFOLLOW" */
int sc_format_dirfd(int64_t fd, char *buf, size_t len);        /* "AT_FDCWD" or "3" */
int sc_format_arg(enum sc_arg_kind k, uint64_t v, char *buf, size_t len);

/* Errno names ("EACCES"), for messages and the audit stream. NULL if unknown. */
const char *sc_errno_name(int err);
int sc_errno_by_name(const char *name);   /* 0 if unknown */

/*
 * `moat syscalls [--arch A] [--json]`: print the table with moat's handling. audit_arch
 * 0 means sc_native_arch(); file NULL means stdout. JSON is an array of objects
 * {name, nr, arch, handling, errno (name or null), categories [], args [], note}.
 * Returns 0, -EINVAL (arch not tabulated), -ENOMEM or -EIO.
 */
int sc_print_table(uint32_t audit_arch, bool json, void *file /* FILE * */);
