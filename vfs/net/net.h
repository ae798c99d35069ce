/* SPDX-License-Identifier: MIT */
/*
 * net: the network layer's policy (destination allowlist, always-denied ranges, names
 * pinned to addresses) and the sandbox's DNS responder.
 *
 * Lifecycle: net_new() -> net_add_directive()... -> [net_set_host_addrs()] ->
 * [net_set_lookup()] -> net_finalize() -> net_resolve_rules() -> net_decide() /
 * net_decide_bind() / net_dns_answer() / net_pin() for the rest of the run -> net_free().
 * The rule list is immutable after net_finalize() (net_add_directive() then returns
 * -EBUSY). The only state that changes during the run is the pin table (which name
 * resolved to which address), filled by net_resolve_rules(), net_pin() and the DNS
 * responder.
 *
 * Thread safety: after net_finalize() every function may be called from any supervisor
 * thread at once. The pin table is guarded by an internal rwlock: net_decide() takes it
 * shared, pinning takes it exclusively and never while calling the lookup function, so a
 * slow host resolver never stalls a connect decision. No function here reads tracee
 * memory: the interposer hands over its own copy of the sockaddr or DNS datagram.
 *
 * Decisions (net_decide), in this order; the first that applies wins:
 *   1. not AF_INET/AF_INET6, or a short sockaddr          -EAFNOSUPPORT / -EINVAL
 *      a socket type other than SOCK_STREAM / SOCK_DGRAM   -EACCES
 *   2. a deny-net rule matches                             -EACCES
 *   3. an allow-net rule matches and may reach the class   0
 *      of the address (see below)
 *   4. link-local or cloud metadata address                -EACCES ("... always denied")
 *   5. an allow-net rule matched but may not reach a       -EACCES
 *      loopback/private/host address
 *   6. nothing matched                                     -ECONNREFUSED
 *
 * Address classes. Before deciding, IPv4-mapped IPv6 (::ffff:a.b.c.d) becomes IPv4, and
 * 0.0.0.0 / :: (which the kernel connects to this host) become 127.0.0.1 / ::1.
 *   metadata: 169.254.0.0/16, fe80::/10, fd00:ec2::254, 100.100.100.200. Reachable only
 *     through a rule that names the exact address (not a prefix covering it, not a name).
 *   local: loopback, 0.0.0.0/8, RFC 1918, CGNAT 100.64.0.0/10, multicast, broadcast and
 *     240.0.0.0/4, ULA fc00::/7, ff00::/8, and the host's own addresses. Reachable through
 *     an exact address rule, a prefix rule that lies inside one of those ranges (e.g.
 *     10.0.0.0/8 - but never 0.0.0.0/0), or an exact (non-wildcard) name rule.
 *   public: everything else; any matching rule reaches it.
 * IPv6 forms that embed an IPv4 address (::a.b.c.d, 64:ff9b::/96, 2002::/16) take the
 * class of the embedded address, so NAT64 or 6to4 cannot be used to reach metadata.
 * A wildcard name rule (*.example.com, *) reaches public addresses only: a name under it
 * that resolves into loopback or a private network is denied (DNS rebinding closed).
 *
 * Names. A name rule allows an address only when that address is pinned to a name the rule
 * matches. "*.example.com" matches every name below example.com (any depth) but not
 * example.com itself; "*" as host matches every name and every public address. Names are
 * compared case-insensitively, without a trailing dot.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct moat_error;   /* error.h: the message for the operator */

struct net;

/* An IP address without a port: what a name resolves to. */
struct net_ip {
	int family;          /* AF_INET or AF_INET6 */
	uint8_t bytes[16];   /* network order; AF_INET uses the first 4 */
};

/* Why a decision was taken: what the operator and the audit stream see. */
struct net_verdict {
	int err;             /* 0 = allowed, else the (positive) errno given to the program */
	char rule[160];      /* "allow-net 127.0.0.1:8080 (--allow-net)", "metadata is always denied" */
	char addr[64];       /* normalised destination, "127.0.0.1:8080", "[::1]:53" */
};

