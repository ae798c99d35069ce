/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the audit module: writer -> file -> reader round trips for every record
 * type, forward compatibility, damage (truncation, a flipped byte, an edited record that
 * keeps a valid zstd checksum), signatures, drops, frame timing, the stock zstd tool, the
 * filter language, percentiles and the CLI.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include <cmocka.h>

#include "audit.h"
#include "cli.h"

struct tmp {
	char dir[64];
	char path[128];
};

static int setup_tmp(void **state)
{
	struct tmp *t = calloc(1, sizeof(*t));
	const char *base = getenv("TMPDIR");

	snprintf(t->dir, sizeof(t->dir), "%s/moat-audit-XXXXXX", base ? base : "/tmp");
	if (!mkdtemp(t->dir))
		return -1;
	snprintf(t->path, sizeof(t->path), "%s/run.moat", t->dir);
	*state = t;
	return 0;
}

static int teardown_tmp(void **state)
{
	struct tmp *t = *state;
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
	if (system(cmd) != 0)
		return -1;
	free(t);
	return 0;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void spit(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	fclose(f);
}

/* ---- fixtures: one of each record, every field set ---- */

static const uint8_t sha_a[32] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
				   17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32 };
static const char *const hdr_argv[] = { "python3", "-c", "import json; open('/etc/shadow')",
					NULL };
static const char *const hdr_env[] = { "PATH", "HOME", NULL };
static const struct audit_feature hdr_feat[] = {
	{ "SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP", true, NULL },
	{ "landlock", false, "fallback: seccomp only" },
};
static const struct audit_hdr the_hdr = {
	.moat_version = "0.1.0",
	.run_id = "run-42",
	.argv = hdr_argv,
	.cwd = "/work",
	.env_names = hdr_env,
	.policy_json = "{\"fs\":[]}",
	.policy_hash = "abcd",
	.mode = "unnamespaced",
	.kernel = "6.1.0",
	.arch = "x86_64",
	.features = hdr_feat,
	.n_features = 2,
	.start_wall_ns = 1700000000123456789ull,
	.start_mono_ns = 1000,
};
static const struct audit_frame sys_stack[] = {
	{ 0x7f0000001234ull, "/usr/lib/libc.so.6", "deadbeef", "__open64", 0x24 },
	{ 0x55555555aaaaull, "/usr/bin/python3", NULL, NULL, 0xaaaa },
};
static const struct audit_sys the_sys = {
	.mono_ns = 5000,
	.pid = 100,
	.tid = 101,
	.sandbox_pid = 2,
	.sandbox_tid = 3,
	.comm = "python3",
	.syscall = "openat",
	.nr = 257,
	.args = { 0xffffffffffffff9cull, 0x7ffd00001000ull, 0x80000, 0, 0xffffffffffffffffull, 6 },
	.path = "/etc/shadow",
	.resolved = "/etc/shadow",
	.path2 = "/tmp/x",
	.addr = "10.0.0.1:443",
	.flags = "O_RDONLY|O_CLOEXEC",
	.decision = AUDIT_DENIED,
	.rule = "default-deny",
	.result = -1,
	.err = EACCES,
	.latency_ns = 12345,
	.stack = sys_stack,
	.n_stack = 2,
};
static const char *const exec_argv[] = { "python3", "-c", "", NULL };
static const struct audit_proc the_exec = {
	.event = AUDIT_PROC_EXEC, .mono_ns = 3000, .pid = 100, .ppid = 99, .tid = 101,
	.sandbox_pid = 3, .sandbox_tid = 4, .path = "/usr/bin/python3", .sha256 = sha_a,
	.argv = exec_argv, .argv_truncated = true, .decision = AUDIT_CONTINUED,
	.rule = "ro-bind /usr",
};
static const struct audit_proc the_exit = {
	.event = AUDIT_PROC_EXIT, .mono_ns = 9000, .pid = 100, .ppid = 99,
	.sandbox_pid = 3, .sandbox_ppid = 1, .path = NULL, .sha256 = NULL, .status = -1,
	.signal = 9, .core = true, .utime_ns = 10000000, .stime_ns = 20000000,
};
static const struct audit_change ftr_changes[] = {
	{ "created", "/work/out.txt", NULL, 12, sha_a },
	{ "renamed", "/work/b", "/work/a", 0, NULL },
};
static const struct audit_ftr the_ftr = {
	.exit_status = 137,
	.reason = "signal",
	.wall_ns = 2000000,
	.cpu_ns = 1500000,
	.peak_memory = 1 << 20,
	.changes = ftr_changes,
	.n_changes = 2,
};

static void assert_str_eq_null(const char *a, const char *b)
{
	if (!a || !b)
		assert_ptr_equal(a, b);
	else
		assert_string_equal(a, b);
}

