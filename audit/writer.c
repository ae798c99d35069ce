/* SPDX-License-Identifier: MIT */
/*
 * The audit writer.
 *
 * Supervisor threads encode each record with msgpack straight into a bounded in-memory
 * buffer under w->lock; a writer thread swaps that buffer for an empty one, hashes each
 * record into the chain, compresses it into the current zstd frame and, when the frame
 * ends, appends a ckpt record, finishes the frame and hands it to the disk with write(2)
 * + fdatasync(2). A frame is only ever written whole, so after a crash the file is a run
 * of complete frames plus, at worst, the tail of one write in progress.
 *
 * Lock order: w->lock is the only lock. The writer thread holds it only to swap buffers;
 * callers hold it only to encode one record (no allocation, no system call except a
 * futex wake when the writer must be told).
 *
 * Ownership: fields under "lock" are shared; fields under "writer thread" are touched
 * only by the writer thread between audit_writer_open() and the join in
 * audit_writer_close(), and by close after the join.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "audit-internal.h"
#include "cleanup.h"
#include "clock.h"
#include "hash.h"
#include "io.h"

#define DEFAULT_BUFFER_BYTES ((size_t)4 << 20)
#define DEFAULT_FRAME_BYTES ((size_t)256 << 10)
#define DEFAULT_FRAME_MS 1000u
/* Level 1 with a window no wider than a default frame: a frame is compressed on its own,
 * so a longer window finds nothing more, and level 3's tables (768 KiB, zeroed at every
 * frame start, and a 2 MiB window) cost a short run more than its whole stream. On a
 * tar run's records level 1 writes 2% more bytes than level 3 (bench/RESULTS.md). */
#define DEFAULT_ZSTD_LEVEL 1
#define ZSTD_WINDOW_LOG 18
#define TOTAL_SLOTS 512
#define TOTAL_NAME 32

/* Each pending record is preceded by this header; it never reaches the file. */
struct pending_hdr {
	uint32_t len;
	uint8_t kind;
	uint8_t decision;
	uint16_t pad;
};

enum rec_kind { KIND_HDR, KIND_SYS, KIND_PROC, KIND_FTR };

struct total_slot {
	char name[TOTAL_NAME];
	uint64_t n[_AUDIT_DECISION_MAX];
	bool used;
};

struct audit_writer {
	int fd;
	bool stacks_all;
	char *session, *tenant;
	size_t cap, frame_bytes;
	uint64_t frame_ns;
	bool have_key;
	uint8_t sk[crypto_sign_SECRETKEYBYTES];
	pthread_t thread;
	bool thread_started;

	/* lock */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	uint8_t *active, *spare;
	size_t active_len;
	uint64_t next_seq;
	uint64_t dropped;
	bool urgent, closing;
	struct audit__enc final;          /* the footer, encoded by close */
	/* Totals are kept at append time, so they also count records that were dropped:
	 * the footer stays complete even when the stream is not. */
	struct total_slot totals[TOTAL_SLOTS];
	size_t totals_other[_AUDIT_DECISION_MAX];

	/* writer thread */
	int error;
	ZSTD_CCtx *cctx;
	uint8_t *obuf;
	size_t olen, ocap;
	bool frame_open;
	uint64_t frame_start, frame_index;
	size_t frame_raw;
	uint8_t chain[AUDIT_HASH_BYTES];
	uint64_t written, n_sys, n_proc, dropped_seen;
	uint64_t dec[_AUDIT_DECISION_MAX];
};

static void set_error(struct audit_writer *w, int err)
{
	if (w->error == 0)
		w->error = err;
}

/* ---- encoders (shared by every caller; pure functions of the record) ---- */

static void pack_str_array(msgpack_packer *pk, const char *const *v)
{
	size_t n = 0;

	while (v[n])
		n++;
	msgpack_pack_array(pk, n);
	for (size_t i = 0; i < n; i++)
		audit__pack_cstr(pk, v[i]);
}

