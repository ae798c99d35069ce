/* SPDX-License-Identifier: MIT */
/*
 * `moat policy check FILE` and `moat policy show [--json] [RUN OPTIONS]`: a policy file
 * checked in both modes, and the policy a `moat run` with those options would use,
 * resolved and printed as a policy file (or JSON). The loader is policy.c.
 */
#include <jansson.h>
#include <stdio.h>

#include "cli.h"
#include "log.h"
#include "vfs.h"

static const char policy_usage[] =
	"usage: moat policy check FILE\n       moat policy show [--json] [RUN OPTIONS]\n";

/* Text with the escapes a directive reads back: in a path, "\:" and "\\" (split_colon()
 * in vfs/directives.c); in a file's content, "\\", "\n" and "\t". */
static void print_escaped(const char *s, bool content)
{
	for (const char *p = s; *p; p++) {
		if (*p == '\\' || (!content && *p == ':'))
			putchar('\\');
		if (content && *p == '\n')
			fputs("\\n", stdout);
		else if (content && *p == '\t')
			fputs("\\t", stdout);
		else
			putchar(*p);
	}
}

/* One vfs rule, resolved: absolute paths and globs, so that the file means the same
 * read from any directory (a relative --bind or a "~" would not). */
static int print_fs_rule(json_t *r)
{
	const char *w = json_string_value(json_object_get(r, "directive"));
	const char *host = json_string_value(json_object_get(r, "host"));
	const char *virt = json_string_value(json_object_get(r, "virtual"));
	const char *glob = json_string_value(json_object_get(r, "glob"));
	const char *size = json_string_value(json_object_get(r, "size"));
	const char *content = json_string_value(json_object_get(r, "content"));

	if (!w)
		return -EINVAL;
	if ((streq(w, "bind") || streq(w, "ro-bind") || streq(w, "system")) && host && virt) {
		printf("%s ", w);
		print_escaped(host, false);
		if (!streq(host, virt)) {
			putchar(':');
			print_escaped(virt, false);
		}
	} else if ((streq(w, "hide") || streq(w, "deny")) && glob) {
		printf("%s %s", w, glob);
	} else if (streq(w, "tmpfs") && virt) {
		printf("tmpfs %s%s%s", virt, size ? " " : "", size ? size : "");
	} else if (streq(w, "file") && virt && (content || host)) {
		printf("file %s ", virt);
		if (content)
			print_escaped(content, true);
		else
			printf("@%s", host);
	} else {
		return -EINVAL;
	}
	putchar('\n');
	return 0;
}

/*
 * The resolved policy as a policy file (moat-policy 1) that --policy and `moat policy
 * check` read back: the default profile's directives written out after "profile none",
 * then every directive given, in order, resolved. Read back, it gives the same rules;
 * its sha256 differs from the one in the comment, which covers the directives as they
 * were given and where (origins).
 */
static int print_policy_text(json_t *j, const char *hash)
{
	json_t *fs = json_object_get(j, "fs"), *net = json_object_get(j, "net");
	json_t *rules = json_object_get(fs, "rules"), *chdir = json_object_get(fs, "chdir"), *r;
	static const struct { const char *key, *word; } nets[] = {
		{ "allow", "allow-net" }, { "deny", "deny-net" }, { "bind", "allow-bind" },
	};
	size_t i;

	if (!json_is_array(rules))
		return -EINVAL;
	printf("moat-policy 1\n# the resolved policy (sha256 %s)\nprofile none\n", hash);
	json_array_foreach(rules, i, r)
		if (print_fs_rule(r) < 0)
			return -EINVAL;
	if (json_is_string(chdir))
		printf("chdir %s\n", json_string_value(chdir));
	for (size_t k = 0; k < ELEMENTSOF(nets); k++) {
		json_array_foreach(json_object_get(net, nets[k].key), i, r) {
			const char *d = json_string_value(json_object_get(r, "dest"));

			if (!d)
				return -EINVAL;
			printf("%s %s\n", nets[k].word, d);
		}
	}
	return 0;
}

