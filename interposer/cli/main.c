/* SPDX-License-Identifier: MIT */
/*
 * moat: the command line. The only file that exits.
 *
 *   moat run [OPTIONS] -- COMMAND [ARG...]
 *   moat syscalls [--arch A] [--json]
 *   moat policy check FILE | moat policy show [--json] [RUN OPTIONS]
 *   moat audit SUBCOMMAND ...
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"
#include "log.h"
#include "macros.h"
#include "moat-config.h"
#include "net.h"
#include "oci.h"
#include "policy.h"
#include "proc-ops.h"
#include "replay.h"
#include "sc.h"
#include "serve.h"
#include "cow.h"
#include "sup.h"
#include "vfs.h"

static const char run_usage[] =
	"usage: moat run [OPTIONS] -- COMMAND [ARG...]\n"
	"\n"
	"Run COMMAND behind a seccomp filter; the supervisor performs every name-bearing\n"
	"syscall itself against a filtered view of the host.\n"
	"\n"
	"Sandbox:\n"
	"  --mode auto|namespaced|unnamespaced   kernel isolation (default auto)\n"
	"  --policy FILE          directives from a policy file (moat-policy 1)\n"
	"  --profile default|none start from the built-in profile (default) or nothing\n"
	"  --ro-bind SRC[:DST]    --bind SRC[:DST]    --tmpfs DST[ SIZE]\n"
	"  --hide GLOB            --deny GLOB         --file DST CONTENT|@HOSTFILE\n"
	"  --chdir DIR            --allow-net DEST    --deny-net DEST    --allow-bind PORT\n"
	"  --strict-hide          hidden names do not even exist (namespaced: emulate every\n"
	"                         metadata call by name instead of letting the kernel answer)\n"
	"Process:\n"
	"  --setenv NAME VALUE    --keep-env NAME\n"
	"  --stdin / --no-stdin   pass moat's stdin (default when it is not a terminal) / /dev/null\n"
	"  --tty                  keep the terminal (implies --stdin)\n"
	"Limits (for the whole run):\n"
	"  --timeout SECS  --memory SIZE  --pids N  --cpu SECS  --nofile N  --fsize SIZE\n"
	"  --disk SIZE            room for all the run writes privately (/tmp, /dev/shm, home)\n"
	"  --strict               refuse to run when a limit cannot be enforced\n"
	"Workspace:\n"
	"  --cow                  copy-on-write: the sandbox's writes to the workspace go to a\n"
	"                         private layer; at the end, dropped unless one of:\n"
	"  --commit               apply them to the workspace   --discard   drop them\n"
	"  --export FILE          write them as a tar (and FILE.sha256)\n"
	"  --cow-dir DIR          keep the layer in DIR across runs   --cow-max-file SIZE\n"
	"Output:\n"
	"  -v, --verbose          one line per denial on stderr (10 a second per syscall and rule)\n"
	"  -q, --quiet            no denial summary\n"
	"  --report FILE          JSON result: status, reason, times, denials, changed files\n"
	"  --events FILE|fd:N     live JSON lines: denials with rule and hint, limits, result\n"
	"  --start-fd N           build the sandbox, then read the command from fd N as JSON\n"
	"                         {\"argv\": [...], \"timeout\": SECS} (a warm start; no -- COMMAND)\n"
	"  --audit FILE           decision stream (.moat); --audit-key FILE signs it\n"
	"  --audit-stacks denied|all   --session ID   --tenant ID   --run-id ID\n"
	"  --output-in-workspace  allow --report/--audit where the sandbox can write\n"
	"\n"
	"Exit status: the command's; 128+N if killed by signal N; 124 timeout; 125 moat\n"
	"failed; 126 not executable or exec denied; 127 not found.\n";

static const char main_usage[] =
	"usage: moat run [OPTIONS] -- COMMAND [ARG...]\n"
	"       moat serve --socket PATH [--max-sandboxes N] [--max-running N]\n"
	"       moat agent --socket PATH [--policy FILE] [-v]\n"
	"       moat syscalls [--arch x86_64|aarch64] [--json]\n"
	"       moat policy check FILE\n"
	"       moat policy show [--json] [RUN OPTIONS]\n"
	"       moat audit dump|stats|verify|replay|suggest|keygen ...\n"
	"       moat --version\n";

_noreturn_ _printf_(2, 3) static void usage_fail(const char *usage, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "moat: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s", usage);
	exit(MOAT_EXIT_FAILURE);
}

/* "512M", "2G", "1048576" -> bytes */
static int parse_size(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': mul = 1ull << 10; end++; break;
	case 'm': case 'M': mul = 1ull << 20; end++; break;
	case 'g': case 'G': mul = 1ull << 30; end++; break;
	case 't': case 'T': mul = 1ull << 40; end++; break;
	case '\0': break;
	default: return -EINVAL;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (*end || v == 0 || v > UINT64_MAX / mul)
		return -EINVAL;
	*ret = v * mul;
	return 0;
}

