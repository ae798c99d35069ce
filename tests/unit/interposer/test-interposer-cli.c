/* SPDX-License-Identifier: MIT */
/*
 * The options of `moat run` (run-args.c) from argv arrays: every option parsed into
 * struct run_args, and each kind of bad argv (unknown option, missing value, bad size or
 * number, conflicting options) refused with the sentence the operator reads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cli.h"

#define ARGV(...) ((char *[]){ "run", __VA_ARGS__, NULL })
#define ARGC(v) ((int)(sizeof(v) / sizeof((v)[0])) - 1)

/* Parses and checks like `moat run`; returns the error's errno (0) and its text. */
static int parse(struct run_args *a, int argc, char **argv, struct moat_error *e)
{
	int r;

	run_args_init(a);
	*e = (struct moat_error){ 0 };
	r = run_args_parse(a, argc, argv, e);
	if (r == 0 && !a->help)
		r = run_args_check(a, argc, e);
	assert_int_equal(r < 0, e->err != 0);
	return r;
}

static void expect_error(int argc, char **argv, const char *msg)
{
	struct run_args a;
	struct moat_error e;

	assert_int_equal(parse(&a, argc, argv, &e), -EINVAL);
	assert_string_equal(moat_error_str(&e), msg);
	run_args_done(&a);
}

static void test_every_option(void **state)
{
	char *argv[] = { "run", "--mode", "unnamespaced", "--tty", "--strict", "--strict-hide",
			 "-v", "-q", "--timeout", "2.5", "--memory", "512M", "--pids", "7",
			 "--cpu", "0.2", "--nofile", "64", "--fsize", "10M", "--disk", "1GiB",
			 "--cow", "--commit", "--export", "/tmp/x.tar", "--cow-dir", "/var/c",
			 "--cow-max-file", "1M", "--setenv", "A", "1 2", "--keep-env", "TERM",
			 "--report", "r.json", "--events", "fd:3", "--audit", "a.moat",
			 "--audit-key", "k", "--audit-stacks", "all", "--session", "s",
			 "--tenant", "t", "--run-id", "run-1.a:b", "--output-in-workspace",
			 "--profile", "none", "--json", "--ro-bind", "/usr", "--bind", "/w",
			 "--tmpfs", "/tmp 1M", "--hide", "**/.env", "--deny", "/etc/shadow",
			 "--file", "/etc/x", "hello", "--chdir", "/w", "--allow-net", "1.2.3.4:80",
			 "--deny-net", "10.0.0.0/8", "--allow-bind", "8080", "--", "/bin/true",
			 "arg", NULL };
	static const char *const items[][2] = {
		{ "profile", "none" }, { "ro-bind", "/usr" }, { "bind", "/w" },
		{ "tmpfs", "/tmp 1M" }, { "hide", "**/.env" }, { "deny", "/etc/shadow" },
		{ "file", "/etc/x hello" }, { "chdir", "/w" }, { "allow-net", "1.2.3.4:80" },
		{ "deny-net", "10.0.0.0/8" }, { "allow-bind", "8080" },
	};
	struct run_args a;
	struct moat_error e;
	const struct sup_opts *o = &a.o;

	(void)state;
	assert_int_equal(parse(&a, ARGC(argv), argv, &e), 0);
	assert_false(a.help);
	assert_string_equal(argv[a.first], "/bin/true");
	assert_int_equal(o->mode, SUP_MODE_UNNAMESPACED);
	assert_true(o->tty && o->stdin_pass && a.stdin_given);
	assert_true(o->strict && o->strict_hide && o->verbose && o->quiet);
	assert_true(o->timeout == 2.5);
	assert_int_equal(o->memory, 512ull << 20);
	assert_int_equal(o->pids, 7);
	assert_int_equal(o->cpu, 1);             /* below a second counts as one */
	assert_int_equal(o->nofile, 64);
	assert_int_equal(o->fsize, 10ull << 20);
	assert_int_equal(o->disk, 1ull << 30);
	assert_true(a.cow_on && a.cow.commit && !a.cow.discard);
	assert_string_equal(a.cow.export_path, "/tmp/x.tar");
	assert_string_equal(a.cow.dir, "/var/c");
	assert_int_equal(a.cow.max_file, 1ull << 20);
	assert_int_equal(o->n_env, 1);
	assert_string_equal(o->env[0].name, "A");
	assert_string_equal(o->env[0].value, "1 2");
	assert_int_equal(o->n_keep_env, 1);
	assert_string_equal(o->keep_env[0], "TERM");
	assert_string_equal(o->report_path, "r.json");
	assert_string_equal(o->events_spec, "fd:3");
	assert_string_equal(o->audit_path, "a.moat");
	assert_string_equal(o->audit_key, "k");
	assert_true(o->audit_stacks_all);
	assert_string_equal(o->session, "s");
	assert_string_equal(o->tenant, "t");
	assert_string_equal(o->run_id, "run-1.a:b");
	assert_true(o->output_in_workspace);
	assert_true(a.json);
	assert_int_equal(o->start_fd, -1);
	assert_true(a.policy.profile_none);
	assert_int_equal(a.policy.n, ELEMENTSOF(items));
	for (size_t i = 0; i < ELEMENTSOF(items); i++) {
		assert_string_equal(a.policy.items[i].word, items[i][0]);
		assert_string_equal(a.policy.items[i].arg, items[i][1]);
	}
	assert_string_equal(a.policy.items[1].origin, "--ro-bind");
	run_args_done(&a);
}

