/* SPDX-License-Identifier: MIT */
/*
 * Landlock UAPI newer than Debian 12's headers (Linux 6.1, ABI 2). Values are the
 * kernel's; drop each once the oldest supported build host's headers carry it.
 */
#pragma once

#include <linux/landlock.h>
#include <stdint.h>

#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)        /* ABI 3, Linux 6.2 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)       /* ABI 5, Linux 6.10 */
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)        /* ABI 4, Linux 6.7 */
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6, Linux 6.12 */
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

/* The ruleset attribute as of ABI 6; the size passed to the kernel says which fields
 * it may read, so older kernels get the prefix they know. */
struct moat_landlock_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};
