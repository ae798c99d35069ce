/* SPDX-License-Identifier: MIT */
/*
 * `moat audit replay --policy NEW FILE` and `moat audit suggest FILE [-o OUT]`.
 *
 * replay feeds every recorded name decision through the decision code the supervisor
 * uses, vfs_decide() and net_decide(), under NEW, and prints each one that flips between
 * allowed and denied. Only the decision is replayed, not the host: vfs_decide() takes
 * the canonical virtual path the run recorded (`resolved`), so a symlink that NEW would
 * hide on the way to a file is judged by where the run actually arrived, and /proc pid
 * visibility (a property of the live process tree) is not re-decided.
 *
 * NEW is built exactly as `moat run --policy NEW` builds it (policy_load_file() +
 * policy_apply()), and since the default profile maps the working directory and $HOME,
 * replay first changes to the run's recorded cwd. When that directory no longer exists it
 * says so and decides from the current directory instead: paths in the old workspace
 * then look unmapped. $HOME is this process's own (the stream keeps names, not values).
 *
 * What a record could not tell (documented limits):
 *   - the access a call needed is derived from its syscall and flags, as the vfs
 *     operations derive it; whether a written object was a device (exempt from
 *     read-only mappings) is asked of the host at replay time;
 *   - a record that failed for want of the file (ENOENT from the host, not from a rule)
 *     is not a change when NEW denies it with the same ENOENT: the program sees the same;
 *   - a denied call records the path only as far as resolution got (`/root` for
 *     `/root/.x/y`); replay then decides on the path the program gave, made absolute
 *     against the recorded cwd, when it extends the recorded prefix;
 *   - the socket type of a connect is not recorded: connect counts as TCP, sendto and
 *     sendmsg as UDP;
 *   - fd-based records (getdents64, fstat through AT_EMPTY_PATH) carry no decision.
 *
 * suggest writes a `moat-policy 1` file with `profile none` that grants what the run
 * used and was allowed, nothing else: what it read (ro-bind; system below the system
 * directories, as the default profile maps them), what it wrote or created
 * entries in (bind), the workspace (bind, read-only unless written), a private /tmp when
 * it used /tmp, /proc when it looked there, and allow-net for every destination it
 * reached (not moat's own DNS responder or the sandbox's loopback). After the mappings,
 * so that they win, come hides for every secret of the default profile
 * (vfs_default_secrets, the same list, even those the run read) and for every path the
 * run was denied. The host's root is never mapped as a whole (with --keep-ro-bind-root
 * only when the run had it), and a path no policy line can name exactly (a control
 * character, edge blanks) is left unmapped. Paths are resolved on the host again so
 * that every symlink on the way (merged /usr's /lib, /etc/localtime) is mapped too; a
 * path that did not exist maps nothing (its lookup fails with ENOENT, unmapped), except
 * below the system directories. Exec'd programs also map their ELF interpreter and #!
 * interpreter, which the kernel opens without notifying us. Only below the system
 * directories the default profile maps read-only anyway (/usr, /lib*, /bin, /sbin,
 * /etc) are read-only paths collapsed to at most three components (/usr/lib/python3.11)
 * and four or more siblings to their directory (never to a top-level directory, so /etc
 * stays a list of files). Virtual paths are taken as host paths, which holds in
 * unnamespaced mode and for the default profile.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "audit.h"
#include "cleanup.h"
#include "macros.h"
#include "net.h"
#include "policy.h"
#include "proc-ops.h"
#include "replay.h"
#include "netns.h"
#include "sc.h"
#include "vfs.h"

#define EXIT_CHANGES 1
#define EXIT_USAGE 2

/* --- shared helpers ------------------------------------------------------------------ */

/* Whether name is in the |-separated list text ("O_WRONLY|O_CREAT"). */
static bool has_flag(const char *text, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = text; p && *p;) {
		const char *e = strchrnul(p, '|');

		if ((size_t)(e - p) == n && strncmp(p, name, n) == 0)
			return true;
		p = *e ? e + 1 : e;
	}
	return false;
}

enum call_kind {
	CALL_NONE,      /* no name decision (fd-based, or a syscall we do not replay) */
	CALL_PATH,      /* vfs: want bits on path (and CREATE on path2 for rename/link) */
	CALL_NET,       /* net: destination in addr */
};

struct call_need {
	enum call_kind kind;
	unsigned want;          /* VFS_WANT_* on the (first) path */
	unsigned want2;         /* on path2 when it names a second object, else 0 */
	bool path2_is_path;
	bool exec;
	bool binding;           /* bind(2) rather than connect/send */
	int sock_type;
};

/* The syscall table's row of a recorded call: this ABI's, else another tabulated one's
 * (the access column is the same on every ABI). */
static const struct sc_entry *recorded_entry(const char *name)
{
	static const char *const abis[] = { "x86_64", "aarch64" };
	const struct sc_entry *e = name ? sc_by_name(sc_native_arch(), name) : NULL;

	for (size_t i = 0; name && !e && i < ELEMENTSOF(abis); i++)
		e = sc_by_name(sc_arch_by_name(abis[i]), name);
	return e;
}

/* The open flags a record names, as far as its access depends on them. */
static uint64_t recorded_oflags(const char *text)
{
	static const struct {
		const char *name;
		uint64_t bits;
	} names[] = {
		{ "O_WRONLY", O_WRONLY }, { "O_RDWR", O_RDWR },       { "O_TRUNC", O_TRUNC },
		{ "O_CREAT", O_CREAT },   { "O_TMPFILE", O_TMPFILE }, { "O_PATH", O_PATH },
	};
	uint64_t flags = 0;

	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (has_flag(text, names[i].name))
			flags |= names[i].bits;
	return flags;
}

/* The access a recorded syscall needed: its access column (syscall-table), made into
 * VFS_WANT_* bits as the vfs operations make it. */
static struct call_need call_need(const struct audit_sys *s)
{
	const struct sc_entry *e = recorded_entry(s->syscall);
	struct call_need k = { .kind = CALL_NONE };
	int a = e ? sc_object_arg(e, 0) : -1, b;
	enum sc_access acc;
	uint64_t how = 0;

