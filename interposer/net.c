/* SPDX-License-Identifier: MIT */
/*
 * Socket syscalls that carry an address: connect, bind, sendto, sendmsg, sendmmsg.
 *
 * The address (and for sends, the data) is copied out once and the notification id is
 * re-validated; from then on the supervisor acts on its own copy (DESIGN.md invariant 1).
 *
 * AF_UNIX path names are resolved through the vfs and reached through the resolved
 * parent's O_PATH fd, so a symlink swapped into the path cannot redirect them. The
 * operation runs on the tracee's own socket, fetched with pidfd_getfd().
 *
 * Internet destinations are decided by the network layer (vfs/net: net_decide), then
 * routed:
 *   - namespaced mode: the tracee's socket sits in the sandbox's empty network
 *     namespace, so an allowed destination is reached from a host-side socket of the
 *     same domain/type/protocol that the supervisor creates, connects (or sends from)
 *     and installs at the tracee's fd number with SECCOMP_ADDFD_FLAG_SETFD. Reads and
 *     writes then run natively on a real socket. A socket we installed earlier is
 *     recognised by its network namespace and used as it is. Other fds that share the
 *     old socket (dup) keep the sandbox-side one: only the fd named in the call moves.
 *     A loopback destination that no rule allows is served by the sandbox's own
 *     loopback (the tracee's socket, in its own namespace) when a program of the
 *     sandbox listens on that port there, or for the DNS responder at 127.0.0.1:53;
 *     otherwise it is refused as a denial, naming the rule, like any other.
 *   - unnamespaced mode: the tracee's socket already lives in the host's namespace;
 *     the supervisor connects or sends on it (same socket object through pidfd_getfd).
 *
 * Blocking connects: the supervisor's loop must not wait on a remote host, so every
 * connect is started non-blocking. When the program's socket is blocking and the
 * connect is in progress, the reply is deferred: the socket joins the supervisor's
 * epoll set and the notification is answered when it becomes writable (sup_net_event).
 * In unnamespaced mode the program's own file description gets O_NONBLOCK for the
 * duration of the connect() call only (its other threads could observe that for a few
 * microseconds; the alternative is a supervisor stalled for a TCP timeout).
 *
 * Sends with an address on a stream socket: TCP ignores the address unless
 * MSG_FASTOPEN asks it to connect, so without that flag the address is dropped and the
 * data sent on the program's socket; with it, the send goes through the connect path
 * above (data carried with the SYN where the kernel can). sendmmsg with MSG_FASTOPEN
 * is refused (EOPNOTSUPP): no libc or runtime we know of emits it.
 *
 * DNS: see sandbox-net.c for the responder inside the sandbox's namespace, and the
 * comment above sup_net_dns_fd() for unnamespaced mode.
 *
 * State: struct sup_net (pending connects, the DNS socket) hangs off struct sup_ctx and
 * is used under ctx.lock only: by a notifier thread in handle_net() (dispatch.c takes the
 * lock around it), by the main loop in sup_net_event() and sup_net_dns_fd() (sup.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <linux/sockios.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "creds.h"
#include "dispatch.h"
#include "log.h"
#include "macros.h"
#include "missing-seccomp.h"
#include "net.h"

#define ARG(c, i) ((c)->req->data.args[i])
#define SEND_MAX (1u << 20)  /* data copied per emulated send; stream sends may be partial */
#define IOV_MAX_EMU 64
#define PENDING_MAX 128      /* blocking connects in flight at once */

/* A blocking connect waiting for its socket to become writable. */
struct pending {
	int sock;               /* ours (-1: free slot); the host-side socket or our dup */
	uint64_t id;            /* the notification to answer */
	int tracee_fd;          /* install sock here when connected; -1: nothing to install */
	unsigned fd_flags;      /* O_CLOEXEC as the program had it */
	char *data;             /* MSG_FASTOPEN: data still to send once connected */
	size_t len;
	int flags;
};

struct sup_net {
	struct pending pend[PENDING_MAX];
	int dns_fd;             /* UDP 127.0.0.1:53 inside the sandbox's namespace, or -1 */
	ino_t sandbox_netns;    /* inode of the sandbox's network namespace, 0 = unknown */
};

