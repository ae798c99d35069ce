#!/usr/bin/env bash
# A connect moat makes for a program (--allow-net: on a host-side socket, or on the
# program's own unnamespaced) leaves the socket as the kernel's own connect would: a
# blocking connect that succeeded leaves it connected (the next connect() is EISCONN,
# not a 0 that completes it), one refused leaves it unconnected (the next one tries
# again: ECONNREFUSED, not ECONNABORTED), and a non-blocking one completes as natively
# (EINPROGRESS, then 0, then EISCONN); the options set before the connect hold after it
# (namespaced, moat's host-side socket takes them). The same program natively and under moat, in
# both modes, against a host echo server and a closed host port; its lines must agree.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/net/lib.sh"

start_server tcp A || { echo "Bail out! test server did not start"; exit 1; }
closed=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
plan 2

cat >"$TMP/w/connstate.py" <<'PY'
import errno, select, socket, sys
port, closed = int(sys.argv[1]), int(sys.argv[2])
def t(name, f):
    try:
        r = f()
        print(name, "ok" if r is None else r)
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
s = socket.socket()
t("blocking connect", lambda: s.connect(("127.0.0.1", port)))
t("connect again", lambda: s.connect(("127.0.0.1", port)))
t("echo", lambda: (s.sendall(b"ping\n"), s.recv(5))[1])
r = socket.socket()
t("refused", lambda: r.connect(("127.0.0.1", closed)))
t("refused again", lambda: r.connect(("127.0.0.1", closed)))
t("then to the server", lambda: r.connect(("127.0.0.1", port)))
n = socket.socket()
n.setblocking(False)
t("non-blocking connect", lambda: n.connect(("127.0.0.1", port)))
select.select([], [n], [], 5)
t("once writable", lambda: n.connect(("127.0.0.1", port)))
t("and again", lambda: n.connect(("127.0.0.1", port)))
o = socket.socket()
opts = ((socket.IPPROTO_IP, socket.IP_TOS, 16), (socket.IPPROTO_IP, socket.IP_TTL, 33),
        (socket.SOL_SOCKET, socket.SO_OOBINLINE, 1), (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1),
        (socket.IPPROTO_TCP, socket.TCP_NOTSENT_LOWAT, 16384), (socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),
        (socket.SOL_SOCKET, socket.SO_SNDBUF, 65536), (socket.SOL_SOCKET, socket.SO_RCVBUF, 65536))
for level, opt, val in opts:
    o.setsockopt(level, opt, val)
o.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"reno")
t("options set, then connect", lambda: o.connect(("127.0.0.1", port)))
print("options after it", [o.getsockopt(level, opt) for level, opt, _ in opts],
      o.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0"))
PY

native=$(cd "$TMP/w" && "$PY" connstate.py "$PORT_A" "$closed" 2>&1)
for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		skip "$mode: connect states as native" "moat cannot start in $mode mode here"
		continue
	fi
	out=$(sandbox "$mode" --allow-net 127.0.0.1 -- "$PY" connstate.py "$PORT_A" "$closed")
	[ "$out" = "$native" ]
	ok $? "$mode: every connect answers as natively" "native:
$native
moat:
$(diag "$out")"
done
finish
