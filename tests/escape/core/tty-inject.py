#!/usr/bin/env python3
"""Run a command as if from a user's terminal and report what it typed into it.

    tty-inject.py COMMAND [ARG...]

A new pty becomes the controlling terminal of a new session running COMMAND
(moat run --tty ...), the way an interactive shell would start it. When the
command has exited, the terminal's input queue is drained from the slave side:
whatever is there was pushed by TIOCSTI from inside (nobody typed anything).
Prints the command's output, then "EXIT <status>" and "INJECTED <repr>" lines.
"""
import os
import select
import sys
import termios
import time
import tty

master, slave = os.openpty()
tty.setraw(slave)
pid = os.fork()
if pid == 0:
    os.close(master)
    os.setsid()
    import fcntl
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
    for fd in (0, 1, 2):
        os.dup2(slave, fd)
    if slave > 2:
        os.close(slave)
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)

out = b""
status = None
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    r, _, _ = select.select([master], [], [], 0.1)
    if r:
        try:
            out += os.read(master, 4096)
        except OSError:
            pass
    done, st = os.waitpid(pid, os.WNOHANG)
    if done:
        status = os.waitstatus_to_exitcode(st)
        break
if status is None:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
# Output written just before exit may still be in flight.
while select.select([master], [], [], 0.1)[0]:
    try:
        chunk = os.read(master, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
os.set_blocking(slave, False)
injected = b""
try:
    injected = os.read(slave, 4096)
except BlockingIOError:
    pass
sys.stdout.write(out.decode(errors="replace").replace("\r\n", "\n"))
print(f"\nEXIT {status}")
print(f"INJECTED {injected!r}")
