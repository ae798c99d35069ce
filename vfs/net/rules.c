/* SPDX-License-Identifier: MIT */
/*
 * The rule set: the net handle, directive parsing, canonical JSON, names and pins.
 */
#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cleanup.h"
#include "error.h"
#include "hash.h"
#include "macros.h"
#include "net-internal.h"

_public_ int net_new(struct net **ret)
{
	_cleanup_free_ struct net *n = calloc(1, sizeof(*n));

	if (!n)
		return -ENOMEM;
	n->pins = calloc(1, sizeof(*n->pins));
	if (!n->pins)
		return -ENOMEM;
	for (size_t i = 0; i < NET_PIN_BUCKETS; i++)
		n->pins->bucket[i] = NET_PIN_NONE;
	if (pthread_rwlock_init(&n->pins->lock, NULL) != 0) {
		free(n->pins);
		return -ENOMEM;
	}
	n->lookup = net_lookup_getaddrinfo;
	*ret = TAKE_PTR(n);
	return 0;
}

static void rule_done(struct net_rule *r)
{
	free(r->name);
	free(r->text);
	free(r->origin);
}

_public_ struct net *net_free(struct net *n)
{
	if (!n)
		return NULL;
	for (size_t i = 0; i < n->n_rules; i++)
		rule_done(&n->rules[i]);
	free(n->rules);
	free(n->host_addrs);
	if (n->pins) {
		for (size_t i = 0; i < n->pins->n; i++)
			free(n->pins->v[i].name);
		free(n->pins->v);
		pthread_rwlock_destroy(&n->pins->lock);
		free(n->pins);
	}
	free(n);
	return NULL;
}

/*
 * Lowercase, drop one trailing dot, and accept only what a hostname may hold (letters,
 * digits, '-', '_' for SRV-style labels; labels of 1..63, 253 in all). Anything else would
 * be a second spelling of some name, and two spellings of one name defeat an allowlist.
 */
int net__normalize_name(const char *in, char *out, size_t outlen)
{
	size_t len = strlen(in), label = 0;

	if (len > 0 && in[len - 1] == '.')
		len--;
	if (len == 0 || len > 253 || len >= outlen)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];

		if (c == '.') {
			if (label == 0)
				return -EINVAL;
			label = 0;
		} else if (isascii(c) && (isalnum(c) || c == '-' || c == '_')) {
			if (++label > 63)
				return -EINVAL;
		} else {
			return -EINVAL;
		}
		out[i] = (char)tolower(c);
	}
	if (label == 0)
		return -EINVAL;
	out[len] = '\0';
	return 0;
}

bool net__rule_matches_name(const struct net_rule *r, const char *lname)
{
	size_t nl, sl;

	switch (r->host) {
	case NET_HOST_NAME:
		return streq(r->name, lname);
	case NET_HOST_WILDCARD:
		nl = strlen(lname);
		sl = strlen(r->name);
		return nl > sl + 1 && lname[nl - sl - 1] == '.' && streq(lname + nl - sl, r->name);
	case NET_HOST_ANY:
		return true;
	case NET_HOST_ADDR:
	default:
		return false;
	}
}

/* Decimal 1..65535 (0 only when allow_zero): no sign, no spaces, no hex. */
static int parse_port(const char *s, size_t len, bool allow_zero, uint16_t *ret)
{
	unsigned long v = 0;

	if (len == 0 || len > 5)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v > 65535 || (v == 0 && !allow_zero))
		return -EINVAL;
	*ret = (uint16_t)v;
	return 0;
}

static int parse_ports(const char *s, bool allow_zero, struct net_rule *r,
                       struct moat_error *e)
{
	const char *dash;

	if (streq(s, "*")) {
		r->port_lo = 0;
		r->port_hi = 65535;
		return 0;
	}
	dash = strchr(s, '-');
	if (!dash) {
		if (parse_port(s, strlen(s), allow_zero, &r->port_lo) < 0)
			goto bad;
		r->port_hi = r->port_lo;
		return 0;
	}
	if (parse_port(s, (size_t)(dash - s), allow_zero, &r->port_lo) < 0 ||
	    parse_port(dash + 1, strlen(dash + 1), allow_zero, &r->port_hi) < 0)
		goto bad;
	if (r->port_lo > r->port_hi)
		return moat_error_set(e, EINVAL, "port range '%s' runs backwards", s);
	return 0;
bad:
	return moat_error_set(e, EINVAL, "bad port '%s': expected N, N-M or * with N in %d..65535",
	                      s, allow_zero ? 0 : 1);
}

