/* SPDX-License-Identifier: MIT */
/*
 * net_decide() as a table: (rules, pins, destination, socket type) -> (errno, rule).
 * Each row is its own TAP test so that a failure names the row. The host's own address in
 * every row is 203.0.113.7 (set explicitly, so the table does not depend on the machine).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "net-test.h"

#define TCP SOCK_STREAM
#define UDP SOCK_DGRAM

struct row {
	const char *rules;
	const char *pins;
	const char *dest;
	int type;
	int err;             /* expected positive errno, 0 = allowed */
	const char *rule;    /* substring expected in verdict.rule */
};

static const struct row rows[] = {
	/* literal addresses and ports */
	{ "allow-net 127.0.0.1:8080", "", "127.0.0.1:8080", TCP, 0,
	  "allow-net 127.0.0.1:8080 (--allow-net)" },
	{ "allow-net 127.0.0.1:8080", "", "127.0.0.1:8081", TCP, ECONNREFUSED,
	  "no rule allows this destination" },
	{ "", "", "93.184.216.34:443", TCP, ECONNREFUSED, "no rule allows this destination" },
	{ "allow-net 127.0.0.1:8000-8999", "", "127.0.0.1:8999", TCP, 0, "8000-8999" },
	{ "allow-net 127.0.0.1:8000-8999", "", "127.0.0.1:9000", TCP, ECONNREFUSED, "no rule" },
	{ "allow-net 127.0.0.1:8000-8999", "", "127.0.0.1:7999", TCP, ECONNREFUSED, "no rule" },
	{ "allow-net 127.0.0.1", "", "127.0.0.1:1", TCP, 0, "allow-net 127.0.0.1:*" },
	{ "allow-net 127.0.0.1:*", "", "127.0.0.1:65535", UDP, 0, "127.0.0.1:*" },
	/* CIDR, v4 */
	{ "allow-net 10.0.0.0/8:22", "", "10.200.3.4:22", TCP, 0, "10.0.0.0/8:22" },
	{ "allow-net 10.0.0.0/8:22", "", "11.0.0.1:22", TCP, ECONNREFUSED, "no rule" },
	{ "allow-net 10.1.2.3/8:22", "", "10.9.9.9:22", TCP, 0, "allow-net 10.0.0.0/8:22" },
	{ "allow-net 0.0.0.0/0:443", "", "93.184.216.34:443", TCP, 0, "0.0.0.0/0:443" },
	{ "allow-net 0.0.0.0/0:443", "", "10.0.0.1:443", TCP, EACCES, "does not reach private" },
	{ "allow-net 0.0.0.0/0:443", "", "127.0.0.1:443", TCP, EACCES, "does not reach loopback" },
	{ "allow-net 0.0.0.0/0", "", "100.64.1.1:80", TCP, EACCES, "CGNAT" },
	{ "allow-net 0.0.0.0/0", "", "224.0.0.251:5353", UDP, EACCES, "multicast" },
	{ "allow-net 224.0.0.251:5353", "", "224.0.0.251:5353", UDP, 0, "224.0.0.251:5353" },
	{ "allow-net 0.0.0.0/0", "", "255.255.255.255:67", UDP, EACCES, "broadcast" },
	/* metadata and link-local: only the literal address opens them */
	{ "allow-net 0.0.0.0/0", "", "169.254.169.254:80", TCP, EACCES,
	  "metadata is always denied" },
	{ "", "", "169.254.169.254:80", TCP, EACCES, "metadata is always denied" },
	{ "allow-net 169.254.0.0/16", "", "169.254.169.254:80", TCP, EACCES,
	  "metadata is always denied" },
	{ "allow-net 169.254.0.0/16", "", "169.254.1.1:80", TCP, EACCES,
	  "link-local is always denied" },
	{ "allow-net 169.254.169.254:80", "", "169.254.169.254:80", TCP, 0,
	  "allow-net 169.254.169.254:80" },
	{ "allow-net 169.254.169.254:80", "", "[::ffff:169.254.169.254]:80", TCP, 0,
	  "169.254.169.254:80" },
	{ "allow-net 0.0.0.0/0", "", "[::ffff:169.254.169.254]:80", TCP, EACCES, "metadata" },
	{ "allow-net 0.0.0.0/0", "", "100.100.100.200:80", TCP, EACCES, "metadata" },
	{ "allow-net 100.64.0.0/10", "", "100.100.100.200:80", TCP, EACCES, "metadata" },
	{ "allow-net 100.64.0.0/10", "", "100.64.0.9:80", TCP, 0, "100.64.0.0/10" },
	{ "allow-net [fd00::/8]:*", "", "[fd00:ec2::254]:80", TCP, EACCES, "metadata" },
	{ "allow-net [fd00:ec2::254]:80", "", "[fd00:ec2::254]:80", TCP, 0, "[fd00:ec2::254]:80" },
	{ "allow-net [::/0]:*", "", "[fe80::1]:80", TCP, EACCES, "link-local" },
	{ "allow-net [::/0]:*", "", "[64:ff9b::a9fe:a9fe]:80", TCP, EACCES, "metadata" },
	{ "allow-net [::/0]:*", "", "[2002:a9fe:a9fe::1]:80", TCP, EACCES, "metadata" },
	{ "allow-net [::/0]:*", "", "[::127.0.0.1]:80", TCP, EACCES, "loopback" },
	{ "allow-net 169.254.169.254;deny-net 169.254.0.0/16", "", "169.254.169.254:80", TCP, EACCES,
	  "deny-net 169.254.0.0/16:*" },
	/* mapped IPv6 and "this host" */
	{ "allow-net 127.0.0.1:8080", "", "[::ffff:127.0.0.1]:8080", TCP, 0, "127.0.0.1:8080" },
	{ "allow-net 127.0.0.1:8080", "", "0.0.0.0:8080", TCP, 0, "127.0.0.1:8080" },
	{ "allow-net [::1]:80", "", "[::]:80", TCP, 0, "[::1]:80" },
	{ "allow-net [::1]:80", "", "[::1]:80", TCP, 0, "[::1]:80" },
	{ "allow-net [::ffff:127.0.0.1]:80", "", "127.0.0.1:80", TCP, 0, "127.0.0.1:80" },
	{ "allow-net 0.0.0.0:80", "", "127.0.0.1:80", TCP, 0, "127.0.0.1:80" },
	/* CIDR, v6 */
	{ "allow-net [2001:db8::/32]:*", "", "[2001:db8::5]:443", TCP, 0, "[2001:db8::/32]:*" },
	{ "allow-net [2001:db8::/32]:*", "", "[2001:db9::5]:443", TCP, ECONNREFUSED, "no rule" },
	{ "allow-net 2001:db8::/32", "", "[2001:db8::5]:1", UDP, 0, "[2001:db8::/32]:*" },
	{ "allow-net [fd00::/8]:*", "", "[fd12::1]:80", TCP, 0, "[fd00::/8]:*" },
	{ "allow-net [::/0]:*", "", "[fd12::1]:80", TCP, EACCES, "unique-local" },
	{ "allow-net [::/0]:*", "", "[ff02::fb]:5353", UDP, EACCES, "multicast" },
	/* deny wins over allow, whatever the order */
	{ "allow-net 10.0.0.0/8;deny-net 10.1.0.0/16", "", "10.1.2.3:80", TCP, EACCES,
	  "deny-net 10.1.0.0/16:* (--deny-net)" },
	{ "allow-net 10.0.0.0/8;deny-net 10.1.0.0/16", "", "10.2.0.1:80", TCP, 0, "10.0.0.0/8" },
	{ "deny-net 93.184.216.34:443;allow-net 93.184.216.34:443", "", "93.184.216.34:443", TCP,
	  EACCES, "deny-net" },
	{ "allow-net 93.184.216.34:443;deny-net bad.example:*", "bad.example=93.184.216.34",
	  "93.184.216.34:443", TCP, EACCES, "deny-net bad.example:*" },
	{ "allow-net *.example.com:*;deny-net *.ads.example.com:*",
	  "x.ads.example.com=93.184.216.35", "93.184.216.35:80", TCP, EACCES,
	  "deny-net *.ads.example.com:*" },
	/* tcp:/udp: */
	{ "allow-net tcp:127.0.0.1:53", "", "127.0.0.1:53", UDP, ECONNREFUSED, "no rule" },
	{ "allow-net tcp:127.0.0.1:53", "", "127.0.0.1:53", TCP, 0, "tcp:127.0.0.1:53" },
	{ "allow-net udp:127.0.0.1:53", "", "127.0.0.1:53", UDP, 0, "udp:127.0.0.1:53" },
	{ "allow-net udp:127.0.0.1:53", "", "127.0.0.1:53", TCP, ECONNREFUSED, "no rule" },
	{ "allow-net 127.0.0.1:53;deny-net udp:127.0.0.1:53", "", "127.0.0.1:53", UDP, EACCES,
	  "deny-net udp:127.0.0.1:53" },
	{ "allow-net 127.0.0.1:53;deny-net udp:127.0.0.1:53", "", "127.0.0.1:53", TCP, 0,
	  "allow-net 127.0.0.1:53" },
	{ "allow-net 127.0.0.1:53", "", "127.0.0.1:53", SOCK_RAW, EACCES, "only TCP and UDP" },
	{ "allow-net 127.0.0.1:53", "", "127.0.0.1:53", TCP | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
	  "127.0.0.1:53" },
	/* names: exact names reach loopback/private, wildcards never do */
	{ "allow-net localhost:8080", "localhost=127.0.0.1,::1", "127.0.0.1:8080", TCP, 0,
	  "allow-net localhost:8080 (--allow-net)" },
	{ "allow-net localhost:8080", "localhost=127.0.0.1,::1", "[::1]:8080", TCP, 0,
	  "localhost:8080" },
	{ "allow-net localhost:8080", "", "127.0.0.1:8080", TCP, ECONNREFUSED, "no rule" },
	{ "allow-net example.invalid:443", "", "127.0.0.1:443", TCP, ECONNREFUSED, "no rule" },
	{ "allow-net db.internal:5432", "db.internal=10.0.0.5", "10.0.0.5:5432", TCP, 0,
	  "db.internal:5432" },
	{ "allow-net meta.example:80", "meta.example=169.254.169.254", "169.254.169.254:80", TCP,
	  EACCES, "metadata is always denied" },
	{ "allow-net *.example.com:443", "evil.example.com=127.0.0.1", "127.0.0.1:443", TCP,
	  EACCES, "*.example.com:443 (--allow-net) does not reach loopback" },
	{ "allow-net *.example.com:443", "a.example.com=10.0.0.5", "10.0.0.5:443", TCP, EACCES,
	  "does not reach private" },
	{ "allow-net *.example.com:443", "www.example.com=93.184.216.34", "93.184.216.34:443", TCP,
	  0, "*.example.com:443" },
	{ "allow-net *.example.com:443", "a.b.example.com=93.184.216.34", "93.184.216.34:443", TCP,
	  0, "*.example.com:443" },
	{ "allow-net *.example.com:443", "example.com=93.184.216.34", "93.184.216.34:443", TCP,
	  ECONNREFUSED, "no rule" },
	{ "allow-net *.example.com:443", "www.example.com=93.184.216.34", "93.184.216.34:80", TCP,
	  ECONNREFUSED, "no rule" },
	{ "allow-net a.example:443", "b.example=93.184.216.34", "93.184.216.34:443", TCP,
	  ECONNREFUSED, "no rule" },
	{ "allow-net *:443", "", "93.184.216.34:443", TCP, 0, "allow-net *:443" },
	{ "allow-net *:443", "", "127.0.0.1:443", TCP, EACCES, "loopback" },
	/* the host's own addresses count as local */
	{ "allow-net 203.0.113.0/24", "", "203.0.113.7:80", TCP, EACCES, "does not reach host" },
	{ "allow-net 203.0.113.7", "", "203.0.113.7:80", TCP, 0, "203.0.113.7:*" },
	{ "allow-net 203.0.113.0/24", "", "203.0.113.8:80", TCP, 0, "203.0.113.0/24:*" },
	{ "allow-net host.example:80", "host.example=203.0.113.7", "203.0.113.7:80", TCP, 0,
	  "host.example:80" },
	{ "allow-net *.example:80", "h.example=203.0.113.7", "203.0.113.7:80", TCP, EACCES,
	  "host addresses" },
};