/* Every field of a syscall record but its stack. */
static void assert_sys_equal(const struct audit_sys *got, const struct audit_sys *want)
{
	assert_int_equal(got->mono_ns, want->mono_ns);
	assert_int_equal(got->pid, want->pid);
	assert_int_equal(got->tid, want->tid);
	assert_int_equal(got->sandbox_pid, want->sandbox_pid);
	assert_int_equal(got->sandbox_tid, want->sandbox_tid);
	assert_str_eq_null(got->comm, want->comm);
	assert_str_eq_null(got->syscall, want->syscall);
	assert_int_equal(got->nr, want->nr);
	assert_memory_equal(got->args, want->args, sizeof(got->args));
	assert_str_eq_null(got->path, want->path);
	assert_str_eq_null(got->resolved, want->resolved);
	assert_str_eq_null(got->path2, want->path2);
	assert_str_eq_null(got->addr, want->addr);
	assert_str_eq_null(got->flags, want->flags);
	assert_int_equal(got->decision, want->decision);
	assert_str_eq_null(got->rule, want->rule);
	assert_int_equal(got->result, want->result);
	assert_int_equal(got->err, want->err);
	assert_int_equal(got->latency_ns, want->latency_ns);
}


static void write_fixture(const char *path, const char *key)
{
	struct audit_opts o = { .session = "ses-1", .tenant = "ten-1", .key_path = key,
				.stacks_all = true };
	struct audit_writer *w;

	assert_int_equal(audit_writer_open(path, &o, &w), 0);
	assert_true(audit_wants_stacks(w, AUDIT_EMULATED));
	assert_int_equal(audit_hdr(w, &the_hdr), 0);
	assert_int_equal(audit_proc(w, &the_exec), 0);
	assert_int_equal(audit_sys(w, &the_sys), 0);
	assert_int_equal(audit_proc(w, &the_exit), 0);
	assert_int_equal(audit_writer_close(w, &the_ftr), 0);
}

static char *keygen(struct tmp *t)
{
	char *key;

	assert_true(asprintf(&key, "%s/k", t->dir) > 0);
	assert_int_equal(audit_keygen(key), 0);
	return key;
}

