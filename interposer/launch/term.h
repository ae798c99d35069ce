/* SPDX-License-Identifier: MIT */
/*
 * The user's terminal, kept out of the sandbox's hands (unless --tty).
 *
 * A terminal fd grants more than writing: whoever holds one can read what is typed
 * (if it was opened for reading, as a shell's always is) and change its settings
 * with ioctls that check neither the fd's access mode nor, for a process outside the
 * terminal's session, the caller (TCSETS: echo off, and it outlives the run). So when
 * moat's stdout or stderr is a terminal, the command gets the slave of a pty of its
 * own instead, opened write-only, and a thread of the supervisor copies what comes
 * out of the master to the real terminal. Nothing is ever written to the master, so
 * there is nothing to read on the slave; its settings are the sandbox's to change.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <termios.h>

struct term_pump {
	int master;           /* -1: unused */
	int out;              /* our fd 1 or 2: the real terminal */
	pthread_t thread;
	bool running;
};

struct term_relay {
	int slave[3];         /* the command's fd 0-2, -1: inherited as it is */
	struct term_pump pump[2];
	/* A terminal the command does get (stdin with --stdin, all with --tty): its
	 * settings when the run started, put back when it ends. */
	struct termios saved[3];
	bool have_saved[3];
	/* and, beside termios, what also outlives the run: its line discipline (N_NULL
	 * swallows all that is typed) and exclusive mode (TIOCEXCL: no other open) */
	int saved_ldisc[3];
	int saved_excl[3];
};

/* Before the fork, with relay (no --tty): a pty for stdout and one for stderr when they
 * are terminals (one for both when they are the same terminal). -errno when a pty
 * cannot be made. Without relay, nothing: the command inherits fds 1 and 2. stdin_pass:
 * fd 0 goes to the command as it is. */
int term_relay_prepare(struct term_relay *t, bool relay, bool stdin_pass);
/* After the fork: drop our copies of the slaves and start copying. */
int term_relay_start(struct term_relay *t);
/* Once the run's processes are gone: copy what is left (bounded), stop, close, and put
 * back the settings of a terminal the command held. */
void term_relay_finish(struct term_relay *t);