static int parse_addr_host(const char *s, struct net_rule *r, struct moat_error *e)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *slash = strchr(s, '/');
	unsigned long prefix;
	char *end;

	if (strlen(s) >= sizeof(buf))
		return moat_error_set(e, EINVAL, "'%s' is not an IP address", s);
	memcpy(buf, s, strlen(s) + 1);
	if (slash)
		buf[slash - s] = '\0';
	if (net__parse_ip(buf, &r->ip) < 0)
		return moat_error_set(e, EINVAL, "'%s' is not an IP address", buf);
	r->prefix = net__ip_bits(&r->ip);
	if (slash) {
		errno = 0;
		if (!isdigit((unsigned char)slash[1]))
			return moat_error_set(e, EINVAL, "bad prefix length in '%s'", s);
		prefix = strtoul(slash + 1, &end, 10);
		if (*end || errno || prefix > r->prefix)
			return moat_error_set(e, EINVAL, "bad prefix length in '%s': 0..%u", s, r->prefix);
		r->prefix = (unsigned)prefix;
	}
	net__normalize_prefix(&r->ip, &r->prefix);
	net__mask(&r->ip, r->prefix);
	r->host = NET_HOST_ADDR;
	r->inside_local = net__prefix_inside_local(&r->ip, r->prefix);
	return 0;
}

static bool tld_is_numeric(const char *name)
{
	const char *tld = strrchr(name, '.');

	tld = tld ? tld + 1 : name;
	return strspn(tld, "0123456789") == strlen(tld);
}

static int parse_name_host(const char *s, struct net_rule *r, struct moat_error *e)
{
	char name[NET_DNS_NAME_MAX];

	if (streq(s, "*")) {
		r->host = NET_HOST_ANY;
		return 0;
	}
	if (strncmp(s, "*.", 2) == 0) {
		r->host = NET_HOST_WILDCARD;
		s += 2;
	} else {
		r->host = NET_HOST_NAME;
	}
	/* No top-level domain is all digits (RFC 3696 §2): such a "name" is a mistyped or
	 * shorthand address (300.1.1.1, 127.1), which getaddrinfo might read as an IP. */
	if (net__normalize_name(s, name, sizeof(name)) < 0 || tld_is_numeric(name))
		return moat_error_set(e, EINVAL,
		            "'%s' is not a host name, an IP address or '*.domain' (IPv6 with a port "
		            "goes in brackets: [::1]:80)", s);
	r->name = strdup(name);
	return r->name ? 0 : -ENOMEM;
}

static const char *proto_prefix(int proto)
{
	return proto == SOCK_STREAM ? "tcp:" : proto == SOCK_DGRAM ? "udp:" : "";
}

static int canonical_text(struct net_rule *r)
{
	char host[INET6_ADDRSTRLEN + 8] = "", ports[16];
	int k;

	if (r->port_lo == 0 && r->port_hi == 65535)
		snprintf(ports, sizeof(ports), "*");
	else if (r->port_lo == r->port_hi)
		snprintf(ports, sizeof(ports), "%u", r->port_lo);
	else
		snprintf(ports, sizeof(ports), "%u-%u", r->port_lo, r->port_hi);

	if (r->kind == NET_RULE_BIND) {
		k = asprintf(&r->text, "%s%s", proto_prefix(r->proto), ports);
		return k < 0 ? -ENOMEM : 0;
	}
	if (r->host == NET_HOST_ADDR) {
		char ip[INET6_ADDRSTRLEN];

		net__format_ip(&r->ip, ip, sizeof(ip));
		if (r->prefix == net__ip_bits(&r->ip))
			snprintf(host, sizeof(host), r->ip.family == AF_INET6 ? "[%s]" : "%s", ip);
		else
			snprintf(host, sizeof(host), r->ip.family == AF_INET6 ? "[%s/%u]" : "%s/%u", ip,
			         r->prefix);
	}
	k = asprintf(&r->text, "%s%s%s:%s", proto_prefix(r->proto),
	             r->host == NET_HOST_WILDCARD ? "*." : r->host == NET_HOST_ANY ? "*" : "",
	             r->host == NET_HOST_ADDR ? host : r->name ? r->name : "", ports);
	return k < 0 ? -ENOMEM : 0;
}

