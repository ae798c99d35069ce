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
	struct out_file export_out, sums_out;
};

int cow_prepare(struct sup_cow *c, struct vfs *v);
/* Export, commit or drop; the report's "cow" object (NULL when out of memory). */
json_t *cow_finish(struct sup_cow *c, struct vfs *v);
void cow_done(struct sup_cow *c);
