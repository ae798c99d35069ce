/* SPDX-License-Identifier: MIT */
/*
 * Limits for the whole run (all processes together) through a cgroup of its own, on
 * cgroup v2 when the controllers are there and v1 otherwise (hybrid hosts keep memory
 * and pids on v1). Without a writable hierarchy (an unprivileged user with nothing
 * delegated) cg_create() says why, and the caller reports or refuses (--strict).
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct cgroup {
	int version;                 /* 0 none, 1 v1, 2 v2 */
	char v2[PATH_MAX];
	char pids[PATH_MAX];         /* v1 dirs, "" when absent */
	char memory[PATH_MAX];
	char freezer[PATH_MAX];
	bool has_memory, has_pids;
	/* Opened at creation, so that killing the group needs no open() (the sandbox
	 * may have left the supervisor without a free fd); -1 when absent. */
	int kill_fd;                 /* v2 cgroup.kill */
	int procs_fd;                /* cgroup.procs of v2, or of v1 pids (else memory) */
	int freezer_fd;              /* v1 freezer.state */
};

struct cgroup_stats {
	uint64_t peak_memory;        /* bytes, 0 if unknown */
	uint64_t oom_kills;
	uint64_t pids_max_hits;
	uint64_t pids_peak;
};

int cg_create(struct cgroup *cg, uint64_t memory, uint64_t pids, char *why, size_t why_len);
int cg_attach(const struct cgroup *cg, pid_t pid);
/* Kill every process in the cgroup (freezing first where possible, so a fork bomb
 * cannot outrun the kill), through the fds opened by cg_create() only. */
void cg_kill(const struct cgroup *cg);
void cg_stats(const struct cgroup *cg, struct cgroup_stats *ret);
void cg_destroy(struct cgroup *cg);

/* SIGKILL every descendant of pid (walking /proc/<pid>/task/<tid>/children) until none
 * is left, reaping the ones that are our children. For a subreaper this catches double
 * forked, setsid'ed orphans, which are re-parented to it. */
void kill_descendants(pid_t pid);
