/* SPDX-License-Identifier: MIT */
/*
 * dispatch_one() without a kernel round trip: hand-made seccomp notifications go in
 * through the notify_ops seam (sup.h), the answers come out of it. The "tracee" is this
 * process (its /proc entries, its fds; its memory is an arena the simulation copies
 * from and to, unmapped around it as far as dispatch can tell), the policy an
 * unnamespaced vfs over a scratch directory and a net with one rule. Each case checks
 * what the answer did: the file an installed fd is, the bytes a stat wrote, whether a
 * file was created, whether a listener got a connection.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

#include "audit.h"
#include "creds.h"
#include "dispatch.h"
#include "error.h"
#include "log.h"
#include "net.h"
#include "sc.h"
#include "sup.h"
#include "vfs.h"

/* What the simulated kernel saw of one notification. */
struct sim {
	bool id_valid;          /* the answer to every ID_VALID, and whether a reply lands */
	int id_asks;            /* ID_VALID asked */
	int replies;            /* replies and continues */
	int64_t val;
	int err;
	bool cont;
	int addfds;
	int installed;          /* our dup of the fd dispatch installed, or -1 */
	/* the path a read of flip_addr finds the next time: a program changing its
	 * memory after the supervisor's copy */
	uint64_t flip_addr;
	const char *flip_to;
	int reads_of_flip;
};

static struct sim S;
/* The tracee's memory: what the program would have passed pointers to. */
#define ARENA_SIZE (64 * 1024)
static char *arena;
static size_t arena_used;
static char T[] = "/tmp/moat-iut-dispatch-XXXXXX";
static char ok_path[PATH_MAX], env_path[PATH_MAX], new_path[PATH_MAX];
static struct vfs *V;
static struct net *N;
static struct sup_ctx ctx;
static struct tracee_cache tc;
static uint64_t next_id = 1;

static int sim_recv(void *ud, struct seccomp_notif *req)
{
	(void)ud;
	(void)req;
	return -ENOSYS; /* the cases hand their requests to dispatch_one() directly */
}

static bool sim_id_valid(void *ud, uint64_t id)
{
	(void)ud;
	(void)id;
	S.id_asks++;
	return S.id_valid;
}

static int sim_reply(void *ud, uint64_t id, int64_t val, int err, bool cont)
{
	(void)ud;
	(void)id;
	S.replies++;
	S.val = val;
	S.err = err;
	S.cont = cont;
	/* the kernel refuses the answer to a notification whose thread no longer waits */
	return S.id_valid ? 0 : -ENOENT;
}

static int sim_addfd(void *ud, uint64_t id, int srcfd, int newfd, unsigned flags)
{
	(void)ud;
	(void)id;
	(void)flags;
	S.addfds++;
	if (S.installed >= 0)
		close(S.installed);
	S.installed = fcntl(srcfd, F_DUPFD_CLOEXEC, 100);
	return newfd >= 0 ? 0 : 42; /* with send: the number the program gets */
}

/* How many bytes from addr lie in the arena (a read past its end stops there, as
 * process_vm_readv stops at an unmapped page), or -EFAULT. */
static ssize_t in_arena(uint64_t addr, size_t len)
{
	uint64_t lo = (uint64_t)(uintptr_t)arena, hi = lo + ARENA_SIZE;

	if (addr < lo || addr >= hi)
		return -EFAULT;
	return (ssize_t)(len < hi - addr ? len : hi - addr);
}

static ssize_t sim_mem_read(void *ud, pid_t tid, uint64_t addr, void *buf, size_t len)
{
	ssize_t n = in_arena(addr, len);

	(void)ud;
	assert_int_equal(tid, getpid());
	if (n <= 0)
		return n;
	memcpy(buf, (const void *)(uintptr_t)addr, (size_t)n);
	if (S.flip_addr && addr == S.flip_addr && S.flip_to) {
		S.reads_of_flip++;
		strcpy((char *)(uintptr_t)addr, S.flip_to);
	}
	return n;
}

static ssize_t sim_mem_write(void *ud, pid_t tid, uint64_t addr, const void *buf, size_t len)
{
	ssize_t n = in_arena(addr, len);

	(void)ud;
	assert_int_equal(tid, getpid());
	if (n <= 0)
		return n;
	memcpy((void *)(uintptr_t)addr, buf, (size_t)n);
	return n;
}

static const struct notify_ops sim_ops = {
	.recv = sim_recv,
	.id_valid = sim_id_valid,
	.reply = sim_reply,
	.addfd = sim_addfd,
	.mem_read = sim_mem_read,
	.mem_write = sim_mem_write,
};