/*
 * Host-side name lookup, injectable so tests can count or fake lookups.
 * family is AF_INET, AF_INET6 or AF_UNSPEC. Writes at most max addresses and returns how
 * many it wrote; 0 means the name exists but has no address of that family. Returns
 * -ENOENT when the name does not exist, -EAGAIN on a temporary failure, -ENOMEM.
 */
typedef int (*net_lookup_fn)(void *userdata, const char *name, int family,
                             struct net_ip *ret_ips, size_t max);

/* --- building the rule set ---------------------------------------------------------- */

/* Returns 0 or -ENOMEM. The lookup function starts as net_lookup_getaddrinfo. */
int net_new(struct net **ret);
struct net *net_free(struct net *n);   /* accepts NULL, returns NULL */

/*
 * One directive, as a policy file line or a CLI option. word is "allow-net", "deny-net" or
 * "allow-bind"; origin ("policy.moat:4", "--allow-net") is kept for verdicts.
 *   allow-net / deny-net DEST, where DEST is [tcp:|udp:] then one of
 *     HOST:PORTS            name with ports: example.com:443, localhost:*
 *     *.DOMAIN:PORTS        every name below DOMAIN; "*:443" is every name/public address
 *     IP[/PREFIX][:PORTS]   192.0.2.1, 10.0.0.0/8:22, 127.0.0.1:8000-8999
 *     [IP6[/PREFIX]][:PORTS] or a bare IP6[/PREFIX] without ports: [::1]:80, fd00::/8
 *   PORTS is N, N-M or *; a missing PORTS (addresses only) means every port.
 *   allow-bind [tcp:|udp:]PORTS: ports the program may bind in unnamespaced mode.
 * Returns 0; -ENOENT for a word that is not ours (e untouched) so the caller can try
 * other modules; -EINVAL with the message in e; -EBUSY after net_finalize(); -ENOMEM.
 */
int net_add_directive(struct net *n, const char *word, const char *arg, const char *origin,
                      struct moat_error *e);

/* The host's own addresses (local class). Replaces any earlier set. 0 or -ENOMEM. */
int net_set_host_addrs(struct net *n, const struct net_ip *ips, size_t count);

/* Replace the host lookup (NULL restores net_lookup_getaddrinfo). Call before finalize. */
void net_set_lookup(struct net *n, net_lookup_fn fn, void *userdata);

/* The default lookup: getaddrinfo() through the host's resolver (/etc/hosts included). */
int net_lookup_getaddrinfo(void *userdata, const char *name, int family,
                           struct net_ip *ret_ips, size_t max);

/*
 * Freeze the rules. Unless net_set_host_addrs() was called, reads the host's addresses
 * with getifaddrs(). Returns 0, or -errno with the message in e.
 */
int net_finalize(struct net *n, struct moat_error *e);

/*
 * Resolve every exact name in the rules through the lookup function and pin the results,
 * so a program that resolves through /etc/hosts (not our DNS) can still connect.
 * Returns the number of names that did not resolve, or -ENOMEM. A missing name is not
 * fatal (its rule just allows nothing): when the count is above 0, e holds ENOENT and the
 * list of the names for the operator, although the call succeeded; otherwise e is untouched.
 */
int net_resolve_rules(struct net *n, struct moat_error *e);

/* Canonical JSON of the rules (a jansson json_t *, caller decrefs), NULL on ENOMEM. */
void *net_to_json(const struct net *n);

/* --- names ------------------------------------------------------------------------- */

/*
 * Record that name resolved to ips for this run. Pins are never removed: an address a
 * program was told about stays reachable under that name for the whole run.
 * Returns 0, -EINVAL for a malformed name, -ENOSPC when the table is full, -ENOMEM.
 */
int net_pin(struct net *n, const char *name, const struct net_ip *ips, size_t count);

/* Whether the DNS responder may resolve name: some allow-net rule matches it and no
 * deny-net rule that covers every port and protocol does. */
bool net_name_allowed(const struct net *n, const char *name);

/* Whether any rule allows a destination or a bind (so that the supervisor may make a
 * host-side socket for the sandbox). False for NULL. */
bool net_allows_any(const struct net *n);

/* --- decisions --------------------------------------------------------------------- */

