/* SPDX-License-Identifier: MIT */
/*
 * The seccomp agent: receives each container process's listener (runc's and crun's
 * listenerPath protocol) and forks a supervisor for it (oci.h says who kills whom).
 *
 * Policy, first found wins: the listenerMetadata the runtime sends along, the
 * container's annotation run.moat.policy (either holds a policy's text, starting
 * "moat-policy", its lines separated by newlines or, on one line, by ';', or the host
 * path of a policy file), the agent's --policy. Without
 * `profile none`, the container profile comes first: the container's root read-write
 * as the container made it (its own mounts say what is read-only), /proc with only its
 * processes, the default profile's secrets hidden, no network. run.moat.audit and
 * run.moat.report name host files for the audit stream and the report.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"
#include "macros.h"
#include "net.h"
#include "oci.h"
#include "policy.h"
#include "proc-ops.h"
#include "netns.h"
#include "sup.h"
#include "vfs.h"

#define STATE_MAX (1024 * 1024)
#define MAX_BOXES 256
/* moat-runtime's agent: how long it waits for the runtime's first connection. */
#define SINGLE_FIRST_WAIT_S 120

struct box {
	pid_t sup;              /* the supervisor, 0 once reaped */
	int pidfd;              /* the container process it serves */
	int init_pidfd;         /* the container's init (the same process for init itself) */
};

struct agent {
	const struct oci_agent_opts *ao;
	struct box boxes[MAX_BOXES];
	size_t n_boxes;
	int epfd;
};

int oci_listen(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	(void)unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0600) < 0 ||
	    listen(fd, 64) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

/* One connection: the state JSON (until EOF) and the fds that came with it. */
static int receive(int conn, json_t **ret_state, int *fds, size_t max_fds, size_t *ret_nfds)
{
	_cleanup_free_ char *buf = malloc(STATE_MAX + 1);
	size_t len = 0;
	json_error_t jerr;

	*ret_nfds = 0;
	if (!buf)
		return -ENOMEM;
	for (;;) {
		char ctl[CMSG_SPACE(sizeof(int) * 8)];
		struct iovec iov = { .iov_base = buf + len, .iov_len = STATE_MAX - len };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
				     .msg_controllen = sizeof(ctl) };
		ssize_t n = recvmsg(conn, &mh, MSG_CMSG_CLOEXEC);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); h; h = CMSG_NXTHDR(&mh, h)) {
			if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
				continue;
			for (size_t k = 0; k < (h->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++) {
				int fd;

				memcpy(&fd, CMSG_DATA(h) + k * sizeof(int), sizeof(int));
				if (*ret_nfds < max_fds)
					fds[(*ret_nfds)++] = fd;
				else
					close(fd);
			}
		}
		len += (size_t)n;
		/* runc keeps the connection open until its create is done: one whole
		 * document is the message. */
		if ((*ret_state = json_loadb(buf, len, 0, &jerr)))
			return 0;
		if (n == 0 || len >= STATE_MAX)
			return -EBADMSG;
	}
}