static struct sup_net *state(struct sup_ctx *s)
{
	if (!s->netst) {
		s->netst = calloc(1, sizeof(*s->netst));
		if (!s->netst)
			return NULL;
		s->netst->dns_fd = -1;
		for (size_t i = 0; i < PENDING_MAX; i++)
			s->netst->pend[i].sock = -1;
	}
	return s->netst;
}

/* The close-on-exec bit of the program's fd. pidfd_getfd() always sets FD_CLOEXEC on our
 * copy, so the copy cannot tell; procfs shows the program's fd table entry. */
static unsigned tracee_cloexec(pid_t tid, int fd)
{
	char path[64], buf[256];
	_cleanup_close_ int f = -1;
	ssize_t n;
	const char *p;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", tid, fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return O_CLOEXEC;
	n = read(f, buf, sizeof(buf) - 1);
	if (n <= 0)
		return O_CLOEXEC;
	buf[n] = '\0';
	p = strstr(buf, "flags:");
	if (!p)
		return O_CLOEXEC;
	return (strtoul(p + 6, NULL, 8) & O_CLOEXEC) ? O_CLOEXEC : 0;
}

struct sockinfo {
	int domain, type, protocol;
	bool nonblock;
};

static int sock_info(int sock, struct sockinfo *si)
{
	socklen_t l = sizeof(int);
	int fl;

	if (getsockopt(sock, SOL_SOCKET, SO_DOMAIN, &si->domain, &l) < 0)
		return errno == ENOTSOCK ? -ENOTSOCK : negative_errno();
	l = sizeof(int);
	if (getsockopt(sock, SOL_SOCKET, SO_TYPE, &si->type, &l) < 0)
		return negative_errno();
	l = sizeof(int);
	if (getsockopt(sock, SOL_SOCKET, SO_PROTOCOL, &si->protocol, &l) < 0)
		si->protocol = 0;
	fl = fcntl(sock, F_GETFL);
	si->nonblock = fl >= 0 && (fl & O_NONBLOCK);
	return 0;
}

/* The tracee's socket (args[0]) as an fd of ours, with its domain and type. On failure
 * *sock is a negative errno or a valid fd: the caller's cleanup handles both. */
static int take_socket(struct sup_call *c, int *sock, struct sockinfo *si)
{
	*sock = tracee_getfd(c, (int)ARG(c, 0));
	if (*sock < 0)
		return *sock;
	return sock_info(*sock, si);
}

/*
 * Does sock live in the sandbox's network namespace? SIOCGSKNS needs CAP_NET_ADMIN over
 * the socket's namespace, which we hold for the sandbox's (our user namespace owns it)
 * and, unless root, not for the host's: EPERM therefore means "not the sandbox's".
 * When we cannot tell, answer yes: the caller then uses a fresh host-side socket, which
 * is always safe (the decision is already taken), only less faithful.
 */
static bool in_sandbox_netns(struct sup_ctx *s, int sock)
{
	struct sup_net *sn = state(s);
	_cleanup_close_ int nsfd = -1;
	struct stat st;

	if (!s->namespaced)
		return false;
	if (sn && !sn->sandbox_netns) {
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d/ns/net", s->init_host_pid);
		if (stat(p, &st) == 0)
			sn->sandbox_netns = st.st_ino;
	}
	nsfd = ioctl(sock, SIOCGSKNS);
	if (nsfd < 0)
		return errno != EPERM;
	if (fstat(nsfd, &st) < 0 || !sn || !sn->sandbox_netns)
		return true;
	return st.st_ino == sn->sandbox_netns;
}

/* Loopback, or the "this host" addresses the kernel sends to loopback. */
static bool is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET) {
		uint32_t a = ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr);
		return (a >> 24) == 127 || a == 0;
	}
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
		if (IN6_IS_ADDR_LOOPBACK(a) || IN6_IS_ADDR_UNSPECIFIED(a))
			return true;
		if (IN6_IS_ADDR_V4MAPPED(a))
			return a->s6_addr[12] == 127 ||
			       (a->s6_addr[12] | a->s6_addr[13] | a->s6_addr[14] | a->s6_addr[15]) == 0;
	}
	return false;
}

