/* SPDX-License-Identifier: MIT */
/*
 * The in-container escape probe (tests/oci/escape-more.sh). The test image is busybox
 * and nothing else, so the cases of tests/escape/ that need more than a shell get this
 * one static program. Each command prints lines the test matches; every effect a test
 * relies on is checked from outside the container (a host file, a host server's log, a
 * clock), never taken from this output alone.
 *
 *   probe fifo-wait DIR          a thread opens the new FIFO DIR/f2 for reading (it waits
 *                                for a writer) while the main thread times 50 stat()s and
 *                                writes DIR/marker, then opens it for writing:
 *                                "blocked B stats N max_ms M read X"
 *   probe inotify DIR            watches DIR and DIR/sub ("watch NAME ok|error E"),
 *                                creates DIR/ready, waits for DIR/done, then prints the
 *                                names its events carried: "events NAME..."
 *   probe fdmeta FILE            opens FILE read-only and tries fchmod, fchown, fsetxattr
 *                                and fremovexattr on the fd: "CALL changed|refused E"
 *   probe deputy FILE            chmod, chown, utimensat, setxattr security.capability and
 *                                trusted.x by path, fchmod, fchown, fsetxattr
 *                                security.capability by fd: "CALL changed|refused E"
 *   probe block KIND DIR         one thread blocks sending on a unix stream or datagram
 *                                socketpair whose peer does not read, or connecting to a
 *                                full backlog (DIR/backlog.sock), while the main thread
 *                                times 200 stat()s: "blocked B stats N max_ms M"; then it
 *                                drains the peer: "unblocked R"
 *   probe udp ALLOWED DENIED     one datagram to 127.0.0.1:ALLOWED, one with AF_INET to
 *                                127.0.0.1:DENIED, then sendto, sendmsg and sendmmsg to
 *                                DENIED with sin_family AF_UNSPEC: "FORM sent N|error E"
 *   probe dns NAME IP PORT HOW   a DNS question for NAME to IP:PORT over UDP, HOW sendto or
 *                                connect (then send): "rcode R answers N", "error E" or
 *                                "timeout"
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sendmmsg */
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void outcome(const char *what, int r)
{
	if (r < 0)
		printf("%s refused %s\n", what, strerror(errno));
	else
		printf("%s changed\n", what);
	fflush(stdout);
}

/* The worst of n stat() calls, in ms: how long the supervisor kept the caller waiting. */
static double worst_stat(const char *path, int n)
{
	double worst = 0;
	struct stat st;

	for (int i = 0; i < n; i++) {
		double t0 = now_ms(), d;

		(void)stat(path, &st);
		d = now_ms() - t0;
		if (d > worst)
			worst = d;
	}
	return worst;
}

/* ---- fifo-wait ---- */

static char fifo_path[4096];
static char fifo_got[16];
static atomic_bool fifo_opened;

static void *fifo_reader(void *unused)
{
	int fd;
	ssize_t n;

	(void)unused;
	fd = open(fifo_path, O_RDONLY);
	atomic_store(&fifo_opened, true);
	if (fd < 0)
		return NULL;
	n = read(fd, fifo_got, sizeof(fifo_got) - 1);
	if (n > 0)
		fifo_got[n] = '\0';
	close(fd);
	return NULL;
}

static int fifo_wait(const char *dir)
{
	char marker[4096];
	pthread_t t;
	double worst;
	bool blocked;
	int fd;

	snprintf(fifo_path, sizeof(fifo_path), "%s/f2", dir);
	snprintf(marker, sizeof(marker), "%s/marker", dir);
	if (mkfifo(fifo_path, 0600) < 0) {
		printf("mkfifo error %s\n", strerror(errno));
		return 1;
	}
	pthread_create(&t, NULL, fifo_reader, NULL);
	usleep(500 * 1000);
	blocked = !atomic_load(&fifo_opened);
	worst = worst_stat(dir, 50);
	fd = open(marker, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		(void)!write(fd, "written while the reader waited\n", 32);
		close(fd);
	}
	fd = open(fifo_path, O_WRONLY);
	if (fd >= 0) {
		(void)!write(fd, "x", 1);
		close(fd);
	}
	pthread_join(t, NULL);
	printf("blocked %d stats 50 max_ms %.0f read %s\n", blocked, worst,
	       fifo_got[0] ? fifo_got : "-");
	return 0;
}

/* ---- inotify ---- */

static int watch_events(const char *dir)
{
	char sub[4096], ready[4096], done[4096];
	char buf[65536] __attribute__((aligned(__alignof__(struct inotify_event))));
	const char *names[2] = { dir, sub };
	int ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC), fd;
	ssize_t n;

	snprintf(sub, sizeof(sub), "%s/sub", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(done, sizeof(done), "%s/done", dir);
	if (ino < 0) {
		printf("inotify_init1 error %s\n", strerror(errno));
		return 1;
	}
	for (int i = 0; i < 2; i++) {
		if (inotify_add_watch(ino, names[i], IN_ALL_EVENTS) < 0)
			printf("watch %s error %s\n", i ? "sub" : "dir", strerror(errno));
		else
			printf("watch %s ok\n", i ? "sub" : "dir");
	}
	fflush(stdout);
	fd = open(ready, O_WRONLY | O_CREAT, 0644);
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < 200 && access(done, F_OK) < 0; i++)
		usleep(50 * 1000);
	usleep(200 * 1000);
	printf("events");
	while ((n = read(ino, buf, sizeof(buf))) > 0)
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;

			if (ev->len && ev->name[0])
				printf(" %s", ev->name);
			p += sizeof(*ev) + ev->len;
		}
	printf("\n");
	return 0;
}

