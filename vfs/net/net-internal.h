/* SPDX-License-Identifier: MIT */
/*
 * net internals shared by the files of vfs/net/ only. Cross-file symbols use the
 * net__ prefix (STYLE.md §4).
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net.h"

enum net_rule_kind {
	NET_RULE_ALLOW,
	NET_RULE_DENY,
	NET_RULE_BIND,
};

enum net_host_kind {
	NET_HOST_ADDR,      /* ip/prefix */
	NET_HOST_NAME,      /* exact name */
	NET_HOST_WILDCARD,  /* *.suffix: name is the suffix, without "*." */
	NET_HOST_ANY,       /* "*": every name and every public address */
};

enum net_class {
	NET_CLASS_PUBLIC,
	NET_CLASS_LOCAL,
	NET_CLASS_METADATA,
};

struct net_rule {
	enum net_rule_kind kind;
	enum net_host_kind host;
	int proto;                  /* 0 = any, SOCK_STREAM or SOCK_DGRAM */
	struct net_ip ip;           /* NET_HOST_ADDR: network address (host bits cleared) */
	unsigned prefix;            /* NET_HOST_ADDR: 0..32 or 0..128 */
	bool inside_local;          /* NET_HOST_ADDR: the prefix lies within a local range */
	char *name;                 /* NET_HOST_NAME / NET_HOST_WILDCARD, lowercase */
	uint16_t port_lo, port_hi;
	char *text;                 /* canonical DEST, for verdicts and JSON */
	char *origin;
};

struct net_pin_entry {
	struct net_ip ip;
	char *name;                 /* lowercase, no trailing dot */
	uint32_t next;              /* next entry in the same bucket, NET_PIN_NONE at the end */
};

#define NET_PINS_MAX 16384
#define NET_PIN_BUCKETS 4096        /* power of two */
#define NET_PIN_NONE UINT32_MAX

/*
 * The only state that changes after net_finalize(); lives behind a pointer so that
 * net_decide() can take the lock through a const struct net. Entries are chained per
 * address hash, so a decision looks only at the names of its own address, however many
 * names a busy run has resolved.
 */
struct net_pins {
	pthread_rwlock_t lock;
	struct net_pin_entry *v;
	size_t n, cap;
	uint32_t bucket[NET_PIN_BUCKETS];
};

uint32_t net__pin_bucket(const struct net_ip *ip);
#define NET_HOST_ADDRS_MAX 256

struct net {
	struct net_rule *rules;
	size_t n_rules, cap_rules;
	struct net_ip *host_addrs;
	size_t n_host_addrs;
	bool host_addrs_set;
	bool finalized;
	net_lookup_fn lookup;
	void *lookup_ud;
	struct net_pins *pins;
};

/* addr.c */
int net__parse_ip(const char *s, struct net_ip *ret);
void net__format_ip(const struct net_ip *ip, char *buf, size_t len);
bool net__ip_eq(const struct net_ip *a, const struct net_ip *b);
bool net__prefix_contains(const struct net_ip *net, unsigned prefix, const struct net_ip *ip);
void net__normalize_ip(struct net_ip *ip);
void net__normalize_prefix(struct net_ip *ip, unsigned *prefix);
void net__mask(struct net_ip *ip, unsigned prefix);
unsigned net__ip_bits(const struct net_ip *ip);
enum net_class net__classify(const struct net_ip *ip, const char **ret_what);
bool net__prefix_inside_local(const struct net_ip *ip, unsigned prefix);
int net__from_sockaddr(const struct sockaddr *sa, socklen_t len, bool normalize,
                       struct net_ip *ret_ip, uint16_t *ret_port);

/* names.c */
int net__normalize_name(const char *in, char *out, size_t outlen);
bool net__rule_matches_name(const struct net_rule *r, const char *lname);