/*
 * May a socket of sock_type (SOCK_STREAM or SOCK_DGRAM; SOCK_NONBLOCK/SOCK_CLOEXEC bits
 * are ignored) reach sa (connect, sendto, sendmsg, MSG_FASTOPEN)? Returns 0 or a negative
 * errno to give the program, as in the table above; fills *v (may be NULL). No allocation.
 */
int net_decide(const struct net *n, const struct sockaddr *sa, socklen_t len, int sock_type,
               struct net_verdict *v);

/* May the program bind sa (unnamespaced mode)? 0 or -EACCES; fills *v (may be NULL). */
int net_decide_bind(const struct net *n, const struct sockaddr *sa, socklen_t len,
                    int sock_type, struct net_verdict *v);

/* --- socket addresses as text ------------------------------------------------------ */

/* The one spelling of a destination in -v lines, audit records and replay: "10.0.0.1:443",
 * "[::1]:53", "unix:/path", "unix:@abstract" (len bounds the unix path), "family N". */
void net_sockaddr_format(const struct sockaddr_storage *ss, socklen_t len, char *buf,
                         size_t size);
/* The inverse for internet destinations: 0, or -EINVAL (unix:, a name, no port...). */
int net_sockaddr_parse(const char *text, struct sockaddr_storage *ret, socklen_t *ret_len);
/* Loopback, or an address connect() sends there (0.0.0.0, ::, their IPv4-mapped forms). */
bool net_sockaddr_is_loopback(const struct sockaddr_storage *ss);

/* --- DNS --------------------------------------------------------------------------- */

#define NET_DNS_NAME_MAX 254  /* 253 characters of dotted name + NUL */

enum {
	NET_DNS_TYPE_A = 1,
	NET_DNS_TYPE_AAAA = 28,
	NET_DNS_CLASS_IN = 1,
};

enum {
	NET_DNS_RCODE_NOERROR = 0,
	NET_DNS_RCODE_FORMERR = 1,
	NET_DNS_RCODE_SERVFAIL = 2,
	NET_DNS_RCODE_NXDOMAIN = 3,
	NET_DNS_RCODE_NOTIMP = 4,
	NET_DNS_RCODE_REFUSED = 5,
};

/* The question of a DNS message, decoded. */
struct net_dns_question {
	uint16_t id;
	uint16_t flags;                 /* the header's second word as sent */
	uint16_t qtype;
	uint16_t qclass;
	char name[NET_DNS_NAME_MAX];    /* dotted, as sent (case kept), no trailing dot */
	size_t end;                     /* offset just after the question */
};

/*
 * Parse the header and the single question of a DNS message, treating every byte as
 * hostile (lengths, compression pointers, label sizes, bytes outside [A-Za-z0-9_-]).
 * Returns 0, or -EBADMSG for anything malformed or not exactly one question.
 */
int net_dns_parse_question(const uint8_t *msg, size_t len, struct net_dns_question *ret);

/*
 * Parse a response: its question, rcode and the A/AAAA records of the answer section
 * (other records are skipped). Writes at most max addresses to ret_ips and returns how
 * many; -EBADMSG when malformed. Lets the supervisor pin what a host-side DNS server said.
 */
int net_dns_parse_answers(const uint8_t *msg, size_t len, struct net_dns_question *ret_q,
                          int *ret_rcode, struct net_ip *ret_ips, size_t max);

/*
 * Answer one query. Names the policy allows are resolved through the lookup function,
 * pinned and answered (A and AAAA; other types get an empty NOERROR); other names get
 * NXDOMAIN without any lookup. Non-queries and classes other than IN get NOTIMP/REFUSED,
 * an unparsable message FORMERR (when at least its header is readable).
 * Returns the length of the response written to resp (at most resp_cap, and never more
 * than 512 bytes, as plain UDP DNS requires), or -EBADMSG when no answer can be formed,
 * -ENOBUFS when resp_cap is too small.
 */
int net_dns_answer(struct net *n, const uint8_t *query, size_t qlen, uint8_t *resp,
                   size_t resp_cap);

/*
 * Receive one datagram on udp_fd (recvfrom), answer it and send the answer back to the
 * sender (sendto). Returns 0 when a datagram was handled or dropped as malformed,
 * -EAGAIN when none was waiting (non-blocking fd), or -errno of the socket calls.
 */
int net_dns_serve_fd(struct net *n, int udp_fd);