static void test_defaults_and_help(void **state)
{
	char **argv = ARGV("--stdin", "/bin/true");
	char **help = ARGV("--help", "--bogus");
	char **fd = ARGV("--no-stdin", "--start-fd", "5", "--mode", "auto");
	char **afd = ARGV("--start-fd", "4", "--argv-fd", "5");
	struct run_args a;
	struct moat_error e;

	(void)state;
	assert_int_equal(parse(&a, 3, argv, &e), 0);
	assert_int_equal(a.first, 2);
	assert_true(a.o.stdin_pass && a.stdin_given);
	assert_int_equal(a.o.mode, SUP_MODE_AUTO);
	assert_int_equal(a.o.memory, 0);
	run_args_done(&a);

	/* --help stops the parse: what follows is never read. */
	assert_int_equal(parse(&a, 3, help, &e), 0);
	assert_true(a.help);
	run_args_done(&a);

	/* A warm start has no command after the options. */
	assert_int_equal(parse(&a, 6, fd, &e), 0);
	assert_int_equal(a.o.start_fd, 5);
	assert_int_equal(a.o.argv_fd, -1);
	assert_false(a.o.stdin_pass);
	run_args_done(&a);

	/* moat serve's: the waiting command reads its argv from another fd. */
	assert_int_equal(parse(&a, 5, afd, &e), 0);
	assert_int_equal(a.o.start_fd, 4);
	assert_int_equal(a.o.argv_fd, 5);
	run_args_done(&a);
}

static void test_unknown_and_missing(void **state)
{
	(void)state;
	expect_error(3, ARGV("--bogus", "/bin/true"), "unknown or incomplete option '--bogus'");
	expect_error(3, ARGV("-x", "/bin/true"), "unknown or incomplete option '-x'");
	/* A missing value names the long option, not a byte of its internal number. */
	expect_error(2, ARGV("--mode"), "unknown or incomplete option '--mode'");
	expect_error(2, ARGV("--hide"), "unknown or incomplete option '--hide'");
	expect_error(3, ARGV("--setenv", "A"), "--setenv takes NAME VALUE");
	expect_error(3, ARGV("--file", "/etc/x"), "--file takes DST CONTENT (or DST @HOSTFILE)");
	expect_error(2, ARGV("-q"), "no command given");
}