static int parse_u64(const char *s, uint64_t *ret)
{
	char *end;

	errno = 0;
	*ret = strtoull(s, &end, 10);
	return errno || end == s || *end || *ret == 0 || s[0] == '-' ? -EINVAL : 0;
}

enum {
	OPT_MODE = 1000, OPT_TTY, OPT_STDIN, OPT_STRICT, OPT_TIMEOUT, OPT_MEMORY, OPT_PIDS,
	OPT_CPU, OPT_NOFILE, OPT_FSIZE, OPT_DISK, OPT_SETENV, OPT_KEEPENV, OPT_REPORT, OPT_AUDIT,
	OPT_AUDIT_KEY, OPT_AUDIT_STACKS, OPT_SESSION, OPT_TENANT, OPT_POLICY, OPT_PROFILE,
	OPT_DIRECTIVE, OPT_JSON, OPT_EVENTS, OPT_START_FD, OPT_NO_STDIN, OPT_OUTPUT_IN_WS,
	OPT_RUN_ID, OPT_COW, OPT_COMMIT, OPT_DISCARD, OPT_EXPORT, OPT_COW_DIR, OPT_COW_MAX_FILE,
	OPT_STRICT_HIDE,
};

static const struct option run_options[] = {
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "tty", no_argument, NULL, OPT_TTY },
	{ "stdin", no_argument, NULL, OPT_STDIN },
	{ "no-stdin", no_argument, NULL, OPT_NO_STDIN },
	{ "strict", no_argument, NULL, OPT_STRICT },
	{ "strict-hide", no_argument, NULL, OPT_STRICT_HIDE },
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "memory", required_argument, NULL, OPT_MEMORY },
	{ "pids", required_argument, NULL, OPT_PIDS },
	{ "cpu", required_argument, NULL, OPT_CPU },
	{ "nofile", required_argument, NULL, OPT_NOFILE },
	{ "fsize", required_argument, NULL, OPT_FSIZE },
	{ "disk", required_argument, NULL, OPT_DISK },
	{ "cow", no_argument, NULL, OPT_COW },
	{ "commit", no_argument, NULL, OPT_COMMIT },
	{ "discard", no_argument, NULL, OPT_DISCARD },
	{ "export", required_argument, NULL, OPT_EXPORT },
	{ "cow-dir", required_argument, NULL, OPT_COW_DIR },
	{ "cow-max-file", required_argument, NULL, OPT_COW_MAX_FILE },
	{ "setenv", required_argument, NULL, OPT_SETENV },
	{ "keep-env", required_argument, NULL, OPT_KEEPENV },
	{ "report", required_argument, NULL, OPT_REPORT },
	{ "events", required_argument, NULL, OPT_EVENTS },
	{ "start-fd", required_argument, NULL, OPT_START_FD },
	{ "audit", required_argument, NULL, OPT_AUDIT },
	{ "audit-key", required_argument, NULL, OPT_AUDIT_KEY },
	{ "audit-stacks", required_argument, NULL, OPT_AUDIT_STACKS },
	{ "session", required_argument, NULL, OPT_SESSION },
	{ "tenant", required_argument, NULL, OPT_TENANT },
	{ "run-id", required_argument, NULL, OPT_RUN_ID },
	{ "output-in-workspace", no_argument, NULL, OPT_OUTPUT_IN_WS },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "profile", required_argument, NULL, OPT_PROFILE },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "ro-bind", required_argument, NULL, OPT_DIRECTIVE },
	{ "bind", required_argument, NULL, OPT_DIRECTIVE },
	{ "tmpfs", required_argument, NULL, OPT_DIRECTIVE },
	{ "hide", required_argument, NULL, OPT_DIRECTIVE },
	{ "deny", required_argument, NULL, OPT_DIRECTIVE },
	{ "file", required_argument, NULL, OPT_DIRECTIVE },
	{ "chdir", required_argument, NULL, OPT_DIRECTIVE },
	{ "allow-net", required_argument, NULL, OPT_DIRECTIVE },
	{ "deny-net", required_argument, NULL, OPT_DIRECTIVE },
	{ "allow-bind", required_argument, NULL, OPT_DIRECTIVE },
	{ "help", no_argument, NULL, 'h' },
	{}
};

