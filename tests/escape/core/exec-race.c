/* SPDX-License-Identifier: MIT */
/*
 * Exec race probe. The supervisor checks an exec's path and lets the kernel run the
 * syscall, which resolves the path again; the sandbox tries to change what the path names
 * in between, so that a file the policy refuses is what runs.
 *
 *   exec-race flip OK NO MARKER SECONDS  a thread flips one path buffer between OK and NO
 *                                        (equal length) while children exec it
 *   exec-race swap LINK OTHER MARKER SECONDS
 *                                        LINK and OTHER are symlinks (to the allowed and
 *                                        the refused file); a thread exchanges them while
 *                                        children exec LINK
 *   exec-race mark MARKER                what the refused file does when it runs: create
 *                                        MARKER (the test looks for it from the host)
 *   exec-race texec PROGRAM [ARG...]     exec PROGRAM from a thread that is not the
 *                                        leader (the exec stop comes on the leader's pid)
 *   exec-race interp SRC DST INTERP      copy the ELF SRC to DST with its ELF interpreter
 *                                        (PT_INTERP) replaced by INTERP: the kernel loads
 *                                        that file too, and runs it first (the test makes
 *                                        it a refused copy of the dynamic loader);
 *                                        prints the interpreter SRC had
 *
 * Each child execs with argv {path, "mark", MARKER}: the allowed program (a copy of
 * true) ignores it, the refused one (a copy of this file) leaves the marker. Prints
 * "children=C exec_ok=E refused=R killed=K" and exits 0 iff the marker does not exist.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char path[4096], a[4096], b[4096];
static const char *link_path, *other_path;
static atomic_bool stop;

/* Hold each value a few microseconds, about one notification round trip. */
static void spin(unsigned long k)
{
	for (volatile unsigned s = (unsigned)((k * 2654435761u) % 4096); s > 0; s--)
		;
}

static void *flipper(void *unused)
{
	(void)unused;
	for (unsigned long k = 0; !atomic_load_explicit(&stop, memory_order_relaxed); k++) {
		memcpy(path, (k & 1) ? b : a, strlen(a) + 1);
		spin(k);
	}
	return NULL;
}

static void *swapper(void *unused)
{
	(void)unused;
	for (unsigned long k = 0; !atomic_load_explicit(&stop, memory_order_relaxed); k++) {
		if (syscall(SYS_renameat2, AT_FDCWD, link_path, AT_FDCWD, other_path,
			    2 /* RENAME_EXCHANGE */) < 0) {
			/* no exchange here: replace the link by a fresh one instead */
			char tmp[4200];

			snprintf(tmp, sizeof(tmp), "%s.new", link_path);
			unlink(tmp);
			if (symlink((k & 1) ? b : a, tmp) == 0)
				rename(tmp, link_path);
		}
		spin(k);
	}
	return NULL;
}

/* Copy SRC to DST with PT_INTERP's text replaced by interp (no longer than the old). */
static int patch_interp(const char *src, const char *dst, const char *interp)
{
	static char buf[1 << 24];
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	ssize_t n;
	int fd;

	fd = open(src, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf));
	if (fd >= 0)
		close(fd);
	if (n < (ssize_t)sizeof(*eh) || memcmp(buf, ELFMAG, SELFMAG) || buf[EI_CLASS] != ELFCLASS64)
		return 2;
	for (int i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr *ph = (Elf64_Phdr *)(buf + eh->e_phoff + (size_t)i * eh->e_phentsize);

		if ((char *)(ph + 1) > buf + n || ph->p_type != PT_INTERP)
			continue;
		if (ph->p_offset + ph->p_filesz > (size_t)n || strlen(interp) >= ph->p_filesz)
			return 2;
		printf("%.*s\n", (int)ph->p_filesz, buf + ph->p_offset); /* the old one */
		memset(buf + ph->p_offset, 0, ph->p_filesz);
		memcpy(buf + ph->p_offset, interp, strlen(interp));
		fd = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
		if (fd < 0 || write(fd, buf, (size_t)n) != n)
			return 2;
		close(fd);
		return 0;
	}
	return 2;
}

static void *thread_exec(void *argv)
{
	execv(((char **)argv)[0], (char **)argv);
	_exit(127);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long children = 0, exec_ok = 0, refused = 0, killed = 0;
	const char *marker;
	double end;
	pthread_t t;
	bool flip;

	if (argc >= 3 && strcmp(argv[1], "texec") == 0) {
		if (pthread_create(&t, NULL, thread_exec, argv + 2) != 0)
			return 2;
		pause();
	}
	if (argc == 5 && strcmp(argv[1], "interp") == 0)
		return patch_interp(argv[2], argv[3], argv[4]);
	if (argc >= 3 && strcmp(argv[1], "mark") == 0) {
		int fd = open(argv[2], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

		if (fd >= 0)
			close(fd);
		return 42;
	}
	if (argc != 6 || (strcmp(argv[1], "flip") && strcmp(argv[1], "swap"))) {
		fprintf(stderr, "usage: exec-race flip OK NO MARKER SECONDS | "
				"exec-race swap LINK OTHER MARKER SECONDS | exec-race mark MARKER\n");
		return 2;
	}
	flip = strcmp(argv[1], "flip") == 0;
	marker = argv[4];
	end = now() + atof(argv[5]);
	if (flip) {
		if (strlen(argv[2]) != strlen(argv[3]) || strlen(argv[2]) >= sizeof(path))
			return 2;
		strcpy(a, argv[2]);
		strcpy(b, argv[3]);
		memcpy(path, a, sizeof(path));
	} else {
		char ta[4096] = "", tb[4096] = "";

		link_path = argv[2];
		other_path = argv[3];
		if (readlink(link_path, ta, sizeof(ta) - 1) < 0 ||
		    readlink(other_path, tb, sizeof(tb) - 1) < 0)
			return 2;
		strcpy(a, ta);
		strcpy(b, tb);
		strcpy(path, link_path);
	}
	while (now() < end && access(marker, F_OK) < 0) {
		int st;
		pid_t pid;

		pid = fork();
		if (pid < 0)
			break;
		if (pid == 0) {
			/* The racing thread lives in the process that execs (flip: the buffer
			 * is this process's memory); for swap, the parent's thread does it. */
			if (flip && pthread_create(&t, NULL, flipper, NULL) != 0)
				_exit(3);
			for (int i = 0; i < 200; i++) {
				char *args[] = { path, "mark", (char *)marker, NULL };

				execv(path, args);
			}
			_exit(errno == EACCES || errno == ENOENT ? 4 : 5);
		}
		if (!flip && children == 0 && pthread_create(&t, NULL, swapper, NULL) != 0)
			return 2;
		children++;
		if (waitpid(pid, &st, 0) < 0)
			break;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			exec_ok++;
		else if (WIFEXITED(st) && WEXITSTATUS(st) == 4)
			refused++;
		else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
			killed++;
	}
	if (!flip && children > 0) {
		atomic_store(&stop, true);
		pthread_join(t, NULL);
	}
	printf("children=%ld exec_ok=%ld refused=%ld killed=%ld\n", children, exec_ok, refused,
	       killed);
	return access(marker, F_OK) < 0 ? 0 : 1;
}
