/* SPDX-License-Identifier: MIT */
/*
 * Directive parsing (accepted syntax, canonical form, error messages), canonical JSON,
 * net_name_allowed(), net_allows_any() and pinning of the names in the rules.
 */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "error.h"
#include "net-test.h"

#define streq(a, b) (strcmp((a), (b)) == 0)

/* One directive into a fresh net; returns its result and the message. */
static int add_one(const char *word, const char *arg, struct moat_error *err)
{
	struct net *n = NULL;
	int k;

	assert_int_equal(net_new(&n), 0);
	k = net_add_directive(n, word, arg, "policy.moat:3", err);
	net_free(n);
	return k;
}

struct bad {
	const char *word, *arg, *msg;
};

static const struct bad bad_rows[] = {
	{ "allow-net", "", "allow-net takes one destination" },
	{ "allow-net", "a.example:80 b.example:80", "takes one destination" },
	{ "allow-net", "example.com", "a name needs ports, as in example.com:443" },
	{ "allow-net", "127.0.0.1:0", "bad port '0': expected N, N-M or * with N in 1..65535" },
	{ "allow-net", "127.0.0.1:70000", "bad port '70000'" },
	{ "allow-net", "127.0.0.1:+80", "bad port '+80'" },
	{ "allow-net", "127.0.0.1:", "bad port ''" },
	{ "allow-net", "127.0.0.1:90-80", "port range '90-80' runs backwards" },
	{ "allow-net", "10.0.0.0/33", "bad prefix length in '10.0.0.0/33': 0..32" },
	{ "allow-net", "[::1/129]:80", "bad prefix length" },
	{ "allow-net", "10.0.0.0/:80", "bad prefix length" },
	{ "allow-net", "10.0.0.0/-1:80", "bad prefix length" },
	{ "allow-net", "[::1:80", "missing ']'" },
	{ "allow-net", "[127.0.0.1]:80", "brackets are for IPv6" },
	{ "allow-net", "[::1]80", "expected ':PORT' after ']'" },
	{ "allow-net", ":80", "missing host" },
	{ "allow-net", "bad_name!:80", "'bad_name!' is not a host name" },
	{ "allow-net", "*.*.example.com:80", "is not a host name" },
	{ "allow-net", "foo.*.com:80", "is not a host name" },
	{ "allow-net", "300.1.1.1:80", "'300.1.1.1' is not a host name" },
	{ "allow-net", "127.1:80", "'127.1' is not a host name" },
	{ "allow-net", "a..b:80", "is not a host name" },
	{ "allow-net", "1.2.3.4/8/8:80", "bad prefix length in '1.2.3.4/8/8'" },
	{ "deny-net", "256.0.0.0/8", "not an IP address" },
	{ "allow-bind", "http", "allow-bind http: bad port 'http'" },
	{ "allow-bind", "tcp:", "bad port 'tcp:'" },
};

static void test_bad_directives(void **state)
{
	for (size_t i = 0; i < sizeof(bad_rows) / sizeof(bad_rows[0]); i++) {
		const struct bad *b = &bad_rows[i];
		struct moat_error err = { 0 };
		int k = add_one(b->word, b->arg, &err);

		if (k != -EINVAL || !strstr(err.msg, b->msg))
			print_error("%s '%s' -> %d '%s', want '%s'\n", b->word, b->arg, k, err.msg,
			            b->msg);
		assert_int_equal(k, -EINVAL);
		assert_int_equal(err.err, EINVAL);
		assert_non_null(strstr(err.msg, b->msg));
	}
}

static void test_message_names_directive(void **state)
{
	struct moat_error err = { 0 };

	assert_int_equal(add_one("allow-net", "127.0.0.1:99999", &err), -EINVAL);
	assert_string_equal(moat_error_str(&err), "allow-net 127.0.0.1:99999: bad port '99999': "
	                                          "expected N, N-M or * with N in 1..65535");
	/* no error struct at all is fine too: the errno alone */
	assert_int_equal(add_one("allow-net", "127.0.0.1:99999", NULL), -EINVAL);
}

static void test_unknown_word(void **state)
{
	struct moat_error err = { .err = 0, .msg = "untouched" };
	struct net *n = NULL;

	assert_int_equal(net_new(&n), 0);
	assert_int_equal(net_add_directive(n, "ro-bind", "/usr", "x", &err), -ENOENT);
	assert_int_equal(net_add_directive(n, "allow-netx", "1.2.3.4", "x", &err), -ENOENT);
	assert_int_equal(err.err, 0);
	assert_string_equal(err.msg, "untouched");
	net_free(n);
}