struct cli {
	struct sup_opts o;
	struct policy policy;
	struct proc_map pm;
	bool json;
	char policy_err[1024];        /* the first --policy FILE that failed to load */
	bool stdin_given;      /* --stdin, --no-stdin or --tty decided it */
	bool cow_on;           /* --cow */
	struct sup_cow cow;
};

/* Parse run options (also used by `policy show`). Returns optind of the command. */
static int parse_run_options(struct cli *c, int argc, char **argv, const char *usage)
{
	char errbuf[1024];
	int opt, idx;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+vqh", run_options, &idx)) != -1) {
		struct sup_opts *o = &c->o;
		double d;
		char *end;

		switch (opt) {
		case 'v':
			o->verbose = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		case OPT_MODE:
			if (streq(optarg, "auto"))
				o->mode = SUP_MODE_AUTO;
			else if (streq(optarg, "namespaced"))
				o->mode = SUP_MODE_NAMESPACED;
			else if (streq(optarg, "unnamespaced"))
				o->mode = SUP_MODE_UNNAMESPACED;
			else
				usage_fail(usage, "--mode takes auto, namespaced or unnamespaced, not '%s'", optarg);
			break;
		case OPT_TTY:
			/* An interactive terminal is of no use without the caller's stdin. */
			o->tty = true;
			o->stdin_pass = true;
			c->stdin_given = true;
			break;
		case OPT_STDIN:
		case OPT_NO_STDIN:
			o->stdin_pass = opt == OPT_STDIN;
			c->stdin_given = true;
			break;
		case OPT_STRICT:
			o->strict = true;
			break;
		case OPT_STRICT_HIDE:
			o->strict_hide = true;
			break;
		case OPT_TIMEOUT:
		case OPT_CPU:
			errno = 0;
			d = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(d > 0) || d > 1e9)
				usage_fail(usage, "a positive number of seconds was expected, not '%s'", optarg);
			if (opt == OPT_TIMEOUT)
				o->timeout = d;
			else
				o->cpu = (uint64_t)(d < 1 ? 1 : d);
			break;
		case OPT_MEMORY:
			if (parse_size(optarg, &o->memory) < 0)
				usage_fail(usage, "--memory takes a size such as 512M or 2G, not '%s'", optarg);
			break;
		case OPT_COW:
			c->cow_on = true;
			break;
		case OPT_COMMIT:
			c->cow.commit = true;
			break;
		case OPT_DISCARD:
			c->cow.discard = true;
			break;
		case OPT_EXPORT:
			c->cow.export_path = optarg;
			break;
		case OPT_COW_DIR:
			if (optarg[0] != '/')
				usage_fail(usage, "--cow-dir takes an absolute path, not '%s'", optarg);
			c->cow.dir = optarg;
			break;
		case OPT_COW_MAX_FILE:
			if (parse_size(optarg, &c->cow.max_file) < 0 || c->cow.max_file >= (8ull << 30))
				usage_fail(usage, "--cow-max-file takes a size below 8G, not '%s'", optarg);
			break;
		case OPT_DISK:
			if (parse_size(optarg, &o->disk) < 0)
				usage_fail(usage, "--disk takes a size such as 512M or 2G, not '%s'", optarg);
			break;
		case OPT_FSIZE:
			if (parse_size(optarg, &o->fsize) < 0)
				usage_fail(usage, "--fsize takes a size such as 10M, not '%s'", optarg);
			break;
		case OPT_PIDS:
			if (parse_u64(optarg, &o->pids) < 0)
				usage_fail(usage, "--pids takes a positive number, not '%s'", optarg);
			break;
		case OPT_NOFILE:
			if (parse_u64(optarg, &o->nofile) < 0)
				usage_fail(usage, "--nofile takes a positive number, not '%s'", optarg);
			break;
		case OPT_SETENV:
			if (optind >= argc)
				usage_fail(usage, "--setenv takes NAME VALUE%s", "");
			if (!optarg[0] || strchr(optarg, '='))
				usage_fail(usage, "--setenv: '%s' is not a variable name", optarg);
			o->env = realloc(o->env, (o->n_env + 1) * sizeof(*o->env));
			o->env[o->n_env++] = (struct sup_env){ optarg, argv[optind++] };
			break;
		case OPT_KEEPENV:
			o->keep_env = realloc(o->keep_env, (o->n_keep_env + 1) * sizeof(char *));
			o->keep_env[o->n_keep_env++] = optarg;
			break;
		case OPT_REPORT:
			o->report_path = optarg;
			break;
		case OPT_EVENTS:
			o->events_spec = optarg;
			break;
		case OPT_START_FD: {
			long fd;

			errno = 0;
			fd = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || fd < 0 || fd > 1 << 20)
				usage_fail(usage, "--start-fd takes a file descriptor number, not '%s'", optarg);
			o->start_fd = (int)fd;
			break;
		}
		case OPT_AUDIT:
			o->audit_path = optarg;
			break;
		case OPT_AUDIT_KEY:
			o->audit_key = optarg;
			break;
		case OPT_AUDIT_STACKS:
			if (streq(optarg, "all"))
				o->audit_stacks_all = true;
			else if (!streq(optarg, "denied"))
				usage_fail(usage, "--audit-stacks takes denied or all, not '%s'", optarg);
			break;
		case OPT_SESSION:
			o->session = optarg;
			break;
		case OPT_TENANT:
			o->tenant = optarg;
			break;
		case OPT_RUN_ID:
			/* It goes into file names and log lines of whoever checks it: keep it plain. */
			if (!optarg[0] || strlen(optarg) >= AUDIT_RUN_ID_MAX ||
			    optarg[strspn(optarg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					  "0123456789._:-")])
				usage_fail(usage, "--run-id takes 1 to 64 of A-Z a-z 0-9 . _ : -, not '%s'",
					   optarg);
			o->run_id = optarg;
			break;
		case OPT_OUTPUT_IN_WS:
			o->output_in_workspace = true;
			break;
		case OPT_JSON:
			c->json = true;
			break;
		case OPT_POLICY:
			/* Reported once every option is known: --report may come later. */
			if (policy_load_file(&c->policy, optarg, errbuf, sizeof(errbuf)) < 0 &&
			    !c->policy_err[0])
				snprintf(c->policy_err, sizeof(c->policy_err), "%s", errbuf);
			break;
		case OPT_PROFILE:
			if (policy_add(&c->policy, "profile", optarg, "--profile") < 0)
				usage_fail(usage, "--profile takes default or none, not '%s'", optarg);
			break;
		case OPT_DIRECTIVE: {
			const char *word = run_options[idx].name;
			char origin[64], *arg = optarg, *joined = NULL;

			/* --file DST CONTENT takes two words, like --setenv. */
			if (streq(word, "file")) {
				if (optind >= argc)
					usage_fail(usage, "--file takes DST CONTENT (or DST @HOSTFILE)%s", "");
				if (asprintf(&joined, "%s %s", optarg, argv[optind++]) < 0)
					exit(MOAT_EXIT_FAILURE);
				arg = joined;
			}
			snprintf(origin, sizeof(origin), "--%s", word);
			if (policy_add(&c->policy, word, arg, origin) < 0)
				exit(MOAT_EXIT_FAILURE);
			free(joined);
			break;
		}
		case '?':
		default:
			if (optopt)
				usage_fail(usage, "unknown or incomplete option '-%c'", optopt);
			usage_fail(usage, "unknown or incomplete option '%s'", argv[optind - 1]);
		}
	}
	return optind;
}

