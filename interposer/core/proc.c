/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "proc-ops.h"

/* Read /proc/<pid>/<name> into buf (NUL-terminated); -ESRCH when the process is gone. */
static int read_proc(pid_t pid, const char *name, char *buf, size_t len)
{
	char p[64];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%d/%s", pid, name);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, len - 1);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	return 0;
}

/* Field n of /proc/<pid>/stat (4: ppid, 7: tty_nr), a number, or -ESRCH. Fields are
 * counted past the comm, which may contain anything, even ") ". */
static long read_stat_field(pid_t pid, int n)
{
	char buf[512], *s, *end;
	long v;

	if (read_proc(pid, "stat", buf, sizeof(buf)) < 0)
		return -ESRCH;
	s = strrchr(buf, ')');
	if (!s)
		return -ESRCH;
	s++; /* " S ppid pgrp session tty_nr ...": field 3 is the state */
	for (int f = 3; f < n && s; f++)
		s = strchr(s + 1, ' ');
	if (!s)
		return -ESRCH;
	v = strtol(s, &end, 10);
	return end == s ? -ESRCH : v;
}

static pid_t read_ppid(pid_t pid)
{
	return (pid_t)read_stat_field(pid, 4);
}

/* The last number of a /proc/<pid>/status field ("\nNSpid:", "\nTgid:"): the value as
 * the innermost namespace sees it. */
static pid_t read_status_field(pid_t pid, const char *field)
{
	char buf[4096], *l;
	pid_t last = -ESRCH;

	if (read_proc(pid, "status", buf, sizeof(buf)) < 0)
		return -ESRCH;
	l = strstr(buf, field);
	if (!l)
		return -ESRCH;
	for (char *s = l + strlen(field); *s && *s != '\n';) {
		char *end;
		long v = strtol(s, &end, 10);
		if (end == s)
			break;
		last = (pid_t)v;
		s = end;
	}
	return last;
}

static pid_t read_nspid(pid_t pid)
{
	return read_status_field(pid, "\nNSpid:");
}

static bool in_sandbox(const struct proc_map *m, pid_t host)
{
	if (m->keeper <= 0)
		return false;
	/* Threads are fine too: /proc/<tid> resolves to the thread's process. */
	/* The keeper itself is not part of the sandbox: it is a fork of the supervisor,
	 * with the supervisor's environment and memory, and the supervisor opens /proc
	 * files with its own privileges. Only its descendants are the sandbox. */
	if (host == m->keeper)
		return false;
	for (int depth = 0; depth < 4096 && host > 1; depth++) {
		host = read_ppid(host);
		if (host == m->keeper)
			return true;
	}
	return false;
}

static pid_t proc_to_sandbox(void *ud, pid_t host)
{
	const struct proc_map *m = ud;

	if (!in_sandbox(m, host))
		return -ESRCH;
	return m->namespaced ? read_nspid(host) : host;
}

/*
 * The host pid of the sandbox's pid want, searched below root through the children
 * files: processes only. With threads set, each process's other threads are looked at
 * too (a tid is a pid as well: /proc/<tid> and /proc/<pid>/task/<tid> name threads).
 * A child is listed in the children file of the thread that forked it, so every
 * thread's file is read: a multi-threaded runtime (Go's) forks from any thread.
 */
static pid_t find_nspid(pid_t root, pid_t want, int depth, bool threads);

static pid_t find_in_children(pid_t root, pid_t tid, pid_t want, int depth, bool threads)
{
	char p[64], buf[8192];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%d/task/%d/children", root, tid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	for (char *s = buf; *s;) {
		char *end;
		pid_t child = (pid_t)strtol(s, &end, 10), r;
		if (end == s)
			break;
		r = find_nspid(child, want, depth + 1, threads);
		if (r > 0)
			return r;
		s = end;
	}
	return -ESRCH;
}

static pid_t find_nspid(pid_t root, pid_t want, int depth, bool threads)
{
	char p[64];
	DIR *d;
	struct dirent *de;
	pid_t r = -ESRCH;

	if (depth > 0 && read_nspid(root) == want)
		return root;
	/* the leader first: a single-threaded process has no other thread */
	if (depth <= 64)
		r = find_in_children(root, root, want, depth, threads);
	if (r > 0)
		return r;
	snprintf(p, sizeof(p), "/proc/%d/task", root);
	d = opendir(p);
	if (!d)
		return -ESRCH;
	while (r < 0 && (de = readdir(d))) {
		pid_t t = (pid_t)strtol(de->d_name, NULL, 10);

		if (t <= 0 || t == root)
			continue;
		if (depth > 0 && threads && read_nspid(t) == want)
			r = t;
		else if (depth <= 64)
			r = find_in_children(root, t, want, depth, threads);
	}
	closedir(d);
	return r > 0 ? r : -ESRCH;
}

static pid_t proc_to_host(void *ud, pid_t sandbox_pid)
{
	const struct proc_map *m = ud;
	pid_t r;

	if (sandbox_pid <= 0)
		return -ESRCH;
	if (!m->namespaced)
		return in_sandbox(m, sandbox_pid) ? sandbox_pid : -ESRCH;
	/* processes first: the common case, and one status read per process */
	r = find_nspid(m->keeper, sandbox_pid, 0, false);
	return r > 0 ? r : find_nspid(m->keeper, sandbox_pid, 0, true);
}

/* Field 7 of /proc/<tid>/stat, tty_nr, is in the layout of a 32-bit dev_t. */
static dev_t proc_ctty_of(void *ud, pid_t host_tid)
{
	long tty = read_stat_field(host_tid, 7);

	(void)ud;
	return tty < 0 ? (dev_t)-1 : (dev_t)tty;
}

static pid_t proc_tgid_of(void *ud, pid_t host_tid)
{
	(void)ud;
	return read_status_field(host_tid, "\nTgid:");
}

const struct vfs_proc_ops *proc_map_init(struct proc_map *m)
{
	m->keeper = 0;
	m->namespaced = false;
	m->ops = (struct vfs_proc_ops){
		.userdata = m,
		.to_host = proc_to_host,
		.to_sandbox = proc_to_sandbox,
		.tgid_of = proc_tgid_of,
		.ctty_of = proc_ctty_of,
	};
	return &m->ops;
}