	if (a < 0)
		return k;
	acc = (enum sc_access)e->access[a];
	if (acc == SC_ACCESS_CONNECT || acc == SC_ACCESS_SEND || acc == SC_ACCESS_BIND) {
		/* listen is recorded with an address only when it was decided as a bind of
		 * the socket's local address (sock.c: handle_listen); a unix connect or
		 * send uses the socket, as a read (sock.c: decide_unix) */
		k.kind = CALL_NET;
		k.binding = acc == SC_ACCESS_BIND;
		k.sock_type = acc == SC_ACCESS_SEND ? SOCK_DGRAM : SOCK_STREAM;
		k.want = vfs_want_of(acc, 0);
		return k;
	}
	if (e->arg[a] != SC_ARG_PATH)
		return k; /* the fd's file (fchmod ...): fd-based records are not replayed */
	k.kind = CALL_PATH;
	if (acc == SC_ACCESS_OPEN) {
		how = recorded_oflags(s->flags);
	} else if (acc == SC_ACCESS_AMODE) {
		for (int i = a + 1; i < e->nargs; i++)
			if (e->arg[i] == SC_ARG_MODE) {
				how = s->args[i];
				break;
			}
	}
	k.want = vfs_want_of(acc, how);
	/* whether O_CREAT made the file is not recorded: decided as the create */
	if (acc == SC_ACCESS_OPEN && (how & O_CREAT) && !(how & O_PATH) &&
	    (how & O_TMPFILE) != O_TMPFILE)
		k.want = VFS_WANT_CREATE | (k.want & VFS_WANT_WRITE);
	b = sc_object_arg(e, 1);
	if (b >= 0) {
		k.want2 = vfs_want_of((enum sc_access)e->access[b], 0);
		k.path2_is_path = true;
	}
	k.exec = acc == SC_ACCESS_EXEC && (e->category & SC_CAT_EXEC);
	return k;
}

/* A decided call. A native one has a record only when the kernel reported it: a
 * read-only open under --audit (stubwatch.h), with the object's virtual path. */
static bool replayable(const struct audit_sys *s)
{
	if (s->decision >= _AUDIT_DECISION_MAX)
		return false;
	return s->decision != AUDIT_NATIVE || s->resolved;
}

/* The path a denied record was about: the recorded prefix, extended to the path the
 * program gave when that path (made absolute against the run's cwd) continues it. */
static const char *subject_path(const struct audit_sys *s, const char *cwd, char *buf,
				size_t len)
{
	const char *res = s->resolved;

	if (!res)
		return NULL;
	if (s->decision == AUDIT_DENIED && s->path && s->path[0] &&
	    vfs_normalize(cwd, s->path, buf, len) == 0 && vfs_path_under(buf, res))
		return buf;
	return res;
}

struct run_info {
	char *cwd;
	enum vfs_mode mode;
	bool have_hdr;
	bool root_mapped;       /* the run's policy mapped the host's / (ro-bind / or bind /) */
	bool meta_unrecorded;   /* the kernel answered stat, access, readlink and listings:
				   the stream does not hold them (header feature) */
	bool opens_observed;    /* read-only opens recorded from the kernel's events: the
				   object each reached, not the symlinks on the way nor
				   failed lookups (header feature) */
};

/* Whether the canonical policy JSON of a header maps "/" itself. */
static bool policy_maps_root(const char *policy_json)
{
	json_t *j = policy_json ? json_loads(policy_json, 0, NULL) : NULL;
	json_t *rules = json_object_get(json_object_get(j, "fs"), "rules"), *rule;
	bool found = false;
	size_t i;

	json_array_foreach(rules, i, rule) {
		const char *virt = json_string_value(json_object_get(rule, "virtual"));
		const char *dir = json_string_value(json_object_get(rule, "directive"));

		if (virt && dir && streq(virt, "/") && (streq(dir, "ro-bind") || streq(dir, "bind")))
			found = true;
	}
	json_decref(j);
	return found;
}

static int read_hdr(struct audit_reader *r, const struct audit_rec *rec, struct run_info *ri)
{
	struct audit_hdr h;

	if (audit_decode_hdr(r, rec, &h) < 0)
		return -EBADMSG;
	free(ri->cwd);
	ri->cwd = strdup(h.cwd ? h.cwd : "/");
	if (!ri->cwd)
		return -ENOMEM;
	ri->mode = h.mode && streq(h.mode, "unnamespaced") ? VFS_MODE_UNNAMESPACED
							    : VFS_MODE_NAMESPACED;
	ri->root_mapped = policy_maps_root(h.policy_json);
	ri->meta_unrecorded = false;
	ri->opens_observed = false;
	for (size_t i = 0; i < h.n_features; i++) {
		if (h.features[i].name && streq(h.features[i].name, "metadata_calls_recorded"))
			ri->meta_unrecorded = !h.features[i].present;
		if (h.features[i].name && streq(h.features[i].name, "native_opens_from_fanotify"))
			ri->opens_observed = h.features[i].present;
	}
	ri->have_hdr = true;
	return 0;
}

/* Say how a damaged or truncated stream ended; the tools still use what they read. */
static void warn_stream_end(const char *file, struct audit_reader *r, unsigned bad)
{
	const struct audit_read_status *st = audit_reader_status(r);

	if (bad)
		fprintf(stderr, "moat audit: %s: %u damaged frame%s skipped\n", file, bad,
			bad == 1 ? "" : "s");
	if (st->truncated)
		fprintf(stderr, "moat audit: %s: truncated after %llu complete frames "
			"(%llu bytes lost); using the records before it\n", file,
			(unsigned long long)st->frames, (unsigned long long)st->lost_bytes);
}

/* --- replay -------------------------------------------------------------------------- */

struct replay {
	struct vfs *vfs;
	struct net *net;
	struct run_info ri;
	char old_tmp[PATH_MAX];        /* unnamespaced: the recorded run's private /tmp dir */
	unsigned long long decided, changed, to_denied, to_allowed, skipped, infra;
	bool json;
};

/* The rule sock.c names when a namespaced sandbox reaches a server of its own. */
#define OWN_LOOPBACK_RULE "the sandbox's own loopback (its network namespace)"

/*
 * Destinations that are moat's own infrastructure, not a decision of any policy: in a
 * namespaced run, the DNS responder at 127.0.0.1:53 inside the sandbox (every policy
 * gets it: its resolv.conf names it), and a loopback server of the sandbox itself,
 * served in the sandbox's own network namespace whatever the rules say.
 */