static void kill_pidfd(int pidfd)
{
	if (pidfd >= 0)
		(void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
}

/* A policy's text or a host path, into p (the container profile first, unless it says
 * `profile none`). e is left unset when the failure was an allocation's. */
static int container_policy(const char *spec, struct policy *p, struct moat_error *e)
{
	struct policy user = { 0 };
	_cleanup_close_ int mfd = -1;
	char path[64];
	const char *file = spec;
	int r = 0;

	if (spec && strncmp(spec, "moat-policy", 11) == 0) {
		_cleanup_free_ char *text = strdup(spec);
		size_t len = strlen(spec);

		/* Engines cut annotations at a newline (podman): on one line, ';' ends one. */
		if (text && !strchr(text, '\n'))
			for (char *c = text; *c; c++)
				if (*c == ';')
					*c = '\n';
		mfd = text ? memfd_create("moat-policy", MFD_CLOEXEC) : -1;
		if (mfd < 0 || write(mfd, text, len) != (ssize_t)len)
			return mfd < 0 && !text ? -ENOMEM : -errno;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", mfd);
		file = path;
	}
	if (file && (r = policy_load_file(&user, file, e)) < 0)
		goto out;
	if (!user.profile_none) {
		r = policy_add(p, "bind", "/", "container profile");
		for (size_t i = 0; r >= 0 && vfs_default_secrets[i]; i++)
			/* the container's /root is its own root's home, not a host secret */
			if (!streq(vfs_default_secrets[i], "/root"))
				r = policy_add(p, "hide", vfs_default_secrets[i], "container profile");
	}
	for (size_t i = 0; r >= 0 && i < user.n; i++)
		r = policy_add(p, user.items[i].word, user.items[i].arg, user.items[i].origin);
	p->profile_none = true;
	if (r < 0)
		moat_error_errno(e, r);
out:
	policy_done(&user);
	return r;
}

/*
 * The policy's paths are the container's: its directives are checked (a mapping's
 * source must exist) and its table finalized in a copy of the container's mount
 * namespace (entered, then unshared), with a tmpfs of ours over the copy's /tmp for the
 * vfs's private directory (the container sees none of it). sup_serve() then rebases
 * the table on the container's own root.
 * The policy file itself was read on the host, before; the names of allow-net rules
 * are resolved on the host too (sup_net_prepare(), before we enter).
 */
static int build_in_root(const struct policy *pol, pid_t pid, struct proc_map *pm,
			 struct sup_opts *o, struct moat_error *e)
{
	static const char *const path_words[] = { "ro-bind", "bind", "tmpfs", "file", "chdir",
						  NULL };
	_cleanup_close_ int host_ns = -1, ns = -1, host_cwd = -1;
	char src[64], ne[512];
	struct policy host_pol = { .profile_none = true };
	struct vfs *host_vfs = NULL;
	struct net *unused = NULL;
	int r = 0;

	/* On the host: the network rules, their names resolved here (the container's
	 * resolver configuration and libraries are never used), without the mappings,
	 * whose sources may exist only in the container. */
	for (size_t i = 0; r >= 0 && i < pol->n; i++) {
		bool path = false;

		for (size_t k = 0; path_words[k]; k++)
			path |= streq(pol->items[i].word, path_words[k]);
		if (!path)
			r = policy_add(&host_pol, pol->items[i].word, pol->items[i].arg,
				       pol->items[i].origin);
	}
	if (r >= 0)
		r = policy_apply(&host_pol, proc_map_init(pm), &host_vfs, &o->net, e);
	if (r >= 0)
		r = sup_net_prepare(host_vfs, o->net, false, ne, sizeof(ne), e);
	vfs_free(host_vfs);
	policy_done(&host_pol);
	if (r < 0)
		return r;
	if (ne[0])
		log_warning("%s", ne);

	snprintf(src, sizeof(src), "/proc/%d/ns/mnt", pid);
	host_ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	ns = open(src, O_RDONLY | O_CLOEXEC);
	host_cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (host_ns < 0 || ns < 0 || host_cwd < 0 || setns(ns, CLONE_NEWNS) < 0) {
		return moat_error_set(e, EIO, "cannot enter the container's mount namespace: %m");
	}
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0700") < 0) {
		r = moat_error_set(e, EIO, "cannot make a copy of the container's mounts with a "
				   "/tmp of ours (has it a /tmp?): %m");
	} else {
		/* Nothing here may load a library or ask NSS: the files are the image's. */
		r = policy_apply(pol, proc_map_init(pm), &o->vfs, &unused, e);
		if (r >= 0)
			r = vfs_finalize(o->vfs, VFS_MODE_NAMESPACED, e);
		net_free(unused);
	}
	/* The copy lives on in the table's fds, until sup_serve() rebases it. */
	if (setns(host_ns, CLONE_NEWNS) < 0 || fchdir(host_cwd) < 0) {
		return moat_error_set(e, EIO, "cannot leave the container's mount namespace: %m");
	}
	return r;
}

static const char *annotation(json_t *state, const char *key)
{
	const char *v = json_string_value(
		json_object_get(json_object_get(json_object_get(state, "state"), "annotations"), key));

	return v && v[0] ? v : NULL;
}

