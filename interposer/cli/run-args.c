/* SPDX-License-Identifier: MIT */
/*
 * The options of `moat run` (and `moat policy show`) into struct run_args, returning
 * errors rather than exiting, so that every option can be tested from an argv array.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "cleanup.h"
#include "cli.h"
#include "log.h"
#include "macros.h"
#include "net.h"
#include "vfs.h"

enum {
	OPT_MODE = 1000, OPT_TTY, OPT_STDIN, OPT_STRICT, OPT_TIMEOUT, OPT_MEMORY, OPT_PIDS,
	OPT_CPU, OPT_NOFILE, OPT_FSIZE, OPT_DISK, OPT_SETENV, OPT_KEEPENV, OPT_REPORT, OPT_AUDIT,
	OPT_AUDIT_KEY, OPT_AUDIT_STACKS, OPT_SESSION, OPT_TENANT, OPT_POLICY, OPT_PROFILE,
	OPT_DIRECTIVE, OPT_JSON, OPT_EVENTS, OPT_START_FD, OPT_NO_STDIN, OPT_OUTPUT_IN_WS,
	OPT_RUN_ID, OPT_COW, OPT_COMMIT, OPT_DISCARD, OPT_EXPORT, OPT_COW_DIR, OPT_COW_MAX_FILE,
	OPT_STRICT_HIDE, OPT_ARGV_FD,
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
	{ "argv-fd", required_argument, NULL, OPT_ARGV_FD },
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

int cli_parse_size(const char *s, uint64_t *ret)
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

void run_args_init(struct run_args *a)
{
	*a = (struct run_args){ .o.start_fd = -1, .o.argv_fd = -1 };
}

static int parse_mode(const char *arg, enum sup_mode *ret, struct moat_error *e)
{
	if (streq(arg, "auto"))
		*ret = SUP_MODE_AUTO;
	else if (streq(arg, "namespaced"))
		*ret = SUP_MODE_NAMESPACED;
	else if (streq(arg, "unnamespaced"))
		*ret = SUP_MODE_UNNAMESPACED;
	else
		return moat_error_set(e, EINVAL, "--mode takes auto, namespaced or unnamespaced, not '%s'",
				      arg);
	return 0;
}

static int parse_seconds(const char *arg, double *ret, struct moat_error *e)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(arg, &end);
	if (errno || end == arg || *end || !(d > 0) || d > 1e9)
		return moat_error_set(e, EINVAL, "a positive number of seconds was expected, not '%s'",
				      arg);
	*ret = d;
	return 0;
}

static int parse_fd(const char *opt, const char *arg, int *ret, struct moat_error *e)
{
	char *end;
	long fd;

	errno = 0;
	fd = strtol(arg, &end, 10);
	if (errno || end == arg || *end || fd < 0 || fd > 1 << 20)
		return moat_error_set(e, EINVAL, "%s takes a file descriptor number, not '%s'", opt,
				      arg);
	*ret = (int)fd;
	return 0;
}

/* A run id goes into file names and log lines of whoever checks it: keep it plain. */
static int check_run_id(const char *arg, struct moat_error *e)
{
	if (!arg[0] || strlen(arg) >= AUDIT_RUN_ID_MAX ||
	    arg[strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-")])
		return moat_error_set(e, EINVAL, "--run-id takes 1 to 64 of A-Z a-z 0-9 . _ : -, not '%s'",
				      arg);
	return 0;
}

static int add_env(struct sup_opts *o, char *name, char *value, struct moat_error *e)
{
	struct sup_env *env;

	if (!name[0] || strchr(name, '='))
		return moat_error_set(e, EINVAL, "--setenv: '%s' is not a variable name", name);
	env = realloc(o->env, (o->n_env + 1) * sizeof(*env));
	if (!env)
		return moat_error_set(e, ENOMEM, "out of memory");
	o->env = env;
	o->env[o->n_env++] = (struct sup_env){ name, value };
	return 0;
}

static int add_keep_env(struct sup_opts *o, char *name, struct moat_error *e)
{
	char **keep = realloc(o->keep_env, (o->n_keep_env + 1) * sizeof(*keep));

	if (!keep)
		return moat_error_set(e, ENOMEM, "out of memory");
	o->keep_env = keep;
	o->keep_env[o->n_keep_env++] = name;
	return 0;
}

/* --ro-bind, --hide, ...: a policy directive, with the same word and argument as in a
 * policy file; --file DST CONTENT takes two words, like --setenv. */
static int add_directive(struct run_args *a, const char *word, const char *arg, int argc,
			 char **argv, struct moat_error *e)
{
	_cleanup_free_ char *joined = NULL;
	char origin[64];

	if (streq(word, "file")) {
		if (optind >= argc)
			return moat_error_set(e, EINVAL, "--file takes DST CONTENT (or DST @HOSTFILE)");
		if (asprintf(&joined, "%s %s", arg, argv[optind++]) < 0)
			return moat_error_set(e, ENOMEM, "out of memory");
		arg = joined;
	}
	snprintf(origin, sizeof(origin), "--%s", word);
	if (policy_add(&a->policy, word, arg, origin) < 0)
		return moat_error_set(e, ENOMEM, "out of memory");
	return 0;
}

/* getopt_long()'s '?': an option it does not know, or one whose value is missing. */
static int unknown_option(char **argv, struct moat_error *e)
{
	/* optopt is the short option's letter, or a long option's value (OPT_*) when its
	 * argument is missing: only a letter may be printed as one. */
	if (optopt > 0 && optopt < 128)
		return moat_error_set(e, EINVAL, "unknown or incomplete option '-%c'", optopt);
	return moat_error_set(e, EINVAL, "unknown or incomplete option '%s'", argv[optind - 1]);
}

static int parse_one(struct run_args *a, int opt, const char *word, int argc, char **argv,
		     struct moat_error *e)
{
	struct sup_opts *o = &a->o;
	struct moat_error pe;
	double d = 0; /* set by parse_seconds() on success; the compiler cannot see it */

	switch (opt) {
	case 'v':
		o->verbose = true;
		return 0;
	case 'q':
		o->quiet = true;
		return 0;
	case OPT_MODE:
		return parse_mode(optarg, &o->mode, e);
	case OPT_TTY:
		/* An interactive terminal is of no use without the caller's stdin. */
		o->tty = true;
		o->stdin_pass = true;
		a->stdin_given = true;
		return 0;
	case OPT_STDIN:
	case OPT_NO_STDIN:
		o->stdin_pass = opt == OPT_STDIN;
		a->stdin_given = true;
		return 0;
	case OPT_STRICT:
		o->strict = true;
		return 0;
	case OPT_STRICT_HIDE:
		o->strict_hide = true;
		return 0;
	case OPT_TIMEOUT:
		return parse_seconds(optarg, &o->timeout, e);
	case OPT_CPU:
		if (parse_seconds(optarg, &d, e) < 0)
			return -EINVAL;
		o->cpu = (uint64_t)(d < 1 ? 1 : d);
		return 0;
	case OPT_MEMORY:
		if (cli_parse_size(optarg, &o->memory) < 0)
			return moat_error_set(e, EINVAL, "--memory takes a size such as 512M or 2G, not '%s'",
					      optarg);
		return 0;
	case OPT_COW:
		a->cow_on = true;
		return 0;
	case OPT_COMMIT:
		a->cow.commit = true;
		return 0;
	case OPT_DISCARD:
		a->cow.discard = true;
		return 0;
	case OPT_EXPORT:
		a->cow.export_path = optarg;
		return 0;
	case OPT_COW_DIR:
		if (optarg[0] != '/')
			return moat_error_set(e, EINVAL, "--cow-dir takes an absolute path, not '%s'", optarg);
		a->cow.dir = optarg;
		return 0;
	case OPT_COW_MAX_FILE:
		if (cli_parse_size(optarg, &a->cow.max_file) < 0 || a->cow.max_file >= (8ull << 30))
			return moat_error_set(e, EINVAL, "--cow-max-file takes a size below 8G, not '%s'",
					      optarg);
		return 0;
	case OPT_DISK:
		if (cli_parse_size(optarg, &o->disk) < 0)
			return moat_error_set(e, EINVAL, "--disk takes a size such as 512M or 2G, not '%s'",
					      optarg);
		return 0;
	case OPT_FSIZE:
		if (cli_parse_size(optarg, &o->fsize) < 0)
			return moat_error_set(e, EINVAL, "--fsize takes a size such as 10M, not '%s'", optarg);
		return 0;
	case OPT_PIDS:
		if (parse_u64(optarg, &o->pids) < 0)
			return moat_error_set(e, EINVAL, "--pids takes a positive number, not '%s'", optarg);
		return 0;
	case OPT_NOFILE:
		if (parse_u64(optarg, &o->nofile) < 0)
			return moat_error_set(e, EINVAL, "--nofile takes a positive number, not '%s'", optarg);
		return 0;
	case OPT_SETENV:
		if (optind >= argc)
			return moat_error_set(e, EINVAL, "--setenv takes NAME VALUE");
		return add_env(o, optarg, argv[optind++], e);
	case OPT_KEEPENV:
		return add_keep_env(o, optarg, e);
	case OPT_REPORT:
		o->report_path = optarg;
		return 0;
	case OPT_EVENTS:
		o->events_spec = optarg;
		return 0;
	case OPT_START_FD:
		return parse_fd("--start-fd", optarg, &o->start_fd, e);
	case OPT_ARGV_FD:
		return parse_fd("--argv-fd", optarg, &o->argv_fd, e);
	case OPT_AUDIT:
		o->audit_path = optarg;
		return 0;
	case OPT_AUDIT_KEY:
		o->audit_key = optarg;
		return 0;
	case OPT_AUDIT_STACKS:
		if (streq(optarg, "all"))
			o->audit_stacks_all = true;
		else if (!streq(optarg, "denied"))
			return moat_error_set(e, EINVAL, "--audit-stacks takes denied or all, not '%s'",
					      optarg);
		return 0;
	case OPT_SESSION:
		o->session = optarg;
		return 0;
	case OPT_TENANT:
		o->tenant = optarg;
		return 0;
	case OPT_RUN_ID:
		if (check_run_id(optarg, e) < 0)
			return -EINVAL;
		o->run_id = optarg;
		return 0;
	case OPT_OUTPUT_IN_WS:
		o->output_in_workspace = true;
		return 0;
	case OPT_JSON:
		a->json = true;
		return 0;
	case OPT_POLICY:
		/* Reported once every option is known: --report may come later. */
		if (policy_load_file(&a->policy, optarg, &pe) < 0 && !a->policy_err.err)
			a->policy_err = pe;
		return 0;
	case OPT_PROFILE:
		if (policy_add(&a->policy, "profile", optarg, "--profile") < 0)
			return moat_error_set(e, EINVAL, "--profile takes default or none, not '%s'", optarg);
		return 0;
	case OPT_DIRECTIVE:
		return add_directive(a, word, optarg, argc, argv, e);
	case '?':
	default:
		return unknown_option(argv, e);
	}
}

int run_args_parse(struct run_args *a, int argc, char **argv, struct moat_error *e)
{
	int opt, idx, r;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+vqh", run_options, &idx)) != -1) {
		if (opt == 'h') {
			a->help = true;
			break;
		}
		r = parse_one(a, opt, opt == OPT_DIRECTIVE ? run_options[idx].name : NULL, argc, argv,
			      e);
		if (r < 0)
			return r;
	}
	a->first = optind;
	return 0;
}

int run_args_check(const struct run_args *a, int argc, struct moat_error *e)
{
	if (a->o.start_fd >= 0 && a->first < argc)
		return moat_error_set(e, EINVAL, "--start-fd takes the command from its fd, not after --");
	if (a->o.start_fd < 0 && a->first >= argc)
		return moat_error_set(e, EINVAL, "no command given");
	if (a->o.argv_fd >= 0 && (a->o.start_fd < 0 || a->o.argv_fd == a->o.start_fd ||
				  a->o.argv_fd <= STDERR_FILENO))
		return moat_error_set(e, EINVAL, "--argv-fd goes with --start-fd, on another fd "
				      "above 2");
	/* The stream's header names the command; with --argv-fd the command may run (and
	 * be recorded) before the supervisor reads it. */
	if (a->o.argv_fd >= 0 && a->o.audit_path)
		return moat_error_set(e, EINVAL, "--argv-fd cannot go with --audit");
	if (!a->cow_on && (a->cow.commit || a->cow.discard || a->cow.export_path || a->cow.dir))
		return moat_error_set(e, EINVAL, "--commit, --discard, --export and --cow-dir go with --cow");
	if (a->cow.commit && a->cow.discard)
		return moat_error_set(e, EINVAL, "--commit or --discard, not both");
	return 0;
}

int run_args_build_policy(struct run_args *a, bool canonical, struct moat_error *e)
{
	int r;

	if (a->policy_err.err) {
		*e = a->policy_err;
		return -e->err;
	}
	r = policy_apply(&a->policy, proc_map_init(&a->pm), &a->o.vfs, &a->o.net, e);
	if (r < 0)
		return r;
	a->o.pm = &a->pm;
	if (canonical &&
	    policy_canonical(a->o.vfs, a->o.net, &a->o.policy_json, a->o.policy_hash) < 0)
		return moat_error_set(e, ENOMEM, "out of memory");
	return 0;
}

void run_args_done(struct run_args *a)
{
	vfs_free(a->o.vfs);
	net_free(a->o.net);
	policy_done(&a->policy);
	free(a->o.policy_json);
	free(a->o.env);
	free(a->o.keep_env);
	a->o.vfs = NULL;
	a->o.net = NULL;
	a->o.policy_json = NULL;
	a->o.env = NULL;
	a->o.keep_env = NULL;
}
