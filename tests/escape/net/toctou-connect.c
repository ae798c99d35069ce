/* SPDX-License-Identifier: MIT */
/*
 * Invariant 1 for connect: a thread flips one sockaddr between an allowed and a denied
 * destination (port) as fast as it can while the main thread loops connect() on fresh
 * sockets with that same buffer. If the supervisor ever decided on one copy and
 * connected with another read, the denied server would accept. The server counts its
 * accepts from outside the sandbox; this program only reports what it saw.
 *
 *   toctou-connect ALLOWED_PORT DENIED_PORT ITERATIONS [fastopen]
 *   toctou-connect unix ALLOWED_PATH DENIED_PATH ITERATIONS
 * prints "connected=N refused=M other=K"; exit 0. The unix form flips the one byte in
 * which the two paths (of one length) differ, on a unix stream socket.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef MSG_FASTOPEN
#define MSG_FASTOPEN 0x20000000
#endif

static struct sockaddr_in addr;
static volatile uint16_t ports[2];
static struct sockaddr_un uaddr;
static size_t upos;
static char uchars[2];
static atomic_bool done;

static void *flipper(void *arg)
{
	(void)arg;
	for (unsigned i = 0; !atomic_load_explicit(&done, memory_order_relaxed); i++)
		((volatile struct sockaddr_in *)&addr)->sin_port = ports[i & 1];
	return NULL;
}

static void *uflipper(void *arg)
{
	(void)arg;
	for (unsigned i = 0; !atomic_load_explicit(&done, memory_order_relaxed); i++)
		((volatile char *)uaddr.sun_path)[upos] = uchars[i & 1];
	return NULL;
}

static int unix_race(char **argv)
{
	const char *a = argv[2], *b = argv[3];
	long n = atol(argv[4]), connected = 0, refused = 0, other = 0;
	pthread_t t;

	if (strlen(a) != strlen(b) || strlen(a) >= sizeof(uaddr.sun_path))
		return 2;
	while (a[upos] == b[upos])
		if (!a[upos++])
			return 2;
	uchars[0] = a[upos];
	uchars[1] = b[upos];
	uaddr.sun_family = AF_UNIX;
	memcpy(uaddr.sun_path, a, strlen(a) + 1);
	if (pthread_create(&t, NULL, uflipper, NULL) != 0)
		return 2;
	for (long i = 0; i < n; i++) {
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (s < 0)
			other++;
		else if (connect(s, (struct sockaddr *)&uaddr, sizeof(uaddr)) == 0)
			connected++;
		else if (errno == ECONNREFUSED || errno == ENOENT || errno == EACCES)
			refused++;
		else
			other++;
		if (s >= 0)
			close(s);
	}
	atomic_store(&done, true);
	pthread_join(t, NULL);
	printf("connected=%ld refused=%ld other=%ld\n", connected, refused, other);
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t t;
	long n, connected = 0, refused = 0, other = 0;
	bool fastopen = argc > 4 && strcmp(argv[4], "fastopen") == 0;

	if (argc > 4 && strcmp(argv[1], "unix") == 0)
		return unix_race(argv);
	if (argc < 4)
		return 2;
	ports[0] = htons((uint16_t)atoi(argv[1]));
	ports[1] = htons((uint16_t)atoi(argv[2]));
	n = atol(argv[3]);
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	addr.sin_port = ports[0];
	if (pthread_create(&t, NULL, flipper, NULL) != 0)
		return 2;
	for (long i = 0; i < n; i++) {
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), r;

		if (s < 0) {
			other++;
			continue;
		}
		if (fastopen)
			r = (int)sendto(s, "x", 1, MSG_FASTOPEN, (struct sockaddr *)&addr,
					sizeof(addr)) < 0 ? -1 : 0;
		else
			r = connect(s, (struct sockaddr *)&addr, sizeof(addr));
		if (r == 0)
			connected++;
		else if (errno == ECONNREFUSED || errno == EACCES)
			refused++;
		else
			other++;
		close(s);
	}
	atomic_store(&done, true);
	pthread_join(t, NULL);
	printf("connected=%ld refused=%ld other=%ld\n", connected, refused, other);
	return 0;
}
