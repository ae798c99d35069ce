/* SPDX-License-Identifier: MIT */
/*
 * Runs under moat --audit: loads a copy of a library from the workspace, makes a denied
 * call from inside it (moat captures the stack and so reads the module), then truncates
 * the copy after its loaded segments -- its section headers and symbols, which moat reads
 * for a stack and the program itself never touches -- and makes the denied call again.
 * A supervisor that kept the module mapped dies of SIGBUS on that second capture.
 *   trunc-fix LIBRARY
 * Prints "survived N" (the two calls' results) and exits 0.
 */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int copy(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (in < 0 || out < 0)
		return -1;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			return -1;
	close(in);
	return close(out);
}

/* The end of the last PT_LOAD's bytes in the file, rounded up to a page. */
static long loaded_end(const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	long end = 0, page = sysconf(_SC_PAGESIZE);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || pread(fd, &eh, sizeof(eh), 0) != sizeof(eh))
		return -1;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != sizeof(ph))
			return -1;
		if (ph.p_type == PT_LOAD && (long)(ph.p_offset + ph.p_filesz) > end)
			end = (long)(ph.p_offset + ph.p_filesz);
	}
	close(fd);
	return (end + page - 1) / page * page;
}

int main(int argc, char **argv)
{
	int (*deny)(void);
	void *h;
	long end;
	int a, b;

	if (argc != 2 || copy(argv[1], "./mod.so") < 0) {
		perror("copy");
		return 2;
	}
	end = loaded_end("./mod.so");
	h = dlopen("./mod.so", RTLD_NOW);
	deny = h ? (int (*)(void))dlsym(h, "mod_deny") : NULL;
	if (!deny || end <= 0) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 2;
	}
	a = deny();
	if (truncate("./mod.so", end) < 0) {
		perror("truncate");
		return 2;
	}
	b = deny();
	printf("survived %d %d\n", a, b);
	return 0;
}
