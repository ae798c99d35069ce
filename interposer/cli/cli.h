/* SPDX-License-Identifier: MIT */
/*
 * cli/: the command table and the parsers of the subcommands.
 *
 * Every subcommand is one entry point `int cmd_NAME(int argc, char **argv)`: argv[0] is
 * the subcommand's own name, the return value is the process's exit status. main.c
 * looks the name up in its table and calls it; nothing below main() exits, so the
 * parsers can be tested with argv arrays (tests/unit/interposer/test-interposer-cli.c).
 *
 * A parser reports a bad argv as -EINVAL with the sentence for the operator in a struct
 * moat_error (error.h); the subcommand prints it with cli_usage_error() and its usage,
 * and exits MOAT_EXIT_FAILURE, as every moat subcommand except `moat audit` does.
 *
 * Single-threaded: the parsers use getopt_long(3), whose state is global.
 */
#pragma once

#include <stdbool.h>

#include "cow.h"
#include "error.h"
#include "policy.h"
#include "proc-ops.h"
#include "sup.h"

/* The subcommands, one file each (replay.c holds replay and suggest, serve.c serve). */
int cmd_run(int argc, char **argv);         /* run.c */
int cmd_syscalls(int argc, char **argv);    /* syscalls.c */
int cmd_policy(int argc, char **argv);      /* policy-cmd.c */
int cmd_audit(int argc, char **argv);       /* audit.c: dump, stats, verify, keygen */

/* "moat: MESSAGE\nUSAGE" on stderr; returns MOAT_EXIT_FAILURE. */
int cli_usage_error(const char *usage, const struct moat_error *e);

extern const char cli_run_usage[];

/*
 * The options of `moat run` (and of `moat policy show`, which takes the same ones),
 * parsed. Strings point into argv. Release with run_args_done().
 */
struct run_args {
	struct sup_opts o;
	struct policy policy;
	struct proc_map pm;
	bool json;                   /* --json (policy show) */
	bool help;                   /* -h/--help: parsing stopped there, print the usage */
	bool stdin_given;            /* --stdin, --no-stdin or --tty decided it */
	bool cow_on;                 /* --cow */
	struct sup_cow cow;
	/* The first --policy FILE that failed to load: reported once every option is
	 * known, so that a --report given later still gets its report. */
	struct moat_error policy_err;
	int first;                   /* index in argv of the command, after the options */
};

/* Zeroes *a and sets the defaults (no --start-fd). */
void run_args_init(struct run_args *a);

/*
 * Parses the options of argv[1..] up to the first non-option (or "--") into *a; a->first
 * is the index of the command. -EINVAL on an unknown option, a missing or bad value;
 * -ENOMEM. Loads --policy files as it meets them (a file that fails is kept in
 * a->policy_err, not returned).
 */
int run_args_parse(struct run_args *a, int argc, char **argv, struct moat_error *e);

/* What `moat run` adds to run_args_parse(): a command, or --start-fd but not both, and
 * the --cow options that go together. -EINVAL with the message. */
int run_args_check(const struct run_args *a, int argc, struct moat_error *e);

/*
 * Builds a->o.vfs, a->o.net and, when canonical, the canonical policy (json and hash;
 * else a->o.policy_json stays NULL) from the policy items. On failure e says why: a
 * --policy file that did not load, a directive the modules refused, or no memory.
 */
int run_args_build_policy(struct run_args *a, bool canonical, struct moat_error *e);

void run_args_done(struct run_args *a);

/* "512M", "2G", "1048576" -> bytes; 0, a negative or an overflowing size are -EINVAL. */
int cli_parse_size(const char *s, uint64_t *ret);