static void test_round_trip(void **state)
{
	struct tmp *t = *state;
	char *key = keygen(t);
	struct audit_reader *r;
	struct audit_rec rec;
	unsigned seen[_AUDIT_REC_MAX] = { 0 };
	int k;

	write_fixture(t->path, key);
	assert_int_equal(audit_reader_open(t->path, 0, &r), 0);
	while ((k = audit_reader_next(r, &rec)) == 1) {
		seen[rec.type]++;
		switch (rec.type) {
		case AUDIT_REC_HDR: {
			struct audit_hdr h;

			assert_int_equal(audit_decode_hdr(r, &rec, &h), 0);
			assert_true(rec.has_seq);
			assert_int_equal(rec.seq, 0);
			assert_string_equal(h.moat_version, the_hdr.moat_version);
			assert_string_equal(h.run_id, the_hdr.run_id);
			for (int i = 0; i < 4; i++)
				assert_str_eq_null(h.argv[i], hdr_argv[i]);
			for (int i = 0; i < 3; i++)
				assert_str_eq_null(h.env_names[i], hdr_env[i]);
			assert_string_equal(h.cwd, the_hdr.cwd);
			assert_string_equal(h.policy_json, the_hdr.policy_json);
			assert_string_equal(h.policy_hash, the_hdr.policy_hash);
			assert_string_equal(h.mode, the_hdr.mode);
			assert_string_equal(h.kernel, the_hdr.kernel);
			assert_string_equal(h.arch, the_hdr.arch);
			assert_int_equal(h.n_features, 2);
			for (int i = 0; i < 2; i++) {
				assert_string_equal(h.features[i].name, hdr_feat[i].name);
				assert_int_equal(h.features[i].present, hdr_feat[i].present);
				assert_str_eq_null(h.features[i].detail, hdr_feat[i].detail);
			}
			assert_int_equal(h.start_wall_ns, the_hdr.start_wall_ns);
			assert_int_equal(h.start_mono_ns, the_hdr.start_mono_ns);
			assert_string_equal(h.session, "ses-1");
			assert_string_equal(h.tenant, "ten-1");
			assert_true(h.stacks_all);
			assert_int_equal(h.schema, 1);
			break;
		}
		case AUDIT_REC_SYS: {
			struct audit_sys s;

			assert_int_equal(audit_decode_sys(r, &rec, &s), 0);
			assert_int_equal(rec.seq, 2);
			assert_sys_equal(&s, &the_sys);
			assert_int_equal(s.n_stack, 2);
			for (int i = 0; i < 2; i++) {
				assert_int_equal(s.stack[i].ip, sys_stack[i].ip);
				assert_str_eq_null(s.stack[i].module, sys_stack[i].module);
				assert_str_eq_null(s.stack[i].build_id, sys_stack[i].build_id);
				assert_str_eq_null(s.stack[i].symbol, sys_stack[i].symbol);
				assert_int_equal(s.stack[i].offset, sys_stack[i].offset);
			}
			break;
		}
		case AUDIT_REC_PROC: {
			struct audit_proc p;
			const struct audit_proc *want = rec.seq == 1 ? &the_exec : &the_exit;

			assert_int_equal(audit_decode_proc(r, &rec, &p), 0);
			assert_int_equal(p.event, want->event);
			assert_int_equal(p.mono_ns, want->mono_ns);
			assert_int_equal(p.pid, want->pid);
			assert_int_equal(p.ppid, want->ppid);
			assert_str_eq_null(p.path, want->path);
			if (want->sha256)
				assert_memory_equal(p.sha256, want->sha256, 32);
			else
				assert_null(p.sha256);
			assert_int_equal(p.tid, want->tid);
			assert_int_equal(p.sandbox_pid, want->sandbox_pid);
			assert_int_equal(p.sandbox_tid, want->sandbox_tid);
			assert_int_equal(p.sandbox_ppid, want->sandbox_ppid);
			if (want->event == AUDIT_PROC_EXEC) {
				for (size_t i = 0; want->argv[i]; i++)
					assert_string_equal(p.argv[i], want->argv[i]);
				assert_null(p.argv[3]);
				assert_true(p.argv_truncated);
				assert_int_equal(p.decision, want->decision);
				assert_str_eq_null(p.rule, want->rule);
			} else {
				assert_int_equal(p.status, want->status);
				assert_int_equal(p.signal, want->signal);
				assert_true(p.core);
				assert_int_equal(p.utime_ns, want->utime_ns);
				assert_int_equal(p.stime_ns, want->stime_ns);
			}
			break;
		}
		case AUDIT_REC_FTR: {
			struct audit_ftr f;

			assert_int_equal(audit_decode_ftr(r, &rec, &f), 0);
			assert_int_equal(rec.seq, 4);
			assert_int_equal(f.exit_status, the_ftr.exit_status);
			assert_string_equal(f.reason, the_ftr.reason);
			assert_int_equal(f.wall_ns, the_ftr.wall_ns);
			assert_int_equal(f.cpu_ns, the_ftr.cpu_ns);
			assert_int_equal(f.peak_memory, the_ftr.peak_memory);
			assert_int_equal(f.n_changes, 2);
			for (int i = 0; i < 2; i++) {
				assert_string_equal(f.changes[i].kind, ftr_changes[i].kind);
				assert_string_equal(f.changes[i].path, ftr_changes[i].path);
				assert_str_eq_null(f.changes[i].old_path, ftr_changes[i].old_path);
				assert_int_equal(f.changes[i].size, ftr_changes[i].size);
				if (ftr_changes[i].sha256)
					assert_memory_equal(f.changes[i].sha256, sha_a, 32);
				else
					assert_null(f.changes[i].sha256);
			}
			assert_int_equal(f.n_totals, 1);
			assert_string_equal(f.totals[0].syscall, "openat");
			assert_int_equal(f.totals[0].decision, AUDIT_DENIED);
			assert_int_equal(f.totals[0].count, 1);
			assert_int_equal(f.records, 4);
			assert_int_equal(f.dropped, 0);
			break;
		}
		case AUDIT_REC_CKPT: {
			struct audit_ckpt c;

			assert_int_equal(audit_decode_ckpt(&rec, &c), 0);
			assert_true(rec.last_in_frame);
			assert_int_equal(c.frame, rec.frame);
			assert_int_equal(c.dropped, 0);
			assert_true(c.records <= 5);
			assert_int_equal(c.decisions[AUDIT_DENIED], c.sys);
			break;
		}
		case AUDIT_REC_SIG: {
			struct audit_sig s;
			uint8_t pk[32];
			char *pub;

			assert_int_equal(audit_decode_sig(&rec, &s), 0);
			assert_string_equal(s.alg, "ed25519");
			assert_true(asprintf(&pub, "%s.pub", key) > 0);
			assert_int_equal(audit_key_read_public(pub, pk), 0);
			assert_memory_equal(s.public_key, pk, 32);
			free(pub);
			break;
		}
		case AUDIT_REC_UNKNOWN:
		case _AUDIT_REC_MAX:
		default:
			fail_msg("unexpected record type %d", rec.type);
		}
	}
	assert_int_equal(k, 0);
	assert_int_equal(seen[AUDIT_REC_HDR], 1);
	assert_int_equal(seen[AUDIT_REC_SYS], 1);
	assert_int_equal(seen[AUDIT_REC_PROC], 2);
	assert_int_equal(seen[AUDIT_REC_FTR], 1);
	assert_int_equal(seen[AUDIT_REC_SIG], 1);
	assert_true(seen[AUDIT_REC_CKPT] >= 1);
	assert_false(audit_reader_status(r)->truncated);
	audit_reader_free(r);
	free(key);
}

/* ---- forward compatibility ---- */

struct mp {
	msgpack_sbuffer sb;
	msgpack_packer pk;
};

static void mp_str(struct mp *m, const char *s)
{
	msgpack_pack_str(&m->pk, strlen(s));
	msgpack_pack_str_body(&m->pk, s, strlen(s));
}

static void mp_kv_str(struct mp *m, const char *k, const char *v)
{
	mp_str(m, k);
	mp_str(m, v);
}

static void mp_kv_u(struct mp *m, const char *k, uint64_t v)
{
	mp_str(m, k);
	msgpack_pack_uint64(&m->pk, v);
}

/* Appends one checksummed zstd frame holding m's bytes to the file at path. */
static void append_frame(const char *path, const struct mp *m)
{
	ZSTD_CCtx *c = ZSTD_createCCtx();
	size_t cap = ZSTD_compressBound(m->sb.size), n;
	void *buf = malloc(cap);
	FILE *f;

	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	n = ZSTD_compress2(c, buf, cap, m->sb.data, m->sb.size);
	assert_false(ZSTD_isError(n));
	f = fopen(path, "ab");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, n, f), n);
	fclose(f);
	free(buf);
	ZSTD_freeCCtx(c);
}

