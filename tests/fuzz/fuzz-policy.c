/* SPDX-License-Identifier: MIT */
/*
 * Policy files (interposer/cli/policy.c) and every directive they reach (vfs_add_directive,
 * net_add_directive): the file is parsed, applied on top of `profile none` or the default
 * profile, and written back as canonical JSON. vfs_finalize() is left out: it creates
 * the private directories of tmpfs rules on the host.
 */
#include <errno.h>

#include "fuzz.h"
#include "log.h"
#include "policy.h"
#include "proc-ops.h"
#include "net.h"
#include "vfs.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* warnings of the policy code would only slow the fuzzer down */
	moat_log_level = LOG_LEVEL_ERR;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy pol = { 0 };
	struct proc_map pm;
	struct vfs *v = NULL;
	struct net *n = NULL;
	struct moat_error err = { 0 };
	char path[64], hash[65], *json = NULL;
	int fd = fuzz_memfile(data, size, path, sizeof(path));

	if (policy_load_file(&pol, path, &err) == 0 &&
	    policy_apply(&pol, proc_map_init(&pm), &v, &n, &err) == 0) {
		if (policy_canonical(v, n, &json, hash) == 0 && strlen(hash) != 64)
			abort();
		free(json);
		vfs_free(v);
		net_free(n);
	}
	if (strnlen(err.msg, sizeof(err.msg)) == sizeof(err.msg))
		abort();
	policy_done(&pol);
	close(fd);
	return 0;
}