#define ELEMENTSOF_ROWS (sizeof(rows) / sizeof(rows[0]))

static void check_row(void **state)
{
	const struct row *r = *state;
	struct net *n = NULL;
	struct net_ip host = test_ip("203.0.113.7");
	struct sockaddr_storage ss;
	struct net_verdict v;
	socklen_t len;
	int k;

	assert_int_equal(net_new(&n), 0);
	assert_int_equal(net_set_host_addrs(n, &host, 1), 0);
	assert_int_equal(test_load(n, r->rules, r->pins), 0);
	assert_int_equal(net_finalize(n, NULL), 0);
	len = test_sockaddr(r->dest, &ss);
	assert_true(len > 0);

	k = net_decide(n, (struct sockaddr *)&ss, len, r->type, &v);
	if (k != -r->err || !strstr(v.rule, r->rule))
		print_error("rules '%s' pins '%s' dest %s -> %d (%s), verdict '%s' addr '%s'\n",
		            r->rules, r->pins, r->dest, k, strerror(-k), v.rule, v.addr);
	assert_int_equal(k, -r->err);
	assert_int_equal(v.err, r->err);
	assert_non_null(strstr(v.rule, r->rule));
	net_free(n);
}

static void test_bad_sockaddr(void **state)
{
	struct net *n = NULL;
	struct sockaddr_storage ss;
	struct sockaddr_un { sa_family_t f; char p[108]; } un = { AF_UNIX, "/tmp/x" };
	struct net_verdict v;
	socklen_t len;

	assert_int_equal(net_new(&n), 0);
	assert_int_equal(net_finalize(n, NULL), 0);
	assert_int_equal(net_decide(n, (struct sockaddr *)&un, sizeof(un), TCP, &v),
	                 -EAFNOSUPPORT);
	len = test_sockaddr("127.0.0.1:80", &ss);
	assert_int_equal(net_decide(n, (struct sockaddr *)&ss, len - 1, TCP, &v), -EINVAL);
	assert_int_equal(net_decide(n, NULL, 0, TCP, &v), -EINVAL);
	len = test_sockaddr("[::1]:80", &ss);
	/* RFC 2133 sockaddr_in6 without scope id: 24 bytes, accepted as by the kernel */
	assert_int_equal(net_decide(n, (struct sockaddr *)&ss, 24, TCP, &v), -ECONNREFUSED);
	assert_int_equal(net_decide(n, (struct sockaddr *)&ss, 23, TCP, &v), -EINVAL);
	assert_string_equal(v.rule, "malformed address");
	net_free(n);
}

