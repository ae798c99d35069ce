/* SPDX-License-Identifier: MIT */
/*
 * `moat audit SUBCOMMAND`: dump, stats, verify, keygen. replay and suggest need the
 * policy code and live in interposer/, on top of the reader API.
 *
 * Exit status: 0 ok, 1 findings (verify failed, or dump/stats met a damaged stream —
 * they still print every record they could read), 2 usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit-internal.h"
#include "cleanup.h"

#define EXIT_FINDINGS 1
#define EXIT_USAGE 2

static const char usage_text[] =
	"usage: moat audit dump [--json] [--filter EXPR] FILE\n"
	"       moat audit stats FILE\n"
	"       moat audit verify [--key FILE.pub] [--run-id ID] FILE\n"
	"       moat audit keygen OUT\n"
	"       moat audit replay --policy NEW FILE   (exit 1 when a decision would change)\n"
	"       moat audit suggest FILE [-o OUT]      (the smallest policy for the run)\n"
	"filter: FIELD=VALUE, FIELD!=VALUE, FIELD~TEXT joined by 'and' / 'or',\n"
	"        e.g. 'syscall=openat and decision=denied', 'path~/etc/', 'pid=12'\n";

static int usage(const char *why)
{
	if (why)
		fprintf(stderr, "moat audit: %s\n", why);
	fputs(usage_text, stderr);
	return EXIT_USAGE;
}

/* Options of the form --name VALUE or --name=VALUE; returns the value or NULL. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);

	if (strncmp(argv[*i], name, n) != 0)
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n] == '\0' && *i + 1 < argc)
		return argv[++*i];
	return NULL;
}

static void fmt_ns(char *buf, size_t len, uint64_t ns)
{
	if (ns < 10000)
		snprintf(buf, len, "%" PRIu64 "ns", ns);
	else if (ns < 10000000)
		snprintf(buf, len, "%.1fus", (double)ns / 1e3);
	else if (ns < 10000000000ull)
		snprintf(buf, len, "%.1fms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.1fs", (double)ns / 1e9);
}

/* Reports how the stream ended on stderr; true when it was damaged. */
static bool report_end(struct audit_reader *r, unsigned bad)
{
	const struct audit_read_status *st = audit_reader_status(r);

	if (st->truncated)
		fprintf(stderr, "moat audit: %s\n", audit_reader_error(r));
	return st->truncated || bad > 0;
}

/* ---- dump ---- */

static void print_time(FILE *out, const struct audit_timebase *tb, uint64_t ts)
{
	if (tb->valid)
		fprintf(out, "%+.6f ", (double)(int64_t)(ts - tb->mono_ns) / 1e9);
	else
		fprintf(out, "%" PRIu64 " ", ts);
}

static void print_sys(FILE *out, const struct audit_sys *s, uint64_t seq,
		      const struct audit_timebase *tb)
{
	char lat[32];
	bool sep = false;

	print_time(out, tb, s->mono_ns);
	fprintf(out, "#%" PRIu64 " %d/%d %s %s(", seq, s->pid, s->tid, s->comm ? s->comm : "?",
		s->syscall ? s->syscall : "?");
	if (s->path) {
		fprintf(out, "\"%s\"", s->path);
		if (s->resolved && !streq(s->resolved, s->path))
			fprintf(out, " -> %s", s->resolved);
		sep = true;
	}
	if (s->path2) {
		fprintf(out, "%s\"%s\"", sep ? ", " : "", s->path2);
		sep = true;
	}
	if (s->addr) {
		fprintf(out, "%s%s", sep ? ", " : "", s->addr);
		sep = true;
	}
	if (s->flags)
		fprintf(out, "%s%s", sep ? ", " : "", s->flags);
	if (s->err) {
		const char *name = strerrorname_np(s->err);

		if (name)
			fprintf(out, ") = -%s", name);
		else
			fprintf(out, ") = -%d", s->err);
	} else {
		fprintf(out, ") = %" PRId64, s->result);
	}
	fmt_ns(lat, sizeof(lat), s->latency_ns);
	fprintf(out, " %s", audit_decision_name(s->decision));
	if (s->rule)
		fprintf(out, " rule=%s", s->rule);
	fprintf(out, " (%s)\n", lat);
	for (size_t i = 0; i < s->n_stack; i++) {
		const struct audit_frame *f = &s->stack[i];

		fprintf(out, "    #%-2zu 0x%016" PRIx64 " ", i, f->ip);
		if (f->symbol)
			fprintf(out, "%s+0x%" PRIx64, f->symbol, f->offset);
		else
			fprintf(out, "+0x%" PRIx64, f->offset);
		fprintf(out, " (%s)", f->module ? f->module : "?");
		if (f->build_id)
			fprintf(out, " [%s]", f->build_id);
		fputc('\n', out);
	}
}

