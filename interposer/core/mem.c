/* SPDX-License-Identifier: MIT */
/*
 * Bounded copies between the supervisor and the tracee.
 *
 * Everything the supervisor decides on is read exactly once, into its own buffer, and
 * then only that copy is used (docs/architecture.md invariant 1). process_vm_readv() is used rather
 * than /proc/<pid>/mem because it needs no fd per tracee; it fails a whole iovec that
 * crosses into an unmapped page, so strings are read page by page.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "macros.h"
#include "sup.h"

static size_t page_size(void)
{
	/* Notifier threads race to set it, all to the same value. */
	static _Atomic size_t ps;
	size_t v = atomic_load_explicit(&ps, memory_order_relaxed);

	if (!v) {
		v = (size_t)sysconf(_SC_PAGESIZE);
		atomic_store_explicit(&ps, v, memory_order_relaxed);
	}
	return v;
}

/* One copy out of the tracee (or the simulation's): the bytes copied, or -errno. */
static ssize_t vm_read(pid_t tid, uint64_t addr, void *buf, size_t len)
{
	const struct notify_ops *sim = notify_get_ops();
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	if (sim)
		return sim->mem_read(sim->userdata, tid, addr, buf, len);
	n = process_vm_readv(tid, &local, 1, &remote, 1, 0);
	return n < 0 ? -errno : n;
}

int mem_read(pid_t tid, uint64_t addr, void *buf, size_t len)
{
	ssize_t n;

	if (len == 0)
		return 0;
	if (addr == 0)
		return -EFAULT;
	n = vm_read(tid, addr, buf, len);
	if (n < 0)
		return n == -ESRCH ? -ESRCH : -EFAULT;
	if ((size_t)n != len)
		return -EFAULT;
	return 0;
}

int mem_read_string(pid_t tid, uint64_t addr, char *buf, size_t len)
{
	size_t got = 0;

	if (len == 0)
		return -ENAMETOOLONG; /* not even room for the terminator */
	if (addr == 0)
		return -EFAULT;
	while (got < len) {
		/* Never let one read cross a page boundary: the next page may be unmapped
		 * even though the string ends before it. */
		uint64_t cur = addr + got;
		size_t chunk = page_size() - (cur & (page_size() - 1));
		ssize_t n;
		char *nul;

		chunk = MIN(chunk, len - got);
		n = vm_read(tid, cur, buf + got, chunk);
		if (n <= 0)
			return n == -ESRCH ? -ESRCH : -EFAULT;
		nul = memchr(buf + got, '\0', (size_t)n);
		if (nul)
			return (int)(nul - buf);
		got += (size_t)n;
	}
	buf[len - 1] = '\0';
	return -ENAMETOOLONG;
}

int mem_write(pid_t tid, uint64_t addr, const void *buf, size_t len)
{
	const struct notify_ops *sim = notify_get_ops();
	struct iovec local = { .iov_base = (void *)buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	if (len == 0)
		return 0;
	if (addr == 0)
		return -EFAULT;
	n = sim ? sim->mem_write(sim->userdata, tid, addr, buf, len)
		: process_vm_writev(tid, &local, 1, &remote, 1, 0);
	if (n < 0 || (size_t)n != len)
		return -EFAULT;
	return 0;
}