static bool moat_own_destination(const struct replay *R, const struct audit_sys *s,
				 const struct sockaddr_storage *ss)
{
	const struct sockaddr_in *in = (const void *)ss;

	if (R->ri.mode != VFS_MODE_NAMESPACED || s->decision == AUDIT_DENIED)
		return false;
	if (ss->ss_family == AF_INET && in->sin_addr.s_addr == htonl(INADDR_LOOPBACK) &&
	    in->sin_port == htons(53))
		return true;
	return s->rule && streq(s->rule, OWN_LOOPBACK_RULE);
}

/*
 * Unnamespaced runs record their private /tmp at its host path
 * (/tmp/moat-vfs-XXXXXX/tmpN); this replay's NEW has a private dir of its own.
 */
static const char *map_private_tmp(struct replay *R, const char *vpath, char *buf, size_t len)
{
	const char *tmpdir = vfs_tmpdir(R->vfs);
	const char *p = vpath, *e;

	if (R->ri.mode != VFS_MODE_UNNAMESPACED || !tmpdir ||
	    strncmp(p, "/tmp/moat-vfs-", 14) != 0)
		return vpath;
	e = strchr(p + 14, '/');
	if (!e || strncmp(e, "/tmp", 4) != 0)
		return vpath;
	e += 4;
	while (*e >= '0' && *e <= '9')
		e++;
	if (*e && *e != '/')
		return vpath;
	snprintf(buf, len, "%s%s", tmpdir, e);
	return buf;
}

/* Devices, fifos and sockets are written through read-only mappings (vfs ro_applies()). */
static unsigned host_adjust_want(const char *vpath, unsigned want)
{
	struct stat st;

	if ((want & VFS_WANT_WRITE) && !(want & VFS_WANT_CREATE) && stat(vpath, &st) == 0 &&
	    (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISFIFO(st.st_mode) ||
	     S_ISSOCK(st.st_mode)))
		return (want & ~VFS_WANT_WRITE) | VFS_WANT_READ;
	return want;
}

struct outcome {
	int err;                 /* 0 allowed, else errno */
	char rule[192];
	char what[PATH_MAX + 16];
};

static void decide_path(struct replay *R, const char *vpath, unsigned want, struct outcome *o)
{
	struct vfs_verdict v = { 0 };
	char buf[PATH_MAX];
	int r;

	vpath = map_private_tmp(R, vpath, buf, sizeof(buf));
	r = vfs_decide(R->vfs, vpath, host_adjust_want(vpath, want), &v);
	o->err = r < 0 ? -r : 0;
	snprintf(o->rule, sizeof(o->rule), "%s", v.rule);
	snprintf(o->what, sizeof(o->what), "%s", vpath);
}

/* Returns false when the record carries no decision to replay. */
static bool replay_decide(struct replay *R, const struct audit_sys *s, struct outcome *o)
{
	struct call_need k = call_need(s);
	char buf[PATH_MAX];
	const char *subj;

	memset(o, 0, sizeof(*o));
	if (k.kind == CALL_NONE)
		return false;
	if (k.kind == CALL_NET && s->addr && strncmp(s->addr, "unix:", 5) != 0) {
		struct sockaddr_storage ss;
		struct net_verdict v = { 0 };
		socklen_t len;
		int r;

		if (net_sockaddr_parse(s->addr, &ss, &len) < 0)
			return false;
		if (!k.binding && moat_own_destination(R, s, &ss)) {
			R->infra++;
			return false;
		}
		if (k.binding) {
			/* Namespaced, the sandbox binds in its own empty network namespace. */
			if (R->ri.mode == VFS_MODE_NAMESPACED)
				return false;
			r = net_decide_bind(R->net, (struct sockaddr *)&ss, len, k.sock_type, &v);
		} else {
			r = net_decide(R->net, (struct sockaddr *)&ss, len, k.sock_type, &v);
		}
		o->err = r < 0 ? -r : 0;
		snprintf(o->rule, sizeof(o->rule), "%s", v.rule);
		snprintf(o->what, sizeof(o->what), "%s", v.addr[0] ? v.addr : s->addr);
		return true;
	}
	subj = subject_path(s, R->ri.cwd, buf, sizeof(buf));
	if (!subj || subj[0] != '/')
		return false;
	decide_path(R, subj, k.want, o);
	/* rename and link decide on the second name too; the record keeps it as given */
	if (o->err == 0 && k.path2_is_path && s->path2 && s->path2[0]) {
		char p2[PATH_MAX];

		if ((s->path2[0] == '/' || s->decision != AUDIT_DENIED) &&
		    vfs_normalize(R->ri.cwd, s->path2, p2, sizeof(p2)) == 0) {
			struct outcome o2;

			decide_path(R, p2, k.want2, &o2);
			if (o2.err)
				*o = o2;
		}
	}
	return true;
}

static void print_change(struct replay *R, uint64_t seq, const struct audit_sys *s,
			 const struct outcome *o, bool was_denied)
{
	const char *en = sc_errno_name(was_denied ? s->err : o->err);

	printf("seq %llu: %s %s%s%s -> %s: %s -> %s (%s) by %s; recorded: %s\n",
	       (unsigned long long)seq, s->syscall ? s->syscall : "?",
	       s->path ? "\"" : "", s->path ? s->path : (s->addr ? s->addr : ""),
	       s->path ? "\"" : "", o->what,
	       was_denied ? "denied" : "allowed", was_denied ? "allowed" : "denied",
	       was_denied ? "now succeeds" : (en ? en : "error"),
	       o->rule[0] ? o->rule : "(no rule)", s->rule ? s->rule : "(no rule)");
	(void)R;
}

static const char replay_usage[] =
	"usage: moat audit replay --policy NEW FILE\n"
	"Decide every recorded call again under NEW; list those whose decision changes.\n"
	"Exit status: 0 nothing changes, 1 some decision changes, 2 usage or I/O error.\n";