/* ---- metadata ---- */

/* A version 2 file capability with cap_setuid, cap_net_raw and cap_net_admin permitted:
 * on an executable, root without those capabilities would gain them. */
static const uint32_t file_cap[5] = { 0x02000001, (1u << 7) | (1u << 12) | (1u << 13), 0,
				      0, 0 };

static int fdmeta(const char *file)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		printf("open error %s\n", strerror(errno));
		return 1;
	}
	outcome("fchmod", fchmod(fd, 0777));
	outcome("fchown", fchown(fd, 12345, 12345));
	outcome("fsetxattr", fsetxattr(fd, "user.x", "1", 1, 0));
	outcome("fremovexattr", fremovexattr(fd, "user.keep"));
	return 0;
}

static int deputy(const char *file)
{
	struct timespec zero[2] = { { 0, 0 }, { 0, 0 } };
	int fd;

	outcome("chmod", chmod(file, 04777));
	outcome("chown", chown(file, 12345, 12345));
	outcome("utimensat", utimensat(AT_FDCWD, file, zero, 0));
	outcome("setxattr-security.capability",
		setxattr(file, "security.capability", file_cap, sizeof(file_cap), 0));
	outcome("setxattr-trusted.x", setxattr(file, "trusted.x", "1", 1, 0));
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		printf("open error %s\n", strerror(errno));
		return 0;
	}
	outcome("fchmod", fchmod(fd, 04777));
	outcome("fchown", fchown(fd, 12345, 12345));
	outcome("fsetxattr-security.capability",
		fsetxattr(fd, "security.capability", file_cap, sizeof(file_cap), 0));
	return 0;
}

/* ---- block ---- */

static int block_fd = -1;
static const char *block_kind, *block_sock;
static long block_result = -1;
static int block_errno;
static atomic_bool block_done;

static void *blocker(void *unused)
{
	static char chunk[65536];
	long total = 0;

	(void)unused;
	if (strcmp(block_kind, "stream") == 0) {
		for (int i = 0; i < 64 && !block_errno; i++) { /* more than the buffers hold */
			ssize_t n = send(block_fd, chunk, sizeof(chunk), 0);

			if (n < 0)
				block_errno = errno;
			else
				total += n;
		}
	} else if (strcmp(block_kind, "dgram") == 0) {
		for (int i = 0; i < 2000 && !block_errno; i++) /* the queue holds far fewer */
			if (send(block_fd, chunk, 1024, 0) < 0)
				block_errno = errno;
			else
				total++;
	} else {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", block_sock);
		for (int i = 0; i < 8; i++) { /* a backlog of 0 takes one or two */
			int c = socket(AF_UNIX, SOCK_STREAM, 0);

			if (connect(c, (struct sockaddr *)&sa, sizeof(sa)) == 0)
				total++;
			else if (!block_errno)
				block_errno = errno;
		}
	}
	block_result = total;
	atomic_store(&block_done, true);
	return NULL;
}

