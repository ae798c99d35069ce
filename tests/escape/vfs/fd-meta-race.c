/* SPDX-License-Identifier: MIT */
/*
 * fd-metadata race probe (docs/architecture.md invariant 1). fchmod, fchown, fsetxattr and
 * fremovexattr name their file by an fd number, and the fd table is the process's to
 * change at any moment: a second thread dup2()s a read-only file and a writable one onto
 * the same number in turn while the main thread calls fchmod and fsetxattr on that
 * number N times. A supervisor that decided on one file and acted on whatever the
 * number meant a moment later would change the read-only one.
 *
 * usage: fd-meta-race WRITABLE READONLY [N]
 * prints: "ok=A refused=R other=O" (each call's outcome); exit 0 unless set-up failed.
 * Whether the read-only file changed is for the caller to check from outside.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define TARGET 100

static int wfd, rfd;
static atomic_bool stop;

static void *flipper(void *unused)
{
	(void)unused;
	for (unsigned long k = 0; !atomic_load_explicit(&stop, memory_order_relaxed); k++) {
		dup2((k & 1) ? rfd : wfd, TARGET);
		for (volatile unsigned spin = (k * 2654435761u) % 2048; spin > 0; spin--)
			;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 3 ? atol(argv[3]) : 20000, ok = 0, refused = 0, other = 0;
	pthread_t t;

	if (argc < 3) {
		fprintf(stderr, "usage: fd-meta-race WRITABLE READONLY [N]\n");
		return 2;
	}
	wfd = open(argv[1], O_RDONLY | O_CLOEXEC);
	rfd = open(argv[2], O_RDONLY | O_CLOEXEC);
	if (wfd < 0 || rfd < 0 || dup2(wfd, TARGET) < 0) {
		perror("open");
		return 2;
	}
	if (pthread_create(&t, NULL, flipper, NULL) != 0)
		return 2;
	for (long i = 0; i < n; i++) {
		int r = (i & 1) ? fsetxattr(TARGET, "user.race", "1", 1, 0) :
				  fchmod(TARGET, 04777);

		if (r == 0)
			ok++;
		else if (errno == EROFS || errno == EACCES || errno == EPERM)
			refused++;
		else
			other++;
	}
	atomic_store(&stop, true);
	pthread_join(t, NULL);
	printf("ok=%ld refused=%ld other=%ld\n", ok, refused, other);
	return 0;
}
