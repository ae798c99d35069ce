/* SPDX-License-Identifier: MIT */
/*
 * Socket syscalls that carry an address: connect, bind, sendto, sendmsg, sendmmsg.
 *
 * The address (and for sends, the data) is copied out once; the operation is then done
 * by the supervisor on the tracee's own socket, fetched with pidfd_getfd(): the same
 * socket object, so it stays in the sandbox's network namespace and keeps its blocking
 * mode. AF_UNIX path names are resolved through the vfs and reached through the
 * resolved parent's O_PATH fd, so a symlink swapped into the path cannot redirect them.
 *
 * Internet destinations are decided by the network layer (vfs/net, issue 4); until a
 * rule allows one, every internet connect and send is refused (deny by default).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "dispatch.h"
#include "log.h"
#include "macros.h"
#include "missing-seccomp.h"

#define ARG(c, i) ((c)->req->data.args[i])
#define SEND_MAX (1u << 20)  /* data copied per emulated send; stream sends may be partial */
#define IOV_MAX_EMU 64

static int getfd(pid_t tid, int fd)
{
	_cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD);
	int r;

	if (pidfd < 0)
		return -ESRCH;
	r = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	return r < 0 ? negative_errno() : r;
}

static void addr_text(const struct sockaddr_storage *ss, socklen_t len, char *buf, size_t size)
{
	char ip[INET6_ADDRSTRLEN];

	switch (ss->ss_family) {
	case AF_INET: {
		const struct sockaddr_in *in = (const void *)ss;
		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		snprintf(buf, size, "%s:%u", ip, ntohs(in->sin_port));
		break;
	}
	case AF_INET6: {
		const struct sockaddr_in6 *in6 = (const void *)ss;
		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, size, "[%s]:%u", ip, ntohs(in6->sin6_port));
		break;
	}
	case AF_UNIX: {
		const struct sockaddr_un *un = (const void *)ss;
		size_t n = len > offsetof(struct sockaddr_un, sun_path)
				   ? len - offsetof(struct sockaddr_un, sun_path) : 0;
		if (n && un->sun_path[0] == '\0')
			snprintf(buf, size, "unix:@%.*s", (int)(n - 1), un->sun_path + 1);
		else
			snprintf(buf, size, "unix:%.*s", (int)strnlen(un->sun_path, n), un->sun_path);
		break;
	}
	default:
		snprintf(buf, size, "family %u", ss->ss_family);
		break;
	}
}

static void reply(struct sup_call *c, int r)
{
	if (r < 0)
		c->err = -r;
	else
		c->result = r;
	c->outcome = CALL_REPLY;
}

static void refuse(struct sup_call *c, int err, const char *rule)
{
	c->err = err;
	c->policy_denied = true;
	c->verdict.err = err;
	snprintf(c->verdict.rule, sizeof(c->verdict.rule), "%s", rule);
	c->outcome = CALL_REPLY;
}

/*
 * Decide on a destination and turn an AF_UNIX path into one the supervisor can use
 * safely ("/proc/self/fd/<parent>/<name>"). *ret_pathfd keeps the parent open for the
 * duration of the operation. Returns 0 when allowed (with *ss rewritten as needed).
 */
static int decide_dest(struct sup_call *c, struct sockaddr_storage *ss, socklen_t *len,
		       bool binding, int *ret_pathfd)
{
	switch (ss->ss_family) {
	case AF_UNIX: {
		struct sockaddr_un *un = (void *)ss;
		size_t n = *len > offsetof(struct sockaddr_un, sun_path)
				   ? *len - offsetof(struct sockaddr_un, sun_path) : 0;
		char base[PATH_MAX], name[NAME_MAX + 1];
		struct vfs_caller caller = { .pid = c->tid, .tgid = c->tid, .base = "/" };
		int fd;

		if (n == 0) /* autobind / unnamed */
			return binding ? 0 : -EINVAL;
		if (un->sun_path[0] == '\0') {
			/* Abstract names live in a network namespace: in namespaced mode the
			 * socket is the sandbox's own, so it reaches only the sandbox's. */
			if (c->s->namespaced)
				return 0;
			refuse(c, EACCES, "abstract unix sockets are host-wide in unnamespaced mode");
			return -EACCES;
		}
		snprintf(c->path, sizeof(c->path), "%.*s", (int)strnlen(un->sun_path, n), un->sun_path);
		c->has_path = true;
		if (c->path[0] != '/') {
			char proc[64];
			ssize_t k;

			snprintf(proc, sizeof(proc), "/proc/%d/cwd", c->tid);
			k = readlink(proc, base, sizeof(base) - 1);
			if (k < 0)
				return -EBADF;
			base[k] = '\0';
			caller.base = base;
		}
		/* connect needs write permission on the socket inode; bind creates a name. */
		fd = vfs_resolve(c->s->vfs, &caller, c->path,
				 binding ? (VFS_WANT_CREATE | VFS_WANT_PARENT | VFS_WANT_WRITE)
					 : VFS_WANT_WRITE,
				 name, &c->verdict);
		if (fd < 0) {
			if (c->verdict.denied)
				c->policy_denied = true;
			return fd;
		}
		*ret_pathfd = fd;
		memset(un->sun_path, 0, sizeof(un->sun_path));
		if (binding) {
			if ((size_t)snprintf(un->sun_path, sizeof(un->sun_path), "/proc/self/fd/%d/%s",
					     fd, name) >= sizeof(un->sun_path))
				return -ENAMETOOLONG;
		} else {
			snprintf(un->sun_path, sizeof(un->sun_path), "/proc/self/fd/%d", fd);
		}
		*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(un->sun_path) + 1);
		return 0;
	}
	case AF_INET:
	case AF_INET6:
		if (binding) {
			/* Binding inside the sandbox's own, empty network namespace exposes
			 * nothing; in unnamespaced mode it would open a host port. */
			if (c->s->namespaced)
				return 0;
			refuse(c, EACCES, "bind in unnamespaced mode needs an allow-bind rule");
			return -EACCES;
		}
		refuse(c, ECONNREFUSED, "no allow-net rule (network is denied by default)");
		return -ECONNREFUSED;
	case AF_UNSPEC:
		return binding ? -EAFNOSUPPORT : 0; /* connect(AF_UNSPEC) dissolves an association */
	default:
		refuse(c, EAFNOSUPPORT, "address family not allowed");
		return -EAFNOSUPPORT;
	}
}

