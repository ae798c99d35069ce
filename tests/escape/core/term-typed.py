#!/usr/bin/env python3
"""Run a command from a user's terminal, type a line into it, report what is left.

    term-typed.py TEXT COMMAND [ARG...]

A new pty, in its usual cooked mode with echo on, becomes the controlling terminal
of a new session running COMMAND with stdin, stdout and stderr on it, the way an
interactive shell starts a command. Once the command has printed READY, TEXT and a
newline are typed into the terminal. When the command has exited, prints what the
terminal showed, then "EXIT <status>", "ECHO on|off" (the terminal's echo flag as
the command left it) and "UNREAD <repr>" (what is still in the terminal's input
queue, unread by anyone).
"""
import fcntl
import os
import select
import sys
import termios
import time

text = sys.argv[1].encode()
master, slave = os.openpty()
attrs = termios.tcgetattr(slave)
attrs[3] |= termios.ECHO | termios.ICANON
termios.tcsetattr(slave, termios.TCSANOW, attrs)
pid = os.fork()
if pid == 0:
    os.close(master)
    os.setsid()
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
    for fd in (0, 1, 2):
        os.dup2(slave, fd)
    if slave > 2:
        os.close(slave)
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)

out = b""
typed = False
status = None
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    r, _, _ = select.select([master], [], [], 0.1)
    if r:
        try:
            out += os.read(master, 4096)
        except OSError:
            pass
    if not typed and b"READY" in out:
        os.write(master, text + b"\n")
        typed = True
    done, st = os.waitpid(pid, os.WNOHANG)
    if done:
        status = os.waitstatus_to_exitcode(st)
        break
if status is None:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
while select.select([master], [], [], 0.1)[0]:
    try:
        chunk = os.read(master, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
echo = termios.tcgetattr(slave)[3] & termios.ECHO
os.set_blocking(slave, False)
unread = b""
try:
    unread = os.read(slave, 4096)
except BlockingIOError:
    pass
sys.stdout.write(out.decode(errors="replace").replace("\r\n", "\n"))
print(f"\nEXIT {status}")
print("ECHO " + ("on" if echo else "off"))
print(f"UNREAD {unread!r}")
