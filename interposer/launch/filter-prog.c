/* SPDX-License-Identifier: MIT */
/*
 * The filter programs moat links, compiled at build time by gen-filter.c from the
 * syscall table (filter.c), and which one a run installs. Apart from filter.c because
 * the build-time generator links filter.c without the programs it has not made yet.
 */
#include <errno.h>
#include <linux/filter.h>
#include <stdbool.h>

#include "launch.h"
#include "vfs.h"

extern const struct sock_filter moat_filter_insns[], moat_filter_strict_insns[],
	moat_filter_unns_insns[], moat_filter_nativeopen_insns[], moat_filter_nativewrite_insns[],
	moat_filter_nativewrite_unmarked_insns[];
extern const struct sock_filter moat_confine_insns[], moat_confine_umount_insns[];
extern const unsigned short moat_confine_len, moat_confine_umount_len;
extern const unsigned short moat_filter_len, moat_filter_strict_len, moat_filter_unns_len,
	moat_filter_nativeopen_len, moat_filter_nativewrite_len, moat_filter_nativewrite_unmarked_len;

int sup_filter_precompiled(enum sup_filter_kind kind, struct sock_fprog *ret_prog)
{
	switch (kind) {
	case SUP_FILTER_NAMESPACED:
		*ret_prog = (struct sock_fprog){ moat_filter_len, (struct sock_filter *)moat_filter_insns };
		return 0;
	case SUP_FILTER_STRICT_HIDE:
		*ret_prog = (struct sock_fprog){ moat_filter_strict_len,
						 (struct sock_filter *)moat_filter_strict_insns };
		return 0;
	case SUP_FILTER_NATIVE_OPEN:
		*ret_prog = (struct sock_fprog){ moat_filter_nativeopen_len,
						 (struct sock_filter *)moat_filter_nativeopen_insns };
		return 0;
	case SUP_FILTER_NATIVE_WRITE:
		*ret_prog = (struct sock_fprog){ moat_filter_nativewrite_len,
						 (struct sock_filter *)moat_filter_nativewrite_insns };
		return 0;
	case SUP_FILTER_NATIVE_WRITE_UNMARKED:
		*ret_prog = (struct sock_fprog){ moat_filter_nativewrite_unmarked_len,
						 (struct sock_filter *)moat_filter_nativewrite_unmarked_insns };
		return 0;
	case SUP_FILTER_UNNAMESPACED:
		*ret_prog = (struct sock_fprog){ moat_filter_unns_len,
						 (struct sock_filter *)moat_filter_unns_insns };
		return 0;
	case _SUP_FILTER_MAX:
	default:
		return -EINVAL;
	}
}

void sup_confine_precompiled(bool unmount, struct sock_fprog *ret_prog)
{
	if (unmount)
		*ret_prog = (struct sock_fprog){ moat_confine_umount_len,
						 (struct sock_filter *)moat_confine_umount_insns };
	else
		*ret_prog = (struct sock_fprog){ moat_confine_len,
						 (struct sock_filter *)moat_confine_insns };
}

enum sup_filter_kind sup_filter_writes_trapped(enum sup_filter_kind kind)
{
	if (kind == SUP_FILTER_NATIVE_WRITE)
		return SUP_FILTER_NATIVE_OPEN;
	if (kind == SUP_FILTER_NATIVE_WRITE_UNMARKED)
		return SUP_FILTER_NAMESPACED;
	return kind;
}

/* The fast path needs a mount namespace that shows what the vfs shows, hidden content
 * covered; --strict-hide keeps emulating. --audit does not change the filter: the
 * stream records what stays trapped (opens, execs, network calls, writes and creates,
 * every denial of those), while the metadata calls the kernel answers exactly in the
 * covered namespace (stat, access, readlink, listings) are not in it; --audit
 * --strict-hide records those too. */
enum sup_filter_kind sup_filter_kind_of(bool namespaced, bool strict_hide, const struct vfs *v)
{
	if (!namespaced)
		return SUP_FILTER_UNNAMESPACED;
	return strict_hide || !vfs_kernel_view_exact(v) ? SUP_FILTER_STRICT_HIDE
							: SUP_FILTER_NAMESPACED;
}
