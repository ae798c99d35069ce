/* SPDX-License-Identifier: MIT */
/*
 * Socket syscalls that carry an address: connect, bind, sendto, sendmsg, sendmmsg; and
 * listen, which may bind one.
 *
 * The address (and for sends, the data) is copied out once and the notification id is
 * re-validated; from then on the supervisor acts on its own copy (architecture.md invariant 1).
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
 *     A loopback destination is served by the sandbox's own loopback (the tracee's
 *     socket, in its own namespace) when a program of the sandbox listens on that
 *     port there (whatever the rules say of the host's same port), or for the DNS
 *     responder at 127.0.0.1:53; otherwise it is decided by the rules like any other.
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
 * Sends, and unix stream connects (a full backlog), on a socket the program made
 * blocking are tried without waiting; when they would wait, the call moves to a waiter
 * thread of its own that performs it blocking and answers the notification (struct
 * blocked). The notifier thread, which answers every notification of the sandbox,
 * never waits on a peer.
 *
 * Send addresses on internet sockets are read as the kernel reads them (inet_send_dest):
 * AF_UNSPEC dissolves an association only in connect(); on a send it is an internet
 * destination (UDP over IPv4) or no address at all (UDP over IPv6), decided as such.
 *
 * listen() on an unbound internet socket binds an ephemeral port: on a host-side socket
 * it needs an allow-bind rule for port 0, as bind() to port 0 does.
 *
 * Sends with an address on a stream socket: TCP ignores the address unless
 * MSG_FASTOPEN asks it to connect, so without that flag the address is dropped and the
 * data sent on the program's socket; with it, the send goes through the connect path
 * above (data carried with the SYN where the kernel can). sendmmsg with MSG_FASTOPEN
 * is refused (EOPNOTSUPP): no libc or runtime we know of emits it.
 *
 * DNS: see netns.c for the responder inside the sandbox's namespace, and the
 * comment above sup_net_dns_fd() for unnamespaced mode.
 *
 * State: struct sup_net (pending connects, the DNS socket) hangs off struct sup_ctx and
 * is used under ctx.lock only: by a notifier thread in handle_net() (dispatch.c takes the
 * lock around it), by the main loop in sup_net_event() and sup_net_dns_fd() (sup.c).
 * The DNS thread (dns_main) takes no lock: it reads only dns_fd and stopping, and the
 * net layer's pin table has a lock of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <linux/capability.h>
#include <linux/netlink.h>
#include <linux/sockios.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "creds.h"
#include "dispatch.h"
#include "log.h"
#include "macros.h"
#include "missing-seccomp.h"
#include "net.h"

#define ARG(c, i) ((c)->req->data.args[i])
#define SEND_MAX (1u << 20)  /* data copied per emulated send; stream sends may be partial */
#define IOV_MAX_EMU 1024     /* UIO_MAXIOV: the kernel's own limit (EMSGSIZE past it) */
#define CTL_MAX (128u << 10) /* control data per message: net.core.optmem_max's default */
#define RIGHTS_MAX 253       /* SCM_MAX_FD: fds one message may pass */
#define PENDING_MAX 128      /* blocking connects in flight at once */
#define BLOCKED_MAX 32       /* sends and unix connects waiting for their peers at once */
#define BLOCKED_TICK_MS 100  /* how often a waiter looks up (see struct blocked) */

/* A blocking connect waiting for its socket to become writable. */
struct pending {
	int sock;               /* ours (-1: free slot); the host-side socket or our dup */
	uint64_t id;            /* the notification to answer */
	int tracee_fd;          /* install sock here when connected; -1: nothing to install */
	unsigned fd_flags;      /* O_CLOEXEC as the program had it */
	char *data;             /* MSG_FASTOPEN: data still to send once connected */
	size_t len;
	int flags;
	bool fastopen;          /* a MSG_FASTOPEN send, not a connect */
	struct sockaddr_storage ss; /* the destination, to finish a connect with */
	socklen_t alen;
};

struct sup_net {
	struct pending pend[PENDING_MAX];
	int dns_fd;             /* UDP 127.0.0.1:53 inside the sandbox's namespace, or -1 */
	pthread_t dns_thread;   /* serves dns_fd (dns_main), when dns_running */
	int dns_wake;           /* eventfd: written at teardown, so the thread ends now */
	bool dns_running;
	ino_t sandbox_netns;    /* inode of the sandbox's network namespace, 0 = unknown */
	unsigned n_blocked;     /* waiters running (struct blocked) */
	pthread_cond_t blocked_gone;  /* signalled (under ctx.lock) as each waiter ends */
	atomic_bool stopping;   /* the run ends: waiters give up */
	bool warned_full;
};

static struct sup_net *state(struct sup_ctx *s)
{
	if (!s->netst) {
		s->netst = calloc(1, sizeof(*s->netst));
		if (!s->netst)
			return NULL;
		s->netst->dns_fd = -1;
		s->netst->dns_wake = -1;
		pthread_cond_init(&s->netst->blocked_gone, NULL);
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

static unsigned inet_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)(const void *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)(const void *)ss)->sin6_port);
	return 0;
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
	/* A loopback port a program of the sandbox serves is the sandbox's own, as on any
	 * loopback of one's own, even where a rule lets the host's same port be reached:
	 * a test suite's server on 127.0.0.1 stays its clients' under --allow-net
	 * 127.0.0.1. It reaches nothing outside the sandbox's namespace. */
	if (in_sandbox && net_sockaddr_is_loopback(ss) && sandbox_listens(c->s, ss, si->type)) {
		snprintf(c->verdict.rule, sizeof(c->verdict.rule),
			 "the sandbox's own loopback (its network namespace)");
		return ROUTE_LOCAL;
	}
	if (r == 0) {
		snprintf(c->verdict.rule, sizeof(c->verdict.rule), "%s", v.rule);
		return ROUTE_HOST;
	}
	refuse(c, -r, v.rule[0] ? v.rule : "network is denied by default");
	return ROUTE_DENIED;
}