static int policy_check(struct run_args *a, int argc, char **argv)
{
	struct moat_error e = { 0 };

	if (argc != 3) {
		moat_error_set(&e, EINVAL, "policy check takes one FILE");
		return cli_usage_error(policy_usage, &e);
	}
	if (policy_load_file(&a->policy, argv[2], &e) < 0 || run_args_build_policy(a, true, &e) < 0) {
		log_error("%s", moat_error_str(&e));
		return MOAT_EXIT_FAILURE;
	}
	/* Both modes must accept it, or say which one cannot. */
	if (vfs_finalize(a->o.vfs, VFS_MODE_NAMESPACED, &e) < 0) {
		log_error("%s: %s", argv[2], moat_error_str(&e));
		return MOAT_EXIT_FAILURE;
	}
	printf("%s: ok (%zu directives, sha256 %s)\n", argv[2], a->policy.n, a->o.policy_hash);
	return 0;
}

static int policy_show(struct run_args *a, int argc, char **argv)
{
	struct moat_error e;
	json_t *j;
	bool stub;

	if (run_args_parse(a, argc, argv, &e) < 0)
		return cli_usage_error(policy_usage, &e);
	if (a->help) {
		fputs(policy_usage, stdout);
		return 0;
	}
	if (run_args_build_policy(a, true, &e) < 0) {
		log_error("%s", moat_error_str(&e));
		return MOAT_EXIT_FAILURE;
	}
	/* What a hide rule hides in namespaced mode: the fast path covers content with a
	 * stub whose name stat and listings see (sup_filter_kind_of()). */
	stub = sup_filter_kind_of(true, a->o.strict_hide, a->o.vfs) == SUP_FILTER_NAMESPACED;
	if (a->json) {
		printf("{\"sha256\":\"%s\",\"hidden_names\":\"%s\",\"policy\":%s}\n", a->o.policy_hash,
		       stub ? "visible-as-empty-stub" : "absent", a->o.policy_json);
		return 0;
	}
	j = json_loads(a->o.policy_json, 0, NULL);
	if (!j || print_policy_text(j, a->o.policy_hash) < 0) {
		json_decref(j);
		log_error("cannot print the policy");
		return MOAT_EXIT_FAILURE;
	}
	json_decref(j);
	printf(stub ? "# hidden content is never readable; namespaced, a hidden name shows as an "
		      "empty stub to stat and listings, and as a mount point in the mount table "
		      "(--strict-hide: the name is absent too)\n"
		    : "# hidden content is never readable and a hidden name is absent: every "
		      "metadata call by name is emulated, and the mount table leaves out the "
		      "stubs\n");
	if (stub)
		printf("# a run asking for no change set (no --report, --audit, --cow or -v) leaves "
		       "creates to the kernel: a new file may take a hidden name, holding the "
		       "sandbox's own bytes\n");
	if (strstr(a->o.policy_json, "\"directive\":\"system\""))
		printf("# a \"**\" glob does not reach into a system mapping unless it is "
		       "anchored there: a secret in a system tree is hidden by its path\n");
	return 0;
}

int cmd_policy(int argc, char **argv)
{
	struct run_args a;
	struct moat_error e;
	int status;

	if (argc < 2) {
		moat_error_set(&e, EINVAL, "policy needs a subcommand");
		return cli_usage_error(policy_usage, &e);
	}
	run_args_init(&a);
	if (streq(argv[1], "check")) {
		status = policy_check(&a, argc, argv);
	} else if (streq(argv[1], "show")) {
		status = policy_show(&a, argc - 1, argv + 1);
	} else {
		moat_error_set(&e, EINVAL, "unknown policy subcommand '%s'", argv[1]);
		status = cli_usage_error(policy_usage, &e);
	}
	run_args_done(&a);
	return status;
}