static int block(const char *kind, const char *dir)
{
	static char sock[sizeof(((struct sockaddr_un *)0)->sun_path)], drain[1 << 16];
	int sv[2] = { -1, -1 }, srv = -1;
	pthread_t t;
	double worst;
	bool blocked;

	block_kind = kind;
	if (strcmp(kind, "stream") == 0 || strcmp(kind, "dgram") == 0) {
		if (socketpair(AF_UNIX, kind[0] == 's' ? SOCK_STREAM : SOCK_DGRAM, 0, sv) < 0)
			goto fail;
		block_fd = sv[0];
	} else {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		if ((size_t)snprintf(sock, sizeof(sock), "%s/backlog.sock", dir) >= sizeof(sock)) {
			errno = ENAMETOOLONG;
			goto fail;
		}
		memcpy(sa.sun_path, sock, sizeof(sock));
		unlink(sock);
		block_sock = sock;
		srv = socket(AF_UNIX, SOCK_STREAM, 0);
		if (srv < 0 || bind(srv, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
		    listen(srv, 0) < 0)
			goto fail;
	}
	pthread_create(&t, NULL, blocker, NULL);
	usleep(500 * 1000);
	blocked = !atomic_load(&block_done);
	worst = worst_stat(dir, 200);
	printf("blocked %d stats 200 max_ms %.0f\n", blocked, worst);
	fflush(stdout);
	for (double end = now_ms() + 10000; !atomic_load(&block_done) && now_ms() < end;) {
		struct pollfd p = { .fd = srv >= 0 ? srv : sv[1], .events = POLLIN };

		if (poll(&p, 1, 200) <= 0)
			continue;
		if (srv >= 0)
			(void)accept(srv, NULL, NULL); /* held open: the backlog stays drained */
		else
			(void)!recv(sv[1], drain, sizeof(drain), 0);
	}
	if (!atomic_load(&block_done)) {
		printf("unblocked no\n");
		return 1;
	}
	pthread_join(t, NULL);
	if (block_errno)
		printf("unblocked error %s\n", strerror(block_errno));
	else
		printf("unblocked %ld\n", block_result);
	return 0;
fail:
	printf("setup error %s\n", strerror(errno));
	return 1;
}

/* ---- udp ---- */

static struct sockaddr_in loopback(int port, int family)
{
	struct sockaddr_in a = { .sin_family = (sa_family_t)family,
				 .sin_port = htons((uint16_t)port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

static void sent(const char *form, long r)
{
	if (r < 0)
		printf("%s error %s\n", form, strerror(errno));
	else
		printf("%s sent %ld\n", form, r);
	fflush(stdout);
}

static int udp(int allowed, int denied)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in ok = loopback(allowed, AF_INET), in = loopback(denied, AF_INET),
			   un = loopback(denied, AF_UNSPEC);
	char m1[] = "unspec-sendmsg", m2[] = "unspec-sendmmsg";
	struct iovec v1 = { m1, sizeof(m1) - 1 }, v2 = { m2, sizeof(m2) - 1 };
	struct msghdr mh = { .msg_name = &un, .msg_namelen = sizeof(un), .msg_iov = &v1,
			     .msg_iovlen = 1 };
	struct mmsghdr mm = { .msg_hdr = { .msg_name = &un, .msg_namelen = sizeof(un),
					   .msg_iov = &v2, .msg_iovlen = 1 } };

	/* the one allowed destination first: a socket moat has let through once */
	sent("allowed", sendto(s, "allowed", 7, 0, (struct sockaddr *)&ok, sizeof(ok)));
	sent("inet", sendto(s, "inet-sendto", 11, 0, (struct sockaddr *)&in, sizeof(in)));
	sent("sendto", sendto(s, "unspec-sendto", 13, 0, (struct sockaddr *)&un, sizeof(un)));
	sent("sendmsg", sendmsg(s, &mh, 0));
	sent("sendmmsg", sendmmsg(s, &mm, 1, 0));
	return 0;
}

/* ---- dns ---- */

static int dns(const char *name, const char *ip, int port, const char *how)
{
	unsigned char q[512], r[512];
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	size_t len = 12;
	const char *p = name;
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct pollfd pf = { .fd = s, .events = POLLIN };
	ssize_t n;
	long rc;

	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1 || strlen(name) > 250)
		return 2;
	memset(q, 0, 12);
	q[0] = 0x4d; /* id */
	q[1] = 0x6f;
	q[2] = 0x01; /* recursion desired */
	q[5] = 1;    /* one question */
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);

		q[len++] = (unsigned char)l;
		memcpy(q + len, p, l);
		len += l;
		p += l + (dot ? 1 : 0);
	}
	q[len++] = 0;
	q[len++] = 0; /* type A, class IN */
	q[len++] = 1;
	q[len++] = 0;
	q[len++] = 1;
	if (strcmp(how, "connect") == 0) {
		rc = connect(s, (struct sockaddr *)&a, sizeof(a));
		if (rc == 0)
			rc = send(s, q, len, 0);
	} else {
		rc = sendto(s, q, len, 0, (struct sockaddr *)&a, sizeof(a));
	}
	if (rc < 0) {
		printf("error %s\n", strerror(errno));
		return 0;
	}
	if (poll(&pf, 1, 2000) <= 0) {
		printf("timeout\n");
		return 0;
	}
	n = recv(s, r, sizeof(r), 0);
	if (n < 12) {
		printf("error short answer\n");
		return 0;
	}
	printf("rcode %d answers %d\n", r[3] & 0xf, (r[6] << 8) | r[7]);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && strcmp(argv[1], "fifo-wait") == 0)
		return fifo_wait(argv[2]);
	if (argc == 3 && strcmp(argv[1], "inotify") == 0)
		return watch_events(argv[2]);
	if (argc == 3 && strcmp(argv[1], "fdmeta") == 0)
		return fdmeta(argv[2]);
	if (argc == 3 && strcmp(argv[1], "deputy") == 0)
		return deputy(argv[2]);
	if (argc == 4 && strcmp(argv[1], "block") == 0)
		return block(argv[2], argv[3]);
	if (argc == 4 && strcmp(argv[1], "udp") == 0)
		return udp(atoi(argv[2]), atoi(argv[3]));
	if (argc == 6 && strcmp(argv[1], "dns") == 0)
		return dns(argv[2], argv[3], atoi(argv[4]), argv[5]);
	fprintf(stderr, "usage: probe fifo-wait|inotify|fdmeta|deputy|block|udp|dns ...\n");
	return 2;
}
