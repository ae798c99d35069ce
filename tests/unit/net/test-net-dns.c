/* SPDX-License-Identifier: MIT */
/*
 * The DNS parser and responder. Every malformed message is copied into a heap buffer of
 * exactly its length, so that under ASan a read one byte too far is a test failure.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <cmocka.h>

#include "net-test.h"

struct fake {
	int calls;
	int ret;                 /* <0: return this; else number of addresses to give */
};

static int fake_lookup(void *ud, const char *name, int family, struct net_ip *ret, size_t max)
{
	struct fake *f = ud;
	int count = 0;

	f->calls++;
	if (f->ret < 0)
		return f->ret;
	for (int i = 0; i < f->ret && (size_t)count < max; i++) {
		char a[64];

		if (family == AF_INET6)
			snprintf(a, sizeof(a), "2001:db8::%x", i + 1);
		else
			snprintf(a, sizeof(a), "192.0.2.%d", i + 1);
		ret[count++] = test_ip(a);
	}
	return count;
}

/* A standard query: id 0x1234, RD, one question. */
static size_t make_query(uint8_t *buf, size_t cap, const char *name, uint16_t qtype)
{
	size_t o = 12;
	const char *p = name;

	memset(buf, 0, 12);
	buf[0] = 0x12;
	buf[1] = 0x34;
	buf[2] = 0x01;          /* RD */
	buf[5] = 1;             /* QDCOUNT */
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);

		assert_true(o + 1 + l < cap);
		buf[o++] = (uint8_t)l;
		memcpy(buf + o, p, l);
		o += l;
		p += l + (dot ? 1 : 0);
	}
	buf[o++] = 0;
	buf[o++] = (uint8_t)(qtype >> 8);
	buf[o++] = (uint8_t)qtype;
	buf[o++] = 0;
	buf[o++] = 1;
	return o;
}

/* Parse with the message in a buffer of exactly len bytes (ASan sees any overread). */
static int parse_exact(const uint8_t *msg, size_t len, struct net_dns_question *q)
{
	uint8_t *copy = malloc(len ? len : 1);
	int k;

	assert_non_null(copy);
	memcpy(copy, msg, len);
	k = net_dns_parse_question(copy, len, q);
	free(copy);
	return k;
}

static int answer_exact(struct net *n, const uint8_t *msg, size_t len, uint8_t *resp,
                        size_t cap)
{
	uint8_t *copy = malloc(len ? len : 1);
	int k;

	assert_non_null(copy);
	memcpy(copy, msg, len);
	k = net_dns_answer(n, copy, len, resp, cap);
	free(copy);
	return k;
}

static struct net *new_net(const char *rules, struct fake *f)
{
	struct net *n = NULL;

	assert_int_equal(net_new(&n), 0);
	if (f)
		net_set_lookup(n, fake_lookup, f);
	assert_int_equal(test_load(n, rules, NULL), 0);
	assert_int_equal(net_set_host_addrs(n, NULL, 0), 0);
	assert_int_equal(net_finalize(n, NULL), 0);
	return n;
}

static void test_parse_ok(void **state)
{
	uint8_t q[512];
	struct net_dns_question dq;
	size_t len = make_query(q, sizeof(q), "WwW.Example.com", NET_DNS_TYPE_AAAA);

	assert_int_equal(parse_exact(q, len, &dq), 0);
	assert_string_equal(dq.name, "WwW.Example.com");
	assert_int_equal(dq.qtype, NET_DNS_TYPE_AAAA);
	assert_int_equal(dq.qclass, NET_DNS_CLASS_IN);
	assert_int_equal(dq.id, 0x1234);
	assert_int_equal(dq.end, len);
}

/* Every prefix of a valid query is malformed, and never read past. */
static void test_truncated(void **state)
{
	uint8_t q[512];
	struct net_dns_question dq;
	size_t len = make_query(q, sizeof(q), "a.bb.example.com", NET_DNS_TYPE_A);

	for (size_t l = 0; l < len; l++)
		assert_int_equal(parse_exact(q, l, &dq), -EBADMSG);
	assert_int_equal(parse_exact(q, len, &dq), 0);
}

struct bad_msg {
	const char *what;
	size_t len;
	uint8_t bytes[80];
};

#define HDR 0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00
#define TAIL 0x00, 0x01, 0x00, 0x01

