/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the vfs/net unit tests: destinations and rule sets written as text,
 * so that each test row reads like the policy it checks.
 */
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "net.h"

/* "1.2.3.4:80" or "[::1]:80" -> sockaddr; returns its length, 0 on a typo in the test. */
static inline socklen_t test_sockaddr(const char *s, struct sockaddr_storage *ss)
{
	char host[64];
	const char *colon;
	unsigned port;

	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':' || (size_t)(close - s - 1) >= sizeof(host))
			return 0;
		memcpy(host, s + 1, (size_t)(close - s - 1));
		host[close - s - 1] = '\0';
		port = (unsigned)atoi(close + 2);
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
			return 0;
		return sizeof(*sin6);
	}
	colon = strchr(s, ':');
	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return 0;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	port = (unsigned)atoi(colon + 1);
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
		return 0;
	return sizeof(*sin);
}

static inline struct net_ip test_ip(const char *s)
{
	struct net_ip ip = { 0 };

	if (inet_pton(AF_INET, s, ip.bytes) == 1)
		ip.family = AF_INET;
	else if (inet_pton(AF_INET6, s, ip.bytes) == 1)
		ip.family = AF_INET6;
	return ip;
}

/*
 * Rules as "allow-net 127.0.0.1:80; deny-net 10.0.0.0/8" (origin "--WORD"), pins as
 * "localhost=127.0.0.1,::1; a.example=192.0.2.1". Returns 0 or the first error.
 */
static inline int test_load(struct net *n, const char *rules, const char *pins)
{
	struct moat_error err = { 0 };
	char buf[1024];
	char *save = NULL, *tok;
	int k;

	snprintf(buf, sizeof(buf), "%s", rules ? rules : "");
	for (tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		char word[32], arg[256], origin[40];

		if (sscanf(tok, " %31s %255s", word, arg) != 2)
			return -EINVAL;
		snprintf(origin, sizeof(origin), "--%s", word);
		k = net_add_directive(n, word, arg, origin, &err);
		if (k < 0) {
			fprintf(stderr, "# %s: %s\n", tok, err.msg);
			return k;
		}
	}
	snprintf(buf, sizeof(buf), "%s", pins ? pins : "");
	for (tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		char *eq = strchr(tok, '='), *save2 = NULL, *a;
		struct net_ip ips[8];
		size_t count = 0;

		if (!eq)
			return -EINVAL;
		*eq = '\0';
		while (*tok == ' ')
			tok++;
		for (a = strtok_r(eq + 1, ",", &save2); a && count < 8; a = strtok_r(NULL, ",", &save2))
			ips[count++] = test_ip(a);
		k = net_pin(n, tok, ips, count);
		if (k < 0)
			return k;
	}
	return 0;
}

/* Whether ip is the address written as s. */
static inline bool test_ip_is(const struct net_ip *ip, const char *s)
{
	struct net_ip want = test_ip(s);

	return ip->family == want.family &&
	       memcmp(ip->bytes, want.bytes, ip->family == AF_INET ? 4 : 16) == 0;
}
