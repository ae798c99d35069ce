/* SPDX-License-Identifier: MIT */
/*
 * The only file that talks to the seccomp listener. Each function is one ioctl with
 * its errno translated to -errno. ENOENT from SEND/ADDFD means the target died or was
 * interrupted between receive and reply: that is not our failure (crun counts it too).
 * With notify_set_ops() (sup.h) a simulation answers in the kernel's place.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "macros.h"
#include "missing-seccomp.h"
#include "sup.h"

int notify_sizes(struct seccomp_notif_sizes *ret)
{
	return RET_NERRNO(syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, ret));
}

static const struct notify_ops *sim;

void notify_set_ops(const struct notify_ops *ops)
{
	sim = ops;
}

const struct notify_ops *notify_get_ops(void)
{
	return sim;
}

int notify_recv(int listener, struct seccomp_notif *req)
{
	/* The kernel insists on a zeroed buffer (it reserves the right to add fields). */
	memset(req, 0, sizeof(*req));
	if (sim)
		return sim->recv(sim->userdata, req);
	return RET_NERRNO(ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, req));
}

bool notify_id_valid(int listener, uint64_t id)
{
	if (sim)
		return sim->id_valid(sim->userdata, id);
	return ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

int notify_reply(int listener, uint64_t id, int64_t val, int err)
{
	struct seccomp_notif_resp resp = {
		.id = id,
		.val = err ? 0 : val,
		.error = err ? -abs(err) : 0,
	};

	if (sim)
		return sim->reply(sim->userdata, id, val, err, false);
	return RET_NERRNO(ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp));
}

int notify_continue(int listener, uint64_t id)
{
	struct seccomp_notif_resp resp = {
		.id = id,
		.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE,
	};

	if (sim)
		return sim->reply(sim->userdata, id, 0, 0, true);
	return RET_NERRNO(ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp));
}

int notify_addfd_send(int listener, uint64_t id, int srcfd, unsigned newfd_flags)
{
	struct seccomp_notif_addfd a = {
		.id = id,
		.flags = SECCOMP_ADDFD_FLAG_SEND,
		.srcfd = (uint32_t)srcfd,
		.newfd_flags = newfd_flags,
	};

	if (sim)
		return sim->addfd(sim->userdata, id, srcfd, -1, newfd_flags);
	/* With FLAG_SEND the ioctl is also the reply: the syscall returns the new fd. */
	return RET_NERRNO(ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &a));
}

int notify_addfd_at(int listener, uint64_t id, int srcfd, int newfd, unsigned newfd_flags)
{
	struct seccomp_notif_addfd a = {
		.id = id,
		.flags = SECCOMP_ADDFD_FLAG_SETFD,
		.srcfd = (uint32_t)srcfd,
		.newfd = (uint32_t)newfd,
		.newfd_flags = newfd_flags,
	};

	if (sim)
		return sim->addfd(sim->userdata, id, srcfd, newfd, newfd_flags);
	return RET_NERRNO(ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &a));
}

int notify_set_sync_wake_up(int listener)
{
	return RET_NERRNO(ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
				SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP));
}
