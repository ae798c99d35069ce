/* SPDX-License-Identifier: MIT */
/*
 * TOCTOU probe (docs/architecture.md invariant 1). A second thread flips one path buffer between
 * an allowed file and a hidden one while the main thread calls openat on it N times.
 * A supervisor that checked one copy of the path and opened another would sooner or
 * later hand us the hidden file; we tell which file we got by its content.
 *
 * usage: toctou ALLOWED HIDDEN [N [rw|path]]   (both paths of equal length)
 * rw: the opens are O_RDWR, which --audit checks and continues like a read-only one
 * (creates and write opens, docs/threat-model.md "Native creates"); a stub meets its
 * read-only bind (EROFS, counted as other).
 * path: the opens are O_PATH (checked, then continued namespaced), each fd then opened
 * for reading through /proc/self/fd/N, which is what an O_PATH fd can be read by.
 * prints: "allowed=A hidden=H enoent=E other=O" and exits 0 iff hidden == 0 and A > 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[4096];
static char a[4096], h[4096];
static atomic_bool stop;

/* Hold each value for a while (a few microseconds, the scale of one notification round
 * trip) so that the path can change between the tracee's syscall entry and the moment
 * a supervisor reads or re-reads it, and both values are seen often. */
static void *flipper(void *unused)
{
	(void)unused;
	for (unsigned long k = 0; !atomic_load_explicit(&stop, memory_order_relaxed); k++) {
		size_t len = strlen(a) + 1;

		memcpy(path, (k & 1) ? h : a, len);
		for (volatile unsigned spin = (k * 2654435761u) % 4096; spin > 0; spin--)
			;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 3 ? atol(argv[3]) : 100000, allowed = 0, hidden = 0, enoent = 0, other = 0;
	bool opath = argc > 4 && strcmp(argv[4], "path") == 0;
	int oflags = argc > 4 && strcmp(argv[4], "rw") == 0 ? O_RDWR : opath ? O_PATH : O_RDONLY;
	pthread_t t;

	if (argc < 3 || strlen(argv[1]) != strlen(argv[2]) || strlen(argv[1]) >= sizeof(path)) {
		fprintf(stderr, "usage: toctou ALLOWED HIDDEN [N [rw|path]] (paths of equal length)\n");
		return 2;
	}
	strcpy(a, argv[1]);
	strcpy(h, argv[2]);
	memcpy(path, a, sizeof(path));
	if (pthread_create(&t, NULL, flipper, NULL) != 0)
		return 2;
	for (long i = 0; i < n; i++) {
		char buf[64] = { 0 };
		int fd = openat(AT_FDCWD, path, oflags | O_CLOEXEC);

		if (fd >= 0 && opath) {
			char proc[64];
			int path_fd = fd;

			snprintf(proc, sizeof(proc), "/proc/self/fd/%d", path_fd);
			fd = open(proc, O_RDONLY | O_CLOEXEC);
			close(path_fd);
		}
		if (fd < 0) {
			if (errno == ENOENT)
				enoent++;
			else
				other++;
			continue;
		}
		if (read(fd, buf, sizeof(buf) - 1) < 0)
			other++;
		else if (strncmp(buf, "HIDDEN", 6) == 0)
			hidden++;
		else if (strncmp(buf, "ALLOWED", 7) == 0)
			allowed++;
		else
			other++;
		close(fd);
	}
	atomic_store(&stop, true);
	pthread_join(t, NULL);
	printf("allowed=%ld hidden=%ld enoent=%ld other=%ld\n", allowed, hidden, enoent, other);
	return hidden == 0 && allowed > 0 ? 0 : 1;
}
