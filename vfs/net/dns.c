/* SPDX-License-Identifier: MIT */
/*
 * A minimal DNS responder (RFC 1035): one question, A and AAAA answers, over UDP.
 *
 * Every byte of a query comes from the sandboxed program, so the parser trusts nothing:
 * each read is checked against the message length first, labels are at most 63 bytes and
 * names at most 255 wire bytes, extended label types are refused, and a compression
 * pointer must point strictly before the label sequence that contains it, which makes
 * every pointer chain strictly decreasing and so finite (no loops, no self-reference).
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "macros.h"
#include "net-internal.h"

#define DNS_HEADER 12
#define DNS_UDP_MAX 512
#define DNS_TTL 30       /* short: a program that asks again is pinned again */
#define DNS_MAX_ANSWERS 32

#define DNS_FLAG_QR 0x8000u
#define DNS_FLAG_RD 0x0100u
#define DNS_FLAG_RA 0x0080u
#define DNS_OPCODE(f) (((f) >> 11) & 0xfu)

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static bool hostname_byte(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_';
}

/*
 * Read the name at off. With out, the name is written dotted and its bytes must be
 * hostname bytes (a '.' or NUL inside a label would give a second spelling of some other
 * name); without out, the name is only walked (owner names of answers we skip).
 * *ret_end is the offset after the name where it starts, i.e. after the first pointer.
 */
static int read_name(const uint8_t *msg, size_t len, size_t off, char *out, size_t outlen,
                     size_t *ret_end)
{
	size_t pos = off, seg_start = off, end = 0, o = 0, wire = 1;

	for (;;) {
		uint8_t b;

		if (pos >= len)
			return -EBADMSG;
		b = msg[pos];
		if (b == 0) {
			if (!end)
				end = pos + 1;
			break;
		}
		if ((b & 0xc0) == 0xc0) {
			size_t target;

			if (pos + 1 >= len)
				return -EBADMSG;
			target = ((size_t)(b & 0x3f) << 8) | msg[pos + 1];
			if (target >= seg_start)
				return -EBADMSG;
			if (!end)
				end = pos + 2;
			pos = seg_start = target;
			continue;
		}
		if (b & 0xc0)   /* 0x40 / 0x80: extended and binary labels, never valid here */
			return -EBADMSG;
		if (b > len - pos - 1)
			return -EBADMSG;
		wire += 1u + b;
		if (wire > 255)
			return -EBADMSG;
		if (out) {
			if (o + (o ? 1 : 0) + b >= outlen)
				return -EBADMSG;
			if (o)
				out[o++] = '.';
			for (size_t i = 0; i < b; i++) {
				uint8_t c = msg[pos + 1 + i];

				if (!hostname_byte(c))
					return -EBADMSG;
				out[o++] = (char)c;
			}
		}
		pos += 1u + b;
	}
	if (out) {
		if (o >= outlen)
			return -EBADMSG;
		out[o] = '\0';
	}
	*ret_end = end;
	return 0;
}

_public_ int net_dns_parse_question(const uint8_t *msg, size_t len,
                                    struct net_dns_question *ret)
{
	struct net_dns_question q = { 0 };
	size_t end;
	int k;

	if (!msg || len < DNS_HEADER)
		return -EBADMSG;
	q.id = get16(msg);
	q.flags = get16(msg + 2);
	if (get16(msg + 4) != 1)
		return -EBADMSG;
	k = read_name(msg, len, DNS_HEADER, q.name, sizeof(q.name), &end);
	if (k < 0)
		return k;
	if (len - end < 4)
		return -EBADMSG;
	q.qtype = get16(msg + end);
	q.qclass = get16(msg + end + 2);
	q.end = end + 4;
	*ret = q;
	return 0;
}

_public_ int net_dns_parse_answers(const uint8_t *msg, size_t len,
                                   struct net_dns_question *ret_q, int *ret_rcode,
                                   struct net_ip *ret_ips, size_t max)
{
	struct net_dns_question q;
	size_t pos, count = 0;
	unsigned ancount;
	int k;