static int read_addr(struct sup_call *c, uint64_t addr, uint64_t len, struct sockaddr_storage *ss,
		     socklen_t *ret_len)
{
	int r;

	if (len > sizeof(*ss) || len < sizeof(sa_family_t))
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	r = mem_read(c->tid, addr, ss, (size_t)len);
	if (r < 0)
		return r;
	*ret_len = (socklen_t)len;
	addr_text(ss, *ret_len, c->addr, sizeof(c->addr));
	return 0;
}

static void handle_connect_bind(struct sup_call *c, bool binding)
{
	struct sockaddr_storage ss;
	socklen_t len;
	_cleanup_close_ int sock = -1, pathfd = -1;
	int r;

	r = read_addr(c, ARG(c, 1), ARG(c, 2), &ss, &len);
	if (r < 0)
		return reply(c, r);
	if (!notify_id_valid(c->s->listener, c->req->id))
		return reply(c, -ESRCH);
	r = decide_dest(c, &ss, &len, binding, &pathfd);
	if (r < 0)
		return c->policy_denied ? (void)0 : reply(c, r);
	sock = getfd(c->tid, (int)ARG(c, 0));
	if (sock < 0)
		return reply(c, sock);
	r = binding ? bind(sock, (struct sockaddr *)&ss, len) : connect(sock, (struct sockaddr *)&ss, len);
	reply(c, r < 0 ? negative_errno() : 0);
}

/* Copy an iovec array and its data into one buffer (bounded). */
static int read_iov(struct sup_call *c, uint64_t iov_addr, size_t iovcnt, char *data, size_t cap,
		    size_t *ret_len)
{
	struct iovec iov[IOV_MAX_EMU];
	size_t got = 0;
	int r;

	if (iovcnt > IOV_MAX_EMU)
		return -EMSGSIZE;
	r = mem_read(c->tid, iov_addr, iov, iovcnt * sizeof(struct iovec));
	if (r < 0)
		return r;
	for (size_t i = 0; i < iovcnt && got < cap; i++) {
		size_t n = MIN(iov[i].iov_len, cap - got);
		r = mem_read(c->tid, (uint64_t)(uintptr_t)iov[i].iov_base, data + got, n);
		if (r < 0)
			return r;
		got += n;
	}
	*ret_len = got;
	return 0;
}

/* SCM_RIGHTS carries the tracee's fd numbers: swap each for our dup of that fd. */
static int translate_rights(struct sup_call *c, char *ctl, size_t ctl_len, int *fds, size_t *n_fds)
{
	struct msghdr m = { .msg_control = ctl, .msg_controllen = ctl_len };

	*n_fds = 0;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int *p = (int *)CMSG_DATA(h);
		for (size_t i = 0; i < k; i++) {
			int fd = getfd(c->tid, p[i]);
			if (fd < 0)
				return fd;
			fds[(*n_fds)++] = fd;
			p[i] = fd;
		}
	}
	return 0;
}

