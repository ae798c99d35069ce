/* SPDX-License-Identifier: MIT */
/*
 * The sandbox's own network: its resolver configuration and, in namespaced mode, the
 * loopback interface and the DNS socket of its empty network namespace.
 *
 * Why the DNS socket is made by the keeper: only a process inside the sandbox's network
 * namespace can bind in it, and the keeper is the one such process that is ours and
 * unfiltered (the command is filtered from before exec). It holds every capability in
 * the sandbox's user namespace, which owns that network namespace, so it may bind port
 * 53 and bring lo up. The socket then belongs to the supervisor, which reads queries from
 * it (a socket works from any namespace once created) and answers with net_dns_serve_fd().
 */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "error.h"
#include "log.h"
#include "macros.h"
#include "net.h"
#include "netns.h"
#include "spawn.h"
#include "vfs.h"

#define RESOLV_CONF "/etc/resolv.conf nameserver 127.0.0.1\noptions attempts:2 timeout:2\n"


/* Append "ADDR NAME" lines for every address of name (host resolver, /etc/hosts first). */
static void hosts_lines(const char *name, FILE *f)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;

	if (getaddrinfo(name, NULL, &hints, &res) != 0)
		return;
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		char ip[INET6_ADDRSTRLEN];
		const void *src = a->ai_family == AF_INET
					  ? (const void *)&((struct sockaddr_in *)a->ai_addr)->sin_addr
					  : (const void *)&((struct sockaddr_in6 *)a->ai_addr)->sin6_addr;

		if (inet_ntop(a->ai_family, src, ip, sizeof(ip)))
			fprintf(f, "%s %s\n", ip, name);
	}
	freeaddrinfo(res);
}

int sup_net_prepare(struct vfs *v, struct net *n, bool namespaced, char *not_enforced,
		    size_t ne_len, struct moat_error *e)
{
	_cleanup_(json_decrefp) json_t *j = NULL;
	struct moat_error unresolved;
	char *hosts = NULL;
	size_t hosts_len = 0, i;
	bool names = false, wildcards = false;
	json_t *rule;
	FILE *f;
	int r;

	not_enforced[0] = '\0';
	r = net_resolve_rules(n, &unresolved);
	if (r > 0)
		log_warning("names in allow-net rules that do not resolve (they allow nothing): %s",
			    moat_error_str(&unresolved));
	if (namespaced) {
		/* The sandbox's namespace has no route out: its resolver must ask us. */
		r = vfs_add_directive(v, "file", RESOLV_CONF, "moat (sandbox DNS)", e);
		return r < 0 ? r : 0;
	}

	/*
	 * Unnamespaced: see the comment above sup_net_dns_fd() (sock.c) for why there is no
	 * responder. DNS datagrams are decided like any traffic, so queries leave only to a
	 * nameserver a rule names. Exact names of the rules, resolved here, reach the
	 * program through /etc/hosts (glibc, musl and Go read it before DNS); wildcard names
	 * cannot be resolved by the program at all.
	 */
	j = net_to_json(n);
	if (!j)
		return moat_error_errno(e, ENOMEM);
	f = open_memstream(&hosts, &hosts_len);
	if (!f)
		return moat_error_errno(e, ENOMEM);
	/* A first line of our own: content starting with '@' would name a host file. */
	fputs("# /etc/hosts of the host, as moat gives it to the sandbox\n", f);
	{
		_cleanup_fclose_ FILE *h = fopen("/etc/hosts", "re");
		char line[1024];

		while (h && fgets(line, sizeof(line), h))
			fputs(line, f);
	}
	fputs("\n# names of the allow-net rules, resolved by moat when the run started\n", f);
	json_array_foreach(json_object_get(j, "allow"), i, rule) {
		const char *name = json_string_value(json_object_get(rule, "name"));

		if (json_object_get(rule, "suffix") || json_object_get(rule, "any"))
			wildcards = true;
		if (name) {
			names = true;
			hosts_lines(name, f);
		}
	}
	fclose(f);
	if (names) {
		char *d = NULL;

		if (asprintf(&d, "/etc/hosts %s", hosts) < 0) {
			free(hosts);
			return moat_error_errno(e, ENOMEM);
		}
		r = vfs_add_directive(v, "file", d, "moat (allow-net names)", e);
		free(d);
		if (r < 0) {
			free(hosts);
			return r;
		}
	}
	free(hosts);
	if (names || wildcards)
		snprintf(not_enforced, ne_len,
			 "unnamespaced mode: the sandbox has no DNS of its own (queries reach only "
			 "nameservers an allow-net rule names); %s",
			 wildcards ? "wildcard names in allow-net rules cannot be resolved by the "
				     "program, exact names come from /etc/hosts"
				   : "the names of allow-net rules come from /etc/hosts");
	return 0;
}

void sup_netns_setup(int sync_fd)
{
	struct ifreq ifr = { 0 };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(53),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	_cleanup_close_ int ctl = -1, dns = -1;

	/* A fresh network namespace has lo, down: the sandbox's own loopback (its servers,
	 * our DNS socket) needs it up. */
	ctl = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ctl < 0 || ioctl(ctl, SIOCGIFFLAGS, &ifr) < 0)
		goto fail;
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(ctl, SIOCSIFFLAGS, &ifr) < 0)
		goto fail;
	dns = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (dns < 0 || bind(dns, (struct sockaddr *)&a, sizeof(a)) < 0)
		goto fail;
	(void)sync_send_fd(sync_fd, SYNC_DNS, 0, dns);
	return;
fail:
	(void)sync_send_fd(sync_fd, SYNC_DNS, errno ? errno : EIO, -1);
}
