/* SPDX-License-Identifier: MIT */
/*
 * moat's syscall table as OCI seccomp rules, merged into a container's own profile.
 *
 * For each row of the table that moat does not leave native (notify, deny, kill):
 *   - the container refuses the syscall (an unconditional rule that is not an allow, or
 *     no rule and a default action that is not an allow): left as it is, the
 *     container's denial wins;
 *   - the container allows it unconditionally, or by default: moat's action replaces
 *     the allow;
 *   - the container allows it on argument conditions, and refuses it otherwise: a
 *     notify keeps those conditions (the call reaches moat only where the container
 *     would have allowed it); a deny or kill replaces them.
 * libseccomp, which runc and crun hand the profile to, lets an unconditional rule for a
 * syscall swallow every conditional rule for it, whatever their actions. So where the
 * container allows a notified syscall by default (no unconditional rule) and refuses it
 * on argument conditions, no set of rules gives "refused where the container says,
 * notified elsewhere": that profile is refused (an unconditional notify would drop the
 * container's denial, leaving the calls native would bypass moat).
 * sendto is notified only with an address, as in moat's own filter (send() is sendto
 * with none, and the supervisor needs one): two disjoint rules on args[4].
 * Rows moat checks by register values (SC_ARGS: clone's namespace flags, TIOCSTI, ...)
 * are left to the container's profile, whose defaults refuse the same things.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "macros.h"
#include "oci.h"
#include "sc.h"

static bool is_allow(const char *action)
{
	return action && (streq(action, "SCMP_ACT_ALLOW") || streq(action, "SCMP_ACT_LOG"));
}

static bool names_has(json_t *names, const char *name, size_t *ret_index)
{
	size_t i;
	json_t *v;

	json_array_foreach(names, i, v)
		if (json_is_string(v) && streq(json_string_value(v), name)) {
			if (ret_index)
				*ret_index = i;
			return true;
		}
	return false;
}

static bool has_args(json_t *rule)
{
	json_t *a = json_object_get(rule, "args");

	return json_is_array(a) && json_array_size(a) > 0;
}

/* args[4] of sendto (the address) compared with 0 by op, appended to rule's args. */
static void add_addr_cond(json_t *rule, const char *op)
{
	json_t *args = json_object_get(rule, "args");

	if (!json_is_array(args)) {
		args = json_array();
		json_object_set_new(rule, "args", args);
	}
	json_array_append_new(args, json_pack("{s:i,s:i,s:s}", "index", 4, "value", 0, "op", op));
}

/* The bucket rule of moat's for action (and errno), appended on first use. */
static json_t *bucket(json_t *out, const char *action, int err)
{
	size_t i;
	json_t *r, *n;

	json_array_foreach(out, i, r) {
		json_t *e = json_object_get(r, "errnoRet");

		if (streq(json_string_value(json_object_get(r, "action")), action) &&
		    !has_args(r) && (err < 0 || (e && json_integer_value(e) == err)))
			return json_object_get(r, "names");
	}
	r = json_object();
	n = json_array();
	json_object_set_new(r, "names", n);
	json_object_set_new(r, "action", json_string(action));
	if (err >= 0)
		json_object_set_new(r, "errnoRet", json_integer(err));
	json_array_append_new(out, r);
	return n;
}

