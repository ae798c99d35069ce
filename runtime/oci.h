/* SPDX-License-Identifier: MIT */
/*
 * moat for OCI runtimes: the seccomp profile moat adds to a container's config, and the
 * seccomp agent that receives a container's listener (runc's and crun's listenerPath
 * protocol: one connection per filtered process, the container process state as JSON
 * with the listener fd attached by SCM_RIGHTS) and serves it with a supervisor of its
 * own (sup_serve()).
 *
 * Processes: the agent (oci_agent_serve(), single-threaded) accepts connections and
 * forks one supervisor per received listener. A supervisor that dies while its
 * container runs gets the container killed by the agent; an agent that dies takes its
 * supervisors with it (PR_SET_PDEATHSIG, SIGTERM), and each kills its container first.
 * Either way no container keeps running without its supervisor.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct moat_error;

/* seccomp.c: merge moat's notify, deny and kill rows into config.linux.seccomp (made if
 * absent) and point its listenerPath at listener_path. The container's own denials
 * stay: a syscall it refuses is left refused. -errno with the message in err. */
int oci_seccomp_merge(json_t *config, const char *listener_path, struct moat_error *err);

/* agent.c */
struct oci_agent_opts {
	bool single;            /* moat-runtime: one container; exit once it is gone */
	const char *policy;     /* moat agent --policy: for containers that name none */
	bool verbose;
};
/* A listening unix socket at path (an old socket file there is replaced). */
int oci_listen(const char *path);
/* Serve listen_fd until told to stop (or, single, until the container is gone). */
int oci_agent_serve(int listen_fd, const struct oci_agent_opts *ao);
/* moat agent --socket PATH [--policy FILE] [-v] */
int oci_agent_main(int argc, char **argv);