/*
 * A host-side socket like the program's, with the options that shape a connection and
 * that the caller may set (not SO_MARK or SO_BINDTODEVICE, whose devices are the
 * sandbox's namespace's). The buffer sizes only where they differ from the new socket's
 * (a copy of a default would lock it and end the kernel's autotuning). Not TCP_MAXSEG,
 * whose value read before a connect is the default MSS, which set would clamp it. A
 * local address the program bound in its own namespace is not carried over either (a
 * host port needs an allow-bind rule). Made with the caller's credentials: the kernel
 * records the creator's fsuid as the socket's owner (sock_alloc()) and keeps its
 * credentials with the file, which is what a host firewall's owner match (xt_owner),
 * /proc/net/tcp and ss see. Made with ours, the sandbox's traffic would pass as root's.
 */
static int host_socket(struct sup_call *c, int old, const struct sockinfo *si)
{
	static const struct { int level, name; } opts[] = {
		{ SOL_SOCKET, SO_KEEPALIVE }, { SOL_SOCKET, SO_RCVTIMEO },
		{ SOL_SOCKET, SO_SNDTIMEO }, { SOL_SOCKET, SO_BROADCAST },
		{ SOL_SOCKET, SO_LINGER }, { SOL_SOCKET, SO_PRIORITY },
		{ IPPROTO_TCP, TCP_NODELAY }, { IPPROTO_TCP, TCP_KEEPIDLE },
		{ IPPROTO_TCP, TCP_KEEPINTVL }, { IPPROTO_TCP, TCP_KEEPCNT },
		{ IPPROTO_TCP, TCP_USER_TIMEOUT }, { IPPROTO_TCP, TCP_CORK },
		{ SOL_SOCKET, SO_REUSEADDR }, { SOL_SOCKET, SO_OOBINLINE },
		{ SOL_SOCKET, SO_RCVLOWAT }, { IPPROTO_TCP, TCP_NOTSENT_LOWAT },
		{ IPPROTO_TCP, TCP_CONGESTION }, { IPPROTO_TCP, TCP_WINDOW_CLAMP },
		{ IPPROTO_TCP, TCP_SYNCNT }, { IPPROTO_TCP, TCP_LINGER2 },
		{ IPPROTO_IP, IP_TOS }, { IPPROTO_IP, IP_TTL },
		{ IPPROTO_IPV6, IPV6_V6ONLY }, { IPPROTO_IPV6, IPV6_TCLASS },
		{ IPPROTO_IPV6, IPV6_UNICAST_HOPS },
	};
	int fd = creds_caller(c->tid, c->req->id, 0);

	if (fd < 0)
		return fd;
	fd = socket(si->domain, si->type | SOCK_CLOEXEC | (si->nonblock ? SOCK_NONBLOCK : 0),
		    si->protocol);
	if (fd < 0)
		return negative_errno();
	for (size_t i = 0; i < ELEMENTSOF(opts); i++) {
		char val[64];
		socklen_t l = sizeof(val);

		if ((opts[i].level == IPPROTO_TCP && si->type != SOCK_STREAM) ||
		    (opts[i].level == IPPROTO_IPV6 && si->domain != AF_INET6) ||
		    (opts[i].level == IPPROTO_IP && si->domain != AF_INET))
			continue;
		if (getsockopt(old, opts[i].level, opts[i].name, val, &l) == 0)
			(void)setsockopt(fd, opts[i].level, opts[i].name, val, l);
	}
	/* A buffer size the program chose reads otherwise than the fresh socket's default;
	 * the kernel keeps twice what is set (sock_setsockopt()), and locks it. */
	for (int name = SO_SNDBUF, k = 0; k < 2; name = SO_RCVBUF, k++) {
		int want, dflt;
		socklen_t l = sizeof(int);

		if (getsockopt(old, SOL_SOCKET, name, &want, &l) == 0 &&
		    getsockopt(fd, SOL_SOCKET, name, &dflt, &l) == 0 && want != dflt)
			(void)setsockopt(fd, SOL_SOCKET, name, &(int){ want / 2 }, sizeof(int));
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
		       const struct sockaddr_storage *ss, socklen_t alen, const char *data,
		       size_t len, int flags)
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
				       .flags = flags, .fastopen = data != NULL, .ss = *ss,
				       .alen = alen };
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
	r = pending_add(c, sock, tracee_fd, fd_flags, sa, len, data, data ? dlen : 0, flags);
	if (r < 0)
		return reply(c, r == -EAGAIN ? -EAGAIN : r);
	TAKE_FD(sock);
	c->outcome = CALL_REPLIED;
	snprintf(c->flags_text, sizeof(c->flags_text), "reply deferred until connected");
}

/*
 * The answer to a blocking program's connect, made by us without waiting: connect()
 * again, as the kernel's own blocking connect ends, which leaves the socket as that
 * would: connected (its state, not only the TCP one: the program's next connect() is
 * EISCONN, not a 0 that completes it) or, refused, unconnected (its next connect()
 * tries afresh, where one after a read of SO_ERROR would say ECONNABORTED). It waits
 * only while a handshake is under way (SYN_SENT, SYN_RECV), which a socket polled
 * writable is past, unless (unnamespaced: the program's own file description) another
 * thread of the program disconnected it and connected it again meanwhile: so only from
 * an ended handshake, and with O_NONBLOCK on the shared description all the same; this
 * runs on the loop thread, which must never wait on the sandbox.
 */