/* One sendmsg on behalf of the tracee; returns bytes sent or -errno. */
static int emulate_sendmsg(struct sup_call *c, int sock, uint64_t msg_addr, int flags)
{
	struct msghdr mh;
	struct sockaddr_storage ss;
	socklen_t alen = 0;
	_cleanup_free_ char *data = NULL;
	char ctl[1024];
	int fds[64];
	size_t len = 0, n_fds = 0;
	_cleanup_close_ int pathfd = -1;
	ssize_t n;
	int r;

	r = mem_read(c->tid, msg_addr, &mh, sizeof(mh));
	if (r < 0)
		return r;
	if (mh.msg_name && mh.msg_namelen) {
		r = read_addr(c, (uint64_t)(uintptr_t)mh.msg_name, mh.msg_namelen, &ss, &alen);
		if (r < 0)
			return r;
	}
	data = malloc(SEND_MAX);
	if (!data)
		return -ENOMEM;
	r = read_iov(c, (uint64_t)(uintptr_t)mh.msg_iov, mh.msg_iovlen, data, SEND_MAX, &len);
	if (r < 0)
		return r;
	if (mh.msg_controllen > sizeof(ctl))
		return -ENOBUFS;
	if (mh.msg_controllen) {
		r = mem_read(c->tid, (uint64_t)(uintptr_t)mh.msg_control, ctl, mh.msg_controllen);
		if (r < 0)
			return r;
	}
	if (!notify_id_valid(c->s->listener, c->req->id))
		return -ESRCH;
	if (alen) {
		r = decide_dest(c, &ss, &alen, false, &pathfd);
		if (r < 0)
			return r;
	}
	r = translate_rights(c, ctl, mh.msg_controllen, fds, &n_fds);
	if (r >= 0) {
		struct iovec iov = { .iov_base = data, .iov_len = len };
		struct msghdr out = {
			.msg_name = alen ? &ss : NULL,
			.msg_namelen = alen,
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = mh.msg_controllen ? ctl : NULL,
			.msg_controllen = mh.msg_controllen,
		};
		n = sendmsg(sock, &out, flags | MSG_NOSIGNAL);
		r = n < 0 ? negative_errno() : (int)n;
	}
	for (size_t i = 0; i < n_fds; i++)
		close(fds[i]);
	return r;
}

void handle_net(struct sup_call *c)
{
	_cleanup_close_ int sock = -1;
	int r;

	switch (c->e->id) {
	case SC_connect:
		return handle_connect_bind(c, false);
	case SC_bind:
		return handle_connect_bind(c, true);
	case SC_sendto: {
		/* Only sendto with an address is notified (the filter checks args[4]). */
		struct sockaddr_storage ss;
		socklen_t alen;
		_cleanup_free_ char *data = NULL;
		_cleanup_close_ int pathfd = -1;
		size_t len = MIN((size_t)ARG(c, 2), SEND_MAX);

		r = read_addr(c, ARG(c, 4), ARG(c, 5), &ss, &alen);
		if (r < 0)
			return reply(c, r);
		data = malloc(len ? len : 1);
		if (!data)
			return reply(c, -ENOMEM);
		r = mem_read(c->tid, ARG(c, 1), data, len);
		if (r < 0)
			return reply(c, r);
		if (!notify_id_valid(c->s->listener, c->req->id))
			return reply(c, -ESRCH);
		r = decide_dest(c, &ss, &alen, false, &pathfd);
		if (r < 0)
			return c->policy_denied ? (void)0 : reply(c, r);
		sock = getfd(c->tid, (int)ARG(c, 0));
		if (sock < 0)
			return reply(c, sock);
		ssize_t n = sendto(sock, data, len, (int)ARG(c, 3) | MSG_NOSIGNAL,
				   (struct sockaddr *)&ss, alen);
		return reply(c, n < 0 ? negative_errno() : (int)n);
	}
	case SC_sendmsg:
		sock = getfd(c->tid, (int)ARG(c, 0));
		if (sock < 0)
			return reply(c, sock);
		r = emulate_sendmsg(c, sock, ARG(c, 1), (int)ARG(c, 2));
		return c->policy_denied ? (void)0 : reply(c, r);
	case SC_sendmmsg: {
		unsigned vlen = (unsigned)MIN(ARG(c, 2), 64);
		unsigned done = 0;

		sock = getfd(c->tid, (int)ARG(c, 0));
		if (sock < 0)
			return reply(c, sock);
		for (; done < vlen; done++) {
			uint64_t m = ARG(c, 1) + done * sizeof(struct mmsghdr);
			unsigned sent;

			r = emulate_sendmsg(c, sock, m, (int)ARG(c, 3));
			if (r < 0)
				break;
			sent = (unsigned)r;
			if (mem_write(c->tid, m + offsetof(struct mmsghdr, msg_len), &sent,
				      sizeof(sent)) < 0)
				break;
		}
		if (done > 0)
			return (void)(c->policy_denied = false, c->err = 0, reply(c, (int)done));
		return c->policy_denied ? (void)0 : reply(c, r);
	}
	default:
		return refuse(c, ENOSYS, "no handler for this socket syscall");
	}
}