/*
 * Does a program in the sandbox listen on port (TCP) or hold it bound (UDP)? Read from
 * the sandbox's own /proc/net tables (those of its pid 1, so of its network namespace):
 * a loopback destination no rule allows is served inside the sandbox only when
 * something there can answer, and is otherwise refused as a denial, with its rule.
 */
static bool sandbox_listens(struct sup_ctx *s, const struct sockaddr_storage *ss, int type)
{
	static const char *const tcp[] = { "tcp", "tcp6" }, *const udp[] = { "udp", "udp6" };
	const char *const *files = type == SOCK_STREAM ? tcp : udp;
	unsigned port = ntohs(ss->ss_family == AF_INET ? ((const struct sockaddr_in *)ss)->sin_port
						       : ((const struct sockaddr_in6 *)ss)->sin6_port);

	for (size_t i = 0; i < 2; i++) {
		_cleanup_fclose_ FILE *f = NULL;
		char path[64], line[512];

		snprintf(path, sizeof(path), "/proc/%d/net/%s", s->init_host_pid, files[i]);
		f = fopen(path, "re");
		while (f && fgets(line, sizeof(line), f)) {
			unsigned lport, st;
			char *colon = strchr(line, ':'), *lp;

			/* "  0: 0100007F:0035 00000000:0000 07 ..." */
			if (!colon || !(lp = strchr(colon + 1, ':')))
				continue;
			if (sscanf(lp + 1, "%x %*s %x", &lport, &st) != 2)
				continue;
			if (lport == port && (type != SOCK_STREAM || st == 0x0A /* LISTEN */))
				return true;
		}
	}
	return false;
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
	c->verdict.denied = true;
	snprintf(c->verdict.rule, sizeof(c->verdict.rule), "%s", rule);
	c->outcome = CALL_REPLY;
}

/* ---- internet destinations ------------------------------------------------------------ */

enum route {
	ROUTE_DENIED,   /* refused; c is filled */
	ROUTE_HOST,     /* allowed: reach it from the host's namespace */
	ROUTE_LOCAL,    /* namespaced: the sandbox's own loopback, on the program's socket */
};

static enum route decide_inet(struct sup_call *c, const struct sockaddr_storage *ss,
			      socklen_t len, const struct sockinfo *si, bool in_sandbox)
{
	struct net_verdict v = { 0 };
	int r;

	if (!c->s->net) {
		refuse(c, ECONNREFUSED, "no network policy");
		return ROUTE_DENIED;
	}
	r = net_decide(c->s->net, (const struct sockaddr *)ss, len, si->type, &v);
	if (v.addr[0])
		snprintf(c->addr, sizeof(c->addr), "%s", v.addr);
	if (r == 0) {
		snprintf(c->verdict.rule, sizeof(c->verdict.rule), "%s", v.rule);
		return ROUTE_HOST;
	}
	if (in_sandbox && is_loopback(ss) && sandbox_listens(c->s, ss, si->type)) {
		snprintf(c->verdict.rule, sizeof(c->verdict.rule),
			 "the sandbox's own loopback (its network namespace)");
		return ROUTE_LOCAL;
	}
	refuse(c, -r, v.rule[0] ? v.rule : "network is denied by default");
	return ROUTE_DENIED;
}

