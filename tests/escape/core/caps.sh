#!/usr/bin/env bash
# The command holds no capability in either mode. Run by root, an unnamespaced sandbox
# used to keep all of root's: it could add an address to the host's loopback over
# netlink, and make a host file under a read-only mapping immutable (FS_IOC_SETFLAGS
# needs only ownership of the file, or CAP_LINUX_IMMUTABLE, not a writable fd). The
# inode flag ioctls are refused by the filter as well (root owns /usr even without
# capabilities), with the upper half of the command word ignored as the kernel does.
# Every effect is read from outside: lsattr, ip addr, /proc/PID/status of the command.
. "${MOAT_SRC:?}/tests/lib/tap.sh"

plan 8
[ "$(id -u)" -eq 0 ] || skip_all "the capabilities at stake are root's: run as root"
command -v chattr >/dev/null && command -v lsattr >/dev/null && command -v ip >/dev/null ||
	skip_all "chattr, lsattr (e2fsprogs) and ip (iproute2) are needed"
command -v python3 >/dev/null || skip_all "python3 is needed"
WS="$TMP/ws"
RO="$TMP/ro"
mkdir -p "$WS" "$RO"
cd "$WS" || exit 1
ADDR=127.0.0.77

echo data >"$RO/f"
if ! chattr +i "$RO/f" 2>/dev/null; then
	skip_all "$TMP does not support the immutable flag"
fi
chattr -i "$RO/f"
cleanup_host() {
	chattr -i -a "$RO/f" 2>/dev/null
	ip addr del "$ADDR/32" dev lo 2>/dev/null
}
trap 'cleanup_host; _tap_cleanup' EXIT

# fsx.py: FS_IOC_FSSETXATTR with FS_XFLAG_IMMUTABLE, then FS_IOC_SETFLAGS with
# FS_APPEND_FL and the upper 32 bits of the command set.
cat >fsx.py <<'PYEOF'
import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
FS_IOC_FSGETXATTR, FS_IOC_FSSETXATTR = 0x801c581f, 0x401c5820
try:
    buf = bytearray(fcntl.ioctl(fd, FS_IOC_FSGETXATTR, bytes(28)))
    struct.pack_into("I", buf, 0, struct.unpack_from("I", buf, 0)[0] | 0x8)
    fcntl.ioctl(fd, FS_IOC_FSSETXATTR, bytes(buf))
    print("FSSETXATTR worked")
except OSError as e:
    print("FSSETXATTR:", e)
try:
    fcntl.ioctl(fd, (1 << 32) | 0x40086602, struct.pack("l", 0x20))
    print("SETFLAGS with high bits worked")
except (OSError, OverflowError) as e:
    print("SETFLAGS with high bits:", e)
PYEOF
# nl.py: RTM_NEWADDR for ADDR/32 on lo (ifindex 1) over a netlink socket that is never
# bound (send() autobinds it), then the kernel's answer.
cat >nl.py <<'PYEOF'
import socket, struct, sys
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
addr = socket.inet_aton(sys.argv[1])
attrs = struct.pack("HH4s", 8, 2, addr) + struct.pack("HH4s", 8, 1, addr)
body = struct.pack("BBBBI", socket.AF_INET, 32, 0, 254, 1) + attrs
hdr = struct.pack("IHHII", 16 + len(body), 20, 1 | 4 | 0x400 | 0x200, 1, 0)
s.send(hdr + body)
ans = s.recv(4096)
print("netlink error:", -struct.unpack_from("i", ans, 16)[0])
PYEOF

for mode in namespaced unnamespaced; do
	rm -f ready out.txt
	marker="5.$$$RANDOM" # sleep's argument, unique on this host
	"$MOAT" run -q --mode "$mode" --ro-bind "$RO" -- sh -c "
		chattr +i $RO/f; chattr +a $RO/f; python3 fsx.py $RO/f; python3 nl.py $ADDR
		touch ready; exec sleep $marker" >out.txt 2>&1 &
	moat=$!
	for _ in $(seq 100); do [ -e ready ] && break; sleep 0.1; done
	cmd=$(pgrep -f -n "^sleep $marker\$")
	caps=$(grep -E '^Cap(Prm|Eff|Bnd|Amb)' "/proc/$cmd/status" 2>/dev/null | awk '{print $2}' | sort -u)
	wait "$moat"
	attrs=$(lsattr -d "$RO/f" 2>&1 | cut -d' ' -f1)
	addr=$(ip -4 addr show dev lo | grep -c "$ADDR/")
	cleanup_host

	# Namespaced under root, the full id map lets the sandbox's root become another
	# user: CAP_SETUID, CAP_SETGID and CAP_KILL (0xe0) stay, in its own user
	# namespace, and nothing else; every other case keeps nothing.
	want=0000000000000000
	[ "$mode" = namespaced ] && [ "$(id -u)" -eq 0 ] && want=$'0000000000000000\n00000000000000e0'
	if [ -n "$cmd" ] && [ "$caps" = "$want" ]; then
		pass "$mode: the command's permitted, effective, bounding and ambient sets hold nothing beyond setuid/setgid/kill in its own namespace"
	else
		fail "$mode: the command's capability sets are empty" \
			"pid '$cmd': $(grep Cap "/proc/$cmd/status" 2>&1); sandbox: $(cat out.txt)"
	fi
	case "$attrs" in
	*i* | *a*) fail "$mode: a file under a read-only mapping gets no immutable or append flag" \
		"lsattr: $attrs; sandbox: $(cat out.txt)" ;;
	-*) pass "$mode: a file under a read-only mapping gets no immutable or append flag (chattr, FS_IOC_FSSETXATTR, high bits)" ;;
	*) fail "$mode: lsattr read the file" "$attrs" ;;
	esac
	if [ "$addr" -eq 0 ] && grep -q "netlink error" out.txt; then
		pass "$mode: a netlink RTM_NEWADDR does not reach the host's loopback"
	else
		fail "$mode: a netlink RTM_NEWADDR does not reach the host's loopback" \
			"host lo has $ADDR: $addr; sandbox: $(cat out.txt)"
	fi
	if ! grep -q "worked" out.txt && grep -q "FSSETXATTR: .*Operation not permitted" out.txt; then
		pass "$mode: the flag ioctls fail with EPERM"
	else
		fail "$mode: the flag ioctls fail with EPERM" "$(cat out.txt)"
	fi
done
finish
