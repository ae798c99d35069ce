/* SPDX-License-Identifier: MIT */
/*
 * moat: the command line. main() finds the subcommand in the table below and returns
 * what it returns; the only file that ends the process (by returning from main).
 *
 *   moat run [OPTIONS] -- COMMAND [ARG...]          run.c (options: run-args.c)
 *   moat serve --socket PATH ...                     serve.c
 *   moat agent --socket PATH ...                     runtime/agent.c
 *   moat syscalls [--arch A] [--json]                syscalls.c
 *   moat policy check FILE | policy show ...         policy-cmd.c
 *   moat audit SUBCOMMAND ...                        audit.c (replay, suggest: replay.c)
 */
#include <sodium.h>
#include <stdio.h>

#include "cli.h"
#include "log.h"
#include "moat-config.h"
#include "oci.h"
#include "serve.h"

static const char main_usage[] =
	"usage: moat run [OPTIONS] -- COMMAND [ARG...]\n"
	"       moat serve --socket PATH [--max-sandboxes N] [--max-running N]\n"
	"       moat agent --socket PATH [--policy FILE] [-v]\n"
	"       moat syscalls [--arch x86_64|aarch64] [--json]\n"
	"       moat policy check FILE\n"
	"       moat policy show [--json] [RUN OPTIONS]\n"
	"       moat audit dump|stats|verify|replay|suggest|keygen ...\n"
	"       moat --version\n";

/* Each gets argv from its own name on and returns the exit status. */
static const struct {
	const char *name;
	int (*main)(int argc, char **argv);
} commands[] = {
	{ "run", cmd_run },
	{ "serve", serve_cli },
	{ "agent", oci_agent_main },
	{ "syscalls", cmd_syscalls },
	{ "policy", cmd_policy },
	{ "audit", cmd_audit },
};

int main(int argc, char **argv)
{
	struct moat_error e;

	if (sodium_init() < 0) {
		log_error("libsodium failed to initialise");
		return MOAT_EXIT_FAILURE;
	}
	if (argc < 2) {
		moat_error_set(&e, EINVAL, "no subcommand");
		return cli_usage_error(main_usage, &e);
	}
	if (streq(argv[1], "--version") || streq(argv[1], "version")) {
		printf("moat %s\n", MOAT_VERSION);
		return 0;
	}
	if (streq(argv[1], "--help") || streq(argv[1], "-h") || streq(argv[1], "help")) {
		fputs(main_usage, stdout);
		return 0;
	}
	for (size_t i = 0; i < ELEMENTSOF(commands); i++)
		if (streq(argv[1], commands[i].name))
			return commands[i].main(argc - 1, argv + 1);
	moat_error_set(&e, EINVAL, "unknown subcommand '%s'", argv[1]);
	return cli_usage_error(main_usage, &e);
}
