/* SPDX-License-Identifier: MIT */
/*
 * Socket addresses from the sandbox, as the network layer decodes and decides them
 * (vfs/net/addr.c net__from_sockaddr, decide.c net_decide / net_decide_bind): the first
 * input byte picks the socket type and normalisation, the rest is the sockaddr with the
 * length the program would pass. A decision must name its rule, and an allowed
 * destination must decode.
 */
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "error.h"
#include "fuzz.h"
#include "net.h"
#include "net-internal.h"

static struct net *the_net(void)
{
	static struct net *n;
	static const char *const rules[][2] = {
		{ "allow-net", "127.0.0.1:8080" }, { "allow-net", "10.0.0.0/8" },
		{ "allow-net", "[2001:db8::]/32:443" }, { "deny-net", "10.1.0.0/16" },
		{ "allow-net", "udp:1.1.1.1:53" }, { "allow-net", "0.0.0.0:0" },
	};
	struct moat_error err = { 0 };

	if (n)
		return n;
	if (net_new(&n) < 0)
		abort();
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		net_add_directive(n, rules[i][0], rules[i][1], "fuzz", &err);
	if (net_finalize(n, &err) < 0)
		abort();
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct net_verdict v;
	struct net_ip ip;
	uint16_t port;
	socklen_t len;
	int type, r;
	uint8_t *copy;

	if (size < 1)
		return 0;
	type = data[0] & 1 ? SOCK_DGRAM : SOCK_STREAM;
	len = (socklen_t)(size - 1);
	/* an exact-size heap copy: a read past the length the program gave is caught */
	copy = malloc(len ? len : 1);
	if (!copy)
		abort();
	memcpy(copy, data + 1, len);
	r = net__from_sockaddr((const struct sockaddr *)copy, len, data[0] & 2, &ip, &port);
	if (r == 0) {
		const char *what = NULL;

		(void)net__classify(&ip, &what);
	}
	memset(&v, 0, sizeof(v));
	r = net_decide(the_net(), (const struct sockaddr *)copy, len, type, &v);
	if (strnlen(v.rule, sizeof(v.rule)) == sizeof(v.rule) ||
	    strnlen(v.addr, sizeof(v.addr)) == sizeof(v.addr))
		abort();
	if (r == 0 && net__from_sockaddr((const struct sockaddr *)copy, len, true, &ip, &port) < 0)
		abort();
	memset(&v, 0, sizeof(v));
	(void)net_decide_bind(the_net(), (const struct sockaddr *)copy, len, type, &v);
	free(copy);
	return 0;
}
