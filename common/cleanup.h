/* SPDX-License-Identifier: MIT */
/*
 * __attribute__((cleanup)) helpers in the manner of systemd's cleanup-fundamental.h.
 * Ownership leaves a scope with TAKE_PTR() / TAKE_FD().
 */
#pragma once

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void freep(void *p)
{
	free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

/* A NULL-terminated array of malloc'd strings, itself malloc'd (an envp we build). */
static inline void strv_free(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}
static inline void strv_freep(char ***v)
{
	strv_free(*v);
}
#define _cleanup_strv_ _cleanup_(strv_freep)

/* close() that keeps errno, accepts -1, and returns -1 so that "fd = safe_close(fd)" works. */
static inline int safe_close(int fd)
{
	if (fd >= 0) {
		int saved = errno;
		close(fd);
		errno = saved;
	}
	return -1;
}

static inline void closep(int *fd)
{
	safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Kill and reap a child we forked (crun's cleanup_pid). */
static inline void killreap_pidp(pid_t *pid)
{
	if (*pid > 0) {
		kill(*pid, SIGKILL);
		while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
}
#define _cleanup_pid_ _cleanup_(killreap_pidp)

/* Generate a "void fooo_freep(struct foo **)" for a destructor "foo_free(struct foo *)". */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                                    \
	static inline void func##p(type *p)                                                        \
	{                                                                                          \
		if (*p)                                                                            \
			func(*p);                                                                  \
	}

#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _p = (p);                                                            \
		(p) = NULL;                                                                        \
		_p;                                                                                \
	})

#define TAKE_FD(fd)                                                                                \
	({                                                                                         \
		int _fd = (fd);                                                                    \
		(fd) = -1;                                                                         \
		_fd;                                                                               \
	})

#include <dirent.h>
static inline void closedirp_(DIR **d)
{
	if (*d)
		closedir(*d);
}
