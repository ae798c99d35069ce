/* SPDX-License-Identifier: MIT */
/*
 * `moat syscalls [--arch A] [--json]`: the syscall table and how each call is handled
 * (syscall-table/).
 */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"
#include "sc.h"

static const char syscalls_usage[] = "usage: moat syscalls [--arch x86_64|aarch64] [--json]\n";

struct syscalls_args {
	uint32_t arch;
	bool json;
	bool help;
};

static int syscalls_parse(struct syscalls_args *a, int argc, char **argv, struct moat_error *e)
{
	static const struct option opts[] = {
		{ "arch", required_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int opt;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'a':
			a->arch = sc_arch_by_name(optarg);
			if (!a->arch)
				return moat_error_set(e, EINVAL, "unknown architecture '%s' (x86_64 or aarch64)",
						      optarg);
			break;
		case 'j':
			a->json = true;
			break;
		case 'h':
			a->help = true;
			return 0;
		default:
			return moat_error_set(e, EINVAL, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return moat_error_set(e, EINVAL, "unexpected argument '%s'", argv[optind]);
	return 0;
}

int cmd_syscalls(int argc, char **argv)
{
	struct syscalls_args a = { .arch = sc_native_arch() };
	struct moat_error e;

	if (syscalls_parse(&a, argc, argv, &e) < 0)
		return cli_usage_error(syscalls_usage, &e);
	if (a.help) {
		fputs(syscalls_usage, stdout);
		return 0;
	}
	return sc_print_table(a.arch, a.json, stdout) < 0 ? MOAT_EXIT_FAILURE : 0;
}
