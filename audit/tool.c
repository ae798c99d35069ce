/* SPDX-License-Identifier: MIT */
/*
 * A stand-alone front end to audit_cli() for tests and for use before `moat audit` is
 * wired into the main binary: `moat-audit SUBCOMMAND ...`. Not installed.
 */
#include "audit.h"

int main(int argc, char **argv)
{
	return audit_cli(argc - 1, argv + 1);
}