static void test_verdict_addr(void **state)
{
	struct net *n = NULL;
	struct sockaddr_storage ss;
	struct net_verdict v;
	socklen_t len;

	assert_int_equal(net_new(&n), 0);
	assert_int_equal(net_finalize(n, NULL), 0);
	len = test_sockaddr("[::ffff:10.1.2.3]:8443", &ss);
	net_decide(n, (struct sockaddr *)&ss, len, TCP, &v);
	assert_string_equal(v.addr, "10.1.2.3:8443");
	len = test_sockaddr("[2001:db8::1]:53", &ss);
	net_decide(n, (struct sockaddr *)&ss, len, UDP, &v);
	assert_string_equal(v.addr, "[2001:db8::1]:53");
	/* NULL verdict is allowed */
	assert_int_equal(net_decide(n, (struct sockaddr *)&ss, len, UDP, NULL), -ECONNREFUSED);
	net_free(n);
}

static void test_bind(void **state)
{
	struct net *n = NULL;
	struct sockaddr_storage ss;
	struct net_verdict v;
	socklen_t len;

	assert_int_equal(net_new(&n), 0);
	assert_int_equal(test_load(n, "allow-bind 8000-8100; allow-bind udp:0", NULL), 0);
	assert_int_equal(net_finalize(n, NULL), 0);
	len = test_sockaddr("0.0.0.0:8080", &ss);
	assert_int_equal(net_decide_bind(n, (struct sockaddr *)&ss, len, TCP, &v), 0);
	assert_string_equal(v.rule, "allow-bind 8000-8100 (--allow-bind)");
	assert_string_equal(v.addr, "0.0.0.0:8080");
	len = test_sockaddr("127.0.0.1:22", &ss);
	assert_int_equal(net_decide_bind(n, (struct sockaddr *)&ss, len, TCP, &v), -EACCES);
	assert_string_equal(v.rule, "no allow-bind rule covers this port");
	len = test_sockaddr("[::]:0", &ss);
	assert_int_equal(net_decide_bind(n, (struct sockaddr *)&ss, len, UDP, &v), 0);
	assert_int_equal(net_decide_bind(n, (struct sockaddr *)&ss, len, TCP, &v), -EACCES);
	net_free(n);
}

int main(void)
{
	struct CMUnitTest tests[ELEMENTSOF_ROWS + 3];
	char names[ELEMENTSOF_ROWS][96];
	size_t i;

	for (i = 0; i < ELEMENTSOF_ROWS; i++) {
		snprintf(names[i], sizeof(names[i]), "row %zu: %s -> %s", i + 1, rows[i].dest,
		         rows[i].err ? strerror(rows[i].err) : "allowed");
		tests[i] = (struct CMUnitTest)cmocka_unit_test_prestate(check_row, (void *)&rows[i]);
		tests[i].name = names[i];
	}
	tests[i++] = (struct CMUnitTest)cmocka_unit_test(test_bad_sockaddr);
	tests[i++] = (struct CMUnitTest)cmocka_unit_test(test_verdict_addr);
	tests[i++] = (struct CMUnitTest)cmocka_unit_test(test_bind);
	return _cmocka_run_group_tests("net_decide", tests, i, NULL, NULL);
}