/* A host-side socket like the program's, with the options that shape a connection. */
static int host_socket(int old, const struct sockinfo *si)
{
	static const struct { int level, name; } opts[] = {
		{ SOL_SOCKET, SO_KEEPALIVE }, { SOL_SOCKET, SO_RCVTIMEO },
		{ SOL_SOCKET, SO_SNDTIMEO }, { SOL_SOCKET, SO_BROADCAST },
		{ SOL_SOCKET, SO_LINGER }, { SOL_SOCKET, SO_PRIORITY },
		{ IPPROTO_TCP, TCP_NODELAY }, { IPPROTO_TCP, TCP_KEEPIDLE },
		{ IPPROTO_TCP, TCP_KEEPINTVL }, { IPPROTO_TCP, TCP_KEEPCNT },
		{ IPPROTO_TCP, TCP_USER_TIMEOUT }, { IPPROTO_TCP, TCP_CORK },
		{ IPPROTO_IPV6, IPV6_V6ONLY },
	};
	int fd = socket(si->domain, si->type | SOCK_CLOEXEC | (si->nonblock ? SOCK_NONBLOCK : 0),
			si->protocol);

	if (fd < 0)
		return negative_errno();
	for (size_t i = 0; i < ELEMENTSOF(opts); i++) {
		char val[64];
		socklen_t l = sizeof(val);

		if ((opts[i].level == IPPROTO_TCP && si->type != SOCK_STREAM) ||
		    (opts[i].level == IPPROTO_IPV6 && si->domain != AF_INET6))
			continue;
		if (getsockopt(old, opts[i].level, opts[i].name, val, &l) == 0)
			(void)setsockopt(fd, opts[i].level, opts[i].name, val, l);
	}
	return fd;
}

/* Put our connected socket at the program's fd number. */
static int install(struct sup_ctx *s, uint64_t id, int sock, int tracee_fd, unsigned fd_flags)
{
	int r = notify_addfd_at(s->listener, id, sock, tracee_fd, fd_flags);
	return r < 0 ? r : 0;
}

static int pending_add(struct sup_call *c, int sock, int tracee_fd, unsigned fd_flags,
		       const char *data, size_t len, int flags)
{
	struct sup_net *sn = state(c->s);
	struct epoll_event ev = { .events = EPOLLOUT, .data.fd = sock };

	if (!sn)
		return -ENOMEM;
	for (size_t i = 0; i < PENDING_MAX; i++) {
		struct pending *p = &sn->pend[i];

		if (p->sock >= 0)
			continue;
		if (len) {
			p->data = malloc(len);
			if (!p->data)
				return -ENOMEM;
			memcpy(p->data, data, len);
		}
		if (epoll_ctl(c->s->epfd, EPOLL_CTL_ADD, sock, &ev) < 0) {
			int r = negative_errno();
			free(TAKE_PTR(p->data));
			return r;
		}
		*p = (struct pending){ .sock = sock, .id = c->req->id, .tracee_fd = tracee_fd,
				       .fd_flags = fd_flags, .data = p->data, .len = len,
				       .flags = flags };
		return 0;
	}
	return -EAGAIN;
}

/*
 * Connect target (or MSG_FASTOPEN-send data from it) to sa. target is ours: a fresh
 * host-side socket to install at tracee_fd, or (tracee_fd < 0) our dup of the program's
 * own socket. nonblock is the program's mode. Consumes target; fills c.
 */
static void start_connect(struct sup_call *c, int target, int tracee_fd, bool nonblock,
			  const struct sockaddr_storage *sa, socklen_t len, const char *data,
			  size_t dlen, int flags)
{
	_cleanup_close_ int sock = target;
	unsigned fd_flags = tracee_fd >= 0 ? tracee_cloexec(c->tid, tracee_fd) : 0;
	int fl = fcntl(sock, F_GETFL), r, err;

	if (fl >= 0 && !(fl & O_NONBLOCK))
		(void)fcntl(sock, F_SETFL, fl | O_NONBLOCK);
	if (data)
		r = (int)sendto(sock, data, dlen, flags | MSG_FASTOPEN | MSG_NOSIGNAL,
				(const struct sockaddr *)sa, len);
	else
		r = connect(sock, (const struct sockaddr *)sa, len);
	err = r < 0 ? errno : 0;
	if (fl >= 0 && !(fl & O_NONBLOCK))
		(void)fcntl(sock, F_SETFL, fl);

	if (r >= 0 || (err == EINPROGRESS && nonblock)) {
		if (tracee_fd >= 0) {
			int k = install(c->s, c->req->id, sock, tracee_fd, fd_flags);
			if (k < 0)
				return reply(c, k);
		}
		return reply(c, r >= 0 ? r : -EINPROGRESS);
	}
	if (err != EINPROGRESS)
		return reply(c, -err);
	/* Blocking program, connection under way: answer when it settles. */
	r = pending_add(c, sock, tracee_fd, fd_flags, data, data ? dlen : 0, flags);
	if (r < 0)
		return reply(c, r == -EAGAIN ? -EAGAIN : r);
	TAKE_FD(sock);
	c->outcome = CALL_REPLIED;
	snprintf(c->flags_text, sizeof(c->flags_text), "reply deferred until connected");
}