static void test_unknown_skipped(void **state)
{
	struct tmp *t = *state;
	struct mp m;
	struct audit_reader *r;
	struct audit_rec rec;
	struct audit_sys s;
	int n = 0, unknown = 0, k;

	msgpack_sbuffer_init(&m.sb);
	msgpack_packer_init(&m.pk, &m.sb, msgpack_sbuffer_write);
	msgpack_pack_map(&m.pk, 3);
	mp_kv_str(&m, "t", "hdr");
	mp_kv_u(&m, "seq", 0);
	mp_kv_u(&m, "v", 1);
	/* A record type from the future, with nested data. */
	msgpack_pack_map(&m.pk, 3);
	mp_kv_str(&m, "t", "gpu");
	mp_kv_u(&m, "seq", 1);
	mp_str(&m, "dev");
	msgpack_pack_array(&m.pk, 2);
	msgpack_pack_nil(&m.pk);
	msgpack_pack_true(&m.pk);
	/* A sys record with keys from the future, one before "t". */
	msgpack_pack_map(&m.pk, 6);
	mp_kv_str(&m, "zz_cgroup", "/sys/fs/cgroup/x");
	mp_kv_str(&m, "t", "sys");
	mp_kv_u(&m, "seq", 2);
	mp_kv_str(&m, "sc", "openat");
	mp_kv_str(&m, "dec", "denied");
	mp_str(&m, "zz_nested");
	msgpack_pack_map(&m.pk, 1);
	mp_kv_u(&m, "a", 1);
	/* Not even a map. */
	msgpack_pack_uint8(&m.pk, 7);
	append_frame(t->path, &m);
	msgpack_sbuffer_destroy(&m.sb);

	assert_int_equal(audit_reader_open(t->path, 0, &r), 0);
	while ((k = audit_reader_next(r, &rec)) == 1) {
		n++;
		assert_int_not_equal(rec.type, AUDIT_REC_UNKNOWN);
		if (rec.type == AUDIT_REC_SYS) {
			assert_int_equal(audit_decode_sys(r, &rec, &s), 0);
			assert_string_equal(s.syscall, "openat");
			assert_int_equal(s.decision, AUDIT_DENIED);
			assert_null(s.path);
		}
	}
	assert_int_equal(k, 0);
	assert_int_equal(n, 2);
	audit_reader_free(r);

	/* verify and JSON see the unknown records; they are not failures of their own. */
	assert_int_equal(audit_reader_open(t->path, AUDIT_READ_UNKNOWN, &r), 0);
	while ((k = audit_reader_next(r, &rec)) == 1) {
		json_t *j = audit_rec_to_json(&rec, NULL);

		assert_non_null(j);
		if (rec.type == AUDIT_REC_SYS)
			assert_string_equal(json_string_value(json_object_get(j, "zz_cgroup")),
					    "/sys/fs/cgroup/x");
		unknown += rec.type == AUDIT_REC_UNKNOWN;
		json_decref(j);
	}
	assert_int_equal(unknown, 2);
	audit_reader_free(r);
}

/* ---- damage ---- */

struct frame_info {
	uint64_t offset;
	unsigned records;
};

/* Many records, small frames: returns the frames and total record count. */
static unsigned write_many(const char *path, unsigned n, struct frame_info *fi, unsigned *nf)
{
	struct audit_opts o = { .frame_bytes = 4096 };
	struct audit_writer *w;
	struct audit_reader *r;
	struct audit_rec rec;
	unsigned total = 0;

	assert_int_equal(audit_writer_open(path, &o, &w), 0);
	assert_int_equal(audit_hdr(w, &the_hdr), 0);
	for (unsigned i = 0; i < n; i++) {
		struct audit_sys s = the_sys;

		s.decision = AUDIT_EMULATED;
		s.mono_ns = 2000 + i;
		s.n_stack = 0;
		assert_int_equal(audit_sys(w, &s), 0);
	}
	assert_int_equal(audit_writer_close(w, &the_ftr), 0);

	*nf = 0;
	assert_int_equal(audit_reader_open(path, 0, &r), 0);
	while (audit_reader_next(r, &rec) == 1) {
		if (*nf == 0 || fi[*nf - 1].offset != rec.frame_offset) {
			assert_int_equal(rec.frame, *nf);
			fi[*nf].offset = rec.frame_offset;
			fi[*nf].records = 0;
			(*nf)++;
		}
		fi[*nf - 1].records++;
		total++;
	}
	audit_reader_free(r);
	return total;
}

static int verify_capture(const char *path, const uint8_t *pk, char **out)
{
	size_t len;
	FILE *f = open_memstream(out, &len);
	int r = audit_verify(path, pk, f);

	fclose(f);
	return r;
}

/* Records without a stack (nearly all of them: only denials carry one): every field,
 * absent strings and extreme numbers included, must come back as given, in order, and
 * the stream must verify. */