static void encode_hdr(msgpack_packer *pk, const struct audit_writer *w, uint64_t seq,
		       const struct audit_hdr *h, const char *session, const char *tenant)
{
	struct audit__map m;

	audit__map_begin(pk, &m);
	audit__kv_str(pk, &m, "t", "hdr");
	audit__kv_u64(pk, &m, "seq", seq);
	audit__kv_u64(pk, &m, "v", AUDIT_SCHEMA_VERSION);
	audit__kv_str(pk, &m, "mv", h->moat_version);
	audit__kv_str(pk, &m, "run", h->run_id);
	audit__kv_str(pk, &m, "ses", session);
	audit__kv_str(pk, &m, "ten", tenant);
	if (h->argv) {
		audit__key(pk, &m, "argv");
		pack_str_array(pk, h->argv);
	}
	audit__kv_str(pk, &m, "cwd", h->cwd);
	if (h->env_names) {
		audit__key(pk, &m, "env");
		pack_str_array(pk, h->env_names);
	}
	audit__kv_str(pk, &m, "pol", h->policy_json);
	audit__kv_str(pk, &m, "ph", h->policy_hash);
	audit__kv_str(pk, &m, "mode", h->mode);
	audit__kv_str(pk, &m, "kern", h->kernel);
	audit__kv_str(pk, &m, "arch", h->arch);
	audit__key(pk, &m, "feat");
	msgpack_pack_array(pk, h->features ? h->n_features : 0);
	for (size_t i = 0; h->features && i < h->n_features; i++) {
		const struct audit_feature *f = &h->features[i];
		struct audit__map fm;

		audit__map_begin(pk, &fm);
		audit__kv_str(pk, &fm, "n", f->name ? f->name : "");
		audit__key(pk, &fm, "ok");
		if (f->present)
			msgpack_pack_true(pk);
		else
			msgpack_pack_false(pk);
		audit__kv_str(pk, &fm, "d", f->detail);
		audit__map_end(pk, &fm);
	}
	audit__kv_u64(pk, &m, "wall", h->start_wall_ns);
	audit__kv_u64(pk, &m, "mono", h->start_mono_ns);
	audit__kv_str(pk, &m, "stk", w->stacks_all ? "all" : "denied");
	audit__map_end(pk, &m);
}

static void encode_sys(msgpack_packer *pk, uint64_t seq, const struct audit_sys *s)
{
	struct audit__map m;

	audit__map_begin(pk, &m);
	audit__kv_str(pk, &m, "t", "sys");
	audit__kv_u64(pk, &m, "seq", seq);
	audit__kv_u64(pk, &m, "ts", s->mono_ns);
	audit__kv_i64(pk, &m, "pid", s->pid);
	audit__kv_i64(pk, &m, "tid", s->tid);
	audit__kv_i64(pk, &m, "spid", s->sandbox_pid);
	audit__kv_i64(pk, &m, "stid", s->sandbox_tid);
	audit__kv_str(pk, &m, "comm", s->comm);
	audit__kv_str(pk, &m, "sc", s->syscall);
	audit__kv_i64(pk, &m, "nr", s->nr);
	audit__key(pk, &m, "args");
	msgpack_pack_array(pk, 6);
	for (int i = 0; i < 6; i++)
		msgpack_pack_uint64(pk, s->args[i]);
	audit__kv_str(pk, &m, "path", s->path);
	audit__kv_str(pk, &m, "res", s->resolved);
	audit__kv_str(pk, &m, "path2", s->path2);
	audit__kv_str(pk, &m, "addr", s->addr);
	audit__kv_str(pk, &m, "flags", s->flags);
	audit__kv_str(pk, &m, "dec", audit_decision_name(s->decision));
	audit__kv_str(pk, &m, "rule", s->rule);
	audit__kv_i64(pk, &m, "ret", s->result);
	audit__kv_i64(pk, &m, "err", s->err);
	audit__kv_u64(pk, &m, "lat", s->latency_ns);
	if (s->stack && s->n_stack > 0) {
		audit__key(pk, &m, "stk");
		msgpack_pack_array(pk, s->n_stack);
		for (size_t i = 0; i < s->n_stack; i++) {
			const struct audit_frame *f = &s->stack[i];
			struct audit__map fm;

			audit__map_begin(pk, &fm);
			audit__kv_u64(pk, &fm, "ip", f->ip);
			audit__kv_str(pk, &fm, "mod", f->module);
			audit__kv_str(pk, &fm, "bid", f->build_id);
			audit__kv_str(pk, &fm, "sym", f->symbol);
			audit__kv_u64(pk, &fm, "off", f->offset);
			audit__map_end(pk, &fm);
		}
	}
	audit__map_end(pk, &m);
}

