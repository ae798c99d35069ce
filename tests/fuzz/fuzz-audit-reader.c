/* SPDX-License-Identifier: MIT */
/*
 * The audit reader (audit/reader.c: zstd frames, msgpack records, the hash chain) and
 * the tools on top of it (decoders, JSON, verify, dump, stats): a stream may come from
 * anywhere. Input byte 0 picks how the rest is used:
 *   bit 0 clear: the rest is the file as it is;
 *   bit 0 set:   the rest is record content, compressed here into zstd frames with
 *                checksums (cut in two at the point byte 1 names), so the fuzzer reaches
 *                the msgpack decoding without having to forge checksums.
 * run it with -close_fd_mask=3: the tools print (reports still reach libFuzzer's stderr).
 */
#include <errno.h>
#include <zstd.h>

#include "audit.h"
#include "cli.h"
#include "fuzz.h"

static void decode_all(const char *path, unsigned flags)
{
	struct audit_timebase tb = { .valid = true, .wall_ns = 1, .mono_ns = 2 };
	struct audit_reader *r;
	struct audit_rec rec;
	int k, guard = 0;

	if (audit_reader_open(path, flags, &r) < 0)
		return;
	while ((k = audit_reader_next(r, &rec)) != 0 && guard++ < 100000) {
		json_t *j;

		if (k < 0) {
			if (k != -EBADMSG)
				break;
			if (!audit_reader_error(r))
				abort();
			continue;
		}
		switch (rec.type) {
		case AUDIT_REC_HDR: {
			struct audit_hdr h;

			(void)audit_decode_hdr(r, &rec, &h);
			break;
		}
		case AUDIT_REC_SYS: {
			struct audit_sys s;

			(void)audit_decode_sys(r, &rec, &s);
			break;
		}
		case AUDIT_REC_PROC: {
			struct audit_proc p;

			(void)audit_decode_proc(r, &rec, &p);
			break;
		}
		case AUDIT_REC_FTR: {
			struct audit_ftr f;

			(void)audit_decode_ftr(r, &rec, &f);
			break;
		}
		case AUDIT_REC_CKPT: {
			struct audit_ckpt c;

			(void)audit_decode_ckpt(&rec, &c);
			break;
		}
		case AUDIT_REC_SIG: {
			struct audit_sig s;

			(void)audit_decode_sig(&rec, &s);
			break;
		}
		case AUDIT_REC_UNKNOWN:
		case _AUDIT_REC_MAX:
		default:
			break;
		}
		j = audit_rec_to_json(&rec, &tb);
		if (j) {
			free(json_dumps(j, JSON_COMPACT));
			json_decref(j);
		}
	}
	(void)audit_reader_status(r);
	audit_reader_free(r);
}

static size_t compress_into(uint8_t *out, size_t cap, const uint8_t *in, size_t len)
{
	ZSTD_CCtx *c = ZSTD_createCCtx();
	size_t n;

	if (!c)
		abort();
	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	n = ZSTD_compress2(c, out, cap, in, len);
	ZSTD_freeCCtx(c);
	if (ZSTD_isError(n))
		abort();
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	uint8_t *file = NULL;
	size_t flen = 0;
	int fd;

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		const uint8_t *c = data + 2;
		size_t clen = size > 2 ? size - 2 : 0, cut = size > 1 ? clen * data[1] / 255 : 0;
		size_t cap = 2 * ZSTD_compressBound(clen) + 64;

		file = malloc(cap);
		if (!file)
			abort();
		flen = compress_into(file, cap, c, cut);
		flen += compress_into(file + flen, cap - flen, c + cut, clen - cut);
		fd = fuzz_memfile(file, flen, path, sizeof(path));
	} else {
		fd = fuzz_memfile(data + 1, size - 1, path, sizeof(path));
	}
	decode_all(path, AUDIT_READ_UNKNOWN);
	{
		FILE *devnull = fopen("/dev/null", "we");
		char *dump[] = { "audit", "dump", path, NULL };
		char *stats[] = { "audit", "stats", path, NULL };

		if (!devnull)
			abort();
		(void)audit_verify(path, NULL, devnull);
		fclose(devnull);
		(void)cmd_audit(3, dump);
		(void)cmd_audit(3, stats);
	}
	close(fd);
	free(file);
	return 0;
}