static void test_round_trip_unstacked(void **state)
{
	struct tmp *t = *state;
	struct audit_sys full = the_sys, sparse = {
		.mono_ns = UINT64_MAX, .pid = -1, .tid = 0, .sandbox_pid = 0, .sandbox_tid = 0,
		.comm = "", .syscall = "newfstatat", .nr = 262, .args = { 0, UINT64_MAX },
		.decision = AUDIT_EMULATED, .result = INT64_MIN, .err = 0, .latency_ns = 0,
	};
	const struct audit_sys *want[] = { &full, &sparse, &full };
	struct audit_writer *w;
	struct audit_reader *r;
	struct audit_rec rec;
	size_t n = 0;
	char *out;

	full.stack = NULL;
	full.n_stack = 0;
	assert_int_equal(audit_writer_open(t->path, NULL, &w), 0);
	assert_int_equal(audit_hdr(w, &the_hdr), 0);
	for (size_t i = 0; i < (sizeof(want) / sizeof(want[0])); i++)
		assert_int_equal(audit_sys(w, want[i]), 0);
	assert_int_equal(audit_writer_close(w, &the_ftr), 0);

	assert_int_equal(audit_reader_open(t->path, 0, &r), 0);
	while (audit_reader_next(r, &rec) == 1) {
		struct audit_sys s;

		if (rec.type != AUDIT_REC_SYS)
			continue;
		assert_true(n < (sizeof(want) / sizeof(want[0])));
		assert_int_equal(audit_decode_sys(r, &rec, &s), 0);
		assert_int_equal(rec.seq, 1 + n);
		assert_sys_equal(&s, want[n]);
		assert_int_equal(s.n_stack, 0);
		n++;
	}
	audit_reader_free(r);
	assert_int_equal(n, (sizeof(want) / sizeof(want[0])));
	assert_int_equal(verify_capture(t->path, NULL, &out), 0);
	free(out);
}

static void test_truncated(void **state)
{
	struct tmp *t = *state;
	struct frame_info fi[256];
	unsigned nf, total, expect = 0, got = 0;
	uint8_t *buf;
	size_t len, cut;
	struct audit_reader *r;
	struct audit_rec rec;
	char *out;
	int k;

	total = write_many(t->path, 1000, fi, &nf);
	assert_true(nf >= 6);
	assert_int_equal(total, 1000 + 2 + nf);
	assert_int_equal(verify_capture(t->path, NULL, &out), 0);
	free(out);

	/* Cut in the middle of frame 4: frames 0..3 must come back whole. */
	buf = slurp(t->path, &len);
	cut = fi[4].offset + (fi[5].offset - fi[4].offset) / 2;
	spit(t->path, buf, cut);
	for (unsigned i = 0; i < 4; i++)
		expect += fi[i].records;

	assert_int_equal(audit_reader_open(t->path, 0, &r), 0);
	while ((k = audit_reader_next(r, &rec)) == 1)
		got++;
	assert_int_equal(k, 0);
	assert_int_equal(got, expect);
	assert_true(audit_reader_status(r)->truncated);
	assert_int_equal(audit_reader_status(r)->end_offset, fi[4].offset);
	assert_int_equal(audit_reader_status(r)->lost_bytes, cut - fi[4].offset);
	assert_int_equal(audit_reader_status(r)->frames, 4);
	audit_reader_free(r);

	assert_int_equal(verify_capture(t->path, NULL, &out), 1);
	assert_non_null(strstr(out, "truncated"));
	assert_non_null(strstr(out, "lost"));
	free(out);

	/* Cut exactly at a frame boundary: nothing is half-written, but the footer is
	 * missing and verify says so. */
	spit(t->path, buf, fi[3].offset);
	assert_int_equal(verify_capture(t->path, NULL, &out), 1);
	assert_non_null(strstr(out, "no footer"));
	free(out);
	free(buf);
}

static void test_flipped_byte(void **state)
{
	struct tmp *t = *state;
	struct frame_info fi[256];
	unsigned nf, got = 0;
	uint8_t *buf;
	size_t len, at;
	char *out, name[64];
	struct audit_reader *r;
	struct audit_rec rec;
	int k, bad = 0;

	write_many(t->path, 1000, fi, &nf);
	buf = slurp(t->path, &len);
	/* Middle of frame 3's compressed blocks: past its header, before the next frame. */
	at = fi[3].offset + (fi[4].offset - fi[3].offset) / 2;
	buf[at] ^= 0x10;
	spit(t->path, buf, len);
	free(buf);

	assert_int_equal(verify_capture(t->path, NULL, &out), 1);
	snprintf(name, sizeof(name), "frame 3 at byte %llu", (unsigned long long)fi[3].offset);
	assert_non_null(strstr(out, name));
	free(out);

	/* The reader loses that frame only. */
	assert_int_equal(audit_reader_open(t->path, 0, &r), 0);
	while ((k = audit_reader_next(r, &rec)) != 0) {
		if (k == -EBADMSG) {
			bad++;
			assert_non_null(strstr(audit_reader_error(r), "frame 3"));
			continue;
		}
		assert_int_equal(k, 1);
		assert_int_not_equal(rec.frame, 3);
		got++;
	}
	assert_int_equal(bad, 1);
	assert_true(got >= 1000 + 2 + nf - fi[3].records - 1);
	audit_reader_free(r);
}

