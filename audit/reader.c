/* SPDX-License-Identifier: MIT */
/*
 * The audit reader: walks a stream frame by frame and hands out one decoded record at a
 * time. Damage is contained to a frame: a frame whose checksum fails is reported and
 * skipped, garbage between frames is skipped up to the next zstd magic number, and a
 * file that ends inside a frame is reported as truncated with the bytes it lost.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "audit-internal.h"
#include "cleanup.h"

/* A frame the writer makes holds 256 KiB and a record; anything far larger is not ours
 * and must not make the reader allocate without bound. */
#define MAX_FRAME_CONTENT ((size_t)256 << 20)
#define ZSTD_MAGIC 0xFD2FB528u

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	max_align_t data[];
};

struct audit_reader {
	unsigned flags;
	const uint8_t *map;
	size_t size;
	size_t pos;                     /* offset of the next frame */
	ZSTD_DCtx *dctx;

	uint8_t *out;                   /* content of the current frame */
	size_t out_len, out_cap, rec_off;
	bool in_frame;
	uint64_t frame_index, cur_frame, cur_offset, rec_index;

	msgpack_unpacked up;
	struct arena_chunk *arena;
	struct audit_read_status st;
	char err[256];
};

_printf_(2, 3) static void set_err(struct audit_reader *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
}

static void *arena_alloc(struct audit_reader *r, size_t n)
{
	struct arena_chunk *c = r->arena;
	void *p;

	n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (!c || c->cap - c->used < n) {
		size_t cap = MAX(n, (size_t)16384);

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->next = r->arena;
		c->used = 0;
		c->cap = cap;
		r->arena = c;
	}
	p = (char *)c->data + c->used;
	c->used += n;
	return p;
}

static void arena_reset(struct audit_reader *r)
{
	while (r->arena && r->arena->next) {
		struct arena_chunk *c = r->arena;

		r->arena = c->next;
		free(c);
	}
	if (r->arena)
		r->arena->used = 0;
}

int audit_reader_open(const char *path, unsigned flags, struct audit_reader **ret)
{
	_cleanup_close_ int fd = -1;
	struct audit_reader *r;
	struct stat stbuf;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &stbuf) < 0)
		return -errno;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->flags = flags;
	r->size = (size_t)stbuf.st_size;
	r->st.file_size = r->size;
	/* The file may still be growing (the supervisor writing it); what was there at
	 * open is what we read. */
	if (r->size > 0) {
		r->map = mmap(NULL, r->size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (r->map == MAP_FAILED) {
			int e = -errno;

			free(r);
			return e;
		}
	}
	r->dctx = ZSTD_createDCtx();
	if (!r->dctx) {
		audit_reader_free(r);
		return -ENOMEM;
	}
	msgpack_unpacked_init(&r->up);
	*ret = r;
	return 0;
}

void audit_reader_free(struct audit_reader *r)
{
	if (!r)
		return;
	if (r->map && r->size)
		munmap((void *)r->map, r->size);
	ZSTD_freeDCtx(r->dctx);
	msgpack_unpacked_destroy(&r->up);
	arena_reset(r);
	free(r->arena);
	free(r->out);
	free(r);
}

const struct audit_read_status *audit_reader_status(const struct audit_reader *r)
{
	return &r->st;
}

const char *audit_reader_error(const struct audit_reader *r)
{
	return r->err;
}

static bool is_skippable(const uint8_t *p, size_t n)
{
	uint32_t magic;

	if (n < 4)
		return false;
	magic = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	return (magic & 0xFFFFFFF0u) == 0x184D2A50u;
}

/* Offset of the next zstd magic number after pos, or the file size. */
static size_t find_magic(const struct audit_reader *r, size_t from)
{
	static const uint8_t magic[4] = { 0x28, 0xB5, 0x2F, 0xFD };
	const uint8_t *p;

	if (from >= r->size)
		return r->size;
	p = memmem(r->map + from, r->size - from, magic, sizeof(magic));
	return p ? (size_t)(p - r->map) : r->size;
}