/* The supervisor: never returns. */
_noreturn_ static void supervise(const struct oci_agent_opts *ao, json_t *state, int listener,
				 pid_t pid, const char *id)
{
	struct policy pol = { 0 };
	struct proc_map pm;
	struct sup_opts o = { .start_fd = -1, .argv_fd = -1 };
	const char *meta = json_string_value(json_object_get(state, "metadata"));
	const char *spec = meta && meta[0] ? meta : annotation(state, "run.moat.policy");
	char *argv[] = { "container", (char *)id, NULL };
	struct moat_error e = { 0 };
	int status;

	if (!spec)
		spec = ao->policy;
	/* "~" in the policy is the container's root's home; and policy_apply() must not
	 * look the home up (NSS) inside the container's root */
	setenv("HOME", "/root", 1);
	if (container_policy(spec, &pol, &e) < 0 || build_in_root(&pol, pid, &pm, &o, &e) < 0 ||
	    policy_canonical(o.vfs, o.net, &o.policy_json, o.policy_hash) < 0) {
		/* the agent sees us gone before the container's process, and kills it */
		log_error("container %s: policy: %s", id,
			  e.err ? moat_error_str(&e) : "out of memory");
		_exit(MOAT_EXIT_FAILURE);
	}
	o.argv = argv;
	o.pm = &pm;
	o.verbose = ao->verbose;
	o.audit_path = annotation(state, "run.moat.audit");
	o.report_path = annotation(state, "run.moat.report");
	/* The container reaches no host path: its root is elsewhere, whatever the table's
	 * host side says. */
	o.output_in_workspace = true;
	status = sup_serve(&o, listener, pid);
	_exit(status & 0xff);
}

static void on_connection(struct agent *A, int lfd)
{
	_cleanup_close_ int conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	_cleanup_(json_decrefp) json_t *state = NULL;
	int fds[8], listener = -1, pidfd, init_pidfd;
	size_t nfds = 0, i;
	json_t *names, *v;
	pid_t pid, init, sup, agent = getpid();
	const char *id;
	struct box *b = NULL;

	if (conn < 0)
		return;
	if (receive(conn, &state, fds, ELEMENTSOF(fds), &nfds) < 0) {
		log_error("a runtime's message could not be read");
		goto out;
	}
	names = json_object_get(state, "fds");
	json_array_foreach(names, i, v)
		if (i < nfds && streq(json_string_value(v) ?: "", "seccompFd"))
			listener = fds[i];
	pid = (pid_t)json_integer_value(json_object_get(state, "pid"));
	init = (pid_t)json_integer_value(
		json_object_get(json_object_get(state, "state"), "pid"));
	id = json_string_value(json_object_get(json_object_get(state, "state"), "id")) ?: "?";
	if (listener < 0 || pid <= 0) {
		log_error("container %s: no seccomp listener or pid in the runtime's message", id);
		goto out;
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	init_pidfd = init > 0 && init != pid ? (int)syscall(SYS_pidfd_open, init, 0) : -1;
	for (i = 0; i < ELEMENTSOF(A->boxes) && !b; i++)
		if (!A->boxes[i].sup && A->boxes[i].pidfd < 0)
			b = &A->boxes[i];
	if (pidfd < 0 || !b) {
		log_error("container %s: cannot watch process %d", id, pid);
		kill_pidfd(pidfd);
		kill_pidfd(init_pidfd);
		safe_close(pidfd);
		safe_close(init_pidfd);
		goto out;
	}
	sup = fork();
	if (sup == 0) {
		/* Our death is its SIGTERM, which it takes as an order to kill the container
		 * (signals stay blocked until its loop reads them). */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != agent)
			raise(SIGTERM);
		/* Not in the agent's process group: one kill of that group does not take
		 * both the agent and the supervisor at once. */
		setsid();
		close(lfd);
		for (size_t k = 0; k < nfds; k++)
			if (fds[k] != listener)
				close(fds[k]);
		supervise(A->ao, state, listener, pid, id);
	}
	if (sup < 0) {
		log_error("container %s: cannot fork its supervisor: %m", id);
		kill_pidfd(pidfd);
		kill_pidfd(init_pidfd);
		safe_close(pidfd);
		safe_close(init_pidfd);
		goto out;
	}
	b->sup = sup;
	b->pidfd = pidfd;
	b->init_pidfd = init_pidfd;
	A->n_boxes++;
	if (A->ao->verbose)
		log_notice("container %s: process %d supervised by %d", id, pid, sup);
out:
	for (i = 0; i < nfds; i++)
		close(fds[i]);
}

/* Not exited (a pidfd polls readable from the exit on, zombie or not). */
static bool alive(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return pidfd >= 0 && poll(&p, 1, 0) == 0;
}

/* A supervisor is gone. Gone before the process it served (the container's init, or a
 * process `exec` added), it leaves that process unsupervised: kill the container. */