static void pending_finish(struct sup_ctx *s, struct pending *p)
{
	int so_err = 0, r = 0;
	socklen_t l = sizeof(so_err);

	epoll_ctl(s->epfd, EPOLL_CTL_DEL, p->sock, NULL);
	if (getsockopt(p->sock, SOL_SOCKET, SO_ERROR, &so_err, &l) < 0)
		so_err = errno;
	if (!so_err && p->len) {
		/* The kernel keeps data it could not put in the SYN; send what is left now,
		 * without blocking the loop (a fresh connection has room for it). */
		ssize_t n = send(p->sock, p->data, p->len, MSG_DONTWAIT | MSG_NOSIGNAL);
		r = n >= 0 ? (int)n : -errno;
	}
	if (!so_err && p->tracee_fd >= 0) {
		int k = install(s, p->id, p->sock, p->tracee_fd, p->fd_flags);
		if (k < 0 && k != -ENOENT)
			so_err = -k;
	}
	if (notify_reply(s->listener, p->id, so_err ? 0 : r, so_err ? so_err : (r < 0 ? -r : 0)) ==
	    -ENOENT)
		atomic_fetch_add(&s->n.gone, 1);
	safe_close(p->sock);
	free(TAKE_PTR(p->data));
	*p = (struct pending){ .sock = -1 };
}

bool sup_net_event(struct sup_ctx *s, int fd, uint32_t events)
{
	struct sup_net *sn = s->netst;

	if (!sn)
		return false;
	if (fd == sn->dns_fd) {
		/* A bounded batch per wake-up keeps the loop fair to notifications. */
		for (int i = 0; i < 32; i++)
			if (net_dns_serve_fd(s->net, sn->dns_fd) == -EAGAIN)
				break;
		return true;
	}
	for (size_t i = 0; i < PENDING_MAX; i++)
		if (sn->pend[i].sock == fd) {
			(void)events;
			pending_finish(s, &sn->pend[i]);
			return true;
		}
	return false;
}

/*
 * The sandbox's DNS socket (namespaced mode: UDP 127.0.0.1:53 in the sandbox's network
 * namespace, made by the keeper). Queries are answered by net_dns_serve_fd(): names the
 * policy allows are resolved on the host and pinned, others get NXDOMAIN and never leave.
 *
 * Unnamespaced mode has no such socket, by choice: there is no port the sandbox's
 * resolver could be pointed at (resolv.conf takes no port, port 53 on the host needs
 * privileges), and glibc ignores answers that come from another address than the one it
 * asked, so redirecting datagrams cannot work. There, DNS is ordinary traffic: a query
 * to a nameserver is a send to port 53 and is refused unless a rule names that server,
 * so a name the policy does not allow still never leaves the machine; names are
 * usable through /etc/hosts, and the run says so (sup.c: not enforced list).
 */
int sup_net_dns_fd(struct sup_ctx *s, int fd)
{
	struct sup_net *sn = state(s);
	struct epoll_event ev = { .events = EPOLLIN };

	if (!sn || sn->dns_fd >= 0) {
		safe_close(fd);
		return sn ? -EEXIST : -ENOMEM;
	}
	(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	ev.data.fd = fd;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int r = negative_errno();
		safe_close(fd);
		return r;
	}
	sn->dns_fd = fd;
	return 0;
}

void sup_net_free(struct sup_ctx *s)
{
	struct sup_net *sn = s->netst;

	if (!sn)
		return;
	for (size_t i = 0; i < PENDING_MAX; i++) {
		safe_close(sn->pend[i].sock);
		free(sn->pend[i].data);
	}
	safe_close(sn->dns_fd);
	free(sn);
	s->netst = NULL;
}