static void test_frozen(void **state)
{
	struct moat_error err = { 0 };
	struct net *n = NULL;

	assert_int_equal(net_new(&n), 0);
	assert_int_equal(net_set_host_addrs(n, NULL, 0), 0);
	assert_int_equal(net_finalize(n, &err), 0);
	assert_int_equal(net_add_directive(n, "allow-net", "1.2.3.4", "x", &err), -EBUSY);
	assert_int_equal(err.err, EBUSY);
	assert_non_null(strstr(err.msg, "frozen"));
	net_free(n);
	assert_null(net_free(NULL));
}

struct good {
	const char *word, *arg, *canonical;
};

static const struct good good_rows[] = {
	{ "allow-net", "example.com:443", "example.com:443" },
	{ "allow-net", "Example.COM.:443", "example.com:443" },
	{ "allow-net", "localhost:*", "localhost:*" },
	{ "allow-net", "*.Example.com:443", "*.example.com:443" },
	{ "allow-net", "*:443", "*:443" },
	{ "allow-net", "TCP:api.example.com:8000-8010", "tcp:api.example.com:8000-8010" },
	{ "allow-net", "udp:192.0.2.1:53", "udp:192.0.2.1:53" },
	{ "allow-net", "192.0.2.1", "192.0.2.1:*" },
	{ "allow-net", "192.0.2.1/32:80", "192.0.2.1:80" },
	{ "allow-net", "10.9.8.7/8", "10.0.0.0/8:*" },
	{ "allow-net", "0.0.0.0/0:443", "0.0.0.0/0:443" },
	{ "allow-net", "0.0.0.0:80", "127.0.0.1:80" },
	{ "allow-net", "[::1]:80", "[::1]:80" },
	{ "allow-net", "[::]:80", "[::1]:80" },
	{ "allow-net", "[fd00::/8]:*", "[fd00::/8]:*" },
	{ "allow-net", "fd00::/8", "[fd00::/8]:*" },
	{ "allow-net", "2001:DB8::1", "[2001:db8::1]:*" },
	{ "allow-net", "[::ffff:10.0.0.0/104]:22", "10.0.0.0/8:22" },
	{ "allow-net", "[::ffff:127.0.0.1]:80", "127.0.0.1:80" },
	{ "allow-net", " 127.0.0.1:80", "127.0.0.1:80" },
	{ "deny-net", "udp:[2001:db8::/32]:1-1024", "udp:[2001:db8::/32]:1-1024" },
	{ "allow-bind", "8080", "8080" },
	{ "allow-bind", "udp:0-1023", "udp:0-1023" },
	{ "allow-bind", "*", "*" },
};

/* The JSON array a directive lands in. */
static const char *json_key(const char *word)
{
	return streq(word, "allow-net") ? "allow" : streq(word, "deny-net") ? "deny" : "bind";
}

static void test_good_directives(void **state)
{
	for (size_t i = 0; i < sizeof(good_rows) / sizeof(good_rows[0]); i++) {
		const struct good *g = &good_rows[i];
		struct net *n = NULL;
		struct moat_error err = { 0 };
		json_t *j, *arr, *o;

		int k;

		assert_int_equal(net_new(&n), 0);
		k = net_add_directive(n, g->word, g->arg, "cli", &err);
		if (k != 0)
			print_error("%s '%s': %s\n", g->word, g->arg, moat_error_str(&err));
		assert_int_equal(k, 0);
		j = net_to_json(n);
		assert_non_null(j);
		arr = json_object_get(j, json_key(g->word));
		assert_int_equal(json_array_size(arr), 1);
		o = json_array_get(arr, 0);
		if (!streq(json_string_value(json_object_get(o, "dest")), g->canonical))
			print_error("%s '%s' -> '%s', want '%s'\n", g->word, g->arg,
			            json_string_value(json_object_get(o, "dest")), g->canonical);
		assert_string_equal(json_string_value(json_object_get(o, "dest")), g->canonical);
		json_decref(j);
		net_free(n);
	}
}