static const struct bad_msg bad_msgs[] = {
	{ "pointer to itself", 18, { HDR, 0xc0, 0x0c, TAIL } },
	{ "pointer forward", 20, { HDR, 0xc0, 0x0e, 0x00, 0x00, TAIL } },
	{ "label then pointer back to its own start", 20, { HDR, 0x01, 'a', 0xc0, 0x0c, TAIL } },
	{ "pointer into the header", 18, { HDR, 0xc0, 0x02, TAIL } },
	{ "pointer cut in half", 13, { HDR, 0xc0 } },
	{ "pointer beyond the message", 18, { HDR, 0xff, 0xff, TAIL } },
	{ "extended label type 0x40", 19, { HDR, 0x41, 'a', 0x00, TAIL } },
	{ "label type 0x80", 19, { HDR, 0x81, 'a', 0x00, TAIL } },
	{ "label longer than the message", 19, { HDR, 0x3f, 'a', 0x00, TAIL } },
	{ "no terminating zero", 14, { HDR, 0x01, 'a' } },
	{ "no qtype/qclass", 15, { HDR, 0x01, 'a', 0x00 } },
	{ "half a qtype", 17, { HDR, 0x01, 'a', 0x00, 0x00, 0x01 } },
	{ "dot inside a label", 21, { HDR, 0x03, 'a', '.', 'b', 0x00, TAIL } },
	{ "NUL inside a label", 21, { HDR, 0x03, 'a', 0x00, 'b', 0x00, TAIL } },
	{ "space inside a label", 21, { HDR, 0x03, 'a', ' ', 'b', 0x00, TAIL } },
	{ "high byte inside a label", 19, { HDR, 0x01, 0xc3, 0x00, TAIL } },
	{ "QDCOUNT 0", 19, { 0x12, 0x34, 0x01, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0x01, 'a', 0x00,
	                     TAIL } },
	{ "QDCOUNT 2", 19, { 0x12, 0x34, 0x01, 0x00, 0x00, 0x02, 0, 0, 0, 0, 0, 0, 0x01, 'a', 0x00,
	                     TAIL } },
	{ "header only", 12, { HDR } },
	{ "short header", 11, { 0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0 } },
};

static void test_malformed(void **state)
{
	struct net_dns_question dq;

	for (size_t i = 0; i < sizeof(bad_msgs) / sizeof(bad_msgs[0]); i++) {
		int k = parse_exact(bad_msgs[i].bytes, bad_msgs[i].len, &dq);

		if (k != -EBADMSG)
			print_error("%s: %d\n", bad_msgs[i].what, k);
		assert_int_equal(k, -EBADMSG);
	}
}

/* Labels of 63 are fine, 64 is not; 255 wire bytes are fine, 256 are not. */
static void test_sizes(void **state)
{
	uint8_t q[1024];
	struct net_dns_question dq;
	char name[400];
	size_t len;

	memset(name, 'a', 63);
	name[63] = '\0';
	len = make_query(q, sizeof(q), name, NET_DNS_TYPE_A);
	assert_int_equal(parse_exact(q, len, &dq), 0);
	memset(name, 'a', 64);
	name[64] = '\0';
	len = make_query(q, sizeof(q), name, NET_DNS_TYPE_A);
	assert_int_equal(parse_exact(q, len, &dq), -EBADMSG);

	/* 3 x 63 + 61 = 250 characters plus 3 dots: 253 characters, 255 wire bytes */
	memset(name, 'b', sizeof(name));
	name[63] = name[127] = name[191] = '.';
	name[253] = '\0';
	len = make_query(q, sizeof(q), name, NET_DNS_TYPE_A);
	assert_int_equal(parse_exact(q, len, &dq), 0);
	assert_int_equal(strlen(dq.name), 253);
	name[253] = 'b';
	name[254] = '\0';
	len = make_query(q, sizeof(q), name, NET_DNS_TYPE_A);
	assert_int_equal(parse_exact(q, len, &dq), -EBADMSG);

	/* a long chain of one-byte labels, each one legal, the whole too long */
	for (size_t i = 0; i < 300; i += 2) {
		name[i] = 'x';
		name[i + 1] = '.';
	}
	name[299] = '\0';
	len = make_query(q, sizeof(q), name, NET_DNS_TYPE_A);
	assert_int_equal(parse_exact(q, len, &dq), -EBADMSG);
}