static int finish_connect(const struct pending *p)
{
	struct tcp_info ti;
	socklen_t tl = sizeof(ti);
	int err = EALREADY;

	if (getsockopt(p->sock, IPPROTO_TCP, TCP_INFO, &ti, &tl) == 0 &&
	    (ti.tcpi_state == TCP_ESTABLISHED || ti.tcpi_state == TCP_CLOSE)) {
		int fl = fcntl(p->sock, F_GETFL);
		bool set = fl >= 0 && !(fl & O_NONBLOCK);

		if (set)
			(void)fcntl(p->sock, F_SETFL, fl | O_NONBLOCK);
		err = connect(p->sock, (const struct sockaddr *)&p->ss, p->alen) < 0 ? errno : 0;
		if (set)
			(void)fcntl(p->sock, F_SETFL, fl);
	}
	if (err == EALREADY) { /* still under way, or no TCP socket: its error */
		socklen_t l = sizeof(err);

		if (getsockopt(p->sock, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
			err = errno;
	}
	return err == EISCONN ? 0 : err;
}

static void pending_finish(struct sup_ctx *s, struct pending *p)
{
	int so_err = 0, r = 0;
	socklen_t l = sizeof(so_err);

	epoll_ctl(s->epfd, EPOLL_CTL_DEL, p->sock, NULL);
	if (!p->fastopen)
		so_err = finish_connect(p);
	else if (getsockopt(p->sock, SOL_SOCKET, SO_ERROR, &so_err, &l) < 0)
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
/*
 * A name the policy allows is looked up on the host (getaddrinfo), which takes as long as
 * the host's resolver and the name's servers take: for a wildcard rule, servers the
 * program may choose. So queries are served by a thread of their own that holds no lock:
 * served by the main loop under ctx.lock, a slow lookup held up --timeout, the
 * operator's signals and every network call of the sandbox meanwhile.
 */
static void *dns_main(void *arg)
{
	struct sup_ctx *s = arg;
	struct sup_net *sn = s->netst;

	while (!atomic_load(&sn->stopping)) {
		/* dns_wake: every run's teardown joins this thread, and a tick's wait
		 * there was a tick added to every run */
		struct pollfd p[2] = { { .fd = sn->dns_fd, .events = POLLIN },
				       { .fd = sn->dns_wake, .events = POLLIN } };

		if (poll(p, 2, BLOCKED_TICK_MS) <= 0 || !(p[0].revents & POLLIN))
			continue;
		while (!atomic_load(&sn->stopping) && net_dns_serve_fd(s->net, sn->dns_fd) >= 0)
			;
	}
	return NULL;
}

int sup_net_dns_fd(struct sup_ctx *s, int fd)
{
	struct sup_net *sn = state(s);
	sigset_t all, old;
	int r;

	if (!sn || sn->dns_fd >= 0) {
		safe_close(fd);
		return sn ? -EEXIST : -ENOMEM;
	}
	(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	sn->dns_fd = fd;
	sn->dns_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	/* The process's signals stay with the main loop's signalfd. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = -pthread_create(&sn->dns_thread, NULL, dns_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0) {
		sn->dns_fd = -1;
		safe_close(fd);
		return r;
	}
	sn->dns_running = true;
	return 0;
}

void sup_net_free(struct sup_ctx *s)
{
	struct sup_net *sn = s->netst;

	if (!sn)
		return;
	/* Waiters notice within a tick; they use the listener, which is closed after us. */
	pthread_mutex_lock(&s->lock);
	atomic_store(&sn->stopping, true);
	while (sn->n_blocked)
		pthread_cond_wait(&sn->blocked_gone, &s->lock);
	pthread_mutex_unlock(&s->lock);
	pthread_cond_destroy(&sn->blocked_gone);
	/* at once, or once the lookup in progress is done (within a tick without the
	 * eventfd) */
	if (sn->dns_running) {
		uint64_t one = 1;

		if (sn->dns_wake >= 0)
			(void)!write(sn->dns_wake, &one, sizeof(one));
		pthread_join(sn->dns_thread, NULL);
	}
	safe_close(sn->dns_wake);
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
 * safely: "/proc/self/fd/<object>" to connect or send, the last name alone to bind
 * from the parent (bind_at()). *ret_pathfd keeps the object or parent open for the
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
	/* bind creates a name. connect (and a send) uses the socket: the kernel asks for
	 * write permission on its inode but not a writable mount (a socket on a read-only
	 * mount can be connected), so the policy decides it as a use, like a read: hidden,
	 * denied and unmapped paths are refused, read-only ones are not. */
	fd = creds_caller(c->tid, c->req->id, 0);
	if (fd < 0)
		return fd;
	fd = vfs_resolve(c->s->vfs, &caller, c->path,
			 call_want(c) | (binding ? VFS_WANT_PARENT : 0), name, &c->verdict);
	if (binding && fd == -EEXIST) { /* unix_bind_bsd(): a name already there */
		fd = -EADDRINUSE;
		c->verdict.err = EADDRINUSE;
	}
	if (fd < 0) {
		if (c->verdict.denied) {
			/* the rule's errno is the answer, not a success */
			c->policy_denied = true;
			c->err = -fd;
		}
		return fd;
	}
	*ret_pathfd = fd;
	memset(un->sun_path, 0, sizeof(un->sun_path));
	if (binding) {
		if ((size_t)snprintf(un->sun_path, sizeof(un->sun_path), "%s", name) >=
		    sizeof(un->sun_path))
			return -EINVAL; /* unix_validate_addr(): no longer than sun_path */
	} else {
		snprintf(un->sun_path, sizeof(un->sun_path), "/proc/self/fd/%d", fd);
	}
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(un->sun_path) + 1);
	return 0;
}

/*
 * continue_unix (ctx.h): a unix destination is decided here and the call left to the
 * kernel, which performs it as the caller: its pid and ids are what the peer reads
 * (SO_PEERCRED, SO_PASSCRED), it waits on its own (a full backlog, a full peer), and
 * its SCM_RIGHTS and SCM_CREDENTIALS are the kernel's to check. The sandbox may change
 * the address, or what its fd number holds, before the kernel reads them: the kernel
 * then finds a name in the sandbox's view, where every hidden or denied socket is
 * covered by a stub (ECONNREFUSED), and no socket of the sandbox's reaches the host's
 * network. len 0: no address (a send on a connected socket). True when the call is
 * continued or refused (c is filled).
 */
static bool unix_continued(struct sup_call *c, struct sockaddr_storage *ss, socklen_t len)
{
	_cleanup_close_ int pathfd = -1;
	int r;

	if (!c->s->continue_unix || (len && ss->ss_family != AF_UNIX))
		return false;
	if (len) {
		r = decide_unix(c, ss, &len, false, &pathfd);
		if (r < 0) {
			if (!c->policy_denied)
				reply(c, r);
			return true;
		}
	}
	c->outcome = CALL_CONTINUE;
	return true;
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
	case AF_NETLINK:
		/* Not a place on the network: nl_pid names the kernel (0) or another process's
		 * netlink socket, and only NETLINK_ROUTE sockets exist (the filter). libc's
		 * getifaddrs binds one and sends to the kernel; bind may also join groups
		 * (address and link events). Messages to other processes are refused. */
		if (!binding && *len >= sizeof(struct sockaddr_nl) &&
		    ((const struct sockaddr_nl *)(const void *)ss)->nl_pid != 0) {
			refuse(c, EACCES, "netlink messages go to the kernel only");
			return -EACCES;
		}
		return 0;
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
	net_sockaddr_format(ss, *ret_len, c->addr, sizeof(c->addr));
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
			target = host_socket(c, *sockp, si);
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

/* Copy an iovec array's data into one buffer of ours (*ret_data), at most cap bytes. */
static int read_iov(struct sup_call *c, uint64_t iov_addr, size_t iovcnt, size_t cap,
		    char **ret_data, size_t *ret_len)
{
	_cleanup_free_ struct iovec *iov = NULL;
	size_t got = 0, total = 0;
	int r;

	*ret_len = 0;
	if (iovcnt > IOV_MAX_EMU)
		return -EMSGSIZE;
	if (iovcnt) {
		iov = calloc(iovcnt, sizeof(*iov));
		if (!iov)
			return -ENOMEM;
		r = mem_read(c->tid, iov_addr, iov, iovcnt * sizeof(struct iovec));
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < iovcnt && total < cap; i++)
		total += MIN(iov[i].iov_len, cap - total);
	/* sized to the message: most are small, and this runs on every sendmsg */
	*ret_data = malloc(total ? total : 1);
	if (!*ret_data)
		return -ENOMEM;
	for (size_t i = 0; i < iovcnt && got < total; i++) {
		size_t n = MIN(iov[i].iov_len, total - got);
		r = mem_read(c->tid, (uint64_t)(uintptr_t)iov[i].iov_base, *ret_data + got, n);
		if (r < 0)
			return r;
		got += n;
	}
	*ret_len = got;
	return 0;
}

/* One message to send, copied out of the program's memory once: everything here is ours. */
struct outmsg {
	struct sockaddr_storage ss;
	socklen_t alen;           /* 0: no address */
	char *data;
	size_t len;
	char *ctl;                /* control data; its SCM_RIGHTS name our fds once translated */
	size_t ctl_len;
	int fds[RIGHTS_MAX];      /* our copies of the fds passed */
	size_t n_fds;
	bool creds;               /* carries SCM_CREDENTIALS the caller may claim (unix only) */
	int pathfd;               /* keeps a unix destination's resolved parent open, or -1 */
};

static void outmsg_done(struct outmsg *m)
{
	free(TAKE_PTR(m->data));
	free(TAKE_PTR(m->ctl));
	for (size_t i = 0; i < m->n_fds; i++)
		safe_close(m->fds[i]);
	m->n_fds = 0;
	m->pathfd = safe_close(m->pathfd);
}

/* A uid or gid as the caller names it (in its user namespace) as the host sees it,
 * through /proc/<tid>/uid_map or gid_map; -1 when it is not mapped. */
static int64_t host_id(pid_t tid, const char *map, uint32_t id)
{
	_cleanup_fclose_ FILE *f = NULL;
	char path[64], line[128];

	snprintf(path, sizeof(path), "/proc/%d/%s", tid, map);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long in, out, count;

		if (sscanf(line, "%lu %lu %lu", &in, &out, &count) == 3 && id >= in &&
		    id - in < count)
			return (int64_t)(out + (id - in));
	}
	return -1;
}

/* The caller's process as the host and as itself sees it, its real, effective and
 * saved ids as the host sees them (/proc/<tid>/status is read in our namespaces), and
 * its effective capabilities (over its own user namespace). */
struct caller_creds {
	pid_t tgid_host, tgid_own;
	uint32_t uid[3], gid[3];
	unsigned long long cap_eff;
};

static int read_creds(pid_t tid, struct caller_creds *cc)
{
	_cleanup_fclose_ FILE *f = NULL;
	char path[64], line[256];
	unsigned got = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Tgid: %d", &cc->tgid_host) == 1) {
			got |= 1;
		} else if (strncmp(line, "NStgid:", 7) == 0) {
			/* one column per pid namespace, the caller's own last */
			char *last = strrchr(line, '\t');
			if (last && sscanf(last, "%d", &cc->tgid_own) == 1)
				got |= 2;
		} else if (sscanf(line, "Uid: %u %u %u", &cc->uid[0], &cc->uid[1], &cc->uid[2]) == 3) {
			got |= 4;
		} else if (sscanf(line, "Gid: %u %u %u", &cc->gid[0], &cc->gid[1], &cc->gid[2]) == 3) {
			got |= 8;
		} else if (sscanf(line, "CapEff: %llx", &cc->cap_eff) == 1) {
			got |= 16;
		}
	}
	return got == 31 ? 0 : -ESRCH;
}

/*
 * SCM_CREDENTIALS name a pid, uid and gid that the kernel checks against the sender,
 * which is us: with our privileges any claim would pass, and a pid would be read in our
 * pid namespace. So the claim is checked here against the caller, as the kernel's
 * scm_check_creds() would check it: ids unmapped in its user namespace give EINVAL; it
 * may name its own process, one of its real/effective/saved uids (any mapped uid with
 * CAP_SETUID in its effective set, as the kernel allows) and likewise gids (CAP_SETGID),
 * else EPERM. Another process's pid is refused even to a caller with CAP_SYS_ADMIN (which
 * moat never leaves it). The claim is then rewritten as the host sees it, and sent with
 * the capabilities that let the kernel accept it from us (creds_send_claim()): the
 * peer gets the caller's credentials, in its own namespaces' view.
 */
static int translate_creds(struct sup_call *c, struct cmsghdr *h, struct caller_creds *cc,
			   bool *have_cc)
{
	struct ucred uc;
	int64_t uid, gid;
	int r;

	if (h->cmsg_len != CMSG_LEN(sizeof(uc)))
		return -EINVAL;
	if (!*have_cc) {
		r = read_creds(c->tid, cc);
		if (r < 0)
			return r;
		*have_cc = true;
	}
	memcpy(&uc, CMSG_DATA(h), sizeof(uc));
	uid = host_id(c->tid, "uid_map", uc.uid);
	gid = host_id(c->tid, "gid_map", uc.gid);
	if (uid < 0 || gid < 0)
		return -EINVAL;
	if (uc.pid != cc->tgid_own ||
	    (uid != cc->uid[0] && uid != cc->uid[1] && uid != cc->uid[2] &&
	     !(cc->cap_eff & (1ull << CAP_SETUID))) ||
	    (gid != cc->gid[0] && gid != cc->gid[1] && gid != cc->gid[2] &&
	     !(cc->cap_eff & (1ull << CAP_SETGID))))
		return -EPERM;
	uc = (struct ucred){ .pid = cc->tgid_host, .uid = (uid_t)uid, .gid = (gid_t)gid };
	memcpy(CMSG_DATA(h), &uc, sizeof(uc));
	return 0;
}

/*
 * SCM_RIGHTS carry the tracee's fd numbers: swap each for our copy of that fd;
 * SCM_CREDENTIALS are checked and rewritten (translate_creds); SO_MARK is refused. Every
 * header is checked
 * as the kernel's CMSG_OK does (no shorter than itself, inside the buffer), and a
 * message passes at most RIGHTS_MAX fds in all, as in the kernel (EINVAL).
 */
static int translate_rights(struct sup_call *c, struct outmsg *m)
{
	struct caller_creds cc;
	bool have_cc = false;
	size_t off = 0;
	int r;

	m->n_fds = 0;
	m->creds = false;
	while (off < m->ctl_len && m->ctl_len - off >= sizeof(struct cmsghdr)) {
		struct cmsghdr *h = (struct cmsghdr *)(void *)(m->ctl + off);

		if (h->cmsg_len < sizeof(*h) || h->cmsg_len > m->ctl_len - off)
			return -EINVAL;
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
			size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			int *p = (int *)(void *)CMSG_DATA(h);

			if (k > RIGHTS_MAX - m->n_fds)
				return -EINVAL;
			for (size_t i = 0; i < k; i++) {
				int fd = tracee_getfd(c, p[i]);
				if (fd < 0)
					return fd;
				m->fds[m->n_fds++] = fd;
				p[i] = fd;
			}
		} else if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_CREDENTIALS) {
			r = translate_creds(c, h, &cc, &have_cc);
			if (r < 0)
				return r;
			m->creds = true;
		} else if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SO_MARK) {
			/* a firewall mark needs CAP_NET_ADMIN over the host's network, which
			 * the sandbox does not hold; ours would pass */
			return -EPERM;
		}
		off += CMSG_ALIGN(h->cmsg_len);
	}
	return 0;
}