static void test_json(void **state)
{
	struct net *n = NULL;
	json_t *j;
	char *s;

	assert_int_equal(net_new(&n), 0);
	assert_int_equal(test_load(n, "allow-net tcp:10.1.0.0/16:22; deny-net *.ads.example:*;"
	                              "allow-net localhost:8080; allow-bind udp:5353", NULL), 0);
	j = net_to_json(n);
	assert_non_null(j);
	s = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
	assert_string_equal(s,
		"{\"allow\":["
		"{\"dest\":\"tcp:10.1.0.0/16:22\",\"origin\":\"--allow-net\",\"port_max\":22,"
		"\"port_min\":22,\"prefix\":\"10.1.0.0/16\",\"proto\":\"tcp\"},"
		"{\"dest\":\"localhost:8080\",\"name\":\"localhost\",\"origin\":\"--allow-net\","
		"\"port_max\":8080,\"port_min\":8080,\"proto\":\"any\"}],"
		"\"bind\":[{\"dest\":\"udp:5353\",\"origin\":\"--allow-bind\",\"port_max\":5353,"
		"\"port_min\":5353,\"proto\":\"udp\"}],"
		"\"deny\":[{\"dest\":\"*.ads.example:*\",\"origin\":\"--deny-net\",\"port_max\":65535,"
		"\"port_min\":0,\"proto\":\"any\",\"suffix\":\"ads.example\"}]}");
	free(s);
	json_decref(j);
	net_free(n);
}

static void test_name_allowed(void **state)
{
	struct net *n = NULL;

	assert_int_equal(net_new(&n), 0);
	assert_int_equal(test_load(n, "allow-net api.example.com:443; allow-net *.cdn.example:*;"
	                              "deny-net *.evil.cdn.example:*; allow-net *.mixed.example:*;"
	                              "deny-net tcp:x.mixed.example:80; allow-net 10.0.0.1", NULL),
	                 0);
	assert_true(net_name_allowed(n, "api.example.com"));
	assert_true(net_name_allowed(n, "API.Example.COM."));
	assert_false(net_name_allowed(n, "example.com"));
	assert_false(net_name_allowed(n, "xapi.example.com"));
	assert_false(net_name_allowed(n, "api.example.com.evil"));
	assert_true(net_name_allowed(n, "a.cdn.example"));
	assert_true(net_name_allowed(n, "a.b.cdn.example"));
	assert_false(net_name_allowed(n, "cdn.example"));
	assert_false(net_name_allowed(n, "acdn.example"));
	assert_false(net_name_allowed(n, "x.evil.cdn.example"));
	/* a deny on one port leaves the name resolvable for the others */
	assert_true(net_name_allowed(n, "x.mixed.example"));
	assert_false(net_name_allowed(n, "10.0.0.1"));
	assert_false(net_name_allowed(n, ""));
	assert_false(net_name_allowed(n, "a\\.cdn.example"));
	assert_false(net_name_allowed(n, "a..cdn.example"));
	net_free(n);

	assert_int_equal(net_new(&n), 0);
	assert_int_equal(test_load(n, "allow-net *:443", NULL), 0);
	assert_true(net_name_allowed(n, "anything.example"));
	net_free(n);
}

/* net_allows_any() of a net loaded with rules. */
static bool allows_any(const char *rules)
{
	struct net *n = NULL;
	bool any;

	assert_int_equal(net_new(&n), 0);
	assert_int_equal(test_load(n, rules, NULL), 0);
	any = net_allows_any(n);
	net_free(n);
	return any;
}

/* Whether a socket of the sandbox's may ever be made host-side: any allow or bind rule
 * says yes, deny rules alone say no. */
static void test_allows_any(void **state)
{
	(void)state;
	assert_false(net_allows_any(NULL));
	assert_false(allows_any(""));
	assert_false(allows_any("deny-net 10.0.0.0/8; deny-net *.evil.example:*"));
	assert_true(allows_any("deny-net 10.0.0.0/8; allow-net 127.0.0.1:9"));
	assert_true(allows_any("allow-bind 8080"));
}

struct fake {
	int calls;
	char last[256];
};

static int fake_lookup(void *ud, const char *name, int family, struct net_ip *ret, size_t max)
{
	struct fake *f = ud;

	f->calls++;
	snprintf(f->last, sizeof(f->last), "%s", name);
	if (streq(name, "missing.example"))
		return -ENOENT;
	if (max < 2)
		return -ENOBUFS;
	ret[0] = test_ip("192.0.2.10");
	ret[1] = test_ip("2001:db8::10");
	return 2;
}