/* Leading "tcp:"/"udp:" selects the protocol; everything else is the destination. */
static const char *parse_proto(const char *s, struct net_rule *r)
{
	if (strncasecmp(s, "tcp:", 4) == 0 && s[4]) {
		r->proto = SOCK_STREAM;
		return s + 4;
	}
	if (strncasecmp(s, "udp:", 4) == 0 && s[4]) {
		r->proto = SOCK_DGRAM;
		return s + 4;
	}
	return s;
}

static int parse_dest(const char *arg, struct net_rule *r, struct moat_error *e)
{
	_cleanup_free_ char *buf = NULL;
	const char *s = parse_proto(arg, r);
	char *host, *ports = NULL, *colon;
	int k;

	buf = strdup(s);
	if (!buf)
		return -ENOMEM;
	host = buf;

	if (host[0] == '[') {
		char *close = strchr(host, ']');

		if (!close)
			return moat_error_set(e, EINVAL, "'%s': missing ']'", arg);
		*close = '\0';
		host++;
		if (close[1] == ':')
			ports = close + 2;
		else if (close[1] != '\0')
			return moat_error_set(e, EINVAL, "'%s': expected ':PORT' after ']'", arg);
		if (!strchr(host, ':'))
			return moat_error_set(e, EINVAL, "'%s': brackets are for IPv6 addresses", arg);
	} else if ((colon = strchr(host, ':')) && strchr(colon + 1, ':')) {
		/* Two colons or more and no brackets: a bare IPv6 address, every port. */
	} else if (colon) {
		*colon = '\0';
		ports = colon + 1;
	}

	if (host[0] == '\0')
		return moat_error_set(e, EINVAL, "'%s': missing host", arg);
	if (ports && parse_ports(ports, false, r, e) < 0)
		return -EINVAL;
	if (!ports) {
		r->port_lo = 0;
		r->port_hi = 65535;
	}

	if (net__parse_ip(host, &(struct net_ip){ 0 }) == 0 || strchr(host, '/') ||
	    strchr(host, ':')) {
		k = parse_addr_host(host, r, e);
		if (k < 0)
			return k;
	} else {
		k = parse_name_host(host, r, e);
		if (k < 0)
			return k;
		/* A name without a port is most likely a typo for NAME:PORT; say so. */
		if (!ports)
			return moat_error_set(e, EINVAL, "'%s': a name needs ports, as in %s:443 or %s:*",
			                      arg, host, host);
	}
	return 0;
}

_public_ int net_add_directive(struct net *n, const char *word, const char *arg,
                               const char *origin, struct moat_error *e)
{
	struct net_rule r = { 0 };
	int k;

	if (streq(word, "allow-net"))
		r.kind = NET_RULE_ALLOW;
	else if (streq(word, "deny-net"))
		r.kind = NET_RULE_DENY;
	else if (streq(word, "allow-bind"))
		r.kind = NET_RULE_BIND;
	else
		return -ENOENT;
	if (n->finalized) {
		return moat_error_set(e, EBUSY, "%s: the rules are frozen once the run starts",
		                      word);
	}
	if (!arg)
		arg = "";
	while (isspace((unsigned char)*arg))
		arg++;
	if (!*arg || strpbrk(arg, " \t\r\n"))
		return moat_error_set(e, EINVAL, "%s takes one destination, got '%s'", word, arg);

	if (r.kind == NET_RULE_BIND) {
		const char *s = parse_proto(arg, &r);

		r.host = NET_HOST_ANY;
		k = parse_ports(s, true, &r, e);
	} else {
		k = parse_dest(arg, &r, e);
	}
	if (k == -EINVAL && e) {
		/* prefix the message with the directive so the operator finds the line */
		char msg[sizeof(e->msg)];

		str_copy(msg, sizeof(msg), e->msg);
		moat_error_set(e, EINVAL, "%s %s: %s", word, arg, msg);
	}
	if (k >= 0)
		k = canonical_text(&r);
	if (k >= 0) {
		r.origin = strdup(origin ? origin : "");
		if (!r.origin)
			k = -ENOMEM;
	}
	if (k >= 0 && n->n_rules == n->cap_rules) {
		size_t cap = n->cap_rules ? n->cap_rules * 2 : 8;
		struct net_rule *v = reallocarray(n->rules, cap, sizeof(*v));

		if (!v)
			k = -ENOMEM;
		else {
			n->rules = v;
			n->cap_rules = cap;
		}
	}
	if (k < 0) {
		rule_done(&r);
		/* the parsers said why; an allocation that failed says it with its errno */
		return k == -ENOMEM ? moat_error_errno(e, k) : k;
	}
	n->rules[n->n_rules++] = r;
	return 0;
}

