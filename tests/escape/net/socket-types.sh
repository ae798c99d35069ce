#!/usr/bin/env bash
# Internet sockets are stream, datagram or seqpacket: AF_INET + SOCK_PACKET (which the
# kernel turns into a packet socket), SOCK_RAW with its type flags set, and socket()
# arguments with bits above 31 (which the kernel drops, so AF_NETLINK | 1 << 32 would be
# a netlink audit socket the filter never saw) are refused in both modes. The same
# checks with plain TCP and UDP arguments still create sockets.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/net/lib.sh"

cat >"$TMP/w/socktypes.py" <<'PY'
import ctypes, ctypes.util, socket
libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
L = ctypes.c_long
NB = socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC
cases = [
    ("inet-packet", socket.AF_INET, 10, 0x0300),
    ("inet-packet-flags", socket.AF_INET, 10 | NB, 0x0300),
    ("inet6-rdm", socket.AF_INET6, 4, 0),
    ("inet-raw-flags", socket.AF_INET, socket.SOCK_RAW | NB, 1),
    ("netlink-audit-high", socket.AF_NETLINK | (1 << 32), socket.SOCK_DGRAM, 9),
    ("packet-high-type", socket.AF_PACKET, socket.SOCK_DGRAM | (1 << 32), 0),
    ("inet-stream", socket.AF_INET, socket.SOCK_STREAM | NB, 0),
    ("inet6-dgram", socket.AF_INET6, socket.SOCK_DGRAM, 0),
]
for name, a, b, c in cases:
    r = libc.syscall(L(41), L(a), L(b), L(c))
    print(name, "created" if r >= 0 else "error %d" % ctypes.get_errno())
PY
plan 4
for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in 1 2; do skip "$mode: check $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	out=$(sandbox "$mode" -- "$PY" socktypes.py)
	[ "$(grep -c ' error ' <<<"$out")" = 6 ] && ! grep -q -- '-packet created\|high created\|rdm created\|flags created' <<<"$out"
	ok $? "$mode: SOCK_PACKET, RDM, flagged SOCK_RAW and high-bit arguments are refused" "$(diag "$out")"
	grep -q '^inet-stream created' <<<"$out" && grep -q '^inet6-dgram created' <<<"$out"
	ok $? "$mode: TCP and UDP sockets are still created" "$(diag "$out")"
done
finish