static void print_human(FILE *out, struct audit_reader *r, const struct audit_rec *rec,
			const struct audit_timebase *tb)
{
	switch (rec->type) {
	case AUDIT_REC_HDR: {
		struct audit_hdr h;

		if (audit_decode_hdr(r, rec, &h) < 0)
			return;
		fprintf(out, "# moat %s run %s, mode %s, kernel %s %s, schema %u\n",
			h.moat_version ? h.moat_version : "?", h.run_id ? h.run_id : "?",
			h.mode ? h.mode : "?", h.kernel ? h.kernel : "?", h.arch ? h.arch : "?",
			h.schema);
		if (h.session || h.tenant)
			fprintf(out, "# session %s tenant %s\n", h.session ? h.session : "-",
				h.tenant ? h.tenant : "-");
		fputs("# argv:", out);
		for (size_t i = 0; h.argv && h.argv[i]; i++)
			fprintf(out, " %s", h.argv[i]);
		fprintf(out, "\n# cwd: %s, policy %s\n", h.cwd ? h.cwd : "?",
			h.policy_hash ? h.policy_hash : "?");
		if (h.n_features) {
			fputs("# features:", out);
			for (size_t i = 0; i < h.n_features; i++)
				fprintf(out, " %s%s%s%s", h.features[i].present ? "+" : "-",
					h.features[i].name ? h.features[i].name : "?",
					h.features[i].detail ? "=" : "",
					h.features[i].detail ? h.features[i].detail : "");
			fputc('\n', out);
		}
		break;
	}
	case AUDIT_REC_SYS: {
		struct audit_sys s;

		if (audit_decode_sys(r, rec, &s) == 0)
			print_sys(out, &s, rec->seq, tb);
		break;
	}
	case AUDIT_REC_PROC: {
		struct audit_proc p;

		if (audit_decode_proc(r, rec, &p) < 0)
			return;
		print_time(out, tb, p.mono_ns);
		fprintf(out, "#%" PRIu64 " %d %s ppid=%d", rec->seq, p.pid,
			audit_proc_event_name(p.event), p.ppid);
		if (p.path)
			fprintf(out, " %s", p.path);
		if (p.sha256) {
			char hex[65];

			audit__hex(hex, p.sha256, 32);
			fprintf(out, " sha256=%s", hex);
		}
		if (p.event == AUDIT_PROC_EXIT)
			fprintf(out, " status=%d signal=%d", p.status, p.signal);
		fputc('\n', out);
		break;
	}
	case AUDIT_REC_CKPT: {
		struct audit_ckpt c;
		char hex[2 * AUDIT_HASH_BYTES + 1];

		audit_decode_ckpt(rec, &c);
		audit__hex(hex, c.chain, 8);
		fprintf(out, "-- frame %" PRIu64 " at byte %" PRIu64 ": %" PRIu64 " records, %" PRIu64
			     " dropped, chain %s...\n",
			rec->frame, rec->frame_offset, c.records, c.dropped, hex);
		break;
	}
	case AUDIT_REC_FTR: {
		struct audit_ftr f;
		char wall[32], cpu[32];

		if (audit_decode_ftr(r, rec, &f) < 0)
			return;
		fmt_ns(wall, sizeof(wall), f.wall_ns);
		fmt_ns(cpu, sizeof(cpu), f.cpu_ns);
		fprintf(out, "# end: exit %d (%s), wall %s, cpu %s, peak memory %" PRIu64
			     " bytes, %" PRIu64 " records, %" PRIu64 " dropped\n",
			f.exit_status, f.reason ? f.reason : "?", wall, cpu, f.peak_memory, f.records,
			f.dropped);
		for (size_t i = 0; i < f.n_changes; i++)
			fprintf(out, "#   %s %s%s%s\n", f.changes[i].kind ? f.changes[i].kind : "?",
				f.changes[i].path ? f.changes[i].path : "?",
				f.changes[i].old_path ? " from " : "",
				f.changes[i].old_path ? f.changes[i].old_path : "");
		break;
	}
	case AUDIT_REC_SIG: {
		struct audit_sig s;
		char hex[65];

		if (audit_decode_sig(rec, &s) < 0)
			return;
		audit__hex(hex, s.public_key, sizeof(s.public_key));
		fprintf(out, "# signed (ed25519) by %s\n", hex);
		break;
	}
	case AUDIT_REC_UNKNOWN:
	case _AUDIT_REC_MAX:
	default:
		break;
	}
}