/* ---- calls that wait -------------------------------------------------------------------- */

/*
 * A send or a unix connect that would wait (a full peer, a full backlog) for a program
 * that asked to wait. The notifier must never wait on a peer: it answers every
 * notification of the sandbox. So the call moves to a thread of its own that performs
 * it as the kernel would for the program, blocking, and answers the notification when
 * it completes. A timer interrupts that thread every BLOCKED_TICK_MS (SIGUSR2, whose
 * handler has no SA_RESTART: sup.c) so that it notices a caller that went away (killed:
 * its notification is gone), the end of the run, and the socket's SO_SNDTIMEO, which
 * it keeps itself since each retry would start the kernel's timeout anew. At most
 * BLOCKED_MAX wait at once; past that the call gets EAGAIN, and moat says so.
 */
struct blocked {
	struct sup_ctx *s;
	uint64_t id;
	pid_t tid;
	int sock;                 /* our copy of the program's socket */
	bool connect;             /* else a send */
	bool stream;              /* a send may complete in parts */
	int flags;
	uint64_t mmsg;            /* sendmmsg: its entry (msg_len written, 1 returned); 0: none */
	size_t done;              /* bytes of m already sent */
	uint64_t deadline_ns;     /* from SO_SNDTIMEO; 0: none */
	struct outmsg m;
};

