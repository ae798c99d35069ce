/* SPDX-License-Identifier: MIT */
/*
 * moat run --cow: the copy-on-write workspace's fate at the end of the run (cow.c).
 *
 * Lifecycle, on the main thread: cow_prepare() before sup_run() (before the sandbox
 * exists: it opens the outputs and asks the vfs for the overlay), cow_finish() at
 * sup_run()'s teardown once every process of the sandbox is gone (nothing writes the
 * upper layer any more), cow_done() after. Errors: -errno, said on stderr.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "output.h"

struct vfs;
struct moat_error;

/* Files larger than this in the upper layer are refused (not committed nor exported). */
#define COW_DEFAULT_MAX_FILE (1ull << 30)

struct sup_cow {
	bool commit;              /* --commit: apply the changes to the host directory */
	bool discard;             /* --discard: drop them (also the default without --cow-dir) */
	const char *export_path;  /* --export FILE: a tar of them, and FILE.sha256 */
	const char *dir;          /* --cow-dir DIR: the upper layer lives (and stays) there */
	uint64_t max_file;        /* 0: COW_DEFAULT_MAX_FILE */
	/* private */
	char *sums_path;
	bool exported;
	struct out_file export_out, sums_out;
};

int cow_prepare(struct sup_cow *c, struct vfs *v);
/* Export, commit or drop; the report's "cow" object (NULL when out of memory). */
json_t *cow_finish(struct sup_cow *c, struct vfs *v);
void cow_done(struct sup_cow *c);

/*
 * moat serve: a copy-on-write sandbox's overlay, mounted on its workspace's own path in
 * the server's mount namespace (which its `moat run` children start in, so every exec
 * and every put/get sees it), its upper and work dirs in dir, on a tmpfs of size disk
 * (tmpfs's size= text) when disk is not NULL.
 */
struct cow_mount;
int cow_mount_new(const char *ws, const char *dir, const char *disk, struct cow_mount **ret);
struct cow_mount *cow_mount_free(struct cow_mount *m);    /* unmounts; accepts NULL */
/* The change set ({"bytes", "changes"}): written as a tar to tar (a stream of
 * out_create()) with its sha256 list in sums (when tar is not NULL), applied
 * to the workspace (commit, then "failed" counts what could not be) or dropped
 * (discard, {}); after either the overlay starts again empty. NULL with e set on
 * failure. */
json_t *cow_mount_finish(struct cow_mount *m, bool commit, bool discard, struct out_file *tar,
			 struct out_file *sums, struct moat_error *e);