static void encode_proc(msgpack_packer *pk, uint64_t seq, const struct audit_proc *p)
{
	struct audit__map m;

	audit__map_begin(pk, &m);
	audit__kv_str(pk, &m, "t", "proc");
	audit__kv_u64(pk, &m, "seq", seq);
	audit__kv_str(pk, &m, "ev", audit_proc_event_name(p->event));
	audit__kv_u64(pk, &m, "ts", p->mono_ns);
	audit__kv_i64(pk, &m, "pid", p->pid);
	audit__kv_i64(pk, &m, "ppid", p->ppid);
	if (p->tid)
		audit__kv_i64(pk, &m, "tid", p->tid);
	audit__kv_i64(pk, &m, "spid", p->sandbox_pid);
	audit__kv_i64(pk, &m, "stid", p->sandbox_tid);
	audit__kv_i64(pk, &m, "sppid", p->sandbox_ppid);
	audit__kv_str(pk, &m, "path", p->path);
	audit__kv_bin(pk, &m, "sha", p->sha256, 32);
	if (p->event == AUDIT_PROC_EXEC) {
		if (p->argv) {
			audit__key(pk, &m, "argv");
			pack_str_array(pk, p->argv);
		}
		if (p->argv_truncated)
			audit__kv_u64(pk, &m, "argvcut", 1);
		audit__kv_str(pk, &m, "dec", audit_decision_name(p->decision));
		if (p->err)
			audit__kv_i64(pk, &m, "err", p->err);
		audit__kv_str(pk, &m, "rule", p->rule);
	}
	if (p->event == AUDIT_PROC_EXIT) {
		audit__kv_i64(pk, &m, "st", p->status);
		audit__kv_i64(pk, &m, "sig", p->signal);
		if (p->core)
			audit__kv_u64(pk, &m, "core", 1);
		if (p->utime_ns || p->stime_ns) {
			audit__kv_u64(pk, &m, "utime", p->utime_ns);
			audit__kv_u64(pk, &m, "stime", p->stime_ns);
		}
	}
	audit__map_end(pk, &m);
}

static void encode_ftr(msgpack_packer *pk, const struct audit_writer *w, uint64_t seq,
		       const struct audit_ftr *f)
{
	struct audit__map m;
	size_t n_tot = 0;

	audit__map_begin(pk, &m);
	audit__kv_str(pk, &m, "t", "ftr");
	audit__kv_u64(pk, &m, "seq", seq);
	audit__kv_i64(pk, &m, "exit", f->exit_status);
	audit__kv_str(pk, &m, "why", f->reason);
	audit__kv_u64(pk, &m, "wall", f->wall_ns);
	audit__kv_u64(pk, &m, "cpu", f->cpu_ns);
	audit__kv_u64(pk, &m, "mem", f->peak_memory);
	audit__key(pk, &m, "chg");
	msgpack_pack_array(pk, f->changes ? f->n_changes : 0);
	for (size_t i = 0; f->changes && i < f->n_changes; i++) {
		const struct audit_change *c = &f->changes[i];
		struct audit__map cm;

		audit__map_begin(pk, &cm);
		audit__kv_str(pk, &cm, "k", c->kind);
		audit__kv_str(pk, &cm, "p", c->path);
		audit__kv_str(pk, &cm, "op", c->old_path);
		audit__kv_u64(pk, &cm, "sz", c->size);
		audit__kv_bin(pk, &cm, "sha", c->sha256, 32);
		audit__kv_str(pk, &cm, "hs", c->hash_skipped);
		audit__map_end(pk, &cm);
	}

	for (size_t i = 0; i < TOTAL_SLOTS; i++)
		for (unsigned d = 0; w->totals[i].used && d < _AUDIT_DECISION_MAX; d++)
			n_tot += w->totals[i].n[d] > 0;
	for (unsigned d = 0; d < _AUDIT_DECISION_MAX; d++)
		n_tot += w->totals_other[d] > 0;
	audit__key(pk, &m, "tot");
	msgpack_pack_array(pk, n_tot);
	for (size_t i = 0; i <= TOTAL_SLOTS; i++) {
		for (unsigned d = 0; d < _AUDIT_DECISION_MAX; d++) {
			struct audit__map tm;
			uint64_t n;
			const char *name;

			if (i == TOTAL_SLOTS) {
				n = w->totals_other[d];
				name = "(other)";
			} else {
				if (!w->totals[i].used)
					break;
				n = w->totals[i].n[d];
				name = w->totals[i].name;
			}
			if (n == 0)
				continue;
			audit__map_begin(pk, &tm);
			audit__kv_str(pk, &tm, "sc", name);
			audit__kv_str(pk, &tm, "dec", audit_decision_name(d));
			audit__kv_u64(pk, &tm, "n", n);
			audit__map_end(pk, &tm);
		}
	}
	audit__kv_u64(pk, &m, "n", seq);
	audit__kv_u64(pk, &m, "drop", w->dropped);
	audit__map_end(pk, &m);
}

