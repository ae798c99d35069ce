/* SPDX-License-Identifier: MIT */
/*
 * `moat run [OPTIONS] -- COMMAND [ARG...]`: parse (run-args.c), build the policy, run
 * the command under the supervisor (core/sup.c) and return its exit status.
 */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "log.h"

const char cli_run_usage[] =
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
	"                         (/sys only read-only; not /dev as a whole, nor a block\n"
	"                         device or a directory holding one: they answer uid 0)\n"
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
	"  -v, --verbose          one line per denial on stderr (10 a second per syscall and rule);\n"
	"                         read-only opens stay trapped, so that every denied one is named\n"
	"  -q, --quiet            no denial summary\n"
	"  --report FILE          JSON result: status, reason, times, denials, changed files\n"
	"  --events FILE|fd:N     live JSON lines: denials with rule and hint, limits, result\n"
	"  --start-fd N           build the sandbox, then read the command from fd N as JSON\n"
	"                         {\"argv\": [...], \"timeout\": SECS} (a warm start; no -- COMMAND)\n"
	"  --argv-fd N            with --start-fd: the waiting command reads its argv from fd N\n"
	"                         itself, in moat's internal format (moat serve; not with --audit)\n"
	"  --audit FILE           decision stream (.moat); --audit-key FILE signs it\n"
	"  --audit-stacks denied|all   --session ID   --tenant ID   --run-id ID\n"
	"  --output-in-workspace  allow --report/--audit where the sandbox can write\n"
	"\n"
	"Exit status: the command's; 128+N if killed by signal N; 124 timeout; 125 moat\n"
	"failed; 126 not executable or exec denied; 127 not found.\n";

int cli_usage_error(const char *usage, const struct moat_error *e)
{
	fprintf(stderr, "moat: %s\n%s", moat_error_str(e), usage);
	return MOAT_EXIT_FAILURE;
}

/* A pipe or a redirected file is input meant for the command (echo ... | moat run --
 * python3 -); only a terminal is the user's, kept from the command unless --stdin or
 * --tty says otherwise. A warm start (--start-fd) takes its command from its caller,
 * not from a user: /dev/null unless --stdin. */
static void default_stdin(struct run_args *a)
{
	struct stat st;

	if (a->stdin_given || a->o.start_fd >= 0)
		return;
	a->o.stdin_pass = fstat(STDIN_FILENO, &st) == 0 && !isatty(STDIN_FILENO);
}

static int run(struct run_args *a, int argc, char **argv)
{
	static char *waiting[] = { "(waiting on --start-fd)", NULL };
	struct moat_error e;
	int status;

	if (run_args_parse(a, argc, argv, &e) < 0)
		return cli_usage_error(cli_run_usage, &e);
	if (a->help) {
		fputs(cli_run_usage, stdout);
		return 0;
	}
	if (run_args_check(a, argc, &e) < 0)
		return cli_usage_error(cli_run_usage, &e);
	a->o.argv = a->o.start_fd >= 0 ? waiting : argv + a->first;
	default_stdin(a);
	if (a->o.verbose)
		moat_log_level = LOG_LEVEL_INFO;
	/* With --report, a policy that cannot be used still gets its report (exit 125). */
	/* The policy's canonical JSON and hash are for the report and the audit header
	 * only: a run without them does not pay for the encoding and the hash (0.3 ms of
	 * a cold start on a small VM). */
	if (run_args_build_policy(a, a->o.report_path || a->o.audit_path, &e) < 0) {
		log_error("%s", moat_error_str(&e));
		sup_report_failure(&a->o, moat_error_str(&e));
		return MOAT_EXIT_FAILURE;
	}
	if (a->cow_on) {
		a->o.cow = &a->cow;
		if (cow_prepare(&a->cow, a->o.vfs) < 0) {
			sup_report_failure(&a->o, "--cow: cannot prepare the copy-on-write workspace");
			return MOAT_EXIT_FAILURE;
		}
	}
	status = sup_run(&a->o);
	if (a->cow_on)
		cow_done(&a->cow);
	return status;
}

int cmd_run(int argc, char **argv)
{
	struct run_args a;
	int status;

	run_args_init(&a);
	status = run(&a, argc, argv);
	run_args_done(&a);
	return status;
}