/* Copy len bytes (zeros when data is NULL) into the tracee's memory: their address. */
static uint64_t put(const void *data, size_t len)
{
	char *p = arena + arena_used;

	assert_true(arena_used + len <= ARENA_SIZE);
	if (data)
		memcpy(p, data, len);
	else
		memset(p, 0, len);
	arena_used += (len + 15) & ~(size_t)15;
	return (uint64_t)(uintptr_t)p;
}

static uint64_t put_str(const char *s)
{
	return put(s, strlen(s) + 1);
}

static void *at(uint64_t addr)
{
	return (void *)(uintptr_t)addr;
}

/* A fresh simulated kernel, keeping a flip the case has set up. */
static void sim_reset(bool id_valid)
{
	if (S.installed >= 0)
		close(S.installed);
	S = (struct sim){ .id_valid = id_valid, .installed = -1, .flip_addr = S.flip_addr,
			  .flip_to = S.flip_to };
}

/* One notification of syscall nr with args, as the kernel would deliver it. */
static void call_as(bool id_valid, uint32_t arch, long nr, uint64_t a0, uint64_t a1,
		    uint64_t a2, uint64_t a3)
{
	struct seccomp_notif req = {
		.id = next_id++,
		.pid = (uint32_t)getpid(),
		.data = { .nr = (int)nr, .arch = arch, .args = { a0, a1, a2, a3 } },
	};

	sim_reset(id_valid);
	dispatch_one(&ctx, &req, &tc);
	creds_self();
	S.flip_addr = 0;
	S.flip_to = NULL;
}

static void call(long nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	call_as(true, sc_native_arch(), nr, a0, a1, a2, a3);
}

static void write_file(const char *path, const char *content)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	fputs(content, f);
	assert_int_equal(fclose(f), 0);
}

