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
#include <stdio.h>
#include <sys/types.h>

#include <jansson.h>
#include <msgpack.h>

#include "error.h"

struct audit_writer;

struct audit_opts {
	const char *session;      /* --session, may be NULL */
	const char *tenant;       /* --tenant, may be NULL */
	const char *key_path;     /* --audit-key: Ed25519 secret key file, or NULL */
	bool stacks_all;          /* --audit-stacks all */
	int zstd_level;           /* 0 = default */
	/* Tuning, mostly for tests; 0 selects the documented default. */
	size_t buffer_bytes;      /* bound of the pending-record buffer (default 4 MiB) */
	size_t frame_bytes;       /* end a frame after this many record bytes (256 KiB) */
	unsigned frame_ms;        /* end a frame this long after its first record (1000) */
};

struct audit_feature {
	const char *name;         /* "SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP", "landlock", ... */
	bool present;
	const char *detail;       /* "ABI 7", "fallback: ...", may be NULL */
};

/* Room for a run id: up to 64 characters of [A-Za-z0-9._:-], and the NUL. */
#define AUDIT_RUN_ID_MAX 65

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
	/* Filled by the reader only; the writer takes these from struct audit_opts. */
	const char *session, *tenant;
	bool stacks_all;
	unsigned schema;
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
	pid_t pid, ppid;                /* host ids (pid: the thread group) */
	pid_t tid;                      /* host id of the thread that forked, exec'd, exited */
	pid_t sandbox_pid, sandbox_tid, sandbox_ppid; /* as the sandbox sees them, 0 if unknown */
	const char *path;               /* exec: binary */
	const uint8_t *sha256;          /* exec: 32 bytes, or NULL */
	const char *const *argv;        /* exec: NULL-terminated, or NULL */
	bool argv_truncated;            /* exec: argv was cut (count or bytes) */
	enum audit_decision decision;   /* exec: how the call was decided */
	int err;                        /* exec: errno given to the program, 0 if none */
	const char *rule;               /* exec: the rule that decided, or NULL */
	int status;                     /* exit: exit code, or -1 */
	int signal;                     /* exit: terminating signal, or 0 */
	bool core;                      /* exit: a core was dumped */
	uint64_t utime_ns, stime_ns;    /* exit: CPU time of the process, 0 if unknown */
};

struct audit_change {
	const char *kind;               /* "created" | "written" | "deleted" | "renamed" */
	const char *path;
	const char *old_path;
	uint64_t size;
	const uint8_t *sha256;          /* 32 bytes or NULL */
	const char *hash_skipped;       /* why sha256 is NULL for an existing file: "size", ... */
};

struct audit_total {             /* one row of the footer's per-syscall x decision table */
	const char *syscall;
	enum audit_decision decision;
	uint64_t count;
};

struct audit_ftr {
	int exit_status;
	const char *reason;             /* "exited", "signal", "timeout", "memory", ... */
	uint64_t wall_ns, cpu_ns;
	uint64_t peak_memory;
	const struct audit_change *changes;
	size_t n_changes;
	/* Filled by the reader only; the writer keeps these itself. */
	const struct audit_total *totals;
	size_t n_totals;
	uint64_t records;               /* records the writer wrote before the footer */
	uint64_t dropped;               /* records it had to drop (buffer full) */
};

int audit_writer_open(const char *path, const struct audit_opts *opts,
                      struct audit_writer **ret);
/* The same on an fd open for writing, which the writer takes (closed on failure too). */
int audit_writer_open_fd(int fd, const struct audit_opts *opts, struct audit_writer **ret);
int audit_hdr(struct audit_writer *w, const struct audit_hdr *h);
int audit_sys(struct audit_writer *w, const struct audit_sys *s);
int audit_proc(struct audit_writer *w, const struct audit_proc *p);
/* Writes the footer (per-syscall totals are kept by the writer itself), the last frame and
 * the signature; frees w. Returns the first error the writer thread met, if any. */
int audit_writer_close(struct audit_writer *w, const struct audit_ftr *f);
/* Records dropped so far because the pending buffer was full (0 for NULL). */
uint64_t audit_writer_dropped(struct audit_writer *w);
bool audit_wants_stacks(const struct audit_writer *w, enum audit_decision d);

/* ---- names ---- */