/* The result for the program, or -ESRCH when nobody waits for one any more. */
static int blocked_run(struct blocked *b)
{
	struct sup_net *sn = b->s->netst;

	for (;;) {
		struct iovec iov = { .iov_base = b->m.data + b->done, .iov_len = b->m.len - b->done };
		/* Control data goes with the first byte; a stream's later parts go without. */
		struct msghdr out = {
			.msg_name = b->m.alen ? &b->m.ss : NULL,
			.msg_namelen = b->m.alen,
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = b->done || !b->m.ctl_len ? NULL : b->m.ctl,
			.msg_controllen = b->done ? 0 : b->m.ctl_len,
		};
		ssize_t n;

		if (atomic_load(&sn->stopping) || !notify_id_valid(b->s->listener, b->id))
			return -ESRCH;
		if (b->deadline_ns && now_mono_ns() >= b->deadline_ns)
			return b->done ? (int)b->done : -EAGAIN;
		if (b->connect)
			n = connect(b->sock, (const struct sockaddr *)&b->m.ss, b->m.alen);
		else if (b->m.creds && !b->done)
			n = creds_send_claim(b->sock, &out, b->flags | MSG_NOSIGNAL);
		else
			n = sendmsg(b->sock, &out, b->flags | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return b->done ? (int)b->done : negative_errno();
		if (b->connect)
			return 0;
		b->done += (size_t)n;
		if (!b->stream || b->done >= b->m.len)
			return (int)b->done;
	}
}

static void blocked_reply(struct blocked *b, int r)
{
	if (b->mmsg && r >= 0) {
		unsigned sent = (unsigned)r;

		r = mem_write(b->tid, b->mmsg + offsetof(struct mmsghdr, msg_len), &sent,
			      sizeof(sent)) < 0 ? -EFAULT : 1;
	}
	if (notify_reply(b->s->listener, b->id, r < 0 ? 0 : r, r < 0 ? -r : 0) == -ENOENT)
		atomic_fetch_add(&b->s->n.gone, 1);
}

static void *blocked_main(void *arg)
{
	struct blocked *b = arg;
	struct sup_ctx *s = b->s;
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGUSR2 };
	struct itimerspec tick = {
		.it_interval.tv_nsec = BLOCKED_TICK_MS * 1000000L,
		.it_value.tv_nsec = BLOCKED_TICK_MS * 1000000L,
	};
	timer_t t;
	int r;

	sev._sigev_un._tid = gettid(); /* sigev_notify_thread_id: glibc 2.36 names no field */
	if (timer_create(CLOCK_MONOTONIC, &sev, &t) < 0) {
		r = negative_errno();
		log_warning("a blocking socket call cannot wait (timer: %s): it gets EAGAIN",
			    strerror(-r));
		r = -EAGAIN;
	} else {
		r = timer_settime(t, 0, &tick, NULL) < 0 ? -EAGAIN : blocked_run(b);
		timer_delete(t);
	}
	if (r != -ESRCH)
		blocked_reply(b, r);
	outmsg_done(&b->m);
	safe_close(b->sock);
	pthread_mutex_lock(&s->lock);
	s->netst->n_blocked--;
	pthread_cond_broadcast(&s->netst->blocked_gone);
	pthread_mutex_unlock(&s->lock);
	free(b);
	return NULL;
}

