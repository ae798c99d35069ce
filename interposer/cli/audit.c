/* SPDX-License-Identifier: MIT */
/*
 * `moat audit SUBCOMMAND`: dump, stats, verify, keygen, on top of audit.h's reader,
 * JSON, filter and verify API; replay and suggest (replay.c) also need the policy code.
 *
 * Exit status: 0 ok, 1 findings (verify failed, or dump/stats met a damaged stream —
 * they still print every record they could read), 2 usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "cleanup.h"
#include "cli.h"
#include "hash.h"
#include "macros.h"
#include "replay.h"

#define EXIT_FINDINGS 1
#define EXIT_USAGE 2

static const char usage_text[] =
	"usage: moat audit dump [--json | --tree | --format text|jsonl|ecs|tree] [--filter EXPR] FILE\n"
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

/*
 * Text from the stream (paths, rule texts, names: anything the sandbox or a hand-edited
 * file chose) made safe for one line of a terminal table: control characters and the
 * backslash as C escapes (quote also escapes '"'), cut with "..." when it does not fit
 * in len. A rule text with a newline (a `file` rule's content) or a path with an escape
 * sequence then cannot break a table or forge a line.
 */
static const char *esc(char *buf, size_t len, const char *s, bool quote)
{
	size_t o = 0;

	if (len < 4)
		return "";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		char e[5];
		size_t n;

		if (*p == '\\' || (quote && *p == '"'))
			n = (size_t)snprintf(e, sizeof(e), "\\%c", *p);
		else if (*p == '\n')
			n = (size_t)snprintf(e, sizeof(e), "\\n");
		else if (*p == '\t')
			n = (size_t)snprintf(e, sizeof(e), "\\t");
		else if (*p < 0x20 || *p == 0x7f)
			n = (size_t)snprintf(e, sizeof(e), "\\x%02x", *p);
		else
			n = (size_t)snprintf(e, sizeof(e), "%c", *p);
		if (o + n + 1 > len) {
			memcpy(buf + MIN(o, len - 4), "...", 4);
			return buf;
		}
		memcpy(buf + o, e, n);
		o += n;
	}
	buf[o] = '\0';
	return buf;
}

/* The same escaping, whole, for dump's one line per record. */
static void put_esc(FILE *out, const char *s, bool quote)
{
	char buf[256];

	for (const char *p = s; *p;) {
		size_t n = strnlen(p, 60);
		char chunk[61];

		memcpy(chunk, p, n);
		chunk[n] = '\0';
		fputs(esc(buf, sizeof(buf), chunk, quote), out);
		p += n;
	}
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
	fprintf(out, "#%" PRIu64 " %d/%d", seq, s->pid, s->tid);
	if (s->sandbox_pid)
		fprintf(out, " [%d/%d]", s->sandbox_pid, s->sandbox_tid);
	fputc(' ', out);
	put_esc(out, s->comm ? s->comm : "?", false);
	fputc(' ', out);
	put_esc(out, s->syscall ? s->syscall : "?", false);
	fputc('(', out);
	if (s->path) {
		fputc('"', out);
		put_esc(out, s->path, true);
		fputc('"', out);
		if (s->resolved && !streq(s->resolved, s->path)) {
			fputs(" -> ", out);
			put_esc(out, s->resolved, false);
		}
		sep = true;
	}
	if (s->path2) {
		fprintf(out, "%s\"", sep ? ", " : "");
		put_esc(out, s->path2, true);
		fputc('"', out);
		sep = true;
	}
	if (s->addr) {
		fputs(sep ? ", " : "", out);
		put_esc(out, s->addr, false);
		sep = true;
	}
	if (s->flags) {
		fputs(sep ? ", " : "", out);
		put_esc(out, s->flags, false);
	}
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
	if (s->rule) {
		fputs(" rule=", out);
		put_esc(out, s->rule, false);
	}
	fprintf(out, " (%s)\n", lat);
	for (size_t i = 0; i < s->n_stack; i++) {
		const struct audit_frame *f = &s->stack[i];

		fprintf(out, "    #%-2zu 0x%016" PRIx64 " ", i, f->ip);
		if (f->symbol)
			put_esc(out, f->symbol, false);
		fprintf(out, "+0x%" PRIx64 " (", f->offset);
		put_esc(out, f->module ? f->module : "?", false);
		fputc(')', out);
		if (f->build_id) {
			fputs(" [", out);
			put_esc(out, f->build_id, false);
			fputc(']', out);
		}
		fputc('\n', out);
	}
}

