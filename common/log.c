/* SPDX-License-Identifier: MIT */
/*
 * The one definition of the log level (log.h), linked into every program through
 * common_dep: the CLI raises it for -v, tests lower it to keep their output TAP.
 */
#include "log.h"

int moat_log_level = LOG_LEVEL_NOTICE;