static int inflate_frame(struct audit_reader *r, size_t off, size_t csize)
{
	ZSTD_inBuffer in = { r->map + off, csize, 0 };

	ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
	r->out_len = 0;
	for (;;) {
		ZSTD_outBuffer out;
		size_t ret;

		if (r->out_cap - r->out_len < ZSTD_DStreamOutSize()) {
			size_t ncap = r->out_cap * 2 + ZSTD_DStreamOutSize();
			uint8_t *nb;

			if (ncap > MAX_FRAME_CONTENT + ZSTD_DStreamOutSize()) {
				set_err(r, "frame %llu at byte %zu: content larger than %zu bytes",
					(unsigned long long)r->cur_frame, off, MAX_FRAME_CONTENT);
				return -EFBIG;
			}
			nb = realloc(r->out, ncap);
			if (!nb)
				return -ENOMEM;
			r->out = nb;
			r->out_cap = ncap;
		}
		out = (ZSTD_outBuffer){ r->out + r->out_len, r->out_cap - r->out_len, 0 };
		ret = ZSTD_decompressStream(r->dctx, &out, &in);
		r->out_len += out.pos;
		if (ZSTD_isError(ret)) {
			if (ZSTD_getErrorCode(ret) == ZSTD_error_checksum_wrong)
				set_err(r, "frame %llu at byte %zu: content checksum mismatch",
					(unsigned long long)r->cur_frame, off);
			else
				set_err(r, "frame %llu at byte %zu: corrupt (%s)",
					(unsigned long long)r->cur_frame, off,
					ZSTD_getErrorName(ret));
			return -EBADMSG;
		}
		if (ret == 0)
			return 0;
		if (in.pos == in.size && out.pos < out.size) {
			set_err(r, "frame %llu at byte %zu: ends early",
				(unsigned long long)r->cur_frame, off);
			return -EBADMSG;
		}
	}
}

static enum audit_rec_type classify(const msgpack_object *o)
{
	static const char *const names[_AUDIT_REC_MAX] = {
		[AUDIT_REC_HDR] = "hdr",   [AUDIT_REC_SYS] = "sys", [AUDIT_REC_PROC] = "proc",
		[AUDIT_REC_CKPT] = "ckpt", [AUDIT_REC_FTR] = "ftr", [AUDIT_REC_SIG] = "sig",
	};
	const msgpack_object *t;

	/* "t" is written first, but a reader must not depend on it. */
	t = audit__get(o, "t");
	for (unsigned i = 1; t && i < _AUDIT_REC_MAX; i++)
		if (audit__str_eq(t, names[i]))
			return i;
	return AUDIT_REC_UNKNOWN;
}

/* Find and inflate the next frame. 1: a frame is ready; 0: end; <0: see next(). */
static int next_frame(struct audit_reader *r)
{
	for (;;) {
		size_t remaining, csize, next;
		int k;

		if (r->pos >= r->size) {
			r->st.end_offset = r->pos;
			return 0;
		}
		remaining = r->size - r->pos;
		csize = ZSTD_findFrameCompressedSize(r->map + r->pos, remaining);
		if (ZSTD_isError(csize)) {
			size_t at = r->pos;

			r->st.end_offset = at;
			next = find_magic(r, at + 1);
			if (next == r->size &&
			    ZSTD_getErrorCode(csize) == ZSTD_error_srcSize_wrong) {
				/* A frame that starts well but runs off the end of the file:
				 * the writer was stopped in the middle of writing it. */
				r->st.truncated = true;
				r->st.lost_bytes = remaining;
				r->pos = r->size;
				set_err(r, "truncated: stream ends at byte %zu after %llu complete frames; %zu bytes of an incomplete frame %llu lost",
					at, (unsigned long long)r->st.frames, remaining,
					(unsigned long long)r->frame_index);
				return 0;
			}
			/* Damaged frame header (or block sizes): resynchronise on the next
			 * magic number; the frame is counted so later frames keep the
			 * indices the writer gave them. */
			r->st.skipped_bytes += next - at;
			r->st.bad_frames++;
			r->st.frames++;
			set_err(r, "frame %llu at byte %zu: unreadable frame header (%s); skipped %zu bytes",
				(unsigned long long)r->frame_index, at, ZSTD_getErrorName(csize),
				next - at);
			r->frame_index++;
			r->pos = next;
			if (next == r->size)
				r->st.end_offset = next;
			return -EBADMSG;
		}
		if (is_skippable(r->map + r->pos, remaining)) {
			r->pos += csize;
			continue;
		}
		r->cur_offset = r->pos;
		r->cur_frame = r->frame_index++;
		r->pos += csize;
		r->st.frames++;
		r->st.end_offset = r->pos;
		k = inflate_frame(r, r->cur_offset, csize);
		if (k < 0) {
			if (k == -EBADMSG || k == -EFBIG) {
				r->st.bad_frames++;
				return -EBADMSG;
			}
			return k;
		}
		r->in_frame = true;
		r->rec_off = 0;
		r->rec_index = 0;
		return 1;
	}
}