int replay_cli(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct replay R = { 0 };
	struct policy pol = { 0 };
	struct proc_map pm;
	struct audit_reader *rd = NULL;
	const char *policy_path = NULL, *file;
	char here[PATH_MAX], ne[512];
	struct moat_error pe = { 0 };
	unsigned bad = 0;
	int opt, r, status = EXIT_USAGE;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+p:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			policy_path = optarg;
			break;
		case 'h':
			fputs(replay_usage, stdout);
			return 0;
		default:
			fprintf(stderr, "moat audit replay: unknown or incomplete option '%s'\n%s",
				argv[optind - 1], replay_usage);
			return EXIT_USAGE;
		}
	}
	if (!policy_path || optind != argc - 1) {
		fprintf(stderr, "moat audit replay: needs --policy NEW and one FILE\n%s",
			replay_usage);
		return EXIT_USAGE;
	}
	file = argv[optind];
	if (!getcwd(here, sizeof(here)))
		snprintf(here, sizeof(here), ".");
	if (policy_load_file(&pol, policy_path, &pe) < 0) {
		fprintf(stderr, "moat audit replay: %s\n", moat_error_str(&pe));
		return EXIT_USAGE;
	}
	r = audit_reader_open(file, 0, &rd);
	if (r < 0) {
		fprintf(stderr, "moat audit replay: %s: %s\n", file, strerror(-r));
		goto out;
	}
	for (;;) {
		struct audit_rec rec;
		struct audit_sys s;
		struct outcome o;
		unsigned long long infra;
		bool was_denied, now_denied;

		r = audit_reader_next(rd, &rec);
		if (r == -EBADMSG) {
			bad++;
			fprintf(stderr, "moat audit replay: %s\n", audit_reader_error(rd));
			continue;
		}
		if (r < 0) {
			fprintf(stderr, "moat audit replay: %s: %s\n", file, strerror(-r));
			goto out;
		}
		if (r == 0)
			break;
		if (rec.type == AUDIT_REC_HDR && !R.ri.have_hdr) {
			if (read_hdr(rd, &rec, &R.ri) < 0) {
				fprintf(stderr, "moat audit replay: %s: unreadable header\n", file);
				goto out;
			}
			/* The default profile maps the cwd: build NEW as the run would have. */
			if (chdir(R.ri.cwd) < 0)
				fprintf(stderr, "moat audit replay: the run's directory %s: %s; "
					"deciding as if it ran in %s\n", R.ri.cwd, strerror(errno),
					here);
			r = policy_apply(&pol, proc_map_init(&pm), &R.vfs, &R.net, &pe);
			/* moat's own additions (the sandbox's resolv.conf or hosts file), and
			 * exact names in allow-net rules resolved as at the run's start */
			if (r >= 0)
				r = sup_net_prepare(R.vfs, R.net,
						    R.ri.mode == VFS_MODE_NAMESPACED, ne,
						    sizeof(ne), &pe);
			if (r >= 0)
				r = vfs_finalize(R.vfs, R.ri.mode, &pe);
			if (chdir(here) < 0) {
				/* only relative FILE names would suffer; they are open already */
			}
			if (r < 0) {
				fprintf(stderr, "moat audit replay: %s: %s\n", policy_path,
					moat_error_str(&pe));
				goto out;
			}
			continue;
		}
		if (rec.type != AUDIT_REC_SYS)
			continue;
		if (!R.ri.have_hdr) {
			fprintf(stderr, "moat audit replay: %s: no header before the first record\n",
				file);
			goto out;
		}
		if (audit_decode_sys(rd, &rec, &s) < 0)
			continue;
		if (!replayable(&s))
			continue;
		infra = R.infra;
		if (!replay_decide(&R, &s, &o)) {
			if (R.infra == infra)
				R.skipped++;
			continue;
		}
		R.decided++;
		was_denied = s.decision == AUDIT_DENIED || s.decision == AUDIT_KILLED;
		now_denied = o.err != 0;
		if (was_denied == now_denied)
			continue;
		/* A file that was not there fails the same way when NEW hides it. */
		if (!was_denied && s.err == ENOENT && o.err == ENOENT)
			continue;
		R.changed++;
		if (was_denied)
			R.to_allowed++;
		else
			R.to_denied++;
		print_change(&R, rec.seq, &s, &o, was_denied);
	}
	warn_stream_end(file, rd, bad);
	if (!R.ri.have_hdr) {
		fprintf(stderr, "moat audit replay: %s: no header record\n", file);
		goto out;
	}
	printf("%llu of %llu decisions change under %s (%llu allowed -> denied, %llu denied -> "
	       "allowed); %llu records carry no name decision\n", R.changed, R.decided,
	       policy_path, R.to_denied, R.to_allowed, R.skipped);
	if (R.infra)
		printf("%llu records reached moat's own infrastructure (the DNS responder at "
		       "127.0.0.1:53 or the sandbox's own loopback, namespaced): no policy "
		       "decides them, not replayed\n", R.infra);
	if (R.ri.meta_unrecorded)
		printf("the run did not record stat, access, readlink or listings (namespaced "
		       "without --strict-hide): their decisions are not replayed\n");
	if (R.ri.opens_observed)
		printf("the run's read-only opens were native, recorded from the kernel's open "
		       "events: each is replayed by the object it reached, not by the symlinks "
		       "on the way, and failed lookups are not in the stream\n");
	status = R.changed ? EXIT_CHANGES : 0;
out:
	audit_reader_free(rd);
	vfs_free(R.vfs);
	net_free(R.net);
	policy_done(&pol);
	free(R.ri.cwd);
	return status;
}

/* --- suggest ------------------------------------------------------------------------- */

enum { NEED_RO = 1, NEED_RW = 2 };

struct need {
	char *path;
	unsigned how;
};

struct suggest {
	struct run_info ri;
	struct need *needs;
	size_t n, cap;
	char **nets;
	size_t n_nets;
	char **unfixable;      /* denials no mapping can lift */
	size_t n_unfixable;
	char **denied;         /* paths the run was denied: hidden in the suggestion */
	size_t n_denied;
	char **secrets_used;   /* "PATH (GLOB)": secrets the run used, hidden all the same */
	size_t n_secrets_used;
	char **unsafe;         /* paths no policy line can name (control characters, ...) */
	size_t n_unsafe;
	const char *home;
	bool cwd_rw, tmp, proc, keep_root;
};