/* ---- unix and bind ---------------------------------------------------------------------- */

/*
 * Decide on an AF_UNIX destination and turn its path into one the supervisor can use
 * safely ("/proc/self/fd/<parent>/<name>"). *ret_pathfd keeps the parent open for the
 * duration of the operation. Returns 0 when allowed (with *ss rewritten as needed).
 */
static int decide_unix(struct sup_call *c, struct sockaddr_storage *ss, socklen_t *len,
		       bool binding, int *ret_pathfd)
{
	struct sockaddr_un *un = (void *)ss;
	size_t n = *len > offsetof(struct sockaddr_un, sun_path)
			   ? *len - offsetof(struct sockaddr_un, sun_path) : 0;
	char base[PATH_MAX], name[NAME_MAX + 1];
	struct vfs_caller caller = { .pid = c->tid, .tgid = c->tid, .base = "/" };
	int fd;

	if (n == 0) /* autobind / unnamed */
		return binding ? 0 : -EINVAL;
	if (un->sun_path[0] == '\0') {
		/* Abstract names live in a network namespace: in namespaced mode the socket
		 * is the sandbox's own, so it reaches only the sandbox's. */
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
	/* connect needs write permission on the socket inode; bind creates a name (with
	 * the caller's umask): both are the caller's, and so is what follows */
	fd = creds_caller(c->tid, c->req->id, 0);
	if (fd < 0)
		return fd;
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

/* Everything but internet destinations on internet sockets (handled by the callers). */
static int decide_other(struct sup_call *c, struct sockaddr_storage *ss, socklen_t *len,
			bool binding, int *ret_pathfd)
{
	switch (ss->ss_family) {
	case AF_UNIX:
		return decide_unix(c, ss, len, binding, ret_pathfd);
	case AF_INET:
	case AF_INET6:
		/* An internet address on a socket of another family: the kernel refuses it,
		 * but nothing of ours should run it. */
		return -EAFNOSUPPORT;
	case AF_UNSPEC:
		return binding ? -EAFNOSUPPORT : 0; /* connect(AF_UNSPEC) dissolves an association */
	default:
		refuse(c, EAFNOSUPPORT, "address family not allowed");
		return -EAFNOSUPPORT;
	}
}

static bool is_inet(int family)
{
	return family == AF_INET || family == AF_INET6;
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

static void inet_bind(struct sup_call *c, int sock, const struct sockinfo *si,
		      const struct sockaddr_storage *ss, socklen_t len)
{
	struct net_verdict v = { 0 };
	int r;

	/* Binding inside the sandbox's own, empty network namespace exposes nothing; on
	 * a host-side socket (unnamespaced mode, or one we installed) it opens a host port. */
	if (!in_sandbox_netns(c->s, sock)) {
		r = c->s->net ? net_decide_bind(c->s->net, (const struct sockaddr *)ss, len, si->type, &v)
			      : -EACCES;
		if (r < 0)
			return refuse(c, -r, v.rule[0] ? v.rule : "bind needs an allow-bind rule");
		snprintf(c->verdict.rule, sizeof(c->verdict.rule), "%s", v.rule);
	}
	/* as the caller: on a host-side socket a port below 1024 then takes the caller's
	 * CAP_NET_BIND_SERVICE, which it has not (in the sandbox's own network namespace
	 * we own its user namespace, and the kernel lets us, as before) */
	r = creds_caller(c->tid, c->req->id, 0);
	if (r < 0)
		return reply(c, r);
	reply(c, bind(sock, (const struct sockaddr *)ss, len) < 0 ? negative_errno() : 0);
}

/* connect, or a MSG_FASTOPEN send (data != NULL), to an internet destination. */
static void inet_connect(struct sup_call *c, int *sockp, const struct sockinfo *si,
			 const struct sockaddr_storage *ss, socklen_t len, const char *data,
			 size_t dlen, int flags)
{
	bool in_sb = in_sandbox_netns(c->s, *sockp);
	int target;

	switch (decide_inet(c, ss, len, si, in_sb)) {
	case ROUTE_DENIED:
		return;
	case ROUTE_HOST:
		if (in_sb) {
			target = host_socket(*sockp, si);
			if (target < 0)
				return reply(c, target);
			return start_connect(c, target, (int)ARG(c, 0), si->nonblock, ss, len, data,
					     dlen, flags);
		}
		break;
	case ROUTE_LOCAL:
	default:
		break;
	}
	start_connect(c, TAKE_FD(*sockp), -1, si->nonblock, ss, len, data, dlen, flags);
}

/*
 * A datagram to an internet destination. Returns bytes sent or -errno; a denial fills c
 * (c->policy_denied). In namespaced mode a sandbox-side socket is replaced by a host-side
 * one first, installed at the program's fd so that answers reach it; *sockp follows.
 */
static int inet_send(struct sup_call *c, int *sockp, const struct sockinfo *si,
		     struct msghdr *out, int flags)
{
	const struct sockaddr_storage *ss = out->msg_name;
	bool in_sb = in_sandbox_netns(c->s, *sockp);
	ssize_t n;

	switch (decide_inet(c, ss, out->msg_namelen, si, in_sb)) {
	case ROUTE_DENIED:
		return -c->err;
	case ROUTE_HOST:
		if (in_sb) {
			_cleanup_close_ int h = host_socket(*sockp, si);
			int r;

			if (h < 0)
				return h;
			n = sendmsg(h, out, flags | MSG_NOSIGNAL);
			if (n < 0)
				return negative_errno();
			r = install(c->s, c->req->id, h, (int)ARG(c, 0),
				    tracee_cloexec(c->tid, (int)ARG(c, 0)));
			if (r < 0)
				return r;
			safe_close(*sockp);
			*sockp = TAKE_FD(h);
			return (int)n;
		}
		break;
	case ROUTE_LOCAL:
	default:
		break;
	}
	n = sendmsg(*sockp, out, flags | MSG_NOSIGNAL);
	return n < 0 ? negative_errno() : (int)n;
}

static void handle_connect_bind(struct sup_call *c, bool binding)
{
	struct sockaddr_storage ss;
	struct sockinfo si;
	socklen_t len;
	_cleanup_close_ int sock = -1, pathfd = -1;
	int r;

	r = read_addr(c, ARG(c, 1), ARG(c, 2), &ss, &len);
	if (r < 0)
		return reply(c, r);
	if (!notify_id_valid(c->s->listener, c->req->id))
		return reply(c, -ESRCH);
	r = take_socket(c, &sock, &si);
	if (r < 0)
		return reply(c, r);
	if (is_inet(ss.ss_family) && is_inet(si.domain)) {
		if (binding)
			return inet_bind(c, sock, &si, &ss, len);
		return inet_connect(c, &sock, &si, &ss, len, NULL, 0, 0);
	}
	r = decide_other(c, &ss, &len, binding, &pathfd);
	if (r < 0)
		return c->policy_denied ? (void)0 : reply(c, r);
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
			int fd = tracee_getfd(c, p[i]);
			if (fd < 0)
				return fd;
			fds[(*n_fds)++] = fd;
			p[i] = fd;
		}
	}
	return 0;
}

/*
 * One sendmsg on behalf of the tracee; returns bytes sent or -errno. *sockp is our copy
 * of the program's socket (replaced when a host-side one is installed). A MSG_FASTOPEN
 * send is only possible when single (plain sendmsg): it sets *ret_replied and fills c.
 */
static int emulate_sendmsg(struct sup_call *c, int *sockp, const struct sockinfo *si,
			   uint64_t msg_addr, int flags, bool single, bool *ret_replied)
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

	struct iovec iov = { .iov_base = data, .iov_len = len };
	struct msghdr out = {
		.msg_name = alen ? &ss : NULL,
		.msg_namelen = alen,
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = mh.msg_controllen ? ctl : NULL,
		.msg_controllen = mh.msg_controllen,
	};

	if (alen && is_inet(ss.ss_family) && is_inet(si->domain)) {
		if (si->type == SOCK_STREAM && !(flags & MSG_FASTOPEN)) {
			/* TCP ignores the address of a send unless asked to connect. */
			out.msg_name = NULL;
			out.msg_namelen = 0;
		} else if (si->type == SOCK_STREAM) {
			if (!single)
				return -EOPNOTSUPP;
			*ret_replied = true;
			inet_connect(c, sockp, si, &ss, alen, data, len, flags & ~MSG_FASTOPEN);
			return 0;
		} else {
			return inet_send(c, sockp, si, &out, flags);
		}
	} else if (alen) {
		r = decide_other(c, &ss, &alen, false, &pathfd);
		if (r < 0)
			return r;
		out.msg_namelen = alen;
	}
	r = translate_rights(c, ctl, mh.msg_controllen, fds, &n_fds);
	if (r >= 0) {
		n = sendmsg(*sockp, &out, flags | MSG_NOSIGNAL);
		r = n < 0 ? negative_errno() : (int)n;
	}
	for (size_t i = 0; i < n_fds; i++)
		close(fds[i]);
	return r;
}