/* ---- the hot path: append one record under the lock ---- */

static void count_total(struct audit_writer *w, const char *name, enum audit_decision d)
{
	uint32_t h;
	size_t len;

	if ((unsigned)d >= _AUDIT_DECISION_MAX)
		return;
	if (!name)
		name = "?";
	len = strlen(name);
	if (len >= TOTAL_NAME) {
		w->totals_other[d]++;
		return;
	}
	h = fnv1a(name, len);
	/* Open addressing; a full table (more distinct names than syscalls exist) spills
	 * into "(other)" rather than allocating on the hot path. */
	for (size_t probe = 0; probe < TOTAL_SLOTS; probe++) {
		struct total_slot *s = &w->totals[(h + probe) % TOTAL_SLOTS];

		if (!s->used) {
			memcpy(s->name, name, len + 1);
			s->used = true;
		} else if (!streq(s->name, name)) {
			continue;
		}
		s->n[d]++;
		return;
	}
	w->totals_other[d]++;
}

static void append_begin(struct audit_writer *w, struct audit__enc *e, msgpack_packer *pk)
{
	*e = (struct audit__enc){ .buf = w->active, .len = w->active_len, .cap = w->cap };
	if (e->cap - e->len < sizeof(struct pending_hdr))
		e->overflow = true;
	else
		e->len += sizeof(struct pending_hdr);
	msgpack_packer_init(pk, e, audit__enc_write);
}

static int append_commit(struct audit_writer *w, struct audit__enc *e, enum rec_kind kind,
			 enum audit_decision d)
{
	size_t start = w->active_len;
	struct pending_hdr ph;
	bool signal;

	if (e->overflow) {
		/* Rolled back by not advancing active_len; reported in the next ckpt. */
		w->dropped++;
		return -ENOBUFS;
	}
	ph = (struct pending_hdr){
		.len = (uint32_t)(e->len - start - sizeof(ph)),
		.kind = (uint8_t)kind,
		.decision = (uint8_t)d,
	};
	memcpy(w->active + start, &ph, sizeof(ph));
	w->active_len = e->len;
	w->next_seq++;

	/* Wake the writer only when it has something to decide: the first record after an
	 * idle period starts the frame clock, a denial ends the frame at once, and a frame's
	 * worth of bytes (or half the buffer) must be drained. Otherwise it sleeps until the
	 * frame deadline, which keeps futex wakes off most notifications. */
	signal = start == 0 || (start < w->frame_bytes && w->active_len >= w->frame_bytes) ||
		 (start < w->cap / 2 && w->active_len >= w->cap / 2);
	/* The header too: written before the sandbox starts, it is on disk before the
	 * sandbox can do anything (or the supervisor die of it). */
	if (kind == KIND_HDR || (kind == KIND_SYS && d == AUDIT_DENIED)) {
		w->urgent = true;
		signal = true;
	}
	if (signal)
		pthread_cond_signal(&w->wake);
	return 0;
}

int audit_hdr(struct audit_writer *w, const struct audit_hdr *h)
{
	struct audit__enc e;
	msgpack_packer pk;
	int r;

	if (!w || !h)
		return -EINVAL;
	pthread_mutex_lock(&w->lock);
	append_begin(w, &e, &pk);
	encode_hdr(&pk, w, w->next_seq, h, w->session, w->tenant);
	r = append_commit(w, &e, KIND_HDR, 0);
	pthread_mutex_unlock(&w->lock);
	return r;
}

