/* SPDX-License-Identifier: MIT */
/*
 * oci_seccomp_merge(): moat's rows merged into a container's seccomp profile. The
 * container's denials stay denials; its allows become moat's notify or deny; a
 * conditional allow becomes a conditional notify; a profile that already names a
 * listener is refused, and so is one whose conditional denial libseccomp could not keep
 * next to moat's notify. sendto is notified only with an address.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "error.h"
#include "macros.h"
#include "oci.h"
#include "sc.h"

/* The action the merged profile gives name without arguments: the last unconditional
 * rule that lists it, as a runtime's libseccomp would end up applying, else the
 * default. Rules with args are reported as "args:ACTION". */
static const char *action_of(json_t *config, const char *name, bool *ret_conditional)
{
	json_t *sc = json_object_get(json_object_get(config, "linux"), "seccomp");
	const char *a = json_string_value(json_object_get(sc, "defaultAction"));
	size_t i, k;
	json_t *r, *n;

	*ret_conditional = false;
	json_array_foreach(json_object_get(sc, "syscalls"), i, r)
		json_array_foreach(json_object_get(r, "names"), k, n)
			if (streq(json_string_value(n), name)) {
				json_t *args = json_object_get(r, "args");

				if (json_array_size(args))
					*ret_conditional = true;
				else
					a = json_string_value(json_object_get(r, "action"));
			}
	return a;
}

static json_t *merged(const char *profile)
{
	struct moat_error err = { 0 };
	json_t *c = json_pack("{s:{s:o}}", "linux", "seccomp",
			      profile ? json_loads(profile, 0, NULL) : json_object());

	assert_non_null(c);
	if (!profile)
		json_object_del(json_object_get(c, "linux"), "seccomp");
	assert_int_equal(oci_seccomp_merge(c, "/run/x.sock", &err), 0);
	return c;
}

static void test_no_profile(void **state)
{
	json_t *c = merged(NULL);
	json_t *sc = json_object_get(json_object_get(c, "linux"), "seccomp");
	bool cond;

	(void)state;
	assert_string_equal(json_string_value(json_object_get(sc, "listenerPath")), "/run/x.sock");
	assert_string_equal(action_of(c, "openat", &cond), "SCMP_ACT_NOTIFY");
	assert_string_equal(action_of(c, "connect", &cond), "SCMP_ACT_NOTIFY");
	assert_string_equal(action_of(c, "read", &cond), "SCMP_ACT_ALLOW");
	/* a row moat denies */
	assert_string_equal(action_of(c, "bpf", &cond), "SCMP_ACT_ERRNO");
	json_decref(c);
}

static void test_container_denials_win(void **state)
{
	/* default deny, openat allowed, connect not listed, execve refused by name */
	json_t *c = merged("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
			   "{\"names\":[\"openat\",\"read\"],\"action\":\"SCMP_ACT_ALLOW\"},"
			   "{\"names\":[\"execve\"],\"action\":\"SCMP_ACT_KILL_PROCESS\"}]}");
	bool cond;

	(void)state;
	assert_string_equal(action_of(c, "openat", &cond), "SCMP_ACT_NOTIFY");
	assert_string_equal(action_of(c, "read", &cond), "SCMP_ACT_ALLOW");
	assert_string_equal(action_of(c, "connect", &cond), "SCMP_ACT_ERRNO");
	assert_string_equal(action_of(c, "execve", &cond), "SCMP_ACT_KILL_PROCESS");
	json_decref(c);
}

static void test_conditional_allow(void **state)
{
	/* the container allows socket calls only for AF_UNIX (as an example of a rule with
	 * arguments): connect stays under that condition, now notified */
	json_t *c = merged("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
			   "{\"names\":[\"connect\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":"
			   "[{\"index\":0,\"value\":3,\"op\":\"SCMP_CMP_EQ\"}]}]}");
	json_t *sc = json_object_get(json_object_get(c, "linux"), "seccomp");
	bool cond, notify_conditional = false;
	size_t i;
	json_t *r;

	(void)state;
	/* no unconditional rule: the default (deny) holds where the condition does not */
	assert_string_equal(action_of(c, "connect", &cond), "SCMP_ACT_ERRNO");
	assert_true(cond);
	json_array_foreach(json_object_get(sc, "syscalls"), i, r)
		if (json_array_size(json_object_get(r, "args")) &&
		    streq(json_string_value(json_object_get(r, "action")), "SCMP_ACT_NOTIFY"))
			notify_conditional = true;
		else
			/* the allow is gone: no rule would let connect through unsupervised */
			assert_false(json_array_size(json_object_get(r, "args")) &&
				     streq(json_string_value(json_object_get(r, "action")),
					   "SCMP_ACT_ALLOW"));
	assert_true(notify_conditional);
	json_decref(c);
}