static int strv_add_unique(char ***v, size_t *n, const char *s)
{
	char **nv;

	for (size_t i = 0; i < *n; i++)
		if (streq((*v)[i], s))
			return 0;
	nv = realloc(*v, (*n + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[*n] = strdup(s);
	if (!nv[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

static int need_add(struct suggest *S, const char *path, unsigned how)
{
	for (size_t i = 0; i < S->n; i++)
		if (streq(S->needs[i].path, path)) {
			S->needs[i].how |= how;
			return 0;
		}
	if (S->n == S->cap) {
		size_t cap = S->cap ? S->cap * 2 : 64;
		struct need *nn = realloc(S->needs, cap * sizeof(*nn));

		if (!nn)
			return -ENOMEM;
		S->needs = nn;
		S->cap = cap;
	}
	S->needs[S->n].path = strdup(path);
	if (!S->needs[S->n].path)
		return -ENOMEM;
	S->needs[S->n++].how = how;
	return 0;
}

static bool collapsible(const char *p);
static size_t depth_of(const char *p);

/*
 * Follow path on the host as the vfs walker would inside a same-path view, noting every
 * symlink on the way (each must be mapped for the walk to pass it) and the object reached
 * (how), or the deepest existing directory when the rest did not exist. Paths under /tmp
 * (the sandbox's private tmpfs, not the host's) and /proc (the run's own processes) are
 * noted as such instead. parent: the object is the directory holding the last name.
 */
static int host_walk(struct suggest *S, const char *path, unsigned how, bool parent)
{
	char cur[PATH_MAX] = "/", rest[PATH_MAX * 2];
	int links = 0, r;

	if (vfs_normalize("/", path, rest, sizeof(rest)) < 0)
		return 0;
	if (parent) {
		char *sl = strrchr(rest, '/');

		if (sl == rest)
			rest[1] = '\0';
		else if (sl)
			*sl = '\0';
	}
	for (;;) {
		char next[PATH_MAX], *p = rest, *e;
		struct stat st;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		e = strchrnul(p, '/');
		if (e - p == 1 && p[0] == '.') {
			memmove(rest, e, strlen(e) + 1);
			continue;
		}
		if (e - p == 2 && p[0] == '.' && p[1] == '.') {
			char *sl = strrchr(cur, '/');

			if (sl == cur)
				cur[1] = '\0';
			else if (sl)
				*sl = '\0';
			memmove(rest, e, strlen(e) + 1);
			continue;
		}
		if ((size_t)snprintf(next, sizeof(next), "%s%s%.*s", cur, streq(cur, "/") ? "" : "/",
				     (int)(e - p), p) >= sizeof(next))
			return 0;
		if (vfs_path_under(next, "/proc")) {
			S->proc = true;
			return 0;
		}
		if (vfs_path_under(next, "/tmp") && !vfs_path_under(S->ri.cwd, next) &&
		    !vfs_path_under(next, S->ri.cwd)) {
			S->tmp = true;
			return 0;
		}
		if (lstat(next, &st) < 0) {
			/* The rest does not exist. Entries the run created there need the
			 * deepest existing directory writable. A read of it fails when nothing
			 * is mapped too (ENOENT, as on the host, though counted as a denial),
			 * so it maps that directory only below the system directories, where
			 * collapse() may widen to anyway: elsewhere it would grant all of it. */
			if ((how & NEED_RW) && parent)
				return need_add(S, cur, NEED_RW);
			return collapsible(cur) && depth_of(cur) >= 2 ? need_add(S, cur, NEED_RO)
								       : 0;
		}
		if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX], tmp[PATH_MAX * 2];
			ssize_t n = readlink(next, target, sizeof(target) - 1);

			if (n < 0 || ++links > 40)
				return 0;
			target[n] = '\0';
			if ((r = need_add(S, next, NEED_RO)) < 0)
				return r;
			if (snprintf(tmp, sizeof(tmp), "%s/%s", target, e) >= (int)sizeof(tmp))
				return 0;
			snprintf(rest, sizeof(rest), "%s", tmp);
			if (target[0] == '/')
				snprintf(cur, sizeof(cur), "/");
			continue;
		}
		snprintf(cur, sizeof(cur), "%s", next);
		memmove(rest, e, strlen(e) + 1);
	}
	return need_add(S, cur, how);
}

/* The ELF interpreter (PT_INTERP) of a binary, or the #! interpreter of a script. */
static bool program_interpreter(const char *path, char *buf, size_t len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf64_Ehdr eh;
	char head[256];
	ssize_t n;

	if (fd < 0)
		return false;
	n = pread(fd, head, sizeof(head) - 1, 0);
	if (n >= 2 && head[0] == '#' && head[1] == '!') {
		char *p = head + 2, *e;

		head[n] = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		e = p + strcspn(p, " \t\n");
		*e = '\0';
		if (*p != '/')
			return false;
		snprintf(buf, len, "%s", p);
		return true;
	}
	if (n < (ssize_t)sizeof(eh) || memcmp(head, ELFMAG, SELFMAG) != 0 ||
	    head[EI_CLASS] != ELFCLASS64)
		return false;
	memcpy(&eh, head, sizeof(eh));
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) !=
		    (ssize_t)sizeof(ph))
			return false;
		if (ph.p_type == PT_INTERP && ph.p_filesz > 1 && ph.p_filesz < len) {
			if (pread(fd, buf, ph.p_filesz, (off_t)ph.p_offset) != (ssize_t)ph.p_filesz)
				return false;
			buf[ph.p_filesz - 1] = '\0';
			return buf[0] == '/';
		}
	}
	return false;
}

static int suggest_exec(struct suggest *S, const char *binary, int depth)
{
	char real[PATH_MAX], interp[PATH_MAX];

	if (depth > 3 || !realpath(binary, real) || !program_interpreter(real, interp, sizeof(interp)))
		return 0;
	if (host_walk(S, interp, NEED_RO, false) < 0)
		return -ENOMEM;
	return suggest_exec(S, interp, depth + 1);
}

/* Whether a policy line can name path exactly: the parser strips blanks around the
 * argument and reads one line, so a path with a control character or an edge blank
 * would name another path (or smuggle in a directive of the sandbox's choosing). */
static bool policy_safe(const char *path)
{
	size_t n = strlen(path);

	if (!n || path[0] == ' ' || path[0] == '\t' || path[n - 1] == ' ' || path[n - 1] == '\t')
		return false;
	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

/* A path as text for a comment or a message: control characters as \xNN. */
static void esc_text(char *buf, size_t len, const char *s)
{
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p && o + 5 < len; p++) {
		if (*p < 0x20 || *p == 0x7f || *p == '\\')
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", *p);
		else
			buf[o++] = (char)*p;
	}
	buf[o] = '\0';
}