/*
 * Hand the rest of a call to a waiter: a send of m from byte done on, or (connect) a
 * connect to m's address. Takes what m owns; answers c (CALL_REPLIED). Called under
 * ctx.lock (handle_net). Returns 0 or -errno, m then untouched.
 */
static int blocked_start(struct sup_call *c, int sock, const struct sockinfo *si, bool connect_op,
			 struct outmsg *m, size_t done, int flags, uint64_t mmsg)
{
	struct sup_net *sn = state(c->s);
	struct timeval tv = { 0 };
	socklen_t l = sizeof(tv);
	pthread_attr_t attr;
	pthread_t th;
	struct blocked *b;
	int r;

	if (!sn)
		return -ENOMEM;
	if (sn->n_blocked >= BLOCKED_MAX) {
		if (!sn->warned_full)
			log_warning("%d socket calls already wait for their peers: more get EAGAIN",
				    BLOCKED_MAX);
		sn->warned_full = true;
		return -EAGAIN;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	*b = (struct blocked){ .s = c->s, .id = c->req->id, .tid = c->tid, .connect = connect_op,
			       .stream = si->type == SOCK_STREAM, .flags = flags, .mmsg = mmsg,
			       .done = done, .m = *m };
	b->sock = fcntl(sock, F_DUPFD_CLOEXEC, 3);
	if (b->sock < 0) {
		free(b);
		return negative_errno();
	}
	if (getsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, &l) == 0 && (tv.tv_sec || tv.tv_usec))
		b->deadline_ns = now_mono_ns() + (uint64_t)tv.tv_sec * 1000000000u +
				 (uint64_t)tv.tv_usec * 1000u;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* Created from a notifier thread, it inherits its mask: only SIGUSR2 unblocked. */
	r = -pthread_create(&th, &attr, blocked_main, b);
	pthread_attr_destroy(&attr);
	if (r < 0) {
		safe_close(b->sock);
		free(b);
		return r;
	}
	sn->n_blocked++;
	*m = (struct outmsg){ .pathfd = -1 };
	c->outcome = CALL_REPLIED;
	snprintf(c->flags_text, sizeof(c->flags_text), "reply deferred: the call waits for its peer");
	return 0;
}

/*
 * Send m on sock (the program's socket, or our host-side one at its fd) for the program.
 * The send is tried without waiting; when it would wait and the program asked to wait,
 * the rest goes to a waiter if may_defer (*deferred, m is then its). Returns bytes sent
 * or -errno.
 */
static int send_now(struct sup_call *c, int sock, const struct sockinfo *si, struct outmsg *m,
		    int flags, uint64_t mmsg, bool may_defer, bool *deferred)
{
	struct iovec iov = { .iov_base = m->data, .iov_len = m->len };
	struct msghdr out = {
		.msg_name = m->alen ? &m->ss : NULL,
		.msg_namelen = m->alen,
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = m->ctl_len ? m->ctl : NULL,
		.msg_controllen = m->ctl_len,
	};
	bool blocking = !si->nonblock && !(flags & MSG_DONTWAIT);
	ssize_t n = m->creds ? creds_send_claim(sock, &out, flags | MSG_NOSIGNAL | MSG_DONTWAIT)
			     : sendmsg(sock, &out, flags | MSG_NOSIGNAL | MSG_DONTWAIT);
	int r;

	if (n < 0 && (!blocking || errno != EAGAIN))
		return negative_errno();
	if (n >= 0 && (!blocking || si->type != SOCK_STREAM || (size_t)n == m->len))
		return (int)n;
	/* It would wait (a stream socket may have taken part of the data already). */
	if (!may_defer)
		return n > 0 ? (int)n : -EAGAIN;
	r = blocked_start(c, sock, si, false, m, n > 0 ? (size_t)n : 0, flags, mmsg);
	if (r < 0)
		return n > 0 ? (int)n : r;
	*deferred = true;
	return 0;
}

/* ---- sends ------------------------------------------------------------------------------ */

/*
 * The address of a send on an internet socket, as the kernel reads it. TCP ignores it
 * unless MSG_FASTOPEN asks for a connect (which refuses AF_UNSPEC). UDP over IPv4 reads
 * AF_UNSPEC as AF_INET, UDP over IPv6 as "no address" (the connected peer): AF_UNSPEC
 * dissolves an association only in connect(), never on a send. m->alen becomes 0 when
 * the address is ignored; a family no internet socket takes fails as in the kernel.
 */
static int inet_send_dest(const struct sockinfo *si, struct outmsg *m, int flags)
{
	bool stream = si->type == SOCK_STREAM;

	if (stream && !(flags & MSG_FASTOPEN)) {
		m->alen = 0;
		return 0;
	}
	if (m->ss.ss_family == AF_UNSPEC) {
		if (stream)
			return -EOPNOTSUPP;
		if (si->domain == AF_INET6) {
			m->alen = 0;
			return 0;
		}
		m->ss.ss_family = AF_INET;
	}
	if (is_inet(m->ss.ss_family))
		return 0;
	return si->domain == AF_INET6 && !stream ? -EINVAL : -EAFNOSUPPORT;
}

/*
 * A datagram to an internet destination: denied (-errno, c filled), or, namespaced from
 * a sandbox-side socket to an allowed destination, sent here from a host-side socket
 * that is then installed at the program's fd so that answers reach it (*sent, bytes
 * sent; *sockp follows). Otherwise 0: it goes out on *sockp as it is.
 */
static int inet_route(struct sup_call *c, int *sockp, const struct sockinfo *si,
		      struct outmsg *m, int flags, bool *sent)
{
	bool in_sb = in_sandbox_netns(c->s, *sockp);
	struct iovec iov = { .iov_base = m->data, .iov_len = m->len };
	struct msghdr out = {
		.msg_name = &m->ss,
		.msg_namelen = m->alen,
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = m->ctl_len ? m->ctl : NULL,
		.msg_controllen = m->ctl_len,
	};
	_cleanup_close_ int h = -1;
	ssize_t n;
	int r;