static void test_existing_listener_refused(void **state)
{
	json_t *c = json_pack("{s:{s:{s:s,s:s}}}", "linux", "seccomp", "defaultAction",
			      "SCMP_ACT_ALLOW", "listenerPath", "/other.sock");
	struct moat_error err = { 0 };

	(void)state;
	assert_int_equal(oci_seccomp_merge(c, "/run/x.sock", &err), -EEXIST);
	assert_non_null(strstr(err.msg, "listenerPath"));
	json_decref(c);
}

/* The rules for name with action and a condition on args[4] by op. */
static bool has_addr_rule(json_t *config, const char *name, const char *action, const char *op)
{
	json_t *sc = json_object_get(json_object_get(config, "linux"), "seccomp");
	size_t i, k;
	json_t *r, *a;

	json_array_foreach(json_object_get(sc, "syscalls"), i, r) {
		if (!streq(json_string_value(json_object_get(r, "action")), action) ||
		    !streq(json_string_value(json_array_get(json_object_get(r, "names"), 0)) ?: "",
			   name))
			continue;
		json_array_foreach(json_object_get(r, "args"), k, a)
			if (json_integer_value(json_object_get(a, "index")) == 4 &&
			    streq(json_string_value(json_object_get(a, "op")), op))
				return true;
	}
	return false;
}

static void test_sendto_by_address(void **state)
{
	/* no profile: the default allows send(); sendto with an address is notified */
	json_t *c = merged(NULL);
	bool cond;

	(void)state;
	assert_string_equal(action_of(c, "sendto", &cond), "SCMP_ACT_ALLOW");
	assert_true(cond);
	assert_true(has_addr_rule(c, "sendto", "SCMP_ACT_NOTIFY", "SCMP_CMP_NE"));
	json_decref(c);
	/* a denying default that allows sendto: two disjoint rules, no unconditional one
	 * (it would swallow them) */
	c = merged("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
		   "{\"names\":[\"sendto\",\"read\"],\"action\":\"SCMP_ACT_ALLOW\"}]}");
	assert_string_equal(action_of(c, "sendto", &cond), "SCMP_ACT_ERRNO");
	assert_true(cond);
	assert_true(has_addr_rule(c, "sendto", "SCMP_ACT_NOTIFY", "SCMP_CMP_NE"));
	assert_true(has_addr_rule(c, "sendto", "SCMP_ACT_ALLOW", "SCMP_CMP_EQ"));
	json_decref(c);
}

static void test_allowing_default(void **state)
{
	/* allowed by default, the conditional allow adds nothing: notified unconditionally
	 * (a conditional notify would leave the other calls native) */
	json_t *c = merged("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":["
			   "{\"names\":[\"openat\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":"
			   "[{\"index\":2,\"value\":0,\"op\":\"SCMP_CMP_EQ\"}]}]}");
	bool cond;

	(void)state;
	assert_string_equal(action_of(c, "openat", &cond), "SCMP_ACT_NOTIFY");
	json_decref(c);
}

static void test_conditional_refusal_refused(void **state)
{
	/* allowed by default, refused on a condition: libseccomp cannot keep that refusal
	 * next to an unconditional notify, and leaving openat native would bypass moat */
	json_t *c = json_pack("{s:{s:o}}", "linux", "seccomp",
			      json_loads("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":["
					 "{\"names\":[\"openat\"],\"action\":\"SCMP_ACT_ERRNO\","
					 "\"args\":[{\"index\":2,\"value\":64,\"op\":"
					 "\"SCMP_CMP_MASKED_EQ\",\"valueTwo\":64}]}]}", 0, NULL));
	struct moat_error err = { 0 };

	(void)state;
	assert_int_equal(oci_seccomp_merge(c, "/run/x.sock", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "openat"));
	json_decref(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_profile),
		cmocka_unit_test(test_container_denials_win),
		cmocka_unit_test(test_conditional_allow),
		cmocka_unit_test(test_existing_listener_refused),
		cmocka_unit_test(test_sendto_by_address),
		cmocka_unit_test(test_allowing_default),
		cmocka_unit_test(test_conditional_refusal_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