const char *audit_decision_name(enum audit_decision d);        /* "denied", ... */
int audit_decision_from_name(const char *s, size_t n);         /* enum value or -EINVAL */
const char *audit_proc_event_name(enum audit_proc_event e);    /* "fork", ... */
int audit_proc_event_from_name(const char *s, size_t n);

/* ---- reader ----
 *
 * Reader lifecycle: audit_reader_open() -> audit_reader_next() until it returns 0 ->
 * audit_reader_status() for how the file ended -> audit_reader_free(). The file is
 * mapped read-only and walked one zstd frame at a time (ZSTD_findFrameCompressedSize to
 * delimit it, ZSTD_decompressStream to inflate and check its content checksum), so a
 * damaged frame costs only its own records.
 *
 * Everything a record points to (rec->obj, rec->raw, strings of the decoded structs) is
 * valid until the next call of audit_reader_next() on the same reader.
 */
struct audit_reader;

enum audit_rec_type {
	AUDIT_REC_UNKNOWN,              /* a type this reader does not know (newer writer) */
	AUDIT_REC_HDR,
	AUDIT_REC_SYS,
	AUDIT_REC_PROC,
	AUDIT_REC_CKPT,
	AUDIT_REC_FTR,
	AUDIT_REC_SIG,
	_AUDIT_REC_MAX,
};

struct audit_rec {
	enum audit_rec_type type;
	const msgpack_object *obj;      /* the record, a map (or whatever an unknown writer sent) */
	const uint8_t *raw;             /* its encoded bytes, which the hash chain covers */
	size_t raw_len;
	bool has_seq;
	uint64_t seq;
	uint64_t frame;                 /* index of the zstd frame, from 0 */
	uint64_t frame_offset;          /* byte offset of that frame in the file */
	uint64_t index;                 /* position of the record within its frame */
	bool last_in_frame;
};

/* Pass records of unknown type to the caller too (verify needs them for the chain).
 * Without it they are skipped, which is what forward compatibility asks of a reader. */
#define AUDIT_READ_UNKNOWN (1u << 0)

struct audit_read_status {
	uint64_t file_size;
	uint64_t frames;                /* complete frames, good or bad */
	uint64_t bad_frames;            /* frames whose content failed (checksum, decode) */
	uint64_t end_offset;            /* where the last complete frame ends */
	bool truncated;                 /* the file ends inside a frame */
	uint64_t lost_bytes;            /* bytes of that incomplete frame (or of garbage) */
	uint64_t skipped_bytes;         /* garbage skipped while resynchronising on a frame */
	uint64_t records;               /* records returned so far */
};

int audit_reader_open(const char *path, unsigned flags, struct audit_reader **ret);
/* 1: a record is in *ret. 0: end of file (see audit_reader_status() for truncation).
 * -EBADMSG: a frame failed; audit_reader_error() names it, and the next call goes on
 * with the frame after it. Other negative errno: the reader cannot continue. */
int audit_reader_next(struct audit_reader *r, struct audit_rec *ret);
const struct audit_read_status *audit_reader_status(const struct audit_reader *r);
const char *audit_reader_error(const struct audit_reader *r);
void audit_reader_free(struct audit_reader *r);

/* Typed views of a record. Unknown keys are ignored; absent strings are NULL, absent
 * numbers 0. An unknown decision decodes as _AUDIT_DECISION_MAX. -EINVAL on a record of
 * another type. Arrays and strings live until the next audit_reader_next(). */
struct audit_ckpt {
	uint64_t records;               /* records before this one, checkpoints excluded */
	uint64_t frame;
	uint64_t mono_ns;
	uint64_t dropped;               /* records dropped so far (buffer full) */
	uint64_t sys, proc;
	uint64_t decisions[_AUDIT_DECISION_MAX];
	uint8_t chain[32];              /* hash chain over every record before this one */
};

struct audit_sig {
	const char *alg;                /* "ed25519" */
	uint8_t chain[32];
	uint8_t public_key[32];
	uint8_t signature[64];
};

int audit_decode_hdr(struct audit_reader *r, const struct audit_rec *rec, struct audit_hdr *ret);
int audit_decode_sys(struct audit_reader *r, const struct audit_rec *rec, struct audit_sys *ret);
int audit_decode_proc(struct audit_reader *r, const struct audit_rec *rec,
		      struct audit_proc *ret);