	switch (decide_inet(c, &m->ss, m->alen, si, in_sb)) {
	case ROUTE_DENIED:
		return -c->err;
	case ROUTE_HOST:
		if (in_sb)
			break;
		return 0;
	case ROUTE_LOCAL:
	default:
		return 0;
	}
	h = host_socket(c, *sockp, si);
	if (h < 0)
		return h;
	/* A fresh socket's send buffer is empty: this does not wait. */
	n = sendmsg(h, &out, flags | MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0)
		return negative_errno();
	r = install(c->s, c->req->id, h, (int)ARG(c, 0), tracee_cloexec(c->tid, (int)ARG(c, 0)));
	if (r < 0)
		return r;
	safe_close(*sockp);
	*sockp = TAKE_FD(h);
	*sent = true;
	return (int)n;
}

/*
 * Decide where m goes and send it. Returns bytes sent or -errno (a denial fills c).
 * single: a plain sendmsg/sendto, where MSG_FASTOPEN may connect; may_defer: the call may
 * wait in a waiter (mmsg: sendmmsg's entry). *replied: c is answered already.
 */
static int send_msg(struct sup_call *c, int *sockp, const struct sockinfo *si, struct outmsg *m,
		    int flags, uint64_t mmsg, bool single, bool may_defer, bool *replied)
{
	int r;

	/* first: every way out below sends this control data */
	r = translate_rights(c, m);
	if (r < 0)
		return r;
	/* Credentials are unix sockets' alone (the kernel refuses them on others, EINVAL).
	 * The caller's pid was read after its memory: it must still be waiting, so that
	 * its pid is still its own when the kernel looks it up. */
	if (si->domain != AF_UNIX)
		m->creds = false;
	else if (m->creds && !notify_id_valid(c->s->listener, c->req->id))
		return -ESRCH;
	if (m->alen && is_inet(si->domain)) {
		bool sent = false;

		r = inet_send_dest(si, m, flags);
		if (r < 0 || !m->alen)
			goto send;
		if (si->type == SOCK_STREAM) {
			/* MSG_FASTOPEN: a connect that carries data */
			if (!single)
				return -EOPNOTSUPP;
			*replied = true;
			inet_connect(c, sockp, si, &m->ss, m->alen, m->data, m->len,
				     flags & ~MSG_FASTOPEN);
			return 0;
		}
		r = inet_route(c, sockp, si, m, flags, &sent);
		if (r < 0 || sent)
			return r;
	} else if (m->alen) {
		r = decide_other(c, &m->ss, &m->alen, false, &m->pathfd);
	} else {
		r = 0;
	}
send:
	if (r < 0)
		return r;
	return send_now(c, *sockp, si, m, flags, mmsg, may_defer, replied);
}

/* Copy the program's struct msghdr at msg_addr, and what it points to, into m. */
static int read_msghdr(struct sup_call *c, uint64_t msg_addr, struct outmsg *m)
{
	struct msghdr mh;
	int r;

	r = mem_read(c->tid, msg_addr, &mh, sizeof(mh));
	if (r < 0)
		return r;
	if (mh.msg_name && mh.msg_namelen) {
		r = read_addr(c, (uint64_t)(uintptr_t)mh.msg_name, mh.msg_namelen, &m->ss, &m->alen);
		if (r < 0)
			return r;
	}
	r = read_iov(c, (uint64_t)(uintptr_t)mh.msg_iov, mh.msg_iovlen, SEND_MAX, &m->data, &m->len);
	if (r < 0)
		return r;
	if (mh.msg_controllen > CTL_MAX)
		return -ENOBUFS;
	if (mh.msg_controllen) {
		m->ctl = malloc(mh.msg_controllen);
		if (!m->ctl)
			return -ENOMEM;
		m->ctl_len = mh.msg_controllen;
		r = mem_read(c->tid, (uint64_t)(uintptr_t)mh.msg_control, m->ctl, m->ctl_len);
		if (r < 0)
			return r;
	}
	return 0;
}

/* One sendmsg on behalf of the tracee (see send_msg); *sockp is our copy of its socket. */
static int emulate_sendmsg(struct sup_call *c, int *sockp, const struct sockinfo *si,
			   uint64_t msg_addr, int flags, bool single, uint64_t mmsg,
			   bool may_defer, bool *ret_replied)
{
	struct outmsg m = { .pathfd = -1 };
	int r = read_msghdr(c, msg_addr, &m);

	if (r >= 0 && !notify_id_valid(c->s->listener, c->req->id))
		r = -ESRCH;
	if (r >= 0)
		r = send_msg(c, sockp, si, &m, flags, mmsg, single, may_defer, ret_replied);
	outmsg_done(&m);
	return r;
}

static void handle_sendto(struct sup_call *c)
{
	/* Only sendto with an address is notified (the filter checks args[4]). */
	struct outmsg m = { .pathfd = -1 };
	_cleanup_close_ int sock = -1;
	struct sockinfo si;
	bool replied = false;
	int r;

	m.len = MIN((size_t)ARG(c, 2), SEND_MAX);
	r = read_addr(c, ARG(c, 4), ARG(c, 5), &m.ss, &m.alen);
	if (r >= 0 && unix_continued(c, &m.ss, m.alen))
		return;
	if (r >= 0 && !(m.data = malloc(m.len ? m.len : 1)))
		r = -ENOMEM;
	if (r >= 0)
		r = mem_read(c->tid, ARG(c, 1), m.data, m.len);
	if (r >= 0 && !notify_id_valid(c->s->listener, c->req->id))
		r = -ESRCH;
	if (r >= 0)
		r = take_socket(c, &sock, &si);
	if (r >= 0)
		r = send_msg(c, &sock, &si, &m, (int)ARG(c, 3), 0, true, true, &replied);
	outmsg_done(&m);
	if (!replied && !c->policy_denied)
		reply(c, r);
}

/*
 * A unix stream or seqpacket connect waits while the listener's backlog is full. Tried
 * without waiting (O_NONBLOCK on the program's file description for the duration of the
 * call, as for internet connects); a wait goes to a waiter (struct blocked).
 */
static void unix_connect(struct sup_call *c, int sock, const struct sockinfo *si,
			 const struct sockaddr_storage *ss, socklen_t len, int *pathfd)
{
	struct outmsg m = { .ss = *ss, .alen = len, .pathfd = -1 };
	int fl = fcntl(sock, F_GETFL), r, err;

	if (fl >= 0)
		(void)fcntl(sock, F_SETFL, fl | O_NONBLOCK);
	r = connect(sock, (const struct sockaddr *)ss, len);
	err = r < 0 ? errno : 0;
	if (fl >= 0)
		(void)fcntl(sock, F_SETFL, fl);
	if (r == 0 || err != EAGAIN || fl < 0)
		return reply(c, -err);
	m.pathfd = TAKE_FD(*pathfd);
	r = blocked_start(c, sock, si, true, &m, 0, 0, 0);
	outmsg_done(&m);
	if (r < 0)
		reply(c, r);
}