/* Elements of one record: more than any writer puts in one (a footer with 100k changes
 * has 600k), few enough that decoding it allocates tens of MB at most. */
#define MAX_RECORD_ELEMENTS ((size_t)1 << 22)

static uint64_t be(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/*
 * Walk the msgpack record at p[0..len) without decoding it: true when it is complete and
 * its arrays and maps claim no more elements than bytes remain (every element takes one
 * at least) nor more than MAX_RECORD_ELEMENTS in all. msgpack_unpack_next() allocates
 * a container's elements from its header before reading them, so a few bytes saying
 * "array of 2^31" would otherwise cost gigabytes.
 */
static bool record_plausible(const uint8_t *p, size_t len)
{
	size_t pos = 0, pending = 1, total = 0;

	while (pending > 0) {
		uint64_t skip = 0, kids = 0;
		unsigned hl = 1;
		uint8_t b;

		if (pos >= len)
			return false;
		b = p[pos];
		pending--;
		if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
			/* fixint, nil, bool */
		} else if (b <= 0x8f) {
			kids = 2 * (uint64_t)(b & 0x0f);
		} else if (b <= 0x9f) {
			kids = b & 0x0f;
		} else if (b <= 0xbf) {
			skip = b & 0x1f;
		} else {
			/* header length after the type byte, then what follows */
			static const struct { uint8_t n, kind; } t[0x20] = {
				/* kind: 0 fixed payload n, 1 length n, 2 ext length n (+type),
				 * 3 array count n, 4 map count n, 5 invalid */
				[0x01] = { 0, 5 },
				[0x04] = { 1, 1 }, [0x05] = { 2, 1 }, [0x06] = { 4, 1 },
				[0x07] = { 1, 2 }, [0x08] = { 2, 2 }, [0x09] = { 4, 2 },
				[0x0a] = { 4, 0 }, [0x0b] = { 8, 0 },
				[0x0c] = { 1, 0 }, [0x0d] = { 2, 0 }, [0x0e] = { 4, 0 }, [0x0f] = { 8, 0 },
				[0x10] = { 1, 0 }, [0x11] = { 2, 0 }, [0x12] = { 4, 0 }, [0x13] = { 8, 0 },
				[0x14] = { 2, 0 }, [0x15] = { 3, 0 }, [0x16] = { 5, 0 }, [0x17] = { 9, 0 },
				[0x18] = { 17, 0 },
				[0x19] = { 1, 1 }, [0x1a] = { 2, 1 }, [0x1b] = { 4, 1 },
				[0x1c] = { 2, 3 }, [0x1d] = { 4, 3 }, [0x1e] = { 2, 4 }, [0x1f] = { 4, 4 },
			};
			unsigned n = t[b - 0xc0].n, kind = t[b - 0xc0].kind;

			if (kind == 5)
				return false;
			if (kind == 0) {
				skip = n;
			} else {
				if (len - pos - 1 < n)
					return false;
				hl += n;
				if (kind == 1)
					skip = be(p + pos + 1, n);
				else if (kind == 2)
					skip = be(p + pos + 1, n) + 1;
				else if (kind == 3)
					kids = be(p + pos + 1, n);
				else
					kids = 2 * be(p + pos + 1, n);
			}
		}
		if (len - pos < hl || len - pos - hl < skip)
			return false;
		pos += hl + (size_t)skip;
		total += (size_t)kids;
		pending += (size_t)kids;
		if (pending > len - pos || total > MAX_RECORD_ELEMENTS)
			return false;
	}
	return true;
}

