/* SPDX-License-Identifier: MIT */
/*
 * `moat audit replay` and `moat audit suggest`: the audit tools that need the policy code
 * (policy.h, vfs_decide(), net_decide()), so they live beside the CLI rather than in
 * audit/, which knows nothing of vfs or net.
 *
 * Both take argv with argv[0] the subcommand name and return the exit status:
 *   replay   0 no decision changes, 1 some change, 2 usage or I/O error
 *   suggest  0 policy written, 2 usage or I/O error
 */
#pragma once

int replay_cli(int argc, char **argv);
int suggest_cli(int argc, char **argv);
