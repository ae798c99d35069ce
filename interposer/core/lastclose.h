/* SPDX-License-Identifier: MIT */
/*
 * lastclose: files whose last close waits on the kernel, closed after the run is over.
 *
 * The last close of a fanotify group that has held marks waits for a grace period of
 * fsnotify's marks (fsnotify_destroy_group() waits for the marks' reaper, which calls
 * synchronize_srcu()). Started idle that is 0.05-0.1 ms here; started behind the grace
 * period that the marks' connectors began a moment earlier it is a normal one, 12-22 ms,
 * and on this VM one run in six or eight met that: the run's exit waited for it
 * (bench/RESULTS.md, "The stubs' groups released after the run").
 *
 * So a process of ours takes a reference to each such file at the start of the run and
 * keeps it until our end of a pipe closes (at our exit, or our death, or
 * lastclose_done()); then it exits, and its exit makes the last close and waits in our
 * place. What it is and holds:
 * - made through a vfork()ed middle process that closes every other fd and exits, so it
 *   holds those files and its end of the pipe and nothing else of ours (no output pipe
 *   whose reader waits for its end, no lock, no listener), and it is no child of ours:
 *   it goes to our nearest subreaper or to init at once, so the teardown's sweep of our
 *   descendants never waits for it (lastclose_start() refuses, -EBUSY, once we are a
 *   subreaper ourselves or the init of our pid namespace: it would come back to us).
 *   Whoever inherits it reaps it: init does, and so does `moat serve` as a container's
 *   init (serve.c, reap_orphans());
 * - it shares our memory (CLONE_VM: nothing copied, no copy-on-write faults for us
 *   afterwards), runs on a stack of its own, makes raw system calls only, with every
 *   signal blocked (SIGKILL ends it, and closes the files all the same), and puts itself
 *   in seccomp's strict mode (read, write, exit) before it waits: it is made before the
 *   supervisor confines itself, and a supervisor taken over cannot use it to act
 *   unconfined (docs/threat-model.md, "A compromised supervisor").
 *
 * Our own fds of those files stay ours, closed by us whenever we like; closing them is
 * then never the last close.
 */
#pragma once

#include <stddef.h>

#define LASTCLOSE_MAX 4

struct lastclose {
	int pipe_w; /* our end: its close lets the helper go, or -1 */
};

#define LASTCLOSE_INIT { .pipe_w = -1 }

/* Once per process, before we are a subreaper. fds: up to LASTCLOSE_MAX (negative ones
 * skipped). 0, or -errno (-EBUSY: a subreaper, or a pid namespace's init, to which the
 * helper would come back; -EALREADY: made before). Without a helper the caller closes
 * its files itself, as it would anyway. */
int lastclose_start(struct lastclose *lc, const int *fds, size_t n);
/* The helper lets go of its files now (our exit would do the same). */
void lastclose_done(struct lastclose *lc);
