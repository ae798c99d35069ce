/* SPDX-License-Identifier: MIT */
/*
 * `moat audit verify`: everything that can be checked about a stream without trusting
 * it. Each failure is a "finding:" line naming the frame and its byte offset; damage is
 * contained (the chain resynchronises at the next intact checkpoint) so one flipped byte
 * gives one finding, not a cascade. The output ends with exactly one verdict line,
 * "ok: ..." or "FAIL: ..." naming the first finding: a signature is reported valid only
 * in an "ok" verdict, since it cannot vouch for a stream that fails any other check.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "audit-internal.h"

struct vstate {
	FILE *out;
	unsigned findings;
	char first[512];        /* the first finding, for the verdict */
};

_printf_(2, 3) static void finding(struct vstate *v, const char *fmt, ...)
{
	va_list ap;

	if (v->findings++ == 0) {
		va_start(ap, fmt);
		vsnprintf(v->first, sizeof(v->first), fmt, ap);
		va_end(ap);
	}
	fputs("finding: ", v->out);
	va_start(ap, fmt);
	vfprintf(v->out, fmt, ap);
	va_end(ap);
	fputc('\n', v->out);
}

/* Whether the header names run_id: a msgpack str compared as bytes, never as a C string
 * (a NUL inside the stream's value must not make a prefix match). */
static bool hdr_run_is(const msgpack_object *hdr, const char *run_id)
{
	const msgpack_object *o = audit__get(hdr, "run");

	return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size == strlen(run_id) &&
	       memcmp(o->via.str.ptr, run_id, o->via.str.size) == 0;
}

int audit_verify(const char *path, const uint8_t *pubkey, FILE *out)
{
	return audit_verify_run(path, pubkey, NULL, out);
}

