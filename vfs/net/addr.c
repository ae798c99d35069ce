/* SPDX-License-Identifier: MIT */
/*
 * IP addresses: parsing, formatting, prefixes, normalisation of a sockaddr and the
 * special ranges. Pure functions, no I/O.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "macros.h"
#include "net-internal.h"

struct special_range {
	int family;
	uint8_t bytes[16];
	unsigned prefix;
	enum net_class class;
	const char *what;
};

#define V4(a, b, c, d) AF_INET, { a, b, c, d }
/*
 * Most specific first: the first range containing an address gives its class. The
 * metadata entries are the cloud instance-metadata endpoints (AWS/GCP/Azure/OpenStack at
 * 169.254.169.254, ECS task metadata at 169.254.170.2, Alibaba at 100.100.100.200, AWS
 * IPv6 at fd00:ec2::254); the rest of link-local goes with them because nothing a sandbox
 * needs lives there and several clouds put more services in it.
 */
static const struct special_range special_ranges[] = {
	{ V4(169, 254, 169, 254), 32, NET_CLASS_METADATA, "metadata" },
	{ V4(169, 254, 170, 2), 32, NET_CLASS_METADATA, "metadata" },
	{ V4(100, 100, 100, 200), 32, NET_CLASS_METADATA, "metadata" },
	{ V4(169, 254, 0, 0), 16, NET_CLASS_METADATA, "link-local" },
	{ V4(127, 0, 0, 0), 8, NET_CLASS_LOCAL, "loopback" },
	{ V4(0, 0, 0, 0), 8, NET_CLASS_LOCAL, "this-network" },
	{ V4(10, 0, 0, 0), 8, NET_CLASS_LOCAL, "private" },
	{ V4(172, 16, 0, 0), 12, NET_CLASS_LOCAL, "private" },
	{ V4(192, 168, 0, 0), 16, NET_CLASS_LOCAL, "private" },
	{ V4(100, 64, 0, 0), 10, NET_CLASS_LOCAL, "shared (CGNAT)" },
	{ V4(224, 0, 0, 0), 4, NET_CLASS_LOCAL, "multicast" },
	{ V4(240, 0, 0, 0), 4, NET_CLASS_LOCAL, "reserved/broadcast" },
	{ AF_INET6, { 0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54 }, 128, NET_CLASS_METADATA, "metadata" },
	{ AF_INET6, { 0xfe, 0x80 }, 10, NET_CLASS_METADATA, "link-local" },
	{ AF_INET6, { [15] = 1 }, 128, NET_CLASS_LOCAL, "loopback" },
	{ AF_INET6, { 0 }, 128, NET_CLASS_LOCAL, "unspecified" },
	{ AF_INET6, { 0xfc }, 7, NET_CLASS_LOCAL, "unique-local" },
	{ AF_INET6, { 0xfe, 0xc0 }, 10, NET_CLASS_LOCAL, "site-local" },
	{ AF_INET6, { 0xff }, 8, NET_CLASS_LOCAL, "multicast" },
	/* RFC 8215 local-use NAT64: translates to whatever the operator chose, so local. */
	{ AF_INET6, { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 }, 48, NET_CLASS_LOCAL, "local NAT64" },
};

unsigned net__ip_bits(const struct net_ip *ip)
{
	return ip->family == AF_INET ? 32 : 128;
}

bool net__ip_eq(const struct net_ip *a, const struct net_ip *b)
{
	return a->family == b->family && memcmp(a->bytes, b->bytes, net__ip_bits(a) / 8) == 0;
}

bool net__prefix_contains(const struct net_ip *net, unsigned prefix, const struct net_ip *ip)
{
	unsigned full = prefix / 8, rest = prefix % 8;

	if (net->family != ip->family || prefix > net__ip_bits(net))
		return false;
	if (memcmp(net->bytes, ip->bytes, full) != 0)
		return false;
	if (rest == 0)
		return true;
	return ((net->bytes[full] ^ ip->bytes[full]) & (uint8_t)(0xff00 >> rest)) == 0;
}

/* Clear the host bits, so "10.1.2.3/8" is stored and printed as 10.0.0.0/8. */
void net__mask(struct net_ip *ip, unsigned prefix)
{
	unsigned bits = net__ip_bits(ip);

	for (unsigned i = prefix; i < bits; i++)
		ip->bytes[i / 8] &= (uint8_t) ~(0x80 >> (i % 8));
}

int net__parse_ip(const char *s, struct net_ip *ret)
{
	struct net_ip ip = { 0 };

	/* inet_pton(AF_INET) accepts only dotted quads: no octal, no "127.1" shorthands that
	 * would make the rule mean something other than what the operator read. */
	if (inet_pton(AF_INET, s, ip.bytes) == 1)
		ip.family = AF_INET;
	else if (inet_pton(AF_INET6, s, ip.bytes) == 1)
		ip.family = AF_INET6;
	else
		return -EINVAL;
	*ret = ip;
	return 0;
}