_public_ int net_set_host_addrs(struct net *n, const struct net_ip *ips, size_t count)
{
	struct net_ip *v = NULL;

	if (count > 0) {
		v = calloc(count, sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (size_t i = 0; i < count; i++) {
			v[i] = ips[i];
			net__normalize_ip(&v[i]);
		}
	}
	free(n->host_addrs);
	n->host_addrs = v;
	n->n_host_addrs = count;
	n->host_addrs_set = true;
	return 0;
}

_public_ void net_set_lookup(struct net *n, net_lookup_fn fn, void *userdata)
{
	n->lookup = fn ? fn : net_lookup_getaddrinfo;
	n->lookup_ud = fn ? userdata : NULL;
}

static int read_host_addrs(struct net *n)
{
	struct ifaddrs *ifa = NULL;
	struct net_ip ips[NET_HOST_ADDRS_MAX];
	size_t count = 0;
	int k;

	if (getifaddrs(&ifa) < 0)
		return negative_errno();
	for (struct ifaddrs *i = ifa; i && count < ELEMENTSOF(ips); i = i->ifa_next) {
		uint16_t port;

		if (!i->ifa_addr)
			continue;
		if (net__from_sockaddr(i->ifa_addr,
		                       i->ifa_addr->sa_family == AF_INET ?
		                               sizeof(struct sockaddr_in) :
		                               sizeof(struct sockaddr_in6),
		                       true, &ips[count], &port) == 0)
			count++;
	}
	freeifaddrs(ifa);
	k = net_set_host_addrs(n, ips, count);
	return k;
}

_public_ int net_finalize(struct net *n, struct moat_error *e)
{
	int k;

	if (n->finalized)
		return 0;
	if (!n->host_addrs_set) {
		k = read_host_addrs(n);
		if (k < 0) {
			return moat_error_set(e, k, "cannot list the host's addresses: %s",
			                      strerror(-k));
		}
	}
	n->finalized = true;
	return 0;
}

/* FNV-1a over the address bytes: cheap, and good enough for a table the program can only
 * fill through names the policy allows. */
uint32_t net__pin_bucket(const struct net_ip *ip)
{
	return fnv1a(ip->bytes, net__ip_bits(ip) / 8) & (NET_PIN_BUCKETS - 1);
}

_public_ int net_pin(struct net *n, const char *name, const struct net_ip *ips, size_t count)
{
	char lname[NET_DNS_NAME_MAX];
	struct net_pins *p = n->pins;
	int k = 0;

	if (net__normalize_name(name, lname, sizeof(lname)) < 0)
		return -EINVAL;
	pthread_rwlock_wrlock(&p->lock);
	for (size_t i = 0; i < count && k == 0; i++) {
		struct net_ip ip = ips[i];
		bool dup = false;
		uint32_t b;

		if (ip.family != AF_INET && ip.family != AF_INET6)
			continue;
		net__normalize_ip(&ip);
		b = net__pin_bucket(&ip);
		for (uint32_t j = p->bucket[b]; j != NET_PIN_NONE && !dup; j = p->v[j].next)
			dup = net__ip_eq(&p->v[j].ip, &ip) && streq(p->v[j].name, lname);
		if (dup)
			continue;
		if (p->n >= NET_PINS_MAX) {
			k = -ENOSPC;
			break;
		}
		if (p->n == p->cap) {
			size_t cap = p->cap ? p->cap * 2 : 16;
			struct net_pin_entry *v = reallocarray(p->v, cap, sizeof(*v));

			if (!v) {
				k = -ENOMEM;
				break;
			}
			p->v = v;
			p->cap = cap;
		}
		p->v[p->n].name = strdup(lname);
		if (!p->v[p->n].name) {
			k = -ENOMEM;
			break;
		}
		p->v[p->n].ip = ip;
		p->v[p->n].next = p->bucket[b];
		p->bucket[b] = (uint32_t)p->n++;
	}
	pthread_rwlock_unlock(&p->lock);
	return k;
}

_public_ bool net_allows_any(const struct net *n)
{
	for (size_t i = 0; n && i < n->n_rules; i++)
		if (n->rules[i].kind != NET_RULE_DENY)
			return true;
	return false;
}

_public_ bool net_name_allowed(const struct net *n, const char *name)
{
	char lname[NET_DNS_NAME_MAX];
	bool allowed = false;

	if (net__normalize_name(name, lname, sizeof(lname)) < 0)
		return false;
	for (size_t i = 0; i < n->n_rules; i++) {
		const struct net_rule *r = &n->rules[i];

		if (!net__rule_matches_name(r, lname))
			continue;
		/* A deny that leaves some port or protocol open still needs the name resolved
		 * for the rest; the deny is enforced at connect time. */
		if (r->kind == NET_RULE_DENY && r->proto == 0 && r->port_lo == 0 &&
		    r->port_hi == 65535)
			return false;
		if (r->kind == NET_RULE_ALLOW)
			allowed = true;
	}
	return allowed;
}

static json_t *rule_to_json(const struct net_rule *r)
{
	json_t *o = json_object();
	char ip[INET6_ADDRSTRLEN + 8];

	if (!o)
		return NULL;
	json_object_set_new(o, "dest", json_string(r->text));
	json_object_set_new(o, "proto", json_string(r->proto == SOCK_STREAM ? "tcp" :
	                                           r->proto == SOCK_DGRAM ? "udp" : "any"));
	json_object_set_new(o, "port_min", json_integer(r->port_lo));
	json_object_set_new(o, "port_max", json_integer(r->port_hi));
	if (r->kind != NET_RULE_BIND) {
		switch (r->host) {
		case NET_HOST_ADDR:
			net__format_ip(&r->ip, ip, sizeof(ip));
			snprintf(ip + strlen(ip), sizeof(ip) - strlen(ip), "/%u", r->prefix);
			json_object_set_new(o, "prefix", json_string(ip));
			break;
		case NET_HOST_NAME:
			json_object_set_new(o, "name", json_string(r->name));
			break;
		case NET_HOST_WILDCARD:
			json_object_set_new(o, "suffix", json_string(r->name));
			break;
		case NET_HOST_ANY:
		default:
			json_object_set_new(o, "any", json_true());
			break;
		}
	}
	json_object_set_new(o, "origin", json_string(r->origin));
	return o;
}

_public_ void *net_to_json(const struct net *n)
{
	json_t *root = json_object(), *a = json_array(), *d = json_array(), *b = json_array();

	if (!root || !a || !d || !b)
		goto fail;
	for (size_t i = 0; i < n->n_rules; i++) {
		const struct net_rule *r = &n->rules[i];
		json_t *o = rule_to_json(r);

		if (!o)
			goto fail;
		json_array_append_new(r->kind == NET_RULE_ALLOW ? a : r->kind == NET_RULE_DENY ? d : b,
		                      o);
	}
	json_object_set_new(root, "allow", a);
	json_object_set_new(root, "deny", d);
	json_object_set_new(root, "bind", b);
	return root;
fail:
	json_decref(root);
	json_decref(a);
	json_decref(d);
	json_decref(b);
	return NULL;
}