/* A backward pointer is legal: the name is read through it, and the end is after it. */
static void test_pointer_backward(void **state)
{
	/* a hand-made response-shaped message: the question, then an answer whose owner is a
	 * pointer to the question name and whose rdata is an A record */
	static const uint8_t msg[] = {
		0x12, 0x34, 0x81, 0x80, 0x00, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00,
		0x01, 'a', 0x07, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 0x00, TAIL,
		0xc0, 0x0c, 0x00, 0x01, 0x00, 0x01, 0, 0, 0, 30, 0x00, 0x04, 192, 0, 2, 7,
		/* owner "b" + pointer to "example" at offset 14 */
		0x01, 'b', 0xc0, 0x0e, 0x00, 0x1c, 0x00, 0x01, 0, 0, 0, 30, 0x00, 0x10,
		0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x09,
	};
	struct net_dns_question dq;
	struct net_ip ips[4];
	int rcode = -1;
	uint8_t *copy;

	for (size_t l = 0; l <= sizeof(msg); l++) {
		int k;

		copy = malloc(l ? l : 1);
		memcpy(copy, msg, l);
		k = net_dns_parse_answers(copy, l, &dq, &rcode, ips, 4);
		free(copy);
		if (l < sizeof(msg))
			assert_int_equal(k, -EBADMSG);
		else
			assert_int_equal(k, 2);
	}
	assert_string_equal(dq.name, "a.example");
	assert_int_equal(rcode, 0);
	assert_true(test_ip_is(&ips[0], "192.0.2.7"));
	assert_true(test_ip_is(&ips[1], "2001:db8::9"));
}

/* Hostile answer sections: loops and overlong rdata in the records after the question. */
static void test_answers_hostile(void **state)
{
	static const uint8_t loop[] = {
		0x12, 0x34, 0x81, 0x80, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
		0x01, 'a', 0x00, TAIL,
		/* owner: a label, then a pointer back to that label (loop) */
		0x01, 'b', 0xc0, 0x13, 0x00, 0x01, 0x00, 0x01, 0, 0, 0, 1, 0x00, 0x04, 1, 2, 3, 4,
	};
	static const uint8_t rdlen[] = {
		0x12, 0x34, 0x81, 0x80, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
		0x01, 'a', 0x00, TAIL,
		0xc0, 0x0c, 0x00, 0x01, 0x00, 0x01, 0, 0, 0, 1, 0xff, 0xff, 1, 2, 3, 4,
	};
	static const uint8_t many[] = {
		/* ANCOUNT 65535 with one record present */
		0x12, 0x34, 0x81, 0x80, 0x00, 0x01, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00,
		0x01, 'a', 0x00, TAIL,
		0xc0, 0x0c, 0x00, 0x01, 0x00, 0x01, 0, 0, 0, 1, 0x00, 0x04, 1, 2, 3, 4,
	};
	struct net_ip ips[4];
	uint8_t *c;

	c = malloc(sizeof(loop));
	memcpy(c, loop, sizeof(loop));
	assert_int_equal(net_dns_parse_answers(c, sizeof(loop), NULL, NULL, ips, 4), -EBADMSG);
	free(c);
	c = malloc(sizeof(rdlen));
	memcpy(c, rdlen, sizeof(rdlen));
	assert_int_equal(net_dns_parse_answers(c, sizeof(rdlen), NULL, NULL, ips, 4), -EBADMSG);
	free(c);
	c = malloc(sizeof(many));
	memcpy(c, many, sizeof(many));
	assert_int_equal(net_dns_parse_answers(c, sizeof(many), NULL, NULL, ips, 4), -EBADMSG);
	free(c);
}

/* Random bytes and random mutations of a valid query: no crash, no overread. */
static void test_fuzz(void **state)
{
	struct fake f = { 0 };
	struct net *n = new_net("allow-net *.example.com:443", &f);
	uint8_t base[512], buf[600], resp[512];
	struct net_dns_question dq;
	struct net_ip ips[8];
	size_t blen = make_query(base, sizeof(base), "a.example.com", NET_DNS_TYPE_A);
	unsigned seed = 12345;

	for (int i = 0; i < 200000; i++) {
		size_t len;
		int k;

		if (i % 2) {
			len = (size_t)rand_r(&seed) % sizeof(buf);
			for (size_t j = 0; j < len; j++)
				buf[j] = (uint8_t)rand_r(&seed);
			if (len >= 6) {   /* give the question parser a chance */
				buf[2] &= 0x7f;
				buf[4] = 0;
				buf[5] = 1;
			}
		} else {
			memcpy(buf, base, blen);
			len = blen;
			for (int m = rand_r(&seed) % 4; m >= 0; m--)
				buf[(size_t)rand_r(&seed) % blen] = (uint8_t)rand_r(&seed);
			len = (size_t)rand_r(&seed) % (blen + 1);
		}
		parse_exact(buf, len, &dq);
		k = answer_exact(n, buf, len, resp, sizeof(resp));
		assert_true(k <= (int)sizeof(resp));
		/* every answer with a question (all but FORMERR) reads back */
		if (k > 0 && resp[5] == 1)
			assert_true(net_dns_parse_answers(resp, (size_t)k, &dq, NULL, ips, 8) >= 0);
		{
			uint8_t *c = malloc(len ? len : 1);

			memcpy(c, buf, len);
			net_dns_parse_answers(c, len, &dq, NULL, ips, 8);
			free(c);
		}
	}
	net_free(n);
}

