#!/usr/bin/env bash
# The keeper (pid 1 of the sandbox's pid namespace) ends the run on SIGTERM, SIGINT,
# SIGHUP or SIGQUIT only from the supervisor or the kernel, whose signals reach it with
# si_pid 0. rt_sigqueueinfo() and pidfd_send_signal() let a sandboxed process write
# si_pid 0 itself (with a negative si_code, the only kind the kernel lets it send to
# another process), and an I/O signal (F_SETOWN 1, F_SETSIG) carries si_band where
# si_pid would be: such a signal must not end the keeper, which would kill the
# command mid-run and have moat report exit status 0 for a command that never
# finished. Landlock's signal scoping (ABI 6, Linux 6.12) refuses the signal before it
# arrives; MOAT_TEST_LANDLOCK_ABI=5 (a test_hooks build) gives the run an older
# kernel's Landlock, where the keeper's own check is all there is. Unnamespaced mode has
# no such barrier before ABI 6 at all (kill is native: docs/threat-model.md, "Signalling
# host processes"). Checked from outside: moat's exit status and the file the command
# writes after the signals.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "needs $PY"
have_mode namespaced || skip_all "moat cannot start in namespaced mode here"

plan 2
prog='
import ctypes, os, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
def info(sig):
    b = bytearray(128)
    struct.pack_into("iii", b, 0, sig, 0, -1)  # SI_QUEUE
    struct.pack_into("ii", b, 16, 0, 0)        # si_pid 0, si_uid 0: "from outside"
    return ctypes.create_string_buffer(bytes(b), 128)
pidfd = libc.syscall(434, 1, 0)                # pidfd_open
for sig in (15, 2, 1, 3):
    r1 = libc.syscall(129, 1, sig, info(sig))  # rt_sigqueueinfo
    r2 = libc.syscall(424, pidfd, sig, info(sig), 0) if pidfd >= 0 else -1
    print("signal", sig, r1, r2, os.strerror(ctypes.get_errno()), flush=True)
# the kernel sends an F_SETSIG signal of I/O to the owner of the fd, here pid 1
import fcntl
r, w = os.pipe()
try:
    fcntl.fcntl(r, fcntl.F_SETOWN, 1); fcntl.fcntl(r, 10, 15)  # F_SETSIG: SIGTERM
    fcntl.fcntl(r, fcntl.F_SETFL, fcntl.fcntl(r, fcntl.F_GETFL) | os.O_ASYNC)
    os.write(w, b"x"); print("SIGIO armed", flush=True)
except OSError as e:
    print("SIGIO refused", e, flush=True)
time.sleep(1)
open("finished", "w").write("yes\n")
sys.exit(7)
'
for abi in 5 ""; do
	make_workspace
	out=$(cd "$W" && MOAT_TEST_LANDLOCK_ABI=$abi "$MOAT" run -q --mode namespaced -- "$PY" -c "$prog" 2>&1)
	st=$?
	[ $st -eq 7 ] && [ "$(cat "$W/finished" 2>/dev/null)" = yes ]
	ok $? "namespaced${abi:+, Landlock ABI $abi}: signals claiming si_pid 0 leave the keeper running (exit $st, 7 expected; the command finished)" "$out"
done
finish
