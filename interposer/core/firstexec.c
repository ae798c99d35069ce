/* SPDX-License-Identifier: MIT */
/*
 * A warm start's first exec, by the fd of the file checked.
 *
 * An exec by name is checked, continued, and checked again at the exec stop, since the
 * kernel resolves the name again after the check (exectrace.c). The stop costs the
 * request two wake-ups and a check. A warm start's command is moat's own code until
 * that exec, alone in its sandbox: so when the request arrives, the supervisor finds the
 * program itself (execvp()'s search), checks it as the exec would be checked, opens it
 * and hands the fd over; the command runs execveat(fd, "", AT_EMPTY_PATH), which runs
 * the file behind the fd whatever has become of the name, and that is the file checked.
 * Nothing but the ELF interpreter is resolved by the kernel then (PT_INTERP, a name in
 * the file): it is checked here from the fd's bytes, and where a process outside the
 * sandbox could change those bytes or the directories on that name between this check
 * and the exec, the kernel can only find a file of the sandbox's own view, which holds
 * no hidden or denied content in the runs this is used for (continue_ro_opens: the same
 * guarantee the continued read-only opens rest on; Landlock allows execute only below
 * the mappings). Everything else goes by name as before: a #! script (its interpreter
 * would get /dev/fd/N as the script's name; the fd is close-on-exec, so that exec fails
 * with ENOENT and the command goes by name), a file the supervisor cannot read, an
 * interpreter the check refuses (the exec stop then kills it, as before), a run whose
 * kernel view does not cover hidden content.
 *
 * The trace stays the exec by name's: the audit record is the execve the command stands
 * for, with the name checked; so only the first name tried may be the program under
 * --audit (each failed name is a record of its own), and without it only names that fail
 * without a rule (ENOENT and the like leave no trace; a hidden or denied one is a denial
 * on -v and --events).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "ctx.h"
#include "firstexec.h"
#include "log.h"
#include "macros.h"
#include "vfs.h"

#define TASK_COMM_LEN 16

struct firstexec {
	pid_t tid;
	dev_t dev;
	ino_t ino;
	char path[PATH_MAX];
	struct vfs_verdict verdict;
};

/* The file's ELF interpreter (PT_INTERP) into interp, "" for none; -ENOEXEC for what the
 * fast way leaves to the exec by name (no ELF of our class: a #! script, say). */
static int elf_interp(int fd, char *interp, size_t len)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;

	interp[0] = '\0';
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(ph) || eh.e_phnum == 0 || eh.e_phnum > 65536 / sizeof(ph))
		return -ENOEXEC;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) !=
		    (ssize_t)sizeof(ph))
			return -ENOEXEC;
		if (ph.p_type != PT_INTERP)
			continue;
		/* The kernel takes the first one, NUL-terminated within its size. */
		if (ph.p_filesz < 2 || ph.p_filesz > len ||
		    pread(fd, interp, ph.p_filesz, (off_t)ph.p_offset) != (ssize_t)ph.p_filesz ||
		    interp[ph.p_filesz - 1] != '\0')
			return -ENOEXEC;
		return 0;
	}
	return 0;
}

/* The kernel names a process after the last component of the name it executes, but
 * after the file's own name when it executes an fd: the same only where the name does
 * not end in a symlink (python3 -> python3.11), as far as a comm shows (15 bytes). */
static bool same_comm(const char *fd_link, const char *name)
{
	char target[PATH_MAX];
	const char *a, *b;
	ssize_t n = readlink(fd_link, target, sizeof(target) - 1);

	if (n <= 0)
		return false;
	target[n] = '\0';
	a = strrchr(target, '/');
	b = strrchr(name, '/');
	a = a ? a + 1 : target;
	b = b ? b + 1 : name;
	return strncmp(a, b, TASK_COMM_LEN - 1) == 0;
}

/* One name: checked, opened, its interpreter checked. The fd, or -errno. */
static int try_name(struct sup_ctx *s, const struct vfs_caller *caller, const char *name,
		    struct firstexec *fe)
{
	char interp[PATH_MAX], leaf[NAME_MAX + 1], p[64];
	struct vfs_verdict iv = { 0 };
	_cleanup_close_ int opath = -1;
	struct stat st, ost;
	int fd, r;