static int rcode_of(const uint8_t *resp)
{
	return resp[3] & 0xf;
}

static int ancount_of(const uint8_t *resp)
{
	return (resp[6] << 8) | resp[7];
}

/* The heart of "no DNS leaks": a name the policy does not allow is never looked up. */
static void test_disallowed_no_lookup(void **state)
{
	struct fake f = { .ret = 1 };
	struct net *n = new_net("allow-net api.example.com:443; allow-net *.cdn.example:*;"
	                        "deny-net *.bad.cdn.example:*", &f);
	static const char *const names[] = {
		"evil.example", "example.com", "xapi.example.com", "cdn.example",
		"x.bad.cdn.example", "localhost", "1.0.0.127.in-addr.arpa",
	};
	uint8_t q[512], resp[512];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		for (uint16_t t = 0; t < 3; t++) {
			uint16_t qtype = t == 0 ? NET_DNS_TYPE_A : t == 1 ? NET_DNS_TYPE_AAAA : 12;
			size_t len = make_query(q, sizeof(q), names[i], qtype);
			int k = answer_exact(n, q, len, resp, sizeof(resp));

			assert_true(k >= (int)len);
			assert_int_equal(resp[0], 0x12);
			assert_int_equal(resp[1], 0x34);
			assert_true(resp[2] & 0x80);                 /* QR */
			assert_int_equal(rcode_of(resp), NET_DNS_RCODE_NXDOMAIN);
			assert_int_equal(ancount_of(resp), 0);
			/* the question is echoed */
			assert_memory_equal(resp + 12, q + 12, len - 12);
		}
	}
	assert_int_equal(f.calls, 0);
	net_free(n);
}

static void test_allowed_answered_and_pinned(void **state)
{
	struct fake f = { .ret = 2 };
	struct net *n = new_net("allow-net *.cdn.example:443", &f);
	uint8_t q[512], resp[512];
	struct net_dns_question dq;
	struct net_ip ips[8];
	struct sockaddr_storage ss;
	socklen_t sl;
	int rcode, k;
	size_t len;

	/* before the answer, 192.0.2.1 belongs to no name */
	sl = test_sockaddr("192.0.2.1:443", &ss);
	assert_int_equal(net_decide(n, (struct sockaddr *)&ss, sl, SOCK_STREAM, NULL),
	                 -ECONNREFUSED);

	len = make_query(q, sizeof(q), "Img.CDN.example", NET_DNS_TYPE_A);
	k = answer_exact(n, q, len, resp, sizeof(resp));
	assert_true(k > 0);
	assert_int_equal(net_dns_parse_answers(resp, (size_t)k, &dq, &rcode, ips, 8), 2);
	assert_int_equal(rcode, NET_DNS_RCODE_NOERROR);
	assert_string_equal(dq.name, "Img.CDN.example");   /* case kept (0x20 randomisation) */
	assert_true(test_ip_is(&ips[0], "192.0.2.1"));
	assert_true(test_ip_is(&ips[1], "192.0.2.2"));
	assert_int_equal(f.calls, 1);
	assert_true(resp[3] & 0x80);                         /* RA */
	assert_true(resp[2] & 0x01);                         /* RD copied */

	assert_int_equal(net_decide(n, (struct sockaddr *)&ss, sl, SOCK_STREAM, NULL), 0);
	sl = test_sockaddr("192.0.2.1:80", &ss);
	assert_int_equal(net_decide(n, (struct sockaddr *)&ss, sl, SOCK_STREAM, NULL),
	                 -ECONNREFUSED);

	len = make_query(q, sizeof(q), "img.cdn.example", NET_DNS_TYPE_AAAA);
	k = answer_exact(n, q, len, resp, sizeof(resp));
	assert_int_equal(net_dns_parse_answers(resp, (size_t)k, &dq, &rcode, ips, 8), 2);
	assert_true(test_ip_is(&ips[0], "2001:db8::1"));
	sl = test_sockaddr("[2001:db8::2]:443", &ss);
	assert_int_equal(net_decide(n, (struct sockaddr *)&ss, sl, SOCK_STREAM, NULL), 0);

	/* MX for an allowed name: empty NOERROR, and no lookup */
	len = make_query(q, sizeof(q), "img.cdn.example", 15);
	k = answer_exact(n, q, len, resp, sizeof(resp));
	assert_int_equal(rcode_of(resp), NET_DNS_RCODE_NOERROR);
	assert_int_equal(ancount_of(resp), 0);
	assert_int_equal(f.calls, 2);

	/* AAAA without addresses: empty NOERROR */
	f.ret = 0;
	len = make_query(q, sizeof(q), "v4only.cdn.example", NET_DNS_TYPE_AAAA);
	k = answer_exact(n, q, len, resp, sizeof(resp));
	assert_int_equal(rcode_of(resp), NET_DNS_RCODE_NOERROR);
	assert_int_equal(ancount_of(resp), 0);

	f.ret = -ENOENT;
	len = make_query(q, sizeof(q), "gone.cdn.example", NET_DNS_TYPE_A);
	answer_exact(n, q, len, resp, sizeof(resp));
	assert_int_equal(rcode_of(resp), NET_DNS_RCODE_NXDOMAIN);
	f.ret = -EAGAIN;
	answer_exact(n, q, len, resp, sizeof(resp));
	assert_int_equal(rcode_of(resp), NET_DNS_RCODE_SERVFAIL);
	net_free(n);
}