/* moat run with --report: a policy that cannot be used still gets its report (exit 125). */
_noreturn_ static void policy_fail(struct cli *c, bool run, const char *msg)
{
	log_error("%s", msg);
	if (run)
		sup_report_failure(&c->o, msg);
	exit(MOAT_EXIT_FAILURE);
}

static void build_policy(struct cli *c, bool run)
{
	char errbuf[1024];

	if (c->policy_err[0])
		policy_fail(c, run, c->policy_err);
	if (policy_apply(&c->policy, proc_map_init(&c->pm), &c->o.vfs, &c->o.net, errbuf,
			 sizeof(errbuf)) < 0)
		policy_fail(c, run, errbuf);
	c->o.pm = &c->pm;
	if (policy_canonical(c->o.vfs, c->o.net, &c->o.policy_json, c->o.policy_hash) < 0) {
		log_error("out of memory");
		exit(MOAT_EXIT_FAILURE);
	}
}

static int cmd_run(int argc, char **argv)
{
	static char *waiting[] = { "(waiting on --start-fd)", NULL };
	struct cli c = { .o.start_fd = -1 };
	int first, status;

	first = parse_run_options(&c, argc, argv, run_usage);
	if (c.o.start_fd >= 0 && first < argc)
		usage_fail(run_usage, "--start-fd takes the command from its fd, not after --%s", "");
	if (c.o.start_fd < 0 && first >= argc)
		usage_fail(run_usage, "no command given%s", "");
	c.o.argv = c.o.start_fd >= 0 ? waiting : argv + first;
	/* A pipe or a redirected file is input meant for the command (echo ... | moat run
	 * -- python3 -); only a terminal is the user's, kept from the command unless
	 * --stdin or --tty says otherwise. A warm start (--start-fd) takes its command
	 * from its caller, not from a user: /dev/null unless --stdin. */
	if (!c.stdin_given && c.o.start_fd < 0) {
		struct stat st;

		c.o.stdin_pass = fstat(STDIN_FILENO, &st) == 0 && !isatty(STDIN_FILENO);
	}
	if (!c.cow_on && (c.cow.commit || c.cow.discard || c.cow.export_path || c.cow.dir))
		usage_fail(run_usage, "--commit, --discard, --export and --cow-dir go with --cow%s", "");
	if (c.cow.commit && c.cow.discard)
		usage_fail(run_usage, "--commit or --discard, not both%s", "");
	if (c.o.verbose)
		moat_log_level = LOG_LEVEL_INFO;
	build_policy(&c, true);
	if (c.cow_on) {
		c.o.cow = &c.cow;
		if (cow_prepare(&c.cow, c.o.vfs) < 0) {
			sup_report_failure(&c.o, "--cow: cannot prepare the copy-on-write workspace");
			exit(MOAT_EXIT_FAILURE);
		}
	}
	status = sup_run(&c.o);
	if (c.cow_on)
		cow_done(&c.cow);
	vfs_free(c.o.vfs);
	net_free(c.o.net);
	policy_done(&c.policy);
	free(c.o.policy_json);
	return status;
}

