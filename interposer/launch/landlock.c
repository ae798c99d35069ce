/* SPDX-License-Identifier: MIT */
/*
 * Landlock: the kernel's copy of the vfs table (layer 1 of docs/architecture.md), in both modes.
 *
 * Landlock guards what the kernel does on the sandbox's behalf: exec and (namespaced)
 * read-only opens, which the supervisor continues after its check, the metadata calls
 * namespaced mode leaves native, and anything a filter bug might let through. Each mapping becomes a
 * path-beneath rule (read and execute for ro, everything for rw); unmapped paths get
 * nothing. Landlock cannot carve a hidden file out of an allowed directory, so hide
 * globs stay the supervisor's job (docs/threat-model.md says so).
 *
 * Scoping (ABI 6) adds what no mount table can: the sandbox cannot signal processes
 * outside it (the supervisor, the keeper, every other process of the same uid in
 * unnamespaced mode) nor connect to abstract unix sockets created outside it.
 * TCP rights (ABI 4) are handled with no rule at all: every connect and bind is
 * performed by the supervisor, outside the domain, so a native one is always a bug.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "landlock.h"
#include "macros.h"
#include "missing-landlock.h"
#include "vfs.h"

#define FS_READ (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | \
		 LANDLOCK_ACCESS_FS_READ_DIR)
#define FILE_ONLY (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | \
		   LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE | \
		   LANDLOCK_ACCESS_FS_IOCTL_DEV)

static uint64_t fs_handled(int abi)
{
	uint64_t all = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1; /* ABI 1 */

	if (abi >= 2)
		all |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		all |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		all |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return all;
}

struct ll_ctx {
	int ruleset;
	uint64_t handled;
	int err;
};

static int add_rule(const struct vfs_mount_info *m, void *ud)
{
	struct ll_ctx *ll = ud;
	struct landlock_path_beneath_attr pb = { 0 };
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (m->kind == VFS_MOUNT_HIDE || m->kind == VFS_MOUNT_SYMLINK)
		return 0;
	fd = open(m->virt, O_PATH | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		return 0; /* a mapping of a path that does not exist grants nothing */
	pb.parent_fd = fd;
	pb.allowed_access = m->writable ? ll->handled : (FS_READ & ll->handled);
	if (!S_ISDIR(st.st_mode))
		/* Directory rights on a file are refused with EINVAL. */
		pb.allowed_access &= FILE_ONLY;
	if (syscall(SYS_landlock_add_rule, ll->ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0) {
		ll->err = negative_errno();
		return ll->err;
	}
	return 0;
}

int sandbox_landlock(const struct vfs *v, int abi, bool list_all)
{
	struct moat_landlock_ruleset_attr attr = { 0 };
	struct ll_ctx ll = { .ruleset = -1 };
	size_t size;
	int r;

	if (abi <= 0)
		return -EOPNOTSUPP;
	attr.handled_access_fs = ll.handled = fs_handled(abi);
	size = sizeof(uint64_t);
	if (abi >= 4) {
		attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
		size = 2 * sizeof(uint64_t);
	}
	if (abi >= 6) {
		attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
		size = sizeof(attr);
	}
	ll.ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (ll.ruleset < 0)
		return negative_errno();
	r = vfs_foreach_mount(v, add_rule, &ll);
	if (r >= 0 && ll.err < 0)
		r = ll.err;
	if (r >= 0 && list_all) {
		/* Directories of the skeleton (the unmapped way to a mapping, /deep above
		 * --bind W:/deep/er/ws) open for the supervisor, so a continued open of one
		 * must open for the kernel too. Listing is all this grants: the namespace
		 * holds only the policy's view, hidden directories covered. */
		_cleanup_close_ int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		struct landlock_path_beneath_attr pb = {
			.parent_fd = fd, .allowed_access = LANDLOCK_ACCESS_FS_READ_DIR & ll.handled,
		};

		if (fd < 0 || syscall(SYS_landlock_add_rule, ll.ruleset, LANDLOCK_RULE_PATH_BENEATH,
				      &pb, 0) < 0)
			r = negative_errno();
	}
	if (r >= 0)
		r = RET_NERRNO(syscall(SYS_landlock_restrict_self, ll.ruleset, 0));
	safe_close(ll.ruleset);
	return r < 0 ? r : 0;
}