/* One proc record, without time and seq: "PID[/TID] [SANDBOX ids] EVENT ...". */
static void print_proc(FILE *out, const struct audit_proc *p)
{
	fprintf(out, "%d", p->pid);
	if (p->tid && p->tid != p->pid)
		fprintf(out, "/%d", p->tid);
	if (p->sandbox_pid)
		fprintf(out, " [%d]", p->sandbox_pid);
	fprintf(out, " %s", audit_proc_event_name(p->event));
	if (p->event == AUDIT_PROC_FORK)
		fprintf(out, " from %d%s", p->ppid, p->sandbox_ppid ? "" : " (outside the sandbox)");
	if (p->path) {
		fputc(' ', out);
		put_esc(out, p->path, false);
	}
	if (p->sha256) {
		char hex[65];

		audit_hex(hex, p->sha256, 32);
		fprintf(out, " sha256=%s", hex);
	}
	if (p->event == AUDIT_PROC_EXEC) {
		fputs(" argv=[", out);
		for (size_t i = 0; p->argv && p->argv[i]; i++) {
			fputs(i ? ", \"" : "\"", out);
			put_esc(out, p->argv[i], true);
			fputc('"', out);
		}
		fprintf(out, "%s] %s", p->argv_truncated ? ", ..." : "",
			audit_decision_name(p->decision));
		if (p->err) {
			const char *name = strerrorname_np(p->err);

			if (name)
				fprintf(out, " -%s", name);
			else
				fprintf(out, " -%d", p->err);
		}
		if (p->rule) {
			fputs(" rule=", out);
			put_esc(out, p->rule, false);
		}
	}
	if (p->event == AUDIT_PROC_EXIT) {
		if (p->signal)
			fprintf(out, " signal=%d%s", p->signal, p->core ? " (core dumped)" : "");
		else
			fprintf(out, " status=%d", p->status);
		if (p->utime_ns || p->stime_ns) {
			char u[32], st[32];

			fmt_ns(u, sizeof(u), p->utime_ns);
			fmt_ns(st, sizeof(st), p->stime_ns);
			fprintf(out, " user=%s sys=%s", u, st);
		}
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
		for (size_t i = 0; h.argv && h.argv[i]; i++) {
			fputc(' ', out);
			put_esc(out, h.argv[i], false);
		}
		fputs("\n# cwd: ", out);
		put_esc(out, h.cwd ? h.cwd : "?", false);
		fputs(", policy ", out);
		put_esc(out, h.policy_hash ? h.policy_hash : "?", false);
		fputc('\n', out);
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
		fprintf(out, "#%" PRIu64 " ", rec->seq);
		print_proc(out, &p);
		fputc('\n', out);
		break;
	}
	case AUDIT_REC_CKPT: {
		struct audit_ckpt c;
		char hex[2 * sizeof(c.chain) + 1];

		audit_decode_ckpt(rec, &c);
		audit_hex(hex, c.chain, 8);
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
		for (size_t i = 0; i < f.n_changes; i++) {
			fputs("#   ", out);
			put_esc(out, f.changes[i].kind ? f.changes[i].kind : "?", false);
			fputc(' ', out);
			put_esc(out, f.changes[i].path ? f.changes[i].path : "?", false);
			if (f.changes[i].old_path) {
				fputs(" from ", out);
				put_esc(out, f.changes[i].old_path, false);
			}
			fputc('\n', out);
		}
		break;
	}
	case AUDIT_REC_SIG: {
		struct audit_sig s;
		char hex[65];

		if (audit_decode_sig(rec, &s) < 0)
			return;
		audit_hex(hex, s.public_key, sizeof(s.public_key));
		fprintf(out, "# signed (ed25519) by %s\n", hex);
		break;
	}
	case AUDIT_REC_UNKNOWN:
	case _AUDIT_REC_MAX:
	default:
		break;
	}
}