/* Re-encode one frame with an edited record: zstd's checksum is fine, the chain is not. */
static void test_chain_detects_edit(void **state)
{
	struct tmp *t = *state;
	struct frame_info fi[256];
	unsigned nf;
	uint8_t *buf, *content, *frame;
	size_t len, clen, cap, flen, fsz;
	ZSTD_CCtx *c;
	char *out, *p;
	FILE *f;

	write_many(t->path, 1000, fi, &nf);
	buf = slurp(t->path, &len);
	fsz = fi[2].offset - fi[1].offset;
	cap = 1 << 20;
	content = malloc(cap);
	clen = ZSTD_decompress(content, cap, buf + fi[1].offset, fsz);
	assert_false(ZSTD_isError(clen));
	p = memmem(content, clen, "/etc/shadow", 11);
	assert_non_null(p);
	p[5] = 'S';
	c = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	frame = malloc(ZSTD_compressBound(clen));
	flen = ZSTD_compress2(c, frame, ZSTD_compressBound(clen), content, clen);
	assert_false(ZSTD_isError(flen));
	f = fopen(t->path, "wb");
	fwrite(buf, 1, fi[1].offset, f);
	fwrite(frame, 1, flen, f);
	fwrite(buf + fi[2].offset, 1, len - fi[2].offset, f);
	fclose(f);

	assert_int_equal(verify_capture(t->path, NULL, &out), 1);
	assert_non_null(strstr(out, "frame 1 "));
	assert_non_null(strstr(out, "hash chain mismatch"));
	/* Exactly one finding: the chain resynchronises at the checkpoint. */
	assert_non_null(strstr(out, "(1 finding "));
	free(out);
	free(buf);
	free(content);
	free(frame);
	ZSTD_freeCCtx(c);
}

static void test_signature(void **state)
{
	struct tmp *t = *state;
	char *key = keygen(t), *pub, *other, *out;
	uint8_t pk[32], opk[32];

	write_fixture(t->path, key);
	assert_true(asprintf(&pub, "%s.pub", key) > 0);
	assert_true(asprintf(&other, "%s/other", t->dir) > 0);
	assert_int_equal(audit_keygen(other), 0);
	/* keygen never overwrites. */
	assert_int_equal(audit_keygen(other), -EEXIST);
	assert_int_equal(audit_key_read_public(pub, pk), 0);
	free(pub);
	assert_true(asprintf(&pub, "%s.pub", other) > 0);
	assert_int_equal(audit_key_read_public(pub, opk), 0);

	assert_int_equal(verify_capture(t->path, pk, &out), 0);
	assert_non_null(strstr(out, "signature valid for the given key"));
	free(out);
	assert_int_equal(verify_capture(t->path, NULL, &out), 0);
	assert_non_null(strstr(out, "pass --key"));
	free(out);
	assert_int_equal(verify_capture(t->path, opk, &out), 1);
	assert_non_null(strstr(out, "signature does not verify"));
	free(out);

	/* An unsigned stream checked with --key fails. */
	write_fixture(t->path, NULL);
	assert_int_equal(verify_capture(t->path, pk, &out), 1);
	assert_non_null(strstr(out, "no signature"));
	free(out);
	/* A bad key file is refused when the writer opens, not at the end of the run. */
	{
		struct audit_opts o = { .key_path = pub };
		struct audit_writer *w;

		assert_int_equal(audit_writer_open(t->path, &o, &w), -EBADMSG);
	}
	free(key);
	free(pub);
	free(other);
}

static void test_zstd_cli(void **state)
{
	struct tmp *t = *state;
	char cmd[512], out[160];
	msgpack_unpacker up;
	msgpack_unpacked u;
	uint8_t *buf;
	size_t len, n = 0;
	struct audit_reader *r;
	struct audit_rec rec;
	size_t want = 0;
	char *key = keygen(t);

	if (system("command -v zstd >/dev/null 2>&1") != 0)
		skip(); /* zstd(1) not on PATH: nothing to compare against */
	write_fixture(t->path, key);
	snprintf(out, sizeof(out), "%s/plain", t->dir);
	snprintf(cmd, sizeof(cmd), "zstd -q -dc '%s' > '%s'", t->path, out);
	assert_int_equal(system(cmd), 0);
	buf = slurp(out, &len);
	msgpack_unpacker_init(&up, len + 16);
	memcpy(msgpack_unpacker_buffer(&up), buf, len);
	msgpack_unpacker_buffer_consumed(&up, len);
	msgpack_unpacked_init(&u);
	while (msgpack_unpacker_next(&up, &u) == MSGPACK_UNPACK_SUCCESS) {
		assert_int_equal(u.data.type, MSGPACK_OBJECT_MAP);
		n++;
	}
	msgpack_unpacked_destroy(&u);
	msgpack_unpacker_destroy(&up);
	assert_int_equal(audit_reader_open(t->path, AUDIT_READ_UNKNOWN, &r), 0);
	while (audit_reader_next(r, &rec) == 1)
		want++;
	audit_reader_free(r);
	assert_int_equal(n, want);
	free(buf);
	free(key);
}