static void same_file(int fd, const char *path)
{
	struct stat a, b;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(stat(path, &b), 0);
	assert_true(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
}

static int setup(void **state)
{
	struct moat_error err = { 0 };

	(void)state;
	moat_log_level = LOG_LEVEL_ERR;
	assert_non_null(mkdtemp(T));
	snprintf(ok_path, sizeof(ok_path), "%s/ok.txt", T);
	snprintf(env_path, sizeof(env_path), "%s/.env", T);
	snprintf(new_path, sizeof(new_path), "%s/new.txt", T);
	write_file(ok_path, "hello\n");
	write_file(env_path, "TOKEN=secret\n");

	assert_int_equal(vfs_new(NULL, &V), 0);
	assert_int_equal(vfs_set_home(V, T), 0);
	assert_int_equal(vfs_add_directive(V, "bind", T, "test", &err), 0);
	assert_int_equal(vfs_add_directive(V, "hide", "**/.env", "test", &err), 0);
	assert_int_equal(vfs_finalize(V, VFS_MODE_UNNAMESPACED, &err), 0);
	assert_int_equal(net_new(&N), 0);
	assert_int_equal(net_finalize(N, NULL), 0);

	pthread_mutex_init(&ctx.lock, NULL);
	ctx.listener = -1;
	ctx.epfd = epoll_create1(EPOLL_CLOEXEC);
	assert_true(ctx.epfd >= 0);
	ctx.arch = sc_native_arch();
	ctx.vfs = V;
	ctx.net = N;
	assert_int_equal(creds_thread_init(), 0);
	assert_int_equal(chdir(T), 0);
	arena = mmap(NULL, ARENA_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(arena != MAP_FAILED);
	S.installed = -1;
	notify_set_ops(&sim_ops);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	notify_set_ops(NULL);
	if (S.installed >= 0)
		close(S.installed);
	tracee_cache_free(&tc);
	sup_net_free(&ctx);
	close(ctx.epfd);
	unlink(ok_path);
	unlink(env_path);
	unlink(new_path);
	rmdir(T);
	munmap(arena, ARENA_SIZE);
	vfs_free(V);
	net_free(N);
	return 0;
}

/* An allowed open is performed by the supervisor and its fd installed with ADDFD. */
static void test_open_allowed(void **state)
{
	(void)state;
	call(SYS_openat, (uint64_t)AT_FDCWD, put_str(ok_path), O_RDONLY, 0);
	assert_int_equal(S.addfds, 1);
	assert_int_equal(S.replies, 0);
	same_file(S.installed, ok_path);

	/* relative to the caller's cwd, read from its /proc entry */
	call(SYS_openat, (uint64_t)AT_FDCWD, put_str("ok.txt"), O_RDONLY, 0);
	assert_int_equal(S.addfds, 1);
	same_file(S.installed, ok_path);
}

/* A hidden file is absent, and nothing is installed. */
static void test_open_hidden(void **state)
{
	(void)state;
	call(SYS_openat, (uint64_t)AT_FDCWD, put_str(env_path), O_RDONLY, 0);
	assert_int_equal(S.addfds, 0);
	assert_int_equal(S.replies, 1);
	assert_int_equal(S.err, ENOENT);
}

/* The path is copied once: the program rewriting it after the copy (to the hidden
 * file) changes neither the decision nor the file opened. */
static void test_open_reads_once(void **state)
{
	uint64_t path = put(NULL, PATH_MAX);

	(void)state;
	strcpy(at(path), ok_path);
	S.flip_addr = path;
	S.flip_to = env_path;
	call(SYS_openat, (uint64_t)AT_FDCWD, path, O_RDONLY, 0);
	assert_int_equal(S.reads_of_flip, 1);
	assert_string_equal(at(path), env_path); /* the flip happened */
	assert_int_equal(S.addfds, 1);
	same_file(S.installed, ok_path);
}

/* A notification that is no longer valid after the copy is not acted on (invariant 2):
 * an O_CREAT open leaves no file behind. */
static void test_open_invalid_id(void **state)
{
	struct stat st;

	(void)state;
	call_as(false, sc_native_arch(), SYS_openat, (uint64_t)AT_FDCWD, put_str(new_path),
		O_WRONLY | O_CREAT, 0600);
	assert_int_equal(S.addfds, 0);
	assert_int_equal(stat(new_path, &st), -1);
	assert_int_equal(errno, ENOENT);
	/* and with a valid id the same call creates it: the case above can fail */
	call(SYS_openat, (uint64_t)AT_FDCWD, put_str(new_path), O_WRONLY | O_CREAT, 0600);
	assert_int_equal(S.addfds, 1);
	assert_int_equal(stat(new_path, &st), 0);
}

/* stat writes the host's answer into the program's buffer; a hidden name writes
 * nothing. */
static void test_stat(void **state)
{
	uint64_t buf = put(NULL, sizeof(struct stat));
	struct stat want, *got = at(buf);

	(void)state;
	assert_int_equal(stat(ok_path, &want), 0);
	memset(got, 0xa5, sizeof(*got));
	call(SYS_newfstatat, (uint64_t)AT_FDCWD, put_str(ok_path), buf, 0);
	assert_int_equal(S.replies, 1);
	assert_int_equal(S.err, 0);
	assert_int_equal(S.val, 0);
	assert_true(got->st_ino == want.st_ino && got->st_size == want.st_size);

	memset(got, 0xa5, sizeof(*got));
	call(SYS_newfstatat, (uint64_t)AT_FDCWD, put_str(env_path), buf, 0);
	assert_int_equal(S.err, ENOENT);
	assert_int_equal(((unsigned char *)got)[0], 0xa5);
}

static void sin_of(const char *ip, uint16_t port, struct sockaddr_in *sin)
{
	*sin = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(port) };
	assert_int_equal(inet_pton(AF_INET, ip, &sin->sin_addr), 1);
}

/* connect is decided by vfs/net: metadata is always refused, an address no rule names
 * is refused, and the program's socket stays unconnected in both cases. */
static void test_connect_denied(void **state)
{
	struct sockaddr_in sin, peer;
	socklen_t plen = sizeof(peer);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	(void)state;
	assert_true(fd >= 0);
	sin_of("169.254.169.254", 80, &sin);
	call(SYS_connect, (uint64_t)fd, put(&sin, sizeof(sin)), sizeof(sin), 0);
	assert_int_equal(S.replies, 1);
	assert_int_equal(S.err, EACCES);

	sin_of("192.0.2.1", 80, &sin);
	call(SYS_connect, (uint64_t)fd, put(&sin, sizeof(sin)), sizeof(sin), 0);
	assert_int_equal(S.replies, 1);
	assert_int_equal(S.err, ECONNREFUSED);
	assert_int_equal(getpeername(fd, (struct sockaddr *)&peer, &plen), -1);
	assert_int_equal(errno, ENOTCONN);
	close(fd);
}

/* An allowed destination is connected, on the program's own socket (unnamespaced): the
 * listener sees the connection. A connect still under way is answered by the loop once
 * it settles (sup_net_event()), never by the notifier waiting for it. */
static void test_connect_allowed(void **state)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	struct moat_error err = { 0 };
	char rule[64];
	struct net *n;
	struct pollfd p;
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), fd;

	(void)state;
	assert_true(lfd >= 0);
	sin_of("127.0.0.1", 0, &sin);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sin, &len), 0);
	snprintf(rule, sizeof(rule), "127.0.0.1:%u", ntohs(sin.sin_port));
	assert_int_equal(net_new(&n), 0);
	assert_int_equal(net_add_directive(n, "allow-net", rule, "test", &err), 0);
	assert_int_equal(net_finalize(n, NULL), 0);
	ctx.net = n;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	call(SYS_connect, (uint64_t)fd, put(&sin, sizeof(sin)), sizeof(sin), 0);
	ctx.net = N;
	if (S.replies == 0) {
		struct epoll_event ev;

		assert_int_equal(epoll_wait(ctx.epfd, &ev, 1, 5000), 1);
		assert_true(sup_net_event(&ctx, ev.data.fd, ev.events));
	}
	assert_int_equal(S.replies, 1);
	assert_int_equal(S.err, 0);
	p = (struct pollfd){ .fd = lfd, .events = POLLIN };
	assert_int_equal(poll(&p, 1, 5000), 1);
	close(fd);
	close(lfd);
	net_free(n);
}

