/* SPDX-License-Identifier: MIT */
/*
 * The pty between the sandbox and the user's terminal (term.h says why): made before
 * the fork, its master copied to the real terminal by one thread per output, and the
 * settings of a terminal the command was given put back at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"
#include "macros.h"
#include "term.h"

/* How long the pump may take to pass on what is left once the run is over (a terminal
 * stopped with ^S would hold it for ever). */
#define DRAIN_MS 2000

/* A pty whose settings follow the real terminal's, its slave opened write-only. */
static int make_pty(int real, int *ret_master, int *ret_slave)
{
	_cleanup_close_ int master = -1;
	struct termios tio;
	struct winsize ws;
	int slave;

	master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0)
		return negative_errno();
	/* Linux 4.13: the slave of this very master, without a path lookup. */
	slave = ioctl(master, TIOCGPTPEER, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (slave < 0) {
		char name[64];

		if (ptsname_r(master, name, sizeof(name)) != 0)
			return negative_errno();
		slave = open(name, O_WRONLY | O_NOCTTY | O_CLOEXEC);
		if (slave < 0)
			return negative_errno();
	}
	if (tcgetattr(real, &tio) == 0) {
		/* The real terminal does the output processing (\n to \r\n): once. */
		tio.c_oflag &= ~(tcflag_t)OPOST;
		(void)tcsetattr(slave, TCSANOW, &tio);
	}
	if (ioctl(real, TIOCGWINSZ, &ws) == 0)
		(void)ioctl(master, TIOCSWINSZ, &ws);
	*ret_master = TAKE_FD(master);
	*ret_slave = slave;
	return 0;
}

int term_relay_prepare(struct term_relay *t, bool relay, bool stdin_pass)
{
	struct stat st[3];
	int r;

	for (int fd = 0; fd < 3; fd++) {
		t->slave[fd] = -1;
		t->have_saved[fd] = (fd > 0 ? !relay : stdin_pass) &&
				    tcgetattr(fd, &t->saved[fd]) == 0;
		if (t->have_saved[fd] && (ioctl(fd, TIOCGETD, &t->saved_ldisc[fd]) < 0 ||
					  ioctl(fd, TIOCGEXCL, &t->saved_excl[fd]) < 0))
			t->saved_ldisc[fd] = t->saved_excl[fd] = -1;
	}
	for (int i = 0; i < 2; i++)
		t->pump[i] = (struct term_pump){ .master = -1, .out = -1 };
	for (int fd = 1; fd <= 2 && relay; fd++) {
		struct term_pump *p = &t->pump[fd - 1];

		if (!isatty(fd) || fstat(fd, &st[fd]) < 0)
			continue;
		if (fd == 2 && t->slave[1] >= 0 && st[1].st_rdev == st[2].st_rdev) {
			/* stdout and stderr on one terminal: one pty, so their order holds */
			t->slave[2] = t->slave[1];
			continue;
		}
		r = make_pty(fd, &p->master, &t->slave[fd]);
		if (r < 0)
			return r;
		p->out = fd;
	}
	return 0;
}

static void *pump_main(void *arg)
{
	struct term_pump *p = arg;
	char buf[16384];

	for (;;) {
		ssize_t n = read(p->master, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* EIO: no slave left open, the run is over */
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(p->out, buf + off, (size_t)(n - off));

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return NULL; /* the terminal is gone: drop the rest */
			off += w;
		}
	}
	return NULL;
}

int term_relay_start(struct term_relay *t)
{
	sigset_t all, old;
	int r = 0;

	/* The command and the keeper hold the slaves now; the master reads EIO once the
	 * last of them is closed, which is how the pumps learn that the run is over. */
	if (t->slave[2] != t->slave[1])
		safe_close(t->slave[2]);
	safe_close(t->slave[1]);
	t->slave[1] = t->slave[2] = -1;
	/* The process's signals stay with the main loop's signalfd. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (int i = 0; i < 2 && r == 0; i++) {
		struct term_pump *p = &t->pump[i];

		if (p->master < 0)
			continue;
		r = -pthread_create(&p->thread, NULL, pump_main, p);
		p->running = r == 0;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

/* The command may have turned echo off, or left raw mode on when it was killed: what a
 * terminal held by the command looked like at the start comes back. A background moat
 * would be stopped by SIGTTOU for it; blocked, the kernel lets the change through. */
static void restore_settings(struct term_relay *t)
{
	sigset_t ttou, old;

	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	pthread_sigmask(SIG_BLOCK, &ttou, &old);
	for (int fd = 0; fd < 3; fd++) {
		struct termios now;
		int ldisc, excl;

		/* the line discipline first: a new one starts from its own termios */
		if (t->have_saved[fd] && t->saved_ldisc[fd] >= 0 &&
		    ioctl(fd, TIOCGETD, &ldisc) == 0 && ldisc != t->saved_ldisc[fd])
			(void)ioctl(fd, TIOCSETD, &t->saved_ldisc[fd]);
		if (t->have_saved[fd] && t->saved_excl[fd] == 0 &&
		    ioctl(fd, TIOCGEXCL, &excl) == 0 && excl)
			(void)ioctl(fd, TIOCNXCL);
		if (t->have_saved[fd] && tcgetattr(fd, &now) == 0 &&
		    memcmp(&now, &t->saved[fd], sizeof(now)) != 0)
			(void)tcsetattr(fd, TCSANOW, &t->saved[fd]);
		t->have_saved[fd] = false;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void term_relay_finish(struct term_relay *t)
{
	struct timespec deadline;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += DRAIN_MS / 1000;
	for (int i = 0; i < 2; i++) {
		struct term_pump *p = &t->pump[i];

		if (p->running && pthread_timedjoin_np(p->thread, NULL, &deadline) != 0) {
			log_warning("the terminal took no output for %d s; the rest is dropped",
				    DRAIN_MS / 1000);
			/* read() and write() are cancellation points */
			pthread_cancel(p->thread);
			pthread_join(p->thread, NULL);
		}
		p->running = false;
		p->master = safe_close(p->master);
	}
	if (t->slave[2] != t->slave[1])
		safe_close(t->slave[2]);
	safe_close(t->slave[1]);
	t->slave[1] = t->slave[2] = -1;
	restore_settings(t);
}
