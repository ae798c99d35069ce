/* SPDX-License-Identifier: MIT */
/*
 * The run receipt's workspace commit (receipt.c). Any thread; no state.
 */
#pragma once

#include <jansson.h>

/* {"commit": HEX, "ref": "refs/heads/NAME" or null} when workspace (a host directory)
 * is the top of a git work tree, read without running git; NULL otherwise. */
json_t *receipt_git(const char *workspace);