/* ---- writer behaviour: drops, frame timing ---- */

static void test_drops_reported(void **state)
{
	struct tmp *t = *state;
	struct audit_opts o = { .buffer_bytes = 2048 };
	struct audit_writer *w;
	struct audit_reader *r;
	struct audit_rec rec;
	struct audit_ftr f;
	unsigned dropped = 0, sys = 0;
	uint64_t total = 0, ckpt_drop = 0;
	char *out;

	assert_int_equal(audit_writer_open(t->path, &o, &w), 0);
	assert_int_equal(audit_hdr(w, &the_hdr), 0);
	for (int i = 0; i < 20000; i++) {
		struct audit_sys s = the_sys;
		int k;

		s.decision = AUDIT_NATIVE;
		s.n_stack = 0;
		k = audit_sys(w, &s);
		if (k == -ENOBUFS)
			dropped++;
		else
			assert_int_equal(k, 0);
	}
	assert_true(dropped > 0);
	assert_int_equal(audit_writer_close(w, &the_ftr), 0);

	assert_int_equal(audit_reader_open(t->path, 0, &r), 0);
	while (audit_reader_next(r, &rec) == 1) {
		if (rec.type == AUDIT_REC_SYS)
			sys++;
		if (rec.type == AUDIT_REC_CKPT) {
			struct audit_ckpt c;

			audit_decode_ckpt(&rec, &c);
			ckpt_drop = c.dropped;
		}
		if (rec.type == AUDIT_REC_FTR) {
			assert_int_equal(audit_decode_ftr(r, &rec, &f), 0);
			assert_int_equal(f.dropped, dropped);
			for (size_t i = 0; i < f.n_totals; i++)
				total += f.totals[i].count;
		}
	}
	audit_reader_free(r);
	assert_int_equal(sys + dropped, 20000);
	assert_int_equal(ckpt_drop, dropped);
	/* The footer's totals count every call, dropped or not. */
	assert_int_equal(total, 20000);
	assert_int_equal(verify_capture(t->path, NULL, &out), 1);
	assert_non_null(strstr(out, "dropped"));
	free(out);
}

static unsigned count_on_disk(const char *path)
{
	struct audit_reader *r;
	struct audit_rec rec;
	unsigned n = 0;

	assert_int_equal(audit_reader_open(path, 0, &r), 0);
	while (audit_reader_next(r, &rec) == 1)
		n += rec.type == AUDIT_REC_SYS;
	audit_reader_free(r);
	return n;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static void test_frame_timing(void **state)
{
	struct tmp *t = *state;
	struct audit_opts o = { .frame_ms = 300 };
	struct audit_writer *w;
	struct audit_sys s = the_sys;
	unsigned n = 0;

	s.n_stack = 0;
	assert_int_equal(audit_writer_open(t->path, &o, &w), 0);
	assert_int_equal(audit_hdr(w, &the_hdr), 0);

	/* A denial reaches the disk promptly, long before the frame deadline. */
	assert_int_equal(audit_sys(w, &s), 0);
	for (int i = 0; i < 100 && n == 0; i++) {
		sleep_ms(2);
		n = count_on_disk(t->path);
	}
	assert_int_equal(n, 1);

	/* An ordinary record waits for the deadline, then is written without a close. */
	s.decision = AUDIT_EMULATED;
	assert_int_equal(audit_sys(w, &s), 0);
	sleep_ms(50);
	assert_int_equal(count_on_disk(t->path), 1);
	for (int i = 0; i < 200 && n < 2; i++) {
		sleep_ms(10);
		n = count_on_disk(t->path);
	}
	assert_int_equal(n, 2);
	assert_int_equal(audit_writer_close(w, NULL), 0);
}

/* ---- filter language, percentiles ---- */

static bool fmatch(const char *expr, const json_t *j)
{
	struct audit_filter *f;
	struct moat_error err;
	bool m;

	assert_int_equal(audit_filter_parse(expr, &f, &err), 0);
	m = audit_filter_match(f, j);
	audit_filter_free(f);
	return m;
}

static void test_filter(void **state)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:i, s:i, s:s, s:s}", "type", "sys", "syscall",
			      "openat", "decision", "denied", "pid", 12, "errno", 13, "errno_name",
			      "EACCES", "path", "/etc/shadow file");
	struct audit_filter *f;
	struct moat_error err;

	assert_true(fmatch("syscall=openat and decision=denied", j));
	assert_false(fmatch("syscall=openat and decision=native", j));
	assert_true(fmatch("path~/etc/", j));
	assert_false(fmatch("path~/usr/", j));
	assert_true(fmatch("pid=12", j));
	assert_false(fmatch("pid=1", j));
	assert_true(fmatch("errno=EACCES", j));
	assert_true(fmatch("errno=13", j));
	assert_true(fmatch("sc=openat", j)); /* schema key */
	assert_true(fmatch("dec=denied", j));
	assert_true(fmatch("decision!=native", j));
	assert_false(fmatch("decision!=denied", j));
	assert_true(fmatch("syscall=connect or decision=denied", j));
	assert_false(fmatch("syscall=connect or pid=1 and decision=denied", j));
	assert_true(fmatch("syscall=connect or pid=12 and decision=denied", j));
	assert_true(fmatch("path=\"/etc/shadow file\"", j));
	assert_false(fmatch("addr~10.", j)); /* absent field */
	assert_true(fmatch("", j));

	assert_int_equal(audit_filter_parse("syscall", &f, &err), -EINVAL);
	assert_non_null(strstr(moat_error_str(&err), "syscall"));
	assert_int_equal(audit_filter_parse("a=b c=d", &f, &err), -EINVAL);
	assert_int_equal(audit_filter_parse("a=b and", &f, &err), -EINVAL);
	assert_int_equal(audit_filter_parse("path=\"x", &f, &err), -EINVAL);
	assert_int_equal(audit_filter_parse("=x", &f, &err), -EINVAL);
	json_decref(j);
}