int audit_verify_run(const char *path, const uint8_t *pubkey, const char *run_id, FILE *out)
{
	struct vstate v = { .out = out };
	struct audit_reader *r = NULL;
	struct audit_rec rec;
	const struct audit_read_status *st;
	uint8_t chain[AUDIT_HASH_BYTES] = { 0 };
	uint64_t expect_seq = 0, cur_frame = UINT64_MAX, cur_off = 0, dropped = 0;
	uint64_t records = 0, ckpts = 0;
	bool chain_known = true, seq_known = true, last_ckpt = true, saw_hdr = false;
	bool saw_ftr = false, saw_sig = false, chain_broken = false;
	struct audit_sig sig = { 0 };
	char sigtext[192] = "";
	int k;

	if (sodium_init() < 0)
		return -EIO;
	k = audit_reader_open(path, AUDIT_READ_UNKNOWN, &r);
	if (k < 0)
		return k;

	while ((k = audit_reader_next(r, &rec)) != 0) {
		if (k == -EBADMSG) {
			finding(&v, "%s", audit_reader_error(r));
			/* The frame's records are gone: the chain and the seq resume at the
			 * next checkpoint that can be read. */
			chain_known = false;
			seq_known = false;
			last_ckpt = true;
			continue;
		}
		if (k < 0) {
			audit_reader_free(r);
			return k;
		}
		if (rec.frame != cur_frame) {
			if (!last_ckpt)
				finding(&v, "frame %" PRIu64 " at byte %" PRIu64
					    ": does not end with a checkpoint",
					cur_frame, cur_off);
			cur_frame = rec.frame;
			cur_off = rec.frame_offset;
		}
		if (saw_sig)
			finding(&v, "frame %" PRIu64 " at byte %" PRIu64 ": record after the signature",
				rec.frame, rec.frame_offset);

		if (rec.type == AUDIT_REC_CKPT) {
			struct audit_ckpt c;

			audit_decode_ckpt(&rec, &c);
			ckpts++;
			if (c.frame != rec.frame)
				finding(&v, "frame %" PRIu64 " at byte %" PRIu64
					    ": checkpoint says it closes frame %" PRIu64,
					rec.frame, rec.frame_offset, c.frame);
			if (!rec.last_in_frame)
				finding(&v, "frame %" PRIu64 " at byte %" PRIu64
					    ": checkpoint is not the frame's last record",
					rec.frame, rec.frame_offset);
			if (chain_known && memcmp(c.chain, chain, sizeof(chain)) != 0) {
				finding(&v, "frame %" PRIu64 " at byte %" PRIu64
					    ": hash chain mismatch (a record before this checkpoint was edited, removed or reordered)",
					rec.frame, rec.frame_offset);
				chain_broken = true;
			}
			if (!chain_known)
				chain_broken = true;
			memcpy(chain, c.chain, sizeof(chain));
			chain_known = true;
			if (seq_known && c.records != expect_seq)
				finding(&v, "frame %" PRIu64 " at byte %" PRIu64
					    ": checkpoint counts %" PRIu64 " records, the stream has %" PRIu64,
					rec.frame, rec.frame_offset, c.records, expect_seq);
			expect_seq = c.records;
			seq_known = true;
			dropped = c.dropped;
			audit__chain(chain, rec.raw, rec.raw_len);
			last_ckpt = true;
			continue;
		}
		if (rec.type == AUDIT_REC_SIG) {
			if (audit_decode_sig(&rec, &sig) < 0 || !sig.alg)
				finding(&v, "frame %" PRIu64 " at byte %" PRIu64
					    ": malformed signature record",
					rec.frame, rec.frame_offset);
			saw_sig = true;
			if (!chain_broken && memcmp(sig.chain, chain, sizeof(chain)) != 0)
				finding(&v, "frame %" PRIu64 " at byte %" PRIu64
					    ": signed chain value differs from the stream's",
					rec.frame, rec.frame_offset);
			last_ckpt = true;
			continue;
		}

		last_ckpt = false;
		records++;
		audit__chain(chain, rec.raw, rec.raw_len);
		if (rec.has_seq) {
			if (seq_known && rec.seq != expect_seq)
				finding(&v, "frame %" PRIu64 " at byte %" PRIu64 ": seq jumps from %" PRIu64
					    " to %" PRIu64,
					rec.frame, rec.frame_offset, expect_seq, rec.seq);
			expect_seq = rec.seq + 1;
			seq_known = true;
		} else if (rec.type != AUDIT_REC_UNKNOWN) {
			finding(&v, "frame %" PRIu64 " at byte %" PRIu64 ": record without seq",
				rec.frame, rec.frame_offset);
		}
		if (rec.type == AUDIT_REC_HDR) {
			uint64_t ver = 0;

			if (saw_hdr || rec.frame != 0 || rec.index != 0)
				finding(&v, "frame %" PRIu64 " at byte %" PRIu64
					    ": header is not the first record",
					rec.frame, rec.frame_offset);
			/* The header is the chain's first record, so the signature covers the
			 * run id too: an older stream, however intact, is not this run's. */
			if (run_id && !saw_hdr && !hdr_run_is(rec.obj, run_id))
				finding(&v, "frame %" PRIu64 " at byte %" PRIu64
					    ": the stream is of another run (expected run id %s)",
					rec.frame, rec.frame_offset, run_id);
			saw_hdr = true;
			audit__get_u64(rec.obj, "v", &ver);
			if (ver != AUDIT_SCHEMA_VERSION)
				fprintf(out, "note: schema version %" PRIu64 ", this reader knows %d; unknown fields are ignored\n",
					ver, AUDIT_SCHEMA_VERSION);
		} else if (rec.type == AUDIT_REC_FTR) {
			saw_ftr = true;
		}
	}
	if (!last_ckpt)
		finding(&v, "frame %" PRIu64 " at byte %" PRIu64 ": does not end with a checkpoint",
			cur_frame, cur_off);

	st = audit_reader_status(r);
	if (st->truncated)
		finding(&v, "%s", audit_reader_error(r));
	if (!saw_hdr)
		finding(&v, "no header record");
	if (!saw_ftr && !st->truncated)
		finding(&v, "no footer: the stream ends at byte %" PRIu64 " after frame %" PRIu64
			    " (the writer was stopped, or the file was cut at a frame boundary)",
			st->end_offset, st->frames ? st->frames - 1 : 0);
	else if (!saw_ftr)
		finding(&v, "no footer: the run's last records are in the lost frame");
	if (dropped > 0)
		finding(&v, "the writer dropped %" PRIu64 " records (buffer full): the stream is incomplete",
			dropped);

	if (saw_sig && sig.alg) {
		uint8_t msg[sizeof(AUDIT_SIG_CONTEXT) - 1 + AUDIT_HASH_BYTES];
		char hex[2 * sizeof(sig.public_key) + 1];
		const uint8_t *key = pubkey ? pubkey : sig.public_key;

		audit__sig_message(msg, sig.chain);
		audit_hex(hex, sig.public_key, sizeof(sig.public_key));
		if (crypto_sign_verify_detached(sig.signature, msg, sizeof(msg), key) != 0)
			finding(&v, "signature does not verify with %s",
				pubkey ? "the given key" : "the key in the stream");
		else if (pubkey)
			snprintf(sigtext, sizeof(sigtext), ", signature valid for the given key");
		else
			snprintf(sigtext, sizeof(sigtext),
				 ", signature valid for the key in the stream (%s), which is not authenticated: pass --key to authenticate the signer",
				 hex);
	} else if (pubkey) {
		finding(&v, "no signature in the stream, but --key was given");
	}

	if (v.findings == 0)
		fprintf(out, "ok: %" PRIu64 " frames, %" PRIu64 " records, %" PRIu64
			     " checkpoints, hash chain intact%s\n",
			st->frames, records, ckpts, sigtext);
	else
		fprintf(out, "FAIL: %s (%u finding%s in %" PRIu64 " frames, %" PRIu64 " bad%s)\n",
			v.first, v.findings, v.findings == 1 ? "" : "s", st->frames, st->bad_frames,
			saw_sig ? "; the signature cannot vouch for a stream that fails" : "");
	audit_reader_free(r);
	return v.findings ? 1 : 0;
}
