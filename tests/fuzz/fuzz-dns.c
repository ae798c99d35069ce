/* SPDX-License-Identifier: MIT */
/*
 * DNS messages from the sandbox (vfs/net/dns.c): the question parser, the answer parser
 * the supervisor uses on a host server's reply, and the responder as a whole under a
 * policy that allows some names. Lookups are faked: the fuzzer never touches the network.
 */
#include <errno.h>
#include <sys/socket.h>

#include "error.h"
#include "fuzz.h"
#include "net.h"

static int fake_lookup(void *userdata, const char *name, int family, struct net_ip *ret,
		       size_t max)
{
	(void)userdata;
	(void)name;
	if (max == 0)
		return 0;
	memset(&ret[0], 0, sizeof(ret[0]));
	ret[0].family = family == AF_INET6 ? AF_INET6 : AF_INET;
	ret[0].bytes[0] = 10;
	ret[0].bytes[3] = (uint8_t)strlen(name);
	return 1;
}

static struct net *the_net(void)
{
	static struct net *n;
	struct moat_error err = { 0 };

	if (n)
		return n;
	if (net_new(&n) < 0)
		abort();
	net_set_lookup(n, fake_lookup, NULL);
	if (net_add_directive(n, "allow-net", "example.com:443", "fuzz", &err) < 0 ||
	    net_add_directive(n, "allow-net", "*.example.org:443", "fuzz", &err) < 0 ||
	    net_finalize(n, &err) < 0) {
		fprintf(stderr, "fuzz-dns: %s\n", err.msg);
		abort();
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct net_dns_question q;
	struct net_ip ips[8];
	uint8_t resp[512];
	int rcode = 0;

	if (net_dns_parse_question(data, size, &q) == 0 && strnlen(q.name, sizeof(q.name)) ==
	    sizeof(q.name))
		abort(); /* the name must be NUL-terminated */
	if (net_dns_parse_answers(data, size, &q, &rcode, ips, 8) > 8)
		abort();
	if (net_dns_answer(the_net(), data, size, resp, sizeof(resp)) > (int)sizeof(resp))
		abort();
	net_dns_answer(the_net(), data, size, resp, 12);
	return 0;
}