/* Note a path the run used that the default profile counts as a secret. */
static int note_secret(struct suggest *S, const char *path)
{
	const char *g = vfs_default_secret_of(S->home, path);
	char line[PATH_MAX + 64], e[PATH_MAX];

	if (!g)
		return 0;
	esc_text(e, sizeof(e), path);
	snprintf(line, sizeof(line), "%s (%s)", e, g);
	return strv_add_unique(&S->secrets_used, &S->n_secrets_used, line);
}

static int suggest_record(struct suggest *S, const struct audit_sys *s)
{
	struct call_need k = call_need(s);
	bool denied = s->decision == AUDIT_DENIED || s->decision == AUDIT_KILLED;
	char abs[PATH_MAX], subj[PATH_MAX];
	unsigned how;
	bool parent;
	int r;

	if (k.kind == CALL_NONE)
		return 0;
	if (k.kind == CALL_NET && s->addr && strncmp(s->addr, "unix:", 5) != 0) {
		struct sockaddr_storage ss;
		socklen_t len;

		/* only destinations the run reached, and not moat's own DNS responder or
		 * the sandbox's own loopback: allowing those would open the host's */
		if (denied || k.binding || net_sockaddr_parse(s->addr, &ss, &len) < 0)
			return 0;
		if (S->ri.mode == VFS_MODE_NAMESPACED &&
		    ((s->rule && streq(s->rule, OWN_LOOPBACK_RULE)) ||
		     (ss.ss_family == AF_INET &&
		      ((struct sockaddr_in *)&ss)->sin_addr.s_addr == htonl(INADDR_LOOPBACK) &&
		      ((struct sockaddr_in *)&ss)->sin_port == htons(53))))
			return 0;
		return strv_add_unique(&S->nets, &S->n_nets, s->addr);
	}
	if (k.kind == CALL_NET && s->addr && strncmp(s->addr, "unix:@", 6) == 0)
		return 0;
	if (denied && !s->resolved && !(k.kind == CALL_NET && s->addr)) {
		char line[PATH_MAX + 512], e1[128], e2[PATH_MAX], e3[256];

		/* refused by a fixed rule (no handler, personality): no policy lifts it */
		esc_text(e1, sizeof(e1), s->syscall ? s->syscall : "?");
		esc_text(e2, sizeof(e2), s->path ? s->path : "");
		esc_text(e3, sizeof(e3), s->rule ? s->rule : "denied");
		snprintf(line, sizeof(line), "%s \"%s\": %s", e1, e2, e3);
		return strv_add_unique(&S->unfixable, &S->n_unfixable, line);
	}
	if (denied) {
		const char *sp = subject_path(s, S->ri.cwd, subj, sizeof(subj));

		/* A write refused by a read-only mapping stays refused: nothing is mapped
		 * writable for it. Anything else the run was denied is hidden outright, so
		 * no mapping of the suggestion can show it. */
		if (s->err == EROFS || !sp || sp[0] != '/')
			return 0;
		if ((r = strv_add_unique(&S->denied, &S->n_denied, sp)) < 0)
			return r;
		if (s->resolved && s->resolved[0] == '/' && !streq(s->resolved, sp))
			return strv_add_unique(&S->denied, &S->n_denied, s->resolved);
		return 0;
	}
	how = (k.want & (VFS_WANT_WRITE | VFS_WANT_CREATE)) ? NEED_RW : NEED_RO;
	/* creating, removing or renaming an entry needs its directory writable */
	parent = (k.want & VFS_WANT_CREATE) && !(k.kind == CALL_NET);
	if (s->path && s->path[0] == '/') {
		if (vfs_normalize("/", s->path, abs, sizeof(abs)) < 0)
			return 0;
	} else if (s->resolved) {
		snprintf(abs, sizeof(abs), "%s", s->resolved);
	} else if (s->path && s->path[0]) {
		if (vfs_normalize(S->ri.cwd, s->path, abs, sizeof(abs)) < 0)
			return 0;
	} else {
		return 0;
	}
	if ((r = note_secret(S, abs)) < 0 || (s->resolved && (r = note_secret(S, s->resolved)) < 0))
		return r;
	if (vfs_path_under(abs, S->ri.cwd)) {
		if (how == NEED_RW)
			S->cwd_rw = true;
		/* symlinks in the workspace may still lead out of it */
	}
	if (strncmp(abs, "/tmp/moat-vfs-", 14) == 0) {
		/* an unnamespaced run's private /tmp: what the program calls /tmp */
		S->tmp = true;
		return 0;
	}
	if ((r = host_walk(S, abs, how, parent)) < 0)
		return r;
	/* the canonical object the run reached, when the record has it whole */
	if (s->resolved && s->resolved[0] == '/' && !streq(s->resolved, abs) &&
	    (r = host_walk(S, s->resolved, how, parent)) < 0)
		return r;
	if (k.path2_is_path && s->path2 && s->path2[0]) {
		if (vfs_normalize(S->ri.cwd, s->path2, abs, sizeof(abs)) == 0 &&
		    (r = host_walk(S, abs, k.want2 & VFS_WANT_CREATE ? NEED_RW : NEED_RO,
				   k.want2 & VFS_WANT_CREATE)) < 0)
			return r;
		if (vfs_path_under(abs, S->ri.cwd))
			S->cwd_rw = true;
	}
	if (k.exec)
		return suggest_exec(S, s->resolved ? s->resolved : abs, 0);
	return 0;
}

static size_t depth_of(const char *p)
{
	size_t d = 0;

	for (; *p; p++)
		if (*p == '/' && p[1])
			d++;
	return d;
}

static int cmp_need(const void *a, const void *b)
{
	return strcmp(((const struct need *)a)->path, ((const struct need *)b)->path);
}

/*
 * Whether a read-only need may be widened to its directory: only inside the system
 * directories the default profile maps read-only as a whole anyway, so the widening
 * never grants what the default profile would not. Elsewhere (homes, /srv, /var, the
 * workspace's neighbours) only what the run used is mapped.
 */
static bool collapsible(const char *p)
{
	static const char *const sys[] = { "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
					   "/libx32", "/etc" };

	for (size_t i = 0; i < ELEMENTSOF(sys); i++)
		if (vfs_path_under(p, sys[i]))
			return true;
	return false;
}