static void test_resolve_rules(void **state)
{
	struct net *n = NULL;
	struct fake f = { 0 };
	struct sockaddr_storage ss;
	struct moat_error err = { 0 };
	socklen_t len;

	assert_int_equal(net_new(&n), 0);
	net_set_lookup(n, fake_lookup, &f);
	assert_int_equal(test_load(n, "allow-net api.example:443; allow-net api.example:80;"
	                              "allow-net *.wild.example:443; allow-net missing.example:1;"
	                              "allow-net 192.0.2.99", NULL), 0);
	assert_int_equal(net_set_host_addrs(n, NULL, 0), 0);
	assert_int_equal(net_finalize(n, NULL), 0);
	assert_int_equal(net_resolve_rules(n, &err), 1);
	assert_string_equal(err.msg, "missing.example: no such name");
	/* exact names only, each once; wildcards and addresses are never looked up */
	assert_int_equal(f.calls, 2);

	len = test_sockaddr("192.0.2.10:443", &ss);
	assert_int_equal(net_decide(n, (struct sockaddr *)&ss, len, SOCK_STREAM, NULL), 0);
	len = test_sockaddr("[2001:db8::10]:80", &ss);
	assert_int_equal(net_decide(n, (struct sockaddr *)&ss, len, SOCK_STREAM, NULL), 0);
	len = test_sockaddr("192.0.2.10:22", &ss);
	assert_int_equal(net_decide(n, (struct sockaddr *)&ss, len, SOCK_STREAM, NULL),
	                 -ECONNREFUSED);
	net_free(n);
}

/* The real resolver: localhost comes from /etc/hosts (or glibc's built-in). */
static void test_resolve_localhost(void **state)
{
	struct net *n = NULL;
	struct sockaddr_storage ss;
	struct net_verdict v;
	struct moat_error err = { 0 };
	socklen_t len;

	assert_int_equal(net_new(&n), 0);
	assert_int_equal(test_load(n, "allow-net localhost:8080; allow-net example.invalid:443",
	                           NULL), 0);
	assert_int_equal(net_finalize(n, &err), 0);
	assert_int_equal(net_resolve_rules(n, &err), 1);
	assert_non_null(strstr(err.msg, "example.invalid"));
	len = test_sockaddr("127.0.0.1:8080", &ss);
	assert_int_equal(net_decide(n, (struct sockaddr *)&ss, len, SOCK_STREAM, &v), 0);
	assert_string_equal(v.rule, "allow-net localhost:8080 (--allow-net)");
	/* example.invalid:443 must not open loopback */
	len = test_sockaddr("127.0.0.1:443", &ss);
	assert_int_equal(net_decide(n, (struct sockaddr *)&ss, len, SOCK_STREAM, &v),
	                 -ECONNREFUSED);
	net_free(n);
}

static void test_pin_limits(void **state)
{
	struct net *n = NULL;
	struct net_ip ip = test_ip("192.0.2.1");

	assert_int_equal(net_new(&n), 0);
	assert_int_equal(net_pin(n, "bad name", &ip, 1), -EINVAL);
	assert_int_equal(net_pin(n, "", &ip, 1), -EINVAL);
	/* duplicates do not grow the table, so the limit below counts distinct pins */
	for (int i = 0; i < 100; i++)
		assert_int_equal(net_pin(n, "a.example", &ip, 1), 0);
	for (unsigned i = 0;; i++) {
		char name[32];
		int k;

		struct net_ip other = ip;

		/* distinct addresses, so the test measures the limit, not one long chain */
		other.bytes[2] = (uint8_t)(i >> 8);
		other.bytes[3] = (uint8_t)i;
		snprintf(name, sizeof(name), "h%u.example", i);
		k = net_pin(n, name, &other, 1);
		if (k == -ENOSPC) {
			assert_true(i > 1000);
			break;
		}
		assert_int_equal(k, 0);
		assert_true(i < 1000000);
	}
	net_free(n);
}

/* finalize reads the host's addresses when none were given: loopback is among them */
static void test_finalize_ifaddrs(void **state)
{
	struct net *n = NULL;
	struct sockaddr_storage ss;
	struct net_verdict v;
	socklen_t len;

	assert_int_equal(net_new(&n), 0);
	assert_int_equal(test_load(n, "allow-net *:80", NULL), 0);
	assert_int_equal(net_finalize(n, NULL), 0);
	len = test_sockaddr("127.0.0.1:80", &ss);
	assert_int_equal(net_decide(n, (struct sockaddr *)&ss, len, SOCK_STREAM, &v), -EACCES);
	net_free(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_directives),
		cmocka_unit_test(test_message_names_directive),
		cmocka_unit_test(test_unknown_word),
		cmocka_unit_test(test_frozen),
		cmocka_unit_test(test_good_directives),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_name_allowed),
		cmocka_unit_test(test_allows_any),
		cmocka_unit_test(test_resolve_rules),
		cmocka_unit_test(test_resolve_localhost),
		cmocka_unit_test(test_pin_limits),
		cmocka_unit_test(test_finalize_ifaddrs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