	/* One walk: vfs_check_exec_file() is vfs_resolve()'s walk and decision for an exec,
	 * then a regular file that we may execute. Where that fails, it is asked after all,
	 * for the very errno and verdict the exec by name would get. */
	fe->verdict = (struct vfs_verdict){ 0 };
	opath = vfs_resolve(s->vfs, caller, name, VFS_WANT_EXEC, leaf, &fe->verdict);
	snprintf(p, sizeof(p), "/proc/self/fd/%d", opath);
	if (opath < 0 || fstat(opath, &ost) < 0 || !S_ISREG(ost.st_mode) ||
	    faccessat(AT_FDCWD, p, X_OK, AT_EACCESS) < 0) {
		fe->verdict = (struct vfs_verdict){ 0 };
		r = vfs_check_exec_file(s->vfs, caller, name, &fe->verdict, NULL);
		return r < 0 ? r : -EAGAIN;
	}
	if (!same_comm(p, name))
		return -EAGAIN;
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -EAGAIN; /* exec-only for us: the exec by name checks it at its stop */
	if (fstat(fd, &st) < 0 || st.st_dev != ost.st_dev || st.st_ino != ost.st_ino ||
	    elf_interp(fd, interp, sizeof(interp)) < 0) {
		close(fd);
		return -EAGAIN;
	}
	if (interp[0] && vfs_check_exec_file(s->vfs, caller, interp, &iv, NULL) < 0) {
		close(fd);
		return -EAGAIN;
	}
	fe->dev = st.st_dev;
	fe->ino = st.st_ino;
	str_copy(fe->path, sizeof(fe->path), name);
	return fd;
}

static const char *env_get(char *const *envp, const char *name)
{
	size_t n = strlen(name);

	for (; envp && *envp; envp++)
		if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

int firstexec_open(struct sup_ctx *s, pid_t pid, char *const *argv, char *const *envp,
		   const char *cwd)
{
	struct vfs_caller caller = { .pid = pid, .tgid = pid, .base = cwd };
	_cleanup_free_ struct firstexec *fe = NULL;
	const char *file = argv[0], *path, *p, *end;
	char name[PATH_MAX];
	int fd = -EAGAIN;

	if (!s->continue_ro_opens || !s->exectrace || !file[0])
		return -EAGAIN;
	fe = calloc(1, sizeof(*fe));
	if (!fe)
		return -ENOMEM;
	if (strchr(file, '/')) {
		fd = try_name(s, &caller, file, fe);
	} else {
		/* glibc's execvp(): each PATH entry in turn ("" is the cwd), on to the next
		 * after ENOENT, ESTALE, ENOTDIR, ENODEV, ETIMEDOUT and EACCES. */
		path = env_get(envp, "PATH");
		if (!path)
			path = "/bin:/usr/bin";
		if (strlen(file) > NAME_MAX)
			return -EAGAIN;
		for (p = path;; p = end + 1) {
			end = strchrnul(p, ':');
			if (snprintf(name, sizeof(name), "%.*s%s%s", (int)(end - p), p,
				     end > p ? "/" : "", file) >= (int)sizeof(name))
				return -EAGAIN;
			fd = try_name(s, &caller, name, fe);
			if (fd >= 0 || fd == -EAGAIN)
				break;
			/* A name the exec by name would have tried and failed on: only when
			 * that leaves no trace of its own. */
			if (s->audit || fe->verdict.denied ||
			    (fd != -ENOENT && fd != -ESTALE && fd != -ENOTDIR && fd != -ENODEV &&
			     fd != -ETIMEDOUT && fd != -EACCES) || !*end)
				return -EAGAIN;
		}
	}
	if (fd < 0)
		return fd;
	fe->tid = pid;
	pthread_mutex_lock(&s->lock);
	free(s->first_exec);
	s->first_exec = TAKE_PTR(fe);
	pthread_mutex_unlock(&s->lock);
	return fd;
}

bool firstexec_take(struct sup_ctx *s, pid_t tid, const struct stat *st, char *path,
		    size_t path_len, struct vfs_verdict *verdict)
{
	_cleanup_free_ struct firstexec *fe = NULL;

	pthread_mutex_lock(&s->lock);
	if (s->first_exec && s->first_exec->tid == tid)
		fe = TAKE_PTR(s->first_exec);
	pthread_mutex_unlock(&s->lock);
	if (!fe || !st || st->st_dev != fe->dev || st->st_ino != fe->ino)
		return false;
	str_copy(path, path_len, fe->path);
	*verdict = fe->verdict;
	return true;
}

void firstexec_drop(struct sup_ctx *s)
{
	free(s->first_exec);
	s->first_exec = NULL;
}
