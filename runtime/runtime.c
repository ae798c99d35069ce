/* SPDX-License-Identifier: MIT */
/*
 * moat-runtime: an OCI runtime that runs every container under a moat supervisor and
 * leaves the container mechanics to runc or crun ($MOAT_OCI_RUNTIME, else the first of
 * runc, crun on PATH).
 *
 * create: the bundle's config.json gets moat's rows merged into its seccomp profile
 * (oci_seccomp_merge()) and a listenerPath naming a socket of a per-container agent
 * started first (agent.c, forked off and detached). The modified config is written to a
 * bundle of moat's own (its root made absolute, pointing at the user's rootfs), never
 * over the user's; the runtime is then asked to create the container from it, and
 * hands the listener to the agent during the create. delete: the runtime's delete,
 * then moat's state of the container. Every other command, and every global flag
 * (--root, --log, --log-format, --systemd-cgroup, ...), is passed to the runtime as
 * given.
 *
 * State: $MOAT_RUNTIME_STATE (default /run/moat-runtime)/<id>/: config.json of the
 * bundle copy, listener.sock, agent.pid, moat.log (the agent's and supervisors' stderr).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "cleanup.h"
#include "error.h"
#include "log.h"
#include "macros.h"
#include "moat-config.h"
#include "oci.h"
#include "sup.h"

#ifdef __SANITIZE_ADDRESS__
/* Sanitizer builds (the tests'): engines start us with an environment of their own,
 * and the leak report of a short-lived CLI at exit would fail the container's create. */
const char *__asan_default_options(void);
_public_ const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}
#endif

static const char *runtime_path(void)
{
	static char found[PATH_MAX];
	const char *e = getenv("MOAT_OCI_RUNTIME");
	const char *path = getenv("PATH");

	if (e && e[0])
		return e;
	for (const char *const *n = (const char *const[]){ "runc", "crun", NULL }; *n; n++) {
		const char *p = path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin";

		while (*p) {
			size_t l = strcspn(p, ":");

			snprintf(found, sizeof(found), "%.*s/%s", (int)l, p, *n);
			if (l && access(found, X_OK) == 0)
				return found;
			p += l + (p[l] == ':');
		}
	}
	return "runc";
}

static const char *state_base(void)
{
	const char *e = getenv("MOAT_RUNTIME_STATE");

	return e && e[0] ? e : "/run/moat-runtime";
}

/* Global flags that take a value as the next argument (runc's and crun's). */
static bool global_takes_value(const char *a)
{
	static const char *const with[] = { "--root", "--log", "--log-format", "--criu",
					    "--cgroup-manager", NULL };

	if (strchr(a, '='))
		return false;
	for (size_t i = 0; with[i]; i++)
		if (streq(a, with[i]))
			return true;
	return false;
}

/* dir/name into buf (PATH_MAX); too long is cut, and then names nothing of ours. */
static char *join(char *buf, const char *dir, const char *name)
{
	size_t a = strnlen(dir, PATH_MAX - 1), b = strnlen(name, PATH_MAX - 1 - a - 1);

	memcpy(buf, dir, a);
	buf[a] = '/';
	memcpy(buf + a + 1, name, b);
	buf[a + 1 + b] = '\0';
	return buf;
}

static bool valid_id(const char *id)
{
	return id && id[0] && !strchr(id, '/') && !streq(id, ".") && !streq(id, "..") &&
	       strlen(id) < 200;
}