int audit_reader_next(struct audit_reader *r, struct audit_rec *ret)
{
	arena_reset(r);
	for (;;) {
		msgpack_unpack_return ur;
		size_t off;
		int k;

		if (!r->in_frame || r->rec_off >= r->out_len) {
			r->in_frame = false;
			k = next_frame(r);
			if (k <= 0)
				return k;
			continue;
		}
		off = r->rec_off;
		if (!record_plausible(r->out + off, r->out_len - off))
			ur = MSGPACK_UNPACK_PARSE_ERROR;
		else
			ur = msgpack_unpack_next(&r->up, (const char *)r->out, r->out_len, &off);
		if (ur != MSGPACK_UNPACK_SUCCESS && ur != MSGPACK_UNPACK_EXTRA_BYTES) {
			/* The checksum passed, so the writer itself wrote this: a bug or a
			 * different format. Give up on the frame, not the file. */
			set_err(r, "frame %llu at byte %llu: undecodable record at content offset %zu",
				(unsigned long long)r->cur_frame, (unsigned long long)r->cur_offset,
				r->rec_off);
			r->in_frame = false;
			r->st.bad_frames++;
			return -EBADMSG;
		}
		*ret = (struct audit_rec){
			.obj = &r->up.data,
			.raw = r->out + r->rec_off,
			.raw_len = off - r->rec_off,
			.frame = r->cur_frame,
			.frame_offset = r->cur_offset,
			.index = r->rec_index++,
			.last_in_frame = off >= r->out_len,
		};
		r->rec_off = off;
		ret->type = classify(ret->obj);
		ret->has_seq = audit__get_u64(ret->obj, "seq", &ret->seq);
		if (ret->type == AUDIT_REC_UNKNOWN && !(r->flags & AUDIT_READ_UNKNOWN))
			continue;
		r->st.records++;
		return 1;
	}
}

/* ---- typed decoders ---- */

static const char *dup_str(struct audit_reader *r, const msgpack_object *o)
{
	char *s;

	if (!o || o->type != MSGPACK_OBJECT_STR)
		return NULL;
	s = arena_alloc(r, o->via.str.size + 1);
	if (!s)
		return NULL;
	memcpy(s, o->via.str.ptr, o->via.str.size);
	s[o->via.str.size] = '\0';
	return s;
}

static const char *get_str(struct audit_reader *r, const msgpack_object *m, const char *k)
{
	return dup_str(r, audit__get(m, k));
}

static uint64_t get_u64(const msgpack_object *m, const char *k)
{
	uint64_t v = 0;

	audit__get_u64(m, k, &v);
	return v;
}

static int64_t get_i64(const msgpack_object *m, const char *k)
{
	int64_t v = 0;

	audit__get_i64(m, k, &v);
	return v;
}

static bool get_bin(const msgpack_object *m, const char *k, uint8_t *out, size_t n)
{
	const msgpack_object *o = audit__get(m, k);

	if (!o || o->type != MSGPACK_OBJECT_BIN || o->via.bin.size != n)
		return false;
	memcpy(out, o->via.bin.ptr, n);
	return true;
}

static const uint8_t *dup_bin(struct audit_reader *r, const msgpack_object *m, const char *k,
			      size_t n)
{
	uint8_t *p = arena_alloc(r, n);

	if (!p || !get_bin(m, k, p, n))
		return NULL;
	return p;
}

static const msgpack_object *get_array(const msgpack_object *m, const char *k, size_t *n)
{
	const msgpack_object *o = audit__get(m, k);

	*n = 0;
	if (!o || o->type != MSGPACK_OBJECT_ARRAY)
		return NULL;
	*n = o->via.array.size;
	return o->via.array.ptr;
}

/* A NULL-terminated array of strings; non-strings become "". */
static const char *const *dup_str_array(struct audit_reader *r, const msgpack_object *m,
					const char *k)
{
	size_t n;
	const msgpack_object *a = get_array(m, k, &n);
	const char **v;

	if (!a)
		return NULL;
	v = arena_alloc(r, (n + 1) * sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		v[i] = dup_str(r, &a[i]);
		if (!v[i])
			v[i] = "";
	}
	v[n] = NULL;
	return v;
}

static enum audit_decision get_decision(const msgpack_object *m, const char *k)
{
	const msgpack_object *o = audit__get(m, k);
	int d;

	if (!o || o->type != MSGPACK_OBJECT_STR)
		return _AUDIT_DECISION_MAX;
	d = audit_decision_from_name(o->via.str.ptr, o->via.str.size);
	return d < 0 ? _AUDIT_DECISION_MAX : (enum audit_decision)d;
}

