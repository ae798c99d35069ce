/* SPDX-License-Identifier: MIT */
/*
 * Host-side name resolution: the default lookup (getaddrinfo, so /etc/hosts, nsswitch and
 * the host's resolv.conf apply exactly as for any host program) and the pinning of the
 * names the rules mention.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "macros.h"
#include "net-internal.h"

_public_ int net_lookup_getaddrinfo(void *userdata, const char *name, int family,
                                    struct net_ip *ret_ips, size_t max)
{
	/* SOCK_STREAM only so that each address comes once, not once per socket type.
	 * No AI_ADDRCONFIG: the sandbox's view does not depend on the host's interfaces,
	 * and "localhost" must give ::1 even on a host without IPv6 routes. */
	struct addrinfo hints = { .ai_family = family, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	size_t count = 0;
	int k;

	k = getaddrinfo(name, NULL, &hints, &res);
	switch (k) {
	case 0:
		break;
	case EAI_NONAME:
		return -ENOENT;
	case EAI_NODATA:
	case EAI_ADDRFAMILY:
		return 0;
	case EAI_AGAIN:
		return -EAGAIN;
	case EAI_MEMORY:
		return -ENOMEM;
	case EAI_SYSTEM:
		return negative_errno();
	default:
		return -EIO;
	}
	for (struct addrinfo *ai = res; ai && count < max; ai = ai->ai_next) {
		struct net_ip ip = { .family = ai->ai_family };

		if (ai->ai_family == AF_INET && ai->ai_addrlen >= sizeof(struct sockaddr_in))
			memcpy(ip.bytes, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, 4);
		else if (ai->ai_family == AF_INET6 && ai->ai_addrlen >= sizeof(struct sockaddr_in6))
			memcpy(ip.bytes, &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr, 16);
		else
			continue;
		ret_ips[count++] = ip;
	}
	freeaddrinfo(res);
	return (int)count;
}

_public_ int net_resolve_rules(struct net *n, struct moat_error *e)
{
	struct net_ip ips[64];
	char names[MOAT_ERROR_MSG_MAX] = "";
	size_t used = 0;
	int failed = 0;

	for (size_t i = 0; i < n->n_rules; i++) {
		const struct net_rule *r = &n->rules[i];
		bool seen = false;
		int k;

		if (r->host != NET_HOST_NAME)
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = n->rules[j].host == NET_HOST_NAME && streq(n->rules[j].name, r->name);
		if (seen)
			continue;

		k = n->lookup(n->lookup_ud, r->name, AF_UNSPEC, ips, ELEMENTSOF(ips));
		if (k == -ENOMEM)
			return k;
		if (k > 0) {
			k = net_pin(n, r->name, ips, (size_t)k);
			if (k == -ENOMEM)
				return k;
			if (k == 0)
				continue;
		}
		failed++;
		if (used < sizeof(names)) {
			int w = snprintf(names + used, sizeof(names) - used, "%s%s: %s",
			                 used ? "; " : "", r->name, k == 0 ? "no address" :
			                 k == -ENOENT ? "no such name" : strerror(-k));
			if (w > 0)
				used = MIN(sizeof(names), used + (size_t)w);
		}
	}
	if (failed)
		moat_error_set(e, ENOENT, "%s", names);
	return failed;
}
