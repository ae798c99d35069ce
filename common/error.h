/* SPDX-License-Identifier: MIT */
/*
 * One error type for the calls whose failure an operator reads: the command-line parser,
 * the entry points it calls to load and build a policy (the vfs's and the network
 * layer's directives, vfs_finalize()), moat's output files and the OCI runtime's seccomp
 * merge. It carries the errno for the program and one line of text for the person, so a
 * caller never juggles a buffer and its length, and every message is formatted by the
 * same two functions.
 *
 * Contract (crun's libcrun_error_t, in one struct on the caller's stack):
 *   - a function that takes `struct moat_error *e` returns 0 (or a non-negative value) on
 *     success and leaves *e untouched, or returns -errno and has set *e with
 *     moat_error_set() (moat_error_errno() when the errno says it all), whose return
 *     value it can pass on; a header that says otherwise for one call (an errno that
 *     means "not mine, try the next module") names the exception;
 *   - e may be NULL when the caller only wants the errno;
 *   - the message is complete ("FILE:3: unknown directive 'x'"): the caller prints it
 *     with moat_error_str() and adds nothing but its own prefix.
 * Header and functions are thread-safe on distinct structs; nothing here allocates.
 */
#pragma once

#include "macros.h"

/* Long enough for a path of PATH_MAX in a message. */
#define MOAT_ERROR_MSG_MAX 1024

struct moat_error {
	int err;                        /* positive errno; 0 while no error is set */
	char msg[MOAT_ERROR_MSG_MAX];   /* "" when the errno says it all */
};

/* Records err (either sign; 0 reads as EINVAL) and the message; returns -err. */
_printf_(3, 4) int moat_error_set(struct moat_error *e, int err, const char *fmt, ...);

/* The same with no text: the errno says it all (strerror() when printed). */
int moat_error_errno(struct moat_error *e, int err);

/* The text for the operator: the message, or strerror() of the errno without one. */
const char *moat_error_str(const struct moat_error *e);
