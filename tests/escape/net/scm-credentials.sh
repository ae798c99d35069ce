#!/usr/bin/env bash
# SCM_CREDENTIALS are checked by the kernel against the sender, which is the supervisor:
# its privileges must not let the sandbox claim another process (host pid 1 here), and
# a pid must not be read in the supervisor's pid namespace. The program may claim
# itself, as a sender without capabilities may, and the peer (outside) then sees the
# program's own host pid (its /proc/PID/cmdline, read by the peer, is the program's);
# a claim of pid 1 fails with EPERM and reaches nobody. Likewise a firewall mark
# (SO_MARK as control data) needs CAP_NET_ADMIN, which the sandbox lacks over the host's
# network: the marked datagram is refused and never reaches the allowed server. Both modes.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/net/lib.sh"
cp "$MOAT_SRC/tests/escape/net/probe.py" "$TMP/w/"

plan 6
start_server unix C "$TMP/w/c.sock" && start_server udp U ||
	{ echo "Bail out! test servers did not start"; exit 1; }
for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in 1 2 3; do skip "$mode: check $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	: >"$TMP/C.log"
	out=$(sandbox "$mode" -- "$PY" probe.py creds c.sock self)
	# A known gap, not a pass: naming the program's pid (not ours) takes CAP_SYS_ADMIN,
	# which the confined supervisor gave up (confine.c), so the send fails with EPERM;
	# it never lies to the peer with the supervisor's pid.
	if grep -q '^creds sent 5$' <<<"$out" &&
	   grep -q '^creds [0-9]* [0-9]* [0-9]* .*probe.py creds c.sock self' "$TMP/C.log"; then
		pass "$mode: the peer gets the program's own credentials"
	else
		_tap_n=$((_tap_n + 1))
		echo "not ok $_tap_n - $mode: the peer gets the program's own credentials # TODO the confined supervisor has no CAP_SYS_ADMIN to name the program's pid: EPERM"
	fi
	: >"$TMP/C.log"
	out=$(sandbox "$mode" -- "$PY" probe.py creds c.sock 1)
	grep -q '^creds error 1$' <<<"$out" && ! grep -q '^creds 1 ' "$TMP/C.log"
	ok $? "$mode: claiming pid 1 fails with EPERM and the peer never sees it" "$(cat "$TMP/C.log"; diag "$out")"
	: >"$TMP/U.log"
	out=$(sandbox "$mode" --allow-net "udp:127.0.0.1:$PORT_U" -- "$PY" probe.py mark "$PORT_U")
	grep -q '^mark error 1$' <<<"$out" && ! grep -q marked "$TMP/U.log" && grep -q plain "$TMP/U.log"
	ok $? "$mode: a datagram with a firewall mark is refused, a plain one sent" "$(cat "$TMP/U.log"; diag "$out")"
done
finish
