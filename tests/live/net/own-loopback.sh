#!/usr/bin/env bash
# Namespaced, the sandbox has a loopback of its own. A port a program of the sandbox
# serves there is its own even where a rule lets the host's same port be reached
# (--allow-net 127.0.0.1): a server the sandbox starts on port P (TCP, and UDP) gets
# its clients' bytes, while a host server on the same port P, counted from outside,
# gets nothing; a host port the sandbox does not serve is still reached by the rule.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/net/lib.sh"

have_mode namespaced || skip_all "moat cannot start in namespaced mode here"
start_server tcp A && start_server tcp B && start_server udp U ||
	{ echo "Bail out! test servers did not start"; exit 1; }
plan 6

# inside: a server on PORT (the host's server's port), its own client, then a client of
# the host's OTHER port
cat >"$TMP/w/own.py" <<'PY'
import socket, sys
kind, port, other = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if kind == "tcp":
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(1)
    s.settimeout(5)
    c = socket.create_connection(("127.0.0.1", port), timeout=5)
    a, _ = s.accept()
    c.sendall(b"inside")
    print("own server got", a.recv(6).decode())
    o = socket.create_connection(("127.0.0.1", other), timeout=5)
    o.sendall(b"ping\n")
    print("host server echoed", o.recv(5).decode().strip())
else:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", port))
    s.settimeout(5)
    c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    c.sendto(b"inside", ("127.0.0.1", port))
    print("own server got", s.recvfrom(16)[0].decode())
PY

out=$(sandbox namespaced --allow-net 127.0.0.1 -- "$PY" own.py tcp "$PORT_A" "$PORT_B")
grep -q '^own server got inside' <<<"$out"
ok $? "TCP: the sandbox's own server on port $PORT_A got its client's bytes" "$(diag "$out")"
[ "$(accepts A)" = 0 ]
ok $? "TCP: the host's server on the same port accepted nothing" "accepts: $(accepts A)"
grep -q '^host server echoed ping' <<<"$out" && [ "$(accepts B)" = 1 ]
ok $? "TCP: the host's server on another allowed port is still reached" "$(diag "$out") accepts: $(accepts B)"

out=$(sandbox namespaced --allow-net 127.0.0.1 -- "$PY" own.py udp "$PORT_U" 0)
grep -q '^own server got inside' <<<"$out"
ok $? "UDP: the sandbox's own server on port $PORT_U got the datagram" "$(diag "$out")"
[ ! -s "$TMP/U.log" ]
ok $? "UDP: the host's server on the same port received nothing" "log: $(cat "$TMP/U.log" 2>/dev/null)"

# control: with the sandbox serving nothing there, the rule reaches the host's server
out=$(sandbox namespaced --allow-net 127.0.0.1 -- "$PY" client.py tcp 127.0.0.1 "$PORT_A")
grep -q '^echo ok' <<<"$out" && [ "$(accepts A)" = 1 ]
ok $? "control: the host's server on port $PORT_A is reached when the sandbox serves none" "$(diag "$out") accepts: $(accepts A)"
finish