	k = net_dns_parse_question(msg, len, &q);
	if (k < 0)
		return k;
	ancount = get16(msg + 6);
	pos = q.end;
	for (unsigned i = 0; i < ancount; i++) {
		uint16_t type, class, rdlen;
		size_t end;

		k = read_name(msg, len, pos, NULL, 0, &end);
		if (k < 0)
			return k;
		if (len - end < 10)
			return -EBADMSG;
		type = get16(msg + end);
		class = get16(msg + end + 2);
		rdlen = get16(msg + end + 8);
		pos = end + 10;
		if (rdlen > len - pos)
			return -EBADMSG;
		if (class == NET_DNS_CLASS_IN && count < max &&
		    ((type == NET_DNS_TYPE_A && rdlen == 4) ||
		     (type == NET_DNS_TYPE_AAAA && rdlen == 16))) {
			struct net_ip ip = { .family = rdlen == 4 ? AF_INET : AF_INET6 };

			memcpy(ip.bytes, msg + pos, rdlen);
			ret_ips[count++] = ip;
		}
		pos += rdlen;
	}
	if (ret_q)
		*ret_q = q;
	if (ret_rcode)
		*ret_rcode = q.flags & 0xf;
	return (int)count;
}

/* Encode a dotted name (already validated by read_name) without compression. */
static size_t write_name(uint8_t *p, size_t cap, const char *name)
{
	size_t o = 0;

	while (*name) {
		const char *dot = strchr(name, '.');
		size_t l = dot ? (size_t)(dot - name) : strlen(name);

		if (o + 1 + l >= cap)
			return 0;
		p[o++] = (uint8_t)l;
		memcpy(p + o, name, l);
		o += l;
		name += l + (dot ? 1 : 0);
	}
	if (o >= cap)
		return 0;
	p[o++] = 0;
	return o;
}

/* A header-only reply (FORMERR for a question we could not read). */
static int reply_header_only(const uint8_t *query, uint8_t *resp, size_t cap, int rcode)
{
	uint16_t flags = get16(query + 2);

	if (cap < DNS_HEADER)
		return -ENOBUFS;
	memset(resp, 0, DNS_HEADER);
	memcpy(resp, query, 2);
	put16(resp + 2, (uint16_t)(DNS_FLAG_QR | (flags & (0xfu << 11)) | (flags & DNS_FLAG_RD) |
	                           DNS_FLAG_RA | (unsigned)rcode));
	return DNS_HEADER;
}

static int build_reply(const struct net_dns_question *q, int rcode, const struct net_ip *ips,
                       size_t n_ips, uint8_t *resp, size_t cap)
{
	size_t o = DNS_HEADER, nl;
	unsigned ancount = 0;

	nl = write_name(resp + o, cap - MIN(cap, o), q->name);
	if (cap < DNS_HEADER || nl == 0 || cap - o - nl < 4)
		return -ENOBUFS;
	o += nl;
	put16(resp + o, q->qtype);
	put16(resp + o + 2, q->qclass);
	o += 4;

	for (size_t i = 0; i < n_ips; i++) {
		size_t rdlen = ips[i].family == AF_INET ? 4 : 16;
		uint16_t type = ips[i].family == AF_INET ? NET_DNS_TYPE_A : NET_DNS_TYPE_AAAA;

		if (type != q->qtype)
			continue;
		/* What does not fit is left out rather than truncated (TC): the program gets
		 * fewer addresses, never a reason to retry over TCP we do not serve. */
		if (cap - o < 12 + rdlen)
			break;
		put16(resp + o, 0xc000 | DNS_HEADER);   /* pointer to the question's name */
		put16(resp + o + 2, type);
		put16(resp + o + 4, NET_DNS_CLASS_IN);
		put16(resp + o + 6, 0);
		put16(resp + o + 8, DNS_TTL);
		put16(resp + o + 10, (uint16_t)rdlen);
		memcpy(resp + o + 12, ips[i].bytes, rdlen);
		o += 12 + rdlen;
		ancount++;
	}

	put16(resp, q->id);
	put16(resp + 2, (uint16_t)(DNS_FLAG_QR | (q->flags & (0xfu << 11)) |
	                           (q->flags & DNS_FLAG_RD) | DNS_FLAG_RA | (unsigned)rcode));
	put16(resp + 4, 1);
	put16(resp + 6, (uint16_t)ancount);
	put16(resp + 8, 0);
	put16(resp + 10, 0);
	return (int)o;
}