/* Cut read-only system needs to three components, then fold crowded directories. */
static int collapse(struct suggest *S)
{
	bool again = true;
	int r;

	for (size_t i = 0; i < S->n; i++) {
		char *p = S->needs[i].path;

		/* The root as a whole is never suggested (a listing of / needs no mapping:
		 * the sandbox's root shows its mount points), unless asked for when the
		 * run had it; nor a path no policy line can name. */
		if (streq(p, "/") && !(S->keep_root && S->ri.root_mapped))
			S->needs[i].how = 0;
		if (!policy_safe(p)) {
			if ((r = strv_add_unique(&S->unsafe, &S->n_unsafe, p)) < 0)
				return r;
			S->needs[i].how = 0;
		}
		if (S->needs[i].how == NEED_RO && depth_of(p) > 3 && collapsible(p)) {
			char *c = p;

			for (int k = 0; k < 4; k++)
				c = strchr(c + 1, '/');
			if (c)
				*c = '\0';
		}
	}
	while (again) {
		again = false;
		for (size_t i = 0; i < S->n; i++) {
			char dir[PATH_MAX], *sl;
			size_t count = 0;

			if (S->needs[i].how != NEED_RO || !collapsible(S->needs[i].path))
				continue;
			snprintf(dir, sizeof(dir), "%s", S->needs[i].path);
			sl = strrchr(dir, '/');
			if (!sl || sl == dir)
				continue;
			*sl = '\0';
			if (depth_of(dir) < 2)
				continue;
			for (size_t j = 0; j < S->n; j++) {
				const char *q = S->needs[j].path;

				/* direct children only; dir itself is under dir but has no child
				 * part to look into */
				if (S->needs[j].how == NEED_RO && vfs_path_under(q, dir) &&
				    strlen(q) > strlen(dir) && !strchr(q + strlen(dir) + 1, '/'))
					count++;
			}
			if (count < 4)
				continue;
			for (size_t j = 0; j < S->n; j++)
				if (S->needs[j].how == NEED_RO && vfs_path_under(S->needs[j].path, dir) &&
				    !streq(S->needs[j].path, dir))
					S->needs[j].how = 0;
			if ((r = need_add(S, dir, NEED_RO)) < 0)
				return r;
			again = true;
		}
	}
	/* drop what another mapping covers; a writable one inside a read-only one stays */
	for (size_t i = 0; i < S->n; i++) {
		const char *p = S->needs[i].path;
		unsigned how = S->needs[i].how;

		if (!how)
			continue;
		if (how & NEED_RW)
			S->needs[i].how = how = NEED_RW;
		if (vfs_path_under(p, S->ri.cwd) && (how == NEED_RO || S->cwd_rw)) {
			S->needs[i].how = 0;
			continue;
		}
		for (size_t j = 0; j < S->n; j++) {
			if (j == i || !S->needs[j].how || !vfs_path_under(p, S->needs[j].path))
				continue;
			if (streq(p, S->needs[j].path))
				continue;
			if (how == NEED_RO || S->needs[j].how == NEED_RW) {
				S->needs[i].how = 0;
				break;
			}
		}
	}
	qsort(S->needs, S->n, sizeof(*S->needs), cmp_need);
	return 0;
}

/* A path as a directive argument: "\:" keeps a colon literal (SRC:DST syntax). */
static void put_path(FILE *f, const char *p)
{
	for (; *p; p++) {
		if (*p == ':' || *p == '\\')
			fputc('\\', f);
		fputc(*p, f);
	}
}

/* A glob that matches exactly path: the matcher's wildcards and "\" escaped. */
static void put_literal_glob(FILE *f, const char *p)
{
	for (; *p; p++) {
		if (*p == '*' || *p == '?' || *p == '\\' || *p == ':' || *p == '[')
			fputc('\\', f);
		fputc(*p, f);
	}
}

/* Whether hiding path would hide something the run used and was allowed. */
static bool above_a_need(const struct suggest *S, const char *path)
{
	if (vfs_path_under(S->ri.cwd, path))
		return true;
	for (size_t i = 0; i < S->n; i++)
		if (S->needs[i].how && vfs_path_under(S->needs[i].path, path))
			return true;
	return false;
}

static void write_policy(struct suggest *S, FILE *f, const char *file)
{
	bool root = S->keep_root && S->ri.root_mapped, first = true;
	char e[PATH_MAX];

	esc_text(e, sizeof(e), file);
	fprintf(f, "moat-policy 1\n");
	fprintf(f, "# Suggested by `moat audit suggest` from %s: what that run used and was\n"
		"# allowed, read-only unless it wrote there; what it was denied and the default\n"
		"# profile's secrets stay hidden. Review before use.\n", e);
	fprintf(f, "profile none\n\n# read\n");
	if (root)
		fputs("# the run mapped the host's root and --keep-ro-bind-root keeps it\n"
		      "ro-bind /\n", f);
	for (size_t i = 0; i < S->n; i++)
		if (S->needs[i].how == NEED_RO && !streq(S->needs[i].path, "/") &&
		    !(i > 0 && S->needs[i - 1].how == NEED_RO &&
		      streq(S->needs[i - 1].path, S->needs[i].path))) {
			/* the default profile's kind of mapping there: no "**" secret glob
			 * reaches in, so the run's opens stay continued */
			fputs(collapsible(S->needs[i].path) ? "system " : "ro-bind ", f);
			put_path(f, S->needs[i].path);
			fputc('\n', f);
		}
	if (S->proc)
		fputs("ro-bind /proc\n", f);
	fputs("\n# written\n", f);
	for (size_t i = 0; i < S->n; i++)
		if (S->needs[i].how == NEED_RW) {
			fputs("bind ", f);
			put_path(f, S->needs[i].path);
			fputc('\n', f);
		}
	fputs("\n# workspace\n", f);
	if (policy_safe(S->ri.cwd) && !streq(S->ri.cwd, "/")) {
		fputs(S->cwd_rw ? "bind " : "ro-bind ", f);
		put_path(f, S->ri.cwd);
		fputc('\n', f);
	} else {
		esc_text(e, sizeof(e), S->ri.cwd);
		fprintf(f, "# not mapped: %s\n", e);
	}
	if (S->tmp)
		fputs("tmpfs /tmp\n", f);

	/* Hides come after every mapping: the later rule wins. */
	fputs("\n# the default profile's secrets, hidden whatever the run did\n", f);
	for (size_t i = 0; vfs_default_secrets[i]; i++)
		fprintf(f, "hide %s\n", vfs_default_secrets[i]);
	for (size_t i = 0; i < S->n_secrets_used; i++) {
		if (i == 0)
			fputs("# the run used these secrets; they stay hidden:\n", f);
		fprintf(f, "#   %s\n", S->secrets_used[i]);
	}
	for (size_t i = 0; i < S->n_denied; i++) {
		const char *p = S->denied[i];

		if (!policy_safe(p)) {
			strv_add_unique(&S->unsafe, &S->n_unsafe, p);
			continue;
		}
		if (first)
			fputs("\n# denied to the run: denied here too\n", f);
		first = false;
		if (above_a_need(S, p) || streq(p, "/")) {
			esc_text(e, sizeof(e), p);
			fprintf(f, "# %s: not hidden, the run used what is under it (it stays unmapped)\n", e);
			continue;
		}
		fputs("hide ", f);
		put_literal_glob(f, p);
		fputc('\n', f);
	}
	if (S->n_nets)
		fputs("\n# network\n", f);
	for (size_t i = 0; i < S->n_nets; i++)
		fprintf(f, "allow-net %s\n", S->nets[i]);
	if (S->n_unfixable)
		fputs("\n# refused whatever the policy says:\n", f);
	for (size_t i = 0; i < S->n_unfixable; i++)
		fprintf(f, "#   %s\n", S->unfixable[i]);
	for (size_t i = 0; i < S->n_unsafe; i++) {
		if (i == 0)
			fputs("\n# paths no policy line can name exactly (left unmapped):\n", f);
		esc_text(e, sizeof(e), S->unsafe[i]);
		fprintf(f, "#   %s\n", e);
	}
}

