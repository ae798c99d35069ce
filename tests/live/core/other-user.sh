#!/usr/bin/env bash
# The sandbox's root signals the processes it started as another user as root does
# natively: kill(2) reaches them, and a parent-death signal set after the change of ids
# arrives when the parent dies (the kernel sends it with the parent's credentials).
# Only where root may change ids: a namespaced run started by root (the full id map).
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 2
command -v python3 >/dev/null || skip_all "python3 is needed"
[ "$(id -u)" -eq 0 ] || skip_all "only root has the full id map"
have_mode namespaced || skip_all "moat cannot start in namespaced mode here"
cd "$TMP" || exit 1

# A child becomes uid/gid 65534 and waits; its parent (uid 0) kills it.
cat > kill.py <<'PYEOF'
import os, signal, time
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.setgroups([]); os.setgid(65534); os.setuid(65534)
    os.write(w, b"s"); time.sleep(30); os._exit(3)
os.read(r, 1)
try:
    os.kill(pid, signal.SIGTERM); print("kill ok")
except OSError as e:
    print("kill", e.strerror)
_, st = os.waitpid(pid, 0)
print("signalled" if os.WIFSIGNALED(st) else "exit %d" % os.WEXITSTATUS(st))
PYEOF

# A grandchild becomes uid/gid 65534, then asks for SIGUSR1 when its parent dies; the
# parent is killed.
cat > pdeath.py <<'PYEOF'
import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
r, w = os.pipe()
mid = os.fork()
if mid == 0:
    c = os.fork()
    if c == 0:
        os.setgroups([]); os.setgid(65534); os.setuid(65534)
        got = []
        signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
        libc.prctl(1, signal.SIGUSR1, 0, 0, 0)  # PR_SET_PDEATHSIG
        os.write(w, b"s")
        for _ in range(60):
            if got:
                break
            time.sleep(0.05)
        print("death signal" if got else "no death signal", flush=True)
        os._exit(0)
    os.waitpid(c, 0); os._exit(0)
os.read(r, 1)
os.kill(mid, signal.SIGKILL); os.waitpid(mid, 0)
time.sleep(4)
PYEOF

for t in kill pdeath; do
	python3 $t.py >native.txt 2>&1
	timeout 60 "$MOAT" run -q --mode namespaced -- python3 $t.py >sandbox.txt 2>&1
	cmp -s native.txt sandbox.txt
	ok $? "namespaced: $t.py ends as natively ($(tr '\n' ' ' <native.txt))" \
		"native: $(cat native.txt)
sandbox: $(cat sandbox.txt)"
done
finish
