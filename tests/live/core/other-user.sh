#!/usr/bin/env bash
# The sandbox's root signals the processes it started as another user as root does
# natively: kill(2) reaches them, and a parent-death signal set after the change of ids
# arrives when the parent dies (the kernel sends it with the parent's credentials).
# Only where root may change ids: a namespaced run started by root (the full id map).
# A unix peer outside reads the program's credentials (SO_PEERCRED: the kernel records
# whoever called connect, or listen), since with no network rule moat continues those
# calls after its check and the kernel performs them as the program (sock.c,
# continue_unix). With an allow-net rule moat still performs them itself (a socket of
# the sandbox's may then be host-side) and the peer sees moat: a known gap, reported as
# TAP TODO while it lasts. And a TCP connection moat makes from the host for the
# program (an allow-net destination) belongs to the program's uid on the host, as a
# host firewall's owner match and /proc/net/tcp see it, not to root.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 6
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
# SO_PEERCRED, read by a server outside: the uid and the comm of the peer pid.
cat > peer-srv.py <<'PYEOF'
import os, socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777); s.listen()
open(sys.argv[2] + ".ready", "w").close()
c, _ = s.accept()
pid, uid, gid = struct.unpack("iII", c.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
with open(sys.argv[2], "w") as f:
    f.write("%d %s\n" % (uid, open("/proc/%d/comm" % pid).read().strip()))
PYEOF
cat > peer-cli.py <<'PYEOF'
import os, socket, sys
os.setgroups([]); os.setgid(65534); os.setuid(65534)
c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1]); c.recv(1)
PYEOF
mkdir -m 0755 peer && chmod 0755 "$TMP"
# peer_run LABEL MOAT-ARGS...: the server outside, the client inside; sets $peer
peer_run() {
	rm -f "$TMP/peer/s.sock" "$TMP/peer.log" "$TMP/peer.log.ready"
	python3 peer-srv.py "$TMP/peer/s.sock" "$TMP/peer.log" </dev/null >/dev/null 2>&1 &
	track_pid $!
	for _ in $(seq 100); do [ -e "$TMP/peer.log.ready" ] && break; sleep 0.1; done
	timeout 60 "$MOAT" run -q --mode namespaced "$@" --bind "$TMP/peer" -- \
		/usr/bin/python3 peer-cli.py "$TMP/peer/s.sock" >sandbox.txt 2>&1
	for _ in $(seq 50); do [ -s "$TMP/peer.log" ] && break; sleep 0.1; done
	peer=$(cat "$TMP/peer.log" 2>/dev/null)
}
peer_run
[ "$peer" = "65534 python3" ]
ok $? "namespaced: a unix peer outside sees the program (uid 65534, its pid) in SO_PEERCRED" \
	"peer saw: $peer; $(cat sandbox.txt)"
peer_run --allow-net 127.0.0.1:9
[ "$peer" = "65534 python3" ]
todo $? "namespaced, an allow-net rule: a unix peer outside sees the program in SO_PEERCRED" \
	"with network rules moat performs unix connects itself, and the kernel records its pid and euid (peer saw: $peer)"

# The other way: the program listens, as 65534, and a client outside reads its
# credentials (recorded by listen()).
cat > listen-srv.py <<'PYEOF'
import os, socket, sys
os.setgroups([]); os.setgid(65534); os.setuid(65534)
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen()
open(sys.argv[1] + ".ready", "w").close()
c, _ = s.accept(); c.recv(1)
PYEOF
cat > listen-cli.py <<'PYEOF'
import os, socket, struct, sys
c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1])
pid, uid, gid = struct.unpack("iII", c.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
print(uid, open("/proc/%d/comm" % pid).read().strip())
PYEOF
chmod 0777 "$TMP/peer"
rm -f "$TMP/peer/l.sock"*
timeout 60 "$MOAT" run -q --mode namespaced --bind "$TMP/peer" -- \
	/usr/bin/python3 listen-srv.py "$TMP/peer/l.sock" >listen.txt 2>&1 &
track_pid $!
for _ in $(seq 100); do [ -e "$TMP/peer/l.sock.ready" ] && break; sleep 0.1; done
got=$(timeout 10 python3 listen-cli.py "$TMP/peer/l.sock" 2>&1)
[ "$got" = "65534 python3" ]
ok $? "namespaced: a client outside sees the listening program (uid 65534, its pid) in SO_PEERCRED" \
	"client saw: $got; $(cat listen.txt)"

# A TCP connection to an allowed loopback port, made host-side by moat: the server reads
# the client socket's owner from /proc/net/tcp.
cat > tcp-srv.py <<'PYEOF'
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
c, a = s.accept()
port = ":%04X" % a[1]
uid = [l.split()[7] for l in open("/proc/net/tcp") if l.split()[1].endswith(port)]
open(sys.argv[2], "w").write("%s\n" % (uid[0] if uid else "none"))
c.close()
PYEOF
cat > tcp-cli.py <<'PYEOF'
import os, socket, sys
os.setgroups([]); os.setgid(65534); os.setuid(65534)
c = socket.create_connection(("127.0.0.1", int(sys.argv[1]))); c.recv(1)
PYEOF
python3 tcp-srv.py "$TMP/tcp.port" "$TMP/tcp.log" </dev/null >/dev/null 2>&1 &
track_pid $!
for _ in $(seq 100); do [ -s "$TMP/tcp.port" ] && break; sleep 0.1; done
port=$(cat "$TMP/tcp.port" 2>/dev/null)
timeout 60 "$MOAT" run -q --mode namespaced --allow-net "127.0.0.1:${port:-9}" -- \
	/usr/bin/python3 tcp-cli.py "${port:-9}" >tcp.txt 2>&1
for _ in $(seq 50); do [ -s "$TMP/tcp.log" ] && break; sleep 0.1; done
[ "$(cat "$TMP/tcp.log" 2>/dev/null)" = 65534 ]
ok $? "namespaced: the host-side TCP socket of the program's allowed connect belongs to uid 65534" \
	"owner seen: $(cat "$TMP/tcp.log" 2>/dev/null); $(cat tcp.txt)"
finish