void net__format_ip(const struct net_ip *ip, char *buf, size_t len)
{
	if (!inet_ntop(ip->family, ip->bytes, buf, len) && len > 0)
		buf[0] = '\0';
}

static bool is_v4_mapped(const struct net_ip *ip)
{
	static const uint8_t pfx[12] = { [10] = 0xff, [11] = 0xff };

	return ip->family == AF_INET6 && memcmp(ip->bytes, pfx, 12) == 0;
}

/*
 * The IPv4 address carried inside some IPv6 forms, which a translator or tunnel on the
 * path may turn back into IPv4: IPv4-compatible ::a.b.c.d (deprecated, but the stack may
 * still route it), NAT64 64:ff9b::/96 and 6to4 2002:AABB:CCDD::/48.
 */
static bool embedded_v4(const struct net_ip *ip, struct net_ip *ret)
{
	static const uint8_t zero12[12];
	static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b };

	if (ip->family != AF_INET6)
		return false;
	*ret = (struct net_ip){ .family = AF_INET };
	if (memcmp(ip->bytes, zero12, 12) == 0 || memcmp(ip->bytes, nat64, 12) == 0) {
		/* :: and ::1 are themselves, not 0.0.0.0 and 0.0.0.1 */
		if (ip->bytes[0] == 0 && ip->bytes[12] == 0 && ip->bytes[13] == 0 &&
		    ip->bytes[14] == 0 && ip->bytes[15] <= 1)
			return false;
		memcpy(ret->bytes, ip->bytes + 12, 4);
		return true;
	}
	if (ip->bytes[0] == 0x20 && ip->bytes[1] == 0x02) {
		memcpy(ret->bytes, ip->bytes + 2, 4);
		return true;
	}
	return false;
}

static enum net_class classify_plain(const struct net_ip *ip, const char **ret_what)
{
	for (size_t i = 0; i < ELEMENTSOF(special_ranges); i++) {
		const struct special_range *r = &special_ranges[i];
		struct net_ip rn = { .family = r->family };

		memcpy(rn.bytes, r->bytes, sizeof(rn.bytes));
		if (net__prefix_contains(&rn, r->prefix, ip)) {
			*ret_what = r->what;
			return r->class;
		}
	}
	*ret_what = "public";
	return NET_CLASS_PUBLIC;
}

enum net_class net__classify(const struct net_ip *ip, const char **ret_what)
{
	const char *what, *ewhat;
	enum net_class c = classify_plain(ip, &what);
	struct net_ip e;

	if (embedded_v4(ip, &e)) {
		enum net_class ec = classify_plain(&e, &ewhat);

		if (ec > c) {
			c = ec;
			what = ewhat;
		}
	}
	if (ret_what)
		*ret_what = what;
	return c;
}

/*
 * Whether a prefix rule names (a part of) one local range and nothing outside it: such a
 * rule is the operator naming that range on purpose (10.0.0.0/8, [fd12::/16]), while
 * 0.0.0.0/0 or 8.0.0.0/5 only happen to cover one and must not open it.
 */
bool net__prefix_inside_local(const struct net_ip *ip, unsigned prefix)
{
	for (size_t i = 0; i < ELEMENTSOF(special_ranges); i++) {
		const struct special_range *r = &special_ranges[i];
		struct net_ip rn = { .family = r->family };

		if (r->class != NET_CLASS_LOCAL)
			continue;
		memcpy(rn.bytes, r->bytes, sizeof(rn.bytes));
		if (prefix >= r->prefix && net__prefix_contains(&rn, r->prefix, ip))
			return true;
	}
	return false;
}

/* IPv4-mapped IPv6 becomes IPv4; the unspecified addresses, which connect() and sendto()
 * take as "this host", become loopback. */
void net__normalize_ip(struct net_ip *ip)
{
	static const uint8_t zero16[16];

	if (is_v4_mapped(ip)) {
		ip->family = AF_INET;
		memmove(ip->bytes, ip->bytes + 12, 4);
		memset(ip->bytes + 4, 0, 12);
	}
	if (ip->family == AF_INET && memcmp(ip->bytes, zero16, 4) == 0) {
		ip->bytes[0] = 127;
		ip->bytes[3] = 1;
	} else if (ip->family == AF_INET6 && memcmp(ip->bytes, zero16, 16) == 0) {
		ip->bytes[15] = 1;
	}
}

/*
 * The same for a rule's prefix: an exact 0.0.0.0 means this host as it does in connect(),
 * and ::ffff:0:0/96 and longer are IPv4 prefixes (the destination is normalised the same
 * way, so a mapped rule would otherwise never match).
 */
void net__normalize_prefix(struct net_ip *ip, unsigned *prefix)
{
	if (is_v4_mapped(ip) && *prefix >= 96) {
		memmove(ip->bytes, ip->bytes + 12, 4);
		memset(ip->bytes + 4, 0, 12);
		ip->family = AF_INET;
		*prefix -= 96;
	}
	if (*prefix == net__ip_bits(ip))
		net__normalize_ip(ip);
}