int audit_sys(struct audit_writer *w, const struct audit_sys *s)
{
	struct audit__enc e;
	msgpack_packer pk;
	int r;

	if (!w || !s)
		return -EINVAL;
	pthread_mutex_lock(&w->lock);
	count_total(w, s->syscall, s->decision);
	append_begin(w, &e, &pk);
	encode_sys(&pk, w->next_seq, s);
	r = append_commit(w, &e, KIND_SYS, s->decision);
	pthread_mutex_unlock(&w->lock);
	return r;
}

int audit_proc(struct audit_writer *w, const struct audit_proc *p)
{
	struct audit__enc e;
	msgpack_packer pk;
	int r;

	if (!w || !p)
		return -EINVAL;
	pthread_mutex_lock(&w->lock);
	append_begin(w, &e, &pk);
	encode_proc(&pk, w->next_seq, p);
	r = append_commit(w, &e, KIND_PROC, 0);
	pthread_mutex_unlock(&w->lock);
	return r;
}

bool audit_wants_stacks(const struct audit_writer *w, enum audit_decision d)
{
	return w && (d == AUDIT_DENIED || w->stacks_all);
}

/* ---- the writer thread ---- */

static void compress(struct audit_writer *w, const void *src, size_t n, ZSTD_EndDirective mode)
{
	ZSTD_inBuffer in = { src, n, 0 };

	for (;;) {
		ZSTD_outBuffer out;
		size_t r, need = ZSTD_CStreamOutSize();

		if (w->ocap - w->olen < need) {
			uint8_t *nb = realloc(w->obuf, w->ocap * 2 + need);

			if (!nb) {
				set_error(w, -ENOMEM);
				return;
			}
			w->obuf = nb;
			w->ocap = w->ocap * 2 + need;
		}
		out = (ZSTD_outBuffer){ w->obuf + w->olen, w->ocap - w->olen, 0 };
		r = ZSTD_compressStream2(w->cctx, &out, &in, mode);
		w->olen += out.pos;
		if (ZSTD_isError(r)) {
			set_error(w, -EIO);
			return;
		}
		if (mode == ZSTD_e_end ? r == 0 : in.pos == in.size)
			return;
	}
}

/* Write the compressed frame in one go and make it durable before the next one starts:
 * this is what bounds the loss of a SIGKILL to the frame being built. */
static void flush_frame(struct audit_writer *w)
{
	int r;

	compress(w, NULL, 0, ZSTD_e_end);
	r = write_all(w->fd, w->obuf, w->olen);
	if (r < 0)
		set_error(w, r);
	else if (fdatasync(w->fd) < 0 && errno != EINVAL && errno != EROFS)
		set_error(w, -errno);
	w->olen = 0;
	w->frame_index++;
	w->frame_open = false;
}

static void feed(struct audit_writer *w, const uint8_t *rec, size_t n);

static void end_frame(struct audit_writer *w)
{
	uint8_t buf[1024];
	struct audit__enc e = { .buf = buf, .cap = sizeof(buf) };
	msgpack_packer pk;
	struct audit__map m, dm;

	msgpack_packer_init(&pk, &e, audit__enc_write);
	audit__map_begin(&pk, &m);
	audit__kv_str(&pk, &m, "t", "ckpt");
	audit__kv_u64(&pk, &m, "n", w->written);
	audit__kv_u64(&pk, &m, "frame", w->frame_index);
	audit__kv_u64(&pk, &m, "ts", now_mono_ns());
	audit__kv_u64(&pk, &m, "drop", w->dropped_seen);
	audit__kv_u64(&pk, &m, "sys", w->n_sys);
	audit__kv_u64(&pk, &m, "proc", w->n_proc);
	audit__key(&pk, &m, "dec");
	audit__map_begin(&pk, &dm);
	for (unsigned d = 0; d < _AUDIT_DECISION_MAX; d++)
		audit__kv_u64(&pk, &dm, audit_decision_name(d), w->dec[d]);
	audit__map_end(&pk, &dm);
	audit__kv_bin(&pk, &m, "h", w->chain, AUDIT_HASH_BYTES);
	audit__map_end(&pk, &m);

	/* The ckpt carries the chain value before itself, then is chained like any record,
	 * so editing a checkpoint's counters breaks the next checkpoint. */
	audit__chain(w->chain, buf, e.len);
	compress(w, buf, e.len, ZSTD_e_continue);
	flush_frame(w);
}