int oci_seccomp_merge(json_t *config, const char *listener_path, struct moat_error *err)
{
	uint32_t arch = sc_native_arch();
	json_t *linux_, *sc, *rules, *added;
	const char *dflt;
	size_t i;
	json_t *r;

	if (!json_is_object(config))
		return moat_error_set(err, EINVAL, "config.json is not a JSON object");
	linux_ = json_object_get(config, "linux");
	if (!linux_) {
		linux_ = json_object();
		json_object_set_new(config, "linux", linux_);
	}
	sc = json_object_get(linux_, "seccomp");
	if (!json_is_object(sc)) {
		/* No profile: everything is allowed but what moat takes. */
		sc = json_object();
		json_object_set_new(sc, "defaultAction", json_string("SCMP_ACT_ALLOW"));
		json_object_set_new(linux_, "seccomp", sc);
	}
	if (json_object_get(sc, "listenerPath") &&
	    !json_is_null(json_object_get(sc, "listenerPath")))
		return moat_error_set(err, EEXIST, "the container's seccomp profile already has "
				      "a listenerPath (another agent): moat will not take its place");
	dflt = json_string_value(json_object_get(sc, "defaultAction"));
	rules = json_object_get(sc, "syscalls");
	if (!json_is_array(rules)) {
		rules = json_array();
		json_object_set_new(sc, "syscalls", rules);
	}
	added = json_array();
	for (int id = 0; id < _SC_ID_MAX; id++) {
		const struct sc_entry *e = sc_by_id(arch, (enum sc_id)id);
		const char *action;
		bool refused = false, listed = false, uncond_allow = false, cond_refuse = false;
		bool by_addr;
		size_t n_rules = json_array_size(rules);

		if (!e || e->nr < 0)
			continue;
		by_addr = e->id == SC_sendto;
		switch (e->handling) {
		case SC_NOTIFY:
			action = "SCMP_ACT_NOTIFY";
			break;
		case SC_DENY:
			action = "SCMP_ACT_ERRNO";
			break;
		case SC_KILL:
			action = "SCMP_ACT_KILL_PROCESS";
			break;
		default:
			continue;
		}
		for (i = 0; i < n_rules; i++) {
			r = json_array_get(rules, i);
			if (!names_has(json_object_get(r, "names"), e->name, NULL))
				continue;
			listed = true;
			if (!is_allow(json_string_value(json_object_get(r, "action"))) && !has_args(r))
				refused = true;
			else if (!has_args(r))
				uncond_allow = true;
			else if (!is_allow(json_string_value(json_object_get(r, "action"))))
				cond_refuse = true;
		}
		if (refused || (!listed && !is_allow(dflt)))
			continue;
		if (!uncond_allow && is_allow(dflt)) {
			if (cond_refuse && e->handling == SC_NOTIFY) {
				json_decref(added);
				return moat_error_set(err, EINVAL, "the container's seccomp profile "
						      "allows %s by default and refuses it on argument "
						      "conditions: moat cannot add its notify to that "
						      "without dropping the refusal (make the default "
						      "refuse it, or allow it unconditionally)", e->name);
			}
			/* a conditional allow adds nothing to the default */
			uncond_allow = true;
		}
		/* Take the name out of the container's allow rules; a conditional allow
		 * becomes a conditional notify. */
		for (i = 0; i < n_rules; i++) {
			size_t at;
			json_t *names;

			r = json_array_get(rules, i);
			names = json_object_get(r, "names");
			if (!is_allow(json_string_value(json_object_get(r, "action"))) ||
			    !names_has(names, e->name, &at))
				continue;
			json_array_remove(names, at);
			if (has_args(r) && !uncond_allow && e->handling == SC_NOTIFY) {
				json_t *c = json_deep_copy(r);

				json_object_set_new(c, "names", json_pack("[s]", e->name));
				json_object_set_new(c, "action", json_string(action));
				if (by_addr) {
					/* without an address, still the container's allow */
					json_t *a = json_deep_copy(c);

					json_object_set(a, "action", json_object_get(r, "action"));
					add_addr_cond(a, "SCMP_CMP_EQ");
					json_array_append_new(added, a);
					add_addr_cond(c, "SCMP_CMP_NE");
				}
				json_array_append_new(added, c);
			}
		}
		if (by_addr && uncond_allow && e->handling == SC_NOTIFY) {
			json_t *c = json_pack("{s:[s],s:s}", "names", e->name, "action", action);

			add_addr_cond(c, "SCMP_CMP_NE");
			json_array_append_new(added, c);
			/* an allowing default takes the calls without an address; a rule with
			 * the default's action would be refused by libseccomp */
			if (!is_allow(dflt)) {
				c = json_pack("{s:[s],s:s}", "names", e->name, "action",
					      "SCMP_ACT_ALLOW");
				add_addr_cond(c, "SCMP_CMP_EQ");
				json_array_append_new(added, c);
			}
		} else if (uncond_allow || e->handling != SC_NOTIFY) {
			/* Allowed only on conditions: a notify stays under them (above). */
			json_array_append_new(bucket(added, action,
						     e->handling == SC_DENY ? e->deny_errno : -1),
					      json_string(e->name));
		}
	}
	/* Rules left without a name would be refused by the runtime. */
	for (i = json_array_size(rules); i-- > 0;)
		if (!json_array_size(json_object_get(json_array_get(rules, i), "names")))
			json_array_remove(rules, i);
	json_array_foreach(added, i, r)
		if (json_array_size(json_object_get(r, "names")))
			json_array_append(rules, r);
	json_decref(added);
	json_object_set_new(sc, "listenerPath", json_string(listener_path));
	return 0;
}