static void on_child(struct agent *A)
{
	int st;
	pid_t w;

	while ((w = waitpid(-1, &st, WNOHANG)) > 0)
		for (size_t i = 0; i < ELEMENTSOF(A->boxes); i++) {
			struct box *b = &A->boxes[i];

			if (b->sup != w)
				continue;
			if (alive(b->pidfd)) {
				log_warning("the supervisor %d is gone (%s %d) while its container "
					    "runs: killing the container", w,
					    WIFSIGNALED(st) ? "signal" : "status",
					    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
				kill_pidfd(b->init_pidfd);
				kill_pidfd(b->pidfd);
			}
			b->sup = 0;
			b->pidfd = safe_close(b->pidfd);
			b->init_pidfd = safe_close(b->init_pidfd);
		}
}

static size_t running(const struct agent *A)
{
	size_t n = 0;

	for (size_t i = 0; i < ELEMENTSOF(A->boxes); i++)
		n += A->boxes[i].sup > 0;
	return n;
}

int oci_agent_serve(int lfd, const struct oci_agent_opts *ao)
{
	struct agent A = { .ao = ao };
	struct epoll_event ev = { .events = EPOLLIN };
	_cleanup_close_ int sigfd = -1, epfd = -1;
	time_t t0 = time(NULL);
	sigset_t mask;
	bool stopping = false;

	for (size_t i = 0; i < ELEMENTSOF(A.boxes); i++)
		A.boxes[i].pidfd = A.boxes[i].init_pidfd = -1;
	/* Blocked before any supervisor is forked: they inherit the mask, so a SIGTERM
	 * reaches their loop, never the default action. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (sigfd < 0 || epfd < 0)
		return -errno;
	ev.data.fd = lfd;
	epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev);
	ev.data.fd = sigfd;
	epoll_ctl(epfd, EPOLL_CTL_ADD, sigfd, &ev);
	for (;;) {
		struct epoll_event evs[8];
		int n = epoll_wait(epfd, evs, ELEMENTSOF(evs), ao->single ? 1000 : -1);

		if (n < 0 && errno != EINTR)
			return -errno;
		for (int i = 0; i < n; i++) {
			if (evs[i].data.fd == lfd && !stopping) {
				on_connection(&A, lfd);
			} else if (evs[i].data.fd == sigfd) {
				struct signalfd_siginfo si;

				while (read(sigfd, &si, sizeof(si)) == sizeof(si))
					if (si.ssi_signo == SIGCHLD)
						on_child(&A);
					else if (!stopping) {
						/* Supervisors end their containers on SIGTERM. */
						stopping = true;
						for (size_t k = 0; k < ELEMENTSOF(A.boxes); k++)
							if (A.boxes[k].sup > 0)
								kill(A.boxes[k].sup, SIGTERM);
					}
			}
		}
		if (stopping && !running(&A))
			return 0;
		if (ao->single && A.n_boxes && !running(&A))
			return 0;
		if (ao->single && !A.n_boxes && time(NULL) - t0 > SINGLE_FIRST_WAIT_S) {
			log_error("no container came to be supervised");
			return -ETIMEDOUT;
		}
	}
}

static const char agent_usage[] =
	"usage: moat agent --socket PATH [--policy FILE] [-v]\n"
	"\n"
	"A seccomp agent for OCI runtimes (runc, crun) whose containers' seccomp profiles\n"
	"name PATH as their listenerPath: one moat supervisor per container process.\n"
	"The policy comes from the profile's listenerMetadata, else the container's\n"
	"annotation run.moat.policy (a policy's text or a host path), else --policy.\n";

int oci_agent_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "policy", required_argument, NULL, 'p' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct oci_agent_opts ao = { 0 };
	const char *sock = NULL;
	int c, lfd, r;

	while ((c = getopt_long(argc, argv, "s:p:vh", opts, NULL)) >= 0)
		switch (c) {
		case 's':
			sock = optarg;
			break;
		case 'p':
			ao.policy = optarg;
			break;
		case 'v':
			ao.verbose = true;
			moat_log_level = LOG_LEVEL_INFO;
			break;
		case 'h':
			fputs(agent_usage, stdout);
			return 0;
		default:
			fputs(agent_usage, stderr);
			return MOAT_EXIT_FAILURE;
		}
	if (!sock || optind < argc) {
		fputs(agent_usage, stderr);
		return MOAT_EXIT_FAILURE;
	}
	lfd = oci_listen(sock);
	if (lfd < 0) {
		log_error("moat agent: cannot listen on %s: %s", sock, strerror(-lfd));
		return MOAT_EXIT_FAILURE;
	}
	r = oci_agent_serve(lfd, &ao);
	close(lfd);
	(void)unlink(sock);
	return r < 0 ? MOAT_EXIT_FAILURE : 0;
}