static void handle_sendto(struct sup_call *c)
{
	/* Only sendto with an address is notified (the filter checks args[4]). */
	struct sockaddr_storage ss;
	struct sockinfo si;
	socklen_t alen;
	_cleanup_free_ char *data = NULL;
	_cleanup_close_ int sock = -1, pathfd = -1;
	size_t len = MIN((size_t)ARG(c, 2), SEND_MAX);
	int flags = (int)ARG(c, 3), r;
	ssize_t n;

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
	r = take_socket(c, &sock, &si);
	if (r < 0)
		return reply(c, r);
	if (is_inet(ss.ss_family) && is_inet(si.domain)) {
		struct iovec iov = { .iov_base = data, .iov_len = len };
		struct msghdr out = { .msg_name = &ss, .msg_namelen = alen, .msg_iov = &iov,
				      .msg_iovlen = 1 };

		if (si.type == SOCK_STREAM && (flags & MSG_FASTOPEN))
			return inet_connect(c, &sock, &si, &ss, alen, data, len,
					    flags & ~MSG_FASTOPEN);
		if (si.type == SOCK_STREAM) {
			/* TCP ignores the address of a send unless asked to connect. */
			n = send(sock, data, len, flags | MSG_NOSIGNAL);
			return reply(c, n < 0 ? negative_errno() : (int)n);
		}
		r = inet_send(c, &sock, &si, &out, flags);
		return c->policy_denied ? (void)0 : reply(c, r);
	}
	r = decide_other(c, &ss, &alen, false, &pathfd);
	if (r < 0)
		return c->policy_denied ? (void)0 : reply(c, r);
	n = sendto(sock, data, len, flags | MSG_NOSIGNAL, (struct sockaddr *)&ss, alen);
	reply(c, n < 0 ? negative_errno() : (int)n);
}

void handle_net(struct sup_call *c)
{
	_cleanup_close_ int sock = -1;
	struct sockinfo si = { 0 };
	bool replied = false;
	int r;

	switch (c->e->id) {
	case SC_connect:
		return handle_connect_bind(c, false);
	case SC_bind:
		return handle_connect_bind(c, true);
	case SC_sendto:
		return handle_sendto(c);
	case SC_sendmsg:
		r = take_socket(c, &sock, &si);
		if (r < 0)
			return reply(c, r);
		r = emulate_sendmsg(c, &sock, &si, ARG(c, 1), (int)ARG(c, 2), true, &replied);
		if (replied)
			return;
		return c->policy_denied ? (void)0 : reply(c, r);
	case SC_sendmmsg: {
		unsigned vlen = (unsigned)MIN(ARG(c, 2), 64);
		unsigned done = 0;

		r = take_socket(c, &sock, &si);
		if (r < 0)
			return reply(c, r);
		for (; done < vlen; done++) {
			uint64_t m = ARG(c, 1) + done * sizeof(struct mmsghdr);
			unsigned sent;

			r = emulate_sendmsg(c, &sock, &si, m, (int)ARG(c, 3), false, &replied);
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