/*
 * A unix socket's name is the string bind() was given: getsockname(), a connected
 * peer's getpeername() and a datagram's sender address read it back. Bound by its last
 * name alone from the parent the vfs resolved, made this thread's cwd, it reads as the
 * program's own did when that named a file of its cwd, and never names our fd table;
 * the one name is created where the parent is, whatever the sandbox changes meanwhile.
 * The cwd is this thread's alone: creds.c gives each notifier thread an fs struct of
 * its own, and decide_unix() took the caller's credentials, which a thread without one
 * never does.
 */
static int bind_at(int dirfd, int sock, const struct sockaddr_storage *ss, socklen_t len)
{
	int r;

	if (fchdir(dirfd) < 0)
		return negative_errno();
	r = bind(sock, (const struct sockaddr *)ss, len) < 0 ? negative_errno() : 0;
	if (chdir("/") < 0) /* no directory of the sandbox's kept busy by us */
		r = r < 0 ? r : negative_errno();
	return r;
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
	if (!binding && unix_continued(c, &ss, len))
		return;
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
	/* Where the kernel's view refuses the creates the policy refuses (ctx.h), a unix
	 * bind is checked, then the kernel binds the program's own name. */
	if (binding && ss.ss_family == AF_UNIX && c->s->kernel_binds) {
		c->outcome = CALL_CONTINUE;
		return;
	}
	if (!binding && ss.ss_family == AF_UNIX && si.type != SOCK_DGRAM && !si.nonblock)
		return unix_connect(c, sock, &si, &ss, len, &pathfd);
	if (binding && ss.ss_family == AF_UNIX && pathfd >= 0)
		r = bind_at(pathfd, sock, &ss, len);
	else
		r = RET_NERRNO(binding ? bind(sock, (struct sockaddr *)&ss, len)
				       : connect(sock, (struct sockaddr *)&ss, len));
	reply(c, r);
}

/*
 * listen() on an internet socket without a local port binds one (ephemeral, on every
 * address). In the host's network namespace (unnamespaced mode, or a host-side socket
 * we installed) that opens a host port as bind() would, so it is decided as a bind of
 * the socket's local address: port 0 when unbound, which only an allow-bind rule
 * covering port 0 allows. Performed on our copy (the same socket).
 */
static void handle_listen(struct sup_call *c)
{
	_cleanup_close_ int sock = -1;
	struct sockaddr_storage ss = { 0 };
	socklen_t len = sizeof(ss);
	struct sockinfo si;
	struct net_verdict v = { 0 };
	int r;

	/* No socket of the sandbox's is in the host's network (continue_unix): nothing to
	 * decide, and a listener made by the kernel for the caller gives its connecting
	 * peers the caller's credentials. */
	if (c->s->continue_unix) {
		c->outcome = CALL_CONTINUE;
		return;
	}
	r = take_socket(c, &sock, &si);
	if (r < 0)
		return reply(c, r);
	if (is_inet(si.domain) && !in_sandbox_netns(c->s, sock)) {
		if (getsockname(sock, (struct sockaddr *)&ss, &len) < 0 || !is_inet(ss.ss_family)) {
			memset(&ss, 0, sizeof(ss));
			ss.ss_family = (sa_family_t)si.domain;
			len = si.domain == AF_INET ? sizeof(struct sockaddr_in)
						   : sizeof(struct sockaddr_in6);
		}
		net_sockaddr_format(&ss, len, c->addr, sizeof(c->addr));
		r = c->s->net ? net_decide_bind(c->s->net, (const struct sockaddr *)&ss, len,
						si.type, &v)
			      : -EACCES;
		if (r < 0 && inet_port(&ss) == 0)
			return refuse(c, -r, "listen on an unbound socket binds a host port: "
					     "needs allow-bind for port 0 (or *)");
		if (r < 0)
			return refuse(c, -r, v.rule[0] ? v.rule : "listen needs an allow-bind rule");
		snprintf(c->verdict.rule, sizeof(c->verdict.rule), "%s", v.rule);
	}
	reply(c, listen(sock, (int)ARG(c, 1)) < 0 ? negative_errno() : 0);
}

/* A sendmsg on a unix socket, to a unix address or none: see unix_continued(). */
static bool unix_sendmsg_continued(struct sup_call *c, const struct sockinfo *si)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len = 0;
	struct msghdr mh;

	if (!c->s->continue_unix || si->domain != AF_UNIX ||
	    mem_read(c->tid, ARG(c, 1), &mh, sizeof(mh)) < 0)
		return false; /* emulated, which reports a bad pointer as it should */
	if (mh.msg_name && mh.msg_namelen &&
	    read_addr(c, (uint64_t)(uintptr_t)mh.msg_name, mh.msg_namelen, &ss, &len) < 0)
		return false;
	return unix_continued(c, &ss, len);
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
	case SC_listen:
		return handle_listen(c);
	case SC_sendto:
		return handle_sendto(c);
	case SC_sendmsg:
		r = take_socket(c, &sock, &si);
		if (r < 0)
			return reply(c, r);
		if (unix_sendmsg_continued(c, &si))
			return;
		r = emulate_sendmsg(c, &sock, &si, ARG(c, 1), (int)ARG(c, 2), true, 0, true,
				    &replied);
		if (replied)
			return;
		return c->policy_denied ? (void)0 : reply(c, r);
	case SC_sendmmsg: {
		/* the kernel reads vlen as an unsigned int and caps it at UIO_MAXIOV */
		unsigned vlen = MIN((unsigned)ARG(c, 2), (unsigned)IOV_MAX_EMU);
		unsigned done = 0;

		r = take_socket(c, &sock, &si);
		if (r < 0)
			return reply(c, r);
		for (; done < vlen; done++) {
			uint64_t m = ARG(c, 1) + done * sizeof(struct mmsghdr);
			unsigned sent;

			/* Only the first message may wait: after it the count so far is the
			 * answer, as when a later message fails. */
			r = emulate_sendmsg(c, &sock, &si, m, (int)ARG(c, 3), false, m, done == 0,
					    &replied);
			if (replied)
				return;
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