int audit_decode_ftr(struct audit_reader *r, const struct audit_rec *rec, struct audit_ftr *ret);
int audit_decode_ckpt(const struct audit_rec *rec, struct audit_ckpt *ret);
int audit_decode_sig(const struct audit_rec *rec, struct audit_sig *ret);
/* One unsigned number of a record by its schema key ("wall", "drop"): false when the key
 * is absent or not a number. For the fields the typed views above do not carry. */
bool audit_rec_u64(const struct audit_rec *rec, const char *key, uint64_t *ret);
/* n bytes as 2n lowercase hex digits and a NUL. */
void audit_hex(char *out, const uint8_t *p, size_t n);

/* ---- JSON and filters (what dump uses; replay/suggest may too) ---- */

struct audit_timebase {                 /* from the hdr: maps monotonic ns to wall ns */
	bool valid;
	uint64_t wall_ns, mono_ns;
};

/* The record as a JSON object with long key names (SCHEMA.md), 64-bit addresses as hex
 * strings, binary as hex, plus "time_ns" and "time" (RFC 3339) where the record has a
 * time. Returns a new reference or NULL. */
json_t *audit_rec_to_json(const struct audit_rec *rec, const struct audit_timebase *tb);

/* The same record as an Elastic Common Schema event (SCHEMA.md, "ECS"), from the JSON
 * above and the header's JSON (or NULL). NULL for records with no event (ckpt, sig). */
json_t *audit_json_to_ecs(const json_t *rec, const json_t *hdr);

/* Filter language: TERM { ("and" | "or") TERM }, "and" binding tighter; TERM is
 * FIELD=VALUE (equal), FIELD!=VALUE, or FIELD~TEXT (contains). FIELD is a JSON name
 * ("syscall") or a schema key ("sc"). Values compare as text, so pid=12 and
 * decision=denied both work; errno matches the number or the name (EACCES). */
struct audit_filter;
/* -EINVAL with the reason in e ("'x' is not FIELD=VALUE, ..."), -ENOMEM. */
int audit_filter_parse(const char *expr, struct audit_filter **ret, struct moat_error *e);
bool audit_filter_match(const struct audit_filter *f, const json_t *rec);
void audit_filter_free(struct audit_filter *f);

/* Nearest-rank percentile (pct in 0..100] of n ascending values; 0 when n == 0. */
uint64_t audit_percentile(const uint64_t *sorted, size_t n, double pct);

/* ---- verification and keys ---- */

/* Checks frames, checksums, seq continuity, checkpoints, the hash chain and, if present,
 * the signature (against pubkey when given: 32 bytes). Writes findings to out.
 * Returns 0 when the stream is intact, 1 on any finding, negative errno if it cannot
 * read the file. */
int audit_verify(const char *path, const uint8_t *pubkey, FILE *out);
/* The same, and the header must name run_id (when not NULL): the run the caller expects,
 * e.g. the run_id of its --report. */
int audit_verify_run(const char *path, const uint8_t *pubkey, const char *run_id, FILE *out);

/* Writes OUT (secret, 0600) and OUT.pub; refuses to overwrite. */
int audit_keygen(const char *out);
int audit_key_read_public(const char *path, uint8_t ret[32]);

/* ---- stack traces of denied calls (stack.c) ---- */

enum audit_stack_method {
	AUDIT_STACK_SCAN,               /* process_vm_readv + return-address scan, no ptrace */
	AUDIT_STACK_PTRACE,             /* PTRACE_SEIZE + INTERRUPT + libunwind-ptrace */
};

/* Fills frames[0..max) with the user stack of thread tid of process pid, starting at
 * ip (from seccomp_data.instruction_pointer) and sp (from /proc/<tid>/syscall while the
 * thread waits, or 0 to read it there). Strings (module, build-id, symbol) are written
 * into strbuf. Returns the number of frames or a negative errno. See SCHEMA.md for the
 * methods and their cost. */
/* /proc/<tid>/syscall: the syscall the thread is blocked in (-1: blocked outside one),
 * its user-space sp and pc (any pointer may be NULL). -EAGAIN while it is not blocked
 * ("running"), another -errno when it cannot be read (gone). */
int audit_thread_syscall(pid_t tid, long *ret_nr, uint64_t *ret_sp, uint64_t *ret_pc);
int audit_stack_capture(pid_t pid, pid_t tid, uint64_t ip, uint64_t sp,
			enum audit_stack_method method, struct audit_frame *frames, size_t max,
			char *strbuf, size_t strbuf_len);