static void feed(struct audit_writer *w, const uint8_t *rec, size_t n)
{
	if (!w->frame_open) {
		w->frame_open = true;
		w->frame_start = now_mono_ns();
		w->frame_raw = 0;
	}
	audit__chain(w->chain, rec, n);
	w->written++;
	compress(w, rec, n, ZSTD_e_continue);
	w->frame_raw += n;
	if (w->frame_raw >= w->frame_bytes)
		end_frame(w);
}

static void process(struct audit_writer *w, const uint8_t *buf, size_t len)
{
	size_t off = 0;

	while (off + sizeof(struct pending_hdr) <= len) {
		struct pending_hdr ph;

		memcpy(&ph, buf + off, sizeof(ph));
		off += sizeof(ph);
		if (ph.kind == KIND_SYS) {
			w->n_sys++;
			if (ph.decision < _AUDIT_DECISION_MAX)
				w->dec[ph.decision]++;
		} else if (ph.kind == KIND_PROC) {
			w->n_proc++;
		}
		feed(w, buf + off, ph.len);
		off += ph.len;
	}
}

static void *writer_main(void *arg)
{
	struct audit_writer *w = arg;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		bool urgent, closing;
		uint8_t *take;
		size_t take_len;

		if (!w->closing && !w->urgent && w->active_len < w->frame_bytes &&
		    !(w->active_len > 0 && !w->frame_open)) {
			int r = 0;

			if (w->frame_open) {
				uint64_t dl = w->frame_start + w->frame_ns;
				struct timespec ts = { .tv_sec = (time_t)(dl / 1000000000u),
						       .tv_nsec = (long)(dl % 1000000000u) };

				r = pthread_cond_timedwait(&w->wake, &w->lock, &ts);
			} else {
				pthread_cond_wait(&w->wake, &w->lock);
			}
			if (r != ETIMEDOUT)
				continue;
		}

		take = w->active;
		take_len = w->active_len;
		w->active = w->spare;
		w->active_len = 0;
		w->spare = take;
		urgent = w->urgent;
		w->urgent = false;
		closing = w->closing;
		w->dropped_seen = w->dropped;
		pthread_mutex_unlock(&w->lock);

		process(w, take, take_len);
		if (closing && w->final.buf) {
			feed(w, w->final.buf, w->final.len);
		}
		if (w->frame_open &&
		    (urgent || closing || now_mono_ns() >= w->frame_start + w->frame_ns))
			end_frame(w);

		pthread_mutex_lock(&w->lock);
		if (closing)
			break;
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* ---- lifecycle ---- */

static void writer_free(struct audit_writer *w)
{
	if (!w)
		return;
	safe_close(w->fd);
	free(w->active);
	free(w->spare);
	free(w->obuf);
	free(w->final.buf);
	free(w->session);
	free(w->tenant);
	ZSTD_freeCCtx(w->cctx);
	sodium_memzero(w->sk, sizeof(w->sk));
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->wake);
	free(w);
}

int audit_writer_open(const char *path, const struct audit_opts *opts, struct audit_writer **ret)
{
	int fd;

	if (!path || !ret)
		return -EINVAL;
	/* Never through a link: whoever could plant one would choose what we truncate. */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	return audit_writer_open_fd(fd, opts, ret);
}

