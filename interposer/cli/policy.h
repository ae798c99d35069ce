/* SPDX-License-Identifier: MIT */
/*
 * Policy: the ordered list of directives from the CLI and policy files, applied to a
 * vfs and a net. The same words and argument syntax serve both (`--hide GLOB` on the
 * command line, `hide GLOB` in a file). A policy file starts with `moat-policy 1`; `#`
 * starts a comment; errors read `FILE:LINE: message`.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

struct vfs;
struct net;
struct vfs_proc_ops;

struct policy_item {
	char *word;
	char *arg;
	char *origin;          /* "FILE:LINE" or "--word" */
};

struct policy {
	struct policy_item *items;
	size_t n;
	bool profile_none;
};

int policy_add(struct policy *p, const char *word, const char *arg, const char *origin);
/* Read a policy file; on error, e says "FILE:LINE: message". */
int policy_load_file(struct policy *p, const char *path, struct moat_error *e);
/* Build vfs and net from the default profile (unless `profile none`) and the items; on
 * error, e names the directive's origin ("FILE:LINE" or "--word") and the reason. */
int policy_apply(const struct policy *p, const struct vfs_proc_ops *ops, struct vfs **ret_vfs,
		 struct net **ret_net, struct moat_error *e);
/* Canonical JSON (sorted keys, compact) and its sha256 in hex. */
int policy_canonical(const struct vfs *v, const struct net *n, char **ret_json, char ret_hash[65]);
void policy_done(struct policy *p);