static void test_percentile(void **state)
{
	uint64_t v[100];
	const uint64_t one[] = { 7 };
	const uint64_t twenty[20] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
				      11, 12, 13, 14, 15, 16, 17, 18, 19, 20 };

	for (int i = 0; i < 100; i++)
		v[i] = (uint64_t)i + 1;
	assert_int_equal(audit_percentile(v, 100, 50), 50);
	assert_int_equal(audit_percentile(v, 100, 95), 95);
	assert_int_equal(audit_percentile(v, 100, 99), 99);
	assert_int_equal(audit_percentile(v, 100, 100), 100);
	assert_int_equal(audit_percentile(twenty, 20, 95), 19);
	assert_int_equal(audit_percentile(twenty, 20, 50), 10);
	assert_int_equal(audit_percentile(twenty, 20, 99), 20);
	assert_int_equal(audit_percentile(one, 1, 50), 7);
	assert_int_equal(audit_percentile(one, 1, 99), 7);
	assert_int_equal(audit_percentile(NULL, 0, 50), 0);
}

/* ---- CLI ---- */

/* Runs `moat audit ARGS` (cmd_audit) in a child with stdout and stderr sent to a file,
 * since stdout is the TAP stream here. Returns the exit status; *out holds what it
 * printed. */
static int run_cli(struct tmp *t, char **out, int argc, ...)
{
	char *argv[16], file[160];
	va_list ap;
	pid_t pid;
	int st;
	size_t len;

	argv[0] = "audit";
	va_start(ap, argc);
	for (int i = 1; i <= argc; i++)
		argv[i] = va_arg(ap, char *);
	va_end(ap);
	argv[argc + 1] = NULL;
	snprintf(file, sizeof(file), "%s/cli.out", t->dir);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(fd, 1);
		dup2(fd, 2);
		_exit(cmd_audit(argc + 1, argv));
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	*out = (char *)slurp(file, &len);
	(*out)[len] = '\0';
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void test_cli(void **state)
{
	struct tmp *t = *state;
	char *out, *key = keygen(t), pub[160];

	write_fixture(t->path, key);
	snprintf(pub, sizeof(pub), "%s.pub", key);

	assert_int_equal(run_cli(t, &out, 4, "dump", "--json", "--filter=decision=denied", t->path),
			 0);
	/* One line: the denied openat, with wall time, errno name and its stack. */
	assert_non_null(strstr(out, "\"syscall\":\"openat\""));
	assert_non_null(strstr(out, "\"errno_name\":\"EACCES\""));
	assert_non_null(strstr(out, "\"time\":\"2023-11-14T22:13:20.123460789Z\""));
	assert_non_null(strstr(out, "\"symbol\":\"__open64\""));
	assert_null(strchr(strchr(out, '\n') + 1, '\n'));
	free(out);

	assert_int_equal(run_cli(t, &out, 2, "dump", t->path), 0);
	assert_non_null(strstr(out, "openat(\"/etc/shadow\""));
	assert_non_null(strstr(out, "= -EACCES denied rule=default-deny"));
	assert_non_null(strstr(out, "__open64+0x24"));
	free(out);

	assert_int_equal(run_cli(t, &out, 2, "stats", t->path), 0);
	assert_non_null(strstr(out, "top denied paths"));
	assert_non_null(strstr(out, "/etc/shadow"));
	assert_non_null(strstr(out, "default-deny"));
	free(out);

	assert_int_equal(run_cli(t, &out, 4, "verify", "--key", pub, t->path), 0);
	free(out);
	assert_int_equal(run_cli(t, &out, 1, "verify"), 2);
	free(out);
	assert_int_equal(run_cli(t, &out, 3, "dump", "--filter", "nonsense", t->path), 2);
	free(out);
	assert_int_equal(run_cli(t, &out, 1, "frobnicate"), 2);
	free(out);
	assert_int_equal(run_cli(t, &out, 2, "keygen", key), 1); /* exists */
	free(out);
	free(key);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_round_trip_unstacked, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_unknown_skipped, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_truncated, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_flipped_byte, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_chain_detects_edit, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_signature, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_zstd_cli, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_drops_reported, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_frame_timing, setup_tmp, teardown_tmp),
		cmocka_unit_test(test_filter),
		cmocka_unit_test(test_percentile),
		cmocka_unit_test_setup_teardown(test_cli, setup_tmp, teardown_tmp),
	};

	return cmocka_run_group_tests_name("audit", tests, NULL, NULL);
}