int audit_writer_open_fd(int fd, const struct audit_opts *opts, struct audit_writer **ret)
{
	struct audit_writer *w;
	pthread_condattr_t ca;
	int r;

	if (fd < 0 || !ret) {
		safe_close(fd);
		return -EINVAL;
	}
	if (sodium_init() < 0) {
		safe_close(fd);
		return -EIO;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		safe_close(fd);
		return -ENOMEM;
	}
	w->fd = fd;
	pthread_mutex_init(&w->lock, NULL);
	/* The frame deadline is a monotonic time; wall-clock jumps must not stretch it. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->wake, &ca);
	pthread_condattr_destroy(&ca);

	w->stacks_all = opts && opts->stacks_all;
	w->cap = opts && opts->buffer_bytes ? opts->buffer_bytes : DEFAULT_BUFFER_BYTES;
	w->frame_bytes = opts && opts->frame_bytes ? opts->frame_bytes : DEFAULT_FRAME_BYTES;
	w->frame_ns = (uint64_t)(opts && opts->frame_ms ? opts->frame_ms : DEFAULT_FRAME_MS) *
		      1000000u;
	if (opts && opts->session && !(w->session = strdup(opts->session)))
		goto nomem;
	if (opts && opts->tenant && !(w->tenant = strdup(opts->tenant)))
		goto nomem;
	if (opts && opts->key_path) {
		r = audit__key_read_secret(opts->key_path, w->sk);
		if (r < 0)
			goto fail;
		w->have_key = true;
	}

	w->active = malloc(w->cap);
	w->spare = malloc(w->cap);
	w->ocap = ZSTD_CStreamOutSize() * 4;
	w->obuf = malloc(w->ocap);
	w->cctx = ZSTD_createCCtx();
	if (!w->active || !w->spare || !w->obuf || !w->cctx)
		goto nomem;
	if (ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel,
						opts && opts->zstd_level ? opts->zstd_level :
									   DEFAULT_ZSTD_LEVEL)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_windowLog, ZSTD_WINDOW_LOG))) {
		r = -EINVAL;
		goto fail;
	}

	r = -pthread_create(&w->thread, NULL, writer_main, w);
	if (r < 0)
		goto fail;
	w->thread_started = true;
	*ret = w;
	return 0;
nomem:
	r = -ENOMEM;
fail:
	writer_free(w);
	return r;
}

static void encode_sig(struct audit_writer *w, struct audit__enc *e)
{
	uint8_t msg[sizeof(AUDIT_SIG_CONTEXT) - 1 + AUDIT_HASH_BYTES];
	uint8_t sig[crypto_sign_BYTES], pk[crypto_sign_PUBLICKEYBYTES];
	msgpack_packer pk_;
	struct audit__map m;

	audit__sig_message(msg, w->chain);
	crypto_sign_detached(sig, NULL, msg, sizeof(msg), w->sk);
	crypto_sign_ed25519_sk_to_pk(pk, w->sk);
	msgpack_packer_init(&pk_, e, audit__enc_write);
	audit__map_begin(&pk_, &m);
	audit__kv_str(&pk_, &m, "t", "sig");
	audit__kv_str(&pk_, &m, "alg", "ed25519");
	audit__kv_bin(&pk_, &m, "h", w->chain, AUDIT_HASH_BYTES);
	audit__kv_bin(&pk_, &m, "pk", pk, sizeof(pk));
	audit__kv_bin(&pk_, &m, "s", sig, sizeof(sig));
	audit__map_end(&pk_, &m);
}

uint64_t audit_writer_dropped(struct audit_writer *w)
{
	uint64_t n;

	if (!w)
		return 0;
	pthread_mutex_lock(&w->lock);
	n = w->dropped;
	pthread_mutex_unlock(&w->lock);
	return n;
}

int audit_writer_close(struct audit_writer *w, const struct audit_ftr *f)
{
	static const struct audit_ftr empty = { .exit_status = -1, .reason = "unknown" };
	msgpack_packer pk;
	int r;

	if (!w)
		return 0;
	pthread_mutex_lock(&w->lock);
	/* The footer is encoded on the heap, outside the bounded buffer: it may be large
	 * (the list of changed files) and it must never be the record that gets dropped. */
	w->final = (struct audit__enc){ .grow = true };
	msgpack_packer_init(&pk, &w->final, audit__enc_write);
	encode_ftr(&pk, w, w->next_seq, f ? f : &empty);
	if (w->final.overflow) {
		free(w->final.buf);
		w->final = (struct audit__enc){ 0 };
		w->dropped++;
	} else {
		w->next_seq++;
	}
	w->closing = true;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	if (w->thread_started)
		pthread_join(w->thread, NULL);

	/* The signature is a frame of its own after the last ckpt: it signs the chain value
	 * that includes that ckpt, so nothing before it can change unnoticed. */
	if (w->have_key) {
		uint8_t buf[512];
		struct audit__enc e = { .buf = buf, .cap = sizeof(buf) };

		encode_sig(w, &e);
		compress(w, buf, e.len, ZSTD_e_continue);
		flush_frame(w);
	}
	r = w->error;
	if (close(w->fd) < 0 && r == 0)
		r = -errno;
	w->fd = -1;
	writer_free(w);
	return r;
}
