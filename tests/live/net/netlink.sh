#!/usr/bin/env bash
# NETLINK_ROUTE sockets are allowed so that libc's getifaddrs works: its bind and its
# messages to the kernel (nl_pid 0) go through, in both modes (namespaced, the sandbox
# sees its own loopback only). A netlink message to another process's socket is not
# the kernel: refused with EACCES and a denial line.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/net/lib.sh"

cat >"$TMP/w/nl.py" <<'PY'
import socket, struct
print("ifnames", " ".join(n for _, n in socket.if_nameindex()))
a = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
a.bind((0, 0))
b = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
b.bind((0, 0))
msg = struct.pack("=LHHLL", 16, 3, 0, 1, 0)  # NLMSG_DONE, as a process might send
try:
    b.sendto(msg, (a.getsockname()[0], 0))
    print("peer sent")
except OSError as e:
    print("peer error", e.errno)
a.settimeout(0.5)
try:
    a.recv(100)
    print("peer received")
except OSError:
    print("peer nothing")
PY
plan 4
for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in 1 2; do skip "$mode: check $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	out=$(sandbox "$mode" -- "$PY" nl.py)
	grep -q '^ifnames.* lo\b\|^ifnames lo' <<<"$out"
	ok $? "$mode: getifaddrs (if_nameindex) works and lists lo" "$(diag "$out")"
	grep -q '^peer error 13$' <<<"$out" && grep -q '^peer nothing$' <<<"$out" &&
		denied 'netlink messages go to the kernel only'
	ok $? "$mode: a netlink message to another process is refused" "$(diag "$out")"
done
finish
