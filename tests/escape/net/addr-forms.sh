#!/usr/bin/env bash
# Invariant 4 (deny by default) across every way to name a destination: connect through
# an IPv4-mapped IPv6 address and 0.0.0.0, MSG_FASTOPEN (connects without connect()),
# sendmsg and sendmmsg with an address on UDP. Under --allow-net for one port, the
# other servers' accept count and datagram log, read from outside, stay empty; the
# allowed port is still reached by the same forms (so the forms themselves work).
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/net/lib.sh"

plan 10
start_server tcp A && start_server tcp B && start_server udp U && start_server udp V ||
	{ echo "Bail out! test servers did not start"; exit 1; }

cat >"$TMP/w/forms.py" <<'PY'
import socket, sys
a, b, u, v = (int(x) for x in sys.argv[1:5])
def attempt(label, fn):
    try:
        fn(); print(label, "sent")
    except OSError as e:
        print(label, "error", e.errno)
def v6(port):
    s = socket.socket(socket.AF_INET6); s.settimeout(3); s.connect(("::ffff:127.0.0.1", port)); s.close()
def any4(port):
    s = socket.socket(); s.settimeout(3); s.connect(("0.0.0.0", port)); s.close()
def tfo(port):
    s = socket.socket(); s.sendto(b"x", socket.MSG_FASTOPEN, ("127.0.0.1", port)); s.close()
def smsg(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendmsg([b"sendmsg"], [], 0, ("127.0.0.1", port))
def smmsg(port):
    import ctypes, ctypes.util, struct
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sa = struct.pack("=HH4s8x", socket.AF_INET, socket.htons(port), socket.inet_aton("127.0.0.1"))
    sab = ctypes.create_string_buffer(sa, len(sa)); data = ctypes.create_string_buffer(b"sendmmsg")
    iov = struct.pack("PN", ctypes.addressof(data), 8); iovb = ctypes.create_string_buffer(iov, len(iov))
    hdr = struct.pack("PI4xPNPNi4x", ctypes.addressof(sab), len(sa), ctypes.addressof(iovb), 1, 0, 0, 0)
    mm = ctypes.create_string_buffer(hdr + b"\0" * 8, len(hdr) + 8)
    if libc.sendmmsg(s.fileno(), mm, 1, 0) < 0:
        raise OSError(ctypes.get_errno(), "sendmmsg")
for name, fn in (("v6mapped", v6), ("any4", any4), ("fastopen", tfo)):
    attempt(name + "-allowed", lambda: fn(a)); attempt(name + "-denied", lambda: fn(b))
for name, fn in (("sendmsg", smsg), ("sendmmsg", smmsg)):
    attempt(name + "-allowed", lambda: fn(u)); attempt(name + "-denied", lambda: fn(v))
PY

for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in 1 2 3 4 5; do skip "$mode: check $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	before=$(accepts A)
	out=$(sandbox "$mode" --allow-net "127.0.0.1:$PORT_A" --allow-net "udp:127.0.0.1:$PORT_U" -- \
		"$PY" forms.py "$PORT_A" "$PORT_B" "$PORT_U" "$PORT_V")
	[ "$(echo "$out" | grep -c -- '-denied error')" = 5 ]
	ok $? "$mode: every form to a denied destination fails" "$(diag "$out")"
	[ "$(accepts B)" = 0 ]
	ok $? "$mode: the denied TCP server accepted nothing" "accepts: $(accepts B)"
	[ ! -s "$TMP/V.log" ]
	ok $? "$mode: the denied UDP server received nothing" "$(cat "$TMP/V.log")"
	[ "$(accepts A)" -ge $((before + 3)) ]
	ok $? "$mode: the same forms reach the allowed TCP server" "$(diag "$out")"
	grep -q sendmsg "$TMP/U.log" && grep -q sendmmsg "$TMP/U.log"
	ok $? "$mode: sendmsg and sendmmsg reach the allowed UDP server" "$(cat "$TMP/U.log")"
	: >"$TMP/U.log"
done
finish