int audit_decode_hdr(struct audit_reader *r, const struct audit_rec *rec, struct audit_hdr *ret)
{
	const msgpack_object *m = rec->obj, *feat;
	size_t n;

	if (rec->type != AUDIT_REC_HDR)
		return -EINVAL;
	*ret = (struct audit_hdr){
		.moat_version = get_str(r, m, "mv"),
		.run_id = get_str(r, m, "run"),
		.argv = dup_str_array(r, m, "argv"),
		.cwd = get_str(r, m, "cwd"),
		.env_names = dup_str_array(r, m, "env"),
		.policy_json = get_str(r, m, "pol"),
		.policy_hash = get_str(r, m, "ph"),
		.mode = get_str(r, m, "mode"),
		.kernel = get_str(r, m, "kern"),
		.arch = get_str(r, m, "arch"),
		.start_wall_ns = get_u64(m, "wall"),
		.start_mono_ns = get_u64(m, "mono"),
		.session = get_str(r, m, "ses"),
		.tenant = get_str(r, m, "ten"),
		.stacks_all = audit__str_eq(audit__get(m, "stk"), "all"),
		.schema = (unsigned)get_u64(m, "v"),
	};
	feat = get_array(m, "feat", &n);
	if (feat && n > 0) {
		struct audit_feature *f = arena_alloc(r, n * sizeof(*f));

		if (!f)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++) {
			const msgpack_object *ok = audit__get(&feat[i], "ok");

			f[i] = (struct audit_feature){
				.name = get_str(r, &feat[i], "n"),
				.present = ok && ok->type == MSGPACK_OBJECT_BOOLEAN && ok->via.boolean,
				.detail = get_str(r, &feat[i], "d"),
			};
		}
		ret->features = f;
		ret->n_features = n;
	}
	return 0;
}

int audit_decode_sys(struct audit_reader *r, const struct audit_rec *rec, struct audit_sys *ret)
{
	const msgpack_object *m = rec->obj, *a;
	size_t n;

	if (rec->type != AUDIT_REC_SYS)
		return -EINVAL;
	*ret = (struct audit_sys){
		.mono_ns = get_u64(m, "ts"),
		.pid = (pid_t)get_i64(m, "pid"),
		.tid = (pid_t)get_i64(m, "tid"),
		.sandbox_pid = (pid_t)get_i64(m, "spid"),
		.sandbox_tid = (pid_t)get_i64(m, "stid"),
		.comm = get_str(r, m, "comm"),
		.syscall = get_str(r, m, "sc"),
		.nr = (int)get_i64(m, "nr"),
		.path = get_str(r, m, "path"),
		.resolved = get_str(r, m, "res"),
		.path2 = get_str(r, m, "path2"),
		.addr = get_str(r, m, "addr"),
		.flags = get_str(r, m, "flags"),
		.decision = get_decision(m, "dec"),
		.rule = get_str(r, m, "rule"),
		.result = get_i64(m, "ret"),
		.err = (int)get_i64(m, "err"),
		.latency_ns = get_u64(m, "lat"),
	};
	a = get_array(m, "args", &n);
	for (size_t i = 0; a && i < n && i < 6; i++)
		if (a[i].type == MSGPACK_OBJECT_POSITIVE_INTEGER)
			ret->args[i] = a[i].via.u64;
	a = get_array(m, "stk", &n);
	if (a && n > 0) {
		struct audit_frame *f = arena_alloc(r, n * sizeof(*f));

		if (!f)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++)
			f[i] = (struct audit_frame){
				.ip = get_u64(&a[i], "ip"),
				.module = get_str(r, &a[i], "mod"),
				.build_id = get_str(r, &a[i], "bid"),
				.symbol = get_str(r, &a[i], "sym"),
				.offset = get_u64(&a[i], "off"),
			};
		ret->stack = f;
		ret->n_stack = n;
	}
	return 0;
}

int audit_decode_proc(struct audit_reader *r, const struct audit_rec *rec,
		      struct audit_proc *ret)
{
	const msgpack_object *m = rec->obj, *ev;
	int e = -1;

