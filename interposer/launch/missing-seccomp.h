/* SPDX-License-Identifier: MIT */
/*
 * Seccomp and friends that Debian 12's kernel headers (6.1) predate. The values are the
 * kernel's UAPI; drop each block once the oldest supported build host's headers carry it.
 */
#pragma once

#include <linux/seccomp.h>
#include <sys/ioctl.h>

/* Linux 6.6: the supervisor and the tracee run on the same CPU after a notification,
 * which halves the round trip when both are otherwise idle. */
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

/* Linux 5.19: once received, a notified syscall can only be interrupted by a fatal
 * signal, so signals no longer restart (and re-notify) syscalls we are emulating. */
#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif

#ifndef SECCOMP_ADDFD_FLAG_SEND
#define SECCOMP_ADDFD_FLAG_SEND (1UL << 1)
#endif

#ifndef PIDFD_THREAD
#define PIDFD_THREAD 0x80 /* O_EXCL: Linux 6.9 */
#endif