static void test_rcodes(void **state)
{
	struct fake f = { .ret = 1 };
	struct net *n = new_net("allow-net *:443", &f);
	uint8_t q[512], resp[512];
	size_t len;
	int k;

	/* a response is never answered */
	len = make_query(q, sizeof(q), "a.example", NET_DNS_TYPE_A);
	q[2] |= 0x80;
	assert_int_equal(answer_exact(n, q, len, resp, sizeof(resp)), -EBADMSG);
	/* opcode 2 (STATUS) */
	len = make_query(q, sizeof(q), "a.example", NET_DNS_TYPE_A);
	q[2] = (uint8_t)(2 << 3);
	assert_true(answer_exact(n, q, len, resp, sizeof(resp)) > 0);
	assert_int_equal(rcode_of(resp), NET_DNS_RCODE_NOTIMP);
	/* class CH */
	len = make_query(q, sizeof(q), "a.example", NET_DNS_TYPE_A);
	q[len - 1] = 3;
	assert_true(answer_exact(n, q, len, resp, sizeof(resp)) > 0);
	assert_int_equal(rcode_of(resp), NET_DNS_RCODE_REFUSED);
	/* malformed but with a header: FORMERR, id echoed, no question */
	k = answer_exact(n, bad_msgs[0].bytes, bad_msgs[0].len, resp, sizeof(resp));
	assert_int_equal(k, 12);
	assert_int_equal(rcode_of(resp), NET_DNS_RCODE_FORMERR);
	assert_int_equal(resp[0], 0x12);
	assert_int_equal(resp[5], 0);
	/* shorter than a header: nothing to answer */
	assert_int_equal(answer_exact(n, q, 11, resp, sizeof(resp)), -EBADMSG);
	/* no room */
	len = make_query(q, sizeof(q), "a.example", NET_DNS_TYPE_A);
	assert_int_equal(answer_exact(n, q, len, resp, 20), -ENOBUFS);
	assert_int_equal(f.calls, 0);
	net_free(n);
}

/* Many addresses: the answer stays within 512 bytes and within the caller's buffer. */
static void test_answer_size(void **state)
{
	struct fake f = { .ret = 32 };
	struct net *n = new_net("allow-net big.example:*", &f);
	uint8_t q[512], resp[1024], small[100];
	struct net_ip ips[64];
	size_t len = make_query(q, sizeof(q), "big.example", NET_DNS_TYPE_AAAA);
	int k;

	k = answer_exact(n, q, len, resp, sizeof(resp));
	assert_true(k > 0 && k <= 512);
	assert_int_equal(net_dns_parse_answers(resp, (size_t)k, NULL, NULL, ips, 64),
	                 ancount_of(resp));
	assert_int_equal(ancount_of(resp), (512 - 12 - (int)(len - 12)) / 28);
	k = answer_exact(n, q, len, small, sizeof(small));
	assert_true(k > 0 && k <= (int)sizeof(small));
	assert_int_equal(ancount_of(small), (100 - 12 - (int)(len - 12)) / 28);
	net_free(n);
}