	if (rec->type != AUDIT_REC_PROC)
		return -EINVAL;
	ev = audit__get(m, "ev");
	if (ev && ev->type == MSGPACK_OBJECT_STR)
		e = audit_proc_event_from_name(ev->via.str.ptr, ev->via.str.size);
	*ret = (struct audit_proc){
		.event = e < 0 ? (enum audit_proc_event)-1 : (enum audit_proc_event)e,
		.mono_ns = get_u64(m, "ts"),
		.pid = (pid_t)get_i64(m, "pid"),
		.ppid = (pid_t)get_i64(m, "ppid"),
		.tid = (pid_t)get_i64(m, "tid"),
		.sandbox_pid = (pid_t)get_i64(m, "spid"),
		.sandbox_tid = (pid_t)get_i64(m, "stid"),
		.sandbox_ppid = (pid_t)get_i64(m, "sppid"),
		.path = get_str(r, m, "path"),
		.sha256 = dup_bin(r, m, "sha", 32),
		.argv = dup_str_array(r, m, "argv"),
		.argv_truncated = get_u64(m, "argvcut") != 0,
		.decision = get_decision(m, "dec"),
		.err = (int)get_i64(m, "err"),
		.rule = get_str(r, m, "rule"),
		.status = (int)get_i64(m, "st"),
		.signal = (int)get_i64(m, "sig"),
		.core = get_u64(m, "core") != 0,
		.utime_ns = get_u64(m, "utime"),
		.stime_ns = get_u64(m, "stime"),
	};
	return 0;
}

int audit_decode_ftr(struct audit_reader *r, const struct audit_rec *rec, struct audit_ftr *ret)
{
	const msgpack_object *m = rec->obj, *a;
	size_t n;

	if (rec->type != AUDIT_REC_FTR)
		return -EINVAL;
	*ret = (struct audit_ftr){
		.exit_status = (int)get_i64(m, "exit"),
		.reason = get_str(r, m, "why"),
		.wall_ns = get_u64(m, "wall"),
		.cpu_ns = get_u64(m, "cpu"),
		.peak_memory = get_u64(m, "mem"),
		.records = get_u64(m, "n"),
		.dropped = get_u64(m, "drop"),
	};
	a = get_array(m, "chg", &n);
	if (a && n > 0) {
		struct audit_change *c = arena_alloc(r, n * sizeof(*c));

		if (!c)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++)
			c[i] = (struct audit_change){
				.kind = get_str(r, &a[i], "k"),
				.path = get_str(r, &a[i], "p"),
				.old_path = get_str(r, &a[i], "op"),
				.size = get_u64(&a[i], "sz"),
				.sha256 = dup_bin(r, &a[i], "sha", 32),
			};
		ret->changes = c;
		ret->n_changes = n;
	}
	a = get_array(m, "tot", &n);
	if (a && n > 0) {
		struct audit_total *t = arena_alloc(r, n * sizeof(*t));

		if (!t)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++)
			t[i] = (struct audit_total){
				.syscall = get_str(r, &a[i], "sc"),
				.decision = get_decision(&a[i], "dec"),
				.count = get_u64(&a[i], "n"),
			};
		ret->totals = t;
		ret->n_totals = n;
	}
	return 0;
}

int audit_decode_ckpt(const struct audit_rec *rec, struct audit_ckpt *ret)
{
	const msgpack_object *m = rec->obj, *dec;

	if (rec->type != AUDIT_REC_CKPT)
		return -EINVAL;
	*ret = (struct audit_ckpt){
		.records = get_u64(m, "n"),
		.frame = get_u64(m, "frame"),
		.mono_ns = get_u64(m, "ts"),
		.dropped = get_u64(m, "drop"),
		.sys = get_u64(m, "sys"),
		.proc = get_u64(m, "proc"),
	};
	dec = audit__get(m, "dec");
	for (unsigned d = 0; d < _AUDIT_DECISION_MAX; d++)
		ret->decisions[d] = get_u64(dec, audit_decision_name(d));
	get_bin(m, "h", ret->chain, sizeof(ret->chain));
	return 0;
}

int audit_decode_sig(const struct audit_rec *rec, struct audit_sig *ret)
{
	const msgpack_object *m = rec->obj;

	if (rec->type != AUDIT_REC_SIG)
		return -EINVAL;
	*ret = (struct audit_sig){ .alg = NULL };
	if (audit__str_eq(audit__get(m, "alg"), "ed25519"))
		ret->alg = "ed25519";
	if (!get_bin(m, "h", ret->chain, sizeof(ret->chain)) ||
	    !get_bin(m, "pk", ret->public_key, sizeof(ret->public_key)) ||
	    !get_bin(m, "s", ret->signature, sizeof(ret->signature)))
		return -EBADMSG;
	return 0;
}
