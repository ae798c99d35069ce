#!/usr/bin/env python3
"""Run a command from a user's terminal, optionally type a line into it, report what is left.

    pty-run.py [--raw] [--type TEXT] COMMAND [ARG...]

A new pty becomes the controlling terminal of a new session running COMMAND with stdin,
stdout and stderr on it, the way an interactive shell starts a command. The terminal is
in its usual cooked mode with echo on, or raw with --raw. With --type, once the command
has printed READY, TEXT and a newline are typed into the terminal. When the command has
exited, prints what the terminal showed, then "EXIT <status>", "ECHO on|off" (the
terminal's echo flag as the command left it), "LDISC <n>" and "EXCL <0|1>" (its line
discipline and exclusive mode, as the command left them) and "UNREAD <repr>": what is
still in the terminal's input queue, unread by anyone. Without --type nobody typed anything, so
whatever is there was pushed from inside (TIOCSTI).
"""
import fcntl
import os
import select
import struct
import sys
import termios
import time
import tty

args = sys.argv[1:]
raw = False
text = None
while args and args[0].startswith("--"):
    opt = args.pop(0)
    if opt == "--raw":
        raw = True
    elif opt == "--type":
        text = args.pop(0).encode()
    else:
        sys.exit(f"pty-run.py: unknown option {opt}")

master, slave = os.openpty()
if raw:
    tty.setraw(slave)
else:
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
        os.execvp(args[0], args)
    finally:
        os._exit(127)

out = b""
typed = text is None
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
# Output written just before exit may still be in flight.
while select.select([master], [], [], 0.1)[0]:
    try:
        chunk = os.read(master, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
echo = termios.tcgetattr(slave)[3] & termios.ECHO
TIOCGETD, TIOCGEXCL = 0x5424, 0x80045440
ldisc = struct.unpack("i", fcntl.ioctl(slave, TIOCGETD, bytes(4)))[0]
excl = struct.unpack("i", fcntl.ioctl(slave, TIOCGEXCL, bytes(4)))[0]
os.set_blocking(slave, False)
unread = b""
try:
    unread = os.read(slave, 4096)
except BlockingIOError:
    pass
sys.stdout.write(out.decode(errors="replace").replace("\r\n", "\n"))
print(f"\nEXIT {status}")
print("ECHO " + ("on" if echo else "off"))
print(f"LDISC {ldisc}")
print(f"EXCL {excl}")
print(f"UNREAD {unread!r}")