static int cmd_syscalls(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "arch", required_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *usage = "usage: moat syscalls [--arch x86_64|aarch64] [--json]\n";
	uint32_t arch = sc_native_arch();
	bool json = false;
	int opt;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'a':
			arch = sc_arch_by_name(optarg);
			if (!arch)
				usage_fail(usage, "unknown architecture '%s' (x86_64 or aarch64)", optarg);
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			usage_fail(usage, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		usage_fail(usage, "unexpected argument '%s'", argv[optind]);
	return sc_print_table(arch, json, stdout) < 0 ? MOAT_EXIT_FAILURE : 0;
}

/* Text with the escapes a directive reads back: in a path, "\:" and "\\" (split_colon()
 * in vfs/directives.c); in a file's content, "\\", "\n" and "\t". */
static void print_escaped(const char *s, bool content)
{
	for (const char *p = s; *p; p++) {
		if (*p == '\\' || (!content && *p == ':'))
			putchar('\\');
		if (content && *p == '\n')
			fputs("\\n", stdout);
		else if (content && *p == '\t')
			fputs("\\t", stdout);
		else
			putchar(*p);
	}
}

/* One vfs rule, resolved: absolute paths and globs, so that the file means the same
 * read from any directory (a relative --bind or a "~" would not). */
static int print_fs_rule(json_t *r)
{
	const char *w = json_string_value(json_object_get(r, "directive"));
	const char *host = json_string_value(json_object_get(r, "host"));
	const char *virt = json_string_value(json_object_get(r, "virtual"));
	const char *glob = json_string_value(json_object_get(r, "glob"));
	const char *size = json_string_value(json_object_get(r, "size"));
	const char *content = json_string_value(json_object_get(r, "content"));

	if (!w)
		return -EINVAL;
	if ((streq(w, "bind") || streq(w, "ro-bind") || streq(w, "system")) && host && virt) {
		printf("%s ", w);
		print_escaped(host, false);
		if (!streq(host, virt)) {
			putchar(':');
			print_escaped(virt, false);
		}
	} else if ((streq(w, "hide") || streq(w, "deny")) && glob) {
		printf("%s %s", w, glob);
	} else if (streq(w, "tmpfs") && virt) {
		printf("tmpfs %s%s%s", virt, size ? " " : "", size ? size : "");
	} else if (streq(w, "file") && virt && (content || host)) {
		printf("file %s ", virt);
		if (content)
			print_escaped(content, true);
		else
			printf("@%s", host);
	} else {
		return -EINVAL;
	}
	putchar('\n');
	return 0;
}

/*
 * The resolved policy as a policy file (moat-policy 1) that --policy and `moat policy
 * check` read back: the default profile's directives written out after "profile none",
 * then every directive given, in order, resolved. Read back, it gives the same rules;
 * its sha256 differs from the one in the comment, which covers the directives as they
 * were given and where (origins).
 */
static int print_policy_text(json_t *j, const char *hash)
{
	json_t *fs = json_object_get(j, "fs"), *net = json_object_get(j, "net");
	json_t *rules = json_object_get(fs, "rules"), *chdir = json_object_get(fs, "chdir"), *r;
	static const struct { const char *key, *word; } nets[] = {
		{ "allow", "allow-net" }, { "deny", "deny-net" }, { "bind", "allow-bind" },
	};
	size_t i;

	if (!json_is_array(rules))
		return -EINVAL;
	printf("moat-policy 1\n# the resolved policy (sha256 %s)\nprofile none\n", hash);
	json_array_foreach(rules, i, r)
		if (print_fs_rule(r) < 0)
			return -EINVAL;
	if (json_is_string(chdir))
		printf("chdir %s\n", json_string_value(chdir));
	for (size_t k = 0; k < ELEMENTSOF(nets); k++) {
		json_array_foreach(json_object_get(net, nets[k].key), i, r) {
			const char *d = json_string_value(json_object_get(r, "dest"));

			if (!d)
				return -EINVAL;
			printf("%s %s\n", nets[k].word, d);
		}
	}
	return 0;
}

static int cmd_policy(int argc, char **argv)
{
	const char *usage = "usage: moat policy check FILE\n       moat policy show [--json] [RUN OPTIONS]\n";
	char errbuf[1024];

	if (argc < 2)
		usage_fail(usage, "policy needs a subcommand%s", "");
	if (streq(argv[1], "check")) {
		struct cli c = { 0 };

		if (argc != 3)
			usage_fail(usage, "policy check takes one FILE%s", "");
		if (policy_load_file(&c.policy, argv[2], errbuf, sizeof(errbuf)) < 0) {
			log_error("%s", errbuf);
			return MOAT_EXIT_FAILURE;
		}
		build_policy(&c, false);
		/* Both modes must accept it, or say which one cannot. */
		if (vfs_finalize(c.o.vfs, VFS_MODE_NAMESPACED, errbuf, sizeof(errbuf)) < 0) {
			log_error("%s: %s", argv[2], errbuf);
			return MOAT_EXIT_FAILURE;
		}
		printf("%s: ok (%zu directives, sha256 %s)\n", argv[2], c.policy.n, c.o.policy_hash);
		return 0;
	}
	if (streq(argv[1], "show")) {
		struct cli c = { 0 };
		json_t *j;
		bool stub;

		parse_run_options(&c, argc - 1, argv + 1, usage);
		build_policy(&c, false);
		/* What a hide rule hides in namespaced mode: the fast path covers content
		 * with a stub whose name stat and listings see (sup_filter_kind_of()). */
		stub = sup_filter_kind_of(true, c.o.strict_hide, c.o.audit_path != NULL, c.o.vfs) ==
		       SUP_FILTER_NAMESPACED;
		if (c.json) {
			printf("{\"sha256\":\"%s\",\"hidden_names\":\"%s\",\"policy\":%s}\n",
			       c.o.policy_hash, stub ? "visible-as-empty-stub" : "absent",
			       c.o.policy_json);
			return 0;
		}
		j = json_loads(c.o.policy_json, 0, NULL);
		if (!j || print_policy_text(j, c.o.policy_hash) < 0) {
			json_decref(j);
			log_error("cannot print the policy");
			return MOAT_EXIT_FAILURE;
		}
		json_decref(j);
		printf(stub ? "# hidden content is never readable; namespaced, a hidden name shows as an "
			      "empty stub to stat and listings (--strict-hide: the name is absent too)\n"
			    : "# hidden content is never readable and a hidden name is absent: every "
			      "metadata call by name is emulated\n");
		if (strstr(c.o.policy_json, "\"directive\":\"system\""))
			printf("# a \"**\" glob does not reach into a system mapping unless it is "
			       "anchored there: a secret in a system tree is hidden by its path\n");
		return 0;
	}
	usage_fail(usage, "unknown policy subcommand '%s'", argv[1]);
}

int main(int argc, char **argv)
{
	if (sodium_init() < 0) {
		log_error("libsodium failed to initialise");
		return MOAT_EXIT_FAILURE;
	}
	if (argc < 2)
		usage_fail(main_usage, "no subcommand%s", "");
	if (streq(argv[1], "--version") || streq(argv[1], "version")) {
		printf("moat %s\n", MOAT_VERSION);
		return 0;
	}
	if (streq(argv[1], "--help") || streq(argv[1], "-h") || streq(argv[1], "help")) {
		fputs(main_usage, stdout);
		return 0;
	}
	if (streq(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	if (streq(argv[1], "serve"))
		return serve_cli(argc - 1, argv + 1);
	if (streq(argv[1], "agent"))
		return oci_agent_main(argc - 1, argv + 1);
	if (streq(argv[1], "syscalls"))
		return cmd_syscalls(argc - 1, argv + 1);
	if (streq(argv[1], "policy"))
		return cmd_policy(argc - 1, argv + 1);
	if (streq(argv[1], "audit") && argc >= 3 && streq(argv[2], "replay"))
		return replay_cli(argc - 2, argv + 2);
	if (streq(argv[1], "audit") && argc >= 3 && streq(argv[2], "suggest"))
		return suggest_cli(argc - 2, argv + 2);
	if (streq(argv[1], "audit"))
		return audit_cli(argc - 2, argv + 2);
	usage_fail(main_usage, "unknown subcommand '%s'", argv[1]);
}