_public_ int net_dns_answer(struct net *n, const uint8_t *query, size_t qlen, uint8_t *resp,
                            size_t resp_cap)
{
	struct net_ip ips[DNS_MAX_ANSWERS];
	struct net_dns_question q;
	size_t cap = MIN(resp_cap, (size_t)DNS_UDP_MAX);
	int family, k;

	if (!query || qlen < DNS_HEADER)
		return -EBADMSG;
	/* Never answer a response: two responders must not be able to ping-pong. */
	if (get16(query + 2) & DNS_FLAG_QR)
		return -EBADMSG;
	if (net_dns_parse_question(query, qlen, &q) < 0)
		return reply_header_only(query, resp, cap, NET_DNS_RCODE_FORMERR);
	/* Room for the header and the question (the name re-encoded: labels plus a length
	 * byte each and the root), checked before any lookup is spent on it. */
	if (cap < DNS_HEADER + (q.name[0] ? strlen(q.name) + 2 : 1) + 4)
		return -ENOBUFS;
	if (DNS_OPCODE(q.flags) != 0)
		return build_reply(&q, NET_DNS_RCODE_NOTIMP, NULL, 0, resp, cap);
	if (q.qclass != NET_DNS_CLASS_IN)
		return build_reply(&q, NET_DNS_RCODE_REFUSED, NULL, 0, resp, cap);
	/* The policy check comes before any lookup: a name we may not resolve must not
	 * leave the machine, not even as a query to the host's resolver. */
	if (!net_name_allowed(n, q.name))
		return build_reply(&q, NET_DNS_RCODE_NXDOMAIN, NULL, 0, resp, cap);
	if (q.qtype != NET_DNS_TYPE_A && q.qtype != NET_DNS_TYPE_AAAA)
		/* NODATA: the name exists, this type is simply not served (MX, HTTPS, ...) */
		return build_reply(&q, NET_DNS_RCODE_NOERROR, NULL, 0, resp, cap);

	family = q.qtype == NET_DNS_TYPE_A ? AF_INET : AF_INET6;
	k = n->lookup(n->lookup_ud, q.name, family, ips, ELEMENTSOF(ips));
	if (k == -ENOENT)
		return build_reply(&q, NET_DNS_RCODE_NXDOMAIN, NULL, 0, resp, cap);
	if (k < 0)
		return build_reply(&q, NET_DNS_RCODE_SERVFAIL, NULL, 0, resp, cap);
	if (k > (int)ELEMENTSOF(ips))
		k = (int)ELEMENTSOF(ips);
	/* Pin before answering: once the program holds an address, connect must accept it. */
	if (k > 0 && net_pin(n, q.name, ips, (size_t)k) < 0)
		return build_reply(&q, NET_DNS_RCODE_SERVFAIL, NULL, 0, resp, cap);
	return build_reply(&q, NET_DNS_RCODE_NOERROR, ips, (size_t)k, resp, cap);
}

_public_ int net_dns_serve_fd(struct net *n, int udp_fd)
{
	uint8_t query[DNS_UDP_MAX * 8], resp[DNS_UDP_MAX];
	struct sockaddr_storage peer;
	socklen_t plen = sizeof(peer);
	ssize_t got;
	int len;

	got = recvfrom(udp_fd, query, sizeof(query), MSG_TRUNC, (struct sockaddr *)&peer, &plen);
	if (got < 0)
		return negative_errno();
	/* MSG_TRUNC returns the real size: a datagram larger than any query is dropped. */
	if ((size_t)got > sizeof(query))
		return 0;
	len = net_dns_answer(n, query, (size_t)got, resp, sizeof(resp));
	if (len <= 0)
		return 0;
	/* UDP may lose answers anyway; a failed send is the client's timeout, not ours. */
	(void)sendto(udp_fd, resp, (size_t)len, MSG_DONTWAIT | MSG_NOSIGNAL,
	             (struct sockaddr *)&peer, plen);
	return 0;
}