/* ---- dump --tree ---- */

struct tnode {
	pid_t pid, ppid;
	bool has_parent;        /* a fork record named the parent */
	bool exited;
	char *name;             /* argv[0] of its last exec, else its comm */
	char **lines;           /* its records, formatted, in stream order */
	size_t n_lines, cap_lines;
	size_t *kids;
	size_t n_kids, cap_kids;
};

struct tree {
	struct tnode *v;
	size_t n, cap;
};

static int grow_array(void **p, size_t *cap, size_t need, size_t size)
{
	void *np;
	size_t ncap;

	if (need <= *cap)
		return 0;
	ncap = *cap ? 2 * *cap : 16;
	while (ncap < need)
		ncap *= 2;
	np = realloc(*p, ncap * size);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

/* The node of pid: the latest one, or a new one when that one exited (the pid was
 * reused). */
static struct tnode *tree_node(struct tree *t, pid_t pid, bool fresh)
{
	/* Records of a process may come before its fork record (the fork is learnt from
	 * the kernel, its calls from its notifications): a fork starts a new node only
	 * when the pid's latest one has a fork record or an exit already. */
	for (size_t i = t->n; i-- > 0;)
		if (t->v[i].pid == pid) {
			if (!t->v[i].exited && !(fresh && t->v[i].has_parent))
				return &t->v[i];
			break;
		}
	if (grow_array((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)) < 0)
		return NULL;
	t->v[t->n] = (struct tnode){ .pid = pid };
	return &t->v[t->n++];
}

static int tree_line(struct tnode *nd, char *line)
{
	if (!line || grow_array((void **)&nd->lines, &nd->cap_lines, nd->n_lines + 1,
				sizeof(*nd->lines)) < 0) {
		free(line);
		return -ENOMEM;
	}
	nd->lines[nd->n_lines++] = line;
	return 0;
}

static void tree_name(struct tnode *nd, const char *name, bool exec)
{
	const char *base = strrchr(name, '/');

	if (nd->name && !exec)
		return;
	free(nd->name);
	nd->name = strdup(base && base[1] ? base + 1 : name);
}

static int tree_add(struct tree *t, struct audit_reader *r, const struct audit_rec *rec,
		    const struct audit_timebase *tb)
{
	struct tnode *nd;
	char *line = NULL;
	size_t len = 0;
	FILE *f;

	if (rec->type == AUDIT_REC_PROC) {
		struct audit_proc p;

		if (audit_decode_proc(r, rec, &p) < 0)
			return 0;
		nd = tree_node(t, p.pid, p.event == AUDIT_PROC_FORK);
		if (!nd)
			return -ENOMEM;
		if (p.event == AUDIT_PROC_FORK) {
			nd->ppid = p.ppid;
			nd->has_parent = true;
		}
		/* named as it was run (argv[0]: sh, not the dash it links to) */
		if (p.event == AUDIT_PROC_EXEC && !p.err && p.decision != AUDIT_DENIED &&
		    (p.argv && p.argv[0] && p.argv[0][0] ? p.argv[0] : p.path))
			tree_name(nd, p.argv && p.argv[0] && p.argv[0][0] ? p.argv[0] : p.path,
				  true);
		if (p.event == AUDIT_PROC_EXIT)
			nd->exited = true;
		f = open_memstream(&line, &len);
		if (!f)
			return -ENOMEM;
		print_time(f, tb, p.mono_ns);
		fprintf(f, "#%" PRIu64 " ", rec->seq);
		print_proc(f, &p);
		fclose(f);
		return tree_line(nd, line);
	}
	if (rec->type == AUDIT_REC_SYS) {
		struct audit_sys s;

		if (audit_decode_sys(r, rec, &s) < 0)
			return 0;
		nd = tree_node(t, s.pid, false);
		if (!nd)
			return -ENOMEM;
		if (s.comm)
			tree_name(nd, s.comm, false);
		s.n_stack = 0;
		f = open_memstream(&line, &len);
		if (!f)
			return -ENOMEM;
		print_sys(f, &s, rec->seq, tb);
		fclose(f);
		if (len && line[len - 1] == '\n')
			line[len - 1] = '\0';
		return tree_line(nd, line);
	}
	return 0;
}

static void tree_print(FILE *out, const struct tree *t, size_t i, unsigned depth)
{
	const struct tnode *nd = &t->v[i];

	fprintf(out, "%*s", 2 * depth, "");
	fprintf(out, "%d ", nd->pid);
	put_esc(out, nd->name ? nd->name : "(no exec)", false);
	fputc('\n', out);
	for (size_t j = 0; j < nd->n_lines; j++)
		fprintf(out, "%*s  | %s\n", 2 * depth, "", nd->lines[j]);
	for (size_t j = 0; j < nd->n_kids; j++)
		tree_print(out, t, nd->kids[j], depth + 1);
}

/* Processes as a tree (parent from fork records), each with its records under it. */
static int tree_output(FILE *out, struct tree *t)
{
	for (size_t i = 0; i < t->n; i++) {
		struct tnode *nd = &t->v[i];
		size_t p = SIZE_MAX;

		if (!nd->has_parent)
			continue;
		/* the parent's node alive at the fork: the latest earlier one of that pid, or
		 * a later one when the parent's records all came after the child's first */
		for (size_t j = i; j-- > 0;)
			if (t->v[j].pid == nd->ppid) {
				p = j;
				break;
			}
		for (size_t j = i + 1; p == SIZE_MAX && j < t->n; j++)
			if (t->v[j].pid == nd->ppid)
				p = j;
		if (p == SIZE_MAX)
			continue;
		if (grow_array((void **)&t->v[p].kids, &t->v[p].cap_kids, t->v[p].n_kids + 1,
			       sizeof(size_t)) < 0)
			return -ENOMEM;
		t->v[p].kids[t->v[p].n_kids++] = i;
		nd->has_parent = true;
		nd->ppid = -nd->ppid - 1; /* marks "placed" (a pid is never negative) */
	}
	for (size_t i = 0; i < t->n; i++)
		if (!(t->v[i].has_parent && t->v[i].ppid < 0))
			tree_print(out, t, i, 0);
	return 0;
}

static void tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->n; i++) {
		for (size_t j = 0; j < t->v[i].n_lines; j++)
			free(t->v[i].lines[j]);
		free(t->v[i].lines);
		free(t->v[i].kids);
		free(t->v[i].name);
	}
	free(t->v);
}

