/* SPDX-License-Identifier: MIT */
/*
 * Socket addresses as text (net_sockaddr_format / net_sockaddr_parse, the spelling of a
 * destination in audit records that replay reads back) and which destinations count as
 * the sandbox's own loopback (net_sockaddr_is_loopback).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/un.h>
#include <cmocka.h>

#include "net-test.h"

static const char *const round_trip[] = {
	"10.0.0.1:443", "127.0.0.1:53", "0.0.0.0:1", "[::1]:53", "[2001:db8::7]:65535",
	"[::ffff:127.0.0.1]:80",
};

static void test_format_parse(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(round_trip) / sizeof(round_trip[0]); i++) {
		struct sockaddr_storage want, got;
		socklen_t want_len = test_sockaddr(round_trip[i], &want), got_len = 0;
		char text[128];

		assert_true(want_len > 0);
		assert_int_equal(net_sockaddr_parse(round_trip[i], &got, &got_len), 0);
		assert_int_equal(got_len, want_len);
		assert_memory_equal(&got, &want, want_len);
		net_sockaddr_format(&got, got_len, text, sizeof(text));
		assert_string_equal(text, round_trip[i]);
	}
}

static void test_parse_rejects(void **state)
{
	static const char *const bad[] = {
		"unix:/tmp/s", "example.com:80", "10.0.0.1", "10.0.0.1:", "10.0.0.1:65536",
		"10.0.0.1:8x", "::1:53", "[10.0.0.1]:80", "[::1]53", "[::1", ":80", "family 16",
	};
	struct sockaddr_storage ss;
	socklen_t len;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(net_sockaddr_parse(bad[i], &ss, &len), -EINVAL);
}

static void test_format_unix(void **state)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_un *un = (struct sockaddr_un *)&ss;
	socklen_t base = offsetof(struct sockaddr_un, sun_path);
	char text[128];

	(void)state;
	un->sun_family = AF_UNIX;
	strcpy(un->sun_path, "/run/x.sock");
	net_sockaddr_format(&ss, base + 12, text, sizeof(text));
	assert_string_equal(text, "unix:/run/x.sock");
	/* abstract: a leading NUL, the name bounded by the length, not by a NUL */
	memcpy(un->sun_path, "\0abc", 4);
	net_sockaddr_format(&ss, base + 4, text, sizeof(text));
	assert_string_equal(text, "unix:@abc");
	ss.ss_family = AF_NETLINK;
	net_sockaddr_format(&ss, sizeof(ss), text, sizeof(text));
	assert_string_equal(text, "family 16");
}

static void test_loopback(void **state)
{
	static const struct {
		const char *addr;
		bool loopback;
	} rows[] = {
		{ "127.0.0.1:80", true },
		{ "127.3.4.5:80", true },
		{ "0.0.0.0:80", true },         /* connect() sends "this host" to loopback */
		{ "[::1]:80", true },
		{ "[::]:80", true },
		{ "[::ffff:127.0.0.2]:80", true },
		{ "[::ffff:0.0.0.0]:80", true },
		{ "0.1.2.3:80", false },        /* this-network, but not loopback */
		{ "10.0.0.1:80", false },
		{ "[::127.0.0.1]:80", false },  /* IPv4-compatible: the kernel does not loop it */
		{ "[fe80::1]:80", false },
		{ "8.8.8.8:53", false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sockaddr_storage ss;

		assert_true(test_sockaddr(rows[i].addr, &ss) > 0);
		if (net_sockaddr_is_loopback(&ss) != rows[i].loopback)
			fail_msg("%s: expected %s", rows[i].addr,
				 rows[i].loopback ? "loopback" : "not loopback");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_parse),
		cmocka_unit_test(test_parse_rejects),
		cmocka_unit_test(test_format_unix),
		cmocka_unit_test(test_loopback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