/*
 * The kernel accepts an AF_INET6 sockaddr of 24 bytes (RFC 2133, without sin6_scope_id),
 * so do we. With normalize, the address is normalised as above (for connect and sendto,
 * not for bind, where 0.0.0.0 means every address).
 */
int net__from_sockaddr(const struct sockaddr *sa, socklen_t len, bool normalize,
                       struct net_ip *ret_ip, uint16_t *ret_port)
{
	struct net_ip ip = { 0 };
	uint16_t port;

	if (!sa || len < (socklen_t)sizeof(sa_family_t))
		return -EINVAL;
	if (sa->sa_family == AF_INET) {
		struct sockaddr_in sin;

		if (len < (socklen_t)sizeof(sin))
			return -EINVAL;
		memcpy(&sin, sa, sizeof(sin));
		ip.family = AF_INET;
		memcpy(ip.bytes, &sin.sin_addr, 4);
		port = ntohs(sin.sin_port);
	} else if (sa->sa_family == AF_INET6) {
		struct sockaddr_in6 sin6 = { 0 };

		if (len < 24)
			return -EINVAL;
		memcpy(&sin6, sa, MIN((size_t)len, sizeof(sin6)));
		ip.family = AF_INET6;
		memcpy(ip.bytes, &sin6.sin6_addr, 16);
		port = ntohs(sin6.sin6_port);
	} else {
		return -EAFNOSUPPORT;
	}

	if (normalize)
		net__normalize_ip(&ip);
	*ret_ip = ip;
	*ret_port = port;
	return 0;
}

void net_sockaddr_format(const struct sockaddr_storage *ss, socklen_t len, char *buf,
                         size_t size)
{
	char ip[INET6_ADDRSTRLEN];

	switch (ss->ss_family) {
	case AF_INET: {
		const struct sockaddr_in *in = (const void *)ss;

		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		snprintf(buf, size, "%s:%u", ip, ntohs(in->sin_port));
		break;
	}
	case AF_INET6: {
		const struct sockaddr_in6 *in6 = (const void *)ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, size, "[%s]:%u", ip, ntohs(in6->sin6_port));
		break;
	}
	case AF_UNIX: {
		const struct sockaddr_un *un = (const void *)ss;
		size_t n = len > offsetof(struct sockaddr_un, sun_path)
				   ? len - offsetof(struct sockaddr_un, sun_path) : 0;

		if (n && un->sun_path[0] == '\0')
			snprintf(buf, size, "unix:@%.*s", (int)(n - 1), un->sun_path + 1);
		else
			snprintf(buf, size, "unix:%.*s", (int)strnlen(un->sun_path, n), un->sun_path);
		break;
	}
	default:
		snprintf(buf, size, "family %u", ss->ss_family);
		break;
	}
}

int net_sockaddr_parse(const char *text, struct sockaddr_storage *ret, socklen_t *ret_len)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *colon, *h = text;
	struct net_ip ip;
	unsigned long port;
	size_t hl;
	char *end;

	memset(ret, 0, sizeof(*ret));
	if (text[0] == '[') {
		const char *rb = strchr(text, ']');

		if (!rb || rb[1] != ':')
			return -EINVAL;
		h = text + 1;
		hl = (size_t)(rb - h);
		colon = rb + 1;
	} else {
		colon = strrchr(text, ':');
		if (!colon)
			return -EINVAL;
		hl = (size_t)(colon - text);
	}
	if (hl == 0 || hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = '\0';
	port = strtoul(colon + 1, &end, 10);
	if (*end || end == colon + 1 || port > 65535)
		return -EINVAL;
	/* IPv6 only in brackets, IPv4 only without: the spelling net_sockaddr_format() gives */
	if (net__parse_ip(host, &ip) < 0 || (ip.family == AF_INET6) != (text[0] == '['))
		return -EINVAL;
	if (ip.family == AF_INET) {
		struct sockaddr_in *in = (void *)ret;

		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, ip.bytes, 4);
		in->sin_port = htons((uint16_t)port);
		*ret_len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (void *)ret;

		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, ip.bytes, 16);
		in6->sin6_port = htons((uint16_t)port);
		*ret_len = sizeof(*in6);
	}
	return 0;
}

bool net_sockaddr_is_loopback(const struct sockaddr_storage *ss)
{
	struct net_ip ip;
	const char *what;
	uint16_t port;

	/* normalised, 0.0.0.0 and :: are loopback already, and a mapped form is IPv4 */
	if (net__from_sockaddr((const struct sockaddr *)ss, sizeof(*ss), true, &ip, &port) < 0)
		return false;
	return classify_plain(&ip, &what) == NET_CLASS_LOCAL && streq(what, "loopback");
}