static const char suggest_usage[] =
	"usage: moat audit suggest [--keep-ro-bind-root] FILE [-o OUT]\n"
	"Write the smallest policy (moat-policy 1) that allows what the run did and was\n"
	"allowed: read-only unless written, denied paths and the default profile's secrets\n"
	"hidden. --keep-ro-bind-root keeps `ro-bind /` when the run had it (never otherwise).\n";

int suggest_cli(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "keep-ro-bind-root", no_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct suggest S = { .home = getenv("HOME") };
	struct audit_reader *rd = NULL;
	const char *out_path = NULL, *file;
	unsigned bad = 0;
	int opt, r, status = EXIT_USAGE;
	FILE *out = NULL;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			out_path = optarg;
			break;
		case 'R':
			S.keep_root = true;
			break;
		case 'h':
			fputs(suggest_usage, stdout);
			return 0;
		default:
			fprintf(stderr, "moat audit suggest: unknown or incomplete option '%s'\n%s",
				argv[optind - 1], suggest_usage);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "moat audit suggest: needs one FILE\n%s", suggest_usage);
		return EXIT_USAGE;
	}
	file = argv[optind];
	r = audit_reader_open(file, 0, &rd);
	if (r < 0) {
		fprintf(stderr, "moat audit suggest: %s: %s\n", file, strerror(-r));
		return EXIT_USAGE;
	}
	for (;;) {
		struct audit_rec rec;
		struct audit_sys s;

		r = audit_reader_next(rd, &rec);
		if (r == -EBADMSG) {
			bad++;
			fprintf(stderr, "moat audit suggest: %s\n", audit_reader_error(rd));
			continue;
		}
		if (r < 0) {
			fprintf(stderr, "moat audit suggest: %s: %s\n", file, strerror(-r));
			goto out;
		}
		if (r == 0)
			break;
		if (rec.type == AUDIT_REC_HDR && !S.ri.have_hdr) {
			if (read_hdr(rd, &rec, &S.ri) < 0) {
				fprintf(stderr, "moat audit suggest: %s: unreadable header\n", file);
				goto out;
			}
			continue;
		}
		if (rec.type != AUDIT_REC_SYS || !S.ri.have_hdr)
			continue;
		if (audit_decode_sys(rd, &rec, &s) < 0 || !replayable(&s))
			continue;
		if ((r = suggest_record(&S, &s)) < 0) {
			fprintf(stderr, "moat audit suggest: %s\n", strerror(-r));
			goto out;
		}
	}
	warn_stream_end(file, rd, bad);
	if (!S.ri.have_hdr) {
		fprintf(stderr, "moat audit suggest: %s: no header record\n", file);
		goto out;
	}
	if ((r = collapse(&S)) < 0) {
		fprintf(stderr, "moat audit suggest: %s\n", strerror(-r));
		goto out;
	}
	out = out_path ? fopen(out_path, "we") : stdout;
	if (!out) {
		fprintf(stderr, "moat audit suggest: %s: %s\n", out_path, strerror(errno));
		goto out;
	}
	write_policy(&S, out, file);
	if (S.ri.meta_unrecorded)
		fprintf(stderr, "moat audit suggest: %s: the run did not record stat, access, "
			"readlink or listings (namespaced without --strict-hide): a path the "
			"program only looked at is not mapped; record the run with --strict-hide "
			"to learn those too\n", file);
	if (S.ri.opens_observed)
		fprintf(stderr, "moat audit suggest: %s: the run's read-only opens were native, "
			"recorded by the object each reached: the symlinks that led there and "
			"failed lookups are not mapped; record the run with --strict-hide to "
			"learn those too\n", file);
	if ((out_path ? fclose(out) : fflush(out)) != 0) {
		fprintf(stderr, "moat audit suggest: %s: %s\n", out_path ? out_path : "stdout",
			strerror(errno));
		goto out;
	}
	status = 0;
out:
	audit_reader_free(rd);
	for (size_t i = 0; i < S.n; i++)
		free(S.needs[i].path);
	free(S.needs);
	for (size_t i = 0; i < S.n_nets; i++)
		free(S.nets[i]);
	free(S.nets);
	for (size_t i = 0; i < S.n_unfixable; i++)
		free(S.unfixable[i]);
	free(S.unfixable);
	for (size_t i = 0; i < S.n_denied; i++)
		free(S.denied[i]);
	free(S.denied);
	for (size_t i = 0; i < S.n_secrets_used; i++)
		free(S.secrets_used[i]);
	free(S.secrets_used);
	for (size_t i = 0; i < S.n_unsafe; i++)
		free(S.unsafe[i]);
	free(S.unsafe);
	free(S.ri.cwd);
	return status;
}