static int cmd_dump(int argc, char **argv)
{
	struct audit_filter *filter = NULL;
	struct audit_reader *r = NULL;
	struct audit_timebase tb = { 0 };
	struct audit_rec rec;
	const char *file = NULL, *expr = NULL, *v;
	bool json = false;
	unsigned bad = 0;
	char err[256];
	int k;

	for (int i = 1; i < argc; i++) {
		if (streq(argv[i], "--json"))
			json = true;
		else if ((v = opt_value(argc, argv, &i, "--filter")))
			expr = v;
		else if (argv[i][0] == '-' && argv[i][1])
			return usage("dump: unknown option");
		else if (file)
			return usage("dump: more than one FILE");
		else
			file = argv[i];
	}
	if (!file)
		return usage("dump: FILE missing");
	if (expr && audit_filter_parse(expr, &filter, err, sizeof(err)) < 0) {
		fprintf(stderr, "moat audit: --filter: %s\n", err);
		return EXIT_USAGE;
	}
	k = audit_reader_open(file, 0, &r);
	if (k < 0) {
		fprintf(stderr, "moat audit: %s: %s\n", file, strerror(-k));
		audit_filter_free(filter);
		return EXIT_FINDINGS;
	}
	while ((k = audit_reader_next(r, &rec)) != 0) {
		json_t *j = NULL;

		if (k < 0) {
			fprintf(stderr, "moat audit: %s\n", audit_reader_error(r));
			if (k != -EBADMSG)
				break;
			bad++;
			continue;
		}
		if (rec.type == AUDIT_REC_HDR && !tb.valid) {
			tb.valid = audit__get_u64(rec.obj, "wall", &tb.wall_ns) &&
				   audit__get_u64(rec.obj, "mono", &tb.mono_ns);
		}
		if (json || filter) {
			j = audit_rec_to_json(&rec, &tb);
			if (!j)
				continue;
		}
		if (filter && !audit_filter_match(filter, j)) {
			json_decref(j);
			continue;
		}
		if (json) {
			json_dumpf(j, stdout, JSON_COMPACT);
			fputc('\n', stdout);
		} else {
			print_human(stdout, r, &rec, &tb);
		}
		json_decref(j);
	}
	fflush(stdout);
	k = report_end(r, bad) ? EXIT_FINDINGS : 0;
	audit_reader_free(r);
	audit_filter_free(filter);
	return k;
}

/* ---- stats ---- */

struct stat_entry {
	char *key;
	uint64_t count;
	uint64_t dec[_AUDIT_DECISION_MAX];
	uint64_t *lat;
	size_t n_lat, cap_lat;
};

/* A string-keyed table, open addressing, grown at 50 % load. */
struct stat_table {
	struct stat_entry *v;
	size_t n, cap;
};

static struct stat_entry *table_get(struct stat_table *t, const char *key)
{
	uint64_t h = 1469598103934665603ull;
	size_t i;