/* A notification of another ABI than the table's is refused, not guessed at. */
static void test_foreign_arch(void **state)
{
	(void)state;
	call_as(true, AUDIT_ARCH_I386, SYS_openat, (uint64_t)AT_FDCWD, put_str(ok_path),
		O_RDONLY, 0);
	assert_int_equal(S.replies, 1);
	assert_int_equal(S.err, ENOSYS);
	assert_int_equal(S.addfds, 0);
}

/*
 * Every syscall the table sends to the supervisor reaches a handler: a notified row with
 * no handler would fail closed with ENOSYS, which breaks the program rather than the
 * sandbox, and only a live run of that very call would show it.
 */
static void test_every_notified_row_has_handler(void **state)
{
	uint32_t arch = sc_native_arch();
	size_t notified = 0;

	(void)state;
	for (size_t i = 0; i < sc_count(arch); i++) {
		const struct sc_entry *e = sc_at(arch, i);
		bool reaches = false;

		for (enum sup_filter_kind k = 0; k < _SUP_FILTER_MAX; k++)
			reaches |= sup_filter_notifies(e, k);
		if (!reaches)
			continue;
		notified++;
		if (!dispatch_handles(e))
			fail_msg("%s is notified but has no handler", e->name);
	}
	assert_true(notified > 40);
	/* and the table is not all rows: a native call has none */
	assert_false(dispatch_handles(sc_by_id(arch, SC_read)));
}

/*
 * With --audit, a read-only open that may be continued is decided without ID_VALID, as
 * without --audit: the SEND of the CONTINUE vouches for the path read. When the SEND
 * fails (the thread is gone, its tid maybe another's), the record names no path or rule.
 */
static void test_audit_continued_open(void **state)
{
	char stream[PATH_MAX];
	struct audit_reader *r;
	struct audit_rec rec;
	struct audit_sys a;
	int n = 0;

	(void)state;
	snprintf(stream, sizeof(stream), "%s/stream.mat", T);
	assert_int_equal(audit_writer_open(stream, NULL, &ctx.audit), 0);
	ctx.continue_ro_opens = true;

	call(SYS_openat, (uint64_t)AT_FDCWD, put_str(ok_path), O_RDONLY, 0);
	assert_true(S.cont);
	assert_int_equal(S.addfds, 0);
	assert_int_equal(S.id_asks, 0);
	call_as(false, sc_native_arch(), SYS_openat, (uint64_t)AT_FDCWD, put_str(ok_path),
		O_RDONLY, 0);
	assert_true(S.cont);

	ctx.continue_ro_opens = false;
	assert_int_equal(audit_writer_close(ctx.audit, NULL), 0);
	ctx.audit = NULL;
	assert_int_equal(audit_reader_open(stream, 0, &r), 0);
	while (audit_reader_next(r, &rec) == 1) {
		if (rec.type != AUDIT_REC_SYS)
			continue;
		assert_int_equal(audit_decode_sys(r, &rec, &a), 0);
		if (n++ == 0) {
			assert_int_equal(a.decision, AUDIT_CONTINUED);
			assert_string_equal(a.path, ok_path);
			assert_int_equal(a.err, 0);
		} else {
			assert_int_equal(a.decision, AUDIT_EMULATED);
			assert_null(a.path);
			assert_null(a.resolved);
			assert_null(a.rule);
			assert_int_equal(a.err, ESRCH);
		}
	}
	assert_int_equal(n, 2);
	audit_reader_free(r);
	unlink(stream);
}

/* A notified call without a handler fails closed rather than being let through. */
static void test_unhandled_fails_closed(void **state)
{
	(void)state;
	call_as(true, sc_native_arch(), SYS_read, 0, 0, 0, 0);
	assert_int_equal(S.replies, 1);
	assert_int_equal(S.err, ENOSYS);
	assert_false(S.cont);
	assert_int_equal(S.addfds, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_allowed),
		cmocka_unit_test(test_open_hidden),
		cmocka_unit_test(test_open_reads_once),
		cmocka_unit_test(test_open_invalid_id),
		cmocka_unit_test(test_stat),
		cmocka_unit_test(test_connect_denied),
		cmocka_unit_test(test_connect_allowed),
		cmocka_unit_test(test_foreign_arch),
		cmocka_unit_test(test_every_notified_row_has_handler),
		cmocka_unit_test(test_unhandled_fails_closed),
		cmocka_unit_test(test_audit_continued_open),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