static int run_runtime(char **argv)
{
	int st;
	pid_t p = fork();

	if (p == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "moat-runtime: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (p < 0)
		return -errno;
	while (waitpid(p, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void rm_state(const char *dir)
{
	static const char *const files[] = { "config.json", "listener.sock", "agent.pid",
					     "moat.log", NULL };
	char p[PATH_MAX];

	for (size_t i = 0; files[i]; i++) {
		join(p, dir, files[i]);
		(void)unlink(p);
	}
	(void)rmdir(dir);
}

/* The agent of a container, if it still runs (its pid checked against our binary). */
static void stop_agent(const char *dir)
{
	char p[PATH_MAX], exe[PATH_MAX], self[PATH_MAX], buf[32];
	_cleanup_close_ int fd = -1, pidfd = -1;
	ssize_t n;
	pid_t pid;

	join(p, dir, "agent.pid");
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || (n = read(fd, buf, sizeof(buf) - 1)) <= 0)
		return;
	buf[n] = '\0';
	pid = (pid_t)strtol(buf, NULL, 10);
	if (pid <= 1 || (pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0)
		return;
	snprintf(p, sizeof(p), "/proc/%d/exe", pid);
	n = readlink(p, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	if (streq(exe, self))
		(void)syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0);
}

/* The agent, detached: its own session, its output in the state directory. */
static pid_t start_agent(const char *dir, int lfd)
{
	char log[PATH_MAX];
	pid_t p;

	join(log, dir, "moat.log");
	p = fork();
	if (p != 0)
		return p;
	{
		struct oci_agent_opts ao = { .single = true, .verbose = getenv("MOAT_VERBOSE") != NULL };
		int null, out;

		setsid();
		/* Nothing of our caller's (conmon waits for its pipes to close) */
		if (dup2(lfd, 3) < 0 || close_range(4, ~0U, 0) < 0)
			_exit(MOAT_EXIT_FAILURE);
		lfd = 3;
		null = open("/dev/null", O_RDWR | O_CLOEXEC);
		out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (null >= 0)
			dup2(null, 0);
		if (out >= 0) {
			dup2(out, 1);
			dup2(out, 2);
		}
		if (ao.verbose)
			moat_log_level = LOG_LEVEL_INFO;
		_exit(oci_agent_serve(lfd, &ao) < 0 ? MOAT_EXIT_FAILURE : 0);
	}
}

static int do_create(char **argv, int ncmd, int argc)
{
	const char *bundle = ".", *id = NULL;
	char dir[PATH_MAX], cfg[PATH_MAX], sock[PATH_MAX], root[PATH_MAX];
	struct moat_error err = { 0 };
	_cleanup_(json_decrefp) json_t *config = NULL;
	json_error_t jerr;
	json_t *jroot;
	const char *rp;
	int lfd, status, fd;
	pid_t agent;
	FILE *f;

	for (int i = ncmd + 1; i < argc; i++) {
		const char *a = argv[i];

		if ((streq(a, "--bundle") || streq(a, "-b")) && i + 1 < argc)
			bundle = argv[++i];
		else if (strncmp(a, "--bundle=", 9) == 0)
			bundle = a + 9;
		else if ((streq(a, "--pid-file") || streq(a, "--console-socket") ||
			  streq(a, "--preserve-fds")) && i + 1 < argc)
			i++;
		else if (a[0] != '-')
			id = a;
	}
	if (!valid_id(id)) {
		fprintf(stderr, "moat-runtime create: no valid container id\n");
		return 1;
	}
	join(cfg, bundle, "config.json");
	config = json_load_file(cfg, 0, &jerr);
	if (!config) {
		fprintf(stderr, "moat-runtime create: %s: %s\n", cfg, jerr.text);
		return 1;
	}
	join(dir, state_base(), id);
	join(sock, dir, "listener.sock");
	(void)mkdir(state_base(), 0700);
	if (mkdir(dir, 0700) < 0) {
		fprintf(stderr, "moat-runtime create: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	if (oci_seccomp_merge(config, sock, &err) < 0) {
		fprintf(stderr, "moat-runtime create: %s\n", moat_error_str(&err));
		rm_state(dir);
		return 1;
	}
	/* The copy's root must still be the user's rootfs. */
	jroot = json_object_get(config, "root");
	rp = json_string_value(json_object_get(jroot, "path"));
	if (rp && rp[0] != '/') {
		char b[PATH_MAX];

		if (!realpath(bundle, b)) {
			fprintf(stderr, "moat-runtime create: %s: %s\n", bundle, strerror(errno));
			rm_state(dir);
			return 1;
		}
		join(root, b, rp);
		json_object_set_new(jroot, "path", json_string(root));
	}
	join(cfg, dir, "config.json");
	fd = open(cfg, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f || json_dumpf(config, f, JSON_COMPACT) < 0 || fclose(f) != 0) {
		fprintf(stderr, "moat-runtime create: cannot write %s\n", cfg);
		rm_state(dir);
		return 1;
	}
	lfd = oci_listen(sock);
	if (lfd < 0) {
		fprintf(stderr, "moat-runtime create: %s: %s\n", sock, strerror(-lfd));
		rm_state(dir);
		return 1;
	}
	agent = start_agent(dir, lfd);
	close(lfd);
	if (agent < 0) {
		fprintf(stderr, "moat-runtime create: cannot start the agent: %s\n", strerror(errno));
		rm_state(dir);
		return 1;
	}
	{
		char p[PATH_MAX], b[32];
		int pf;

		join(p, dir, "agent.pid");
		pf = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		snprintf(b, sizeof(b), "%d\n", agent);
		if (pf < 0 || write(pf, b, strlen(b)) < 0)
			fprintf(stderr, "moat-runtime create: %s: %s\n", p, strerror(errno));
		safe_close(pf);
	}
	/* The runtime's argv: ours, with the bundle replaced by the copy's directory. */
	{
		_cleanup_free_ char **nargv = calloc((size_t)argc + 3, sizeof(char *));
		int k = 0;

		if (!nargv)
			return 1;
		nargv[k++] = (char *)runtime_path();
		for (int i = 1; i <= ncmd; i++)
			nargv[k++] = argv[i];
		nargv[k++] = "--bundle";
		nargv[k++] = dir;
		for (int i = ncmd + 1; i < argc; i++) {
			if ((streq(argv[i], "--bundle") || streq(argv[i], "-b")) && i + 1 < argc)
				i++;
			else if (strncmp(argv[i], "--bundle=", 9) != 0)
				nargv[k++] = argv[i];
		}
		nargv[k] = NULL;
		status = run_runtime(nargv);
	}
	if (status != 0) {
		(void)kill(agent, SIGTERM);
		rm_state(dir);
	}
	return status;
}

static int do_delete(char **argv, int ncmd, int argc)
{
	const char *id = NULL;
	char dir[PATH_MAX];
	int status;

	for (int i = ncmd + 1; i < argc; i++)
		if (argv[i][0] != '-')
			id = argv[i];
	argv[0] = (char *)runtime_path();
	status = run_runtime(argv);
	if (status == 0 && valid_id(id)) {
		join(dir, state_base(), id);
		stop_agent(dir);
		rm_state(dir);
	}
	return status;
}

/*
 * seccomp-profile --listener PATH [BASE]: moat's rows merged into BASE (an OCI seccomp
 * profile, as Kubernetes' Localhost profiles are; else one that allows the rest), with
 * listenerPath PATH: for runtimes that talk to `moat agent` themselves.
 */
static int do_profile(int argc, char **argv)
{
	_cleanup_(json_decrefp) json_t *config = json_object(), *linux_ = json_object();
	const char *listener = NULL, *base = NULL;
	json_error_t jerr;
	struct moat_error err = { 0 };

	for (int i = 1; i < argc; i++)
		if (streq(argv[i], "--listener") && i + 1 < argc)
			listener = argv[++i];
		else if (argv[i][0] != '-' && !base)
			base = argv[i];
		else
			listener = NULL, i = argc;
	if (!listener) {
		fprintf(stderr, "usage: moat-runtime seccomp-profile --listener PATH [BASE.json]\n");
		return 1;
	}
	json_object_set(config, "linux", linux_);
	if (base) {
		json_t *b = json_load_file(base, 0, &jerr);

		if (!b) {
			fprintf(stderr, "moat-runtime: %s: %s\n", base, jerr.text);
			return 1;
		}
		json_object_set_new(linux_, "seccomp", b);
	}
	if (oci_seccomp_merge(config, listener, &err) < 0) {
		fprintf(stderr, "moat-runtime: %s\n", moat_error_str(&err));
		return 1;
	}
	return json_dumpf(json_object_get(linux_, "seccomp"), stdout, JSON_INDENT(1)) < 0 ||
	       puts("") == EOF;
}

int main(int argc, char **argv)
{
	int ncmd = 1;
	const char *cmd;

	if (sodium_init() < 0)
		return MOAT_EXIT_FAILURE;
	while (ncmd < argc && argv[ncmd][0] == '-') {
		if (streq(argv[ncmd], "--version") || streq(argv[ncmd], "-v"))
			break;
		ncmd += global_takes_value(argv[ncmd]) ? 2 : 1;
	}
	cmd = ncmd < argc ? argv[ncmd] : NULL;
	if (!cmd || streq(cmd, "--version") || streq(cmd, "-v") || streq(cmd, "version")) {
		char *v[] = { (char *)runtime_path(), "--version", NULL };

		printf("moat-runtime version %s\n", MOAT_VERSION);
		printf("spec: 1.0.2\n");
		fflush(stdout);
		return run_runtime(v) == 0 ? 0 : 1;
	}
	if (streq(cmd, "create"))
		return do_create(argv, ncmd, argc);
	if (streq(cmd, "seccomp-profile"))
		return do_profile(argc - ncmd, argv + ncmd);
	if (streq(cmd, "delete"))
		return do_delete(argv, ncmd, argc);
	if (streq(cmd, "run")) {
		fprintf(stderr, "moat-runtime: 'run' is not supported: use create and start\n");
		return 1;
	}
	argv[0] = (char *)runtime_path();
	execvp(argv[0], argv);
	fprintf(stderr, "moat-runtime: cannot run %s: %s\n", argv[0], strerror(errno));
	return 127;
}