static void test_bad_values(void **state)
{
	(void)state;
	expect_error(3, ARGV("--mode", "fast"),
		     "--mode takes auto, namespaced or unnamespaced, not 'fast'");
	expect_error(3, ARGV("--memory", "0"), "--memory takes a size such as 512M or 2G, not '0'");
	expect_error(3, ARGV("--memory", "12Q"),
		     "--memory takes a size such as 512M or 2G, not '12Q'");
	expect_error(3, ARGV("--disk", "99999999999999T"),
		     "--disk takes a size such as 512M or 2G, not '99999999999999T'");
	expect_error(3, ARGV("--fsize", "1.5M"), "--fsize takes a size such as 10M, not '1.5M'");
	expect_error(3, ARGV("--cow-max-file", "8G"), "--cow-max-file takes a size below 8G, not '8G'");
	expect_error(3, ARGV("--pids", "-1"), "--pids takes a positive number, not '-1'");
	expect_error(3, ARGV("--nofile", "0"), "--nofile takes a positive number, not '0'");
	expect_error(3, ARGV("--timeout", "0"), "a positive number of seconds was expected, not '0'");
	expect_error(3, ARGV("--cpu", "nan"), "a positive number of seconds was expected, not 'nan'");
	expect_error(3, ARGV("--start-fd", "x"), "--start-fd takes a file descriptor number, not 'x'");
	expect_error(5, ARGV("--start-fd", "4", "--argv-fd", "-5"),
		     "--argv-fd takes a file descriptor number, not '-5'");
	expect_error(3, ARGV("--cow-dir", "rel"), "--cow-dir takes an absolute path, not 'rel'");
	expect_error(3, ARGV("--audit-stacks", "some"), "--audit-stacks takes denied or all, not 'some'");
	expect_error(3, ARGV("--run-id", "a/b"),
		     "--run-id takes 1 to 64 of A-Z a-z 0-9 . _ : -, not 'a/b'");
	expect_error(3, ARGV("--profile", "strict"), "--profile takes default or none, not 'strict'");
	expect_error(4, ARGV("--setenv", "A=B", "C"), "--setenv: 'A=B' is not a variable name");
}

static void test_conflicts(void **state)
{
	(void)state;
	expect_error(4, ARGV("--start-fd", "3", "/bin/true"),
		     "--start-fd takes the command from its fd, not after --");
	expect_error(4, ARGV("--argv-fd", "5", "/bin/true"),
		     "--argv-fd goes with --start-fd, on another fd above 2");
	expect_error(5, ARGV("--start-fd", "4", "--argv-fd", "4"),
		     "--argv-fd goes with --start-fd, on another fd above 2");
	expect_error(5, ARGV("--start-fd", "4", "--argv-fd", "1"),
		     "--argv-fd goes with --start-fd, on another fd above 2");
	expect_error(7, ARGV("--start-fd", "4", "--argv-fd", "5", "--audit", "a.moat"),
		     "--argv-fd cannot go with --audit");
	expect_error(3, ARGV("--commit", "/bin/true"),
		     "--commit, --discard, --export and --cow-dir go with --cow");
	expect_error(4, ARGV("--export", "x.tar", "/bin/true"),
		     "--commit, --discard, --export and --cow-dir go with --cow");
	expect_error(5, ARGV("--cow", "--commit", "--discard", "/bin/true"),
		     "--commit or --discard, not both");
}

/* A --policy file that does not load is kept, not returned: the run reports it after
 * every option (a later --report) is known. */
static void test_policy_error_deferred(void **state)
{
	char **argv = ARGV("--policy", "/nonexistent/a.moat", "--policy", "/nonexistent/b.moat",
			   "--report", "r.json", "/bin/true");
	struct run_args a;
	struct moat_error e;

	(void)state;
	assert_int_equal(parse(&a, 8, argv, &e), 0);
	assert_string_equal(a.o.report_path, "r.json");
	assert_int_equal(a.policy_err.err, ENOENT);
	assert_string_equal(moat_error_str(&a.policy_err),
			    "/nonexistent/a.moat: No such file or directory");
	assert_int_equal(run_args_build_policy(&a, true, &e), -ENOENT);
	assert_string_equal(moat_error_str(&e), "/nonexistent/a.moat: No such file or directory");
	run_args_done(&a);
}

static void test_sizes(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(cli_parse_size("1048576", &v), 0);
	assert_int_equal(v, 1048576);
	assert_int_equal(cli_parse_size("2k", &v), 0);
	assert_int_equal(v, 2048);
	assert_int_equal(cli_parse_size("3MB", &v), 0);
	assert_int_equal(v, 3ull << 20);
	assert_int_equal(cli_parse_size("1TiB", &v), 0);
	assert_int_equal(v, 1ull << 40);
	assert_int_equal(cli_parse_size("", &v), -EINVAL);
	assert_int_equal(cli_parse_size("1X", &v), -EINVAL);
	assert_int_equal(cli_parse_size("1MiBs", &v), -EINVAL);
	assert_int_equal(cli_parse_size("16777216T", &v), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_option),
		cmocka_unit_test(test_defaults_and_help),
		cmocka_unit_test(test_unknown_and_missing),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_conflicts),
		cmocka_unit_test(test_policy_error_deferred),
		cmocka_unit_test(test_sizes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