	if (2 * (t->n + 1) > t->cap) {
		struct stat_table nt = { .cap = t->cap ? 2 * t->cap : 64 };

		nt.v = calloc(nt.cap, sizeof(*nt.v));
		if (!nt.v)
			return NULL;
		for (size_t j = 0; j < t->cap; j++) {
			if (!t->v[j].key)
				continue;
			uint64_t hh = 1469598103934665603ull;

			for (const char *p = t->v[j].key; *p; p++)
				hh = (hh ^ (uint8_t)*p) * 1099511628211ull;
			for (i = hh % nt.cap; nt.v[i].key; i = (i + 1) % nt.cap)
				;
			nt.v[i] = t->v[j];
		}
		nt.n = t->n;
		free(t->v);
		*t = nt;
	}
	for (const char *p = key; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	for (i = h % t->cap; t->v[i].key; i = (i + 1) % t->cap)
		if (streq(t->v[i].key, key))
			return &t->v[i];
	t->v[i].key = strdup(key);
	if (!t->v[i].key)
		return NULL;
	t->n++;
	return &t->v[i];
}

static void table_free(struct stat_table *t)
{
	for (size_t i = 0; i < t->cap; i++) {
		free(t->v[i].key);
		free(t->v[i].lat);
	}
	free(t->v);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_entry_count(const void *a, const void *b)
{
	const struct stat_entry *x = *(struct stat_entry *const *)a;
	const struct stat_entry *y = *(struct stat_entry *const *)b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->key, y->key);
}

/* The table's entries sorted by count, most first. Caller frees. */
static struct stat_entry **table_sorted(struct stat_table *t)
{
	struct stat_entry **v = calloc(t->n + 1, sizeof(*v));
	size_t n = 0;