static int cmd_dump(int argc, char **argv)
{
	struct audit_filter *filter = NULL;
	struct audit_reader *r = NULL;
	struct audit_timebase tb = { 0 };
	struct audit_rec rec;
	const char *file = NULL, *expr = NULL, *v;
	struct tree tree = { 0 };
	json_t *hdr = NULL;
	bool json = false, as_tree = false, ecs = false;
	unsigned bad = 0;
	struct moat_error err;
	int k;

	for (int i = 1; i < argc; i++) {
		if (streq(argv[i], "--json"))
			json = true;
		else if (streq(argv[i], "--tree"))
			as_tree = true;
		else if ((v = opt_value(argc, argv, &i, "--format"))) {
			if (streq(v, "ecs"))
				ecs = true;
			else if (streq(v, "jsonl") || streq(v, "json"))
				json = true;
			else if (streq(v, "tree"))
				as_tree = true;
			else if (!streq(v, "text"))
				return usage("dump: --format is text, jsonl, ecs or tree");
		}
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
	if (json + as_tree + ecs > 1)
		return usage("dump: one output format only");
	if (expr && audit_filter_parse(expr, &filter, &err) < 0) {
		fprintf(stderr, "moat audit: --filter: %s\n", moat_error_str(&err));
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
			tb.valid = audit_rec_u64(&rec, "wall", &tb.wall_ns) &&
				   audit_rec_u64(&rec, "mono", &tb.mono_ns);
		}
		if (json || filter || ecs) {
			j = audit_rec_to_json(&rec, &tb);
			if (!j)
				continue;
		}
		if (ecs && rec.type == AUDIT_REC_HDR && !hdr)
			hdr = json_incref(j);
		if (filter && !audit_filter_match(filter, j)) {
			json_decref(j);
			continue;
		}
		if (as_tree) {
			if (tree_add(&tree, r, &rec, &tb) < 0) {
				fprintf(stderr, "moat audit: out of memory\n");
				json_decref(j);
				break;
			}
		} else if (json) {
			json_dumpf(j, stdout, JSON_COMPACT);
			fputc('\n', stdout);
		} else if (ecs) {
			json_t *e = audit_json_to_ecs(j, hdr);

			if (e) {
				json_dumpf(e, stdout, JSON_COMPACT);
				fputc('\n', stdout);
				json_decref(e);
			}
		} else {
			print_human(stdout, r, &rec, &tb);
		}
		json_decref(j);
	}
	if (as_tree && tree_output(stdout, &tree) < 0)
		fprintf(stderr, "moat audit: out of memory\n");
	tree_free(&tree);
	json_decref(hdr);
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
	uint64_t h = fnv1a64(key, strlen(key), FNV1A64_INIT);
	size_t i;

	if (2 * (t->n + 1) > t->cap) {
		struct stat_table nt = { .cap = t->cap ? 2 * t->cap : 64 };

		nt.v = calloc(nt.cap, sizeof(*nt.v));
		if (!nt.v)
			return NULL;
		for (size_t j = 0; j < t->cap; j++) {
			if (!t->v[j].key)
				continue;
			uint64_t hh = fnv1a64(t->v[j].key, strlen(t->v[j].key), FNV1A64_INIT);

			for (i = hh % nt.cap; nt.v[i].key; i = (i + 1) % nt.cap)
				;
			nt.v[i] = t->v[j];
		}
		nt.n = t->n;
		free(t->v);
		*t = nt;
	}
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

/* Counts and keys (rule texts, paths, destinations from the stream), one escaped line each. */
static void print_top(const char *title, struct stat_table *t, size_t top)
{
	struct stat_entry **v;
	char buf[120];

	if (t->n == 0)
		return;
	v = table_sorted(t);
	if (!v)
		return;
	printf("\n%s:\n", title);
	for (size_t i = 0; i < t->n && i < top; i++)
		printf("  %10" PRIu64 "  %s\n", v[i]->count, esc(buf, sizeof(buf), v[i]->key, false));
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
			audit_rec_u64(&rec, "drop", &dropped);
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
			char name[21];

			qsort(e->lat, e->n_lat, sizeof(*e->lat), cmp_u64);
			for (int j = 0; j < 3; j++)
				fmt_ns(p[j], sizeof(p[j]), audit_percentile(e->lat, e->n_lat, pct[j]));
			printf("  %-20s %10" PRIu64, esc(name, sizeof(name), e->key, false), e->count);
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

/* argv[0] is "audit", argv[1] the tool. */
int cmd_audit(int argc, char **argv)
{
	argc--;
	argv++;
	if (argc < 1 || !argv[0])
		return usage(NULL);
	if (streq(argv[0], "replay"))
		return replay_cli(argc, argv);
	if (streq(argv[0], "suggest"))
		return suggest_cli(argc, argv);
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
