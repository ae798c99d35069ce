/* SPDX-License-Identifier: MIT */
/*
 * Decisions for connect/sendto/sendmsg destinations and for bind. Runs on the hot path:
 * no allocation, no syscall beyond an uncontended rwlock.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "macros.h"
#include "net-internal.h"

static void verdict_set(struct net_verdict *v, int err, const char *fmt, ...)
	_printf_(3, 4);

static void verdict_set(struct net_verdict *v, int err, const char *fmt, ...)
{
	va_list ap;

	if (!v)
		return;
	v->err = -err;
	va_start(ap, fmt);
	vsnprintf(v->rule, sizeof(v->rule), fmt, ap);
	va_end(ap);
}

static void format_dest(const struct net_ip *ip, uint16_t port, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	net__format_ip(ip, a, sizeof(a));
	snprintf(buf, len, ip->family == AF_INET6 ? "[%s]:%u" : "%s:%u", a, port);
}

static bool rule_applies(const struct net_rule *r, int type, uint16_t port)
{
	return (r->proto == 0 || r->proto == type) && port >= r->port_lo && port <= r->port_hi;
}

/* Caller holds the pin lock (shared). */
static bool pinned_to_rule(const struct net_pins *p, const struct net_rule *r,
                           const struct net_ip *ip)
{
	for (uint32_t i = p->bucket[net__pin_bucket(ip)]; i != NET_PIN_NONE; i = p->v[i].next)
		if (net__ip_eq(&p->v[i].ip, ip) && net__rule_matches_name(r, p->v[i].name))
			return true;
	return false;
}

static bool is_host_addr(const struct net *n, const struct net_ip *ip)
{
	for (size_t i = 0; i < n->n_host_addrs; i++)
		if (net__ip_eq(&n->host_addrs[i], ip))
			return true;
	return false;
}

/*
 * Does allow rule r let ip of class c through? matched says whether the rule named the
 * destination at all, so that a refusal can name the rule that fell short.
 */
static bool allow_reaches(const struct net_pins *p, const struct net_rule *r,
                          const struct net_ip *ip, enum net_class c, bool *matched)
{
	bool exact;

	switch (r->host) {
	case NET_HOST_ADDR:
		*matched = net__prefix_contains(&r->ip, r->prefix, ip);
		exact = r->prefix == net__ip_bits(&r->ip);
		if (c == NET_CLASS_METADATA)
			return *matched && exact;
		if (c == NET_CLASS_LOCAL)
			return *matched && (exact || r->inside_local);
		return *matched;
	case NET_HOST_NAME:
		*matched = pinned_to_rule(p, r, ip);
		return *matched && c != NET_CLASS_METADATA;
	case NET_HOST_WILDCARD:
		*matched = pinned_to_rule(p, r, ip);
		return *matched && c == NET_CLASS_PUBLIC;
	case NET_HOST_ANY:
	default:
		*matched = true;
		return c == NET_CLASS_PUBLIC;
	}
}

static bool deny_matches(const struct net_pins *p, const struct net_rule *r,
                         const struct net_ip *ip)
{
	switch (r->host) {
	case NET_HOST_ADDR:
		return net__prefix_contains(&r->ip, r->prefix, ip);
	case NET_HOST_NAME:
	case NET_HOST_WILDCARD:
		/* An address shared by an allowed and a denied name (a CDN) is denied: deny
		 * wins, and the address alone cannot say which name the program meant. */
		return pinned_to_rule(p, r, ip);
	case NET_HOST_ANY:
	default:
		return true;
	}
}

_public_ int net_decide(const struct net *n, const struct sockaddr *sa, socklen_t len,
                        int sock_type, struct net_verdict *v)
{
	const struct net_rule *allow = NULL, *short_of = NULL, *deny = NULL;
	struct net_pins *p = n->pins;
	struct net_ip ip;
	uint16_t port;
	const char *what;
	enum net_class c;
	int type = sock_type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	int k;

	if (v) {
		v->err = 0;
		v->rule[0] = v->addr[0] = '\0';
	}
	k = net__from_sockaddr(sa, len, true, &ip, &port);
	if (k < 0) {
		verdict_set(v, k, k == -EAFNOSUPPORT ? "not an IP address" : "malformed address");
		return k;
	}
	if (v)
		format_dest(&ip, port, v->addr, sizeof(v->addr));
	if (type != SOCK_STREAM && type != SOCK_DGRAM) {
		verdict_set(v, -EACCES, "only TCP and UDP sockets may reach the network");
		return -EACCES;
	}

	c = net__classify(&ip, &what);
	if (c == NET_CLASS_PUBLIC && is_host_addr(n, &ip)) {
		c = NET_CLASS_LOCAL;
		what = "host";
	}

	pthread_rwlock_rdlock(&p->lock);
	for (size_t i = 0; i < n->n_rules && !deny; i++) {
		const struct net_rule *r = &n->rules[i];

		if (r->kind == NET_RULE_DENY && rule_applies(r, type, port) &&
		    deny_matches(p, r, &ip))
			deny = r;
	}
	for (size_t i = 0; i < n->n_rules && !deny && !allow; i++) {
		const struct net_rule *r = &n->rules[i];
		bool matched = false;

		if (r->kind != NET_RULE_ALLOW || !rule_applies(r, type, port))
			continue;
		if (allow_reaches(p, r, &ip, c, &matched))
			allow = r;
		else if (matched && !short_of)
			short_of = r;
	}
	pthread_rwlock_unlock(&p->lock);

	if (deny) {
		verdict_set(v, -EACCES, "deny-net %s (%s)", deny->text, deny->origin);
		return -EACCES;
	}
	if (allow) {
		verdict_set(v, 0, "allow-net %s (%s)", allow->text, allow->origin);
		return 0;
	}
	if (c == NET_CLASS_METADATA) {
		verdict_set(v, -EACCES, "%s is always denied", what);
		return -EACCES;
	}
	if (short_of) {
		verdict_set(v, -EACCES,
		            "allow-net %s (%s) does not reach %s addresses: name the IP or the exact host",
		            short_of->text, short_of->origin, what);
		return -EACCES;
	}
	verdict_set(v, -ECONNREFUSED, "no rule allows this destination");
	return -ECONNREFUSED;
}

_public_ int net_decide_bind(const struct net *n, const struct sockaddr *sa, socklen_t len,
                             int sock_type, struct net_verdict *v)
{
	int type = sock_type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct net_ip ip;
	uint16_t port;
	int k;

	if (v) {
		v->err = 0;
		v->rule[0] = v->addr[0] = '\0';
	}
	k = net__from_sockaddr(sa, len, false, &ip, &port);
	if (k < 0) {
		verdict_set(v, k, k == -EAFNOSUPPORT ? "not an IP address" : "malformed address");
		return k;
	}
	if (v)
		format_dest(&ip, port, v->addr, sizeof(v->addr));
	for (size_t i = 0; i < n->n_rules; i++) {
		const struct net_rule *r = &n->rules[i];

		if (r->kind == NET_RULE_BIND && rule_applies(r, type, port)) {
			verdict_set(v, 0, "allow-bind %s (%s)", r->text, r->origin);
			return 0;
		}
	}
	verdict_set(v, -EACCES, "no allow-bind rule covers this port");
	return -EACCES;
}
