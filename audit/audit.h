/* SPDX-License-Identifier: MIT */
/*
 * audit: the decision stream. SCHEMA.md beside this file is the record reference.
 *
 * Writer lifecycle: audit_writer_open() -> audit_hdr() once -> audit_sys() / audit_proc()
 * from any supervisor thread -> audit_writer_close(&ftr). Records are encoded with
 * msgpack into an in-memory buffer and handed to a writer thread that compresses them
 * into zstd frames (a frame ends every 256 KiB or 1 s, with content checksums, and at
 * once after a denial), so the notification hot path never waits on the disk.
 *
 * The string pointers in the record structs are borrowed for the duration of the call.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct audit_writer;

struct audit_opts {
	const char *session;      /* --session, may be NULL */
	const char *tenant;       /* --tenant, may be NULL */
	const char *key_path;     /* --audit-key: Ed25519 secret key file, or NULL */
	bool stacks_all;          /* --audit-stacks all */
	int zstd_level;           /* 0 = default */
};

struct audit_feature {
	const char *name;         /* "SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP", "landlock", ... */
	bool present;
	const char *detail;       /* "ABI 7", "fallback: ...", may be NULL */
};

struct audit_hdr {
	const char *moat_version;
	const char *run_id;
	const char *const *argv;
	const char *cwd;
	const char *const *env_names;   /* names only, never values */
	const char *policy_json;        /* canonical JSON */
	const char *policy_hash;        /* hex sha256 of policy_json */
	const char *mode;               /* "namespaced" | "unnamespaced" */
	const char *kernel;             /* uname -r */
	const char *arch;               /* "x86_64" */
	const struct audit_feature *features;
	size_t n_features;
	uint64_t start_wall_ns;
	uint64_t start_mono_ns;
};

enum audit_decision {
	AUDIT_NATIVE,
	AUDIT_EMULATED,
	AUDIT_DENIED,
	AUDIT_CONTINUED,
	AUDIT_KILLED,
	_AUDIT_DECISION_MAX,
};

struct audit_frame {             /* one stack frame of a denied call */
	uint64_t ip;
	const char *module;       /* path of the mapped object, may be NULL */
	const char *build_id;     /* hex, may be NULL */
	const char *symbol;       /* may be NULL */
	uint64_t offset;          /* from symbol, or from the module's base without one */
};

struct audit_sys {
	uint64_t mono_ns;
	pid_t pid, tid;                 /* host ids */
	pid_t sandbox_pid, sandbox_tid; /* as the sandbox sees them (0 if unknown) */
	const char *comm;
	const char *syscall;            /* name */
	int nr;
	uint64_t args[6];
	const char *path;               /* as the program gave it, or NULL */
	const char *resolved;           /* canonical virtual path, or NULL */
	const char *path2;              /* second path (rename, link, symlink target), or NULL */
	const char *addr;               /* socket address as text, or NULL */
	const char *flags;              /* decoded flags ("O_RDONLY|O_CLOEXEC"), or NULL */
	enum audit_decision decision;
	const char *rule;
	int64_t result;                 /* return value when it succeeded */
	int err;                        /* errno given to the program, 0 if none */
	uint64_t latency_ns;
	const struct audit_frame *stack;
	size_t n_stack;
};

enum audit_proc_event { AUDIT_PROC_FORK, AUDIT_PROC_EXEC, AUDIT_PROC_EXIT };

struct audit_proc {
	enum audit_proc_event event;
	uint64_t mono_ns;
	pid_t pid, ppid;
	const char *path;               /* exec: binary */
	const uint8_t *sha256;          /* exec: 32 bytes, or NULL */
	int status;                     /* exit: exit code, or -1 */
	int signal;                     /* exit: terminating signal, or 0 */
};

struct audit_change {
	const char *kind;               /* "created" | "written" | "deleted" | "renamed" */
	const char *path;
	const char *old_path;
	uint64_t size;
	const uint8_t *sha256;          /* 32 bytes or NULL */
};

struct audit_ftr {
	int exit_status;
	const char *reason;             /* "exited", "signal", "timeout", "memory", ... */
	uint64_t wall_ns, cpu_ns;
	uint64_t peak_memory;
	const struct audit_change *changes;
	size_t n_changes;
};

int audit_writer_open(const char *path, const struct audit_opts *opts,
                      struct audit_writer **ret);
int audit_hdr(struct audit_writer *w, const struct audit_hdr *h);
int audit_sys(struct audit_writer *w, const struct audit_sys *s);
int audit_proc(struct audit_writer *w, const struct audit_proc *p);
/* Writes the footer (per-syscall totals are kept by the writer itself), the last frame and
 * the signature; frees w. Returns the first error the writer thread met, if any. */
int audit_writer_close(struct audit_writer *w, const struct audit_ftr *f);
bool audit_wants_stacks(const struct audit_writer *w, enum audit_decision d);

/* `moat audit SUBCOMMAND ...`: argv[0] is the subcommand. Returns the exit status. */
int audit_cli(int argc, char **argv);
