/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <jansson.h>
#include <pwd.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"
#include "macros.h"
#include "net.h"
#include "policy.h"
#include "vfs.h"

int policy_add(struct policy *p, const char *word, const char *arg, const char *origin)
{
	struct policy_item *items;

	/* Check before allocating: a refused item must not be half-added. */
	if (streq(word, "profile") && !streq(arg ? arg : "", "none") &&
	    !streq(arg ? arg : "", "default"))
		return -EINVAL;
	items = realloc(p->items, (p->n + 1) * sizeof(*items));
	if (!items)
		return -ENOMEM;
	p->items = items;
	items[p->n] = (struct policy_item){ strdup(word), strdup(arg ? arg : ""), strdup(origin) };
	if (!items[p->n].word || !items[p->n].arg || !items[p->n].origin)
		return -ENOMEM;
	if (streq(word, "profile"))
		p->profile_none = streq(arg, "none");
	p->n++;
	return 0;
}

static char *strip(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

int policy_load_file(struct policy *p, const char *path, struct moat_error *e)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char line[8192];
	bool header = false;
	int lineno = 0;

	if (!f)
		return moat_error_set(e, errno, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char origin[PATH_MAX + 32], *s, *word, *arg;
		int r;

		lineno++;
		if (!strchr(line, '\n') && !feof(f))
			return moat_error_set(e, EINVAL, "%s:%d: line longer than %zu bytes", path, lineno,
					      sizeof(line) - 2);
		s = strip(line);
		if (*s == '\0' || *s == '#')
			continue;
		if (!header) {
			if (strcmp(s, "moat-policy 1") != 0)
				return moat_error_set(e, EINVAL,
						      "%s:%d: a policy file starts with the line 'moat-policy 1'",
						      path, lineno);
			header = true;
			continue;
		}
		word = s;
		arg = word + strcspn(word, " \t");
		if (*arg)
			*arg++ = '\0';
		arg = strip(arg);
		snprintf(origin, sizeof(origin), "%s:%d", path, lineno);
		r = policy_add(p, word, arg, origin);
		if (r == -EINVAL)
			return moat_error_set(e, r, "%s: profile is 'default' or 'none', not '%s'", origin,
					      arg);
		if (r < 0)
			return moat_error_set(e, r, "%s: %s", origin, strerror(-r));
	}
	if (!header)
		return moat_error_set(e, EINVAL,
				      "%s: empty policy (a policy file starts with 'moat-policy 1')", path);
	return 0;
}

int policy_apply(const struct policy *p, const struct vfs_proc_ops *ops, struct vfs **ret_vfs,
		 struct net **ret_net, struct moat_error *e)
{
	struct vfs *v = NULL;
	struct net *n = NULL;
	struct moat_error de = { 0 };
	char cwd[PATH_MAX];
	const char *home = getenv("HOME");
	int r;

	if (!home) {
		struct passwd *pw = getpwuid(getuid());
		home = pw ? pw->pw_dir : "/";
	}
	if (!getcwd(cwd, sizeof(cwd)))
		return moat_error_set(e, errno, "cannot read the current directory: %s",
				      strerror(errno));
	r = vfs_new(ops, &v);
	if (r >= 0)
		r = net_new(&n);
	if (r < 0) {
		r = moat_error_set(e, r, "out of memory");
		goto fail;
	}
	if (!p->profile_none) {
		if (streq(cwd, "/"))
			log_warning("the current directory is /: the default profile maps no "
				    "workspace (run from a project directory, or --bind one)");
		r = vfs_add_default_profile(v, home, cwd);
		if (r < 0) {
			r = moat_error_set(e, r, "default profile: %s", strerror(-r));
			goto fail;
		}
	}
	for (size_t i = 0; i < p->n; i++) {
		const struct policy_item *it = &p->items[i];

		if (streq(it->word, "profile"))
			continue;
		de = (struct moat_error){ 0 };
		r = vfs_add_directive(v, it->word, it->arg, it->origin, &de);
		if (r == -ENOENT)
			r = net_add_directive(n, it->word, it->arg, it->origin, &de);
		if (r == -ENOENT) {
			r = moat_error_set(e, EINVAL, "%s: unknown directive '%s'", it->origin, it->word);
			goto fail;
		}
		if (r < 0) {
			/* Messages from the modules may or may not carry the origin already. */
			if (strncmp(de.msg, it->origin, strlen(it->origin)) == 0)
				r = moat_error_set(e, r, "%s", de.msg);
			else
				r = moat_error_set(e, r, "%s: %s", it->origin,
						   de.msg[0] ? de.msg : strerror(-r));
			goto fail;
		}
	}
	r = net_finalize(n, &de);
	if (r < 0) {
		r = moat_error_set(e, r, "%s", de.msg);
		goto fail;
	}
	*ret_vfs = v;
	*ret_net = n;
	return 0;
fail:
	vfs_free(v);
	net_free(n);
	return r;
}

int policy_canonical(const struct vfs *v, const struct net *n, char **ret_json, char ret_hash[65])
{
	json_t *j = json_object();
	unsigned char h[crypto_hash_sha256_BYTES];
	char *s;

	json_object_set_new(j, "moat_policy", json_integer(1));
	json_object_set_new(j, "fs", vfs_to_json(v));
	json_object_set_new(j, "net", net_to_json(n));
	s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(j);
	if (!s)
		return -ENOMEM;
	crypto_hash_sha256(h, (const unsigned char *)s, strlen(s));
	sodium_bin2hex(ret_hash, 65, h, sizeof(h));
	*ret_json = s;
	return 0;
}

void policy_done(struct policy *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->items[i].word);
		free(p->items[i].arg);
		free(p->items[i].origin);
	}
	free(p->items);
	p->items = NULL;
	p->n = 0;
}
