/* SPDX-License-Identifier: MIT */
/*
 * netns: the network of the sandbox itself, outside the notification path.
 *   sup_net_prepare()  supervisor, before vfs_finalize(): pins the names of the rules and
 *                      gives the sandbox the resolver configuration its mode can honour.
 *   sup_netns_setup()  keeper (namespaced mode, pid 1 of the sandbox's namespaces, before
 *                      the command starts): loopback up, the DNS socket handed over.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct vfs;
struct net;
struct moat_error;

/*
 * Resolve and pin the names of the rules (warnings for names that do not resolve), then:
 * namespaced: the sandbox's /etc/resolv.conf names 127.0.0.1, where the supervisor
 * answers; unnamespaced: /etc/hosts gains the exact names of allow-net rules. Writes
 * into not_enforced (empty when nothing) what the mode cannot give. 0, or -errno with the
 * message in e.
 */
int sup_net_prepare(struct vfs *v, struct net *n, bool namespaced, char *not_enforced,
		    size_t ne_len, struct moat_error *e);

/* Bring lo up and send a UDP socket bound to 127.0.0.1:53 as a SYNC_DNS message
 * (SCM_RIGHTS), or a SYNC_DNS carrying the errno and no fd. Never fatal. */
void sup_netns_setup(int sync_fd);