	if (!v)
		return NULL;
	for (size_t i = 0; i < t->cap; i++)
		if (t->v[i].key)
			v[n++] = &t->v[i];
	qsort(v, n, sizeof(*v), cmp_entry_count);
	return v;
}

static void print_top(const char *title, struct stat_table *t, size_t top)
{
	struct stat_entry **v;

	if (t->n == 0)
		return;
	v = table_sorted(t);
	if (!v)
		return;
	printf("\n%s:\n", title);
	for (size_t i = 0; i < t->n && i < top; i++)
		printf("  %10" PRIu64 "  %s\n", v[i]->count, v[i]->key);
	free(v);
}

static int cmd_stats(int argc, char **argv)
{
	struct stat_table sc = { 0 }, rules = { 0 }, paths = { 0 }, dests = { 0 };
	uint64_t dec[_AUDIT_DECISION_MAX + 1] = { 0 }, n_sys = 0, n_proc = 0, dropped = 0;
	struct audit_reader *r = NULL;
	struct audit_rec rec;
	struct stat_entry **v;
	unsigned bad = 0;
	int k, ret = 0;

	if (argc != 2 || argv[1][0] == '-')
		return usage("stats: exactly one FILE");
	k = audit_reader_open(argv[1], 0, &r);
	if (k < 0) {
		fprintf(stderr, "moat audit: %s: %s\n", argv[1], strerror(-k));
		return EXIT_FINDINGS;
	}
	while ((k = audit_reader_next(r, &rec)) != 0) {
		struct audit_sys s;
		struct stat_entry *e;

		if (k < 0) {
			fprintf(stderr, "moat audit: %s\n", audit_reader_error(r));
			if (k != -EBADMSG)
				break;
			bad++;
			continue;
		}
		if (rec.type == AUDIT_REC_PROC)
			n_proc++;
		if (rec.type == AUDIT_REC_CKPT)
			audit__get_u64(rec.obj, "drop", &dropped);
		if (rec.type != AUDIT_REC_SYS || audit_decode_sys(r, &rec, &s) < 0)
			continue;
		n_sys++;
		dec[MIN((unsigned)s.decision, (unsigned)_AUDIT_DECISION_MAX)]++;
		e = table_get(&sc, s.syscall ? s.syscall : "?");
		if (!e)
			goto nomem;
		e->count++;
		if (s.decision < _AUDIT_DECISION_MAX)
			e->dec[s.decision]++;
		if (e->n_lat == e->cap_lat) {
			size_t ncap = e->cap_lat ? 2 * e->cap_lat : 64;
			uint64_t *nl = realloc(e->lat, ncap * sizeof(*nl));

			if (!nl)
				goto nomem;
			e->lat = nl;
			e->cap_lat = ncap;
		}
		e->lat[e->n_lat++] = s.latency_ns;
		if (s.rule) {
			if (!(e = table_get(&rules, s.rule)))
				goto nomem;
			e->count++;
		}
		if (s.decision != AUDIT_DENIED)
			continue;
		if (s.resolved || s.path) {
			if (!(e = table_get(&paths, s.resolved ? s.resolved : s.path)))
				goto nomem;
			e->count++;
		}
		if (s.addr) {
			if (!(e = table_get(&dests, s.addr)))
				goto nomem;
			e->count++;
		}
	}

	printf("%" PRIu64 " syscall records, %" PRIu64 " process records, %" PRIu64
	       " dropped by the writer\n",
	       n_sys, n_proc, dropped);
	printf("\nper decision:\n");
	for (unsigned d = 0; d <= _AUDIT_DECISION_MAX; d++)
		if (dec[d])
			printf("  %10" PRIu64 "  %s\n", dec[d],
			       d < _AUDIT_DECISION_MAX ? audit_decision_name(d) : "(unknown)");
	v = table_sorted(&sc);
	if (v && sc.n) {
		printf("\nper syscall:\n  %-20s %10s %8s %8s %8s %8s %8s %9s %9s %9s\n", "syscall",
		       "count", "native", "emulated", "denied", "continued", "killed", "p50", "p95",
		       "p99");
		for (size_t i = 0; i < sc.n; i++) {
			struct stat_entry *e = v[i];
			char p[3][32];
			static const double pct[3] = { 50, 95, 99 };

			qsort(e->lat, e->n_lat, sizeof(*e->lat), cmp_u64);
			for (int j = 0; j < 3; j++)
				fmt_ns(p[j], sizeof(p[j]), audit_percentile(e->lat, e->n_lat, pct[j]));
			printf("  %-20s %10" PRIu64, e->key, e->count);
			for (unsigned d = 0; d < _AUDIT_DECISION_MAX; d++)
				printf(" %8" PRIu64, e->dec[d]);
			printf(" %9s %9s %9s\n", p[0], p[1], p[2]);
		}
	}
	free(v);
	print_top("per rule", &rules, SIZE_MAX);
	print_top("top denied paths", &paths, 10);
	print_top("top denied destinations", &dests, 10);
	fflush(stdout);
	ret = report_end(r, bad) ? EXIT_FINDINGS : 0;
out:
	audit_reader_free(r);
	table_free(&sc);
	table_free(&rules);
	table_free(&paths);
	table_free(&dests);
	return ret;
nomem:
	fprintf(stderr, "moat audit: out of memory\n");
	ret = EXIT_FINDINGS;
	goto out;
}

/* ---- verify, keygen ---- */

static int cmd_verify(int argc, char **argv)
{
	const char *file = NULL, *key = NULL, *run_id = NULL, *v;
	uint8_t pk[32];
	int r;

	for (int i = 1; i < argc; i++) {
		if ((v = opt_value(argc, argv, &i, "--key")))
			key = v;
		else if ((v = opt_value(argc, argv, &i, "--run-id")))
			run_id = v;
		else if (argv[i][0] == '-' && argv[i][1])
			return usage("verify: unknown option");
		else if (file)
			return usage("verify: more than one FILE");
		else
			file = argv[i];
	}
	if (!file)
		return usage("verify: FILE missing");
	if (key) {
		r = audit_key_read_public(key, pk);
		if (r < 0) {
			fprintf(stderr, "moat audit: %s: %s\n", key,
				r == -EBADMSG ? "not a moat public key" : strerror(-r));
			return EXIT_USAGE;
		}
	}
	r = audit_verify_run(file, key ? pk : NULL, run_id, stdout);
	fflush(stdout);
	if (r < 0) {
		fprintf(stderr, "moat audit: %s: %s\n", file, strerror(-r));
		return EXIT_FINDINGS;
	}
	return r ? EXIT_FINDINGS : 0;
}

static int cmd_keygen(int argc, char **argv)
{
	int r;

	if (argc != 2 || argv[1][0] == '-')
		return usage("keygen: exactly one OUT");
	r = audit_keygen(argv[1]);
	if (r < 0) {
		fprintf(stderr, "moat audit: keygen %s: %s\n", argv[1], strerror(-r));
		return EXIT_FINDINGS;
	}
	printf("wrote %s (secret, keep it private) and %s.pub\n", argv[1], argv[1]);
	return 0;
}

int audit_cli(int argc, char **argv)
{
	if (argc < 1 || !argv[0])
		return usage(NULL);
	if (streq(argv[0], "dump"))
		return cmd_dump(argc, argv);
	if (streq(argv[0], "stats"))
		return cmd_stats(argc, argv);
	if (streq(argv[0], "verify"))
		return cmd_verify(argc, argv);
	if (streq(argv[0], "keygen"))
		return cmd_keygen(argc, argv);
	if (streq(argv[0], "help") || streq(argv[0], "--help") || streq(argv[0], "-h")) {
		fputs(usage_text, stdout);
		return 0;
	}
	return usage("unknown subcommand");
}
