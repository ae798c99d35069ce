/* SPDX-License-Identifier: MIT */
/*
 * `moat serve`: sandboxes over JSON lines on a unix socket (serve.c, docs/serve.md).
 * argv[0] is "serve"; returns the exit status.
 */
#pragma once

int serve_cli(int argc, char **argv);