/* The real host resolver: localhost is allowed and resolves to 127.0.0.1. */
static void test_localhost_real(void **state)
{
	struct net *n = new_net("allow-net localhost:8080", NULL);
	uint8_t q[512], resp[512];
	struct net_ip ips[8];
	struct sockaddr_storage ss;
	socklen_t sl;
	bool found = false;
	int k;
	size_t len = make_query(q, sizeof(q), "localhost", NET_DNS_TYPE_A);

	k = answer_exact(n, q, len, resp, sizeof(resp));
	assert_true(k > 0);
	k = net_dns_parse_answers(resp, (size_t)k, NULL, NULL, ips, 8);
	assert_true(k >= 1);
	for (int i = 0; i < k; i++)
		found |= test_ip_is(&ips[i], "127.0.0.1");
	assert_true(found);
	sl = test_sockaddr("127.0.0.1:8080", &ss);
	assert_int_equal(net_decide(n, (struct sockaddr *)&ss, sl, SOCK_STREAM, NULL), 0);
	net_free(n);
}

/* One datagram over a real UDP socket on 127.0.0.1. */
static void test_serve_fd(void **state)
{
	struct fake f = { .ret = 1 };
	struct net *n = new_net("allow-net ok.example:*", &f);
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(addr);
	uint8_t q[512], resp[512];
	size_t len;
	int srv, cli;
	ssize_t got;

	srv = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	cli = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(srv >= 0 && cli >= 0);
	assert_int_equal(bind(srv, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(getsockname(srv, (struct sockaddr *)&addr, &alen), 0);

	assert_int_equal(net_dns_serve_fd(n, srv), -EAGAIN);

	len = make_query(q, sizeof(q), "ok.example", NET_DNS_TYPE_A);
	assert_int_equal(sendto(cli, q, len, 0, (struct sockaddr *)&addr, sizeof(addr)),
	                 (ssize_t)len);
	assert_int_equal(poll(&(struct pollfd){ .fd = srv, .events = POLLIN }, 1, 5000), 1);
	assert_int_equal(net_dns_serve_fd(n, srv), 0);
	got = recv(cli, resp, sizeof(resp), 0);
	assert_true(got > (ssize_t)len);
	assert_int_equal(rcode_of(resp), NET_DNS_RCODE_NOERROR);
	assert_int_equal(ancount_of(resp), 1);

	len = make_query(q, sizeof(q), "leak.example", NET_DNS_TYPE_A);
	sendto(cli, q, len, 0, (struct sockaddr *)&addr, sizeof(addr));
	assert_int_equal(poll(&(struct pollfd){ .fd = srv, .events = POLLIN }, 1, 5000), 1);
	assert_int_equal(net_dns_serve_fd(n, srv), 0);
	got = recv(cli, resp, sizeof(resp), 0);
	assert_true(got > 0);
	assert_int_equal(rcode_of(resp), NET_DNS_RCODE_NXDOMAIN);
	assert_int_equal(f.calls, 1);

	/* garbage is dropped without an answer */
	sendto(cli, "xx", 2, 0, (struct sockaddr *)&addr, sizeof(addr));
	assert_int_equal(poll(&(struct pollfd){ .fd = srv, .events = POLLIN }, 1, 5000), 1);
	assert_int_equal(net_dns_serve_fd(n, srv), 0);
	assert_int_equal(recv(cli, resp, sizeof(resp), MSG_DONTWAIT), -1);

	close(srv);
	close(cli);
	net_free(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_ok),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_pointer_backward),
		cmocka_unit_test(test_answers_hostile),
		cmocka_unit_test(test_fuzz),
		cmocka_unit_test(test_disallowed_no_lookup),
		cmocka_unit_test(test_allowed_answered_and_pinned),
		cmocka_unit_test(test_rcodes),
		cmocka_unit_test(test_answer_size),
		cmocka_unit_test(test_localhost_real),
		cmocka_unit_test(test_serve_fd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
