/* SPDX-License-Identifier: MIT */
/*
 * moat's own output files (--report, --audit), opened before the sandbox starts.
 *
 * The sandbox may be able to write the directory an output is in (the workspace): it can
 * then replace the name with a symbolic link, a directory or another file at any time.
 * So an output is never opened by name after the sandbox started: the directory is held
 * as an fd from the start, files are only ever created in it with O_CREAT|O_EXCL|
 * O_NOFOLLOW, and a name is put in place with renameat(), which replaces whatever the
 * sandbox left there without following it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct vfs;
struct moat_error;

struct out_file {
	const char *path;       /* as the user gave it */
	int dirfd;              /* its directory, opened before the run (O_PATH) */
	char *dir;              /* canonical host path of that directory */
	char *base;             /* the last component */
	int fd;                 /* a stream's file, written while the run lasts; -1 else */
	dev_t dev;              /* of fd */
	ino_t ino;
};

#define OUT_FILE_INIT { .dirfd = -1, .fd = -1 }

/*
 * Open the directory of path and check that the output can be created there: path must
 * not be "-" (stdout and stderr are the command's), nor name a symbolic link or anything
 * but a regular file. On failure e says why (for the user) and a negative errno is
 * returned.
 */
int out_open(struct out_file *of, const char *path, struct moat_error *e);

/* A stream: create the file now, to be written through fd while the run lasts (an
 * existing file of that name is unlinked first, never truncated through a link). */
int out_create(struct out_file *of, struct moat_error *e);

/* Whether the output's directory is inside a writable mapping of the run (the sandbox
 * could then rename, replace or read the output while the run lasts): fills what with
 * the mapping's host path. Call after vfs_finalize(). */
bool out_in_writable_mapping(const struct out_file *of, const struct vfs *v, char *what,
			     size_t whatlen);

/* Write buf to a new private file in the directory and rename it to the output's name. */
int out_commit(struct out_file *of, const void *buf, size_t len);

/* A stream, once its writer has finished: if the name no longer refers to the file we
 * wrote (the sandbox renamed, removed or replaced it), put a copy of it back in place.
 * Returns 1 when it had to, 0 when the name was intact, negative errno on failure. */
int out_settle_stream(struct out_file *of);

/* A stream that was never written (moat failed first): remove the file out_create() made. */
void out_discard(struct out_file *of);
void out_close(struct out_file *of);
